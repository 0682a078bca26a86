// Weight views end to end: a MUL_MAT (or MUL_MAT_MULTI, or what fusion makes of three MUL_MATs)
// whose weight is a row range of a fused weight (phi3's attn_qkv [k, nQ + 2·nKv], ffn_up
// [k, 2·nFf]) must compute what the same product computes over a weight that holds only those
// rows. The op-conformance suite cannot see a wrong view offset in lowering (the reference runs the
// same lowered program), so this compares against separately bound copies of the rows, on the
// reference and on every device the registry finds.
import {
  type BackendBuffer,
  type DeviceRuntime,
  DType,
  dtypeName,
  fuse,
  type Graph,
  GraphBuilder,
  Op,
  type Tensor,
} from "@minfer/ir";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compareOutputs } from "./conformance/harness.js";
import { prng } from "./conformance/prng.js";
import type { TensorBinding } from "./plan.js";
import { encodeValues } from "./reference/dtype-io.js";
import { Registry } from "./registry.js";
import { Scheduler } from "./scheduler.js";

const registry = await Registry.discover({ reference: true });
const devices = registry.devices();
const runtimes = new Map<string, DeviceRuntime>();
beforeAll(async () => {
  for (const d of devices) runtimes.set(d.name, await d.init());
});
afterAll(() => {
  for (const r of runtimes.values()) r.dispose();
});

const K = 256;
const DTYPES = [DType.F32, DType.F16, DType.Q8_0, DType.Q4_0, DType.Q4_K, DType.Q6_K] as const;

/** Random weight bytes [K, rows] of a dtype, and x [K, tokens] F32, from a seed. */
function data(d: DType, rows: number, tokens: number, seed: number) {
  const rng = prng(seed);
  const w = encodeValues(
    d,
    [K, rows, 1, 1],
    Array.from({ length: K * rows }, () => rng.uniform(-1, 1)),
  );
  const x = encodeValues(
    DType.F32,
    [K, tokens, 1, 1],
    Array.from({ length: K * tokens }, () => rng.uniform(-1, 1)),
  );
  return { w, x, rowBytes: w.length / rows };
}

/** Runs a graph on one runtime with weights bound by source name and inputs by name; the outputs. */
async function run(
  runtime: DeviceRuntime,
  graph: Graph,
  weights: ReadonlyMap<string, Uint8Array>,
  inputs: ReadonlyMap<string, Uint8Array>,
): Promise<Float64Array[]> {
  const owned: BackendBuffer[] = [];
  const bound = new Map<string, TensorBinding>();
  for (const [name, bytes] of weights) {
    const buffer = runtime.allocate(bytes.length, name);
    owned.push(buffer);
    await runtime.write(buffer, 0, bytes);
    bound.set(name, { buffer });
  }
  const scheduler = new Scheduler({ runtimes: [runtime], weights: bound });
  try {
    const ins = new Map<Tensor, ArrayBufferView>();
    for (const t of graph.tensors) if (t.kind === "input") ins.set(t, inputs.get(t.name)!);
    const result = await scheduler.prepare(graph).executor.run(ins);
    return graph.outputs.map((t) => result.values(t));
  } finally {
    scheduler.dispose();
    for (const b of owned) b.dispose();
  }
}

/** Rows [r0, r0 + m) of a weight, as the models take them. */
function rows(b: GraphBuilder, w: Tensor, r0: number, m: number, name: string): Tensor {
  return b.view(w, [w.ne[0], m], [w.nb[0], w.nb[1]], r0 * w.nb[1], name);
}

function expectSame(got: Float64Array[], want: Float64Array[], what: string): void {
  expect(got.length, what).toBe(want.length);
  got.forEach((g, i) => {
    const { nmse, mismatch } = compareOutputs(want[i]!, g);
    expect(mismatch, `${what} output ${i}`).toBeUndefined();
    // The same bytes through the same kernels: equal up to the order a device sums in.
    expect(nmse, `${what} output ${i}: NMSE ${nmse}`).toBeLessThanOrEqual(1e-12);
  });
}

describe.each(devices.map((d) => [d.name] as const))("weight views on %s", (device) => {
  for (const d of DTYPES)
    for (const tokens of [1, 7, 19]) {
      it(`MUL_MAT of rows 40..109 of ${dtypeName(d)} [${K}, 160] × [${K}, ${tokens}] = MUL_MAT of a copy of those rows`, async () => {
        const { w, x, rowBytes } = data(d, 160, tokens, 11 * d + tokens);
        const viewed = new GraphBuilder();
        const fused = viewed.weight("w_fused", d, [K, 160]);
        viewed.output(
          viewed.mulMat(rows(viewed, fused, 40, 70, "w_rows"), viewed.input("x", DType.F32, [K, tokens])),
        );
        const copied = new GraphBuilder();
        copied.output(
          copied.mulMat(copied.weight("w_copy", d, [K, 70]), copied.input("x", DType.F32, [K, tokens])),
        );
        const rt = runtimes.get(device)!;
        const inputs = new Map([["x", x]]);
        const got = await run(rt, viewed.build(), new Map([["w_fused", w]]), inputs);
        const want = await run(
          rt,
          copied.build(),
          new Map([["w_copy", w.slice(40 * rowBytes, 110 * rowBytes)]]),
          inputs,
        );
        expectSame(got, want, `${dtypeName(d)} tokens=${tokens}`);
      });
    }

  for (const d of [DType.F16, DType.Q8_0, DType.Q4_K, DType.Q6_K])
    for (const tokens of [1, 19]) {
      it(`q/k/v views of one ${dtypeName(d)} attn_qkv, fused into MUL_MAT_MULTI with biases, = three separate weights (${tokens} tokens)`, async () => {
        const { w, x, rowBytes } = data(d, 128, tokens, 7 * d + tokens);
        const split = [
          [0, 64],
          [64, 32],
          [96, 32],
        ] as const;
        const biasRng = prng(99 + d);
        const biases = split.map(([, m]) =>
          encodeValues(
            DType.F32,
            [m, 1, 1, 1],
            Array.from({ length: m }, () => biasRng.uniform(-1, 1)),
          ),
        );
        const viewed = new GraphBuilder();
        const qkv = viewed.weight("attn_qkv", d, [K, 128]);
        const hx = viewed.input("x", DType.F32, [K, tokens]);
        split.forEach(([r0, m], i) => {
          const p = viewed.mulMat(rows(viewed, qkv, r0, m, `w${i}`), hx);
          viewed.output(viewed.add(p, viewed.weight(`b${i}`, DType.F32, [m])));
        });
        const g = fuse(viewed.build());
        expect(g.nodes.map((n) => n.op)).toEqual([Op.MUL_MAT_MULTI]);
        const separate = new GraphBuilder();
        const sx = separate.input("x", DType.F32, [K, tokens]);
        split.forEach(([, m], i) => {
          const p = separate.mulMat(separate.weight(`w${i}`, d, [K, m]), sx);
          separate.output(separate.add(p, separate.weight(`b${i}`, DType.F32, [m])));
        });
        const rt = runtimes.get(device)!;
        const inputs = new Map([["x", x]]);
        const bias = (i: number) => [`b${i}`, biases[i]!] as const;
        const got = await run(rt, g, new Map([["attn_qkv", w], bias(0), bias(1), bias(2)]), inputs);
        const copies = split.map(
          ([r0, m], i) => [`w${i}`, w.slice(r0 * rowBytes, (r0 + m) * rowBytes)] as const,
        );
        const want = await run(rt, separate.build(), new Map([...copies, bias(0), bias(1), bias(2)]), inputs);
        expectSame(got, want, `${dtypeName(d)} tokens=${tokens}`);
      });
    }
});
