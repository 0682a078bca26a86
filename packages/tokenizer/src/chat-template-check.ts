// Parse-time refusal of chat templates that @huggingface/jinja cannot render faithfully: syntax
// errors, and (by walking its AST) filters, tests, functions, methods and loop attributes that it
// or our interpreter (chat-template.ts) does not implement as Python's Jinja2 does. The library's
// AST carries no positions, so lines are found from the source: a scan of the template's tags
// locates the token where parsing failed, and a search of the tags' code locates a construct.
import { parse, tokenize } from "@huggingface/jinja";
import { TokenizerError } from "./errors.js";

/** An AST node of @huggingface/jinja, seen structurally (its typings do not resolve under NodeNext). */
export interface AstNode {
  type: string;
  [field: string]: unknown;
}

/** The root node the library's parser returns. */
export type Program = AstNode & { body: AstNode[] };

interface Token {
  type: string;
  value: string;
}

const lex = tokenize as (
  source: string,
  options: { lstrip_blocks: boolean; trim_blocks: boolean },
) => Token[];
const parseTokens = parse as (tokens: Token[]) => Program;

/** Filters implemented (by the library or by our interpreter) with Jinja2/transformers semantics. */
export const FILTERS = new Set([
  "abs",
  "capitalize",
  "count",
  "default",
  "dictsort",
  "first",
  "float",
  "indent",
  "int",
  "items",
  "join",
  "last",
  "length",
  "list",
  "lower",
  "map",
  "reject",
  "rejectattr",
  "replace",
  "reverse",
  "safe",
  "select",
  "selectattr",
  "sort",
  "string",
  "title",
  "tojson",
  "trim",
  "unique",
  "upper",
]);

/** Tests implemented by our interpreter (`x is name`; the library parses no test arguments). */
export const TESTS = new Set([
  "boolean",
  "callable",
  "defined",
  "even",
  "false",
  "float",
  "integer",
  "iterable",
  "lower",
  "mapping",
  "none",
  "number",
  "odd",
  "sequence",
  "string",
  "true",
  "undefined",
  "upper",
]);

/** Functions a template may call besides its own macros. */
export const GLOBALS = new Set(["namespace", "range", "raise_exception", "strftime_now"]);

/** Methods of str and dict that are implemented as Python does. */
export const METHODS = new Set([
  "capitalize",
  "endswith",
  "get",
  "items",
  "keys",
  "lower",
  "lstrip",
  "replace",
  "rstrip",
  "split",
  "startswith",
  "strip",
  "title",
  "upper",
  "values",
]);

const LOOP_ATTRIBUTES = new Set([
  "index",
  "index0",
  "revindex",
  "revindex0",
  "first",
  "last",
  "length",
  "previtem",
  "nextitem",
]);

interface Tag {
  kind: "block" | "expression" | "comment";
  start: number;
  line: number;
}

/** The template's tags in order, as the library's lexer sees them, and its code with text and strings blanked. */
interface Scan {
  tags: Tag[];
  /** The source with everything outside tags, and inside string literals, replaced by spaces (newlines kept). */
  code: string;
}

function scan(source: string): Scan {
  const tags: Tag[] = [];
  const code = source.replace(/[^\n]/g, " ").split("");
  let line = 1;
  let counted = 0;
  const lineAt = (pos: number): number => {
    for (; counted < pos; counted++) if (source[counted] === "\n") line++;
    return line;
  };
  let i = 0;
  while (i < source.length) {
    const open = source.slice(i).search(/\{[%{#]/);
    if (open < 0) break;
    const start = i + open;
    const kind = source[start + 1] === "#" ? "comment" : source[start + 1] === "%" ? "block" : "expression";
    let k = start + 2;
    let depth = 0;
    if (kind === "comment") {
      const close = source.indexOf("#}", k);
      k = close < 0 ? source.length : close + 2;
    } else {
      while (k < source.length) {
        const ch = source[k]!;
        if (ch === "'" || ch === '"') {
          code[k] = ch;
          k++;
          while (k < source.length && source[k] !== ch) k += source[k] === "\\" ? 2 : 1;
          code[k] = ch;
          k++;
          continue;
        }
        if (kind === "block" && source.startsWith("%}", k)) break;
        if (kind === "expression" && ch === "}" && depth === 0 && source[k + 1] === "}") break;
        if (ch === "{") depth++;
        if (ch === "}") depth--;
        code[k] = ch;
        k++;
      }
      k += 2;
    }
    for (let j = start; j < start + 2 && j < source.length; j++) code[j] = source[j]!;
    const text = source.slice(start, k);
    // The library's lexer removes transformers' {% generation %} tags before tokenizing.
    if (!(kind === "block" && /^\{%-?\s*(end)?generation\s*-?%\}$/.test(text))) {
      tags.push({ kind, start, line: lineAt(start) });
    }
    i = k;
  }
  return { tags, code: code.join("") };
}

function lineOf(source: string, pos: number): number {
  let line = 1;
  for (let i = 0; i < pos && i < source.length; i++) if (source[i] === "\n") line++;
  return line;
}

function refuse(name: string, line: number | undefined, what: string): TokenizerError {
  const where = line === undefined ? "" : `, line ${line}`;
  return new TokenizerError("TEMPLATE_UNSUPPORTED", `chat template "${name}"${where}: ${what}`, {
    ...(line === undefined ? {} : { detail: line }),
  });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

const OPENERS = new Set<string>(["OpenStatement", "OpenExpression", "Comment"]);

/**
 * Tokenizes and parses with @huggingface/jinja (trim_blocks and lstrip_blocks, as transformers
 * sets them), then refuses what it cannot render faithfully. Throws TEMPLATE_UNSUPPORTED naming
 * the construct and its 1-based line.
 */
export function parseChecked(source: string, name: string): Program {
  const { tags, code } = scan(source);
  const lastLine = lineOf(source, source.length);
  let tokens: Token[];
  try {
    tokens = lex(source, { lstrip_blocks: true, trim_blocks: true });
  } catch (error) {
    // The first tag whose end makes the lexer fail holds the fault.
    let line = lastLine;
    for (let t = 0; t < tags.length; t++) {
      const end = t + 1 < tags.length ? tags[t + 1]!.start : source.length;
      try {
        lex(source.slice(0, end), { lstrip_blocks: true, trim_blocks: true });
      } catch {
        line = tags[t]!.line;
        break;
      }
    }
    throw refuse(name, line, `syntax error: ${messageOf(error)}`);
  }
  // The parser keeps its position private; a proxy records the furthest token it looked at.
  let furthest = -1;
  const watched = new Proxy(tokens, {
    get(target, property, receiver) {
      if (typeof property === "string" && /^\d+$/.test(property))
        furthest = Math.max(furthest, Number(property));
      return Reflect.get(target, property, receiver);
    },
  });
  let program: Program;
  try {
    program = parseTokens(watched);
  } catch (error) {
    // The parser recurses per nesting level: a hostile template runs it out of stack.
    if (error instanceof RangeError) throw refuse(name, undefined, tooDeep("more than the parser can take"));
    const message = messageOf(error);
    if (furthest >= tokens.length) throw refuse(name, lastLine, `syntax error: unexpected end of template`);
    const opened = tokens.slice(0, furthest + 1).filter((t) => OPENERS.has(t.type)).length;
    const line = tags[Math.max(0, opened - 1)]?.line ?? lastLine;
    const tag = /^Unknown statement type: (\w+)/.exec(message);
    throw refuse(name, line, tag ? `unsupported tag "{% ${tag[1]} %}"` : `syntax error: ${message}`);
  }
  const depth = astDepth(program, MAX_TEMPLATE_DEPTH);
  if (depth > MAX_TEMPLATE_DEPTH) throw refuse(name, undefined, tooDeep(`over ${MAX_TEMPLATE_DEPTH}`));
  checkConstructs(program, source, code, name);
  return program;
}

/**
 * The deepest nesting of expressions and blocks a template may have: the checks and the renderer
 * walk the tree recursively, and real templates stay far below it (the fixtures' deepest: ~20).
 */
export const MAX_TEMPLATE_DEPTH = 200;

const tooDeep = (levels: string): string =>
  `the template nests ${levels} levels deep (expressions and blocks); at most ${MAX_TEMPLATE_DEPTH}`;

/** The depth of the tree under `root` (arrays and maps do not count), without recursion; stops past `limit`. */
export function astDepth(root: unknown, limit: number): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[root, 0]];
  while (stack.length > 0) {
    const [x, depth] = stack.pop()!;
    if (Array.isArray(x)) for (const item of x) stack.push([item, depth]);
    else if (x instanceof Map) for (const [k, v] of x) stack.push([k, depth], [v, depth]);
    else if (isNode(x)) {
      deepest = Math.max(deepest, depth + 1);
      if (deepest > limit) return deepest;
      for (const [key, value] of Object.entries(x)) if (key !== "operator") stack.push([value, depth + 1]);
    }
  }
  return deepest;
}

function isNode(x: unknown): x is AstNode {
  return typeof x === "object" && x !== null && typeof (x as { type?: unknown }).type === "string";
}

const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Walks the AST and refuses the first construct outside the supported sets. */
function checkConstructs(program: Program, source: string, code: string, name: string): void {
  const locate = (pattern: string): number | undefined => {
    const match = new RegExp(pattern).exec(code);
    return match ? lineOf(source, match.index) : undefined;
  };
  const fail = (kind: string, what: string, pattern: string, supported?: Set<string>): never => {
    const list = supported ? `; supported: ${[...supported].sort().join(", ")}` : "";
    throw refuse(name, locate(pattern), `unsupported ${kind} "${what}"${list}`);
  };

  const macros = new Set<string>();
  const collect = (x: unknown): void => {
    if (Array.isArray(x)) x.forEach(collect);
    else if (isNode(x)) {
      if (x.type === "Macro") macros.add((x.name as AstNode).value as string);
      for (const [key, value] of Object.entries(x)) if (key !== "operator") collect(value);
    }
  };
  collect(program);

  const checkFilter = (filter: AstNode): void => {
    const call = filter.type === "CallExpression";
    const callee = (call ? filter.callee : filter) as AstNode;
    const filterName = callee.value as string;
    const pattern = `(\\||\\bfilter\\s)\\s*${escapeRe(filterName)}\\b`;
    if (callee.type !== "Identifier" || !FILTERS.has(filterName))
      fail("filter", filterName, pattern, FILTERS);
    if (filterName === "map") {
      const args = (call ? filter.args : []) as AstNode[];
      const byAttribute = args.some(
        (a) => a.type === "KeywordArgumentExpression" && (a.key as AstNode).value === "attribute",
      );
      if (!byAttribute) fail("filter", "map without attribute=", pattern);
    }
    if (call) visit(filter.args);
  };

  const checkCallee = (callee: AstNode): void => {
    if (callee.type === "Identifier") {
      const fn = callee.value as string;
      if (!GLOBALS.has(fn) && !macros.has(fn) && fn !== "caller") {
        fail("function", fn, `(?<![.\\w])${escapeRe(fn)}\\s*\\(`, GLOBALS);
      }
      return;
    }
    if (callee.type === "MemberExpression" && !callee.computed) {
      const method = (callee.property as AstNode).value as string;
      if (!METHODS.has(method)) fail("method", method, `\\.\\s*${escapeRe(String(method))}\\s*\\(`, METHODS);
      visit(callee.object);
      return;
    }
    fail("call", "of a computed callee", "\\]\\s*\\(");
  };

  const visit = (x: unknown): void => {
    if (Array.isArray(x)) {
      x.forEach(visit);
      return;
    }
    if (x instanceof Map) {
      for (const [key, value] of x) {
        visit(key);
        visit(value);
      }
      return;
    }
    if (!isNode(x)) return;
    switch (x.type) {
      case "FilterExpression":
        visit(x.operand);
        checkFilter(x.filter as AstNode);
        return;
      case "FilterStatement":
        checkFilter(x.filter as AstNode);
        visit(x.body);
        return;
      case "TestExpression": {
        const test = (x.test as AstNode).value as string;
        if (!TESTS.has(test)) fail("test", test, `\\bis\\s+(not\\s+)?${escapeRe(test)}\\b`, TESTS);
        visit(x.operand);
        return;
      }
      case "CallExpression":
        checkCallee(x.callee as AstNode);
        visit(x.args);
        return;
      case "CallStatement": {
        const call = x.call as AstNode;
        const macro = (call.callee as AstNode).value as string;
        if (!macros.has(macro)) fail("call block of", macro, `\\bcall\\b[^%]*\\b${escapeRe(macro)}\\s*\\(`);
        visit(call.args);
        visit(x.callerArgs);
        visit(x.body);
        return;
      }
      case "MemberExpression": {
        const object = x.object as AstNode;
        const property = x.property as AstNode;
        if (
          object.type === "Identifier" &&
          object.value === "loop" &&
          !x.computed &&
          property.type === "Identifier" &&
          !LOOP_ATTRIBUTES.has(property.value as string)
        ) {
          const attr = property.value as string;
          fail("loop attribute", `loop.${attr}`, `\\bloop\\s*\\.\\s*${escapeRe(attr)}\\b`, LOOP_ATTRIBUTES);
        }
        visit(object);
        if (x.computed) visit(property);
        return;
      }
    }
    for (const [key, value] of Object.entries(x)) if (key !== "operator") visit(value);
  };
  visit(program);
}
