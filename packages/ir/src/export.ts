import { dtypeName } from "./dtype.js";
import type { Graph } from "./graph.js";
import { opSpec } from "./ops.js";
import { describe } from "./tensor.js";

/** The graph as JSON-ready data: tensors (shape, strides, kind, aliasing) and nodes, by id. */
export function graphToJson(graph: Graph) {
  return {
    tensors: graph.tensors.map((t) => ({
      id: t.id,
      name: t.name,
      dtype: dtypeName(t.dtype),
      ne: t.ne,
      nb: t.nb,
      kind: t.kind,
      viewOf: t.viewOf?.id ?? null,
      viewOffset: t.viewOffset,
      node: t.node?.id ?? null,
      source: t.source ?? null,
    })),
    nodes: graph.nodes.map((n) => ({
      id: n.id,
      name: n.name,
      op: opSpec(n.op)?.name ?? String(n.op),
      inputs: n.inputs.map((t) => t.id),
      outputs: n.outputs.map((t) => t.id),
      params: n.params,
    })),
    outputs: graph.outputs.map((t) => t.id),
  };
}

const quote = (s: string) => `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;

/** The graph in Graphviz DOT: ops as boxes, leaves (inputs, weights, state) as ellipses, views dashed. */
export function graphToDot(graph: Graph): string {
  const L = ["digraph minfer {", "  rankdir=TB;", '  node [fontname="monospace", fontsize=10];'];
  const leafIds = new Set<number>();
  for (const n of graph.nodes) {
    for (const t of n.inputs) {
      let src = t;
      while (src.viewOf && !src.node) src = src.viewOf;
      if (!src.node && !leafIds.has(src.id)) {
        leafIds.add(src.id);
        L.push(`  t${src.id} [shape=ellipse, label=${quote(`${src.kind} ${src.name}\\n${describe(src)}`)}];`);
      }
    }
    const outs = n.outputs.map(describe).join("; ");
    L.push(`  n${n.id} [shape=box, label=${quote(`${opSpec(n.op)?.name ?? n.op} ${n.name}\\n${outs}`)}];`);
  }
  for (const n of graph.nodes) {
    for (const t of n.inputs) {
      let src = t;
      while (src.viewOf && !src.node) src = src.viewOf;
      const from = src.node ? `n${src.node.id}` : `t${src.id}`;
      L.push(`  ${from} -> n${n.id}${t.kind === "view" ? " [style=dashed]" : ""};`);
    }
  }
  graph.outputs.forEach((t, i) => {
    L.push(`  out${i} [shape=plaintext, label=${quote(`output ${t.name}`)}];`);
    if (t.node) L.push(`  n${t.node.id} -> out${i};`);
  });
  L.push("}");
  return `${L.join("\n")}\n`;
}
