#!/usr/bin/env node
// Packs what the GPU run needs (scripts/device/cuda-run.sh): the CUDA smoke run, the standalone
// op-conformance run, the fidelity run and the `minfer` CLI, every workspace dependency inlined
// but the backends, which go to node_modules/ with their addons (where the registry finds them),
// and the fixtures the runs read (fixtures/):
//   turbo run build && node scripts/device/bundle-cuda.mjs [OUT_DIR]     (default: .device/cuda)
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleForNode } from "./bundle-node.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const out = resolve(process.argv[2] ?? join(root, ".device", "cuda"));
const addon = join(root, "packages/backend-cuda/build/minfer_cuda.node");
if (!existsSync(addon)) {
  console.error(
    `bundle-cuda: ${addon} is missing; build it first (pnpm --filter @minfer/backend-cuda build)`,
  );
  process.exit(1);
}
rmSync(out, { recursive: true, force: true });
const backends = await bundleForNode(
  {
    "cuda-smoke": join(root, "scripts/device/cuda-smoke.ts"),
    conformance: join(root, "scripts/device/conformance.ts"),
    "cuda-fidelity": join(root, "scripts/device/cuda-fidelity.ts"),
    "cuda-profile": join(root, "scripts/device/cuda-profile.ts"),
    "cuda-microbench": join(root, "scripts/device/cuda-microbench.ts"),
    "cuda-mmq-bench": join(root, "scripts/device/cuda-mmq-bench.ts"),
    "cuda-serve-step": join(root, "scripts/device/cuda-serve-step.ts"),
    "hf-archs": join(root, "scripts/device/hf-archs.ts"),
    "hf-bert": join(root, "scripts/device/hf-bert.ts"),
    // issue 26: whether a verification leaves later logits as one-token decoding (CPU and CUDA)
    "spec-invariance": join(root, "packages/cli/bench/spec-invariance.mjs"),
    // The CLI (bench, serve, gguf synth) with the CUDA backend inlined.
    bin: join(root, "packages/cli/src/bin.ts"),
    "quantize-worker": join(root, "packages/cli/src/quantize-worker.ts"),
  },
  join(out, "dist"),
);
console.error(`bundle-cuda: backends: ${backends.join("; ")}`);
// hf-archs and hf-bert read the tiny checkpoints' cases beside themselves (import.meta.url), as the
// CLI's tests do.
for (const f of ["tiny-configs.json", "tiny-bert-configs.json"])
  copyFileSync(join(root, "packages/cli/src/convert", f), join(out, "dist", f));
// The CLI reads its version from ../package.json.
const cliPackage = JSON.parse(readFileSync(join(root, "packages/cli/package.json"), "utf8"));
writeFileSync(
  join(out, "package.json"),
  `${JSON.stringify({ name: "minfer", version: cliPackage.version, type: "module", private: true }, null, 2)}\n`,
);
// Fixtures (read-only inputs; never committed here): stories260K, its llama.cpp golden
// continuation, the qwen2 vocabulary for synthetic models, the shipped default model.
const fixtures = resolve(process.env.MINFER_FIXTURES ?? join(root, "..", "shared", "fixtures"));
mkdirSync(join(out, "fixtures", "vocab"), { recursive: true });
for (const [from, to] of [
  [join(fixtures, "models/stories260K.gguf"), "stories260K.gguf"],
  [join(fixtures, "vocab/ggml-vocab-qwen2.gguf"), "ggml-vocab-qwen2.gguf"],
  [join(root, "packages/models/test/stories260K.llamacpp.golden.json"), "stories260K.golden.json"],
  // the shipped trained model (Qwen3 7M, F16): quantized there for a fidelity check on real weights
  [join(root, "packages/cli/models/minfer-default-7m-f16.gguf"), "minfer-default-7m-f16.gguf"],
  // the vocabularies of the tiny checkpoints of hf-archs (packages/cli/src/convert/tiny-configs.json)
  ...["llama-spm", "phi-3", "gpt-2"].map((v) => [
    join(fixtures, `vocab/ggml-vocab-${v}.gguf`),
    `vocab/ggml-vocab-${v}.gguf`,
  ]),
])
  copyFileSync(from, join(out, "fixtures", to));
console.error(`bundle-cuda: ${out}`);
