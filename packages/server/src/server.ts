import { randomUUID } from "node:crypto";
import { basename } from "node:path";
import {
  Context,
  type ContextOptions,
  EngineError,
  type FinishReason,
  type Generation,
  generate,
  type Model,
} from "@minfer/engine";
import { Grammar, jsonSchemaToGbnf, LLAMA_CPP_SAMPLING, Sampler, type SamplerOptions } from "@minfer/sampler";
import type { ChatTemplate } from "@minfer/tokenizer";
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { ApiError, type ParsedCommon, parseChat, parseCompletion } from "./request.js";
import { registerTextRoutes } from "./text-routes.js";

export interface ServerOptions {
  /** The loaded model (the caller keeps ownership and disposes it after `close()`). */
  readonly model: Model;
  /** Options of the one Context requests run on. */
  readonly contextOptions?: ContextOptions;
  /** A chat template instead of the model's own. */
  readonly chatTemplate?: ChatTemplate;
  /** When set, /v1/* requires `Authorization: Bearer <apiKey>`. */
  readonly apiKey?: string;
  /** The model id reported by /v1/models and in responses. Default: the file's name. */
  readonly modelId?: string;
  /** Called after each generation (also aborted ones) with its engine finish reason. */
  readonly onGeneration?: (info: {
    finishReason: FinishReason;
    completionTokens: number;
    promptTokens: number;
  }) => void;
  /** Fastify's logger option (false by default). */
  readonly logger?: boolean | Record<string, unknown>;
}

export interface MinferServer {
  readonly app: FastifyInstance;
  readonly context: Context;
  readonly modelId: string;
  /** Starts listening; resolves to the address, e.g. http://127.0.0.1:8080. */
  listen(port?: number, host?: string): Promise<string>;
  /** Stops listening, aborts what runs, frees the context (not the model). */
  close(): Promise<void>;
}

type OpenAiFinish = "stop" | "length" | null;

function mapFinish(reason: FinishReason | undefined): OpenAiFinish {
  if (reason === "length" || reason === "context") return "length";
  if (reason === "eog" || reason === "stop") return "stop";
  return null;
}

const nextTick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Runs jobs one after another (first come, first served). */
class Queue {
  private tail: Promise<unknown> = Promise.resolve();
  run<T>(job: () => Promise<T>): Promise<T> {
    const result = this.tail.then(job);
    this.tail = result.catch(() => undefined);
    return result;
  }
}

/** An OpenAI-compatible server over one model and one context; requests run one at a time. */
export function createServer(options: ServerOptions): MinferServer {
  const { model } = options;
  const context = new Context(model, options.contextOptions ?? {});
  const modelId = options.modelId ?? basename(model.path).replace(/\.gguf$/i, "");
  const template = options.chatTemplate ?? model.chatTemplate;
  const nVocab = model.hparams.nVocab;
  const created = Math.floor(Date.now() / 1000);
  const queue = new Queue();
  const running = new Set<AbortController>();
  const app = Fastify({ logger: options.logger ?? false, bodyLimit: 8 * 1024 * 1024 });

  app.setErrorHandler((error: unknown, request, reply) => {
    if (error instanceof ApiError) return reply.code(error.status).send(error.body());
    const e = error as { statusCode?: number; message?: string; code?: string };
    if (typeof e.statusCode === "number" && e.statusCode >= 400 && e.statusCode < 500)
      return reply
        .code(e.statusCode)
        .send(
          new ApiError(
            e.statusCode,
            e.message ?? "bad request",
            "invalid_request_error",
            null,
            e.code ?? null,
          ).body(),
        );
    request.log.error(error);
    return reply
      .code(500)
      .send(new ApiError(500, `internal error: ${e.message ?? String(error)}`, "server_error").body());
  });
  app.setNotFoundHandler((request, reply) =>
    reply
      .code(404)
      .send(
        new ApiError(
          404,
          `no route ${request.method} ${request.url}`,
          "invalid_request_error",
          null,
          "not_found",
        ).body(),
      ),
  );

  app.addHook("onRequest", async (request, reply) => {
    // Everything but /health needs the key when one is set (llama-server does the same).
    if (options.apiKey === undefined || request.url === "/health") return;
    if (request.headers.authorization !== `Bearer ${options.apiKey}`)
      return reply
        .code(401)
        .send(
          new ApiError(
            401,
            "invalid or missing API key",
            "invalid_request_error",
            null,
            "invalid_api_key",
          ).body(),
        );
  });

  app.get("/health", async () => ({ status: "ok" }));
  registerTextRoutes(app, model, (messages) => renderChat(messages));
  app.get("/v1/models", async () => ({
    object: "list",
    data: [{ id: modelId, object: "model", created, owned_by: "minfer" }],
  }));

  function makeSampler(p: ParsedCommon): Sampler {
    let constraint: SamplerOptions["constraint"];
    const rf = p.responseFormat;
    if (rf.type !== "text") {
      const param = rf.type === "json_schema" ? "response_format.json_schema.schema" : "response_format";
      try {
        const gbnf = jsonSchemaToGbnf(rf.type === "json_schema" ? rf.schema : { type: "object" });
        constraint = Grammar.parse(gbnf).constraint(model.tokenizer);
      } catch (e) {
        throw new ApiError(
          400,
          `the JSON Schema cannot be enforced: ${(e as Error).message}`,
          "invalid_request_error",
          param,
          "unsupported_schema",
        );
      }
    }
    const so: SamplerOptions = {
      ...LLAMA_CPP_SAMPLING,
      ...(p.temperature !== undefined ? { temperature: p.temperature } : {}),
      ...(p.topP !== undefined ? { topP: p.topP } : {}),
      ...(p.topK !== undefined ? { topK: p.topK } : {}),
      ...(p.minP !== undefined ? { minP: p.minP } : {}),
      ...(p.seed !== undefined ? { seed: ((p.seed % 2 ** 32) + 2 ** 32) % 2 ** 32 } : {}),
      ...(p.presencePenalty !== undefined ? { presencePenalty: p.presencePenalty } : {}),
      ...(p.frequencyPenalty !== undefined ? { frequencyPenalty: p.frequencyPenalty } : {}),
      ...(p.repeatPenalty !== undefined ? { repeatPenalty: p.repeatPenalty } : {}),
      ...(p.logitBias ? { logitBias: p.logitBias } : {}),
      vocab: model.tokenizer,
      ...(constraint ? { constraint } : {}),
    };
    try {
      return new Sampler(so);
    } catch (e) {
      throw new ApiError(400, (e as Error).message);
    }
  }

  function renderChat(messages: { role: string; content: string }[]): { text: string; addSpecial: boolean } {
    if (!template)
      throw new ApiError(
        400,
        `the model ${modelId} has no chat template; use /v1/completions or start the server with a chat template file`,
        "invalid_request_error",
        "messages",
        "no_chat_template",
      );
    const { tokenizer } = model;
    const tokenText = (id: number | undefined) => (id === undefined ? "" : tokenizer.tokenText(id));
    const bos = tokenText(tokenizer.vocab.special.bos);
    let text: string;
    try {
      text = template.render({
        messages,
        addGenerationPrompt: true,
        bosToken: bos,
        eosToken: tokenText(tokenizer.vocab.special.eos),
      });
    } catch (e) {
      throw new ApiError(
        400,
        `the chat template refused the messages: ${(e as Error).message}`,
        "invalid_request_error",
        "messages",
      );
    }
    return { text, addSpecial: !(bos !== "" && text.startsWith(bos)) };
  }

  /**
   * Runs one request's generation in the queue. `onPiece` gets each text piece; the first call
   * to it comes only after the prompt is accepted, so errors before it are ordinary HTTP errors.
   */
  async function run(
    request: FastifyRequest,
    reply: FastifyReply,
    prompt: { text: string; addSpecial: boolean },
    p: ParsedCommon,
    onStart: () => void,
    onPiece: (text: string) => void,
  ): Promise<Generation> {
    const sampler = makeSampler(p);
    const abort = new AbortController();
    const onClose = () => {
      if (!reply.raw.writableFinished) abort.abort();
    };
    reply.raw.on("close", onClose);
    request.raw.on("aborted", onClose);
    try {
      return await queue.run(async () => {
        running.add(abort);
        try {
          const g = generate(context, prompt.text, {
            sampler,
            addSpecial: prompt.addSpecial,
            stop: p.stop,
            ...(p.maxTokens !== undefined ? { maxTokens: p.maxTokens } : {}),
            signal: abort.signal,
          });
          const it = g[Symbol.asyncIterator]();
          let first = true;
          for (;;) {
            let next: IteratorResult<{ text: string }>;
            try {
              next = await it.next();
            } catch (e) {
              if (
                first &&
                e instanceof EngineError &&
                (e.code === "NO_KV_ROOM" || e.code === "INVALID_ARGUMENT")
              )
                throw new ApiError(
                  400,
                  `the prompt does not fit the context of ${context.nCtx} tokens: ${e.message}`,
                  "invalid_request_error",
                  "messages",
                  "context_length_exceeded",
                );
              throw e;
            }
            if (first) {
              first = false;
              onStart();
            }
            if (next.done) break;
            if (next.value.text) onPiece(next.value.text);
            // Let the event loop run between tokens: health checks, disconnects.
            await nextTick();
          }
          options.onGeneration?.({
            finishReason: g.finishReason ?? "abort",
            completionTokens: g.tokens.length,
            promptTokens: g.timings?.promptTokens ?? 0,
          });
          return g;
        } finally {
          running.delete(abort);
        }
      });
    } finally {
      reply.raw.off("close", onClose);
      request.raw.off("aborted", onClose);
    }
  }

  function usage(g: Generation) {
    const t = g.timings;
    const promptTokens = t?.promptTokens ?? 0;
    const completion = t?.generatedTokens ?? g.tokens.length;
    return {
      prompt_tokens: promptTokens,
      completion_tokens: completion,
      total_tokens: promptTokens + completion,
      prompt_tokens_details: { cached_tokens: t?.reusedTokens ?? 0 },
    };
  }

  function sse(reply: FastifyReply, data: unknown): void {
    reply.raw.write(`data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`);
  }

  async function respond(
    request: FastifyRequest,
    reply: FastifyReply,
    kind: "chat" | "completion",
    prompt: { text: string; addSpecial: boolean },
    p: ParsedCommon,
  ): Promise<unknown> {
    const id = `${kind === "chat" ? "chatcmpl" : "cmpl"}-${randomUUID().replace(/-/g, "")}`;
    const now = Math.floor(Date.now() / 1000);
    const object = kind === "chat" ? "chat.completion" : "text_completion";
    if (!p.stream) {
      let text = "";
      const g = await run(
        request,
        reply,
        prompt,
        p,
        () => {},
        (t) => {
          text += t;
        },
      );
      if (g.finishReason === "abort") return reply.hijack(); // the client is gone
      const finish = mapFinish(g.finishReason);
      const choice =
        kind === "chat"
          ? { index: 0, message: { role: "assistant", content: text }, logprobs: null, finish_reason: finish }
          : { index: 0, text, logprobs: null, finish_reason: finish };
      return { id, object, created: now, model: modelId, choices: [choice], usage: usage(g) };
    }
    const chunkObject = kind === "chat" ? "chat.completion.chunk" : "text_completion";
    const chunk = (choice: Record<string, unknown>) => ({
      id,
      object: chunkObject,
      created: now,
      model: modelId,
      choices: [{ index: 0, ...choice }],
    });
    let started = false;
    const start = () => {
      started = true;
      reply.hijack();
      reply.raw.writeHead(200, {
        "content-type": "text/event-stream",
        "cache-control": "no-cache",
        connection: "keep-alive",
      });
      if (kind === "chat")
        sse(reply, chunk({ delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }));
    };
    try {
      const g = await run(request, reply, prompt, p, start, (t) => {
        if (reply.raw.destroyed) return;
        sse(
          reply,
          chunk(
            kind === "chat"
              ? { delta: { content: t }, logprobs: null, finish_reason: null }
              : { text: t, logprobs: null, finish_reason: null },
          ),
        );
      });
      if (reply.raw.destroyed) return;
      const finish = mapFinish(g.finishReason);
      sse(
        reply,
        chunk(
          kind === "chat"
            ? { delta: {}, logprobs: null, finish_reason: finish }
            : { text: "", logprobs: null, finish_reason: finish },
        ),
      );
      if (p.includeUsage)
        sse(reply, { id, object: chunkObject, created: now, model: modelId, choices: [], usage: usage(g) });
      sse(reply, "[DONE]");
      reply.raw.end();
    } catch (e) {
      if (!started) throw e;
      request.log.error(e);
      if (!reply.raw.destroyed) {
        const err =
          e instanceof ApiError
            ? e
            : new ApiError(500, `internal error: ${(e as Error).message}`, "server_error");
        sse(reply, err.body());
        reply.raw.end();
      }
    }
  }

  app.post("/v1/chat/completions", async (request, reply) => {
    const p = parseChat(request.body, nVocab);
    return respond(request, reply, "chat", renderChat(p.messages), p);
  });
  app.post("/v1/completions", async (request, reply) => {
    const p = parseCompletion(request.body, nVocab);
    return respond(request, reply, "completion", { text: p.prompt, addSpecial: true }, p);
  });

  let closed = false;
  return {
    app,
    context,
    modelId,
    async listen(port = 8080, host = "127.0.0.1") {
      return app.listen({ port, host });
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const a of running) a.abort();
      await app.close();
      await queue.run(async () => undefined);
      context.dispose();
    },
  };
}
