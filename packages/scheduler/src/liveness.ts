import type { Tensor } from "@minfer/ir";
import type { Assignment } from "./assign.js";
import { extent, rootOf } from "./layout.js";

/**
 * What needs room in one device's arena: a computed tensor (the root of its views), an input
 * written by the host before the run, or a copy of a tensor another device holds.
 */
export type ArenaItemKind = "result" | "input" | "copy";

/** One tensor's bytes in an arena and the span of time they must survive. */
export interface ArenaItem {
  /** `"result:12"`, `"input:3"` or `"copy:5@2"` (tensor 5 copied for split 2). */
  readonly key: string;
  readonly kind: ArenaItemKind;
  /** The root tensor (result, input) or the tensor copied (copy). */
  readonly tensor: Tensor;
  readonly bytes: number;
  /**
   * Time points: the host writes inputs at 0, copies for split s land at 2·s.start, node i runs
   * at 2·i + 1. An item is live from `start` through `end` inclusive; `end` is Infinity for the
   * graph's outputs (read back after the run).
   */
  readonly start: number;
  readonly end: number;
}

export const itemKey = {
  result: (t: Tensor) => `result:${t.id}`,
  input: (t: Tensor) => `input:${t.id}`,
  copy: (t: Tensor, split: number) => `copy:${t.id}@${split}`,
};

/**
 * The liveness of every arena item on `device` over the graph's node order. Views, weights and
 * state take no arena room; a view keeps its root alive as long as the view is used. A result
 * read by another device lives until the copy before that device's split.
 */
export function arenaItems(assignment: Assignment, device: string): ArenaItem[] {
  const { graph, splits, crossings } = assignment;
  const items = new Map<string, { kind: ArenaItemKind; tensor: Tensor; start: number; end: number }>();
  const touch = (key: string, kind: ArenaItemKind, tensor: Tensor, time: number, start?: number) => {
    const it = items.get(key);
    if (it) it.end = Math.max(it.end, time);
    else items.set(key, { kind, tensor, start: start ?? time, end: time });
  };
  const copyOf = new Map<string, number>(); // `${tensor.id}@${split}` for copies into this device
  for (const c of crossings) {
    if (c.to !== device) continue;
    const s = splits[c.split]!;
    copyOf.set(`${c.tensor.id}@${c.split}`, c.split);
    touch(itemKey.copy(c.tensor, c.split), "copy", c.tensor, 2 * s.start);
  }
  for (const s of splits) {
    const here = s.device.name === device;
    s.nodes.forEach((node, k) => {
      const time = 2 * (s.start + k) + 1;
      for (const t of node.inputs) {
        if (here && copyOf.has(`${t.id}@${s.index}`)) {
          touch(itemKey.copy(t, s.index), "copy", t, time);
          continue;
        }
        const { root } = rootOf(t);
        if (root.kind === "input" && here) touch(itemKey.input(root), "input", root, time, 0);
        else if (root.kind === "result" && assignment.homeOf(root) === device)
          // Read here, or copied out before split s (when s is on another device).
          touch(itemKey.result(root), "result", root, here ? time : 2 * s.start);
      }
      if (!here) return;
      for (const t of node.outputs) {
        const { root } = rootOf(t);
        if (root.kind === "result") touch(itemKey.result(root), "result", root, time);
        else if (root.kind === "input") touch(itemKey.input(root), "input", root, time, 0);
      }
    });
  }
  for (const t of graph.outputs) {
    const { root } = rootOf(t);
    const key = root.kind === "input" ? itemKey.input(root) : itemKey.result(root);
    const it = items.get(key);
    if (it && (root.kind !== "result" || assignment.homeOf(root) === device))
      it.end = Number.POSITIVE_INFINITY;
  }
  return [...items].map(([key, it]) => ({ key, ...it, bytes: extent(it.tensor) }));
}
