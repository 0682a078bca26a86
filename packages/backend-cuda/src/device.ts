import {
  type Device,
  type DeviceCaps,
  type DeviceInitOptions,
  type DeviceMemory,
  type OpQuery,
  opQueryKey,
  opQueryProgram,
} from "@minfer/ir";
import { readEnv } from "./config.js";
import { fromNative } from "./errors.js";
import type { NativeAddon, NativeCheck, NativeDeviceInfo } from "./native.js";
import { CudaRuntime } from "./runtime.js";

const MAX_CACHED = 4096;

/** One NVIDIA GPU as the runtime reported it. */
export class CudaDevice implements Device {
  readonly name: string;
  readonly type = "gpu" as const;
  readonly backend = "cuda";
  // (batchInvariant: a flagged program runs under batch_invariant_tuning, native/cuda/tuning.h —
  // every product on the one-column mat-vec shape, attention a query at a time; on an H100 a
  // verification of 1-16 rejected drafts left every later logit of a Q8_0 qwen2-0.5b bit-identical,
  // docs/SPECULATIVE.md)
  readonly caps: DeviceCaps = {
    hostMemory: false,
    launchCostUs: 10,
    hostToDeviceBandwidth: 25e9,
    batchInvariant: true,
  };
  readonly info: NativeDeviceInfo;
  readonly #addon: NativeAddon;
  readonly #answers = new Map<string, boolean>();

  constructor(addon: NativeAddon, info: NativeDeviceInfo) {
    this.#addon = addon;
    this.info = info;
    this.name = `cuda:${info.index}`;
  }

  /** The GPU's model, compute capability, SM count and PCI bus. */
  properties(): Readonly<Record<string, string | number>> {
    const i = this.info;
    return { model: i.name, computeCapability: i.computeCapability, sms: i.smCount, pciBus: i.pciBus };
  }

  memory(): DeviceMemory {
    try {
      return this.#addon.memInfo(this.info.index);
    } catch (e) {
      throw fromNative(e, `memory of ${this.name}`);
    }
  }

  /**
   * Whether a CUDA kernel accepts the op with these dtypes, shapes and parameters: a one-node
   * program is validated natively with the checks execute runs (answers are cached).
   */
  supportsOp(query: OpQuery): boolean {
    const key = opQueryKey(query);
    const cached = this.#answers.get(key);
    if (cached !== undefined) return cached;
    const answer = this.explainOp(query) === null;
    if (this.#answers.size >= MAX_CACHED) this.#answers.clear();
    this.#answers.set(key, answer);
    return answer;
  }

  /** Why `supportsOp` says no (null when it says yes): the native code and message. */
  explainOp(query: OpQuery): NativeCheck | null {
    const q = opQueryProgram(query);
    if ("error" in q) return q.error;
    try {
      return this.#addon.checkProgram(q.program, q.bufferSizes);
    } catch (e) {
      throw fromNative(e, `checking an op for ${this.name}`);
    }
  }

  /**
   * Starts a stream and executor. CUDA graph capture is on unless MINFER_CUDA_GRAPHS=0; kernel
   * variants follow config.ts (MINFER_CUDA_ATTN, MINFER_CUDA_FUSE, MINFER_CUDA_PDL, MINFER_CUDA_MMQ, …).
   */
  async init(_options: DeviceInitOptions = {}): Promise<CudaRuntime> {
    const env = readEnv();
    return new CudaRuntime(
      this,
      this.#addon,
      this.info.index,
      env.graphs,
      {
        attnMma: env.attnMma,
        attnWarps: env.attnWarps,
        gemmStages: env.gemmStages,
        mmqBlocks: env.mmqBlocks,
        mmqRows: env.mmqRows,
        mmqStreamk: env.mmqStreamk,
        topkChunks: env.topkChunks,
        ...(env.topkRadixRows === undefined ? {} : { topkRadixRows: env.topkRadixRows }),
        attnDecode: env.attnDecode,
        fuse: env.fuse,
        pdl: env.pdl,
        attnPerQuery: env.attnPerQuery,
        mvWideLoads: env.mvWideLoads,
        mvShape: env.mvShape,
        stepTimes: env.stepTimes,
        decodeRows: env.decodeRows,
        ropeBlock: env.ropeBlock,
        qkvRope: env.qkvRope,
        fuseRows: env.fuseRows,
        attnQuantRows: env.attnQuantRows,
        fusedCombine: env.fusedCombine,
        invariantBatched: env.invariantBatched,
        perQueryFlash: env.perQueryFlash,
        perQueryBlocks: env.perQueryBlocks,
        perQuerySplits: env.perQuerySplits,
        normSliceRows: env.normSliceRows,
        mmqTargetBlocks: env.mmqTargetBlocks,
        ...(env.mmqCols ? { mmqCols: env.mmqCols } : {}),
      },
      { replayOnThread: env.replayOnThread },
    );
  }

  /** Runs a tiny kernel on the device and checks what it wrote: the addon's code runs here. */
  selfTest(n = 1000, seed = 7): boolean {
    let out: Int32Array;
    try {
      out = this.#addon.selfTest(this.info.index, n, seed);
    } catch (e) {
      throw fromNative(e, `self-test on ${this.name}`);
    }
    return out.length === n && out.every((v, i) => v === seed + 2 * i);
  }
}
