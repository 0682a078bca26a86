// One-token steps attend by spans over a graph whose KV window is the used cells' power of two
// (spanWindow), not the whole context: the window's arithmetic, the graphs a growing sequence goes
// through, and its logits against the same tokens decoded in one call.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Context } from "./context.js";
import { SPAN_MIN_WINDOW, spanWindow } from "./decode-step.js";
import type { KvGroupCache } from "./kv-store.js";
import type { Model } from "./model.js";
import { haveStories, loadStories, maxAbsDiff } from "./test-helpers.js";

/** A cache of nCtx cells whose highest used cell is window - 1. */
const cache = (nCtx: number, window: number) =>
  ({ cache: { nCtx, window: () => window } }) as unknown as KvGroupCache;

describe("spanWindow", () => {
  it("rounds the used cells up to a power of two of at least 256, at most the cache", () => {
    expect(SPAN_MIN_WINDOW).toBe(256);
    expect(spanWindow(cache(4096, 0))).toBe(256);
    expect(spanWindow(cache(4096, 256))).toBe(256);
    expect(spanWindow(cache(4096, 257))).toBe(512);
    expect(spanWindow(cache(4096, 2049))).toBe(4096);
    expect(spanWindow(cache(3000, 2049))).toBe(3000);
    expect(spanWindow(cache(100, 7))).toBe(100);
  });
});

describe.skipIf(!haveStories)("the KV window of a step's graph (stories260K)", () => {
  let model: Model;
  let dispose = () => {};
  beforeAll(async () => {
    ({ model, dispose } = await loadStories());
  });
  afterAll(() => dispose());
  /** Token i of a fixed sequence of ids in the vocabulary. */
  const tok = (i: number) => 1 + ((i * 37 + 11) % (model.hparams.nVocab - 1));

  it("a sequence decoded a token a call changes graph once its cells pass 256, with the logits of one call", async () => {
    const n = 300;
    const tokens = Array.from({ length: n }, (_, i) => tok(i));
    const ref = new Context(model, { nCtx: 512 });
    const ctx = new Context(model, { nCtx: 2048 });
    try {
      const all = await ref.decode({ tokens, logits: "all" });
      const builds: number[] = [];
      for (let i = 0; i < n; i++) {
        const out = await ctx.decode({ tokens: [tokens[i]!], logits: "last" });
        expect(maxAbsDiff(out.last(), all.get(i)), `token ${i}`).toBeLessThan(2e-4);
        builds.push(ctx.stats().graphs.builds);
      }
      // cells 0-255: the 256-cell graph (built by the first step); from cell 256 on, one more (512)
      expect(builds[255]).toBe(builds[1]);
      expect(builds[256]).toBe(builds[255]! + 1);
      expect(builds[n - 1]).toBe(builds[256]);
    } finally {
      ctx.dispose();
      ref.dispose();
    }
  });

  it("a verification of several tokens takes the one-token steps' window, not the whole context", async () => {
    // (a backend sizes each token's attention by the graph's window — CUDA's kernel and splits —
    // so a batch-invariant step must have the window its tokens' one-token steps would have)
    const ctx = new Context(model, { nCtx: 2048 });
    try {
      const builds = () => ctx.stats().graphs.builds;
      await ctx.decode({ tokens: Array.from({ length: 8 }, (_, i) => tok(i)), logits: "last" });
      await ctx.decode({ tokens: [tok(8), tok(9), tok(10), tok(11)], logits: "all", batchInvariant: true });
      const first = builds();
      // the same size in the same (256-cell) window: the same graph
      await ctx.decode({ tokens: [tok(12), tok(13), tok(14), tok(15)], logits: "all", batchInvariant: true });
      expect(builds()).toBe(first);
      for (let i = 16; i < 254; i++) await ctx.decode({ tokens: [tok(i)], logits: "last" });
      const before = builds();
      // cells 254-257: the 512-cell window, a graph of its own (the whole context's would be the same
      // graph as the two steps above)
      await ctx.decode({
        tokens: [tok(254), tok(255), tok(256), tok(257)],
        logits: "all",
        batchInvariant: true,
      });
      expect(builds()).toBe(before + 1);
      // and an ordinary step of 4 tokens spans the whole context: one graph for every window
      await ctx.decode({ tokens: [tok(258), tok(259), tok(260), tok(261)], logits: "all" });
      const plain = builds();
      await ctx.decode({ tokens: [tok(262), tok(263), tok(264), tok(265)], logits: "all" });
      expect(builds()).toBe(plain);
    } finally {
      ctx.dispose();
    }
  });

  it("attends over the whole cache at every step, so other sequences' cells never change a step's graph", async () => {
    const ctx = new Context(model, { nCtx: 1024, nSeqMax: 2, kvUnified: false, batchInvariant: true });
    try {
      await ctx.decode({ tokens: [tok(0)], logits: "last" });
      const one = ctx.stats().graphs.builds;
      // sequence 1 fills cells past 256 (the one-token window of an ordinary context would grow)
      const long = Array.from({ length: 300 }, (_, i) => tok(i + 1));
      await ctx.decode({ tokens: long, seq: long.map(() => 1), logits: "last" });
      const afterPrompt = ctx.stats().graphs.builds;
      for (let i = 1; i < 4; i++) await ctx.decode({ tokens: [tok(i)], pos: [i], logits: "last" });
      expect(ctx.stats().graphs.builds).toBe(afterPrompt);
      expect(afterPrompt).toBeGreaterThan(one);
    } finally {
      ctx.dispose();
    }
  });

  it("refuses a batchInvariant that is not a boolean, naming it", () => {
    expect(() => new Context(model, { batchInvariant: "yes" as unknown as boolean })).toThrow(
      "batchInvariant must be a boolean, got yes",
    );
  });
});
