import { KvCacheError } from "./errors.js";
import type { KvBatch } from "./kv-batch.js";
import type { KvCells } from "./kv-cells.js";

/**
 * Cells for a micro-batch when each sequence has its own region of the cache (cells
 * [s·R, (s+1)·R) for sequence s, R = nCtx / nSeqMax): each token gets the lowest free cell of its
 * sequence's region, so a sequence filled in order stays one run of cells and attention can visit
 * just that run (spans) even when a batch mixes sequences. A token owned by several sequences has
 * no single region: BAD_BATCH. Returns the number of tokens placed; fewer than the batch's length
 * means a region is full (nothing is changed either way).
 */
export function findRegionalSlot(cells: KvCells, batch: KvBatch, region: number, out: Int32Array): number {
  const pos = cells.positions;
  const next = new Map<number, number>();
  for (let i = 0; i < batch.length; i++) {
    const t = batch[i]!;
    if (t.seqIds.length !== 1)
      throw new KvCacheError(
        "BAD_BATCH",
        `batch[${i}] belongs to ${t.seqIds.length} sequences; with a region per sequence a token belongs to one`,
        { argument: "batch" },
      );
    const s = t.seqIds[0]!;
    const lo = s * region;
    const hi = lo + region;
    let c = next.get(s) ?? lo;
    while (c < hi && pos[c]! >= 0) c++;
    if (c >= hi) return i;
    out[i] = c;
    next.set(s, c + 1);
  }
  return batch.length;
}

/** Free cells in sequence `seq`'s region. */
export function regionFree(cells: KvCells, seq: number, region: number): number {
  const pos = cells.positions;
  let n = 0;
  for (let c = seq * region; c < (seq + 1) * region; c++) if (pos[c]! < 0) n++;
  return n;
}
