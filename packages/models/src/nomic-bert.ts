import { encoderModule } from "./encoder-module.js";

/** nomic-bert (nomic-embed-text): rotary positions (NeoX), fused Q/K/V, SwiGLU feed-forward, no biases. */
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
} = encoderModule({ arch: "nomic-bert", positions: "rotary", ffn: "swiglu" }, true);
