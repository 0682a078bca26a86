import { KvCacheError } from "./errors.js";
import type { KvCells } from "./kv-cells.js";

/** Copy `count` cells' K/V rows from cells [from, from + count) to [to, to + count). */
export interface KvMove {
  readonly from: number;
  readonly to: number;
  readonly count: number;
}

/**
 * A plan that compacts used cells to the front: each hole in [0, used) receives a used cell from
 * [used, nCtx), in ascending order on both sides (so relative order is kept), consecutive runs merged
 * into one move. Sources and targets never overlap, so the moves may run in any order, or all at
 * once, as one graph of copies. `maxMoves` caps the number of moves (a partial plan is still valid;
 * the next plan continues). Empty when there is nothing to compact.
 */
export function defragPlan(cells: KvCells, maxMoves = Number.POSITIVE_INFINITY): KvMove[] {
  if (!(maxMoves === Number.POSITIVE_INFINITY || (Number.isInteger(maxMoves) && maxMoves >= 0))) {
    throw new KvCacheError(
      "INVALID_ARGUMENT",
      `maxMoves must be a non-negative integer, got ${String(maxMoves)}`,
      {
        argument: "maxMoves",
      },
    );
  }
  const pos = cells.positions;
  const used = cells.used();
  const top = cells.window();
  const plan: KvMove[] = [];
  let hole = 0;
  let src = used;
  let run: { from: number; to: number; count: number } | null = null;
  for (;;) {
    while (hole < used && pos[hole]! >= 0) hole++;
    while (src < top && pos[src]! < 0) src++;
    if (hole >= used || src >= top) break;
    if (run !== null && run.from + run.count === src && run.to + run.count === hole) run.count++;
    else {
      if (plan.length >= maxMoves) break;
      run = { from: src, to: hole, count: 1 };
      plan.push(run);
    }
    hole++;
    src++;
  }
  return plan;
}

/** The fraction of the window [0, window()) that is empty: 0 when compact. */
export function fragmentation(cells: KvCells): number {
  const w = cells.window();
  return w === 0 ? 0 : 1 - cells.used() / w;
}

/**
 * Applies a plan to the bookkeeping (after, or as, the engine copies the rows): checks it first
 * (every source used, every target empty, in range, no cell both a source and a target, or used
 * twice) and changes nothing when it does not fit. `stamp` is scratch of length nCtx.
 */
export function applyDefrag(cells: KvCells, plan: readonly KvMove[], stamp: Int32Array, gen: number): void {
  if (!Array.isArray(plan)) throw new KvCacheError("BAD_PLAN", "the plan must be an array of moves");
  const n = cells.nCtx;
  const pos = cells.positions;
  // stamp: gen = a source, gen + 1 = a target (gen is fresh per call, so no clearing is needed).
  for (let m = 0; m < plan.length; m++) {
    const mv = plan[m]!;
    const { from, to, count } = mv ?? ({} as KvMove);
    if (
      !Number.isInteger(from) ||
      !Number.isInteger(to) ||
      !Number.isInteger(count) ||
      count < 1 ||
      from < 0 ||
      to < 0 ||
      from + count > n ||
      to + count > n
    ) {
      throw new KvCacheError("BAD_PLAN", `move ${m} ${JSON.stringify(mv)} is outside [0, ${n})`, {
        argument: `plan[${m}]`,
      });
    }
    for (let k = 0; k < count; k++) {
      const f = from + k;
      const t = to + k;
      if (pos[f]! < 0) throw bad(m, `source cell ${f} is empty`, f);
      if (pos[t]! >= 0) throw bad(m, `target cell ${t} is not empty`, t);
      if (stamp[f] === gen || stamp[f] === gen + 1) throw bad(m, `cell ${f} is used twice`, f);
      stamp[f] = gen;
      if (stamp[t] === gen || stamp[t] === gen + 1) throw bad(m, `cell ${t} is used twice`, t);
      stamp[t] = gen + 1;
    }
  }
  for (const { from, to, count } of plan) for (let k = 0; k < count; k++) cells.move(from + k, to + k);
}

function bad(m: number, msg: string, cell: number): KvCacheError {
  return new KvCacheError("BAD_PLAN", `move ${m}: ${msg}`, { argument: `plan[${m}]`, cell });
}
