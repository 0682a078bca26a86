/** llama.cpp's reasoning budget: a think block ended by force after a number of tokens. */

import type { TokenConstraint } from "@minfer/sampler";

/** The tokens of the tags and of what is forced, and the budget. */
export interface ReasoningBudgetSpec {
  /** Tokens of the start tag: the block opens when they are generated in a row. */
  readonly start: readonly number[];
  /** Tokens of the end tag: the block closes when they are generated in a row. */
  readonly end: readonly number[];
  /** What is forced once the budget is spent: the budget message's tokens, then the end tag's. */
  readonly forced: readonly number[];
  /** Tokens the block may hold (0: the end is forced right after the start tag). */
  readonly budget: number;
  /** The bytes of a token (to wait for a character split across tokens to complete). */
  readonly tokenBytes: (id: number) => Uint8Array;
}

type State = "idle" | "counting" | "waiting-utf8" | "forcing" | "done";

/**
 * Whether `bytes` end on a whole UTF-8 character, as llama.cpp checks a token's piece: the last lead byte
 * within 4 bytes of the end has all its continuation bytes; no lead byte there is "not whole".
 */
function utf8Complete(bytes: Uint8Array): boolean {
  if (bytes.length === 0) return true;
  for (let back = 1; back <= Math.min(4, bytes.length); back++) {
    const b = bytes[bytes.length - back]!;
    if ((b & 0xc0) === 0x80) continue;
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return back >= need;
  }
  return false;
}

/** Matches a token sequence at the end of the tokens fed so far. */
class SequenceMatcher {
  #recent: number[] = [];
  constructor(readonly seq: readonly number[]) {}

  /** Feeds `token`; true when the sequence just completed (the matcher then starts over). */
  advance(token: number): boolean {
    const n = this.seq.length;
    if (n === 0) return false;
    this.#recent.push(token);
    if (this.#recent.length > n) this.#recent.shift();
    if (this.#recent.length === n && this.#recent.every((t, k) => t === this.seq[k])) {
      this.#recent = [];
      return true;
    }
    return false;
  }

  reset(): void {
    this.#recent = [];
  }
}

/**
 * A token constraint that counts the tokens of a think block and, when `budget` are spent, forces the
 * budget message and the end tag, one token at a time (every other token masked), as llama.cpp's
 * reasoning-budget sampler: idle until the start tag, counting until the end tag (the budget spent: if the
 * last token ended inside a UTF-8 character, the next ones may complete it first), forcing, then done until
 * another start tag opens a block with a fresh budget. `inner` (a grammar) constrains as well, every token
 * going to both. `prefill`: the prompt's tokens from its last start tag on when the prompt opened the block
 * (counted as llama.cpp feeds the generation prompt); the state after them is where `reset()` returns.
 */
export class ReasoningBudget implements TokenConstraint {
  readonly #spec: ReasoningBudgetSpec;
  readonly #inner: TokenConstraint | undefined;
  readonly #startMatch: SequenceMatcher;
  readonly #endMatch: SequenceMatcher;
  readonly #prefill: readonly number[];
  #state: State = "idle";
  #remaining = 0;
  #pos = 0;

  constructor(spec: ReasoningBudgetSpec, inner?: TokenConstraint, prefill: readonly number[] = []) {
    this.#spec = spec;
    this.#inner = inner;
    this.#startMatch = new SequenceMatcher(spec.start);
    this.#endMatch = new SequenceMatcher(spec.end);
    this.#prefill = prefill;
    this.#restart();
  }

  /** The state, for tests and diagnostics. */
  get state(): State {
    return this.#state;
  }

  #restart(): void {
    this.#state = "idle";
    this.#remaining = this.#spec.budget;
    this.#pos = 0;
    this.#startMatch.reset();
    this.#endMatch.reset();
    for (const t of this.#prefill) this.#advance(t);
  }

  #forcing(): boolean {
    return this.#state === "forcing" && this.#pos < this.#spec.forced.length;
  }

  #open(): void {
    this.#state = "counting";
    this.#remaining = this.#spec.budget;
    this.#endMatch.reset();
    if (this.#remaining <= 0) {
      this.#state = "forcing";
      this.#pos = 0;
    }
  }

  #advance(token: number): void {
    switch (this.#state) {
      case "idle":
      case "done":
        if (this.#startMatch.advance(token)) this.#open();
        return;
      case "counting":
      case "waiting-utf8": {
        if (this.#endMatch.advance(token)) {
          this.#state = "done";
          return;
        }
        const whole = utf8Complete(this.#spec.tokenBytes(token));
        if (this.#state === "counting") this.#remaining--;
        if (this.#state === "waiting-utf8" || this.#remaining <= 0) {
          this.#state = whole ? "forcing" : "waiting-utf8";
          this.#pos = 0;
          this.#endMatch.reset();
        }
        return;
      }
      case "forcing":
        this.#pos++;
        if (this.#pos >= this.#spec.forced.length) {
          this.#state = "done";
          this.#startMatch.reset();
        }
        return;
    }
  }

  allows(token: number): boolean {
    if (this.#forcing() && token !== this.#spec.forced[this.#pos]) return false;
    return this.#inner?.allows(token) ?? true;
  }

  mask(logits: Float32Array): void {
    if (this.#forcing()) {
      const keep = this.#spec.forced[this.#pos]!;
      const v = logits[keep]!;
      logits.fill(Number.NEGATIVE_INFINITY);
      logits[keep] = v;
    }
    this.#inner?.mask(logits);
  }

  accept(token: number): void {
    this.#inner?.accept(token);
    this.#advance(token);
  }

  isComplete(): boolean {
    return !this.#forcing() && (this.#inner?.isComplete() ?? true);
  }

  isExhausted(): boolean {
    return !this.#forcing() && (this.#inner?.isExhausted() ?? false);
  }

  reset(): void {
    this.#inner?.reset();
    this.#restart();
  }
}

/** What a request's think block may spend: the template's tags, llama.cpp's `--reasoning-budget` and message. */
export interface BudgetRequest {
  readonly start: string;
  readonly end: string;
  /** Tokens (>= 0). */
  readonly tokens: number;
  /** `--reasoning-budget-message`: text forced before the end tag (default none). */
  readonly message?: string;
  /** The prompt opened the block. */
  readonly open: boolean;
}

/** What `budgetFor` needs of a tokenizer (`@minfer/tokenizer`'s Tokenizer fits). */
export interface BudgetTokenizer {
  encode(text: string, options: { addSpecial: boolean; parseSpecial: boolean }): number[];
  tokenBytes(id: number): Uint8Array;
}

/** The index of the last occurrence of `seq` in `ids`, or -1. */
function lastIndexOfSeq(ids: readonly number[], seq: readonly number[]): number {
  if (seq.length === 0) return -1;
  outer: for (let i = ids.length - seq.length; i >= 0; i--) {
    for (let k = 0; k < seq.length; k++) if (ids[i + k] !== seq[k]) continue outer;
    return i;
  }
  return -1;
}

/**
 * A maker of budget constraints for one request (one per choice, each over its own `inner`): the tags and
 * message tokenized as llama-server does (special tokens parsed), and, when the prompt opened the block,
 * its tokens from the last start tag on fed first (the start tag alone if the prompt's tokens do not hold it).
 */
export function budgetFor(
  tokenizer: BudgetTokenizer,
  r: BudgetRequest,
  promptIds: readonly number[],
): (inner?: TokenConstraint) => ReasoningBudget {
  const enc = (t: string) => tokenizer.encode(t, { addSpecial: false, parseSpecial: true });
  const start = enc(r.start);
  const end = enc(r.end);
  const forced = [...(r.message ? enc(r.message) : []), ...end];
  let prefill: readonly number[] = [];
  if (r.open) {
    const at = lastIndexOfSeq(promptIds, start);
    prefill = at >= 0 ? promptIds.slice(at) : start;
  }
  const spec: ReasoningBudgetSpec = {
    start,
    end,
    forced,
    budget: r.tokens,
    tokenBytes: (id) => tokenizer.tokenBytes(id),
  };
  return (inner) => new ReasoningBudget(spec, inner, prefill);
}
