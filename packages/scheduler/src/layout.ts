import {
  byteSpan,
  type DType,
  dtypeName,
  type Node,
  type OpQuery,
  type Shape,
  type Tensor,
  viewRoot,
} from "@minfer/ir";

/** Bytes from a tensor's element 0 to one past the last byte it touches (`byteSpan` of @minfer/ir). */
export const extent: (t: { dtype: DType; ne: Shape; nb: Shape }) => number = byteSpan;

/** Bytes of a tensor's own memory (its extent; for a root, the whole tensor). */
export function tensorBytes(t: Tensor): number {
  return extent(t);
}

/** The tensor whose memory `t` is (itself unless a view) and `t`'s byte offset in it. */
export function rootOf(t: Tensor): { root: Tensor; offset: number } {
  return viewRoot(t);
}

/** What `Device.supportsOp` is asked for a node. */
export function opQuery(node: Node): OpQuery {
  const io = (t: Tensor) => ({ dtype: t.dtype, ne: t.ne, nb: t.nb });
  return { op: node.op, params: node.params, inputs: node.inputs.map(io), outputs: node.outputs.map(io) };
}

/** `"Q4_K [256, 33], F32 [256, 7] → F32 [33, 7]"` — the dtypes and shapes of a node. */
export function describeNode(node: Node): string {
  const d = (t: Tensor) => {
    let n = 4;
    while (n > 1 && t.ne[n - 1] === 1) n--;
    return `${dtypeName(t.dtype)} [${t.ne.slice(0, n).join(", ")}]`;
  };
  return `${node.inputs.map(d).join(", ")} → ${node.outputs.map(d).join(", ")}`;
}
