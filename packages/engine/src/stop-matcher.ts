/**
 * Holds generated text back while it might be the start of a stop string, so a stop string is
 * never streamed out even when it spans several tokens.
 */
export class StopMatcher {
  readonly #stops: readonly string[];
  #pending = "";

  constructor(stops: readonly string[]) {
    this.#stops = stops.filter((s) => s.length > 0);
  }

  /**
   * Adds text; returns what can be released and whether a stop string was found (then `text`
   * is everything before it and the rest is dropped).
   */
  push(text: string): { text: string; stopped: boolean; stop?: string } {
    this.#pending += text;
    if (this.#stops.length === 0) {
      const out = this.#pending;
      this.#pending = "";
      return { text: out, stopped: false };
    }
    let at = -1;
    let found: string | undefined;
    for (const s of this.#stops) {
      const i = this.#pending.indexOf(s);
      if (i >= 0 && (at < 0 || i < at)) {
        at = i;
        found = s;
      }
    }
    if (found !== undefined) {
      const out = this.#pending.slice(0, at);
      this.#pending = "";
      return { text: out, stopped: true, stop: found };
    }
    const keep = this.#heldBack();
    const out = this.#pending.slice(0, this.#pending.length - keep);
    this.#pending = this.#pending.slice(this.#pending.length - keep);
    return { text: out, stopped: false };
  }

  /** The text still held back (at the end of generation it is released). */
  flush(): string {
    const out = this.#pending;
    this.#pending = "";
    return out;
  }

  /** The longest suffix of the pending text that is a proper prefix of a stop string. */
  #heldBack(): number {
    const p = this.#pending;
    let best = 0;
    for (const s of this.#stops) {
      for (let k = Math.min(s.length - 1, p.length); k > best; k--) {
        if (p.endsWith(s.slice(0, k))) {
          best = k;
          break;
        }
      }
    }
    return best;
  }
}
