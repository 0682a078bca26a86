/**
 * Thousands of mutated headers from the fixtures; only GgufError escapes.
 *
 * Every iteration derives its own PRNG from (seed, subject, iteration), so a failure is replayed
 * with MINFER_FUZZ_SEED=<seed>, or alone with MINFER_FUZZ_REPLAY=<subject>:<iteration> too;
 * MINFER_FUZZ_SCALE multiplies the iteration counts.
 */
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { encodeGguf, GgmlType, GgufError, type GgufErrorCode, GgufValueType, parseGguf } from "./index.js";
import {
  everyValueTypeKvs,
  fitStringArrayToPrefix,
  type GgufFieldMap,
  mapGgufFields,
  sampleTensors,
} from "./test-helpers.js";

const REPO_ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const FIXTURES = process.env.MINFER_FIXTURES ?? resolve(REPO_ROOT, "../shared/fixtures");
const SEED = Number(process.env.MINFER_FUZZ_SEED ?? 0x6775f);
const SCALE = Number(process.env.MINFER_FUZZ_SCALE ?? 1);
/** "SUBJECT:ITERATION" (as printed in a failure) runs that one mutation alone. */
const REPLAY = process.env.MINFER_FUZZ_REPLAY?.split(":").map(Number);

/** mulberry32: small, fast, good enough to pick mutations. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The PRNG of one iteration: independent of the others, so any one replays alone. */
function iterationRng(subject: number, iteration: number): () => number {
  const r = prng(SEED ^ Math.imul(subject + 1, 0x9e3779b9) ^ Math.imul(iteration + 1, 0x85ebca6b));
  r();
  return r;
}

const CODES = new Set<GgufErrorCode>([
  "TRUNCATED",
  "BAD_MAGIC",
  "UNSUPPORTED_VERSION",
  "COUNT_TOO_LARGE",
  "INVALID_UTF8",
  "UNKNOWN_VALUE_TYPE",
  "MALFORMED_VALUE",
  "NESTING_TOO_DEEP",
  "DUPLICATE_KEY",
  "BAD_ALIGNMENT",
  "UNKNOWN_TENSOR_TYPE",
  "TOO_MANY_DIMS",
  "BAD_SHAPE",
  "DUPLICATE_TENSOR",
  "MISALIGNED_TENSOR",
  "OVERLAPPING_TENSORS",
  "TENSOR_OUT_OF_BOUNDS",
]);

const U64_EXTREMES: bigint[] = [
  0n,
  1n,
  2n ** 32n - 1n,
  2n ** 32n,
  2n ** 53n - 1n,
  2n ** 53n,
  2n ** 63n,
  2n ** 64n - 1n,
];

interface Subject {
  readonly name: string;
  readonly bytes: Uint8Array;
  /** Mutations land in [0, headerEnd) (the header, or the part of it that is present). */
  readonly headerEnd: number;
  readonly fields: GgufFieldMap;
  readonly iterations: number;
}

function subject(name: string, bytes: Uint8Array, iterations: number): Subject {
  const fields = mapGgufFields(bytes);
  return {
    name,
    bytes,
    headerEnd: fields.end,
    fields,
    iterations: Math.max(1, Math.round(iterations * SCALE)),
  };
}

/** A copy as a plain Uint8Array (parseGguf mishandles Node Buffers; see malformed.test.ts). */
function fixture(rel: string, maxBytes = Number.POSITIVE_INFINITY): Uint8Array {
  const buf = readFileSync(resolve(FIXTURES, rel));
  return new Uint8Array(buf.subarray(0, Math.min(buf.length, maxBytes)));
}

/**
 * The first `maxBytes` of a fixture whose vocabulary runs past them, with the token count lowered
 * to the whole tokens: mutations inside the tokens are then reached before the cut is.
 */
function vocabPrefix(rel: string, maxBytes: number): Uint8Array {
  return fitStringArrayToPrefix(fixture(rel, maxBytes));
}

/** A synthetic file with every value type, nested arrays, a big string array and several tensors. */
function synthetic(): Uint8Array {
  const kvs = everyValueTypeKvs();
  kvs.push({
    key: "tokenizer.ggml.tokens",
    type: GgufValueType.ARRAY,
    value: {
      itemType: GgufValueType.STRING,
      items: Array.from({ length: 300 }, (_, i) => `t${i}${"ü".repeat(i % 5)}`),
    },
  });
  const tensors = [
    ...sampleTensors(),
    { name: "blk.1.q4", type: GgmlType.Q4_0, dims: [64, 2], data: new Uint8Array(72) },
    { name: "blk.1.bf16", type: GgmlType.BF16, dims: [3, 1, 1, 2], data: new Uint8Array(12) },
    { name: "blk.1.q4k", type: GgmlType.Q4_K, dims: [256], data: new Uint8Array(144) },
    { name: "empty", type: GgmlType.F32, dims: [0, 4], data: new Uint8Array(0) },
  ];
  return encodeGguf(kvs, tensors);
}

type Rng = () => number;
const int = (r: Rng, n: number) => Math.floor(r() * n);
const pick = <T>(r: Rng, xs: readonly T[]): T => xs[int(r, xs.length)]!;

/** Applies 1–4 random mutations (and maybe a truncation); returns the bytes and what was done. */
function mutate(s: Subject, r: Rng): { bytes: Uint8Array; ops: string[] } {
  let bytes = s.bytes.slice();
  const ops: string[] = [];
  const end = () => Math.min(s.headerEnd, bytes.length);
  const at = () => int(r, Math.max(1, end()));
  const view = () => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const setU64 = (p: number, v: bigint) => {
    if (p + 8 <= bytes.length) view().setBigUint64(p, v, true);
  };
  const setU32 = (p: number, v: number) => {
    if (p + 4 <= bytes.length) view().setUint32(p, v >>> 0, true);
  };
  const nOps = r() < 0.6 ? 1 : 2 + int(r, 3);
  for (let k = 0; k < nOps; k++) {
    const op = int(r, 10);
    if (op <= 1) {
      const n = 1 + int(r, 8);
      const flipped: number[] = [];
      for (let j = 0; j < n; j++) {
        const p = at();
        if (p >= bytes.length) continue;
        if (r() < 0.5) bytes[p] = int(r, 256);
        else bytes[p]! ^= 1 << int(r, 8);
        flipped.push(p);
      }
      ops.push(`flip@${flipped.join("/")}`);
    } else if (op <= 3) {
      const fields = s.fields.u64Fields;
      const p = fields.length > 0 && r() < 0.9 ? pick(r, fields) : at();
      const old = p + 8 <= bytes.length ? view().getBigUint64(p, true) : 0n;
      const roll = r();
      const v =
        roll < 0.6
          ? pick(r, U64_EXTREMES)
          : roll < 0.9
            ? BigInt.asUintN(64, old + BigInt(int(r, 33) - 16))
            : BigInt(int(r, 1 << 20));
      setU64(p, v);
      ops.push(`u64@${p}=${v}`);
    } else if (op === 4) {
      const p = s.fields.valueTypeFields.length > 0 ? pick(r, s.fields.valueTypeFields) : at();
      const v = r() < 0.7 ? int(r, 14) : pick(r, [13, 255, 0xffffffff, int(r, 2 ** 32)]);
      setU32(p, v);
      ops.push(`valueType@${p}=${v}`);
    } else if (op === 5) {
      const fields = r() < 0.7 ? s.fields.tensorTypeFields : s.fields.nDimsFields;
      const p = fields.length > 0 ? pick(r, fields) : at();
      const v = r() < 0.7 ? int(r, 42) : pick(r, [4, 5, 1000, 0xffffffff, int(r, 2 ** 32)]);
      setU32(p, v);
      ops.push(`u32@${p}=${v}`);
    } else if (op === 6) {
      const p = at();
      const n = 1 + int(r, 16);
      const ins = Uint8Array.from({ length: n }, () => (r() < 0.5 ? 0 : int(r, 256)));
      const out = new Uint8Array(bytes.length + n);
      out.set(bytes.subarray(0, p), 0);
      out.set(ins, p);
      out.set(bytes.subarray(p), p + n);
      bytes = out;
      ops.push(`insert ${n}@${p}`);
    } else if (op === 7) {
      const p = at();
      const n = Math.min(1 + int(r, 16), bytes.length - p);
      const out = new Uint8Array(bytes.length - n);
      out.set(bytes.subarray(0, p), 0);
      out.set(bytes.subarray(p + n), p);
      bytes = out;
      ops.push(`delete ${n}@${p}`);
    } else if (op === 8) {
      // Copy a run of bytes over another place (duplicates keys, names and whole entries).
      const from = at();
      const to = at();
      const n = Math.min(1 + int(r, 64), bytes.length - from, bytes.length - to);
      bytes.copyWithin(to, from, from + n);
      ops.push(`copy ${n} ${from}->${to}`);
    } else {
      const p = r() < 0.8 ? at() : int(r, bytes.length + 1);
      bytes = bytes.slice(0, p);
      ops.push(`truncate@${p}`);
    }
  }
  return { bytes, ops };
}

interface Stats {
  iterations: number;
  parsed: number;
  codes: Map<string, number>;
  ms: number;
  slowestMs: number;
}
const ALL: Stats = { iterations: 0, parsed: 0, codes: new Map(), ms: 0, slowestMs: 0 };

/** Parses each mutation; returns failure descriptions (a thrown non-GgufError, a bad error, a bad result). */
function fuzz(s: Subject, index: number): string[] {
  const failures: string[] = [];
  const started = performance.now();
  for (let i = 0; i < s.iterations; i++) {
    if (REPLAY && (REPLAY[0] !== index || REPLAY[1] !== i)) continue;
    const { bytes, ops } = mutate(s, iterationRng(index, i));
    ALL.iterations++;
    const where = () => `seed=${SEED} subject=${index} (${s.name}) iteration=${i} ops=[${ops.join(", ")}]`;
    const t0 = performance.now();
    try {
      const f = parseGguf(bytes);
      ALL.parsed++;
      // A successful parse must describe tensors that fit the file without overlapping.
      const part = f.parts[0]!;
      const sorted = [...f.tensors].sort((a, b) => a.offset - b.offset);
      let prevEnd = 0;
      for (const t of sorted) {
        const ok =
          t.offset % f.alignment === 0 &&
          t.offset >= prevEnd &&
          part.dataOffset + t.offset + t.byteSize <= bytes.length &&
          Number.isSafeInteger(t.nElements);
        if (!ok) failures.push(`${where()}: parsed, but tensor "${t.name}" is out of place`);
        prevEnd = Math.max(prevEnd, t.offset + t.byteSize);
      }
      for (const kv of f.metadata.entries())
        if (typeof kv.key !== "string") failures.push(`${where()}: bad key`);
    } catch (e) {
      if (!(e instanceof GgufError)) {
        const err = e as Error;
        failures.push(`${where()}: ${err?.name ?? typeof e}: ${err?.message ?? String(e)}`);
      } else {
        ALL.codes.set(e.code, (ALL.codes.get(e.code) ?? 0) + 1);
        if (!CODES.has(e.code)) failures.push(`${where()}: unexpected code ${e.code}: ${e.message}`);
        if (e.offset === undefined || !Number.isSafeInteger(e.offset) || e.offset < 0) {
          failures.push(`${where()}: ${e.code} with offset ${e.offset}: ${e.message}`);
        } else if (e.code !== "TENSOR_OUT_OF_BOUNDS" && e.offset > bytes.length) {
          failures.push(
            `${where()}: ${e.code} at ${e.offset}, past the ${bytes.length}-byte input: ${e.message}`,
          );
        }
      }
    }
    const dt = performance.now() - t0;
    ALL.slowestMs = Math.max(ALL.slowestMs, dt);
    if (dt > 2000) failures.push(`${where()}: parse took ${dt.toFixed(0)} ms`);
    if (failures.length >= 5) break;
  }
  ALL.ms += performance.now() - started;
  return failures;
}

const haveFixtures = existsSync(resolve(FIXTURES, "models/stories260K.gguf"));

describe("fuzzed headers: only GgufError escapes parseGguf", () => {
  afterAll(() => {
    const codes = [...ALL.codes].sort((a, b) => b[1] - a[1]).map(([c, n]) => `${c} ${n}`);
    console.log(
      `gguf fuzz: seed ${SEED}, ${ALL.iterations} mutations in ${(ALL.ms / 1000).toFixed(1)} s ` +
        `(slowest parse ${ALL.slowestMs.toFixed(1)} ms); ${ALL.parsed} parsed; ${codes.join(", ")}`,
    );
  });

  // Iteration counts keep the file near 10 s on a 2-core machine: a mutation of a small subject
  // costs ~0.1 ms, of a whole 700 KB vocabulary ~8 ms.
  const subjects: (() => Subject)[] = [
    () => subject("synthetic", synthetic(), 6000),
    () => subject("stories260K.gguf", fixture("models/stories260K.gguf"), 2000),
    // Header plus a little data: cheaper to copy, and tensor ranges land past the end.
    () => subject("stories260K.gguf[:16K]", fixture("models/stories260K.gguf", 16 << 10), 5000),
    () => subject("llama-2-tiny-random.gguf", fixture("models/llama-2-tiny-random.gguf"), 100),
    () =>
      subject(
        "llama-2-tiny-random.gguf[:64K]",
        vocabPrefix("models/llama-2-tiny-random.gguf", 64 << 10),
        1500,
      ),
    () =>
      subject(
        "ggml-vocab-llama-spm.gguf[:64K]",
        vocabPrefix("vocab/ggml-vocab-llama-spm.gguf", 64 << 10),
        2500,
      ),
    () =>
      subject(
        "ggml-vocab-bert-bge.gguf[:64K]",
        vocabPrefix("vocab/ggml-vocab-bert-bge.gguf", 64 << 10),
        1500,
      ),
    () => subject("ggml-vocab-phi-3.gguf", fixture("vocab/ggml-vocab-phi-3.gguf"), 60),
  ];

  it("finds the fixtures (set MINFER_FIXTURES when they are elsewhere)", () => {
    expect(haveFixtures, `no fixtures under ${FIXTURES}`).toBe(true);
  });

  subjects.forEach((make, index) => {
    const needsFixtures = index > 0;
    it.skipIf(needsFixtures && !haveFixtures)(
      `mutations of subject ${index}`,
      () => {
        const s = make();
        // The unmutated subject itself parses, or (cut short) fails cleanly.
        let base = "parses";
        try {
          parseGguf(s.bytes);
        } catch (e) {
          expect(e).toBeInstanceOf(GgufError);
          base = `${(e as GgufError).code} at ${(e as GgufError).offset}`;
        }
        console.log(
          `subject ${index}: ${s.name}, ${s.bytes.length} bytes (${base}), ${s.iterations} mutations`,
        );
        expect(s.fields.u64Fields.length, s.name).toBeGreaterThan(2);
        const failures = fuzz(s, index);
        expect(failures, `${s.name}:\n${failures.join("\n")}`).toEqual([]);
      },
      60_000,
    );
  });
});
