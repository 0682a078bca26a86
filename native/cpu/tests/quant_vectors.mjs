// Writes test vectors produced by @minfer/gguf's reference TypeScript quantizers to the file
// named by argv[2], for native/cpu/tests/quant_test.cpp. Needs packages/gguf/dist (pnpm build).
//
// Record: i32 kind (0 = dequantize case, 1 = quantize case), i32 ggml type, i32 n, i32 nbytes,
// nbytes bytes, n f32. Dequantize case: bytes → the TS dequantize output. Quantize case: the f32s
// are the input and the bytes the TS quantize output.
import { writeFileSync } from "node:fs";
import {
  dequantize,
  f32ToF16,
  GgmlType,
  ggmlTypeInfo,
  quantize,
  readGguf,
  readTensorData,
} from "../../../packages/gguf/dist/index.js";

let seed = 12345;
function rnd() {
  // mulberry32
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
function gauss() {
  const u = Math.max(rnd(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rnd());
}

const chunks = [];
function record(kind, type, n, bytes, floats) {
  const h = new Int32Array([kind, type, n, bytes.length]);
  chunks.push(
    new Uint8Array(h.buffer),
    Uint8Array.from(bytes),
    new Uint8Array(Float32Array.from(floats).buffer),
  );
}

function values(n) {
  const x = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const blockScale = Math.exp(2 * gauss()) * (Math.floor(i / 32) % 7 === 3 ? 1e-3 : 1);
    x[i] = gauss() * blockScale;
  }
  // Special blocks: zeros, one spike, exact ties for the rounding rules.
  for (let i = 0; i < 32 && i < n; i++) x[i] = 0;
  if (n >= 64) {
    for (let i = 32; i < 64; i++) x[i] = i === 40 ? -7.5 : (i - 48) * 0.25;
  }
  return x;
}

const halfFields = {
  Q4_0: [0],
  Q4_1: [0, 2],
  Q5_0: [0],
  Q5_1: [0, 2],
  Q8_0: [0],
  Q2_K: [80, 82],
  Q3_K: [108],
  Q4_K: [0, 2],
  Q5_K: [0, 2],
  Q6_K: [208],
  IQ2_XXS: [0],
  IQ2_XS: [0],
  IQ2_S: [0],
  IQ3_XXS: [0],
  IQ3_S: [0],
  IQ1_S: [0],
  IQ4_NL: [0],
  IQ4_XS: [0],
  TQ1_0: [52],
  TQ2_0: [64],
};

// Writes the scale fields of block b: the f16 fields of halfFields (values from `half()`), IQ1_M's
// f16 spread over the top nibbles of the four u16 scale words at byte 48, MXFP4's E8M0 exponent
// byte (from `e8m0()`).
function setScales(name, bytes, b, typeSize, half, e8m0) {
  const o = b * typeSize;
  for (const off of halfFields[name] ?? []) {
    const h = half();
    bytes[o + off] = h & 0xff;
    bytes[o + off + 1] = h >> 8;
  }
  if (name === "IQ1_M") {
    const h = half();
    for (let k = 0; k < 4; k++)
      bytes[o + 49 + 2 * k] = (bytes[o + 49 + 2 * k] & 0x0f) | (((h >> (4 * k)) & 15) << 4);
  }
  if (name === "MXFP4") bytes[o] = e8m0();
}
const moderateHalf = () => f32ToF16((rnd() - 0.3) * 0.1);
const moderateE8m0 = () => 110 + Math.floor(rnd() * 26);

const types = [
  "F32",
  "F16",
  "BF16",
  "Q4_0",
  "Q4_1",
  "Q5_0",
  "Q5_1",
  "Q8_0",
  "Q2_K",
  "Q3_K",
  "Q4_K",
  "Q5_K",
  "Q6_K",
  // No TS quantizer: random blocks only.
  "IQ2_XXS",
  "IQ2_XS",
  "IQ2_S",
  "IQ3_XXS",
  "IQ3_S",
  "IQ1_S",
  "IQ1_M",
  "IQ4_NL",
  "IQ4_XS",
  "TQ1_0",
  "TQ2_0",
  "MXFP4",
];
const quantizable = ["F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q4_K", "Q5_K", "Q6_K"];
for (const name of types) {
  const type = GgmlType[name];
  const { blockSize, typeSize } = ggmlTypeInfo(type);
  const n = blockSize === 1 ? 1000 : blockSize * 24;
  // 1. Round trip through the TS quantizer when there is one (realistic blocks).
  if (quantizable.includes(name)) {
    const x = values(n);
    const bytes = quantize(type, x);
    record(0, type, n, bytes, dequantize(type, bytes, n));
    if (quantizable.includes(name)) record(1, type, n, bytes, x);
  }
  // 2. Random bytes with finite f16 scale fields: exercises every bit of the layout.
  if (blockSize > 1) {
    const nb = n / blockSize;
    const bytes = new Uint8Array(nb * typeSize);
    for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(rnd() * 256);
    for (let b = 0; b < nb; b++) setScales(name, bytes, b, typeSize, moderateHalf, moderateE8m0);
    record(0, type, n, bytes, dequantize(type, bytes, n));
  }
}
// The i-quants, ternary types and MXFP4 with extreme but finite scales, one per block: ±0, the
// smallest and largest f16 subnormals, 1, the largest f16 (±65504); MXFP4 exponents 1..254
// (2^-126 .. 2^127). Random bytes elsewhere.
{
  const halves = [0x0000, 0x8000, 0x0001, 0x83ff, 0x3c00, 0x7bff, 0xfbff, 0x0400];
  const exps = [1, 2, 100, 127, 128, 200, 253, 254];
  for (const name of [
    "IQ2_XXS",
    "IQ2_XS",
    "IQ2_S",
    "IQ3_XXS",
    "IQ3_S",
    "IQ1_S",
    "IQ1_M",
    "IQ4_NL",
    "IQ4_XS",
    "TQ1_0",
    "TQ2_0",
    "MXFP4",
  ]) {
    const type = GgmlType[name];
    const { blockSize, typeSize } = ggmlTypeInfo(type);
    const nb = halves.length;
    const bytes = new Uint8Array(nb * typeSize);
    for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(rnd() * 256);
    for (let b = 0; b < nb; b++)
      setScales(
        name,
        bytes,
        b,
        typeSize,
        () => halves[b],
        () => exps[b],
      );
    record(0, type, nb * blockSize, bytes, dequantize(type, bytes, nb * blockSize));
  }
}
// Blocks llama-quantize wrote (one tensor per type, from the built-in trained model; its
// dequantization is checked against ggml's by packages/gguf/src/quant/llamacpp-quants.test.ts).
{
  const file = await readGguf(
    new URL("../../../packages/gguf/src/quant/llamacpp-quants.gguf", import.meta.url).pathname,
  );
  for (const t of file.tensors) {
    const n = t.dims.reduce((a, b) => a * b, 1);
    const bytes = await readTensorData(file, t);
    record(0, t.type, n, bytes, dequantize(t.type, bytes, n));
  }
}
// Re-quantizing Q8_0/Q4_0 of values with exact .5 ties.
{
  const x = new Float32Array(64);
  for (let i = 0; i < 64; i++) x[i] = (i % 2 ? 1 : -1) * (i + 0.5) * 0.125;
  x[63] = 127 * 0.125 * 2;
  for (const name of ["Q8_0", "Q4_0", "Q5_0", "Q4_1", "Q5_1"])
    record(1, GgmlType[name], 64, quantize(GgmlType[name], x), x);
}
// K-quant edge blocks (256 elements each): all zero, constant positive, constant negative, all
// positive (no min), all negative, tiny values (subnormal f16 scales), large values, one spike,
// half-integer ramps (ties in the grid searches), and alternating signs.
{
  const blocks = [
    () => 0,
    () => 0.75,
    () => -1.25,
    (i) => 0.5 + (i % 37) * 0.01,
    (i) => -0.5 - (i % 29) * 0.02,
    () => gauss() * 1e-6,
    () => gauss() * 3e3,
    (i) => (i === 77 ? 50 : gauss() * 0.01),
    (i) => ((i % 32) - 15.5) * 0.5,
    (i) => (i % 2 ? 1 : -1) * (1 + (i % 16) * 0.125),
    (i) => (i % 16 === 0 ? 0 : gauss()),
  ];
  const x = new Float32Array(256 * blocks.length);
  blocks.forEach((f, b) => {
    for (let i = 0; i < 256; i++) x[256 * b + i] = f(i);
  });
  for (const name of ["Q4_K", "Q5_K", "Q6_K"]) {
    const bytes = quantize(GgmlType[name], x);
    record(1, GgmlType[name], x.length, bytes, x);
    record(0, GgmlType[name], x.length, bytes, dequantize(GgmlType[name], bytes, x.length));
  }
}
writeFileSync(process.argv[2], Buffer.concat(chunks));
console.log(`wrote ${chunks.length / 3} records to ${process.argv[2]}`);
