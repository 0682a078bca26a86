import type { BackendBuffer, DeviceRuntime, DeviceWrite, Tensor } from "@minfer/ir";
import { SchedulerError } from "./errors.js";
import type { BufferRef, ExecutionPlan, Location } from "./plan.js";
import { decodeValues } from "./reference/dtype-io.js";
import { opLabel, type TimingReport, type TimingRow, timingReport } from "./timing.js";

/** Options of an {@link Executor} (and of `Scheduler`, which passes them on). */
export interface ExecutorOptions {
  /**
   * Measure every node (the backend's own per-node times) and every copy; the run's result then
   * carries a `timing` report with a formatted table. Default: false.
   */
  profile?: boolean;
}

/** What the executor runs on: a started runtime and an arena buffer per device. */
export interface ExecutionContext {
  readonly runtimes: ReadonlyMap<string, DeviceRuntime>;
  /** Current arena of each device (looked up at every run, so a grown arena is picked up). */
  arena(device: string): BackendBuffer;
}

/** The outputs of one run. */
export interface RunResult {
  /** Each graph output's bytes (from its element 0 over its extent), as the device left them. */
  readonly outputs: ReadonlyMap<Tensor, Uint8Array>;
  /** Per-op timing, when profiling was on. */
  readonly timing: TimingReport | undefined;
  /** An output's values as float64 (any dtype, any strides). */
  values(t: Tensor): Float64Array;
  /** An output's values as a Float32Array (e.g. the logits). */
  float32(t: Tensor): Float32Array;
}

/**
 * Runs a lowered graph: writes the inputs, executes each split's program on its device in
 * order (copying the tensors that cross devices before the split that reads them), and reads
 * the outputs back. Allocates nothing: the arenas and bound buffers already exist.
 */
export class Executor {
  readonly plan: ExecutionPlan;
  readonly #context: ExecutionContext;
  readonly #options: ExecutorOptions;
  /** The plan's one step when it runs on one device with its inputs and outputs there. */
  readonly #oneDevice: Extract<ExecutionPlan["steps"][number], { kind: "split" }> | undefined;

  constructor(plan: ExecutionPlan, context: ExecutionContext, options: ExecutorOptions = {}) {
    this.plan = plan;
    this.#context = context;
    this.#options = options;
    // One program on one device that reads its inputs and writes its outputs there: the writes,
    // the program and the reads go to the device as one call where it has one (executeWithIo).
    const first = plan.steps[0];
    const only = plan.steps.length === 1 && first?.kind === "split" ? first : undefined;
    this.#oneDevice =
      only &&
      [...plan.inputs.values()].every((ls) => ls.every((l) => l.device === only.device)) &&
      [...plan.outputs.values()].every((l) => l.device === only.device)
        ? only
        : undefined;
  }

  #runtime(device: string): DeviceRuntime {
    const r = this.#context.runtimes.get(device);
    if (!r) throw new SchedulerError("BACKEND_MISSING", `no runtime for device ${device}`);
    return r;
  }

  #buffer(ref: BufferRef): BackendBuffer {
    return ref.kind === "arena" ? this.#context.arena(ref.device) : ref.buffer;
  }

  async #read(loc: Location, into?: Uint8Array): Promise<Uint8Array> {
    return this.#runtime(loc.device).read(this.#buffer(loc.buffer), loc.offset, loc.bytes, into);
  }

  /**
   * Host memory of `bytes` bytes to read output `t` into (see `run`'s `outputsInto`): from its
   * device's `allocateHost` where it has one (page-locked on a GPU: the read is one transfer),
   * else an ordinary array.
   */
  hostMemory(t: Tensor, bytes: number): Uint8Array {
    const loc = this.plan.outputs.get(t);
    if (!loc) throw new SchedulerError("INVALID_ARGUMENT", `"${t.name}" is not an output of this graph`);
    return this.#runtime(loc.device).allocateHost?.(bytes) ?? new Uint8Array(bytes);
  }

  /**
   * An output's bytes as the last run left them on its device, read now: all of them, or `range`
   * (a byte offset and count within the output), into `into` when given (at least that many
   * bytes). For an output that run skipped (`run`'s `skip`); valid until the next run of any graph
   * over the same arena, which may reuse the memory.
   */
  async readOutput(
    t: Tensor,
    range?: { readonly offset: number; readonly bytes: number },
    into?: Uint8Array,
  ): Promise<Uint8Array> {
    const loc = this.plan.outputs.get(t);
    if (!loc) throw new SchedulerError("INVALID_ARGUMENT", `"${t.name}" is not an output of this graph`);
    const offset = range?.offset ?? 0;
    const bytes = range?.bytes ?? loc.bytes;
    if (
      !Number.isSafeInteger(offset) ||
      !Number.isSafeInteger(bytes) ||
      offset < 0 ||
      bytes < 0 ||
      offset + bytes > loc.bytes
    )
      throw new SchedulerError(
        "INVALID_ARGUMENT",
        `reading bytes [${offset}, ${offset + bytes}) of "${t.name}", which has ${loc.bytes}`,
      );
    if (into && into.byteLength < bytes)
      throw new SchedulerError(
        "INVALID_ARGUMENT",
        `reading "${t.name}" needs ${bytes} bytes, the array holds ${into.byteLength}`,
      );
    return this.#read({ ...loc, offset: loc.offset + offset, bytes }, into);
  }

  /**
   * One run. `inputs` holds the bytes of every graph input (a typed array in the tensor's dtype:
   * Float32Array for F32, Int32Array for I32, raw bytes for F16/quantized), contiguous.
   */
  async run(
    inputs: ReadonlyMap<Tensor, ArrayBufferView>,
    options: ExecutorOptions & {
      /**
       * Where to read outputs to instead of new arrays (each at least the output's bytes): the
       * result's bytes for such an output are a view of it.
       */
      outputsInto?: ReadonlyMap<Tensor, Uint8Array>;
      /**
       * Outputs not to read back (they stay on the device; {@link readOutput} reads one later):
       * absent from the result.
       */
      skip?: ReadonlySet<Tensor>;
    } = {},
  ): Promise<RunResult> {
    const profile = options.profile ?? this.#options.profile ?? false;
    const { plan } = this;
    const only = this.#oneDevice;
    const runtime = only ? this.#runtime(only.device) : undefined;
    const oneCall = !profile && only !== undefined && runtime?.executeWithIo !== undefined;
    const writes: DeviceWrite[] = [];
    for (const [t, locations] of plan.inputs) {
      const data = inputs.get(t);
      if (!data) {
        const names = [...plan.inputs.keys()].map((x) => x.name).join(", ");
        throw new SchedulerError(
          "INVALID_ARGUMENT",
          `input "${t.name}" was not given (the graph's inputs: ${names})`,
        );
      }
      if (data.byteLength !== locations[0]!.bytes)
        throw new SchedulerError(
          "INVALID_ARGUMENT",
          `input "${t.name}" needs ${locations[0]!.bytes} bytes, ${data.byteLength} were given`,
          { tensor: t.name, expected: locations[0]!.bytes, got: data.byteLength },
        );
      for (const loc of locations) {
        if (oneCall) writes.push({ buffer: this.#buffer(loc.buffer), offset: loc.offset, data });
        else await this.#runtime(loc.device).write(this.#buffer(loc.buffer), loc.offset, data);
      }
    }
    for (const t of inputs.keys())
      if (!plan.inputs.has(t) && !plan.assignment.graph.tensors.includes(t))
        throw new SchedulerError("INVALID_ARGUMENT", `input "${t.name}" is not a tensor of this graph`);
    const skip = options.skip;
    for (const t of skip ?? [])
      if (!plan.outputs.has(t))
        throw new SchedulerError("INVALID_ARGUMENT", `"${t.name}" is not an output of this graph (skip)`);
    if (oneCall && only !== undefined) {
      const outs = [...plan.outputs].filter(([t]) => !skip?.has(t));
      const bytes = await runtime!.executeWithIo!(
        only.program,
        only.slots.map((s) => this.#buffer(s)),
        writes,
        outs.map(([t, loc]) => {
          const into = options.outputsInto?.get(t);
          return {
            buffer: this.#buffer(loc.buffer),
            offset: loc.offset,
            length: loc.bytes,
            ...(into ? { into } : {}),
          };
        }),
      );
      return this.#result(new Map(outs.map(([t], i) => [t, bytes[i]!])), undefined);
    }

    const rows: TimingRow[] = [];
    for (const step of plan.steps) {
      if (step.kind === "copy") {
        const start = performance.now();
        const bytes = await this.#read(step.from);
        await this.#runtime(step.to.device).write(this.#buffer(step.to.buffer), step.to.offset, bytes);
        if (profile)
          rows.push({
            op: "COPY",
            name: step.tensor.name,
            device: `${step.from.device} → ${step.to.device}`,
            micros: (performance.now() - start) * 1000,
          });
        continue;
      }
      const runtime = this.#runtime(step.device);
      const result = await runtime.execute(
        step.program,
        step.slots.map((s) => this.#buffer(s)),
        { profile },
      );
      if (profile) {
        step.nodes.forEach((n, i) => {
          rows.push({
            op: opLabel(n.op),
            name: n.name,
            device: step.device,
            micros: result.nodeMicros?.[i] ?? 0,
          });
        });
      }
    }

    const outputs = new Map<Tensor, Uint8Array>();
    for (const [t, loc] of plan.outputs)
      if (!skip?.has(t)) outputs.set(t, await this.#read(loc, options.outputsInto?.get(t)));
    return this.#result(outputs, profile ? timingReport(rows) : undefined);
  }

  #result(outputs: Map<Tensor, Uint8Array>, timing: TimingReport | undefined): RunResult {
    const get = (t: Tensor) => {
      const b = outputs.get(t);
      if (!b)
        throw new SchedulerError(
          "INVALID_ARGUMENT",
          `"${t.name}" is not an output of this graph${this.plan.outputs.has(t) ? " read back by this run (skipped)" : ""}`,
        );
      return b;
    };
    return {
      outputs,
      timing,
      values: (t) => decodeValues(t, get(t)),
      float32: (t) => Float32Array.from(decodeValues(t, get(t))),
    };
  }
}
