import type { GgufMetadata } from "@minfer/gguf";
import { BpeEncoder, bpeTokenBytes } from "./bpe.js";
import { TokenizerError } from "./errors.js";
import { preTokenizer } from "./pre-tokenizers.js";
import { type Fragment, partition, SpecialMatcher, specialTokenList } from "./special.js";
import { SpmEncoder, spmTokenToPiece } from "./spm.js";
import { StreamDecoder } from "./stream-decoder.js";
import { UgmEncoder } from "./ugm.js";
import { loadVocab, TokenType, type Vocab } from "./vocab.js";
import { WpmEncoder, wpmTokenToPiece } from "./wpm.js";

/** Options of {@link Tokenizer.encode}. */
export interface EncodeOptions {
  /** Add the vocabulary's BOS/EOS (or CLS/SEP) as it asks (`add_bos_token`, …). Default: true. */
  addSpecial?: boolean;
  /** Recognise control tokens such as `<|im_start|>` written in the text. Default: false (they are plain text). */
  parseSpecial?: boolean;
}

/** Options of {@link Tokenizer.decode} and {@link Tokenizer.streamDecoder}. */
export interface DecodeOptions {
  /** Render control tokens (BOS, `<|im_end|>`, …) as their text. Default: false (they render as nothing). */
  renderSpecial?: boolean;
  /**
   * Keep the space SentencePiece (`add_space_prefix`) puts before the first piece, as each token's
   * own text has it (llama.cpp's `token_to_piece`, what llama-server returns for generated text and
   * `/detokenize`). Default: false — the text of `decode(encode(s))` is `s` (llama.cpp's
   * `llama_detokenize`).
   */
  keepLeadingSpace?: boolean;
  /**
   * Control tokens rendered as their text although `renderSpecial` is off: llama.cpp's preserved
   * tokens, a chat format's markers (`[TOOL_CALLS]`, `<|python_tag|>`, think tags) that the server
   * must see in the generated text to parse calls and reasoning from it.
   */
  preserve?: ReadonlySet<number>;
}

/** Options of {@link Tokenizer.fromMetadata}. */
export interface TokenizerOptions {
  /** Use this pre-tokenizer instead of `tokenizer.ggml.pre` (for files that lack or misname it). */
  pre?: string;
}

interface FragmentEncoder {
  encode(text: string, out: number[]): void;
}

/** Most UTF-16 units encoded between two yields of {@link Tokenizer.encodeAsync}. */
const ASYNC_CHUNK = 1 << 13;

/**
 * A tokenizer built from a GGUF's `tokenizer.ggml.*` metadata: byte-level BPE (`gpt2`),
 * SentencePiece BPE (`llama`), WordPiece (`bert`) or SentencePiece Unigram (`t5`), with the
 * vocabulary's special tokens.
 */
export class Tokenizer {
  readonly vocab: Vocab;
  readonly #encoder: FragmentEncoder;
  readonly #specials: SpecialMatcher;
  readonly #pieces: (Uint8Array | undefined)[];
  /** Where a long raw text may be cut for {@link encodeAsync} without changing the result. */
  readonly #safeCut: (text: string, i: number) => boolean;

  private constructor(vocab: Vocab, options: TokenizerOptions) {
    this.vocab = vocab;
    this.#specials = new SpecialMatcher(specialTokenList(vocab));
    this.#pieces = new Array(vocab.tokens.length);
    switch (vocab.model) {
      case "gpt2":
        this.#encoder = new BpeEncoder(vocab, preTokenizer(options.pre ?? vocab.pre));
        // Pre-tokenizer pieces never run across "\n" + letter, or across letter + " " + letter.
        this.#safeCut = (t, i) => {
          const a = t.charCodeAt(i - 1);
          const b = t.charCodeAt(i);
          return (a === 10 && isLetter(b)) || (b === 32 && isLetter(a) && isLetter(t.charCodeAt(i + 1)));
        };
        break;
      case "llama": {
        this.#encoder = new SpmEncoder(vocab);
        // SentencePiece merges can join anything a token spells; cut only where no token could span.
        const spansSpace = vocab.tokens.some((t) => /[^\u2581]\u2581/u.test(t) || /[^ ] /.test(t));
        const spansNewline = vocab.tokens.some((t) => /\n./su.test(t));
        this.#safeCut = (t, i) => {
          const a = t.charCodeAt(i - 1);
          const b = t.charCodeAt(i);
          return (!spansNewline && a === 10 && b !== 10) || (!spansSpace && b === 32 && a !== 32);
        };
        break;
      }
      case "bert":
        this.#encoder = new WpmEncoder(vocab);
        this.#safeCut = (t, i) => t.charCodeAt(i) === 32 || t.charCodeAt(i) === 10;
        break;
      case "t5":
        this.#encoder = new UgmEncoder(vocab);
        // Never cut: the best segmentation, the merging of unknown tokens and the whitespace
        // state all run over the whole fragment, so only one pass is sure to give llama.cpp's ids.
        this.#safeCut = () => false;
        break;
    }
  }

  /** Builds the tokenizer of a GGUF; a vocabulary it cannot tokenize exactly is refused with a named error. */
  static fromMetadata(md: GgufMetadata, options: TokenizerOptions = {}): Tokenizer {
    return new Tokenizer(loadVocab(md), options);
  }

  /** Number of tokens in the vocabulary. */
  get size(): number {
    return this.vocab.tokens.length;
  }

  /** Whether `id` ends a generation (EOS, EOT, EOM or a known end-of-turn token). */
  isEog(id: number): boolean {
    return this.vocab.eog.has(id);
  }

  /** Token ids of `text`. */
  encode(text: string, options: EncodeOptions = {}): number[] {
    const out: number[] = [];
    const frags = partition(text, this.#specials, options.parseSpecial ?? false);
    this.#begin(out, options);
    this.#encodeFragments(frags, out, true);
    this.#end(out, options);
    return out;
  }

  /**
   * {@link encode} without holding the event loop: long texts are cut where the result cannot
   * change and encoded a slice at a time, yielding between slices.
   */
  async encodeAsync(text: string, options: EncodeOptions & { signal?: AbortSignal } = {}): Promise<number[]> {
    const out: number[] = [];
    const frags = partition(text, this.#specials, options.parseSpecial ?? false);
    this.#begin(out, options);
    let prevSpecial = true;
    for (const f of frags) {
      if ("token" in f) {
        out.push(f.token);
        prevSpecial = true;
        continue;
      }
      let start = 0;
      while (start < f.text.length) {
        let end = Math.min(f.text.length, start + ASYNC_CHUNK);
        if (end < f.text.length) {
          let cut = end;
          while (cut > start + 1 && !this.#safeCut(f.text, cut)) cut--;
          if (cut > start + 1) end = cut;
          else {
            // No safe cut within reach: extend until one is found (or the fragment ends).
            while (end < f.text.length && !this.#safeCut(f.text, end)) end++;
          }
        }
        this.#encodeFragments([{ text: f.text.slice(start, end) }], out, prevSpecial && start === 0);
        start = end;
        await new Promise<void>((r) => setImmediate(r));
        options.signal?.throwIfAborted();
      }
      prevSpecial = false;
    }
    this.#end(out, options);
    return out;
  }

  #begin(out: number[], options: EncodeOptions): void {
    if ((options.addSpecial ?? true) && this.vocab.addBos && this.vocab.special.bos !== undefined) {
      out.push(this.vocab.special.bos);
    }
  }

  #end(out: number[], options: EncodeOptions): void {
    if (!(options.addSpecial ?? true)) return;
    const { special, addEos, model } = this.vocab;
    // WordPiece ends with [SEP]; the others with EOS where the vocabulary adds it. (`add_sep` is not
    // used here: llama.cpp reads it only to join a rerank pair.)
    if (model === "bert" && special.sep !== undefined) out.push(special.sep);
    if (addEos && special.eos !== undefined && model !== "bert") out.push(special.eos);
  }

  /**
   * SentencePiece puts a space before raw text that starts the input or follows a special token
   * (`add_space_prefix`), as llama.cpp does.
   */
  #encodeFragments(frags: Fragment[], out: number[], startsInput: boolean): void {
    let prevSpecial = startsInput;
    const spm = this.vocab.model === "llama" && this.vocab.addSpacePrefix;
    for (const f of frags) {
      if ("token" in f) {
        out.push(f.token);
        prevSpecial = true;
      } else {
        this.#encoder.encode(spm && prevSpecial ? ` ${f.text}` : f.text, out);
        prevSpecial = false;
      }
    }
  }

  /** The text of `ids`; bytes that are not valid UTF-8 become U+FFFD. */
  decode(ids: readonly number[], options: DecodeOptions = {}): string {
    const d = this.streamDecoder(options);
    return d.pushMany(ids) + d.flush();
  }

  /** A decoder for tokens arriving one at a time that never emits half of a UTF-8 character. */
  streamDecoder(options: DecodeOptions = {}): StreamDecoder {
    return new StreamDecoder(
      (id) => this.tokenBytes(id, options),
      (this.vocab.model === "llama" || this.vocab.model === "t5") &&
        this.vocab.addSpacePrefix &&
        !options.keepLeadingSpace,
    );
  }

  /** The bytes token `id` stands for (empty for control tokens unless `renderSpecial`). */
  tokenBytes(id: number, options: DecodeOptions = {}): Uint8Array {
    if (!Number.isInteger(id) || id < 0 || id >= this.vocab.tokens.length) {
      throw new TokenizerError(
        "BAD_TOKEN_ID",
        `token id ${id} is outside the vocabulary of ${this.vocab.tokens.length} tokens`,
        {
          detail: id,
        },
      );
    }
    const t = this.vocab.types[id];
    if (t === TokenType.CONTROL || t === TokenType.UNKNOWN || t === TokenType.UNUSED) {
      return options.renderSpecial || (t === TokenType.CONTROL && options.preserve?.has(id))
        ? utf8.encode(this.vocab.tokens[id]!)
        : EMPTY;
    }
    let piece = this.#pieces[id];
    if (!piece) {
      piece =
        this.vocab.model === "gpt2"
          ? bpeTokenBytes(this.vocab, id)
          : this.vocab.model === "llama" || this.vocab.model === "t5"
            ? spmTokenToPiece(this.vocab, id)
            : wpmTokenToPiece(this.vocab, id);
      this.#pieces[id] = piece;
    }
    return piece;
  }

  /** The stored text of token `id` (as in `tokenizer.ggml.tokens`). */
  tokenText(id: number): string {
    const text = this.vocab.tokens[id];
    if (text === undefined) {
      throw new TokenizerError(
        "BAD_TOKEN_ID",
        `token id ${id} is outside the vocabulary of ${this.vocab.tokens.length} tokens`,
        {
          detail: id,
        },
      );
    }
    return text;
  }
}

const utf8 = new TextEncoder();
const EMPTY = new Uint8Array(0);

function isLetter(code: number): boolean {
  return (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
}
