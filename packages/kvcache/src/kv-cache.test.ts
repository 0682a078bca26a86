import { afterEach, describe, expect, it, vi } from "vitest";
import { KvCache, KvCacheError } from "./index.js";
import { put, tokens } from "./test-helpers.js";

const ok = (cells: number[]) => ({ status: "ok", cells: Int32Array.from(cells) });

describe("findSlot / commit", () => {
  it("prefers the lowest contiguous run, else scattered free cells", () => {
    const kv = new KvCache({ nCtx: 10, nSeqMax: 2 });
    put(kv, tokens(0, 0, 6)); // cells 0..5
    kv.seqRm(0, 1, 2); // frees cell 1
    kv.seqRm(0, 3, 5); // frees cells 3, 4
    expect(kv.findSlot(tokens(1, 0, 2))).toEqual(ok([3, 4]));
    expect(kv.findSlot(tokens(1, 0, 1))).toEqual(ok([1]));
    expect(kv.findSlot(tokens(1, 0, 4))).toEqual(ok([6, 7, 8, 9]));
    expect(kv.findSlot(tokens(1, 0, 5))).toEqual(ok([1, 3, 4, 6, 7]));
    expect(kv.used()).toBe(3); // findSlot changes nothing
  });

  it("returns no-slot, not an exception, when full", () => {
    const kv = new KvCache({ nCtx: 4 });
    put(kv, tokens(0, 0, 3));
    expect(kv.findSlot(tokens(0, 3, 5))).toEqual({ status: "no-slot", needed: 2, free: 1 });
    expect(kv.allocate(tokens(0, 3, 5))).toEqual({ status: "no-slot", needed: 2, free: 1 });
    expect(kv.used()).toBe(3);
    put(kv, tokens(0, 3, 4));
    expect(kv.findSlot(tokens(0, 4, 5)).status).toBe("no-slot");
  });

  it("reuses cells freed by seqRm", () => {
    const kv = new KvCache({ nCtx: 8, nSeqMax: 2 });
    put(kv, tokens(0, 0, 4));
    put(kv, tokens(1, 0, 4));
    expect(kv.findSlot(tokens(0, 4, 5)).status).toBe("no-slot");
    kv.seqRm(0, 0, -1);
    expect(kv.used()).toBe(4);
    expect(put(kv, tokens(0, 0, 4))).toEqual(Int32Array.from([0, 1, 2, 3]));
    kv.seqRm(1, 2, -1);
    expect(put(kv, tokens(1, 2, 3))).toEqual(Int32Array.from([6]));
  });

  it("refuses a token whose (sequence, position) already has a cell, in the cache or the batch", () => {
    const kv = new KvCache({ nCtx: 8, nSeqMax: 2 });
    put(kv, tokens(0, 0, 3));
    const dup = expect.objectContaining({ code: "DUPLICATE_POSITION", argument: "batch[0].pos" });
    expect(() => kv.findSlot([{ pos: 1, seqIds: [0] }])).toThrow(dup);
    expect(() => kv.findSlot([{ pos: 1, seqIds: [1, 0] }])).toThrow(dup);
    expect(kv.findSlot([{ pos: 1, seqIds: [1] }]).status).toBe("ok"); // other sequence: fine
    expect(() =>
      kv.findSlot([
        { pos: 5, seqIds: [0] },
        { pos: 4, seqIds: [0] },
        { pos: 5, seqIds: [1, 0] },
      ]),
    ).toThrow(expect.objectContaining({ code: "DUPLICATE_POSITION", argument: "batch[2].pos" }));
    expect(() => kv.commit([{ pos: 2, seqIds: [0] }], [5])).toThrow(dup);
  });

  it("names the malformed part of a batch", () => {
    const kv = new KvCache({ nCtx: 8, nSeqMax: 2 });
    const cases: [unknown, string, string][] = [
      [[{ pos: -1, seqIds: [0] }], "BAD_POSITION", "batch[0].pos"],
      [[{ pos: 0.5, seqIds: [0] }], "BAD_POSITION", "batch[0].pos"],
      [[{ pos: 2 ** 31, seqIds: [0] }], "BAD_POSITION", "batch[0].pos"],
      [[{ pos: 0, seqIds: [] }], "BAD_BATCH", "batch[0].seqIds"],
      [[{ pos: 0, seqIds: [0, 2] }], "BAD_SEQ_ID", "batch[0].seqIds[1]"],
      [[{ pos: 0, seqIds: [0, 0] }], "BAD_BATCH", "batch[0].seqIds[1]"],
      [[null], "BAD_BATCH", "batch[0]"],
      ["tokens", "BAD_BATCH", "batch"],
    ];
    for (const [batch, code, argument] of cases) {
      expect(() => kv.findSlot(batch as never)).toThrow(expect.objectContaining({ code, argument }));
    }
  });

  it("commit checks every cell (range, free, distinct) and changes nothing when it throws", () => {
    const kv = new KvCache({ nCtx: 4 });
    put(kv, tokens(0, 0, 1));
    const b = tokens(0, 1, 3);
    for (const [cells, argument] of [
      [[1, 4], "cells[1]"],
      [[-1, 2], "cells[0]"],
      [[1, 1.5], "cells[1]"],
      [[2, 0], "cells[1]"], // cell 0 is used
      [[2, 2], "cells[1]"], // twice
    ] as const) {
      expect(() => kv.commit(b, cells)).toThrow(expect.objectContaining({ code: "BAD_CELL", argument }));
      expect(kv.used()).toBe(1);
    }
    expect(() => kv.commit(b, [1])).toThrow(
      expect.objectContaining({ code: "BAD_BATCH", argument: "cells" }),
    );
    kv.commit(b, [3, 1]);
    expect([kv.cells.pos(3), kv.cells.pos(1)]).toEqual([1, 2]);
  });

  it("a token of several sequences takes one cell owned by all of them", () => {
    const kv = new KvCache({ nCtx: 4, nSeqMax: 3 });
    const [c] = put(kv, [{ pos: 0, seqIds: [0, 2] }]);
    expect(kv.cells.owners(c!)).toEqual([0, 2]);
  });

  describe("allocation in a decode loop", () => {
    const counted = [
      "Int32Array",
      "Uint32Array",
      "Uint8Array",
      "Uint16Array",
      "Float32Array",
      "Float64Array",
    ];
    let made = 0;
    afterEach(() => {
      vi.unstubAllGlobals();
    });
    function countTypedArrays(): void {
      for (const name of counted) {
        const Orig = (globalThis as Record<string, unknown>)[name] as new (...a: unknown[]) => object;
        vi.stubGlobal(
          name,
          class extends Orig {
            constructor(...a: unknown[]) {
              super(...a);
              made++;
            }
          },
        );
      }
    }

    it("1000 steps: findSlot allocates its result only (none with out), using its scratch", () => {
      const kv = new KvCache({ nCtx: 96, nSeqMax: 2 });
      put(kv, tokens(0, 0, 20));
      put(kv, tokens(1, 0, 20));
      countTypedArrays();
      const out = new Int32Array(1);
      const next = [20, 20];
      const seqIds = [[0], [1]];
      let noSlot = 0;
      for (let step = 0; step < 1000; step++) {
        const s = step & 1;
        const batch = [{ pos: next[s]!, seqIds: seqIds[s]! }];
        made = 0;
        const r = step % 3 === 0 ? kv.findSlot(batch, out) : kv.findSlot(batch);
        expect(made).toBe(step % 3 === 0 || r.status !== "ok" ? 0 : 1);
        if (r.status !== "ok") {
          noSlot++;
          // Full: drop the oldest half of this sequence (a context shift without re-rope here).
          kv.seqRm(s, 0, kv.seqPosMin(s) + 20);
          continue;
        }
        expect(r.cells.length).toBe(1);
        expect(r.cells[0]).toBeGreaterThanOrEqual(0);
        expect(r.cells[0]).toBeLessThan(96);
        kv.commit(batch, r.cells);
        next[s]!++;
      }
      expect(next[0]! + next[1]!).toBeGreaterThan(900);
      expect(noSlot).toBeGreaterThan(5); // the loop did fill the cache and free cells again
    });
  });
});

describe("sequence operations", () => {
  it("seqRm removes [p0, p1) and p1 = -1 means to the end", () => {
    const kv = new KvCache({ nCtx: 16 });
    put(kv, tokens(0, 0, 10));
    kv.seqRm(0, 2, 4);
    expect(kv.used()).toBe(8);
    expect([kv.seqPosMin(0), kv.seqPosMax(0)]).toEqual([0, 9]);
    kv.seqRm(0, 7, -1);
    expect(kv.used()).toBe(5);
    expect(kv.seqPosMax(0)).toBe(6);
    kv.seqRm(0, 0, 0); // empty range
    expect(kv.used()).toBe(5);
  });

  it("seqRm of one owner keeps a shared cell for the other", () => {
    const kv = new KvCache({ nCtx: 8, nSeqMax: 2 });
    put(kv, tokens(0, 0, 4));
    kv.seqCp(0, 1);
    expect(kv.used()).toBe(4);
    kv.seqRm(0);
    expect(kv.used()).toBe(4);
    expect(kv.seqCount(1)).toBe(4);
    kv.seqRm(1, 0, 2);
    expect(kv.used()).toBe(2);
  });

  it("seqCp shares cells without copying and refuses a conflicting destination", () => {
    const kv = new KvCache({ nCtx: 8, nSeqMax: 3 });
    put(kv, tokens(0, 0, 5));
    kv.seqCp(0, 1, 0, 3);
    expect(kv.used()).toBe(5);
    expect(kv.seqCount(1)).toBe(3);
    put(kv, tokens(2, 3, 4));
    expect(() => kv.seqCp(0, 2)).toThrow(expect.objectContaining({ code: "SEQ_CONFLICT", argument: "dst" }));
    expect(kv.seqCount(2)).toBe(1); // unchanged
    kv.seqCp(0, 1); // positions 0..2 already shared: no conflict with itself
    expect(kv.seqCount(1)).toBe(5);
  });

  it("seqKeep drops every other sequence", () => {
    const kv = new KvCache({ nCtx: 16, nSeqMax: 3 });
    put(kv, tokens(0, 0, 4));
    kv.seqCp(0, 1);
    put(kv, tokens(1, 4, 6));
    put(kv, tokens(2, 0, 3));
    kv.seqKeep(1);
    expect(kv.used()).toBe(6);
    expect([kv.seqCount(0), kv.seqCount(1), kv.seqCount(2)]).toEqual([0, 6, 0]);
    for (let c = 0; c < 16; c++) if (!kv.cells.isEmpty(c)) expect(kv.cells.owners(c)).toEqual([1]);
  });

  it("seqAdd shifts positions, records exactly the deltas and removes cells moved below 0", () => {
    const kv = new KvCache({ nCtx: 8 });
    put(kv, tokens(0, 0, 8));
    kv.seqRm(0, 2, 4); // context shift: drop [2, 4) …
    kv.seqAdd(0, 4, -1, -2); // … and slide the rest down
    expect(kv.hasShift()).toBe(true);
    expect(Array.from(kv.cells.positions)).toEqual([0, 1, -1, -1, 2, 3, 4, 5]);
    kv.seqAdd(0, 4, 6, 10); // positions 4, 5 → 14, 15
    expect(Array.from(kv.consumeShift())).toEqual([0, 0, 0, 0, -2, -2, 8, 8]);
    expect(kv.hasShift()).toBe(false);
    kv.seqAdd(0, 0, 3, -1); // position 0 → -1: removed; 1 → 0 and 2 → 1
    expect(Array.from(kv.cells.positions)).toEqual([-1, 0, -1, -1, 1, 3, 14, 15]);
    expect(Array.from(kv.consumeShift())).toEqual([0, -1, 0, 0, -1, 0, 0, 0]);
    expect(kv.used()).toBe(5);
    expect([kv.seqPosMin(0), kv.seqPosMax(0)]).toEqual([0, 15]);
  });

  it("seqDiv integer-divides positions and records the deltas", () => {
    const kv = new KvCache({ nCtx: 8 });
    put(kv, tokens(0, 0, 8));
    kv.seqDiv(0, 2, 7, 2);
    expect(Array.from(kv.cells.positions)).toEqual([0, 1, 1, 1, 2, 2, 3, 7]);
    expect(Array.from(kv.consumeShift())).toEqual([0, 0, -1, -2, -2, -3, -3, 0]);
    kv.seqDiv(0, 0, -1, 1); // d = 1: nothing
    expect(kv.hasShift()).toBe(false);
  });

  it("seqAdd/seqDiv refuse to move a shared cell for one owner (nothing changes)", () => {
    const kv = new KvCache({ nCtx: 8, nSeqMax: 2 });
    put(kv, tokens(0, 0, 4));
    kv.seqCp(0, 1, 0, 2);
    const shared = expect.objectContaining({ code: "SHARED_CELL", cell: 0 });
    expect(() => kv.seqAdd(0, 0, -1, 1)).toThrow(shared);
    expect(() => kv.seqDiv(0, 0, -1, 2)).toThrow(expect.objectContaining({ code: "SHARED_CELL" }));
    expect(Array.from(kv.cells.positions.subarray(0, 4))).toEqual([0, 1, 2, 3]);
    expect(kv.hasShift()).toBe(false);
    kv.seqAdd(0, 2, -1, 5); // unshared cells move
    kv.seqAdd(0, 0, 2, -5); // shared cells moved below 0 just leave sequence 0
    expect(kv.seqCount(1)).toBe(2);
    expect(Array.from(kv.cells.positions.subarray(0, 4))).toEqual([0, 1, 7, 8]);
  });

  it("misuse throws KvCacheError with a code naming the argument", () => {
    const kv = new KvCache({ nCtx: 8, nSeqMax: 2 });
    const e = (code: string, argument: string) => expect.objectContaining({ code, argument });
    expect(() => kv.seqRm(2)).toThrow(e("BAD_SEQ_ID", "seq"));
    expect(() => kv.seqRm(-1)).toThrow(e("BAD_SEQ_ID", "seq"));
    expect(() => kv.seqCp(0, 5)).toThrow(e("BAD_SEQ_ID", "dst"));
    expect(() => kv.seqCp(1.5, 0)).toThrow(e("BAD_SEQ_ID", "src"));
    expect(() => kv.seqKeep(9)).toThrow(e("BAD_SEQ_ID", "seq"));
    expect(() => kv.seqRm(0, 5, 3)).toThrow(e("BAD_RANGE", "p1"));
    expect(() => kv.seqRm(0, -2, 3)).toThrow(e("BAD_POSITION", "p0"));
    expect(() => kv.seqRm(0, 0, -5)).toThrow(e("BAD_RANGE", "p1"));
    expect(() => kv.seqAdd(0, 0, -1, 0.5)).toThrow(e("BAD_DELTA", "delta"));
    expect(() => kv.seqAdd(0, 0, -1, Number.NaN)).toThrow(e("BAD_DELTA", "delta"));
    expect(() => kv.seqDiv(0, 0, -1, 0)).toThrow(e("BAD_DIVISOR", "d"));
    expect(() => kv.seqDiv(0, 0, -1, 2.5)).toThrow(e("BAD_DIVISOR", "d"));
    expect(() => kv.seqPosMax(3)).toThrow(KvCacheError);
    put(kv, tokens(0, 5, 6));
    expect(() => kv.seqAdd(0, 0, -1, 2 ** 31 - 1)).toThrow(e("BAD_DELTA", "delta"));
  });
});
