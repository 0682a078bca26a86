import { DType, type Graph, GraphBuilder, type RopeParams, type Tensor } from "@minfer/ir";
import { type ArchFeatures, ropeFactors } from "./builders.js";
import type { Hparams } from "./hparams.js";
import { ropeParams } from "./rope.js";
import type { ModelTensors } from "./tensors.js";

/** The KV cache's state tensors as a decode graph declares them. */
export interface KvLayout {
  /** Cells of each `k_cache-{il}`/`v_cache-{il}` state ([row, nCtx]). */
  readonly nCtx: number;
  /** Their dtype (F32, F16 or Q8_0). */
  readonly kvDtype: DType;
}

/** A graph over the KV cache alone, with the inputs the caller fills. */
export interface KvGraph {
  readonly graph: Graph;
  readonly inputs: Readonly<Record<string, Tensor>>;
}

function caches(b: GraphBuilder, hp: Hparams, o: KvLayout, il: number): [Tensor, Tensor] {
  return [
    b.state(`k_cache-${il}`, o.kvDtype, [hp.nHeadKv * hp.headDimK, o.nCtx]),
    b.state(`v_cache-${il}`, o.kvDtype, [hp.nHeadKv * hp.headDimV, o.nCtx]),
  ];
}

/**
 * RoPE parameters that rotate by a position delta only. The rotation of RoPE is additive in the
 * position, but YaRN also scales magnitudes (attnFactor · (1 + 0.1·ln(1/freqScale))); applied a
 * second time that scale would compound, so the shift cancels it.
 */
export function shiftRopeParams(hp: Hparams, mode: RopeParams["mode"]): RopeParams {
  const p = ropeParams(hp, mode);
  if (!p.extFactor) return { ...p, attnFactor: 1 };
  const fs = p.freqScale ?? 1;
  return { ...p, attnFactor: 1 / (1 + 0.1 * Math.log(1 / fs)) };
}

/**
 * Re-ropes the K rows of `nCells` cells after a position shift (`seqAdd`/`seqDiv`): each layer's
 * K rows at `cells` are read (as F32), rotated by `deltas` and written back. Inputs: `cells` and
 * `deltas` (I32 [nCells]) and, for llama3 scaling keys without a `rope_freqs.weight` tensor, `rope_freqs`.
 */
export function buildKvShift(
  hp: Hparams,
  f: ArchFeatures,
  o: KvLayout & { nCells: number; tensors?: ModelTensors },
): KvGraph {
  const b = new GraphBuilder();
  const cells = b.input("cells", DType.I32, [o.nCells]);
  const deltas = b.input("deltas", DType.I32, [o.nCells]);
  const factors = ropeFactors(b, hp, o.tensors);
  const freqs = factors.tensor;
  const rope = shiftRopeParams(hp, f.ropeMode);
  for (let il = 0; il < hp.nLayer; il++) {
    const [k] = caches(b, hp, o, il);
    const rows = b.name(b.getRows(k, cells), "k_shift_rows", il);
    const heads = b.reshape(rows, [hp.headDimK, hp.nHeadKv, o.nCells], `k_shift_heads-${il}`);
    const turned = b.name(b.rope(heads, deltas, rope, freqs), "k_shifted", il);
    const flat = b.reshape(turned, [hp.headDimK * hp.nHeadKv, o.nCells], `k_shift_flat-${il}`);
    b.name(b.setRows(k, flat, cells), "k_shift_store", il);
  }
  return {
    graph: b.build(),
    inputs: { cells, deltas, ...(factors.input ? { ropeFreqs: factors.input } : {}) },
  };
}

/**
 * Copies the K and V rows of cells `from` to cells `to` (I32 [nCells] each) in every layer: a
 * defragmentation plan executed as one graph. Sources and targets must not overlap (the plan
 * guarantees it), so reading all rows before writing is the same as moving them one by one.
 */
export function buildKvMove(hp: Hparams, o: KvLayout & { nCells: number }): KvGraph {
  const b = new GraphBuilder();
  const from = b.input("from", DType.I32, [o.nCells]);
  const to = b.input("to", DType.I32, [o.nCells]);
  for (let il = 0; il < hp.nLayer; il++) {
    for (const cache of caches(b, hp, o, il)) {
      const rows = b.getRows(cache, from);
      b.setRows(cache, rows, to);
    }
  }
  return { graph: b.build(), inputs: { from, to } };
}
