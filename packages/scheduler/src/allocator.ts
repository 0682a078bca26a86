import type { Assignment } from "./assign.js";
import { SchedulerError } from "./errors.js";
import { type ArenaItem, arenaItems } from "./liveness.js";

/** Options of {@link Allocator}. */
export interface AllocatorOptions {
  /** Offset alignment and size class granularity in bytes (a power of two). Default: 64. */
  alignment?: number;
}

/** Where every arena item of one graph on one device goes. */
export interface AllocationPlan {
  readonly device: string;
  /** Arena bytes this graph needs (the highest end of any item). */
  readonly size: number;
  /** The most bytes live at one time (≤ size; the rest is fragmentation). */
  readonly peakLive: number;
  /** Sum of all items' rounded sizes (what an allocator without reuse would need). */
  readonly totalBytes: number;
  /** Byte offset of each item, by key. */
  readonly offsets: ReadonlyMap<string, number>;
  readonly items: readonly ArenaItem[];
}

/** Memory accounting of one device's arena, readable at any time. */
export interface AllocatorStats {
  readonly device: string;
  /** Bytes reserved for the arena (0 before `reserve`). */
  readonly reserved: number;
  /** Bytes live at the peak of the last assigned graph. */
  readonly live: number;
  /** Arena bytes the last assigned graph spans (live plus fragmentation). */
  readonly used: number;
  /** Reserved bytes the last assigned graph leaves unused. */
  readonly free: number;
  /** Graphs assigned so far. */
  readonly assigned: number;
}

interface Range {
  offset: number;
  size: number;
}

/** Best-fit placement of items by liveness: offsets, arena size and peak live bytes. */
export function packItems(
  items: readonly ArenaItem[],
  alignment: number,
): Omit<AllocationPlan, "device" | "items"> {
  const round = (n: number) => Math.max(alignment, Math.ceil(n / alignment) * alignment);
  const free: Range[] = [];
  let top = 0;
  let live = 0;
  let peakLive = 0;
  let totalBytes = 0;
  const offsets = new Map<string, number>();
  const times = [...new Set(items.flatMap((i) => [i.start, i.end]).filter(Number.isFinite))].sort(
    (a, b) => a - b,
  );
  const release = (offset: number, size: number) => {
    free.push({ offset, size });
    free.sort((a, b) => a.offset - b.offset);
    for (let i = free.length - 2; i >= 0; i--) {
      const a = free[i]!;
      const b = free[i + 1]!;
      if (a.offset + a.size === b.offset) {
        a.size += b.size;
        free.splice(i + 1, 1);
      }
    }
    const last = free[free.length - 1];
    if (last && last.offset + last.size === top) {
      top = last.offset;
      free.pop();
    }
  };
  const take = (size: number): number => {
    let best: Range | undefined;
    for (const r of free) if (r.size >= size && (!best || r.size < best.size)) best = r;
    if (best) {
      const at = best.offset;
      best.offset += size;
      best.size -= size;
      if (best.size === 0) free.splice(free.indexOf(best), 1);
      return at;
    }
    const at = top;
    top += size;
    return at;
  };
  let high = 0;
  for (const t of times) {
    // Allocate what starts now (largest first), then free what ended now: an item ending at t
    // is still read at t, so it never shares memory with one written at t.
    const starting = items.filter((i) => i.start === t).sort((a, b) => b.bytes - a.bytes);
    for (const it of starting) {
      const size = round(it.bytes);
      offsets.set(it.key, take(size));
      high = Math.max(high, top);
      live += size;
      totalBytes += size;
      peakLive = Math.max(peakLive, live);
    }
    for (const it of items.filter((i) => i.end === t)) {
      const size = round(it.bytes);
      release(offsets.get(it.key)!, size);
      live -= size;
    }
  }
  return { size: high, peakLive, totalBytes, offsets };
}

/**
 * The arena allocator of one device: plans where each tensor of a graph lives in one arena,
 * reusing the room of tensors no longer needed (best fit over free ranges, 64-byte size
 * classes). `reserve` sizes the arena for the worst-case graphs once; `assign` plans a graph
 * without touching the device and refuses one that does not fit, before anything is allocated.
 */
export class Allocator {
  readonly device: string;
  readonly alignment: number;
  #reserved = 0;
  #last: AllocationPlan | undefined;
  #assigned = 0;

  constructor(device: string, options: AllocatorOptions = {}) {
    this.device = device;
    this.alignment = options.alignment ?? 64;
    if (!(this.alignment > 0 && (this.alignment & (this.alignment - 1)) === 0))
      throw new SchedulerError("INVALID_ARGUMENT", `alignment ${this.alignment} is not a power of two`);
  }

  /** Plans a graph's arena on this device (pure: no reservation check, no device call). */
  plan(assignment: Assignment): AllocationPlan {
    const items = arenaItems(assignment, this.device);
    return { device: this.device, items, ...packItems(items, this.alignment) };
  }

  /**
   * Sizes the arena for the worst case of these graphs (e.g. the largest batch and the full KV
   * window) and returns the reserved bytes. Called again with larger graphs it grows the
   * reservation (the owner of the arena buffer must then reallocate it); it never shrinks.
   */
  reserve(worstCases: readonly Assignment[]): number {
    for (const a of worstCases) this.#reserved = Math.max(this.#reserved, this.plan(a).size);
    return this.#reserved;
  }

  /** Bytes reserved. */
  get reserved(): number {
    return this.#reserved;
  }

  /** Plans a graph within the reserved arena; a graph that needs more is refused with the numbers. */
  assign(assignment: Assignment): AllocationPlan {
    const plan = this.plan(assignment);
    if (plan.size > this.#reserved) {
      throw new SchedulerError(
        "ARENA_TOO_SMALL",
        `the graph needs ${plan.size} arena bytes on ${this.device}, but ${this.#reserved} are reserved ` +
          `(${plan.items.length} tensors, ${plan.peakLive} bytes live at the peak); reserve with this graph ` +
          "among the worst cases, or split the batch",
        { device: this.device, needed: plan.size, reserved: this.#reserved },
      );
    }
    this.#last = plan;
    this.#assigned++;
    return plan;
  }

  stats(): AllocatorStats {
    const used = this.#last?.size ?? 0;
    return {
      device: this.device,
      reserved: this.#reserved,
      live: this.#last?.peakLive ?? 0,
      used,
      free: this.#reserved - used,
      assigned: this.#assigned,
    };
  }
}
