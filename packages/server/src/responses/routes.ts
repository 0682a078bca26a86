import type { FastifyInstance } from "fastify";
import { type ChatPipeline, renamingFields } from "../chat-routes.js";
import { ResponsesOutput } from "./output.js";
import { parseResponses, responsesParam } from "./request.js";

/** A step of the chat pipeline, whose errors name chat fields: told by the Responses fields instead. */
const chatStep = renamingFields(responsesParam);

/**
 * OpenAI's Responses API over the chat pipeline: `POST /v1/responses` (and `/responses`, as
 * llama-server serves it), and `POST /v1/responses/input_tokens` (the prompt's token count).
 * Stateless: nothing is stored, so nothing can be retrieved or continued by id.
 */
export function registerResponsesRoutes(app: FastifyInstance, pipeline: ChatPipeline): void {
  const read = async (body: unknown) => {
    const r = parseResponses(body, pipeline.strictApi);
    const p = await chatStep(() => pipeline.parse(r.chat));
    return { r, p, job: await chatStep(() => pipeline.job(p)) };
  };
  for (const path of ["/v1/responses", "/responses"])
    app.post(path, async (request, reply) => {
      const { r, p, job } = await read(request.body);
      pipeline.reportIgnored(request, reply, r.ignored);
      const wire = new ResponsesOutput({ model: pipeline.modelId, stream: p.stream, echo: r.echo });
      return chatStep(() => pipeline.run(request, reply, { ...job, wire }));
    });
  for (const path of ["/v1/responses/input_tokens", "/responses/input_tokens"])
    app.post(path, async (request, reply) => {
      const { r, job } = await read(request.body);
      pipeline.reportIgnored(request, reply, r.ignored);
      const count = await chatStep(() => pipeline.countTokens(job));
      return { object: "response.input_tokens", input_tokens: count };
    });
}
