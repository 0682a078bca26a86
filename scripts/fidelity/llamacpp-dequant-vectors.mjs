#!/usr/bin/env node
// Writes the expected data of packages/gguf/src/quant/llamacpp-quants.test.ts:
//   packages/gguf/src/quant/llamacpp-quants.gguf   one tensor per type, the bytes llama-quantize wrote
//   packages/gguf/src/quant/llamacpp-quants.json   llama.cpp's dequantization of each (sha256 of the
//                                                  float32 values, from ggml's own to_float)
// The source is the built-in model (packages/cli/models/minfer-default-7m-f16.gguf, a trained
// Qwen3): llama-imatrix computes an importance matrix on the repository's README.md + docs/*.md,
// llama-quantize --pure --imatrix makes one file per type (token embeddings Q8_0: they have no
// importance data), and blk.0.attn_k.weight (256 × 128) of each file is kept under the type's name.
// MXFP4 has no dense ftype: attn_k gets it through --tensor-type. ggml-dequant.c (beside this
// script) dequantizes the kept tensors with ggml_get_type_traits(type)->to_float.
//
//   node scripts/fidelity/llamacpp-dequant-vectors.mjs /tmp/llamacpp [/tmp/llamacpp/build-cpu/bin]
//
// (LLAMA = the llama.cpp source tree of shared/device/llamacpp/llama.cpp-src.tar.xz, built for the
// CPU as docs/FIDELITY.md shows; run after `pnpm --filter @minfer/gguf build`.)
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { GgufValueType, readGguf, readTensorData, writeGguf } from "../../packages/gguf/dist/index.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const [llama, binArg] = process.argv.slice(2);
if (!llama) {
  console.error("usage: llamacpp-dequant-vectors.mjs LLAMA_SOURCE_DIR [LLAMA_BIN_DIR]");
  process.exit(2);
}
const bin = binArg ?? join(llama, "build-cpu/bin");
const model = join(root, "packages/cli/models/minfer-default-7m-f16.gguf");
const outGguf = join(root, "packages/gguf/src/quant/llamacpp-quants.gguf");
const outJson = join(root, "packages/gguf/src/quant/llamacpp-quants.json");
const TENSOR = "blk.0.attn_k.weight";
// llama-quantize's ftype name for each type (--pure: every matrix gets the ftype's base type).
const FTYPES = {
  IQ1_S: "IQ1_S",
  IQ1_M: "IQ1_M",
  IQ2_XXS: "IQ2_XXS",
  IQ2_XS: "IQ2_XS",
  IQ2_S: "IQ2_M", // llama.cpp's IQ2_S ftype is mostly IQ2_XS
  IQ3_XXS: "IQ3_XXS",
  IQ3_S: "IQ3_S",
  IQ4_NL: "IQ4_NL",
  IQ4_XS: "IQ4_XS",
  TQ1_0: "TQ1_0",
  TQ2_0: "TQ2_0",
  Q2_K: "Q2_K",
  Q3_K: "Q3_K_S",
  MXFP4: "Q8_0", // with --tensor-type attn_k=mxfp4
};

const work = mkdtempSync(join(tmpdir(), "minfer-lq-"));
const run = (cmd, args) => {
  console.error(`$ ${cmd} ${args.join(" ")}`);
  return execFileSync(cmd, args, { encoding: "utf8", maxBuffer: 1 << 30, stdio: ["ignore", "pipe", "pipe"] });
};
try {
  const text = join(work, "text.txt");
  const docs = [
    "README.md",
    ...readdirSync(join(root, "docs"))
      .filter((f) => f.endsWith(".md"))
      .sort()
      .map((f) => `docs/${f}`),
  ];
  writeFileSync(text, docs.map((f) => readFileSync(join(root, f), "utf8")).join(""));
  const imatrix = join(work, "imatrix.gguf");
  run(join(bin, "llama-imatrix"), [
    "-m",
    model,
    "-f",
    text,
    "-o",
    imatrix,
    "-c",
    "128",
    "--chunks",
    "40",
    "-t",
    "2",
  ]);
  const kept = [];
  for (const [type, ftype] of Object.entries(FTYPES)) {
    const out = join(work, `${type}.gguf`);
    const extra = type === "MXFP4" ? ["--tensor-type", "attn_k=mxfp4"] : ["--imatrix", imatrix];
    run(join(bin, "llama-quantize"), [
      "--pure",
      ...extra,
      "--token-embedding-type",
      "q8_0",
      model,
      out,
      ftype,
      "2",
    ]);
    const file = await readGguf(out);
    const info = file.tensors.find((t) => t.name === TENSOR);
    const data = await readTensorData(file, info);
    kept.push({ name: type, type: info.type, dims: info.dims, data });
  }
  const metadata = [
    { key: "general.architecture", type: GgufValueType.STRING, value: "none" },
    {
      key: "general.description",
      type: GgufValueType.STRING,
      value: `${TENSOR} of minfer-default-7m-f16.gguf as llama-quantize (llama.cpp, shared/device/llamacpp) wrote it in each type; scripts/fidelity/llamacpp-dequant-vectors.mjs`,
    },
  ];
  await writeGguf(outGguf, metadata, kept);
  // ggml's dequantization of the written file.
  const driver = join(work, "ggml-dequant");
  run("cc", [
    "-O2",
    "-I",
    join(llama, "ggml/include"),
    join(root, "scripts/fidelity/ggml-dequant.c"),
    "-L",
    bin,
    "-lggml-base",
    `-Wl,-rpath,${bin}`,
    "-o",
    driver,
  ]);
  const expected = {};
  for (const line of run(driver, [outGguf]).trim().split("\n")) {
    const r = JSON.parse(line);
    const bytes = Buffer.from(r.f32, "hex");
    const f = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
    const finite = f.every(Number.isFinite);
    expected[r.name] = {
      ggml_type: r.type,
      elements: r.n,
      sha256: createHash("sha256").update(bytes).digest("hex"),
      finite,
    };
  }
  writeFileSync(
    outJson,
    `${JSON.stringify({ source: "scripts/fidelity/llamacpp-dequant-vectors.mjs", tensor: TENSOR, types: expected }, null, 2)}\n`,
  );
  console.error(`wrote ${outGguf} and ${outJson}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
