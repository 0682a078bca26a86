/**
 * The grammar of the generic tool-call format (llama.cpp's fallback for templates with no tool format of
 * their own): the whole answer is one JSON object, a call or the reply to the user.
 */

import { jsonSchemaToGbnf, SchemaError } from "@minfer/sampler";
import { ApiError } from "../errors.js";
import {
  argumentsSchema,
  freshName,
  gbnfLiteral,
  type ReasoningPrefix,
  rebaseRefs,
  textWithout,
  unsupported,
} from "./grammar.js";
import type { ToolsRequest } from "./parse.js";

export interface GenericGrammarOptions {
  /** Several calls in one answer, as `{"tool_calls": [...]}` (each with an `id`); else one, `{"tool_call": ...}`. */
  readonly parallel: boolean;
  /** The schema of the reply (response_format's) and the request field it came from; default a string. */
  readonly response?: { readonly schema: unknown; readonly param: string };
  /** A think block the model may write first (see toolCallGrammar). */
  readonly reasoning?: ReasoningPrefix;
}

/**
 * The JSON Schema of a generic answer, as llama.cpp builds it: a call object per tool, `{"name": <the
 * tool's name>, "arguments": <its parameters' schema>}` (and `"id"`, a string of at least 4 characters,
 * when calls are parallel); the answer is `{"tool_call": <a call>}` or, parallel, `{"tool_calls": [<a
 * call>, ...]}` (one or more); with tool_choice `auto` it may instead be `{"response": <a string, or the
 * response_format's schema>}`. `required` allows only calls; a named function only calls of that tool.
 * Each tool's parameters sit under `$defs` (their own `$ref`s re-rooted there).
 */
export function genericSchema(req: ToolsRequest, o: GenericGrammarOptions): Record<string, unknown> {
  const { choice } = req;
  const defs: Record<string, unknown> = {};
  const calls = req.tools
    .filter((tool) => typeof choice !== "object" || tool.name === choice.name)
    .map((tool, k) => {
      const name = `tool-args-${k}`;
      defs[name] = rebaseRefs(argumentsSchema(tool), `#/$defs/${name}`);
      const properties: Record<string, unknown> = {
        name: { type: "string", const: tool.name },
        arguments: { $ref: `#/$defs/${name}` },
      };
      if (o.parallel) properties.id = { type: "string", minLength: 4 };
      return { type: "object", properties, required: Object.keys(properties) };
    });
  const call = calls.length === 1 ? calls[0] : { anyOf: calls };
  const callAnswer = o.parallel
    ? {
        type: "object",
        properties: { tool_calls: { type: "array", items: call, minItems: 1 } },
        required: ["tool_calls"],
      }
    : { type: "object", properties: { tool_call: call }, required: ["tool_call"] };
  if (choice !== "auto") return { $defs: defs, ...callAnswer };
  let response: unknown = { type: "string" };
  if (o.response) {
    defs.response = rebaseRefs(o.response.schema, "#/$defs/response");
    response = { $ref: "#/$defs/response" };
  }
  const reply = { type: "object", properties: { response }, required: ["response"] };
  return { $defs: defs, anyOf: [callAnswer, reply] };
}

/** Converts `schema`, a SchemaError becoming the 400 that `refuse` makes. */
function convert(schema: unknown, refuse: (e: SchemaError) => ApiError): string {
  try {
    return jsonSchemaToGbnf(schema);
  } catch (e) {
    if (e instanceof SchemaError) throw refuse(e);
    throw e;
  }
}

/**
 * GBNF (start rule `root`) forcing a generic answer ({@link genericSchema}), for every tool_choice but
 * `none` (the answer is always JSON in this format, so even `auto` is constrained). Throws ApiError 400
 * (code `unsupported_schema`) naming `tools[i].function.parameters` or the response schema's field when a
 * schema cannot be enforced.
 */
export function genericToolGrammar(req: ToolsRequest, o: GenericGrammarOptions): string {
  // Each schema alone first, so that a refusal names its field.
  req.tools.forEach((tool, i) => {
    convert(argumentsSchema(tool), (e) => unsupported(i, e));
  });
  const response = o.response;
  const refuseResponse = (e: SchemaError) =>
    new ApiError(
      400,
      `${response?.param}: cannot be enforced by a grammar: ${e.message}`,
      "invalid_request_error",
      response?.param ?? "response_format",
      "unsupported_schema",
    );
  if (response && req.choice === "auto") convert(response.schema, refuseResponse);
  const answer = convert(genericSchema(req, o), (e) => unsupported(0, e));
  const r = o.reasoning;
  if (!r) return answer;
  // The think block first (as toolCallGrammar allows it), then the answer under its own start rule.
  const body = `${textWithout(r.end)} ${gbnfLiteral(r.end)} [ \\t\\n]{0,4}`;
  const think = r.open ? body : `${gbnfLiteral(r.start)} [ \\t\\n]{0,4} ${body}`;
  const name = freshName(answer, "answer");
  const thinkName = freshName(answer, "think");
  const renamed = answer.replace(/^root ::= /m, `${name} ::= `);
  return `root ::= ${thinkName}${r.open ? "" : "?"} ${name}\n${thinkName} ::= ${think}\n${renamed}`;
}
