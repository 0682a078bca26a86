import { argmax } from "@minfer/sampler";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Context } from "./context.js";
import type { Model } from "./model.js";
import { haveStories, loadStories, maxAbsDiff } from "./test-helpers.js";

describe.skipIf(!haveStories)("sequence operations on the cache (stories260K)", () => {
  let model: Model;
  let dispose = () => {};
  const ids = (p: string) => model.tokenizer.encode(p, { addSpecial: true });
  const words = (p: string) => model.tokenizer.encode(p, { addSpecial: false });

  beforeAll(async () => {
    ({ model, dispose } = await loadStories());
  });
  afterAll(() => dispose());

  async function fresh(tokens: number[], pos?: number[]): Promise<Float32Array> {
    const ctx = new Context(model, { nCtx: 128 });
    try {
      return (await ctx.decode({ tokens, ...(pos ? { pos } : {}) })).last();
    } finally {
      ctx.dispose();
    }
  }

  it("seqShare shares a prefix: both sequences continue as if each had decoded it", async () => {
    const prompt = ids("Once upon a time there was a");
    const [a, b] = [words(" dog"), words(" big")];
    const ctx = new Context(model, { nCtx: 128, nSeqMax: 2 });
    try {
      await ctx.eval(prompt, 0);
      ctx.seqShare(0, 1);
      const used = ctx.stats().used;
      expect(used).toBe(prompt.length); // shared, not copied
      const la = await ctx.eval(a, 0);
      const lb = await ctx.eval(b, 1);
      expect(maxAbsDiff(la, await fresh([...prompt, ...a]))).toBeLessThan(2e-4);
      expect(maxAbsDiff(lb, await fresh([...prompt, ...b]))).toBeLessThan(2e-4);
      expect(ctx.history(1)).toEqual([...prompt, ...b]);
    } finally {
      ctx.dispose();
    }
  });

  it.each([true, false])(
    "seqClone copies a prefix's rows: dst continues as if it had decoded it, after src is gone (kvUnified %s)",
    async (kvUnified) => {
      const prompt = ids("Once upon a time there was a little girl");
      const keep = prompt.length - 2;
      const next = words(" who");
      const ctx = new Context(model, { nCtx: 128, nSeqMax: 2, kvUnified });
      try {
        await ctx.eval(prompt, 0);
        await ctx.seqClone(0, 1, keep);
        expect(ctx.stats().used).toBe(prompt.length + keep); // copied, not shared
        expect(ctx.history(1)).toEqual(prompt.slice(0, keep));
        ctx.seqRm(0, 0, -1);
        await ctx.eval(words(" dog and a cat"), 0); // src's new tokens may reuse its cells
        const l = await ctx.eval([...prompt.slice(keep), ...next], 1);
        expect(maxAbsDiff(l, await fresh([...prompt, ...next]))).toBeLessThan(2e-4);
        if (!kvUnified) {
          const region = ctx.nCtx / ctx.nSeqMax;
          for (const c of ctx.seqCells(1)) expect(Math.floor(c / region)).toBe(1);
        }
        await expect(ctx.seqClone(0, 1, 2)).rejects.toThrow(/not empty/);
        ctx.seqRm(1, 0, -1);
        await expect(ctx.seqClone(0, 1, 99)).rejects.toThrow(/no cell at position/);
        expect(ctx.seqCount(1)).toBe(0);
      } finally {
        ctx.dispose();
      }
    },
  );

  it("seqAdd re-ropes K: the sequence continues as if decoded at the new positions", async () => {
    const prompt = ids("Once upon a time there was a little girl named Lily. She liked to");
    const next = words(" play");
    const n = prompt.length;
    // Only a shift of everything the later tokens attended to keeps the relative positions, and so
    // hidden states, of the original decode: then the result must equal a decode at the new positions.
    const cases = [
      { op: (c: Context) => c.seqAdd(0, 0, -1, 7), pos: (p: number) => p + 7 },
      // Two shifts before the next decode add up.
      {
        op: (c: Context) => {
          c.seqAdd(0, 0, -1, 7);
          c.seqAdd(0, 0, -1, -3);
        },
        pos: (p: number) => p + 4,
      },
    ];
    for (const { op, pos } of cases) {
      const ctx = new Context(model, { nCtx: 128 });
      const stale = new Context(model, { nCtx: 128 });
      try {
        await ctx.eval(prompt);
        op(ctx);
        const at = pos(n - 1) + 1;
        const nextPos = next.map((_, i) => at + i);
        const shifted = await ctx.decode({ tokens: next, pos: nextPos });
        const direct = await fresh([...prompt, ...next], [...prompt.map((_, i) => pos(i)), ...nextPos]);
        // K computed at the old positions and rotated equals K computed at the new ones, up to
        // F16 rounding in the cache.
        expect(maxAbsDiff(shifted.last(), direct)).toBeLessThan(2e-2);
        expect(argmax(shifted.last())).toBe(argmax(direct));
        // The same positions without the re-rope are far off: the test can tell.
        await stale.eval(prompt);
        const wrong = await stale.decode({ tokens: next, pos: nextPos });
        expect(maxAbsDiff(wrong.last(), direct)).toBeGreaterThan(0.2);
      } finally {
        ctx.dispose();
        stale.dispose();
      }
    }
  });

  it("defrag moves the cells to the front and decoding continues unchanged", async () => {
    const ctx = new Context(model, { nCtx: 128, nSeqMax: 2 });
    const ref = new Context(model, { nCtx: 128, nSeqMax: 2 });
    try {
      const p0 = ids("Once upon a time there was a big dog");
      const p1 = ids("The sun was hot and the");
      for (const c of [ctx, ref]) {
        await c.eval(p0, 0);
        await c.eval(p1, 1);
        c.seqRm(0);
      }
      expect(ctx.stats().caches[0]!.extent).toBe(p0.length + p1.length);
      const moved = await ctx.defrag();
      expect(moved).toBe(p1.length);
      expect(ctx.stats().caches[0]!.extent).toBe(p1.length);
      const next = words(" sky");
      expect(maxAbsDiff(await ctx.eval(next, 1), await ref.eval(next, 1))).toBeLessThan(1e-5);
      expect(await ctx.defrag()).toBe(0);
    } finally {
      ctx.dispose();
      ref.dispose();
    }
  });

  it("a saved sequence restores into another context and continues identically", async () => {
    const prompt = ids("Once upon a time there was a little cat");
    const a = new Context(model, { nCtx: 64, nSeqMax: 2 });
    const b = new Context(model, { nCtx: 64, nSeqMax: 2 });
    try {
      // The saved cells are not at the front and not one run: the filler's freed cells are reused.
      await a.eval(words("filler tokens"), 1);
      await a.eval(prompt, 0);
      a.seqRm(1);
      const more = words(" named Tom");
      await a.eval(more, 0);
      const state = await a.saveSequence(0);
      await b.eval(words("x"), 0); // nor are the restored cells at the front
      await b.restoreSequence(state, 1);
      expect(b.history(1)).toEqual([...prompt, ...more]);
      const next = words(" who");
      // Same rows, other cells (and a mask in one, spans in the other): equal to float rounding.
      expect(maxAbsDiff(await a.eval(next, 0), await b.eval(next, 1))).toBeLessThan(1e-5);
      // Malformed or mismatched state is refused with a code, changing nothing.
      const bad = state.slice();
      bad[0] = 0;
      await expect(b.restoreSequence(bad, 0)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      await expect(b.restoreSequence(state.subarray(0, 100), 0)).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
      });
      await expect(b.restoreSequence(state, 1)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      const f32 = new Context(model, { nCtx: 64, kvDtype: "f32" });
      try {
        await expect(f32.restoreSequence(state, 0)).rejects.toMatchObject({ message: /KV dtype/ });
        expect(f32.stats().used).toBe(0);
      } finally {
        f32.dispose();
      }
    } finally {
      a.dispose();
      b.dispose();
    }
  });

  it("the f32 KV dtype gives the same greedy tokens as the f16 default; q8_0 needs 32-wide heads", async () => {
    const prompt = ids("Once upon a time");
    const run = async (kvDtype?: "f32" | "f16" | "q8_0") => {
      const ctx = new Context(model, { nCtx: 64, ...(kvDtype ? { kvDtype } : {}) });
      try {
        expect(ctx.kvDtype).toBe(kvDtype ?? "f16");
        let l = await ctx.eval(prompt);
        const out: number[] = [];
        for (let i = 0; i < 20; i++) {
          out.push(argmax(l));
          l = await ctx.eval([out.at(-1)!]);
        }
        return out;
      } finally {
        ctx.dispose();
      }
    };
    const f16 = await run();
    expect(await run("f32")).toEqual(f16);
    // stories260K's heads are 8 wide: a Q8_0 block would span heads.
    expect(() => new Context(model, { kvDtype: "q8_0" })).toThrow(/multiples of 32.*8 \(K\)/);
    expect(() => new Context(model, { kvDtype: "q4" as never })).toThrow(/kvDtype/);
  });
});
