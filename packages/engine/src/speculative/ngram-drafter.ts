import { EngineError } from "../errors.js";
import type { Drafter } from "./drafter.js";

/** Options of {@link NgramDrafter}. */
export interface NgramDrafterOptions {
  /** The longest n-gram matched (tried first). Default 4. */
  readonly ngramMax?: number;
  /** The shortest n-gram matched. Default 2. */
  readonly ngramMin?: number;
}

/**
 * Draft-free drafting by n-gram lookup over the sequence itself (prompt lookup): the last n tokens
 * of the history are looked up among their earlier occurrences, longest n first, and the tokens
 * that followed the most recent occurrence are the draft. Text that repeats what came before — a
 * rewrite of a given text, code edits, quotes — gets long drafts that the target accepts.
 *
 * Each n-gram's latest start is kept in an index that grows with the history (one pass over each
 * new token), so a step costs O(ngramMax) lookups however long the sequence is.
 */
export class NgramDrafter implements Drafter {
  readonly kind = "ngram";
  readonly costPerToken = false;
  readonly #nMax: number;
  readonly #nMin: number;
  /** Per n (index n - nMin): n-gram key → the position just after its latest indexed occurrence. */
  readonly #index: Map<string, number>[];
  /** The history indexed so far (a copy of its tokens). */
  #seen: number[] = [];

  constructor(options: NgramDrafterOptions = {}) {
    const nMax = options.ngramMax ?? 4;
    const nMin = options.ngramMin ?? 2;
    const bad = (m: string) => new EngineError("INVALID_ARGUMENT", `NgramDrafter: ${m}`);
    if (!Number.isInteger(nMin) || nMin < 1)
      throw bad(`ngramMin must be an integer >= 1, got ${String(nMin)}`);
    if (!Number.isInteger(nMax) || nMax < nMin || nMax > 64)
      throw bad(`ngramMax must be an integer in [ngramMin, 64] = [${nMin}, 64], got ${String(nMax)}`);
    this.#nMax = nMax;
    this.#nMin = nMin;
    this.#index = Array.from({ length: nMax - nMin + 1 }, () => new Map());
  }

  draft(history: readonly number[], max: number): number[] {
    if (max <= 0 || history.length < this.#nMin + 1) return [];
    this.#follow(history);
    const end = history.length;
    for (let n = Math.min(this.#nMax, end - 1); n >= this.#nMin; n--) {
      const at = this.#index[n - this.#nMin]!.get(key(history, end - n, n));
      if (at === undefined) continue;
      // the tokens that followed the earlier occurrence (it ends before the history's end)
      return history.slice(at, Math.min(at + max, end)) as number[];
    }
    return [];
  }

  /**
   * Brings the index up to `history` less its last token: every n-gram that ends before the last
   * position is indexed with the position after it, so a lookup of the history's own suffix finds
   * only earlier occurrences. A history that does not extend the indexed one is indexed afresh.
   */
  #follow(history: readonly number[]): void {
    const seen = this.#seen;
    let same = seen.length <= history.length;
    for (let i = 0; same && i < seen.length; i++) same = seen[i] === history[i];
    if (!same) {
      for (const m of this.#index) m.clear();
      seen.length = 0;
    }
    // positions p (the token after an n-gram) from seen.length to history.length - 1
    const from = Math.max(seen.length, 1);
    for (let p = from; p < history.length; p++)
      for (let n = this.#nMin; n <= this.#nMax && n <= p; n++)
        this.#index[n - this.#nMin]!.set(key(history, p - n, n), p);
    for (let i = seen.length; i < history.length; i++) seen.push(history[i]!);
  }
}

function key(tokens: readonly number[], start: number, n: number): string {
  let s = "";
  for (let i = start; i < start + n; i++) s += `${tokens[i]},`;
  return s;
}
