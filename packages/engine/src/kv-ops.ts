import type { KvGroup } from "@minfer/models";
import { kvWindow } from "./decode-step.js";
import { EngineError } from "./errors.js";
import { type GraphParams, runStep, type Step } from "./graph-params.js";
import { KV_BUCKET, type KvStore, kvCall } from "./kv-store.js";

/** What the graph-running KV operations need of a context. */
export interface KvOpsCore {
  readonly store: KvStore;
  readonly nSeqMax: number;
  get(p: GraphParams): Step;
}

/** Re-ropes K of the cells seqAdd/seqDiv moved, in every cache, before anything attends over them. */
export async function applyShift(c: KvOpsCore): Promise<void> {
  for (const g of c.store.groups) {
    if (!g.cache.hasShift()) continue;
    const deltas = g.cache.consumeShift();
    const nCells = kvWindow(g);
    const cells = Int32Array.from({ length: nCells }, (_, i) => i);
    const s = c.get({ kind: "shift", group: g.group, nTokens: nCells, nKv: 0, nOutputs: 0 });
    await runStep(s, { cells, deltas: deltas.subarray(0, nCells) });
  }
}

/** Copies the K/V rows of cells `from` to cells `to` in one cache's layers, by one graph. */
async function moveRows(c: KvOpsCore, group: KvGroup, from: Int32Array, to: Int32Array): Promise<void> {
  const s = c.get({ kind: "move", group, nTokens: from.length, nKv: 0, nOutputs: 0 });
  await runStep(s, { from, to });
}

/**
 * Copies what `src` holds of positions [0, n) into new cells of the empty `dst`, in every cache
 * (in a sliding-window cache only the window before n, all a query at n sees). Rows are padded to
 * a bucket (the last row copied again) so copies of similar length share a graph.
 */
export async function seqClone(c: KvOpsCore, src: number, dst: number, n: number): Promise<void> {
  const bad = (m: string) => new EngineError("INVALID_ARGUMENT", `seqClone: ${m}`);
  for (const [v, what] of [
    [src, "src"],
    [dst, "dst"],
  ] as const)
    if (!Number.isInteger(v) || v < 0 || v >= c.nSeqMax)
      throw bad(`${what} ${v} is not a sequence id in [0, ${c.nSeqMax})`);
  if (!Number.isInteger(n) || n < 1) throw bad(`n must be a positive integer, got ${n}`);
  if (src === dst) throw bad("src and dst are the same sequence");
  const store = c.store;
  if (store.primary.seqCount(dst) !== 0) throw bad(`sequence ${dst} is not empty; seqRm(${dst}) first`);
  await applyShift(c);
  if (!store.canContinue(src, n))
    throw bad(`sequence ${src} no longer holds the sliding window before position ${n}`);
  const plans: { group: KvGroup; from: Int32Array; to: Int32Array }[] = [];
  try {
    for (const g of store.groups) {
      const lo = g.prunes ? Math.max(0, n - g.window + 1) : 0;
      const count = n - lo;
      const from = new Int32Array(Math.ceil(count / KV_BUCKET) * KV_BUCKET).fill(-1);
      const pos = g.cache.cells.positions;
      for (let cell = 0; cell < g.cache.nCtx; cell++) {
        const p = pos[cell]!;
        if (p >= lo && p < n && g.cache.cells.has(cell, src)) from[p - lo] = cell;
      }
      for (let i = 0; i < count; i++)
        if (from[i]! < 0) throw bad(`sequence ${src} has no cell at position ${lo + i}`);
      const ids = [dst];
      const slot = kvCall(() =>
        g.cache.allocate(Array.from({ length: count }, (_, i) => ({ pos: lo + i, seqIds: ids }))),
      );
      if (slot.status !== "ok")
        throw new EngineError(
          "NO_KV_ROOM",
          `seqClone: no room for ${count} cells of sequence ${dst} (${slot.free} free)`,
        );
      const to = new Int32Array(from.length);
      to.set(slot.cells);
      for (let i = count; i < from.length; i++) {
        from[i] = from[count - 1]!;
        to[i] = to[count - 1]!;
      }
      plans.push({ group: g.group, from, to });
    }
    for (const p of plans) await moveRows(c, p.group, p.from, p.to);
  } catch (e) {
    for (const g of store.groups) g.cache.seqRm(dst, 0, -1);
    throw e;
  }
  const h = store.history.get(src);
  store.history.set(dst, h && h.length >= n ? h.slice(0, n) : undefined);
}

/** Compacts every cache's used cells to its front (rows moved by one graph each); returns the cells moved. */
export async function defrag(c: KvOpsCore): Promise<number> {
  if (c.store.primary.region > 0)
    throw new EngineError(
      "INVALID_ARGUMENT",
      "defrag: a context with kvUnified: false keeps each sequence in its own region; there is nothing to compact",
    );
  await applyShift(c);
  let moved = 0;
  for (const g of c.store.groups) {
    const plan = g.cache.defragPlan();
    let nCells = 0;
    for (const m of plan) nCells += m.count;
    if (nCells === 0) continue;
    const from = new Int32Array(nCells);
    const to = new Int32Array(nCells);
    let k = 0;
    for (const m of plan)
      for (let i = 0; i < m.count; i++, k++) {
        from[k] = m.from + i;
        to[k] = m.to + i;
      }
    await moveRows(c, g.group, from, to);
    g.cache.applyDefrag(plan);
    moved += nCells;
  }
  return moved;
}
