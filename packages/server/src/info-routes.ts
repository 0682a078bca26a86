import { LLAMA_CPP_SAMPLING } from "@minfer/sampler";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ApiError } from "./errors.js";
import { quote } from "./quote.js";
import type { ServerState } from "./state.js";

/**
 * `GET /health` (also `/v1/health`; 503 while loading, never behind the key), `/v1/models` (and
 * `/v1/models/{id}`, each also without /v1), `/props`, `/slots` and
 * `/metrics` (Prometheus text; 501 unless the server was started with metrics on).
 */
export function registerInfoRoutes(app: FastifyInstance, s: ServerState): void {
  const created = Math.floor(Date.now() / 1000);
  // (llama-server's Process-Start-Time-Unix header on /metrics, so scrapers see restarts)
  const processStart = Math.floor(Date.now() / 1000 - process.uptime());

  const health = async (_request: FastifyRequest, reply: FastifyReply) => {
    if (s.loaded) return { status: "ok" };
    if (s.loadError)
      return reply
        .code(500)
        .send(
          new ApiError(
            500,
            `the model failed to load: ${(s.loadError as Error).message}`,
            "server_error",
            null,
            "load_failed",
          ).body(),
        );
    return reply
      .code(503)
      .header("retry-after", "1")
      .send(new ApiError(503, "Loading model", "unavailable_error", null, "loading").body());
  };
  app.get("/health", health);
  app.get("/v1/health", health);

  const modelEntry = () => ({
    id: s.modelId,
    object: "model",
    created,
    owned_by: "minfer",
    aliases: s.aliases.length > 0 ? [...s.aliases] : [s.modelId],
    tags: [...s.tags],
  });
  for (const path of ["/v1/models", "/models"]) {
    app.get(path, async () => ({ object: "list", data: [modelEntry()] }));
    app.get<{ Params: { id: string } }>(`${path}/:id`, async (request) => {
      if (request.params.id !== s.modelId)
        throw new ApiError(
          404,
          `the model ${quote(request.params.id)} does not exist; this server serves ${quote(s.modelId)}`,
          "invalid_request_error",
          "model",
          "model_not_found",
        );
      return modelEntry();
    });
  }

  app.get("/props", async () => {
    const tok = s.model.tokenizer;
    const text = (id: number | undefined) => (id === undefined ? "" : tok.tokenText(id));
    const e = s.embedder;
    if (e)
      // An embeddings server: its one context (llama-server answers /props in this mode too).
      return {
        model_path: s.model.path,
        model_alias: s.modelId,
        embedding: true,
        pooling: e.pooling,
        total_slots: e.context.nSeqMax,
        n_ctx: e.context.nCtx,
        batch_size: e.maxTokens,
        n_embd: e.context.outputWidth,
        bos_token: text(tok.vocab.special.bos),
        eos_token: text(tok.vocab.special.eos),
      };
    const b = s.batcher;
    return {
      model_path: s.model.path,
      model_alias: s.modelId,
      total_slots: b.parallel,
      n_ctx: b.ctxPerSlot,
      n_ctx_total: b.context.nCtx,
      batch_size: b.batchSize,
      queue_size: b.queueSize,
      timeout_s: s.timeoutMs !== undefined ? s.timeoutMs / 1000 : null,
      kv_dtype: b.context.kvDtype,
      // The KV caches: the full-attention layers' and, for sliding-window layers, their smaller one.
      kv_caches: b.context.stats().caches.map((c) => ({
        kind: c.group,
        layers: c.layers,
        cells: c.cells,
        window: c.window,
        bytes: c.bytes,
      })),
      // Where the model runs: which device holds which layers (and every device in use).
      devices: {
        placement: s.model.placement.describe(),
        offloaded_layers: s.model.placement.offloadedLayers,
        n_layer: s.model.hparams.nLayer,
        runtimes: s.model.placement.runtimes().map((r) => r.device.name),
      },
      chat_template: s.template()?.source ?? null,
      bos_token: text(tok.vocab.special.bos),
      eos_token: text(tok.vocab.special.eos),
      default_generation_settings: {
        n_ctx: b.ctxPerSlot,
        // (llama.cpp's defaults under the server's own, as a request that sets nothing runs)
        params: {
          temperature: s.sampling.temperature ?? LLAMA_CPP_SAMPLING.temperature,
          top_k: s.sampling.topK ?? LLAMA_CPP_SAMPLING.topK,
          top_p: s.sampling.topP ?? LLAMA_CPP_SAMPLING.topP,
          min_p: s.sampling.minP ?? LLAMA_CPP_SAMPLING.minP,
          // (no seed: each request draws a random one, 4294967295 as llama-server shows it)
          seed: s.sampling.seed ?? 4294967295,
          n_predict: s.nPredict ?? -1,
          cache_prompt: true,
        },
      },
    };
  });

  app.get("/slots", async () => {
    if (!s.slotsEndpoint)
      throw new ApiError(
        501,
        "the slots endpoint is off; start the server without --no-slots (createServer({ slots: true }))",
        "not_supported_error",
        null,
        "slots_disabled",
      );
    return s.batcher.slots().map((x) => ({
      id: x.id,
      n_ctx: x.nCtx,
      speculative: x.speculative,
      is_processing: x.state !== "idle",
      state: x.state,
      n_past: x.nPast,
      n_prompt_tokens: x.promptTokens,
      n_cached_tokens: x.cachedTokens,
      n_decoded: x.generated,
      // (minfer's: the running job's, or the last one's, drafted and accepted tokens)
      ...(x.speculative ? { n_draft: x.drafted, n_draft_accepted: x.draftAccepted } : {}),
    }));
  });

  app.get("/metrics", async (_request, reply) => {
    const m = s.metrics;
    if (!m)
      throw new ApiError(
        501,
        "metrics are off; start the server with --metrics (createServer({ metrics: true }))",
        "not_supported_error",
        null,
        "metrics_disabled",
      );
    reply.raw.setHeader("Process-Start-Time-Unix", String(processStart)); // (its case kept, as llama-server's)
    return reply.header("content-type", m.registry.contentType).send(await m.registry.metrics());
  });
}
