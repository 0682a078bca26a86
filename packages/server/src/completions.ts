import { randomUUID } from "node:crypto";
import type { OutgoingHttpHeaders } from "node:http";
import type { Model } from "@minfer/engine";
import { SamplerError } from "@minfer/sampler";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Batcher, JobFinish, JobResult, TokenEvent } from "./batcher.js";
import { ApiError, contextExceeded } from "./errors.js";
import type { ServerLimits } from "./limits.js";
import {
  type ChatLogprob,
  type CompletionLogprobs,
  emptyCompletionLogprobs,
  LogprobFormatter,
  type NativeLogprob,
  type NativePostProb,
} from "./logprobs.js";
import {
  generationSettings,
  nativeChunk,
  nativeResult,
  nativeTimings,
  partialTimings,
} from "./native-format.js";
import { tokenizePrompt } from "./prompt.js";
import { type BudgetRequest, budgetFor } from "./reasoning/index.js";
import type { ParsedCommon } from "./request.js";
import { compileGrammar, type GrammarRequest, makeSampler, requestGrammar } from "./sampling.js";
import type { ServerSampling } from "./server.js";
import { ServerError } from "./server-error.js";

/**
 * `system_fingerprint` of every completion object and chunk (as OpenAI and llama-server send one;
 * shaped like llama-server's `b<build>-<commit>`, which clients and its tests check the `b` of).
 */
export const SYSTEM_FINGERPRINT = "b-minfer";

/** A tool call as a choice returns it (OpenAI's message.tool_calls entry, flattened). */
export interface ToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

/** A fragment of a tool call, as streamed in delta.tool_calls. */
export interface ToolCallFragment {
  readonly index: number;
  readonly id?: string;
  readonly name?: string;
  readonly arguments: string;
}

/** What a choice's output parser releases: content, thinking split off (chat), tool-call fragments. */
export interface ParsedOutput {
  readonly content: string;
  /** Thinking text (a think block split off the content: `reasoning_content`). */
  readonly reasoning?: string;
  readonly deltas: readonly ToolCallFragment[];
}

/** Turns a choice's generated text into content, reasoning and tool calls (plain text by default). */
export interface OutputParser {
  push(text: string): ParsedOutput;
  /** The rest; `cut`: generation stopped at its token limit (finish "length"). */
  end(cut: boolean): ParsedOutput;
  readonly calls: readonly ToolCall[];
}

class PlainText implements OutputParser {
  readonly calls: readonly ToolCall[] = [];
  push(text: string) {
    return { content: text, deltas: [] };
  }
  end() {
    return { content: "", deltas: [] };
  }
}

/** A choice's whole answer, as another API's wire format reports it (WireFormat). */
export interface WireResult {
  readonly content: string;
  /** Thinking split off the content. */
  readonly reasoning: string;
  readonly calls: readonly ToolCall[];
  readonly finish: JobFinish;
  /** The stop string that ended the text, when one did. */
  readonly stopWord: string | undefined;
  readonly promptTokens: number;
  /** Prompt tokens read from the slot's cache instead of computed. */
  readonly cachedTokens: number;
  readonly completionTokens: number;
  /** llama-server's `timings` of the whole request (as chat's last chunk carries them). */
  readonly timings: Record<string, number>;
}

/** llama-server's `prompt_progress`: how much of the prompt is read (return_progress). */
export interface PromptProgress {
  readonly total: number;
  /** Prompt tokens read from the slot's cache. */
  readonly cache: number;
  /** Prompt tokens read so far, the cached ones included. */
  readonly processed: number;
  readonly time_ms: number;
}

/**
 * The answer of a chat job in another API's wire format (OpenAI's Responses, Anthropic's Messages):
 * the non-streamed body and the streamed events. Streamed, each method returns the raw SSE text to
 * write ("" for nothing). One choice only (n = 1). Without it, a job answers in OpenAI's
 * chat/completions format.
 */
export interface WireFormat {
  /** Streamed: the events right after the 200 headers, before any token. */
  begin(prompt: { promptTokens: number; cachedTokens: number }): string;
  /**
   * Streamed with return_progress: an event telling how much of the prompt is read, with the
   * timings so far under timings_per_token. Without it, a format sends no progress.
   */
  progress?(progress: PromptProgress, timings: Record<string, number> | undefined): string;
  /**
   * What the output parser released: for a generated token (`token` true), or its final flush.
   * Called when not streamed too (the format may count), its text then unused. `timings`: the
   * timings so far (streamed with timings_per_token), for the format to carry on its events.
   */
  delta(out: ParsedOutput, token: boolean, timings?: Record<string, number>): string;
  /** Streamed: the closing events. */
  end(result: WireResult): string;
  /** Not streamed: the response body. */
  body(result: WireResult): unknown;
  /** Streamed: an error after the headers, as this format's error event. */
  error(err: ApiError): string;
}

/**
 * What a completion request runs: its prompt, parsed fields and, for chat, tool handling. `native`:
 * llama-server's `/completion` format (native-format.ts).
 */
export interface CompletionJob {
  readonly kind: "chat" | "completion" | "native";
  /** The prompt's text, or its token ids as given (`ids`; `text` then only reported). */
  readonly prompt: { text: string; addSpecial: boolean; ids?: readonly number[] };
  /** native: the generated ids in the response. */
  readonly returnTokens?: boolean;
  /** native: n_probs as post-sampling probabilities. */
  readonly postSampling?: boolean;
  readonly p: ParsedCommon;
  /** A grammar that forces tool calls (tool_choice required / a named function). */
  readonly toolGrammar?: GrammarRequest;
  /** A fresh output parser per choice (tools); default plain text. */
  readonly parser?: () => OutputParser;
  /** A think block's token budget (llama-server's --reasoning-budget), forced closed when spent. */
  readonly reasoningBudget?: BudgetRequest;
  /** Control tokens the generated text shows: the chat format's markers, for its parser. */
  readonly preserve?: ReadonlySet<number>;
  /** chat: answer in this wire format instead of chat/completions' (one choice). */
  readonly wire?: WireFormat;
}

export interface CompletionDeps {
  readonly model: Model;
  readonly modelId: string;
  readonly batcher: Batcher;
  /** Per-request limit (ms), from arrival to the last token. */
  readonly timeoutMs?: number;
  /** Seconds a client should wait after a 503 (queue full). */
  readonly retryAfterS: number;
  readonly onQueueFull?: () => void;
  readonly limits: ServerLimits;
  /** The server's sampling defaults (ServerOptions.sampling) and generated-token default (nPredict). */
  readonly sampling?: ServerSampling;
  readonly nPredict?: number;
  /** ServerOptions.verbose: every non-streamed response carries `__verbose`. */
  readonly verbose?: boolean;
}

type OpenAiFinish = "stop" | "length" | "tool_calls" | null;

function mapFinish(reason: JobFinish | undefined, calls: number): OpenAiFinish {
  if (calls > 0 && (reason === "eog" || reason === "stop")) return "tool_calls";
  if (reason === "length" || reason === "context") return "length";
  if (reason === "eog" || reason === "stop") return "stop";
  return null;
}

interface Choice {
  readonly index: number;
  readonly parser: OutputParser;
  content: string;
  /** Thinking split off the content (reasoning_content). */
  reasoning: string;
  /** Tokens generated so far, and (native, streamed) the text no chunk carried yet. */
  generated: number;
  unsent: string;
  readonly chatLogprobs: ChatLogprob[];
  readonly nativeLogprobs: (NativeLogprob | NativePostProb)[];
  readonly textLogprobs: CompletionLogprobs;
  result?: JobResult;
}

/** Maps a batcher/engine failure to the error the client gets. */
function toApiError(e: unknown, retryAfterS: number): ApiError {
  if (e instanceof ApiError) return e;
  if (e instanceof ServerError) {
    if (e.code === "PROMPT_TOO_LONG")
      return new ApiError(400, e.message, "exceed_context_size_error", "messages", "context_length_exceeded");
    if (e.code === "QUEUE_FULL")
      return new ApiError(
        503,
        `the server is busy: ${e.message}; retry later`,
        "unavailable_error",
        null,
        "queue_full",
        {
          "retry-after": String(retryAfterS),
        },
      );
    if (e.code === "CLOSED") return new ApiError(503, e.message, "unavailable_error", null, "shutting_down");
    if (e.code === "CONTEXT_FULL")
      return new ApiError(503, `${e.message}; retry later`, "unavailable_error", null, "context_full", {
        "retry-after": String(retryAfterS),
      });
  }
  if (e instanceof SamplerError)
    return new ApiError(
      400,
      `sampling failed: ${e.message}`,
      "invalid_request_error",
      null,
      e.code.toLowerCase(),
    );
  return new ApiError(500, `internal error: ${(e as Error)?.message ?? String(e)}`, "server_error");
}

/**
 * Runs a chat or text completion request on the batcher: n choices as n jobs, streamed as SSE
 * or answered whole. Errors before the first byte are ordinary HTTP errors; after it, a last
 * `data: {"error": …}` event.
 */
export async function runCompletion(
  deps: CompletionDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  job: CompletionJob,
): Promise<unknown> {
  const { model, batcher } = deps;
  const { kind, p } = job;
  if (job.wire && (kind !== "chat" || p.n !== 1))
    throw new Error("runCompletion: a wire format answers one chat choice (n = 1)");
  const tokenizer = model.tokenizer;
  const param = kind === "chat" ? "messages" : "prompt";
  const ids =
    job.prompt.ids ??
    (await tokenizePrompt(
      tokenizer,
      job.prompt.text,
      { param, maxTokens: batcher.ctxPerSlot, addSpecial: job.prompt.addSpecial, parseSpecial: true },
      deps.limits,
    ));
  if (ids.length === 0)
    throw new ApiError(400, "the prompt has no tokens", "invalid_request_error", "prompt");
  if (ids.length >= batcher.ctxPerSlot)
    throw contextExceeded(
      `the request (${ids.length} prompt tokens) exceeds the available context size (${batcher.ctxPerSlot} tokens a slot, ` +
        "prompt and completion together); shorten the prompt or start the server with a larger -c / fewer -np",
      param,
      ids.length,
      batcher.ctxPerSlot,
    );
  if (p.idSlot !== undefined && p.idSlot >= batcher.parallel)
    throw new ApiError(
      400,
      `id_slot ${p.idSlot} does not exist; the slots are 0 to ${batcher.parallel - 1} (or -1: any)`,
      "invalid_request_error",
      "id_slot",
      "invalid_value",
    );
  const grammar = compileGrammar(model, requestGrammar(p, deps.limits, job.toolGrammar), deps.limits);
  // A think block's budget wraps the grammar (each choice its own), so both constrain every token.
  const budget = job.reasoningBudget ? budgetFor(tokenizer, job.reasoningBudget, ids) : undefined;
  const constraint = budget ? () => budget(grammar?.()) : grammar;
  const samplers = Array.from({ length: p.n }, (_, i) => makeSampler(model, p, constraint, i, deps.sampling));
  // the request's token limit, else the server's (ServerOptions.nPredict)
  const maxTokens = p.maxTokens ?? deps.nPredict;

  const id = `${kind === "chat" ? "chatcmpl" : "cmpl"}-${randomUUID().replace(/-/g, "")}`;
  const created = Math.floor(Date.now() / 1000);
  const object = kind === "chat" ? "chat.completion" : "text_completion";
  const chunkObject = kind === "chat" ? "chat.completion.chunk" : "text_completion";
  const fmt = new LogprobFormatter(tokenizer);
  // The prompt as the model reads it (special tokens shown), as llama-server reports it.
  const promptRead = () => tokenizer.decode(ids, { renderSpecial: true, keepLeadingSpace: true });
  const settings = () => generationSettings(samplers[0]!.options, p, maxTokens);
  let startedAt = 0;
  let firstTokenAt = 0;
  let cachedAtStart = 0;
  const choices: Choice[] = samplers.map((_, index) => ({
    index,
    parser: job.parser?.() ?? new PlainText(),
    content: "",
    reasoning: "",
    generated: 0,
    unsent: "",
    chatLogprobs: [],
    nativeLogprobs: [],
    textLogprobs: emptyCompletionLogprobs(),
  }));

  const abort = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableFinished) abort.abort();
  };
  reply.raw.on("close", onClose);
  request.raw.on("aborted", onClose);

  const sse = (data: unknown) => {
    if (!reply.raw.destroyed)
      reply.raw.write(`data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`);
  };
  // A wire format's events, as it wrote them.
  const raw = (text: string) => {
    if (text !== "" && !reply.raw.destroyed) reply.raw.write(text);
  };
  const streamError = (err: ApiError) => (job.wire ? raw(job.wire.error(err)) : sse(err.body()));
  const chunk = (choice: Record<string, unknown>) => ({
    id,
    object: chunkObject,
    created,
    model: deps.modelId,
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices: [choice],
  });
  let started = false;
  const start = () => {
    if (started || !p.stream) return;
    started = true;
    reply.hijack();
    // No Connection header of our own: Node keeps the connection alive or closes it after the
    // stream as the client asked (a client's `Connection: close` is honoured). The headers the
    // route set on the reply (the ignored fields) go with it.
    const headers: OutgoingHttpHeaders = { "content-type": "text/event-stream", "cache-control": "no-cache" };
    for (const [k, v] of Object.entries(reply.getHeaders()))
      if (v !== undefined && !(k.toLowerCase() in headers)) headers[k] = v;
    reply.raw.writeHead(200, headers);
    if (job.wire) raw(job.wire.begin({ promptTokens: ids.length, cachedTokens: cachedAtStart }));
    else if (kind === "chat")
      for (const c of choices)
        sse(
          chunk({
            index: c.index,
            delta: { role: "assistant", content: null }, // (llama-server's first delta: no text yet)
            logprobs: null,
            finish_reason: null,
          }),
        );
  };

  /** The timings so far, for timings_per_token chunks. */
  const timingsNow = (generated: number, read = ids.length) =>
    partialTimings({
      promptTokens: read,
      cachedTokens: cachedAtStart,
      generated,
      startedAt,
      firstTokenAt,
      now: performance.now(),
    });
  const progress = (x: { total: number; cache: number; processed: number }) => {
    if (!p.stream || !p.returnProgress) return;
    start();
    const prompt_progress = { ...x, time_ms: x.processed === x.cache ? 0 : performance.now() - startedAt };
    const readTimings = p.timingsPerToken ? timingsNow(0, x.processed) : undefined;
    const timings = readTimings ? { timings: readTimings } : {};
    if (job.wire) raw(job.wire.progress?.(prompt_progress, readTimings) ?? "");
    else if (kind === "native") sse({ index: 0, content: "", stop: false, prompt_progress, ...timings });
    else
      sse({
        id,
        object: chunkObject,
        created,
        model: deps.modelId,
        choices: [],
        prompt_progress,
        ...timings,
      });
  };

  const emit = (c: Choice, out: ParsedOutput, e?: TokenEvent) => {
    c.content += out.content;
    const reasoning = out.reasoning ?? "";
    c.reasoning += reasoning;
    if (e && e.token >= 0) {
      c.generated++;
      if (firstTokenAt === 0) firstTokenAt = performance.now();
    }
    const tokenTimings = p.timingsPerToken && p.stream ? timingsNow(c.generated) : undefined;
    const perToken = tokenTimings ? { timings: tokenTimings } : {};
    if (job.wire) {
      const text = job.wire.delta(out, e !== undefined && e.token >= 0, tokenTimings);
      if (p.stream && started) raw(text);
      return;
    }
    if (kind === "native") {
      // a chunk a token (llama-server's); text released without a token goes with the next one
      c.unsent += out.content;
      const lp =
        e && e.token >= 0 && p.nProbs !== undefined
          ? job.postSampling
            ? fmt.nativePost(e)
            : fmt.native(e)
          : undefined;
      if (lp) c.nativeLogprobs.push(lp);
      if (!p.stream || !e || e.token < 0) return;
      sse({
        ...nativeChunk(c.unsent, e.token, c.generated, ids.length),
        ...(lp ? { completion_probabilities: [lp] } : {}),
        ...perToken,
      });
      c.unsent = "";
      return;
    }
    const lp = e && e.token >= 0 && p.nProbs !== undefined ? e : undefined;
    let chatLp: ChatLogprob | undefined;
    if (lp) {
      if (kind === "chat") {
        chatLp = fmt.chat(lp);
        c.chatLogprobs.push(chatLp);
      } else fmt.completion(c.textLogprobs, lp, c.content.length - out.content.length);
    }
    if (!p.stream || (out.content === "" && reasoning === "" && out.deltas.length === 0 && !lp)) return;
    if (kind === "chat") {
      const delta: Record<string, unknown> = {};
      // (llama-server's deltas: the thinking under reasoning_content, beside content only when both came)
      if (reasoning !== "") delta.reasoning_content = reasoning;
      if (out.content !== "" || (out.deltas.length === 0 && reasoning === "")) delta.content = out.content;
      if (out.deltas.length > 0)
        delta.tool_calls = out.deltas.map((d) => ({
          index: d.index,
          ...(d.id !== undefined ? { id: d.id, type: "function" } : {}),
          function: { ...(d.name !== undefined ? { name: d.name } : {}), arguments: d.arguments },
        }));
      sse({
        ...chunk({
          index: c.index,
          delta,
          logprobs: chatLp ? { content: [chatLp], refusal: null } : null,
          finish_reason: null,
        }),
        ...perToken,
      });
    } else {
      let logprobs: CompletionLogprobs | null = null;
      if (lp) {
        const t = c.textLogprobs;
        const k = t.tokens.length - 1;
        logprobs = {
          tokens: t.tokens.slice(k),
          token_logprobs: t.token_logprobs.slice(k),
          top_logprobs: t.top_logprobs.slice(k),
          text_offset: t.text_offset.slice(k),
        };
      }
      sse({ ...chunk({ index: c.index, text: out.content, logprobs, finish_reason: null }), ...perToken });
    }
  };

  const deadline = deps.timeoutMs !== undefined ? performance.now() + deps.timeoutMs : undefined;
  let results: JobResult[];
  try {
    if (batcher.capacity() < p.n)
      throw new ServerError(
        "QUEUE_FULL",
        `all ${batcher.parallel} slots are busy and ${batcher.waiting} requests wait (the queue holds ${batcher.queueSize})` +
          (p.n > 1 ? `; n = ${p.n} choices need ${p.n} places, ${batcher.capacity()} are left` : ""),
      );
    const jobs = choices.map((c, i) =>
      batcher.submit({
        ids,
        sampler: samplers[i]!,
        ...(job.preserve ? { preserve: job.preserve } : {}),
        ...(maxTokens !== undefined ? { maxTokens } : {}),
        stop: p.stop,
        ...(p.nProbs !== undefined ? { nProbs: p.nProbs } : {}),
        ...(job.postSampling ? { postSampling: true } : {}),
        cachePrompt: p.cachePrompt,
        ...(p.idSlot !== undefined ? { slot: p.idSlot } : {}),
        ...(p.nKeep !== undefined ? { nKeep: p.nKeep } : {}),
        ...(p.draftMax !== undefined ? { draftMax: p.draftMax } : {}),
        ...(p.draftMin !== undefined ? { draftMin: p.draftMin } : {}),
        group: choices,
        signal: abort.signal,
        ...(deadline !== undefined ? { deadline } : {}),
        onStart: (info) => {
          if (startedAt === 0) {
            startedAt = performance.now();
            cachedAtStart = info.cachedTokens;
          }
          start();
        },
        ...(i === 0 ? { onPrefill: progress } : {}),
        onToken: (e) => emit(c, c.parser.push(e.text), e),
      }),
    );
    // One failed choice fails the request; the others stop too.
    for (const j of jobs) j.catch(() => abort.abort());
    results = await Promise.all(jobs);
  } catch (e) {
    abort.abort();
    reply.raw.off("close", onClose);
    request.raw.off("aborted", onClose);
    const err = toApiError(e, deps.retryAfterS);
    if (err.code === "queue_full") deps.onQueueFull?.();
    if (!started) throw err;
    if (err.status >= 500) request.log.error(e);
    streamError(err);
    reply.raw.end();
    return;
  }
  reply.raw.off("close", onClose);
  request.raw.off("aborted", onClose);
  results.forEach((r, i) => {
    const c = choices[i]!;
    c.result = r;
    emit(c, c.parser.end(r.finish === "length" || r.finish === "context"));
  });

  if (results.some((r) => r.finish === "shutdown")) {
    // The server stopped the request while closing: the client is told, not left hanging.
    const err = new ApiError(
      503,
      `the server is shutting down; the request was stopped after ${results.reduce((s, r) => s + r.tokens.length, 0)} generated tokens`,
      "unavailable_error",
      null,
      "shutting_down",
      { connection: "close", "retry-after": "1" },
    );
    if (!started) throw err;
    streamError(err);
    reply.raw.end();
    return;
  }
  if (results.some((r) => r.finish === "abort")) {
    // The client is gone (or the server is closing): nothing to answer.
    if (!started) reply.hijack();
    if (!reply.raw.destroyed) reply.raw.destroy();
    return;
  }
  const timedOut = results.some((r) => r.finish === "timeout");
  const usage = {
    prompt_tokens: ids.length,
    completion_tokens: results.reduce((s, r) => s + r.tokens.length, 0),
    total_tokens: ids.length + results.reduce((s, r) => s + r.tokens.length, 0),
    prompt_tokens_details: { cached_tokens: results[0]!.cachedTokens },
  };
  const timeoutError = new ApiError(
    504,
    `the request took longer than the server's --timeout of ${(deps.timeoutMs ?? 0) / 1000} s`,
    "server_error",
    null,
    "timeout",
  );
  const wireResult = (): WireResult => {
    const c = choices[0]!;
    const r = c.result!;
    return {
      content: c.content,
      reasoning: c.reasoning,
      calls: c.parser.calls,
      finish: r.finish,
      stopWord: r.stopWord,
      promptTokens: ids.length,
      cachedTokens: r.cachedTokens,
      completionTokens: r.tokens.length,
      timings: nativeTimings(r),
    };
  };
  const native = (c: Choice, streamed: boolean) => ({
    ...nativeResult({
      content: streamed ? c.unsent : c.content,
      tokens: !streamed && job.returnTokens ? c.result!.tokens : [],
      result: c.result!,
      modelId: deps.modelId,
      prompt: promptRead(),
      settings: settings(),
      fullContent: c.content,
    }),
    ...(!streamed && p.nProbs !== undefined ? { completion_probabilities: c.nativeLogprobs } : {}),
  });
  if (!p.stream || !started) {
    if (timedOut) throw timeoutError;
    if (p.stream) start();
    else if (kind === "native") return native(choices[0]!, false);
    else if (job.wire) return job.wire.body(wireResult());
    else
      return {
        id,
        object,
        created,
        model: deps.modelId,
        system_fingerprint: SYSTEM_FINGERPRINT,
        choices: choices.map((c) => finalChoice(kind, c, p.nProbs !== undefined)),
        usage,
        timings: nativeTimings(results[0]!),
        // llama-server's debugging view: the prompt as read and the settings the request ran with
        ...(p.verbose || deps.verbose
          ? {
              __verbose: {
                prompt: promptRead(),
                content: choices[0]!.content,
                generation_settings: settings(),
              },
            }
          : {}),
      };
  }
  if (timedOut) {
    streamError(timeoutError);
    reply.raw.end();
    return;
  }
  if (job.wire) {
    raw(job.wire.end(wireResult()));
    reply.raw.end();
    return;
  }
  if (kind === "native") {
    // llama-server's last chunk: stop true with the whole result's fields; no [DONE]
    sse(native(choices[0]!, true));
    reply.raw.end();
    return;
  }
  for (const c of choices) {
    const finish = mapFinish(c.result!.finish, c.parser.calls.length);
    sse(
      chunk(
        kind === "chat"
          ? { index: c.index, delta: {}, logprobs: null, finish_reason: finish }
          : { index: c.index, text: "", logprobs: null, finish_reason: finish },
      ),
    );
  }
  if (p.includeUsage)
    sse({
      id,
      object: chunkObject,
      created,
      model: deps.modelId,
      system_fingerprint: SYSTEM_FINGERPRINT,
      choices: [],
      usage,
      timings: nativeTimings(results[0]!),
    });
  sse("[DONE]");
  reply.raw.end();
}

function finalChoice(kind: CompletionJob["kind"], c: Choice, logprobs: boolean): Record<string, unknown> {
  const finish = mapFinish(c.result!.finish, c.parser.calls.length);
  if (kind === "completion")
    return {
      index: c.index,
      text: c.content,
      logprobs: logprobs ? c.textLogprobs : null,
      finish_reason: finish,
    };
  const calls = c.parser.calls;
  const message: Record<string, unknown> = {
    role: "assistant",
    content: calls.length > 0 && c.content.trim() === "" ? null : c.content,
  };
  if (c.reasoning !== "") message.reasoning_content = c.reasoning;
  if (calls.length > 0)
    message.tool_calls = calls.map((t) => ({
      id: t.id,
      type: "function",
      function: { name: t.name, arguments: t.arguments },
    }));
  return {
    index: c.index,
    message,
    logprobs: logprobs ? { content: c.chatLogprobs, refusal: null } : null,
    finish_reason: finish,
  };
}
