import type { FastifyInstance } from "fastify";
import type { ServerState } from "./state.js";

/** llama-server's `POST /infill` (fill-in-the-middle with the model's FIM tokens); in progress. */
export function registerInfillRoutes(_app: FastifyInstance, _s: ServerState): void {}
