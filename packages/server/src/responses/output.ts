/**
 * A chat job's answer as an OpenAI Responses object and its stream of events: reasoning, message and
 * function_call output items, each opened (`output_item.added`), filled by deltas and closed
 * (`output_item.done`) before the next one opens, every event with its `sequence_number`. With
 * llama-server's telemetry asked for, `prompt_progress` rides on extra `response.in_progress` events
 * and `timings` on the last event of each token; the closing event always carries `timings`.
 */

import { randomUUID } from "node:crypto";
import type {
  ParsedOutput,
  PromptProgress,
  ToolCall,
  ToolCallFragment,
  WireFormat,
  WireResult,
} from "../completions.js";
import type { ApiError } from "../errors.js";

type Obj = Record<string, unknown>;

const hex = () => randomUUID().replace(/-/g, "");

/** Item ids from a tool call's id (`call_x` → `fc_x`), as llama-server pairs them. */
const callItemId = (callId: string) => `fc_${callId.replace(/^call_/, "")}`;

type ItemStatus = "in_progress" | "completed" | "incomplete";

/** An output item as it is built. */
type Item =
  | { kind: "reasoning"; id: string; text: string }
  | { kind: "message"; id: string; text: string }
  | { kind: "call"; id: string; callId: string; name: string; args: string };

function itemJson(it: Item, status: ItemStatus): Obj {
  if (it.kind === "reasoning")
    return {
      id: it.id,
      type: "reasoning",
      summary: [],
      content: status === "in_progress" ? [] : [{ type: "reasoning_text", text: it.text }],
      status,
    };
  if (it.kind === "message")
    return {
      id: it.id,
      type: "message",
      role: "assistant",
      status,
      content: status === "in_progress" ? [] : [outputText(it.text)],
    };
  return {
    id: it.id,
    type: "function_call",
    call_id: it.callId,
    name: it.name,
    arguments: status === "in_progress" ? "" : it.args,
    status,
  };
}

const outputText = (text: string) => ({ type: "output_text", text, annotations: [], logprobs: [] });

/** Whether the answer ran out of tokens (the response is then "incomplete"). */
const cut = (r: WireResult) => r.finish === "length" || r.finish === "context";

/**
 * Whether the text is an answer of its own: text beside tool calls that is only white space is
 * not (as chat answers such content with null).
 */
const hasMessage = (text: string, calls: readonly ToolCall[]) =>
  text.trim() !== "" || (calls.length === 0 && text !== "");

export interface ResponsesOutputOptions {
  readonly model: string;
  readonly stream: boolean;
  /** The request's fields the response repeats (ResponsesRequest.echo). */
  readonly echo: Obj;
}

export class ResponsesOutput implements WireFormat {
  readonly id = `resp_${hex()}`;
  readonly #createdAt = Math.floor(Date.now() / 1000);
  readonly #o: ResponsesOutputOptions;
  #seq = 0;
  /** Events built and not yet written (#flush writes them). */
  #pending: Obj[] = [];
  readonly #items: Item[] = [];
  #open: Item | undefined;
  /** Content that is only white space so far, held back until text follows (or the end). */
  #blank = "";
  #reasoningTokens = 0;

  constructor(o: ResponsesOutputOptions) {
    this.#o = o;
  }

  #event(type: string, fields: Obj): void {
    this.#pending.push({ type, sequence_number: this.#seq++, ...fields });
  }

  /**
   * The events built since the last flush, as SSE text; `extra` goes on the last one (llama-server's
   * timings and prompt_progress ride on the last event of each step).
   */
  #flush(extra: Obj = {}): string {
    const events = this.#pending;
    this.#pending = [];
    const last = events.at(-1);
    if (last) Object.assign(last, extra);
    return events.map((d) => `event: ${d.type}\ndata: ${JSON.stringify(d)}\n\n`).join("");
  }

  #usage(r: WireResult): Obj {
    return {
      input_tokens: r.promptTokens,
      input_tokens_details: { cached_tokens: r.cachedTokens },
      output_tokens: r.completionTokens,
      output_tokens_details: { reasoning_tokens: Math.min(this.#reasoningTokens, r.completionTokens) },
      total_tokens: r.promptTokens + r.completionTokens,
    };
  }

  /** The Response object (OpenAI's field order). */
  #response(status: string, output: Obj[], usage: Obj | null, extra: Obj = {}): Obj {
    const e = this.#o.echo;
    return {
      id: this.id,
      object: "response",
      created_at: this.#createdAt,
      status,
      background: false,
      ...(status === "in_progress" ? {} : { completed_at: Math.floor(Date.now() / 1000) }),
      error: null,
      incomplete_details: null,
      instructions: e.instructions ?? null,
      max_output_tokens: e.max_output_tokens ?? null,
      max_tool_calls: null,
      model: this.#o.model,
      output,
      parallel_tool_calls: e.parallel_tool_calls ?? true,
      previous_response_id: null,
      reasoning: { effort: null, summary: null },
      service_tier: "default",
      store: false,
      temperature: e.temperature ?? null,
      text: e.text ?? { format: { type: "text" } },
      tool_choice: e.tool_choice ?? "auto",
      tools: e.tools ?? [],
      top_logprobs: 0,
      top_p: e.top_p ?? null,
      truncation: "disabled",
      usage,
      user: e.user ?? null,
      metadata: e.metadata ?? {},
      ...extra,
    };
  }

  #final(r: WireResult, output: Obj[]): Obj {
    return this.#response(cut(r) ? "incomplete" : "completed", output, this.#usage(r), {
      ...(cut(r) ? { incomplete_details: { reason: "max_output_tokens" } } : {}),
    });
  }

  body(r: WireResult): unknown {
    const status: ItemStatus = cut(r) ? "incomplete" : "completed";
    const items: Item[] = [];
    if (r.reasoning !== "") items.push({ kind: "reasoning", id: `rs_${hex()}`, text: r.reasoning });
    if (hasMessage(r.content, r.calls)) items.push({ kind: "message", id: `msg_${hex()}`, text: r.content });
    for (const c of r.calls)
      items.push({ kind: "call", id: callItemId(c.id), callId: c.id, name: c.name, args: c.arguments });
    // (the last item is the one the token limit cut)
    return this.#final(
      r,
      items.map((it, i) => itemJson(it, i === items.length - 1 ? status : "completed")),
    );
  }

  begin(): string {
    const r = this.#response("in_progress", [], null);
    this.#event("response.created", { response: r });
    this.#event("response.in_progress", { response: r });
    return this.#flush();
  }

  /** How much of the prompt is read: another response.in_progress event, as llama-server sends. */
  progress(progress: PromptProgress, timings: Record<string, number> | undefined): string {
    this.#event("response.in_progress", { response: this.#response("in_progress", [], null) });
    return this.#flush({ prompt_progress: progress, ...(timings ? { timings } : {}) });
  }

  delta(out: ParsedOutput, token: boolean, timings?: Record<string, number>): string {
    const reasoning = out.reasoning ?? "";
    // (a token that released thinking and no answer counts as a reasoning token)
    if (token && reasoning !== "" && out.content === "") this.#reasoningTokens++;
    if (!this.#o.stream) return "";
    if (reasoning !== "") this.#reasoning(reasoning);
    if (out.content !== "") this.#text(out.content);
    for (const d of out.deltas) this.#call(d);
    return this.#flush(timings ? { timings } : {});
  }

  /** The closing events; the last one carries the request's timings, as llama-server's does. */
  end(r: WireResult): string {
    if (this.#blank !== "" && !this.#items.some((it) => it.kind === "message") && r.calls.length === 0) {
      const blank = this.#blank;
      this.#blank = "";
      this.#text(blank, true);
    }
    this.#close(cut(r) ? "incomplete" : "completed");
    const output = this.#items.map((it) => itemJson(it, this.#statusOf(it, r)));
    const type = cut(r) ? "response.incomplete" : "response.completed";
    this.#event(type, { response: this.#final(r, output) });
    return this.#flush({ timings: r.timings });
  }

  error(err: ApiError): string {
    const code = err.code ?? (err.status >= 500 ? "server_error" : "invalid_request");
    const output = this.#items.map((it) => itemJson(it, it === this.#open ? "incomplete" : "completed"));
    const failed = this.#response("failed", output, null, { error: { code, message: err.message } });
    this.#event("error", { code, message: err.message, param: err.param });
    this.#event("response.failed", { response: failed });
    return this.#flush();
  }

  #statusOf(it: Item, r: WireResult): ItemStatus {
    return cut(r) && it === this.#items.at(-1) ? "incomplete" : "completed";
  }

  /** Opens an item (closing the one before): its output_item.added and, for text, its content part. */
  #openItem(it: Item): void {
    this.#close("completed");
    this.#items.push(it);
    this.#open = it;
    const ref = { item_id: it.id, output_index: this.#items.length - 1, content_index: 0 };
    this.#event("response.output_item.added", {
      output_index: ref.output_index,
      item: itemJson(it, "in_progress"),
    });
    if (it.kind === "message") this.#event("response.content_part.added", { ...ref, part: outputText("") });
    if (it.kind === "reasoning")
      this.#event("response.content_part.added", { ...ref, part: { type: "reasoning_text", text: "" } });
  }

  /** Closes the open item: its text's and part's done events, then output_item.done. */
  #close(status: ItemStatus): void {
    const it = this.#open;
    if (!it) return;
    this.#open = undefined;
    const output_index = this.#items.indexOf(it);
    const ref = { item_id: it.id, output_index, content_index: 0 };
    if (it.kind === "message") {
      this.#event("response.output_text.done", { ...ref, text: it.text, logprobs: [] });
      this.#event("response.content_part.done", { ...ref, part: outputText(it.text) });
    } else if (it.kind === "reasoning") {
      this.#event("response.reasoning_text.done", { ...ref, text: it.text });
      this.#event("response.content_part.done", { ...ref, part: { type: "reasoning_text", text: it.text } });
    } else
      this.#event("response.function_call_arguments.done", {
        item_id: it.id,
        output_index,
        name: it.name,
        arguments: it.args,
      });
    this.#event("response.output_item.done", { output_index, item: itemJson(it, status) });
  }

  #reasoning(text: string): void {
    let it = this.#open;
    if (it?.kind !== "reasoning") {
      it = { kind: "reasoning", id: `rs_${hex()}`, text: "" };
      this.#openItem(it);
    }
    it.text += text;
    this.#event("response.reasoning_text.delta", {
      item_id: it.id,
      output_index: this.#items.length - 1,
      content_index: 0,
      delta: text,
    });
  }

  /** Answer text; white space alone waits (it may only precede a tool call) unless `force`. */
  #text(text: string, force = false): void {
    let it = this.#open;
    if (it?.kind !== "message") {
      if (!force && text.trim() === "") {
        this.#blank += text;
        return;
      }
      text = this.#blank + text;
      this.#blank = "";
      it = { kind: "message", id: `msg_${hex()}`, text: "" };
      this.#openItem(it);
    }
    it.text += text;
    this.#event("response.output_text.delta", {
      item_id: it.id,
      output_index: this.#items.length - 1,
      content_index: 0,
      delta: text,
      logprobs: [],
    });
  }

  #call(d: ToolCallFragment): void {
    if (d.id !== undefined) {
      this.#blank = ""; // (white space before a call is no answer of its own)
      this.#openItem({ kind: "call", id: callItemId(d.id), callId: d.id, name: d.name ?? "", args: "" });
    }
    const calls = this.#items.filter((it) => it.kind === "call");
    const it = calls[d.index];
    if (it?.kind !== "call" || d.arguments === "") return;
    it.args += d.arguments;
    this.#event("response.function_call_arguments.delta", {
      item_id: it.id,
      output_index: this.#items.indexOf(it),
      delta: d.arguments,
    });
  }
}
