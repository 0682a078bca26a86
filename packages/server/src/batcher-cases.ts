import type { Context, Model } from "@minfer/engine";
import { Grammar, Sampler, type SamplerOptions } from "@minfer/sampler";
import { Batcher, type BatcherOptions, type JobSpec } from "./batcher.js";

// The batcher's test cases shared by the tests of its output overlap and of speculative decoding:
// jobs that end every way a job can (length, stop strings mid-stream, grammar, abort, a failing
// consumer, a full context, n choices sharing a prompt), run on a batcher with given options, and a
// guard that records every change to a sequence a decode in flight holds.

export const PROMPTS = [
  "Once upon a time",
  "Lily and her mom",
  "The big red ball",
  "Tom had a dog",
  "One day",
];

/** How a case makes its job, given the greedy text of its prompt (to pick stop strings from). */
export interface Case {
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
export const CASES: Case[] = [
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
export async function unconstrained(stories: () => Model): Promise<string[]> {
  const b = new Batcher(stories(), { parallel: 4, ctxPerSlot: 80, batchSize: 64, queueSize: 16 });
  try {
    const rs = await Promise.all(
      CASES.map((c) =>
        b.submit({
          ids: stories().tokenizer.encode(c.prompt, { addSpecial: true }),
          sampler: sampler(stories, c),
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

export function sampler(stories: () => Model, c: Case): Sampler {
  return new Sampler({
    temperature: 0,
    ...c.sampling,
    logitBias: { 2: -100 },
    ...(c.grammar ? { constraint: Grammar.parse(c.grammar).constraint(stories().tokenizer) } : {}),
  });
}

/** Records every change to a sequence that a decode in flight holds. */
export function guard(context: Context): {
  violations: string[];
  flying: Set<number>;
  invariant: { decodes: number };
} {
  const violations: string[] = [];
  const flying = new Set<number>();
  const invariant = { decodes: 0 };
  const ctx = context as unknown as Record<string, (...a: unknown[]) => unknown>;
  const decode = ctx.decode!.bind(context);
  ctx.decode = (batch: unknown) => {
    if ((batch as { batchInvariant?: boolean }).batchInvariant === true) invariant.decodes++;
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
  return { violations, flying, invariant };
}

/**
 * Runs CASES (and then the first six again, reusing the slots' cells) on a batcher of `parallel`
 * slots with `options`: each job's result (timings left out) and reported events, what the slots
 * and their caches hold between the waves, and the guard's findings.
 */
export async function runCases(
  stories: () => Model,
  options: Partial<BatcherOptions>,
  texts: string[],
  parallel: number,
) {
  const b = new Batcher(stories(), {
    parallel,
    ctxPerSlot: 80,
    batchSize: 64,
    queueSize: 16,
    ...options,
  });
  const { violations, flying, invariant } = guard(b.context);
  /** Tokens reported while a decode ran. */
  let overlapped = 0;
  const wave = async (cases: readonly Case[], prefix: (i: number) => string) => {
    const events: string[][] = cases.map(() => []);
    const jobs = cases.map((c, i) => {
      const abort = new AbortController();
      const spec: JobSpec = {
        ids: stories().tokenizer.encode(prefix(i) + c.prompt, { addSpecial: true }),
        sampler: sampler(stories, c),
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
    return { first, slots, history, second, violations, overlapped, invariantDecodes: invariant.decodes };
  } finally {
    await b.close();
  }
}
