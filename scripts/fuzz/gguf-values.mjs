/** Values for the mutators: GGUF value types, odd numbers, and a mutable copy of a model. */
import { pick } from "./prng.mjs";

export const T = {
  U8: 0,
  I8: 1,
  U16: 2,
  I16: 3,
  U32: 4,
  I32: 5,
  F32: 6,
  BOOL: 7,
  STR: 8,
  ARR: 9,
  U64: 10,
  I64: 11,
  F64: 12,
};
export const T_NAME = Object.fromEntries(Object.entries(T).map(([k, v]) => [v, k]));

export const INTS = [
  0,
  1,
  -1,
  2,
  3,
  7,
  2 ** 31 - 1,
  2 ** 31,
  2 ** 32 - 1,
  2 ** 32,
  2 ** 53,
  2n ** 63n,
  2n ** 64n - 1n,
];
export const FLOATS = [
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  0,
  -0,
  -1,
  0.5,
  1e-45,
  3.4e38,
  1e300,
];

const num = (v) => (typeof v === "bigint" ? v : Number.isSafeInteger(v) ? v : Math.trunc(v));

/** A value type that can hold `v` (an integer, possibly big, or a float). */
export function typeFor(r, v) {
  if (typeof v === "bigint") return v < 0n ? T.I64 : pick(r, [T.U64, T.I64]);
  if (!Number.isInteger(v) || Object.is(v, -0)) return pick(r, [T.F32, T.F64]);
  if (v < -(2 ** 31) || v > 2 ** 32 - 1) return v < 0 ? T.I64 : pick(r, [T.U64, T.I64]);
  if (v < 0) return pick(r, [T.I32, T.I64, T.I8]);
  if (v > 2 ** 31 - 1) return pick(r, [T.U32, T.U64]);
  return pick(r, v <= 127 ? [T.U32, T.I32, T.U64, T.U8, T.I16, T.F32] : [T.U32, T.I32, T.U64, T.F32]);
}

export function scalar(key, type, v) {
  if (type === T.U64 || type === T.I64) v = BigInt(num(v));
  else if (type !== T.F32 && type !== T.F64 && type !== T.STR && type !== T.BOOL) v = Number(v);
  if (type === T.I8 && (v < -128 || v > 127)) type = T.I32;
  if (type === T.U8 && (v < 0 || v > 255)) type = T.U32;
  return { key, type, value: v };
}

/** An integer near, or far from, `old`. */
export function oddInt(r, old) {
  const o = typeof old === "number" && Number.isFinite(old) ? Math.trunc(old) : 0;
  const roll = r();
  if (roll < 0.55) return pick(r, INTS);
  if (roll < 0.8) return o + pick(r, [-2, -1, 1, 2]);
  if (roll < 0.9) return o * pick(r, [2, 3, 16, 1000]);
  return Math.floor(o / pick(r, [2, 3, 4]));
}

/** A number that is not a sane hyperparameter float. */
export const oddFloat = (r, old) =>
  r() < 0.7 ? pick(r, FLOATS) : (typeof old === "number" ? old : 1) * pick(r, [-1, 1e6, 1e-6]);

/** A subject's metadata and tensors, copied so that mutations leave the subject alone. */
export class Draft {
  constructor(s) {
    this.kvs = s.kvs.map((kv) => ({ ...kv }));
    this.tensors = s.tensors.map((t) => ({ ...t, dims: [...t.dims] }));
    this.arch = String(s.kvs.find((kv) => kv.key === "general.architecture")?.value ?? "llama");
  }
  get(key) {
    return this.kvs.find((kv) => kv.key === key);
  }
  set(kv) {
    const i = this.kvs.findIndex((x) => x.key === kv.key);
    if (i >= 0) this.kvs[i] = kv;
    else this.kvs.push(kv);
  }
  drop(key) {
    this.kvs = this.kvs.filter((kv) => kv.key !== key);
  }
  array(key) {
    const kv = this.get(key);
    return kv?.type === T.ARR ? kv.value : undefined;
  }
}
