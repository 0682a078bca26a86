// What a Responses request's history renders as, on a tiny Qwen3 with the real Qwen3 template: an
// earlier turn's reasoning items reach the template as the assistant's reasoning_content (as
// llama-server passes them). The expected prompt is written out by hand from the template's text and
// counted by /tokenize.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model } from "@minfer/engine";
import type { DeviceRuntime } from "@minfer/ir";
import { afterAll, beforeAll, expect, it } from "vitest";
import { cpuRuntime, type Running, start, writeQwen3 } from "../test-helpers.js";

let runtime: DeviceRuntime | undefined;
let model: Model | undefined;
let dir: string | undefined;
let run: Running;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "minfer-responses-history-"));
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

const THOUGHT = "I should list the files first.";

/** A tool round trip whose assistant turn reasons first when `reasoning`. */
const toolTurn = (reasoning: boolean) => [
  { role: "user", content: "Fix the bug" },
  ...(reasoning
    ? [{ type: "reasoning", id: "rs_1", summary: [], content: [{ type: "reasoning_text", text: THOUGHT }] }]
    : []),
  { type: "function_call", call_id: "call_1", name: "list_files", arguments: '{"path":"."}' },
  { type: "function_call_output", call_id: "call_1", output: "main.py" },
];

it("a reasoning item renders in its assistant turn, as the Qwen3 template shows reasoning_content", async () => {
  // (the turn after the user's query: <think>, the thinking, </think>, then its tool call)
  const expected =
    "<|im_start|>user\nFix the bug<|im_end|>\n" +
    `<|im_start|>assistant\n<think>\n${THOUGHT}\n</think>\n\n` +
    '<tool_call>\n{"name": "list_files", "arguments": {"path":"."}}\n</tool_call><|im_end|>\n' +
    "<|im_start|>user\n<tool_response>\nmain.py\n</tool_response><|im_end|>\n" +
    "<|im_start|>assistant\n";
  const want = (await json("/tokenize", { content: expected })).tokens.length;
  const withReasoning = await json("/v1/responses/input_tokens", { model: "m", input: toolTurn(true) });
  expect(withReasoning.input_tokens).toBe(want);
  const without = await json("/v1/responses/input_tokens", { model: "m", input: toolTurn(false) });
  expect(without.input_tokens).toBeLessThan(want);
});
