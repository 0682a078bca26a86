import type { GgufMetadata } from "@minfer/gguf";
import { DType, type Tensor } from "@minfer/ir";
import type { BuildOptions, BuiltGraph, LayerRope } from "./arch.js";
import { guard, positive } from "./arch-keys.js";
import { buildAttention } from "./attention.js";
import { ModelError } from "./errors.js";
import { buildFfn, type FfnWeights } from "./ffn.js";
import { declareInputs } from "./graph-inputs.js";
import { type Hparams, readHparams } from "./hparams.js";
import { classifierScores, qkvWeights } from "./layer-weights.js";
import { ModelGraph } from "./model-graph.js";
import { layerNorm } from "./norm.js";
import { ropeParams } from "./rope.js";
import { matrix, qkvSpecs, vector } from "./tensor-specs.js";
import { checkModelTensors, type ModelTensors, type TensorInfo, type TensorSpec } from "./tensors.js";

// The BERT family as llama.cpp lays it out (its `bert` and `nomic-bert` architectures): token,
// token-type and (BERT) absolute position embeddings, a LayerNorm, then post-norm blocks —
// attention over the whole sequence (not causal), residual, LayerNorm, feed-forward, residual,
// LayerNorm. The output is the hidden state of the rows asked for (embeddings), or those rows
// through the classifier head (rank). There is no vocabulary projection.

/** The name of an encoder graph's per-token segment ids (I32 [nTokens]: 0 the first text, 1 the second). */
export const TOKEN_TYPES_INPUT = "token_types";

/** Hyperparameters of an encoder. */
export interface EncoderHparams extends Hparams {
  /** `attention.layer_norm_epsilon`. */
  readonly normEps: number;
  /** `tokenizer.ggml.token_type_count` (segment embeddings); default 2. */
  readonly nTokenTypes: number;
  /** `classifier.output_labels`' length (classifier outputs); default 1. */
  readonly nClsOut: number;
}

/** How the two encoders differ. */
export interface EncoderKind {
  readonly arch: string;
  /** Absolute positions (`position_embd`, BERT) or rotary ones (NeoX, nomic-bert). */
  readonly positions: "absolute" | "rotary";
  /** Feed-forward: exact (erf) GELU of `ffn_up` (+ biases), or SwiGLU of `ffn_gate`/`ffn_up`. */
  readonly ffn: "gelu" | "swiglu";
}

/** Reads an encoder's hyperparameters; `attention.layer_norm_epsilon` is required, as llama.cpp requires it. */
export function readEncoderHparams(meta: GgufMetadata, arch: string): EncoderHparams {
  const hp = readHparams(meta, arch, { rmsEps: 1e-12, ropeFreqBase: 10000, causal: false });
  const epsKey = `${arch}.attention.layer_norm_epsilon`;
  const normEps = positive(
    epsKey,
    guard(epsKey, () => meta.number(epsKey)),
  );
  const typesKey = "tokenizer.ggml.token_type_count";
  const types = guard(typesKey, () => meta.optInteger(typesKey));
  if (types !== undefined && (types < 1 || types > 1 << 16))
    throw new ModelError("BAD_KEY", `metadata key "${typesKey}" is ${types}; expected 1…65536`, {
      key: typesKey,
    });
  return { ...hp, normEps, nTokenTypes: types ?? 2, nClsOut: hp.nClsOut ?? 1 };
}

/** The tensors of an encoder file: fused or separate Q/K/V, optional biases and classifier. */
export function* encoderSpecs(
  kind: EncoderKind,
  hp: EncoderHparams,
  fusedQkv: boolean,
): Generator<TensorSpec> {
  yield matrix("token_embd.weight", hp.nEmbd, hp.nVocab);
  yield { ...matrix("token_types.weight", hp.nEmbd, hp.nTokenTypes), optional: true };
  if (kind.positions === "absolute") yield matrix("position_embd.weight", hp.nEmbd, hp.nCtxTrain);
  yield vector("token_embd_norm.weight", hp.nEmbd);
  yield vector("token_embd_norm.bias", hp.nEmbd);
  for (let il = 0; il < hp.nLayer; il++) {
    const p = `blk.${il}.`;
    yield* qkvSpecs(hp, il, fusedQkv);
    yield matrix(`${p}attn_output.weight`, hp.nEmbd, hp.nEmbd);
    yield { ...vector(`${p}attn_output.bias`, hp.nEmbd), optional: true };
    yield vector(`${p}attn_output_norm.weight`, hp.nEmbd);
    yield vector(`${p}attn_output_norm.bias`, hp.nEmbd);
    if (kind.ffn === "swiglu") yield matrix(`${p}ffn_gate.weight`, hp.nEmbd, hp.nFf);
    yield matrix(`${p}ffn_up.weight`, hp.nEmbd, hp.nFf);
    yield { ...vector(`${p}ffn_up.bias`, hp.nFf), optional: true };
    yield matrix(`${p}ffn_down.weight`, hp.nFf, hp.nEmbd);
    yield { ...vector(`${p}ffn_down.bias`, hp.nEmbd), optional: true };
    yield vector(`${p}layer_output_norm.weight`, hp.nEmbd);
    yield vector(`${p}layer_output_norm.bias`, hp.nEmbd);
  }
  if (kind.positions === "absolute") {
    yield { ...matrix("cls.weight", hp.nEmbd, hp.nEmbd), optional: true };
    yield { ...vector("cls.bias", hp.nEmbd), optional: true };
    yield { ...matrix("cls.output.weight", hp.nEmbd, hp.nClsOut), optional: true };
    yield { ...vector("cls.output.bias", hp.nClsOut), optional: true };
  }
}

/** Checks an encoder file's tensors. */
export function loadEncoderTensors(
  kind: EncoderKind,
  hp: EncoderHparams,
  infos: Iterable<TensorInfo>,
): ModelTensors {
  const list = [...infos];
  const fused = list.some((t) => t.name === "blk.0.attn_qkv.weight");
  return checkModelTensors(kind.arch, hp.nLayer, list, encoderSpecs(kind, hp, fused));
}

/** An encoder's RoPE (nomic-bert: NeoX over the head), for a position shift; BERT has none to redo. */
export function encoderRope(kind: EncoderKind, hp: EncoderHparams): LayerRope {
  if (kind.positions === "rotary") return { params: ropeParams(hp, "neox") };
  return { params: { ...ropeParams(hp, "neox"), nDims: 0 } };
}

/** The graph of one micro-batch of an encoder: hidden states (embeddings) or classifier scores (rank). */
export function buildEncoderGraph(kind: EncoderKind, hp: EncoderHparams, o: BuildOptions): BuiltGraph {
  const output = o.output ?? "logits";
  if (output === "logits")
    throw new ModelError(
      "INVALID_ARGUMENT",
      `${kind.arch} is an embedding model (an encoder without a vocabulary head): it computes embeddings or rank scores, not logits`,
    );
  const g = new ModelGraph(o.tensors, o);
  const { b } = g;
  const inp = declareInputs(b, o, ["full"]);
  const w = (name: string, ...ne: number[]) => g.weight(name, ne);
  const opt = (name: string, ...ne: number[]) => (g.has(name) ? g.weight(name, ne) : undefined);

  let cur = b.name(b.getRows(w("token_embd.weight", hp.nEmbd, hp.nVocab), inp.tokens), "inp_tok");
  if (g.has("token_types.weight")) {
    const types = b.input(TOKEN_TYPES_INPUT, DType.I32, [o.nTokens]);
    const table = w("token_types.weight", hp.nEmbd, hp.nTokenTypes);
    cur = b.name(b.add(cur, b.getRows(table, types)), "inp_types");
  }
  if (kind.positions === "absolute") {
    const table = w("position_embd.weight", hp.nEmbd, hp.nCtxTrain);
    cur = b.name(b.add(cur, b.getRows(table, inp.positions)), "inp_embd");
  }
  const eps = hp.normEps;
  cur = layerNorm(
    b,
    cur,
    w("token_embd_norm.weight", hp.nEmbd),
    w("token_embd_norm.bias", hp.nEmbd),
    eps,
    "inp_norm",
  );

  const kv = inp.kv.full!;
  const rope = kind.positions === "rotary" ? ropeParams(hp, "neox") : undefined;
  for (let il = 0; il < hp.nLayer; il++) {
    const p = `blk.${il}.`;
    const bo = opt(`${p}attn_output.bias`, hp.nEmbd);
    const attn = buildAttention(
      b,
      cur,
      inp.positions,
      {
        ...qkvWeights(g, hp, il),
        wo: w(`${p}attn_output.weight`, hp.nEmbd, hp.nEmbd),
        ...(bo ? { bo } : {}),
      },
      {
        heads: hp,
        ...(rope ? { rope } : {}),
        scale: 1 / Math.sqrt(hp.headDimK),
        normEps: eps,
        kv,
        kvDtype: o.kvDtype ?? DType.F32,
      },
      il,
    );
    const attnRes = b.name(b.add(attn, cur), "attn_res", il);
    const ffnInp = layerNorm(
      b,
      attnRes,
      w(`${p}attn_output_norm.weight`, hp.nEmbd),
      w(`${p}attn_output_norm.bias`, hp.nEmbd),
      eps,
      "ffn_inp",
      il,
    );
    const upBias = opt(`${p}ffn_up.bias`, hp.nFf);
    const downBias = opt(`${p}ffn_down.bias`, hp.nEmbd);
    const ffnW: FfnWeights = {
      ...(kind.ffn === "swiglu" ? { gate: w(`${p}ffn_gate.weight`, hp.nEmbd, hp.nFf) } : {}),
      up: w(`${p}ffn_up.weight`, hp.nEmbd, hp.nFf),
      down: w(`${p}ffn_down.weight`, hp.nFf, hp.nEmbd),
      ...(upBias ? { upBias } : {}),
      ...(downBias ? { downBias } : {}),
    };
    // (BERT's GELU is the exact one, erf's, as transformers computes it; llama.cpp uses the tanh form)
    const ffn = buildFfn(b, ffnInp, ffnW, kind.ffn === "swiglu" ? "silu" : "gelu_erf", il);
    const ffnRes = b.name(b.add(ffn, ffnInp), "ffn_res", il);
    cur = layerNorm(
      b,
      ffnRes,
      w(`${p}layer_output_norm.weight`, hp.nEmbd),
      w(`${p}layer_output_norm.bias`, hp.nEmbd),
      eps,
      "l_out",
      il,
    );
  }
  const rows: Tensor = b.name(b.getRows(cur, inp.outIds), "result_embd");
  return g.finish(output === "rank" ? classifierScores(g, hp, rows) : rows);
}
