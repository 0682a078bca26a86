import { checkInt, KvCacheError } from "./errors.js";

/** The largest position a cell may hold (positions are I32 graph data). */
export const MAX_POS = 0x7fffffff;
/** The most sequences one cache tracks. */
export const MAX_SEQ = 1024;

/**
 * nCtx cells, each empty or holding a position, the set of sequences that own it (a bitset), and a
 * pending position delta (what seqAdd/seqDiv moved it by since the last {@link consumeShift}; the
 * engine re-ropes the cell's K row by that much).
 *
 * This is the storage; {@link KvCache} is the API that keeps it consistent. The mutators here check
 * their cell indices but not the invariants across cells (one (sequence, position) per cell, …).
 */
export class KvCells {
  readonly nCtx: number;
  readonly nSeqMax: number;
  /** 32-bit words of one cell's owner bitset. */
  readonly #words: number;
  /** Position per cell; -1 when empty. */
  readonly #pos: Int32Array;
  /** Owners, #words per cell. */
  readonly #seq: Uint32Array;
  /** Pending delta per cell. */
  readonly #shift: Int32Array;
  #hasShift = false;
  #used = 0;
  /** No empty cell below #head. */
  #head = 0;
  /** No used cell at or above #top. */
  #top = 0;
  /** Per sequence: cells owned, and a cached min/max position (recomputed when #dirty). */
  readonly #count: Int32Array;
  readonly #min: Int32Array;
  readonly #max: Int32Array;
  readonly #dirty: Uint8Array;
  /** Per sequence: a cached lowest and highest cell it owns (recomputed when #cellDirty). */
  readonly #cellLo: Int32Array;
  readonly #cellHi: Int32Array;
  readonly #cellDirty: Uint8Array;

  constructor(nCtx: number, nSeqMax: number) {
    this.nCtx = checkInt(nCtx, "nCtx", 1, 0x40000000);
    this.nSeqMax = checkInt(nSeqMax, "nSeqMax", 1, MAX_SEQ);
    this.#words = (nSeqMax + 31) >>> 5;
    this.#pos = new Int32Array(nCtx).fill(-1);
    this.#seq = new Uint32Array(nCtx * this.#words);
    this.#shift = new Int32Array(nCtx);
    this.#count = new Int32Array(nSeqMax);
    this.#min = new Int32Array(nSeqMax);
    this.#max = new Int32Array(nSeqMax);
    this.#dirty = new Uint8Array(nSeqMax);
    this.#cellLo = new Int32Array(nSeqMax);
    this.#cellHi = new Int32Array(nSeqMax);
    this.#cellDirty = new Uint8Array(nSeqMax);
  }

  /** Cells holding a position. */
  used(): number {
    return this.#used;
  }

  /** Cells free. */
  free(): number {
    return this.nCtx - this.#used;
  }

  /** The cell's position, or -1 when it is empty. */
  pos(cell: number): number {
    return this.#pos[this.#cell(cell)]!;
  }

  isEmpty(cell: number): boolean {
    return this.#pos[this.#cell(cell)]! < 0;
  }

  /** Whether `seq` owns the cell. */
  has(cell: number, seq: number): boolean {
    this.#cell(cell);
    if (!(seq >= 0 && seq < this.nSeqMax)) return false;
    return ((this.#seq[cell * this.#words + (seq >>> 5)]! >>> (seq & 31)) & 1) === 1;
  }

  /** The sequences that own the cell, ascending (allocates; for inspection). */
  owners(cell: number): number[] {
    this.#cell(cell);
    const out: number[] = [];
    for (let s = 0; s < this.nSeqMax; s++) if (this.has(cell, s)) out.push(s);
    return out;
  }

  /** Number of sequences that own the cell. */
  ownerCount(cell: number): number {
    this.#cell(cell);
    let n = 0;
    const base = cell * this.#words;
    for (let w = 0; w < this.#words; w++) {
      let x = this.#seq[base + w]!;
      while (x !== 0) {
        x &= x - 1;
        n++;
      }
    }
    return n;
  }

  /** Whether the cell is owned by any sequence in `bits` (a bitset of #words words, as {@link seqBits}). */
  ownedByAny(cell: number, bits: Uint32Array): boolean {
    const base = cell * this.#words;
    for (let w = 0; w < this.#words; w++) if ((this.#seq[base + w]! & bits[w]!) !== 0) return true;
    return false;
  }

  /**
   * The position array itself (length nCtx, -1 for an empty cell), for fast scans. Read only:
   * writing it bypasses the bookkeeping.
   */
  get positions(): Int32Array {
    return this.#pos;
  }

  /** Words of an owner bitset (for {@link ownedByAny}). */
  get seqWords(): number {
    return this.#words;
  }

  /** Cells `seq` owns. */
  seqCount(seq: number): number {
    return this.#count[seq]!;
  }

  /** The smallest position `seq` holds, or -1 when it holds none. */
  seqPosMin(seq: number): number {
    if (this.#count[seq] === 0) return -1;
    if (this.#dirty[seq]) this.#rescan(seq);
    return this.#min[seq]!;
  }

  /** The largest position `seq` holds, or -1 when it holds none. */
  seqPosMax(seq: number): number {
    if (this.#count[seq] === 0) return -1;
    if (this.#dirty[seq]) this.#rescan(seq);
    return this.#max[seq]!;
  }

  /** The lowest cell `seq` owns, or -1 when it owns none. */
  seqCellMin(seq: number): number {
    if (this.#count[seq] === 0) return -1;
    if (this.#cellDirty[seq]) this.#rescan(seq);
    return this.#cellLo[seq]!;
  }

  /** The highest cell `seq` owns, or -1 when it owns none. */
  seqCellMax(seq: number): number {
    if (this.#count[seq] === 0) return -1;
    if (this.#cellDirty[seq]) this.#rescan(seq);
    return this.#cellHi[seq]!;
  }

  /** The smallest n such that every used cell is in [0, n). */
  window(): number {
    while (this.#top > 0 && this.#pos[this.#top - 1]! < 0) this.#top--;
    return this.#top;
  }

  /** A lower bound on the first empty cell (every cell below it is used). */
  get head(): number {
    return this.#head;
  }

  /** Raises the lower bound on the first empty cell (caller has seen cells below `h` used). */
  set head(h: number) {
    this.#head = h;
  }

  /** Whether any delta is pending. */
  hasShift(): boolean {
    return this.#hasShift;
  }

  /** The delta pending on one cell. */
  shiftOf(cell: number): number {
    return this.#shift[this.#cell(cell)]!;
  }

  /**
   * The pending deltas per cell (length nCtx; 0 where nothing moved), and clears them: the engine
   * re-ropes each K row whose delta is not 0 by that many positions. Writes into `out` when given.
   */
  consumeShift(out?: Int32Array): Int32Array {
    if (out !== undefined && out.length < this.nCtx) {
      throw new KvCacheError("INVALID_ARGUMENT", `out holds ${out.length} deltas, nCtx is ${this.nCtx}`, {
        argument: "out",
      });
    }
    const r = out ?? new Int32Array(this.nCtx);
    r.set(this.#shift);
    this.#shift.fill(0);
    this.#hasShift = false;
    return r;
  }

  // ---- mutators ----

  /** Puts a position into an empty cell (owned by nobody until {@link addSeq}). */
  occupy(cell: number, pos: number): void {
    this.#cell(cell);
    if (this.#pos[cell]! >= 0) throw new KvCacheError("BAD_CELL", `cell ${cell} is not empty`, { cell });
    this.#checkPos(pos);
    this.#pos[cell] = pos;
    this.#shift[cell] = 0;
    this.#used++;
    if (cell + 1 > this.#top) this.#top = cell + 1;
  }

  /** Adds `seq` to the owners of a used cell. */
  addSeq(cell: number, seq: number): void {
    this.#cell(cell);
    const p = this.#pos[cell]!;
    if (p < 0) throw new KvCacheError("BAD_CELL", `cell ${cell} is empty`, { cell });
    if (this.has(cell, seq)) return;
    this.#seq[cell * this.#words + (seq >>> 5)]! |= 1 << (seq & 31);
    const n = ++this.#count[seq]!;
    if (n === 1) {
      this.#min[seq] = p;
      this.#max[seq] = p;
      this.#dirty[seq] = 0;
      this.#cellLo[seq] = cell;
      this.#cellHi[seq] = cell;
      this.#cellDirty[seq] = 0;
    } else {
      if (!this.#dirty[seq]) {
        if (p < this.#min[seq]!) this.#min[seq] = p;
        if (p > this.#max[seq]!) this.#max[seq] = p;
      }
      if (!this.#cellDirty[seq]) {
        if (cell < this.#cellLo[seq]!) this.#cellLo[seq] = cell;
        if (cell > this.#cellHi[seq]!) this.#cellHi[seq] = cell;
      }
    }
  }

  /** Removes `seq` from a cell's owners; a cell left without owners becomes empty. */
  rmSeq(cell: number, seq: number): void {
    if (!this.has(cell, seq)) return;
    this.#seq[cell * this.#words + (seq >>> 5)]! &= ~(1 << (seq & 31));
    this.#count[seq]!--;
    const p = this.#pos[cell]!;
    if (p === this.#min[seq] || p === this.#max[seq]) this.#dirty[seq] = 1;
    if (cell === this.#cellLo[seq] || cell === this.#cellHi[seq]) this.#cellDirty[seq] = 1;
    if (this.#ownerless(cell)) this.#empty(cell);
  }

  /** Removes every owner of the cell but `seq`; a cell `seq` does not own becomes empty. */
  keepOnly(cell: number, seq: number): void {
    this.#cell(cell);
    if (this.#pos[cell]! < 0) return;
    const base = cell * this.#words;
    const p = this.#pos[cell]!;
    for (let w = 0; w < this.#words; w++) {
      let x = this.#seq[base + w]!;
      if (w === seq >>> 5) x &= ~(1 << (seq & 31));
      while (x !== 0) {
        const s = w * 32 + (31 - Math.clz32(x & -x));
        x &= x - 1;
        this.#count[s]!--;
        if (p === this.#min[s] || p === this.#max[s]) this.#dirty[s] = 1;
        if (cell === this.#cellLo[s] || cell === this.#cellHi[s]) this.#cellDirty[s] = 1;
      }
      this.#seq[base + w]! &= w === seq >>> 5 ? 1 << (seq & 31) : 0;
    }
    if (this.#ownerless(cell)) this.#empty(cell);
  }

  /** Moves a used cell to a new position, recording the delta for re-roping. */
  setPos(cell: number, pos: number): void {
    this.#cell(cell);
    const old = this.#pos[cell]!;
    if (old < 0) throw new KvCacheError("BAD_CELL", `cell ${cell} is empty`, { cell });
    this.#checkPos(pos);
    if (pos === old) return;
    this.#pos[cell] = pos;
    this.#shift[cell]! += pos - old;
    this.#hasShift = true;
    const base = cell * this.#words;
    for (let w = 0; w < this.#words; w++) {
      let x = this.#seq[base + w]!;
      while (x !== 0) {
        const b = 31 - Math.clz32(x & -x);
        x &= x - 1;
        this.#dirty[w * 32 + b] = 1;
      }
    }
  }

  /** Moves everything a used cell holds (position, owners, pending delta) into an empty one. */
  move(from: number, to: number): void {
    this.#cell(from);
    this.#cell(to);
    if (this.#pos[from]! < 0) throw new KvCacheError("BAD_CELL", `cell ${from} is empty`, { cell: from });
    if (this.#pos[to]! >= 0) throw new KvCacheError("BAD_CELL", `cell ${to} is not empty`, { cell: to });
    const w = this.#words;
    // (the owners' cell ranges: found again when next asked for)
    for (let k = 0; k < w; k++) {
      let x = this.#seq[from * w + k]!;
      while (x !== 0) {
        this.#cellDirty[k * 32 + (31 - Math.clz32(x & -x))] = 1;
        x &= x - 1;
      }
    }
    this.#pos[to] = this.#pos[from]!;
    this.#shift[to] = this.#shift[from]!;
    this.#seq.copyWithin(to * w, from * w, from * w + w);
    this.#seq.fill(0, from * w, from * w + w);
    this.#pos[from] = -1;
    this.#shift[from] = 0;
    if (from < this.#head) this.#head = from;
    if (to + 1 > this.#top) this.#top = to + 1;
  }

  /** Empties every cell and clears pending deltas. */
  clear(): void {
    this.#pos.fill(-1);
    this.#seq.fill(0);
    this.#shift.fill(0);
    this.#count.fill(0);
    this.#dirty.fill(0);
    this.#cellDirty.fill(0);
    this.#hasShift = false;
    this.#used = 0;
    this.#head = 0;
    this.#top = 0;
  }

  #ownerless(cell: number): boolean {
    const base = cell * this.#words;
    for (let w = 0; w < this.#words; w++) if (this.#seq[base + w] !== 0) return false;
    return true;
  }

  #empty(cell: number): void {
    this.#pos[cell] = -1;
    this.#shift[cell] = 0;
    this.#used--;
    if (cell < this.#head) this.#head = cell;
  }

  /** Finds `seq`'s smallest and largest position and its lowest and highest cell again (one scan). */
  #rescan(seq: number): void {
    let lo = MAX_POS;
    let hi = -1;
    let first = -1;
    let last = -1;
    const top = this.window();
    for (let c = 0; c < top; c++) {
      const p = this.#pos[c]!;
      if (p >= 0 && this.has(c, seq)) {
        if (p < lo) lo = p;
        if (p > hi) hi = p;
        if (first < 0) first = c;
        last = c;
      }
    }
    this.#min[seq] = lo;
    this.#max[seq] = hi;
    this.#dirty[seq] = 0;
    this.#cellLo[seq] = first;
    this.#cellHi[seq] = last;
    this.#cellDirty[seq] = 0;
  }

  #cell(cell: number): number {
    if (!Number.isInteger(cell) || cell < 0 || cell >= this.nCtx) {
      throw new KvCacheError("BAD_CELL", `cell ${String(cell)} is outside [0, ${this.nCtx})`, { cell });
    }
    return cell;
  }

  #checkPos(pos: number): void {
    if (!Number.isInteger(pos) || pos < 0 || pos > MAX_POS) {
      throw new KvCacheError("BAD_POSITION", `position ${String(pos)} is not an integer in [0, 2^31)`, {
        argument: "pos",
      });
    }
  }
}
