// Python semantics that @huggingface/jinja gets wrong or lacks, for the chat-template interpreter:
// str()/repr() of values, json.dumps (transformers' `tojson`), ==, str.strip family, str.title,
// and datetime.strftime. Internal to the package (not exported from index.ts).
import { Environment } from "@huggingface/jinja";

/** A runtime value of @huggingface/jinja (its classes are not exported; we use their shape). */
export interface Rv {
  type: string;
  value: unknown;
  __bool__(): { value: boolean };
}

/**
 * The part of the library's Environment we use. Its shipped typings do not resolve under
 * NodeNext (extensionless relative imports in its .d.ts), so the shape is declared here.
 */
export interface Scope {
  set(name: string, value: unknown): Rv;
  setVariable(name: string, value: Rv): Rv;
}

export const Env = Environment as unknown as new (parent?: Scope) => Scope;

type RvClass = new (value?: unknown) => Rv;

function classOf(sample: unknown): RvClass {
  return (new Env().set("v", sample) as object).constructor as RvClass;
}

/** Constructors of the runtime value classes, taken from values the library itself makes. */
export const RV = {
  Str: classOf(""),
  Int: classOf(1),
  Float: classOf(1.5),
  Bool: classOf(true),
  Null: classOf(null),
  Undefined: classOf(undefined),
  Array: classOf([]),
  Object: classOf({}),
  Function: classOf(() => null),
};

/** Converts plain data (already checked to be JSON-like) to a runtime value. */
export function toRv(value: unknown): Rv {
  return new Env().set("v", value);
}

export const str = (s: string): Rv => new RV.Str(s);
export const bool = (b: boolean): Rv => new RV.Bool(b);

export function isNumeric(v: Rv): boolean {
  return v.type === "IntegerValue" || v.type === "FloatValue" || v.type === "BooleanValue";
}

export function isArray(v: Rv): boolean {
  return v.type === "ArrayValue" || v.type === "TupleValue";
}

export function isMapping(v: Rv): boolean {
  return v.type === "ObjectValue" || v.type === "KeywordArgumentsValue";
}

export function numberOf(v: Rv): number {
  return v.type === "BooleanValue" ? Number(v.value) : (v.value as number);
}

/** Python's type name of a value, for error messages that match Python's. */
export function pyTypeName(v: Rv): string {
  switch (v.type) {
    case "StringValue":
      return "str";
    case "IntegerValue":
      return "int";
    case "FloatValue":
      return "float";
    case "BooleanValue":
      return "bool";
    case "NullValue":
      return "NoneType";
    case "UndefinedValue":
      return "Undefined";
    case "ArrayValue":
      return "list";
    case "TupleValue":
      return "tuple";
    case "ObjectValue":
    case "KeywordArgumentsValue":
      return "dict";
    case "NamespaceValue":
      return "Namespace";
    default:
      return "function";
  }
}

/** Python's `repr(float)`: shortest round-trip digits, scientific below 1e-4 and from 1e16. */
export function floatRepr(x: number): string {
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const sign = x < 0 ? "-" : "";
  const [mantissa, expText] = Math.abs(x).toExponential().split("e") as [string, string];
  const digits = mantissa.replace(".", "");
  const exp = Number(expText);
  if (exp >= -4 && exp < 16) {
    if (exp < 0) return `${sign}0.${"0".repeat(-exp - 1)}${digits}`;
    const intPart = digits.slice(0, exp + 1).padEnd(exp + 1, "0");
    const frac = digits.slice(exp + 1);
    return `${sign}${intPart}.${frac === "" ? "0" : frac}`;
  }
  const rest = digits.slice(1);
  const e = `${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
  return `${sign}${digits[0]}${rest === "" ? "" : `.${rest}`}e${e}`;
}

const NON_PRINTABLE = /[\p{C}\p{Z}]/u;

function hex(cp: number, width: number): string {
  return cp.toString(16).padStart(width, "0");
}

/** Python's `repr(str)`. */
export function stringRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (ch === quote || ch === "\\") out += `\\${ch}`;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (ch !== " " && NON_PRINTABLE.test(ch)) {
      out += cp < 0x100 ? `\\x${hex(cp, 2)}` : cp < 0x10000 ? `\\u${hex(cp, 4)}` : `\\U${hex(cp, 8)}`;
    } else out += ch;
  }
  return out + quote;
}

/** Python's `repr()` of a template value (lists and dicts print this way in Jinja2). */
export function pyRepr(v: Rv): string {
  switch (v.type) {
    case "StringValue":
      return stringRepr(v.value as string);
    case "ArrayValue":
      return `[${(v.value as Rv[]).map(pyRepr).join(", ")}]`;
    case "TupleValue": {
      const items = (v.value as Rv[]).map(pyRepr);
      return items.length === 1 ? `(${items[0]},)` : `(${items.join(", ")})`;
    }
    case "ObjectValue":
    case "KeywordArgumentsValue": {
      const entries = [...(v.value as Map<string, Rv>)].map(([k, x]) => `${stringRepr(k)}: ${pyRepr(x)}`);
      return `{${entries.join(", ")}}`;
    }
    case "UndefinedValue":
      return "Undefined";
    case "NamespaceValue":
    case "FunctionValue":
      throw new Error(`cannot print a ${pyTypeName(v)} object (its Python repr is not reproduced)`);
    default:
      return pyStr(v);
  }
}

/** Python's `str()` as Jinja2 prints a value: None is "None", an undefined value is "". */
export function pyStr(v: Rv): string {
  switch (v.type) {
    case "StringValue":
      return v.value as string;
    case "IntegerValue":
      return String(v.value);
    case "FloatValue":
      return floatRepr(v.value as number);
    case "BooleanValue":
      return v.value ? "True" : "False";
    case "NullValue":
      return "None";
    case "UndefinedValue":
      return "";
    default:
      return pyRepr(v);
  }
}

/** Python's `==` between template values. */
export function pyEquals(a: Rv, b: Rv): boolean {
  if (isNumeric(a) && isNumeric(b)) return numberOf(a) === numberOf(b);
  if (a.type !== b.type && !(isMapping(a) && isMapping(b))) return false;
  switch (a.type) {
    case "StringValue":
    case "NullValue":
    case "UndefinedValue":
      return a.value === b.value;
    case "ArrayValue":
    case "TupleValue": {
      const x = a.value as Rv[];
      const y = b.value as Rv[];
      return x.length === y.length && x.every((item, i) => pyEquals(item, y[i]!));
    }
    case "ObjectValue":
    case "KeywordArgumentsValue": {
      const x = a.value as Map<string, Rv>;
      const y = b.value as Map<string, Rv>;
      if (x.size !== y.size) return false;
      for (const [k, item] of x) {
        const other = y.get(k);
        if (other === undefined || !pyEquals(item, other)) return false;
      }
      return true;
    }
    default:
      return a === b;
  }
}

/** Orders strings by code point, as Python does (JavaScript's `<` compares UTF-16 units). */
export function compareCodePoints(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

export interface JsonOptions {
  ensureAscii: boolean;
  /** null: one line; a number (or string) of indentation otherwise. */
  indent: number | string | null;
  /** [item separator, key separator]; null: Python's defaults for the indent. */
  separators: [string, string] | null;
  sortKeys: boolean;
}

const JSON_ESCAPES: Record<string, string> = {
  '"': '\\"',
  "\\": "\\\\",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
  "\b": "\\b",
  "\f": "\\f",
};

function jsonString(s: string, ensureAscii: boolean): string {
  const pattern = ensureAscii ? /[\\"]|[^ -~]/g : /[\\"\x00-\x1f]/g;
  const escaped = s.replace(pattern, (ch) => JSON_ESCAPES[ch] ?? `\\u${hex(ch.charCodeAt(0), 4)}`);
  return `"${escaped}"`;
}

/**
 * Python's `json.dumps(x, ensure_ascii=…, indent=…, separators=…, sort_keys=…)`, which is what
 * transformers installs as the `tojson` filter. Key order is kept unless sortKeys.
 */
export function pyJsonDumps(v: Rv, options: JsonOptions): string {
  const indent =
    options.indent === null
      ? null
      : typeof options.indent === "number"
        ? " ".repeat(Math.max(0, options.indent))
        : options.indent;
  const [itemSep, keySep] = options.separators ?? (indent === null ? [", ", ": "] : [",", ": "]);
  const dump = (x: Rv, depth: number): string => {
    switch (x.type) {
      case "NullValue":
        return "null";
      case "BooleanValue":
        return x.value ? "true" : "false";
      case "IntegerValue":
        return String(x.value);
      case "FloatValue": {
        const n = x.value as number;
        if (Number.isNaN(n)) return "NaN";
        if (!Number.isFinite(n)) return n > 0 ? "Infinity" : "-Infinity";
        return floatRepr(n);
      }
      case "StringValue":
        return jsonString(x.value as string, options.ensureAscii);
      case "ArrayValue":
      case "TupleValue":
      case "ObjectValue":
      case "KeywordArgumentsValue": {
        const isList = isArray(x);
        let parts: string[];
        if (isList) {
          parts = (x.value as Rv[]).map((item) => dump(item, depth + 1));
        } else {
          let entries = [...(x.value as Map<string, Rv>)];
          if (options.sortKeys) entries = entries.sort(([a], [b]) => compareCodePoints(a, b));
          parts = entries.map(
            ([k, item]) => jsonString(k, options.ensureAscii) + keySep + dump(item, depth + 1),
          );
        }
        const [open, close] = isList ? ["[", "]"] : ["{", "}"];
        if (parts.length === 0) return open + close;
        if (indent === null) return open + parts.join(itemSep) + close;
        const inner = `\n${indent.repeat(depth + 1)}`;
        return `${open}${inner}${parts.join(itemSep + inner)}\n${indent.repeat(depth)}${close}`;
      }
      default:
        throw new Error(`Object of type ${pyTypeName(x)} is not JSON serializable`);
    }
  };
  return dump(v, 0);
}

// Python's str.isspace() set (differs from JavaScript's trim: \x1c-\x1f and \x85 in, \ufeff out).
const PY_WHITESPACE = new Set(
  "\t\n\v\f\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000",
);

/** Python's str.strip / lstrip / rstrip, with the optional `chars` argument. */
export function pyStrip(s: string, chars: string | null, side: "both" | "left" | "right"): string {
  const set = chars === null ? PY_WHITESPACE : new Set(chars);
  const cps = [...s];
  let start = 0;
  let end = cps.length;
  if (side !== "right") while (start < end && set.has(cps[start]!)) start++;
  if (side !== "left") while (end > start && set.has(cps[end - 1]!)) end--;
  return cps.slice(start, end).join("");
}

const isCased = (ch: string): boolean => ch.toLowerCase() !== ch.toUpperCase();

/** Python's str.title(): a cased character after an uncased one starts a word. */
export function pyTitle(s: string): string {
  let out = "";
  let previousCased = false;
  for (const ch of s) {
    out += previousCased ? ch.toLowerCase() : ch.toUpperCase();
    previousCased = isCased(ch);
  }
  return out;
}

/** Python's str.capitalize(). */
export function pyCapitalize(s: string): string {
  const [first = "", ...rest] = [...s];
  return first.toUpperCase() + rest.join("").toLowerCase();
}

const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const MONTHS = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December",
];

/** The strftime directives implemented (C/POSIX locale, local time like `datetime.now()`). */
export const STRFTIME_DIRECTIVES = "aAbBdemYyHIMSpjwu%";

/** Python's `datetime.strftime` in the C locale for {@link STRFTIME_DIRECTIVES}; others are refused. */
export function pyStrftime(date: Date, format: string): string {
  const pad = (n: number, width = 2, fill = "0"): string => String(n).padStart(width, fill);
  const year = date.getFullYear();
  const dayOfYear = (Date.UTC(year, date.getMonth(), date.getDate()) - Date.UTC(year, 0, 1)) / 86_400_000 + 1;
  return format.replace(/%(.?)/gs, (whole, d: string) => {
    switch (d) {
      case "a":
        return DAYS[date.getDay()]!.slice(0, 3);
      case "A":
        return DAYS[date.getDay()]!;
      case "b":
        return MONTHS[date.getMonth()]!.slice(0, 3);
      case "B":
        return MONTHS[date.getMonth()]!;
      case "d":
        return pad(date.getDate());
      case "e":
        return pad(date.getDate(), 2, " ");
      case "m":
        return pad(date.getMonth() + 1);
      case "Y":
        return String(date.getFullYear());
      case "y":
        return pad(date.getFullYear() % 100);
      case "H":
        return pad(date.getHours());
      case "I":
        return pad(date.getHours() % 12 === 0 ? 12 : date.getHours() % 12);
      case "M":
        return pad(date.getMinutes());
      case "S":
        return pad(date.getSeconds());
      case "p":
        return date.getHours() < 12 ? "AM" : "PM";
      case "j":
        return pad(dayOfYear, 3);
      case "w":
        return String(date.getDay());
      case "u":
        return String(date.getDay() === 0 ? 7 : date.getDay());
      case "%":
        return "%";
      default:
        throw new Error(
          `strftime_now: directive "${whole}" is not supported; supported: ${[...STRFTIME_DIRECTIVES].map((c) => `%${c}`).join(" ")}`,
        );
    }
  });
}
