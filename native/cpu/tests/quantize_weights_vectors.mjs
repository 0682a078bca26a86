// Writes vectors of @minfer/gguf's TypeScript weight quantizers to the file named by argv[2], for
// quantize_weights_test.cpp (the native ports, native/cpu/quantize_weights*.cpp). Needs
// packages/gguf/dist (pnpm build).
//
// Cases: i32 ggml type, i32 rowLength, i32 n, i32 hasImportance, i32 nbytes;
// n f32 values; rowLength f32 importances when hasImportance; nbytes bytes (the TS output).
import { writeFileSync } from "node:fs";
import { GgmlType, quantize } from "../../../packages/gguf/dist/index.js";

let seed = 777;
function rnd() {
  seed = (seed + 0x6d2b79f5) | 0; // mulberry32
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const gauss = () => Math.sqrt(-2 * Math.log(Math.max(rnd(), 1e-12))) * Math.cos(2 * Math.PI * rnd());

const ROW = 512;
const KINDS = [
  () => gauss() * 0.02,
  () => gauss() * 3,
  (j) => (j % 3 === 0 ? 0 : gauss()),
  (j) => (j === 77 ? 500 : gauss() * 0.01),
  () => gauss() * 1e-30,
  () => gauss() * 1e-7,
  () => -Math.abs(gauss()),
  (j) => (j % 32 < 16 ? gauss() * 1e-5 : gauss()),
  () => Math.round(gauss() * 4) / 4,
  () => gauss() * 10 ** (rnd() * 8 - 6),
];
const x = new Float32Array(KINDS.length * ROW);
KINDS.forEach((f, k) => {
  for (let j = 0; j < ROW; j++) x[k * ROW + j] = f(j);
});
const imp = Float32Array.from({ length: ROW }, () => (rnd() < 0.1 ? 0 : rnd() * 10));

const chunks = [];
const TYPES = [
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
  "IQ4_NL",
  "IQ4_XS",
];
for (const name of TYPES) {
  for (const w of [undefined, imp]) {
    const out = quantize(GgmlType[name], x, w);
    chunks.push(
      new Uint8Array(new Int32Array([GgmlType[name], ROW, x.length, w ? 1 : 0, out.length]).buffer),
    );
    chunks.push(new Uint8Array(x.slice().buffer));
    if (w) chunks.push(new Uint8Array(w.slice().buffer));
    chunks.push(out);
  }
}
writeFileSync(process.argv[2], Buffer.concat(chunks));
console.log(`wrote ${TYPES.length * 2} cases of ${x.length} values to ${process.argv[2]}`);
