import { TokenizerError } from "./errors.js";

/**
 * Pre-tokenizers of byte-level BPE vocabularies, chosen by `tokenizer.ggml.pre`. Each is the
 * split rule of the model's own tokenizer (its tokenizer.json), as an ordered list of patterns:
 * the text is cut by the first pattern (matches and the gaps between them both become pieces),
 * each piece by the next, and so on. BPE then runs on each piece alone.
 *
 * Written for JavaScript: `\s` is Unicode White_Space (as in Oniguruma and Rust's regex, unlike
 * JavaScript's `\s`), and the case-insensitive contractions `(?i:'s|'t|…)` are spelled out.
 */
export interface PreTokenizer {
  readonly name: string;
  readonly patterns: readonly RegExp[];
  /** Emit a piece that is itself a token without running merges (Llama 3's `ignore_merges`). */
  readonly ignoreMerges: boolean;
}

const S = String.raw`\p{White_Space}`;
const NS = String.raw`\P{White_Space}`;
const CONTRACTIONS = "'s|'t|'re|'ve|'m|'ll|'d";
const CONTRACTIONS_ANY_CASE = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
const GPT2 = `${CONTRACTIONS}| ?\\p{L}+| ?\\p{N}+| ?[^${S}\\p{L}\\p{N}]+|${S}+(?!${NS})`;
const LLAMA3 = `${CONTRACTIONS_ANY_CASE}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^${S}\\p{L}\\p{N}]+[\\r\\n]*|${S}*[\\r\\n]+|${S}+(?!${NS})|${S}+`;
const QWEN2 = `${CONTRACTIONS_ANY_CASE}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^${S}\\p{L}\\p{N}]+[\\r\\n]*|${S}*[\\r\\n]+|${S}+(?!${NS})|${S}+`;
const QWEN35 = `${CONTRACTIONS_ANY_CASE}|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^${S}\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|${S}*[\\r\\n]+|${S}+(?!${NS})|${S}+`;
const UPPER = "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]";
const LOWER = "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]";
const GPT4O = `[^\\r\\n\\p{L}\\p{N}]?${UPPER}*${LOWER}+${CONTRACTIONS_ANY_CASE}?|[^\\r\\n\\p{L}\\p{N}]?${UPPER}+${LOWER}*${CONTRACTIONS_ANY_CASE}?|\\p{N}{1,3}| ?[^${S}\\p{L}\\p{N}]+[\\r\\n/]*|${S}*[\\r\\n]+|${S}+(?!${NS})|${S}+`;
const TEKKEN = `[^\\r\\n\\p{L}\\p{N}]?${UPPER}*${LOWER}+|[^\\r\\n\\p{L}\\p{N}]?${UPPER}+${LOWER}*|\\p{N}| ?[^${S}\\p{L}\\p{N}]+[\\r\\n/]*|${S}*[\\r\\n]+|${S}+(?!${NS})|${S}+`;
// Cased letters (Lu, Ll, Lt) as DeepSeek LLM's tokenizer lists them, as explicit code points.
const DEEPSEEK_LATIN = [
  "A-Za-z\\u00B5\\u00C0-\\u00D6\\u00D8-\\u00F6\\u00F8-\\u01BA\\u01BC-\\u01BF\\u01C4-\\u0293\\u0295-\\u02AF",
  "\\u0370-\\u0373\\u0376\\u0377\\u037B-\\u037D\\u037F\\u0386\\u0388-\\u038A\\u038C\\u038E-\\u03A1\\u03A3-\\u03F5",
  "\\u03F7-\\u0481\\u048A-\\u052F\\u0531-\\u0556\\u10A0-\\u10C5\\u13A0-\\u13F5\\u13F8-\\u13FD\\u1C90-\\u1CBA",
  "\\u1CBD-\\u1CBF\\u1D00-\\u1D2B\\u1D6B-\\u1D77\\u1D79-\\u1D9A\\u1E00-\\u1F15\\u1F18-\\u1F1D\\u1F20-\\u1F45",
  "\\u1F48-\\u1F4D\\u1F50-\\u1F57\\u1F59\\u1F5B\\u1F5D\\u1F5F-\\u1F7D\\u1F80-\\u1FB4\\u1FB6-\\u1FBC\\u1FBE",
  "\\u1FC2-\\u1FC4\\u1FC6-\\u1FCC\\u1FD0-\\u1FD3\\u1FD6-\\u1FDB\\u1FE0-\\u1FEC\\u1FF2-\\u1FF4\\u1FF6-\\u1FFC",
  "\\u2102\\u2107\\u210A-\\u2113\\u2115\\u2119-\\u211D\\u2124\\u2126\\u2128\\u212A-\\u212D\\u212F-\\u2134\\u2139",
  "\\u213C-\\u213F\\u2145-\\u2149\\u214E\\u2183\\u2184\\u2C00-\\u2C7B\\u2C7E-\\u2CE4\\u2CEB-\\u2CEE\\u2CF2\\u2CF3",
  "\\uA640-\\uA66D\\uA680-\\uA69B\\uA722-\\uA76F\\uA771-\\uA787\\uA78B-\\uA78E\\uAB70-\\uABBF\\uFB00-\\uFB06",
  "\\uFB13-\\uFB17\\uFF21-\\uFF3A\\uFF41-\\uFF5A\\u{10400}-\\u{1044F}\\u{104B0}-\\u{104D3}\\u{104D8}-\\u{104FB}",
  "\\u{10C80}-\\u{10CB2}\\u{10CC0}-\\u{10CF2}\\u{118A0}-\\u{118DF}\\u{1E900}-\\u{1E943}",
].join("");
const DEEPSEEK_PUNCT = "!-/:-~\\uFF01-\\uFF0F\\uFF1A-\\uFF5E\\u2018-\\u201F\\u3000-\\u3002";
const CJK = "[\\u4E00-\\u9FA5\\u0800-\\u4E00\\uAC00-\\uD7FF]+";

const RULES: Record<string, { patterns: string[]; ignoreMerges?: boolean }> = {
  default: { patterns: ["[\\p{P}\\$\\+<=>\\^~\\|]+", GPT2, "\\p{N}+", "[0-9][0-9][0-9]"] },
  "gpt-2": { patterns: [GPT2] },
  mpt: { patterns: [GPT2] },
  olmo: { patterns: [GPT2] },
  "llama-bpe": { patterns: [LLAMA3], ignoreMerges: true },
  dbrx: { patterns: [LLAMA3] },
  // GLM-4 (GLM-4-0414, GLM-4.5): cl100k's regex, merges not skipped (llama.cpp's CHATGLM4).
  glm4: { patterns: [LLAMA3] },
  smaug: { patterns: [LLAMA3] },
  qwen2: { patterns: [QWEN2] },
  stablelm2: { patterns: [QWEN2] },
  qwen35: { patterns: [QWEN35] },
  "deepseek-llm": {
    patterns: [
      "[\\r\\n]",
      `${S}?[${DEEPSEEK_LATIN}]+`,
      `${S}?[${DEEPSEEK_PUNCT}]+`,
      `${S}+$`,
      CJK,
      "\\p{N}+",
    ],
  },
  "deepseek-coder": { patterns: ["[\\r\\n]", `${S}?\\p{L}+`, `${S}?\\p{P}+`, CJK, "\\p{N}"] },
  falcon: { patterns: ["[\\p{P}\\$\\+<=>\\^~\\|`]+", GPT2, "[0-9][0-9][0-9]"] },
  starcoder: { patterns: ["\\p{N}", GPT2] },
  refact: { patterns: ["\\p{N}", GPT2] },
  "command-r": { patterns: ["\\p{N}", GPT2] },
  smollm: { patterns: ["\\p{N}", GPT2] },
  "gpt-4o": { patterns: [GPT4O] },
  tekken: { patterns: [TEKKEN], ignoreMerges: true },
};

/** Names accepted in `tokenizer.ggml.pre` for byte-level BPE vocabularies. */
export const PRE_TOKENIZERS: readonly string[] = Object.keys(RULES);

const compiled = new Map<string, PreTokenizer>();

/** The pre-tokenizer for a `tokenizer.ggml.pre` value; a missing or unknown one is an error listing the supported. */
export function preTokenizer(name: string | undefined): PreTokenizer {
  if (name === undefined) {
    throw new TokenizerError(
      "UNKNOWN_PRE_TOKENIZER",
      `the vocabulary has no tokenizer.ggml.pre, so its pre-tokenizer is unknown; set one of: ${PRE_TOKENIZERS.join(", ")}`,
      { detail: "tokenizer.ggml.pre" },
    );
  }
  const rule = RULES[name];
  if (!rule) {
    throw new TokenizerError(
      "UNKNOWN_PRE_TOKENIZER",
      `unknown pre-tokenizer "${name}" (tokenizer.ggml.pre); supported: ${PRE_TOKENIZERS.join(", ")}`,
      { detail: "tokenizer.ggml.pre" },
    );
  }
  let p = compiled.get(name);
  if (!p) {
    p = {
      name,
      patterns: rule.patterns.map((s) => new RegExp(s, "gu")),
      ignoreMerges: rule.ignoreMerges ?? false,
    };
    compiled.set(name, p);
  }
  return p;
}

/** Cuts `text` into pieces: matches of each pattern in turn, and the gaps between them. */
export function preTokenize(pre: PreTokenizer, text: string): string[] {
  let pieces = [text];
  for (const re of pre.patterns) {
    const next: string[] = [];
    for (const piece of pieces) {
      re.lastIndex = 0;
      let last = 0;
      for (let m = re.exec(piece); m !== null; m = re.exec(piece)) {
        if (m[0].length === 0) {
          re.lastIndex++;
          continue;
        }
        if (m.index > last) next.push(piece.slice(last, m.index));
        next.push(m[0]);
        last = m.index + m[0].length;
      }
      if (last < piece.length) next.push(piece.slice(last));
    }
    pieces = next;
  }
  return pieces;
}
