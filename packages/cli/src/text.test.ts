import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { fixtures, minfer } from "./test-helpers.js";

const here = dirname(fileURLToPath(import.meta.url));
const vocab = (name: string) => join(fixtures, "vocab", `ggml-vocab-${name}.gguf`);
const tmp = mkdtempSync(join(tmpdir(), "minfer-cli-text-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Case `index` of llama.cpp's test vectors for a vocabulary: the text and the expected ids. */
function vector(name: string, index: number): { text: string; ids: number[] } {
  const base = vocab(name);
  const text = readFileSync(`${base}.inp`, "utf8").split("\n__ggml_vocab_test__\n")[index]!;
  const line = readFileSync(`${base}.out`, "utf8").split("\n")[index]!;
  return { text, ids: line.trim().split(/\s+/).map(Number) };
}

describe("minfer tokenize", () => {
  it("--ids --no-special prints exactly llama.cpp's test-vector ids as one JSON line", async () => {
    for (const [name, index] of [
      ["qwen2", 0],
      ["llama-spm", 5],
      ["gpt-2", 40],
    ] as const) {
      const { text, ids } = vector(name, index);
      const file = join(tmp, `${name}.txt`);
      writeFileSync(file, text);
      const r = await minfer("tokenize", "-m", vocab(name), "-f", file, "--ids", "--no-special");
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toBe(`${JSON.stringify(ids)}\n`);
    }
  });

  it("adds BOS and parses special tokens unless --no-special", async () => {
    const r = await minfer("tokenize", "-m", vocab("llama-spm"), "-p", "Hi</s>", "--ids");
    expect(JSON.parse(r.stdout)[0]).toBe(1);
    expect(JSON.parse(r.stdout).at(-1)).toBe(2);
    const plain = await minfer("tokenize", "-m", vocab("llama-spm"), "-p", "Hi</s>", "--ids", "--no-special");
    expect(JSON.parse(plain.stdout)).not.toContain(2);
  });

  it("prints each id with its piece", async () => {
    const r = await minfer("tokenize", "-m", vocab("qwen2"), "-p", "Hello world");
    expect(r.stdout).toBe('  9707 -> "Hello"\n  1879 -> " world"\n');
  });

  it("refuses a vocabulary it cannot tokenize exactly, by name", async () => {
    const r = await minfer("tokenize", "-m", vocab("gpt-neox"), "-p", "x");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("[UNKNOWN_PRE_TOKENIZER]");
    const both = await minfer("tokenize", "-m", vocab("qwen2"), "-p", "x", "-f", "y");
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("exactly one of -p TEXT or -f TEXTFILE");
  });
});

describe("minfer template", () => {
  const conversations = JSON.parse(
    readFileSync(resolve(here, "../../tokenizer/test/templates/conversations.json"), "utf8"),
  ) as { conversations: { name: string; messages: unknown[]; tools?: unknown[] }[] };
  const expected = (template: string, conversation: string) =>
    readFileSync(
      resolve(here, `../../tokenizer/test/templates/expected/${template}/${conversation}.txt`),
      "utf8",
    );

  it("prints exactly the prompt Python's Jinja renders (Qwen2.5 template, tools conversation)", async () => {
    const conv = conversations.conversations.find((c) => c.name === "tools")!;
    const messages = join(tmp, "messages.json");
    const tools = join(tmp, "tools.json");
    writeFileSync(messages, JSON.stringify(conv.messages));
    writeFileSync(tools, JSON.stringify(conv.tools));
    const r = await minfer(
      "template",
      "-m",
      vocab("qwen2"),
      "--messages",
      messages,
      "--tools",
      tools,
      "--chat-template-file",
      join(fixtures, "templates/Qwen-Qwen2.5-7B-Instruct.jinja"),
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(expected("Qwen-Qwen2.5-7B-Instruct", "tools"));
  });

  it("uses the model's own template and honours --no-generation-prompt", async () => {
    const messages = join(tmp, "m.json");
    writeFileSync(messages, JSON.stringify([{ role: "user", content: "Hi" }]));
    const withPrompt = await minfer("template", "-m", vocab("qwen2"), "--messages", messages);
    const without = await minfer(
      "template",
      "-m",
      vocab("qwen2"),
      "--messages",
      messages,
      "--no-generation-prompt",
    );
    expect(withPrompt.stdout).toBe(`${without.stdout}<|im_start|>assistant\n`);
    expect(without.stdout).toContain("<|im_start|>user\nHi<|im_end|>\n");
  });

  it("names what is wrong", async () => {
    const messages = join(tmp, "bad.json");
    writeFileSync(messages, "{not json");
    const r = await minfer("template", "-m", vocab("qwen2"), "--messages", messages);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("is not valid JSON");
    const ok = join(tmp, "ok.json");
    writeFileSync(ok, "[]");
    const bad = join(tmp, "bad.jinja");
    writeFileSync(bad, "line one\n{{ messages | frobnicate }}\n");
    const t = await minfer("template", "-m", vocab("qwen2"), "--messages", ok, "--chat-template-file", bad);
    expect(t.code).toBe(1);
    expect(t.stderr).toMatch(/\[TEMPLATE_UNSUPPORTED\].*line 2.*frobnicate/);
  });
});
