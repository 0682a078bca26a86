import { BatchedModelDrafter, Context, type DraftRequest } from "@minfer/engine";
import { Sampler } from "@minfer/sampler";
import { afterAll, describe, expect, it } from "vitest";
import { Batcher, type BatcherOptions, type BatcherSpeculation } from "./batcher.js";
import { CASES, runCases, unconstrained } from "./batcher-cases.js";
import { start, useStories } from "./test-helpers.js";

// Speculative decoding in the batcher: every slot's drafts verified in the step's one decode. The
// reference is the same batcher without drafts: every job must end the same (tokens, text, events,
// finish), and the slots must hold the same cells afterwards — rejected drafts removed, tokens
// sampled past a stop string dropped — whatever the drafts were: n-gram look-up, a draft model
// that agrees with the target (the target itself), and one that is wrong at every third token.

const stories = useStories();
const contexts: Context[] = [];
afterAll(() => {
  for (const c of contexts) c.dispose();
});

/** A draft context of the stories model with a sequence per slot (80 cells each, as runCases' slots). */
function draftContext(parallel: number): Context {
  const c = new Context(stories(), { nCtx: 80 * parallel, nSeqMax: parallel, kvUnified: false });
  contexts.push(c);
  return c;
}

/** The model's drafts with every third token replaced by the next id: rejected there. */
class WrongDrafter extends BatchedModelDrafter {
  override async draftMany(requests: readonly DraftRequest[]): Promise<number[][]> {
    const drafts = await super.draftMany(requests);
    return drafts.map((d) => d.map((t, i) => (i % 3 === 2 ? (t + 1) % 512 : t)));
  }
}

/** What must not change with drafts: results without their draft counters, slots without theirs. */
function comparable(r: Awaited<ReturnType<typeof runCases>>) {
  const results = (w: typeof r.first) =>
    w.results.map((x) => {
      if (!("finish" in x)) return x;
      const { speculative: _s, ...rest } = x as typeof x & { speculative?: unknown };
      return rest;
    });
  return {
    first: { results: results(r.first), events: r.first.events },
    second: { results: results(r.second), events: r.second.events },
    slots: r.slots.map(({ speculative: _s, drafted: _d, draftAccepted: _a, ...s }) => s),
    history: r.history,
  };
}

/** Drafted and accepted tokens over the first wave's jobs. */
function counted(r: Awaited<ReturnType<typeof runCases>>) {
  let drafted = 0;
  let accepted = 0;
  for (const x of r.first.results) {
    const s = (x as { speculative?: { drafted: number; accepted: number } }).speculative;
    drafted += s?.drafted ?? 0;
    accepted += s?.accepted ?? 0;
  }
  return { drafted, accepted };
}

// The abort case (index 8) ends when its client's abort is seen, a step later: with drafts that
// step may have taken more tokens. It is compared up to its abort.
const ABORT = CASES.findIndex((c) => c.abortAfter !== undefined);

function expectSameAsPlain(spec: ReturnType<typeof comparable>, plain: ReturnType<typeof comparable>): void {
  const at = (w: typeof spec.first, i: number) => ({
    results: w.results.filter((_, k) => k !== i),
    events: w.events.filter((_, k) => k !== i),
  });
  expect(at(spec.first, ABORT)).toEqual(at(plain.first, ABORT));
  const a = spec.first.results[ABORT] as { finish: string; tokens: readonly number[] };
  const p = plain.first.results[ABORT] as { finish: string; tokens: readonly number[] };
  expect(a.finish).toBe("abort");
  expect(a.tokens.slice(0, p.tokens.length)).toEqual(p.tokens);
  expect(spec.first.events[ABORT]!.slice(0, CASES[ABORT]!.abortAfter)).toEqual(
    plain.first.events[ABORT]!.slice(0, CASES[ABORT]!.abortAfter),
  );
  expect(spec.second).toEqual(plain.second);
  // (the aborted job's slot may hold more of its tokens; every other slot holds the same)
  expect(spec.slots.filter((_, k) => k !== ABORT)).toEqual(plain.slots.filter((_, k) => k !== ABORT));
  expect(spec.history.filter((_, k) => k !== ABORT)).toEqual(plain.history.filter((_, k) => k !== ABORT));
}

describe("speculative decoding in the batcher", () => {
  const parallel = CASES.length;
  let texts: string[];
  let plain: ReturnType<typeof comparable>;
  const runWith = async (speculative: BatcherSpeculation, more: Partial<BatcherOptions> = {}) => {
    const r = await runCases(stories, { speculative, ...more }, texts, parallel);
    expect(r.violations).toEqual([]);
    return { r, c: comparable(r), n: counted(r) };
  };

  it("runs the cases without drafts (the reference)", async () => {
    texts = await unconstrained(stories);
    const r = await runCases(stories, {}, texts, parallel);
    expect(r.violations).toEqual([]);
    plain = comparable(r);
    expect(counted(r)).toEqual({ drafted: 0, accepted: 0 });
  });

  it("n-gram drafts: every job ends as without them; a step verifying one job's drafts alone decodes batch-invariantly", async () => {
    let stepsWithDrafts = 0;
    let alone = 0;
    const { r, c, n } = await runWith(
      { drafter: "ngram", draftMax: 8 },
      {
        observer: {
          onStep: (s) => {
            if (s.drafted === 0) return;
            stepsWithDrafts++;
            // (one generating job, no prompt: its pending token and its drafts)
            if (s.promptTokens === 0 && s.generating === s.drafted + 1) alone++;
          },
        },
      },
    );
    expectSameAsPlain(c, plain);
    expect(n.drafted).toBeGreaterThan(20);
    expect(n.accepted).toBeGreaterThan(1);
    expect(alone).toBeGreaterThan(0);
    // (steps with other jobs' tokens are batched as those jobs are without drafts: not flagged, so
    // that their prompt chunks keep the batched kernels)
    expect(stepsWithDrafts).toBeGreaterThan(alone);
    expect(r.invariantDecodes).toBe(alone);
  });

  it("batchInvariant: every step decodes batch-invariantly, and every job ends as without it", async () => {
    let steps = 0;
    const { r, c } = await runWith(
      { drafter: "ngram", draftMax: 8 },
      { batchInvariant: true, observer: { onStep: () => void steps++ } },
    );
    expectSameAsPlain(c, plain);
    expect(steps).toBeGreaterThan(0);
    expect(r.invariantDecodes).toBe(steps);
  });

  it("the target as its own draft model: drafts accepted, every job ends as without them", async () => {
    const drafter = BatchedModelDrafter.for(stories(), draftContext(parallel));
    const { c, n } = await runWith({ drafter, draftMax: 6 });
    expectSameAsPlain(c, plain);
    // every greedy draft is the target's own token (the seeded cases reject some)
    expect(n.accepted / n.drafted).toBeGreaterThan(0.6);
  });

  it("a draft model wrong at every third token: rejected there, every job ends as without it", async () => {
    const drafter = new WrongDrafter(draftContext(parallel));
    const { c, n } = await runWith({ drafter, draftMax: 6 }, { overlapOutput: false });
    expectSameAsPlain(c, plain);
    expect(n.accepted).toBeGreaterThan(0);
    expect(n.accepted / n.drafted).toBeLessThan(0.7);
  });
});

it("a draft model that fails fails the jobs that asked for drafts, and the batcher goes on", async () => {
  let calls = 0;
  class Failing extends BatchedModelDrafter {
    override async draftMany(requests: readonly DraftRequest[]): Promise<number[][]> {
      if (++calls === 3) throw new Error("draft device lost");
      return super.draftMany(requests);
    }
  }
  const b = new Batcher(stories(), {
    parallel: 2,
    ctxPerSlot: 80,
    batchSize: 64,
    queueSize: 4,
    speculative: { drafter: new Failing(draftContext(2)), draftMax: 4 },
  });
  try {
    const job = (p: string) =>
      b
        .submit({
          ids: stories().tokenizer.encode(p, { addSpecial: true }),
          sampler: new Sampler({ temperature: 0, logitBias: { 2: -100 } }),
          maxTokens: 30,
        })
        .then(
          (r) => r.finish as string,
          (e: Error) => e.message,
        );
    expect(await Promise.all([job("Once upon a time"), job("Lily and her mom")])).toEqual([
      "draft device lost",
      "draft device lost",
    ]);
    expect(await job("One day")).toBe("length");
  } finally {
    await b.close();
  }
});

describe("speculative decoding in the server", () => {
  it("counts drafts in /slots, /metrics and the timings; greedy text as without", async () => {
    const prompt = "Once upon a time, there was a little girl named Lily. Once upon a time, there was";
    const body = { prompt, n_predict: 40, temperature: 0, cache_prompt: false };
    const plain = await start({ model: stories(), parallel: 2, contextOptions: { nCtx: 512 } });
    const spec = await start({
      model: stories(),
      parallel: 2,
      contextOptions: { nCtx: 512 },
      metrics: true,
      speculative: { draft: stories(), draftMax: 4 },
    });
    try {
      const want = (await (await plain.post("/completion", body)).json()) as { content: string };
      const got = (await (await spec.post("/completion", body)).json()) as {
        content: string;
        timings: Record<string, number>;
      };
      expect(got.content).toBe(want.content);
      expect(got.timings.draft_n).toBeGreaterThan(10);
      expect(got.timings.draft_n_accepted).toBeGreaterThan(0.6 * got.timings.draft_n!);
      const slots = (await (await fetch(`${spec.url}/slots`)).json()) as Record<string, unknown>[];
      expect(slots[0]).toMatchObject({ speculative: true, n_draft: got.timings.draft_n });
      const metrics = await (await fetch(`${spec.url}/metrics`)).text();
      const value = (name: string) => Number(new RegExp(`^llamacpp:${name} (\\S+)$`, "m").exec(metrics)?.[1]);
      expect(value("spec_decode_num_draft_tokens_total")).toBe(got.timings.draft_n);
      expect(value("spec_decode_num_accepted_tokens_total")).toBe(got.timings.draft_n_accepted);
      expect(value("spec_decode_num_drafts_total")).toBeGreaterThan(0);
      // a request's own speculative.n_max (0: none) and a bad pair
      const off = (await (await spec.post("/completion", { ...body, "speculative.n_max": 0 })).json()) as {
        content: string;
        timings: Record<string, number>;
      };
      expect(off.content).toBe(want.content);
      expect(off.timings.draft_n).toBeUndefined();
      const bad = await spec.post("/completion", { ...body, "speculative.n_max": 2, "speculative.n_min": 3 });
      expect(bad.status).toBe(400);
      expect(JSON.stringify(await bad.json())).toContain("must not exceed speculative.n_max (2), got 3");
    } finally {
      await plain.server.close();
      await spec.server.close();
    }
  });
});
