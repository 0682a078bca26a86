// Test-only: tiny random BERT-family checkpoints (tiny-bert-configs.json) with the tensors each
// Hugging Face class saves — listed here from transformers' (and nomic's) modeling code,
// independently of archs/*.ts — their tokenizer files, sentence-transformers pooling files, and
// the token ids of a few texts from reference tokenizers. `tinyBertGguf` converts one to GGUF and
// writes the float64 reference's outputs beside it, for other packages' tests.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { convertCheckpoint } from "./convert.js";
import { BertReference } from "./hf-reference-bert.js";
import { type Dtype, type HfTensor, normalRng, roundTo, writeSafetensors } from "./test-helpers.js";
import { writeJson } from "./test-tokenizers.js";
import {
  TINY_UNIGRAM,
  TINY_WORDPIECE,
  unigramEncode,
  wordPieceEncode,
  writeUnigramTokenizer,
  writeWordPieceTokenizer,
} from "./test-tokenizers-bert.js";

export interface TinyBertCase {
  name: string;
  /** Hugging Face class (config.json `architectures`). */
  class: string;
  model_type: string;
  tokenizer: "wordpiece-json" | "wordpiece-txt" | "unigram";
  /** sentence-transformers pooling, or null for a classifier. */
  pooling: "mean" | "cls" | null;
  /** LayerNorm parameters saved as gamma/beta (checkpoints from TensorFlow-era BERT). */
  legacyNames?: boolean;
  seed: number;
  config: Record<string, unknown>;
}

export const TINY_BERT_CASES: readonly TinyBertCase[] = (
  JSON.parse(readFileSync(new URL("./tiny-bert-configs.json", import.meta.url), "utf8")) as {
    cases: TinyBertCase[];
  }
).cases;

export function tinyBertCase(name: string): TinyBertCase {
  const c = TINY_BERT_CASES.find((x) => x.name === name);
  if (!c)
    throw new Error(`no tiny BERT case ${name}; cases: ${TINY_BERT_CASES.map((x) => x.name).join(", ")}`);
  return structuredClone(c);
}

/** Texts the embedding tests (and the reference JSON) use: every word is in both tiny vocabularies. */
export const TINY_BERT_TEXTS: readonly string[] = [
  "hello world",
  "The quick brown fox jumps over the lazy dog.",
  "How many people live in Berlin?",
  "Paris is the capital of France, a city on a river.",
  "this sentence is a small test of the embed model",
  "Café",
];

/** (query, document) pairs the reranker tests use. */
export const TINY_BERT_PAIRS: readonly (readonly [string, string])[] = [
  ["How many people live in Berlin?", "Berlin is a city of about four million people."],
  ["How many people live in Berlin?", "The cat sat on the mat."],
  ["what is the capital of France?", "Paris is the capital of France."],
];

interface TensorSpec {
  name: string;
  shape: number[];
  mean: number;
  std: number;
}

const num = (c: Record<string, unknown>, k: string): number => {
  const v = c[k];
  if (typeof v !== "number") throw new Error(`tiny config lacks ${k}`);
  return v;
};

/** The tensors a checkpoint of `cls` holds, by their (canonical) Hugging Face names. */
export function bertTensors(cls: string, c: Record<string, unknown>): TensorSpec[] {
  const mat = (name: string, rows: number, cols: number, std = 0.2): TensorSpec => ({
    name,
    shape: [rows, cols],
    mean: 0,
    std,
  });
  const vec = (name: string, n: number, mean = 0, std = 0.1): TensorSpec => ({ name, shape: [n], mean, std });
  const norm = (name: string, n: number) => [vec(`${name}.weight`, n, 1), vec(`${name}.bias`, n)];
  if (cls === "NomicBertModel") {
    const E = num(c, "n_embd");
    const F = num(c, "n_inner");
    const out = [
      mat("embeddings.word_embeddings.weight", num(c, "vocab_size"), E, 0.5),
      mat("embeddings.token_type_embeddings.weight", num(c, "type_vocab_size"), E, 0.1),
      ...norm("emb_ln", E),
    ];
    for (let i = 0; i < num(c, "n_layer"); i++) {
      const p = `encoder.layers.${i}.`;
      out.push(
        mat(`${p}attn.Wqkv.weight`, 3 * E, E),
        mat(`${p}attn.out_proj.weight`, E, E),
        ...norm(`${p}norm1`, E),
        mat(`${p}mlp.fc11.weight`, F, E),
        mat(`${p}mlp.fc12.weight`, F, E),
        mat(`${p}mlp.fc2.weight`, E, F),
        ...norm(`${p}norm2`, E),
      );
    }
    return out;
  }
  const E = num(c, "hidden_size");
  const F = num(c, "intermediate_size");
  const prefix =
    cls === "BertForSequenceClassification"
      ? "bert."
      : cls === "XLMRobertaForSequenceClassification"
        ? "roberta."
        : "";
  const linear = (name: string, rows: number, cols: number) => [
    mat(`${name}.weight`, rows, cols),
    vec(`${name}.bias`, rows),
  ];
  const enc: TensorSpec[] = [
    mat("embeddings.word_embeddings.weight", num(c, "vocab_size"), E, 0.5),
    mat("embeddings.position_embeddings.weight", num(c, "max_position_embeddings"), E, 0.2),
    mat("embeddings.token_type_embeddings.weight", num(c, "type_vocab_size"), E, 0.1),
    ...norm("embeddings.LayerNorm", E),
  ];
  for (let i = 0; i < num(c, "num_hidden_layers"); i++) {
    const p = `encoder.layer.${i}.`;
    enc.push(
      ...linear(`${p}attention.self.query`, E, E),
      ...linear(`${p}attention.self.key`, E, E),
      ...linear(`${p}attention.self.value`, E, E),
      ...linear(`${p}attention.output.dense`, E, E),
      ...norm(`${p}attention.output.LayerNorm`, E),
      ...linear(`${p}intermediate.dense`, F, E),
      ...linear(`${p}output.dense`, E, F),
      ...norm(`${p}output.LayerNorm`, E),
    );
  }
  // XLMRobertaForSequenceClassification builds its encoder without the pooler.
  if (cls !== "XLMRobertaForSequenceClassification") enc.push(...linear("pooler.dense", E, E));
  const out = enc.map((t) => ({ ...t, name: prefix + t.name }));
  const labels = Object.keys((c.id2label as Record<string, string> | undefined) ?? {}).length;
  if (cls === "BertForSequenceClassification") out.push(...linear("classifier", labels, E));
  if (cls === "XLMRobertaForSequenceClassification")
    out.push(...linear("classifier.dense", E, E), ...linear("classifier.out_proj", labels, E));
  return out;
}

export interface TinyBertCheckpoint {
  dir: string;
  case: TinyBertCase;
  /** config.json as written. */
  config: Record<string, unknown>;
  /** The tensors as written (values rounded to the dtype), by canonical checkpoint name. */
  tensors: Map<string, HfTensor>;
  /** Token texts by id, as the Hugging Face tokenizer has them. */
  vocab: readonly string[];
  /** The reference tokenizer's ids of `text` with the model's special tokens around them. */
  encode(text: string): number[];
  /**
   * The ids of a (query, document) pair as llama.cpp's server builds them — BERT
   * [CLS] q [SEP] d [SEP], XLM-R <s> q </s></s> d </s> — and the token types transformers gives them.
   */
  encodePair(query: string, doc: string): { ids: number[]; types: number[] };
}

export interface TinyBertOptions {
  dtype?: Dtype;
  /** Edits the case's config before anything is written. */
  edit?: (config: Record<string, unknown>) => void;
  /** Edits the list of tensors written to model.safetensors (the checkpoint's `tensors` keep the drawn ones). */
  saved?: (tensors: HfTensor[]) => HfTensor[];
}

/** Writes the tiny checkpoint `name` into `dir`: config.json, tokenizer and pooling files, model.safetensors. */
export async function tinyBertCheckpoint(
  name: string,
  dir: string,
  o: TinyBertOptions = {},
): Promise<TinyBertCheckpoint> {
  const c = tinyBertCase(name);
  o.edit?.(c.config);
  mkdirSync(dir, { recursive: true });
  const dtype = o.dtype ?? "F32";
  const rnd = normalRng(c.seed);
  const tensors: HfTensor[] = bertTensors(c.class, c.config).map((s) => {
    const n = s.shape.reduce((a, b) => a * b, 1);
    const v = new Float32Array(n);
    for (let i = 0; i < n; i++) v[i] = s.mean + s.std * rnd();
    return { name: s.name, shape: s.shape, values: roundTo(v, dtype) };
  });
  const config = {
    architectures: [c.class],
    model_type: c.model_type,
    ...c.config,
    torch_dtype: dtype === "F32" ? "float32" : dtype === "F16" ? "float16" : "bfloat16",
  };
  writeJson(join(dir, "config.json"), config);
  const unigram = c.tokenizer === "unigram";
  if (unigram) writeUnigramTokenizer(dir, TINY_UNIGRAM);
  else writeWordPieceTokenizer(dir, TINY_WORDPIECE, c.tokenizer === "wordpiece-txt");
  if (c.pooling) {
    writeJson(join(dir, "modules.json"), [
      { idx: 0, name: "0", path: "", type: "sentence_transformers.models.Transformer" },
      { idx: 1, name: "1", path: "1_Pooling", type: "sentence_transformers.models.Pooling" },
      { idx: 2, name: "2", path: "2_Normalize", type: "sentence_transformers.models.Normalize" },
    ]);
    mkdirSync(join(dir, "1_Pooling"), { recursive: true });
    writeJson(join(dir, "1_Pooling", "config.json"), {
      word_embedding_dimension: c.config.hidden_size ?? c.config.n_embd,
      pooling_mode_cls_token: c.pooling === "cls",
      pooling_mode_mean_tokens: c.pooling === "mean",
      pooling_mode_max_tokens: false,
      pooling_mode_mean_sqrt_len_tokens: false,
      pooling_mode_weightedmean_tokens: false,
      pooling_mode_lasttoken: false,
      include_prompt: true,
    });
  }
  const legacy = (name: string) =>
    name.replace(/LayerNorm\.weight$/, "LayerNorm.gamma").replace(/LayerNorm\.bias$/, "LayerNorm.beta");
  const saved = c.legacyNames ? tensors.map((t) => ({ ...t, name: legacy(t.name) })) : tensors;
  writeSafetensors(join(dir, "model.safetensors"), o.saved ? o.saved(saved) : saved, dtype);

  const vocab = unigram ? TINY_UNIGRAM.map(([p]) => p) : TINY_WORDPIECE;
  const id = (t: string) => vocab.indexOf(t);
  const bare = (text: string) =>
    unigram ? unigramEncode(TINY_UNIGRAM, text) : wordPieceEncode(TINY_WORDPIECE, text);
  const [first, last] = unigram ? [id("<s>"), id("</s>")] : [id("[CLS]"), id("[SEP]")];
  return {
    dir,
    case: c,
    config,
    tensors: new Map(tensors.map((t) => [t.name, t])),
    vocab,
    encode: (text) => [first, ...bare(text), last],
    encodePair: (query, doc) => {
      const a = [first, ...bare(query), last];
      const b = [...(unigram ? [last] : []), ...bare(doc), last];
      // BERT's second segment is token type 1; RoBERTa has one token type.
      return { ids: [...a, ...b], types: [...a.map(() => 0), ...b.map(() => (unigram ? 0 : 1))] };
    },
  };
}

/** The reference of a tiny checkpoint (its class, config, tensors and pooling). */
export function tinyBertReference(ck: TinyBertCheckpoint): BertReference {
  return new BertReference({
    class: ck.case.class,
    config: ck.config,
    tensors: ck.tensors,
    pooling: ck.case.pooling ?? undefined,
  });
}

/** What `tinyBertGguf` writes beside the GGUF: the float64 reference's outputs on the texts. */
export interface TinyBertReferenceFile {
  case: string;
  class: string;
  /** sentence-transformers pooling, or "rank" for a classifier. */
  pooling: "mean" | "cls" | "rank";
  /** Embedding models: per text, the ids fed and the pooled vector (raw and L2-normalised). */
  embeddings?: { text: string; ids: number[]; pooled: number[]; normalized: number[] }[];
  /**
   * Classifiers: per pair, the ids fed and the head's logits with every token type 0 (what
   * llama.cpp computes) and with transformers' token types (BERT's document segment is type 1).
   */
  scores?: {
    query: string;
    document: string;
    ids: number[];
    types: number[];
    score: number[];
    scoreTypes: number[];
  }[];
}

/**
 * Converts the tiny checkpoint `caseName` (tiny-bert-configs.json) to `${dir}/${caseName}-${type}.gguf`
 * and writes the float64 reference's outputs to `${dir}/${caseName}-${type}.reference.json`
 * ({@link TinyBertReferenceFile}). Returns the GGUF's path.
 */
export async function tinyBertGguf(caseName: string, dir: string, type = "f32"): Promise<string> {
  const ck = await tinyBertCheckpoint(caseName, join(dir, `${caseName}-hf`));
  const out = join(dir, `${caseName}-${type}.gguf`);
  await convertCheckpoint(ck.dir, out, { type });
  const ref = tinyBertReference(ck);
  const file: TinyBertReferenceFile = {
    case: caseName,
    class: ck.case.class,
    pooling: ck.case.pooling ?? "rank",
  };
  if (ck.case.pooling)
    file.embeddings = TINY_BERT_TEXTS.map((text) => {
      const ids = ck.encode(text);
      const pooled = ref.pooled(ids);
      const norm = Math.hypot(...pooled);
      return { text, ids, pooled: [...pooled], normalized: [...pooled].map((v) => v / norm) };
    });
  else
    file.scores = TINY_BERT_PAIRS.map(([query, document]) => {
      const { ids, types } = ck.encodePair(query, document);
      return {
        query,
        document,
        ids,
        types,
        score: [...ref.score(ids)],
        scoreTypes: [...ref.score(ids, types)],
      };
    });
  writeFileSync(out.replace(/\.gguf$/, ".reference.json"), JSON.stringify(file, null, 1));
  return out;
}
