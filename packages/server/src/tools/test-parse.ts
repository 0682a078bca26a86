/** Test support: running the tool-call parser over text given in pieces, and the checks every format shares. */

import { expect } from "vitest";
import type { CallFormat } from "./formats.js";
import type { ToolDef } from "./parse.js";
import { ToolCallParser } from "./parser.js";

export interface Parsed {
  content: string;
  calls: { name: string; arguments: string }[];
}

export interface RunOptions {
  parallel?: boolean;
  /** The text is cut off (max_tokens) at its end. */
  cut?: boolean;
}

/**
 * Feeds `pieces` and checks the deltas: per call one header (index, id, name, "") then argument fragments
 * whose concatenation is the call's arguments.
 */
export function runParser(
  format: CallFormat,
  tools: ToolDef[],
  pieces: string[],
  o: RunOptions = {},
): Parsed {
  let n = 0;
  const p = new ToolCallParser(format, tools, { parallel: o.parallel ?? true, newId: () => `call_${n++}` });
  let content = "";
  const streamed: { id: string; name: string; arguments: string }[] = [];
  const take = (r: {
    content: string;
    deltas: { index: number; id?: string; name?: string; arguments: string }[];
  }) => {
    content += r.content;
    for (const d of r.deltas) {
      if (d.index === streamed.length) {
        expect(d.id).toBeDefined();
        expect(d.name).toBeDefined();
        expect(d.arguments).toBe("");
        streamed.push({ id: d.id!, name: d.name!, arguments: "" });
      } else {
        expect(d.index).toBeLessThan(streamed.length);
        expect(d.id).toBeUndefined();
        expect(d.arguments).not.toBe("");
        streamed[d.index]!.arguments += d.arguments;
      }
    }
  };
  for (const piece of pieces) take(p.push(piece));
  take(p.end(o.cut ?? false));
  expect(streamed.map(({ name, arguments: a }) => ({ name, arguments: a }))).toEqual(
    p.calls.map(({ name, arguments: a }) => ({ name, arguments: a })),
  );
  return { content, calls: p.calls.map(({ name, arguments: a }) => ({ name, arguments: a })) };
}

/** Every way of cutting `text` once, every character alone, and random cuts into several pieces. */
export function* splits(text: string): Generator<string[]> {
  const chars = [...text];
  for (let i = 0; i <= chars.length; i++) yield [chars.slice(0, i).join(""), chars.slice(i).join("")];
  yield chars;
  let seed = 12345;
  const rand = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  for (let r = 0; r < 20; r++) {
    const pieces: string[] = [];
    let cur = "";
    for (const c of chars) {
      cur += c;
      if (rand() < 0.3) {
        pieces.push(cur);
        cur = "";
      }
    }
    pieces.push(cur);
    yield pieces;
  }
}

/** The result of the whole text, after checking that every split gives the same. */
export function parseAll(format: CallFormat, tools: ToolDef[], text: string, o: RunOptions = {}): Parsed {
  const whole = runParser(format, tools, [text], o);
  for (const pieces of splits(text))
    expect(runParser(format, tools, pieces, o), `${format} ${JSON.stringify(pieces)}`).toEqual(whole);
  return whole;
}

/**
 * Every start of `text` cut off there (max_tokens), streamed a character at a time: its content is a start
 * of the whole text's content and holds none of `markers`; its calls are the whole text's first calls,
 * each with the same name and arguments that start the whole call's (the last may be shorter).
 */
export function checkCuts(
  format: CallFormat,
  tools: ToolDef[],
  text: string,
  markers: readonly string[],
): void {
  const whole = runParser(format, tools, [text]);
  const chars = [...text];
  for (let i = 0; i <= chars.length; i++) {
    const prefix = chars.slice(0, i).join("");
    const r = runParser(format, tools, [...prefix], { cut: true });
    const at = `${format} cut after ${JSON.stringify(prefix)}`;
    expect(whole.content.startsWith(r.content.trimEnd()), `${at}: content ${JSON.stringify(r.content)}`).toBe(
      true,
    );
    for (const m of markers) expect(r.content.includes(m), `${at}: ${m} in content`).toBe(false);
    expect(r.calls.length, at).toBeLessThanOrEqual(whole.calls.length);
    r.calls.forEach((c, k) => {
      expect(c.name, at).toBe(whole.calls[k]!.name);
      expect(whole.calls[k]!.arguments.startsWith(c.arguments), `${at}: ${c.arguments}`).toBe(true);
    });
  }
}
