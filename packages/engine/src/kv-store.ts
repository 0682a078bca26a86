import { KvCache, KvCacheError, type KvDtype, type KvToken } from "@minfer/kvcache";
import type { KvGroup, KvLayer } from "@minfer/models";
import { EngineError } from "./errors.js";
import { KvHistory } from "./kv-history.js";

/** KV windows are rounded up to a multiple of this, so decode steps share graphs. */
export const KV_BUCKET = 32;

/** One KV cache of a context: the full-attention layers' or the sliding-window layers'. */
export interface KvGroupCache {
  readonly group: KvGroup;
  readonly cache: KvCache;
  /** Positions a query sees in this cache: its own and the `window − 1` before it (0: all before it). */
  readonly window: number;
  /** Whether the cache is smaller than the context, so cells a query can no longer see are reused. */
  readonly prunes: boolean;
  /** The layers whose K/V rows it holds. */
  readonly layers: readonly number[];
  /** Whether a query sees only positions up to its own (false: its whole sequence). */
  readonly causal: boolean;
}

/** Options of {@link KvStore}. */
export interface KvStoreOptions {
  readonly layers: readonly KvLayer[];
  /** The sliding window of the "swa" layers (positions), 0 when none. */
  readonly window: number;
  readonly nCtx: number;
  readonly nUbatch: number;
  readonly nSeqMax: number;
  readonly dtype: KvDtype;
  /** Each sequence in its own region (kvUnified false). */
  readonly regions: boolean;
  /** Give the sliding-window layers a cache of the whole context (no reuse of cells). */
  readonly swaFull: boolean;
  /** Attention is causal (default true; false for encoders). */
  readonly causal?: boolean;
}

/**
 * Cells of a sliding-window cache: every sequence's window and one micro-batch (what the cache must
 * hold at once when out-of-window cells are reused), rounded up to {@link KV_BUCKET}, at most the
 * context. With regions, each sequence's share is its window plus a micro-batch.
 */
export function swaCells(
  o: Pick<KvStoreOptions, "window" | "nCtx" | "nUbatch" | "nSeqMax" | "regions">,
): number {
  const round = (n: number) => Math.ceil(n / KV_BUCKET) * KV_BUCKET;
  if (o.regions) return o.nSeqMax * Math.min(o.nCtx / o.nSeqMax, round(o.window + o.nUbatch));
  return Math.min(o.nCtx, round(o.window * o.nSeqMax + o.nUbatch));
}

/** Maps the KV cache's argument errors to the engine's INVALID_ARGUMENT. */
export function kvCall<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof KvCacheError) throw new EngineError("INVALID_ARGUMENT", e.message, { cause: e });
    throw e;
  }
}

/**
 * The bookkeeping of a context's KV caches (one per group of layers) and the tokens each sequence
 * holds. Sequence operations apply to every cache; a sliding-window cache reuses the cells no
 * query can see any more when it runs out of room.
 */
export class KvStore {
  readonly groups: readonly KvGroupCache[];
  readonly history = new KvHistory();

  constructor(o: KvStoreOptions) {
    const groups: KvGroupCache[] = [];
    for (const group of ["full", "swa"] as const) {
      const layers = o.layers.flatMap((l, il) => (l.group === group ? [il] : []));
      if (layers.length === 0) continue;
      const window = group === "swa" ? o.window : 0;
      const nCtx = group === "swa" && !o.swaFull ? swaCells(o) : o.nCtx;
      const cache = new KvCache({ nCtx, nSeqMax: o.nSeqMax, dtype: o.dtype, seqRegions: o.regions });
      groups.push({ group, cache, window, prunes: nCtx < o.nCtx, layers, causal: o.causal ?? true });
    }
    this.groups = groups;
  }

  /** The cache of the full-attention layers (the sliding-window one when the model has no other). */
  get primary(): KvCache {
    return this.groups[0]!.cache;
  }

  /**
   * The context's tokens in use: the full-attention cache's used cells, or — for a model whose
   * every layer slides (Phi-3 with a window), whose cache reuses cells — the positions its
   * sequences hold (one past each one's last), so a context of nCtx tokens still ends at nCtx.
   */
  used(): number {
    const full = this.group("full");
    if (full) return full.cache.used();
    const c = this.primary;
    let n = 0;
    for (let s = 0; s < c.nSeqMax; s++) if (c.seqCount(s) > 0) n += c.seqPosMax(s) + 1;
    return n;
  }

  group(g: KvGroup): KvGroupCache | undefined {
    return this.groups.find((x) => x.group === g);
  }

  /**
   * Cells for a micro-batch in every cache. A sliding-window cache without room first frees the
   * cells no query of this batch, nor any later one, can see. On no room anywhere, nothing stays allocated.
   */
  allocate(batch: readonly KvToken[]): { ok: true; cells: Int32Array[] } | { ok: false; free: number } {
    const out: Int32Array[] = [];
    for (const g of this.groups) {
      let slot = kvCall(() => g.cache.allocate(batch));
      if (slot.status !== "ok" && g.prunes) {
        this.#prune(g, batch);
        slot = kvCall(() => g.cache.allocate(batch));
      }
      if (slot.status !== "ok") {
        this.#unwind(out.length, batch);
        return { ok: false, free: slot.free };
      }
      out.push(slot.cells);
    }
    return { ok: true, cells: out };
  }

  /** Removes the batch's tokens from the first `n` caches again. */
  #unwind(n: number, batch: readonly KvToken[]): void {
    for (let i = 0; i < n; i++)
      for (const t of batch) for (const s of t.seqIds) this.groups[i]!.cache.seqRm(s, t.pos, t.pos + 1);
  }

  /**
   * Frees, in a sliding-window cache, every cell no query can see any more: a sequence's positions
   * before (its next position − window + 1), where the next position is the batch's first for
   * the sequences in it and one past the last held for the others.
   */
  #prune(g: KvGroupCache, batch: readonly KvToken[]): void {
    const first = new Map<number, number>();
    for (const t of batch) for (const s of t.seqIds) first.set(s, Math.min(first.get(s) ?? t.pos, t.pos));
    for (let s = 0; s < g.cache.nSeqMax; s++) {
      if (g.cache.seqCount(s) === 0) continue;
      const next = first.get(s) ?? g.cache.seqPosMax(s) + 1;
      const keepFrom = next - g.window + 1;
      if (keepFrom > 0) g.cache.seqRm(s, 0, keepFrom);
    }
  }

  /** Removes the given tokens from every cache (a failed decode's). */
  removeTokens(tokens: readonly KvToken[]): void {
    for (const g of this.groups)
      for (const t of tokens) for (const s of t.seqIds) g.cache.seqRm(s, t.pos, t.pos + 1);
    for (const t of tokens) for (const s of t.seqIds) this.history.forget(s);
  }

  /**
   * Whether `seq` can go on at position `n` (after its positions ≥ n are removed): every cache
   * holds what a query at n sees — in a sliding-window cache the window before n, which its
   * reuse of cells may have freed.
   */
  canContinue(seq: number, n: number): boolean {
    for (const g of this.groups) {
      if (!g.prunes || n === 0) continue;
      const lo = Math.max(0, n - g.window + 1);
      const pos = g.cache.cells.positions;
      let held = 0;
      for (let c = 0; c < g.cache.nCtx; c++)
        if (pos[c]! >= lo && pos[c]! < n && g.cache.cells.has(c, seq)) held++;
      if (held !== n - lo) return false;
    }
    return true;
  }

  seqRm(seq: number, p0: number, p1: number): void {
    for (const g of this.groups) kvCall(() => g.cache.seqRm(seq, p0, p1));
    this.history.removed(seq, p0, p1);
  }

  seqShare(src: number, dst: number, p0: number, p1: number): void {
    const wasEmpty = this.primary.seqCount(dst) === 0;
    for (const g of this.groups) kvCall(() => g.cache.seqCp(src, dst, p0, p1));
    this.history.copied(src, dst, p0, p1, wasEmpty);
  }

  seqKeep(seq: number): void {
    for (const g of this.groups) kvCall(() => g.cache.seqKeep(seq));
    this.history.keepOnly(seq);
  }

  seqAdd(seq: number, p0: number, p1: number, delta: number): void {
    for (const g of this.groups) kvCall(() => g.cache.seqAdd(seq, p0, p1, delta));
    this.history.forget(seq);
  }

  seqDiv(seq: number, p0: number, p1: number, d: number): void {
    for (const g of this.groups) kvCall(() => g.cache.seqDiv(seq, p0, p1, d));
    this.history.forget(seq);
  }

  clear(): void {
    for (const g of this.groups) g.cache.clear();
    this.history.clear();
  }
}
