import type { Embedding, EmbedInput } from "@minfer/engine";
import { rerankInput } from "@minfer/engine";
import type { FastifyInstance } from "fastify";
import type { Embedder } from "./embedder.js";
import { base64Floats, embeddingInputs, MAX_EMBED_INPUTS } from "./embedding-input.js";
import { ApiError } from "./errors.js";
import type { ServerState } from "./state.js";

const notSupported = (message: string) =>
  new ApiError(501, message, "not_supported_error", null, "not_supported");
const bad = (param: string, message: string) =>
  new ApiError(400, message, "invalid_request_error", param, "invalid_input");

function body(request: { body: unknown }): Record<string, unknown> {
  const b = request.body;
  if (b === null || typeof b !== "object" || Array.isArray(b))
    throw new ApiError(
      400,
      "the request body must be a JSON object",
      "invalid_request_error",
      null,
      "invalid_body",
    );
  return b as Record<string, unknown>;
}

/** Runs inputs through the embedder after checking each fits one decode (llama-server's "too large" error). */
async function run(
  e: Embedder,
  inputs: EmbedInput[],
  normalize: number,
  param: string,
): Promise<Embedding[]> {
  inputs.forEach((x, i) => {
    const n = typeof x === "string" ? 0 : "tokens" in x ? x.tokens.length : x.length;
    if (n > e.maxTokens)
      throw new ApiError(
        400,
        `${param}[${i}] has ${n} tokens: input is too large to process in one batch of ${e.maxTokens} tokens; start the server with a larger -b (--batch-size)`,
        "invalid_request_error",
        param,
        "input_too_large",
      );
  });
  return e.run(inputs, normalize);
}

/** `embd_normalize` of a request (llama-server's: -1 none, 0 max-abs, 1 taxicab, 2 Euclidean, > 2 p-norm). */
function normalizeOf(b: Record<string, unknown>): number {
  const v = b.embd_normalize;
  if (v === undefined) return 2;
  if (typeof v !== "number" || !Number.isInteger(v) || v < -1)
    throw bad(
      "embd_normalize",
      `embd_normalize must be an integer ≥ -1 (-1: none, 2: Euclidean), got ${JSON.stringify(v)}`,
    );
  return v;
}

/**
 * `POST /v1/embeddings` (OpenAI's), llama-server's `/embedding` and `/embeddings`, and its rerank
 * endpoints (`/rerank`, `/reranking`, `/v1/rerank`, `/v1/reranking`) in Jina's shape, or TEI's when
 * the documents come as `texts`. They need a server started with embeddings (`--embedding`;
 * `--reranking` for rerank), and answer 501 otherwise, as llama-server does.
 */
export function registerEmbeddingRoutes(
  app: FastifyInstance,
  s: ServerState,
  embedder: () => Embedder | undefined,
): void {
  const need = (rank: boolean): Embedder => {
    const e = embedder();
    if (!e || (rank && e.pooling !== "rank"))
      throw notSupported(
        rank
          ? "This server does not support reranking. Start it with `--reranking`"
          : "This server does not support embeddings. Start it with `--embeddings`",
      );
    if (!rank && e.pooling === "rank")
      throw notSupported(
        "This server ranks (--reranking): use /rerank, or start it with `--embedding` and another --pooling",
      );
    return e;
  };

  const embeddings = async (b: Record<string, unknown>, oai: boolean) => {
    const e = need(false);
    const param = b.input !== undefined ? "input" : "content";
    const value = b.input ?? b.content;
    if (value === undefined) throw bad("input", '"input" or "content" must be provided');
    const isOai = oai && b.input !== undefined;
    if (isOai && e.pooling === "none")
      throw bad("input", "Pooling type 'none' is not OAI compatible. Please use a different pooling type");
    const format = b.encoding_format ?? "float";
    if (format !== "float" && format !== "base64")
      throw bad("encoding_format", 'encoding_format is "float" or "base64"');
    const inputs = await embeddingInputs(value, param, s.model.tokenizer, s.model.hparams.nVocab, s.limits);
    const results = await run(e, inputs, normalizeOf(b), param);
    if (!isOai) return results.map((r, index) => ({ index, embedding: r.rows.map((v) => Array.from(v)) }));
    const tokens = results.reduce((n, r) => n + r.nTokens, 0);
    return {
      model: typeof b.model === "string" ? b.model : s.modelId,
      object: "list",
      usage: { prompt_tokens: tokens, total_tokens: tokens },
      data: results.map((r, index) => ({
        embedding: format === "base64" ? base64Floats(r.rows[0]!) : Array.from(r.rows[0]!),
        index,
        object: "embedding",
      })),
    };
  };
  app.post("/v1/embeddings", async (request) => embeddings(body(request), true));
  for (const path of ["/embedding", "/embeddings"])
    app.post(path, async (request) => embeddings(body(request), false));

  const rerank = async (b: Record<string, unknown>) => {
    const e = need(true);
    const tei = b.texts !== undefined;
    if (typeof b.query !== "string")
      throw bad("query", b.query === undefined ? '"query" must be provided' : '"query" must be a string');
    const docs = b.documents ?? b.texts;
    const param = tei ? "texts" : "documents";
    if (!Array.isArray(docs) || docs.length === 0 || !docs.every((d) => typeof d === "string"))
      throw bad(param, `"${param}" must be a non-empty string array`);
    if (docs.length > MAX_EMBED_INPUTS)
      throw bad(
        param,
        `"${param}" has ${docs.length} documents; the server takes at most ${MAX_EMBED_INPUTS}`,
      );
    const topN = b.top_n ?? docs.length;
    if (typeof topN !== "number" || !Number.isInteger(topN) || topN < 0)
      throw bad("top_n", `top_n must be a non-negative integer, got ${JSON.stringify(topN)}`);
    const inputs = (docs as string[]).map((d) => rerankInput(s.model, b.query as string, d));
    const results = await run(e, inputs, -1, param);
    const label = tei ? "score" : "relevance_score";
    const returnText = tei && b.return_text === true;
    const scored = results.map((r, index) => ({ index, score: r.rows[0]![0]! }));
    scored.sort((x, y) => y.score - x.score);
    const top = scored.slice(0, Math.min(topN, scored.length)).map((x) => ({
      index: x.index,
      [label]: x.score,
      ...(returnText ? { text: (docs as string[])[x.index] } : {}),
    }));
    if (tei) return top;
    const tokens = results.reduce((n, r) => n + r.nTokens, 0);
    return {
      model: typeof b.model === "string" ? b.model : s.modelId,
      object: "list",
      usage: { prompt_tokens: tokens, total_tokens: tokens },
      results: top,
    };
  };
  for (const path of ["/rerank", "/reranking", "/v1/rerank", "/v1/reranking"])
    app.post(path, async (request) => rerank(body(request)));
}
