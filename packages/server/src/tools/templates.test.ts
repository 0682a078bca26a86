// The shapes parseTools / parseMessageToolFields return, rendered by the real chat templates.
import { type ChatMessage, ChatTemplate } from "@minfer/tokenizer";
import { describe, expect, it } from "vitest";
import { toolFormatOf } from "./formats.js";
import { parseMessageToolFields, parseTools } from "./parse.js";
import { ToolCallParser } from "./parser.js";
import { templateSource } from "./test-fixtures.js";

const body = {
  tools: [
    {
      type: "function",
      function: {
        name: "get_weather",
        description: "The current weather in a city",
        parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      },
    },
  ],
};

/** An OpenAI conversation: a question, the assistant's call, the tool's result. */
const OPENAI_MESSAGES: Record<string, unknown>[] = [
  { role: "user", content: "Weather in Paris?" },
  {
    role: "assistant",
    content: "",
    tool_calls: [
      { id: "call_abc", type: "function", function: { name: "get_weather", arguments: '{"city": "Paris"}' } },
    ],
  },
  { role: "tool", content: "22 C and sunny", tool_call_id: "call_abc" },
];

/** The messages as the server would give them to the template. */
const messages = (): ChatMessage[] =>
  OPENAI_MESSAGES.map((m, i) => ({
    role: m.role as string,
    content: m.content as string,
    ...parseMessageToolFields(m, i),
  }));

function render(file: string): string {
  const tools = parseTools(body)!;
  return ChatTemplate.parse(templateSource(file)).render({
    messages: messages(),
    tools: tools.templateTools,
    addGenerationPrompt: true,
  });
}

describe("templates render parsed tool fields", () => {
  it("Qwen3: the tools, the call in <tool_call>, the result in <tool_response>", () => {
    const prompt = render("Qwen-Qwen3-0.6B.jinja");
    expect(prompt).toContain('"name": "get_weather", "description": "The current weather in a city"');
    expect(prompt).toContain(
      '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
    );
    expect(prompt).toContain("<tool_response>\n22 C and sunny\n</tool_response>");
    expect(prompt.endsWith("<|im_start|>assistant\n")).toBe(true);
  });

  it("Llama 3.1: the tools, the call as {name, parameters}, the result as ipython", () => {
    for (const file of ["meta-llama-Llama-3.1-8B-Instruct.jinja", "meta-llama-Llama-3.2-3B-Instruct.jinja"]) {
      const prompt = render(file);
      expect(prompt, file).toContain("Environment: ipython");
      expect(prompt, file).toContain('"name": "get_weather"');
      expect(prompt, file).toContain(
        '<|start_header_id|>assistant<|end_header_id|>\n\n{"name": "get_weather", "parameters": {"city": "Paris"}}<|eot_id|>',
      );
      expect(prompt, file).toContain("<|start_header_id|>ipython<|end_header_id|>\n\n");
      expect(prompt, file).toContain("22 C and sunny");
    }
  });

  it("what the model writes in the template's format parses back to the call", () => {
    for (const [file, written] of [
      [
        "Qwen-Qwen3-0.6B.jinja",
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
      ],
      ["meta-llama-Llama-3.1-8B-Instruct.jinja", '{"name": "get_weather", "parameters": {"city": "Paris"}}'],
    ] as const) {
      const format = toolFormatOf(templateSource(file))!;
      const p = new ToolCallParser(format, parseTools(body)!.tools);
      expect(p.push(written).content + p.end().content).toBe("");
      expect(p.calls.map((c) => [c.name, c.arguments])).toEqual([["get_weather", '{"city": "Paris"}']]);
    }
  });
});
