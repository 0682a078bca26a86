import { Op, opSpec, type ProgramSpec, type ProgramTensor } from "@minfer/ir";
import { SchedulerError } from "../errors.js";
import { attention } from "./attention.js";
import { concat, cpy, setRows } from "./copy.js";
import type { Dense } from "./dense.js";
import { readTensor, writeRow, writeTensor } from "./dtype-io.js";
import { add, geglu, gelu, geluErf, mul, scale, silu, swiglu, tanh } from "./elementwise.js";
import { getRows } from "./get-rows.js";
import { mulMat, mulMatAdd } from "./matmul.js";
import { mulMatId } from "./mul-mat-id.js";
import { mulMatMulti } from "./mul-mat-multi.js";
import { norm, rmsNorm, rmsNormMul } from "./norm.js";
import { rope } from "./rope.js";
import { softmax } from "./softmax.js";
import { argsort, topK } from "./sort.js";

/** Float64 outputs of one node, from its float64 inputs (the reference math of each op). */
function compute(
  op: number,
  x: readonly Dense[],
  inputs: readonly ProgramTensor[],
  outputs: readonly ProgramTensor[],
  p: readonly number[],
): Dense[] {
  const [a, b, c, d] = x as [Dense, Dense, Dense, Dense];
  switch (op) {
    case Op.GET_ROWS:
      return [getRows(a, b)];
    case Op.MUL_MAT:
      return [mulMat(a, b)];
    case Op.ADD:
      return [add(a, b)];
    case Op.MUL:
      return [mul(a, b)];
    case Op.SCALE:
      return [scale(a, p[0]!, p[1]!)];
    case Op.RMS_NORM:
      return [rmsNorm(a, p[0]!)];
    case Op.NORM:
      return [norm(a, p[0]!)];
    case Op.ROPE:
      return [rope(a, b, p, x[2])];
    case Op.SOFTMAX:
      return [softmax(a, x[1], p[0]!, p[1]!)];
    case Op.ATTENTION:
      return [attention(a, b, c, d, inputs[3]!.dtype, p[0]!, p[1]!)];
    case Op.SILU:
      return [silu(a)];
    case Op.GELU:
      return [gelu(a)];
    case Op.SWIGLU:
      return [swiglu(a, b)];
    case Op.TANH:
      return [tanh(a)];
    case Op.GEGLU:
      return [geglu(a, b)];
    case Op.GELU_ERF:
      return [geluErf(a)];
    case Op.CPY:
      return [cpy(a, outputs[0]!.ne)];
    case Op.CONCAT:
      return [concat(a, b, p[0]!)];
    case Op.ARGSORT:
      return [argsort(a, p[0] !== 0)];
    case Op.TOP_K:
      return [topK(a, p[0]!)];
    case Op.MUL_MAT_ID:
      return [mulMatId(a, b, c)];
    case Op.RMS_NORM_MUL:
      return [rmsNormMul(a, b, p[0]!)];
    case Op.MUL_MAT_MULTI:
      return mulMatMulti(a, x.slice(1), outputs.length);
    case Op.MUL_MAT_ADD:
      return [mulMatAdd(a, b, c)];
    default:
      throw new SchedulerError("BAD_PROGRAM", `the reference device has no kernel for op ${op}`);
  }
}

/**
 * Runs a decoded program over byte buffers (one per slot): every node's inputs are read into
 * float64, computed with the reference math, and written in the outputs' dtypes and layouts.
 * `onNode` receives each node's time in microseconds when given.
 */
export function interpret(
  program: ProgramSpec,
  buffers: readonly Uint8Array[],
  onNode?: (index: number, micros: number) => void,
): void {
  const view = (t: ProgramTensor) => buffers[t.buffer]!;
  program.nodes.forEach((node, n) => {
    const start = performance.now();
    const ins = node.inputs.map((i) => program.tensors[i]!);
    const outs = node.outputs.map((i) => program.tensors[i]!);
    const x = ins.map((t) => readTensor(view(t), t));
    if (node.op === Op.SET_ROWS) {
      const dst = outs[0]!;
      for (const w of setRows(dst.ne, x[1]!, x[2]!)) writeRow(view(dst), dst, w.i1, w.i2, w.i3, w.values);
    } else {
      const results = compute(node.op, x, ins, outs, node.params);
      if (results.length !== outs.length) {
        throw new SchedulerError(
          "BAD_PROGRAM",
          `${opSpec(node.op)?.name ?? node.op} (node ${n}) yields ${results.length} outputs, the program lists ${outs.length}`,
        );
      }
      results.forEach((r, i) => {
        writeTensor(view(outs[i]!), outs[i]!, r);
      });
    }
    onNode?.(n, (performance.now() - start) * 1000);
  });
}
