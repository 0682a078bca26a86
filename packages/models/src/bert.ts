import { encoderModule } from "./encoder-module.js";

/** BERT (and XLM-RoBERTa, converted to it): absolute positions, GELU feed-forward with biases, optional classifier head. */
export const {
  ARCH,
  ENCODER,
  SYNTH_KEYS,
  loadHparams,
  tensorSpecs,
  loadTensors,
  kvLayers,
  slidingWindow,
  kRope,
  buildGraph,
} = encoderModule({ arch: "bert", positions: "absolute", ffn: "gelu" }, false);
