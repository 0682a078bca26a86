// SentencePiece BPE ("llama" tokenizer model), with the behaviour of llama.cpp's SPM tokenizer:
// the text is cut into characters, adjacent symbols are merged greedily by the score of the
// token they form, and characters that never became a token fall back to byte tokens.
import { TokenizerError } from "./errors.js";
import { TokenType, type Vocab } from "./vocab.js";

/** U+2581 LOWER ONE EIGHTH BLOCK, SentencePiece's stand-in for a space. */
const SPACE_MARK = "\u2581";

const utf8 = new TextEncoder();

const HASH_BASE = 0x01000193;
const HASH_MIX = 0x9e3779b1 | 0;

/** Polynomial hash of the UTF-16 code units, mod 2^32: h(a + b) = h(a) * BASE^|b| + h(b). */
function hashOf(t: string): number {
  let h = 0;
  for (let i = 0; i < t.length; i++) h = (Math.imul(h, HASH_BASE) + t.charCodeAt(i)) | 0;
  return h;
}

/** Lone surrogates become U+FFFD, as they would on the way to UTF-8. */
function wellFormed(text: string): string {
  return text.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "\uFFFD");
}

function hasLoneSurrogate(text: string): boolean {
  return /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);
}

/** Parses a byte token text `<0xXX>`; -1 when the text is not one. */
function byteOfToken(text: string): number {
  if (text.length !== 6 || !text.startsWith("<0x") || text[5] !== ">") return -1;
  const hex = text.slice(3, 5);
  if (!/^[0-9A-Fa-f]{2}$/.test(hex)) return -1;
  return Number.parseInt(hex, 16);
}

function growInt32(a: Int32Array, need: number): Int32Array {
  if (a.length >= need) return a;
  const b = new Int32Array(Math.max(need, a.length * 2));
  b.set(a);
  return b;
}

function growFloat64(a: Float64Array, need: number): Float64Array {
  if (a.length >= need) return a;
  const b = new Float64Array(Math.max(need, a.length * 2));
  b.set(a);
  return b;
}

/**
 * Encodes text fragments with a SentencePiece BPE vocabulary.
 *
 * `encode` takes one raw fragment: special tokens are already split out, and the caller has
 * already put the prefix space in front when `add_space_prefix` asks for one.
 * One encoder reuses its work arrays between calls; it is not for concurrent use (JS has none).
 */
export class SpmEncoder {
  private readonly tokens: readonly string[];
  private readonly scores: Float32Array | undefined;
  /** Token id of each single UTF-16 code unit that is a token by itself; -1 where none. */
  private readonly unitIds: Int32Array;
  /** 1 for each UTF-16 code unit that occurs in some token of two or more characters. */
  private readonly inMulti: Uint8Array;
  /** Id of `<0xXX>` for every byte; -1 where the vocabulary lacks it. */
  private readonly byteIds: Int32Array;
  private readonly unk: number | undefined;
  /** Longest token text, in UTF-16 code units: longer pairs need no look-up. */
  private readonly maxLen: number;
  /**
   * Token texts by polynomial hash of their code units (open addressing): a pair of symbols is
   * looked up from the symbols' hashes, without building the pair's string.
   */
  private readonly tabHash: Int32Array;
  private readonly tabId: Int32Array;
  private readonly tabShift: number;
  /** HASH_BASE ** k (mod 2^32), k up to maxLen. */
  private readonly pow: Int32Array;

  // Symbols: a doubly linked list over the text; a merged-away symbol has len 0.
  private symStart: Int32Array = new Int32Array(256);
  private symLen: Int32Array = new Int32Array(256);
  private symPrev: Int32Array = new Int32Array(256);
  private symNext: Int32Array = new Int32Array(256);
  /** Token id of the symbol's text; -1 when it is no token (a character left for byte fallback). */
  private symId: Int32Array = new Int32Array(256);
  private symHash: Int32Array = new Int32Array(256);

  // Candidate merges: a pool of entries, and a binary heap of pool indices.
  private bgLeft: Int32Array = new Int32Array(256);
  private bgRight: Int32Array = new Int32Array(256);
  private bgSize: Int32Array = new Int32Array(256);
  private bgId: Int32Array = new Int32Array(256);
  private bgHash: Int32Array = new Int32Array(256);
  private bgScore: Float64Array = new Float64Array(256);
  private heap: Int32Array = new Int32Array(256);
  private nPool = 0;
  private nHeap = 0;

  constructor(vocab: Vocab) {
    this.tokens = vocab.tokens;
    this.scores = vocab.scores;
    this.unk = vocab.special.unk;
    this.unitIds = new Int32Array(0x10000).fill(-1);
    this.byteIds = new Int32Array(256).fill(-1);
    let maxLen = 1;
    const tokens = vocab.tokens;
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i]!;
      if (t.length > maxLen) maxLen = t.length;
    }
    this.inMulti = new Uint8Array(0x10000);
    for (const [t, id] of vocab.ids) {
      const chars = t.length === 1 ? 1 : t.length === 2 && t.codePointAt(0)! > 0xffff ? 1 : 2;
      if (chars > 1) for (let k = 0; k < t.length; k++) this.inMulti[t.charCodeAt(k)] = 1;
      if (t.length === 1 && this.unitIds[t.charCodeAt(0)] === -1) this.unitIds[t.charCodeAt(0)] = id;
      const b = byteOfToken(t);
      if (b >= 0 && vocab.types[id] === TokenType.BYTE && this.byteIds[b] === -1) this.byteIds[b] = id;
    }
    // Byte tokens not typed BYTE (files without token types) still count, as in llama.cpp.
    for (let b = 0; b < 256; b++) {
      if (this.byteIds[b] !== -1) continue;
      const id = vocab.ids.get(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
      if (id !== undefined) this.byteIds[b] = id;
    }
    this.maxLen = maxLen;
    this.pow = new Int32Array(maxLen + 1);
    this.pow[0] = 1;
    for (let k = 1; k <= maxLen; k++) this.pow[k] = Math.imul(this.pow[k - 1]!, HASH_BASE);
    let bits = 4;
    while (1 << bits < vocab.ids.size * 4) bits++;
    this.tabShift = 32 - bits;
    this.tabHash = new Int32Array(1 << bits);
    this.tabId = new Int32Array(1 << bits).fill(-1);
    const mask = (1 << bits) - 1;
    for (const [t, id] of vocab.ids) {
      const h = hashOf(t);
      let slot = Math.imul(h, HASH_MIX) >>> this.tabShift;
      while (this.tabId[slot] !== -1) slot = (slot + 1) & mask;
      this.tabHash[slot] = h;
      this.tabId[slot] = id;
    }
  }

  /** Id of the token whose text is s[from, from + len) and hashes to h; -1 when none. */
  private find(s: string, from: number, len: number, h: number): number {
    const tabHash = this.tabHash;
    const tabId = this.tabId;
    const mask = tabId.length - 1;
    for (let slot = Math.imul(h, HASH_MIX) >>> this.tabShift; ; slot = (slot + 1) & mask) {
      const id = tabId[slot]!;
      if (id === -1) return -1;
      if (tabHash[slot] !== h) continue;
      const t = this.tokens[id]!;
      if (t.length !== len) continue;
      let k = 0;
      while (k < len && t.charCodeAt(k) === s.charCodeAt(from + k)) k++;
      if (k === len) return id;
    }
  }

  /** Appends the token ids of `text` to `out`. */
  encode(text: string, out: number[]): void {
    if (text.length === 0) return;
    if (hasLoneSurrogate(text)) text = wellFormed(text);
    const s = text.replaceAll(" ", SPACE_MARK);
    const n = s.length;

    // Split into characters (a surrogate pair is one character).
    this.ensureSymbols(n);
    const start = this.symStart;
    const len = this.symLen;
    const prev = this.symPrev;
    const next = this.symNext;
    const symId = this.symId;
    const symHash = this.symHash;
    const unitIds = this.unitIds;
    let count = 0;
    for (let i = 0; i < n; ) {
      const c = s.charCodeAt(i);
      const w = c >= 0xd800 && c <= 0xdbff && i + 1 < n ? 2 : 1;
      start[count] = i;
      len[count] = w;
      prev[count] = count - 1;
      next[count] = count + 1;
      if (w === 1) {
        symId[count] = unitIds[c]!;
        symHash[count] = c;
      } else {
        const h = (Math.imul(c, HASH_BASE) + s.charCodeAt(i + 1)) | 0;
        symHash[count] = h;
        symId[count] = this.find(s, i, 2, h);
      }
      count++;
      i += w;
    }
    next[count - 1] = -1;

    // A character that occurs in no token of two or more characters never merges, so the
    // runs between such characters are merged independently: the same result as one queue over
    // the whole text (merges of different runs never meet), with a small, cache-friendly queue.
    const inMulti = this.inMulti;
    let runStart = 0;
    for (let i = 0; i <= count; i++) {
      if (i < count) {
        const c = s.charCodeAt(start[i]!);
        if (inMulti[c] === 1 && (len[i] === 1 || inMulti[s.charCodeAt(start[i]! + 1)] === 1)) continue;
      }
      if (i - runStart >= 2) this.mergeRun(s, runStart, i);
      runStart = i + 1;
    }

    // Emit. Every merged symbol is a token by construction, so what llama.cpp's resegment
    // would split again can only be a single character that is no token: it goes out as bytes.
    for (let i = 0; i !== -1; i = next[i]!) {
      const id = symId[i]!;
      if (id >= 0) out.push(id);
      else this.byteFallback(s.codePointAt(start[i]!)!, out);
    }
  }

  /** Runs the merges over symbols [from, to), which are still single characters. */
  private mergeRun(s: string, from: number, to: number): void {
    this.nPool = 0;
    this.nHeap = 0;
    // Seed the queue with every adjacent pair that forms a token.
    for (let i = from + 1; i < to; i++) this.tryAddBigram(s, i - 1, i);

    // Merge the best pair until none is left.
    // (The pool arrays may be reallocated by tryAddBigram, so they are read through `this`.)
    const len = this.symLen;
    const prev = this.symPrev;
    const next = this.symNext;
    while (this.nHeap > 0) {
      const e = this.pop();
      const l = this.bgLeft[e]!;
      const r = this.bgRight[e]!;
      const ll = len[l]!;
      const rl = len[r]!;
      // Stale: one side was merged away or has grown since the pair was queued.
      if (ll === 0 || rl === 0 || ll + rl !== this.bgSize[e]) continue;
      len[l] = ll + rl;
      len[r] = 0;
      this.symId[l] = this.bgId[e]!;
      this.symHash[l] = this.bgHash[e]!;
      const rn = next[r]!;
      next[l] = rn;
      if (rn >= 0) prev[rn] = l;
      this.tryAddBigram(s, prev[l]!, l);
      this.tryAddBigram(s, l, rn);
    }
  }

  private byteFallback(cp: number, out: number[]): void {
    const b = this.byteIds;
    let b0: number;
    let b1 = -1;
    let b2 = -1;
    let b3 = -1;
    if (cp < 0x80) {
      b0 = b[cp]!;
    } else if (cp < 0x800) {
      b0 = b[0xc0 | (cp >> 6)]!;
      b1 = b[0x80 | (cp & 0x3f)]!;
    } else if (cp < 0x10000) {
      b0 = b[0xe0 | (cp >> 12)]!;
      b1 = b[0x80 | ((cp >> 6) & 0x3f)]!;
      b2 = b[0x80 | (cp & 0x3f)]!;
    } else {
      b0 = b[0xf0 | (cp >> 18)]!;
      b1 = b[0x80 | ((cp >> 12) & 0x3f)]!;
      b2 = b[0x80 | ((cp >> 6) & 0x3f)]!;
      b3 = b[0x80 | (cp & 0x3f)]!;
    }
    const nb = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (b0 >= 0 && (nb < 2 || b1 >= 0) && (nb < 3 || b2 >= 0) && (nb < 4 || b3 >= 0)) {
      out.push(b0);
      if (nb >= 2) out.push(b1);
      if (nb >= 3) out.push(b2);
      if (nb >= 4) out.push(b3);
      return;
    }
    if (this.unk === undefined) {
      throw new TokenizerError(
        "BAD_VOCAB",
        `character U+${cp.toString(16).toUpperCase().padStart(4, "0")} is not in the vocabulary, which has neither byte tokens for it nor an unknown token`,
      );
    }
    out.push(this.unk);
  }

  private tryAddBigram(s: string, left: number, right: number): void {
    if (left < 0 || right < 0) return;
    const size = this.symLen[left]! + this.symLen[right]!;
    if (size > this.maxLen) return;
    const rl = this.symLen[right]!;
    const h = (Math.imul(this.symHash[left]!, this.pow[rl]!) + this.symHash[right]!) | 0;
    const id = this.find(s, this.symStart[left]!, size, h);
    if (id === -1) return;
    const e = this.nPool++;
    if (e >= this.bgLeft.length) this.growPool(e + 1);
    this.bgLeft[e] = left;
    this.bgRight[e] = right;
    this.bgSize[e] = size;
    this.bgId[e] = id;
    this.bgHash[e] = h;
    this.bgScore[e] = this.scores ? this.scores[id]! : 0;
    this.push(e);
  }

  /** True when entry a comes out before entry b: higher score, then further left. */
  private before(a: number, b: number): boolean {
    const sa = this.bgScore[a]!;
    const sb = this.bgScore[b]!;
    return sa > sb || (sa === sb && this.bgLeft[a]! < this.bgLeft[b]!);
  }

  private push(e: number): void {
    if (this.nHeap >= this.heap.length) this.heap = growInt32(this.heap, this.nHeap + 1);
    const h = this.heap;
    let i = this.nHeap++;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const pe = h[p]!;
      if (!this.before(e, pe)) break;
      h[i] = pe;
      i = p;
    }
    h[i] = e;
  }

  private pop(): number {
    const h = this.heap;
    const top = h[0]!;
    const n = --this.nHeap;
    if (n > 0) {
      const e = h[n]!;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        const c = r < n && this.before(h[r]!, h[l]!) ? r : l;
        const ce = h[c]!;
        if (!this.before(ce, e)) break;
        h[i] = ce;
        i = c;
      }
      h[i] = e;
    }
    return top;
  }

  private ensureSymbols(n: number): void {
    if (this.symStart.length >= n) return;
    this.symStart = growInt32(this.symStart, n);
    this.symLen = growInt32(this.symLen, n);
    this.symPrev = growInt32(this.symPrev, n);
    this.symNext = growInt32(this.symNext, n);
    this.symId = growInt32(this.symId, n);
    this.symHash = growInt32(this.symHash, n);
  }

  private growPool(need: number): void {
    this.bgLeft = growInt32(this.bgLeft, need);
    this.bgRight = growInt32(this.bgRight, need);
    this.bgSize = growInt32(this.bgSize, need);
    this.bgId = growInt32(this.bgId, need);
    this.bgHash = growInt32(this.bgHash, need);
    this.bgScore = growFloat64(this.bgScore, need);
  }
}

/**
 * The bytes token `id` stands for (llama.cpp's piece of a SentencePiece token, specials not
 * rendered): normal tokens give their text with U+2581 as space, byte tokens `<0xXX>` their
 * byte, user-defined tokens their text as is; control, unknown and unused tokens give nothing.
 */
export function spmTokenToPiece(vocab: Vocab, id: number): Uint8Array {
  if (!Number.isInteger(id) || id < 0 || id >= vocab.tokens.length) {
    throw new TokenizerError(
      "BAD_TOKEN_ID",
      `token id ${id} is outside the vocabulary of ${vocab.tokens.length} tokens`,
      {
        detail: id,
      },
    );
  }
  const text = vocab.tokens[id]!;
  switch (vocab.types[id]) {
    case TokenType.NORMAL:
      return utf8.encode(text.replaceAll(SPACE_MARK, " "));
    case TokenType.BYTE: {
      const b = byteOfToken(text);
      return b >= 0 ? Uint8Array.of(b) : utf8.encode(text);
    }
    case TokenType.USER_DEFINED:
      return utf8.encode(text);
    default:
      return new Uint8Array(0);
  }
}
