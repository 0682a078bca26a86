import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { fixtures, minfer } from "./test-helpers.js";

const here = dirname(fileURLToPath(import.meta.url));
const stories = join(fixtures, "models/stories260K.gguf");
// Token ids llama-server drew on the same file with the same seeds (provenance in the file).
const golden = JSON.parse(
  readFileSync(resolve(here, "../../models/test/stories260K.llamacpp.seeded.json"), "utf8"),
) as {
  prompt: string;
  n_predict: number;
  cases: { request: Record<string, number>; minfer_flags: string[]; ids: number[] }[];
};

// The sampler draws from std::mt19937 as libstdc++'s uniform distributions use it, each of
// llama.cpp's random samplers (the draw, XTC, mirostat) from its own generator, so a seed samples
// the same tokens as llama.cpp given the same logits.
describe("minfer run samples what llama.cpp samples with the same seed", () => {
  it.each(golden.cases.map((c) => [JSON.stringify(c.request), c] as const))("%s", async (_, c) => {
    const r = await minfer(
      "run",
      "-m",
      stories,
      "-p",
      golden.prompt,
      "-n",
      String(golden.n_predict),
      ...c.minfer_flags,
      "--ids",
    );
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(c.ids);
  });
});
