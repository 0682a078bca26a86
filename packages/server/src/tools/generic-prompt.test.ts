// The generic format's prompt: the texts llama.cpp adds for a template with no tool format, and the
// conversation as such a template then shows it. Expected texts are llama.cpp's: its generic handler's
// system text, and its template engine's (minja) polyfill tests for ChatML (the tools described, an
// earlier call, a tool result, a system message folded into the user's), written out here by hand.
import { ChatTemplate } from "@minfer/tokenizer";
import { describe, expect, it } from "vitest";
import type { ParsedMessage } from "../request.js";
import { builtinTemplate } from "../templates.js";
import { addSystem, genericMessages, polyfillMessages, templateJson } from "./generic-prompt.js";
import { templateCaps } from "./template-caps.js";
import { templateSource } from "./test-fixtures.js";

const chatml = builtinTemplate("chatml")!;

/** minja's test tool. */
const SPECIAL = {
  type: "function",
  function: {
    name: "special_function",
    description: "I'm special",
    parameters: {
      type: "object",
      properties: { arg1: { type: "integer", description: "The arg." } },
      required: ["arg1"],
    },
  },
};

const GENERIC =
  "Respond in JSON format, either with `tool_call` (a request to call tools) or with `response` reply to the user's request";

/** The tools part of minja's ToolsPolyfill expectation (ChatML, eos `<|im_end|>`). */
const TOOLS_TEXT =
  "You can call any of the following tools to satisfy the user's requests: [\n" +
  "  {\n" +
  '    "type": "function",\n' +
  '    "function": {\n' +
  '      "name": "special_function",\n' +
  '      "description": "I\'m special",\n' +
  '      "parameters": {\n' +
  '        "type": "object",\n' +
  '        "properties": {\n' +
  '          "arg1": {\n' +
  '            "type": "integer",\n' +
  '            "description": "The arg."\n' +
  "          }\n" +
  "        },\n" +
  '        "required": [\n' +
  '          "arg1"\n' +
  "        ]\n" +
  "      }\n" +
  "    }\n" +
  "  }\n" +
  "]";

const EXAMPLE_CALL =
  "{\n" +
  '  "tool_calls": [\n' +
  "    {\n" +
  '      "name": "tool_name",\n' +
  '      "arguments": {\n' +
  '        "arg1": "some_value"\n' +
  "      },\n" +
  '      "id": "call_1___"\n' +
  "    }\n" +
  "  ]\n" +
  "}";

const render = (t: ChatTemplate, messages: ParsedMessage[], eos = "<|im_end|>", add = true) =>
  t.render({ messages, addGenerationPrompt: add, bosToken: "", eosToken: eos });

const user = (content: string): ParsedMessage => ({ role: "user", content });

describe("templateJson", () => {
  it("prints as minja prints a value for a template", () => {
    expect(templateJson([SPECIAL])).toBe(TOOLS_TEXT.slice(TOOLS_TEXT.indexOf("[")));
  });

  it("keeps the line breaks of an empty array or object", () => {
    // (minja: the opening bracket, the inner indent on a new line, the outer indent on a new line)
    expect(templateJson({ a: {}, b: [] })).toBe('{\n  "a": {\n    \n  },\n  "b": [\n    \n  ]\n}');
    expect(templateJson([])).toBe("[\n  \n]");
  });
});

describe("addSystem", () => {
  it("joins the text to the system message after a blank line, or adds one", () => {
    expect(addSystem([{ role: "system", content: "Be nice." }, user("hi")], "X")).toEqual([
      { role: "system", content: "Be nice.\n\nX" },
      user("hi"),
    ]);
    expect(addSystem([user("hi")], "X")).toEqual([{ role: "system", content: "X" }, user("hi")]);
  });
});

describe("the generic prompt on ChatML", () => {
  it("is the answer format, the tools and the template's own call, in one system message", () => {
    const caps = templateCaps(chatml, { bos: "", eos: "<|im_end|>" });
    const text = render(chatml, genericMessages([user("I need help")], caps, [SPECIAL]));
    expect(text).toBe(
      `<|im_start|>system\n${GENERIC}\n\n${TOOLS_TEXT}\n\nExample tool call syntax:\n\n${EXAMPLE_CALL}\n\n<|im_end|>\n` +
        "<|im_start|>user\nI need help<|im_end|>\n<|im_start|>assistant\n",
    );
  });

  it("is added to the request's own system message", () => {
    const caps = templateCaps(chatml, { bos: "", eos: "<|im_end|>" });
    const messages = genericMessages([{ role: "system", content: "Be nice." }, user("hi")], caps, [SPECIAL]);
    expect(messages[0]!.content).toBe(
      `Be nice.\n\n${GENERIC}\n\n${TOOLS_TEXT}\n\nExample tool call syntax:\n\n${EXAMPLE_CALL}\n\n`,
    );
    expect(messages.slice(1)).toEqual([user("hi")]);
  });

  it("keeps the template's end of turn in the example when the model's EOS is another token", () => {
    // (stories260K's EOS is </s>: llama.cpp only cuts the EOS token itself off the example)
    const caps = templateCaps(chatml, { bos: "<s>", eos: "</s>" });
    expect(caps.example).toBe(`${EXAMPLE_CALL}<|im_end|>\n`);
  });

  it("writes the tools as llama.cpp hands them over: description and parameters filled in", () => {
    const caps = templateCaps(chatml, { bos: "", eos: "<|im_end|>" });
    const tool = { type: "function", function: { name: "f" } };
    const system = genericMessages([user("hi")], caps, [tool])[0]!.content as string;
    expect(system).toContain(
      '[\n  {\n    "type": "function",\n    "function": {\n      "name": "f",\n      "description": "",\n      "parameters": {\n        \n      }\n    }\n  }\n]',
    );
  });
});

describe("earlier calls and results on ChatML", () => {
  const caps = templateCaps(chatml, { bos: "", eos: "" });

  it("writes an assistant's calls as its content (minja's ToolCallPolyfill)", () => {
    const call = {
      role: "assistant",
      content: null,
      tool_calls: [
        { id: "123456789", type: "function", function: { name: "special_function", arguments: { arg1: 1 } } },
      ],
    };
    expect(render(chatml, polyfillMessages([user("I need help"), call], caps))).toBe(
      "<|im_start|>user\nI need help<|im_end|>\n<|im_start|>assistant\n{\n" +
        '  "tool_calls": [\n    {\n      "name": "special_function",\n      "arguments": {\n        "arg1": 1\n      },\n' +
        '      "id": "123456789"\n    }\n  ]\n}<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it("keeps the assistant's text beside its calls, and parses arguments given as JSON text", () => {
    const call = {
      role: "assistant",
      content: "Let me look.",
      tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: '{"a": "b"}' } }],
    };
    expect(polyfillMessages([call], caps)[0]!.content).toBe(
      '{\n  "tool_calls": [\n    {\n      "name": "f",\n      "arguments": {\n        "a": "b"\n      },\n      "id": "c1"\n    }\n  ],\n  "content": "Let me look."\n}',
    );
  });

  it("writes a tool result as a user message", () => {
    const result = { role: "tool", content: "Sunny", tool_call_id: "c1" };
    expect(render(chatml, polyfillMessages([result], caps))).toBe(
      '<|im_start|>user\n{\n  "tool_response": {\n    "content": "Sunny",\n    "tool_call_id": "c1"\n  }\n}<|im_end|>\n<|im_start|>assistant\n',
    );
    const named = { role: "tool", name: "weather", content: "Sunny", tool_call_id: "c1" };
    expect(polyfillMessages([named], caps)).toEqual([
      {
        role: "user",
        tool_call_id: "c1",
        content:
          '{\n  "tool_response": {\n    "tool": "weather",\n    "content": "Sunny",\n    "tool_call_id": "c1"\n  }\n}',
      },
    ]);
  });
});

describe("a template without a system role", () => {
  const noSystem = ChatTemplate.parse(
    "{%- for message in messages -%}" +
      "{%- if message['role'] == 'system' -%}{{ raise_exception('System role not supported') }}{%- endif -%}" +
      "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' -}}" +
      "{%- endfor -%}{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}",
    "chatml-no-system",
  );
  const caps = templateCaps(noSystem, { bos: "", eos: "" });

  it("is found out", () => {
    expect(caps.systemRole).toBe(false);
  });

  it("gets the system text at the start of the next user message (minja's SystemRolePolyfill)", () => {
    const messages = [{ role: "system", content: "I am The System!" }, user("I need help")];
    expect(render(noSystem, polyfillMessages(messages, caps))).toBe(
      "<|im_start|>user\nI am The System!\nI need help<|im_end|>\n<|im_start|>assistant\n",
    );
  });

  it("gets it as a user message of its own before another role", () => {
    const messages = [
      { role: "system", content: "S" },
      { role: "tool", content: "r", tool_call_id: "c" },
    ];
    expect(polyfillMessages(messages, caps).map((m) => m.role)).toEqual(["user", "user"]);
    expect(polyfillMessages(messages, caps)[0]!.content).toBe("S");
  });
});

describe("templateCaps", () => {
  it("finds what ChatML shows: system messages only", () => {
    const caps = templateCaps(chatml, { bos: "", eos: "" });
    expect({ ...caps, example: undefined }).toEqual({
      systemRole: true,
      tools: false,
      toolCalls: false,
      toolResponses: false,
      parallelToolCalls: false,
      objectArguments: false,
      example: undefined,
    });
  });

  it("finds a template that shows tools, calls and results (Qwen 2.5's), and takes no example from it", () => {
    const qwen = ChatTemplate.parse(templateSource("Qwen-Qwen2.5-7B-Instruct.jinja"));
    const caps = templateCaps(qwen, { bos: "", eos: "<|im_end|>" });
    expect(caps).toMatchObject({
      systemRole: true,
      tools: true,
      toolCalls: true,
      toolResponses: true,
      parallelToolCalls: true,
    });
    expect(caps.example).toBeUndefined();
  });

  it("keeps a tag whole in the example where the turn's opening tag differs (llama.cpp does not share a `<`)", () => {
    const tagged = ChatTemplate.parse(
      "{%- for m in messages -%}{%- if m.role == 'user' -%}U:{{ m.content }}" +
        "{%- else -%}A:<msg>{{ m.content }}</msg>{%- endif -%}{%- endfor -%}" +
        "{%- if add_generation_prompt -%}A:<think>{%- endif -%}",
      "tagged",
    );
    expect(templateCaps(tagged, { bos: "", eos: "" }).example).toBe(`<msg>${EXAMPLE_CALL}</msg>`);
  });

  it("finds Phi 3.5 shows neither tools nor calls (its assistant turn cannot print a null content)", () => {
    const phi = ChatTemplate.parse(templateSource("microsoft-Phi-3.5-mini-instruct.jinja"));
    const caps = templateCaps(phi, { bos: "", eos: "<|endoftext|>" });
    expect(caps).toMatchObject({ systemRole: true, tools: false, toolCalls: false });
    // (the template ends a conversation without a generation prompt with its EOS: llama.cpp keeps it)
    expect(caps.example).toBe(`${EXAMPLE_CALL}<|end|>\n<|endoftext|>`);
  });
});
