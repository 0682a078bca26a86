import { DType, type Graph, type RopeParams, type Tensor } from "@minfer/ir";
import type { ArchModule, KvGroup } from "./arch.js";
import type { Hparams } from "./hparams.js";
import { ModelGraph } from "./model-graph.js";
import type { ModelTensors } from "./tensors.js";

/** One KV cache's state tensors as a decode graph declares them. */
export interface KvLayout {
  /** Which cache: the layers of this group. Default: "full". */
  readonly group?: KvGroup;
  /** Cells of each `k_cache-{il}`/`v_cache-{il}` state of the group ([row, nCtx]). */
  readonly nCtx: number;
  /** Their dtype (F32, F16 or Q8_0). */
  readonly kvDtype: DType;
}

/** A graph over the KV cache alone, with the inputs the caller fills. */
export interface KvGraph {
  readonly graph: Graph;
  readonly inputs: Readonly<Record<string, Tensor>>;
  /** Values of the constant inputs (RoPE factors computed from keys), by name. */
  readonly constants: ReadonlyMap<string, Float32Array>;
}

/** The layers of `group` with their state tensors. */
function* groupCaches<H extends Hparams>(
  g: ModelGraph,
  arch: ArchModule<H>,
  hp: H,
  o: KvLayout,
): Generator<{ il: number; k: Tensor; v: Tensor; kRow: number }> {
  const layers = arch.kvLayers(hp);
  for (let il = 0; il < layers.length; il++) {
    const l = layers[il]!;
    if (l.group !== (o.group ?? "full")) continue;
    const k = g.b.state(`k_cache-${il}`, o.kvDtype, [l.kRow, o.nCtx]);
    const v = g.b.state(`v_cache-${il}`, o.kvDtype, [l.vRow, o.nCtx]);
    yield { il, k, v, kRow: l.kRow };
  }
}

/**
 * RoPE parameters that rotate by a position delta only. The rotation of RoPE is additive in the
 * position, but YaRN also scales magnitudes (attnFactor · (1 + 0.1·ln(1/freqScale))); applied a
 * second time that scale would compound, so the shift cancels it.
 */
export function shiftRopeParams(p: RopeParams): RopeParams {
  if (!p.extFactor) return { ...p, attnFactor: 1 };
  const fs = p.freqScale ?? 1;
  return { ...p, attnFactor: 1 / (1 + 0.1 * Math.log(1 / fs)) };
}

function finish(g: ModelGraph): KvGraph {
  const graph = g.b.build();
  const inputs: Record<string, Tensor> = {};
  for (const t of graph.tensors) if (t.kind === "input") inputs[t.name] = t;
  return { graph, inputs, constants: g.constants() };
}

/**
 * Re-ropes the K rows of `nCells` cells of one cache after a position shift (`seqAdd`/`seqDiv`):
 * each of its layers' K rows at `cells` are read (as F32), rotated by `deltas` with that layer's
 * RoPE and written back. Inputs: `cells` and `deltas` (I32 [nCells]) and the RoPE constants.
 */
export function buildKvShift<H extends Hparams>(
  arch: ArchModule<H>,
  hp: H,
  o: KvLayout & { nCells: number; tensors?: ModelTensors; nCtxModel: number },
): KvGraph {
  const g = new ModelGraph(o.tensors);
  const { b } = g;
  const cells = b.input("cells", DType.I32, [o.nCells]);
  const deltas = b.input("deltas", DType.I32, [o.nCells]);
  for (const { il, k, kRow } of groupCaches(g, arch, hp, o)) {
    const rope = arch.kRope(hp, il, { ...(o.tensors ? { tensors: o.tensors } : {}), nCtx: o.nCtxModel });
    const rows = b.name(b.getRows(k, cells), "k_shift_rows", il);
    const heads = b.reshape(rows, [hp.headDimK, kRow / hp.headDimK, o.nCells], `k_shift_heads-${il}`);
    const turned = b.name(
      b.rope(heads, deltas, shiftRopeParams(rope.params), g.ropeFactors(rope)),
      "k_shifted",
      il,
    );
    const flat = b.reshape(turned, [kRow, o.nCells], `k_shift_flat-${il}`);
    b.name(b.setRows(k, flat, cells), "k_shift_store", il);
  }
  return finish(g);
}

/**
 * Copies the K and V rows of cells `from` to cells `to` (I32 [nCells] each) in every layer of one
 * cache: a defragmentation plan executed as one graph. Sources and targets must not overlap (the
 * plan guarantees it), so reading all rows before writing is the same as moving them one by one.
 */
export function buildKvMove<H extends Hparams>(
  arch: ArchModule<H>,
  hp: H,
  o: KvLayout & { nCells: number },
): KvGraph {
  const g = new ModelGraph(undefined);
  const { b } = g;
  const from = b.input("from", DType.I32, [o.nCells]);
  const to = b.input("to", DType.I32, [o.nCells]);
  for (const { k, v } of groupCaches(g, arch, hp, o)) {
    for (const cache of [k, v]) b.setRows(cache, b.getRows(cache, from), to);
  }
  return finish(g);
}
