import type { Model } from "@minfer/engine";
import { Grammar, jsonSchemaToGbnf, LLAMA_CPP_SAMPLING, Sampler, type SamplerOptions } from "@minfer/sampler";
import { ApiError } from "./errors.js";
import type { ServerLimits } from "./limits.js";
import type { ParsedCommon } from "./request.js";
import type { ServerSampling } from "./server.js";

/** A grammar the request asks for, with the field that asked (named in errors). */
export interface GrammarRequest {
  readonly gbnf: string;
  readonly param: string;
}

/**
 * The one grammar a request's output must follow: from `response_format`, llama.cpp's `grammar`
 * or a forced tool call (`extra`). Two at once is a 400: they cannot both hold.
 */
export function requestGrammar(
  p: ParsedCommon,
  limits: ServerLimits,
  extra?: GrammarRequest,
): GrammarRequest | undefined {
  const found: GrammarRequest[] = [];
  const rf = p.responseFormat;
  if (rf.type !== "text") {
    const param =
      rf.type === "json_schema" ? (rf.param ?? "response_format.json_schema.schema") : "response_format";
    if (rf.type === "json_schema") checkSchemaSize(rf.schema, param, limits);
    try {
      found.push({
        gbnf: jsonSchemaToGbnf(rf.type === "json_schema" ? rf.schema : { type: "object" }),
        param,
      });
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
  if (p.grammar !== undefined) found.push({ gbnf: p.grammar, param: "grammar" });
  if (extra) found.push(extra);
  if (found.length > 1)
    throw new ApiError(
      400,
      `${found.map((g) => g.param).join(" and ")} each constrain the output; give one of them`,
      "invalid_request_error",
      found[1]!.param,
      "invalid_value",
    );
  return found[0];
}

/**
 * Refuses a JSON Schema whose JSON is larger than the grammar bound before converting it (the
 * grammar made from it is larger still).
 */
export function checkSchemaSize(schema: unknown, param: string, limits: ServerLimits): void {
  const bytes = Buffer.byteLength(JSON.stringify(schema) ?? "");
  if (bytes > limits.grammarBytes)
    throw new ApiError(
      400,
      `${param}: the JSON Schema is ${bytes} bytes; the server enforces schemas of at most ${limits.grammarBytes}`,
      "invalid_request_error",
      param,
      "grammar_too_large",
    );
}

/**
 * Compiles the request's grammar once (parse errors are a 400 naming the field); the result makes
 * a fresh constraint per choice.
 */
export function compileGrammar(
  model: Model,
  g: GrammarRequest | undefined,
  limits: ServerLimits,
): (() => SamplerOptions["constraint"]) | undefined {
  if (!g) return undefined;
  const bytes = Buffer.byteLength(g.gbnf);
  if (bytes > limits.grammarBytes)
    throw new ApiError(
      400,
      `${g.param}: the grammar is ${bytes} bytes; the server compiles at most ${limits.grammarBytes}`,
      "invalid_request_error",
      g.param,
      "grammar_too_large",
    );
  let grammar: Grammar;
  try {
    grammar = Grammar.parse(g.gbnf);
  } catch (e) {
    throw new ApiError(
      400,
      `${g.param}: the grammar cannot be used: ${(e as Error).message}`,
      "invalid_request_error",
      g.param,
      g.param === "grammar" ? "invalid_grammar" : "unsupported_schema",
    );
  }
  return () => grammar.constraint(model.tokenizer);
}

/** The request's logit bias, with every end-of-generation token banned under ignore_eos. */
function withEogBan(model: Model, p: ParsedCommon): Map<number, number> {
  const bias = new Map(p.logitBias ?? []);
  if (p.ignoreEos) for (const id of model.tokenizer.vocab.eog) bias.set(id, Number.NEGATIVE_INFINITY);
  return bias;
}

/**
 * A sampler for one choice of a request: llama.cpp's defaults (as llama-server), then the
 * server's (`defaults`, ServerOptions.sampling), under the request's fields; `choice` offsets the
 * seed (the request's, else the server's) so n choices differ but each is reproducible.
 */
export function makeSampler(
  model: Model,
  p: ParsedCommon,
  constraint: (() => SamplerOptions["constraint"]) | undefined,
  choice = 0,
  defaults: ServerSampling = {},
): Sampler {
  const seed = p.seed ?? defaults.seed;
  const so: SamplerOptions = {
    ...LLAMA_CPP_SAMPLING,
    ...defaults,
    ...(p.temperature !== undefined ? { temperature: p.temperature } : {}),
    ...(p.topP !== undefined ? { topP: p.topP } : {}),
    ...(p.topK !== undefined ? { topK: p.topK } : {}),
    ...(p.minP !== undefined ? { minP: p.minP } : {}),
    ...(seed !== undefined ? { seed: (((seed + choice) % 2 ** 32) + 2 ** 32) % 2 ** 32 } : {}),
    ...(p.presencePenalty !== undefined ? { presencePenalty: p.presencePenalty } : {}),
    ...(p.frequencyPenalty !== undefined ? { frequencyPenalty: p.frequencyPenalty } : {}),
    ...(p.repeatPenalty !== undefined ? { repeatPenalty: p.repeatPenalty } : {}),
    ...p.sampling,
    ...(p.logitBias || p.ignoreEos ? { logitBias: withEogBan(model, p) } : {}),
    vocab: model.tokenizer,
    ...(constraint ? { constraint: constraint() } : {}),
  };
  try {
    return new Sampler(so);
  } catch (e) {
    throw new ApiError(400, (e as Error).message);
  }
}
