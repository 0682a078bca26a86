import { readFileSync } from "node:fs";
import { parseGguf, tensorBytes } from "@minfer/gguf";
import { DType, GraphBuilder, type Tensor } from "@minfer/ir";
import { weightTaps } from "@minfer/models";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collectImatrix, ImatrixAccumulator, type ImatrixResult } from "./imatrix.js";
import { FIXTURES, loadStories } from "./test-helpers.js";

/** llama-imatrix's file: name → sums / counts (see imatrix-fixtures/README.md). */
function readReference(path: string): Map<string, Float32Array> {
  const bytes = new Uint8Array(readFileSync(path));
  const file = parseGguf(bytes);
  const out = new Map<string, Float32Array>();
  for (const t of file.tensors) out.set(t.name, new Float32Array(tensorBytes(bytes, file, t).slice().buffer));
  return out;
}

const f32Bytes = (v: number[]) => new Uint8Array(Float32Array.from(v).buffer);

describe("ImatrixAccumulator", () => {
  // Two products over one activation [3 columns, 16 rows], one of them through a view of the weight
  // (as a fused QKV's rows), one product of a non-block weight, and one of too few rows.
  const b = new GraphBuilder();
  const w = b.weight("blk.0.attn_qkv.weight", DType.F32, [3, 6]);
  const x = b.input("x", DType.F32, [3, 16]);
  const small = b.input("small", DType.F32, [3, 15]);
  b.output(b.mulMat(b.view(w, [3, 2], undefined, 0, "q"), x));
  b.output(b.mulMat(b.view(w, [3, 2], undefined, 24, "k"), x));
  b.output(b.mulMat(b.weight("output.weight", DType.F32, [3, 4]), x));
  b.output(b.mulMat(b.weight("blk.0.ffn_down.weight", DType.F32, [3, 4]), small));
  const taps = weightTaps(b.build());
  const xv = Array.from({ length: 48 }, (_, i) => (i % 7) - 3 + i / 10);
  const values = new Map<Tensor, Uint8Array>([
    [x, f32Bytes(xv)],
    [small, f32Bytes(xv.slice(0, 45))],
  ]);
  const expected = [0, 1, 2].map((j) => {
    let s = 0;
    for (let r = 0; r < 16; r++) s += Math.fround(xv[r * 3 + j]!) ** 2;
    return s;
  });

  it("finds each (weight, activations) pair once, a view under its weight's name", () => {
    expect(taps.map((t) => t.weight)).toEqual([
      "blk.0.attn_qkv.weight",
      "output.weight",
      "blk.0.ffn_down.weight",
    ]);
  });

  it("sums x² per column and counts rows; skips output.weight and products of < 16 rows", () => {
    const acc = new ImatrixAccumulator();
    acc.add(taps, values);
    acc.add(taps, values);
    expect([...acc.entries.keys()]).toEqual(["blk.0.attn_qkv.weight"]);
    const e = acc.entries.get("blk.0.attn_qkv.weight")!;
    expect(Array.from(e.counts)).toEqual([32]);
    for (let j = 0; j < 3; j++) expect(e.sums[j]).toBeCloseTo(2 * expected[j]!, 9);
  });

  it("with processOutput also sums output.weight", () => {
    const acc = new ImatrixAccumulator(true);
    acc.add(taps, values);
    expect(Array.from(acc.entries.get("output.weight")!.sums)).toEqual(
      Array.from(acc.entries.get("blk.0.attn_qkv.weight")!.sums),
    );
  });

  it("sums each expert's rows apart (MUL_MAT_ID), slot by slot", () => {
    const g = new GraphBuilder();
    const experts = g.weight("blk.0.ffn_up_exps.weight", DType.F32, [2, 3, 4]);
    const xs = g.input("xs", DType.F32, [2, 2, 3]); // 2 columns, 2 slots, 3 tokens
    const ids = g.input("ids", DType.I32, [2, 3]);
    g.output(g.mulMatId(experts, xs, ids));
    const t = weightTaps(g.build());
    expect(t).toHaveLength(1);
    expect(t[0]!.nMat).toBe(4);
    const xvals = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
    const idv = new Uint8Array(Int32Array.from([0, 3, 3, 1, 0, 0]).buffer);
    const acc = new ImatrixAccumulator();
    acc.add(
      t,
      new Map<Tensor, Uint8Array>([
        [xs, f32Bytes(xvals)],
        [ids, idv],
      ]),
    );
    const e = acc.entries.get("blk.0.ffn_up_exps.weight")!;
    // token 0: slot 0 [1,2] → expert 0, slot 1 [3,4] → 3; token 1: [5,6] → 3, [7,8] → 1;
    // token 2: [9,10] → 0, [11,12] → 0.
    expect(Array.from(e.counts)).toEqual([3, 1, 0, 2]);
    expect(Array.from(e.sums)).toEqual([1 + 81 + 121, 4 + 100 + 144, 49, 64, 0, 0, 9 + 25, 16 + 36]);
  });

  it("refuses an expert id out of range", () => {
    const g = new GraphBuilder();
    const experts = g.weight("blk.0.ffn_up_exps.weight", DType.F32, [2, 3, 2]);
    const xs = g.input("xs", DType.F32, [2, 1, 1]);
    const ids = g.input("ids", DType.I32, [1, 1]);
    g.output(g.mulMatId(experts, xs, ids));
    const acc = new ImatrixAccumulator();
    expect(() =>
      acc.add(
        weightTaps(g.build()),
        new Map<Tensor, Uint8Array>([
          [xs, f32Bytes([1, 2])],
          [ids, new Uint8Array(Int32Array.from([2]).buffer)],
        ]),
      ),
    ).toThrow(/expert id 2/);
  });
});

describe("collectImatrix on stories260K against llama-imatrix", () => {
  let loaded: Awaited<ReturnType<typeof loadStories>>;
  let result: ImatrixResult;
  const reference = readReference(
    new URL("./imatrix-fixtures/stories260K.imatrix.gguf", import.meta.url).pathname,
  );
  beforeAll(async () => {
    loaded = await loadStories();
    const text = readFileSync(`${FIXTURES}/vocab/ggml-vocab-llama-spm.gguf.inp`, "utf8");
    const model = loaded.model;
    const tokens = await model.tokenizer.encodeAsync(text.endsWith("\n") ? text.slice(0, -1) : text, {
      addSpecial: true,
      parseSpecial: false,
    });
    const { vocab } = model.tokenizer;
    result = await collectImatrix(model, tokens, {
      chunkSize: 64,
      ...(vocab.addBos ? { bos: vocab.special.bos } : {}),
    });
  }, 120_000);
  afterAll(() => loaded?.dispose());

  it("has llama-imatrix's entries, the same row counts, and sums within 0.5%", () => {
    const names = [...reference.keys()].filter((n) => n.endsWith(".in_sum2")).map((n) => n.slice(0, -8));
    expect(names.length).toBe(35); // 5 layers × 7 products
    expect([...result.entries.keys()].sort()).toEqual(names.sort());
    expect(result.chunks).toBe(27);
    for (const name of names) {
      const e = result.entries.get(name)!;
      expect(Array.from(e.counts), name).toEqual(Array.from(reference.get(`${name}.counts`)!));
      const ref = reference.get(`${name}.in_sum2`)!;
      expect(e.sums.length, name).toBe(ref.length);
      let worst = 0;
      for (let j = 0; j < ref.length; j++)
        worst = Math.max(worst, Math.abs(e.sums[j]! - ref[j]!) / Math.max(1e-6, Math.abs(ref[j]!)));
      expect(worst, name).toBeLessThan(5e-3);
    }
  });

  it("prints llama-imatrix's perplexity (its last line: [27]203485.6767)", () => {
    expect(Math.abs(result.perplexity / 203485.6767 - 1)).toBeLessThan(2e-3);
  });
});
