import { TokenType, type Vocab } from "./vocab.js";

/** A piece of input: raw text to tokenize, or a special token already recognised. */
export type Fragment = { text: string } | { token: number };

/** A token recognised in raw text before tokenization. */
export interface SpecialToken {
  readonly id: number;
  readonly text: string;
  /** Matched even when special tokens are not parsed (user-defined tokens). */
  readonly always: boolean;
  /** Whitespace before the token is dropped. */
  readonly lstrip: boolean;
  /** Whitespace after the token is dropped. */
  readonly rstrip: boolean;
}

/**
 * The tokens matched in raw text before tokenization, longest text first: control and unknown
 * tokens (only when parsing specials) and user-defined tokens (always, as llama.cpp and Hugging
 * Face tokenizers do with added tokens).
 *
 * GGUF does not store the strip flags of added tokens; like llama.cpp, they are restored for the
 * models known to need them: Phi-3's special tokens strip the whitespace that follows them
 * (except `<unk>`, `<s>`, `<|endoftext|>`), and Jina v2's `<mask>` strips what precedes it.
 */
export function specialTokenList(vocab: Vocab): SpecialToken[] {
  const out: SpecialToken[] = [];
  const phi3 = vocab.modelName.includes("phi-3") || vocab.modelName.includes("phi3");
  const jina = ["jina-v2-de", "jina-v2-es", "jina-v2-code"].includes(vocab.pre ?? "");
  vocab.types.forEach((t, id) => {
    const text = vocab.tokens[id]!;
    if (text.length === 0) return;
    const always = t === TokenType.USER_DEFINED;
    if (!always && t !== TokenType.CONTROL && t !== TokenType.UNKNOWN) return;
    const rstrip = phi3 && !["<unk>", "<s>", "<|endoftext|>"].includes(text);
    const lstrip = jina && text === "<mask>";
    out.push({ id, text, always, lstrip, rstrip });
  });
  return out.sort((a, b) => b.text.length - a.text.length || a.id - b.id);
}

/** ASCII whitespace, as C's isspace (llama.cpp strips only these). */
const isSpace = (c: number) => c === 32 || (c >= 9 && c <= 13);

/**
 * Finds which special tokens occur in a text without scanning the whole text once per token:
 * tokens are indexed by their first character, and only positions holding such a character are
 * tried (with the tokens of that character, longest first).
 */
export class SpecialMatcher {
  readonly #byFirst = new Map<number, SpecialToken[]>();
  readonly #firsts: string[];

  constructor(readonly specials: readonly SpecialToken[]) {
    for (const s of specials) {
      const c = s.text.charCodeAt(0);
      const list = this.#byFirst.get(c) ?? [];
      list.push(s);
      this.#byFirst.set(c, list);
    }
    this.#firsts = [...this.#byFirst.keys()].map((c) => String.fromCharCode(c));
  }

  /** The special tokens that occur in `text` (and may be matched), in the list's order. */
  present(text: string, parseSpecial: boolean): SpecialToken[] {
    const found = new Set<SpecialToken>();
    for (const first of this.#firsts) {
      const candidates = this.#byFirst.get(first.charCodeAt(0))!.filter((s) => s.always || parseSpecial);
      if (candidates.length === 0) continue;
      for (let i = text.indexOf(first); i >= 0; i = text.indexOf(first, i + 1)) {
        for (const s of candidates) if (!found.has(s) && text.startsWith(s.text, i)) found.add(s);
        if (found.size === this.specials.length) break;
      }
    }
    return this.specials.filter((s) => found.has(s));
  }
}

/**
 * Splits `text` around special tokens, one token text at a time from the longest (llama.cpp's
 * order): each occurrence in a raw fragment becomes a token fragment.
 */
export function partition(text: string, matcher: SpecialMatcher, parseSpecial: boolean): Fragment[] {
  if (text.length === 0) return [];
  let frags: Fragment[] = [{ text }];
  for (const s of matcher.present(text, parseSpecial)) {
    const next: Fragment[] = [];
    for (const f of frags) {
      if (!("text" in f)) {
        next.push(f);
        continue;
      }
      let from = 0;
      for (let at = f.text.indexOf(s.text); at >= 0; at = f.text.indexOf(s.text, from)) {
        let left = at;
        if (s.lstrip) while (left > from && isSpace(f.text.charCodeAt(left - 1))) left--;
        if (left > from) next.push({ text: f.text.slice(from, left) });
        next.push({ token: s.id });
        from = at + s.text.length;
        if (s.rstrip) while (from < f.text.length && isSpace(f.text.charCodeAt(from))) from++;
      }
      if (from < f.text.length) next.push({ text: from === 0 ? f.text : f.text.slice(from) });
    }
    frags = next;
  }
  return frags;
}
