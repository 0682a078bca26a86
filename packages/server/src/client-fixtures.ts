import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model } from "@minfer/engine";
import type { DeviceRuntime } from "@minfer/ir";
import { afterAll, afterEach, beforeAll, expect } from "vitest";
import { z } from "zod";
import { IGNORED_FIELDS_HEADER } from "./index.js";
import { cpuRuntime, type Running, STORIES, start, writeQwen3 } from "./test-helpers.js";

// Shared by the tests that drive the server through third-party clients (the Vercel AI SDK,
// LangChain): two servers that require an API key, the schemas the tests ask for, and the
// reference answers, made with plain fetch so they do not depend on the client under test.

export const API_KEY = "sk-client-test";

export interface ClientServers {
  /** stories260K (no chat template of its own: the server chats in ChatML), 2 slots of 512. */
  stories: Running;
  /** A tiny Qwen3 with the real Qwen3 template, whose Hermes tool format gives tool calls. */
  qwen: Running;
}

/** Starts both servers in beforeAll, closes them in afterAll; call the getter inside the tests. */
export function useClientServers(): () => ClientServers {
  let runtime: DeviceRuntime | undefined;
  let dir: string | undefined;
  const models: Model[] = [];
  let servers: ClientServers | undefined;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "minfer-server-clients-"));
    runtime = await cpuRuntime();
    const stories = await Model.load(STORIES, { runtime });
    models.push(stories);
    const qwen = await Model.load(await writeQwen3(dir), { runtime });
    models.push(qwen);
    servers = {
      stories: await start({ model: stories, parallel: 2, contextOptions: { nCtx: 1024 }, apiKey: API_KEY }),
      qwen: await start({ model: qwen, parallel: 1, contextOptions: { nCtx: 2048 }, apiKey: API_KEY }),
    };
  });
  afterAll(async () => {
    await servers?.stories.server.close();
    await servers?.qwen.server.close();
    for (const m of models) m.dispose();
    runtime?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    if (!servers) throw new Error("useClientServers: read before beforeAll started the servers");
    return servers;
  };
}

/**
 * A fetch for the clients that notes every field the server says it ignored (the response header
 * naming them), and a check after each test that there was none: whatever a client sends, the
 * server must use or refuse, not drop.
 */
export function watchIgnoredFields(): typeof fetch {
  const ignored: string[] = [];
  afterEach(() => {
    expect(ignored.splice(0), "fields the server ignored").toEqual([]);
  });
  return async (input, init) => {
    const r = await fetch(input, init);
    const names = r.headers.get(IGNORED_FIELDS_HEADER);
    if (names !== null) ignored.push(names);
    return r;
  };
}

export interface Answer {
  text: string;
  finishReason: string;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

/** The server's own answer to a chat request, made with fetch (no client library involved). */
export async function chatByFetch(run: Running, body: Record<string, unknown>): Promise<Answer> {
  const r = await run.post("/v1/chat/completions", { model: "x", ...body });
  const j = (await r.json()) as {
    choices: { message: { content: string }; finish_reason: string }[];
    usage: Answer["usage"];
  };
  if (r.status !== 200) throw new Error(`reference request failed: ${r.status} ${JSON.stringify(j)}`);
  return { text: j.choices[0]!.message.content, finishReason: j.choices[0]!.finish_reason, usage: j.usage };
}

/** The prompt of the plain chat tests: short, so a few tokens of answer take milliseconds. */
export const QUESTION = "Tell me a story about a cat.";

/** The object the structured-output tests ask for (bounded, so the JSON ends in a few tokens). */
export const Person = z.object({
  name: z.string().max(10),
  age: z.number().int().min(0).max(120),
});

/** The arguments of the weather tool the tool tests force a call of. */
export const WeatherArgs = z.object({
  city: z.string().max(12),
  unit: z.enum(["c", "f"]),
});
export const WEATHER_QUESTION = "What is the weather in Paris?";

/**
 * A prompt longer than a slot of the stories server (512 tokens) that still passes the server's
 * byte-size precheck, so the error is the tokenized context-size one.
 */
export const TOO_LONG = "Once upon a time ".repeat(140);
