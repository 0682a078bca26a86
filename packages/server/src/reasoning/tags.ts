/** The think tags of a chat template, how a request asks for thinking to be returned, and whether a prompt opened the block. */

import { invalidField } from "../errors.js";
import { quote } from "../quote.js";

/** The tags around a model's thinking. */
export interface ThinkTags {
  readonly start: string;
  readonly end: string;
}

/** Tags by the marker in a template's source that shows them (the more specific first). */
const KNOWN: readonly ThinkTags[] = [
  { start: "<|START_THINKING|>", end: "<|END_THINKING|>" }, // Command R7B
  { start: "[THINK]", end: "[/THINK]" }, // Magistral
  { start: "<think>", end: "</think>" }, // DeepSeek R1, QwQ, Qwen3, GLM-4.5, Kimi K2 Thinking, Granite 3.3 …
];

/**
 * The think tags a chat template knows (its source writes them), or undefined for a template of a model
 * that does not think: then nothing is split out (as llama.cpp, whose templates without a reasoning
 * block parse no reasoning).
 */
export function thinkTagsOf(templateSource: string): ThinkTags | undefined {
  return KNOWN.find((t) => templateSource.includes(t.start));
}

/**
 * Whether a rendered prompt leaves a think block open for the model: it ends (but for whitespace) with the
 * start tag, as DeepSeek R1's and QwQ's generation prompts do (`<think>\n`). The generated text then starts
 * inside the block, without the tag.
 */
export function promptOpensThink(prompt: string, tags: ThinkTags): boolean {
  return prompt.trimEnd().endsWith(tags.start);
}

/**
 * llama-server's `--reasoning-format` / `reasoning_format`: how thinking is returned.
 * - `none`: not split out; the think block stays in `content` as generated.
 * - `deepseek`: in `message.reasoning_content` (and `delta.reasoning_content` when streamed).
 * - `deepseek-legacy`: in `message.reasoning_content` when not streamed; when streamed, kept in
 *   `delta.content` with its tags (the start tag put back when the prompt opened the block).
 * - `auto`: as `deepseek` (llama.cpp's default).
 */
export type ReasoningFormat = "none" | "auto" | "deepseek" | "deepseek-legacy";

export const REASONING_FORMATS: readonly ReasoningFormat[] = ["none", "auto", "deepseek", "deepseek-legacy"];

/** Whether `v` names a reasoning format. */
export function isReasoningFormat(v: unknown): v is ReasoningFormat {
  return typeof v === "string" && (REASONING_FORMATS as readonly string[]).includes(v);
}

/** A request's `reasoning_format` (undefined when absent or null); anything else is a 400 naming the field. */
export function parseReasoningFormat(v: unknown): ReasoningFormat | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isReasoningFormat(v))
    throw invalidField("reasoning_format", `must be one of ${REASONING_FORMATS.join(", ")}, got ${quote(v)}`);
  return v;
}
