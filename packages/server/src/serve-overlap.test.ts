import { expect, it } from "vitest";
import { type Running, start, useStories } from "./test-helpers.js";

// The same requests, sent at once, to a server whose batcher overlaps the token output with the
// next decode (the default) and to one that does not: every response body (the SSE chunks as the
// client reads them, the JSON answers) must be the same byte for byte, less ids and timestamps.
// Stop strings end streams mid-batch while the others go on; one client leaves mid-stream.

const stories = useStories();

const NO_EOS = { logit_bias: { "2": -100 } };
const SEEDED = { temperature: 0.8, top_k: 40, seed: 9, ...NO_EOS };

/** Requests for /v1/completions, given the greedy and the seeded texts of their prompts. */
function requests(greedy: (p: string) => string, seeded: (p: string) => string): Record<string, unknown>[] {
  const stopAt = (text: string, at: number, len: number) => text.slice(at, at + len);
  return [
    { prompt: "Once upon a time", max_tokens: 40, temperature: 0, ...NO_EOS, stream: true },
    {
      prompt: "Lily and her mom",
      max_tokens: 60,
      temperature: 0,
      stop: [stopAt(greedy("Lily and her mom"), 14, 5)],
      ...NO_EOS,
      stream: true,
      stream_options: { include_usage: true },
    },
    {
      prompt: "The big red ball",
      max_tokens: 60,
      ...SEEDED,
      n: 2,
      logprobs: 2,
      stop: [stopAt(seeded("The big red ball"), 9, 3), stopAt(seeded("The big red ball"), 30, 4)],
      stream: true,
      stream_options: { include_usage: true },
    },
    {
      prompt: "Tom had a dog",
      max_tokens: 50,
      temperature: 0,
      stop: [stopAt(greedy("Tom had a dog"), 5, 3)],
      ...NO_EOS,
    },
    { prompt: "One day", max_tokens: 30, ...SEEDED, n: 2, stop: [stopAt(seeded("One day"), 20, 3)] },
    {
      prompt: "Once upon a time",
      max_tokens: 30,
      temperature: 0,
      grammar: 'root ::= " " [a-z]+ " " [a-z]+ "."',
      stream: true,
    },
    { prompt: "Sam wanted to play", max_tokens: 2, temperature: 0, ...NO_EOS, stream: true },
    {
      prompt: "The sun was hot and",
      temperature: 0,
      max_tokens: 45,
      stop: ["\u00ff"],
      ...NO_EOS,
      stream: true,
    },
  ];
}

const normalize = (body: string) =>
  body
    .replace(/"id":"cmpl-[0-9a-f]+"/g, '"id":"cmpl-x"')
    .replace(/"created":\d+/g, '"created":0')
    .replace(/"timings":\{[^}]*\}/g, '"timings":{}'); // (milliseconds differ from run to run)

/** The response body as text; a streaming client that leaves after `leaveAfter` bytes of chunks. */
async function send(r: Running, body: Record<string, unknown>, leaveAfter?: number): Promise<string> {
  const abort = new AbortController();
  const res = await fetch(`${r.url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "m", ...body }),
    signal: abort.signal,
  });
  if (leaveAfter === undefined) return `${res.status} ${normalize(await res.text())}`;
  const reader = res.body!.getReader();
  let got = 0;
  while (got < leaveAfter) {
    const { value, done } = await reader.read();
    if (done) break;
    got += value.length;
  }
  abort.abort();
  return "left";
}

async function serve(overlapOutput: boolean) {
  const r = await start({
    model: stories(),
    parallel: 12,
    contextOptions: { nCtx: 12 * 128 },
    overlapOutput,
  });
  try {
    const text = async (prompt: string, sampling: Record<string, unknown>) => {
      const body = await (await r.post("/v1/completions", { prompt, max_tokens: 60, ...sampling })).json();
      return (body as { choices: { text: string }[] }).choices[0]!.text;
    };
    const prompts = ["Lily and her mom", "The big red ball", "Tom had a dog", "One day"];
    const greedy = new Map<string, string>();
    const seeded = new Map<string, string>();
    for (const p of prompts) {
      greedy.set(p, await text(p, { temperature: 0, ...NO_EOS }));
      seeded.set(p, await text(p, SEEDED));
    }
    const reqs = requests(
      (p) => greedy.get(p)!,
      (p) => seeded.get(p)!,
    );
    // Once the stops are known (the same in both servers), all at once, with one client leaving.
    const leaving = send(
      r,
      { prompt: "In the park there was", max_tokens: 60, ...NO_EOS, stream: true },
      400,
    );
    const bodies = await Promise.all(reqs.map((b) => send(r, b)));
    await leaving;
    // Then again, one at a time, reusing the slots' cells (usage counts them as cached).
    for (const b of reqs) bodies.push(await send(r, b));
    const health = await fetch(`${r.url}/health`);
    return { bodies, health: health.status, stops: reqs.map((b) => b.stop) };
  } finally {
    await r.server.close();
  }
}

it("answers the same requests byte for byte with the output overlapped and not", async () => {
  const off = await serve(false);
  const on = await serve(true);
  expect(on.stops).toEqual(off.stops);
  expect(on.health).toBe(200);
  for (let i = 0; i < off.bodies.length; i++) expect(on.bodies[i], `request ${i}`).toBe(off.bodies[i]);
  // The stop strings ended their streams early; the cells of the first wave were reused.
  const stopped = off.bodies.slice(0, 8).filter((b) => b.includes('"finish_reason":"stop"'));
  expect(stopped.length).toBeGreaterThanOrEqual(4);
  expect(off.bodies.slice(8).some((b) => /"cached_tokens":[1-9]/.test(b))).toBe(true);
});
