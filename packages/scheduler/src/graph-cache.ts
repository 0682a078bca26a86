import type { Graph } from "@minfer/ir";
import type { PreparedGraph } from "./scheduler.js";

/** Options of {@link GraphCache}. */
export interface GraphCacheOptions<P> {
  /** Builds the graph for these parameters (called on a miss only). */
  build: (params: P) => Graph;
  /** Assigns, allocates and lowers a graph (usually `scheduler.prepare`). */
  prepare: (graph: Graph) => PreparedGraph;
  /** Most graphs kept; the least recently used is dropped beyond it. Default: 32. */
  maxEntries?: number;
}

/** Counters of a {@link GraphCache}, for tests and `/metrics`. */
export interface GraphCacheStats {
  /** Graphs built and prepared (misses). */
  readonly builds: number;
  /** Lookups answered from the cache. */
  readonly hits: number;
  readonly entries: number;
}

/** A canonical key of a parameter object: JSON with sorted keys (arrays keep their order). */
export function cacheKey(params: unknown): string {
  return JSON.stringify(params, (_k, v: unknown) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  );
}

/** An object whose own values are all primitives (or undefined). */
function isFlat(v: unknown): boolean {
  if (!v || typeof v !== "object" || Array.isArray(v)) return false;
  for (const k in v) {
    const x = (v as Record<string, unknown>)[k];
    if (x !== null && typeof x === "object") return false;
    if (typeof x === "function") return false;
  }
  return true;
}

/** Whether `a` has exactly the keys and (primitive) values of the flat object `b`. */
function sameFlat(a: object, b: Record<string, unknown>): boolean {
  let n = 0;
  for (const k in a) {
    if (!Object.hasOwn(b, k) || !Object.is((a as Record<string, unknown>)[k], b[k])) return false;
    n++;
  }
  for (const _ in b) n--;
  return n === 0;
}

/**
 * Prepared graphs keyed by the parameters that decide their topology (token count, output
 * count, KV window bucket, flags — an object the caller gives). Positions, cell indices and
 * masks are data, not parameters, so a steady decode loop hits one entry and rebuilds nothing.
 */
export class GraphCache<P extends object> {
  readonly #options: GraphCacheOptions<P>;
  readonly #entries = new Map<string, PreparedGraph>();
  #last: { params: Record<string, unknown>; key: string; graph: PreparedGraph } | undefined;
  #builds = 0;
  #hits = 0;

  constructor(options: GraphCacheOptions<P>) {
    this.#options = options;
  }

  /** The prepared graph for these parameters, built and prepared on a miss. */
  get(params: P): PreparedGraph {
    // A steady decode loop asks with equal parameters every step: the last lookup answers without
    // forming the key again (a shallow comparison of flat values).
    const last = this.#last;
    if (last && sameFlat(params, last.params) && this.#entries.get(last.key) === last.graph) {
      this.#hits++;
      return last.graph;
    }
    const key = cacheKey(params);
    const hit = this.#entries.get(key);
    if (hit) {
      this.#hits++;
      this.#entries.delete(key);
      this.#entries.set(key, hit);
      this.#remember(params, key, hit);
      return hit;
    }
    const prepared = this.#options.prepare(this.#options.build(params));
    this.#builds++;
    this.#entries.set(key, prepared);
    const max = this.#options.maxEntries ?? 32;
    while (this.#entries.size > max) this.#entries.delete(this.#entries.keys().next().value!);
    this.#remember(params, key, prepared);
    return prepared;
  }

  /** The last lookup's parameters (a copy, when flat), key and graph. */
  #remember(params: P, key: string, graph: PreparedGraph): void {
    this.#last = isFlat(params)
      ? { params: { ...(params as Record<string, unknown>) }, key, graph }
      : undefined;
  }

  stats(): GraphCacheStats {
    return { builds: this.#builds, hits: this.#hits, entries: this.#entries.size };
  }

  clear(): void {
    this.#last = undefined;
    this.#entries.clear();
  }
}
