// An error after a /v1/messages stream has started (the server shutting down mid-answer) arrives as
// Anthropic's `error` event, which the official SDK raises as its typed APIError with the error's body.

import Anthropic from "@anthropic-ai/sdk";
import { expect, it } from "vitest";
import { QUESTION } from "../client-fixtures.js";
import { start, useStories } from "../test-helpers.js";

const stories = useStories();

it("a shutdown mid-stream is an overloaded_error event the SDK raises", async () => {
  const run = await start({ model: stories(), parallel: 1, contextOptions: { nCtx: 512 } });
  try {
    const client = new Anthropic({ baseURL: run.url, apiKey: "none", maxRetries: 0 });
    const s = await client.messages.create({
      model: "m",
      max_tokens: 400,
      stream: true,
      messages: [{ role: "user", content: QUESTION }],
    });
    const seen: string[] = [];
    let closing: Promise<void> | undefined;
    const err = await (async () => {
      for await (const e of s) {
        seen.push(e.type);
        if (e.type === "content_block_delta") closing ??= run.server.close();
      }
    })().then(
      () => undefined,
      (e: unknown) => e,
    );
    await closing;
    expect(seen.slice(0, 3)).toEqual(["message_start", "content_block_start", "content_block_delta"]);
    expect(seen).not.toContain("message_stop");
    expect(err).toBeInstanceOf(Anthropic.APIError);
    const e = err as InstanceType<typeof Anthropic.APIError>;
    expect(e.error).toEqual({
      type: "error",
      error: { type: "overloaded_error", message: expect.stringContaining("shutting down") },
    });
    expect(e.type).toBe("overloaded_error");
  } finally {
    await run.server.close();
  }
});
