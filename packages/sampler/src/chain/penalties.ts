/** Repetition, frequency and presence penalties (llama.cpp's `penalties` sampler). */

/** The penalty settings; see {@link SamplerOptions}. */
export interface PenaltySettings {
  readonly repeatPenalty: number;
  readonly presencePenalty: number;
  readonly frequencyPenalty: number;
}

/** Whether the penalties change anything. */
export function penaltiesOn(s: PenaltySettings): boolean {
  return s.repeatPenalty !== 1 || s.presencePenalty !== 0 || s.frequencyPenalty !== 0;
}

/**
 * Penalizes, in `logits`, every token that occurs in `window` (ids outside the vocabulary are
 * skipped). For a token seen `c` times: a positive logit is divided by `repeatPenalty` and a
 * non-positive one multiplied by it; then `c · frequencyPenalty + presencePenalty` is subtracted.
 * Touches only those tokens' logits; `counts` is reusable scratch.
 */
export function applyPenalties(
  logits: Float32Array,
  window: Uint32Array,
  s: PenaltySettings,
  counts: Map<number, number>,
): void {
  counts.clear();
  for (let i = 0; i < window.length; i++) {
    const t = window[i]!;
    counts.set(t, (counts.get(t) ?? 0) + 1);
  }
  const n = logits.length;
  for (const [t, c] of counts) {
    if (t >= n) continue;
    let v = logits[t]!;
    v = v <= 0 ? v * s.repeatPenalty : v / s.repeatPenalty;
    logits[t] = v - c * s.frequencyPenalty - s.presencePenalty;
  }
}
