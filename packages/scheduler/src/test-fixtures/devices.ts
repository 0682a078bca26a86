import type { BackendBuffer, DeviceRuntime, Graph, Tensor } from "@minfer/ir";
import { Op } from "@minfer/ir";
import type { TensorBinding } from "../plan.js";
import { encodeValues } from "../reference/dtype-io.js";
import { referenceBackend } from "../reference-device.js";

/** A fake "gpu" (reference kernels) that lacks SILU, and a reference "cpu". */
export function gpuAndCpu() {
  const gpu = referenceBackend({
    name: "fakegpu",
    deviceName: "gpu:0",
    type: "gpu",
    score: 10,
    caps: { hostMemory: false, launchCostUs: 5, hostToDeviceBandwidth: 20e9 },
    supports: (q) => q.op !== Op.SILU,
  }).devices()[0]!;
  const cpu = referenceBackend({ name: "cpu-ref", deviceName: "cpu" }).devices()[0]!;
  return { gpu, cpu };
}

/** Deterministic values for a tensor: small, varied, reproducible. */
export function valuesFor(t: Tensor, salt = 0): number[] {
  const n = t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
  return Array.from({ length: n }, (_, i) => Math.sin(i * 0.37 + t.id + salt) * 0.5);
}

/** Uploads every weight (and state) of a graph to a runtime; returns the bindings. */
export async function bindAll(
  graph: Graph,
  runtime: DeviceRuntime,
  kinds: readonly ("weight" | "state")[] = ["weight", "state"],
): Promise<{ bindings: Map<string, TensorBinding>; buffers: BackendBuffer[] }> {
  const bindings = new Map<string, TensorBinding>();
  const buffers: BackendBuffer[] = [];
  for (const t of graph.tensors) {
    if (!kinds.includes(t.kind as "weight" | "state")) continue;
    const bytes = encodeValues(
      t.dtype,
      t.ne,
      t.kind === "state" ? new Array(t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3]).fill(0) : valuesFor(t),
    );
    const buffer = runtime.allocate(bytes.length, t.name);
    await runtime.write(buffer, 0, bytes);
    buffers.push(buffer);
    bindings.set(t.kind === "weight" ? (t.source ?? t.name) : t.name, { buffer });
  }
  return { bindings, buffers };
}
