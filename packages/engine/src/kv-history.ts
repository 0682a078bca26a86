/**
 * The tokens each sequence holds in the KV cache, position by position, while that is known
 * (a sequence filled from position 0 by consecutive decodes). Prefix reuse compares a new prompt
 * with it. Any operation that makes it uncertain forgets the sequence.
 */
export class KvHistory {
  readonly #tokens = new Map<number, number[]>();

  /** The known tokens of `seq` (positions 0…n-1), or undefined when unknown. */
  get(seq: number): readonly number[] | undefined {
    return this.#tokens.get(seq);
  }

  /** Records token `id` of `seq` at `pos`; a gap or a rewrite makes the sequence unknown. */
  record(seq: number, pos: number, id: number, emptyBefore: boolean): void {
    let h = this.#tokens.get(seq);
    if (h === undefined && emptyBefore && pos === 0) {
      h = [];
      this.#tokens.set(seq, h);
    }
    if (h === undefined) return;
    if (pos === h.length) h.push(id);
    else this.#tokens.delete(seq);
  }

  /** After removing positions [p0, p1) of `seq` (p1 < 0: to the end). */
  removed(seq: number, p0: number, p1: number): void {
    const h = this.#tokens.get(seq);
    if (h === undefined) return;
    if (p1 < 0 || p1 >= h.length) h.length = Math.min(h.length, p0);
    else if (p1 > p0) this.#tokens.delete(seq);
  }

  /** After copying [p0, p1) of `src` into `dst`. */
  copied(src: number, dst: number, p0: number, p1: number, dstWasEmpty: boolean): void {
    const h = this.#tokens.get(src);
    if (h !== undefined && dstWasEmpty && p0 === 0) {
      this.#tokens.set(dst, p1 < 0 ? [...h] : h.slice(0, p1));
    } else this.#tokens.delete(dst);
  }

  set(seq: number, tokens: readonly number[] | undefined): void {
    if (tokens === undefined) this.#tokens.delete(seq);
    else this.#tokens.set(seq, [...tokens]);
  }

  forget(seq: number): void {
    this.#tokens.delete(seq);
  }

  keepOnly(seq: number): void {
    for (const s of [...this.#tokens.keys()]) if (s !== seq) this.#tokens.delete(s);
  }

  clear(): void {
    this.#tokens.clear();
  }
}
