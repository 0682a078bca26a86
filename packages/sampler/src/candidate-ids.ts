import { invalidArgument } from "./errors.js";

/**
 * The ids a sampler is told hold a row's best logits (an engine's `Logits.candidates(i)`): K ids,
 * larger logit first, lower id first on ties, NaN first (a row with a NaN has it at the front).
 * Every id outside them has a logit ≤ that of the last one, `bound`.
 */
export type CandidateIds = Int32Array | Uint32Array;

/**
 * Checks `ids` against the row they were computed from, before any stage changes it: every id is in
 * the vocabulary and the ids run best first (so none repeats). Returns the last id's logit — the
 * bound no other id exceeds — or NaN when a candidate's logit is NaN (the full path then reports
 * it). Throws `INVALID_ARGUMENT` for an id outside the vocabulary or ids out of order (they are not
 * this row's best ids: a stale row, or a backend whose TOP_K breaks ties differently).
 */
export function candidateBound(logits: Float32Array, ids: CandidateIds): number {
  return boundOf(ids, logits.length, (j) => logits[ids[j]!]!);
}

/**
 * The ids among `ids` and `extra` (those whose logit a stage changed) with a logit in `work` strictly
 * above `bound`, into `out`, sorted larger logit first, lower id first on ties, without repeats;
 * returns how many. `out` must hold ids.length + extra's size entries. Since no other id's logit
 * exceeds `bound`, the first m of them are the m best of the whole vocabulary. Returns -1 when one
 * of them is NaN (the full path then reports it). `ordered`: `ids` are in that order in `work`
 * already (checked by {@link candidateBound} on this same row, no stage changed it) and `extra` is
 * empty, so the ids above the bound keep their order and need no sort.
 */
export function idsAbove(
  work: Float32Array,
  ids: CandidateIds,
  extra: Iterable<number>,
  bound: number,
  out: Uint32Array,
  ordered = false,
): number {
  let m = 0;
  for (let j = 0; j < ids.length; j++) {
    const id = ids[j]!;
    const v = work[id]!;
    if (v > bound) out[m++] = id;
    else if (Number.isNaN(v)) return -1;
  }
  if (ordered) return m;
  for (const id of extra) {
    const v = work[id]!;
    if (v > bound) out[m++] = id;
    else if (Number.isNaN(v)) return -1;
  }
  const sorted = out.subarray(0, m).sort((a, b) => {
    const va = work[a]!;
    const vb = work[b]!;
    return va > vb ? -1 : va < vb ? 1 : a - b;
  });
  // An id both a candidate and changed by a stage appears twice, side by side.
  let u = 0;
  for (let j = 0; j < m; j++) if (u === 0 || sorted[j] !== out[u - 1]) out[u++] = sorted[j]!;
  return u;
}

/**
 * {@link candidateBound} for a row known only by its candidate ids and their logits `values` (in
 * the ids' order, e.g. an engine's `Logits.candidateLogits(i)`): the same checks against a
 * vocabulary of `nVocab`, the same result.
 */
export function candidateValuesBound(ids: CandidateIds, values: Float32Array, nVocab: number): number {
  if (!(values instanceof Float32Array) || values.length !== ids.length)
    throw invalidArgument(
      "candidateLogits",
      `must be a Float32Array of the ${ids.length} candidates' logits`,
    );
  if (!Number.isSafeInteger(nVocab) || nVocab < 1)
    throw invalidArgument("nVocab", `must be a positive integer, got ${String(nVocab)}`);
  return boundOf(ids, nVocab, (j) => values[j]!);
}

/** The checks and bound of {@link candidateBound}; `valueAt(j)`: the logit of the j-th id. */
function boundOf(ids: CandidateIds, n: number, valueAt: (j: number) => number): number {
  if (!(ids instanceof Int32Array || ids instanceof Uint32Array))
    throw invalidArgument("candidates", "must be an Int32Array or Uint32Array of token ids");
  const k = ids.length;
  if (k === 0) throw invalidArgument("candidates", "must hold at least one id");
  let prevId = -1;
  let prevV = Infinity;
  for (let j = 0; j < k; j++) {
    const id = ids[j]!;
    if (id < 0 || id >= n)
      throw invalidArgument("candidates", `id ${id} (at ${j}) is outside the vocabulary (${n} logits)`);
    const v = valueAt(j);
    if (Number.isNaN(v)) return Number.NaN;
    if (j > 0 && !(v < prevV || (v === prevV && id > prevId)))
      throw invalidArgument(
        "candidates",
        `ids must run larger logit first, lower id first on ties: id ${id} (logit ${v}) at ${j} ` +
          `follows id ${prevId} (logit ${prevV}); are they this row's?`,
      );
    prevId = id;
    prevV = v;
  }
  return prevV;
}
