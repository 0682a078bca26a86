// Microbenchmark of the CPU backend's MUL_MAT through its public JS API (the BackendEntry /
// DeviceRuntime contract of packages/ir/src/backend.ts): one-node programs built with
// @minfer/ir's GraphBuilder (shape checking) and encodeProgram, run by runtime.execute.
//
// Shapes (Qwen2-0.5B-like; weight [k, m] times activations [k, n]):
//   mat-vec  k×m = 4864×896 (ffn_down), 896×4864 (ffn_up), 896×151936 (output head), n = 1
//   mat-mat  the two FFN shapes at n = 128 (prefill)
// Weight types Q4_0, Q8_0, Q4_K, F16; 1 and 2 threads. K-quants need k % 256 == 0, so for Q4_K
// k = 896 is rounded up to 1024 (reported in the shape column).
// Prints µs per call, GB/s of weight bytes read and GFLOP/s (2·k·m·n per call).
//
// Usage (after `pnpm --filter @minfer/backend-cpu build`):
//   node packages/backend-cpu/bench/matmul.bench.mjs [--simd avx512|avx2|scalar] [--threads 1,2]
//                                                     [--types Q4_0,Q4_K] [--seconds 0.5]
import { DType, encodeProgram, GraphBuilder } from "@minfer/ir";
import { backend } from "../dist/index.js";

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const simd = opt("simd", undefined);
const threadList = opt("threads", "1,2").split(",").map(Number);
const typeNames = opt("types", "Q4_0,Q8_0,Q4_K,F16").split(",");
const minSeconds = Number(opt("seconds", "0.5"));

// Block geometry and where each block keeps its f16 scale fields (to write valid random blocks).
const TYPES = {
  Q4_0: { dtype: DType.Q4_0, block: 32, bytes: 18, halves: [0] },
  Q8_0: { dtype: DType.Q8_0, block: 32, bytes: 34, halves: [0] },
  Q4_K: { dtype: DType.Q4_K, block: 256, bytes: 144, halves: [0, 2] },
  F16: { dtype: DType.F16, block: 1, bytes: 2, halves: null },
};

const CASES = [
  { k: 4864, m: 896, n: 1 },
  { k: 896, m: 4864, n: 1 },
  { k: 896, m: 151936, n: 1 },
  { k: 896, m: 4864, n: 128 },
  { k: 4864, m: 896, n: 128 },
];

let seed = 0x2545f491;
function rand32() {
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  return seed >>> 0;
}

/** Random but valid weight bytes: small finite f16 scales, any quant bits. */
function weightBytes(t, k, m) {
  const rowBytes = (k / t.block) * t.bytes;
  const out = new Uint8Array(rowBytes * m);
  const words = new Uint32Array(out.buffer, 0, out.length >>> 2);
  for (let i = 0; i < words.length; i++) words[i] = rand32();
  if (t.halves === null) {
    // F16: keep every element finite and small (exponent field ≤ 0x0e → |x| < 1).
    for (let i = 1; i < out.length; i += 2) out[i] &= 0xbb;
  } else {
    for (let b = 0; b < out.length; b += t.bytes) {
      for (const off of t.halves) {
        out[b + off] = rand32() & 0xff;
        out[b + off + 1] = 0x14 + (rand32() & 3); // ≈ 1e-3 .. 2e-3
      }
    }
  }
  return out;
}

function program(t, k, m, n) {
  // Shape-check through the graph builder (the same rules the scheduler applies).
  const g = new GraphBuilder();
  const w = g.weight("w", t.dtype, [k, m]);
  const x = g.input("x", DType.F32, [k, n]);
  const y = g.output(g.mulMat(w, x, "y"));
  if (y.ne[0] !== m || y.ne[1] !== n) throw new Error(`unexpected output shape ${y.ne}`);
  const contiguous = (_dt, ne, elemBytes, block) => {
    const nb0 = elemBytes;
    const nb1 = nb0 * (ne[0] / block);
    return [nb0, nb1, nb1 * ne[1], nb1 * ne[1] * ne[2]];
  };
  const wNe = [k, m, 1, 1];
  const xNe = [k, n, 1, 1];
  const yNe = [m, n, 1, 1];
  const sizes = [(k / t.block) * t.bytes * m, 4 * k * n, 4 * m * n];
  return {
    sizes,
    bytes: encodeProgram({
      bufferSizes: sizes,
      tensors: [
        { dtype: t.dtype, buffer: 0, offset: 0, ne: wNe, nb: contiguous(t.dtype, wNe, t.bytes, t.block) },
        { dtype: DType.F32, buffer: 1, offset: 0, ne: xNe, nb: contiguous(DType.F32, xNe, 4, 1) },
        { dtype: DType.F32, buffer: 2, offset: 0, ne: yNe, nb: contiguous(DType.F32, yNe, 4, 1) },
      ],
      nodes: [{ op: 2 /* MUL_MAT */, inputs: [0, 1], outputs: [2], params: [] }],
    }),
  };
}

const device = backend.devices()[0];
if (!device) {
  console.error("no CPU device:", backend.diagnostics().join("; "));
  process.exit(1);
}
console.log(backend.diagnostics().join("\n"));
console.log(
  `${"type".padEnd(5)} ${"k x m x n".padEnd(18)} ${"thr".padStart(3)} ${"us/call".padStart(9)} ${"GB/s(w)".padStart(8)} ${"GFLOP/s".padStart(8)}`,
);

for (const threads of threadList) {
  const runtime = await device.init({ threads, ...(simd ? { simd } : {}) });
  try {
    for (const name of typeNames) {
      const t = TYPES[name];
      if (!t) throw new Error(`unknown type ${name}; choose from ${Object.keys(TYPES).join(", ")}`);
      for (const c of CASES) {
        const k = Math.ceil(c.k / t.block) * t.block;
        const { m, n } = c;
        const p = program(t, k, m, n);
        const bufs = p.sizes.map((s, i) => runtime.allocate(s, ["w", "x", "y"][i]));
        await runtime.write(bufs[0], 0, weightBytes(t, k, m));
        const x = new Float32Array(k * n);
        for (let i = 0; i < x.length; i++) x[i] = (rand32() / 2 ** 32 - 0.5) * 2;
        await runtime.write(bufs[1], 0, x);
        await runtime.execute(p.bytes, bufs); // warm-up
        let iters = 0;
        const t0 = process.hrtime.bigint();
        let elapsed = 0;
        do {
          await runtime.execute(p.bytes, bufs);
          iters++;
          elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
        } while (elapsed < minSeconds);
        const per = elapsed / iters;
        const y = new Float32Array((await runtime.read(bufs[2], 0, 4 * m * n)).slice().buffer);
        if (!Number.isFinite(y[0]) || !Number.isFinite(y[y.length - 1])) throw new Error("non-finite output");
        console.log(
          `${name.padEnd(5)} ${`${k}x${m}x${n}`.padEnd(18)} ${String(threads).padStart(3)} ${(per * 1e6).toFixed(1).padStart(9)} ${(p.sizes[0] / per / 1e9).toFixed(2).padStart(8)} ${((2 * k * m * n) / per / 1e9).toFixed(1).padStart(8)}`,
        );
        for (const b of bufs) b.dispose();
      }
    }
  } finally {
    runtime.dispose();
  }
}
