import { describe, expect, it } from "vitest";
import { Context } from "./context.js";
import { contextSize, DEFAULT_N_CTX } from "./context-size.js";
import { loadStories } from "./test-helpers.js";

describe("contextSize", () => {
  it("reads -c as llama.cpp does: unset is min(4096, trained), 0 is the trained context", () => {
    expect(DEFAULT_N_CTX).toBe(4096);
    expect(contextSize(undefined, 512)).toBe(512);
    expect(contextSize(undefined, 32768)).toBe(4096);
    expect(contextSize(0, 32768)).toBe(32768);
    expect(contextSize(100, 32768)).toBe(100);
  });

  it("is what a Context gets: nCtx 0 is the model's training context", async () => {
    const { model, dispose } = await loadStories();
    try {
      const ctx = new Context(model, { nCtx: 0 });
      expect(ctx.nCtx).toBe(model.hparams.nCtxTrain);
      ctx.dispose();
      const dflt = new Context(model);
      expect(dflt.nCtx).toBe(Math.min(4096, model.hparams.nCtxTrain));
      dflt.dispose();
    } finally {
      dispose();
    }
  });
});
