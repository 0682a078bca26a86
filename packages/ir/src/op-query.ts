import type { OpQuery } from "./backend.js";
import { blockOf, type DType } from "./dtype.js";
import { encodeProgram, type ProgramTensor } from "./program.js";
import { byteSpan, type Shape } from "./tensor.js";

type TensorDesc = { dtype: DType; ne: Shape; nb: Shape };

/**
 * Bytes a tensor touches, as native loaders compute them (and never less than the IR's extent);
 * undefined when the layout is malformed.
 */
function span(t: TensorDesc): number | undefined {
  if (t.ne.some((n) => n === 0)) return 0;
  const { blockSize, typeSize } = blockOf(t.dtype);
  if (t.ne[0] % blockSize !== 0 || t.ne.some((n) => n < 0) || t.nb.some((n) => n < 0)) return undefined;
  let last = typeSize;
  for (let i = 0; i < 4; i++) last += ((i === 0 ? t.ne[0] / blockSize : t.ne[i]!) - 1) * t.nb[i]!;
  let ir = 0;
  try {
    ir = byteSpan(t);
  } catch {
    return undefined;
  }
  return Math.max(last, ir);
}

/** The cache key of a query: op, parameters, and each tensor's dtype, shape and strides. */
export function opQueryKey(q: OpQuery): string {
  const t = (x: TensorDesc) => `${x.dtype}:${x.ne.join(",")}:${x.nb.join(",")}`;
  return `${q.op}|${q.params.join(",")}|${q.inputs.map(t).join(";")}|${q.outputs.map(t).join(";")}`;
}

/**
 * A one-node program for a query, each tensor in a buffer slot of its own at offset 0, and the
 * slots' sizes: what a native backend validates to answer `supportsOp` with the same checks its
 * executor runs. `{ error }` when the query's layouts cannot be encoded.
 */
export function opQueryProgram(
  query: OpQuery,
): { program: Uint8Array; bufferSizes: number[] } | { error: { code: string; message: string } } {
  const all = [...query.inputs, ...query.outputs];
  const sizes: number[] = [];
  const tensors: ProgramTensor[] = [];
  for (const [i, t] of all.entries()) {
    const s = span(t);
    if (s === undefined)
      return { error: { code: "BAD_PROGRAM", message: `tensor ${i} has a malformed layout` } };
    sizes.push(s);
    tensors.push({ dtype: t.dtype, buffer: i, offset: 0, ne: t.ne, nb: t.nb });
  }
  try {
    const program = encodeProgram({
      bufferSizes: sizes,
      tensors,
      nodes: [
        {
          op: query.op,
          inputs: query.inputs.map((_, i) => i),
          outputs: query.outputs.map((_, i) => query.inputs.length + i),
          params: query.params,
        },
      ],
    });
    return { program, bufferSizes: sizes };
  } catch (e) {
    return { error: { code: "BAD_PROGRAM", message: (e as Error).message } };
  }
}
