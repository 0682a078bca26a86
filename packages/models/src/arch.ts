import type { GgufMetadata } from "@minfer/gguf";
import type { Graph, RopeParams, Tensor } from "@minfer/ir";
import type { Hparams } from "./hparams.js";
import type { SynthKey } from "./synth.js";
import type { ModelTensors, TensorInfo, TensorSpec } from "./tensors.js";

/** The sizes one graph is built for. */
export interface GraphShape {
  /** Tokens in the micro-batch. */
  readonly nTokens: number;
  /** KV cells attention reads (cells [0, nKv) of the cache). */
  readonly nKv: number;
  /** Tokens whose logits are computed (rows of `out_ids`). */
  readonly nOutputs: number;
}

/** Which KV cache a layer keeps its K/V rows in. */
export type KvGroup = "full" | "swa";

/** The cells of one KV cache as a graph declares it. */
export interface KvCacheShape {
  /** Cells of each of its `k_cache-{il}`/`v_cache-{il}` states ([row, nCtx]). */
  readonly nCtx: number;
  /** Cells [0, nKv) attention reads. */
  readonly nKv: number;
  /** Visibility as spans instead of a mask. Default: the graph's `spans`. */
  readonly spans?: boolean;
}

/** Options of `buildGraph`. */
export interface BuildOptions extends GraphShape {
  /** Cells of the full-attention layers' KV states. Default: nKv. */
  readonly nCtx?: number;
  /** The sliding-window layers' cache (their own, smaller one). Default: the full one's nCtx and nKv. */
  readonly swa?: KvCacheShape;
  /** Dtype of the KV cache. Default: F32. */
  readonly kvDtype?: import("@minfer/ir").DType;
  /**
   * Attention visibility as spans (I32 [2, nTokens]: query j sees cells [start_j, end_j)) instead
   * of a mask; usable when every query's visible cells are one run. Default: false (a mask).
   */
  readonly spans?: boolean;
  /** The context the model runs with, in tokens (Phi-3 picks its LongRoPE factors by it). Default: nCtx. */
  readonly contextSize?: number;
  /** The checked tensors (dtypes, tying) from `loadTensors`. Default: every weight F32, untied. */
  readonly tensors?: ModelTensors;
  /**
   * Also output, per logits row, the ids of its `candidates` largest logits (TOP_K: larger logit
   * first, lower id first on ties), named `CANDIDATES_OUTPUT`, and their logits
   * (`CANDIDATE_LOGITS_OUTPUT`), so that a sampler can work on a few ids instead of the whole
   * vocabulary. An integer in 0…nVocab; default 0 (no such output).
   */
  readonly candidates?: number;
  /**
   * What the graph outputs, per `out_ids` row: `logits` (default: F32 [nVocab, nOutputs]),
   * `embeddings` (the final hidden state, F32 [nEmbd, nOutputs], as llama.cpp's embeddings) or
   * `rank` (those rows through the model's classifier head: F32 [nClassifierOutputs, nOutputs]).
   */
  readonly output?: GraphOutput;
  /**
   * Also output the activations of every product with a weight of the file (`BuiltGraph.taps`),
   * for an importance matrix. Default false.
   */
  readonly taps?: boolean;
}

/** What a graph computes for its output rows (see `BuildOptions.output`). */
export type GraphOutput = "logits" | "embeddings" | "rank";

/**
 * A built graph. Its inputs are found by name: the per-step ones the engine fills
 * (see `STEP_INPUTS` and `kvInputNames`), and `constants`, whose values the model gives.
 */
export interface BuiltGraph {
  readonly graph: Graph;
  /** Every input tensor of the graph, by name. */
  readonly inputs: Readonly<Record<string, Tensor>>;
  /** Values of the inputs that are the same at every step (RoPE factors computed from keys), by name. */
  readonly constants: ReadonlyMap<string, Float32Array>;
  /** F32 [nVocab, nOutputs]: the logits, or what `BuildOptions.output` asked for instead ([nEmbd | classes, nOutputs]). */
  readonly logits: Tensor;
  /** With `BuildOptions.candidates`: I32 [candidates, nOutputs], each row's best ids, best first. */
  readonly candidates?: Tensor;
  /** With `BuildOptions.candidates`: F32 [1, candidates, nOutputs], the logits of those ids. */
  readonly candidateLogits?: Tensor;
  /** With `BuildOptions.taps`: each weight product's activations, graph outputs. */
  readonly taps?: readonly import("./weight-taps.js").WeightTap[];
}

/** One layer's K/V rows: elements per row of K and V, and the cache they live in. */
export interface KvLayer {
  readonly kRow: number;
  readonly vRow: number;
  readonly group: KvGroup;
}

/** How a layer's K is rotated: what a position shift must apply to the cached rows again. */
export interface LayerRope {
  readonly params: RopeParams;
  /** Frequency factors F32 [nDims / 2]: a weight of the file, or a constant computed from keys. */
  readonly factors?: { readonly weight: string } | { readonly constant: string; readonly data: Float32Array };
}

/** The entry points every architecture module exports. */
export interface ArchModule<H extends Hparams = Hparams> {
  /** `general.architecture`. */
  readonly ARCH: string;
  /**
   * An encoder (the BERT family): no vocabulary projection, so its graphs are built only for
   * `embeddings` or `rank` output; every token of a sequence must be in one micro-batch, since
   * attention is not causal. Absent: a decoder.
   */
  readonly ENCODER?: boolean;
  /** Hyperparameters from `<arch>.*` keys; a missing required key is MISSING_KEY naming it. */
  loadHparams(meta: GgufMetadata): H;
  /** The tensors a file of these hyperparameters has (optional ones marked), in file order. */
  tensorSpecs(hp: H): Iterable<TensorSpec>;
  /** Keys a synthetic file gets beyond the shared ones, or a function of its head size (see `synthLayout`). */
  readonly SYNTH_KEYS?: readonly SynthKey[] | ((headDim: number) => readonly SynthKey[]);
  /** Checks the file's tensors (presence, shape, dtype class) and `block_count` against them. */
  loadTensors(hp: H, infos: Iterable<TensorInfo>): ModelTensors;
  /** The graph of one micro-batch: logits F32 [nVocab, nOutputs]. */
  buildGraph(hp: H, options: BuildOptions): BuiltGraph;
  /** Every layer's K/V rows and cache. */
  kvLayers(hp: H): readonly KvLayer[];
  /** Positions a sliding-window layer sees (its own and the W − 1 before it); 0 when none has one. */
  slidingWindow(hp: H): number;
  /** How layer `il` ropes K, for a context shift; `nCtx` is the context the model runs with. */
  kRope(hp: H, il: number, o: { readonly tensors?: ModelTensors; readonly nCtx: number }): LayerRope;
}
