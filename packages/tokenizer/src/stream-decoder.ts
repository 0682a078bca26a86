/**
 * Turns tokens arriving one at a time into text without ever emitting half of a UTF-8 character:
 * bytes of an unfinished character wait for the next token; `flush()` ends the stream (an
 * unfinished character then becomes U+FFFD).
 */
export class StreamDecoder {
  readonly #bytesOf: (id: number) => Uint8Array;
  readonly #decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
  #dropLeadingSpace: boolean;

  /**
   * @param bytesOf the bytes of a token.
   * @param dropLeadingSpace remove the space SentencePiece put before the first text.
   */
  constructor(bytesOf: (id: number) => Uint8Array, dropLeadingSpace: boolean) {
    this.#bytesOf = bytesOf;
    this.#dropLeadingSpace = dropLeadingSpace;
  }

  /** Adds a token; returns the text that is now complete (possibly empty). */
  push(id: number): string {
    let bytes = this.#bytesOf(id);
    if (bytes.length === 0) return "";
    if (this.#dropLeadingSpace) {
      this.#dropLeadingSpace = false;
      if (bytes[0] === 0x20) bytes = bytes.subarray(1);
    }
    return this.#decoder.decode(bytes, { stream: true });
  }

  /**
   * Adds tokens `ids[from..to)` at once: the same text as pushing them one by one, decoded in one
   * call (one string instead of one per token).
   */
  pushMany(ids: readonly number[], from = 0, to = ids.length): string {
    const pieces: Uint8Array[] = [];
    let total = 0;
    for (let i = from; i < to; i++) {
      let bytes = this.#bytesOf(ids[i]!);
      if (bytes.length === 0) continue;
      if (this.#dropLeadingSpace) {
        this.#dropLeadingSpace = false;
        if (bytes[0] === 0x20) bytes = bytes.subarray(1);
      }
      pieces.push(bytes);
      total += bytes.length;
    }
    const all = new Uint8Array(total);
    let at = 0;
    for (const p of pieces) {
      all.set(p, at);
      at += p.length;
    }
    return this.#decoder.decode(all, { stream: true });
  }

  /** Ends the stream and returns what was held back. */
  flush(): string {
    return this.#decoder.decode();
  }
}
