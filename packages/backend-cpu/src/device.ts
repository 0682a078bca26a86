import { freemem, totalmem } from "node:os";
import {
  blockOf,
  byteSpan,
  type Device,
  type DeviceCaps,
  type DeviceInitOptions,
  type DeviceMemory,
  type DeviceVariant,
  type DType,
  encodeProgram,
  type OpQuery,
  type ProgramTensor,
  type Shape,
} from "@minfer/ir";
import { readEnv } from "./config.js";
import { CpuBackendError, callNative } from "./errors.js";
import type { NativeAddon } from "./native.js";
import { CpuRuntime } from "./runtime.js";

type TensorDesc = { dtype: DType; ne: Shape; nb: Shape };

/** Bytes a tensor touches, as the native executor computes them; undefined when malformed. */
function span(t: TensorDesc): number | undefined {
  if (t.ne.some((n) => n === 0)) return 0;
  const { blockSize, typeSize } = blockOf(t.dtype);
  if (t.ne[0] % blockSize !== 0 || t.ne.some((n) => n < 0) || t.nb.some((n) => n < 0)) return undefined;
  let last = typeSize;
  for (let i = 0; i < 4; i++) last += ((i === 0 ? t.ne[0] / blockSize : t.ne[i]!) - 1) * t.nb[i]!;
  let ir = 0;
  try {
    ir = byteSpan(t);
  } catch {
    return undefined;
  }
  return Math.max(last, ir);
}

/** The cache key of a query: op, parameters, and each tensor's dtype, shape and strides. */
function queryKey(q: OpQuery): string {
  const t = (x: TensorDesc) => `${x.dtype}:${x.ne.join(",")}:${x.nb.join(",")}`;
  return `${q.op}|${q.params.join(",")}|${q.inputs.map(t).join(";")}|${q.outputs.map(t).join(";")}`;
}

const MAX_CACHED = 4096;

/** The CPU: one device, host memory. */
export class CpuDevice implements Device {
  readonly name = "cpu";
  readonly type = "cpu" as const;
  readonly backend = "cpu";
  /**
   * hostMemory: weights are mapped in place. launchCostUs: a pool dispatch plus validation (an
   * estimate). hostToDeviceBandwidth: a memcpy, ~10 GB/s (an estimate).
   */
  readonly caps: DeviceCaps = { hostMemory: true, launchCostUs: 10, hostToDeviceBandwidth: 10e9 };
  readonly #addon: NativeAddon | undefined;
  readonly #unavailable: string | undefined;
  readonly #answers = new Map<string, boolean>();

  /** @internal */
  constructor(addon: NativeAddon | undefined, unavailable?: string) {
    this.#addon = addon;
    this.#unavailable = unavailable;
  }

  memory(): DeviceMemory {
    return { free: freemem(), total: totalmem() };
  }

  /**
   * Whether a kernel is registered for the op and accepts these dtypes, shapes and parameters:
   * a one-node program is encoded and validated natively (the same checks execute runs).
   */
  supportsOp(query: OpQuery): boolean {
    const addon = this.#addon;
    if (!addon) return false;
    const key = queryKey(query);
    const cached = this.#answers.get(key);
    if (cached !== undefined) return cached;
    const answer = this.#check(addon, query);
    if (this.#answers.size >= MAX_CACHED) this.#answers.clear();
    this.#answers.set(key, answer);
    return answer;
  }

  /** One variant per SIMD level this host can run, best last: what the conformance suite covers. */
  variants(): readonly DeviceVariant[] {
    if (!this.#addon) return [];
    return this.#addon
      .features()
      .usableLevels.map((level) => ({ label: `simd=${level}`, options: { simd: level } }));
  }

  /** Why `supportsOp` says no (null when it says yes): the native code and message. */
  explainOp(query: OpQuery): { code: string; message: string } | null {
    if (!this.#addon) return { code: "NATIVE_UNAVAILABLE", message: this.#unavailable ?? "" };
    return this.#explain(this.#addon, query);
  }

  /**
   * Starts the thread pool. `threads` defaults to the physical cores; `simd` defaults to
   * MINFER_CPU_SIMD, else the best level detected (a level above it is refused).
   */
  async init(options: DeviceInitOptions = {}): Promise<CpuRuntime> {
    const addon = this.#addon;
    if (!addon) throw new CpuBackendError("NATIVE_UNAVAILABLE", this.#unavailable ?? "native addon missing");
    const simd = options.simd ?? readEnv().simd;
    const native = callNative(
      () =>
        new addon.Runtime({
          ...(options.threads !== undefined ? { threads: options.threads } : {}),
          ...(simd !== "" ? { simd } : {}),
        }),
    );
    return new CpuRuntime(this, addon, native);
  }

  #check(addon: NativeAddon, query: OpQuery): boolean {
    return this.#explain(addon, query) === null;
  }

  #explain(addon: NativeAddon, query: OpQuery): { code: string; message: string } | null {
    const all = [...query.inputs, ...query.outputs];
    const sizes: number[] = [];
    const tensors: ProgramTensor[] = [];
    for (const [i, t] of all.entries()) {
      const s = span(t);
      if (s === undefined) return { code: "BAD_PROGRAM", message: `tensor ${i} has a malformed layout` };
      sizes.push(s);
      tensors.push({ dtype: t.dtype, buffer: i, offset: 0, ne: t.ne, nb: t.nb });
    }
    let program: Uint8Array;
    try {
      program = encodeProgram({
        bufferSizes: sizes,
        tensors,
        nodes: [
          {
            op: query.op,
            inputs: query.inputs.map((_, i) => i),
            outputs: query.outputs.map((_, i) => query.inputs.length + i),
            params: query.params,
          },
        ],
      });
    } catch (e) {
      return { code: "BAD_PROGRAM", message: (e as Error).message };
    }
    return callNative(() => addon.checkProgram(program, sizes));
  }
}
