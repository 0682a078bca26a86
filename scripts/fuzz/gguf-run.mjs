#!/usr/bin/env node
/**
 * `minfer run` over mutated GGUFs: each must finish with exit 0 or a coded refusal, never an abort,
 * a hang or a bounded-memory breach.
 *
 *   node scripts/fuzz/gguf-run.mjs [--count N] [--seed S] [--jobs J] [--timeout-ms MS] [--max-rss-mib MIB]
 *                                  [--replay SUBJECT:ITERATION] [--keep] [--examples]
 *
 * Each file is `mutate(subject i % subjects, iterationRng(seed, subject, i))` (see gguf-mutate.mjs),
 * run as `node packages/cli/dist/bin.js run -m FILE -p "The jury said" -n 4 -t 1`, killed after
 * --timeout-ms. Classes: ok (exit 0), refused (non-zero exit, "minfer: error [CODE]" on stderr),
 * abort (a signal, exit 134, or V8's fatal messages), hang (killed at the timeout), uncoded
 * (non-zero exit without a code). Prints a summary; exits 1 on any abort, hang or uncoded run, or a
 * peak RSS over --max-rss-mib. Failing files are kept (their paths are printed) and run once more
 * alone, to tell a file's fault from the machine's; --examples prints one refusal message per code.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { iterationRng, loadSubjects, mutate } from "./gguf-mutate.mjs";

const REPO = fileURLToPath(new URL("../..", import.meta.url));
const BIN = join(REPO, "packages/cli/dist/bin.js");
const PRELOAD = fileURLToPath(new URL("./rss-preload.cjs", import.meta.url));
const PROMPT = "The jury said";

function options(argv) {
  const o = {
    count: 200,
    seed: 1,
    jobs: 2,
    timeoutMs: 10_000,
    maxRssMib: 1024,
    replay: undefined,
    keep: false,
    examples: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    const number = () => {
      const v = Number(value());
      if (!Number.isInteger(v) || v < 0) throw new Error(`${a} needs a non-negative integer`);
      return v;
    };
    if (a === "--count") o.count = number();
    else if (a === "--seed") o.seed = number();
    else if (a === "--jobs") o.jobs = Math.max(1, number());
    else if (a === "--timeout-ms") o.timeoutMs = number();
    else if (a === "--max-rss-mib") o.maxRssMib = number();
    else if (a === "--replay") o.replay = value().split(":").map(Number);
    else if (a === "--keep") o.keep = true;
    else if (a === "--examples") o.examples = true;
    else throw new Error(`unknown option ${a}`);
  }
  return o;
}

/** The peak RSS (KiB) of a live process so far, from /proc; 0 where there is no /proc. */
function vmHwm(pid) {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** Runs `minfer run` on one file: { status, signal, killed, ms, rssKiB, stderr }. */
function runOne(file, timeoutMs) {
  const rssFile = `${file}.rss`;
  return new Promise((done) => {
    const t0 = performance.now();
    const child = spawn(
      process.execPath,
      ["--require", PRELOAD, BIN, "run", "-m", file, "-p", PROMPT, "-n", "4", "-t", "1"],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    let stderr = "";
    child.stderr.on("data", (b) => {
      if (stderr.length < 1 << 16) stderr += b;
    });
    let polled = 0;
    const poll = setInterval(() => {
      polled = Math.max(polled, vmHwm(child.pid));
    }, 50);
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      child.kill("SIGKILL");
    }, timeoutMs);
    child.on("close", (status, signal) => {
      clearTimeout(timer);
      clearInterval(poll);
      let atExit = 0;
      if (existsSync(rssFile)) {
        atExit = Number(readFileSync(rssFile, "utf8")) || 0;
        rmSync(rssFile);
      }
      done({ status, signal, killed, ms: performance.now() - t0, rssKiB: Math.max(polled, atExit), stderr });
    });
  });
}

const FATAL =
  /heap out of memory|FATAL ERROR|Fatal error|Fatal JavaScript|Segmentation fault|Aborted|core dumped/;

/** ok, refused (with its code), abort, hang or uncoded. */
function classify(r) {
  if (r.killed) return { cls: "hang" };
  if (r.signal || r.status === 134 || FATAL.test(r.stderr)) return { cls: "abort" };
  if (r.status === 0) return { cls: "ok" };
  const m = /^minfer: error \[([A-Za-z0-9_]+)\]: /m.exec(r.stderr);
  if (m && !/internal error/.test(r.stderr)) return { cls: "refused", code: m[1] };
  return { cls: "uncoded" };
}

async function main() {
  const o = options(process.argv.slice(2));
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: build packages/cli first`);
  const subjects = loadSubjects();
  const dir = mkdtempSync(join(tmpdir(), "minfer-fuzz-run-"));
  const plan = [];
  if (o.replay) plan.push({ subject: o.replay[0], iteration: o.replay[1] });
  else for (let i = 0; i < o.count; i++) plan.push({ subject: i % subjects.length, iteration: i });

  const classes = { ok: 0, refused: 0, abort: 0, hang: 0, uncoded: 0 };
  const codes = new Map();
  const failures = [];
  let maxMs = 0;
  let maxRss = 0;
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < plan.length) {
      const { subject, iteration } = plan[next++];
      const s = subjects[subject];
      const { bytes, ops } = mutate(s, iterationRng(o.seed, subject, iteration));
      const file = join(dir, `${subject}-${iteration}.gguf`);
      writeFileSync(file, bytes);
      const r = await runOne(file, o.timeoutMs);
      const { cls, code } = classify(r);
      classes[cls]++;
      if (code) {
        const c = codes.get(code) ?? { n: 0, example: /^minfer: error .*$/m.exec(r.stderr)[0], ops };
        c.n++;
        codes.set(code, c);
      }
      maxMs = Math.max(maxMs, r.ms);
      maxRss = Math.max(maxRss, r.rssKiB);
      const overRss = r.rssKiB > o.maxRssMib * 1024;
      if (cls === "abort" || cls === "hang" || cls === "uncoded" || overRss) {
        failures.push({ subject, iteration, name: s.name, ops, cls, overRss, r, file });
      } else if (!o.keep) rmSync(file);
    }
  };
  await Promise.all(Array.from({ length: o.jobs }, worker));
  const wall = (performance.now() - started) / 1000;
  // Each failure runs once more, alone: one that does not recur points at the machine (a package
  // rebuilt under the run, memory pressure), not at the file. It still fails the run.
  for (const f of failures) f.again = classify(await runOne(f.file, o.timeoutMs)).cls;

  const mib = (kib) => `${(kib / 1024).toFixed(0)} MiB`;
  console.log(
    `gguf-run fuzz: seed ${o.seed}, ${plan.length} files over ${subjects.map((s) => s.name).join(", ")}`,
  );
  console.log(
    `  command: node ${BIN} run -m FILE -p "${PROMPT}" -n 4 -t 1 (${o.jobs} at a time, killed at ${o.timeoutMs} ms)`,
  );
  console.log("  class     count");
  for (const [k, v] of Object.entries(classes)) console.log(`  ${k.padEnd(9)} ${String(v).padStart(5)}`);
  const byCode = [...codes].sort((a, b) => b[1].n - a[1].n);
  console.log(`  refusals by code: ${byCode.map(([c, { n }]) => `${c} ${n}`).join(", ") || "none"}`);
  if (o.examples)
    for (const [, { example, ops }] of byCode)
      console.log(`    e.g. ${example.slice(0, 300)}\n      after ${ops.join("; ")}`);
  console.log(
    `  slowest run ${(maxMs / 1000).toFixed(2)} s; peak RSS ${mib(maxRss)} (bound ${o.maxRssMib} MiB); wall ${wall.toFixed(1)} s`,
  );
  for (const f of failures) {
    console.log(
      `FAIL ${f.cls}${f.overRss ? ` (peak RSS ${mib(f.r.rssKiB)})` : ""}: ${f.name} --seed ${o.seed} --replay ${f.subject}:${f.iteration}` +
        ` status=${f.r.status} signal=${f.r.signal} ${f.r.ms.toFixed(0)} ms\n  ops: ${f.ops.join("; ")}\n  file: ${f.file}` +
        `\n  run again alone: ${f.again}` +
        `\n  stderr: ${f.r.stderr.trim().split("\n").slice(-6).join("\n          ")}`,
    );
  }
  if (failures.length === 0 && !o.keep) rmSync(dir, { recursive: true, force: true });
  return failures.length === 0 ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    console.error(`gguf-run: ${e?.stack ?? e}`);
    process.exitCode = 2;
  },
);
