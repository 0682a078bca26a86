/**
 * @module @minfer/server
 * An OpenAI-compatible HTTP server (fastify) over one @minfer/engine model and context.
 */

export type {
  BatcherOptions,
  BatcherSpeculation,
  JobFinish,
  JobResult,
  JobSpec,
  SlotInfo,
  TokenEvent,
} from "./batcher.js";
export { BATCHER_CANDIDATES, Batcher } from "./batcher.js";
export { IGNORED_FIELDS_HEADER } from "./chat-routes.js";
export { ApiError } from "./errors.js";
export type { ServerLimits } from "./limits.js";
export { SERVER_LIMITS } from "./limits.js";
export type { ReasoningFormat } from "./reasoning/index.js";
export { REASONING_FORMATS } from "./reasoning/index.js";
export type { ModelState, PoolListing, PoolModel, PoolOptions, Upstream } from "./router/model-pool.js";
export { ModelPool } from "./router/model-pool.js";
export type { ModelRouter, RouterOptions } from "./router/router.js";
export { createModelRouter } from "./router/router.js";
export type { MinferServer, ServerOptions, ServerSampling, ServerSpeculation } from "./server.js";
export { createServer, SERVER_DEFAULTS } from "./server.js";
export type { ServerErrorCode } from "./server-error.js";
export { ServerError } from "./server-error.js";
export { BUILTIN_TEMPLATES, builtinTemplate, chatTemplateArg } from "./templates.js";
