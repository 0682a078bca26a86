#!/usr/bin/env node
// The fused decode and prefill graphs another build of @minfer/models builds for the same files,
// node by node (op, name, parameters, input names, dtypes, shapes and strides, output layouts):
// a refactor of the graph builders that leaves every node as it was cannot change speed or values.
//
//   node packages/cli/bench/graph-diff.mjs OTHER_REPO MODEL.gguf…    (OTHER_REPO built: packages/*/dist)
import { join, resolve } from "node:path";
import { readGguf } from "@minfer/gguf";
import { fuse } from "@minfer/ir";
import * as mine from "@minfer/models";

const [other, ...files] = process.argv.slice(2);
if (!other || files.length === 0) {
  console.error("usage: graph-diff.mjs OTHER_REPO MODEL.gguf…");
  process.exit(2);
}
const theirs = await import(resolve(join(other, "packages/models/dist/index.js")));
const theirIr = await import(resolve(join(other, "packages/ir/dist/index.js")));
const layout = (t) => `${t.name}:${t.dtype}:${t.ne}:${t.nb}`;
const signature = (graph, fuseIt) =>
  fuseIt(graph).nodes.map((n) =>
    [
      n.op,
      n.name,
      JSON.stringify(n.params),
      n.inputs.map(layout).join(","),
      n.outputs.map((t) => `${t.dtype}:${t.ne}:${t.nb}`).join(","),
    ].join("|"),
  );
let differing = 0;
for (const path of files) {
  const file = await readGguf(path);
  const arch = file.metadata.architecture;
  for (const [label, shape] of [
    ["decode", { nTokens: 1, nKv: 4096, nOutputs: 1, nCtx: 4096, spans: true }],
    ["prefill", { nTokens: 64, nKv: 128, nOutputs: 1, nCtx: 4096 }],
  ]) {
    const sides = [
      [theirs, theirIr.fuse],
      [mine, fuse],
    ].map(([models, fuseIt]) => {
      const a = models.architecture(arch);
      const hp = a.loadHparams(file.metadata);
      return signature(
        a.buildGraph(hp, { ...shape, tensors: a.loadTensors(hp, file.tensors) }).graph,
        fuseIt,
      );
    });
    let d = 0;
    for (let i = 0; i < Math.max(sides[0].length, sides[1].length); i++) if (sides[0][i] !== sides[1][i]) d++;
    differing += d;
    console.log(
      `${path.split("/").pop()} (${arch}) ${label}: ${sides[0].length} / ${sides[1].length} nodes, ${d} differing`,
    );
  }
}
process.exit(differing ? 1 : 0);
