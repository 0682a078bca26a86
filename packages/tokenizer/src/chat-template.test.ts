import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  type ChatMessage,
  ChatTemplate,
  type ChatTemplateRenderOptions,
  chatTemplatesFromMetadata,
} from "./chat-template.js";
import { TokenizerError } from "./errors.js";
import { fixturesDir } from "./test-vectors.js";

// Expected renderings come from test/templates/render.py (Python Jinja2 as transformers sets it up).
const here = resolve(dirname(fileURLToPath(import.meta.url)), "../test/templates");

interface Conversation {
  name: string;
  messages: ChatMessage[];
  tools?: unknown[];
  addGenerationPrompt?: boolean;
  kwargs?: Record<string, unknown>;
}
interface Spec {
  now: string;
  specialTokens: { prefix: string; bos: string; eos: string }[];
  conversations: Conversation[];
}
const spec = JSON.parse(readFileSync(join(here, "conversations.json"), "utf8")) as Spec;

/** The fixed local time of conversations.json ("YYYY-MM-DDTHH:MM:SS", no zone: local, as in Python). */
function localDate(iso: string): Date {
  const [y, mo, d, h, mi, s] = iso.split(/[-T:]/).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  return new Date(y, mo - 1, d, h, mi, s);
}
const now = localDate(spec.now);

function codeOf(f: () => unknown): [string, string] {
  try {
    f();
  } catch (error) {
    if (error instanceof TokenizerError) return [error.code, error.message];
    throw error;
  }
  return ["(no error)", ""];
}

function options(conversation: Conversation, stem: string): ChatTemplateRenderOptions {
  const tokens = spec.specialTokens.find((t) => stem.startsWith(t.prefix))!;
  return {
    messages: conversation.messages,
    ...(conversation.tools ? { tools: conversation.tools } : {}),
    addGenerationPrompt: conversation.addGenerationPrompt ?? true,
    bosToken: tokens.bos,
    eosToken: tokens.eos,
    kwargs: conversation.kwargs ?? {},
    now,
  };
}

const templatesDir = join(fixturesDir(), "templates");
const templateFiles = readdirSync(templatesDir)
  .filter((f) => f.endsWith(".jinja"))
  .sort();

describe("fixture templates render as transformers (Jinja2) does", () => {
  it("has fixture templates and expected files for each", () => {
    expect(templateFiles.length).toBeGreaterThanOrEqual(7);
    for (const file of templateFiles)
      expect(existsSync(join(here, "expected", file.replace(/\.jinja$/, "")))).toBe(true);
  });

  for (const file of templateFiles) {
    const stem = file.replace(/\.jinja$/, "");
    describe(stem, () => {
      const template = ChatTemplate.parse(readFileSync(join(templatesDir, file), "utf8"), stem);
      for (const conversation of spec.conversations) {
        const base = join(here, "expected", stem, conversation.name);
        it(conversation.name, () => {
          if (existsSync(`${base}.error.txt`)) {
            const pythonError = readFileSync(`${base}.error.txt`, "utf8");
            const [code, message] = codeOf(() => template.render(options(conversation, stem)));
            expect(code, pythonError).toBe("TEMPLATE_RENDER");
            // The template's own raise_exception message must come through unchanged.
            if (pythonError.startsWith("TemplateError: ")) expect(message).toBe(pythonError.slice(15));
          } else {
            const expected = readFileSync(`${base}.txt`, "utf8");
            expect(template.render(options(conversation, stem))).toBe(expected);
          }
        });
      }
    });
  }
});

describe("ChatTemplate.parse refuses what it cannot render faithfully", () => {
  it("an unknown filter, naming it and its line", () => {
    const [code, message] = codeOf(() =>
      ChatTemplate.parse("hello\n{% if x %}\n  {{ x | frobnicate }}\n{% endif %}"),
    );
    expect(code).toBe("TEMPLATE_UNSUPPORTED");
    expect(message).toContain('filter "frobnicate"');
    expect(message).toContain("line 3");
  });

  it("an unknown filter in a branch that would not run", () => {
    const [code, message] = codeOf(() =>
      ChatTemplate.parse("{% if false %}{{ 'a' | wordcount }}{% endif %}ok"),
    );
    expect(code).toBe("TEMPLATE_UNSUPPORTED");
    expect(message).toContain('filter "wordcount"');
    expect(message).toContain("line 1");
  });

  it("a syntax error, naming its line", () => {
    const [code, message] = codeOf(() =>
      ChatTemplate.parse("line one\n{{ messages }}\n{% if %}\n{% endif %}", "v"),
    );
    expect(code).toBe("TEMPLATE_UNSUPPORTED");
    expect(message).toMatch(/^chat template "v", line 3: syntax error/);
  });

  it("an unclosed block", () => {
    const [code, message] = codeOf(() => ChatTemplate.parse("{% for m in messages %}\n{{ m }}\n"));
    expect(code).toBe("TEMPLATE_UNSUPPORTED");
    expect(message).toContain("unexpected end of template");
  });

  it("an unsupported tag, test, method, global function and loop attribute", () => {
    const cases: [string, string, number][] = [
      ["a\n{% raw %}x{% endraw %}", 'tag "{% raw %}"', 2],
      ["\n\n{% if x is divisibleby %}{% endif %}", 'test "divisibleby"', 3],
      ["{{ 'x'.format(1) }}", 'method "format"', 1],
      ["\n{{ dict(a=1) }}", 'function "dict"', 2],
      ["{% for m in messages %}\n{{ loop.cycle('a', 'b') }}{% endfor %}", 'method "cycle"', 2],
      ["{% for m in messages %}{{ loop.depth }}{% endfor %}", 'loop attribute "loop.depth"', 1],
      ["{{ messages | map('upper') }}", 'filter "map without attribute="', 1],
    ];
    for (const [source, what, line] of cases) {
      const [code, message] = codeOf(() => ChatTemplate.parse(source));
      expect(code, source).toBe("TEMPLATE_UNSUPPORTED");
      expect(message, source).toContain(what);
      expect(message, source).toContain(`line ${line}`);
    }
  });

  it("accepts the template's own macros", () => {
    const t = ChatTemplate.parse("{% macro hi(n) %}hi {{ n }}{% endmacro %}{{ hi(messages | length) }}");
    expect(t.render({ messages: [{ role: "user", content: "x" }] })).toBe("hi 1");
  });
});

describe("rendering", () => {
  const user = [{ role: "user", content: "hi" }];

  it("raise_exception becomes TEMPLATE_RENDER with the template's message", () => {
    const t = ChatTemplate.parse("{{ raise_exception('Roles must alternate!') }}");
    expect(codeOf(() => t.render({ messages: user }))).toEqual(["TEMPLATE_RENDER", "Roles must alternate!"]);
  });

  it("other render failures are TEMPLATE_RENDER too", () => {
    const t = ChatTemplate.parse("{{ 'a' + 1 }}");
    const [code, message] = codeOf(() => t.render({ messages: user }));
    expect(code).toBe("TEMPLATE_RENDER");
    expect(message).toContain('can only concatenate str (not "int") to str');
  });

  it("strftime_now formats the given date as Python's strftime does", () => {
    // Expected string made with Python: datetime(2025,3,7,14,5,9).strftime(<the same format>).
    const t = ChatTemplate.parse(
      "{{ strftime_now('%a %A %b %B %d %e %m %Y %y %H %I %M %S %p %j %w %u %%') }}",
    );
    expect(t.render({ messages: user, now: localDate("2025-03-07T14:05:09") })).toBe(
      "Fri Friday Mar March 07  7 03 2025 25 14 02 05 09 PM 066 5 5 %",
    );
    const [code, message] = codeOf(() =>
      ChatTemplate.parse("{{ strftime_now('%Q') }}").render({ messages: user }),
    );
    expect(code).toBe("TEMPLATE_RENDER");
    expect(message).toContain('directive "%Q"');
  });

  it("tojson is json.dumps(ensure_ascii=False) with Python's separators, floats and key order", () => {
    const t = ChatTemplate.parse(
      "{{ x | tojson }}|{{ x | tojson(indent=2) }}|{{ x | tojson(sort_keys=true) }}|{{ x | tojson(separators=(',', ':')) }}|{{ x | tojson(ensure_ascii=true) }}",
    );
    const x = { é: "ü😀", b: [1, 0.5, 1e-7, 2.5e-5, true, null], a: {} };
    expect(t.render({ messages: user, kwargs: { x } })).toBe(
      [
        '{"é": "ü😀", "b": [1, 0.5, 1e-07, 2.5e-05, true, null], "a": {}}',
        '{\n  "é": "ü😀",\n  "b": [\n    1,\n    0.5,\n    1e-07,\n    2.5e-05,\n    true,\n    null\n  ],\n  "a": {}\n}',
        '{"a": {}, "b": [1, 0.5, 1e-07, 2.5e-05, true, null], "é": "ü😀"}',
        '{"é":"ü😀","b":[1,0.5,1e-07,2.5e-05,true,null],"a":{}}',
        '{"\\u00e9": "\\u00fc\\ud83d\\ude00", "b": [1, 0.5, 1e-07, 2.5e-05, true, null], "a": {}}',
      ].join("|"),
    );
  });

  it("prints values as Python's str() does", () => {
    const t = ChatTemplate.parse(
      "{{ none }} {{ true }} {{ x }} {{ 'a' ~ none }} {{ -7 % 3 }} {{ 7 // 2 }} {{ 1 / 2 }}",
    );
    expect(t.render({ messages: user, kwargs: { x: { a: [1, "b'", null] } } })).toBe(
      `None True {'a': [1, "b'", None]} aNone 2 3 0.5`,
    );
  });

  it("str methods take Python's arguments", () => {
    const t = ChatTemplate.parse(
      "[{{ s.lstrip('\\n') }}][{{ s.strip() }}][{{ 'hELLO wORLD'.title() }}][{{ s | length }}]",
    );
    expect(t.render({ messages: user, kwargs: { s: "\n  😀 x\n" } })).toBe(
      "[  😀 x\n][😀 x][Hello World][7]",
    );
  });

  it("tools is defined only when given; kwargs become variables", () => {
    const t = ChatTemplate.parse("{{ tools is defined }} {{ enable_thinking }} {{ add_generation_prompt }}");
    expect(t.render({ messages: user, kwargs: { enable_thinking: false } })).toBe("False False True");
    expect(t.render({ messages: user, tools: [], addGenerationPrompt: false })).toBe("True  False");
  });

  it("refuses bad arguments", () => {
    const t = ChatTemplate.parse("x");
    expect(codeOf(() => t.render({} as ChatTemplateRenderOptions))[0]).toBe("INVALID_ARGUMENT");
    expect(codeOf(() => t.render({ messages: user, kwargs: { messages: [] } }))[0]).toBe("INVALID_ARGUMENT");
    expect(codeOf(() => t.render({ messages: [{ role: "user", content: new Date() as never }] }))[0]).toBe(
      "INVALID_ARGUMENT",
    );
  });
});

describe("chatTemplatesFromMetadata", () => {
  function metadata(entries: Record<string, string>) {
    return {
      keys: () => Object.keys(entries)[Symbol.iterator](),
      optString: (key: string) => entries[key],
    };
  }

  it("reads the default and the named variants", () => {
    const md = metadata({
      "general.name": "m",
      "tokenizer.chat_template": "{{ 'default' }}",
      "tokenizer.chat_template.tool_use": "{{ 'tools' }}",
      "tokenizer.chat_template.rag": "{{ 'rag' }}",
    });
    const found = chatTemplatesFromMetadata(md);
    expect([...found.keys()]).toEqual(["default", "tool_use", "rag"]);
    const rendered = [...found].map(([name, source]) =>
      ChatTemplate.parse(source, name).render({ messages: [] }),
    );
    expect(rendered).toEqual(["default", "tools", "rag"]);
  });

  it("is empty without templates", () => {
    expect(chatTemplatesFromMetadata(metadata({ "general.name": "m" })).size).toBe(0);
  });
});
