// llama-server's telemetry on a streamed /v1/responses request, as its chat streams carry it:
// `return_progress` sends `prompt_progress` on extra response.in_progress events while the prompt is
// read (one before, then one a batch), `timings_per_token` puts the timings so far on each token's
// last event, and the closing event carries the whole request's timings (always, as llama-server's).

import { afterAll, beforeAll, expect, it } from "vitest";
import { type Running, start, useStories } from "../test-helpers.js";

const stories = useStories();
let r: Running;

beforeAll(async () => {
  r = await start({ model: stories(), parallel: 1, contextOptions: { nCtx: 512 }, batchSize: 16 });
});

afterAll(async () => {
  await r?.server.close();
});

// biome-ignore lint/suspicious/noExplicitAny: the events are read loosely, field by field
type Loose = Record<string, any>;

/** The data of every event of a streamed /v1/responses request. */
async function events(body: Record<string, unknown>): Promise<Loose[]> {
  const res = await r.post("/v1/responses", { input: "This is a test. ".repeat(6), stream: true, ...body });
  expect(res.status).toBe(200);
  return (await res.text())
    .split("\n\n")
    .filter((e) => e.includes("data: "))
    .map((e) => JSON.parse(e.slice(e.indexOf("data: ") + 6)) as Loose);
}

it("return_progress and timings_per_token: progress on in_progress events, timings on the deltas and the end", async () => {
  const es = await events({ max_output_tokens: 4, return_progress: true, timings_per_token: true });
  const withProgress = es.filter((e) => e.prompt_progress);
  for (const e of withProgress) expect(e.type).toBe("response.in_progress");
  const progress = withProgress.map((e) => e.prompt_progress);
  const { total, cache } = progress[0];
  // (one report before the prompt is read, the cached prefix counted read, then one a batch of 16)
  expect(progress.length).toBe(1 + Math.ceil((total - cache) / 16));
  expect(progress[0].processed).toBe(cache);
  expect(progress.at(-1).processed).toBe(total);
  const deltas = es.filter((e) => e.type === "response.output_text.delta");
  expect(deltas.length).toBeGreaterThan(0);
  for (const d of deltas) {
    expect(d.timings.predicted_n).toBeGreaterThan(0);
    expect(d.timings).toHaveProperty("prompt_per_second");
    expect(d.timings).toHaveProperty("predicted_per_second");
  }
  const last = es.at(-1)!;
  expect(["response.completed", "response.incomplete"]).toContain(last.type);
  expect(last.timings.predicted_n).toBe(last.response.usage.output_tokens);
  expect(last.timings.prompt_n + last.timings.cache_n).toBe(total);
  expect(es.map((e) => e.sequence_number)).toEqual(es.map((_, i) => i));
  // (the ordinary events before the progress ones: created, then in_progress without progress)
  expect(es.slice(0, 2).map((e) => [e.type, "prompt_progress" in e])).toEqual([
    ["response.created", false],
    ["response.in_progress", false],
  ]);
});

it("without them: no progress and no timings on the deltas, the closing event's timings still", async () => {
  const es = await events({ max_output_tokens: 4 });
  expect(es.some((e) => "prompt_progress" in e)).toBe(false);
  expect(es.slice(0, -1).some((e) => "timings" in e)).toBe(false);
  const last = es.at(-1)!;
  expect(last.timings.predicted_n).toBe(last.response.usage.output_tokens);
  // (sequence numbers run on across every event)
  expect(es.map((e) => e.sequence_number)).toEqual(es.map((_, i) => i));
});
