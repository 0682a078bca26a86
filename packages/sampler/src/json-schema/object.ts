/**
 * Objects: the declared properties in the schema's order (required ones mandatory, optional ones may be
 * left out), then any required names the schema does not declare (in `required`'s order), then — only
 * when `additionalProperties` is `true` or a schema — any number of further members whose keys are none of
 * those names. Leaving `additionalProperties` out allows no further members when `properties` is given (a
 * documented subset: JSON Schema would allow any); with neither, any members are allowed. Further
 * members' keys are written without escapes, so that the grammar can tell them from the declared names.
 */

import { child, invalid, UnsatisfiableSchema } from "./errors.js";
import { altOf, classChar, literal, repeat, seq } from "./gbnf.js";
import { isObject } from "./keywords.js";
import { jsonLiteral, type Separators } from "./primitives.js";

/** What the object builder needs from the converter. */
export interface ObjectContext {
  /** A GBNF expression for `schema` at `path`, named from `hint` where a rule is made. */
  visit(schema: unknown, path: string, hint: string): string;
  /** A rule named from `hint` with this body (an existing rule with the same body is reused); its name. */
  rule(hint: string, body: string): string;
  readonly sep: Separators;
}

/** One member in the emitted order. */
interface Member {
  readonly text: string;
  readonly required: boolean;
}

/** The GBNF expression (without a rule) for an object schema `s` at `path`. */
export function objectExpr(
  ctx: ObjectContext,
  s: Record<string, unknown>,
  path: string,
  hint: string,
): string {
  const properties = s.properties ?? {};
  if (!isObject(properties)) throw invalid("properties", path, "must be an object");
  const required = s.required ?? [];
  if (!Array.isArray(required) || required.some((k) => typeof k !== "string")) {
    throw invalid("required", path, "must be an array of strings");
  }
  // With neither properties nor additionalProperties, any members (`{"type": "object"}` is any object).
  const additional =
    s.properties === undefined && s.additionalProperties === undefined ? true : s.additionalProperties;
  if (additional !== undefined && typeof additional !== "boolean" && !isObject(additional)) {
    throw invalid("additionalProperties", path, "must be a boolean or a schema");
  }
  const names = new Set<string>([...Object.keys(properties), ...(required as string[])]);
  const members: Member[] = [];
  const member = (key: string, value: string) => seq(jsonLiteral(key), ctx.sep.colon, value);
  for (const [key, schema] of Object.entries(properties)) {
    const isRequired = required.includes(key);
    if (schema === false) {
      if (isRequired)
        throw new UnsatisfiableSchema("required", path, `"${key}" is required but its schema is false`);
      continue;
    }
    const value = ctx.visit(schema, child(path, "properties", key), `${hint}-${key}`);
    members.push({ text: member(key, value), required: isRequired });
  }
  for (const key of new Set(required as string[])) {
    if (Object.hasOwn(properties, key)) continue;
    if (additional === false) {
      throw new UnsatisfiableSchema(
        "required",
        path,
        `"${key}" is required but additionalProperties is false`,
      );
    }
    const value = ctx.visit(additional ?? true, child(path, "additionalProperties"), `${hint}-${key}`);
    members.push({ text: member(key, value), required: true });
  }
  let extra: string | undefined;
  if (additional !== undefined && additional !== false) {
    const value = ctx.visit(additional, child(path, "additionalProperties"), `${hint}-additional`);
    extra = seq(
      '"\\""',
      keyNotIn(names, (body) => ctx.rule(`${hint}-key`, body)),
      '"\\""',
      ctx.sep.colon,
      value,
    );
  }
  return seq('"{"', membersExpr(ctx, hint, members, extra, ctx.sep.comma), '"}"');
}

/** Members up to which the text of what may follow a member is written out in each alternative. */
const INLINE_MEMBERS = 8;

/**
 * The members between the braces: after the first member present, each later one is `, member`
 * (optional ones optional); before it, the first present member is any optional one up to and including the
 * first required one. For more than a few members, what may follow member i is a rule referring to the
 * one for member i + 1, so the grammar grows linearly with the members, not quadratically.
 */
function membersExpr(
  ctx: ObjectContext,
  hint: string,
  members: Member[],
  extra: string | undefined,
  comma: string,
): string {
  const part = (m: Member) => (m.required ? seq(comma, m.text) : repeat(seq(comma, m.text), 0, 1));
  const tail = extra !== undefined ? repeat(seq(comma, extra), 0, Infinity) : "";
  const flat = (from: number): string => seq(...members.slice(from).map(part), tail);
  const chained: string[] = [];
  const rest = (from: number): string => {
    if (members.length <= INLINE_MEMBERS) return flat(from);
    if (from >= members.length) return tail;
    for (let i = members.length - 1; i >= from && chained[i] === undefined; i--) {
      const next = i + 1 < members.length ? chained[i + 1]! : tail;
      chained[i] = ctx.rule(`${hint}-rest`, seq(part(members[i]!), next));
    }
    return chained[from]!;
  };
  const alts: string[] = [];
  let nullable = true;
  for (let i = 0; i < members.length; i++) {
    alts.push(seq(members[i]!.text, rest(i + 1)));
    if (members[i]!.required) {
      nullable = false;
      break;
    }
  }
  if (nullable && extra !== undefined) alts.push(seq(extra, repeat(seq(comma, extra), 0, Infinity)));
  if (alts.length === 0) return "";
  const body = altOf(alts);
  return nullable ? `(${body})?` : body;
}

/** Characters a key written without escapes may hold. */
const RAW_KEY_CHAR = '[^"\\\\\\x00-\\x1F]';

/** Code points a key written without escapes may not hold (as class members). */
const RAW_EXCLUDED = '"\\\\\\x00-\\x1F';

/** Trie levels written inside one another before the rest of a long name goes into a rule of its own. */
const LEVELS_PER_RULE = 32;

/**
 * Keys (the text between the quotes, no escapes) that are none of `names`: a complement of their trie.
 * Each character of a name nests one level, so every LEVELS_PER_RULE levels the rest becomes a rule
 * (`rule` makes one from a body and gives its name): a long name must not nest the grammar deeply.
 */
function keyNotIn(names: Set<string>, rule: (body: string) => string): string {
  interface Node {
    terminal: boolean;
    children: Map<number, Node>;
  }
  const root: Node = { terminal: false, children: new Map() };
  for (const name of names) {
    let node = root;
    let writable = true;
    for (const ch of name) {
      const cp = ch.codePointAt(0)!;
      if (cp === 0x22 || cp === 0x5c || cp < 0x20) {
        // A raw key cannot hold this character, so it can never spell this name.
        writable = false;
        break;
      }
      let next = node.children.get(cp);
      if (next === undefined) {
        next = { terminal: false, children: new Map() };
        node.children.set(cp, next);
      }
      node = next;
    }
    if (writable) node.terminal = true;
  }
  // Children before parents (a loop, not recursion: a name may be long).
  const order: [Node, number][] = [];
  const todo: [Node, number][] = [[root, 0]];
  while (todo.length > 0) {
    const [node, depth] = todo.pop()!;
    order.push([node, depth]);
    for (const next of node.children.values()) todo.push([next, depth + 1]);
  }
  const texts = new Map<Node, string>();
  for (let k = order.length - 1; k >= 0; k--) {
    const [node, depth] = order[k]!;
    const alts: string[] = [];
    for (const [cp, next] of node.children) {
      alts.push(seq(literal(String.fromCodePoint(cp)), texts.get(next)!));
      texts.delete(next);
    }
    const other = [...node.children.keys()].map(classChar).join("");
    alts.push(seq(`[^${RAW_EXCLUDED}${other}]`, repeat(RAW_KEY_CHAR, 0, Infinity)));
    const body = altOf(alts);
    const text = node.terminal ? `(${body})` : `(${body})?`;
    texts.set(node, depth > 0 && depth % LEVELS_PER_RULE === 0 ? rule(text) : text);
  }
  return texts.get(root)!;
}
