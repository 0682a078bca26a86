import { type Device, dtypeName, type Graph, type Node, opSpec, type Tensor } from "@minfer/ir";
import { SchedulerError } from "./errors.js";
import { formatTable } from "./format-table.js";
import { describeNode, extent, opQuery, rootOf } from "./layout.js";

/** Options of {@link assign}. */
export interface AssignOptions {
  /** Candidate devices in order of preference (ties in cost go to the earlier one), e.g. `registry.devices()`. */
  devices: readonly Device[];
  /**
   * Where each weight's data lives: weight source → device name. A node reading a weight runs
   * where the weight is when that device supports it. A weight not named is host data written
   * to whichever device uses it, at no cost. Default: none named.
   */
  weights?: ReadonlyMap<string, string>;
  /**
   * Where each state tensor (KV cache, …) lives: state name → device name. A node writing into
   * state runs where the state is. Default: none named (placed with their users, at no cost).
   */
  states?: ReadonlyMap<string, string>;
}

/** One node's device and why. */
export interface NodePlacement {
  readonly node: Node;
  readonly device: Device;
  readonly reason: string;
}

/** A maximal run of consecutive nodes on one device: one program. */
export interface Split {
  readonly index: number;
  readonly device: Device;
  /** Index in `graph.nodes` of the first node, and one past the last. */
  readonly start: number;
  readonly end: number;
  readonly nodes: readonly Node[];
}

/** A tensor a split reads from another device's memory: copied into the split's device before it runs. */
export interface Crossing {
  /** The tensor (or view) the split reads. */
  readonly tensor: Tensor;
  /** Device whose memory holds it. */
  readonly from: string;
  /** Device of the split that reads it. */
  readonly to: string;
  /** Index of the reading split. */
  readonly split: number;
  /** Bytes copied (the tensor's extent). */
  readonly bytes: number;
}

/** The result of {@link assign}: a device per node, the splits, and the crossings between them. */
export interface Assignment {
  readonly graph: Graph;
  readonly placements: readonly NodePlacement[];
  readonly splits: readonly Split[];
  readonly crossings: readonly Crossing[];
  /** The devices the graph uses, in first-use order. */
  readonly devices: readonly Device[];
  /** The device of a node. */
  deviceOf(node: Node): Device;
  /**
   * The device whose memory holds a tensor (for a view, its root's), or `undefined` for host
   * data (inputs, unplaced weights/states) that is written wherever it is used.
   */
  homeOf(t: Tensor): string | undefined;
  /** A table, one line per node: node, op, device, reason; then one line per split and crossing. */
  explain(): string;
}

const opName = (n: Node) => opSpec(n.op)?.name ?? String(n.op);

function copyMicros(bytes: number, from: Device | undefined, to: Device): number {
  const bw = Math.min(
    to.caps.hostToDeviceBandwidth,
    from?.caps.hostToDeviceBandwidth ?? Number.POSITIVE_INFINITY,
  );
  return (bytes / bw) * 1e6 + to.caps.launchCostUs;
}

/**
 * Assigns each node of a graph to a device: where its weights (or the state it writes) live
 * first, then capability (`supportsOp`, never by trying), then the cost of crossings (bytes to
 * copy over the slower link plus a launch, and a launch for switching device); on equal cost the
 * previous node's device (one split fewer). An op no
 * candidate supports is a `SchedulerError` (`UNSUPPORTED_OP`) naming the op and dtypes.
 */
export function assign(graph: Graph, options: AssignOptions): Assignment {
  const devices = options.devices;
  if (devices.length === 0) throw new SchedulerError("BACKEND_MISSING", "no devices to assign the graph to");
  const byName = new Map(devices.map((d) => [d.name, d]));
  const lookup = (name: string, what: string): Device => {
    const d = byName.get(name);
    if (!d)
      throw new SchedulerError(
        "BACKEND_MISSING",
        `${what} is placed on device "${name}", which is not a candidate (${[...byName.keys()].join(", ")})`,
      );
    return d;
  };
  const nodeDevice = new Map<Node, Device>();

  const homeOf = (t: Tensor): string | undefined => {
    const { root } = rootOf(t);
    switch (root.kind) {
      case "weight":
        return options.weights?.get(root.source ?? root.name);
      case "state":
        return options.states?.get(root.source ?? root.name);
      case "input":
        return undefined;
      default:
        return root.node ? nodeDevice.get(root.node)?.name : undefined;
    }
  };

  const placements: NodePlacement[] = [];
  let previous: Device | undefined;
  for (const node of graph.nodes) {
    const query = opQuery(node);
    const supporting = devices.filter((d) => d.supportsOp(query));
    const what = `${opName(node)} (${describeNode(node)})`;
    if (supporting.length === 0) {
      throw new SchedulerError(
        "UNSUPPORTED_OP",
        `node "${node.name}": no device supports ${what}; asked: ${devices.map((d) => d.name).join(", ")}. ` +
          "Use a backend that implements it, or change the dtypes (see the op × backend coverage table).",
        { node: node.name, op: opName(node), dtypes: node.inputs.map((t) => dtypeName(t.dtype)) },
      );
    }
    let device: Device | undefined;
    let reason = "";
    // 1. In-place writes run where the memory is.
    for (const out of node.outputs) {
      if (!out.viewOf) continue;
      const home = homeOf(out);
      if (home === undefined) continue;
      const d = lookup(home, `the memory "${rootOf(out).root.name}"`);
      if (!supporting.includes(d)) {
        throw new SchedulerError(
          "UNSUPPORTED_OP",
          `node "${node.name}" writes into "${rootOf(out).root.name}" on ${d.name}, which does not support ${what}`,
          { node: node.name, op: opName(node), device: d.name },
        );
      }
      device = d;
      reason = `writes into ${rootOf(out).root.name}, which lives on ${d.name}`;
    }
    // 2. Weights: the largest weight read decides.
    let weightNote = "";
    if (!device) {
      const weights = node.inputs
        .filter((t) => rootOf(t).root.kind === "weight" && homeOf(t) !== undefined)
        .sort((a, b) => extent(b) - extent(a));
      const w = weights[0];
      if (w) {
        const d = lookup(homeOf(w)!, `weight "${rootOf(w).root.source}"`);
        if (supporting.includes(d)) {
          device = d;
          reason = `weight ${rootOf(w).root.source ?? rootOf(w).root.name} lives on ${d.name}`;
        } else {
          weightNote = `; ${d.name} (home of weight ${rootOf(w).root.source}, ${dtypeName(w.dtype)}) does not support ${what}`;
        }
      }
    }
    // 3. Capability, then the cost of crossings.
    if (!device) {
      const costs = supporting.map((d) => {
        let us = previous && previous !== d ? d.caps.launchCostUs : 0;
        for (const t of node.inputs) {
          const home = homeOf(t);
          if (home !== undefined && home !== d.name) us += copyMicros(extent(t), byName.get(home), d);
        }
        return { d, us };
      });
      // Ties go to the device of the previous node (no switch), then to the earlier candidate.
      const tie = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a));
      const best = costs.reduce((a, b) =>
        (b.us < a.us && !tie(a.us, b.us)) || (tie(a.us, b.us) && b.d === previous && a.d !== previous)
          ? b
          : a,
      );
      device = best.d;
      const lacking = devices.filter((d) => !supporting.includes(d)).map((d) => d.name);
      if (supporting.length === 1) {
        reason = `only ${device.name} supports it${lacking.length ? ` (${lacking.join(", ")} lack ${opName(node)})` : ""}`;
      } else {
        const others = costs
          .filter((c) => c !== best)
          .map((c) => `${c.d.name} ${c.us.toFixed(1)} µs`)
          .join(", ");
        reason = `least crossing cost: ${best.us.toFixed(1)} µs (${others})`;
        if (lacking.length) reason += `; ${lacking.join(", ")} lack ${opName(node)}`;
      }
      reason += weightNote;
    }
    nodeDevice.set(node, device);
    placements.push({ node, device, reason });
    previous = device;
  }

  const splits: Split[] = [];
  graph.nodes.forEach((node, i) => {
    const d = nodeDevice.get(node)!;
    const last = splits[splits.length - 1];
    if (last && last.device === d) {
      (last as { end: number }).end = i + 1;
      (last.nodes as Node[]).push(node);
    } else splits.push({ index: splits.length, device: d, start: i, end: i + 1, nodes: [node] });
  });

  const crossings: Crossing[] = [];
  for (const s of splits) {
    const seen = new Set<Tensor>();
    for (const node of s.nodes)
      for (const t of node.inputs) {
        const home = homeOf(t);
        if (home === undefined || home === s.device.name || seen.has(t)) continue;
        seen.add(t);
        crossings.push({ tensor: t, from: home, to: s.device.name, split: s.index, bytes: extent(t) });
      }
  }

  const used = [...new Set(splits.map((s) => s.device))];
  return {
    graph,
    placements,
    splits,
    crossings,
    devices: used,
    deviceOf: (node) => {
      const d = nodeDevice.get(node);
      if (!d) throw new SchedulerError("BAD_GRAPH", `node "${node.name}" is not in this graph`);
      return d;
    },
    homeOf,
    explain: () => explainAssignment(placements, splits, crossings),
  };
}

function explainAssignment(
  placements: readonly NodePlacement[],
  splits: readonly Split[],
  crossings: readonly Crossing[],
): string {
  const table = formatTable(
    ["node", "op", "device", "reason"],
    placements.map((p) => [p.node.name, opName(p.node), p.device.name, p.reason]),
  );
  const lines = [table, "", `${splits.length} split(s):`];
  for (const s of splits)
    lines.push(`  #${s.index} ${s.device.name}: nodes ${s.start}..${s.end - 1} (${s.nodes.length})`);
  for (const c of crossings)
    lines.push(`  copy ${c.tensor.name} (${c.bytes} bytes) ${c.from} → ${c.to} before split #${c.split}`);
  return lines.join("\n");
}
