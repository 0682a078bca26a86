import type { FastifyInstance, onSendHookHandler } from "fastify";
import { type ChatPipeline, renamingFields } from "../chat-routes.js";
import { AnthropicOutput, anthropicError } from "./output.js";
import { anthropicParam, parseAnthropic } from "./request.js";

/**
 * Every error these routes answer, in Anthropic's shape: the server's own (OpenAI-shaped) error
 * bodies, from the routes, the shared pipeline or the server's hooks (a wrong key, a model still
 * loading, a body that is no JSON), rewritten as `{type: "error", error: {type, message}}`.
 */
const anthropicErrors: onSendHookHandler = async (_request, reply, payload) => {
  if (reply.statusCode < 400 || typeof payload !== "string") return payload;
  let body: unknown;
  try {
    body = JSON.parse(payload);
  } catch {
    return payload;
  }
  const error = (body as { error?: { message?: unknown } } | null)?.error;
  if (typeof error?.message !== "string") return payload;
  return JSON.stringify(anthropicError(reply.statusCode, error.message));
};

/**
 * Anthropic's Messages API over the chat pipeline: `POST /v1/messages` and
 * `POST /v1/messages/count_tokens`. Authentication is the server's: `x-api-key` is one of the headers
 * it takes.
 */
export function registerAnthropicRoutes(app: FastifyInstance, pipeline: ChatPipeline): void {
  /** The pipeline's errors name the chat request's fields: told by the Messages fields instead. */
  const chatStep = renamingFields(anthropicParam);
  const read = async (body: unknown, count: boolean) => {
    const r = parseAnthropic(body, pipeline.strictApi, count);
    const budget = r.reasoningBudget !== undefined ? { reasoningBudget: r.reasoningBudget } : {};
    const p = await chatStep(() => pipeline.parse(r.chat, { emptyMessages: true }));
    return { r, p, job: await chatStep(() => pipeline.job(p, budget)) };
  };
  app.post("/v1/messages", { onSend: anthropicErrors }, async (request, reply) => {
    const { r, p, job } = await read(request.body, false);
    pipeline.reportIgnored(request, reply, r.ignored);
    const wire = new AnthropicOutput({ model: pipeline.modelId, stream: p.stream });
    return chatStep(() => pipeline.run(request, reply, { ...job, wire }));
  });
  app.post("/v1/messages/count_tokens", { onSend: anthropicErrors }, async (request, reply) => {
    const { r, job } = await read(request.body, true);
    pipeline.reportIgnored(request, reply, r.ignored);
    return { input_tokens: await chatStep(() => pipeline.countTokens(job)) };
  });
}
