/**
 * `minfer serve` under attack (issue 30): mutated requests of every route and a catalogue of
 * hostile ones, each on its own connection, while a prober asks /health every 50 ms. Every answer
 * must be below 500 and, for a refusal, an OpenAI error object; /health must keep answering.
 *
 * Counts: MINFER_FUZZ_SCALE multiplies them (1 = 5,000 mutated and 2,000 hostile requests);
 * MINFER_FUZZ_SEED changes the seed; a failure prints the case's index and what it was.
 *
 * Latency: under `turbo run test` other packages' tests share the machine's cores, so the bounds
 * held here catch a stall of the kind issue 30 found (seconds), not tens of milliseconds.
 * MINFER_FUZZ_STRICT=1, on an otherwise idle machine, holds every /health answer to 100 ms while
 * one hostile request runs at a time, and 99% of them under four at once.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  HealthProbe,
  judgeRaw,
  pool,
  prng,
  rawExchange,
  type ServeProcess,
  startServe,
  wallNow,
} from "./serve-fuzz/harness.js";
import { HOSTILE_CLASSES, hostileRequest } from "./serve-fuzz/hostile.js";
import { mutatedRequest, wire } from "./serve-fuzz/mutate.js";
import { bin, fixtures } from "./test-helpers.js";

const SCALE = Number(process.env.MINFER_FUZZ_SCALE ?? 1);
const SEED = Number(process.env.MINFER_FUZZ_SEED ?? 0x5e7e);
const MUTATED = Math.round(5000 * SCALE);
const HOSTILE = Math.round(2000 * SCALE);
/** Requests in flight at once: within what 2 slots and the queue take, so no answer is a 503. */
const CONCURRENCY = 4;
const STRICT = process.env.MINFER_FUZZ_STRICT === "1";
/** The /health bound for 99% of answers (strict runs only), ms. */
const P99_MS = STRICT ? 100 : Number.POSITIVE_INFINITY;
/** The bound for every answer while one hostile request runs at a time, ms. */
const ALONE_MAX_MS = STRICT ? 100 : 1000;
/** The bound for every answer under four at once, ms. */
const MAX_MS = 2000;
/** The read bound the server is started with (--read-timeout). */
const READ_TIMEOUT_S = 2;

let serve: ServeProcess;
/** Where slot saves go (the slot actions are among the routes fuzzed). */
const slotDir = mkdtempSync(join(tmpdir(), "minfer-serve-fuzz-slots-"));
let probe: HealthProbe;
const log: string[] = [];
/** When each request ran, to name what was running when /health was slow. */
const spans: { name: string; from: number; to: number }[] = [];

const caseRng = (kind: number, i: number) => {
  const r = prng(SEED ^ Math.imul(kind + 1, 0x9e3779b9) ^ Math.imul(i + 1, 0x85ebca6b));
  r();
  return r;
};

beforeAll(async () => {
  serve = await startServe(bin, [
    "-m",
    resolve(fixtures, "models/stories260K.gguf"),
    "--chat-template-file",
    resolve(fixtures, "templates/Qwen-Qwen3-0.6B.jinja"),
    "-np",
    "2",
    "-c",
    "256",
    "--queue",
    "256",
    "--metrics",
    "--slot-save-path",
    slotDir,
    "--read-timeout",
    String(READ_TIMEOUT_S),
    "-t",
    "1",
  ]);
  probe = new HealthProbe(serve.url, 50);
  probe.start();
});

afterAll(async () => {
  if (serve && serve.proc.exitCode === null) serve.proc.kill("SIGKILL");
  rmSync(slotDir, { recursive: true, force: true });
});

describe("minfer serve under hostile input", () => {
  it(`${MUTATED} mutated requests: every answer below 500, every refusal an OpenAI error`, async () => {
    const problems: string[] = [];
    const statuses = new Map<number, number>();
    await pool(
      Array.from({ length: MUTATED }, (_, i) => i),
      CONCURRENCY,
      async (i) => {
        const req = mutatedRequest(caseRng(0, i));
        const from = wallNow();
        const res = await rawExchange(serve.url, wire(req));
        spans.push({ name: `mutated ${i}: ${req.what.slice(0, 60)}`, from, to: wallNow() });
        const j = judgeRaw(res.text, req.method === "HEAD");
        for (const s of j.statuses) statuses.set(s, (statuses.get(s) ?? 0) + 1);
        if (!res.closed)
          j.problems.push("the connection was left open after the answer (connection: close asked)");
        if (j.problems.length > 0)
          problems.push(`mutated ${i} (${req.what.slice(0, 160)}): ${j.problems.join("; ")}`);
      },
    );
    log.push(
      `mutated: ${MUTATED} requests, statuses ${[...statuses]
        .sort((a, b) => a[0] - b[0])
        .map(([s, n]) => `${s}×${n}`)
        .join(" ")}`,
    );
    expect(problems.slice(0, 20)).toEqual([]);
  }, 900_000);

  it(`${HOSTILE} hostile requests in ${HOSTILE_CLASSES} classes: each answered, none a 5xx`, async () => {
    const problems: string[] = [];
    const statuses = new Map<number, number>();
    await pool(
      Array.from({ length: HOSTILE }, (_, i) => i),
      CONCURRENCY,
      async (i) => {
        const req = hostileRequest(i, caseRng(1, i));
        const from = wallNow();
        const res = await rawExchange(serve.url, req.data, 20_000, req.hangUpAfter);
        spans.push({ name: `hostile ${i}: ${req.name}`, from, to: wallNow() });
        if (req.hangUpAfter !== undefined) return;
        const j = judgeRaw(res.text, req.data.subarray(0, 5).toString() === "HEAD ");
        for (const s of j.statuses) statuses.set(s, (statuses.get(s) ?? 0) + 1);
        if (!res.closed) j.problems.push(`no close within 20 s after ${res.text.length} bytes`);
        if (j.problems.length > 0) problems.push(`hostile ${i} (${req.name}): ${j.problems.join("; ")}`);
      },
    );
    log.push(
      `hostile: ${HOSTILE} requests, statuses ${[...statuses]
        .sort((a, b) => a[0] - b[0])
        .map(([s, n]) => `${s}×${n}`)
        .join(" ")}`,
    );
    expect(problems.slice(0, 20)).toEqual([]);
  }, 900_000);

  it("a client sending its body slowly is cut at --read-timeout with a 408", async () => {
    const head =
      'POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"prompt":';
    const res = await rawExchange(serve.url, head, 30_000);
    const j = judgeRaw(res.text);
    expect(j.statuses).toEqual([408]);
    expect(j.problems).toEqual([]);
    expect(res.closed).toBe(true);
    expect(res.ms).toBeGreaterThanOrEqual(READ_TIMEOUT_S * 1000 - 50);
    expect(res.ms).toBeLessThan(READ_TIMEOUT_S * 1000 + 1500);
  }, 60_000);

  it("no one request holds the server: each hostile class alone, /health still answers", async () => {
    const alone = new HealthProbe(serve.url, 10);
    alone.start();
    for (let i = 0; i < 3 * HOSTILE_CLASSES; i++) {
      const req = hostileRequest(i, caseRng(2, i));
      const from = wallNow();
      await rawExchange(serve.url, req.data, 20_000, req.hangUpAfter);
      spans.push({ name: `alone ${i}: ${req.name}`, from, to: wallNow() });
    }
    const h = await alone.stop();
    const worst = [...h.slow].sort((a, b) => b.ms - a.ms)[0];
    const during = worst
      ? spans.filter((x) => x.from < worst.at + worst.ms && x.to > worst.at).map((x) => x.name)
      : [];
    log.push(
      `one at a time: ${3 * HOSTILE_CLASSES} hostile requests, /health every 10 ms: median ${h.median.toFixed(1)} ms, ` +
        `max ${h.max.toFixed(1)} ms${worst ? ` (during ${during.join(" | ")})` : ""}`,
    );
    expect(h.failures.slice(0, 5)).toEqual([]);
    // The slowest answers wait on JSON.parse of a multi-megabyte body (a 1M-token /detokenize body
    // holds the loop 50–140 ms); docs/LIMITS.md has the figures. Before the fixes, one 7 MB prompt
    // held it 3–4 s and one tool schema 27 s.
    expect(h.p99).toBeLessThan(P99_MS);
    expect(h.max).toBeLessThan(ALONE_MAX_MS);
  }, 300_000);

  it("/health answered throughout; SIGTERM then exits 0", async () => {
    const h = await probe.stop();
    log.push(
      `/health: ${h.count} probes, median ${h.median.toFixed(1)} ms, p99 ${h.p99.toFixed(1)} ms, max ${h.max.toFixed(1)} ms`,
    );
    for (const s of [...h.slow].sort((a, b) => b.ms - a.ms).slice(0, 10)) {
      const during = spans.filter((x) => x.from < s.at + s.ms && x.to > s.at).map((x) => x.name);
      log.push(`slow /health ${s.ms.toFixed(0)} ms while: ${during.join(" | ")}`);
    }
    process.stderr.write(`serve fuzz (seed ${SEED}, scale ${SCALE}):\n  ${log.join("\n  ")}\n`);
    const metrics = await (await fetch(`${serve.url}/metrics`)).text();
    const gauge = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(metrics)?.[1]);
    const loopMax = gauge("minfer_event_loop_delay_max_seconds") * 1000;
    const loopP99 = gauge("minfer_event_loop_delay_p99_seconds") * 1000;
    log.push(`server event loop: delay p99 ${loopP99.toFixed(1)} ms, max ${loopMax.toFixed(1)} ms`);
    process.stderr.write(`  ${log.at(-1)}\n`);
    expect(h.failures.slice(0, 5)).toEqual([]);
    expect(h.count).toBeGreaterThan(10);
    // Under four hostile requests at once. The slowest answers are where several multi-megabyte
    // bodies were parsed at once; docs/LIMITS.md has the figures.
    expect(h.p99).toBeLessThan(P99_MS);
    expect(h.max).toBeLessThan(MAX_MS);
    expect(loopMax).toBeLessThan(MAX_MS);
    serve.proc.kill("SIGTERM");
    expect(await serve.exit).toBe(0);
  });
});
