import { type ChildProcess, spawn } from "node:child_process";
import { connect } from "node:net";
import { Worker } from "node:worker_threads";

// The fuzz harness for `minfer serve`: the server as its own process (so the fuzzer's work does
// not share its event loop), a /health prober that records how long each answer took, and the
// rule every answer is judged by.

/** A running `minfer serve` process. */
export interface ServeProcess {
  readonly url: string;
  readonly proc: ChildProcess;
  stderr(): string;
  readonly exit: Promise<number | null>;
}

/** Starts `node bin serve --port 0 …args` (`spawned` sees the process at once); resolves once it reports ready. */
export function startServe(
  bin: string,
  args: readonly string[],
  spawned?: (proc: ChildProcess) => void,
): Promise<ServeProcess> {
  const proc = spawn(process.execPath, [bin, "serve", "--port", "0", ...args], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  spawned?.(proc);
  let err = "";
  const exit = new Promise<number | null>((res) => proc.on("exit", (code) => res(code)));
  return new Promise((resolve, reject) => {
    proc.stderr!.on("data", (d: Buffer) => {
      err += d.toString();
      const m = /serve: ready on (http:\/\/\S+)/.exec(err);
      if (m) resolve({ url: m[1]!, proc, stderr: () => err, exit });
    });
    exit.then((code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
}

/** The prober's loop, in a worker thread: its timing is not disturbed by the fuzzer's own work. */
const PROBE_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const http = require("node:http");
const { url, everyMs, slowMs } = workerData;
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const latencies = [], slow = [], failures = [];
let inFlight = false;
const timer = setInterval(() => {
  if (inFlight) return;
  inFlight = true;
  const t0 = performance.now();
  const done = (problem) => {
    const ms = performance.now() - t0;
    latencies.push(ms);
    if (ms > slowMs) slow.push({ at: performance.timeOrigin + t0, ms });
    if (problem) failures.push(problem);
    inFlight = false;
  };
  const req = http.request(url + "/health", { agent, timeout: 5000 }, (res) => {
    res.resume();
    res.on("end", () => done(res.statusCode === 200 ? undefined : "/health answered " + res.statusCode));
  });
  req.on("timeout", () => req.destroy(new Error("no answer in 5 s")));
  req.on("error", (e) => done("/health: " + e.message));
  req.end();
}, everyMs);
parentPort.on("message", () => {
  clearInterval(timer);
  agent.destroy();
  parentPort.postMessage({ latencies, slow, failures });
});
`;

/** What the prober saw. */
export interface ProbeReport {
  readonly count: number;
  readonly max: number;
  readonly p99: number;
  readonly median: number;
  /** Probes slower than `slowMs`: when each was sent (ms since the epoch) and how long it took. */
  readonly slow: readonly { at: number; ms: number }[];
  readonly failures: readonly string[];
}

/**
 * Polls /health every `everyMs` on its own kept-alive connection, from a worker thread, and
 * records each answer's latency.
 */
export class HealthProbe {
  #worker: Worker | undefined;

  constructor(
    readonly url: string,
    readonly everyMs = 50,
    readonly slowMs = 50,
  ) {}

  start(): void {
    this.#worker = new Worker(PROBE_SOURCE, {
      eval: true,
      workerData: { url: this.url, everyMs: this.everyMs, slowMs: this.slowMs },
    });
  }

  async stop(): Promise<ProbeReport> {
    const w = this.#worker!;
    const data = await new Promise<{ latencies: number[]; slow: ProbeReport["slow"]; failures: string[] }>(
      (res) => {
        w.once("message", res);
        w.postMessage("stop");
      },
    );
    await w.terminate();
    const s = [...data.latencies].sort((a, b) => a - b);
    const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0;
    return {
      count: s.length,
      max: s.at(-1) ?? 0,
      p99: at(0.99),
      median: at(0.5),
      slow: data.slow,
      failures: data.failures,
    };
  }
}

/** Now, in ms since the epoch (comparable with {@link ProbeReport.slow}). */
export const wallNow = () => performance.timeOrigin + performance.now();

/** Whether `body` is an OpenAI error object: `{"error": {"message", "type", "param", "code"}}`. */
export function isOpenAiError(body: unknown): boolean {
  if (typeof body !== "object" || body === null) return false;
  const e = (body as { error?: unknown }).error;
  if (typeof e !== "object" || e === null) return false;
  const o = e as Record<string, unknown>;
  return (
    typeof o.message === "string" &&
    o.message !== "" &&
    typeof o.type === "string" &&
    "param" in o &&
    (o.code === null || typeof o.code === "string")
  );
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * What is wrong with an answer, or undefined when it is right: a status below 500; an error status
 * with an OpenAI error object; a success that is JSON, or an event stream whose events are JSON and
 * that ends with `[DONE]`, an error event or (llama-server's /completion) an event with `stop: true`; a CORS preflight's answer (`preflight`: it allows
 * methods) as a 200 or 204 with no body; the chat page (200 text/html).
 */
export function judge(
  status: number,
  contentType: string,
  body: string,
  preflight = false,
): string | undefined {
  if (status === 0) return "no response";
  if (status >= 500) return `${status}: ${body.slice(0, 200)}`;
  if (status === 204 || (status === 200 && preflight))
    return body === "" ? undefined : `${status} with a body: ${body.slice(0, 100)}`;
  if (status >= 400)
    return isOpenAiError(parseJson(body))
      ? undefined
      : `${status} not an OpenAI error: ${body.slice(0, 200)}`;
  if (contentType.startsWith("text/event-stream")) {
    const events = body
      .split("\n\n")
      .filter((e) => e.startsWith("data: "))
      .map((e) => e.slice(6));
    const last = events.at(-1);
    if (last === undefined) return "an empty event stream";
    for (const e of events.slice(0, -1))
      if (e === "[DONE]" || parseJson(e) === undefined) return `a bad event: ${e.slice(0, 100)}`;
    if (last === "[DONE]") return undefined;
    const lastJson = parseJson(last);
    // (llama-server's own /completion stream ends with a chunk saying stop: true, no [DONE])
    const nativeEnd =
      typeof lastJson === "object" && lastJson !== null && (lastJson as { stop?: unknown }).stop === true;
    return isOpenAiError(lastJson) || nativeEnd
      ? undefined
      : `a stream that ends without [DONE]: ${last.slice(0, 100)}`;
  }
  if (contentType.includes("json"))
    return parseJson(body) === undefined ? `${status} with bad JSON` : undefined;
  // (the chat page, which any GET that routes to / answers: a fixed document, no file is read)
  if (status === 200 && contentType.startsWith("text/html"))
    return body.includes("<title>minfer</title>")
      ? undefined
      : `200 text/html that is not the chat page: ${body.slice(0, 100)}`;
  return status === 200 && contentType.startsWith("text/plain") ? undefined : `${status} ${contentType}`;
}

/** One HTTP exchange over a fresh socket: whatever bytes, read until the server closes or `waitMs`. */
export function rawExchange(
  url: string,
  data: string | Buffer,
  waitMs = 15_000,
  hangUpAfter?: number,
): Promise<{ text: string; closed: boolean; ms: number }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    const t0 = performance.now();
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text: Buffer.concat(chunks).toString("latin1"), closed, ms: performance.now() - t0 });
    };
    const timer = setTimeout(() => finish(false), waitMs);
    let received = 0;
    socket.on("data", (d) => {
      chunks.push(d);
      received += d.length;
      if (hangUpAfter !== undefined && received >= hangUpAfter) finish(false);
    });
    socket.on("close", () => finish(true));
    // The server may answer and close before it has read everything (a refused oversized body).
    socket.on("error", () => finish(true));
    socket.on("connect", () => socket.write(data));
  });
}

/**
 * The responses in a raw byte stream (several when requests were pipelined), judged one by one;
 * interim 1xx responses are skipped, and the answer to a HEAD request has no body.
 */
export function judgeRaw(text: string, isHead = false): { statuses: number[]; problems: string[] } {
  const statuses: number[] = [];
  const problems: string[] = [];
  let rest = text;
  while (rest.startsWith("HTTP/1.1 ")) {
    const at = rest.indexOf("\r\n\r\n");
    if (at < 0) {
      problems.push("a response cut inside its headers");
      break;
    }
    const head = rest.slice(0, at).split("\r\n");
    const status = Number(head[0]!.split(" ")[1]);
    const headers = new Map(
      head
        .slice(1)
        .map((l) => [l.slice(0, l.indexOf(":")).trim().toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]),
    );
    let body: string;
    const len = headers.get("content-length");
    if (status >= 100 && status < 200) {
      rest = rest.slice(at + 4);
      continue;
    }
    if (isHead) {
      rest = rest.slice(at + 4);
      statuses.push(status);
      if (status >= 500) problems.push(`${status} to HEAD`);
      continue;
    }
    if (len !== undefined) {
      body = rest.slice(at + 4, at + 4 + Number(len));
      rest = rest.slice(at + 4 + Number(len));
    } else if (headers.get("transfer-encoding") === "chunked") {
      // Chunked (event streams): de-chunk up to the terminal chunk.
      let p = at + 4;
      body = "";
      for (;;) {
        const eol = rest.indexOf("\r\n", p);
        const size = eol < 0 ? Number.NaN : Number.parseInt(rest.slice(p, eol), 16);
        if (!Number.isFinite(size)) {
          problems.push("a chunked body cut short");
          break;
        }
        body += rest.slice(eol + 2, eol + 2 + size);
        p = eol + 2 + size + 2;
        if (size === 0) break;
      }
      rest = rest.slice(p);
    } else {
      body = rest.slice(at + 4);
      rest = "";
    }
    statuses.push(status);
    const p = judge(
      status,
      headers.get("content-type") ?? "",
      Buffer.from(body, "latin1").toString("utf8"),
      headers.has("access-control-allow-methods"),
    );
    if (p) problems.push(p);
  }
  if (statuses.length === 0) problems.push(`no HTTP response: ${JSON.stringify(text.slice(0, 80))}`);
  return { statuses, problems };
}

/** mulberry32: a small seeded PRNG, so any failing case replays from its seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Runs `tasks` with at most `limit` at once. */
export async function pool<T>(
  items: readonly T[],
  limit: number,
  run: (item: T, i: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        await run(items[i]!, i);
      }
    }),
  );
}
