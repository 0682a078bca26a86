// The Responses wire format alone, fed what the output parser releases: the streamed items end as the
// non-streamed body's output, and white space before a tool call is no message item of its own (as chat
// answers such content with null).

import { describe, expect, it } from "vitest";
import type { ParsedOutput, WireResult } from "../completions.js";
import { ResponsesOutput } from "./output.js";

/** The data of each SSE event, checking that its `event:` line names its type. */
function events(sse: string): Record<string, unknown>[] {
  return sse
    .split("\n\n")
    .filter((f) => f !== "")
    .map((f) => {
      const [ev, data] = f.split("\n");
      const d = JSON.parse(data!.slice("data: ".length)) as Record<string, unknown>;
      expect(ev).toBe(`event: ${d.type}`);
      return d;
    });
}

const text = (content: string): ParsedOutput => ({ content, deltas: [] });
const call = (
  o: Partial<ParsedOutput["deltas"][number]> & { index: number; arguments: string },
): ParsedOutput => ({
  content: "",
  deltas: [o],
});

const result = (o: Partial<WireResult>): WireResult => ({
  content: "",
  reasoning: "",
  calls: [],
  finish: "eog",
  stopWord: undefined,
  promptTokens: 5,
  cachedTokens: 0,
  completionTokens: 4,
  timings: {},
  ...o,
});

/** Streams `parts`, then the end; returns the events and the final response's output. */
function stream(parts: ParsedOutput[], r: WireResult) {
  const w = new ResponsesOutput({ model: "m", stream: true, echo: {} });
  let sse = w.begin();
  for (const p of parts) sse += w.delta(p, true);
  sse += w.end(r);
  const es = events(sse);
  const last = es.at(-1) as { response: { output: Record<string, unknown>[] } };
  return { es, output: last.response.output };
}

const body = (r: WireResult) =>
  (
    new ResponsesOutput({ model: "m", stream: false, echo: {} }).body(r) as {
      output: Record<string, unknown>[];
    }
  ).output;

/** Item ids made at random (msg_, rs_) left out; a call's follow its call id. */
const noRandomIds = (items: Record<string, unknown>[]) =>
  items.map((it) => (it.type === "function_call" ? it : { ...it, id: "" }));

describe("ResponsesOutput", () => {
  it("white space before a call is held back and dropped: the call is the only item", () => {
    const args = '{"city":"Paris"}';
    const r = result({ content: "\n\n", calls: [{ id: "call_1", name: "get_weather", arguments: args }] });
    const { es, output } = stream(
      [
        text("\n"),
        text("\n"),
        call({ index: 0, id: "call_1", name: "get_weather", arguments: "" }),
        call({ index: 0, arguments: args }),
      ],
      r,
    );
    expect(
      es.filter((e) => e.type === "response.output_item.added").map((e) => (e.item as { type: string }).type),
    ).toEqual(["function_call"]);
    expect(es.some((e) => e.type === "response.output_text.delta")).toBe(false);
    expect(output).toEqual(body(r));
    expect(output).toEqual([
      {
        id: "fc_1",
        type: "function_call",
        call_id: "call_1",
        name: "get_weather",
        arguments: args,
        status: "completed",
      },
    ]);
  });

  it("white space alone, without calls, is the answer: a message item at the end", () => {
    const r = result({ content: " \n" });
    const { es, output } = stream([text(" "), text("\n")], r);
    const deltas = es.filter((e) => e.type === "response.output_text.delta").map((e) => e.delta);
    expect(deltas).toEqual([" \n"]);
    expect(noRandomIds(output)).toEqual(noRandomIds(body(r)));
    expect(output).toHaveLength(1);
  });

  it("white space inside the answer is streamed as it comes", () => {
    const r = result({ content: "Hi \n there" });
    const { es, output } = stream([text("Hi"), text(" \n"), text(" there")], r);
    const deltas = es.filter((e) => e.type === "response.output_text.delta").map((e) => e.delta);
    expect(deltas).toEqual(["Hi", " \n", " there"]);
    expect(noRandomIds(output)).toEqual(noRandomIds(body(r)));
  });

  it("cut by the token limit: the last item is incomplete, and so is the response", () => {
    const r = result({ content: "Once upon", finish: "length" });
    const { es, output } = stream([text("Once"), text(" upon")], r);
    expect(es.at(-1)!.type).toBe("response.incomplete");
    expect(output[0]!.status).toBe("incomplete");
    const done = es.find((e) => e.type === "response.output_item.done") as { item: { status: string } };
    expect(done.item.status).toBe("incomplete");
    expect(noRandomIds(output)).toEqual(noRandomIds(body(r)));
  });
});
