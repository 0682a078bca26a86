#!/usr/bin/env node
// The built-in default model of `minfer run` / `minfer chat`: the trained Hugging Face checkpoint
// converted by `minfer convert` to F16 (its greedy output is identical to transformers' and to the
// F32 file's; see reference-greedy.json), with a plain-text chat template added so `minfer chat`
// can talk to it — a demonstration format ("user: …" / "assistant: …" turns separated by
// <|endoftext|>), not an assistant's.
//
//   node examples/train-default-model/make-default-gguf.mjs HF_DIR [OUT.gguf]
//   (default OUT: packages/cli/models/minfer-default-7m-f16.gguf)
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { GgufValueType, readGguf, readTensorData, writeGguf } from "@minfer/gguf";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "../..");
const [hf, outArg] = process.argv.slice(2);
if (!hf) {
  console.error("usage: make-default-gguf.mjs HF_DIR [OUT.gguf]");
  process.exit(2);
}
const out = resolve(outArg ?? join(root, "packages/cli/models/minfer-default-7m-f16.gguf"));
const tmp = mkdtempSync(join(tmpdir(), "minfer-default-"));
const converted = join(tmp, "converted.gguf");
const r = spawnSync(
  process.execPath,
  [
    join(root, "packages/cli/dist/bin.js"),
    "convert",
    hf,
    "-o",
    converted,
    "--type",
    "f16",
    "--name",
    "minfer default 7M (Brown corpus)",
  ],
  { stdio: "inherit" },
);
if (r.status !== 0) process.exit(r.status ?? 1);

const TEMPLATE =
  "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}<|endoftext|>{% endfor %}" +
  "{% if add_generation_prompt %}assistant:{% endif %}";
const file = await readGguf(converted);
const metadata = [...file.metadata.entries()].filter((kv) => kv.key !== "tokenizer.chat_template");
metadata.push({ key: "tokenizer.chat_template", type: GgufValueType.STRING, value: TEMPLATE });
const tensors = [];
for (const t of file.tensors)
  tensors.push({ name: t.name, type: t.type, dims: [...t.dims], data: await readTensorData(file, t) });
await writeGguf(out, metadata, tensors);
rmSync(tmp, { recursive: true, force: true });
console.error(`wrote ${out}`);
