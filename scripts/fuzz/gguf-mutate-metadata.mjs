/** Mutations of the metadata: hyperparameters, tokenizer arrays and ids, chat templates. */

import { FLOATS, oddFloat, oddInt, scalar, T, T_NAME, typeFor } from "./gguf-values.mjs";
import { int, pick } from "./prng.mjs";

const SPECIAL_IDS = ["bos", "eos", "unknown", "seperator", "padding", "eot", "eom", "cls", "mask"].map(
  (s) => `tokenizer.ggml.${s}_token_id`,
);
/** Keys outside `<arch>.*` whose values steer the reader: alignment, split-model parts. */
const GENERAL_EXTRAS = ["general.alignment", "split.count", "split.no", "split.tensors.count"];
/** The sizes of a model, block_count first: it alone is set huge half the time. */
const SIZES = [
  "block_count",
  "block_count",
  "block_count",
  "context_length",
  "embedding_length",
  "feed_forward_length",
  "attention.head_count",
  "vocab_size",
];
/** Optional keys a subject may lack, added with odd values. */
const ARCH_EXTRAS = [
  "vocab_size",
  "attention.key_length",
  "attention.value_length",
  "attention.head_count_kv",
  "rope.dimension_count",
  "rope.freq_base",
  "rope.scaling.factor",
  "rope.scaling.original_context_length",
  "rope.scaling.low_freq_factor",
  "rope.scaling.high_freq_factor",
  "rope.scaling.attn_factor",
];
const TEMPLATE_WORDS = [
  "{%",
  "%}",
  "{{",
  "}}",
  "{#",
  "#}",
  "for",
  "in",
  "if",
  "elif",
  "else",
  "endif",
  "endfor",
  "set",
  "macro",
  "endmacro",
  "call",
  "raw",
  "endraw",
  "=",
  "(",
  ")",
  "[",
  "]",
  "{",
  "}",
  ".",
  ",",
  ":",
  "|",
  "~",
  "+",
  "-",
  "*",
  "/",
  "%",
  "==",
  "not",
  "and",
  "or",
  "is",
  "x",
  "messages",
  "m",
  "loop",
  "'s'",
  '"',
  "'",
  "1",
  "-1",
  "1e308",
  "none",
  "true",
  "tojson",
  "length",
  "\n",
  " ",
];

/** Hyperparameters: odd integers and floats, wrong types, deletions, absent keys added. */
export function mutateHparam(d, r) {
  const own = d.kvs.filter((kv) => kv.key.startsWith(`${d.arch}.`) || kv.key === "general.alignment");
  const roll = r();
  if (roll < 0.12) {
    // A size that everything per block, head or token is proportional to, set huge (issue 30).
    const kv = scalar(`${d.arch}.${pick(r, SIZES)}`, T.U32, pick(r, [2 ** 31, 2 ** 32 - 1, 2 ** 24, 65536]));
    d.set(kv);
    return `${kv.key} := U32 ${kv.value}`;
  }
  let key;
  if (roll < 0.18) key = pick(r, GENERAL_EXTRAS);
  else if (roll < 0.25 || own.length === 0) key = `${d.arch}.${pick(r, ARCH_EXTRAS)}`;
  else key = pick(r, own).key;
  const old = d.get(key);
  const op = r();
  if (op < 0.08) {
    d.drop(key);
    return `drop ${key}`;
  }
  if (op < 0.18) {
    const kv = pick(r, [
      { key, type: T.STR, value: "12" },
      { key, type: T.BOOL, value: true },
      { key, type: T.ARR, value: { itemType: T.U32, items: Uint32Array.of(1, 2) } },
      { key, type: T.F32, value: 64.5 },
    ]);
    d.set(kv);
    return `${key} := ${T_NAME[kv.type]} ${kv.type === T.ARR ? "[1,2]" : kv.value}`;
  }
  const float = old?.type === T.F32 || old?.type === T.F64 || /freq|factor|epsilon/.test(key);
  const v = float && r() < 0.8 ? oddFloat(r, old?.value) : oddInt(r, old?.value);
  const kv = scalar(
    key,
    float && typeof v === "number" && !Number.isInteger(v) ? pick(r, [T.F32, T.F64]) : typeFor(r, v),
    v,
  );
  d.set(kv);
  return `${key} := ${T_NAME[kv.type]} ${String(kv.value)}`;
}

/** Resizes an array value: shorter, empty, longer (repeating its items). */
function resize(arr, n) {
  const { itemType, items } = arr;
  if (Array.isArray(items))
    return {
      itemType,
      items: Array.from({ length: n }, (_, i) => items[i % Math.max(1, items.length)] ?? ""),
    };
  const out = new items.constructor(n);
  for (let i = 0; i < n; i++) out[i] = items.length ? items[i % items.length] : 0;
  return { itemType, items: out };
}

function newLength(r, n) {
  return pick(r, [0, 1, 2, Math.max(0, n - 1), n + 1, Math.floor(n / 2), n * 2, 3]);
}

/** Tokenizer arrays and ids: lengths, contents, special ids, model and pre-tokenizer names. */
export function mutateTokenizer(d, r) {
  const tokens = d.array("tokenizer.ggml.tokens");
  const n = tokens ? tokens.items.length : 0;
  const which = int(r, 9);
  if (which === 0 && tokens) {
    const items = [...tokens.items];
    const i = int(r, n);
    const v = pick(r, [
      "",
      " ",
      "\n",
      "x".repeat(70000),
      items[int(r, n)],
      "<0xZZ>",
      "<0x100>",
      "<|im_end|>",
      "\u2581",
      "<0x0A>",
      "\uFFFD",
    ]);
    items[i] = v;
    d.set({ key: "tokenizer.ggml.tokens", type: T.ARR, value: { itemType: T.STR, items } });
    return `tokens[${i}] := ${JSON.stringify(v.slice(0, 12))}${v.length > 12 ? `… (${v.length})` : ""}`;
  }
  if (which <= 2) {
    const key = pick(r, [
      "tokenizer.ggml.tokens",
      "tokenizer.ggml.scores",
      "tokenizer.ggml.token_type",
      "tokenizer.ggml.merges",
    ]);
    const arr = d.array(key);
    if (!arr) return mutateTokenizer(d, r);
    const len = newLength(r, arr.items.length);
    d.set({ key, type: T.ARR, value: resize(arr, len) });
    return `${key} length ${arr.items.length} -> ${len}`;
  }
  if (which === 3) {
    const key = pick(r, ["tokenizer.ggml.scores", "tokenizer.ggml.token_type"]);
    const arr = d.array(key);
    if (!arr || arr.items.length === 0) return mutateTokenizer(d, r);
    const items = arr.items.slice();
    const i = int(r, items.length);
    const v = key.endsWith("scores")
      ? pick(r, FLOATS)
      : pick(r, [-1, 0, 2, 3, 4, 5, 6, 7, 2 ** 31 - 1, -(2 ** 31)]);
    const typed =
      v < 0 && (items instanceof Uint32Array || items instanceof Uint8Array) ? Int32Array.from(items) : items;
    typed[i] = v;
    d.set({
      key,
      type: T.ARR,
      value: { itemType: typed instanceof Int32Array ? T.I32 : arr.itemType, items: typed },
    });
    return `${key}[${i}] := ${v}`;
  }
  if (which === 4) {
    const key = pick(r, SPECIAL_IDS);
    const v = pick(r, [-1, n, n - 1, n + 1, 2 ** 31, 2 ** 32 - 1, 2 ** 53, 0, 2n ** 64n - 1n]);
    const kv = scalar(key, typeFor(r, v), v);
    d.set(kv);
    return `${key} := ${T_NAME[kv.type]} ${String(v)}`;
  }
  if (which === 5) {
    const v = pick(r, ["gpt2", "bert", "llama", "t5", "", "rwkv", "none"]);
    d.set({ key: "tokenizer.ggml.model", type: T.STR, value: v });
    return `tokenizer.ggml.model := ${JSON.stringify(v)}`;
  }
  if (which === 6) {
    const v = pick(r, [
      "qwen2",
      "llama3",
      "llama-bpe",
      "gpt-2",
      "default",
      "deepseek-llm",
      "unknown-pre",
      "",
      "tekken",
      "smollm",
    ]);
    d.set({ key: "tokenizer.ggml.pre", type: T.STR, value: v });
    return `tokenizer.ggml.pre := ${JSON.stringify(v)}`;
  }
  if (which === 7) {
    const merges = d.array("tokenizer.ggml.merges");
    const base = merges ? [...merges.items] : [];
    const v = pick(r, [
      "a",
      "",
      " ",
      "a b c",
      "x  y",
      "zz qq",
      base[0] ?? "a b",
      "\u0120 \u0120",
      " a",
      "a ",
    ]);
    const items =
      base.length && r() < 0.7 ? base.map((m, i) => (i === int(r, base.length) ? v : m)) : [v, ...base];
    d.set({ key: "tokenizer.ggml.merges", type: T.ARR, value: { itemType: T.STR, items } });
    return `merges gets ${JSON.stringify(v)} (${items.length} merges)`;
  }
  const key = pick(r, [
    ...SPECIAL_IDS,
    "tokenizer.ggml.tokens",
    "tokenizer.ggml.scores",
    "tokenizer.ggml.merges",
    "tokenizer.ggml.add_bos_token",
    "tokenizer.ggml.model",
  ]);
  if (r() < 0.5) {
    d.drop(key);
    return `drop ${key}`;
  }
  const kv = pick(r, [
    { key, type: T.STR, value: "1" },
    { key, type: T.U8, value: 1 },
    { key, type: T.ARR, value: { itemType: T.I32, items: Int32Array.of(1, 2, 3) } },
    { key, type: T.ARR, value: { itemType: T.STR, items: ["a", "b"] } },
  ]);
  d.set(kv);
  return `${key} := ${T_NAME[kv.type]}`;
}

/** A random string of template syntax, a nest too deep, or a slice of the file's own template. */
function template(r, own) {
  const roll = r();
  if (roll < 0.3)
    return Array.from({ length: 1 + int(r, 60) }, () => pick(r, TEMPLATE_WORDS)).join(pick(r, ["", " "]));
  if (roll < 0.65) {
    const n = pick(r, [150, 250, 3000, 20000]);
    return pick(r, [
      `{{ ${"(".repeat(n)}1${")".repeat(n)} }}`,
      `${"{% if x %}".repeat(n)}y${"{% endif %}".repeat(n)}`,
      `{{ ${"[".repeat(n)}${"]".repeat(n)} }}`,
      `{{ x${".a".repeat(n)} }}`,
      `{{ ${"not ".repeat(n)}x }}`,
      `{{ ${"-".repeat(n)}1 }}`,
      `{{ 1${" + 1".repeat(n)} }}`,
      `${"{% for a in b %}".repeat(n)}`,
    ]);
  }
  if (roll < 0.8 && own) {
    const a = int(r, own.length);
    const b = a + int(r, own.length - a + 1);
    return own.slice(0, a) + own.slice(b);
  }
  return pick(r, [
    "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}",
    "{% raw %}",
    "{# unclosed",
    "{{ x | nosuchfilter }}",
    "{% set x = x %}",
    "{% for m in messages %}{% for m in messages %}{{ m }}{% endfor %}{% endfor %}",
    "a".repeat(1 << 20),
    "{{ 1e309 }}",
    "\u0000",
  ]);
}

export function mutateTemplate(d, r) {
  const own = d.get("tokenizer.chat_template")?.value;
  const key =
    r() < 0.8
      ? "tokenizer.chat_template"
      : pick(r, ["tokenizer.chat_template.tool_use", "tokenizer.chat_template.rag"]);
  if (r() < 0.1) {
    const kv = pick(r, [
      { key, type: T.U32, value: 7 },
      {
        key: "tokenizer.chat_templates",
        type: T.ARR,
        value: { itemType: T.STR, items: ["tool_use", "", "x".repeat(300)] },
      },
    ]);
    d.set(kv);
    return `${kv.key} := ${T_NAME[kv.type]}`;
  }
  const v = template(r, typeof own === "string" ? own : undefined);
  d.set({ key, type: T.STR, value: v });
  return `${key} := ${JSON.stringify(v.slice(0, 40))}${v.length > 40 ? `… (${v.length} chars)` : ""}`;
}
