import { freemem, totalmem } from "node:os";
import {
  type Device,
  type DeviceCaps,
  type DeviceInitOptions,
  type DeviceMemory,
  type DeviceVariant,
  type OpQuery,
  opQueryKey,
  opQueryProgram,
} from "@minfer/ir";
import { panelGemmFromEnv, readEnv } from "./config.js";
import { CpuBackendError, callNative } from "./errors.js";
import type { NativeAddon } from "./native.js";
import { CpuRuntime } from "./runtime.js";

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
  readonly caps: DeviceCaps = {
    hostMemory: true,
    launchCostUs: 10,
    hostToDeviceBandwidth: 10e9,
    // (a batch-invariant program keeps every product on the dot kernels: native/cpu/executor.cpp)
    batchInvariant: true,
  };
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

  /** The SIMD level detected and those usable, and the cores (empty when the addon is missing). */
  properties(): Readonly<Record<string, string | number>> {
    if (!this.#addon) return {};
    const f = this.#addon.features();
    return {
      simd: f.detected,
      usableLevels: f.usableLevels.join(","),
      physicalCores: f.physicalCores,
      logicalCpus: f.logicalCpus,
    };
  }

  /**
   * Whether a kernel is registered for the op and accepts these dtypes, shapes and parameters:
   * a one-node program is encoded and validated natively (the same checks execute runs).
   */
  supportsOp(query: OpQuery): boolean {
    const addon = this.#addon;
    if (!addon) return false;
    const key = opQueryKey(query);
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
   * MINFER_CPU_SIMD, else the best level detected (a level above it is refused); `panelGemm` to
   * MINFER_CPU_PANEL_GEMM, else true.
   */
  async init(options: DeviceInitOptions = {}): Promise<CpuRuntime> {
    const addon = this.#addon;
    if (!addon) throw new CpuBackendError("NATIVE_UNAVAILABLE", this.#unavailable ?? "native addon missing");
    const simd = options.simd ?? readEnv().simd;
    const panelGemm = options.panelGemm ?? panelGemmFromEnv();
    const native = callNative(
      () =>
        new addon.Runtime({
          ...(options.threads !== undefined ? { threads: options.threads } : {}),
          ...(simd !== "" ? { simd } : {}),
          ...(panelGemm !== undefined ? { panelGemm } : {}),
        }),
    );
    return new CpuRuntime(this, addon, native);
  }

  #check(addon: NativeAddon, query: OpQuery): boolean {
    return this.#explain(addon, query) === null;
  }

  #explain(addon: NativeAddon, query: OpQuery): { code: string; message: string } | null {
    const q = opQueryProgram(query);
    if ("error" in q) return q.error;
    return callNative(() => addon.checkProgram(q.program, q.bufferSizes));
  }
}
