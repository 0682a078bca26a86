/**
 * The tokens accepted so far (prompt and generated), newest last, for the penalties and DRY. Keeps at
 * most `capacity` tokens (the longest window a stage looks at), or all of them when unbounded.
 */
export class TokenHistory {
  private buf = new Uint32Array(64);
  private start = 0;
  private end = 0;

  /** @param capacity the most tokens any stage looks back at; `Infinity` keeps all. */
  constructor(private readonly capacity: number) {}

  /** How many tokens are held. */
  get length(): number {
    return this.end - this.start;
  }

  /** Appends `token`, dropping the oldest beyond the capacity. */
  push(token: number): void {
    if (this.capacity === 0) return;
    if (this.end === this.buf.length) {
      const len = this.length;
      // Slide down when the front half is free; else grow.
      const next = len * 2 <= this.buf.length ? this.buf : new Uint32Array(this.buf.length * 2);
      next.set(this.buf.subarray(this.start, this.end), 0);
      this.buf = next;
      this.start = 0;
      this.end = len;
    }
    this.buf[this.end++] = token;
    if (this.length > this.capacity) this.start++;
  }

  /** The last `n` tokens (all when n is -1 or more than held), oldest first; a view, valid until the next push. */
  last(n: number): Uint32Array {
    const len = this.length;
    const k = n < 0 || n > len ? len : n;
    return this.buf.subarray(this.end - k, this.end);
  }

  /** Forgets every token. */
  clear(): void {
    this.start = 0;
    this.end = 0;
  }
}
