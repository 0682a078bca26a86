/** A chat choice's output parser: the think block split off, then tool calls parsed out of the rest. */

import type { OutputParser, ParsedOutput, ToolCall } from "../completions.js";
import type { ToolCallParser } from "../tools/index.js";
import { ReasoningSplitter, type ReasoningSplitterOptions } from "./splitter.js";
import type { ReasoningFormat, ThinkTags } from "./tags.js";

const NO_CALLS: readonly ToolCall[] = [];

/** How a chat choice's text is read. */
export interface ChatOutputOptions {
  /** Splits the think block off into reasoning. */
  readonly split?: ReasoningSplitterOptions;
  /** Text the prompt ended with that the model continues (a prefill): read first, never released. */
  readonly prime?: string;
  /** Text put in front of the content (the start tag the prompt opened, for deepseek-legacy streams). */
  readonly prefix?: string;
  /** Parses tool calls out of the content. */
  readonly tools?: ToolCallParser;
}

/** Splitter → tool-call parser, each optional. */
export class ChatOutput implements OutputParser {
  readonly #splitter: ReasoningSplitter | undefined;
  readonly #tools: ToolCallParser | undefined;
  #prefix: string;

  constructor(o: ChatOutputOptions) {
    this.#splitter = o.split ? new ReasoningSplitter(o.split) : undefined;
    if (o.prime) this.#splitter?.push(o.prime);
    this.#tools = o.tools;
    this.#prefix = o.prefix ?? "";
  }

  get calls(): readonly ToolCall[] {
    return this.#tools?.calls ?? NO_CALLS;
  }

  push(text: string): ParsedOutput {
    if (this.#prefix !== "") {
      text = this.#prefix + text;
      this.#prefix = "";
    }
    const s = this.#splitter ? this.#splitter.push(text) : { reasoning: "", content: text };
    if (!this.#tools) return { content: s.content, reasoning: s.reasoning, deltas: [] };
    const r = this.#tools.push(s.content);
    return { content: r.content, reasoning: s.reasoning, deltas: r.deltas };
  }

  end(cut: boolean): ParsedOutput {
    const s = this.#splitter ? this.#splitter.end() : { reasoning: "", content: "" };
    const content = this.#prefix + s.content;
    if (!this.#tools) return { content, reasoning: s.reasoning, deltas: [] };
    const a = this.#tools.push(content);
    const b = this.#tools.end(cut);
    return { content: a.content + b.content, reasoning: s.reasoning, deltas: [...a.deltas, ...b.deltas] };
  }
}

/** What decides how a chat request's output is read. */
export interface ChatReading {
  /** The request's (or the server's) reasoning format. */
  readonly format: ReasoningFormat;
  /** The template's think tags (none: the model does not think, nothing is split). */
  readonly tags: ThinkTags | undefined;
  /** The prompt (without a prefill) left the think block open. */
  readonly open: boolean;
  readonly stream: boolean;
  /** The continued assistant text, when the request continues one. */
  readonly prefill?: string | undefined;
  /** Markers that end the block beside its end tag (the tool format's, when tools are on). */
  readonly ends?: readonly string[];
  /** A fresh tool-call parser, when tools are on. */
  readonly tools?: () => ToolCallParser;
}

/**
 * The output parser maker of a chat request, or undefined when its text is plain content (no tools, and no
 * thinking split off: the format is `none`, or the template has no think tags). `deepseek-legacy` streams
 * keep the block in the content, its start tag put back in front when the prompt had opened it.
 */
export function chatOutput(r: ChatReading): (() => OutputParser) | undefined {
  const split = r.format !== "none" && r.tags !== undefined;
  const inline = split && r.format === "deepseek-legacy" && r.stream;
  if (!split && !r.tools) return undefined;
  return () =>
    new ChatOutput({
      ...(split && !inline ? { split: { tags: r.tags!, open: r.open, ends: r.ends ?? [] } } : {}),
      ...(r.prefill !== undefined ? { prime: r.prefill } : {}),
      ...(inline && r.open && !r.prefill ? { prefix: r.tags!.start } : {}),
      ...(r.tools ? { tools: r.tools() } : {}),
    });
}

/**
 * The think block that forced tool calls (tool_choice) may follow, for the grammar: when thinking is split
 * off (as llama.cpp's grammar reads it) and the model is to think — the prompt opened the block (then it
 * must close first), or thinking was asked for (`enable_thinking` true, `--reasoning on`). Otherwise the
 * calls come first, as before: a block that is merely allowed would let a model that does not mean to
 * think wander in it without end.
 */
export function thinkBeforeCalls(
  format: ReasoningFormat,
  tags: ThinkTags | undefined,
  open: boolean,
  templateKwargs: Readonly<Record<string, unknown>>,
): (ThinkTags & { open: boolean }) | undefined {
  if (format === "none" || tags === undefined) return undefined;
  if (!open && templateKwargs.enable_thinking !== true) return undefined;
  return { ...tags, open };
}
