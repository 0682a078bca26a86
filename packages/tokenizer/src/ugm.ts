// SentencePiece Unigram ("t5" tokenizer model: T5, XLM-RoBERTa and the embedding and rerank
// models built on it), with the behaviour of llama.cpp's UGM tokenizer:
//
// 1. Normalize the UTF-8 bytes of the text: at each position the longest run that follows a
//    path of the user-defined tokens' trie is kept as is; otherwise the longest rule of the
//    precompiled charsmap replaces its match; otherwise one code point is kept (an invalid byte
//    becomes U+FFFD). Spaces become U+2581, with a space before the text (`add_space_prefix`)
//    or before every word with runs of spaces dropped (`remove_extra_whitespaces`).
// 2. Viterbi: the segmentation into normal, user-defined and unused tokens with the highest sum
//    of scores (user-defined tokens score 0); a code point no single token covers may be the
//    unknown token, scored 10 below the lowest normal score. Runs of unknown tokens are one.
//
// Scores are float32 in the file and summed in float64, as llama.cpp and SentencePiece do, so
// ties and near-ties resolve the same way.
import { TokenizerError } from "./errors.js";
import { Charsmap } from "./ugm-charsmap.js";
import { ByteTrie } from "./ugm-trie.js";
import { TokenType, type Vocab } from "./vocab.js";

/** U+2581 in UTF-8: SentencePiece's stand-in for a space. */
const SPACE_MARK = [0xe2, 0x96, 0x81];
/** U+FFFD in UTF-8, for a byte that starts no valid UTF-8 sequence. */
const REPLACEMENT = Uint8Array.of(0xef, 0xbf, 0xbd);
/** How far below the lowest normal score an unknown code point scores (SentencePiece's kUnkPenalty). */
const UNKNOWN_PENALTY = 10;
const FLT_MAX = 3.4028234663852886e38;

/** Bytes of the UTF-8 sequence a lead byte announces (1 for a stray continuation byte). */
function sequenceLength(lead: number): number {
  return lead < 0xc0 ? 1 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4;
}

/** Length of the well-formed sequence at `i` (lead and continuation bits only), 0 if none. */
function validSequence(b: Uint8Array, i: number, end: number): number {
  const lead = b[i]!;
  if (lead < 0x80) return 1;
  if (lead < 0xc0 || lead >= 0xf8) return 0;
  const n = sequenceLength(lead);
  if (i + n > end) return 0;
  for (let k = 1; k < n; k++) if ((b[i + k]! & 0xc0) !== 0x80) return 0;
  return n;
}

/** Bytes of the UTF-8 encoding of `s` (a lone surrogate counts as U+FFFD, 3 bytes). */
function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** Writes the UTF-8 of `s` at `at` (a lone surrogate as U+FFFD, as TextEncoder does); returns the end. */
function utf8Into(s: string, out: Uint8Array, at: number): number {
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      out[at++] = c;
      continue;
    }
    if (c < 0x800) {
      out[at++] = 0xc0 | (c >> 6);
      out[at++] = 0x80 | (c & 0x3f);
      continue;
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      const d = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
      if (c <= 0xdbff && (d & 0xfc00) === 0xdc00) {
        const cp = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        out[at++] = 0xf0 | (cp >> 18);
        out[at++] = 0x80 | ((cp >> 12) & 0x3f);
        out[at++] = 0x80 | ((cp >> 6) & 0x3f);
        out[at++] = 0x80 | (cp & 0x3f);
        i++;
        continue;
      }
      c = 0xfffd;
    }
    out[at++] = 0xe0 | (c >> 12);
    out[at++] = 0x80 | ((c >> 6) & 0x3f);
    out[at++] = 0x80 | (c & 0x3f);
  }
  return at;
}

function growBytes(a: Uint8Array, need: number): Uint8Array {
  if (a.length >= need) return a;
  const b = new Uint8Array(Math.max(need, a.length * 2));
  b.set(a);
  return b;
}

/**
 * Encodes text fragments with a Unigram vocabulary.
 *
 * `encode` takes one raw fragment (special and user-defined tokens already split out) and does
 * the normalization itself, prefix space included. One encoder reuses its work arrays between
 * calls; it is not for concurrent use (JS has none).
 */
export class UgmEncoder {
  readonly #tokens: ByteTrie;
  /** Paths of the user-defined tokens: text along them is not normalized. */
  readonly #userDefined: ByteTrie;
  readonly #charsmap: Charsmap | undefined;
  /** Score of each token as the search uses it (0 for user-defined tokens). */
  readonly #scores: Float64Array;
  readonly #unknownScore: number;
  /** The unknown token; -1 when the vocabulary has none. */
  readonly #unk: number;
  readonly #addSpacePrefix: boolean;
  readonly #mergeSpaces: boolean;

  #input: Uint8Array = new Uint8Array(256);
  #norm: Uint8Array = new Uint8Array(256);
  #bestScore = new Float64Array(256);
  #bestId = new Int32Array(256);
  #bestFrom = new Int32Array(256);

  constructor(vocab: Vocab) {
    this.#charsmap =
      vocab.precompiledCharsmap === undefined ? undefined : Charsmap.parse(vocab.precompiledCharsmap);
    this.#unk = vocab.special.unk ?? -1;
    this.#addSpacePrefix = vocab.addSpacePrefix;
    this.#mergeSpaces = vocab.removeExtraWhitespaces;
    const { tokens, types } = vocab;
    const n = tokens.length;
    // The texts the search matches: normal, user-defined and unused tokens (not control,
    // unknown or byte tokens), all encoded into one buffer.
    const matched = (id: number) =>
      types[id] === TokenType.NORMAL ||
      types[id] === TokenType.USER_DEFINED ||
      types[id] === TokenType.UNUSED;
    let total = 0;
    for (let id = 0; id < n; id++) if (matched(id)) total += utf8Length(tokens[id]!);
    const bytes = new Uint8Array(total);
    const starts = new Int32Array(n);
    const ends = new Int32Array(n);
    const ids = Int32Array.from({ length: n }, (_, id) => id);
    const user: number[] = [];
    this.#scores = new Float64Array(n);
    let minScore = FLT_MAX;
    for (let id = 0, at = 0; id < n; id++) {
      const type = types[id];
      const score = vocab.scores ? vocab.scores[id]! : 0;
      if (type === TokenType.NORMAL && score < minScore) minScore = score;
      // Left empty (start = end), a token is no key.
      starts[id] = at;
      ends[id] = at;
      if (!matched(id)) continue;
      // An empty text matches nothing. (llama.cpp renames it "[EMPTY_<id>]", which only that
      // literal text would match; minfer keeps the file's text, as it does for every model.)
      at = utf8Into(tokens[id]!, bytes, at);
      ends[id] = at;
      this.#scores[id] = type === TokenType.USER_DEFINED ? 0 : score;
      if (type === TokenType.USER_DEFINED) user.push(id);
    }
    this.#tokens = new ByteTrie({ bytes, starts, ends, values: ids });
    this.#userDefined = new ByteTrie({
      bytes,
      starts: Int32Array.from(user, (id) => starts[id]!),
      ends: Int32Array.from(user, (id) => ends[id]!),
      values: Int32Array.from(user),
    });
    // float32 arithmetic, as llama.cpp computes it.
    this.#unknownScore = Math.fround(minScore - UNKNOWN_PENALTY);
  }

  /** Appends the token ids of `text` to `out`. */
  encode(text: string, out: number[]): void {
    if (text.length === 0) return;
    this.#input = growBytes(this.#input, text.length * 3);
    const inLen = utf8Into(text, this.#input, 0);
    const len = this.#normalize(this.#input, inLen);
    if (len === 0) return;
    this.#search(len, out);
  }

  /** Writes the normalized bytes of input[0, end) to #norm; returns their length. */
  #normalize(input: Uint8Array, end: number): number {
    let norm = this.#norm;
    let o = 0;
    let inWord = false;
    let prefixed = false;
    for (let i = 0; i < end; ) {
      let src: Uint8Array = input;
      let from = i;
      let to: number;
      // Text along a user-defined token's path (even one that stops short of a whole token) is
      // not normalized, as llama.cpp does.
      let k = i;
      for (let node = 0; k < end; k++) {
        node = this.#userDefined.child(node, input[k]!);
        if (node === -1) break;
      }
      if (k > i) {
        to = k;
        i = k;
      } else {
        const m = this.#charsmap?.match(input, i, end) ?? 0;
        if (m > 0) {
          src = this.#charsmap!.replacement;
          from = 0;
          to = src.length;
          i += m;
        } else {
          const n = validSequence(input, i, end);
          if (n === 0) {
            src = REPLACEMENT;
            from = 0;
            to = 3;
            i += 1;
          } else {
            to = i + n;
            i += n;
          }
        }
      }
      // Each byte may add a space mark before it: 3 bytes, plus itself.
      norm = growBytes(norm, o + 4 * (to - from) + 3);
      for (let j = from; j < to; j++) {
        const c = src[j]!;
        if (c !== 0x20) {
          if (!inWord) {
            inWord = true;
            if ((this.#addSpacePrefix && !prefixed) || this.#mergeSpaces) {
              norm[o++] = SPACE_MARK[0]!;
              norm[o++] = SPACE_MARK[1]!;
              norm[o++] = SPACE_MARK[2]!;
              prefixed = true;
            }
          }
          norm[o++] = c;
        } else {
          inWord = false;
          if (!this.#mergeSpaces) {
            norm[o++] = SPACE_MARK[0]!;
            norm[o++] = SPACE_MARK[1]!;
            norm[o++] = SPACE_MARK[2]!;
          }
        }
      }
    }
    this.#norm = norm;
    return o;
  }

  /** Best segmentation of #norm[0, len), appended to `out`. */
  #search(len: number, out: number[]): void {
    if (this.#bestScore.length < len + 1) {
      const cap = Math.max(len + 1, this.#bestScore.length * 2);
      this.#bestScore = new Float64Array(cap);
      this.#bestId = new Int32Array(cap);
      this.#bestFrom = new Int32Array(cap);
    }
    const s = this.#norm;
    const best = this.#bestScore;
    const bestId = this.#bestId;
    const bestFrom = this.#bestFrom;
    const unk = this.#unk;
    best.fill(-Number.MAX_VALUE, 0, len + 1);
    bestId.fill(unk, 0, len + 1);
    bestFrom.fill(0, 0, len + 1);
    best[0] = 0;
    const trie = this.#tokens;
    const values = trie.values;
    const scores = this.#scores;
    for (let at = 0; at < len; ) {
      const width = Math.min(sequenceLength(s[at]!), len - at);
      const here = best[at]!;
      let wholeCodePoint = false;
      let node = 0;
      for (let p = at; p < len; ) {
        node = trie.child(node, s[p++]!);
        if (node === -1) break;
        const id = values[node]!;
        if (id === -1) continue;
        if (p - at === width) wholeCodePoint = true;
        const score = here + scores[id]!;
        // Strictly greater: the first segmentation found keeps a tie.
        if (score > best[p]!) {
          best[p] = score;
          bestId[p] = id;
          bestFrom[p] = at;
        }
      }
      if (!wholeCodePoint) {
        const score = here + this.#unknownScore;
        const p = at + width;
        if (score > best[p]!) {
          best[p] = score;
          bestId[p] = unk;
          bestFrom[p] = at;
        }
      }
      at += width;
    }
    // Walk back from the end; consecutive unknown tokens become one.
    const start = out.length;
    let prevUnknown = false;
    for (let p = len; ; ) {
      const id = bestId[p]!;
      const unknown = id === unk;
      if (!(prevUnknown && unknown)) out.push(id);
      if (bestFrom[p] === 0) break;
      prevUnknown = unknown;
      p = bestFrom[p]!;
    }
    const end = out.length;
    for (let i = start, j = end - 1; i < j; i++, j--) {
      const t = out[i]!;
      out[i] = out[j]!;
      out[j] = t;
    }
    if (unk === -1 && out.includes(-1, start)) {
      out.length = start;
      throw new TokenizerError(
        "BAD_VOCAB",
        "the text has a character no token covers, and the vocabulary has no unknown token (tokenizer.ggml.unknown_token_id)",
        { detail: "tokenizer.ggml.unknown_token_id" },
      );
    }
  }
}
