import { describe, expect, it } from "vitest";
import { F16_NEG_INF, KvCache, type KvToken } from "./index.js";
import { maskCells, prng, put, refCells, tokens } from "./test-helpers.js";

/** Checks mask (f32 and f16) and spans of a committed batch against the reference rule. */
function checkAgainstRef(
  kv: KvCache,
  batch: KvToken[],
  cells: Int32Array | null,
  o: { nKv: number; causal?: boolean; slidingWindow?: number },
): Float32Array {
  const m = kv.mask(batch, cells, o);
  const h = kv.mask(batch, cells, { ...o, dtype: "f16" });
  const spans = kv.spans(batch, cells, o);
  let contiguous = true;
  for (let q = 0; q < batch.length; q++) {
    const want = refCells(kv, batch[q]!, o.nKv, o);
    expect(maskCells(m, q, o.nKv)).toEqual(want);
    expect(maskCells(h, q, o.nKv)).toEqual(want);
    for (let c = 0; c < o.nKv; c++) {
      if (m[q * o.nKv + c] !== 0) expect(m[q * o.nKv + c]).toBe(Number.NEGATIVE_INFINITY);
      if (h[q * o.nKv + c] !== 0) expect(h[q * o.nKv + c]).toBe(F16_NEG_INF);
    }
    if (want.length > 0 && want[want.length - 1]! - want[0]! + 1 !== want.length) contiguous = false;
    if (spans) {
      const [s, e] = [spans[2 * q]!, spans[2 * q + 1]!];
      const fromSpan: number[] = [];
      for (let c = s; c < e; c++) fromSpan.push(c);
      expect(fromSpan).toEqual(want);
    }
  }
  expect(spans === null).toBe(!contiguous);
  return m;
}

describe("masks and spans", () => {
  it("two sequences in one batch never see each other's cells", () => {
    const kv = new KvCache({ nCtx: 32, nSeqMax: 2 });
    put(kv, tokens(0, 0, 5));
    put(kv, tokens(1, 0, 3));
    const batch = [...tokens(0, 5, 8), ...tokens(1, 3, 5)]; // interleaved in one micro-batch
    const cells = put(kv, batch);
    const nKv = kv.window();
    const m = checkAgainstRef(kv, batch, cells, { nKv });
    for (let q = 0; q < batch.length; q++) {
      const s = batch[q]!.seqIds[0]!;
      for (const c of maskCells(m, q, nKv)) expect(kv.cells.owners(c)).toContain(s);
      for (let c = 0; c < nKv; c++) {
        if (kv.cells.has(c, 1 - s) && !kv.cells.has(c, s))
          expect(m[q * nKv + c]).toBe(Number.NEGATIVE_INFINITY);
      }
    }
    expect(maskCells(m, 2, nKv).length).toBe(8); // sequence 0 at position 7 sees 0..7
    expect(maskCells(m, 4, nKv).length).toBe(5); // sequence 1 at position 4 sees 0..4
  });

  it("a sequence forked with seqCp sees the shared prefix and its own new cells only", () => {
    const kv = new KvCache({ nCtx: 32, nSeqMax: 2 });
    const prefix = put(kv, tokens(0, 0, 6));
    kv.seqCp(0, 1);
    const own0 = put(kv, tokens(0, 6, 8));
    const batch = tokens(1, 6, 9);
    const own1 = put(kv, batch);
    expect(kv.used()).toBe(6 + 2 + 3);
    const nKv = kv.window();
    const m = checkAgainstRef(kv, batch, own1, { nKv });
    expect(maskCells(m, 2, nKv)).toEqual([...prefix, ...own1].sort((a, b) => a - b));
    for (const c of own0) for (let q = 0; q < 3; q++) expect(m[q * nKv + c]).toBe(Number.NEGATIVE_INFINITY);
    expect(kv.spans(batch, own1, { nKv })).toBeNull(); // sequence 0's cells 6, 7 lie inside the run
  });

  it("spans leave the caller's out untouched when a later query's cells are not one run", () => {
    const kv = new KvCache({ nCtx: 16, nSeqMax: 3 });
    put(kv, tokens(1, 0, 2)); // cells 0, 1
    put(kv, tokens(0, 0, 1)); // cell 2
    const batch = [...tokens(2, 0, 1), ...tokens(1, 2, 3)]; // cells 3 (a new sequence), 4
    const cells = put(kv, batch);
    const out = Int32Array.from([7, 7, 7, 7]);
    // Query 0 sees cell 3 alone (a span); query 1 sees 0, 1 and 4 (not one run): no spans.
    expect(kv.spans(batch, cells, { nKv: 8, out })).toBeNull();
    expect(Array.from(out)).toEqual([7, 7, 7, 7]);
    checkAgainstRef(kv, batch, cells, { nKv: 8 });
  });

  it("causal: a query never sees a later position of its own sequence", () => {
    const kv = new KvCache({ nCtx: 16 });
    const batch = tokens(0, 0, 10);
    const cells = put(kv, batch);
    const m = checkAgainstRef(kv, batch, cells, { nKv: 10 });
    for (let q = 0; q < 10; q++) {
      for (let c = 0; c < 10; c++) {
        expect(m[q * 10 + c] === 0).toBe(kv.cells.pos(c) <= q);
      }
    }
    // Non-causal (embeddings): everything of the sequence.
    const all = kv.mask(batch, cells, { nKv: 10, causal: false });
    expect(all.every((x) => x === 0)).toBe(true);
    expect(Array.from(kv.spans(batch, cells, { nKv: 10 })!)).toEqual(
      Array.from({ length: 10 }, (_, q) => [0, q + 1]).flat(),
    );
  });

  it("a sliding window hides old cells in prefill and in decode alike", () => {
    const W = 4;
    const pre = new KvCache({ nCtx: 32 });
    const batch = tokens(0, 0, 12);
    const pc = put(pre, batch);
    const pm = checkAgainstRef(pre, batch, pc, { nKv: 12, slidingWindow: W });
    const dec = new KvCache({ nCtx: 32 });
    for (let p = 0; p < 12; p++) {
      const b = tokens(0, p, p + 1);
      const c = put(dec, b);
      const dm = checkAgainstRef(dec, b, c, { nKv: dec.window(), slidingWindow: W });
      // The decode row equals the prefill row of the same position.
      expect(maskCells(dm, 0, dec.window())).toEqual(maskCells(pm, p, 12));
      expect(maskCells(dm, 0, dec.window())).toEqual(
        Array.from({ length: Math.min(W, p + 1) }, (_, i) => p - Math.min(W, p + 1) + 1 + i),
      );
      const sp = dec.spans(b, c, { nKv: dec.window(), slidingWindow: W })!;
      expect([sp[0], sp[1]]).toEqual([Math.max(0, p - W + 1), p + 1]);
    }
  });

  it("spans equal the mask where returned and are null when the visible run has holes", () => {
    const kv = new KvCache({ nCtx: 16 });
    put(kv, tokens(0, 0, 8));
    kv.seqRm(0, 3, 4); // a hole at cell 3
    const hole = tokens(0, 8, 9);
    const hc = put(kv, hole); // takes cell 3, the lowest free: position 8 sits inside the run
    expect(Array.from(hc)).toEqual([3]);
    expect(kv.spans(hole, hc, { nKv: 8 })).not.toBeNull(); // cells 0..7 all visible
    kv.seqRm(0, 5, 6); // now cell 5 is empty: a hole inside the run
    checkAgainstRef(kv, hole, hc, { nKv: 8 });
    expect(kv.spans(hole, hc, { nKv: 8 })).toBeNull();
  });

  it("random batches over random caches: mask and spans match the reference rule", () => {
    const rnd = prng(1234);
    for (let trial = 0; trial < 200; trial++) {
      const nSeq = 1 + Math.floor(rnd() * 4);
      const kv = new KvCache({ nCtx: 48, nSeqMax: nSeq });
      const next = new Array(nSeq).fill(0);
      for (let k = 0; k < 6; k++) {
        const s = Math.floor(rnd() * nSeq);
        const n = 1 + Math.floor(rnd() * 6);
        if (kv.used() + n > 40) break;
        put(kv, tokens(s, next[s], next[s] + n));
        next[s] += n;
        if (rnd() < 0.3) kv.seqRm(s, Math.floor(rnd() * next[s]), -1);
        if (rnd() < 0.2 && nSeq > 1) {
          const d = (s + 1) % nSeq;
          kv.seqRm(d);
          kv.seqCp(s, d);
          next[d] = Math.max(0, kv.seqPosMax(d) + 1);
        }
        next[s] = Math.max(0, kv.seqPosMax(s) + 1);
      }
      const batch: KvToken[] = [];
      for (let s = 0; s < nSeq; s++) {
        if (rnd() < 0.7) batch.push(...tokens(s, next[s], next[s] + 1 + Math.floor(rnd() * 3)));
      }
      if (batch.length === 0 || kv.used() + batch.length > 48) continue;
      const cells = put(kv, batch);
      const sw = rnd() < 0.5 ? 0 : 1 + Math.floor(rnd() * 6);
      checkAgainstRef(kv, batch, cells, { nKv: kv.window(), slidingWindow: sw });
      checkAgainstRef(kv, batch, cells, { nKv: 48, causal: rnd() < 0.8 });
    }
  });

  it("prompts of many tokens per sequence (found once, searched per query) match the reference rule, with regions and moved positions", () => {
    const rnd = prng(77);
    let nonNull = 0;
    for (let trial = 0; trial < 150; trial++) {
      const nSeq = 1 + Math.floor(rnd() * 3);
      const regions = rnd() < 0.5;
      const kv = new KvCache({ nCtx: 30 * nSeq, nSeqMax: nSeq, seqRegions: regions });
      const next = new Array(nSeq).fill(0);
      for (let s = 0; s < nSeq; s++) {
        const n = 4 + Math.floor(rnd() * 12);
        put(kv, tokens(s, 0, n));
        next[s] = n;
        const r = rnd();
        if (r < 0.15)
          kv.seqAdd(s, 2, -1, 3); // positions jump: still ascending along the cells
        else if (r < 0.3)
          kv.seqAdd(s, 0, 3, 20); // the first cells move past the others: descending
        else if (r < 0.4)
          kv.seqDiv(s, 0, -1, 2); // pairs of cells share a position
        else if (r < 0.55) kv.seqRm(s, 1 + Math.floor(rnd() * (n - 1)), -1);
        next[s] = Math.max(0, kv.seqPosMax(s) + 1);
      }
      if (!regions && nSeq > 1 && rnd() < 0.3) {
        kv.seqRm(1, 0, 2); // sequence 1 takes sequence 0's first two cells: not its own run
        kv.seqCp(0, 1, 0, 2);
        next[1] = Math.max(0, kv.seqPosMax(1) + 1);
      }
      const batch: KvToken[] = [];
      for (let s = 0; s < nSeq; s++) {
        const n = 1 + Math.floor(rnd() * 8);
        if (kv.used() + batch.length + n <= kv.nCtx - 4) batch.push(...tokens(s, next[s], next[s] + n));
      }
      if (batch.length === 0) continue;
      let cells: Int32Array;
      try {
        cells = put(kv, batch);
      } catch {
        continue; // a region too full for this batch
      }
      const sw = rnd() < 0.6 ? 0 : 1 + Math.floor(rnd() * 8);
      checkAgainstRef(kv, batch, cells, { nKv: kv.window(), slidingWindow: sw });
      checkAgainstRef(kv, batch, cells, { nKv: kv.nCtx, causal: rnd() < 0.8 });
      if (kv.spans(batch, cells, { nKv: kv.nCtx }) !== null) nonNull++;
    }
    expect(nonNull).toBeGreaterThan(50); // most trials took the span path, not only its refusals
  });

  it("window() covers every used cell; a window too small is an error naming the cell", () => {
    const kv = new KvCache({ nCtx: 16, nSeqMax: 2 });
    expect(kv.window()).toBe(0);
    put(kv, tokens(0, 0, 6));
    expect(kv.window()).toBe(6);
    kv.seqRm(0, 4, -1);
    expect(kv.window()).toBe(4);
    const b = tokens(1, 0, 1);
    put(kv, tokens(1, 0, 1));
    const c = Int32Array.from([4]);
    expect(() => kv.mask(b, c, { nKv: 4 })).toThrow(
      expect.objectContaining({ code: "WINDOW_TOO_SMALL", cell: 4, argument: "nKv" }),
    );
    expect(() => kv.spans(b, c, { nKv: 4 })).toThrow(expect.objectContaining({ code: "WINDOW_TOO_SMALL" }));
    // Sequence 0 does not see cell 4, so a window of 4 is enough for it.
    expect(kv.mask(tokens(0, 3, 4), Int32Array.from([3]), { nKv: 4 }).length).toBe(4);
  });

  it("refuses a batch that is not committed, and bad options", () => {
    const kv = new KvCache({ nCtx: 8 });
    const b = tokens(0, 0, 2);
    const r = kv.findSlot(b);
    if (r.status !== "ok") throw new Error("no slot");
    expect(() => kv.mask(b, r.cells, { nKv: 8 })).toThrow(expect.objectContaining({ code: "NOT_COMMITTED" }));
    kv.commit(b, r.cells);
    expect(() => kv.mask(b, [1, 0], { nKv: 8 })).toThrow(expect.objectContaining({ code: "NOT_COMMITTED" }));
    expect(() => kv.mask(b, [0], { nKv: 8 })).toThrow(expect.objectContaining({ code: "BAD_BATCH" }));
    expect(() => kv.mask(b, r.cells, { nKv: 0 })).toThrow(expect.objectContaining({ argument: "nKv" }));
    expect(() => kv.mask(b, r.cells, { nKv: 9 })).toThrow(expect.objectContaining({ argument: "nKv" }));
    expect(() => kv.mask(b, r.cells, { nKv: 8, slidingWindow: -1 })).toThrow(
      expect.objectContaining({ argument: "slidingWindow" }),
    );
    expect(() => kv.mask(b, r.cells, { nKv: 8, out: new Float32Array(15) })).toThrow(
      expect.objectContaining({ argument: "out" }),
    );
    expect(() => kv.mask(b, r.cells, { nKv: 8, dtype: "f16", out: new Float32Array(16) })).toThrow(
      expect.objectContaining({ argument: "out" }),
    );
    const out = new Float32Array(16);
    expect(kv.mask(b, r.cells, { nKv: 8, out })).toBe(out);
    const so = new Int32Array(4);
    expect(kv.spans(b, r.cells, { nKv: 8, out: so })).toBe(so);
    expect(Array.from(so)).toEqual([0, 1, 0, 2]);
  });
});
