// What a Messages request's history renders as, on a tiny Qwen3 with the real Qwen3 template: an
// earlier turn's thinking blocks reach the template as the assistant's reasoning_content (as
// llama-server passes them), and an empty messages array is taken (as llama-server takes it), the
// prompt then the system message and the generation prompt. The expected prompts are written out by
// hand from the template's text and counted by /tokenize.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model } from "@minfer/engine";
import type { DeviceRuntime } from "@minfer/ir";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cpuRuntime, type Running, start, writeQwen3 } from "../test-helpers.js";

let runtime: DeviceRuntime | undefined;
let model: Model | undefined;
let dir: string | undefined;
let run: Running;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "minfer-anthropic-history-"));
  runtime = await cpuRuntime();
  model = await Model.load(await writeQwen3(dir), { runtime });
  run = await start({ model, parallel: 1, contextOptions: { nCtx: 1024 } });
});

afterAll(async () => {
  await run?.server.close();
  model?.dispose();
  runtime?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// biome-ignore lint/suspicious/noExplicitAny: the responses are read loosely, field by field
type Loose = Record<string, any>;
const json = async (path: string, body: unknown): Promise<Loose> => {
  const res = await run.post(path, body);
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as Loose;
};

/** The tokens of a prompt written out by hand (special tokens read as such). */
const tokens = async (text: string): Promise<number> =>
  (await json("/tokenize", { content: text })).tokens.length;

const THOUGHT = "I should list the files first.";

/** A tool round trip whose assistant turn thinks first when `thinking`. */
const toolTurn = (thinking: boolean) => [
  { role: "user", content: "Fix the bug" },
  {
    role: "assistant",
    content: [
      ...(thinking ? [{ type: "thinking", thinking: THOUGHT, signature: "" }] : []),
      { type: "tool_use", id: "call_1", name: "list_files", input: { path: "." } },
    ],
  },
  { role: "user", content: [{ type: "tool_result", tool_use_id: "call_1", content: "main.py" }] },
];

describe("earlier turns' thinking", () => {
  it("renders in the assistant turn after the last user query, as the Qwen3 template shows reasoning_content", async () => {
    // (the turn after the query: <think>, the thinking, </think>, then its tool call)
    const expected =
      "<|im_start|>user\nFix the bug<|im_end|>\n" +
      `<|im_start|>assistant\n<think>\n${THOUGHT}\n</think>\n\n` +
      '<tool_call>\n{"name": "list_files", "arguments": {"path":"."}}\n</tool_call><|im_end|>\n' +
      "<|im_start|>user\n<tool_response>\nmain.py\n</tool_response><|im_end|>\n" +
      "<|im_start|>assistant\n";
    const withThinking = await json("/v1/messages/count_tokens", { model: "m", messages: toolTurn(true) });
    expect(withThinking.input_tokens).toBe(await tokens(expected));
    const without = await json("/v1/messages/count_tokens", { model: "m", messages: toolTurn(false) });
    expect(without.input_tokens).toBeLessThan(withThinking.input_tokens);
  });
});

describe("chat's reasoning_content, which carries them", () => {
  const call = (id: string, name: string) => ({
    id,
    type: "function",
    function: { name, arguments: '{"path": "."}' },
  });
  it("reaches the template for every assistant turn after the query (llama-server's /apply-template)", async () => {
    const { prompt } = await json("/apply-template", {
      messages: [
        { role: "user", content: "Fix the bug" },
        { role: "assistant", content: "", reasoning_content: "First.", tool_calls: [call("c1", "ls")] },
        { role: "tool", tool_call_id: "c1", content: "main.py" },
        { role: "assistant", content: "", reasoning_content: "Second.", tool_calls: [call("c2", "cat")] },
        { role: "tool", tool_call_id: "c2", content: "print(1)" },
      ],
    });
    expect(prompt).toContain("<|im_start|>assistant\n<think>\nFirst.\n</think>\n\n<tool_call>");
    expect(prompt).toContain("<|im_start|>assistant\n<think>\nSecond.\n</think>\n\n<tool_call>");
  });

  it.each([
    ["messages[0].reasoning_content", [{ role: "user", content: "Q", reasoning_content: "T" }]],
    [
      "messages[1].reasoning_content",
      [
        { role: "user", content: "Q" },
        { role: "assistant", content: "A", reasoning_content: 3 },
      ],
    ],
    // (a last assistant message is continued from its text, which would lose the thinking)
    [
      "messages",
      [
        { role: "user", content: "Q" },
        { role: "assistant", content: "A", reasoning_content: "T" },
      ],
    ],
  ])("a 400 naming %s where it cannot be rendered", async (param, messages) => {
    const res = await run.post("/apply-template", { messages });
    expect(res.status).toBe(400);
    expect(((await res.json()) as Loose).error.param).toBe(param);
  });

  it("a continued assistant message with thinking is refused through /v1/messages too", async () => {
    const res = await run.post("/v1/messages", {
      model: "m",
      max_tokens: 2,
      messages: [
        { role: "user", content: "Q" },
        {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "T", signature: "" },
            { type: "text", text: "A" },
          ],
        },
      ],
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as Loose).error.message).toMatch(/reasoning/);
  });
});

describe("empty messages", () => {
  it("are a prompt of the system message and the generation prompt; the answer is a message", async () => {
    const system = "You are terse.";
    const prompt = `<|im_start|>system\n${system}<|im_end|>\n<|im_start|>assistant\n`;
    const counted = await json("/v1/messages/count_tokens", { model: "m", system, messages: [] });
    expect(counted.input_tokens).toBe(await tokens(prompt));
    const m = await json("/v1/messages", { model: "m", max_tokens: 3, system, messages: [] });
    expect(m.type).toBe("message");
    expect(m.role).toBe("assistant");
    // (Anthropic's input_tokens leave out the ones read from the cache)
    expect(m.usage.input_tokens + m.usage.cache_read_input_tokens).toBe(await tokens(prompt));
  });

  it("without a system message, the prompt is the generation prompt alone", async () => {
    const m = await json("/v1/messages", { model: "m", max_tokens: 2, messages: [] });
    expect(m.type).toBe("message");
    expect(m.usage.input_tokens + m.usage.cache_read_input_tokens).toBe(
      await tokens("<|im_start|>assistant\n"),
    );
  });
});
