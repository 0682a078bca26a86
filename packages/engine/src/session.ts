import type { KvDtype } from "@minfer/kvcache";
import { readSequenceState } from "@minfer/kvcache";
import { EngineError } from "./errors.js";
import type { KvBuffers } from "./kv-buffers.js";
import { applyShift, type KvOpsCore } from "./kv-ops.js";
import { kvCall } from "./kv-store.js";
import { readSequenceData, type SavedCache, type SavedLayer, writeSequenceData } from "./sequence-state.js";

/** What saving and restoring a sequence needs of a context. */
export interface SessionCore extends KvOpsCore {
  readonly buffers: KvBuffers;
  readonly kvDtype: KvDtype;
}

/**
 * Consecutive cells as runs [index in `cells`, first cell, count], so a sequence's K/V rows move
 * with one read or write per run instead of one per cell.
 */
function cellRuns(cells: ArrayLike<number>): [number, number, number][] {
  const runs: [number, number, number][] = [];
  for (let i = 0; i < cells.length; ) {
    let n = 1;
    while (i + n < cells.length && cells[i + n] === cells[i]! + n) n++;
    runs.push([i, cells[i]!, n]);
    i += n;
  }
  return runs;
}

function layerTable(c: SessionCore, layers: readonly number[]): SavedLayer[] {
  return layers.map((il) => {
    const [k, v] = c.buffers.layer(il);
    return { il, rowBytesK: k.size, rowBytesV: v.size };
  });
}

/** The state of one sequence (each cache's cells, K/V rows and the known tokens) as bytes. */
export async function saveSequence(c: SessionCore, seq: number): Promise<Uint8Array> {
  await applyShift(c);
  const caches: SavedCache[] = [];
  for (const g of c.store.groups) {
    const cellsBytes = kvCall(() => g.cache.writeSequence(seq));
    const runs = cellRuns(readSequenceState(cellsBytes).cells);
    const nCells = runs.reduce((a, r) => a + r[2], 0);
    const rows: Uint8Array[] = [];
    for (const il of g.layers)
      for (const b of c.buffers.layer(il)) {
        const out = new Uint8Array(nCells * b.size);
        for (const [at, first, n] of runs)
          out.set(await b.runtime.read(b.buffer, b.base + first * b.size, n * b.size), at * b.size);
        rows.push(out);
      }
    caches.push({ group: g.group, layers: layerTable(c, g.layers), cells: cellsBytes, rows });
  }
  return writeSequenceData({ kvDtype: c.kvDtype, caches, tokens: c.store.history.get(seq) });
}

/**
 * Restores a saved sequence into the empty `seq`: new cells are allocated in each cache and the
 * K/V rows written into them. The state must come from a context over the same model with the
 * same KV dtype and caches.
 */
export async function restoreSequence(c: SessionCore, bytes: Uint8Array, seq: number): Promise<void> {
  const data = readSequenceData(bytes);
  const mine = c.store.groups.map((g) => ({ group: g.group, layers: layerTable(c, g.layers) }));
  const describe = (x: readonly { group: string; layers: readonly SavedLayer[] }[]) =>
    x
      .map(
        (g) =>
          `${g.group}: ${g.layers.length} layers, rows ${g.layers[0]?.rowBytesK}/${g.layers[0]?.rowBytesV} bytes`,
      )
      .join("; ");
  const same =
    data.kvDtype === c.kvDtype &&
    data.caches.length === mine.length &&
    data.caches.every(
      (s, i) =>
        s.group === mine[i]!.group &&
        s.layers.length === mine[i]!.layers.length &&
        s.layers.every(
          (l, j) =>
            l.il === mine[i]!.layers[j]!.il &&
            l.rowBytesK === mine[i]!.layers[j]!.rowBytesK &&
            l.rowBytesV === mine[i]!.layers[j]!.rowBytesV,
        ),
    );
  if (!same)
    throw new EngineError(
      "INVALID_ARGUMENT",
      `restoreSequence: the state is of a different model or KV dtype (${data.kvDtype}, ${describe(data.caches)}; ` +
        `this context: ${c.kvDtype}, ${describe(mine)})`,
    );
  const groups = c.store.groups;
  try {
    for (let i = 0; i < groups.length; i++) {
      const g = groups[i]!;
      const saved = data.caches[i]!;
      const slot = kvCall(() => g.cache.restoreSequence(saved.cells, seq));
      if (slot.status !== "ok")
        throw new EngineError(
          "NO_KV_ROOM",
          `restoreSequence: no room for ${slot.needed} cells (${slot.free} free)`,
        );
      const runs = cellRuns(slot.cells);
      let r = 0;
      for (const il of g.layers)
        for (const b of c.buffers.layer(il)) {
          const rows = saved.rows[r++]!;
          for (const [at, first, n] of runs)
            await b.runtime.write(
              b.buffer,
              b.base + first * b.size,
              rows.subarray(at * b.size, (at + n) * b.size),
            );
        }
    }
  } catch (e) {
    for (const g of groups) g.cache.seqRm(seq, 0, -1);
    throw e;
  }
  c.store.history.set(seq, data.tokens);
}
