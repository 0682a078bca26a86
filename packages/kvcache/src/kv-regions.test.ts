import { describe, expect, it } from "vitest";
import { KvCache, KvCacheError } from "./index.js";
import { put, tokens } from "./test-helpers.js";

// A region per sequence (seqRegions): the cells each sequence gets, attention spans in batches
// that mix sequences, a full region, and what regions refuse.

describe("seqRegions", () => {
  it("each sequence takes cells from its own region, in order, even interleaved in one batch", () => {
    const kv = new KvCache({ nCtx: 12, nSeqMax: 3, seqRegions: true });
    expect(kv.region).toBe(4);
    expect(put(kv, tokens(2, 0, 2))).toEqual(Int32Array.from([8, 9]));
    const mixed = [...tokens(0, 0, 1), ...tokens(1, 0, 1), ...tokens(2, 2, 3), ...tokens(0, 1, 2)];
    expect(put(kv, mixed)).toEqual(Int32Array.from([0, 4, 10, 1]));
    // After the same decode in a unified cache the sequences' cells interleave; here each query's
    // visible cells are one run, so spans exist for the mixed batch.
    const next = [...tokens(0, 2, 3), ...tokens(1, 1, 2), ...tokens(2, 3, 4)];
    const cells = put(kv, next);
    expect(cells).toEqual(Int32Array.from([2, 5, 11]));
    expect(kv.spans(next, cells, { nKv: 12 })).toEqual(Int32Array.from([0, 3, 4, 6, 8, 12]));
    const unified = new KvCache({ nCtx: 12, nSeqMax: 3 });
    put(unified, tokens(2, 0, 2));
    put(unified, mixed);
    expect(unified.spans(next, put(unified, next), { nKv: 12 })).toBeNull();
  });

  it("a full region is no-slot for its sequence while other regions have room", () => {
    const kv = new KvCache({ nCtx: 8, nSeqMax: 2, seqRegions: true });
    put(kv, tokens(0, 0, 4));
    expect(kv.findSlot(tokens(0, 4, 5))).toEqual({ status: "no-slot", needed: 1, free: 0 });
    expect(kv.findSlot([...tokens(1, 0, 1), ...tokens(0, 4, 6)])).toEqual({
      status: "no-slot",
      needed: 2,
      free: 0,
    });
    expect(put(kv, tokens(1, 0, 4))).toEqual(Int32Array.from([4, 5, 6, 7]));
    kv.seqRm(0, 2, -1);
    expect(put(kv, tokens(0, 2, 4))).toEqual(Int32Array.from([2, 3]));
  });

  it("restoring a sequence's state places it in that sequence's region", () => {
    const kv = new KvCache({ nCtx: 8, nSeqMax: 2, seqRegions: true });
    put(kv, tokens(0, 0, 3));
    const bytes = kv.writeSequence(0);
    const r = kv.restoreSequence(bytes, 1);
    expect(r).toEqual({ status: "ok", cells: Int32Array.from([4, 5, 6]) });
  });

  it("refuses shared tokens, defrag, a size that does not divide, and a non-boolean", () => {
    const kv = new KvCache({ nCtx: 8, nSeqMax: 2, seqRegions: true });
    expect(() => kv.findSlot(tokens([0, 1], 0, 1))).toThrow(/belongs to 2 sequences/);
    expect(() => kv.defragPlan()).toThrow(KvCacheError);
    expect(() => new KvCache({ nCtx: 9, nSeqMax: 2, seqRegions: true })).toThrow(/multiple of nSeqMax/);
    expect(() => new KvCache({ nCtx: 8, seqRegions: "yes" as never })).toThrow(/boolean/);
  });
});
