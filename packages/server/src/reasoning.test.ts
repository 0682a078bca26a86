// llama-server's reasoning handling without a model: think tags read from templates, whether a prompt
// opened the block, the splitting of generated text into reasoning and content (as llama.cpp's parser reads
// a think block: tests/test-chat.cpp's cases), the output parser of a chat choice, and the budget.

import { ChatTemplate } from "@minfer/tokenizer";
import { describe, expect, it } from "vitest";
import {
  budgetFor,
  ChatOutput,
  chatOutput,
  promptOpensThink,
  ReasoningBudget,
  type ReasoningBudgetSpec,
  ReasoningSplitter,
  type ReasoningSplitterOptions,
  reasoningSettings,
  thinkBeforeCalls,
  thinkTagsOf,
} from "./reasoning/index.js";
import { ServerError } from "./server-error.js";
import { DEEPSEEK, KIMI } from "./tools/format-sections.js";
import { ToolCallParser } from "./tools/index.js";
import { ownTemplateSource, templateSource } from "./tools/test-fixtures.js";
import { splits } from "./tools/test-parse.js";

const THINK = { start: "<think>", end: "</think>" };

describe("think tags and prompts that open the block", () => {
  it("reads the tags from the templates that write them", () => {
    for (const [source, tags] of [
      [templateSource("Qwen-Qwen3-0.6B.jinja"), THINK],
      [templateSource("Qwen-QwQ-32B.jinja"), THINK],
      [templateSource("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"), THINK],
      [templateSource("Qwen-Qwen2.5-7B-Instruct.jinja"), undefined],
      [templateSource("meta-llama-Llama-3.1-8B-Instruct.jinja"), undefined],
      [templateSource("microsoft-Phi-3.5-mini-instruct.jinja"), undefined],
      [ownTemplateSource("command-r7b.jinja"), { start: "<|START_THINKING|>", end: "<|END_THINKING|>" }],
      [ownTemplateSource("mistral-small.jinja"), { start: "[THINK]", end: "[/THINK]" }],
      [ownTemplateSource("glm-4.5.jinja"), THINK],
    ] as const)
      expect(thinkTagsOf(source)).toEqual(tags);
  });

  it("DeepSeek R1's and QwQ's generation prompts open the block; Qwen3's does not (thinking off: closed)", () => {
    const render = (file: string, kwargs: Record<string, unknown> = {}) =>
      ChatTemplate.parse(templateSource(file)).render({
        messages: [{ role: "user", content: "2+2?" }],
        addGenerationPrompt: true,
        bosToken: "<s>",
        kwargs,
      });
    expect(promptOpensThink(render("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"), THINK)).toBe(true);
    expect(promptOpensThink(render("Qwen-QwQ-32B.jinja"), THINK)).toBe(true);
    expect(promptOpensThink(render("Qwen-Qwen3-0.6B.jinja"), THINK)).toBe(false);
    const off = render("Qwen-Qwen3-0.6B.jinja", { enable_thinking: false });
    expect(off.endsWith("<think>\n\n</think>\n\n")).toBe(true);
    expect(promptOpensThink(off, THINK)).toBe(false);
  });
});

/** The reasoning and content of `text` given whole, after checking every split gives the same. */
function split(text: string, o: ReasoningSplitterOptions): { reasoning: string; content: string } {
  const run = (pieces: string[]) => {
    const s = new ReasoningSplitter(o);
    const out = { reasoning: "", content: "" };
    for (const p of [...pieces.map((x) => s.push(x)), s.end()]) {
      out.reasoning += p.reasoning;
      out.content += p.content;
    }
    return out;
  };
  const whole = run([text]);
  for (const pieces of splits(text)) expect(run(pieces), JSON.stringify(pieces)).toEqual(whole);
  return whole;
}

describe("ReasoningSplitter", () => {
  const closed = { tags: THINK, open: false };
  const open = { tags: THINK, open: true };

  it("a block at the message's start is reasoning, without the whitespace around it", () => {
    expect(split("<think>\nI'm\nthinking\n</think>\n\nHello, world!\nWhat's up?", closed)).toEqual({
      reasoning: "I'm\nthinking",
      content: "Hello, world!\nWhat's up?",
    });
    expect(split("\n <think>a</think>b", closed)).toEqual({ reasoning: "a", content: "b" });
  });

  it("when the prompt opened the block, the text starts inside it", () => {
    expect(split("I'm\nthinking</think>Hello, world!\nWhat's up?", open)).toEqual({
      reasoning: "I'm\nthinking",
      content: "Hello, world!\nWhat's up?",
    });
    expect(split("</think>Hello", open)).toEqual({ reasoning: "", content: "Hello" });
    // (not opened: the same text is content)
    expect(split("I'm thinking</think>Hello", closed)).toEqual({
      reasoning: "",
      content: "I'm thinking</think>Hello",
    });
  });

  it("a think block later in the text, or a lone end tag, is content", () => {
    for (const text of ["Hello <think>x</think> there", "<thinking>no</thinking>", "a</think>b", "<thin"])
      expect(split(text, closed), text).toEqual({ reasoning: "", content: text });
  });

  it("a block the text never closes (cut by max_tokens) is reasoning; whitespace-only reasoning is none", () => {
    expect(split("<think>\nstep one, step tw", closed)).toEqual({
      reasoning: "step one, step tw",
      content: "",
    });
    expect(split("still thinking \n", open)).toEqual({ reasoning: "still thinking", content: "" });
    expect(split("<think>\n\n</think>\n\nHi", closed)).toEqual({ reasoning: "", content: "Hi" });
  });

  it("other tags (Command R7B's), and markers that end the block without its end tag (they stay in the content)", () => {
    const r7b = { start: "<|START_THINKING|>", end: "<|END_THINKING|>" };
    expect(
      split("<|START_THINKING|>plan<|END_THINKING|><|START_RESPONSE|>Hi", { tags: r7b, open: false }),
    ).toEqual({
      reasoning: "plan",
      content: "<|START_RESPONSE|>Hi",
    });
    const call = `${KIMI.sectionBegin}${KIMI.callBegin}functions.f:0${KIMI.argsBegin}{}${KIMI.callEnd}${KIMI.sectionEnd}`;
    expect(split(`<think>I need f ${call}`, { tags: THINK, open: false, ends: [KIMI.sectionBegin] })).toEqual(
      {
        reasoning: "I need f",
        content: call,
      },
    );
  });

  it("streams reasoning as it comes, holding back only what may be a tag or trailing whitespace", () => {
    const s = new ReasoningSplitter(closed);
    expect(s.push("<thi")).toEqual({ reasoning: "", content: "" });
    expect(s.push("nk>\nLet me ")).toEqual({ reasoning: "Let me", content: "" });
    expect(s.push("see </th")).toEqual({ reasoning: " see", content: "" });
    expect(s.push("ink>\n\n")).toEqual({ reasoning: "", content: "" });
    expect(s.push("Four.")).toEqual({ reasoning: "", content: "Four." });
    expect(s.end()).toEqual({ reasoning: "", content: "" });
  });
});

const TOOLS = [{ name: "get_time", parameters: { type: "object", properties: {} } }];

/** A chat output parser fed `pieces`: the reasoning, the content and the calls. */
function read(
  make: () => { push(t: string): Out; end(cut: boolean): Out; calls: readonly unknown[] },
  pieces: string[],
  cut = false,
) {
  const p = make();
  const out = { reasoning: "", content: "", calls: [] as unknown[] };
  for (const r of [...pieces.map((x) => p.push(x)), p.end(cut)]) {
    out.reasoning += r.reasoning ?? "";
    out.content += r.content;
  }
  out.calls = p.calls.map((c) => {
    const { id: _id, ...rest } = c as { id: string; name: string; arguments: string };
    return rest;
  });
  return out;
}
type Out = { content: string; reasoning?: string };

describe("chatOutput: a choice's text as reasoning, content and calls", () => {
  it("reasoning before DeepSeek R1's tool calls, the prompt having opened the block", () => {
    const call = `${DEEPSEEK.callsBegin}${DEEPSEEK.callBegin}function${DEEPSEEK.sep}get_time\n\`\`\`json\n{}\n\`\`\`${DEEPSEEK.callEnd}${DEEPSEEK.callsEnd}`;
    const make = chatOutput({
      format: "auto",
      tags: THINK,
      open: true,
      stream: true,
      ends: [DEEPSEEK.callsBegin],
      tools: () => new ToolCallParser("deepseek-r1", TOOLS),
    })!;
    const want = {
      reasoning: "The time, then.",
      content: "",
      calls: [{ name: "get_time", arguments: "{}" }],
    };
    expect(read(make, [`The time, then.</think>\n\n${call}`])).toEqual(want);
    expect(read(make, [...`The time, then.</think>\n\n${call}`])).toEqual(want);
    // Straight from thinking into the calls, without </think>:
    expect(read(make, [...`The time, then.\n${call}`])).toEqual(want);
  });

  it("reasoning_format none and templates without tags: no parser at all without tools; the text is content", () => {
    expect(chatOutput({ format: "none", tags: THINK, open: true, stream: false })).toBeUndefined();
    expect(chatOutput({ format: "auto", tags: undefined, open: false, stream: false })).toBeUndefined();
    const make = chatOutput({
      format: "none",
      tags: THINK,
      open: false,
      stream: false,
      tools: () => new ToolCallParser("hermes", TOOLS),
    })!;
    expect(read(make, ["<think>x</think>y"])).toEqual({
      reasoning: "",
      content: "<think>x</think>y",
      calls: [],
    });
  });

  it("deepseek-legacy: split when not streamed; streamed, the block stays in the content with its start tag", () => {
    const text = "I think.</think>\n\nFour.";
    const whole = chatOutput({ format: "deepseek-legacy", tags: THINK, open: true, stream: false })!;
    expect(read(whole, [text])).toEqual({ reasoning: "I think.", content: "Four.", calls: [] });
    const streamed = chatOutput({ format: "deepseek-legacy", tags: THINK, open: true, stream: true })!;
    expect(read(streamed, [...text])).toEqual({ reasoning: "", content: `<think>${text}`, calls: [] });
    const notOpened = chatOutput({ format: "deepseek-legacy", tags: THINK, open: false, stream: true })!;
    expect(read(notOpened, ["<think>a</think>b"])).toEqual({
      reasoning: "",
      content: "<think>a</think>b",
      calls: [],
    });
  });

  it("a continued message's text is read first, not returned", () => {
    const make = chatOutput({ format: "auto", tags: THINK, open: true, stream: false, prefill: "Let me" })!;
    expect(read(make, [" see.</think>Done"])).toEqual({ reasoning: " see.", content: "Done", calls: [] });
    const closedPrefill = chatOutput({
      format: "auto",
      tags: THINK,
      open: true,
      stream: false,
      prefill: "x</think>Ans",
    })!;
    expect(read(closedPrefill, ["wer <think>no</think>"])).toEqual({
      reasoning: "",
      content: "wer <think>no</think>",
      calls: [],
    });
  });

  it("a block cut by max_tokens is reasoning; a call cut there keeps its partial arguments", () => {
    const make = chatOutput({
      format: "auto",
      tags: THINK,
      open: false,
      stream: true,
      tools: () => new ToolCallParser("hermes", [{ name: "f", parameters: {} }]),
    })!;
    expect(read(make, ["<think>hmm, the ans"], true)).toEqual({
      reasoning: "hmm, the ans",
      content: "",
      calls: [],
    });
    expect(read(make, ['<think>ok</think><tool_call>{"name": "f", "arguments": {"a": "b'], true)).toEqual({
      reasoning: "ok",
      content: "",
      calls: [{ name: "f", arguments: '{"a": "b' }],
    });
  });

  it("ChatOutput without a splitter or tools passes text through", () => {
    const o = new ChatOutput({});
    expect(o.push("a<think>")).toEqual({ content: "a<think>", reasoning: "", deltas: [] });
    expect(o.end(false)).toEqual({ content: "", reasoning: "", deltas: [] });
  });
});

/** Token ids of a toy vocabulary: each character one token, "<think>" 1 and "</think>" 2. */
const TOY: Record<number, string> = {
  1: "<think>",
  2: "</think>",
  3: "\n",
  4: "a",
  5: "b",
  6: "!",
  7: "é".slice(0, 1),
};
const toyBytes = (id: number): Uint8Array =>
  id === 8
    ? new Uint8Array([0xc3])
    : id === 9
      ? new Uint8Array([0xa9])
      : new TextEncoder().encode(TOY[id] ?? "");
const spec = (budget: number, forced = [2]): ReasoningBudgetSpec => ({
  start: [1],
  end: [2],
  forced,
  budget,
  tokenBytes: toyBytes,
});

describe("ReasoningBudget (llama.cpp's reasoning-budget sampler)", () => {
  it("counts the block's tokens and then forces the end tag, every other token masked", () => {
    const b = new ReasoningBudget(spec(3));
    for (const t of [4, 1, 4, 5]) {
      expect(b.allows(t)).toBe(true);
      b.accept(t);
    }
    expect(b.state).toBe("counting");
    b.accept(4);
    expect(b.state).toBe("forcing");
    expect(b.allows(4)).toBe(false);
    expect(b.allows(2)).toBe(true);
    expect(b.isComplete()).toBe(false);
    const logits = new Float32Array([1, 2, 3, 4, 5, 6]);
    b.mask(logits);
    expect([...logits]).toEqual([-Infinity, -Infinity, 3, -Infinity, -Infinity, -Infinity]);
    b.accept(2);
    expect(b.state).toBe("done");
    expect(b.allows(4)).toBe(true);
  });

  it("ends naturally before the budget; re-arms on a new start tag; 0 forces at once", () => {
    const b = new ReasoningBudget(spec(5));
    for (const t of [1, 4, 2]) b.accept(t);
    expect(b.state).toBe("done");
    b.accept(1);
    expect(b.state).toBe("counting");
    const zero = new ReasoningBudget(spec(0));
    zero.accept(1);
    expect(zero.state).toBe("forcing");
  });

  it("forces the budget message before the end tag", () => {
    const b = new ReasoningBudget(spec(1, [6, 6, 2]));
    for (const t of [1, 4]) b.accept(t);
    for (const t of [6, 6, 2]) {
      expect(b.allows(t)).toBe(true);
      expect(b.allows(5)).toBe(false);
      b.accept(t);
    }
    expect(b.state).toBe("done");
  });

  it("waits, after the budget, for a token that ends on a whole character before forcing", () => {
    const b = new ReasoningBudget(spec(2));
    for (const t of [1, 4, 8]) b.accept(t); // the budget is spent on the first byte of "é"
    expect(b.state).toBe("waiting-utf8");
    expect(b.allows(9)).toBe(true);
    // (llama.cpp checks each token's bytes alone: a lone continuation byte is not a whole character)
    b.accept(9);
    expect(b.state).toBe("waiting-utf8");
    b.accept(4);
    expect(b.state).toBe("forcing");
  });

  it("starts counting from the prompt's open block (its tokens after the start tag count), and reset() returns there", () => {
    const b = new ReasoningBudget(spec(2), undefined, [1, 3]);
    expect(b.state).toBe("counting");
    b.accept(4);
    expect(b.state).toBe("forcing");
    b.reset();
    expect(b.state).toBe("counting");
  });

  it("passes every token to the inner constraint (a grammar), which constrains as well", () => {
    const seen: number[] = [];
    const inner = {
      allows: (t: number) => t !== 5,
      mask: (l: Float32Array) => {
        l[5] = Number.NEGATIVE_INFINITY;
      },
      accept: (t: number) => {
        seen.push(t);
      },
      isComplete: () => true,
      isExhausted: () => false,
      reset: () => {
        seen.length = 0;
      },
    };
    const b = new ReasoningBudget(spec(9), inner);
    expect(b.allows(5)).toBe(false);
    b.accept(1);
    b.accept(4);
    expect(seen).toEqual([1, 4]);
    b.reset();
    expect(seen).toEqual([]);
  });

  it("budgetFor: the tags tokenized, and the prompt's tokens from its last start tag fed first", () => {
    const enc: Record<string, number[]> = { "<think>": [1], "</think>": [2], "Stop.": [6] };
    const tokenizer = { encode: (t: string) => enc[t] ?? [], tokenBytes: toyBytes };
    const make = budgetFor(
      tokenizer,
      { start: "<think>", end: "</think>", tokens: 2, message: "Stop.", open: true },
      [4, 1, 2, 5, 1, 3],
    );
    const b = make();
    expect(b.state).toBe("counting");
    b.accept(4);
    expect(b.state).toBe("forcing");
    expect(b.allows(6)).toBe(true);
    expect(b.allows(2)).toBe(false);
    const idle = budgetFor(
      tokenizer,
      { start: "<think>", end: "</think>", tokens: 2, open: false },
      [1, 3],
    )();
    expect(idle.state).toBe("idle");
  });
});

describe("thinkBeforeCalls: the think block forced calls may follow", () => {
  it("must close first when the prompt opened it; may come when thinking is asked for; else none", () => {
    expect(thinkBeforeCalls("auto", THINK, true, {})).toEqual({ ...THINK, open: true });
    expect(thinkBeforeCalls("deepseek", THINK, false, { enable_thinking: true })).toEqual({
      ...THINK,
      open: false,
    });
    expect(thinkBeforeCalls("auto", THINK, false, {})).toBeUndefined();
    expect(thinkBeforeCalls("auto", THINK, false, { enable_thinking: false })).toBeUndefined();
    expect(thinkBeforeCalls("none", THINK, true, {})).toBeUndefined();
    expect(thinkBeforeCalls("auto", undefined, true, {})).toBeUndefined();
  });
});

describe("reasoningSettings (ServerOptions)", () => {
  it("defaults as llama-server's, and refuses what it does not know", () => {
    expect(reasoningSettings({})).toEqual({ format: "auto", budget: -1, budgetMessage: "" });
    expect(reasoningSettings({ reasoningFormat: "none", reasoningBudget: 0 }).budget).toBe(0);
    for (const bad of [{ reasoningFormat: "r1" }, { reasoningBudget: -2 }, { reasoningBudget: 1.5 }])
      expect(() => reasoningSettings(bad as never)).toThrow(ServerError);
  });
});
