import type { ConstraintVocab, TokenConstraint } from "../constraint.js";
import { SamplerError } from "../errors.js";
import { DEAD, type Matcher } from "./stacks.js";
import { type VocabIndex, vocabIndex } from "./token-trie.js";
import { INVALID, NO_PARTIAL, utf8Step } from "./utf8.js";

/** How many states' masks a constraint keeps (a bitmap of vocab.size bits each). */
const MASK_CACHE_SIZE = 64;

/**
 * A {@link TokenConstraint} that keeps generated text inside a grammar, as llama.cpp's grammar
 * sampler does: a token is allowed when every one of its bytes can be consumed (it may span several
 * grammar elements, and end inside a UTF-8 character that can still complete to an allowed code
 * point — that partial character carries over to the next token). End-of-generation tokens are
 * allowed exactly when the match is complete; other tokens with no bytes never are.
 */
export class GrammarConstraint implements TokenConstraint {
  private readonly matcher: Matcher;
  private readonly vocab: VocabIndex;
  private state: number;
  private partial = NO_PARTIAL;
  private readonly tmp = new Int32Array(1);
  /** Masks of recent states, keyed by `state * 2^21 + partial`; oldest first (Map order). */
  private readonly masks = new Map<number, Uint32Array>();
  /** Walk scratch: the state and partial character at each trie depth. */
  private readonly walkState: Int32Array;
  private readonly walkPartial: Int32Array;

  constructor(matcher: Matcher, vocab: ConstraintVocab) {
    this.matcher = matcher;
    this.vocab = vocabIndex(vocab);
    this.state = matcher.initial;
    this.walkState = new Int32Array(this.vocab.trie.maxDepth + 1);
    this.walkPartial = new Int32Array(this.vocab.trie.maxDepth + 1);
  }

  allows(token: number): boolean {
    const v = this.vocab;
    if (!(token >= 0 && token < v.size)) return false;
    if (v.isEog[token] === 1) return this.isComplete();
    const cached = this.masks.get(this.key());
    if (cached) return (cached[token >>> 5]! & (1 << (token & 31))) !== 0;
    const bytes = v.bytes[token]!;
    return bytes.length > 0 && this.matcher.feed(this.state, this.partial, bytes, this.tmp) !== DEAD;
  }

  mask(logits: Float32Array): void {
    const bits = this.allowedBits();
    const n = Math.min(logits.length, this.vocab.size);
    for (let i = 0; i < n; i++) {
      if ((bits[i >>> 5]! & (1 << (i & 31))) === 0) logits[i] = -Infinity;
    }
    for (let i = n; i < logits.length; i++) logits[i] = -Infinity;
  }

  accept(token: number): void {
    const v = this.vocab;
    if (!(token >= 0 && token < v.size)) {
      throw new SamplerError(
        "GRAMMAR_REJECTED",
        `token ${token} is outside the vocabulary of ${v.size}`,
        "token",
      );
    }
    if (v.isEog[token] === 1) {
      if (!this.isComplete()) {
        throw new SamplerError(
          "GRAMMAR_REJECTED",
          `end-of-generation token ${token} before the grammar is complete`,
          "token",
        );
      }
      return;
    }
    const bytes = v.bytes[token]!;
    const next = bytes.length === 0 ? DEAD : this.matcher.feed(this.state, this.partial, bytes, this.tmp);
    if (next === DEAD) {
      throw new SamplerError(
        "GRAMMAR_REJECTED",
        bytes.length === 0
          ? `token ${token} has no text (a control token) and the grammar allows none`
          : `token ${token} (${JSON.stringify(new TextDecoder().decode(bytes))}) does not fit the grammar here`,
        "token",
      );
    }
    this.state = next;
    this.partial = this.tmp[0]!;
  }

  isComplete(): boolean {
    return this.partial === NO_PARTIAL && this.matcher.isComplete(this.state);
  }

  isExhausted(): boolean {
    return this.partial === NO_PARTIAL && !this.matcher.isLive(this.state);
  }

  reset(): void {
    this.state = this.matcher.initial;
    this.partial = NO_PARTIAL;
  }

  /** Drops the cached masks (the next mask() walks the vocabulary again; for benchmarks). */
  clearMaskCache(): void {
    this.masks.clear();
  }

  private key(): number {
    return this.state * 2 ** 21 + this.partial;
  }

  /** The allowed tokens of the current state as a bitmap, cached for recent states. */
  private allowedBits(): Uint32Array {
    const key = this.key();
    let bits = this.masks.get(key);
    if (bits) {
      this.masks.delete(key);
      this.masks.set(key, bits);
      return bits;
    }
    if (this.masks.size >= MASK_CACHE_SIZE) {
      const oldest = this.masks.keys().next().value!;
      bits = this.masks.get(oldest)!.fill(0);
      this.masks.delete(oldest);
    } else {
      bits = new Uint32Array((this.vocab.size + 31) >>> 5);
    }
    this.walk(bits);
    const complete = this.isComplete();
    for (const id of this.vocab.eog) {
      if (complete) bits[id >>> 5]! |= 1 << (id & 31);
      else bits[id >>> 5]! &= ~(1 << (id & 31));
    }
    this.masks.set(key, bits);
    return bits;
  }

  /**
   * Walks the token trie once from the current state, setting the bit of every token whose bytes
   * all go through; a subtree is skipped as soon as its prefix is refused.
   */
  private walk(bits: Uint32Array): void {
    const { byte, depth, end, first, count, ids, nodeCount } = this.vocab.trie;
    const m = this.matcher;
    const ws = this.walkState;
    const wp = this.walkPartial;
    ws[0] = this.state;
    wp[0] = this.partial;
    let i = 1;
    while (i < nodeCount) {
      const d = depth[i]!;
      const p = wp[d - 1]!;
      const r = utf8Step(p, byte[i]!);
      let s = ws[d - 1]!;
      if (r >= 0) {
        s = m.next(s, r);
        if (s === DEAD) {
          i = end[i]!;
          continue;
        }
        wp[d] = NO_PARTIAL;
      } else if (r === INVALID || !m.partialOk(s, -r)) {
        i = end[i]!;
        continue;
      } else {
        wp[d] = -r;
      }
      ws[d] = s;
      const c = count[i]!;
      if (c > 0) {
        const f = first[i]!;
        for (let k = 0; k < c; k++) {
          const id = ids[f + k]!;
          bits[id >>> 5]! |= 1 << (id & 31);
        }
      }
      i++;
    }
  }
}
