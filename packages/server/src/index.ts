/**
 * @module @minfer/server
 * An OpenAI-compatible HTTP server (fastify) over one @minfer/engine model and context.
 */
export { ApiError } from "./request.js";
export type { MinferServer, ServerOptions } from "./server.js";
export { createServer } from "./server.js";
