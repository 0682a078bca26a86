/**
 * Mutations of a whole GGUF model for the loader fuzzers: hyperparameters, tokenizer arrays, chat
 * templates and the tensor table are changed as values and written with @minfer/gguf's writer;
 * header counts, shapes, types and offsets are patched as bytes after writing. `mutate` returns
 * the file's bytes and a description of each change (printed with a failure, to replay it).
 */
import { encodeGguf, encodeHeader, ggmlByteSize } from "../../packages/gguf/dist/index.js";
import { ggufFields } from "./gguf-fields.mjs";
import { int, pick } from "./prng.mjs";

export { loadSubjects } from "./gguf-subjects.mjs";
export { iterationRng, prng } from "./prng.mjs";

const T = {
  U8: 0,
  I8: 1,
  U16: 2,
  I16: 3,
  U32: 4,
  I32: 5,
  F32: 6,
  BOOL: 7,
  STR: 8,
  ARR: 9,
  U64: 10,
  I64: 11,
  F64: 12,
};
/** Larger tensors than this are not written whole: the file then ends before their data. */
const MAX_DATA = 8 << 20;

const INTS = [
  0,
  1,
  -1,
  2,
  3,
  7,
  2 ** 31 - 1,
  2 ** 31,
  2 ** 32 - 1,
  2 ** 32,
  2 ** 53,
  2n ** 63n,
  2n ** 64n - 1n,
];
const FLOATS = [
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  0,
  -0,
  -1,
  0.5,
  1e-45,
  3.4e38,
  1e300,
];
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
const GGML_TYPES = [0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 20, 24, 26, 28, 30, 31, 39, 1000];
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

const num = (v) => (typeof v === "bigint" ? v : Number.isSafeInteger(v) ? v : Math.trunc(v));

/** A value type that can hold `v` (an integer, possibly big, or a float). */
function typeFor(r, v) {
  if (typeof v === "bigint") return v < 0n ? T.I64 : pick(r, [T.U64, T.I64]);
  if (!Number.isInteger(v) || Object.is(v, -0)) return pick(r, [T.F32, T.F64]);
  if (v < -(2 ** 31) || v > 2 ** 32 - 1) return v < 0 ? T.I64 : pick(r, [T.U64, T.I64]);
  if (v < 0) return pick(r, [T.I32, T.I64, T.I8]);
  if (v > 2 ** 31 - 1) return pick(r, [T.U32, T.U64]);
  return pick(r, v <= 127 ? [T.U32, T.I32, T.U64, T.U8, T.I16, T.F32] : [T.U32, T.I32, T.U64, T.F32]);
}

function scalar(key, type, v) {
  if (type === T.U64 || type === T.I64) v = BigInt(num(v));
  else if (type !== T.F32 && type !== T.F64 && type !== T.STR && type !== T.BOOL) v = Number(v);
  if (type === T.I8 && (v < -128 || v > 127)) type = T.I32;
  if (type === T.U8 && (v < 0 || v > 255)) type = T.U32;
  return { key, type, value: v };
}

/** An integer near, or far from, `old`. */
function oddInt(r, old) {
  const o = typeof old === "number" && Number.isFinite(old) ? Math.trunc(old) : 0;
  const roll = r();
  if (roll < 0.55) return pick(r, INTS);
  if (roll < 0.8) return o + pick(r, [-2, -1, 1, 2]);
  if (roll < 0.9) return o * pick(r, [2, 3, 16, 1000]);
  return Math.floor(o / pick(r, [2, 3, 4]));
}

/** A number that is not a sane hyperparameter float. */
const oddFloat = (r, old) =>
  r() < 0.7 ? pick(r, FLOATS) : (typeof old === "number" ? old : 1) * pick(r, [-1, 1e6, 1e-6]);

class Draft {
  constructor(s) {
    this.kvs = s.kvs.map((kv) => ({ ...kv }));
    this.tensors = s.tensors.map((t) => ({ ...t, dims: [...t.dims] }));
    this.arch = String(s.kvs.find((kv) => kv.key === "general.architecture")?.value ?? "llama");
  }
  get(key) {
    return this.kvs.find((kv) => kv.key === key);
  }
  set(kv) {
    const i = this.kvs.findIndex((x) => x.key === kv.key);
    if (i >= 0) this.kvs[i] = kv;
    else this.kvs.push(kv);
  }
  drop(key) {
    this.kvs = this.kvs.filter((kv) => kv.key !== key);
  }
  array(key) {
    const kv = this.get(key);
    return kv?.type === T.ARR ? kv.value : undefined;
  }
}

/** Hyperparameters: odd integers and floats, wrong types, deletions, absent keys added. */
function mutateHparam(d, r) {
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

const T_NAME = Object.fromEntries(Object.entries(T).map(([k, v]) => [v, k]));

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
function mutateTokenizer(d, r) {
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

function mutateTemplate(d, r) {
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

/** The tensor table: shapes, types, names, presence, order and contents. */
function mutateTensor(d, r) {
  const i = int(r, d.tensors.length);
  const t = d.tensors[i];
  const op = int(r, 8);
  if (op <= 1) {
    const k = int(r, t.dims.length + 1);
    const dims = t.dims.slice();
    const roll = r();
    let what;
    if (roll < 0.15 && dims.length < 4) {
      dims.splice(k, 0, pick(r, [1, 2]));
      what = "adds a dim";
    } else if (roll < 0.3 && dims.length > 1) {
      dims.splice(Math.min(k, dims.length - 1), 1);
      what = "drops a dim";
    } else if (roll < 0.4 && dims.length > 1) {
      dims.reverse();
      what = "reverses its dims";
    } else {
      const j = Math.min(k, dims.length - 1);
      dims[j] = pick(r, [
        0,
        1,
        dims[j] * 2,
        dims[j] + 1,
        dims[j] - 1,
        dims[j] + 32,
        2 ** 31,
        2 ** 32 - 1,
        2 ** 40,
      ]);
      what = `dim ${j} := ${dims[j]}`;
    }
    t.dims = dims;
    return `tensor ${t.name} ${what} -> [${dims.join(", ")}]`;
  }
  if (op === 2) {
    t.type = pick(r, GGML_TYPES);
    return `tensor ${t.name} type := ${t.type}`;
  }
  if (op === 3) {
    const old = t.name;
    t.name = pick(r, [
      `blk.${pick(r, [99, 4294967296, 5, 1, 2])}.attn_norm.weight`,
      "blk.-1.attn_q.weight",
      "blk.99999999999999999999.ffn_up.weight",
      "",
      "x".repeat(300),
      d.tensors[int(r, d.tensors.length)].name,
      old.replace(/^blk\.(\d+)\./, (_, n) => `blk.${Number(n) + 1}.`),
    ]);
    return `tensor ${old} renamed ${JSON.stringify(t.name.slice(0, 40))}`;
  }
  if (op === 4) {
    d.tensors.splice(i, 1);
    return `drop tensor ${t.name}`;
  }
  if (op === 5) {
    const extra = {
      name: pick(r, ["extra.weight", `blk.${int(r, 8)}.extra.weight`, "rope_freqs.weight"]),
      type: 0,
      dims: [pick(r, [1, 4, 8, 32])],
      data: undefined,
    };
    d.tensors.splice(int(r, d.tensors.length + 1), 0, extra);
    return `add tensor ${extra.name} [${extra.dims}]`;
  }
  if (op === 6) {
    const j = int(r, d.tensors.length);
    [d.tensors[i], d.tensors[j]] = [d.tensors[j], d.tensors[i]];
    return `swap tensors ${i} and ${j}`;
  }
  // Contents: NaN / Inf / huge values (bytes of 0xff, 0x7f) in a tensor's data.
  const byte = pick(r, [0xff, 0x7f, 0x7c]);
  t.data = new Uint8Array(t.data?.length ?? 0).fill(byte);
  return `tensor ${t.name} data filled with 0x${byte.toString(16)}`;
}

/** A tensor's data for its (possibly changed) type and shape, or undefined when it cannot have any. */
function dataFor(t) {
  let size;
  try {
    size = ggmlByteSize(t.type, t.dims);
  } catch {
    return undefined;
  }
  if (!Number.isSafeInteger(size) || size > MAX_DATA) return undefined;
  if (t.data && t.data.length === size) return t.data;
  const out = new Uint8Array(size);
  if (t.data) out.set(t.data.subarray(0, Math.min(size, t.data.length)));
  return out;
}

/**
 * Writes a draft. Tensors whose data cannot be made (unknown type, ragged rows, huge) get a
 * header anyway: the file ends before their data. A draft the writer refuses (a duplicate name or
 * key, an unwritable shape) becomes undefined.
 */
function encode(d) {
  const withData = d.tensors.map((t) => ({ ...t, data: dataFor(t) }));
  try {
    if (withData.every((t) => t.data)) return encodeGguf(d.kvs, withData);
    const layout = encodeHeader(d.kvs, withData);
    const out = new Uint8Array(Math.min(layout.fileSize, layout.header.length + MAX_DATA));
    out.set(layout.header);
    withData.forEach((t, k) => {
      const at = layout.header.length + layout.offsets[k];
      if (t.data && at + t.data.length <= out.length) out.set(t.data, at);
    });
    return out;
  } catch {
    return undefined;
  }
}

const U64_EXTREMES = [0n, 1n, 2n ** 31n, 2n ** 32n - 1n, 2n ** 32n, 2n ** 53n, 2n ** 63n, 2n ** 64n - 1n];

/** Header fields patched as bytes: counts, lengths, value types, dims, tensor types, offsets; or a cut. */
function patchBytes(bytes, r) {
  const f = ggufFields(bytes);
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const kind = pick(r, [
    "counts",
    "counts",
    "strings",
    "valueTypes",
    "nDims",
    "dims",
    "dims",
    "tensorTypes",
    "offsets",
    "offsets",
    "cut",
  ]);
  if (kind === "cut") {
    const at = r() < 0.5 ? int(r, f.end) : f.end + int(r, bytes.length - f.end);
    return { bytes: bytes.slice(0, at), op: `truncate at ${at} of ${bytes.length}` };
  }
  const p = pick(r, f[kind]);
  if (kind === "valueTypes" || kind === "nDims" || kind === "tensorTypes") {
    const old = v.getUint32(p, true);
    const val = pick(r, [old + 1, old - 1, 0, 4, 8, 9, 13, 39, 1000, 0xffffffff]) >>> 0;
    v.setUint32(p, val, true);
    return { bytes, op: `${kind}@${p} ${old} -> ${val}` };
  }
  const old = v.getBigUint64(p, true);
  const roll = r();
  const val =
    roll < 0.5 ? pick(r, U64_EXTREMES) : BigInt.asUintN(64, old + BigInt(pick(r, [-32, -1, 1, 32, 4096])));
  v.setBigUint64(p, val, true);
  return { bytes, op: `${kind}@${p} ${old} -> ${val}` };
}

const VALUE_MUTATIONS = [
  [0.3, mutateHparam],
  [0.24, mutateTokenizer],
  [0.14, mutateTemplate],
  [0.26, mutateTensor],
];

/** One of `[weight, value]` pairs, with probability proportional to its weight. */
function weighted(r, choices) {
  let x = r() * choices.reduce((a, [w]) => a + w, 0);
  for (const [w, v] of choices) {
    x -= w;
    if (x < 0) return v;
  }
  return choices[choices.length - 1][1];
}

/**
 * One mutated file of `subject` from the stream `r`: 1–3 value mutations, then (sometimes, or
 * whenever the writer refused them) a byte patch of the header. `{ bytes, ops }`.
 */
export function mutate(subject, r) {
  const ops = [];
  const d = new Draft(subject);
  const nValue = r() < 0.15 ? 0 : r() < 0.7 ? 1 : 2 + int(r, 2);
  for (let k = 0; k < nValue; k++) {
    ops.push(weighted(r, VALUE_MUTATIONS)(d, r));
  }
  let bytes = encode(d);
  if (!bytes) {
    ops.push("(the writer refused that: patching bytes of the original instead)");
    bytes = encode(new Draft(subject));
  }
  if (nValue === 0 || ops.length > nValue || r() < 0.1) {
    const p = patchBytes(bytes, r);
    bytes = p.bytes;
    ops.push(p.op);
  }
  return { bytes, ops };
}
