import type { BackendBuffer, DeviceRuntime, Graph } from "@minfer/ir";
import type { TensorBinding } from "@minfer/scheduler";
import type { Placement } from "./placement.js";

/** Where one layer's K or V rows live: the device runtime, its buffer, the first byte and the bytes per cell. */
export interface RowBlock {
  readonly runtime: DeviceRuntime;
  readonly buffer: BackendBuffer;
  readonly base: number;
  /** Bytes of one cell's row. */
  readonly size: number;
}

/**
 * The K/V state buffers of a context: the layers on one device share one buffer there (256-byte
 * aligned offsets), so a program names one buffer for its device's cache instead of two per
 * layer. Laid out from the state tensors of the worst-case decode graph.
 */
export class KvBuffers {
  /** Bindings of every state tensor by key (`k_cache-{il}`, `v_cache-{il}`), for the scheduler. */
  readonly states = new Map<string, TensorBinding>();
  readonly #rows = new Map<string, RowBlock>();
  readonly #buffers = new Map<string, { runtime: DeviceRuntime; buffer: BackendBuffer; bytes: number }>();

  constructor(graph: Graph, placement: Placement) {
    const align = (n: number) => Math.ceil(n / 256) * 256;
    const layouts = new Map<
      string,
      { runtime: DeviceRuntime; bytes: number; names: [string, number, number, number][] }
    >();
    for (const t of graph.tensors) {
      if (t.kind !== "state") continue;
      const name = t.source ?? t.name;
      const runtime = placement.state(name);
      const l = layouts.get(runtime.device.name) ?? { runtime, bytes: 0, names: [] };
      l.names.push([name, l.bytes, t.nb[1], t.ne[1]]);
      l.bytes = align(l.bytes + t.nb[1] * t.ne[1]);
      layouts.set(runtime.device.name, l);
    }
    try {
      for (const [device, l] of layouts) {
        const buffer = l.runtime.allocate(Math.max(l.bytes, 256), `kv-cache:${device}`);
        this.#buffers.set(device, { runtime: l.runtime, buffer, bytes: l.bytes });
        for (const [name, offset, rowBytes] of l.names) {
          this.states.set(name, { buffer, offset });
          this.#rows.set(name, { runtime: l.runtime, buffer, base: offset, size: rowBytes });
        }
      }
    } catch (e) {
      this.dispose();
      throw e;
    }
  }

  /** Layer `il`'s K then V rows. */
  layer(il: number): [RowBlock, RowBlock] {
    return [this.#rows.get(`k_cache-${il}`)!, this.#rows.get(`v_cache-${il}`)!];
  }

  /** Bytes of the K/V buffers per device. */
  bytes(): Map<string, number> {
    return new Map([...this.#buffers].map(([d, b]) => [d, b.bytes]));
  }

  dispose(): void {
    for (const { buffer } of this.#buffers.values()) buffer.dispose();
    this.#buffers.clear();
  }
}
