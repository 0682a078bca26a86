import { describe, expect, it } from "vitest";
import { KvCache, KvCells } from "./index.js";
import { put, tokens } from "./test-helpers.js";

describe("KvCells", () => {
  it("tracks positions, owners, used() and per-sequence min/max", () => {
    const c = new KvCells(8, 40);
    expect(c.used()).toBe(0);
    expect(c.seqPosMax(3)).toBe(-1);
    c.occupy(2, 10);
    c.addSeq(2, 3);
    c.addSeq(2, 35); // a second bitset word
    c.occupy(5, 4);
    c.addSeq(5, 3);
    expect(c.used()).toBe(2);
    expect(c.owners(2)).toEqual([3, 35]);
    expect(c.ownerCount(2)).toBe(2);
    expect([c.seqPosMin(3), c.seqPosMax(3)]).toEqual([4, 10]);
    expect([c.seqPosMin(35), c.seqPosMax(35)]).toEqual([10, 10]);
    c.rmSeq(2, 3);
    expect([c.seqPosMin(3), c.seqPosMax(3)]).toEqual([4, 4]);
    expect(c.isEmpty(2)).toBe(false); // 35 still owns it
    c.rmSeq(2, 35);
    expect(c.isEmpty(2)).toBe(true);
    expect(c.seqPosMax(35)).toBe(-1);
    expect(c.used()).toBe(1);
    expect(c.window()).toBe(6);
  });

  it("records shifts until consumed", () => {
    const c = new KvCells(4, 1);
    c.occupy(0, 7);
    c.addSeq(0, 0);
    expect(c.hasShift()).toBe(false);
    c.setPos(0, 3);
    c.setPos(0, 5);
    expect(c.hasShift()).toBe(true);
    expect(c.seqPosMax(0)).toBe(5);
    expect(Array.from(c.consumeShift())).toEqual([-2, 0, 0, 0]);
    expect(c.hasShift()).toBe(false);
    expect(Array.from(c.consumeShift())).toEqual([0, 0, 0, 0]);
  });

  it("rejects cells outside [0, nCtx) by name", () => {
    const c = new KvCells(4, 1);
    for (const bad of [-1, 4, 1.5, Number.NaN]) {
      expect(() => c.occupy(bad, 0)).toThrow(expect.objectContaining({ code: "BAD_CELL" }));
    }
    expect(() => new KvCells(0, 1)).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT", argument: "nCtx" }),
    );
    expect(() => new KvCells(4, 0)).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT", argument: "nSeqMax" }),
    );
  });

  it("keeps min/max right through many random edits (against a scan)", () => {
    const kv = new KvCache({ nCtx: 64, nSeqMax: 3 });
    let seed = 1;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed / 0x80000000;
    };
    const next = [0, 0, 0];
    for (let step = 0; step < 500; step++) {
      const s = Math.floor(rnd() * 3);
      const op = rnd();
      if (op < 0.5 && kv.used() < 60) {
        put(kv, tokens(s, next[s]!, next[s]! + 1));
        next[s]!++;
      } else if (op < 0.8) {
        const p0 = Math.floor(rnd() * (next[s]! + 1));
        kv.seqRm(s, p0, p0 + 1 + Math.floor(rnd() * 4));
      } else {
        kv.seqKeep(s);
      }
      for (let q = 0; q < 3; q++) {
        const ps: number[] = [];
        for (let c = 0; c < 64; c++) if (kv.cells.has(c, q)) ps.push(kv.cells.pos(c));
        expect(kv.seqCount(q)).toBe(ps.length);
        expect(kv.seqPosMin(q)).toBe(ps.length ? Math.min(...ps) : -1);
        expect(kv.seqPosMax(q)).toBe(ps.length ? Math.max(...ps) : -1);
      }
    }
  });
});

describe("KvCells cell ranges", () => {
  it("seqCellMin / seqCellMax follow every mutation (random operations against a scan)", () => {
    let seedState = 7;
    const rand = () => {
      seedState = (seedState * 1103515245 + 12345) & 0x7fffffff;
      return seedState / 0x80000000;
    };
    const nCtx = 40;
    const nSeq = 3;
    const c = new KvCells(nCtx, nSeq);
    let checks = 0;
    for (let round = 0; round < 3000; round++) {
      const op = rand();
      const cell = Math.floor(rand() * nCtx);
      const seq = Math.floor(rand() * nSeq);
      if (op < 0.4) {
        if (c.isEmpty(cell)) c.occupy(cell, Math.floor(rand() * 100));
        c.addSeq(cell, seq);
      } else if (op < 0.6) c.rmSeq(cell, seq);
      else if (op < 0.7) c.keepOnly(cell, seq);
      else if (op < 0.85) {
        const to = Math.floor(rand() * nCtx);
        if (!c.isEmpty(cell) && c.isEmpty(to)) c.move(cell, to);
      } else if (op < 0.87) c.clear();
      else if (!c.isEmpty(cell)) c.setPos(cell, Math.floor(rand() * 100));
      for (let s = 0; s < nSeq; s++) {
        const owned = Array.from({ length: nCtx }, (_, k) => k).filter((k) => !c.isEmpty(k) && c.has(k, s));
        expect(c.seqCellMin(s)).toBe(owned.length > 0 ? owned[0] : -1);
        expect(c.seqCellMax(s)).toBe(owned.length > 0 ? owned.at(-1) : -1);
        checks++;
      }
    }
    expect(checks).toBe(9000);
  });
});
