import { blockOf, DType, dtypeName, FLOAT_DTYPES, isQuantized, WEIGHT_DTYPES } from "./dtype.js";
import { IrError } from "./errors.js";
import { Op, type OpName, opSpec } from "./ops.js";
import { describe, type Shape, type Tensor } from "./tensor.js";

/** Element types of attention's K and V. */
const KV_DTYPES: readonly DType[] = [...FLOAT_DTYPES, DType.Q8_0];

/** What an op produces: dtype and shape of each output, or an in-place output aliasing an input. */
export type OutputSpec = { dtype: DType; ne: Shape } | { aliasOf: number };

type In = Pick<Tensor, "dtype" | "ne">;

function fail(op: OpName, node: string, message: string, inputs: readonly In[]): never {
  throw new IrError(
    "SHAPE_MISMATCH",
    `${op.toLowerCase()} ${message} (inputs: ${inputs.map(describe).join(", ")})`,
    node,
  );
}

function needDtype(
  op: OpName,
  node: string,
  t: In,
  allowed: readonly DType[],
  what: string,
  inputs: readonly In[],
): void {
  if (!allowed.includes(t.dtype)) {
    fail(
      op,
      node,
      `${what} must be ${allowed.map(dtypeName).join(" or ")}, got ${dtypeName(t.dtype)}`,
      inputs,
    );
  }
}

/** Whether b repeats evenly over a in every dimension (ggml's broadcast rule). */
export function canRepeat(b: Shape, a: Shape): boolean {
  for (let i = 0; i < 4; i++) if (b[i] === 0 || a[i]! % b[i]! !== 0) return false;
  return true;
}

const same = (a: Shape, b: Shape) => a[0] === b[0] && a[1] === b[1] && a[2] === b[2] && a[3] === b[3];

/**
 * Checks an op's inputs and parameters and gives its outputs. Every mismatch is an `IrError`
 * naming the node, the op and the shapes.
 */
export function inferOutputs(
  op: Op,
  inputs: readonly In[],
  params: readonly number[],
  node: string,
): OutputSpec[] {
  const s = opSpec(op);
  if (!s) throw new IrError("BAD_GRAPH", `unknown op code ${op}`, node);
  const name = s.name;
  if (inputs.length < s.inputs[0] || inputs.length > s.inputs[1]) {
    fail(name, node, `takes ${s.inputs[0]}–${s.inputs[1]} inputs, got ${inputs.length}`, inputs);
  }
  if (params.length !== s.params.length) {
    throw new IrError(
      "INVALID_ARGUMENT",
      `${name.toLowerCase()} takes ${s.params.length} parameters, got ${params.length}`,
      node,
    );
  }
  s.params.forEach(([p, kind], i) => {
    const v = params[i]!;
    if (
      kind === "i32"
        ? !Number.isInteger(v) || v < -(2 ** 31) || v >= 2 ** 31
        : !Number.isFinite(v) && !Number.isNaN(v)
    ) {
      throw new IrError(
        "INVALID_ARGUMENT",
        `${name.toLowerCase()} parameter ${p} = ${v} is not a valid ${kind}`,
        node,
      );
    }
  });
  const [a, b, c, d] = inputs as [In, In, In, In];
  const F32 = [DType.F32];
  switch (op) {
    case Op.GET_ROWS: {
      needDtype(name, node, a, [...WEIGHT_DTYPES, DType.I32], "a", inputs);
      needDtype(name, node, b, [DType.I32], "the index", inputs);
      if (b.ne[2] !== 1 || b.ne[3] !== 1) fail(name, node, "takes a 1-D or 2-D index", inputs);
      if (b.ne[1] !== 1 && b.ne[1] !== a.ne[2]) fail(name, node, "index rows must match a's dim 2", inputs);
      return [{ dtype: DType.F32, ne: [a.ne[0], b.ne[0], b.ne[1] === 1 ? a.ne[2] : b.ne[1], a.ne[3]] }];
    }
    case Op.MUL_MAT:
    case Op.MUL_MAT_ADD: {
      needDtype(name, node, a, WEIGHT_DTYPES, "a", inputs);
      needDtype(name, node, b, FLOAT_DTYPES, "b", inputs);
      if (a.ne[0] !== b.ne[0]) fail(name, node, `operands disagree on k: ${a.ne[0]} vs ${b.ne[0]}`, inputs);
      if (b.ne[2] % a.ne[2] !== 0 || b.ne[3] % a.ne[3] !== 0)
        fail(name, node, "b's dims 2 and 3 must be multiples of a's", inputs);
      const ne: Shape = [a.ne[1], b.ne[1], b.ne[2], b.ne[3]];
      if (op === Op.MUL_MAT_ADD) {
        needDtype(name, node, c, F32, "c", inputs);
        if (!canRepeat(c.ne, ne))
          fail(name, node, `c does not broadcast over the product [${ne.join(", ")}]`, inputs);
      }
      return [{ dtype: DType.F32, ne }];
    }
    case Op.ADD:
    case Op.MUL: {
      needDtype(name, node, a, F32, "a", inputs);
      needDtype(name, node, b, F32, "b", inputs);
      if (!canRepeat(b.ne, a.ne)) fail(name, node, "b does not broadcast over a", inputs);
      return [{ dtype: DType.F32, ne: a.ne }];
    }
    case Op.SCALE:
    case Op.SILU:
    case Op.GELU:
    case Op.TANH:
    case Op.GELU_ERF:
    case Op.RMS_NORM:
    case Op.NORM:
      needDtype(name, node, a, F32, "a", inputs);
      return [{ dtype: DType.F32, ne: a.ne }];
    case Op.RMS_NORM_MUL:
      needDtype(name, node, a, F32, "a", inputs);
      needDtype(name, node, b, F32, "the weight", inputs);
      if (!canRepeat(b.ne, a.ne) || b.ne[0] !== a.ne[0])
        fail(name, node, "the weight must match a's rows", inputs);
      return [{ dtype: DType.F32, ne: a.ne }];
    case Op.SWIGLU:
    case Op.GEGLU:
      needDtype(name, node, a, F32, "gate", inputs);
      needDtype(name, node, b, F32, "up", inputs);
      if (!same(a.ne, b.ne)) fail(name, node, "gate and up must have the same shape", inputs);
      return [{ dtype: DType.F32, ne: a.ne }];
    case Op.ROPE: {
      needDtype(name, node, a, F32, "a", inputs);
      needDtype(name, node, b, [DType.I32], "positions", inputs);
      const [mode, nDims] = params as [number, number];
      if (mode !== 0 && mode !== 2)
        throw new IrError("INVALID_ARGUMENT", `rope mode ${mode} is neither 0 (normal) nor 2 (neox)`, node);
      if (nDims <= 0 || nDims % 2 !== 0 || nDims > a.ne[0]) {
        throw new IrError(
          "INVALID_ARGUMENT",
          `rope nDims ${nDims} must be even and at most the head size ${a.ne[0]}`,
          node,
        );
      }
      if (b.ne[0] !== a.ne[2] || b.ne[1] !== 1)
        fail(name, node, "takes one position per token (a's dim 2)", inputs);
      if (c) {
        needDtype(name, node, c, F32, "frequency factors", inputs);
        if (c.ne[0] !== nDims / 2 || c.ne[1] !== 1)
          fail(name, node, `frequency factors must be [${nDims / 2}]`, inputs);
      }
      return [{ dtype: DType.F32, ne: a.ne }];
    }
    case Op.SOFTMAX: {
      needDtype(name, node, a, F32, "a", inputs);
      if (b) {
        needDtype(name, node, b, [DType.F32, DType.F16], "the mask", inputs);
        if (b.ne[0] !== a.ne[0] || b.ne[1] < a.ne[1] || a.ne[2] % b.ne[2] !== 0 || a.ne[3] % b.ne[3] !== 0) {
          fail(name, node, "the mask must cover a's rows", inputs);
        }
      }
      return [{ dtype: DType.F32, ne: a.ne }];
    }
    case Op.ATTENTION: {
      needDtype(name, node, a, F32, "q", inputs);
      // K/V may also be Q8_0 (a quantized KV cache): rows of whole 32-element blocks.
      needDtype(name, node, b, KV_DTYPES, "k", inputs);
      needDtype(name, node, c, KV_DTYPES, "v", inputs);
      for (const [t, what] of [
        [b, "k"],
        [c, "v"],
      ] as const)
        if (t.dtype === DType.Q8_0 && t.ne[0] % 32 !== 0)
          fail(
            name,
            node,
            `a Q8_0 ${what} needs a head size that is a multiple of 32, got ${t.ne[0]}`,
            inputs,
          );
      if (a.ne[0] !== b.ne[0]) fail(name, node, "q and k must have the same head size", inputs);
      if (b.ne[1] !== c.ne[1] || b.ne[2] !== c.ne[2])
        fail(name, node, "k and v must have the same heads and length", inputs);
      if (a.ne[1] % b.ne[1] !== 0) fail(name, node, "q heads must be a multiple of kv heads", inputs);
      if (a.ne[3] !== 1 || b.ne[3] !== 1) fail(name, node, "takes 3-D q, k and v", inputs);
      if (d.dtype === DType.I32) {
        if (d.ne[0] !== 2 || d.ne[1] !== a.ne[2]) fail(name, node, "spans must be I32 [2, nQ]", inputs);
      } else {
        needDtype(name, node, d, [DType.F32, DType.F16], "the mask", inputs);
        if (d.ne[0] !== b.ne[2] || d.ne[1] < a.ne[2]) fail(name, node, "the mask must be [nKv, nQ]", inputs);
      }
      return [{ dtype: DType.F32, ne: [c.ne[0], a.ne[1], a.ne[2], 1] }];
    }
    case Op.CPY:
      // The output's dtype and shape come from the destination given to the builder.
      needDtype(name, node, a, [...FLOAT_DTYPES, DType.I32], "the source", inputs);
      return [{ aliasOf: -1 }];
    case Op.SET_ROWS: {
      needDtype(name, node, c, [DType.I32], "the index", inputs);
      needDtype(name, node, b, F32, "src", inputs);
      if (a.ne[0] !== b.ne[0]) fail(name, node, "src rows must be as long as dst rows", inputs);
      if (c.ne[0] !== b.ne[1]) fail(name, node, "takes one index per src row", inputs);
      if (isQuantized(a.dtype) && a.ne[0] % blockOf(a.dtype).blockSize !== 0)
        fail(name, node, "dst rows are not whole blocks", inputs);
      return [{ aliasOf: 0 }];
    }
    case Op.CONCAT: {
      const dim = params[0]!;
      if (dim < 0 || dim > 3) throw new IrError("INVALID_ARGUMENT", `concat dim ${dim} is not 0–3`, node);
      if (a.dtype !== b.dtype) fail(name, node, "operands must have the same dtype", inputs);
      const ne = [...a.ne] as [number, number, number, number];
      for (let i = 0; i < 4; i++)
        if (i !== dim && a.ne[i] !== b.ne[i]) fail(name, node, `operands differ in dim ${i}`, inputs);
      ne[dim] = a.ne[dim]! + b.ne[dim]!;
      return [{ dtype: a.dtype, ne }];
    }
    case Op.ARGSORT:
      needDtype(name, node, a, F32, "a", inputs);
      return [{ dtype: DType.I32, ne: a.ne }];
    case Op.TOP_K: {
      needDtype(name, node, a, F32, "a", inputs);
      const k = params[0]!;
      if (k < 1 || k > a.ne[0])
        throw new IrError("INVALID_ARGUMENT", `top_k k = ${k} must be 1–${a.ne[0]}`, node);
      return [{ dtype: DType.I32, ne: [k, a.ne[1], a.ne[2], a.ne[3]] }];
    }
    case Op.MUL_MAT_ID: {
      needDtype(name, node, a, WEIGHT_DTYPES, "the experts", inputs);
      needDtype(name, node, b, F32, "b", inputs);
      needDtype(name, node, c, [DType.I32], "ids", inputs);
      if (a.ne[0] !== b.ne[0]) fail(name, node, "experts and b disagree on k", inputs);
      if (c.ne[1] !== b.ne[2]) fail(name, node, "ids must have one column per token (b's dim 2)", inputs);
      if (b.ne[1] !== 1 && b.ne[1] !== c.ne[0])
        fail(name, node, "b's dim 1 must be 1 or the number of experts used", inputs);
      return [{ dtype: DType.F32, ne: [a.ne[1], c.ne[0], c.ne[1], 1] }];
    }
    case Op.MUL_MAT_MULTI: {
      // Inputs x, w_1..w_n (n = 2 or 3), then optionally the addends c_1..c_n.
      const x = inputs[0]!;
      const rest = inputs.length - 1;
      const nw = rest === 2 || rest === 3 ? rest : rest === 4 || rest === 6 ? rest / 2 : 0;
      if (nw === 0)
        fail(
          name,
          node,
          `takes x, 2-3 weights and optionally one addend per weight (3, 4, 5 or 7 inputs), got ${inputs.length}`,
          inputs,
        );
      needDtype(name, node, x, FLOAT_DTYPES, "x", inputs);
      return inputs.slice(1, 1 + nw).map((w, i) => {
        needDtype(name, node, w, WEIGHT_DTYPES, "each weight", inputs);
        if (w.ne[0] !== x.ne[0] || w.ne[2] !== 1 || w.ne[3] !== 1)
          fail(name, node, "each weight must be [k, m] with x's k", inputs);
        const ne: Shape = [w.ne[1], x.ne[1], x.ne[2], x.ne[3]];
        const c = inputs[1 + nw + i];
        if (c) {
          needDtype(name, node, c, F32, `c${i + 1}`, inputs);
          if (!canRepeat(c.ne, ne))
            fail(name, node, `c${i + 1} does not broadcast over out${i + 1} [${ne.join(", ")}]`, inputs);
        }
        return { dtype: DType.F32, ne };
      });
    }
    default:
      throw new IrError("UNSUPPORTED_OP", `no shape rule for op ${name}`, node);
  }
}
