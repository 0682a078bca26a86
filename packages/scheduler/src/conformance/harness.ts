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
import { hashString, prng, type Rng } from "./prng.js";

/** Outputs of one case on one device, by output index, as float64. */
export type CaseOutputs = Float64Array[];

/** Why a device cannot run a case, or `undefined` when it can (asked with supportsOp, never by trying). */
export function unsupportedReason(device: Device, graph: Graph): string | undefined {
  const node = graph.nodes.find((nd) => !device.supportsOp(opQuery(nd)));
  return node ? `${device.name} does not support node ${node.name}` : undefined;
}

/** Sets a block's f16 scale at byte `at` to a moderate positive value. */
function f16Scale(dv: DataView, at: number, rng: Rng): void {
  dv.setUint16(at, f32ToF16(rng.uniform(0.001, 0.01)), true);
}

/** The byte a TQ1_0 quantizer stores for the base-3 number v < 243: ⌈v·256/243⌉. */
const tq1Byte = (v: number) => Math.floor((v * 256 + 242) / 243);

/**
 * What makes random bytes a valid block of a type @minfer/gguf cannot quantize, applied to the
 * block at byte `o`: random bytes are valid quants (grid indices, signs, sub-block scales), but a
 * random f16 scale could be huge, subnormal or NaN, so each scale is set to a moderate value; the
 * ternary types' digits are drawn from what their quantizers write. Layouts: packages/gguf/src/quant.
 */
const BLOCK_FIXES: Readonly<Record<string, (dv: DataView, o: number, rng: Rng) => void>> = {
  // K-quants: the super-block scales d and dmin (Q2_K), d (Q3_K).
  Q2_K: (dv, o, rng) => {
    f16Scale(dv, o + 80, rng);
    f16Scale(dv, o + 82, rng);
  },
  Q3_K: (dv, o, rng) => f16Scale(dv, o + 108, rng),
  // The i-quants with an f16 d at byte 0.
  ...Object.fromEntries(
    ["IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ4_NL", "IQ4_XS"].map((t) => [
      t,
      (dv: DataView, o: number, rng: Rng) => f16Scale(dv, o, rng),
    ]),
  ),
  // IQ1_M: d has no field; its four nibbles are the top nibbles of the u16 scales[4] at byte 48.
  IQ1_M: (dv, o, rng) => {
    const bits = f32ToF16(rng.uniform(0.001, 0.01));
    for (let k = 0; k < 4; k++) {
      const at = o + 48 + 2 * k;
      dv.setUint16(at, (dv.getUint16(at, true) & 0x0fff) | (((bits >> (4 * k)) & 15) << 12), true);
    }
  },
  // TQ1_0: qs[48] of five base-3 digits, qh[4] of four (the last digit 0), f16 d at byte 52.
  TQ1_0: (dv, o, rng) => {
    for (let j = 0; j < 48; j++) dv.setUint8(o + j, tq1Byte(rng.int(0, 243)));
    for (let j = 48; j < 52; j++) dv.setUint8(o + j, tq1Byte(3 * rng.int(0, 81)));
    f16Scale(dv, o + 52, rng);
  },
  // TQ2_0: qs[64] of four 2-bit digits 0..2 (3 is never written), f16 d at byte 64.
  TQ2_0: (dv, o, rng) => {
    for (let j = 0; j < 64; j++)
      dv.setUint8(o + j, rng.int(0, 3) | (rng.int(0, 3) << 2) | (rng.int(0, 3) << 4) | (rng.int(0, 3) << 6));
    f16Scale(dv, o + 64, rng);
  },
  // MXFP4: the e8m0 scale byte 2^(e − 127) kept near 1 (e 121..127: elements up to ±6).
  MXFP4: (dv, o, rng) => dv.setUint8(o, rng.int(121, 128)),
};

/** Random but well-formed blocks of a quantized type without a reference quantizer. */
export function randomBlocks(dtype: Tensor["dtype"], count: number, rng: Rng): Uint8Array {
  const { blockSize, typeSize } = blockOf(dtype);
  const bytes = Uint8Array.from({ length: (count / blockSize) * typeSize }, () => rng.int(0, 256));
  const fix = BLOCK_FIXES[dtypeName(dtype)];
  if (!fix)
    throw new Error(`no recipe for random ${dtypeName(dtype)} blocks (conformance/harness.ts BLOCK_FIXES)`);
  const dv = new DataView(bytes.buffer);
  for (let b = 0; b < bytes.length; b += typeSize) fix(dv, b, rng);
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
