// Test-only (not exported): small Unigram vocabularies built in code, the same bytes every time,
// for ugm.test.ts and for scripts/ugm-vectors/generate.mjs, which asks llama.cpp how it tokenizes
// the inputs below with them (no real T5 / XLM-R vocabulary is at hand offline).
import { type GgufKV, GgufValueType } from "@minfer/gguf";
import { randomText, seeded } from "./random-text.js";
import { TokenType } from "./vocab.js";

const utf8 = new TextEncoder();

/** Pieces of the vocabulary (U+2581 stands for a space), with a score where it matters. */
const PIECES: (string | [string, number])[] = [
  "▁",
  ...[..."abcdefghijklmnopqrstuvwxyz"].filter((c) => c !== "a" && c !== "b"),
  // An exact tie: "ab" scores what "a" + "b" do; the first segmentation found must win.
  ["a", -2],
  ["b", -3],
  ["ab", -5],
  ...[..."ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"],
  ...[...".,!?'-:;()+#=\"/<>[]_*&%$@"],
  ..."▁the ▁quick ▁brown ▁fox ▁jump s ▁over ▁lazy ▁dog ▁hello hello ▁world world ▁Hello ▁World ▁H ell o ▁wor ld".split(
    " ",
  ),
  ..."▁a ▁an ▁and an nd ▁C ++ ▁code ▁int ▁x ▁= ▁4 ▁42 ▁how 's ▁it ▁go ing ▁going ▁is in ▁in er ed ▁un known".split(
    " ",
  ),
  ..."▁unknown ▁char ▁emoji ▁full ▁fine fi ne ▁flow fl ow ▁nb sp ▁ide ▁zero width ▁width ▁text ▁TM TM ▁TEL".split(
    " ",
  ),
  ..."▁1 ▁12 123 ▁123 ▁2 1/2 ▁1/2 ... ▁... .. ▁- -- ▁aa aa aaa ▁aaaa abab ba ▁ab ▁ba ▁▁ ▁▁▁ ▁\t \t".split(
    " ",
  ),
  ..."é ▁café caf ▁naïve ï ▁über ü ß ▁straße ▁stra e\u0301 ▁e\u0301".split(" "),
  ..."日本 日 本 語 ▁日本語 の テキスト テ キ ス ト ▁Привет Привет ▁мир м и р П".split(" "),
  ..."🙂 ▁🙂 株式会社 株 式 会 社 ▁株式会社 ½ ² ™ ﬁ ﬂ Ａ Ｂ".split(" "),
  "▁x²",
  ["▁unused", -1],
  ["\n", -9],
];

/**
 * User-defined tokens. llama.cpp leaves unnormalized any text along the path of a user-defined
 * token, even a path that stops short of the whole token (and mid-character): with "ＡＩ" every
 * full-width form (EF BC xx, EF BD xx in UTF-8) loses its charsmap rule. The T5 vocabularies have
 * it, to check that; the XLM-R one does not, to check the rules themselves. "x▁y" never occurs in
 * raw text, so it is never split out before the search, but appears once "x y" is normalized:
 * the search then scores it 0 whatever the file says (the file says -50).
 */
const USER_DEFINED_T5 = ["<extra_id_0>", "ＡＩ", "x▁y"];
const USER_DEFINED_XLMR = ["<extra_id_0>", "x▁y"];
const UNUSED = ["▁unused", "€5", "£5", "¥"];
const BYTES = ["<0x0A>", "<0x41>"];

/**
 * Normalization rules of the charsmap: full-width letters and digits, ligatures and a few NFKC
 * compatibility mappings, whitespace to a space, a zero-width space removed, a combining accent
 * composed (a two-code-point key whose first code point is no key by itself).
 */
export const CHARSMAP_RULES: [string, string][] = [
  ...[..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"].map((c): [string, string] => [
    String.fromCodePoint(c.codePointAt(0)! + 0xfee0),
    c,
  ]),
  ["ﬁ", "fi"],
  ["ﬂ", "fl"],
  ["ﬀ", "ff"],
  ["…", "..."],
  ["²", "2"],
  ["½", "1/2"],
  ["™", "TM"],
  ["℡", "TEL"],
  ["㍿", "株式会社"],
  ["—", " - "],
  ["\t", " "],
  ["\n", " "],
  ["\r", " "],
  ["\r\n", " "],
  ["\u00a0", " "],
  ["\u3000", " "],
  ["\u200b", ""],
  ["e\u0301", "é"],
];

/**
 * A darts-clone double array mapping each key (bytes, no NUL) to its value, laid out as
 * SentencePiece stores it: from the root at unit 0, byte c of a node whose children start at
 * `base` is unit `base ^ c`; a key that ends at a node has its value unit at the node's base.
 * The array is a whole number of 256-unit blocks, as darts-clone makes it.
 */
export function buildDoubleArray(entries: readonly (readonly [Uint8Array, number])[]): Uint32Array {
  interface Node {
    children: Map<number, Node>;
    value: number | undefined;
  }
  const root: Node = { children: new Map(), value: undefined };
  for (const [key, value] of entries) {
    let node = root;
    for (const b of key) {
      if (b === 0) throw new Error("a charsmap key cannot hold a NUL byte");
      let next = node.children.get(b);
      if (!next) {
        next = { children: new Map(), value: undefined };
        node.children.set(b, next);
      }
      node = next;
    }
    node.value = value;
  }
  const units: number[] = [0];
  const used = new Set<number>([0]);
  const bases = new Set<number>();
  const queue: [Node, number][] = [[root, 0]];
  while (queue.length > 0) {
    const [node, at] = queue.shift()!;
    const labels = [...node.children.keys()].sort((x, y) => x - y);
    if (node.value !== undefined) labels.unshift(0);
    let base = 1;
    while (bases.has(base) || labels.some((l) => used.has(base ^ l))) base++;
    bases.add(base);
    const offset = (at ^ base) >>> 0;
    if (offset >= 1 << 21) throw new Error("double array too large for this small builder");
    units[at] = (units[at] ?? 0) | (offset << 10) | (node.value !== undefined ? 0x100 : 0);
    for (const l of labels) used.add(base ^ l);
    if (node.value !== undefined) units[base] = (0x80000000 | node.value) >>> 0;
    for (const l of labels) {
      if (l === 0) continue;
      units[base ^ l] = l;
      queue.push([node.children.get(l)!, base ^ l]);
    }
  }
  const size = Math.ceil(units.length / 256) * 256;
  const out = new Uint32Array(size);
  for (let i = 0; i < units.length; i++) out[i] = units[i] ?? 0;
  return out;
}

/** A precompiled charsmap: blob size, the double array, then the NUL-terminated replacements. */
export function buildCharsmap(rules: readonly (readonly [string, string])[]): Uint8Array {
  const strings: number[] = [];
  const at = new Map<string, number>();
  const entries: [Uint8Array, number][] = [];
  for (const [from, to] of rules) {
    let offset = at.get(to);
    if (offset === undefined) {
      offset = strings.length;
      at.set(to, offset);
      strings.push(...utf8.encode(to), 0);
    }
    entries.push([utf8.encode(from), offset]);
  }
  const units = buildDoubleArray(entries);
  const out = new Uint8Array(4 + units.length * 4 + strings.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, units.length * 4, true);
  units.forEach((u, i) => {
    view.setUint32(4 + 4 * i, u, true);
  });
  out.set(strings, 4 + units.length * 4);
  return out;
}

interface Layout {
  /** Control and unknown tokens first, in the model family's order. */
  readonly head: readonly [string, number][];
  /** Trailing control tokens (XLM-R's <mask>). */
  readonly tail: readonly [string, number][];
  readonly userDefined: readonly string[];
  readonly keys: readonly GgufKV[];
  readonly charsmap: boolean;
}

const u32 = (key: string, value: number): GgufKV => ({ key, type: GgufValueType.UINT32, value });
const bool = (key: string, value: boolean): GgufKV => ({ key, type: GgufValueType.BOOL, value });

/**
 * The vocabularies: `t5-plain` (T5's token order, no charsmap, whitespace kept as it is),
 * `t5-nfkc` (with the charsmap and a prefix space) and `xlmr-nfkc` (XLM-RoBERTa's order and
 * settings as bge-m3 has them: BOS and EOS added, a space before every word, charsmap).
 */
const LAYOUTS: Record<string, Layout> = {
  "t5-plain": {
    head: [
      ["<pad>", TokenType.CONTROL],
      ["</s>", TokenType.CONTROL],
      ["<unk>", TokenType.UNKNOWN],
    ],
    tail: [],
    userDefined: USER_DEFINED_T5,
    keys: [],
    charsmap: false,
  },
  "t5-nfkc": {
    head: [
      ["<pad>", TokenType.CONTROL],
      ["</s>", TokenType.CONTROL],
      ["<unk>", TokenType.UNKNOWN],
    ],
    tail: [],
    userDefined: USER_DEFINED_T5,
    keys: [
      bool("tokenizer.ggml.add_space_prefix", true),
      bool("tokenizer.ggml.remove_extra_whitespaces", false),
    ],
    charsmap: true,
  },
  "xlmr-nfkc": {
    head: [
      ["<s>", TokenType.CONTROL],
      ["<pad>", TokenType.CONTROL],
      ["</s>", TokenType.CONTROL],
      ["<unk>", TokenType.UNKNOWN],
    ],
    tail: [["<mask>", TokenType.CONTROL]],
    userDefined: USER_DEFINED_XLMR,
    keys: [
      u32("tokenizer.ggml.bos_token_id", 0),
      u32("tokenizer.ggml.padding_token_id", 1),
      u32("tokenizer.ggml.eos_token_id", 2),
      u32("tokenizer.ggml.seperator_token_id", 2),
      u32("tokenizer.ggml.cls_token_id", 0),
      u32("tokenizer.ggml.unknown_token_id", 3),
      bool("tokenizer.ggml.add_bos_token", true),
      bool("tokenizer.ggml.add_eos_token", true),
      bool("tokenizer.ggml.add_space_prefix", true),
      bool("tokenizer.ggml.remove_extra_whitespaces", true),
    ],
    charsmap: true,
  },
};

export const UGM_VOCABS = Object.keys(LAYOUTS);

/** The metadata of vocabulary `name` (a vocabulary-only GGUF, as llama.cpp's vocab files are). */
export function ugmFixture(name: string): GgufKV[] {
  const layout = LAYOUTS[name];
  if (!layout) throw new Error(`no Unigram fixture "${name}"; have ${UGM_VOCABS.join(", ")}`);
  const rand = seeded(2581);
  const tokens: string[] = [];
  const scores: number[] = [];
  const types: number[] = [];
  const add = (text: string, type: number, score: number) => {
    tokens.push(text);
    types.push(type);
    scores.push(Math.fround(score));
  };
  for (const [text, type] of layout.head) add(text, type, 0);
  for (const p of PIECES) {
    const [text, score] = typeof p === "string" ? [p, undefined] : p;
    // llama.cpp refuses a vocabulary with a text twice; the lists above may repeat a letter.
    if (tokens.includes(text)) continue;
    // Log-probabilities: longer pieces are rarer, but beat the sum of their parts.
    const chars = [...text].length;
    add(
      text,
      UNUSED.includes(text) ? TokenType.UNUSED : TokenType.NORMAL,
      score ?? -(3 + 2 * chars + 6 * rand()),
    );
  }
  // "€" and "£" are no tokens, so "€5" competes with <unk> + "5", which scores 10 below the
  // lowest normal score plus the score of "5": "€5" is set 2.5 above that, "£5" 2.5 below (and
  // both, unused tokens, stay out of the lowest normal score).
  const lowest = Math.min(...scores.filter((_, i) => types[i] === TokenType.NORMAL));
  const five = scores[tokens.indexOf("5")]!;
  add("€5", TokenType.UNUSED, lowest - 7.5 + five);
  add("£5", TokenType.UNUSED, lowest - 12.5 + five);
  // A token for the whole code point keeps <unk> out, even when <unk> would score higher.
  add("¥", TokenType.UNUSED, lowest - 20);
  for (const t of layout.userDefined) add(t, TokenType.USER_DEFINED, -50);
  for (const t of BYTES) add(t, TokenType.BYTE, 0);
  for (const [text, type] of layout.tail) add(text, type, 0);

  const str = (key: string, value: string): GgufKV => ({ key, type: GgufValueType.STRING, value });
  const kvs: GgufKV[] = [
    str("general.architecture", "bert"),
    str("general.name", `ugm-${name}`),
    u32("bert.block_count", 1),
    u32("bert.context_length", 512),
    u32("bert.embedding_length", 8),
    u32("bert.feed_forward_length", 16),
    u32("bert.attention.head_count", 1),
    { key: "bert.attention.layer_norm_epsilon", type: GgufValueType.FLOAT32, value: 1e-12 },
    bool("bert.attention.causal", false),
    str("tokenizer.ggml.model", "t5"),
    str("tokenizer.ggml.pre", "default"),
    {
      key: "tokenizer.ggml.tokens",
      type: GgufValueType.ARRAY,
      value: { itemType: GgufValueType.STRING, items: tokens },
    },
    {
      key: "tokenizer.ggml.scores",
      type: GgufValueType.ARRAY,
      value: { itemType: GgufValueType.FLOAT32, items: Float32Array.from(scores) },
    },
    {
      key: "tokenizer.ggml.token_type",
      type: GgufValueType.ARRAY,
      value: { itemType: GgufValueType.INT32, items: Int32Array.from(types) },
    },
    ...layout.keys,
  ];
  if (layout.charsmap) {
    kvs.push({
      key: "tokenizer.ggml.precompiled_charsmap",
      type: GgufValueType.ARRAY,
      value: { itemType: GgufValueType.UINT8, items: buildCharsmap(CHARSMAP_RULES) },
    });
  }
  return kvs;
}

/** Hand-picked inputs: whitespace of every kind, scripts, emoji, rules of the charsmap, specials. */
const HAND_INPUTS = [
  "",
  " ",
  "   ",
  "hello world",
  "Hello World",
  " hello",
  "hello ",
  "  hello   world  ",
  "\thello\tworld",
  "hello\nworld",
  "\n",
  "\n\n",
  "line one\r\nline two\rthree",
  " \t \n ",
  "the quick brown fox jumps over the lazy dog",
  "Hello, world! How's it going?",
  "C++ and C# code: int x = 42;",
  "12345 67 123",
  "ab abab ba aaaa aaaaa",
  "naïve café über straße",
  "cafe\u0301 e\u0301e\u0301",
  "日本語のテキスト",
  "Привет мир",
  "🙂 emoji 🦙",
  "🦙🦙 🦙",
  "unknown chars ☃ ★ ☃☃",
  "ｆｕｌｌ ｗｉｄｔｈ １２３ ＡＢＣ",
  "ＡＩ and ＡＢ",
  "ﬁne ﬂow ﬀ",
  "x² ½ … ™ ℡ ㍿",
  "\u00a0nbsp\u3000ideo",
  "zero\u200bwidth\u200b",
  "a — b",
  "unused",
  "€5 £5 €€5 5€ ¥ ¥¥",
  "x y z x  y",
  "a<extra_id_0>b",
  "<extra_id_0>",
  " <extra_id_0> hello ",
  "<s>hello</s>",
  "<unk> <pad> <mask>",
  "<0x0A> <0x41>",
  "▁already▁marked",
  "a\u0000b",
];

/**
 * Every input of the test vectors: the hand-picked ones, one text longer than a slice of
 * Tokenizer.encodeAsync (8192 UTF-16 units), then seeded random mixed-script text.
 */
export function ugmInputs(): string[] {
  // Without user-defined tokens, which would cut it into fragments before any slicing.
  const plain = HAND_INPUTS.filter((s) => !s.includes("<extra_id_0>") && !s.includes("ＡＩ"));
  let long = "";
  for (let i = 0; long.length < 8300; i++) long += `${plain[i % plain.length]} `;
  const rand = seeded(5);
  const random: string[] = [];
  for (let i = 0; i < 150; i++) random.push(randomText(rand, 40).toWellFormed());
  return [...HAND_INPUTS, long, ...random];
}
