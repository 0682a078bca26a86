/**
 * The op vocabulary. Each op has a stable numeric code (part of the program encoding), a list of
 * parameters (32-bit words: integers or floats) and the number of inputs and outputs it takes.
 */
export const Op = {
  GET_ROWS: 1,
  MUL_MAT: 2,
  ADD: 3,
  MUL: 4,
  SCALE: 5,
  RMS_NORM: 6,
  NORM: 7,
  ROPE: 8,
  SOFTMAX: 9,
  ATTENTION: 10,
  SILU: 11,
  GELU: 12,
  SWIGLU: 13,
  CPY: 14,
  SET_ROWS: 15,
  CONCAT: 16,
  ARGSORT: 17,
  TOP_K: 18,
  MUL_MAT_ID: 19,
  TANH: 20,
  GEGLU: 21,
  GELU_ERF: 22,
  // Produced by the fusion pass.
  RMS_NORM_MUL: 32,
  MUL_MAT_MULTI: 33,
  MUL_MAT_ADD: 34,
} as const;
export type Op = (typeof Op)[keyof typeof Op];
export type OpName = keyof typeof Op;

export type ParamKind = "i32" | "f32";

/** How an op is laid out in a program: parameter names and kinds, input and output counts. */
export interface OpSpec {
  readonly code: Op;
  readonly name: OpName;
  /** Parameter names in encoding order. */
  readonly params: readonly (readonly [string, ParamKind])[];
  /** Fewest and most inputs (optional inputs come last). */
  readonly inputs: readonly [number, number];
  /** Fewest and most outputs. */
  readonly outputs: readonly [number, number];
  /** One line on what it computes. */
  readonly doc: string;
}

const spec = (
  name: OpName,
  inputs: [number, number],
  params: [string, ParamKind][],
  doc: string,
  outputs: [number, number] = [1, 1],
): OpSpec => ({ code: Op[name], name, params, inputs, outputs, doc });

/** Every op, by code. Parameter order here is the encoding order native code reads. */
export const OP_SPECS: readonly OpSpec[] = [
  spec("GET_ROWS", [2, 2], [], "out[:, i] = a[:, idx[i]] (a may be quantized; out F32)"),
  spec("MUL_MAT", [2, 2], [], "out[m, n] = sum_k a[k, m] * b[k, n], broadcasting a over b's dims 2 and 3"),
  spec("ADD", [2, 2], [], "out = a + b, b broadcast over a"),
  spec("MUL", [2, 2], [], "out = a * b, b broadcast over a"),
  spec(
    "SCALE",
    [1, 1],
    [
      ["scale", "f32"],
      ["bias", "f32"],
    ],
    "out = a * scale + bias",
  ),
  spec("RMS_NORM", [1, 1], [["eps", "f32"]], "out = a / sqrt(mean(a^2) + eps), per row"),
  spec("NORM", [1, 1], [["eps", "f32"]], "out = (a - mean(a)) / sqrt(var(a) + eps), per row"),
  spec(
    "ROPE",
    [2, 3],
    [
      ["mode", "i32"],
      ["nDims", "i32"],
      ["nCtxOrig", "i32"],
      ["freqBase", "f32"],
      ["freqScale", "f32"],
      ["extFactor", "f32"],
      ["attnFactor", "f32"],
      ["betaFast", "f32"],
      ["betaSlow", "f32"],
    ],
    "rotary embedding of a [headDim, nHead, nTokens] at positions pos (I32 [nTokens]); optional freqFactors F32 [nDims/2]",
  ),
  spec(
    "SOFTMAX",
    [1, 2],
    [
      ["scale", "f32"],
      ["maxBias", "f32"],
    ],
    "out = softmax(a * scale + mask), per row",
  ),
  spec(
    "ATTENTION",
    [4, 4],
    [
      ["scale", "f32"],
      ["softcap", "f32"],
    ],
    "out = softmax(softcap(q·k * scale) + mask) · v; q [hd, nHead, nQ], k [hd, nKvHead, nKv], v [hdv, nKvHead, nKv], mask F32 [nKv, nQ] or spans I32 [2, nQ]",
  ),
  spec("SILU", [1, 1], [], "out = a * sigmoid(a)"),
  spec("GELU", [1, 1], [], "out = gelu(a) (tanh approximation)"),
  spec("SWIGLU", [2, 2], [], "out = silu(gate) * up"),
  spec(
    "CPY",
    [1, 1],
    [],
    "out = a converted to the output's dtype (the output may be a view of another tensor)",
  ),
  spec("SET_ROWS", [3, 3], [], "dst[:, idx[i]] = src[:, i]; the output is dst (written in place)"),
  spec("CONCAT", [2, 2], [["dim", "i32"]], "out = a and b joined along dim"),
  spec("ARGSORT", [1, 1], [["descending", "i32"]], "out (I32) = indices that sort each row"),
  spec(
    "TOP_K",
    [1, 1],
    [["k", "i32"]],
    "out (I32 [k, rows]) = indices of the k largest of each row, largest first",
  ),
  spec(
    "MUL_MAT_ID",
    [3, 3],
    [],
    "out[:, e, t] = as[:, :, ids[e, t]]ᵀ · b[:, e or 0, t] (mixture-of-experts)",
  ),
  spec("TANH", [1, 1], [], "out = tanh(a)"),
  spec("GEGLU", [2, 2], [], "out = gelu(gate) * up (gelu's tanh approximation)"),
  spec("GELU_ERF", [1, 1], [], "out = 0.5 * a * (1 + erf(a / sqrt(2))) (exact gelu)"),
  spec("RMS_NORM_MUL", [2, 2], [["eps", "f32"]], "out = rms_norm(a, eps) * w (fused)"),
  spec(
    "MUL_MAT_MULTI",
    [3, 7],
    [],
    "out_i = mul_mat(w_i, x) [+ c_i] for weights w_1..w_n sharing x, optional F32 addends c_1..c_n broadcast as ADD's b (fused)",
    [2, 3],
  ),
  spec(
    "MUL_MAT_ADD",
    [3, 3],
    [],
    "out = mul_mat(a, b) + c, c F32 broadcast over the product as ADD's b (fused)",
  ),
];

const BY_CODE = new Map<number, OpSpec>(OP_SPECS.map((s) => [s.code, s]));

export function opSpec(code: number): OpSpec | undefined {
  return BY_CODE.get(code);
}

/** ROPE modes (ggml's numbering): pairs (2i, 2i+1) or halves (i, i + nDims/2). */
export const RopeMode = { NORMAL: 0, NEOX: 2 } as const;

/** The most parameter words any op has (the program's fixed record size). */
export const MAX_PARAMS = Math.max(...OP_SPECS.map((s) => s.params.length));
