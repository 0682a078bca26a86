import { DType, type GraphBuilder, type Tensor } from "@minfer/ir";
import type { BuildOptions, KvCacheShape, KvGroup } from "./arch.js";

/** Names of the inputs every decode graph has, which the engine fills each step. */
export const STEP_INPUTS = {
  /** I32 [nTokens]: token ids. */
  tokens: "tokens",
  /** I32 [nTokens]: positions. */
  positions: "positions",
  /** I32 [nOutputs]: indices (into the batch) of the tokens whose logits are wanted. */
  outIds: "out_ids",
} as const;

/**
 * The name of a decode graph's candidate output (`BuildOptions.candidates`): I32 [candidates,
 * nOutputs], per logits row the ids of its largest logits, larger first, lower id first on ties.
 */
export const CANDIDATES_OUTPUT = "result_candidates";

/**
 * The name of a decode graph's candidate logits output (with `BuildOptions.candidates`): F32 [1,
 * candidates, nOutputs], the logits of the {@link CANDIDATES_OUTPUT} ids in their order, so that a
 * sampler can work from the ids and their logits without reading the rows back.
 */
export const CANDIDATE_LOGITS_OUTPUT = "result_candidate_logits";

/**
 * Names of one KV cache's per-step inputs: `cells` (I32 [nTokens]: the cell each token's K/V row
 * is written to) and `mask` (F32 [nKv, nTokens]: 0 where a query sees a cell, -Infinity elsewhere)
 * or `spans` (I32 [2, nTokens]: query j sees cells [start_j, end_j)). The full cache's names
 * have no suffix; the sliding-window cache's end in `_swa`.
 */
export function kvInputNames(group: KvGroup): { cells: string; mask: string; spans: string } {
  const s = group === "full" ? "" : `_${group}`;
  return { cells: `cells${s}`, mask: `mask${s}`, spans: `kq_spans${s}` };
}

/** One KV cache's inputs in a graph, and its shape there. */
export interface KvInputs {
  readonly cells: Tensor;
  /** The mask, or the spans when the graph is built with `spans`. */
  readonly visibility: Tensor;
  readonly shape: KvCacheShape;
}

/** The per-step inputs of a decoder graph, declared on `b`. */
export interface DecoderInputs {
  readonly tokens: Tensor;
  readonly positions: Tensor;
  readonly outIds: Tensor;
  /** Per KV cache the graph's layers use. */
  readonly kv: Readonly<Partial<Record<KvGroup, KvInputs>>>;
}

/** The shape of each KV cache, from the build options. */
export function kvShape(o: BuildOptions, group: KvGroup): KvCacheShape {
  if (group === "swa" && o.swa) return o.swa;
  return { nCtx: o.nCtx ?? o.nKv, nKv: o.nKv };
}

/** Declares the step inputs of a graph whose layers use the KV caches `groups`. */
export function declareInputs(b: GraphBuilder, o: BuildOptions, groups: Iterable<KvGroup>): DecoderInputs {
  const kv: Partial<Record<KvGroup, KvInputs>> = {};
  for (const g of new Set(groups)) {
    const names = kvInputNames(g);
    const shape = kvShape(o, g);
    kv[g] = {
      cells: b.input(names.cells, DType.I32, [o.nTokens]),
      visibility:
        (shape.spans ?? o.spans)
          ? b.input(names.spans, DType.I32, [2, o.nTokens])
          : b.input(names.mask, DType.F32, [shape.nKv, o.nTokens]),
      shape,
    };
  }
  return {
    tokens: b.input(STEP_INPUTS.tokens, DType.I32, [o.nTokens]),
    positions: b.input(STEP_INPUTS.positions, DType.I32, [o.nTokens]),
    outIds: b.input(STEP_INPUTS.outIds, DType.I32, [o.nOutputs]),
    kv,
  };
}
