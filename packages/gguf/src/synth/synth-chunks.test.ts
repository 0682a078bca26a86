import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { type SynthChunk, type SynthModel, synthChunk, synthesizeModel } from "../index.js";
import { SeededRandom } from "./rng.js";

async function bytesOf(m: SynthModel): Promise<Buffer[]> {
  const out: Buffer[] = [];
  for (const t of m.tensors) {
    const chunks: Uint8Array[] = [];
    for await (const c of (t.data as () => AsyncIterable<Uint8Array>)()) chunks.push(c);
    out.push(Buffer.concat(chunks));
  }
  return out;
}

/** Runs chunks "elsewhere": each finishes after a different delay, so they complete out of order. */
function scrambled(): { run: (c: SynthChunk) => Promise<Uint8Array>; calls: () => number } {
  let n = 0;
  const run = (c: SynthChunk) => {
    const delay = (n++ * 7) % 5;
    return new Promise<Uint8Array>((resolve) => setTimeout(() => resolve(synthChunk(c)), delay));
  };
  return { run, calls: () => n };
}

describe("SeededRandom.atNormal", () => {
  it("lands on the sample a sequential stream reaches, at even, odd and large indices", () => {
    const marks = [0, 1, 2, 3, 5, 64, 1001, 65536, 1048575, 1048576, 3000001];
    const seq = new SeededRandom(12345);
    const stream = new Float64Array(3000004);
    for (let i = 0; i < stream.length; i++) stream[i] = seq.normal();
    const want = marks.flatMap((m) => [stream[m], stream[m + 1], stream[m + 2]]);
    const got = marks.flatMap((m) => {
      const r = SeededRandom.atNormal(12345, m);
      return [r.normal(), r.normal(), r.normal()];
    });
    expect(got).toEqual(want);
  });

  it("refuses a negative or fractional index or skip count as INVALID_ARGUMENT", () => {
    expect(() => SeededRandom.atNormal(1, -1)).toThrow(
      expect.objectContaining({
        name: "GgufError",
        code: "INVALID_ARGUMENT",
        message: expect.stringMatching(/-1/),
      }),
    );
    expect(() => new SeededRandom(1).skip(1.5)).toThrow(
      expect.objectContaining({
        code: "INVALID_ARGUMENT",
        message: expect.stringMatching(/skip count .* 1\.5/),
      }),
    );
  });
});

describe("synthesizeModel with runChunk", () => {
  for (const type of ["q4_k", "f16", "q8_0"]) {
    it(`writes the same ${type} bytes as the serial path, chunks made in any order`, async () => {
      const opts = { preset: "small", arch: "qwen2", type, seed: 9 };
      const serial = await bytesOf(synthesizeModel(opts));
      // Chunks of 3 rows: most tensors have many, each starting deep inside its stream.
      const s = scrambled();
      const parallel = await bytesOf(
        synthesizeModel({ ...opts, chunkElements: 3 * 256, runChunk: s.run, lookahead: 6 }),
      );
      expect(s.calls()).toBeGreaterThan(100);
      expect(parallel.length).toBe(serial.length);
      for (let i = 0; i < serial.length; i++)
        expect(Buffer.compare(parallel[i]!, serial[i]!), `tensor ${i}`).toBe(0);
    });
  }

  it("matches the serial bytes whatever the chunk size, and when tensors are read out of order", async () => {
    const opts = { preset: "tiny", arch: "llama", type: "q8_0", seed: 2 };
    const serial = await bytesOf(synthesizeModel(opts));
    const hash = (b: Buffer[]) => createHash("sha256").update(Buffer.concat(b)).digest("hex");
    expect(hash(await bytesOf(synthesizeModel({ ...opts, chunkElements: 1 })))).toBe(hash(serial));
    const m = synthesizeModel({ ...opts, chunkElements: 128, runChunk: async (c) => synthChunk(c) });
    const order = m.tensors.map((_, i) => i).reverse();
    for (const i of order) {
      const chunks: Uint8Array[] = [];
      for await (const c of (m.tensors[i]!.data as () => AsyncIterable<Uint8Array>)()) chunks.push(c);
      expect(Buffer.compare(Buffer.concat(chunks), serial[i]!)).toBe(0);
    }
  });
});
