import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model } from "@minfer/engine";
import type { DeviceRuntime } from "@minfer/ir";
import { ChatTemplate } from "@minfer/tokenizer";
import { afterAll, afterEach, beforeAll, expect } from "vitest";
import { z } from "zod";
import { IGNORED_FIELDS_HEADER } from "./index.js";
import { cpuRuntime, type Running, STORIES, start, writeQwen3 } from "./test-helpers.js";
import { templateSource } from "./tools/test-fixtures.js";

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

/**
 * A fetch that keeps the JSON body of the last request sent through it, so that a test can replay
 * exactly what a client sent (its tools written its own way) with plain fetch.
 */
export function recordingFetch(inner: typeof fetch): {
  fetch: typeof fetch;
  lastBody(): Record<string, unknown>;
} {
  let last: string | undefined;
  return {
    fetch: (input, init) => {
      if (typeof init?.body === "string") last = init.body;
      return inner(input, init);
    },
    lastBody: () => {
      if (last === undefined) throw new Error("recordingFetch: no request with a JSON body was sent");
      return JSON.parse(last) as Record<string, unknown>;
    },
  };
}

/**
 * A server over the tiny Qwen3 whose chat template is replaced by DeepSeek R1's: its generation
 * prompt ends with `<think>\n`, so the model's text starts inside the think block. Requires API_KEY.
 */
export function useReasoningServer(): () => Running {
  let runtime: DeviceRuntime | undefined;
  let dir: string | undefined;
  let model: Model | undefined;
  let run: Running | undefined;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "minfer-server-clients-r1-"));
    runtime = await cpuRuntime();
    model = await Model.load(await writeQwen3(dir), { runtime });
    const chatTemplate = ChatTemplate.parse(
      templateSource("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"),
      "r1",
    );
    run = await start({ model, parallel: 1, contextOptions: { nCtx: 1024 }, chatTemplate, apiKey: API_KEY });
  });
  afterAll(async () => {
    await run?.server.close();
    model?.dispose();
    runtime?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    if (!run) throw new Error("useReasoningServer: read before beforeAll started the server");
    return run;
  };
}

/** What the reasoning tests make the model write (by REASONING_GRAMMAR), starting inside the block. */
export const THOUGHT = "Two and two make four.";
export const ANSWER = "It is 4.";
/** The whole text as generated: the block's text, its end tag, the answer. */
export const RAW_REASONING = `${THOUGHT}\n</think>\n\n${ANSWER}`;
export const REASONING_GRAMMAR = `root ::= "${THOUGHT}" "\\n</think>" "\\n\\n" "${ANSWER}"`;
export const REASONING_QUESTION = "What is 2+2?";

export interface Answer {
  text: string;
  /** message.reasoning_content, absent when the server split off no think block. */
  reasoning: string | undefined;
  finishReason: string;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

/** The server's own answer to a chat request, made with fetch (no client library involved). */
export async function chatByFetch(run: Running, body: Record<string, unknown>): Promise<Answer> {
  const r = await run.post("/v1/chat/completions", { model: "x", ...body });
  const j = (await r.json()) as {
    choices: { message: { content: string; reasoning_content?: string }; finish_reason: string }[];
    usage: Answer["usage"];
  };
  if (r.status !== 200) throw new Error(`reference request failed: ${r.status} ${JSON.stringify(j)}`);
  const { message, finish_reason } = j.choices[0]!;
  return {
    text: message.content,
    reasoning: message.reasoning_content,
    finishReason: finish_reason,
    usage: j.usage,
  };
}

export interface CutCall {
  /** How many tokens to allow so that the call is cut inside its city string. */
  maxTokens: number;
  /** The whole call's arguments, as the server sent them with room to finish. */
  full: string;
  /** The server's answer to the same request with maxTokens, by fetch. */
  cut: {
    content: string | null;
    finishReason: string;
    calls: { id: string; function: { name: string; arguments: string } }[];
  };
}

/**
 * Replays a request a client sent (its JSON body, tools as the client wrote them), by fetch: once with
 * logprobs to see the tokens of the call, then with max_tokens set to end inside the city string of
 * LongCityArgs (16 characters after the key: past `"city": "`, short of the 24 of the shortest city).
 */
export async function cutCallByFetch(run: Running, sent: Record<string, unknown>): Promise<CutCall> {
  type Reply = {
    choices: {
      message: { content: string | null; tool_calls?: CutCall["cut"]["calls"] };
      finish_reason: string;
      logprobs?: { content: { token: string }[] };
    }[];
  };
  const ask = async (extra: Record<string, unknown>) => {
    const r = await run.post("/v1/chat/completions", { ...sent, stream: false, ...extra });
    const j = (await r.json()) as Reply;
    if (r.status !== 200) throw new Error(`reference request failed: ${r.status} ${JSON.stringify(j)}`);
    return j.choices[0]!;
  };
  const whole = await ask({ logprobs: true });
  if (whole.finish_reason !== "tool_calls") throw new Error(`no whole call: ${JSON.stringify(whole)}`);
  let text = "";
  let maxTokens = 0;
  for (const [i, t] of whole.logprobs!.content.entries()) {
    text += t.token;
    const at = text.indexOf('"city"');
    if (at >= 0 && text.length > at + 16) {
      maxTokens = i + 1;
      break;
    }
  }
  if (maxTokens === 0) throw new Error(`no city in ${JSON.stringify(text)}`);
  const cut = await ask({ max_tokens: maxTokens });
  return {
    maxTokens,
    full: whole.message.tool_calls![0]!.function.arguments,
    cut: {
      content: cut.message.content,
      finishReason: cut.finish_reason,
      calls: cut.message.tool_calls ?? [],
    },
  };
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

/** Arguments that take many tokens (a long city name), for the tests that cut a call inside them. */
export const LongCityArgs = z.object({ city: z.string().min(24).max(40) });

/**
 * A prompt longer than a slot of the stories server (512 tokens) that still passes the server's
 * byte-size precheck, so the error is the tokenized context-size one.
 */
export const TOO_LONG = "Once upon a time ".repeat(140);
