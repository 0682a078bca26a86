// The i-quant, ternary and MXFP4 dequantizers against known answers computed by llama.cpp's
// gguf-py (iquant-vectors.json, written by scripts/fidelity/iquant-vectors.py): every value must
// match bit for bit, signed zeros included.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { GgufError } from "../errors.js";
import { ggmlTypeInfo } from "../ggml-types.js";
import { DEQUANTIZE_TYPES, dequantize } from "./index.js";
import { lazyGrid } from "./iq-common.js";
import {
  IQ1S_GRID,
  IQ2S_GRID,
  IQ2XS_GRID,
  IQ2XXS_GRID,
  IQ3S_GRID,
  IQ3XXS_GRID,
  KSIGNS_IQ2XS,
  KVALUES_IQ4NL,
  KVALUES_MXFP4,
} from "./iq-grids.js";

interface TypeVectors {
  id: number;
  blockSize: number;
  typeSize: number;
  /** Each block's bytes, as hex. */
  blocks: string[];
  /** Each block's values, as the 8 hex digits of each f32 bit pattern (most significant first). */
  values: string[];
}

const vectors = JSON.parse(readFileSync(new URL("./iquant-vectors.json", import.meta.url), "utf8")) as {
  /** SHA-256 of each lookup table as gguf-py holds it, unpacked to one byte per value. */
  tables: Record<string, string>;
  types: Record<string, TypeVectors>;
};

const TYPES = [
  "IQ4_NL",
  "IQ4_XS",
  "IQ2_XXS",
  "IQ2_XS",
  "IQ2_S",
  "IQ3_XXS",
  "IQ3_S",
  "IQ1_S",
  "IQ1_M",
  "TQ1_0",
  "TQ2_0",
  "MXFP4",
] as const;

function hexBytes(hex: string): Uint8Array {
  return Uint8Array.from(hex.match(/../g) ?? [], (h) => Number.parseInt(h, 16));
}

/** All of a type's blocks, placed at byte offset 3 of a larger buffer (an unaligned view). */
function blocksOf(v: TypeVectors): Uint8Array {
  const bytes = v.blocks.map(hexBytes);
  const buf = new Uint8Array(3 + bytes.length * v.typeSize + 5);
  for (const [i, b] of bytes.entries()) buf.set(b, 3 + i * v.typeSize);
  return buf.subarray(3, 3 + bytes.length * v.typeSize);
}

/** The first value whose f32 bits differ from the expected ones, described; undefined if none. */
function firstMismatch(got: Float32Array, v: TypeVectors): string | undefined {
  const bits = new Uint32Array(got.buffer, got.byteOffset, got.length);
  const want = v.values.join("");
  if (got.length * 8 !== want.length) return `got ${got.length} values, expected ${want.length / 8}`;
  for (let k = 0; k < got.length; k++) {
    const w = Number.parseInt(want.slice(8 * k, 8 * k + 8), 16);
    if (bits[k] !== w) {
      const wantValue = new Float32Array(new Uint32Array([w]).buffer)[0];
      const block = Math.floor(k / v.blockSize);
      return `block ${block} element ${k % v.blockSize}: got ${got[k]} (0x${bits[k].toString(16)}), expected ${wantValue} (0x${w.toString(16)})`;
    }
  }
  return undefined;
}

const code = (f: () => unknown): string | undefined => {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(GgufError);
    return (e as GgufError).code;
  }
  return undefined;
};

describe("lookup tables", () => {
  const sha256 = (bytes: Uint8Array | Int8Array) =>
    createHash("sha256")
      .update(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length))
      .digest("hex");
  // The random blocks index only some grid entries; these compare every entry with gguf-py's copy.
  const tables: [string, () => Uint8Array | Int8Array][] = [
    ["iq2xxs_grid", lazyGrid(IQ2XXS_GRID, 8, 256)],
    ["iq2xs_grid", lazyGrid(IQ2XS_GRID, 8, 512)],
    ["iq2s_grid", lazyGrid(IQ2S_GRID, 8, 1024)],
    ["iq3xxs_grid", lazyGrid(IQ3XXS_GRID, 4, 256)],
    ["iq3s_grid", lazyGrid(IQ3S_GRID, 4, 512)],
    ["iq1s_grid", lazyGrid(IQ1S_GRID, 8, 2048)],
    ["ksigns_iq2xs", () => KSIGNS_IQ2XS],
    ["kvalues_iq4nl", () => KVALUES_IQ4NL],
    ["kvalues_mxfp4", () => KVALUES_MXFP4],
  ];
  for (const [name, table] of tables) {
    it(`${name} equals gguf-py's, entry for entry`, () => {
      expect(sha256(table())).toBe(vectors.tables[name]);
    });
  }

  it("ksigns_iq2xs gives every sign byte an even number of set bits, its low 7 bits the index", () => {
    KSIGNS_IQ2XS.forEach((s, i) => {
      expect(s & 127).toBe(i);
      let ones = 0;
      for (let b = s; b; b >>= 1) ones += b & 1;
      expect(ones % 2).toBe(0);
    });
  });
});

describe("i-quant, ternary and MXFP4 dequantizers against gguf-py", () => {
  it("has vectors for exactly these types, with ggml's block sizes", () => {
    expect(Object.keys(vectors.types).sort()).toEqual([...TYPES].sort());
    for (const name of TYPES) {
      const v = vectors.types[name];
      const info = ggmlTypeInfo(v.id);
      expect(info.name).toBe(name);
      expect([info.blockSize, info.typeSize]).toEqual([v.blockSize, v.typeSize]);
      expect(DEQUANTIZE_TYPES).toContain(name);
      for (const b of v.blocks) expect(b.length).toBe(2 * v.typeSize);
    }
  });

  for (const name of TYPES) {
    it(`${name}: every value bit-exact`, () => {
      const v = vectors.types[name];
      const n = v.blocks.length * v.blockSize;
      expect(firstMismatch(dequantize(v.id, blocksOf(v), n), v)).toBeUndefined();
    });

    it(`${name}: decodes each block independently of the others`, () => {
      const v = vectors.types[name];
      const last = v.blocks.length - 1;
      const one = dequantize(v.id, hexBytes(v.blocks[last]), v.blockSize);
      expect(firstMismatch(one, { ...v, values: [v.values[last]] })).toBeUndefined();
    });

    it(`${name}: refuses a partial block and a short buffer`, () => {
      const v = vectors.types[name];
      const data = blocksOf(v);
      const n = v.blocks.length * v.blockSize;
      expect(code(() => dequantize(v.id, data, n - 1))).toBe("INVALID_ARGUMENT");
      expect(code(() => dequantize(v.id, data, v.blockSize / 2))).toBe("INVALID_ARGUMENT");
      expect(code(() => dequantize(v.id, data.subarray(0, data.length - 1), n))).toBe("INVALID_ARGUMENT");
      expect(() => dequantize(v.id, data.subarray(0, data.length - 1), n)).toThrow(new RegExp(name));
      expect(dequantize(v.id, new Uint8Array(0), 0).length).toBe(0);
    });
  }
});
