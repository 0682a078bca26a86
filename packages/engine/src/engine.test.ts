import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { backend as cpuBackend } from "@minfer/backend-cpu";
import type { DeviceRuntime } from "@minfer/ir";
import { argmax } from "@minfer/sampler";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Context } from "./context.js";
import { greedy } from "./generate.js";
import { Model } from "./model.js";

const FIXTURES =
  process.env.MINFER_FIXTURES ?? fileURLToPath(new URL("../../../../shared/fixtures", import.meta.url));
const MODEL = `${FIXTURES}/models/stories260K.gguf`;
const GOLDEN = new URL("../../models/test/stories260K.llamacpp.golden.json", import.meta.url);
const have = existsSync(MODEL) && existsSync(GOLDEN);

interface Golden {
  prompt: string;
  promptIds: number[];
  ids: number[];
}

describe.skipIf(!have)("stories260K on the CPU backend", () => {
  const golden = have ? (JSON.parse(readFileSync(GOLDEN, "utf8")) as Golden) : undefined;
  let runtime: DeviceRuntime;
  let model: Model;

  beforeAll(async () => {
    runtime = await cpuBackend.devices()[0]!.init({ threads: 2 });
    model = await Model.load(MODEL, { runtime });
  });
  afterAll(() => {
    model?.dispose();
    runtime?.dispose();
  });

  it("maps the weights in place and tokenizes the prompt with BOS as llama.cpp does", async () => {
    expect(model.weights.size).toBe(model.file.tensors.length);
    // One mapping of the file's tensor data, each weight at its offset.
    expect(new Set([...model.weights.values()].map((w) => w.buffer)).size).toBe(1);
    // Mapped from the file, read-only: a write is refused rather than copied.
    const [first] = model.weights.values();
    await expect(runtime.write(first!.buffer, 0, new Uint8Array(4))).rejects.toMatchObject({
      code: "READ_ONLY",
    });
    expect(model.tokenizer.encode(golden!.prompt, { addSpecial: true })).toEqual(golden!.promptIds);
  });

  it("greedy 200 tokens equal llama.cpp's greedy output", async () => {
    const ctx = new Context(model, { nCtx: 256 });
    try {
      const ids = await greedy(ctx, golden!.promptIds, 200);
      const first = ids.findIndex((id, i) => id !== golden!.ids[i]);
      if (first >= 0) {
        // Report the first differing step and the top-2 logit gap there.
        const replay = new Context(model, { nCtx: 256 });
        try {
          let logits = await replay.eval(golden!.promptIds);
          for (let i = 0; i < first; i++) logits = await replay.eval([ids[i]!]);
          const sorted = [...logits].sort((a, b) => b - a);
          console.log(`first difference at step ${first}: top-2 gap ${sorted[0]! - sorted[1]!}`);
        } finally {
          replay.dispose();
        }
      }
      expect(ids).toEqual(golden!.ids);
      expect(ctx.stats().graphs.builds).toBeLessThanOrEqual(1 + Math.ceil(256 / 32));
    } finally {
      ctx.dispose();
    }
  });

  it("prefill at once and token by token give the same next-token logits", async () => {
    const prompt = golden!.promptIds;
    const a = new Context(model, { nCtx: 64 });
    const b = new Context(model, { nCtx: 64 });
    try {
      const once = await a.eval(prompt);
      let byToken: Float32Array = new Float32Array();
      for (const id of prompt) byToken = await b.eval([id]);
      expect(byToken.length).toBe(once.length);
      let maxDiff = 0;
      for (let i = 0; i < once.length; i++) maxDiff = Math.max(maxDiff, Math.abs(once[i]! - byToken[i]!));
      expect(maxDiff).toBeLessThanOrEqual(1e-4);
      expect(argmax(once)).toBe(golden!.ids[0]);
    } finally {
      a.dispose();
      b.dispose();
    }
  });

  it("refuses a decode that does not fit in the context, with a code, and keeps what was there", async () => {
    const ctx = new Context(model, { nCtx: 8 });
    try {
      await ctx.eval(golden!.promptIds);
      await expect(ctx.eval([1, 2, 3, 4])).rejects.toMatchObject({
        name: "EngineError",
        code: "NO_KV_ROOM",
      });
      await expect(ctx.eval([])).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      expect(ctx.stats().used).toBe(golden!.promptIds.length);
    } finally {
      ctx.dispose();
    }
  });
});
