import type { DeviceRuntime } from "@minfer/ir";
import { EngineError } from "./errors.js";

/** Layers to run on a second device (a GPU): the first `layers` blocks, the rest stay on the main runtime. */
export interface Offload {
  readonly runtime: DeviceRuntime;
  /** Blocks 0…layers-1 run on `runtime`; with every block there, the output head does too. */
  readonly layers: number;
}

/**
 * Which runtime holds each weight and each layer's K/V: block `il` (GGUF names `blk.<il>.…`)
 * on the offload device when il < layers; the token embeddings with block 0; the output norm and
 * head on the offload device only when every block is there; anything else on the main runtime.
 */
export class Placement {
  readonly main: DeviceRuntime;
  readonly offload: Offload | undefined;
  readonly nLayer: number;

  constructor(main: DeviceRuntime, nLayer: number, offload?: Offload) {
    if (offload) {
      const n = offload.layers;
      if (!Number.isInteger(n) || n < 0 || n > nLayer)
        throw new EngineError(
          "INVALID_ARGUMENT",
          `offload.layers must be an integer in 0…${nLayer} (the model's layers), got ${String(n)}`,
        );
      if (offload.runtime.device.name === main.device.name)
        throw new EngineError("INVALID_ARGUMENT", `offload: ${main.device.name} is already the main device`);
    }
    this.main = main;
    this.offload = offload && offload.layers > 0 ? offload : undefined;
    this.nLayer = nLayer;
  }

  /** Blocks on the offload device (0 without one). */
  get offloadedLayers(): number {
    return this.offload?.layers ?? 0;
  }

  /** The runtime of block `il`. */
  layer(il: number): DeviceRuntime {
    return this.offload && il < this.offload.layers ? this.offload.runtime : this.main;
  }

  /** The runtime of the output norm and head. */
  head(): DeviceRuntime {
    return this.offload && this.offload.layers >= this.nLayer ? this.offload.runtime : this.main;
  }

  /** The runtime a GGUF tensor's data goes to. */
  weight(name: string): DeviceRuntime {
    const m = /^blk\.(\d+)\./.exec(name);
    if (m) return this.layer(Number(m[1]));
    if (name.startsWith("token_embd")) return this.layer(0);
    if (name.startsWith("output")) return this.head();
    return this.main;
  }

  /** The runtime of a state tensor named `<what>-<il>` (k_cache-3, …). */
  state(name: string): DeviceRuntime {
    const m = /-(\d+)$/.exec(name);
    return m ? this.layer(Number(m[1])) : this.main;
  }

  /** The runtimes in use, in order of preference (the offload device first). */
  runtimes(): DeviceRuntime[] {
    return this.offload ? [this.offload.runtime, this.main] : [this.main];
  }

  /** One line: "layers 0-27 and the output on cuda:0; nothing on cpu". */
  describe(): string {
    const o = this.offload;
    if (!o) return `all ${this.nLayer} layers on ${this.main.device.name}`;
    const on = o.runtime.device.name;
    if (o.layers >= this.nLayer) return `all ${this.nLayer} layers and the output on ${on}`;
    return (
      `layers 0-${o.layers - 1} on ${on}, layers ${o.layers}-${this.nLayer - 1} and the output on ` +
      `${this.main.device.name} (${o.layers}/${this.nLayer} offloaded)`
    );
  }
}

/**
 * Byte ranges of one file part to upload: the tensors' [offset, end) spans sorted and merged where
 * the gap between them is at most `maxGap` bytes.
 */
export function mergeRanges(
  spans: readonly { name: string; lo: number; hi: number }[],
  maxGap: number,
): { lo: number; hi: number; names: string[] }[] {
  const sorted = [...spans].sort((a, b) => a.lo - b.lo);
  const out: { lo: number; hi: number; names: string[] }[] = [];
  for (const s of sorted) {
    const last = out[out.length - 1];
    if (last && s.lo - last.hi <= maxGap) {
      last.hi = Math.max(last.hi, s.hi);
      last.names.push(s.name);
    } else out.push({ lo: s.lo, hi: s.hi, names: [s.name] });
  }
  return out;
}
