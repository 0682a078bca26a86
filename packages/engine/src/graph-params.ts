import { fuse, type Graph, type Tensor } from "@minfer/ir";
import type { KvGroup, WeightTap } from "@minfer/models";
import type { PreparedGraph } from "@minfer/scheduler";
import { EngineError } from "./errors.js";

/** The graph-cache key: the parameters that decide a graph's topology. */
export interface GraphParams {
  readonly kind: "decode" | "shift" | "move";
  /** Shift and move graphs: the cache whose layers they touch. Default: "full". */
  readonly group?: KvGroup;
  readonly nTokens: number;
  /** The full cache's KV window, a multiple of KV_BUCKET (or its size). */
  readonly nKv: number;
  readonly nOutputs: number;
  /** The full cache's visibility as spans (each query's cells are one run) instead of a mask. */
  readonly spans?: boolean;
  /** The sliding-window cache's KV window (default: its size). */
  readonly nKvSwa?: number;
  /** The sliding-window cache's visibility as spans. Default: `spans`. */
  readonly spansSwa?: boolean;
  /** Batch-invariant programs (Batch.batchInvariant; absent: false). */
  readonly batchInvariant?: boolean;
}

/** A built graph, its inputs by name, the constant values of some, and the logits. */
export interface Built {
  readonly graph: Graph;
  readonly inputs: Readonly<Record<string, Tensor>>;
  readonly constants: ReadonlyMap<string, Float32Array>;
  readonly logits?: Tensor;
  /** With the context's `candidates`: I32 [candidates, nOutputs], each logits row's best ids. */
  readonly candidates?: Tensor;
  /** With the context's `candidates`: F32 [1, candidates, nOutputs], those ids' logits. */
  readonly candidateLogits?: Tensor;
  /** With the context's `onActivations`: each weight product's activations (graph outputs). */
  readonly taps?: readonly WeightTap[];
}

/** A prepared graph and what it was built from. */
export interface Step {
  readonly step: PreparedGraph;
  readonly built: Built;
}

/**
 * The graph with @minfer/ir's fusions applied (rms_norm·w, q/k/v and gate/up products sharing
 * their input, a product and the residual or bias added to it); its inputs and logits found again
 * by name in the rewritten graph.
 */
export function fused(b: Built): Built {
  const graph = fuse(b.graph);
  const byName = new Map<string, Tensor>();
  for (const t of graph.tensors) if (t.kind === "input" || graph.outputs.includes(t)) byName.set(t.name, t);
  const find = (t: Tensor) => {
    const n = byName.get(t.name);
    if (!n) throw new EngineError("INTERNAL", `fusion lost the graph tensor "${t.name}"`);
    return n;
  };
  const inputs: Record<string, Tensor> = {};
  for (const [k, t] of Object.entries(b.inputs)) inputs[k] = find(t);
  return {
    graph,
    inputs,
    constants: b.constants,
    ...(b.logits ? { logits: find(b.logits) } : {}),
    ...(b.candidates ? { candidates: find(b.candidates) } : {}),
    ...(b.candidateLogits ? { candidateLogits: find(b.candidateLogits) } : {}),
    ...(b.taps
      ? {
          taps: b.taps.map((t) => ({
            ...t,
            input: find(t.input),
            ...(t.ids ? { ids: find(t.ids) } : {}),
          })),
        }
      : {}),
  };
}

/**
 * Runs a prepared graph with its inputs filled by name: `values` for the per-step ones, the
 * graph's constants for the rest. An input with no value is an INTERNAL error naming it.
 */
export function runStep(
  s: Step,
  values: Readonly<Record<string, ArrayBufferView>>,
  outputsInto?: ReadonlyMap<Tensor, Uint8Array>,
  skip?: ReadonlySet<Tensor>,
) {
  const data = new Map<Tensor, ArrayBufferView>();
  for (const [name, t] of Object.entries(s.built.inputs)) {
    const v = values[name] ?? s.built.constants.get(name);
    if (v === undefined) throw new EngineError("INTERNAL", `the graph's input "${name}" has no value`);
    data.set(t, v);
  }
  return s.step.executor.run(data, { ...(outputsInto ? { outputsInto } : {}), ...(skip ? { skip } : {}) });
}
