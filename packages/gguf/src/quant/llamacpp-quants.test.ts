// Byte-exact dequantization against llama.cpp on files llama.cpp made: llamacpp-quants.gguf holds
// one tensor per type as llama-quantize wrote it (from the built-in trained model, with an
// importance matrix where the type needs one), and llamacpp-quants.json the sha256 of ggml's own
// dequantization of each (ggml_get_type_traits(type)->to_float). Both are written by
// scripts/fidelity/llamacpp-dequant-vectors.mjs; this test never runs llama.cpp.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { ggmlTypeInfo } from "../ggml-types.js";
import type { GgufFile } from "../parse.js";
import { readGguf } from "../read.js";
import { readTensorData } from "../tensor-data.js";
import { dequantize } from "./index.js";

const FILE = fileURLToPath(new URL("./llamacpp-quants.gguf", import.meta.url));
const EXPECTED = JSON.parse(readFileSync(new URL("./llamacpp-quants.json", import.meta.url), "utf8")) as {
  types: Record<string, { ggml_type: string; elements: number; sha256: string; finite: boolean }>;
};
const TYPES = Object.keys(EXPECTED.types);

describe("dequantization of llama-quantize's files, against ggml's", () => {
  let file: GgufFile;
  beforeAll(async () => {
    file = await readGguf(FILE);
  });

  it("covers every type llama.cpp writes that minfer added", () => {
    expect([...TYPES].sort()).toEqual(
      [
        "IQ1_M",
        "IQ1_S",
        "IQ2_S",
        "IQ2_XS",
        "IQ2_XXS",
        "IQ3_S",
        "IQ3_XXS",
        "IQ4_NL",
        "IQ4_XS",
        "MXFP4",
        "Q2_K",
        "Q3_K",
        "TQ1_0",
        "TQ2_0",
      ].sort(),
    );
  });

  it.each(TYPES)("%s: the same float32 bits", async (name) => {
    const info = file.tensors.find((t) => t.name === name)!;
    expect(ggmlTypeInfo(info.type).name).toBe(name);
    const want = EXPECTED.types[name]!;
    expect(want.finite).toBe(true); // real blocks, not NaN/Inf scales that would hide differences
    const values = dequantize(info.type, await readTensorData(file, info), want.elements);
    const sha = createHash("sha256").update(
      new Uint8Array(values.buffer, values.byteOffset, values.byteLength),
    );
    expect(sha.digest("hex")).toBe(want.sha256);
  });
});
