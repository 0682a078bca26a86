// BERT WordPiece ("bert" tokenizer model), with the behaviour of llama.cpp's WPM tokenizer.
//
// Vocabularies converted by llama.cpp store word-initial pieces with a U+2581 prefix ("▁hello")
// and continuation pieces bare ("ing", where BERT writes "##ing").
//
// Normalization follows llama.cpp rather than BERT's own BasicTokenizer: every code point is
// replaced by the FIRST code point of its canonical decomposition (so "ử" becomes "u": the
// accents of precomposed letters go, while combining marks already separate in the text stay),
// then lowercased by the simple case mapping.
import { TokenizerError } from "./errors.js";
import { TokenType, type Vocab } from "./vocab.js";

const SPACE_MARK = "\u2581";
const utf8 = new TextEncoder();

// Character classes of the normalized code point.
const PLAIN = 0;
const SPACE = 1; // ends a word
const DROP = 2; // NUL, U+FFFD, control/format/private-use/surrogate: removed
const SINGLE = 3; // punctuation, ASCII symbols, CJK ideographs: a word of its own

const RE_SPACE = /^\p{White_Space}$/u;
const RE_CONTROL = /^[\p{Cc}\p{Cf}\p{Co}\p{Cs}]$/u;
const RE_PUNCT = /^\p{P}$/u;
const RE_SYMBOL = /^\p{S}$/u;
const RE_MARK = /^\p{Mn}$/u;

/** CJK ideograph blocks, as BERT (and llama.cpp) single them out. */
function isChineseChar(cp: number): boolean {
  return (
    (cp >= 0x4e00 && cp <= 0x9fff) ||
    (cp >= 0x3400 && cp <= 0x4dbf) ||
    (cp >= 0x20000 && cp <= 0x2a6df) ||
    (cp >= 0x2a700 && cp <= 0x2b73f) ||
    (cp >= 0x2b740 && cp <= 0x2b81f) ||
    (cp >= 0x2b920 && cp <= 0x2ceaf) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0x2f800 && cp <= 0x2fa1f)
  );
}

function classOf(cp: number): number {
  const c = String.fromCodePoint(cp);
  if (RE_SPACE.test(c)) return SPACE;
  // Accent marks are dropped, as BERT's accent stripping and llama.cpp both do.
  if (cp === 0 || cp === 0xfffd || RE_CONTROL.test(c) || RE_MARK.test(c)) return DROP;
  if (RE_PUNCT.test(c) || (cp < 0x7f && RE_SYMBOL.test(c)) || isChineseChar(cp)) return SINGLE;
  return PLAIN;
}

/** The conjoining jamo of a precomposed Hangul syllable (Unicode's algorithmic decomposition). */
function hangulJamo(cp: number): number[] {
  const s = cp - 0xac00;
  const l = 0x1100 + Math.floor(s / 588);
  const v = 0x1161 + Math.floor((s % 588) / 28);
  const t = s % 28;
  return t === 0 ? [l, v] : [l, v, 0x11a7 + t];
}

/**
 * First code point of the canonical decomposition: outside Hangul, what follows it in NFD is
 * nonspacing marks, which BERT's accent stripping removes anyway.
 */
function nfdFirst(cp: number): number {
  if (cp < 0xc0) return cp;
  return String.fromCodePoint(cp).normalize("NFD").codePointAt(0)!;
}

/** Simple (one code point) lowercase mapping. */
function lower(cp: number): number {
  if (cp < 0x80) return cp >= 0x41 && cp <= 0x5a ? cp + 32 : cp;
  const l = String.fromCodePoint(cp).toLowerCase();
  // Full mappings longer than one code point (only U+0130) keep their first, the simple mapping.
  return l.codePointAt(0)!;
}

/** Normalized code point and class, packed as cp * 4 + class, for ASCII. */
const ASCII = new Int32Array(128);
for (let cp = 0; cp < 128; cp++) ASCII[cp] = lower(cp) * 4 + classOf(cp);

/**
 * Encodes text fragments with a WordPiece vocabulary: words are split on whitespace,
 * punctuation and CJK characters, then matched greedily longest-first; a word with any
 * unmatched position becomes one unknown token.
 */
export class WpmEncoder {
  private readonly ids: ReadonlyMap<string, number>;
  private readonly unk: number | undefined;
  /** Longest token text, in UTF-16 code units. */
  private readonly maxLen: number;
  /** Normalized form of BMP code points, filled as met: cp * 4 + class, or -1 when not yet known. */
  private readonly bmp = new Int32Array(0x10000).fill(-1);

  constructor(vocab: Vocab) {
    this.ids = vocab.ids;
    this.unk = vocab.special.unk;
    let maxLen = 1;
    for (const t of vocab.tokens) if (t.length > maxLen) maxLen = t.length;
    this.maxLen = maxLen;
    this.bmp.set(ASCII);
  }

  /** Appends the token ids of `text` to `out`. */
  encode(text: string, out: number[]): void {
    let word = "";
    for (let i = 0; i < text.length; ) {
      const cp = text.codePointAt(i)!;
      i += cp > 0xffff ? 2 : 1;
      let packed: number;
      if (cp <= 0xffff) {
        packed = this.bmp[cp]!;
        if (packed < 0) {
          packed = WpmEncoder.normalize(cp);
          this.bmp[cp] = packed;
        }
      } else {
        packed = WpmEncoder.normalize(cp);
      }
      if (cp >= 0xac00 && cp <= 0xd7a3) {
        // A Hangul syllable decomposes (NFD) into two or three jamo, all letters.
        word += String.fromCharCode(...hangulJamo(cp));
        continue;
      }
      const cls = packed & 3;
      if (cls === PLAIN) {
        word += String.fromCodePoint(packed >>> 2);
      } else if (cls === SPACE) {
        if (word.length > 0) this.encodeWord(word, out);
        word = "";
      } else if (cls === SINGLE) {
        if (word.length > 0) this.encodeWord(word, out);
        word = "";
        this.encodeWord(String.fromCodePoint(packed >>> 2), out);
      }
      // DROP: nothing.
    }
    if (word.length > 0) this.encodeWord(word, out);
  }

  private static normalize(cp: number): number {
    const d = nfdFirst(cp);
    return lower(d) * 4 + classOf(d);
  }

  /** Greedy longest-match-first over "▁" + word; the whole word is unknown if a position has no match. */
  private encodeWord(word: string, out: number[]): void {
    const w = SPACE_MARK + word;
    const n = w.length;
    const mark = out.length;
    for (let i = 0; i < n; ) {
      let j = Math.min(n, i + this.maxLen);
      let id: number | undefined;
      for (; j > i; j--) {
        id = this.ids.get(w.substring(i, j));
        if (id !== undefined) break;
      }
      if (id === undefined) {
        out.length = mark;
        break;
      }
      out.push(id);
      i = j;
    }
    if (out.length === mark) {
      if (this.unk === undefined) {
        throw new TokenizerError(
          "BAD_VOCAB",
          `the word "${word}" has no tokenization and the vocabulary has no unknown token`,
        );
      }
      out.push(this.unk);
    }
  }
}

/**
 * The bytes token `id` stands for (specials not rendered): normal tokens give their text with
 * U+2581 as space (so word-initial pieces start with a space), user-defined tokens their text
 * as is; control, unknown and unused tokens give nothing.
 */
export function wpmTokenToPiece(vocab: Vocab, id: number): Uint8Array {
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
    case TokenType.USER_DEFINED:
      return utf8.encode(text);
    default:
      return new Uint8Array(0);
  }
}
