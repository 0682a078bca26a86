import type { Device, DeviceCaps, DeviceMemory, DeviceRuntime } from "@minfer/ir";
import { fromNative } from "./errors.js";
import type { NativeAddon, NativeDeviceInfo } from "./native.js";
import { CudaRuntime } from "./runtime.js";

/** One NVIDIA GPU as the runtime reported it. */
export class CudaDevice implements Device {
  readonly name: string;
  readonly type = "gpu" as const;
  readonly backend = "cuda";
  readonly caps: DeviceCaps = { hostMemory: false, launchCostUs: 10, hostToDeviceBandwidth: 25e9 };
  readonly info: NativeDeviceInfo;
  readonly #addon: NativeAddon;

  constructor(addon: NativeAddon, info: NativeDeviceInfo) {
    this.#addon = addon;
    this.info = info;
    this.name = `cuda:${info.index}`;
  }

  memory(): DeviceMemory {
    try {
      return this.#addon.memInfo(this.info.index);
    } catch (e) {
      throw fromNative(e, `memory of ${this.name}`);
    }
  }

  /** No kernels in this build: nothing is assigned here. */
  supportsOp(): boolean {
    return false;
  }

  async init(): Promise<DeviceRuntime> {
    return new CudaRuntime(this, this.#addon, this.info.index);
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
