// Detection of each format from a template's source, and a conversation with a tool call and its result
// rendered by a template of that format: the model sees the tools, the call is written in the format,
// and that writing parses back to the call.

import { readdirSync } from "node:fs";
import { type ChatMessage, ChatTemplate } from "@minfer/tokenizer";
import { describe, expect, it } from "vitest";
import { DEEPSEEK, KIMI } from "./format-sections.js";
import { type ToolFormat, toolFormatOf } from "./formats.js";
import { parseMessageToolFields, parseTools } from "./parse.js";
import { ToolCallParser } from "./parser.js";
import { OWN_TEMPLATES, ownTemplateSource } from "./test-fixtures.js";

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

function conversation(callId: string): ChatMessage[] {
  const raw: Record<string, unknown>[] = [
    { role: "user", content: "Weather in Paris?" },
    {
      role: "assistant",
      content: "",
      tool_calls: [
        { id: callId, type: "function", function: { name: "get_weather", arguments: '{"city": "Paris"}' } },
      ],
    },
    { role: "tool", content: "22 C and sunny", tool_call_id: callId },
  ];
  return raw.map((m, i) => ({
    role: m.role as string,
    content: m.content as string,
    ...parseMessageToolFields(m, i),
  }));
}

/** Each own template: its format, and the call as it writes it. */
const OWN: Record<string, { format: ToolFormat; call: string; id?: string }> = {
  "mistral-nemo.jinja": {
    format: "mistral-nemo",
    call: '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "a1b2c3d4e"}]',
    id: "a1b2c3d4e",
  },
  "mistral-small.jinja": { format: "mistral", call: '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}' },
  "deepseek-r1-tools.jinja": {
    format: "deepseek-r1",
    call: `${DEEPSEEK.callsBegin}${DEEPSEEK.callBegin}function${DEEPSEEK.sep}get_weather\n\`\`\`json\n{"city": "Paris"}\n\`\`\`${DEEPSEEK.callEnd}${DEEPSEEK.callsEnd}`,
  },
  "deepseek-v3.1.jinja": {
    format: "deepseek-v3.1",
    call: `${DEEPSEEK.callsBegin}${DEEPSEEK.callBegin}get_weather${DEEPSEEK.sep}{"city": "Paris"}${DEEPSEEK.callEnd}${DEEPSEEK.callsEnd}`,
  },
  "qwen3-coder.jinja": {
    format: "qwen3-coder",
    call: "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
  },
  "command-r7b.jinja": {
    format: "command-r7b",
    call: '<|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}\n]<|END_ACTION|>',
  },
  "granite-3.jinja": {
    format: "granite",
    call: '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
  },
  "glm-4.5.jinja": {
    format: "glm-4.5",
    call: "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>",
  },
  "kimi-k2.jinja": {
    format: "kimi-k2",
    call: `${KIMI.sectionBegin}${KIMI.callBegin}functions.get_weather:0${KIMI.argsBegin}{"city": "Paris"}${KIMI.callEnd}${KIMI.sectionEnd}`,
    id: "functions.get_weather:0",
  },
  "pythonic.jinja": { format: "pythonic", call: '[get_weather(city="Paris")]' },
  "lfm2.jinja": { format: "lfm2", call: '<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>' },
};

describe("minfer's own templates of each format", () => {
  it("covers every file in test-fixtures/templates", () => {
    expect(readdirSync(OWN_TEMPLATES).sort()).toEqual(Object.keys(OWN).sort());
  });

  for (const [file, want] of Object.entries(OWN))
    it(`${file}: detected as ${want.format}; the tools, the call in its format and the result rendered`, () => {
      const source = ownTemplateSource(file);
      expect(toolFormatOf(source)).toBe(want.format);
      const tools = parseTools(body)!;
      const prompt = ChatTemplate.parse(source, file).render({
        messages: conversation(want.id ?? "call_1"),
        tools: tools.templateTools,
        addGenerationPrompt: true,
        bosToken: "<s>",
        eosToken: "</s>",
      });
      expect(prompt).toContain("The current weather in a city");
      expect(prompt).toContain(want.call);
      expect(prompt).toContain("22 C and sunny");
      const p = new ToolCallParser(want.format, tools.tools);
      expect(p.push(want.call).content + p.end(false).content).toBe("");
      expect(p.calls.map((c) => [c.name, c.arguments])).toEqual([["get_weather", '{"city": "Paris"}']]);
    });

  it("a template without the tools variable has no format, whatever its markers", () => {
    for (const [file] of Object.entries(OWN)) {
      const source = ownTemplateSource(file).replace(/\btools\b/g, "functions");
      expect(toolFormatOf(source), file).toBeUndefined();
    }
  });
});
