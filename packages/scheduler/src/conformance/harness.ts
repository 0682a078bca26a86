import { f32ToF16 } from "@minfer/gguf";
import {
  type BackendBuffer,
  blockOf,
  type Device,
  type DeviceRuntime,
  dtypeName,
  type Graph,
  isQuantized,
  type Tensor,
} from "@minfer/ir";
import { opQuery } from "../layout.js";
import type { TensorBinding } from "../plan.js";
import { canWrite, encodeValues } from "../reference/dtype-io.js";
import { Scheduler } from "../scheduler.js";
import { buildCase, type ConformanceCase } from "./cases.js";
import { hashString, prng } from "./prng.js";

/** Outputs of one case on one device, by output index, as float64. */
export type CaseOutputs = Float64Array[];

/** Why a device cannot run a case, or `undefined` when it can (asked with supportsOp, never by trying). */
export function unsupportedReason(device: Device, graph: Graph): string | undefined {
  const node = graph.nodes.find((nd) => !device.supportsOp(opQuery(nd)));
  return node ? `${device.name} does not support node ${node.name}` : undefined;
}

/**
 * Byte offsets of the f16 super-block scales (d, dmin) of the types @minfer/gguf cannot quantize;
 * random bytes elsewhere are valid quants, but a random scale could be huge or NaN.
 */
const BLOCK_SCALES: Readonly<Record<string, readonly number[]>> = { Q2_K: [80, 82], Q3_K: [108] };

/** Random but well-formed blocks of a quantized type without a reference quantizer. */
function randomBlocks(dtype: Tensor["dtype"], count: number, rng: ReturnType<typeof prng>): Uint8Array {
  const { blockSize, typeSize } = blockOf(dtype);
  const bytes = Uint8Array.from({ length: (count / blockSize) * typeSize }, () => rng.int(0, 256));
  const fields = BLOCK_SCALES[dtypeName(dtype)] ?? [];
  const dv = new DataView(bytes.buffer);
  for (let b = 0; b < bytes.length; b += typeSize)
    for (const f of fields) dv.setUint16(b + f, f32ToF16(rng.uniform(0.001, 0.01)), true);
  return bytes;
}

/** The bytes of every tensor the case's graph reads from outside (inputs, weights, state), by tensor. */
export function caseData(c: ConformanceCase, graph: Graph): Map<Tensor, Uint8Array> {
  const rng = prng(hashString(c.name));
  const data = new Map<Tensor, Uint8Array>();
  for (const t of graph.tensors) {
    if (t.kind !== "input" && t.kind !== "weight" && t.kind !== "state") continue;
    const count = t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
    if (isQuantized(t.dtype) && !canWrite(t.dtype)) {
      data.set(t, randomBlocks(t.dtype, count, rng));
      continue;
    }
    const make = c.data?.[t.name];
    const values = make ? make(rng, t) : Array.from({ length: count }, () => rng.uniform(-1, 1));
    data.set(t, encodeValues(t.dtype, t.ne, values));
  }
  return data;
}

/** Runs a case on a started device through the scheduler (assign, allocate, lower, execute). */
export async function runCase(c: ConformanceCase, runtime: DeviceRuntime): Promise<CaseOutputs> {
  const graph = buildCase(c);
  const data = caseData(c, graph);
  const owned: BackendBuffer[] = [];
  const weights = new Map<string, TensorBinding>();
  const states = new Map<string, TensorBinding>();
  const inputs = new Map<Tensor, ArrayBufferView>();
  for (const [t, bytes] of data) {
    if (t.kind === "input") {
      inputs.set(t, bytes);
      continue;
    }
    const buffer = runtime.allocate(bytes.length, t.name);
    owned.push(buffer);
    await runtime.write(buffer, 0, bytes);
    (t.kind === "weight" ? weights : states).set(t.kind === "weight" ? (t.source ?? t.name) : t.name, {
      buffer,
    });
  }
  const scheduler = new Scheduler({ runtimes: [runtime], weights, states });
  try {
    const result = await scheduler.prepare(graph).executor.run(inputs);
    return graph.outputs.map((t) => result.values(t));
  } finally {
    scheduler.dispose();
    for (const b of owned) b.dispose();
  }
}

/** How far `actual` is from `expected`: normalised MSE, and whether non-finite values disagree. */
export function compareOutputs(
  expected: Float64Array,
  actual: Float64Array,
): { nmse: number; mismatch: string | undefined } {
  if (expected.length !== actual.length)
    return { nmse: Number.POSITIVE_INFINITY, mismatch: `length ${actual.length} vs ${expected.length}` };
  let err = 0;
  let ref = 0;
  for (let i = 0; i < expected.length; i++) {
    const e = expected[i]!;
    const a = actual[i]!;
    if (!Number.isFinite(e) || !Number.isFinite(a)) {
      if (!Object.is(e, a)) return { nmse: Number.POSITIVE_INFINITY, mismatch: `element ${i}: ${a} vs ${e}` };
      continue;
    }
    err += (a - e) ** 2;
    ref += e * e;
  }
  return { nmse: ref > 0 ? err / ref : err, mismatch: undefined };
}
