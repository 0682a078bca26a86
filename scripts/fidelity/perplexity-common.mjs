// Shared by the scripts that run minfer perplexity beside llama.cpp's llama-perplexity
// (perplexity-vs-llamacpp.mjs, kld-mixes.mjs): running either engine with the same flags, the
// fixed text, and reading their closing statistics.
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Runs a command; its stdout and stderr together (a failure stops the script with both shown). */
export function run(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: "utf8", maxBuffer: 256 << 20 });
  const text = `${r.stdout}\n${r.stderr}`;
  if (r.status !== 0) {
    console.error(`${cmd} ${args.join(" ")} failed (${r.status ?? r.signal}):\n${text.slice(-4000)}`);
    process.exit(1);
  }
  return text;
}
export const show = (args) => console.error(`$ ${args.join(" ")}`);

/**
 * The two engines' runners with common flags: `bin` holds llama-perplexity, `minferBin` is
 * minfer's bin.js; `threads`, `chunks` (strings), `ngl` (extra flags for both), `llamaArgs`.
 */
export function engines({ bin, minferBin, threads, chunks, ngl = [], llamaArgs = [] }) {
  // llama.cpp logs from a worker thread and often exits before it has written the last lines to
  // stdout (status 0; on a loaded 2-core machine most KL-divergence runs): the same lines also go
  // to a --log-file, which is read when stdout lacks the closing line; a run whose closing line is
  // in neither is run again, up to three times.
  const logFile = join(mkdtempSync(join(tmpdir(), "minfer-llama-log-")), "llama.log");
  const llama = (args) => {
    const full = ["-t", threads, ...ngl, ...llamaArgs, "--chunks", chunks, ...args];
    show(["llama-perplexity", ...full]);
    const done = args.includes("--kl-divergence") ? /^Same top p:/m : /Final estimate: PPL/;
    let log = "";
    for (let attempt = 0; attempt < 3; attempt++) {
      rmSync(logFile, { force: true });
      log = run(join(bin, "llama-perplexity"), [...full, "--log-file", logFile]);
      if (done.test(log)) return log;
      if (existsSync(logFile)) {
        const file = readFileSync(logFile, "utf8");
        if (done.test(file)) return file;
      }
      console.error("  (llama-perplexity's output ends early: run again)");
    }
    return log;
  };
  const minfer = (args) => {
    const full = ["perplexity", "-t", threads, ...ngl, "--chunks", chunks, ...args];
    show(["minfer", ...full]);
    return run(process.execPath, [minferBin, ...full]);
  };
  return { llama, minfer };
}

/**
 * The text both engines read: `TEXT` if given, else the repository's README.md and docs/*.md at
 * `commit`, concatenated in that order as `git show` prints them (written to out/text.txt).
 */
export function fixedText(root, out, textEnv, commit = "e035ce2") {
  let text = textEnv;
  if (!text) {
    const git = (...a) => execFileSync("git", ["-C", root, ...a], { encoding: "utf8", maxBuffer: 64 << 20 });
    const docs = git("ls-tree", "--name-only", commit, "docs/")
      .split("\n")
      .filter((p) => p.endsWith(".md"))
      .sort();
    text = join(out, "text.txt");
    writeFileSync(text, ["README.md", ...docs].map((p) => git("show", `${commit}:${p}`)).join(""));
    console.error(`text: README.md + ${docs.join(" ")} at ${commit}`);
  }
  const bytes = readFileSync(text);
  console.error(
    `text: ${text}, ${bytes.length} bytes, sha256 ${createHash("sha256").update(bytes).digest("hex")}`,
  );
  return text;
}

const num = (s) => Number(s);
export function finalPpl(log) {
  const m = /Final estimate: PPL = ([\d.]+) \+\/- ([\d.]+)/.exec(log);
  if (!m) throw new Error(`no final estimate in:\n${log.slice(-2000)}`);
  return { ppl: num(m[1]), unc: num(m[2]) };
}
export function kldStats(log) {
  const get = (label) => {
    const m = new RegExp(`^${label}\\s*:\\s*(-?[\\d.]+) ± +(-?[\\d.]+)`, "m").exec(log);
    if (!m) throw new Error(`no "${label}" in:\n${log.slice(-3000)}`);
    return { value: num(m[1]), unc: num(m[2]) };
  };
  return {
    pplQ: get("Mean PPL\\(Q\\)"),
    pplBase: get("Mean PPL\\(base\\)"),
    lnRatio: get("Mean ln\\(PPL\\(Q\\)/PPL\\(base\\)\\)"),
    kld: get("Mean    KLD"),
    maxKld: num(/^Maximum KLD:\s*([\d.e+-]+)/m.exec(log)[1]),
    dp: get("Mean    Δp"),
    rmsDp: get("RMS Δp    "),
    sameTop: get("Same top p"),
  };
}
