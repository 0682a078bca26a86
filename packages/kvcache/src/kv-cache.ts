import { KvCacheError } from "./errors.js";
import { type KvBatch, type KvToken, validateBatch } from "./kv-batch.js";
import { KvCells, MAX_POS } from "./kv-cells.js";
import { applyDefrag, defragPlan, fragmentation, type KvMove } from "./kv-defrag.js";
import { DEFAULT_KV_DTYPE, type KvDtype, parseKvDtype } from "./kv-dtype.js";
import { attentionMask, attentionSpans, type MaskOptions, type SpanOptions } from "./kv-mask.js";
import { findRegionalSlot, regionFree } from "./kv-regions.js";
import { type KvSequenceState, readSequenceState, writeSequenceState } from "./kv-state.js";

/** Options of a {@link KvCache}. */
export interface KvCacheOptions {
  /** Cells (K/V rows per layer). */
  nCtx: number;
  /** Sequence ids are 0..nSeqMax-1 (default 1). */
  nSeqMax?: number;
  /** The element type of the K and V rows the engine allocates (default "f16"). */
  dtype?: KvDtype;
  /**
   * Give each sequence its own region of nCtx / nSeqMax cells (llama.cpp's non-unified cache):
   * a sequence filled in order stays one run of cells, so attention visits only its run even in
   * batches that mix sequences. Default false (any free cell serves any sequence).
   */
  seqRegions?: boolean;
}

/** What {@link KvCache.findSlot} answers: the cell of each token, or that there is no room. */
export type FindSlotResult =
  | { readonly status: "ok"; readonly cells: Int32Array }
  | { readonly status: "no-slot"; readonly needed: number; readonly free: number };

/**
 * The KV cache's bookkeeping (no tensors): which cell holds which position of which sequences.
 *
 * Per micro-batch the engine calls {@link findSlot} (the cell each new K/V row is written to; the
 * one place cell indices become graph data, so every index is checked to lie in [0, nCtx)),
 * {@link commit}, then {@link mask} or {@link spans} for attention over the window
 * [0, {@link window}()).
 */
export class KvCache {
  readonly nCtx: number;
  readonly nSeqMax: number;
  readonly dtype: KvDtype;
  /** Cells per sequence region, or 0 when any cell serves any sequence (see {@link KvCacheOptions.seqRegions}). */
  readonly region: number;
  /** The cells (read them freely; change them through this class). */
  readonly cells: KvCells;
  readonly #lastPos: Int32Array;
  readonly #bits: Uint32Array;
  readonly #stamp: Int32Array;
  #gen = 1;

  constructor(opts: KvCacheOptions) {
    if (opts === null || typeof opts !== "object") {
      throw new KvCacheError("INVALID_ARGUMENT", "KvCache takes { nCtx, nSeqMax?, dtype? }", {
        argument: "opts",
      });
    }
    this.cells = new KvCells(opts.nCtx, opts.nSeqMax ?? 1);
    this.nCtx = this.cells.nCtx;
    this.nSeqMax = this.cells.nSeqMax;
    this.dtype = parseKvDtype(opts.dtype ?? DEFAULT_KV_DTYPE);
    if (opts.seqRegions !== undefined && typeof opts.seqRegions !== "boolean")
      throw new KvCacheError("INVALID_ARGUMENT", "seqRegions must be a boolean", { argument: "seqRegions" });
    if (opts.seqRegions && this.nCtx % this.nSeqMax !== 0)
      throw new KvCacheError(
        "INVALID_ARGUMENT",
        `seqRegions needs nCtx (${this.nCtx}) to be a multiple of nSeqMax (${this.nSeqMax})`,
        { argument: "nCtx" },
      );
    this.region = opts.seqRegions ? this.nCtx / this.nSeqMax : 0;
    this.#lastPos = new Int32Array(this.nSeqMax);
    this.#bits = new Uint32Array(this.cells.seqWords);
    this.#stamp = new Int32Array(this.nCtx);
  }

  /** Cells in use. */
  used(): number {
    return this.cells.used();
  }

  /** The smallest nKv covering every used cell (the engine buckets it for the graph's KV window). */
  window(): number {
    return this.cells.window();
  }

  /** The fraction of [0, window()) that is empty. */
  fragmentation(): number {
    return fragmentation(this.cells);
  }

  /** The smallest position of `seq`, or -1 when it has none. */
  seqPosMin(seq: number): number {
    return this.cells.seqPosMin(this.#seq(seq, "seq"));
  }

  /** The largest position of `seq`, or -1 when it has none. */
  seqPosMax(seq: number): number {
    return this.cells.seqPosMax(this.#seq(seq, "seq"));
  }

  /** Cells `seq` owns. */
  seqCount(seq: number): number {
    return this.cells.seqCount(this.#seq(seq, "seq"));
  }

  /** Whether seqAdd/seqDiv left deltas for the engine to apply (re-rope K). */
  hasShift(): boolean {
    return this.cells.hasShift();
  }

  /** The pending delta per cell (length nCtx), and clears them. */
  consumeShift(out?: Int32Array): Int32Array {
    return this.cells.consumeShift(out);
  }

  /**
   * Cells for a micro-batch, one per token in order: a run of contiguous free cells when there is
   * one (the lowest), else the lowest free cells; with seqRegions, the lowest free cells of each
   * token's sequence region. Changes nothing (see {@link commit}). No room is
   * `{ status: "no-slot" }`; a malformed batch, or a token whose (sequence, position) already has a
   * cell, throws. Allocates only the result (none with `out`, which must have the batch's length).
   */
  findSlot(batch: KvBatch, out?: Int32Array): FindSlotResult {
    validateBatch(this.cells, batch, true, this.#lastPos);
    const n = batch.length;
    if (out !== undefined && (!(out instanceof Int32Array) || out.length !== n)) {
      throw new KvCacheError("INVALID_ARGUMENT", `out must be an Int32Array of exactly ${n} elements`, {
        argument: "out",
      });
    }
    const free = this.cells.free();
    if (n > free) return { status: "no-slot", needed: n, free };
    const r = out ?? new Int32Array(n);
    if (n === 0) return { status: "ok", cells: r };
    if (this.region > 0) {
      const placed = findRegionalSlot(this.cells, batch, this.region, r);
      if (placed < n) {
        const s = batch[placed]!.seqIds[0]!;
        let needed = 0;
        for (const t of batch) if (t.seqIds[0] === s) needed++;
        return { status: "no-slot", needed, free: regionFree(this.cells, s, this.region) };
      }
      return this.#checked(r);
    }
    const pos = this.cells.positions;
    const nCtx = this.nCtx;
    let first = this.cells.head;
    while (first < nCtx && pos[first]! >= 0) first++;
    this.cells.head = first;
    // The lowest run of n free cells.
    let start = -1;
    let run = 0;
    for (let c = first; c < nCtx; c++) {
      if (pos[c]! >= 0) run = 0;
      else if (++run === n) {
        start = c - n + 1;
        break;
      }
    }
    if (start >= 0) for (let i = 0; i < n; i++) r[i] = start + i;
    else {
      let i = 0;
      for (let c = first; c < nCtx && i < n; c++) if (pos[c]! < 0) r[i++] = c;
      if (i !== n)
        throw new KvCacheError("INTERNAL", `found ${i} of ${n} free cells; used() says ${free} free`);
    }
    return this.#checked(r);
  }

  /** The cell indices leave this package as graph data (SET_ROWS): checks each one. */
  #checked(r: Int32Array): FindSlotResult {
    const pos = this.cells.positions;
    const nCtx = this.nCtx;
    for (let i = 0; i < r.length; i++) {
      const c = r[i]!;
      if (!(c >= 0 && c < nCtx) || pos[c]! >= 0) {
        throw new KvCacheError("INTERNAL", `findSlot chose cell ${c} for batch[${i}], outside or used`, {
          cell: c,
        });
      }
    }
    return { status: "ok", cells: r };
  }

  /**
   * Records a micro-batch in its cells (those findSlot gave, or any distinct empty cells): each
   * cell gets the token's position and sequences. Checks everything first and changes nothing
   * when it throws.
   */
  commit(batch: KvBatch, cells: ArrayLike<number>): void {
    validateBatch(this.cells, batch, true, this.#lastPos);
    const n = batch.length;
    if (cells === null || typeof cells !== "object" || cells.length !== n) {
      throw new KvCacheError("BAD_BATCH", `cells must hold one cell per token (${n})`, { argument: "cells" });
    }
    const gen = this.#nextGen();
    const pos = this.cells.positions;
    for (let i = 0; i < n; i++) {
      const c = cells[i]!;
      if (!Number.isInteger(c) || c < 0 || c >= this.nCtx) {
        throw new KvCacheError("BAD_CELL", `cells[${i}] = ${String(c)} is outside [0, ${this.nCtx})`, {
          argument: `cells[${i}]`,
          cell: c,
        });
      }
      if (pos[c]! >= 0 || this.#stamp[c] === gen) {
        throw new KvCacheError("BAD_CELL", `cells[${i}] = ${c} is not free`, {
          argument: `cells[${i}]`,
          cell: c,
        });
      }
      this.#stamp[c] = gen;
    }
    for (let i = 0; i < n; i++) {
      const t = batch[i]!;
      const c = cells[i]!;
      this.cells.occupy(c, t.pos);
      for (let j = 0; j < t.seqIds.length; j++) this.cells.addSeq(c, t.seqIds[j]!);
    }
  }

  /** {@link findSlot} then, when there is room, {@link commit}. */
  allocate(batch: KvBatch, out?: Int32Array): FindSlotResult {
    const r = this.findSlot(batch, out);
    if (r.status === "ok") this.commit(batch, r.cells);
    return r;
  }

  /** The attention mask of a committed micro-batch (see {@link attentionMask}). */
  mask(batch: KvBatch, cells: ArrayLike<number> | null, opts: MaskOptions & { dtype: "f16" }): Uint16Array;
  mask(batch: KvBatch, cells: ArrayLike<number> | null, opts: MaskOptions & { dtype?: "f32" }): Float32Array;
  mask(batch: KvBatch, cells: ArrayLike<number> | null, opts: MaskOptions): Float32Array | Uint16Array;
  mask(batch: KvBatch, cells: ArrayLike<number> | null, opts: MaskOptions): Float32Array | Uint16Array {
    validateBatch(this.cells, batch, false, this.#lastPos);
    return attentionMask(this.cells, batch, cells, opts, this.#bits);
  }

  /** Attention spans of a committed micro-batch, or null when a query's cells are not one run. */
  spans(batch: KvBatch, cells: ArrayLike<number> | null, opts: SpanOptions): Int32Array | null {
    validateBatch(this.cells, batch, false, this.#lastPos);
    return attentionSpans(this.cells, batch, cells, opts, this.#bits, this.region);
  }

  /** Removes positions [p0, p1) of `seq` (p1 = -1: to the end); a cell left without owners is freed. */
  seqRm(seq: number, p0 = 0, p1 = -1): void {
    this.#seq(seq, "seq");
    const hi = this.#range(p0, p1);
    const pos = this.cells.positions;
    const top = this.cells.window();
    for (let c = 0; c < top; c++) {
      const p = pos[c]!;
      if (p >= p0 && p < hi && this.cells.has(c, seq)) this.cells.rmSeq(c, seq);
    }
  }

  /**
   * `dst` becomes an owner of `src`'s cells at positions [p0, p1): a shared prefix, nothing copied.
   * SEQ_CONFLICT when `dst` already holds one of those positions in another cell.
   */
  seqCp(src: number, dst: number, p0 = 0, p1 = -1): void {
    this.#seq(src, "src");
    this.#seq(dst, "dst");
    const hi = this.#range(p0, p1);
    if (src === dst) return;
    const pos = this.cells.positions;
    const top = this.cells.window();
    if (this.cells.seqCount(dst) > 0) {
      const taken = new Set<number>();
      for (let c = 0; c < top; c++) if (pos[c]! >= 0 && this.cells.has(c, dst)) taken.add(pos[c]!);
      for (let c = 0; c < top; c++) {
        const p = pos[c]!;
        if (p >= p0 && p < hi && this.cells.has(c, src) && !this.cells.has(c, dst) && taken.has(p)) {
          throw new KvCacheError(
            "SEQ_CONFLICT",
            `sequence ${dst} already holds position ${p}; seqRm(${dst}) the range first`,
            { argument: "dst", cell: c },
          );
        }
      }
    }
    for (let c = 0; c < top; c++) {
      const p = pos[c]!;
      if (p >= p0 && p < hi && this.cells.has(c, src)) this.cells.addSeq(c, dst);
    }
  }

  /** Drops every sequence but `seq`: cells it does not own are freed, the others lose other owners. */
  seqKeep(seq: number): void {
    this.#seq(seq, "seq");
    const top = this.cells.window();
    for (let c = 0; c < top; c++) this.cells.keepOnly(c, seq);
  }

  /**
   * Adds `delta` to the positions [p0, p1) of `seq` and records it per cell for re-roping K
   * ({@link consumeShift}). Cells moved below 0 are removed from `seq`. SHARED_CELL (nothing
   * changed) when a cell that would move is owned by another sequence too.
   */
  seqAdd(seq: number, p0: number, p1: number, delta: number): void {
    this.#seq(seq, "seq");
    const hi = this.#range(p0, p1);
    if (typeof delta !== "number" || !Number.isInteger(delta) || Math.abs(delta) > MAX_POS) {
      throw new KvCacheError("BAD_DELTA", `delta must be an integer, got ${String(delta)}`, {
        argument: "delta",
      });
    }
    if (delta === 0) return;
    this.#shiftRange(seq, p0, hi, (p) => p + delta, "delta");
  }

  /**
   * Integer-divides the positions [p0, p1) of `seq` by `d` (self-extend: several cells may then
   * share a position) and records the deltas for re-roping K. SHARED_CELL as {@link seqAdd}.
   */
  seqDiv(seq: number, p0: number, p1: number, d: number): void {
    this.#seq(seq, "seq");
    const hi = this.#range(p0, p1);
    if (typeof d !== "number" || !Number.isInteger(d) || d < 1 || d > MAX_POS) {
      throw new KvCacheError("BAD_DIVISOR", `d must be an integer ≥ 1, got ${String(d)}`, { argument: "d" });
    }
    if (d === 1) return;
    this.#shiftRange(seq, p0, hi, (p) => Math.floor(p / d), "d");
  }

  /** Empties every cell. */
  clear(): void {
    this.cells.clear();
  }

  /** A plan of cell moves compacting used cells to the front (see {@link defragPlan}). */
  defragPlan(maxMoves?: number): KvMove[] {
    if (this.region > 0)
      throw new KvCacheError(
        "INVALID_ARGUMENT",
        "defrag compacts cells to the front, which would move them out of their sequence's region (seqRegions)",
        { argument: "seqRegions" },
      );
    return defragPlan(this.cells, maxMoves);
  }

  /** Applies a plan to the bookkeeping; checks it first and changes nothing when it does not fit. */
  applyDefrag(plan: readonly KvMove[]): void {
    applyDefrag(this.cells, plan, this.#stamp, this.#nextGen(2));
  }

  /** The state bytes of one sequence (see {@link writeSequenceState}). */
  writeSequence(seq: number): Uint8Array {
    return writeSequenceState(this.cells, this.#seq(seq, "seq"));
  }

  /**
   * Parses state bytes for restoring into `seq`: the positions to allocate (and the writer's
   * cells, the order of the saved rows). STATE_MISMATCH when they cannot fit this cache or `seq`
   * is not empty; other STATE_* codes for malformed bytes.
   */
  readSequence(bytes: Uint8Array, seq: number): KvSequenceState {
    this.#seq(seq, "seq");
    const st = readSequenceState(bytes);
    if (st.positions.length > this.nCtx) {
      throw new KvCacheError(
        "STATE_MISMATCH",
        `state of ${st.positions.length} cells; this cache has ${this.nCtx}`,
        {
          argument: "bytes",
        },
      );
    }
    if (this.cells.seqCount(seq) > 0) {
      throw new KvCacheError("STATE_MISMATCH", `sequence ${seq} is not empty; seqRm(${seq}) first`, {
        argument: "seq",
      });
    }
    return st;
  }

  /**
   * {@link readSequence}, then allocates a cell per saved row for `seq`: on "ok", row i of the saved
   * state goes to `cells[i]` (the engine copies the K/V rows).
   */
  restoreSequence(bytes: Uint8Array, seq: number): FindSlotResult {
    const st = this.readSequence(bytes, seq);
    const ids = [seq];
    const batch: KvToken[] = Array.from(st.positions, (pos) => ({ pos, seqIds: ids }));
    return this.allocate(batch);
  }

  #shiftRange(seq: number, p0: number, hi: number, f: (p: number) => number, argument: string): void {
    const pos = this.cells.positions;
    const top = this.cells.window();
    for (let c = 0; c < top; c++) {
      const p = pos[c]!;
      if (p < p0 || p >= hi || !this.cells.has(c, seq)) continue;
      const np = f(p);
      if (np > MAX_POS) {
        throw new KvCacheError("BAD_DELTA", `position ${p} would move to ${np}, past 2^31 - 1`, {
          argument,
          cell: c,
        });
      }
      if (np >= 0 && np !== p && this.cells.ownerCount(c) > 1) {
        throw new KvCacheError(
          "SHARED_CELL",
          `cell ${c} (position ${p}) is shared by sequences ${this.cells.owners(c).join(",")}; ` +
            `its K row cannot move for sequence ${seq} alone`,
          { argument: "seq", cell: c },
        );
      }
    }
    for (let c = 0; c < top; c++) {
      const p = pos[c]!;
      if (p < p0 || p >= hi || !this.cells.has(c, seq)) continue;
      const np = f(p);
      if (np < 0) this.cells.rmSeq(c, seq);
      else this.cells.setPos(c, np);
    }
  }

  #seq(v: number, argument: string): number {
    if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v >= this.nSeqMax) {
      throw new KvCacheError(
        "BAD_SEQ_ID",
        `${argument} = ${String(v)} is not a sequence id in [0, ${this.nSeqMax})`,
        {
          argument,
        },
      );
    }
    return v;
  }

  /** Checks [p0, p1) and returns its exclusive end (p1 = -1: past every position). */
  #range(p0: number, p1: number): number {
    if (typeof p0 !== "number" || !Number.isInteger(p0) || p0 < 0 || p0 > MAX_POS) {
      throw new KvCacheError("BAD_POSITION", `p0 = ${String(p0)} is not a position`, { argument: "p0" });
    }
    if (p1 === -1) return MAX_POS + 1;
    if (typeof p1 !== "number" || !Number.isInteger(p1) || p1 < 0 || p1 > MAX_POS + 1) {
      throw new KvCacheError("BAD_RANGE", `p1 = ${String(p1)} is neither -1 nor a position`, {
        argument: "p1",
      });
    }
    if (p0 > p1) throw new KvCacheError("BAD_RANGE", `p0 = ${p0} > p1 = ${p1}`, { argument: "p1" });
    return p1;
  }

  #nextGen(step = 1): number {
    if (this.#gen > 0x3fffffff) {
      this.#stamp.fill(0);
      this.#gen = 1;
    }
    const g = this.#gen;
    this.#gen += step;
    return g;
  }
}
