#!/usr/bin/env node
// Lists a GGUF model's tensors with @minfer/gguf alone: node list-tensors.mjs MODEL.gguf
import { readGguf } from "@minfer/gguf";

const path = process.argv[2];
if (!path) {
  console.error("usage: node list-tensors.mjs MODEL.gguf");
  process.exit(2);
}
const model = await readGguf(path); // reads the header only, never the weights
console.log(
  `${path}: ${model.metadata.optString("general.architecture") ?? "?"}, ${model.tensors.length} tensors`,
);
for (const t of model.tensors) {
  console.log(`${t.name.padEnd(32)} ${t.typeName.padEnd(6)} [${t.dims.join(", ")}]  ${t.byteSize} bytes`);
}
