import { KvCacheError } from "./errors.js";
import { type KvCells, MAX_POS } from "./kv-cells.js";

/** One token of a micro-batch: its position and the sequences it belongs to. */
export interface KvToken {
  readonly pos: number;
  readonly seqIds: readonly number[];
}

/** A micro-batch: one K/V row (one cell) per token. */
export type KvBatch = readonly KvToken[];

/**
 * Validates a micro-batch against the cells: positions are integers in [0, 2^31), every token has
 * one or more distinct sequence ids in [0, nSeqMax). With `checkDuplicates`, a token whose
 * (sequence, position) already has a cell, or appears twice in the batch, is DUPLICATE_POSITION.
 * `lastPos` is scratch of length nSeqMax (no allocation).
 */
export function validateBatch(
  cells: KvCells,
  batch: KvBatch,
  checkDuplicates: boolean,
  lastPos: Int32Array,
): void {
  if (!Array.isArray(batch)) {
    throw new KvCacheError("BAD_BATCH", "the batch must be an array of { pos, seqIds }", {
      argument: "batch",
    });
  }
  const n = batch.length;
  if (checkDuplicates) lastPos.fill(-1);
  for (let i = 0; i < n; i++) {
    const t = batch[i];
    if (t === null || typeof t !== "object") {
      throw new KvCacheError("BAD_BATCH", `batch[${i}] is not a token`, { argument: `batch[${i}]` });
    }
    const pos = t.pos;
    if (typeof pos !== "number" || !Number.isInteger(pos) || pos < 0 || pos > MAX_POS) {
      throw new KvCacheError(
        "BAD_POSITION",
        `batch[${i}].pos = ${String(pos)} is not an integer in [0, 2^31)`,
        {
          argument: `batch[${i}].pos`,
        },
      );
    }
    const ids = t.seqIds;
    if (!Array.isArray(ids) || ids.length === 0) {
      throw new KvCacheError("BAD_BATCH", `batch[${i}].seqIds must name one or more sequences`, {
        argument: `batch[${i}].seqIds`,
      });
    }
    for (let j = 0; j < ids.length; j++) {
      const s = ids[j];
      if (typeof s !== "number" || !Number.isInteger(s) || s < 0 || s >= cells.nSeqMax) {
        throw new KvCacheError(
          "BAD_SEQ_ID",
          `batch[${i}].seqIds[${j}] = ${String(s)} is not a sequence id in [0, ${cells.nSeqMax})`,
          { argument: `batch[${i}].seqIds[${j}]` },
        );
      }
      for (let k = 0; k < j; k++) {
        if (ids[k] === s) {
          throw new KvCacheError("BAD_BATCH", `batch[${i}].seqIds names sequence ${s} twice`, {
            argument: `batch[${i}].seqIds[${j}]`,
          });
        }
      }
      if (!checkDuplicates) continue;
      // Within the batch: positions per sequence usually ascend; only look back when they do not.
      if (pos > lastPos[s]!) lastPos[s] = pos;
      else if (seenBefore(batch, i, s, pos)) {
        throw new KvCacheError("DUPLICATE_POSITION", `sequence ${s} has position ${pos} twice in the batch`, {
          argument: `batch[${i}].pos`,
        });
      }
      // In the cache: only scan when pos lies within the sequence's range (never in append-only decode).
      const c = findCell(cells, s, pos);
      if (c >= 0) {
        throw new KvCacheError(
          "DUPLICATE_POSITION",
          `sequence ${s} already has position ${pos} (cell ${c}); remove it first (seqRm)`,
          { argument: `batch[${i}].pos`, cell: c },
        );
      }
    }
  }
}

function seenBefore(batch: KvBatch, i: number, s: number, pos: number): boolean {
  for (let k = 0; k < i; k++) {
    const t = batch[k]!;
    if (t.pos === pos && t.seqIds.includes(s)) return true;
  }
  return false;
}

/** The cell holding (seq, pos), or -1. O(1) when pos is outside the sequence's range. */
export function findCell(cells: KvCells, seq: number, pos: number): number {
  if (cells.seqCount(seq) === 0) return -1;
  if (pos < cells.seqPosMin(seq) || pos > cells.seqPosMax(seq)) return -1;
  const p = cells.positions;
  const top = cells.window();
  for (let c = 0; c < top; c++) if (p[c] === pos && cells.has(c, seq)) return c;
  return -1;
}
