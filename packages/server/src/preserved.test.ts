import { Sampler } from "@minfer/sampler";
import { expect, it } from "vitest";
import { Batcher } from "./batcher.js";
import { preservedTokens } from "./preserved.js";
import { useStories } from "./test-helpers.js";

// A chat format's markers that the vocabulary holds as control tokens are shown in the generated
// text (llama.cpp's preserved tokens), so that the call and reasoning parsers see them; other
// control tokens still render as nothing.

const stories = useStories();

it("takes the markers that are single control tokens of the vocabulary, and only those", () => {
  const tok = stories().tokenizer;
  // stories260K's vocabulary: <s> (1) and </s> (2) are control tokens; "<tool_call>" is several.
  expect(tok.encode("<tool_call>", { addSpecial: false, parseSpecial: true }).length).toBeGreaterThan(1);
  expect(preservedTokens(tok, ["<s>", "<tool_call>", "</s>"])).toEqual(new Set([1, 2]));
  expect(preservedTokens(tok, ["<tool_call>", "[TOOL_CALLS]"])).toBeUndefined();
});

it("a job's preserved control tokens appear in its text; without, they render as nothing", async () => {
  const b = new Batcher(stories(), { parallel: 1, ctxPerSlot: 64, batchSize: 64, queueSize: 4 });
  try {
    const ids = stories().tokenizer.encode("Once upon a time", { addSpecial: true, parseSpecial: false });
    // The logit bias makes <s> (a control token, not end of generation) every generated token.
    const run = async (preserve?: ReadonlySet<number>) => {
      let streamed = "";
      const r = await b.submit({
        ids,
        sampler: new Sampler({ temperature: 0, logitBias: { 1: 100 } }),
        maxTokens: 3,
        stop: [],
        ...(preserve ? { preserve } : {}),
        onToken: (e) => {
          streamed += e.text;
        },
      });
      expect(r.tokens).toEqual([1, 1, 1]);
      expect(streamed).toBe(r.text);
      return r.text;
    };
    expect(await run()).toBe("");
    expect(await run(new Set([1]))).toBe("<s><s><s>");
  } finally {
    await b.close();
  }
});
