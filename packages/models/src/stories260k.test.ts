import { existsSync, readFileSync } from "node:fs";
import { backend as cpuBackend } from "@minfer/backend-cpu";
import { readGguf, readTensorData } from "@minfer/gguf";
import type { BackendEntry } from "@minfer/ir";
import { KvCache } from "@minfer/kvcache";
import { referenceBackend, Scheduler, type TensorBinding } from "@minfer/scheduler";
import { describe, expect, it } from "vitest";
import { architecture } from "./registry.js";

const DIR = new URL("../../../../shared/fixtures/models/", import.meta.url);
const MODEL = new URL("stories260K.gguf", DIR);
const REFERENCE = new URL("stories260K.greedy-reference.json", DIR);
const have = existsSync(MODEL) && existsSync(REFERENCE);

interface Reference {
  prompt_ids_with_bos: number[];
  last_prompt_position_top5: { id: number; logit: number }[];
}

/** One prefill of the prompt on a backend's first device: the logits of the last prompt token. */
async function prefillLastLogits(entry: BackendEntry, ids: readonly number[]): Promise<Float32Array> {
  const file = await readGguf(MODEL.pathname);
  const mod = architecture(file.metadata.architecture);
  const hp = mod.loadHparams(file.metadata);
  const tensors = mod.loadTensors(hp, file.tensors);
  const n = ids.length;
  const nCtx = 8;

  const kv = new KvCache({ nCtx, nSeqMax: 1, dtype: "f32" });
  const batch = ids.map((_, pos) => ({ pos, seqIds: [0] }));
  const slot = kv.allocate(batch);
  if (slot.status !== "ok") throw new Error("no KV slot");
  const nKv = kv.window();
  const mask = kv.mask(batch, slot.cells, { nKv, dtype: "f32" });

  const { graph, inputs, logits } = mod.buildGraph(hp, { nTokens: n, nKv, nOutputs: 1, nCtx, tensors });
  const runtime = await entry.devices()[0]!.init();
  try {
    const weights = new Map<string, TensorBinding>();
    for (const t of tensors.byName.values()) {
      const data = await readTensorData(file, t.name);
      const buffer = runtime.allocate(data.byteLength, t.name);
      await runtime.write(buffer, 0, data);
      weights.set(t.name, { buffer });
    }
    const states = new Map<string, TensorBinding>();
    for (const t of graph.tensors.filter((x) => x.kind === "state")) {
      const bytes = t.nb[1] * t.ne[1];
      states.set(t.source ?? t.name, { buffer: runtime.allocate(bytes, t.name) });
    }
    const scheduler = new Scheduler({ runtimes: [runtime], weights, states });
    const step = scheduler.prepare(graph);
    const result = await step.executor.run(
      new Map<(typeof graph.tensors)[number], ArrayBufferView>([
        [inputs.tokens, Int32Array.from(ids)],
        [inputs.positions, Int32Array.from(batch, (t) => t.pos)],
        [inputs.cells, slot.cells],
        [inputs.mask, mask],
        [inputs.out_ids, Int32Array.of(n - 1)],
      ]),
    );
    const out = result.float32(logits);
    scheduler.dispose();
    return out;
  } finally {
    runtime.dispose();
  }
}

function top5(logits: Float32Array): { id: number; logit: number }[] {
  return [...logits]
    .map((logit, id) => ({ id, logit }))
    .sort((a, b) => b.logit - a.logit)
    .slice(0, 5);
}

describe.skipIf(!have)("stories260K (llama, F32) prefill against the greedy reference", () => {
  const ref = have ? (JSON.parse(readFileSync(REFERENCE, "utf8")) as Reference) : undefined;

  it.each([
    ["reference", () => referenceBackend()],
    ["cpu", () => cpuBackend],
  ] as const)("%s device: top-5 ids exact, logits within 1e-3", async (_name, entry) => {
    const logits = await prefillLastLogits(entry(), ref!.prompt_ids_with_bos);
    expect(logits.length).toBe(512);
    const got = top5(logits);
    expect(got.map((t) => t.id)).toEqual(ref!.last_prompt_position_top5.map((t) => t.id));
    for (const [i, t] of ref!.last_prompt_position_top5.entries())
      expect(Math.abs(got[i]!.logit - t.logit)).toBeLessThanOrEqual(1e-3);
  });
});
