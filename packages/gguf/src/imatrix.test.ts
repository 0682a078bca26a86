import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { GgufError } from "./errors.js";
import { GgmlType } from "./ggml-types.js";
import { parseImatrix, readImatrix } from "./imatrix.js";
import { chooseTypes, llamaQuantTarget } from "./quantize-plan.js";
import { parseGguf } from "./read.js";
import { tensorBytes } from "./tensor-data.js";
import { GgufValueType } from "./value-types.js";
import { encodeGguf } from "./write.js";

const fixture = (name: string) => fileURLToPath(new URL(`./imatrix-fixtures/${name}`, import.meta.url));

function stats(v: Float32Array): { sum: number; min: number; max: number } {
  let sum = 0;
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const x of v) {
    sum += x;
    min = Math.min(min, x);
    max = Math.max(max, x);
  }
  return { sum, min, max };
}

describe("readImatrix on llama-imatrix's files", () => {
  it("reads the GGUF format: 14 entries whose means match llama-imatrix --show-statistics", async () => {
    const m = await readImatrix(fixture("tiny.imatrix.gguf"));
    expect(m.size).toBe(14);
    // [tensor, Σ(Act²), Min, Max] as llama-imatrix --show-statistics prints them.
    const expected: [string, number, number, number, number][] = [
      ["blk.0.attn_k.weight", 64, 62.08, 0.4465, 2.2606],
      ["blk.1.attn_k.weight", 64, 62.48, 0.346, 2.3494],
      ["blk.0.attn_output.weight", 64, 0.22, 0.0008, 0.0074],
      ["blk.1.ffn_gate.weight", 64, 63.3, 0.3435, 2.2291],
      ["blk.1.ffn_down.weight", 128, 0.02, 0, 0.0011],
    ];
    for (const [name, n, sum, min, max] of expected) {
      const v = m.get(name)!;
      expect(v, name).toBeInstanceOf(Float32Array);
      expect(v.length, name).toBe(n);
      const s = stats(v);
      expect(Math.abs(s.sum - sum), name).toBeLessThan(0.006);
      expect(Math.abs(s.min - min), name).toBeLessThan(0.00006);
      expect(Math.abs(s.max - max), name).toBeLessThan(0.00006);
    }
  });

  it("reads the legacy .dat format of the same run to the same means", async () => {
    const gguf = await readImatrix(fixture("tiny.imatrix.gguf"));
    const dat = await readImatrix(fixture("tiny.imatrix.dat"));
    expect([...dat.keys()].sort()).toEqual([...gguf.keys()].sort());
    for (const [name, v] of gguf) {
      const w = dat.get(name)!;
      expect(w.length).toBe(v.length);
      for (let j = 0; j < v.length; j++)
        expect(Math.abs(w[j]! - v[j]!)).toBeLessThanOrEqual(1e-6 * v[j]! + 1e-12);
    }
  });

  it("computes the GGUF means from the raw tensors: in_sum2 / counts", () => {
    const bytes = readFileSync(fixture("tiny.imatrix.gguf"));
    const m = parseImatrix(bytes);
    // Independent arithmetic: parse the file as a plain GGUF and divide.
    const sums = tensorF32(bytes, "blk.0.ffn_up.weight.in_sum2");
    const counts = tensorF32(bytes, "blk.0.ffn_up.weight.counts");
    expect(counts.length).toBe(1);
    expect(counts[0]).toBeGreaterThan(0);
    const v = m.get("blk.0.ffn_up.weight")!;
    for (let j = 0; j < v.length; j++) expect(v[j]).toBe(Math.fround(sums[j]! / counts[0]!));
  });

  it("names the file in I/O errors", async () => {
    await expect(readImatrix("/nonexistent/x.imatrix")).rejects.toMatchObject({ code: "IO_ERROR" });
  });
});

function tensorF32(bytes: Uint8Array, name: string): Float32Array {
  const file = parseGguf(bytes);
  const b = tensorBytes(bytes, file, name);
  return new Float32Array(new Uint8Array(b).buffer); // a copy: b may be a view into a pooled Buffer
}

/** A legacy .dat file of the given entries. */
function dat(
  entries: { name: string; calls: number; values: number[] }[],
  count = entries.length,
): Uint8Array {
  const parts: number[] = [];
  const i32 = (v: number) => {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setInt32(0, v, true);
    parts.push(...b);
  };
  i32(count);
  for (const e of entries) {
    const name = new TextEncoder().encode(e.name);
    i32(name.length);
    parts.push(...name);
    i32(e.calls);
    i32(e.values.length);
    const f = new Uint8Array(Float32Array.from(e.values).buffer);
    parts.push(...f);
  }
  return Uint8Array.from(parts);
}

function ggufImatrix(
  tensors: { name: string; type?: number; dims: number[]; values: number[] }[],
): Uint8Array {
  return encodeGguf(
    [{ key: "imatrix.chunk_count", type: GgufValueType.UINT32, value: 1 }],
    tensors.map((t) => ({
      name: t.name,
      type: t.type ?? GgmlType.F32,
      dims: t.dims,
      data: new Uint8Array(Float32Array.from(t.values).buffer),
    })),
  );
}

function codeOf(f: () => unknown): string | undefined {
  try {
    f();
  } catch (e) {
    if (e instanceof GgufError) return e.code;
    throw e;
  }
  return undefined;
}

describe("parseImatrix", () => {
  it("legacy: divides by the call count (a count of 0 keeps the values)", () => {
    const m = parseImatrix(
      dat([
        { name: "a.weight", calls: 4, values: [8, 4, 0, 2] },
        { name: "b.weight", calls: 0, values: [3, 5] },
      ]),
    );
    expect([...m.get("a.weight")!]).toEqual([2, 1, 0, 0.5]);
    expect([...m.get("b.weight")!]).toEqual([3, 5]);
  });

  it("legacy: rejects truncated, empty, negative and non-finite files", () => {
    const good = dat([{ name: "a.weight", calls: 1, values: [1, 2] }]);
    expect(codeOf(() => parseImatrix(good.subarray(0, good.length - 1)))).toBe("TRUNCATED");
    expect(codeOf(() => parseImatrix(good.subarray(0, 2)))).toBe("TRUNCATED");
    expect(codeOf(() => parseImatrix(dat([], 0)))).toBe("BAD_IMATRIX");
    expect(codeOf(() => parseImatrix(dat([{ name: "a", calls: 1, values: [] }])))).toBe("BAD_IMATRIX");
    expect(codeOf(() => parseImatrix(dat([{ name: "a", calls: 1, values: [1, -1] }])))).toBe("BAD_IMATRIX");
    expect(codeOf(() => parseImatrix(dat([{ name: "a", calls: 1, values: [Number.NaN] }])))).toBe(
      "BAD_IMATRIX",
    );
    expect(codeOf(() => parseImatrix(dat([{ name: "a", calls: -1, values: [1] }])))).toBe("BAD_IMATRIX");
    expect(
      codeOf(() =>
        parseImatrix(
          dat([
            { name: "a", calls: 1, values: [1] },
            { name: "a", calls: 1, values: [1] },
          ]),
        ),
      ),
    ).toBe("DUPLICATE_TENSOR");
  });

  it("GGUF: per-expert means, and 1 for an expert that saw nothing", () => {
    const m = parseImatrix(
      ggufImatrix([
        { name: "x.weight.in_sum2", dims: [2, 2], values: [4, 6, 9, 9] },
        { name: "x.weight.counts", dims: [1, 2], values: [2, 0] },
      ]),
    );
    expect([...m.get("x.weight")!]).toEqual([2, 3, 1, 1]);
  });

  it("GGUF: rejects a sum without a count, a count without a sum, non-F32, bad shapes, bad values", () => {
    const sum = { name: "x.weight.in_sum2", dims: [2], values: [1, 2] };
    const count = { name: "x.weight.counts", dims: [1], values: [1] };
    expect(codeOf(() => parseImatrix(ggufImatrix([sum])))).toBe("BAD_IMATRIX");
    expect(codeOf(() => parseImatrix(ggufImatrix([sum, count, { ...count, name: "y.counts" }])))).toBe(
      "BAD_IMATRIX",
    );
    expect(codeOf(() => parseImatrix(ggufImatrix([{ name: "w", dims: [2], values: [1, 2] }])))).toBe(
      "BAD_IMATRIX",
    );
    expect(
      codeOf(() =>
        parseImatrix(ggufImatrix([sum, { ...count, type: GgmlType.F16, dims: [2], values: [1] }])),
      ),
    ).toBe("BAD_IMATRIX");
    expect(codeOf(() => parseImatrix(ggufImatrix([{ ...sum, dims: [1, 2] }, count])))).toBe("BAD_IMATRIX");
    expect(
      codeOf(() => parseImatrix(ggufImatrix([{ ...sum, values: [1, Number.POSITIVE_INFINITY] }, count]))),
    ).toBe("BAD_IMATRIX");
    expect(codeOf(() => parseImatrix(ggufImatrix([sum, { ...count, values: [-2] }])))).toBe("BAD_IMATRIX");
    expect(parseImatrix(ggufImatrix([sum, count])).get("x.weight")).toEqual(Float32Array.of(1, 2));
  });
});

describe("the mixes' imatrix rules (llama-quantize's has_imatrix)", () => {
  // Eight layers: the first eighth is layer 0.
  const tensors = Array.from({ length: 8 }, (_, i) => ({
    name: `blk.${i}.ffn_down.weight`,
    dims: [512, 256],
  }));
  const down0 = (mix: string, imatrix: boolean) =>
    chooseTypes(tensors, llamaQuantTarget(mix), { layers: 8, heads: 8, kvHeads: 8, imatrix })[0]!.to.name;
  it("IQ4_XS / IQ4_NL: layer 0's ffn_down is Q5_K without an imatrix, the base type with one", () => {
    expect(down0("IQ4_XS", false)).toBe("Q5_K");
    expect(down0("IQ4_XS", true)).toBe("IQ4_XS");
    expect(down0("IQ4_NL", true)).toBe("IQ4_NL");
  });
  it("Q4_0 / Q5_0: layer 0's ffn_down is Q4_1 / Q5_1 with an imatrix", () => {
    expect(down0("Q4_0", false)).toBe("Q4_0");
    expect(down0("Q4_0", true)).toBe("Q4_1");
    expect(down0("Q5_0", true)).toBe("Q5_1");
  });
});
