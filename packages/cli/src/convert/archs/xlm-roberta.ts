// XLMRobertaModel and XLMRobertaForSequenceClassification (bge-m3, multilingual-e5,
// bge-reranker-v2-m3) → "bert". RoBERTa numbers positions from padding_idx + 1 (position ids are
// padding_idx + 1 + i), so, as llama.cpp's converter does, the first pad_token_id + 1 rows of the
// position table are dropped and context_length shrinks by as many: llama.cpp's position i reads
// the row transformers reads. The classification head is dense + tanh (`cls`) then out_proj
// (`cls.output`). The vocabulary is a Unigram tokenizer.json (llama.cpp's "t5" tokenizer).
import { dirname } from "node:path";
import { readUnigramVocab } from "../tokenizer-ugm.js";
import { readBertDims, stripPrefix } from "./bert.js";
import { bertEncoderSlots, checkGelu, classifierLabels, encoderKeys, encoderPooling } from "./encoder.js";
import type { ArchSpec, Rename } from "./types.js";

const CLASSIFIER = "XLMRobertaForSequenceClassification";

export const xlmRoberta: ArchSpec = {
  arch: "bert",
  classes: ["XLMRobertaModel", CLASSIFIER],
  modelTypes: ["xlm-roberta"],
  // transformers' XLMRobertaConfig.
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
    pad_token_id: 1,
    bos_token_id: 0,
    eos_token_id: 2,
    position_embedding_type: "absolute",
  },
  plan(r, source) {
    const classifier = source === CLASSIFIER;
    if (r.has("lora_adaptations"))
      throw r.unsupported(
        "lora_adaptations (jina-embeddings-v3) is llama.cpp's jina-bert-v3, not converted here",
      );
    const pad = r.value("pad_token_id");
    if (typeof pad !== "number" || !Number.isInteger(pad) || pad < 0)
      throw r.bad(
        "pad_token_id",
        `is ${JSON.stringify(pad)}; XLM-RoBERTa's positions start after padding_idx, so it is needed`,
      );
    const offset = pad + 1;
    const d = readBertDims(r, offset);
    const notes: string[] = [];
    checkGelu(r, notes);
    const pooling = encoderPooling(dirname(r.path), classifier, notes);
    const labels = classifierLabels(r, classifier, notes);
    return {
      tied: false,
      vocabSize: d.vocabSize,
      notes,
      vocab: (dir) =>
        readUnigramVocab(dir, { config: r.file, vocabSize: d.vocabSize, typeVocabSize: d.typeVocabSize }),
      metadata: () => encoderKeys("bert", d, { pooling, labels }),
      tensors: () => {
        const s = bertEncoderSlots(d, offset);
        if (classifier)
          s.add("classifier.dense.weight", "cls.weight", [d.nEmbd, d.nEmbd])
            .add("classifier.dense.bias", "cls.bias", [d.nEmbd])
            .add("classifier.out_proj.weight", "cls.output.weight", [labels!.length, d.nEmbd])
            .add("classifier.out_proj.bias", "cls.output.bias", [labels!.length]);
        return s.map;
      },
      rename: (name): Rename => {
        const n = stripPrefix(name, "roberta.");
        if (n === "embeddings.position_ids") return { skip: "the position id buffer" };
        if (n.startsWith("pooler.")) return { skip: "the pooler (embeddings are pooled by llama.cpp)" };
        if (n.startsWith("lm_head.")) return { skip: "the masked-LM head" };
        return n;
      },
    };
  },
};
