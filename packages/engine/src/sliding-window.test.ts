// Sliding-window layers (gemma2: even layers see 16 positions) keep their own cache of the window
// and one micro-batch, reusing cells no query can see; the logits must be those of a context whose
// sliding-window cache holds the whole context (swaFull), which only masks.
import { synthShape } from "@minfer/models";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Context } from "./context.js";
import type { Model } from "./model.js";
import { loadArch, maxAbsDiff } from "./test-helpers.js";

const WINDOW = 16;
const N_UBATCH = 8;

describe("sliding-window cache (gemma2, window 16)", () => {
  let model: Model;
  let dispose: (() => void) | undefined;
  beforeAll(async () => {
    ({ model, dispose } = await loadArch("gemma2", { ...synthShape("tiny"), nLayer: 4 }, 7));
  });
  afterAll(() => dispose?.());

  const tokens = (n: number, seed: number) =>
    Array.from({ length: n }, (_, i) => 3 + ((i * 37 + seed * 11) % 250));
  const open = (swaFull: boolean, nSeqMax = 1) =>
    new Context(model, { nCtx: 128, nUbatch: N_UBATCH, nSeqMax, kvDtype: "f32", swaFull });

  it("is as big as the window and a micro-batch, and gives the full cache's logits over 3× the window", async () => {
    const windowed = open(false);
    const full = open(true);
    try {
      const caches = windowed.stats().caches;
      expect(caches.map((c) => [c.group, c.cells, c.window, c.layers])).toEqual([
        ["full", 128, 0, 2],
        ["swa", 32, 16, 2], // 16 + 8 rounded up to a multiple of 32
      ]);
      expect(full.stats().caches.map((c) => c.cells)).toEqual([128, 128]);
      const swa = caches[1]!;
      expect(swa.bytes).toBe(2 * 2 * 32 * 2 * 16 * 4); // 2 layers × K,V × 32 cells × 2 heads × 16 dims × f32
      // 3 × 16 positions, in steps of one micro-batch and then one token at a time.
      const prompt = tokens(3 * WINDOW, 1);
      let worst = 0;
      for (let i = 0; i < prompt.length; ) {
        const n = i < 24 ? N_UBATCH : 1;
        const chunk = prompt.slice(i, i + n);
        const a = await windowed.eval(chunk);
        const b = await full.eval(chunk);
        worst = Math.max(worst, maxAbsDiff(a, b));
        i += n;
      }
      expect(worst).toBeLessThan(1e-5);
      expect(windowed.stats().caches[1]!.used).toBeLessThanOrEqual(32);
      expect(full.stats().caches[1]!.used).toBe(3 * WINDOW);
    } finally {
      windowed.dispose();
      full.dispose();
    }
  });

  it("goes on after seqRm inside the window, and starts over where the window is gone", async () => {
    const ctx = open(false);
    const ref = open(true);
    try {
      const prompt = tokens(40, 2);
      for (const c of [ctx, ref]) await c.eval(prompt);
      // Going on at position n needs positions n-15 … n-1; the windowed cache reused the cells of
      // early positions, the full one did not.
      expect(ctx.canContinue(0, 40)).toBe(true);
      expect(ctx.canContinue(0, 10)).toBe(false);
      expect(ref.canContinue(0, 10)).toBe(true);
      const keep = [39, 38, 36].find((n) => ctx.canContinue(0, n))!;
      expect(keep).toBeDefined();
      for (const c of [ctx, ref]) c.seqRm(0, keep, -1);
      const next = tokens(5, 3);
      expect(maxAbsDiff(await ctx.eval(next), await ref.eval(next))).toBeLessThan(1e-5);
      // truncate to a position whose window is gone empties the sequence and says so.
      expect(ctx.truncate(0, 10)).toBe(0);
      expect(ctx.stats().used).toBe(0);
    } finally {
      ctx.dispose();
      ref.dispose();
    }
  });

  it("shifts positions (context shift), clones and saves a sequence in both caches", async () => {
    const ctx = open(false, 2);
    const ref = open(true, 2);
    try {
      expect(ctx.stats().caches[1]!.cells).toBe(64); // 2 × 16 + 8, rounded up
      const prompt = tokens(30, 4);
      for (const c of [ctx, ref]) {
        await c.eval(prompt);
        // Drop positions 0…9 and shift the rest down by 10, as a context shift does.
        c.seqRm(0, 0, 10);
        c.seqAdd(0, 10, -1, -10);
      }
      const next = tokens(3, 5);
      expect(maxAbsDiff(await ctx.eval(next), await ref.eval(next))).toBeLessThan(1e-4);
      // A clone goes on as the source would.
      await ctx.seqClone(0, 1, 23);
      const state = await ctx.saveSequence(0);
      const after = tokens(2, 6);
      const fromClone = await ctx.decode({ tokens: after, seq: 1, logits: "last" });
      ctx.seqRm(0);
      await ctx.restoreSequence(state, 0);
      const fromRestored = await ctx.eval(after, 0);
      expect(maxAbsDiff(fromClone.last(), fromRestored)).toBeLessThan(1e-5);
      expect(maxAbsDiff(fromRestored, await ref.eval(after, 0))).toBeLessThan(1e-4);
    } finally {
      ctx.dispose();
      ref.dispose();
    }
  });
});

describe("a model whose every layer slides (phi3, window 16)", () => {
  it("reuses cells but still ends the context at nCtx tokens", async () => {
    const shape = { ...synthShape("tiny"), keys: [["attention.sliding_window", "u32", 16]] as const };
    const { model, dispose } = await loadArch("phi3", shape, 3);
    const ctx = new Context(model, { nCtx: 64, nUbatch: 8, kvDtype: "f32" });
    try {
      expect(ctx.stats().caches.map((c) => [c.group, c.cells])).toEqual([["swa", 32]]);
      const ids = Array.from({ length: 60 }, (_, i) => 3 + ((i * 29) % 250));
      for (let i = 0; i < ids.length; i += 6) await ctx.eval(ids.slice(i, i + 6));
      expect(ctx.stats().caches[0]!.used).toBeLessThanOrEqual(32); // cells reused
      expect(ctx.used()).toBe(60); // positions held: the context is 60 of 64 tokens full
      await expect(ctx.eval([5, 6, 7, 8, 9])).rejects.toMatchObject({ code: "NO_KV_ROOM" });
      await ctx.eval([5, 6, 7, 8]);
      expect(ctx.used()).toBe(64);
    } finally {
      ctx.dispose();
      dispose();
    }
  });
});
