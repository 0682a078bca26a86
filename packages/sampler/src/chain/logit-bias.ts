import { invalidArgument } from "../errors.js";

/**
 * Adds each bias to its token's logit in `logits` (`-Infinity` bans the token). Throws
 * `INVALID_ARGUMENT` for a biased id outside the vocabulary.
 */
export function applyLogitBias(logits: Float32Array, bias: ReadonlyMap<number, number>): void {
  for (const [id, b] of bias) {
    if (id >= logits.length) {
      throw invalidArgument(
        "logitBias",
        `token id ${id} is outside the vocabulary (${logits.length} logits)`,
      );
    }
    logits[id] = logits[id]! + b;
  }
}
