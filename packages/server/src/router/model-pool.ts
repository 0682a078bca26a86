// The models of a multi-model server and which of them run: each loaded model is an upstream (a
// server of its own, started by the caller's `launch`), loaded on first use, unloaded after
// `keepAliveMs` without requests or, least recently used first, to make room when `maxLoaded` run.
// A model being loaded holds up only the requests that name it.
import { ServerError } from "../server-error.js";

/** A running model: where to send its requests, and how to stop it. */
export interface Upstream {
  /** Base URL, e.g. http://127.0.0.1:41235. */
  readonly url: string;
  /** Extra headers every forwarded request carries (the upstream's own key). */
  readonly headers?: Readonly<Record<string, string>>;
  /** Stops it; resolves when its resources are released. */
  close(): Promise<void>;
}

export interface PoolModel {
  /** The id requests name in `model`. */
  readonly id: string;
  /** What `launch` loads (a file path). */
  readonly path: string;
}

export type ModelState = "unloaded" | "loading" | "loaded" | "unloading" | "failed";

export interface PoolOptions {
  readonly models: readonly PoolModel[];
  /** Most models running at once (≥ 1). */
  readonly maxLoaded: number;
  /** Milliseconds a loaded model stays without requests (0: unloaded when its last request ends; Infinity: never). */
  readonly keepAliveMs: number;
  readonly launch: (model: PoolModel) => Promise<Upstream>;
  /** Told of loads and unloads (for the log). */
  readonly onEvent?: (line: string) => void;
}

interface Entry {
  readonly model: PoolModel;
  state: ModelState;
  upstream?: Upstream;
  loading?: Promise<Upstream>;
  unloading?: Promise<void>;
  /** Room being made for this model's load (an unload, or a wait for an idle model). */
  roomWait?: Promise<void>;
  active: number;
  lastUsed: number;
  timer?: NodeJS.Timeout;
  error?: string;
}

/** One model's row in a listing. */
export interface PoolListing {
  readonly id: string;
  readonly path: string;
  readonly state: ModelState;
  /** Requests it is serving now. */
  readonly active: number;
  /** Why its last load failed (state "failed"). */
  readonly error?: string;
}

export class ModelPool {
  readonly #entries = new Map<string, Entry>();
  readonly #o: PoolOptions;
  #waiters: (() => void)[] = [];
  #closed = false;
  #clock = 0;

  constructor(o: PoolOptions) {
    if (!Number.isInteger(o.maxLoaded) || o.maxLoaded < 1)
      throw new ServerError(
        "INVALID_ARGUMENT",
        `maxLoaded must be an integer >= 1, got ${String(o.maxLoaded)}`,
      );
    if (!(o.keepAliveMs >= 0))
      throw new ServerError("INVALID_ARGUMENT", `keepAliveMs must be >= 0, got ${String(o.keepAliveMs)}`);
    if (o.models.length === 0)
      throw new ServerError("INVALID_ARGUMENT", "a multi-model server needs at least one model");
    for (const m of o.models) {
      if (this.#entries.has(m.id))
        throw new ServerError("INVALID_ARGUMENT", `two models have the id ${JSON.stringify(m.id)}`);
      this.#entries.set(m.id, { model: m, state: "unloaded", active: 0, lastUsed: 0 });
    }
    this.#o = o;
  }

  /** Adds a model (a request named one the pool did not list, and the caller found it). */
  add(model: PoolModel): void {
    if (this.#entries.has(model.id)) return;
    this.#entries.set(model.id, { model, state: "unloaded", active: 0, lastUsed: 0 });
  }

  has(id: string): boolean {
    return this.#entries.has(id);
  }

  ids(): string[] {
    return [...this.#entries.keys()];
  }

  list(): PoolListing[] {
    return [...this.#entries.values()].map((e) => ({
      id: e.model.id,
      path: e.model.path,
      state: e.state,
      active: e.active,
      ...(e.error !== undefined ? { error: e.error } : {}),
    }));
  }

  /**
   * The running upstream of model `id`, loading it first when needed (after unloading idle models
   * beyond `maxLoaded - 1`, or waiting for one to become idle); counts a request on it until
   * `release(id)`.
   */
  async acquire(id: string): Promise<Upstream> {
    const e = this.#entries.get(id);
    if (!e) throw new ServerError("INVALID_ARGUMENT", `no model ${JSON.stringify(id)}`);
    for (;;) {
      if (this.#closed) throw new ServerError("CLOSED", "the server is closing");
      clearTimeout(e.timer);
      if (e.state === "loaded" && e.upstream) {
        e.active++;
        e.lastUsed = ++this.#clock;
        return e.upstream;
      }
      if (e.state === "loading" && e.loading) {
        await e.loading.catch(() => undefined);
        if ((e.state as ModelState) === "failed")
          throw new ServerError("NOT_READY", `model ${id} failed to load: ${e.error}`);
        continue;
      }
      if (e.state === "unloading") {
        await e.unloading;
        continue;
      }
      // unloaded or failed: load it once there is room (decided and claimed without a pause between)
      // (another request for this model already makes room: wait with it, not evict another)
      if (e.roomWait) {
        await e.roomWait;
        continue;
      }
      const wait = this.#roomOrWait();
      if (wait) {
        e.roomWait = wait.finally(() => {
          e.roomWait = undefined;
        });
        await e.roomWait;
        continue;
      }
      e.state = "loading";
      e.error = undefined;
      this.#o.onEvent?.(`loading ${id} (${e.model.path})`);
      e.loading = this.#o.launch(e.model).then(
        (u) => {
          e.upstream = u;
          e.state = "loaded";
          this.#o.onEvent?.(`loaded ${id}`);
          if (this.#closed) void this.#unload(e);
          return u;
        },
        (err: unknown) => {
          e.state = "failed";
          e.error = err instanceof Error ? err.message : String(err);
          this.#o.onEvent?.(`loading ${id} failed: ${e.error}`);
          this.#wake();
          throw err;
        },
      );
    }
  }

  /** Ends a request counted by acquire; an idle model's keep-alive starts. */
  release(id: string): void {
    const e = this.#entries.get(id);
    if (!e || e.active === 0) return;
    e.active--;
    e.lastUsed = ++this.#clock;
    if (e.active === 0) {
      this.#wake();
      if (Number.isFinite(this.#o.keepAliveMs)) {
        e.timer = setTimeout(() => {
          if (e.active === 0 && e.state === "loaded") void this.#unload(e, "kept alive long enough");
        }, this.#o.keepAliveMs);
        e.timer.unref?.();
      }
    }
  }

  /** Undefined when a model may start loading now; else what to wait for before asking again. */
  #roomOrWait(): Promise<void> | undefined {
    const running = [...this.#entries.values()].filter(
      (x) => x.state === "loaded" || x.state === "loading" || x.state === "unloading",
    );
    if (running.length < this.#o.maxLoaded) return undefined;
    const idle = running
      .filter((x) => x.state === "loaded" && x.active === 0)
      .sort((a, b) => a.lastUsed - b.lastUsed)[0];
    if (idle) return this.#unload(idle, `room for another model (at most ${this.#o.maxLoaded})`);
    return new Promise<void>((resolve) => this.#waiters.push(resolve));
  }

  #wake(): void {
    const w = this.#waiters;
    this.#waiters = [];
    for (const f of w) f();
  }

  #unload(e: Entry, why = "closing"): Promise<void> {
    if (e.unloading) return e.unloading;
    clearTimeout(e.timer);
    const u = e.upstream;
    e.state = "unloading";
    this.#o.onEvent?.(`unloading ${e.model.id} (${why})`);
    e.unloading = (u ? u.close() : Promise.resolve())
      .catch(() => undefined)
      .then(() => {
        e.upstream = undefined;
        e.loading = undefined;
        e.unloading = undefined;
        e.state = "unloaded";
        this.#wake();
      });
    return e.unloading;
  }

  /** Unloads every model; later acquires fail with CLOSED. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#wake();
    const loading = [...this.#entries.values()].map((e) => e.loading?.catch(() => undefined));
    await Promise.all(loading);
    await Promise.all(
      [...this.#entries.values()].filter((e) => e.state === "loaded").map((e) => this.#unload(e)),
    );
  }
}
