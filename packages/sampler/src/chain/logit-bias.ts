import { invalidArgument } from "../errors.js";

/**
 * Adds each bias to its token's logit in `logits` (`-Infinity` bans the token). Throws
 * `INVALID_ARGUMENT` for a biased id outside the vocabulary.
 */
export function applyLogitBias(logits: Float32Array, bias: ReadonlyMap<number, number>): void {
  // every id is checked before any logit changes, so a refusal leaves `logits` as they were
  for (const id of bias.keys()) {
    if (id >= logits.length) {
      throw invalidArgument(
        "logitBias",
        `token id ${id} is outside the vocabulary (${logits.length} logits)`,
      );
    }
  }
  for (const [id, b] of bias) logits[id] = logits[id]! + b;
}
