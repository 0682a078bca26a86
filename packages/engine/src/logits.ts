import { EngineError } from "./errors.js";

/** The logits a decode call returned: one row of nVocab floats per token that asked for them. */
export class Logits {
  /** Vocabulary size (row length). */
  readonly nVocab: number;
  /** The batch index of each row, ascending. */
  readonly indices: Int32Array;
  /** Candidate ids per row (the context's `candidates`); 0 when the context computes none. */
  readonly nCandidates: number;
  /** Whether the rows were read back (false after a `candidatesOnly` decode: see {@link fetch}). */
  readonly rowsRead: boolean;
  readonly #data: Float32Array;
  readonly #current: (() => boolean) | undefined;
  readonly #candidates: Int32Array | undefined;
  readonly #candidateLogits: Float32Array | undefined;
  readonly #onDevice: ((row: number) => Promise<Float32Array>) | undefined;

  /**
   * `current`, when given, says whether `data` still holds these logits (a context made with
   * `reuseLogits` overwrites them at its next decode); reading them after that throws STALE_LOGITS.
   * `candidates`: `k` ids per row, row-major (I32 [k, rows]), each row's best ids, best first, and
   * (`logits`, F32 [k, rows]) their logits. `onDevice`, when given, says the rows were not read
   * back (`data` is empty) and reads row r from the device.
   */
  constructor(
    nVocab: number,
    indices: Int32Array,
    data: Float32Array,
    current?: () => boolean,
    candidates?: { readonly k: number; readonly data: Int32Array; readonly logits?: Float32Array },
    onDevice?: (row: number) => Promise<Float32Array>,
  ) {
    this.nVocab = nVocab;
    this.indices = indices;
    this.#data = data;
    this.#current = current;
    this.nCandidates = candidates?.k ?? 0;
    this.#candidates = candidates?.data;
    this.#candidateLogits = candidates?.logits;
    this.#onDevice = onDevice;
    this.rowsRead = onDevice === undefined;
  }

  /** All rows, row-major; LOGITS_NOT_READ after a `candidatesOnly` decode. */
  get data(): Float32Array {
    if (!this.rowsRead)
      throw new EngineError(
        "LOGITS_NOT_READ",
        "this decode read back only the candidates (candidatesOnly): use candidates(i) and candidateLogits(i), or await fetch(i) for a row",
      );
    this.#checkCurrent();
    return this.#data;
  }

  #checkCurrent(): void {
    if (this.#current && !this.#current())
      throw new EngineError(
        "STALE_LOGITS",
        "these logits were overwritten by a later decode call (the context was made with reuseLogits: " +
          "copy the rows you keep before the next decode)",
      );
  }

  /** Rows held. */
  get count(): number {
    return this.indices.length;
  }

  /** The logits of the batch's token `i` (a view); INVALID_ARGUMENT when it did not ask for them. */
  get(i: number): Float32Array {
    const r = this.#rowOf(i);
    return this.data.subarray(r * this.nVocab, (r + 1) * this.nVocab);
  }

  /** The row of batch token `i`; INVALID_ARGUMENT when it did not ask for logits. */
  #rowOf(i: number): number {
    const r = this.#row(i);
    if (r < 0) {
      throw new EngineError(
        "INVALID_ARGUMENT",
        `no logits for batch token ${String(i)}; tokens with logits: ${Array.from(this.indices).join(", ") || "none"}`,
      );
    }
    return r;
  }

  /**
   * The candidate ids of batch token `i`'s logits (a view of {@link nCandidates} ids): its largest
   * logits, larger first, lower id first on ties, as the graph computed them. INVALID_ARGUMENT
   * when the context computes no candidates (`ContextOptions.candidates`) or token `i` did not ask
   * for logits; STALE_LOGITS like {@link data}.
   */
  candidates(i: number): Int32Array {
    if (!this.#candidates)
      throw new EngineError(
        "INVALID_ARGUMENT",
        "these logits have no candidate ids: make the Context with the option candidates: K",
      );
    const r = this.#rowOf(i);
    this.#checkCurrent();
    const k = this.nCandidates;
    return this.#candidates.subarray(r * k, (r + 1) * k);
  }

  /**
   * The logits of {@link candidates}(i), in that order (a view of {@link nCandidates} floats), as
   * the graph gathered them from the row. Errors as {@link candidates}.
   */
  candidateLogits(i: number): Float32Array {
    if (!this.#candidateLogits)
      throw new EngineError(
        "INVALID_ARGUMENT",
        "these logits have no candidate logits: make the Context with the option candidates: K",
      );
    const r = this.#rowOf(i);
    this.#checkCurrent();
    const k = this.nCandidates;
    return this.#candidateLogits.subarray(r * k, (r + 1) * k);
  }

  /**
   * The logits of batch token `i`: {@link get}(i) when the rows were read back, else read from the
   * device now (a new array; STALE_LOGITS once a later decode call ran on the context).
   */
  async fetch(i: number): Promise<Float32Array> {
    if (this.rowsRead) return this.get(i);
    return this.#onDevice!(this.#rowOf(i));
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
