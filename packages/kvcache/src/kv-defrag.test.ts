import { describe, expect, it } from "vitest";
import { KvCache, type KvMove, type KvToken } from "./index.js";
import { maskCells, prng, put, tokens } from "./test-helpers.js";

/** old cell → new cell under a plan (cells that do not move map to themselves). */
function remap(plan: readonly KvMove[], nCtx: number): Int32Array {
  const m = Int32Array.from({ length: nCtx }, (_, i) => i);
  for (const { from, to, count } of plan) for (let k = 0; k < count; k++) m[from + k] = to + k;
  return m;
}

/** A fragmented cache of several sequences, some sharing a prefix, with pending shifts. */
function fragmented(seed: number): { kv: KvCache; probes: KvToken[] } {
  const rnd = prng(seed);
  const kv = new KvCache({ nCtx: 64, nSeqMax: 4 });
  put(kv, tokens(0, 0, 8));
  kv.seqCp(0, 1);
  kv.seqCp(0, 2, 0, 4);
  const next = [8, 8, 4, 0];
  for (let step = 0; step < 40; step++) {
    const s = Math.floor(rnd() * 4);
    if (rnd() < 0.65 && kv.used() < 60) {
      put(kv, tokens(s, next[s]!, next[s]! + 1));
      next[s]!++;
    } else if (next[s]! > 0) {
      const p0 = Math.floor(rnd() * next[s]!);
      kv.seqRm(s, p0, p0 + 1 + Math.floor(rnd() * 3));
    }
  }
  // One probe query per sequence and position (no cell of its own: mask(…, null, …)).
  const probes: KvToken[] = [];
  for (let s = 0; s < 4; s++) for (let p = 0; p <= next[s]!; p += 3) probes.push({ pos: p, seqIds: [s] });
  return { kv, probes };
}

describe("defragmentation", () => {
  it("the plan compacts used cells to the front and preserves every sequence's view", () => {
    for (let seed = 1; seed <= 30; seed++) {
      const { kv, probes } = fragmented(seed);
      const nKv = kv.window();
      const before = kv.mask(probes, null, { nKv: 64 });
      const posBefore = Int32Array.from(kv.cells.positions);
      const ownersBefore = Array.from({ length: 64 }, (_, c) => kv.cells.owners(c));
      const shiftBefore = Int32Array.from(kv.cells.positions, (_, c) => kv.cells.shiftOf(c));
      const used = kv.used();
      const plan = kv.defragPlan();
      // Sources and targets are disjoint: the moves run in any order, as one graph of copies.
      const src = new Set<number>();
      const dst = new Set<number>();
      for (const { from, to, count } of plan) {
        for (let k = 0; k < count; k++) {
          src.add(from + k);
          dst.add(to + k);
        }
      }
      for (const c of src) expect(dst.has(c)).toBe(false);
      kv.applyDefrag(plan);
      expect(kv.used()).toBe(used);
      expect(kv.window()).toBe(used);
      expect(kv.fragmentation()).toBe(0);
      expect(kv.defragPlan()).toEqual([]);
      const m = remap(plan, 64);
      const after = kv.mask(probes, null, { nKv: 64 });
      for (let q = 0; q < probes.length; q++) {
        const want = maskCells(before, q, 64)
          .map((c) => m[c]!)
          .sort((a, b) => a - b);
        expect(maskCells(after, q, 64)).toEqual(want);
      }
      for (let c = 0; c < nKv; c++) {
        if (posBefore[c]! < 0) continue;
        expect(kv.cells.pos(m[c]!)).toBe(posBefore[c]);
        expect(kv.cells.owners(m[c]!)).toEqual(ownersBefore[c]);
        expect(kv.cells.shiftOf(m[c]!)).toBe(shiftBefore[c]);
      }
    }
  });

  it("merges runs into one move and keeps relative order", () => {
    const kv = new KvCache({ nCtx: 12 });
    put(kv, tokens(0, 0, 10));
    kv.seqRm(0, 1, 4); // holes 1, 2, 3; used 7: cells 7, 8, 9 are the tail
    expect(kv.defragPlan()).toEqual([{ from: 7, to: 1, count: 3 }]);
    kv.applyDefrag(kv.defragPlan());
    expect(Array.from(kv.cells.positions.subarray(0, 7))).toEqual([0, 7, 8, 9, 4, 5, 6]);
  });

  it("maxMoves caps the plan; repeated partial plans finish the job", () => {
    const kv = new KvCache({ nCtx: 32 });
    put(kv, tokens(0, 0, 32));
    for (let p = 0; p < 16; p += 2) kv.seqRm(0, p, p + 1); // 8 single-cell holes
    const full = kv.defragPlan();
    expect(full.length).toBe(8);
    let rounds = 0;
    while (kv.fragmentation() > 0) {
      const plan = kv.defragPlan(3);
      expect(plan.length).toBeLessThanOrEqual(3);
      kv.applyDefrag(plan);
      rounds++;
    }
    expect(rounds).toBe(3);
    expect(kv.window()).toBe(24);
    expect(() => kv.defragPlan(-1)).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT", argument: "maxMoves" }),
    );
  });

  it("a plan that does not fit is refused and changes nothing", () => {
    const kv = new KvCache({ nCtx: 8 });
    put(kv, tokens(0, 0, 6));
    kv.seqRm(0, 1, 3);
    const snapshot = Array.from(kv.cells.positions);
    const bad: KvMove[][] = [
      [{ from: 6, to: 1, count: 1 }], // empty source
      [{ from: 4, to: 0, count: 1 }], // used target
      [{ from: 5, to: 9, count: 1 }], // out of range
      [{ from: 5, to: 1, count: 0 }],
      [
        { from: 5, to: 1, count: 1 },
        { from: 5, to: 2, count: 1 },
      ], // a source twice
      [
        { from: 4, to: 1, count: 1 },
        { from: 5, to: 1, count: 1 },
      ], // a target twice
    ];
    for (const plan of bad) {
      expect(() => kv.applyDefrag(plan)).toThrow(expect.objectContaining({ code: "BAD_PLAN" }));
      expect(Array.from(kv.cells.positions)).toEqual(snapshot);
    }
  });

  it("after defrag, findSlot fills from the end of the compacted run", () => {
    const kv = new KvCache({ nCtx: 8 });
    put(kv, tokens(0, 0, 6));
    kv.seqRm(0, 0, 2);
    kv.applyDefrag(kv.defragPlan());
    expect(Array.from(put(kv, tokens(0, 6, 8)))).toEqual([4, 5]);
  });
});
