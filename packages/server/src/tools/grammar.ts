/** A GBNF grammar that forces the model's output to be tool call(s) in its format, arguments valid under each tool's schema. */

import { jsonSchemaToGbnf, SchemaError } from "@minfer/sampler";
import { ApiError } from "../errors.js";
import { ServerError } from "../server-error.js";
import type { ToolFormat } from "./formats.js";
import type { ToolDef, ToolsRequest } from "./parse.js";

/** Keywords whose values are data, not schemas: a `$ref` key inside them is not a reference. */
const DATA_KEYWORDS = new Set(["const", "enum", "default", "examples"]);
/** Keywords whose values map names to schemas: every value is a schema, whatever its key. */
const SCHEMA_MAPS = new Set(["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]);

/** `schema` with every local `$ref` re-rooted under `base` (the JSON pointer where the schema is embedded). */
function rebaseRefs(schema: unknown, base: string, inMap = false): unknown {
  if (Array.isArray(schema)) return schema.map((s) => rebaseRefs(s, base));
  if (typeof schema !== "object" || schema === null) return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    if (inMap) out[k] = rebaseRefs(v, base);
    else if (k === "$ref" && typeof v === "string" && v.startsWith("#")) out[k] = base + v.slice(1);
    else if (DATA_KEYWORDS.has(k)) out[k] = v;
    else out[k] = rebaseRefs(v, base, SCHEMA_MAPS.has(k));
  }
  return out;
}

/** The arguments schema of `tool`, always of an object (`{}` alone would allow any JSON value). */
function argumentsSchema(tool: ToolDef): Record<string, unknown> {
  const { $id: _id, $schema: _schema, ...params } = tool.parameters as Record<string, unknown>;
  return params.type === undefined ? { ...params, type: "object" } : params;
}

const unsupported = (i: number, e: SchemaError) =>
  new ApiError(
    400,
    `tools[${i}].function.parameters: cannot be enforced by a grammar: ${e.message}`,
    "invalid_request_error",
    `tools[${i}].function.parameters`,
    "unsupported_schema",
  );

/** A rule name not defined in `gbnf`. */
function freshName(gbnf: string, want: string): string {
  for (let n = 0; ; n++) {
    const name = n === 0 ? want : `${want}-${n}`;
    if (!new RegExp(`^${name} ::= `, "m").test(gbnf)) return name;
  }
}

/**
 * GBNF (for the sampler's `Grammar.parse`, start rule `root`) forcing the output to be tool call(s) in
 * `format` when the choice is `"required"` (any of the tools) or a named function (that one): each call's
 * JSON is `{"name": <const>, "arguments" | "parameters": <the tool's schema>}`, written as
 * jsonSchemaToGbnf writes JSON (optional single spaces after `,` and `:`). With `parallel` false exactly
 * one call; with `parallel` true one or more (hermes only: llama3 messages carry one call, its templates
 * refusing more). Undefined for `"auto"` and `"none"`. Throws ApiError 400 (param
 * `tools[i].function.parameters`, code `unsupported_schema`) when a schema cannot be enforced.
 */
export function toolCallGrammar(req: ToolsRequest, format: ToolFormat): string | undefined {
  const { choice } = req;
  if (choice === "auto" || choice === "none") return undefined;
  const chosen = req.tools
    .map((tool, i) => ({ tool, i }))
    .filter(({ tool }) => choice === "required" || tool.name === choice.name);
  if (chosen.length === 0)
    // parseTools refuses a tool_choice naming no tool (a 400), so this cannot happen.
    throw new ServerError("INTERNAL", `toolCallGrammar: tool_choice names no tool of ${req.tools.length}`);
  const argsKey = format === "llama3" ? "parameters" : "arguments";
  // Each schema alone first, so that a refusal names its tool.
  for (const { tool, i } of chosen) {
    try {
      jsonSchemaToGbnf(argumentsSchema(tool));
    } catch (e) {
      if (e instanceof SchemaError) throw unsupported(i, e);
      throw e;
    }
  }
  const branches = chosen.map(({ tool }, k) => ({
    type: "object",
    properties: {
      name: { const: tool.name },
      [argsKey]: rebaseRefs(argumentsSchema(tool), `#/anyOf/${k}/properties/${argsKey}`),
    },
    required: ["name", argsKey],
  }));
  let json: string;
  try {
    json = jsonSchemaToGbnf({ anyOf: branches });
  } catch (e) {
    if (e instanceof SchemaError) throw unsupported(chosen[0]!.i, e);
    throw e;
  }
  // Nothing refers to the combined root (every `$ref` was re-rooted into a branch): rename its rule.
  const call = freshName(json, "tool-call");
  json = json.replace(/^root ::= /m, `${call} ::= `);
  if (format === "llama3") return `root ::= ${call}\n${json}`;
  const block = freshName(json, "tool-call-block");
  const root = req.parallel ? `${block} ("\\n" ${block})*` : block;
  return `root ::= ${root}\n${block} ::= "<tool_call>\\n" ${call} "\\n</tool_call>"\n${json}`;
}
