// Reasoning through the server and the official `openai` client, on a synthetic Qwen3 model whose chat
// template is replaced by DeepSeek R1's (its generation prompt opens the think block, so the text starts
// inside it): message.reasoning_content and delta.reasoning_content, the reasoning formats, a block cut
// by max_tokens, the budget (--reasoning-budget) forcing the block closed, reasoning before tool calls,
// and /completion, which returns the text as generated (as llama-server's does).

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model } from "@minfer/engine";
import type { DeviceRuntime } from "@minfer/ir";
import { ChatTemplate } from "@minfer/tokenizer";
import type OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IGNORED_FIELDS_HEADER } from "./chat-routes.js";
import { cpuRuntime, type Running, start, writeQwen3 } from "./test-helpers.js";
import { ownTemplateSource, templateSource } from "./tools/test-fixtures.js";

let runtime: DeviceRuntime;
let dir: string;
let qwen: Model;
let r1: Running;

const R1 = ChatTemplate.parse(templateSource("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"), "r1");

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "minfer-reasoning-"));
  runtime = await cpuRuntime();
  qwen = await Model.load(await writeQwen3(dir), { runtime });
  r1 = await start({ model: qwen, parallel: 2, contextOptions: { nCtx: 2048 }, chatTemplate: R1 });
});
afterAll(async () => {
  await r1?.server.close();
  qwen?.dispose();
  runtime?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const THOUGHT = "Two and two make four.";
const ANSWER = "It is 4.";
/** What the model is made to write: it starts inside the block the prompt opened. */
const body = {
  model: "m",
  messages: [{ role: "user" as const, content: "What is 2+2?" }],
  grammar: `root ::= "${THOUGHT}" "\\n</think>" "\\n\\n" "${ANSWER}"`,
  temperature: 0,
  max_tokens: 100,
};

type Message = { content: string | null; reasoning_content?: string };

async function whole(client: OpenAI, extra: Record<string, unknown> = {}) {
  const r = await client.chat.completions.create({ ...body, ...extra } as never);
  const ch = (r as OpenAI.Chat.Completions.ChatCompletion).choices[0]!;
  return { message: ch.message as unknown as Message, finish: ch.finish_reason };
}

async function streamed(client: OpenAI, extra: Record<string, unknown> = {}) {
  const s = await client.chat.completions.create({ ...body, ...extra, stream: true } as never);
  const out = { reasoning: "", content: "", reasoningChunks: 0, finish: null as string | null };
  for await (const c of s as unknown as AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>) {
    const ch = c.choices[0];
    if (!ch) continue;
    const d = ch.delta as { content?: string | null; reasoning_content?: string };
    if (d.reasoning_content) {
      out.reasoning += d.reasoning_content;
      out.reasoningChunks++;
    }
    out.content += d.content ?? "";
    out.finish = ch.finish_reason ?? out.finish;
  }
  return out;
}

describe("reasoning_content (the prompt opened the think block)", () => {
  it("non-streamed: message.reasoning_content, the answer in content", async () => {
    const r = await whole(r1.client);
    expect(r.finish).toBe("stop");
    expect(r.message.reasoning_content).toBe(THOUGHT);
    expect(r.message.content).toBe(ANSWER);
  });

  it("streamed: delta.reasoning_content as the thinking is generated, then delta.content", async () => {
    const s = await streamed(r1.client);
    expect(s).toMatchObject({ reasoning: THOUGHT, content: ANSWER, finish: "stop" });
    expect(s.reasoningChunks).toBeGreaterThan(1);
  });

  it("reasoning_format none leaves the block in content; deepseek-legacy keeps it there when streamed", async () => {
    const raw = `${THOUGHT}\n</think>\n\n${ANSWER}`;
    const none = await whole(r1.client, { reasoning_format: "none" });
    expect(none.message).toEqual(expect.objectContaining({ content: raw }));
    expect(none.message.reasoning_content).toBeUndefined();
    const legacy = await whole(r1.client, { reasoning_format: "deepseek-legacy" });
    expect(legacy.message).toEqual(expect.objectContaining({ content: ANSWER, reasoning_content: THOUGHT }));
    const legacyStream = await streamed(r1.client, { reasoning_format: "deepseek-legacy" });
    expect(legacyStream).toMatchObject({ reasoning: "", content: `<think>${raw}` });
    const bad = await r1.post("/v1/chat/completions", { ...body, reasoning_format: "r1" });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { param: string } }).error.param).toBe("reasoning_format");
  });

  it("a block cut by max_tokens: the thinking so far in reasoning_content, finish length", async () => {
    const r = await whole(r1.client, { max_tokens: 3 });
    expect(r.finish).toBe("length");
    expect(r.message.content).toBe("");
    expect(r.message.reasoning_content).toBeTruthy();
    expect(THOUGHT.startsWith(r.message.reasoning_content!)).toBe(true);
    const s = await streamed(r1.client, { max_tokens: 3 });
    expect(s).toMatchObject({ reasoning: r.message.reasoning_content, content: "", finish: "length" });
  });

  it("/completion returns the text as generated, and names reasoning_format as ignored", async () => {
    const res = await r1.post("/completion", {
      prompt: "<｜User｜>What is 2+2?<｜Assistant｜><think>\n",
      grammar: body.grammar,
      n_predict: 100,
      reasoning_format: "deepseek",
    });
    expect(res.status).toBe(200);
    expect(res.headers.get(IGNORED_FIELDS_HEADER)).toContain("reasoning_format");
    expect(((await res.json()) as { content: string }).content).toBe(`${THOUGHT}\n</think>\n\n${ANSWER}`);
    for (const path of ["/completion", "/v1/completions"]) {
      const bad = await r1.post(path, { prompt: "x", max_tokens: 1, reasoning_format: "r1" });
      expect(bad.status, path).toBe(400);
      const none = await r1.post(path, { prompt: "x", max_tokens: 1, reasoning_format: "none" });
      expect(none.headers.get(IGNORED_FIELDS_HEADER), path).toBeNull();
    }
  });
});

describe("--reasoning-budget", () => {
  it("forces the end tag after N tokens of thinking (and -1 does not)", async () => {
    const free = await start({ model: qwen, parallel: 1, contextOptions: { nCtx: 1024 }, chatTemplate: R1 });
    const budget = await start({
      model: qwen,
      parallel: 1,
      contextOptions: { nCtx: 1024 },
      chatTemplate: R1,
      reasoningBudget: 3,
      reasoningFormat: "none",
    });
    try {
      const ask = { model: "m", messages: body.messages, temperature: 1, seed: 3, max_tokens: 24 };
      const unbounded = (await free.client.chat.completions.create({
        ...ask,
        reasoning_format: "none",
      } as never)) as OpenAI.Chat.Completions.ChatCompletion;
      expect(unbounded.choices[0]!.message.content).not.toContain("</think>");
      const cut = (await budget.client.chat.completions.create(
        ask,
      )) as OpenAI.Chat.Completions.ChatCompletion;
      const raw = cut.choices[0]!.message.content!;
      const at = raw.indexOf("</think>");
      expect(at).toBeGreaterThanOrEqual(0);
      // The tokens before the tag: the budget's, each of the random model's tokens one or a few characters.
      const before = qwen.tokenizer.encode(raw.slice(0, at), { addSpecial: false });
      expect(before.length).toBeLessThanOrEqual(3);
      const split = (await budget.client.chat.completions.create({
        ...ask,
        reasoning_format: "auto",
      } as never)) as OpenAI.Chat.Completions.ChatCompletion;
      const m = split.choices[0]!.message as unknown as Message;
      expect(m.content).toBe(raw.slice(at + "</think>".length).trimStart());
      expect(m.reasoning_content ?? "").toBe(raw.slice(0, at).trim());
    } finally {
      await free.server.close();
      await budget.server.close();
    }
  });
});

describe("reasoning before tool calls", () => {
  it("DeepSeek R1's format: the thinking ended by the budget, then the forced call", async () => {
    const s = await start({
      model: qwen,
      parallel: 1,
      contextOptions: { nCtx: 2048 },
      chatTemplate: ChatTemplate.parse(ownTemplateSource("deepseek-r1-tools.jinja"), "r1-tools"),
      reasoningBudget: 2,
      reasoningBudgetMessage: " Enough.",
    });
    try {
      const ask = {
        model: "m",
        messages: body.messages,
        tools: [
          {
            type: "function" as const,
            function: {
              name: "add",
              parameters: { type: "object", properties: { a: { type: "integer" } }, required: ["a"] },
            },
          },
        ],
        tool_choice: "required" as const,
        parallel_tool_calls: false,
        temperature: 1,
        seed: 11,
        max_tokens: 120,
      };
      const r = await s.client.chat.completions.create(ask);
      const ch = r.choices[0]!;
      expect(ch.finish_reason).toBe("tool_calls");
      const m = ch.message as unknown as Message & {
        tool_calls: { function: { name: string; arguments: string } }[];
      };
      expect(m.reasoning_content).toMatch(/Enough\.$/);
      expect(m.content).toBeNull();
      expect(m.tool_calls[0]!.function.name).toBe("add");
      expect(Number.isInteger(JSON.parse(m.tool_calls[0]!.function.arguments).a)).toBe(true);

      const st = await s.client.chat.completions.create({ ...ask, stream: true });
      let reasoning = "";
      let args = "";
      for await (const c of st) {
        const d = c.choices[0]?.delta as {
          reasoning_content?: string;
          tool_calls?: { function?: { arguments?: string } }[];
        };
        reasoning += d?.reasoning_content ?? "";
        for (const t of d?.tool_calls ?? []) args += t.function?.arguments ?? "";
      }
      expect(reasoning).toBe(m.reasoning_content);
      expect(args).toBe(m.tool_calls[0]!.function.arguments);
    } finally {
      await s.server.close();
    }
  });
});
