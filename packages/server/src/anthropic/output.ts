/**
 * A chat job's answer as an Anthropic message and its stream of events: thinking, text and tool_use
 * content blocks, each started, filled by deltas and stopped before the next one starts, as Anthropic
 * streams them; errors in Anthropic's shape.
 */

import { randomUUID } from "node:crypto";
import type { ParsedOutput, ToolCall, ToolCallFragment, WireFormat, WireResult } from "../completions.js";
import type { ApiError } from "../errors.js";

type Obj = Record<string, unknown>;

/** Anthropic's error type for an HTTP status. */
export function anthropicErrorType(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 413) return "request_too_large";
  if (status === 429) return "rate_limit_error";
  if (status === 503) return "overloaded_error";
  if (status === 504) return "timeout_error";
  if (status >= 500) return "api_error";
  return "invalid_request_error";
}

/** Anthropic's error body. */
export const anthropicError = (status: number, message: string) => ({
  type: "error",
  error: { type: anthropicErrorType(status), message },
});

/** Tool-use ids in Anthropic's form, from a tool call's id (`call_x` → `toolu_x`). */
const toolUseId = (callId: string) => `toolu_${callId.replace(/^call_/, "")}`;

/** The arguments as the input object (an unfinished or invalid text, cut by max_tokens: {}). */
function inputOf(args: string): unknown {
  try {
    const v: unknown = JSON.parse(args);
    return typeof v === "object" && v !== null && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}

/** Text beside tool calls that is only white space is no block of its own. */
const hasText = (text: string, calls: readonly ToolCall[]) =>
  text.trim() !== "" || (calls.length === 0 && text !== "");

/** Why the message ended, in Anthropic's words. */
function stopReason(r: WireResult): string {
  const ended = r.finish === "eog" || r.finish === "stop";
  if (ended && r.calls.length > 0) return "tool_use";
  if (r.finish === "stop" && r.stopWord !== undefined) return "stop_sequence";
  if (r.finish === "length") return "max_tokens";
  if (r.finish === "context") return "model_context_window_exceeded";
  return "end_turn";
}

type Block = { kind: "thinking" } | { kind: "text" } | { kind: "tool_use"; call: number };

export class AnthropicOutput implements WireFormat {
  readonly id = `msg_${randomUUID().replace(/-/g, "")}`;
  readonly #model: string;
  readonly #stream: boolean;
  #index = -1;
  #open: Block | undefined;
  #textBlocks = 0;
  /** Content that is only white space so far, held back until text follows (or the end). */
  #blank = "";

  constructor(o: { model: string; stream: boolean }) {
    this.#model = o.model;
    this.#stream = o.stream;
  }

  #usage(promptTokens: number, cachedTokens: number, outputTokens: number): Obj {
    return {
      input_tokens: promptTokens - cachedTokens,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: cachedTokens,
      output_tokens: outputTokens,
    };
  }

  #message(content: Obj[], stop: string | null, stopSequence: string | null, usage: Obj): Obj {
    return {
      id: this.id,
      type: "message",
      role: "assistant",
      model: this.#model,
      content,
      stop_reason: stop,
      stop_sequence: stopSequence,
      usage,
    };
  }

  body(r: WireResult): unknown {
    const content: Obj[] = [];
    if (r.reasoning !== "") content.push({ type: "thinking", thinking: r.reasoning, signature: "" });
    if (hasText(r.content, r.calls)) content.push({ type: "text", text: r.content, citations: null });
    for (const c of r.calls)
      content.push({ type: "tool_use", id: toolUseId(c.id), name: c.name, input: inputOf(c.arguments) });
    const stop = stopReason(r);
    return this.#message(
      content,
      stop,
      stop === "stop_sequence" ? r.stopWord! : null,
      this.#usage(r.promptTokens, r.cachedTokens, r.completionTokens),
    );
  }

  #event(type: string, fields: Obj = {}): string {
    return `event: ${type}\ndata: ${JSON.stringify({ type, ...fields })}\n\n`;
  }

  begin(prompt: { promptTokens: number; cachedTokens: number }): string {
    const usage = this.#usage(prompt.promptTokens, prompt.cachedTokens, 0);
    return (
      this.#event("message_start", { message: this.#message([], null, null, usage) }) + this.#event("ping")
    );
  }

  delta(out: ParsedOutput, _token: boolean): string {
    if (!this.#stream) return "";
    let s = "";
    if (out.reasoning) s += this.#thinking(out.reasoning);
    if (out.content !== "") s += this.#text(out.content);
    for (const d of out.deltas) s += this.#call(d);
    return s;
  }

  end(r: WireResult): string {
    let s = "";
    if (this.#blank !== "" && this.#textBlocks === 0 && r.calls.length === 0) {
      const blank = this.#blank;
      this.#blank = "";
      s += this.#text(blank, true);
    }
    s += this.#stop();
    const stop = stopReason(r);
    return (
      s +
      this.#event("message_delta", {
        delta: { stop_reason: stop, stop_sequence: stop === "stop_sequence" ? r.stopWord! : null },
        usage: this.#usage(r.promptTokens, r.cachedTokens, r.completionTokens),
      }) +
      this.#event("message_stop")
    );
  }

  error(err: ApiError): string {
    return this.#event("error", anthropicError(err.status, err.message));
  }

  /** Starts a block (stopping the one before). */
  #start(b: Block, contentBlock: Obj): string {
    const s = this.#stop();
    this.#open = b;
    this.#index++;
    return s + this.#event("content_block_start", { index: this.#index, content_block: contentBlock });
  }

  #stop(): string {
    const b = this.#open;
    if (!b) return "";
    this.#open = undefined;
    // (a thinking block ends with its signature; a local model's is empty, as llama-server sends it)
    const sig =
      b.kind === "thinking"
        ? this.#event("content_block_delta", {
            index: this.#index,
            delta: { type: "signature_delta", signature: "" },
          })
        : "";
    return sig + this.#event("content_block_stop", { index: this.#index });
  }

  #delta(delta: Obj): string {
    return this.#event("content_block_delta", { index: this.#index, delta });
  }

  #thinking(text: string): string {
    const s =
      this.#open?.kind === "thinking"
        ? ""
        : this.#start({ kind: "thinking" }, { type: "thinking", thinking: "", signature: "" });
    return s + this.#delta({ type: "thinking_delta", thinking: text });
  }

  /** Answer text; white space alone waits (it may only precede a tool call) unless `force`. */
  #text(text: string, force = false): string {
    let s = "";
    if (this.#open?.kind !== "text") {
      if (!force && text.trim() === "") {
        this.#blank += text;
        return "";
      }
      text = this.#blank + text;
      this.#blank = "";
      this.#textBlocks++;
      s = this.#start({ kind: "text" }, { type: "text", text: "", citations: null });
    }
    return s + this.#delta({ type: "text_delta", text });
  }

  #call(d: ToolCallFragment): string {
    let s = "";
    if (d.id !== undefined) {
      this.#blank = ""; // (white space before a call is no text of its own)
      s = this.#start(
        { kind: "tool_use", call: d.index },
        { type: "tool_use", id: toolUseId(d.id), name: d.name ?? "", input: {} },
      );
    }
    const open = this.#open;
    if (d.arguments === "" || open?.kind !== "tool_use" || open.call !== d.index) return s;
    return s + this.#delta({ type: "input_json_delta", partial_json: d.arguments });
  }
}
