// tokenizer.json + tokenizer_config.json (byte-level BPE) → `tokenizer.ggml.*` keys and the chat
// template(s), as llama.cpp's converter writes them.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type GgufKV, GgufValueType } from "@minfer/gguf";
import { ConvertError } from "./errors.js";
import type { HfConfig } from "./hf-config.js";

/** `tokenizer.ggml.token_type` values. */
const NORMAL = 1;
const CONTROL = 3;
const USER_DEFINED = 4;

/**
 * Split regexes of tokenizer.json pre-tokenizers, as Hugging Face writes them, and the
 * `tokenizer.ggml.pre` name @minfer/tokenizer (and llama.cpp) gives each.
 */
const CONTRACTIONS_I = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
const TAIL = " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
export const KNOWN_SPLITS: Record<string, string> = {
  [`${CONTRACTIONS_I}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|${TAIL}`]: "llama-bpe",
  [`${CONTRACTIONS_I}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}|${TAIL}`]: "qwen2",
  "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+": "gpt-2",
};

export interface HfTokenizer {
  metadata: GgufKV[];
  nVocab: number;
  pre: string;
}

interface AddedToken {
  id: number;
  content: string;
  special?: boolean;
}

interface Piece {
  type?: string;
  pattern?: { Regex?: string; String?: string };
  use_regex?: boolean;
  pretokenizers?: Piece[];
  decoders?: Piece[];
  content?: string;
}

function readJson(path: string): Record<string, unknown> {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
  } catch (e) {
    throw new ConvertError("BAD_FILE", `${path}: not valid JSON (${(e as Error).message})`);
  }
}

/** The pre-tokenizer of a tokenizer.json, by name; one whose split rule is unknown is refused with it. */
export function identifyPreTokenizer(path: string, pre: Piece | null | undefined): string {
  const parts = !pre ? [] : pre.type === "Sequence" ? (pre.pretokenizers ?? []) : [pre];
  const splits = parts.filter((p) => p.type === "Split");
  const byteLevel = parts.find((p) => p.type === "ByteLevel");
  const rest = parts.filter((p) => p.type !== "Split" && p.type !== "ByteLevel");
  if (!byteLevel)
    throw new ConvertError(
      "UNSUPPORTED_TOKENIZER",
      `${path}: pre_tokenizer ${JSON.stringify(pre?.type ?? null)} has no ByteLevel step; only byte-level BPE is supported`,
    );
  if (rest.length)
    throw new ConvertError(
      "UNKNOWN_PRE_TOKENIZER",
      `${path}: pre-tokenizer step(s) ${rest.map((p) => p.type).join(", ")} are not supported`,
    );
  if (splits.length === 0 && byteLevel.use_regex !== false) return "gpt-2";
  if (splits.length === 1 && byteLevel.use_regex === false) {
    const regex = splits[0]!.pattern?.Regex;
    const name = regex !== undefined ? KNOWN_SPLITS[regex] : undefined;
    if (name) return name;
    throw new ConvertError(
      "UNKNOWN_PRE_TOKENIZER",
      `${path}: the pre-tokenizer's split pattern ${JSON.stringify(splits[0]!.pattern)} is not one minfer knows (known: ${[...new Set(Object.values(KNOWN_SPLITS))].join(", ")})`,
    );
  }
  throw new ConvertError(
    "UNKNOWN_PRE_TOKENIZER",
    `${path}: a pre-tokenizer of ${splits.length} Split step(s) with ByteLevel use_regex ${byteLevel.use_regex} is not one minfer knows`,
  );
}

/** Token texts llama.cpp treats as control tokens even when tokenizer.json does not mark them special. */
function looksSpecial(t: string): boolean {
  return (
    ["<pad>", "<mask>", "<2mass>", "[@BOS@]"].includes(t) ||
    (t.startsWith("<|") && t.endsWith("|>")) ||
    (t.startsWith("<｜") && t.endsWith("｜>")) ||
    (t.startsWith("<unused") && t.endsWith(">"))
  );
}

const u32 = (key: string, value: number): GgufKV => ({ key, type: GgufValueType.UINT32, value });
const str = (key: string, value: string): GgufKV => ({ key, type: GgufValueType.STRING, value });
const bool = (key: string, value: boolean): GgufKV => ({ key, type: GgufValueType.BOOL, value });
const strArray = (key: string, items: string[]): GgufKV => ({
  key,
  type: GgufValueType.ARRAY,
  value: { itemType: GgufValueType.STRING, items },
});

/** Reads the tokenizer of checkpoint `dir`. The vocabulary is padded to config.json's vocab_size. */
export function readHfTokenizer(dir: string, config: HfConfig): HfTokenizer {
  const path = join(dir, "tokenizer.json");
  if (!existsSync(path)) throw new ConvertError("MISSING_FILE", `${dir} has no tokenizer.json`);
  const tj = readJson(path);
  const cfgPath = join(dir, "tokenizer_config.json");
  const tc = existsSync(cfgPath) ? readJson(cfgPath) : {};
  const model = (tj.model ?? {}) as Record<string, unknown>;
  if (model.type !== "BPE")
    throw new ConvertError(
      "UNSUPPORTED_TOKENIZER",
      `${path}: tokenizer model ${JSON.stringify(model.type ?? null)} is not supported; only byte-level BPE (Llama 3, Qwen2/3, GPT-2 style)`,
    );
  if (model.byte_fallback === true)
    throw new ConvertError(
      "UNSUPPORTED_TOKENIZER",
      `${path}: a SentencePiece-style BPE tokenizer (byte_fallback, ▁ for spaces: Llama 2) is not supported; only byte-level BPE`,
    );
  const pre = identifyPreTokenizer(path, tj.pre_tokenizer as Piece | null);

  const vocab = model.vocab as Record<string, number> | undefined;
  if (!vocab || typeof vocab !== "object")
    throw new ConvertError("BAD_TOKENIZER", `${path}: model.vocab is missing`);
  const added = (Array.isArray(tj.added_tokens) ? tj.added_tokens : []) as AddedToken[];
  let maxId = -1;
  for (const id of Object.values(vocab)) maxId = Math.max(maxId, id);
  for (const a of added) maxId = Math.max(maxId, a.id);
  const nVocab = Math.max(config.vocabSize ?? 0, maxId + 1);
  const tokens: (string | undefined)[] = new Array(nVocab);
  const types = new Int32Array(nVocab);
  for (const [t, id] of Object.entries(vocab)) {
    if (!Number.isInteger(id) || id < 0)
      throw new ConvertError("BAD_TOKENIZER", `${path}: token ${JSON.stringify(t)} has id ${id}`);
    tokens[id] = t;
    types[id] = NORMAL;
  }
  for (const a of added) {
    if (!Number.isInteger(a.id) || a.id < 0 || typeof a.content !== "string")
      throw new ConvertError("BAD_TOKENIZER", `${path}: added token ${JSON.stringify(a)} is malformed`);
    tokens[a.id] = a.content;
    types[a.id] = a.special || looksSpecial(a.content) ? CONTROL : USER_DEFINED;
  }
  for (let i = 0; i < nVocab; i++) {
    if (tokens[i] === undefined) {
      tokens[i] = `[PAD${i}]`;
      types[i] = USER_DEFINED;
    }
  }
  const rawMerges = Array.isArray(model.merges) ? model.merges : [];
  const merges = rawMerges.map((m: unknown, i) => {
    if (typeof m === "string") return m;
    if (Array.isArray(m) && m.length === 2 && m.every((x) => typeof x === "string")) return `${m[0]} ${m[1]}`;
    throw new ConvertError(
      "BAD_TOKENIZER",
      `${path}: merge ${i} ${JSON.stringify(m)} is neither "a b" nor [a, b]`,
    );
  });
  if (merges.length === 0) throw new ConvertError("BAD_TOKENIZER", `${path}: model.merges is empty`);

  const kv: GgufKV[] = [
    str("tokenizer.ggml.model", "gpt2"),
    str("tokenizer.ggml.pre", pre),
    strArray("tokenizer.ggml.tokens", tokens as string[]),
    {
      key: "tokenizer.ggml.token_type",
      type: GgufValueType.ARRAY,
      value: { itemType: GgufValueType.INT32, items: types },
    },
    strArray("tokenizer.ggml.merges", merges),
  ];

  // Special tokens: tokenizer_config.json's `<x>_token` (text or {content}), else config.json's ids.
  const idOf = new Map<string, number>();
  for (let i = 0; i < nVocab; i++) if (!idOf.has(tokens[i]!)) idOf.set(tokens[i]!, i);
  const special = (name: string): number | undefined => {
    const v = tc[`${name}_token`];
    const text = typeof v === "string" ? v : (v as { content?: unknown } | null)?.content;
    if (typeof text === "string" && idOf.has(text)) return idOf.get(text);
    return undefined;
  };
  const ids: [string, number | undefined][] = [
    ["bos_token_id", special("bos") ?? config.bosId],
    ["eos_token_id", special("eos") ?? config.eosId],
    ["unknown_token_id", special("unk")],
    [
      "padding_token_id",
      special("pad") ?? (typeof config.raw.pad_token_id === "number" ? config.raw.pad_token_id : undefined),
    ],
  ];
  for (const [key, id] of ids) {
    if (id === undefined) continue;
    if (id >= nVocab)
      throw new ConvertError(
        "BAD_TOKENIZER",
        `${key.replace("_id", "")} id ${id} is outside the vocabulary of ${nVocab}`,
      );
    kv.push(u32(`tokenizer.ggml.${key}`, id));
  }
  const addBos = addToken(tc, tj, "bos", tokens[special("bos") ?? config.bosId ?? -1]);
  if (addBos !== undefined) kv.push(bool("tokenizer.ggml.add_bos_token", addBos));
  if (typeof tc.add_eos_token === "boolean") kv.push(bool("tokenizer.ggml.add_eos_token", tc.add_eos_token));
  kv.push(...chatTemplates(dir, cfgPath, tc));
  return { metadata: kv, nVocab, pre };
}

/** add_bos_token: tokenizer_config.json's, else whether the post-processor's template starts with the BOS token. */
function addToken(
  tc: Record<string, unknown>,
  tj: Record<string, unknown>,
  which: "bos",
  text: string | undefined,
): boolean | undefined {
  if (typeof tc[`add_${which}_token`] === "boolean") return tc[`add_${which}_token`] as boolean;
  const pp = tj.post_processor as { type?: string; processors?: unknown[]; single?: unknown[] } | null;
  const procs = pp?.type === "Sequence" ? (pp.processors ?? []) : pp ? [pp] : [];
  for (const p of procs as { type?: string; single?: { SpecialToken?: { id?: string } }[] }[]) {
    if (p.type !== "TemplateProcessing" || !Array.isArray(p.single)) continue;
    const first = p.single[0]?.SpecialToken?.id;
    return text !== undefined && first === text;
  }
  return undefined;
}

/** `chat_template` (a string, or a list of {name, template}) → tokenizer.chat_template[.NAME]. */
function chatTemplates(dir: string, cfgPath: string, tc: Record<string, unknown>): GgufKV[] {
  let t = tc.chat_template;
  const jinja = join(dir, "chat_template.jinja");
  if (t === undefined && existsSync(jinja)) t = readFileSync(jinja, "utf8");
  if (t === undefined || t === null) return [];
  if (typeof t === "string") return [str("tokenizer.chat_template", t)];
  if (!Array.isArray(t))
    throw new ConvertError("BAD_TOKENIZER", `${cfgPath}: chat_template is neither a string nor a list`);
  const kv: GgufKV[] = [];
  const names: string[] = [];
  for (const e of t as { name?: unknown; template?: unknown }[]) {
    if (typeof e?.name !== "string" || typeof e.template !== "string")
      throw new ConvertError(
        "BAD_TOKENIZER",
        `${cfgPath}: a chat_template entry lacks a name or template string`,
      );
    if (e.name === "default") kv.push(str("tokenizer.chat_template", e.template));
    else {
      names.push(e.name);
      kv.push(str(`tokenizer.chat_template.${e.name}`, e.template));
    }
  }
  if (names.length) kv.push(strArray("tokenizer.chat_templates", names));
  return kv;
}
