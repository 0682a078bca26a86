#!/usr/bin/env node
// Writes a GGUF's byte-level BPE vocabulary (tokenizer.ggml.tokens and .merges) as JSON, so that
// train.py --tokenizer-from can train a model on exactly the built-in model's tokenizer:
//   node examples/speculative-pair/vocab-from-gguf.mjs packages/cli/models/minfer-default-7m-f16.gguf .device/builtin-vocab.json
import { writeFileSync } from "node:fs";
import { readGgufSync } from "@minfer/gguf";

const [src, dst] = process.argv.slice(2);
if (!src || !dst) {
  console.error("usage: vocab-from-gguf.mjs MODEL.gguf OUT.json");
  process.exit(2);
}
const file = readGgufSync(src);
const array = (key) => {
  const v = file.metadata.get(key);
  if (!v) throw new Error(`${src} has no ${key}`);
  return [...v.value.items];
};
const model = file.metadata.get("tokenizer.ggml.model")?.value;
if (model !== "gpt2")
  throw new Error(`${src}: tokenizer.ggml.model is ${model}, not a byte-level BPE (gpt2)`);
const tokens = array("tokenizer.ggml.tokens");
const merges = array("tokenizer.ggml.merges");
writeFileSync(dst, `${JSON.stringify({ source: src, tokens, merges })}\n`);
console.log(
  `${dst}: ${tokens.length} tokens, ${merges.length} merges (last token ${JSON.stringify(tokens.at(-1))})`,
);
