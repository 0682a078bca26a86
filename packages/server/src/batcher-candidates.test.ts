import { Sampler, type SamplerOptions } from "@minfer/sampler";
import { expect, it } from "vitest";
import { BATCHER_CANDIDATES, Batcher } from "./batcher.js";
import { useStories } from "./test-helpers.js";

// The batcher's context computes each row's best ids (candidates) and its samplers use them: the
// tokens must be those of a batcher whose samplers read the whole row (candidates: 0).
const stories = useStories();

const PROMPTS = ["Once upon a time", "Lily and her mom", "The big red ball", "Tom had a dog"];
const SAMPLING: SamplerOptions[] = [
  { temperature: 0, logitBias: { 2: -100 } },
  { temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05, logitBias: { 2: -100 } },
  { temperature: 0.8, topK: 100 }, // more than the candidates: the whole row
  // as many as the candidates: never provable from them (top-k needs k ids above the last one's
  // logit), so a step that read back only the candidates reads each row from the device
  { temperature: 0.8, topK: BATCHER_CANDIDATES },
];
const WHOLE_ROW = [2, 3];

async function generate(candidates: number | undefined, candidatesOnly?: boolean) {
  const b = new Batcher(stories(), {
    parallel: 4,
    ctxPerSlot: 128,
    batchSize: 512,
    queueSize: 0,
    ...(candidates !== undefined ? { contextOptions: { candidates } } : {}),
    ...(candidatesOnly !== undefined ? { candidatesOnly } : {}),
  });
  // Which steps read back only the candidates, per sampling phase.
  const only: boolean[][] = SAMPLING.map(() => []);
  let phase = 0;
  const decode = b.context.decode.bind(b.context);
  b.context.decode = (batch) => {
    only[phase]!.push(batch.candidatesOnly === true);
    return decode(batch);
  };
  try {
    const samplers = PROMPTS.flatMap((_, i) => SAMPLING.map((o) => new Sampler({ ...o, seed: 7 + i })));
    const tokens: (readonly number[])[] = [];
    for (let s = 0; s < SAMPLING.length; s++) {
      const jobs = PROMPTS.map((p, i) =>
        b.submit({
          ids: stories().tokenizer.encode(p, { addSpecial: true }),
          sampler: samplers[i * SAMPLING.length + s]!,
          maxTokens: 24,
          cachePrompt: false,
        }),
      );
      for (const r of await Promise.all(jobs)) tokens.push(r.tokens);
      phase++;
    }
    return {
      only,
      tokens,
      stats: samplers.map((s) => ({ ...s.candidateStats })),
      nCandidates: b.context.nCandidates,
    };
  } finally {
    await b.close();
  }
}

it("streams sample from the context's candidate ids, with the tokens of the whole row", async () => {
  const on = await generate(undefined);
  const off = await generate(0);
  expect(on.nCandidates).toBe(BATCHER_CANDIDATES);
  expect(off.nCandidates).toBe(0);
  expect(on.tokens).toEqual(off.tokens);
  for (const t of on.tokens) expect(t.length).toBeGreaterThan(0);
  // greedy and top-40 used the ids for their samples; top-100 (> 64) read the whole row
  on.stats.forEach((s, j) => {
    if (WHOLE_ROW.includes(j % SAMPLING.length)) expect(s).toMatchObject({ onIds: 0 });
    else expect(s.onIds).toBeGreaterThan(s.fullRow);
  });
  for (const s of off.stats) expect(s).toEqual({ onIds: 0, fullRow: 0 });
});

it("steps whose samplers can all take the candidates read back only those, with the same tokens", async () => {
  const only = await generate(undefined); // candidatesOnly by default
  const rows = await generate(undefined, false);
  const none = await generate(0);
  expect(only.tokens).toEqual(rows.tokens);
  expect(only.tokens).toEqual(none.tokens);
  // greedy and top-40 (with an end-of-sequence ban): every generation step; the prompt steps too
  // (their last token's row is sampled); top-100 never
  // top-64: every step too, each row then read from the device; top-100 never
  for (const p of [0, 1, 3]) expect(only.only[p]!.every((x) => x)).toBe(true);
  expect(only.only[2]!.some((x) => x)).toBe(false);
  for (const r of [...rows.only, ...none.only]) expect(r.some((x) => x)).toBe(false);
  only.stats.forEach((s, j) => {
    if (WHOLE_ROW.includes(j % SAMPLING.length)) expect(s).toMatchObject({ onIds: 0 });
    else expect(s.onIds).toBeGreaterThan(s.fullRow);
  });
});

it("a job ended while its row is read from the device (the server closing) takes no token after its end", async () => {
  const b = new Batcher(stories(), { parallel: 2, ctxPerSlot: 128, batchSize: 512, queueSize: 0 });
  const decode = b.context.decode.bind(b.context);
  let closing: Promise<void> | undefined;
  b.context.decode = async (batch) => {
    const l = await decode(batch);
    const fetch = l.fetch.bind(l);
    // the first row read from the device: the batcher is closed meanwhile
    l.fetch = (i: number) => {
      closing ??= b.close();
      return fetch(i);
    };
    return l;
  };
  // top-64 of 64 candidates: every row is read from the device
  const job = b.submit({
    ids: stories().tokenizer.encode("Once upon a time", { addSpecial: true }),
    sampler: new Sampler({ temperature: 0.8, topK: BATCHER_CANDIDATES, seed: 3 }),
    maxTokens: 24,
    cachePrompt: false,
  });
  const r = await job;
  const held = [...r.tokens];
  await closing;
  expect(r.finish).toBe("shutdown");
  expect(r.tokens).toEqual(held); // nothing was added after the job ended
});
