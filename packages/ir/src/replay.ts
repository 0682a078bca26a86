import { IrError } from "./errors.js";
import { type Graph, GraphBuilder } from "./graph.js";
import { Op } from "./ops.js";
import type { Node, Tensor } from "./tensor.js";

/**
 * Rebuilds a graph node by node into a new builder, letting `visit` replace nodes: it returns
 * the new output tensors for a node, or `undefined` to copy the node as is. Used by passes.
 */
export function replay(
  graph: Graph,
  visit: (node: Node, map: (t: Tensor) => Tensor, b: GraphBuilder) => Tensor[] | null | undefined,
): Graph {
  const b = new GraphBuilder();
  const mapped = new Map<Tensor, Tensor>();
  const map = (t: Tensor): Tensor => {
    const m = mapped.get(t);
    if (m) return m;
    let out: Tensor;
    switch (t.kind) {
      case "input":
        out = b.input(t.name, t.dtype, t.ne);
        break;
      case "weight":
        out = b.weight(t.name, t.dtype, t.ne, t.source);
        break;
      case "state":
        out = b.state(t.name, t.dtype, t.ne);
        break;
      case "view":
        if (!t.viewOf) throw new IrError("BAD_GRAPH", `view ${t.name} has no base`);
        if (t.node?.outputs.includes(t) && t.node.inputs.length > 0) {
          throw new IrError("BAD_GRAPH", `tensor ${t.name} is used before the node that writes it`);
        }
        out = b.view(map(t.viewOf), t.ne, t.nb, t.viewOffset, t.name);
        break;
      default:
        throw new IrError("BAD_GRAPH", `tensor ${t.name} is used before the node that computes it`);
    }
    mapped.set(t, out);
    return out;
  };
  for (const node of graph.nodes) {
    const replaced = visit(node, map, b);
    if (replaced === null) continue; // the node is dropped (a pass folded it into another)
    let outs: Tensor[];
    if (replaced) outs = replaced;
    else if (node.op === Op.CPY) {
      const out = node.outputs[0]!;
      outs = [
        out.viewOf
          ? b.cpy(map(node.inputs[0]!), map(out.viewOf), node.name)
          : b.cont(map(node.inputs[0]!), out.dtype, node.name),
      ];
    } else {
      outs = b.node(node.op, node.inputs.map(map), node.params, node.name);
    }
    node.outputs.forEach((t, i) => {
      const o = outs[i];
      if (o) {
        o.name = t.name;
        mapped.set(t, o);
      }
    });
  }
  for (const t of graph.outputs) b.output(map(t));
  return b.build();
}
