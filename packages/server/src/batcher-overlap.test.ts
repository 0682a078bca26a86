import { Sampler } from "@minfer/sampler";
import { expect, it } from "vitest";
import { Batcher } from "./batcher.js";
import { CASES, runCases, unconstrained } from "./batcher-cases.js";
import { useStories } from "./test-helpers.js";

// The batcher delivers a step's token output (text, stop strings, onToken) while the next step
// decodes (overlapOutput, the default). Every job must end exactly as without the overlap: the same
// events, text, tokens and finish; the slots must hold the same cells afterwards; and no sequence
// the decode in flight holds may be changed (its cells removed, its slot reused) before it returns.

const stories = useStories();

it("ends every job as without the overlap, and keeps a slot the decode in flight holds", async () => {
  const texts = await unconstrained(stories);
  // A slot per job: every job starts in the first step, the same in both runs.
  const off = await runCases(stories, { overlapOutput: false }, texts, CASES.length);
  const on = await runCases(stories, { overlapOutput: true }, texts, CASES.length);
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
  const texts = await unconstrained(stories);
  // Four slots for twelve jobs: a slot whose job a stop string ends is free one step later with the
  // overlap (the stop string is found while the next decode runs), so a queued job may start a step
  // later, in another slot, and reuse another prefix: all but cachedTokens must be the same.
  const off = await runCases(stories, { overlapOutput: false }, texts, 4);
  const on = await runCases(stories, { overlapOutput: true }, texts, 4);
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
