/**
 * Formats whose arguments are XML-style elements, one per parameter, inside `<tool_call>`: Qwen3-Coder
 * (`<function=name><parameter=k>v</parameter></function>`) and GLM-4.5 (`name<arg_key>k</arg_key><arg_value>v</arg_value>`).
 * The arguments are built as a JSON object, `{"k": v, …}`, as the elements arrive: a parameter declared
 * a string is streamed character by character, another value is added once its element closes (as JSON
 * when it is JSON, else as a string).
 */

import type { ToolDef } from "./parse.js";
import {
  closeAfter,
  type FormatScanner,
  jsonChars,
  jsonCharsAt,
  literal,
  type MarkedFormat,
  MORE,
  paramType,
  partialMarkerLength,
  type Region,
  type ScanContext,
  scanMarked,
  skipWs,
  TEXT,
  valueJson,
} from "./scan.js";

const TOOL_CALL_END = "</tool_call>";

/** Builds a call's arguments JSON parameter by parameter. */
class ArgsBuilder {
  json = "{";
  #n = 0;
  constructor(
    readonly name: string,
    readonly tool: ToolDef | undefined,
    readonly memo: Map<string, unknown>,
  ) {}

  key(key: string): void {
    this.json += `${this.#n++ > 0 ? ", " : ""}"${jsonChars(key)}": `;
  }

  /**
   * A value whose text runs from `from` to its close marker `close` (index `closeAt`, or -1 while it has
   * not come): a string value is added as far as it goes, without a possible start of `ends` at the end
   * (the close marker and what it strips); another value once it is whole. `trim` strips one newline the
   * format puts before the close marker. True when the value is whole.
   */
  value(
    s: string,
    key: string,
    from: number,
    closeAt: number,
    ends: readonly string[],
    trim: boolean,
  ): boolean {
    const type = paramType(this.tool, key);
    if (closeAt < 0) {
      if (type === "string") {
        const to = s.length - partialMarkerLength(s, from, ends);
        this.json += `"${jsonCharsAt(s, from, to, this.memo)}`;
      }
      return false;
    }
    let raw = s.slice(from, closeAt);
    if (trim && raw.endsWith("\n")) raw = raw.slice(0, -1);
    this.json += valueJson(raw, type);
    return true;
  }

  region(done: boolean, end: number | undefined, broken = false): Region {
    if (done) this.json += "}";
    return {
      kind: "calls",
      calls: [{ name: this.name, args: this.json, done: done || broken || end !== undefined }],
      end,
    };
  }
}

/** `<function=name>` then `<parameter=k>\nvalue\n</parameter>` elements, `</function>`, `</tool_call>`. */
function qwenRegion(s: string, i: number, ctx: ScanContext): Region {
  let p = skipWs(s, i);
  const f = literal(s, p, "<function=");
  if (f === "more") return MORE;
  if (f === "no") return TEXT;
  const gt = s.indexOf(">", f);
  const name = s.slice(f, gt < 0 ? s.length : gt);
  if (/[\s<]/.test(name)) return TEXT;
  if (gt < 0) return MORE;
  if (!ctx.tools.has(name)) return TEXT;
  const b = new ArgsBuilder(name, ctx.tools.get(name), ctx.memo);
  p = gt + 1;
  for (;;) {
    p = skipWs(s, p);
    if (p >= s.length) return b.region(false, undefined);
    const fe = literal(s, p, "</function>");
    if (typeof fe === "number") {
      const e = closeAfter(s, fe, TOOL_CALL_END, ctx);
      return b.region(true, e === "none" ? fe : e);
    }
    const pe = literal(s, p, "<parameter=");
    if (pe === "no") return fe === "more" ? b.region(false, undefined) : b.region(false, p, true);
    if (pe === "more") return b.region(false, undefined);
    const kgt = s.indexOf(">", pe);
    const key = s.slice(pe, kgt < 0 ? s.length : kgt);
    if (/[\s<]/.test(key) || (kgt >= 0 && key === "")) return b.region(false, p, true);
    if (kgt < 0) return b.region(false, undefined);
    b.key(key);
    let v = kgt + 1;
    if (v >= s.length) {
      if (paramType(b.tool, key) === "string") b.json += '"';
      return b.region(false, undefined);
    }
    if (s[v] === "\n") v++;
    const close = s.indexOf("</parameter>", v);
    if (!b.value(s, key, v, close, ["\n</parameter>", "</parameter>"], true))
      return b.region(false, undefined);
    p = close + "</parameter>".length;
  }
}

/** `name`, then `<arg_key>k</arg_key>` / `<arg_value>v</arg_value>` pairs, then `</tool_call>`. */
function glmRegion(s: string, i: number, ctx: ScanContext): Region {
  const n = skipWs(s, i);
  const m = /[^\s<]*/y;
  m.lastIndex = n;
  const name = m.exec(s)![0];
  let p = n + name.length;
  if (p >= s.length) return MORE;
  if (name === "" || !ctx.tools.has(name)) return TEXT;
  const b = new ArgsBuilder(name, ctx.tools.get(name), ctx.memo);
  for (;;) {
    p = skipWs(s, p);
    if (p >= s.length) return b.region(false, undefined);
    const te = literal(s, p, TOOL_CALL_END);
    if (typeof te === "number") return b.region(true, te);
    const k = literal(s, p, "<arg_key>");
    if (k === "no") return te === "more" ? b.region(false, undefined) : b.region(false, p, true);
    if (k === "more") return b.region(false, undefined);
    const kc = s.indexOf("</arg_key>", k);
    if (kc < 0) return b.region(false, undefined);
    const key = s.slice(k, kc).trim();
    b.key(key);
    p = skipWs(s, kc + "</arg_key>".length);
    if (p >= s.length) return b.region(false, undefined);
    const v = literal(s, p, "<arg_value>");
    if (v === "more") return b.region(false, undefined);
    if (v === "no") return b.region(false, p, true);
    const close = s.indexOf("</arg_value>", v);
    if (!b.value(s, key, v, close, ["</arg_value>"], false)) return b.region(false, undefined);
    p = close + "</arg_value>".length;
  }
}

const QWEN3_CODER: MarkedFormat = { opens: ["<tool_call>"], region: qwenRegion };
const GLM: MarkedFormat = { opens: ["<tool_call>"], region: glmRegion };

export const XML_SCANNERS = {
  "qwen3-coder": (s: string, from: number, ctx: ScanContext) => scanMarked(QWEN3_CODER, s, from, ctx),
  "glm-4.5": (s: string, from: number, ctx: ScanContext) => scanMarked(GLM, s, from, ctx),
} satisfies Record<string, FormatScanner>;
