import { describe, expect, it } from "vitest";
import { KvCache, KvCacheError } from "./index.js";
import { prng, put, refVisible, tokens } from "./test-helpers.js";

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

  // The plain rule over every cell (refVisible) is the reference; random appends, removals and
  // cross-region seqCp, then a step of one token per sequence with room, causal or windowed.
  function randomSpans(seqRegions: boolean): { checked: number; outside: number } {
    let checked = 0;
    let outside = 0; // steps where some sequence owned a cell of another region (the full scan)
    for (let seed = 1; seed <= 60; seed++) {
      const rand = prng(seed);
      const kv = new KvCache({ nCtx: 48, nSeqMax: 4, seqRegions });
      const next = [0, 0, 0, 0];
      for (let round = 0; round < 30; round++) {
        const s = Math.floor(rand() * 4);
        const op = rand();
        if (op < 0.55) {
          const n = 1 + Math.floor(rand() * 3);
          const p = Math.max(next[s]!, kv.seqPosMax(s) + 1);
          if (kv.findSlot(tokens(s, p, p + n)).status === "ok") {
            put(kv, tokens(s, p, p + n));
            next[s] = p + n;
          }
        } else if (op < 0.75 && next[s]! > 0) {
          const p0 = Math.floor(rand() * next[s]!);
          kv.seqRm(s, p0, p0 + 1 + Math.floor(rand() * 2));
        } else if (op < 0.85) {
          const d = (s + 1 + Math.floor(rand() * 3)) % 4;
          try {
            kv.seqCp(s, d, 0, Math.floor(rand() * 4));
          } catch {
            // SEQ_CONFLICT: d holds one of those positions already
          }
        } else {
          const at = (q: number) => Math.max(next[q]!, kv.seqPosMax(q) + 1);
          // (one token per sequence with room; without regions, room for the whole step)
          const step: ReturnType<typeof tokens> = [];
          for (const q of [0, 1, 2, 3]) {
            const more = [...step, ...tokens(q, at(q), at(q) + 1)];
            if (kv.findSlot(more).status === "ok") step.splice(0, step.length, ...more);
          }
          if (step.length === 0) continue;
          const cells = put(kv, step);
          for (const t of step) next[t.seqIds[0]!] = t.pos + 1;
          const opts = rand() < 0.5 ? { nKv: 48 } : { nKv: 48, slidingWindow: 3 };
          let want: number[] | null = [];
          for (const t of step) {
            const seen: number[] = [];
            for (let c = 0; c < 48; c++) if (refVisible(kv, t, c, opts)) seen.push(c);
            if (seen.length > 0 && seen.at(-1)! - seen[0]! + 1 !== seen.length) {
              want = null;
              break;
            }
            want.push(seen[0] ?? 0, seen.length > 0 ? seen.at(-1)! + 1 : 0);
          }
          const got = kv.spans(step, cells, opts);
          expect(got === null ? null : Array.from(got)).toEqual(want);
          checked++;
          let own = 0;
          for (const t of step)
            for (let c = 12 * t.seqIds[0]!; c < 12 * t.seqIds[0]! + 12; c++)
              if (kv.cells.has(c, t.seqIds[0]!)) own++;
          if (own < step.reduce((a, t) => a + kv.seqCount(t.seqIds[0]!), 0)) outside++;
        }
      }
    }
    return { checked, outside };
  }

  it("spans scan only a query's region when its sequence's cells all lie there, and stay exact when seqCp shared others", () => {
    const { checked, outside } = randomSpans(true);
    expect(checked).toBeGreaterThan(200);
    expect(outside).toBeGreaterThan(10);
  });

  it("spans without regions take a sequence's tracked cell range when its cells are one visible run, and stay exact", () => {
    expect(randomSpans(false).checked).toBeGreaterThan(200);
  });

  it("refuses shared tokens, defrag, a size that does not divide, and a non-boolean", () => {
    const kv = new KvCache({ nCtx: 8, nSeqMax: 2, seqRegions: true });
    expect(() => kv.findSlot(tokens([0, 1], 0, 1))).toThrow(/belongs to 2 sequences/);
    expect(() => kv.defragPlan()).toThrow(KvCacheError);
    expect(() => new KvCache({ nCtx: 9, nSeqMax: 2, seqRegions: true })).toThrow(/multiple of nSeqMax/);
    expect(() => new KvCache({ nCtx: 8, seqRegions: "yes" as never })).toThrow(/boolean/);
  });
});
