import type { Model } from "@minfer/engine";
import type { FastifyInstance } from "fastify";
import { ApiError, invalidField } from "./errors.js";
import type { ServerLimits } from "./limits.js";
import { detokenize, tokenizePrompt } from "./prompt.js";
import { quote } from "./quote.js";

const bad = invalidField;

type Body = Record<string, unknown>;

function object(raw: unknown, known: readonly string[]): Body {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    throw new ApiError(400, "the body must be a JSON object", "invalid_request_error", null, "invalid_value");
  const body = raw as Body;
  for (const k of Object.keys(body)) if (!known.includes(k)) throw bad(k, "unknown field");
  return body;
}

function optBool(body: Body, key: string, dflt: boolean): boolean {
  const v = body[key];
  if (v === undefined) return dflt;
  if (typeof v !== "boolean") throw bad(key, `must be a boolean, got ${quote(v)}`);
  return v;
}

/**
 * llama-server's text endpoints: `POST /tokenize` {content, add_special?, parse_special?,
 * with_pieces?} → {tokens}, `POST /detokenize` {tokens} → {content}, `POST /apply-template`
 * {messages, tools?, add_generation_prompt?, chat_template_kwargs?, …} → {prompt} (the chat
 * template's rendering, as a chat request with those fields would be prompted).
 */
export function registerTextRoutes(
  app: FastifyInstance,
  getModel: () => Model,
  applyTemplate: (body: unknown) => Promise<string>,
  limits: ServerLimits,
): void {
  app.post("/tokenize", async (request) => {
    const { tokenizer } = getModel();
    const body = object(request.body, ["content", "add_special", "parse_special", "with_pieces"]);
    if (typeof body.content !== "string") throw bad("content", "must be a string");
    const ids = await tokenizePrompt(
      tokenizer,
      body.content,
      {
        param: "content",
        addSpecial: optBool(body, "add_special", false),
        parseSpecial: optBool(body, "parse_special", true),
      },
      limits,
    );
    if (!optBool(body, "with_pieces", false)) return { tokens: ids };
    const decoder = new TextDecoder("utf-8", { fatal: false });
    return { tokens: ids.map((id) => ({ id, piece: decoder.decode(tokenizer.tokenBytes(id)) })) };
  });

  app.post("/detokenize", async (request) => {
    const { tokenizer, hparams } = getModel();
    const nVocab = hparams.nVocab;
    const body = object(request.body, ["tokens"]);
    const tokens = body.tokens;
    if (!Array.isArray(tokens)) throw bad("tokens", "must be an array of token ids");
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i];
      if (typeof t !== "number" || !Number.isInteger(t) || t < 0 || t >= nVocab)
        throw bad(`tokens[${i}]`, `must be a token id in [0, ${nVocab}), got ${quote(t)}`);
    }
    return { content: await detokenize(tokenizer, tokens as number[]) };
  });

  app.post("/apply-template", async (request) => ({ prompt: await applyTemplate(request.body) }));
}
