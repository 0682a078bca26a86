// Tools on a template with no tool format of its own (stories260K has no template: the server's ChatML),
// through the server and the official `openai` client: llama.cpp's generic format. The prompt carries the
// answer format and the tools; the answer, forced by the grammar into JSON, comes back as tool_calls or
// as content, streamed or not.
import type { Model } from "@minfer/engine";
import type OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Running, start, useStories } from "../test-helpers.js";

const stories = useStories();
let s: Running;

beforeAll(async () => {
  s = await start({ model: stories() as Model, parallel: 2, contextOptions: { nCtx: 2048 } });
});
afterAll(async () => {
  await s?.server.close();
});

/** llama.cpp's test tool (test_tool_call.py): its one argument can only be `true`. */
const TEST_TOOL = {
  type: "function" as const,
  function: {
    name: "test",
    description: "",
    parameters: {
      type: "object",
      properties: { success: { type: "boolean", const: true } },
      required: ["success"],
    },
  },
};

const GENERIC =
  "Respond in JSON format, either with `tool_call` (a request to call tools) or with `response` reply to the user's request";

const messages: OpenAI.ChatCompletionMessageParam[] = [
  { role: "system", content: "You are a coding assistant." },
  { role: "user", content: "Write an example" },
];

describe("tools on a ChatML model (generic format)", () => {
  it("tool_choice required: a call, its arguments valid", async () => {
    const r = await s.client.chat.completions.create({
      model: "m",
      messages,
      tools: [TEST_TOOL],
      tool_choice: "required",
      max_tokens: 64,
      seed: 1,
    });
    const choice = r.choices[0]!;
    expect(choice.finish_reason).toBe("tool_calls");
    expect(choice.message.content ?? "").toBe("");
    const calls = choice.message.tool_calls!;
    expect(calls).toHaveLength(1);
    const call = calls[0] as { id: string; function: { name: string; arguments: string } };
    expect(call.function.name).toBe("test");
    expect(JSON.parse(call.function.arguments)).toEqual({ success: true });
    expect(call.id).toMatch(/^call_[A-Za-z0-9]{24}$/);
  });

  it("streamed: the fragments make the same call", async () => {
    const stream = await s.client.chat.completions.create({
      model: "m",
      messages,
      tools: [TEST_TOOL],
      tool_choice: "required",
      max_tokens: 64,
      seed: 1,
      stream: true,
    });
    let name = "";
    let args = "";
    let content = "";
    let finish: string | null = null;
    for await (const c of stream) {
      const d = c.choices[0];
      if (!d) continue;
      content += d.delta.content ?? "";
      for (const t of d.delta.tool_calls ?? []) {
        name += t.function?.name ?? "";
        args += t.function?.arguments ?? "";
      }
      finish = d.finish_reason ?? finish;
    }
    expect(content).toBe("");
    expect(name).toBe("test");
    expect(JSON.parse(args)).toEqual({ success: true });
    expect(finish).toBe("tool_calls");
  });

  it("tool_choice auto: a call or a reply (its text, never the answer's JSON)", async () => {
    const kinds = new Set<string>();
    for (let seed = 1; seed <= 12; seed++) {
      const r = await s.client.chat.completions.create({
        model: "m",
        messages,
        tools: [TEST_TOOL],
        max_tokens: 150,
        seed,
        temperature: 1.5,
      });
      const choice = r.choices[0]!;
      const m = choice.message;
      if (m.tool_calls?.length) {
        kinds.add("call");
        expect(choice.finish_reason).toBe("tool_calls");
        const call = m.tool_calls[0] as { function: { name: string; arguments: string } };
        expect(JSON.parse(call.function.arguments)).toEqual({ success: true });
        continue;
      }
      kinds.add("reply");
      expect(m.content ?? "").not.toMatch(/^\s*\{/);
      expect(m.content ?? "").not.toContain('"response"');
    }
    // (stories260K, at this temperature, chooses each at least once among these seeds)
    expect([...kinds].sort()).toEqual(["call", "reply"]);
  });

  it("the prompt carries the answer format, the tools, and earlier calls and results as JSON", async () => {
    const res = await s.post("/apply-template", {
      messages: [
        ...messages,
        {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "call_1", type: "function", function: { name: "test", arguments: '{"success": true}' } },
          ],
        },
        { role: "tool", tool_call_id: "call_1", content: "done" },
      ],
      tools: [TEST_TOOL],
    });
    expect(res.status).toBe(200);
    const { prompt } = (await res.json()) as { prompt: string };
    expect(prompt.startsWith(`<|im_start|>system\nYou are a coding assistant.\n\n${GENERIC}\n\n`)).toBe(true);
    expect(prompt).toContain(
      "You can call any of the following tools to satisfy the user's requests: [\n  {\n",
    );
    expect(prompt).toContain(
      '<|im_start|>assistant\n{\n  "tool_calls": [\n    {\n      "name": "test",\n      "arguments": {\n        "success": true\n      },\n      "id": "call_1"\n    }\n  ]\n}<|im_end|>\n',
    );
    expect(prompt).toContain(
      '<|im_start|>user\n{\n  "tool_response": {\n    "content": "done",\n    "tool_call_id": "call_1"\n  }\n}<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it("response_format with tools: no second grammar refused; a reply would follow its schema", async () => {
    const r = await s.client.chat.completions.create({
      model: "m",
      messages,
      tools: [TEST_TOOL],
      max_tokens: 150,
      seed: 3,
      response_format: {
        type: "json_schema",
        json_schema: {
          name: "n",
          schema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
        },
      },
    });
    const choice = r.choices[0]!;
    if (choice.message.tool_calls?.length) expect(choice.finish_reason).toBe("tool_calls");
    else expect(Object.keys(JSON.parse(choice.message.content!) as object)).toEqual(["n"]);
  });

  it("tool_choice none: no grammar, no generic prompt", async () => {
    const res = await s.post("/apply-template", { messages, tools: [TEST_TOOL], tool_choice: "none" });
    const { prompt } = (await res.json()) as { prompt: string };
    expect(prompt).not.toContain("Respond in JSON");
  });
});
