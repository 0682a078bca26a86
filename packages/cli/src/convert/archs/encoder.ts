// What the BERT-family converters (bert.ts, xlm-roberta.ts, nomic-bert.ts) share: the `<arch>.*`
// keys llama.cpp's BertModel converter writes (TextModel's counts and LayerNorm epsilon, then
// attention.causal = false, the sentence-transformers pooling or RANK for a classifier, the
// classifier's labels), the classifier's labels from config.json, and the post-LayerNorm encoder
// tensors of Hugging Face's BertModel / XLMRobertaModel under llama.cpp's names.
import type { GgufKV } from "@minfer/gguf";
import type { ConfigReader } from "../hf-config.js";
import { bool, f32, strArray, u32 } from "../kv.js";
import { PoolingType, readSentenceTransformersPooling } from "../sentence-transformers.js";
import { Slots } from "./common.js";

export interface EncoderDims {
  nEmbd: number;
  nFf: number;
  nLayer: number;
  nHead: number;
  /** context_length: the position table's rows (XLM-R: after its padding_idx + 1 offset). */
  nCtx: number;
  eps: number;
  vocabSize: number;
  typeVocabSize: number;
}

/** The head size must divide hidden_size: llama.cpp's loader derives it. */
export function checkHeads(r: ConfigReader, embdKey: string, nEmbd: number, nHead: number): void {
  if (nEmbd % nHead !== 0) throw r.bad(embdKey, `${nEmbd} is not a multiple of the ${nHead} attention heads`);
}

/** The pooling to write: RANK for a classifier, else the sentence-transformers Pooling module's. */
export function encoderPooling(dir: string, classifier: boolean, notes: string[]): number | undefined {
  const st = readSentenceTransformersPooling(dir);
  notes.push(...st.notes);
  if (!classifier) {
    if (st.type === undefined)
      notes.push(
        "no sentence-transformers Pooling module (modules.json): no pooling_type written; llama.cpp then returns one embedding per token unless told a pooling",
      );
    return st.type;
  }
  if (st.type !== undefined)
    notes.push(
      "modules.json's Pooling module is replaced by RANK: the classification head pools the first token",
    );
  return PoolingType.RANK;
}

/**
 * `<arch>.*` keys in llama.cpp's order (TextModel.set_gguf_parameters, then BertModel's):
 * `ropeBase` only for the rotary encoders.
 */
export function encoderKeys(
  arch: string,
  d: EncoderDims,
  o: { ropeBase?: number; pooling?: number; labels?: string[] },
): GgufKV[] {
  return [
    u32(`${arch}.block_count`, d.nLayer),
    u32(`${arch}.context_length`, d.nCtx),
    u32(`${arch}.embedding_length`, d.nEmbd),
    u32(`${arch}.feed_forward_length`, d.nFf),
    u32(`${arch}.attention.head_count`, d.nHead),
    ...(o.ropeBase !== undefined ? [f32(`${arch}.rope.freq_base`, o.ropeBase)] : []),
    f32(`${arch}.attention.layer_norm_epsilon`, d.eps),
    bool(`${arch}.attention.causal`, false),
    ...(o.pooling !== undefined ? [u32(`${arch}.pooling_type`, o.pooling)] : []),
    ...(o.labels ? [strArray(`${arch}.classifier.output_labels`, o.labels)] : []),
  ];
}

const isDummyPair = (l: string[]) => l.length === 2 && l[0] === "LABEL_0" && l[1] === "LABEL_1";

/**
 * The classifier's labels by index, from config.json's id2label (else num_labels, else
 * transformers' default of two). A classifier always gets its labels (their count is the head's
 * rows); a model without one gets them only when they are not transformers' two placeholders, as
 * llama.cpp's converter does.
 */
export function classifierLabels(
  r: ConfigReader,
  classifier: boolean,
  notes: string[],
): string[] | undefined {
  const raw = r.file.id2label;
  let labels: string[];
  if (raw !== undefined && raw !== null) {
    if (typeof raw !== "object" || Array.isArray(raw))
      throw r.bad("id2label", `is ${JSON.stringify(raw)}; expected an {index: label} object`);
    const entries = Object.entries(raw as Record<string, unknown>).map(([k, v]) => {
      if (!/^\d+$/.test(k) || typeof v !== "string")
        throw r.bad(
          "id2label",
          `has the entry ${JSON.stringify(k)}: ${JSON.stringify(v)}; expected index: label`,
        );
      return [Number(k), v] as const;
    });
    entries.sort((a, b) => a[0] - b[0]);
    if (entries.some(([k], i) => k !== i)) throw r.bad("id2label", "does not number its labels 0, 1, 2, …");
    labels = entries.map(([, v]) => v);
  } else {
    const n = r.optInt("num_labels") ?? 2;
    labels = Array.from({ length: n }, (_, i) => `LABEL_${i}`);
  }
  if (!classifier) return isDummyPair(labels) ? undefined : labels;
  if (labels.length === 0) throw r.bad("id2label", "is empty; a classifier needs at least one label");
  if (isDummyPair(labels))
    notes.push(
      "classifier.output_labels: transformers' placeholder labels LABEL_0, LABEL_1 are written (llama.cpp's converter leaves them out, and its loader then expects a one-output head)",
    );
  return labels;
}

/**
 * The tensors of Hugging Face's BertModel (XLMRobertaModel has the same) by their names without
 * the model prefix. `positionSkip`: rows of the position table before the first position (XLM-R).
 */
export function bertEncoderSlots(d: EncoderDims, positionSkip = 0): Slots {
  const { nEmbd: E, nFf: F } = d;
  const s = new Slots()
    .add("embeddings.word_embeddings.weight", "token_embd.weight", [d.vocabSize, E])
    .add("embeddings.position_embeddings.weight", "position_embd.weight", [d.nCtx, E], {
      f32: true,
      ...(positionSkip > 0 ? { skipRows: positionSkip } : {}),
    })
    .add("embeddings.token_type_embeddings.weight", "token_types.weight", [d.typeVocabSize, E], { f32: true })
    .add("embeddings.LayerNorm.weight", "token_embd_norm.weight", [E])
    .add("embeddings.LayerNorm.bias", "token_embd_norm.bias", [E]);
  for (let i = 0; i < d.nLayer; i++) {
    const hf = (name: string) => `encoder.layer.${i}.${name}`;
    const gg = (name: string) => `blk.${i}.${name}`;
    const linear = (from: string, to: string, rows: number, cols: number) =>
      s
        .add(hf(`${from}.weight`), gg(`${to}.weight`), [rows, cols])
        .add(hf(`${from}.bias`), gg(`${to}.bias`), [rows]);
    const norm = (from: string, to: string) =>
      s.add(hf(`${from}.weight`), gg(`${to}.weight`), [E]).add(hf(`${from}.bias`), gg(`${to}.bias`), [E]);
    linear("attention.self.query", "attn_q", E, E);
    linear("attention.self.key", "attn_k", E, E);
    linear("attention.self.value", "attn_v", E, E);
    linear("attention.output.dense", "attn_output", E, E);
    norm("attention.output.LayerNorm", "attn_output_norm");
    linear("intermediate.dense", "ffn_up", F, E);
    linear("output.dense", "ffn_down", E, F);
    norm("output.LayerNorm", "layer_output_norm");
  }
  return s;
}

/** `hidden_act` values whose GELU llama.cpp's BERT graph computes (with the tanh approximation). */
const GELUS = ["gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast"];

export function checkGelu(r: ConfigReader, notes: string[]): void {
  const act = r.optString("hidden_act") ?? "gelu";
  if (!GELUS.includes(act))
    throw r.unsupported(
      `hidden_act ${JSON.stringify(act)}: llama.cpp's BERT graph computes GELU; supported: ${GELUS.join(", ")}`,
    );
  if (act === "gelu")
    notes.push('hidden_act "gelu" is the exact (erf) GELU; llama.cpp computes the tanh approximation');
}
