import { readdirSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { type ToolFormat, toolFormatOf } from "./formats.js";
import { TEMPLATES, templateSource } from "./test-fixtures.js";

/** Every fixture template and the format it should be read as (undefined: no tool support). */
const EXPECTED: Record<string, ToolFormat | undefined> = {
  "Qwen-QwQ-32B.jinja": "hermes",
  "Qwen-Qwen2.5-7B-Instruct.jinja": "hermes",
  "Qwen-Qwen3-0.6B.jinja": "hermes",
  // Renders past tool calls in DeepSeek's own tokens, but never shows the model the tools.
  "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": undefined,
  "meta-llama-Llama-3.1-8B-Instruct.jinja": "llama3",
  "meta-llama-Llama-3.2-3B-Instruct.jinja": "llama3",
  "microsoft-Phi-3.5-mini-instruct.jinja": undefined,
};

describe("toolFormatOf", () => {
  it("reads every fixture template", () => {
    const files = readdirSync(TEMPLATES).filter((f) => f.endsWith(".jinja"));
    expect(files.sort()).toEqual(Object.keys(EXPECTED).sort());
    for (const f of files) expect(toolFormatOf(templateSource(f)), f).toBe(EXPECTED[f]);
  });

  it("needs the tools variable beside the markers", () => {
    expect(toolFormatOf("{{ messages }} <tool_call>")).toBeUndefined();
    expect(toolFormatOf("{% if tools %}<tool_call>{% endif %}")).toBe("hermes");
    expect(toolFormatOf("{% if tools %}<|python_tag|>{% endif %}")).toBe("llama3");
    expect(toolFormatOf("{% for m in messages %}{{ m.content }}{% endfor %}")).toBeUndefined();
  });

  it("tries the specific markers before the general ones", () => {
    const t = (body: string) => `{% if tools %}${body}{% endif %}`;
    for (const [src, format] of [
      [t("<tool_call>{{ name }}<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>"), "glm-4.5"],
      [
        t("<tool_call>\n<function=f>\n<parameter=p>\nv\n</parameter>\n</function>\n</tool_call>"),
        "qwen3-coder",
      ],
      [t("<tool_call>{{ call | tojson }}</tool_call>"), "hermes"],
      [t("[TOOL_CALLS][{{ calls | tojson }}]"), "mistral-nemo"],
      [t("[TOOL_CALLS]{{ name }}[ARGS]{{ args }}"), "mistral"],
      [t("<\uff5ctool\u2581calls\u2581begin\uff5c>function\n```json\n"), "deepseek-r1"],
      [t("<\uff5ctool\u2581calls\u2581begin\uff5c>{{ name }}"), "deepseek-v3.1"],
      [t("<|tool_calls_section_begin|><|tool_call_begin|>"), "kimi-k2"],
      [t("<|START_ACTION|>"), "command-r7b"],
      [t("<|tool_call|>"), "granite"],
      [t("<|tool_call_start|>"), "lfm2"],
      [t("[func_name1(params_name1=params_value1, params_name2=params_value2...)]"), "pythonic"],
    ] as const)
      expect(toolFormatOf(src), src).toBe(format);
  });
});
