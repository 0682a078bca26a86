import {
  contiguousStrides,
  type DeviceRuntime,
  DType,
  dtypeName,
  isQuantized,
  Op,
  type OpQuery,
  type Shape,
} from "@minfer/ir";

/**
 * Whether `runtime` can run the products that read a weight of `dtype` and GGUF dims `dims`: the
 * matrix product of one activation column against it (every matrix), and for the token
 * embeddings also the row lookup. Float weights and vectors are taken by every backend and are
 * not asked about. Returns the reason when it cannot (a user-facing phrase), else undefined.
 *
 * The engine asks before it uploads a weight to an offload device: a weight that device cannot
 * multiply stays on the main runtime, so the product runs where its data is instead of copying
 * the weight back on every step (the scheduler then places that node on the main runtime and the
 * CLI prints why).
 */
export function weightUnsupported(
  runtime: DeviceRuntime,
  name: string,
  dtype: DType,
  dims: readonly number[],
): string | undefined {
  if (!isQuantized(dtype) || dims.length < 2) return undefined;
  const k = dims[0]!;
  const rows = dims.slice(1).reduce((a, b) => a * b, 1);
  const w: Shape = [k, rows, 1, 1];
  const tensor = (d: DType, ne: Shape) => ({ dtype: d, ne, nb: contiguousStrides(d, ne) });
  const matmul: OpQuery = {
    op: Op.MUL_MAT,
    params: [],
    inputs: [tensor(dtype, w), tensor(DType.F32, [k, 1, 1, 1])],
    outputs: [tensor(DType.F32, [rows, 1, 1, 1])],
  };
  if (!runtime.device.supportsOp(matmul))
    return `${runtime.device.name} cannot multiply ${dtypeName(dtype)} weights`;
  if (name.startsWith("token_embd")) {
    const getRows: OpQuery = {
      op: Op.GET_ROWS,
      params: [],
      inputs: [tensor(dtype, w), tensor(DType.I32, [1, 1, 1, 1])],
      outputs: [tensor(DType.F32, [k, 1, 1, 1])],
    };
    if (!runtime.device.supportsOp(getRows))
      return `${runtime.device.name} cannot read rows of ${dtypeName(dtype)} weights`;
  }
  return undefined;
}
