// An error after a /v1/responses stream has started (the server shutting down mid-answer) arrives as the
// Responses API's `error` event (then `response.failed`), which the official SDK raises as an APIError.

import OpenAI from "openai";
import { expect, it } from "vitest";
import { QUESTION } from "../client-fixtures.js";
import { start, useStories } from "../test-helpers.js";

const stories = useStories();

it("a shutdown mid-stream is an error event the SDK raises", async () => {
  const run = await start({ model: stories(), parallel: 1, contextOptions: { nCtx: 512 } });
  try {
    const s = await run.client.responses.create({
      model: "m",
      input: QUESTION,
      max_output_tokens: 400,
      stream: true,
    });
    const seen: string[] = [];
    let closing: Promise<void> | undefined;
    const err = await (async () => {
      for await (const e of s) {
        seen.push(e.type);
        if (e.type === "response.output_text.delta") closing ??= run.server.close();
      }
    })().then(
      () => undefined,
      (e: unknown) => e,
    );
    await closing;
    expect(seen.slice(0, 3)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
    ]);
    expect(seen).not.toContain("response.completed");
    expect(seen).not.toContain("response.incomplete");
    expect(err).toBeInstanceOf(OpenAI.APIError);
    const e = err as InstanceType<typeof OpenAI.APIError>;
    expect(e.code).toBe("shutting_down");
    expect(e.message).toContain("shutting down");
  } finally {
    await run.server.close();
  }
});
