import type { IncomingMessage } from "node:http";
import { basename } from "node:path";
import {
  BatchedModelDrafter,
  Context,
  type ContextOptions,
  contextSize,
  type FinishReason,
  type Model,
  POOLINGS,
  type Pooling,
} from "@minfer/engine";
import { LLAMA_CPP_SAMPLING, Sampler, SamplerError, type SamplerOptions } from "@minfer/sampler";
import type { ChatTemplate } from "@minfer/tokenizer";
import Fastify, { type FastifyInstance } from "fastify";
import { Batcher } from "./batcher.js";
import { registerChatRoutes } from "./chat-routes.js";
import { Embedder } from "./embedder.js";
import { registerEmbeddingRoutes } from "./embedding-routes.js";
import { ApiError } from "./errors.js";
import {
  answerRaw,
  clientErrorAnswer,
  guardConnections,
  guardJsonBodies,
  httpOptions,
} from "./http-guards.js";
import { registerInfillRoutes } from "./infill-routes.js";
import { registerInfoRoutes } from "./info-routes.js";
import { resolveLimits, type ServerLimits } from "./limits.js";
import { ServerMetrics } from "./metrics.js";
import { type ReasoningFormat, reasoningSettings } from "./reasoning/index.js";
import { TemplateRenderer } from "./render.js";
import { ServerError } from "./server-error.js";
import { registerSlotRoutes } from "./slot-routes.js";
import { builtinTemplate } from "./templates.js";
import { WEBUI_PATHS, webuiAnswer } from "./webui.js";

/** Defaults of {@link ServerOptions} (llama-server's where it has one). */
export const SERVER_DEFAULTS = Object.freeze({
  parallel: 4,
  batchSize: 512,
  queueSize: 64,
  drainSeconds: 30,
});

/** ServerOptions.sampling: the sampler's options a server may default (not its vocabulary or constraint). */
export type ServerSampling = Omit<SamplerOptions, "vocab" | "tokenText" | "constraint">;

/** {@link ServerOptions.speculative}. */
export interface ServerSpeculation {
  readonly draft: Model | "ngram";
  /** Most tokens drafted for a slot's verification (llama-server's --draft-max). Default 16. */
  readonly draftMax?: number;
  /** A shorter draft is not verified (--draft-min). Default 0. */
  readonly draftMin?: number;
  /** A draft model's draft ends where its probability of its token is below this (--draft-p-min). Default 0. */
  readonly pMin?: number;
  /** ngram: the longest n-gram looked up (--spec-ngram-size-n). Default 4. */
  readonly ngramMax?: number;
}

export interface ServerOptions {
  /**
   * The model, or its loading (the server answers /health with 503 until it resolves). The
   * caller keeps ownership and disposes it after `close()`.
   */
  readonly model: Model | Promise<Model>;
  /** Slots: requests that generate at once (llama-server's -np). Default 4. */
  readonly parallel?: number;
  /**
   * Context options. `nCtx` is the whole KV cache, shared out equally to the slots (llama-server's
   * -c; 0 = the model's training context); each slot's share is reported at startup, in /props
   * and /slots. `kvUnified: true` (llama-server's `--kv-unified`; default false here) makes it one
   * pool all slots draw from instead: a slot may use all of it while the others leave room, idle
   * slots' cached prompts are dropped when a step needs their cells, and when the generating
   * requests alone no longer fit, the one holding the most cells ends with a 503. `nSeqMax` is set
   * by the server.
   */
  readonly contextOptions?: ContextOptions;
  /** Most tokens one decode step holds (llama-server's -b). Default 512. */
  readonly batchSize?: number;
  /** Requests that may wait for a slot; beyond, 503 with Retry-After. Default 64. */
  readonly queueSize?: number;
  /** Per-request limit in seconds from arrival to the last token (504 when passed). Default: none. */
  readonly timeoutSeconds?: number;
  /** Serve Prometheus metrics at /metrics. Default false (501 there), as llama-server's --metrics. */
  readonly metrics?: boolean;
  /** Serve the slots' state at GET /slots. Default true (501 there when false), as llama-server's --slots / --no-slots. */
  readonly slots?: boolean;
  /**
   * A chat template instead of the model's own (`chatTemplateArg` makes one of llama-server's
   * `--chat-template` values). Without one, a model without a template of its own chats in ChatML,
   * as llama-server does.
   */
  readonly chatTemplate?: ChatTemplate;
  /** When set, every endpoint but /health requires `Authorization: Bearer <apiKey>`. */
  readonly apiKey?: string;
  /**
   * Refuse (400) a request field the server does not know or does not use, instead of ignoring it
   * and naming it in the `X-Minfer-Ignored-Fields` response header and the log (as llama-server
   * and vLLM accept such fields). Default false.
   */
  readonly strictApi?: boolean;
  /**
   * Sampling defaults of requests that leave a field unset (llama-server's `--temp`, `--top-k`,
   * `--seed`, … on its command line), over llama.cpp's (temperature 0.8, top-k 40, top-p 0.95,
   * min-p 0.05). A request's `seed` replaces `seed`; without one, choice i of a request samples
   * with `seed + i`. Checked when the server is created.
   */
  readonly sampling?: ServerSampling;
  /**
   * Origins browsers may call from (llama-server's `--cors-origins`): `*` (default: any, the
   * request's Origin echoed), `localhost` (localhost, 127.0.0.1 and ::1 at any port), or a
   * comma-separated list of origins. A request from another origin gets no CORS headers.
   */
  readonly corsOrigins?: string;
  /** Tokens a request generates when it gives no max_tokens / n_predict (llama-server's `-n`). Default: no limit. */
  readonly nPredict?: number;
  /** The model id reported by /v1/models and in responses. Default: the file's name. */
  readonly modelId?: string;
  /** Other names of the model, listed in /v1/models (llama-server's `--alias a,b`). */
  readonly aliases?: readonly string[];
  /** Tags listed in /v1/models (llama-server's `--tags`). */
  readonly tags?: readonly string[];
  /**
   * Template variables every chat request renders with, under its own `chat_template_kwargs`
   * (llama-server's `--chat-template-kwargs`; `--reasoning off` is `{ enable_thinking: false }`).
   */
  readonly templateKwargs?: Readonly<Record<string, unknown>>;
  /**
   * The directory slot files are saved to and restored from (`POST /slots/{id}?action=save|restore`,
   * llama-server's `--slot-save-path`). Default: none (those actions answer 501).
   */
  readonly slotSavePath?: string;
  /**
   * When a slot's context fills, drop the older half of its tokens (after the request's `n_keep`)
   * and go on, as llama-server's `--context-shift`; otherwise generation stops there (finish
   * "length"). Default false.
   */
  readonly contextShift?: boolean;
  /**
   * Speculative decoding in every slot (llama-server's `-md` / `--spec-type ngram`): each
   * generating slot's next tokens are drafted — by `draft`, a model of the same vocabulary (the
   * caller keeps ownership; the server makes its context, a sequence per slot), or by n-gram
   * look-up in the slot's own text — and verified in the step's one decode with every other slot's
   * tokens. Output is unchanged; /slots, /metrics and the timings count drafts and acceptances.
   * A promise (the draft model still loading) is awaited with the model; undefined: none.
   */
  readonly speculative?: ServerSpeculation | Promise<ServerSpeculation | undefined>;
  /**
   * Every decode step batch-invariant (`minfer serve --batch-invariant`; BatcherOptions.batchInvariant):
   * a request's output does not depend on the requests beside it or on speculation, at a cost in
   * throughput on CUDA and AVX-512 CPUs. Default false.
   */
  readonly batchInvariant?: boolean;
  /**
   * How a thinking model's think block is returned (llama-server's `--reasoning-format`; a request's
   * `reasoning_format` overrides it): `auto` (default) and `deepseek` split it into `reasoning_content`,
   * `deepseek-legacy` does when not streamed (streams keep it in `content`, with its tags), `none` leaves
   * it in `content`. Only templates that write think tags have one split off.
   */
  readonly reasoningFormat?: ReasoningFormat;
  /**
   * Tokens a think block may hold before its end tag is forced (llama-server's `--reasoning-budget`):
   * -1 (default) no limit, 0 the block ends as it opens.
   */
  readonly reasoningBudget?: number;
  /** Text forced before the end tag when the budget is spent (llama-server's `--reasoning-budget-message`). Default none. */
  readonly reasoningBudgetMessage?: string;
  /** Every non-streamed response carries `__verbose` (the prompt as read, the settings), as under llama-server's `--verbose`. */
  readonly verbose?: boolean;
  /** Called after each generation (also aborted ones) with its finish reason. */
  readonly onGeneration?: (info: {
    finishReason: FinishReason | "timeout" | "shutdown";
    completionTokens: number;
    promptTokens: number;
  }) => void;
  /** Bounds on what one client or request may use (docs/LIMITS.md); unset ones take {@link SERVER_LIMITS}. */
  readonly limits?: Partial<ServerLimits>;
  /**
   * Deliver each step's token output (text, stop strings, SSE writes) while the next step decodes
   * (the batcher's `overlapOutput`). Default true.
   */
  readonly overlapOutput?: boolean;
  /**
   * Read back only each step's candidate ids and their logits when every stream's sampler can take
   * its token from those (the batcher's `candidatesOnly`). Default true.
   */
  readonly candidatesOnly?: boolean;
  /** Fastify's logger option (false by default). */
  readonly logger?: boolean | Record<string, unknown>;
  /**
   * Serve embeddings instead of completions (llama-server's `--embedding`): /v1/embeddings,
   * /embedding, and with pooling "rank" (`--reranking`) /rerank; the completion endpoints answer
   * 501. An encoder model (BERT family) needs it. Default false.
   */
  readonly embeddings?: boolean;
  /** With `embeddings`: the pooling (`--pooling`); default the model file's (see ContextOptions.pooling). */
  readonly pooling?: Pooling;
  /** Serve the chat page at `/` (llama-server's web UI; `--no-webui` turns it off). Default true. */
  readonly webui?: boolean;
}

export interface MinferServer {
  readonly app: FastifyInstance;
  /** Resolves when the model is loaded and requests are served; rejects when loading failed. */
  readonly ready: Promise<void>;
  /** The batcher (after `ready`; before, reading it throws a ServerError NOT_READY; an embeddings server has none). */
  readonly batcher: Batcher;
  /** An embeddings server's embedder (after `ready`), else undefined. */
  readonly embedder: Embedder | undefined;
  /** The batcher's context (after `ready`; before, reading it throws a ServerError NOT_READY). */
  readonly context: Context;
  readonly modelId: string;
  /** Starts listening; resolves to the address, e.g. http://127.0.0.1:8080. */
  listen(port?: number, host?: string): Promise<string>;
  /**
   * Graceful stop: refuses new requests (503), lets running and queued ones finish for at most
   * `seconds` (default 30), then aborts the rest. Resolves to whether all finished. Then `close()`.
   */
  drain(seconds?: number): Promise<boolean>;
  /** Stops listening, aborts what runs, frees the context (not the model). */
  close(): Promise<void>;
}

/** Waits for the HTTP server to close, ending connections left open once responses are out. */
async function settle(closing: Promise<void>, app: FastifyInstance): Promise<void> {
  app.server.closeIdleConnections();
  let timer: NodeJS.Timeout | undefined;
  const grace = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      app.server.closeAllConnections();
      resolve();
    }, 500);
  });
  await Promise.race([closing, grace]);
  clearTimeout(timer);
  await closing;
}

/** Reads and drops the rest of a request body: at most `maxBytes` more, for at most 2 s. */
function discardBody(req: IncomingMessage, maxBytes: number): Promise<void> {
  if (req.complete || req.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    let seen = 0;
    const done = () => {
      clearTimeout(timer);
      req.off("data", onData);
      req.off("end", done);
      req.off("close", done);
      resolve();
    };
    const onData = (d: Buffer) => {
      seen += d.length;
      if (seen > maxBytes) done();
    };
    const timer = setTimeout(done, 2000);
    req.on("data", onData);
    req.once("end", done);
    req.once("close", done);
    req.resume();
  });
}

const notReady = () => new ServerError("NOT_READY", "the model is not loaded yet (await server.ready)");

function positive(v: number | undefined, dflt: number, what: string, min = 1): number {
  const x = v ?? dflt;
  if (!Number.isInteger(x) || x < min)
    throw new ServerError("INVALID_ARGUMENT", `${what} must be an integer >= ${min}, got ${String(v)}`);
  return x;
}

/**
 * An OpenAI-compatible server over one model: continuous batching over `parallel` slots. Throws a
 * {@link ServerError} INVALID_ARGUMENT naming a bad option; `ready` rejects with one when the
 * context cannot be shared by the slots.
 */
/** corsOrigins: "*", "localhost" or a list of origins. */
type Cors = "*" | "localhost" | ReadonlySet<string>;

function checkCors(v: string | undefined): Cors {
  if (v === undefined || v === "*") return "*";
  if (v === "localhost") return "localhost";
  const list = typeof v === "string" ? v.split(",").map((o) => o.trim()) : [];
  if (list.length === 0 || list.some((o) => !/^https?:\/\/[^\s/]+$/.test(o)))
    throw new ServerError(
      "INVALID_ARGUMENT",
      `corsOrigins must be "*", "localhost" or comma-separated origins such as https://app.example, got ${JSON.stringify(v)}`,
    );
  return new Set(list);
}

/** The Access-Control-Allow-Origin of a request from `origin` (undefined: none, not allowed). */
function corsOrigin(cors: Cors, origin: string | undefined): string | undefined {
  if (cors === "*") return origin ?? "*";
  if (origin === undefined) return undefined;
  if (cors === "localhost") {
    let host: string;
    try {
      host = new URL(origin).hostname;
    } catch {
      return undefined;
    }
    return host === "localhost" || host === "127.0.0.1" || host === "[::1]" ? origin : undefined;
  }
  return cors.has(origin) ? origin : undefined;
}

/** The sampling defaults, checked by the sampler's own rules (a ServerError naming the option). */
function checkSampling(s: ServerSampling | undefined): ServerSampling {
  if (s === undefined) return {};
  if (typeof s !== "object" || s === null)
    throw new ServerError("INVALID_ARGUMENT", "sampling must be an object");
  try {
    new Sampler({ ...LLAMA_CPP_SAMPLING, ...s });
  } catch (e) {
    if (e instanceof SamplerError) throw new ServerError("INVALID_ARGUMENT", `sampling: ${e.message}`);
    throw e;
  }
  return { ...s };
}

/** ServerOptions.templateKwargs: a plain object without the variables the server sets. */
function checkKwargs(kw: ServerOptions["templateKwargs"]): Readonly<Record<string, unknown>> {
  if (kw === undefined) return {};
  if (typeof kw !== "object" || kw === null || Array.isArray(kw))
    throw new ServerError("INVALID_ARGUMENT", "templateKwargs must be an object of template variables");
  for (const k of ["messages", "tools", "add_generation_prompt", "bos_token", "eos_token"])
    if (k in kw) throw new ServerError("INVALID_ARGUMENT", `templateKwargs: ${k} is set by the server`);
  return { ...kw };
}

export function createServer(options: ServerOptions): MinferServer {
  const parallel = positive(options.parallel, SERVER_DEFAULTS.parallel, "parallel");
  const batchSize = positive(options.batchSize, SERVER_DEFAULTS.batchSize, "batchSize");
  const queueSize = positive(options.queueSize, SERVER_DEFAULTS.queueSize, "queueSize", 0);
  const timeout = options.timeoutSeconds;
  if (timeout !== undefined && !(typeof timeout === "number" && timeout > 0 && Number.isFinite(timeout)))
    throw new ServerError(
      "INVALID_ARGUMENT",
      `timeoutSeconds must be a positive number, got ${String(timeout)}`,
    );
  const sampling = checkSampling(options.sampling);
  const reasoning = reasoningSettings(options);
  const cors = checkCors(options.corsOrigins);
  const chatml = builtinTemplate("chatml")!;
  const nPredict = options.nPredict;
  if (nPredict !== undefined && !(Number.isSafeInteger(nPredict) && nPredict >= 0))
    throw new ServerError("INVALID_ARGUMENT", `nPredict must be an integer >= 0, got ${String(nPredict)}`);
  const metrics = options.metrics ? new ServerMetrics() : undefined;
  const metricsObserver = metrics?.observer();
  const limits = resolveLimits(options.limits);
  const renderer = new TemplateRenderer();
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: limits.bodyBytes,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    http: httpOptions(limits),
    // While draining, the onRequest hook answers new requests itself (an OpenAI error, not fastify's).
    return503OnClosing: false,
    clientErrorHandler(err: NodeJS.ErrnoException, socket) {
      const inFlight = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
      if (err.code === "ECONNRESET" || err.code === "EPIPE" || socket.destroyed || inFlight) {
        socket.destroy();
        return;
      }
      answerRaw(socket, clientErrorAnswer(err, limits));
    },
    frameworkErrors(error, _request, reply) {
      const e = new ApiError(
        400,
        `the request's URL is not valid: ${error.message}`,
        "invalid_request_error",
        null,
        "bad_url",
      );
      (reply as unknown as { code(n: number): { send(b: unknown): void } }).code(400).send(e.body());
    },
  });
  guardConnections(app, limits);
  guardJsonBodies(app, limits);
  let model: Model | undefined;
  let batcher: Batcher | undefined;
  let embedder: Embedder | undefined;
  if (options.pooling !== undefined && !options.embeddings)
    throw new ServerError(
      "INVALID_ARGUMENT",
      "pooling applies to an embeddings server: give embeddings: true (--embedding) with it",
    );
  if (options.pooling !== undefined && !POOLINGS.includes(options.pooling))
    throw new ServerError(
      "INVALID_ARGUMENT",
      `pooling must be one of ${POOLINGS.join(", ")}, got ${JSON.stringify(options.pooling)}`,
    );
  let loadError: unknown;
  let modelId = options.modelId ?? "";
  let closed = false;
  let draining = false;
  let appClosing: Promise<void> | undefined;
  /** The draft model's context (speculative decoding with a draft model). */
  let draftContext: Context | undefined;
  const closeApp = () => {
    appClosing ??= app.close();
    return appClosing;
  };

  const ready = Promise.all([options.model, options.speculative])
    .then(([m, spec]) => {
      if (closed) return;
      model = m;
      if (!options.modelId) modelId = basename(m.path).replace(/\.gguf$/i, "");
      const co = options.contextOptions ?? {};
      const nCtx = contextSize(co.nCtx, m.hparams.nCtxTrain);
      // A unified pool: every slot may grow to the whole context (the others leaving room).
      const ctxPerSlot = co.kvUnified ? nCtx : Math.floor(nCtx / parallel);
      if (ctxPerSlot < 2)
        throw new ServerError(
          "INVALID_ARGUMENT",
          `a context of ${nCtx} tokens cannot be shared by ${parallel} slots (parallel); give a larger nCtx or fewer slots`,
        );
      const { nCtx: _n, nSeqMax: _s, ...rest } = co;
      if (options.embeddings) {
        embedder = new Embedder(m, {
          ...(options.pooling ? { pooling: options.pooling } : {}),
          nUbatch: co.nUbatch ?? batchSize,
          // (inputs from several requests share a decode: up to 32 sequences, or -np if more)
          nSeqMax: Math.max(parallel, 32),
          nCtx: Math.max(nCtx, co.nUbatch ?? batchSize),
          queueSize,
        });
        return;
      }
      draftContext =
        spec && spec.draft !== "ngram"
          ? new Context(spec.draft, {
              nCtx: parallel * ctxPerSlot,
              nSeqMax: parallel,
              kvUnified: false,
              nUbatch: Math.min(co.nUbatch ?? batchSize, parallel * ctxPerSlot),
            })
          : undefined;
      batcher = new Batcher(m, {
        parallel,
        ...(spec
          ? {
              speculative: {
                drafter: draftContext
                  ? BatchedModelDrafter.for(m, draftContext, { pMin: spec.pMin ?? 0 })
                  : "ngram",
                ...(spec.draftMax !== undefined ? { draftMax: spec.draftMax } : {}),
                ...(spec.draftMin !== undefined ? { draftMin: spec.draftMin } : {}),
                ...(spec.ngramMax !== undefined ? { ngramMax: spec.ngramMax } : {}),
              },
            }
          : {}),
        ctxPerSlot,
        batchSize,
        queueSize,
        contextOptions: rest,
        ...(options.overlapOutput !== undefined ? { overlapOutput: options.overlapOutput } : {}),
        ...(options.candidatesOnly !== undefined ? { candidatesOnly: options.candidatesOnly } : {}),
        ...(options.contextShift ? { contextShift: true } : {}),
        ...(options.batchInvariant ? { batchInvariant: true } : {}),
        observer: {
          onStep: metricsObserver?.onStep,
          onJobEnd: (r) => {
            metricsObserver?.onJobEnd?.(r);
            options.onGeneration?.({
              finishReason: r.finish,
              completionTokens: r.tokens.length,
              promptTokens: r.promptTokens,
            });
          },
          onJobError: (e) => app.log.error(e),
        },
      });
      metrics?.attach(batcher);
    })
    // A failure to load the model and one while setting up its slots (a context too small to
    // share, a graph no device can run) both end loading with the error, never an endless 503.
    .catch((e: unknown) => {
      loadError = e;
      throw e;
    });
  ready.catch(() => undefined); // observed by whoever awaits server.ready

  app.setErrorHandler(async (error: unknown, request, reply) => {
    // Refused before its body was read (too large, a bad content type, no key): read and drop what
    // the client is still sending first, so the answer is not lost to the reset of a connection
    // closed with unread data.
    await discardBody(request.raw, 4 * limits.bodyBytes);
    if (error instanceof ApiError) return reply.code(error.status).headers(error.headers).send(error.body());
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
    if (metrics) {
      const t0 = performance.now();
      reply.raw.once("close", () => {
        const route = request.routeOptions.url ?? "unmatched";
        metrics.request(route, reply.raw.statusCode, (performance.now() - t0) / 1000);
      });
    }
    if (draining || closed)
      throw new ApiError(
        503,
        "the server is shutting down and takes no new requests",
        "unavailable_error",
        null,
        "shutting_down",
        { connection: "close", "retry-after": "1" },
      );
    if (request.raw.httpVersion === "1.1" && request.headers.host === undefined)
      throw new ApiError(
        400,
        "an HTTP/1.1 request needs a Host header",
        "invalid_request_error",
        null,
        "bad_http",
      );
    // CORS, as llama-server answers browsers (corsOrigins); a preflight is answered here, before
    // the key (a browser sends none with it).
    // (set on the raw response, which keeps the names' case as llama-server writes them; clients
    // that read headers into a case-sensitive map, as llama.cpp's tests do, find them)
    const raw = reply.raw;
    const allowed = corsOrigin(cors, request.headers.origin);
    if (allowed !== undefined) raw.setHeader("Access-Control-Allow-Origin", allowed);
    if (request.headers.origin !== undefined) raw.setHeader("Vary", "Origin");
    if (request.method === "OPTIONS") {
      // (llama-server's answer: 200, any header, its methods)
      raw.setHeader("Access-Control-Allow-Credentials", "true");
      raw.setHeader("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");
      raw.setHeader("Access-Control-Allow-Headers", "*");
      raw.setHeader("Access-Control-Max-Age", "86400");
      return reply.code(200).send();
    }
    if (request.url === "/health" || request.url === "/v1/health") return;
    // the page loads without the key and while the model loads (it asks for the key itself)
    if (request.method === "GET" && WEBUI_PATHS.has(request.url.split("?")[0]!)) return;
    // Everything but /health needs the key when one is set (llama-server does the same), as
    // `Authorization: Bearer KEY` or `X-Api-Key: KEY`.
    if (
      options.apiKey !== undefined &&
      request.headers.authorization !== `Bearer ${options.apiKey}` &&
      request.headers["x-api-key"] !== options.apiKey
    )
      throw new ApiError(401, "invalid or missing API key", "authentication_error", null, "invalid_api_key", {
        "www-authenticate": 'Bearer realm="minfer"',
      });
    if (!batcher && !embedder)
      throw loadError
        ? new ApiError(
            500,
            `the model failed to load: ${(loadError as Error).message}`,
            "server_error",
            null,
            "load_failed",
          )
        : new ApiError(503, "Loading model", "unavailable_error", null, "loading", { "retry-after": "1" });
  });

  const state = {
    get model() {
      return model!;
    },
    get batcher() {
      if (embedder)
        throw new ApiError(
          501,
          "This server does not support completions. Start it without `--embeddings`",
          "not_supported_error",
          null,
          "not_supported",
        );
      return batcher!;
    },
    get modelId() {
      return modelId;
    },
    get embedder() {
      return embedder;
    },
    get loaded() {
      return batcher !== undefined || embedder !== undefined;
    },
    get loadError() {
      return loadError;
    },
    // (a model without a template of its own chats in ChatML, as llama-server falls back to it)
    template: () => options.chatTemplate ?? model?.chatTemplate ?? chatml,
    limits,
    renderer,
    timeoutMs: timeout !== undefined ? timeout * 1000 : undefined,
    metrics,
    slotsEndpoint: options.slots ?? true,
    strictApi: options.strictApi ?? false,
    sampling,
    nPredict,
    verbose: options.verbose ?? false,
    templateKwargs: checkKwargs(options.templateKwargs),
    slotSavePath: options.slotSavePath,
    contextShift: options.contextShift ?? false,
    aliases: options.aliases ?? [],
    tags: options.tags ?? [],
  };
  registerInfoRoutes(app, state);
  for (const path of WEBUI_PATHS)
    app.get(path, async (_request, reply) => {
      const a = webuiAnswer(options.webui ?? true);
      return reply.code(a.status).headers(a.headers).send(a.body);
    });
  registerChatRoutes(app, state, reasoning);
  registerSlotRoutes(app, state);
  registerInfillRoutes(app, state);
  registerEmbeddingRoutes(app, state, () => embedder);

  const close = async () => {
    if (closed) return;
    closed = true;
    const closing = closeApp();
    await ready.catch(() => undefined);
    if (batcher) await batcher.close();
    draftContext?.dispose();
    embedder?.dispose();
    await renderer.close();
    metrics?.close();
    // Nothing runs any more: connections kept alive by clients would hold close() until their
    // keep-alive timeout.
    await settle(closing, app);
  };
  return {
    app,
    ready,
    get batcher() {
      if (!batcher) throw notReady();
      return batcher;
    },
    get embedder() {
      return embedder;
    },
    get context() {
      if (!batcher) throw notReady();
      return batcher.context;
    },
    get modelId() {
      return modelId;
    },
    async listen(port = 8080, host = "127.0.0.1") {
      return app.listen({ port, host });
    },
    async drain(seconds = SERVER_DEFAULTS.drainSeconds) {
      // Stop listening (new requests on kept-alive connections get a 503 meanwhile) and let the
      // batcher finish what it holds, within the bound.
      draining = true;
      const closing = closeApp();
      await ready.catch(() => undefined);
      let finished = true;
      if (batcher) {
        let timer: NodeJS.Timeout | undefined;
        const bound = new Promise<false>((resolve) => {
          timer = setTimeout(() => resolve(false), seconds * 1000);
        });
        finished = await Promise.race([batcher.drain().then(() => true as const), bound]);
        clearTimeout(timer);
      }
      await close();
      await settle(closing, app);
      return finished;
    },
    close,
  };
}
