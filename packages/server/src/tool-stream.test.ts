// Tool calls through the server and the official `openai` client, on a synthetic Qwen3 model (the real
// Qwen3 template: hermes `<tool_call>` calls), its output forced into a call by tool_choice: streamed
// arguments arrive fragment by fragment and concatenate to the call's arguments; a call cut by max_tokens
// comes back in tool_calls with its partial arguments and finish "length", never as markup in content.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model } from "@minfer/engine";
import type { DeviceRuntime } from "@minfer/ir";
import type OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cpuRuntime, type Running, start, writeQwen3 } from "./test-helpers.js";

let runtime: DeviceRuntime;
let dir: string;
let qwen: Model;
let q: Running;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "minfer-tool-stream-"));
  runtime = await cpuRuntime();
  qwen = await Model.load(await writeQwen3(dir), { runtime });
  q = await start({ model: qwen, parallel: 2, contextOptions: { nCtx: 2048 } });
});
afterAll(async () => {
  await q?.server.close();
  qwen?.dispose();
  runtime?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const weather = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "The weather in a city",
    // A long city name: the arguments take many tokens.
    parameters: {
      type: "object",
      properties: { city: { type: "string", minLength: 24, maxLength: 40 } },
      required: ["city"],
      additionalProperties: false,
    },
  },
};

const body = {
  model: "m",
  messages: [{ role: "user" as const, content: "What is the weather in Paris?" }],
  tools: [weather],
  tool_choice: { type: "function" as const, function: { name: "get_weather" } },
  parallel_tool_calls: false,
  temperature: 1,
  seed: 7,
};

interface Streamed {
  calls: { id?: string; name: string; arguments: string; fragments: number }[];
  content: string;
  finish: string | null;
}

/** A streamed chat completion, its tool-call deltas rebuilt as an OpenAI client does. */
async function stream(client: OpenAI, extra: Record<string, unknown>): Promise<Streamed> {
  const s = await client.chat.completions.create({ ...body, ...extra, stream: true } as never);
  const out: Streamed = { calls: [], content: "", finish: null };
  for await (const c of s as unknown as AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>) {
    const ch = c.choices[0];
    if (!ch) continue;
    out.finish = ch.finish_reason ?? out.finish;
    out.content += ch.delta.content ?? "";
    for (const t of ch.delta.tool_calls ?? []) {
      if (t.index === out.calls.length) {
        expect(t.id).toMatch(/^call_/);
        expect(t.type).toBe("function");
        out.calls.push({ id: t.id, name: t.function?.name ?? "", arguments: "", fragments: 0 });
      }
      const b = out.calls[t.index]!;
      const a = t.function?.arguments ?? "";
      if (a !== "") b.fragments++;
      b.arguments += a;
    }
  }
  return out;
}

describe("streamed tool calls", () => {
  it("argument fragments arrive as generated and concatenate to the call's arguments", async () => {
    const whole = await q.client.chat.completions.create({ ...body, max_tokens: 200 });
    const ch = whole.choices[0]!;
    expect(ch.finish_reason).toBe("tool_calls");
    const call = ch.message.tool_calls![0]! as { function: { name: string; arguments: string } };
    expect(call.function.name).toBe("get_weather");
    const args = JSON.parse(call.function.arguments) as { city: string };
    expect(args.city.length).toBeGreaterThanOrEqual(24);

    const s = await stream(q.client, { max_tokens: 200 });
    expect(s.finish).toBe("tool_calls");
    expect(s.content).toBe("");
    expect(s.calls).toHaveLength(1);
    expect(s.calls[0]!.name).toBe("get_weather");
    expect(s.calls[0]!.arguments).toBe(call.function.arguments);
    // a fragment a token or so, not the whole arguments at once
    expect(s.calls[0]!.fragments).toBeGreaterThan(5);
  });

  it("with parallel calls, each call's fragments (by index) concatenate to its arguments", async () => {
    const ask = { ...body, parallel_tool_calls: true, max_tokens: 300, seed: 9 };
    const whole = await q.client.chat.completions.create(ask);
    const calls = whole.choices[0]!.message.tool_calls!.map((c) => {
      const f = (c as { function: { name: string; arguments: string } }).function;
      return [f.name, f.arguments];
    });
    expect(calls.length).toBeGreaterThan(0);
    const s = await stream(q.client, { parallel_tool_calls: true, max_tokens: 300, seed: 9 });
    expect(s.calls.map((c) => [c.name, c.arguments])).toEqual(calls);
    expect(new Set(s.calls.map((c) => c.id)).size).toBe(s.calls.length);
  });
});

describe("a tool call cut by max_tokens", () => {
  it("comes back in tool_calls with partial arguments and finish length, streamed and not; no markup in content", async () => {
    // Where the arguments are: the tokens of the whole answer, by their text.
    const whole = await q.client.chat.completions.create({ ...body, max_tokens: 200, logprobs: true });
    const full = (whole.choices[0]!.message.tool_calls![0]! as { function: { arguments: string } }).function
      .arguments;
    const tokens = whole.choices[0]!.logprobs!.content!.map((t) => t.token);
    let text = "";
    let cut = -1;
    for (let i = 0; i < tokens.length; i++) {
      text += tokens[i];
      const at = text.indexOf('"city"');
      if (at >= 0 && text.length > at + 16) {
        cut = i + 1;
        break;
      }
    }
    expect(cut).toBeGreaterThan(0);

    const r = await q.client.chat.completions.create({ ...body, max_tokens: cut });
    const ch = r.choices[0]!;
    expect(ch.finish_reason).toBe("length");
    expect(ch.message.content ?? "").not.toContain("<tool_call>");
    expect(ch.message.content ?? "").not.toContain('"name"');
    const calls = ch.message.tool_calls!;
    expect(calls).toHaveLength(1);
    const partial = (calls[0]! as { function: { name: string; arguments: string } }).function;
    expect(partial.name).toBe("get_weather");
    expect(partial.arguments.startsWith('{"city"')).toBe(true);
    expect(full.startsWith(partial.arguments)).toBe(true);
    expect(partial.arguments.length).toBeLessThan(full.length);

    const s = await stream(q.client, { max_tokens: cut });
    expect(s.finish).toBe("length");
    expect(s.content).toBe("");
    expect(s.calls.map((c) => [c.name, c.arguments])).toEqual([["get_weather", partial.arguments]]);
  });
});
