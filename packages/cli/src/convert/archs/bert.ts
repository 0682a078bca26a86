// BertModel, BertForMaskedLM (its encoder) and BertForSequenceClassification (a cross-encoder
// reranker) → "bert": absolute positions, token types, post-LayerNorm blocks with biases, a
// WordPiece vocabulary. The classifier's pooler (dense + tanh) becomes `cls` and its classifier
// `cls.output`, which llama.cpp's RANK pooling applies to the first token; llama.cpp's own
// converter drops the pooler, so its reranker scores skip the tanh layer transformers runs.
import { dirname } from "node:path";
import type { ConfigReader } from "../hf-config.js";
import { readWordPieceVocab } from "../tokenizer-wpm.js";
import {
  bertEncoderSlots,
  checkGelu,
  checkHeads,
  classifierLabels,
  type EncoderDims,
  encoderKeys,
  encoderPooling,
} from "./encoder.js";
import type { ArchSpec, Rename } from "./types.js";

const CLASSIFIER = "BertForSequenceClassification";

/** Config keys every BERT-family reader shares (hidden_size…, the absolute position table). */
export function readBertDims(r: ConfigReader, positionOffset = 0): EncoderDims {
  const pet = r.optString("position_embedding_type") ?? "absolute";
  if (pet !== "absolute")
    throw r.unsupported(
      `position_embedding_type ${JSON.stringify(pet)}: llama.cpp's BERT has absolute positions only`,
    );
  const nEmbd = r.int("hidden_size");
  const nHead = r.int("num_attention_heads");
  checkHeads(r, "hidden_size", nEmbd, nHead);
  const nPos = r.int("max_position_embeddings");
  if (nPos <= positionOffset)
    throw r.bad(
      "max_position_embeddings",
      `${nPos} leaves no positions after the ${positionOffset} skipped rows`,
    );
  return {
    nEmbd,
    nFf: r.int("intermediate_size"),
    nLayer: r.int("num_hidden_layers"),
    nHead,
    nCtx: nPos - positionOffset,
    eps: r.num("layer_norm_eps"),
    vocabSize: r.int("vocab_size"),
    typeVocabSize: r.int("type_vocab_size"),
  };
}

/** Checkpoint names without the model prefix, LayerNorm gamma/beta as weight/bias. */
export function stripPrefix(name: string, prefix: string): string {
  let n = name.startsWith(prefix) ? name.slice(prefix.length) : name;
  if (n.endsWith(".gamma")) n = `${n.slice(0, -6)}.weight`;
  else if (n.endsWith(".beta")) n = `${n.slice(0, -5)}.bias`;
  return n;
}

export const bert: ArchSpec = {
  arch: "bert",
  classes: ["BertModel", "BertForMaskedLM", CLASSIFIER],
  modelTypes: ["bert"],
  // transformers' BertConfig.
  defaults: {
    vocab_size: 30522,
    hidden_size: 768,
    num_hidden_layers: 12,
    num_attention_heads: 12,
    intermediate_size: 3072,
    hidden_act: "gelu",
    max_position_embeddings: 512,
    type_vocab_size: 2,
    layer_norm_eps: 1e-12,
    pad_token_id: 0,
    position_embedding_type: "absolute",
  },
  plan(r, source) {
    const classifier = source === CLASSIFIER;
    const d = readBertDims(r);
    const notes: string[] = [];
    checkGelu(r, notes);
    const pooling = encoderPooling(dirname(r.path), classifier, notes);
    const labels = classifierLabels(r, classifier, notes);
    return {
      tied: false,
      vocabSize: d.vocabSize,
      notes,
      vocab: (vocabDir) =>
        readWordPieceVocab(vocabDir, {
          config: r.file,
          vocabSize: d.vocabSize,
          typeVocabSize: d.typeVocabSize,
        }),
      metadata: () => encoderKeys("bert", d, { pooling, labels }),
      tensors: () => {
        const s = bertEncoderSlots(d);
        if (classifier)
          s.add("pooler.dense.weight", "cls.weight", [d.nEmbd, d.nEmbd])
            .add("pooler.dense.bias", "cls.bias", [d.nEmbd])
            .add("classifier.weight", "cls.output.weight", [labels!.length, d.nEmbd])
            .add("classifier.bias", "cls.output.bias", [labels!.length]);
        return s.map;
      },
      rename: (name): Rename => {
        const n = stripPrefix(name, "bert.");
        if (n === "embeddings.position_ids") return { skip: "the position id buffer" };
        if (n.startsWith("pooler.") && !classifier)
          return { skip: "the pooler (embeddings are pooled by llama.cpp)" };
        if (n.startsWith("cls.predictions.") || n.startsWith("cls.seq_relationship."))
          return { skip: "the masked-LM and next-sentence heads" };
        return n;
      },
    };
  },
};
