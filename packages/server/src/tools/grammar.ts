/** A GBNF grammar that forces the model's output to be tool call(s) in its format, arguments valid under each tool's schema. */

import { jsonSchemaToGbnf, SchemaError } from "@minfer/sampler";
import { ApiError } from "../errors.js";
import { ServerError } from "../server-error.js";
import { DEEPSEEK, KIMI } from "./format-sections.js";
import type { ToolFormat } from "./formats.js";
import type { ToolDef, ToolsRequest } from "./parse.js";

/** Keywords whose values are data, not schemas: a `$ref` key inside them is not a reference. */
const DATA_KEYWORDS = new Set(["const", "enum", "default", "examples"]);
/** Keywords whose values map names to schemas: every value is a schema, whatever its key. */
const SCHEMA_MAPS = new Set(["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]);

/** `schema` with every local `$ref` re-rooted under `base` (the JSON pointer where the schema is embedded). */
export function rebaseRefs(schema: unknown, base: string, inMap = false): unknown {
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
export function argumentsSchema(tool: ToolDef): Record<string, unknown> {
  const { $id: _id, $schema: _schema, ...params } = tool.parameters as Record<string, unknown>;
  return params.type === undefined ? { ...params, type: "object" } : params;
}

export const unsupported = (i: number, e: SchemaError) =>
  new ApiError(
    400,
    `tools[${i}].function.parameters: cannot be enforced by a grammar: ${e.message}`,
    "invalid_request_error",
    `tools[${i}].function.parameters`,
    "unsupported_schema",
  );

/** A rule name not defined in `gbnf`. */
export function freshName(gbnf: string, want: string): string {
  for (let n = 0; ; n++) {
    const name = n === 0 ? want : `${want}-${n}`;
    if (!new RegExp(`^${name} ::= `, "m").test(gbnf)) return name;
  }
}

/** `text` as a GBNF string literal. */
export function gbnfLiteral(text: string): string {
  return `"${text.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n").replace(/\r/g, "\\r").replace(/\t/g, "\\t")}"`;
}

/** A GBNF character class of every character but those of `chars`. */
function notChars(chars: string): string {
  // ("^" is literal anywhere but first, so it goes last; the rest that a class reads specially is escaped)
  const set = [...new Set(chars)].sort((a, b) => Number(a === "^") - Number(b === "^"));
  const esc = set.map((c) => (c === "\n" ? "\\n" : c === "\t" ? "\\t" : "[]\\-".includes(c) ? `\\${c}` : c));
  return `[^${esc.join("")}]`;
}

/**
 * A GBNF expression for any text that does not contain `tag` and does not end with the start of it, so
 * that `tag` after it is its first occurrence. The tag's first character must not recur in it (true of
 * every tag it is used with: `</think>`, `\n</parameter>`, `</arg_value>` …).
 */
export function textWithout(tag: string): string {
  const first = tag[0]!;
  if (tag.indexOf(first, 1) >= 0)
    throw new ServerError(
      "INTERNAL",
      `textWithout: the tag ${JSON.stringify(tag)} repeats its first character`,
    );
  const alts = [notChars(first)];
  const run = `${gbnfLiteral(first)}+`;
  for (let n = 1; n < tag.length; n++)
    alts.push(`${run}${n > 1 ? ` ${gbnfLiteral(tag.slice(1, n))}` : ""} ${notChars(first + tag[n]!)}`);
  return `(${alts.join(" | ")})*`;
}

/** A model's think block before the calls: its tags, and whether the prompt already opened it. */
export interface ReasoningPrefix {
  readonly start: string;
  readonly end: string;
  readonly open: boolean;
}

/** The schemas behind a grammar: each under `$defs`, converted once into rules named after their keys. */
class SchemaRules {
  readonly #defs: Record<string, unknown> = {};
  readonly #owners = new Map<string, number>();

  /** Adds `schema` (a part of tool `i`'s arguments at JSON pointer `base`) as the rule `name`. */
  add(name: string, schema: unknown, i: number, base?: string): string {
    this.#defs[name] = rebaseRefs(schema, base ?? `#/$defs/${name}`);
    this.#owners.set(name, i);
    return name;
  }

  gbnf(): string {
    const names = Object.keys(this.#defs);
    if (names.length === 0) return "";
    let text: string;
    try {
      text = jsonSchemaToGbnf({ $defs: this.#defs, anyOf: names.map((n) => ({ $ref: `#/$defs/${n}` })) });
    } catch (e) {
      if (e instanceof SchemaError) {
        const name = /#\/\$defs\/([^/]+)/.exec(e.path ?? "")?.[1];
        throw unsupported(this.#owners.get(name ?? "") ?? this.#owners.values().next().value ?? 0, e);
      }
      throw e;
    }
    for (const n of names)
      if (!new RegExp(`^${n} ::= `, "m").test(text))
        throw new ServerError("INTERNAL", `toolCallGrammar: the schema rule ${n} is missing`);
    // Nothing refers to the combined root: rename it out of the way of the grammar's own root.
    return text.replace(/^root ::= /m, `${freshName(text, "tool-schemas")} ::= `);
  }
}

type Chosen = { tool: ToolDef; i: number }[];

/** One of several alternatives, or several in a row (separated by `sep`) when `many`. */
const repeat = (rule: string, sep: string, many: boolean) =>
  many ? `${rule} (${sep === "" ? "" : `${gbnfLiteral(sep)} `}${rule})*` : rule;

/** JSON call objects: the arguments under `argsKey`, the name (a const) under `nameKey`, `extra` beside. */
function objectCalls(
  chosen: Chosen,
  rules: SchemaRules,
  nameKey: string,
  argsKey: string,
  extra: Record<string, unknown> = {},
): string {
  const alts = chosen.map(({ tool, i }, k) => {
    const props: Record<string, unknown> = { ...extra, [nameKey]: { const: tool.name } };
    props[argsKey] = { $ref: `#/$defs/tool-args-${k}` };
    rules.add(`tool-args-${k}`, argumentsSchema(tool), i);
    const call = { type: "object", properties: props, required: Object.keys(props) };
    return rules.add(`tool-call-${k}`, call, i, "#");
  });
  return `(${alts.join(" | ")})`;
}

/** Per tool, `head(name) args suffix`. */
function namedCalls(
  chosen: Chosen,
  rules: SchemaRules,
  wrap: (name: string, args: string) => string,
): string {
  const alts = chosen.map(({ tool, i }, k) =>
    wrap(tool.name, rules.add(`tool-args-${k}`, argumentsSchema(tool), i)),
  );
  return `(${alts.join(" | ")})`;
}

/** The parameters of a tool's schema in order, required ones flagged. */
function parameters(tool: ToolDef): { key: string; schema: Record<string, unknown>; required: boolean }[] {
  const s = argumentsSchema(tool) as { properties?: Record<string, unknown>; required?: unknown };
  const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
  return Object.entries(s.properties ?? {}).map(([key, schema]) => ({
    key,
    schema: (typeof schema === "object" && schema !== null ? schema : {}) as Record<string, unknown>,
    required: required.has(key),
  }));
}

/**
 * Items in order with `sep` between: the required ones (in the schema's order) always, then each optional
 * one or not. Without required items any run of the optional ones, or none.
 */
function sequence(items: { expr: string; required: boolean }[], sep: string): string {
  const s = sep === "" ? "" : `${gbnfLiteral(sep)} `;
  const req = items.filter((x) => x.required).map((x) => x.expr);
  const opt = items.filter((x) => !x.required).map((x) => x.expr);
  if (req.length > 0) return [req.join(` ${s}`), ...opt.map((o) => `(${s}${o})?`)].join(" ");
  if (opt.length === 0) return "";
  const from = (k: number): string => [opt[k], ...opt.slice(k + 1).map((o) => `(${s}${o})?`)].join(" ");
  return `(${opt.map((_, k) => from(k)).join(" | ")})?`;
}

/** A string parameter written as raw text (XML-style formats) up to `close`: its enum's values, or any text. */
function rawString(schema: Record<string, unknown>, close: string): string {
  const values = Array.isArray(schema.enum)
    ? schema.enum
    : schema.const !== undefined
      ? [schema.const]
      : undefined;
  if (values?.every((v) => typeof v === "string"))
    return `(${values.map((v) => gbnfLiteral(v as string)).join(" | ")})`;
  return textWithout(close);
}

const isString = (schema: Record<string, unknown>) =>
  schema.type === "string" ||
  (schema.type === undefined &&
    ((Array.isArray(schema.enum) && schema.enum.every((v) => typeof v === "string")) ||
      typeof schema.const === "string"));

/** Per tool, its parameters as elements `open(key) value close` (XML-style formats). */
function xmlCalls(
  chosen: Chosen,
  rules: SchemaRules,
  element: (key: string, value: string) => string,
  valueClose: string,
  wrap: (name: string, params: string) => string,
): string {
  const alts = chosen.map(({ tool, i }, k) => {
    rules.add(`tool-args-${k}`, argumentsSchema(tool), i);
    const items = parameters(tool).map(({ key, schema, required }, j) => {
      const value = isString(schema)
        ? rawString(schema, valueClose)
        : rules.add(`tool-arg-${k}-${j}`, schema, i, `#/$defs/tool-args-${k}`);
      return { expr: `(${element(key, value)})`, required };
    });
    return `(${wrap(tool.name, sequence(items, ""))})`;
  });
  return `(${alts.join(" | ")})`;
}

/** Per tool, `name(k=v, …)` with Python's True/False/None and JSON for the other values. */
function pythonCalls(chosen: Chosen, rules: SchemaRules): string {
  const alts = chosen.map(({ tool, i }, k) => {
    rules.add(`tool-args-${k}`, argumentsSchema(tool), i);
    const items = parameters(tool).map(({ key, schema, required }, j) => {
      const value =
        schema.type === "boolean"
          ? '("True" | "False")'
          : schema.type === "null"
            ? '"None"'
            : rules.add(`tool-arg-${k}-${j}`, schema, i, `#/$defs/tool-args-${k}`);
      return { expr: `${gbnfLiteral(`${key}=`)} ${value}`, required };
    });
    return `(${gbnfLiteral(`${tool.name}(`)} ${sequence(items, ", ")} ")")`;
  });
  return `(${alts.join(" | ")})`;
}

/** The calls part of the grammar for `format` (one or several calls when `many`). */
function callsExpr(format: ToolFormat, chosen: Chosen, rules: SchemaRules, many: boolean): string {
  const lit = gbnfLiteral;
  switch (format) {
    case "hermes": {
      const call = objectCalls(chosen, rules, "name", "arguments");
      return repeat(`("<tool_call>\\n" ${call} "\\n</tool_call>")`, "\n", many);
    }
    case "llama3":
      return objectCalls(chosen, rules, "name", "parameters");
    case "mistral-nemo":
      return `"[TOOL_CALLS][" ${repeat(objectCalls(chosen, rules, "name", "arguments"), ", ", many)} "]"`;
    case "granite":
      return `"<|tool_call|>[" ${repeat(objectCalls(chosen, rules, "name", "arguments"), ", ", many)} "]"`;
    case "command-r7b": {
      const call = objectCalls(chosen, rules, "tool_name", "parameters", {
        tool_call_id: { type: "string" },
      });
      return `"<|START_ACTION|>[\\n    " ${repeat(call, ",\n    ", many)} "\\n]<|END_ACTION|>"`;
    }
    case "mistral":
      return repeat(
        namedCalls(chosen, rules, (n, a) => `(${lit(`[TOOL_CALLS]${n}[ARGS]`)} ${a})`),
        "",
        many,
      );
    case "deepseek-r1": {
      const call = namedCalls(
        chosen,
        rules,
        (n, a) =>
          `(${lit(`${DEEPSEEK.callBegin}function${DEEPSEEK.sep}${n}\n\`\`\`json\n`)} ${a} ${lit(`\n\`\`\`${DEEPSEEK.callEnd}`)})`,
      );
      return `${lit(DEEPSEEK.callsBegin)} ${repeat(call, "\n", many)} ${lit(DEEPSEEK.callsEnd)}`;
    }
    case "deepseek-v3.1": {
      const call = namedCalls(
        chosen,
        rules,
        (n, a) => `(${lit(`${DEEPSEEK.callBegin}${n}${DEEPSEEK.sep}`)} ${a} ${lit(DEEPSEEK.callEnd)})`,
      );
      return `${lit(DEEPSEEK.callsBegin)} ${repeat(call, "", many)} ${lit(DEEPSEEK.callsEnd)}`;
    }
    case "kimi-k2": {
      const call = namedCalls(
        chosen,
        rules,
        (n, a) =>
          `(${lit(`${KIMI.callBegin}functions.${n}:`)} [0-9]+ ${lit(KIMI.argsBegin)} ${a} ${lit(KIMI.callEnd)})`,
      );
      return `${lit(KIMI.sectionBegin)} ${repeat(call, "", many)} ${lit(KIMI.sectionEnd)}`;
    }
    case "qwen3-coder": {
      const call = xmlCalls(
        chosen,
        rules,
        (key, value) => `${lit(`<parameter=${key}>\n`)} ${value} ${lit("\n</parameter>\n")}`,
        "\n</parameter>",
        (n, params) =>
          `${lit(`<tool_call>\n<function=${n}>\n`)} ${params} ${lit("</function>\n</tool_call>")}`,
      );
      return repeat(call, "\n", many);
    }
    case "glm-4.5": {
      const call = xmlCalls(
        chosen,
        rules,
        (key, value) => `${lit(`<arg_key>${key}</arg_key>\n<arg_value>`)} ${value} ${lit("</arg_value>\n")}`,
        "</arg_value>",
        (n, params) => `${lit(`<tool_call>${n}\n`)} ${params} ${lit("</tool_call>")}`,
      );
      return repeat(call, "\n", many);
    }
    case "pythonic":
      return `"[" ${repeat(pythonCalls(chosen, rules), ", ", many)} "]"`;
    case "lfm2":
      return `"<|tool_call_start|>[" ${repeat(pythonCalls(chosen, rules), ", ", many)} "]<|tool_call_end|>"`;
  }
}

/**
 * GBNF (for the sampler's `Grammar.parse`, start rule `root`) forcing the output to be tool call(s) in
 * `format` when the choice is `"required"` (any of the tools) or a named function (that one); undefined
 * for `"auto"` and `"none"`. Each call is written as the format's templates write it, its arguments valid
 * under the tool's schema: JSON as jsonSchemaToGbnf writes it (optional single spaces after `,` and `:`)
 * where the format's arguments are JSON; a parameter per element where they are XML-style (a string
 * parameter as text up to the element's close, or one of its enum's values; any other parameter as JSON);
 * Python's True/False/None and JSON for the rest in Python-style calls. With `parallel` false exactly one
 * call, else one or more (llama3: always one, its templates refusing more). With `reasoning`, the model's
 * think block may come first (must, and is already open, when `reasoning.open`): its text is free up to
 * the end tag. Throws ApiError 400 (param `tools[i].function.parameters`, code `unsupported_schema`)
 * when a schema cannot be enforced.
 */
export function toolCallGrammar(
  req: ToolsRequest,
  format: ToolFormat,
  reasoning?: ReasoningPrefix,
): string | undefined {
  const { choice } = req;
  if (choice === "auto" || choice === "none") return undefined;
  const chosen = req.tools
    .map((tool, i) => ({ tool, i }))
    .filter(({ tool }) => choice === "required" || tool.name === choice.name);
  if (chosen.length === 0)
    // parseTools refuses a tool_choice naming no tool (a 400), so this cannot happen.
    throw new ServerError("INTERNAL", `toolCallGrammar: tool_choice names no tool of ${req.tools.length}`);
  // Each schema alone first, so that a refusal names its tool.
  for (const { tool, i } of chosen) {
    try {
      jsonSchemaToGbnf(argumentsSchema(tool));
    } catch (e) {
      if (e instanceof SchemaError) throw unsupported(i, e);
      throw e;
    }
  }
  const rules = new SchemaRules();
  const calls = callsExpr(format, chosen, rules, req.parallel && format !== "llama3");
  const defs = rules.gbnf();
  const calls_ = freshName(defs, "tool-calls");
  let root = calls_;
  let think = "";
  if (reasoning) {
    const name = freshName(defs, "think");
    // (whitespace around the block bounded, as llama.cpp's: a model must not write it forever)
    const body = `${textWithout(reasoning.end)} ${gbnfLiteral(reasoning.end)} [ \\t\\n]{0,4}`;
    think = `${name} ::= ${reasoning.open ? body : `${gbnfLiteral(reasoning.start)} [ \\t\\n]{0,4} ${body}`}\n`;
    root = `${reasoning.open ? name : `${name}?`} ${calls_}`;
  }
  return `root ::= ${root}\n${think}${calls_} ::= ${calls}\n${defs}`;
}
