#!/usr/bin/env node
// A text generator built from minfer's layer packages by hand, without @minfer/engine: read the
// GGUF, build the tokenizer, check the model's tensors, map the weights onto the CPU device, keep
// a KV cache, build one decode graph per shape, run it, take the argmax, repeat.
//
//   node custom-engine.mjs [MODEL.gguf] [PROMPT]   (default: stories260K from MINFER_FIXTURES, else
//                                                  ../shared/fixtures beside the repository)
//   node custom-engine.mjs [MODEL.gguf] --check[=GOLDEN.json]
//       also compares with llama.cpp's greedy output for "Once upon a time" (default: the golden
//       in packages/models/test; pass its path when the example is copied out of the repository)
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { backend as cpu } from "@minfer/backend-cpu";
import { readGguf } from "@minfer/gguf";
import { DType } from "@minfer/ir";
import { KvCache } from "@minfer/kvcache";
import { architecture } from "@minfer/models";
import { GraphCache, Scheduler } from "@minfer/scheduler";
import { Tokenizer } from "@minfer/tokenizer";

const here = dirname(fileURLToPath(import.meta.url));
const fixtures = process.env.MINFER_FIXTURES ?? resolve(here, "../../../shared/fixtures");
const args = process.argv.slice(2).filter((a) => !a.startsWith("--check"));
const checkArg = process.argv.find((a) => a === "--check" || a.startsWith("--check="));
const check = checkArg !== undefined;
const goldenPath = checkArg?.startsWith("--check=")
  ? resolve(checkArg.slice("--check=".length))
  : resolve(here, "../../packages/models/test/stories260K.llamacpp.golden.json");
const path = args[0] ?? resolve(fixtures, "models/stories260K.gguf");
const prompt = args[1] ?? "Once upon a time";
const nCtx = 256;
const steps = 64;

// 1. The file: header, tokenizer, architecture, hyperparameters, checked tensors.
const file = await readGguf(path);
const tokenizer = Tokenizer.fromMetadata(file.metadata);
const arch = architecture(file.metadata.architecture);
const hp = arch.loadHparams(file.metadata);
const tensors = arch.loadTensors(hp, file.tensors);

// 2. A CPU device; the weights are mapped from the file in place.
const runtime = await cpu.devices()[0].init({ threads: 2 });
const weights = new Map();
for (const info of file.tensors) {
  const part = file.parts[info.part];
  const buffer = await runtime.mapFile(
    part.path ?? path,
    part.dataOffset + info.offset,
    info.byteSize,
    info.name,
  );
  weights.set(info.name, { buffer });
}

// 3. The KV cache: bookkeeping from @minfer/kvcache, K/V rows in buffers the graphs name as state.
const kv = new KvCache({ nCtx, dtype: "f16" });
const build = (nTokens, nKv) =>
  arch.buildGraph(hp, { nTokens, nKv, nOutputs: 1, nCtx, kvDtype: DType.F16, tensors });
const states = new Map();
for (const t of build(1, nCtx).graph.tensors)
  if (t.kind === "state")
    states.set(t.source ?? t.name, { buffer: runtime.allocate(t.nb[1] * t.ne[1], t.name) });

// 4. A scheduler with its arena reserved for the largest graph, and a cache of prepared graphs.
const scheduler = new Scheduler({ runtimes: [runtime], weights, states });
scheduler.reserve([build(64, nCtx).graph]);
const built = new Map();
const graphs = new GraphCache({
  build: ({ nTokens, nKv }) => {
    const b = build(nTokens, nKv);
    built.set(b.graph, b);
    return b.graph;
  },
  prepare: (g) => scheduler.prepare(g),
});

/** Runs `tokens` (≤ 64) of sequence 0 and returns the last token's logits. */
async function decode(tokens) {
  const p0 = kv.seqPosMax(0) + 1;
  const batch = tokens.map((_, i) => ({ pos: p0 + i, seqIds: [0] }));
  const slot = kv.allocate(batch);
  if (slot.status !== "ok") throw new Error(`the context of ${nCtx} tokens is full`);
  const nKv = Math.min(nCtx, Math.ceil(kv.window() / 32) * 32);
  const step = graphs.get({ nTokens: tokens.length, nKv });
  // The graph's inputs by name: the step's own and the constants the model gives (llama3 RoPE
  // factors computed from the keys, when the file has them).
  const { inputs, constants, logits } = built.get(step.graph);
  const values = {
    tokens: Int32Array.from(tokens),
    positions: Int32Array.from(batch, (t) => t.pos),
    cells: slot.cells,
    mask: kv.mask(batch, slot.cells, { nKv }),
    out_ids: Int32Array.of(tokens.length - 1),
  };
  const data = new Map(Object.entries(inputs).map(([name, t]) => [t, values[name] ?? constants.get(name)]));
  return (await step.executor.run(data)).float32(logits);
}

const argmax = (v) => v.reduce((best, x, i) => (x > v[best] ? i : best), 0);

// 5. Greedy generation, streaming text as it completes.
const ids = tokenizer.encode(prompt, { addSpecial: true });
const out = [];
const text = tokenizer.streamDecoder();
process.stdout.write(prompt);
let logits = await decode(ids);
for (let i = 0; i < steps; i++) {
  const id = argmax(logits);
  if (tokenizer.isEog(id)) break;
  out.push(id);
  process.stdout.write(text.push(id));
  logits = await decode([id]);
}
process.stdout.write(`${text.flush()}\n`);

scheduler.dispose();
for (const s of states.values()) s.buffer.dispose();
for (const w of weights.values()) w.buffer.dispose();
runtime.dispose();

if (check) {
  // The same continuation as llama.cpp's (the golden the engine's test uses, made by node-llama-cpp).
  const golden = JSON.parse(readFileSync(goldenPath, "utf8"));
  const want = golden.ids.slice(0, out.length);
  if (prompt !== golden.prompt || JSON.stringify(out) !== JSON.stringify(want) || out.length < steps) {
    console.error(
      `custom-engine: differs from llama.cpp's greedy continuation:\n ours ${out}\n want ${want}`,
    );
    process.exit(1);
  }
  console.error(`custom-engine: ${out.length} tokens identical to llama.cpp's greedy continuation`);
}
