import { type Graph, Op, type Tensor } from "@minfer/ir";

/**
 * A weight product's activations, made a graph output (see `BuildOptions.taps`): what an
 * importance matrix sums. `input` is the product's right-hand side (F32 [nCols, …]), `ids` the
 * expert ids of a MUL_MAT_ID (I32 [slots, tokens]; `input` is then [nCols, slots or 1, tokens]).
 */
export interface WeightTap {
  /** The weight's tensor name in the file (the root of a view such as a fused QKV's rows). */
  readonly weight: string;
  readonly input: Tensor;
  readonly ids?: Tensor;
  /** Experts in the weight (1 for a plain matrix). */
  readonly nMat: number;
}

/** The weight a tensor is, or views, or undefined. */
function weightOf(t: Tensor): Tensor | undefined {
  let w: Tensor | undefined = t;
  while (w && w.kind !== "weight") w = w.viewOf;
  return w;
}

/**
 * Every distinct (weight, activations) pair of the products in `graph`: MUL_MAT and MUL_MAT_ID
 * nodes whose left-hand side is a weight of the file or a view of one. Two views of one weight
 * multiplying the same activations (a fused QKV's three products) count once.
 */
export function weightTaps(graph: Graph): WeightTap[] {
  const taps: WeightTap[] = [];
  const seen = new Set<string>();
  for (const n of graph.nodes) {
    if (n.op !== Op.MUL_MAT && n.op !== Op.MUL_MAT_ID) continue;
    const w = weightOf(n.inputs[0]!);
    const input = n.inputs[1]!;
    if (!w) continue;
    const name = w.source ?? w.name;
    const key = `${name}\u0000${input.id}`;
    if (seen.has(key)) continue;
    seen.add(key);
    if (n.op === Op.MUL_MAT_ID)
      taps.push({ weight: name, input, ids: n.inputs[2]!, nMat: w.ne[2] * w.ne[3] });
    else taps.push({ weight: name, input, nMat: 1 });
  }
  return taps;
}
