import type { BackendBuffer, DeviceRuntime, Graph } from "@minfer/ir";
import { type AllocationPlan, Allocator, type AllocatorStats } from "./allocator.js";
import { type Assignment, assign } from "./assign.js";
import { SchedulerError } from "./errors.js";
import { Executor, type ExecutorOptions } from "./executor.js";
import { type ExecutionPlan, lower, type TensorBinding } from "./plan.js";

/** Options of {@link Scheduler}. */
export interface SchedulerOptions extends ExecutorOptions {
  /** Started device runtimes, in order of preference (ties in cost go to the earlier one). */
  runtimes: readonly DeviceRuntime[];
  /** Weight source (GGUF tensor name) → the buffer holding it; its device is where the weight lives. Default: none. */
  weights?: ReadonlyMap<string, TensorBinding>;
  /** State tensor name (e.g. `"cache_k-3"`) → the buffer holding it. Default: none. */
  states?: ReadonlyMap<string, TensorBinding>;
  /** Arena offset alignment and size class in bytes. Default: 64. */
  alignment?: number;
}

/** A graph ready to run: its assignment, allocation per device, programs and executor. */
export interface PreparedGraph {
  readonly graph: Graph;
  readonly assignment: Assignment;
  readonly allocations: ReadonlyMap<string, AllocationPlan>;
  readonly plan: ExecutionPlan;
  readonly executor: Executor;
}

/**
 * Assignment, memory planning and lowering over a set of started devices, with one arena per
 * device. `reserve` sizes (and allocates) the arenas once for the worst-case graphs; `prepare`
 * plans a graph inside them without allocating, and refuses one that does not fit.
 */
export class Scheduler {
  readonly #options: SchedulerOptions;
  readonly #runtimes: Map<string, DeviceRuntime>;
  readonly #allocators = new Map<string, Allocator>();
  readonly #arenas = new Map<string, BackendBuffer>();
  #reservedOnce = false;
  #disposed = false;

  constructor(options: SchedulerOptions) {
    if (options.runtimes.length === 0)
      throw new SchedulerError("BACKEND_MISSING", "a scheduler needs at least one device runtime");
    this.#options = options;
    this.#runtimes = new Map(options.runtimes.map((r) => [r.device.name, r]));
    for (const r of options.runtimes)
      this.#allocators.set(r.device.name, new Allocator(r.device.name, { alignment: options.alignment }));
  }

  #check(): void {
    if (this.#disposed) throw new SchedulerError("DISPOSED", "the scheduler was disposed");
  }

  #locations(bindings: ReadonlyMap<string, TensorBinding> | undefined): Map<string, string> {
    return new Map([...(bindings ?? [])].map(([k, b]) => [k, b.buffer.device]));
  }

  /** Assigns a graph to the devices (weights and states where their buffers are). */
  assign(graph: Graph): Assignment {
    this.#check();
    return assign(graph, {
      devices: this.#options.runtimes.map((r) => r.device),
      weights: this.#locations(this.#options.weights),
      states: this.#locations(this.#options.states),
    });
  }

  /**
   * Sizes each device's arena for the worst case of these graphs and allocates it (once; again
   * only when a later, larger reservation grows it). Returns the reserved bytes per device.
   */
  reserve(worstCases: readonly Graph[]): ReadonlyMap<string, number> {
    this.#check();
    const assignments = worstCases.map((g) => this.assign(g));
    const sizes = new Map<string, number>();
    for (const [device, allocator] of this.#allocators) {
      const bytes = allocator.reserve(assignments);
      sizes.set(device, bytes);
      const arena = this.#arenas.get(device);
      if (!arena || arena.size < bytes) {
        arena?.dispose();
        this.#arenas.set(
          device,
          this.#runtimes.get(device)!.allocate(Math.max(bytes, 64), `arena:${device}`),
        );
      }
    }
    this.#reservedOnce = true;
    return sizes;
  }

  /**
   * Assigns, allocates (within the reserved arenas) and lowers a graph. Allocates nothing on a
   * device — except that the first call without any `reserve` before it = `reserve([graph])`.
   */
  prepare(graph: Graph): PreparedGraph {
    this.#check();
    if (!this.#reservedOnce) this.reserve([graph]);
    const assignment = this.assign(graph);
    const allocations = new Map<string, AllocationPlan>();
    for (const d of assignment.devices)
      allocations.set(d.name, this.#allocators.get(d.name)!.assign(assignment));
    const arenaSizes = new Map([...this.#allocators].map(([d, a]) => [d, Math.max(a.reserved, 64)]));
    const plan = lower(assignment, {
      allocations,
      arenaSizes,
      weights: this.#options.weights,
      states: this.#options.states,
    });
    const executor = new Executor(
      plan,
      {
        runtimes: this.#runtimes,
        arena: (device) => {
          const a = this.#arenas.get(device);
          if (!a) throw new SchedulerError("ARENA_TOO_SMALL", `no arena was reserved on ${device}`);
          return a;
        },
      },
      { profile: this.#options.profile },
    );
    return { graph, assignment, allocations, plan, executor };
  }

  /** Memory accounting per device: reserved, live and free arena bytes. */
  stats(): AllocatorStats[] {
    return [...this.#allocators.values()].map((a) => a.stats());
  }

  /** Frees the arenas (not the runtimes or bound buffers, which the caller owns). */
  dispose(): void {
    for (const a of this.#arenas.values()) a.dispose();
    this.#arenas.clear();
    this.#disposed = true;
  }
}
