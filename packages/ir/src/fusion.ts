import { blockOf, DType } from "./dtype.js";
import type { Graph, GraphBuilder } from "./graph.js";
import { canRepeat } from "./infer.js";
import { Op } from "./ops.js";
import { replay } from "./replay.js";
import { type Node, type Tensor, viewRoot } from "./tensor.js";

/** Which fusions {@link fuse} applies; all default to true. */
export interface FusionOptions {
  /** rms_norm(x) * w → RMS_NORM_MUL(x, w). */
  rmsNormMul?: boolean;
  /** silu(gate) * up → SWIGLU(gate, up). */
  swiglu?: boolean;
  /** gelu(gate) * up → GEGLU(gate, up). */
  geglu?: boolean;
  /**
   * Up to three mul_mat(w_i, x) sharing x, with 2-D weights of one dtype → MUL_MAT_MULTI. A
   * weight may be a view of one (rows of a fused weight such as phi3's attn_qkv) when its rows
   * are contiguous.
   */
  mulMatMulti?: boolean;
  /**
   * A MUL_MAT_MULTI group whose every product is read only by one ADD, as its `a` with an F32 `b`
   * broadcast over it (qwen2's q/k/v biases), takes those ADDs' `b`s as its addends c_1..c_n and
   * the ADDs are dropped (all members or none); the fused outputs take the ADDs' names.
   */
  mulMatMultiAdd?: boolean;
  /**
   * mul_mat(w, x) + c → MUL_MAT_ADD(w, x, c): a product read only by one ADD, as its full-shape
   * operand `a` with `c` (F32) broadcast over it — or as its `b` when both operands have the same
   * shape (the add is then symmetric). Products that MUL_MAT_MULTI groups are left to it.
   */
  mulMatAdd?: boolean;
}

/** How many nodes (and graph outputs) read each tensor, views counting as reads of their root. */
function useCounts(graph: Graph): Map<Tensor, number> {
  const uses = new Map<Tensor, number>();
  const add = (t: Tensor) => {
    let cur: Tensor | undefined = t;
    while (cur) {
      uses.set(cur, (uses.get(cur) ?? 0) + 1);
      cur = cur.viewOf;
    }
  };
  for (const n of graph.nodes) for (const t of n.inputs) add(t);
  for (const t of graph.outputs) add(t);
  return uses;
}

const sameShape = (a: Tensor, b: Tensor) => a.ne.every((n, i) => n === b.ne[i]);

/**
 * Rewrites compositions into fused nodes (never hand-built per model): the result computes the
 * same values with fewer passes over memory. A fusion applies only where the intermediate is
 * read by nothing else.
 */
export function fuse(graph: Graph, options: FusionOptions = {}): Graph {
  const uses = useCounts(graph);
  const onlyUse = (t: Tensor) => t.kind === "result" && (uses.get(t) ?? 0) === 1;
  const producer = (t: Tensor, op: Op): Node | undefined =>
    t.node?.op === op && t.kind === "result" ? t.node : undefined;

  // Decide every fusion first; replay then emits fused nodes and drops the folded ones.
  const fusedAt = new Map<Node, (map: (t: Tensor) => Tensor, b: GraphBuilder) => Tensor[]>();
  const dropped = new Set<Node>();
  /** Outputs of folded mul_mat nodes → the fused node's matching outputs. */
  const later = new Map<Tensor, Tensor>();

  for (const node of graph.nodes) {
    if (node.op !== Op.MUL) continue;
    const [a, w] = node.inputs as [Tensor, Tensor];
    const norm = producer(a, Op.RMS_NORM);
    if ((options.rmsNormMul ?? true) && norm && onlyUse(a) && w.ne[0] === a.ne[0] && canRepeat(w.ne, a.ne)) {
      dropped.add(norm);
      fusedAt.set(node, (map, b) =>
        b.node(Op.RMS_NORM_MUL, [map(norm.inputs[0]!), map(w)], norm.params, node.name),
      );
      continue;
    }
    // silu(gate) * up → SWIGLU, gelu(gate) * up → GEGLU (either operand order).
    gated: for (const [s, u] of [
      [a, w],
      [w, a],
    ] as const) {
      for (const [act, fused, on] of [
        [Op.SILU, Op.SWIGLU, options.swiglu ?? true],
        [Op.GELU, Op.GEGLU, options.geglu ?? true],
      ] as const) {
        const p = producer(s, act);
        if (on && p && onlyUse(s) && sameShape(s, u)) {
          dropped.add(p);
          fusedAt.set(node, (map, b) => b.node(fused, [map(p.inputs[0]!), map(u)], [], node.name));
          break gated;
        }
      }
    }
  }

  const grouped = new Set<Node>();
  const index = new Map<Node, number>(graph.nodes.map((n, i) => [n, i]));
  /** The one node reading each result (meaningful where onlyUse holds). */
  const reader = new Map<Tensor, Node>();
  for (const n of graph.nodes) for (const t of n.inputs) reader.set(t, n);
  /** Whether t (and every view base under it) exists before node number i runs. */
  const readyBefore = (t: Tensor, i: number): boolean => {
    for (let cur: Tensor | undefined = t; cur; cur = cur.viewOf) {
      if (cur.kind === "state") return false;
      if (cur.node && (index.get(cur.node) ?? i) >= i) return false;
    }
    return true;
  };
  /** The ADD reading a group member's product as its `a`, with a `b` the fused node can take. */
  const biasAdd = (mm: Node, i: number): Node | undefined => {
    const p = mm.outputs[0]!;
    const add = reader.get(p);
    if (!add || add.op !== Op.ADD || !onlyUse(p) || fusedAt.has(add) || dropped.has(add)) return undefined;
    const [a, c] = add.inputs as [Tensor, Tensor];
    if (a !== p || c === p || c.dtype !== DType.F32 || !canRepeat(c.ne, p.ne) || !readyBefore(c, i))
      return undefined;
    return add;
  };
  if (options.mulMatMulti ?? true) {
    graph.nodes.forEach((first, i) => {
      if (first.op !== Op.MUL_MAT || grouped.has(first)) return;
      const [w0, x] = first.inputs as [Tensor, Tensor];
      // A weight, or a view of one with whole contiguous rows (a row range of a fused weight).
      const eligible = (w: Tensor) =>
        (w.kind === "weight" ||
          (w.kind === "view" &&
            viewRoot(w).root.kind === "weight" &&
            w.nb[0] === blockOf(w.dtype).typeSize)) &&
        w.ne[2] === 1 &&
        w.ne[3] === 1 &&
        w.dtype === w0.dtype;
      if (!eligible(w0)) return;
      const group = [first];
      for (const other of graph.nodes.slice(i + 1)) {
        if (group.length === 3) break;
        if (
          other.op !== Op.MUL_MAT ||
          grouped.has(other) ||
          other.inputs[1] !== x ||
          !eligible(other.inputs[0]!)
        )
          continue;
        group.push(other);
      }
      if (group.length < 2) return;
      for (const n of group) grouped.add(n);
      for (const n of group.slice(1)) dropped.add(n);
      // Every member's bias ADD, or none: the addends come all together.
      const adds = group.map((n) => ((options.mulMatMultiAdd ?? true) ? biasAdd(n, i) : undefined));
      const folded = adds.every((a) => a !== undefined) ? (adds as Node[]) : undefined;
      for (const a of folded ?? []) dropped.add(a);
      fusedAt.set(first, (map, b) => {
        const outs = b.node(
          Op.MUL_MAT_MULTI,
          [map(x), ...group.map((n) => map(n.inputs[0]!)), ...(folded ?? []).map((a) => map(a.inputs[1]!))],
          [],
          (folded ?? group).map((n) => n.name).join("+"),
        );
        // Later members' outputs (or, with addends, the ADDs' outputs) are the fused node's
        // other outputs; they take those tensors' names as replay maps them.
        if (folded)
          folded.forEach((a, k) => {
            later.set(a.outputs[0]!, outs[k]!);
          });
        else
          group.slice(1).forEach((n, k) => {
            later.set(n.outputs[0]!, outs[k + 1]!);
          });
        return folded ? [] : [outs[0]!];
      });
    });
  }
  if (options.mulMatAdd ?? true) {
    for (const node of graph.nodes) {
      if (node.op !== Op.ADD || dropped.has(node)) continue;
      const [a, c] = node.inputs as [Tensor, Tensor];
      // The product as ADD's a (c broadcast over it), or as its b when the shapes are equal.
      for (const [p, other] of [
        [a, c],
        [c, a],
      ] as const) {
        const mm = producer(p, Op.MUL_MAT);
        if (!mm || grouped.has(mm) || dropped.has(mm) || !onlyUse(p) || other.dtype !== DType.F32) continue;
        if (p === a ? !canRepeat(other.ne, p.ne) : !sameShape(p, other)) continue;
        dropped.add(mm);
        fusedAt.set(node, (map, b) =>
          b.node(Op.MUL_MAT_ADD, [map(mm.inputs[0]!), map(mm.inputs[1]!), map(other)], [], node.name),
        );
        break;
      }
    }
  }
  return replay(graph, (node, map, b) => {
    const f = fusedAt.get(node);
    if (f) return f(map, b);
    if (dropped.has(node)) {
      const o = later.get(node.outputs[0]!);
      return o ? [o] : null;
    }
    return undefined;
  });
}
