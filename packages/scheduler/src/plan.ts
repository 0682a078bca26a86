import {
  type BackendBuffer,
  encodeProgram,
  type Node,
  PROGRAM_FLAG_BATCH_INVARIANT,
  type ProgramSpec,
  type ProgramTensor,
  type Tensor,
} from "@minfer/ir";
import type { AllocationPlan } from "./allocator.js";
import type { Assignment, Split } from "./assign.js";
import { SchedulerError } from "./errors.js";
import { extent, rootOf } from "./layout.js";
import { itemKey } from "./liveness.js";

/** A caller's buffer holding a weight's or a state tensor's data, at a byte offset. */
export interface TensorBinding {
  readonly buffer: BackendBuffer;
  /** Byte offset of the tensor's element 0 in the buffer. Default: 0. */
  readonly offset?: number;
}

/** Where bytes are: a device's arena, or a buffer the caller bound. */
export type BufferRef =
  | { readonly kind: "arena"; readonly device: string }
  | { readonly kind: "bound"; readonly buffer: BackendBuffer };

/** A tensor's bytes on one device. */
export interface Location {
  readonly device: string;
  readonly buffer: BufferRef;
  readonly offset: number;
  readonly bytes: number;
}

/** One split lowered to a program for its device. */
export interface SplitProgram {
  readonly kind: "split";
  readonly split: Split;
  readonly device: string;
  readonly spec: ProgramSpec;
  readonly program: Uint8Array;
  /** What each buffer slot is (slot 0: the arena). */
  readonly slots: readonly BufferRef[];
  readonly nodes: readonly Node[];
}

/** A copy of a tensor from one device's memory to another's, before the split that reads it. */
export interface CopyStep {
  readonly kind: "copy";
  readonly tensor: Tensor;
  readonly from: Location;
  readonly to: Location;
}

/** Everything the executor needs to run a graph, computed once per graph shape. */
export interface ExecutionPlan {
  readonly assignment: Assignment;
  readonly steps: readonly (SplitProgram | CopyStep)[];
  /** Where the host writes each input (once per device that reads it). */
  readonly inputs: ReadonlyMap<Tensor, readonly Location[]>;
  /** Where each graph output is read back from. */
  readonly outputs: ReadonlyMap<Tensor, Location>;
}

/** Options of {@link lower}. */
export interface LowerOptions {
  /** The allocation of each device the graph uses. */
  allocations: ReadonlyMap<string, AllocationPlan>;
  /** Arena bytes of each device (what slot 0 of its programs holds). */
  arenaSizes: ReadonlyMap<string, number>;
  /** Weight source → its buffer. Default: none. */
  weights?: ReadonlyMap<string, TensorBinding>;
  /** State tensor name → its buffer. Default: none. */
  states?: ReadonlyMap<string, TensorBinding>;
}

/**
 * Lowers an assigned and allocated graph: one program per split (slot 0 the device's arena,
 * then one slot per bound weight or state buffer the split reads), the copies between splits,
 * and where inputs are written and outputs read.
 */
export function lower(assignment: Assignment, o: LowerOptions): ExecutionPlan {
  const offsetOf = (device: string, key: string, t: Tensor): number => {
    const off = o.allocations.get(device)?.offsets.get(key);
    if (off === undefined)
      throw new SchedulerError("BAD_GRAPH", `tensor "${t.name}" has no room planned on ${device} (${key})`);
    return off;
  };
  const crossing = new Map(assignment.crossings.map((c) => [`${c.tensor.id}@${c.split}`, c]));

  /** Where `t` is on `device`, ignoring copies. */
  const home = (t: Tensor, device: string): Location => {
    const { root, offset } = rootOf(t);
    const bytes = extent(t);
    if (root.kind === "weight" || root.kind === "state") {
      const name = root.source ?? root.name;
      const b = (root.kind === "weight" ? o.weights : o.states)?.get(name);
      if (!b)
        throw new SchedulerError(
          "UNBOUND_TENSOR",
          `${root.kind} "${name}" has no buffer; bind it in SchedulerOptions.${root.kind === "weight" ? "weights" : "states"}`,
          { tensor: name },
        );
      if (b.buffer.device !== device)
        throw new SchedulerError(
          "BAD_GRAPH",
          `${root.kind} "${name}" is bound on ${b.buffer.device} but planned on ${device}`,
        );
      return { device, buffer: { kind: "bound", buffer: b.buffer }, offset: (b.offset ?? 0) + offset, bytes };
    }
    const key = root.kind === "input" ? itemKey.input(root) : itemKey.result(root);
    return { device, buffer: { kind: "arena", device }, offset: offsetOf(device, key, root) + offset, bytes };
  };

  const steps: (SplitProgram | CopyStep)[] = [];
  for (const split of assignment.splits) {
    const device = split.device.name;
    for (const c of assignment.crossings.filter((x) => x.split === split.index)) {
      steps.push({
        kind: "copy",
        tensor: c.tensor,
        from: home(c.tensor, c.from),
        to: {
          device,
          buffer: { kind: "arena", device },
          offset: offsetOf(device, itemKey.copy(c.tensor, split.index), c.tensor),
          bytes: c.bytes,
        },
      });
    }
    const slots: BufferRef[] = [{ kind: "arena", device }];
    const bufferSizes = [o.arenaSizes.get(device) ?? 0];
    const slotOf = (ref: BufferRef): number => {
      if (ref.kind === "arena") return 0;
      const i = slots.findIndex((s) => s.kind === "bound" && s.buffer === ref.buffer);
      if (i >= 0) return i;
      slots.push(ref);
      bufferSizes.push(ref.buffer.size);
      return slots.length - 1;
    };
    const tensors: ProgramTensor[] = [];
    const index = new Map<Tensor, number>();
    const tensorIndex = (t: Tensor): number => {
      const known = index.get(t);
      if (known !== undefined) return known;
      const c = crossing.get(`${t.id}@${split.index}`);
      const loc = c
        ? {
            buffer: { kind: "arena", device } as BufferRef,
            offset: offsetOf(device, itemKey.copy(t, split.index), t),
          }
        : home(t, device);
      tensors.push({ dtype: t.dtype, buffer: slotOf(loc.buffer), offset: loc.offset, ne: t.ne, nb: t.nb });
      index.set(t, tensors.length - 1);
      return tensors.length - 1;
    };
    const nodes = split.nodes.map((n) => ({
      op: n.op,
      inputs: n.inputs.map(tensorIndex),
      outputs: n.outputs.map(tensorIndex),
      params: n.params,
    }));
    const spec: ProgramSpec = {
      bufferSizes,
      tensors,
      nodes,
      ...(assignment.graph.batchInvariant ? { flags: PROGRAM_FLAG_BATCH_INVARIANT } : {}),
    };
    steps.push({
      kind: "split",
      split,
      device,
      spec,
      program: encodeProgram(spec),
      slots,
      nodes: split.nodes,
    });
  }

  const inputs = new Map<Tensor, Location[]>();
  for (const [device, plan] of o.allocations)
    for (const it of plan.items) {
      if (it.kind !== "input") continue;
      const list = inputs.get(it.tensor) ?? [];
      list.push(home(it.tensor, device));
      inputs.set(it.tensor, list);
    }
  const outputs = new Map<Tensor, Location>();
  for (const t of assignment.graph.outputs) {
    const { root } = rootOf(t);
    const device =
      assignment.homeOf(t) ??
      (root.kind === "input" ? inputs.get(root)?.[0]?.device : undefined) ??
      (root.kind === "weight" || root.kind === "state"
        ? (root.kind === "weight" ? o.weights : o.states)?.get(root.source ?? root.name)?.buffer.device
        : undefined);
    if (device === undefined)
      throw new SchedulerError("BAD_GRAPH", `output "${t.name}" is not computed or held on any device`);
    outputs.set(t, home(t, device));
  }
  return { assignment, steps, inputs, outputs };
}
