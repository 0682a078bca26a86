import { EngineError } from "./errors.js";

/** The logits a decode call returned: one row of nVocab floats per token that asked for them. */
export class Logits {
  /** Vocabulary size (row length). */
  readonly nVocab: number;
  /** The batch index of each row, ascending. */
  readonly indices: Int32Array;
  readonly #data: Float32Array;
  readonly #current: (() => boolean) | undefined;

  /**
   * `current`, when given, says whether `data` still holds these logits (a context made with
   * `reuseLogits` overwrites them at its next decode); reading them after that throws STALE_LOGITS.
   */
  constructor(nVocab: number, indices: Int32Array, data: Float32Array, current?: () => boolean) {
    this.nVocab = nVocab;
    this.indices = indices;
    this.#data = data;
    this.#current = current;
  }

  /** All rows, row-major. */
  get data(): Float32Array {
    if (this.#current && !this.#current())
      throw new EngineError(
        "STALE_LOGITS",
        "these logits were overwritten by a later decode call (the context was made with reuseLogits: " +
          "copy the rows you keep before the next decode)",
      );
    return this.#data;
  }

  /** Rows held. */
  get count(): number {
    return this.indices.length;
  }

  /** The logits of the batch's token `i` (a view); INVALID_ARGUMENT when it did not ask for them. */
  get(i: number): Float32Array {
    const r = this.#row(i);
    if (r < 0) {
      throw new EngineError(
        "INVALID_ARGUMENT",
        `no logits for batch token ${String(i)}; tokens with logits: ${Array.from(this.indices).join(", ") || "none"}`,
      );
    }
    return this.data.subarray(r * this.nVocab, (r + 1) * this.nVocab);
  }

  /** Whether batch token `i` has logits. */
  has(i: number): boolean {
    return this.#row(i) >= 0;
  }

  /** The last row (the batch's last token that asked for logits). */
  last(): Float32Array {
    if (this.count === 0) throw new EngineError("INVALID_ARGUMENT", "the batch asked for no logits");
    return this.data.subarray((this.count - 1) * this.nVocab);
  }

  #row(i: number): number {
    let lo = 0;
    let hi = this.indices.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const v = this.indices[mid]!;
      if (v === i) return mid;
      if (v < i) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }
}
