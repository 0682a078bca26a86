import type { Context } from "@minfer/engine";
import { Grammar, Sampler, type SamplerOptions } from "@minfer/sampler";
import { expect, it } from "vitest";
import { Batcher, type JobSpec } from "./batcher.js";
import { useStories } from "./test-helpers.js";

// The batcher delivers a step's token output (text, stop strings, onToken) while the next step
// decodes (overlapOutput, the default). Every job must end exactly as without the overlap: the same
// events, text, tokens and finish; the slots must hold the same cells afterwards; and no sequence
// the decode in flight holds may be changed (its cells removed, its slot reused) before it returns.

const stories = useStories();

const PROMPTS = ["Once upon a time", "Lily and her mom", "The big red ball", "Tom had a dog", "One day"];

/** How a case makes its job, given the greedy text of its prompt (to pick stop strings from). */
interface Case {
  readonly prompt: string;
  readonly sampling?: SamplerOptions;
  readonly maxTokens?: number;
  /** Stop strings from the unconstrained text of the same sampling (found mid-stream). */
  readonly stops?: (text: string) => string[];
  readonly nProbs?: number;
  readonly grammar?: string;
  /** Same object: the n choices of one request. */
  readonly group?: object;
  /** Aborts (the client left) once this many tokens were reported. */
  readonly abortAfter?: number;
  /** onToken throws (the consumer is gone) at this token. */
  readonly throwAt?: number;
}

const midStop = (at: number, len: number) => (text: string) => {
  const s = text.slice(at, at + len);
  if (s.length < len || text.indexOf(s) !== at)
    throw new Error(`no stop string at ${at} in ${JSON.stringify(text)}`);
  return [s];
};
const SEEDED: SamplerOptions = { temperature: 0.8, topK: 40, topP: 0.95, seed: 11 };
const pair = {};
const CASES: Case[] = [
  { prompt: PROMPTS[0]!, maxTokens: 40 },
  { prompt: PROMPTS[1]!, maxTokens: 60, stops: midStop(12, 5) },
  { prompt: PROMPTS[2]!, maxTokens: 60, sampling: SEEDED, nProbs: 2, stops: midStop(20, 4) },
  { prompt: PROMPTS[3]!, maxTokens: 60, stops: midStop(3, 3) },
  { prompt: PROMPTS[4]!, maxTokens: 3 },
  { prompt: PROMPTS[0]!, grammar: 'root ::= " " [a-z]+ " " [a-z]+ "."', maxTokens: 40 },
  { prompt: PROMPTS[1]!, sampling: SEEDED, group: pair, maxTokens: 50, stops: midStop(8, 3) },
  {
    prompt: PROMPTS[1]!,
    sampling: { ...SEEDED, seed: 12 },
    group: pair,
    maxTokens: 50,
    stops: midStop(25, 4),
  },
  { prompt: PROMPTS[2]!, maxTokens: 50, abortAfter: 6 },
  { prompt: PROMPTS[3]!, maxTokens: 50, throwAt: 4 },
  { prompt: PROMPTS[4]!, stops: () => ["\u00ff\u00fe"] }, // runs to the slot's context
  { prompt: PROMPTS[2]!, maxTokens: 30, stops: midStop(0, 4) },
];

/** The greedy/seeded text of every case without stop strings, abort or failures (to pick stops from). */
async function unconstrained(): Promise<string[]> {
  const b = new Batcher(stories(), { parallel: 4, ctxPerSlot: 80, batchSize: 64, queueSize: 16 });
  try {
    const rs = await Promise.all(
      CASES.map((c) =>
        b.submit({
          ids: stories().tokenizer.encode(c.prompt, { addSpecial: true }),
          sampler: sampler(c),
          maxTokens: 60,
          cachePrompt: false,
        }),
      ),
    );
    return rs.map((r) => r.text);
  } finally {
    await b.close();
  }
}

function sampler(c: Case): Sampler {
  return new Sampler({
    temperature: 0,
    ...c.sampling,
    logitBias: { 2: -100 },
    ...(c.grammar ? { constraint: Grammar.parse(c.grammar).constraint(stories().tokenizer) } : {}),
  });
}

/** Records every change to a sequence that a decode in flight holds. */
function guard(context: Context): { violations: string[]; flying: Set<number> } {
  const violations: string[] = [];
  const flying = new Set<number>();
  const ctx = context as unknown as Record<string, (...a: unknown[]) => unknown>;
  const decode = ctx.decode!.bind(context);
  ctx.decode = (batch: unknown) => {
    const seqs = [...new Set((batch as { seq: number[] }).seq)];
    for (const s of seqs) flying.add(s);
    return (decode(batch) as Promise<unknown>).finally(() => {
      for (const s of seqs) flying.delete(s);
    });
  };
  for (const name of ["seqRm", "seqClone", "seqShare", "seqCp"]) {
    const f = ctx[name]?.bind(context);
    if (!f) continue;
    ctx[name] = (...a: unknown[]) => {
      for (const s of a.slice(0, name === "seqRm" ? 1 : 2))
        if (flying.has(s as number)) violations.push(`${name}(${a.join(", ")}) while seq ${s} decodes`);
      return f(...a);
    };
  }
  return { violations, flying };
}

async function run(overlapOutput: boolean, texts: string[], parallel: number) {
  const b = new Batcher(stories(), {
    parallel,
    ctxPerSlot: 80,
    batchSize: 64,
    queueSize: 16,
    overlapOutput,
  });
  const { violations, flying } = guard(b.context);
  /** Tokens reported while a decode ran. */
  let overlapped = 0;
  const wave = async (cases: readonly Case[], prefix: (i: number) => string) => {
    const events: string[][] = cases.map(() => []);
    const jobs = cases.map((c, i) => {
      const abort = new AbortController();
      const spec: JobSpec = {
        ids: stories().tokenizer.encode(prefix(i) + c.prompt, { addSpecial: true }),
        sampler: sampler(c),
        ...(c.maxTokens !== undefined ? { maxTokens: c.maxTokens } : {}),
        ...(c.stops ? { stop: c.stops(texts[i]!) } : {}),
        ...(c.nProbs !== undefined ? { nProbs: c.nProbs } : {}),
        ...(c.group ? { group: c.group } : {}),
        signal: abort.signal,
        onToken: (e) => {
          events[i]!.push(JSON.stringify(e));
          if (flying.size > 0) overlapped++;
          if (c.throwAt !== undefined && events[i]!.length === c.throwAt) throw new Error("socket gone");
          if (c.abortAfter !== undefined && events[i]!.length === c.abortAfter) abort.abort();
        },
      };
      return b.submit(spec).then(
        ({ queuedMs: _q, promptMs: _p, generateMs: _g, ...r }) => r,
        (e: Error) => ({ error: e.message }),
      );
    });
    return { results: await Promise.all(jobs), events };
  };
  try {
    const first = await wave(CASES, () => "");
    // What each slot holds now; then the same prompts again, reusing those cells.
    const slots = b.slots().map(({ id: _, ...s }) => s);
    const history = Array.from({ length: b.parallel }, (_, s) => b.context.history(s)?.join(","));
    const second = await wave(CASES.slice(0, 6), () => "");
    return { first, slots, history, second, violations, overlapped };
  } finally {
    await b.close();
  }
}

it("ends every job as without the overlap, and keeps a slot the decode in flight holds", async () => {
  const texts = await unconstrained();
  // A slot per job: every job starts in the first step, the same in both runs.
  const off = await run(false, texts, CASES.length);
  const on = await run(true, texts, CASES.length);
  expect(on.violations).toEqual([]);
  expect(off.violations).toEqual([]);
  expect(on.overlapped).toBeGreaterThan(100);
  expect(off.overlapped).toBe(0);
  expect(on.first).toEqual(off.first);
  expect(on.slots).toEqual(off.slots);
  expect(on.history).toEqual(off.history);
  expect(on.second).toEqual(off.second);
  // The cases end as meant: stop strings mid-stream, length, grammar, abort, failure, context.
  const finish = off.first.results.map((r) => ("error" in r ? r.error : r.finish));
  expect(finish).toEqual([
    "length",
    "stop",
    "stop",
    "stop",
    "length",
    "stop",
    "stop",
    "stop",
    "abort",
    "socket gone",
    "context",
    "stop",
  ]);
  const r1 = off.first.results[1] as { text: string; tokens: readonly number[] };
  expect(r1.text).toBe(texts[1]!.slice(0, 12));
  // The second wave reused the first's cells.
  expect(off.second.results.some((r) => "cachedTokens" in r && r.cachedTokens > 1)).toBe(true);
});

it("ends queued jobs as without the overlap", async () => {
  const texts = await unconstrained();
  // Four slots for twelve jobs: a slot whose job a stop string ends is free one step later with the
  // overlap (the stop string is found while the next decode runs), so a queued job may start a step
  // later, in another slot, and reuse another prefix: all but cachedTokens must be the same.
  const off = await run(false, texts, 4);
  const on = await run(true, texts, 4);
  expect(on.violations).toEqual([]);
  const strip = (w: typeof off.first) => ({
    events: w.events,
    results: w.results.map((r) => ("cachedTokens" in r ? { ...r, cachedTokens: 0 } : r)),
  });
  expect(strip(on.first)).toEqual(strip(off.first));
  expect(strip(on.second)).toEqual(strip(off.second));
});

it("a failed decode fails the jobs it held, after their earlier tokens were reported", async () => {
  const failing = async (overlapOutput: boolean) => {
    const b = new Batcher(stories(), {
      parallel: 4,
      ctxPerSlot: 80,
      batchSize: 64,
      queueSize: 4,
      overlapOutput,
    });
    const ctx = b.context as unknown as { decode: (batch: unknown) => Promise<unknown> };
    const decode = ctx.decode.bind(b.context);
    let calls = 0;
    ctx.decode = (batch) => (++calls === 6 ? Promise.reject(new Error("device lost")) : decode(batch));
    const events: string[][] = [[], [], [], []];
    const jobs = ["Once upon a time", "Lily and her mom", "The big red ball", "Tom had a dog"].map((p, i) =>
      b
        .submit({
          ids: stories().tokenizer.encode(p, { addSpecial: true }),
          sampler: new Sampler({ temperature: 0, logitBias: { 2: -100 } }),
          // the first ends (max tokens) before the failed step; the others are in it
          maxTokens: i === 0 ? 3 : 40,
          onToken: (e) => events[i]!.push(e.text),
        })
        .then(
          (r) => r.finish,
          (e: Error) => e.message,
        ),
    );
    const results = await Promise.all(jobs);
    // the batcher goes on: a new job runs to its end
    const after = await b.submit({
      ids: stories().tokenizer.encode("One day", { addSpecial: true }),
      sampler: new Sampler({ temperature: 0, logitBias: { 2: -100 } }),
      maxTokens: 5,
    });
    await b.close();
    return { results, events, after: after.text };
  };
  const off = await failing(false);
  const on = await failing(true);
  expect(on).toEqual(off);
  expect(off.results).toEqual(["length", "device lost", "device lost", "device lost"]);
  expect(off.events[1]!.length).toBe(5);
});
