// Chat templates: the Jinja `tokenizer.chat_template` of a model, rendered as Hugging Face
// transformers' apply_chat_template does. Parsing uses @huggingface/jinja; rendering uses its
// interpreter with the operations it gets wrong for Python templates (printing, +, ==, in,
// comparisons, arithmetic, tests, several filters and str methods) replaced by Python semantics,
// and refuses at parse time what neither implements (see chat-template-check.ts, CHAT_TEMPLATES.md).
import { Interpreter } from "@huggingface/jinja";
import { type AstNode, type Program, parseChecked } from "./chat-template-check.js";
import {
  bool,
  compareCodePoints,
  Env,
  isArray,
  isMapping,
  isNumeric,
  numberOf,
  pyCapitalize,
  pyEquals,
  pyJsonDumps,
  pyStr,
  pyStrftime,
  pyStrip,
  pyTitle,
  pyTypeName,
  RV,
  type Rv,
  type Scope,
  str,
  toRv,
} from "./chat-template-python.js";
import { TokenizerError } from "./errors.js";

/** One message of a conversation, OpenAI-style. Extra fields are passed to the template as they are. */
export interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool" | string;
  content?: string | null | Array<{ type: string; text?: string; [k: string]: unknown }>;
  name?: string;
  tool_calls?: Array<{
    id?: string;
    type?: "function";
    function: { name: string; arguments: string | Record<string, unknown> };
  }>;
  tool_call_id?: string;
  reasoning_content?: string;
  [extra: string]: unknown;
}

export interface ChatTemplateRenderOptions {
  /** The conversation. Values must be JSON-like (objects, arrays, strings, numbers, booleans, null). */
  messages: ChatMessage[];
  /** Tool schemas (OpenAI `tools` entries). The template variable `tools` is defined only when given. */
  tools?: unknown[];
  /** End with the opening of an assistant turn. Default true. */
  addGenerationPrompt?: boolean;
  /** The `bos_token` variable; left undefined (prints as "") when absent. */
  bosToken?: string;
  /** The `eos_token` variable; left undefined (prints as "") when absent. */
  eosToken?: string;
  /** Extra template variables, e.g. `{ enable_thinking: false }`. */
  kwargs?: Record<string, unknown>;
  /** The time `strftime_now` formats, in local time like Python's `datetime.now()`. Default `new Date()`. */
  now?: Date;
}

const RESERVED_KWARGS = new Set(["messages", "tools", "add_generation_prompt", "bos_token", "eos_token"]);

/** Raised by the template's own raise_exception(message). */
class TemplateRaise extends Error {}

/**
 * A parsed chat template. `ChatTemplate.parse` refuses (TEMPLATE_UNSUPPORTED, naming the construct
 * and its line) a template that has a syntax error or uses a tag, filter, test, function, method
 * or loop attribute that is not rendered as Jinja2 renders it; `render` reports failures,
 * including the template's own `raise_exception`, as TEMPLATE_RENDER.
 */
export class ChatTemplate {
  readonly name: string;
  readonly source: string;
  readonly #program: Program;
  readonly #outputs: WeakSet<object>;

  private constructor(name: string, source: string, program: Program) {
    this.name = name;
    this.source = source;
    this.#program = program;
    this.#outputs = outputNodes(program);
  }

  /** Parses and checks a template; `name` ("default" or a variant name) appears in errors. */
  static parse(source: string, name = "default"): ChatTemplate {
    if (typeof source !== "string") {
      throw new TokenizerError("INVALID_ARGUMENT", `chat template "${name}" must be a string`);
    }
    return new ChatTemplate(name, source, parseChecked(source, name));
  }

  /** Renders the conversation to the prompt text. */
  render(options: ChatTemplateRenderOptions): string {
    if (!options || !Array.isArray(options.messages)) {
      throw new TokenizerError("INVALID_ARGUMENT", "render: options.messages must be an array of messages");
    }
    const now = options.now ?? new Date();
    const globals = new Env();
    const define = (env: Scope, key: string, value: Rv): void => {
      env.setVariable(key, value);
    };
    for (const [key, value] of [
      ["true", true],
      ["false", false],
      ["none", null],
      ["True", true],
      ["False", false],
      ["None", null],
    ] as const) {
      define(globals, key, toRv(value));
    }
    define(
      globals,
      "raise_exception",
      fn((args) => raiseException(args)),
    );
    define(
      globals,
      "strftime_now",
      fn((args) => str(pyStrftime(now, stringArg(args[0], "strftime_now")))),
    );
    define(globals, "range", fn(pyRange));

    const env = new Env(globals);
    define(env, "messages", toRv(plainData(options.messages, "messages")));
    if (options.tools !== undefined) define(env, "tools", toRv(plainData(options.tools, "tools")));
    define(env, "add_generation_prompt", bool(options.addGenerationPrompt ?? true));
    if (options.bosToken !== undefined) define(env, "bos_token", str(options.bosToken));
    if (options.eosToken !== undefined) define(env, "eos_token", str(options.eosToken));
    for (const [key, value] of Object.entries(options.kwargs ?? {})) {
      if (RESERVED_KWARGS.has(key)) {
        throw new TokenizerError(
          "INVALID_ARGUMENT",
          `render: kwargs.${key} is not allowed; use the render option for it (reserved: ${[...RESERVED_KWARGS].join(", ")})`,
        );
      }
      if (value !== undefined) define(env, key, toRv(plainData(value, `kwargs.${key}`)));
    }

    try {
      const result = new PythonInterpreter(env, this.#outputs).run(this.#program);
      return result.value as string;
    } catch (error) {
      if (error instanceof TemplateRaise) {
        throw new TokenizerError("TEMPLATE_RENDER", error.message, { detail: this.name, cause: error });
      }
      const message = error instanceof Error ? error.message : String(error);
      throw new TokenizerError("TEMPLATE_RENDER", `chat template "${this.name}" failed: ${message}`, {
        detail: this.name,
        cause: error,
      });
    }
  }
}

/** What `chatTemplatesFromMetadata` reads; `GgufMetadata` of @minfer/gguf satisfies it. */
export interface ChatTemplateMetadata {
  keys(): Iterable<string>;
  optString(key: string): string | undefined;
}

/**
 * The chat templates of a GGUF file: "default" from `tokenizer.chat_template` and each
 * `tokenizer.chat_template.<name>` under `<name>`, as sources. Empty when there are none.
 */
export function chatTemplatesFromMetadata(md: ChatTemplateMetadata): Map<string, string> {
  const found = new Map<string, string>();
  const base = "tokenizer.chat_template";
  const main = md.optString(base);
  if (main !== undefined) found.set("default", main);
  for (const key of md.keys()) {
    if (key.startsWith(`${base}.`) && key.length > base.length + 1) {
      const source = md.optString(key);
      if (source !== undefined) found.set(key.slice(base.length + 1), source);
    }
  }
  return found;
}

// ---------------------------------------------------------------------------------------------

/** The part of the library's Interpreter we use and override (its typings do not resolve under NodeNext). */
interface BaseInterpreter {
  run(program: Program): Rv;
  evaluate(node: AstNode | undefined, environment: Scope): Rv;
}
const InterpreterBase = Interpreter as unknown as new (environment: Scope) => BaseInterpreter;

function fn(body: (args: Rv[]) => Rv): Rv {
  return new RV.Function((args: Rv[]) => body(args));
}

function raiseException(args: Rv[]): never {
  throw new TemplateRaise(args[0] === undefined ? "" : pyStr(args[0]));
}

function stringArg(v: Rv | undefined, where: string): string {
  if (v?.type !== "StringValue") throw new Error(`${where}() expects a string argument`);
  return v.value as string;
}

const MAX_RANGE = 100_000; // Jinja2's sandbox limit

function pyRange(args: Rv[]): Rv {
  const n = args
    .filter((a) => a.type !== "KeywordArgumentsValue")
    .map((a) => {
      if (a.type !== "IntegerValue" && a.type !== "BooleanValue") {
        throw new Error(`'${pyTypeName(a)}' object cannot be interpreted as an integer`);
      }
      return numberOf(a);
    });
  const [start, stop, step] = n.length === 1 ? [0, n[0]!, 1] : [n[0]!, n[1]!, n[2] ?? 1];
  if (n.length < 1 || n.length > 3) throw new Error(`range expected 1 to 3 arguments, got ${n.length}`);
  if (step === 0) throw new Error("range() arg 3 must not be zero");
  const out: Rv[] = [];
  for (let i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (out.length >= MAX_RANGE)
      throw new Error(`Range too big. The sandbox blocks ranges larger than ${MAX_RANGE}.`);
    out.push(new RV.Int(i));
  }
  return new RV.Array(out);
}

/** A deep copy of JSON-like input; undefined object fields are dropped (absent, as in Python). */
function plainData(value: unknown, path: string): unknown {
  if (
    value === null ||
    typeof value === "string" ||
    typeof value === "boolean" ||
    typeof value === "number"
  ) {
    return value;
  }
  if (Array.isArray(value)) return value.map((item, i) => plainData(item, `${path}[${i}]`));
  if (typeof value === "object") {
    const proto = Object.getPrototypeOf(value);
    if (proto === Object.prototype || proto === null) {
      const out: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(value)) {
        if (item !== undefined) out[key] = plainData(item, `${path}.${key}`);
      }
      return out;
    }
  }
  throw new TokenizerError(
    "INVALID_ARGUMENT",
    `render: ${path} is ${typeof value === "object" ? (value as object).constructor?.name : typeof value}; only JSON-like data can reach a template`,
  );
}

const STATEMENT_TYPES = new Set([
  "Program",
  "Set",
  "If",
  "For",
  "Macro",
  "CallStatement",
  "FilterStatement",
  "Break",
  "Continue",
  "Comment",
]);

/** The expression nodes whose value is printed ({{ … }} and text), which print as Python's str() does. */
function outputNodes(program: Program): WeakSet<object> {
  const outputs = new WeakSet<object>();
  const visit = (x: unknown): void => {
    if (Array.isArray(x)) x.forEach(visit);
    else if (x instanceof Map) for (const [k, v] of x) visit([k, v]);
    else if (typeof x === "object" && x !== null && typeof (x as AstNode).type === "string") {
      const node = x as AstNode;
      for (const field of ["body", "alternate", "defaultBlock"]) {
        const block = node[field];
        if (Array.isArray(block)) {
          for (const item of block as AstNode[]) if (!STATEMENT_TYPES.has(item.type)) outputs.add(item);
        }
      }
      for (const [key, value] of Object.entries(node)) if (key !== "operator") visit(value);
    }
  };
  visit(program);
  return outputs;
}

function typeError(message: string): Error {
  return new TypeError(message);
}

const COMPARE_OPS = new Set(["<", ">", "<=", ">="]);

function isIntLike(v: Rv): boolean {
  return v.type === "IntegerValue" || v.type === "BooleanValue";
}

function numeric(a: Rv, b: Rv, op: string): Rv {
  const x = numberOf(a);
  const y = numberOf(b);
  const ints = isIntLike(a) && isIntLike(b);
  const make = (r: number, float = !ints): Rv => (float ? new RV.Float(r) : new RV.Int(r));
  if ((op === "/" || op === "//" || op === "%") && y === 0) {
    throw new Error(op === "/" || !ints ? "division by zero" : "integer division or modulo by zero");
  }
  switch (op) {
    case "+":
      return make(x + y);
    case "-":
      return make(x - y);
    case "*":
      return make(x * y);
    case "/":
      return make(x / y, true);
    case "//":
      return make(Math.floor(x / y));
    case "%":
      return make(x - y * Math.floor(x / y));
    default: {
      if (x === 0 && y < 0) throw new Error("0.0 cannot be raised to a negative power");
      return make(x ** y, !ints || y < 0);
    }
  }
}

function binary(op: string, a: Rv, b: Rv): Rv {
  switch (op) {
    case "==":
      return bool(pyEquals(a, b));
    case "!=":
      return bool(!pyEquals(a, b));
    case "~":
      return str(pyStr(a) + pyStr(b));
    case "in":
    case "not in": {
      let found: boolean;
      if (b.type === "StringValue") {
        if (a.type !== "StringValue") {
          throw typeError(`'in <string>' requires string as left operand, not ${pyTypeName(a)}`);
        }
        found = (b.value as string).includes(a.value as string);
      } else if (isArray(b)) found = (b.value as Rv[]).some((item) => pyEquals(a, item));
      else if (isMapping(b))
        found = a.type === "StringValue" && (b.value as Map<string, Rv>).has(a.value as string);
      else if (b.type === "UndefinedValue") found = false;
      else throw typeError(`argument of type '${pyTypeName(b)}' is not iterable`);
      return bool(op === "in" ? found : !found);
    }
  }
  if (a.type === "UndefinedValue" || b.type === "UndefinedValue") {
    throw new Error(`cannot use an undefined value with "${op}"`);
  }
  if (COMPARE_OPS.has(op)) {
    let d: number;
    if (isNumeric(a) && isNumeric(b)) d = numberOf(a) - numberOf(b);
    else if (a.type === "StringValue" && b.type === "StringValue") {
      d = compareCodePoints(a.value as string, b.value as string);
    } else {
      throw typeError(`'${op}' not supported between instances of '${pyTypeName(a)}' and '${pyTypeName(b)}'`);
    }
    return bool(op === "<" ? d < 0 : op === ">" ? d > 0 : op === "<=" ? d <= 0 : d >= 0);
  }
  if (isNumeric(a) && isNumeric(b)) return numeric(a, b, op);
  if (op === "+") {
    if (a.type === "StringValue" && b.type === "StringValue")
      return str((a.value as string) + (b.value as string));
    if (a.type === b.type && isArray(a)) return new RV.Array([...(a.value as Rv[]), ...(b.value as Rv[])]);
    if (a.type === "StringValue") throw typeError(`can only concatenate str (not "${pyTypeName(b)}") to str`);
    if (isArray(a)) throw typeError(`can only concatenate list (not "${pyTypeName(b)}") to list`);
  }
  if (op === "*") {
    const [seq, times] = isIntLike(b) ? [a, b] : [b, a];
    if (isIntLike(times) && seq.type === "StringValue")
      return str((seq.value as string).repeat(numberOf(times)));
    if (isIntLike(times) && isArray(seq)) {
      return new RV.Array(
        Array.from({ length: Math.max(0, numberOf(times)) }, () => seq.value as Rv[]).flat(),
      );
    }
  }
  if (op === "%" && a.type === "StringValue")
    throw new Error("printf-style '%' string formatting is not supported");
  throw typeError(`unsupported operand type(s) for ${op}: '${pyTypeName(a)}' and '${pyTypeName(b)}'`);
}

const TESTS: Record<string, (v: Rv) => boolean> = {
  boolean: (v) => v.type === "BooleanValue",
  callable: (v) => v.type === "FunctionValue",
  defined: (v) => v.type !== "UndefinedValue",
  undefined: (v) => v.type === "UndefinedValue",
  none: (v) => v.type === "NullValue",
  false: (v) => v.type === "BooleanValue" && v.value === false,
  true: (v) => v.type === "BooleanValue" && v.value === true,
  string: (v) => v.type === "StringValue",
  number: isNumeric,
  integer: (v) => v.type === "IntegerValue",
  float: (v) => v.type === "FloatValue",
  mapping: isMapping,
  // Jinja2's Undefined is iterable (empty) and has a length.
  iterable: (v) => v.type === "StringValue" || isArray(v) || isMapping(v) || v.type === "UndefinedValue",
  sequence: (v) => v.type === "StringValue" || isArray(v) || isMapping(v) || v.type === "UndefinedValue",
  odd: (v) => parity(v) === 1,
  even: (v) => parity(v) === 0,
  lower: (v) => isCasedAs(pyStr(v), (s) => s.toLowerCase()),
  upper: (v) => isCasedAs(pyStr(v), (s) => s.toUpperCase()),
};

function parity(v: Rv): number {
  if (!isNumeric(v)) throw typeError(`unsupported operand type(s) for %: '${pyTypeName(v)}' and 'int'`);
  const r = numberOf(v) % 2;
  return r < 0 ? r + 2 : r;
}

function isCasedAs(s: string, to: (s: string) => string): boolean {
  return s.toLowerCase() !== s.toUpperCase() && to(s) === s;
}

const TESTS_WITH_ARGUMENT: Record<string, (v: Rv, arg: Rv) => boolean> = {
  "==": pyEquals,
  eq: pyEquals,
  equalto: pyEquals,
  "!=": (v, a) => !pyEquals(v, a),
  ne: (v, a) => !pyEquals(v, a),
  sameas: (v, a) => v === a || (v.type === a.type && v.type !== "ObjectValue" && v.value === a.value),
  ">": (v, a) => binary(">", v, a).value as boolean,
  gt: (v, a) => binary(">", v, a).value as boolean,
  ">=": (v, a) => binary(">=", v, a).value as boolean,
  ge: (v, a) => binary(">=", v, a).value as boolean,
  "<": (v, a) => binary("<", v, a).value as boolean,
  lt: (v, a) => binary("<", v, a).value as boolean,
  "<=": (v, a) => binary("<=", v, a).value as boolean,
  le: (v, a) => binary("<=", v, a).value as boolean,
  in: (v, a) => binary("in", v, a).value as boolean,
};

function runTest(name: string, v: Rv, args: Rv[]): boolean {
  const unary = TESTS[name];
  if (unary && args.length === 0) return unary(v);
  const withArg = TESTS_WITH_ARGUMENT[name];
  if (withArg && args.length === 1) return withArg(v, args[0]!);
  throw new Error(`no test named '${name}' taking ${args.length} argument(s)`);
}

const STRING_METHODS = new Set(["strip", "lstrip", "rstrip", "title", "capitalize"]);
const OWN_FILTERS = new Set([
  "tojson",
  "select",
  "reject",
  "string",
  "join",
  "trim",
  "title",
  "capitalize",
  "length",
  "count",
  "default",
]);

/**
 * @huggingface/jinja's interpreter with Python's semantics where it differs. Every node goes
 * through `evaluate`, so the overrides apply at any depth.
 */
class PythonInterpreter extends InterpreterBase {
  readonly #outputs: WeakSet<object>;

  constructor(env: Scope, outputs: WeakSet<object>) {
    super(env);
    this.#outputs = outputs;
  }

  override evaluate(node: AstNode | undefined, environment: Scope): Rv {
    const value = this.#evaluateNode(node, environment);
    if (node !== undefined && this.#outputs.has(node) && value.type !== "UndefinedValue") {
      return str(pyStr(value));
    }
    return value;
  }

  #eval(node: unknown, environment: Scope): Rv {
    return this.evaluate(node as AstNode, environment);
  }

  /** Positional and keyword arguments of a call or filter. */
  #arguments(args: AstNode[], environment: Scope): [Rv[], Map<string, Rv>] {
    const positional: Rv[] = [];
    const keywords = new Map<string, Rv>();
    for (const arg of args) {
      if (arg.type === "KeywordArgumentExpression") {
        keywords.set((arg.key as AstNode).value as string, this.#eval(arg.value, environment));
      } else if (arg.type === "SpreadExpression" || arg.type === "KeywordSpreadExpression") {
        throw new Error("argument unpacking in a filter or method call is not supported");
      } else positional.push(this.#eval(arg, environment));
    }
    return [positional, keywords];
  }

  #evaluateNode(node: AstNode | undefined, environment: Scope): Rv {
    switch (node?.type) {
      case "BinaryExpression": {
        const op = (node.operator as { value: string }).value;
        if (op === "and" || op === "or") break;
        return binary(op, this.#eval(node.left, environment), this.#eval(node.right, environment));
      }
      case "TestExpression": {
        const operand = this.#eval(node.operand, environment);
        const result = runTest((node.test as AstNode).value as string, operand, []);
        return bool(node.negate ? !result : result);
      }
      case "FilterExpression": {
        const filter = node.filter as AstNode;
        const call = filter.type === "CallExpression";
        const name = ((call ? filter.callee : filter) as AstNode).value as string;
        if (!OWN_FILTERS.has(name)) break;
        const operand = this.#eval(node.operand, environment);
        const [args, kwargs] = this.#arguments(call ? (filter.args as AstNode[]) : [], environment);
        const own = this.#filter(name, operand, args, kwargs);
        if (own !== undefined) return own;
        break;
      }
      case "CallExpression": {
        const callee = node.callee as AstNode;
        if (callee.type !== "MemberExpression" || callee.computed) break;
        const method = (callee.property as AstNode).value as string;
        if (!STRING_METHODS.has(method)) break;
        const object = this.#eval(callee.object, environment);
        if (object.type !== "StringValue") break;
        const [args] = this.#arguments(node.args as AstNode[], environment);
        return str(stringMethod(method, object.value as string, args));
      }
      case "For": {
        // Jinja2 iterates an undefined value as empty (the else block renders); the library throws.
        const iterable = node.iterable as AstNode;
        const source = iterable.type === "SelectExpression" ? iterable.lhs : iterable;
        if (this.#eval(source, environment).type === "UndefinedValue") {
          const blocks = this as unknown as { evaluateBlock(b: unknown, e: Scope): Rv };
          return blocks.evaluateBlock(node.defaultBlock, environment);
        }
        break;
      }
    }
    return super.evaluate(node, environment);
  }

  /** Filters implemented here; undefined hands the filter to the library. */
  #filter(name: string, operand: Rv, args: Rv[], kwargs: Map<string, Rv>): Rv | undefined {
    const arg = (i: number, key: string): Rv | undefined => args[i] ?? kwargs.get(key);
    switch (name) {
      case "tojson": {
        const ensureAscii = arg(0, "ensure_ascii");
        const indent = arg(1, "indent");
        const separators = arg(2, "separators");
        const sortKeys = arg(3, "sort_keys");
        let seps: [string, string] | null = null;
        if (separators !== undefined && separators.type !== "NullValue") {
          const items = isArray(separators) ? (separators.value as Rv[]) : [];
          if (items.length !== 2 || items.some((s) => s.type !== "StringValue")) {
            throw new Error("tojson: separators must be a pair of strings");
          }
          seps = [items[0]!.value as string, items[1]!.value as string];
        }
        let indentValue: number | string | null = null;
        if (indent !== undefined && indent.type !== "NullValue") {
          if (indent.type !== "IntegerValue" && indent.type !== "StringValue") {
            throw new Error("tojson: indent must be an integer or a string");
          }
          indentValue = indent.value as number | string;
        }
        return str(
          pyJsonDumps(operand, {
            ensureAscii: ensureAscii?.__bool__().value ?? false,
            indent: indentValue,
            separators: seps,
            sortKeys: sortKeys?.__bool__().value ?? false,
          }),
        );
      }
      case "select":
      case "reject": {
        if (!isArray(operand)) throw new Error(`${name}: expected a list, got ${pyTypeName(operand)}`);
        const [test, ...testArgs] = args;
        if (test !== undefined && test.type !== "StringValue")
          throw new Error(`${name}: the test name must be a string`);
        const keep = (item: Rv): boolean => {
          const ok =
            test === undefined ? item.__bool__().value : runTest(test.value as string, item, testArgs);
          return name === "select" ? ok : !ok;
        };
        return new RV.Array((operand.value as Rv[]).filter(keep));
      }
      case "string":
        return str(pyStr(operand));
      case "join": {
        if (operand.type === "UndefinedValue") return str("");
        const items: Rv[] =
          operand.type === "StringValue"
            ? [...(operand.value as string)].map(str)
            : isArray(operand)
              ? (operand.value as Rv[])
              : [];
        if (operand.type !== "StringValue" && !isArray(operand)) {
          throw new Error(`join: cannot join ${pyTypeName(operand)}`);
        }
        const separator = arg(0, "d");
        const attribute = arg(1, "attribute");
        const parts = items.map((item) => {
          const value =
            attribute === undefined || !isMapping(item)
              ? item
              : ((item.value as Map<string, Rv>).get(String(attribute.value)) ?? new RV.Undefined());
          return pyStr(value);
        });
        return str(parts.join(separator === undefined ? "" : pyStr(separator)));
      }
      case "trim": {
        const chars = arg(0, "chars");
        const text = pyStr(operand);
        return str(
          pyStrip(text, chars === undefined || chars.type === "NullValue" ? null : pyStr(chars), "both"),
        );
      }
      case "title":
        return str(pyTitle(pyStr(operand)));
      case "capitalize":
        return str(pyCapitalize(pyStr(operand)));
      case "length":
      case "count": {
        if (operand.type === "StringValue") return new RV.Int([...(operand.value as string)].length);
        if (isArray(operand)) return new RV.Int((operand.value as Rv[]).length);
        if (isMapping(operand)) return new RV.Int((operand.value as Map<string, Rv>).size);
        if (operand.type === "UndefinedValue") return new RV.Int(0);
        throw typeError(`object of type '${pyTypeName(operand)}' has no len()`);
      }
      case "default": {
        const fallback = arg(0, "default_value") ?? str("");
        const boolean = arg(1, "boolean")?.__bool__().value ?? false;
        const missing = operand.type === "UndefinedValue" || (boolean && !operand.__bool__().value);
        return missing ? fallback : operand;
      }
    }
    return undefined;
  }
}

function stringMethod(method: string, s: string, args: Rv[]): string {
  if (method === "title") return pyTitle(s);
  if (method === "capitalize") return pyCapitalize(s);
  const chars = args[0];
  if (chars !== undefined && chars.type !== "NullValue" && chars.type !== "StringValue") {
    throw typeError(`${method} arg must be None or str`);
  }
  const set = chars === undefined || chars.type === "NullValue" ? null : (chars.value as string);
  return pyStrip(s, set, method === "strip" ? "both" : method === "lstrip" ? "left" : "right");
}
