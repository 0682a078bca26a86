import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Model } from "@minfer/engine";
import { ChatTemplate } from "@minfer/tokenizer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cpuRuntime, FIXTURES, type Running, STORIES, start } from "./test-helpers.js";

// Constrained output that could run away or crash: grammars whose repetitions multiply, and a
// JSON Schema oneOf a grammar cannot enforce. Each is a 400 naming the field, on the OpenAI and
// the llama-server routes, and the server goes on answering.

let runtime: Awaited<ReturnType<typeof cpuRuntime>>;
let stories: Model;
let r: Running;

beforeAll(async () => {
  runtime = await cpuRuntime();
  const { Model } = await import("@minfer/engine");
  stories = await Model.load(STORIES, { runtime });
  const qwen3 = readFileSync(join(FIXTURES, "templates/Qwen-Qwen3-0.6B.jinja"), "utf8");
  r = await start({
    model: stories,
    parallel: 1,
    contextOptions: { nCtx: 256 },
    chatTemplate: ChatTemplate.parse(qwen3, "qwen3"),
  });
  await r.server.ready;
});
afterAll(async () => {
  await r?.server.close();
  stories?.dispose();
  runtime?.dispose();
});

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** The body of a request on `route` asking for `extra` (a prompt or messages added). */
function body(route: string, extra: Record<string, unknown>): Record<string, unknown> {
  const input =
    route === "/v1/chat/completions" ? { messages: [{ role: "user", content: "hi" }] } : { prompt: "hi" };
  return { ...input, max_tokens: 4, ...extra };
}

async function refused(route: string, extra: Record<string, unknown>): Promise<ErrorBody["error"]> {
  const res = await r.post(route, body(route, extra));
  const text = await res.text();
  expect(res.status, `${route}: ${text}`).toBe(400);
  return (JSON.parse(text) as ErrorBody).error;
}

async function stillServing(): Promise<void> {
  expect((await fetch(`${r.url}/health`)).status).toBe(200);
  const res = await r.post("/completion", { prompt: "Once", n_predict: 3, grammar: 'root ::= "yes" | "no"' });
  expect(res.status).toBe(200);
  expect(["yes", "no"]).toContain(((await res.json()) as { content: string }).content);
}

const ROUTES = ["/v1/chat/completions", "/completion", "/v1/completions"];

describe("grammars past the grammar bounds", () => {
  const cases: [string, string, string][] = [
    ["optional items repeated inside repetitions", 'root ::= (("a"?){0,500}){0,500}', "65536 allowed"],
    ["one optional item repeated 2000 times", 'root ::= ("a"?){0,2000}', "1024 allowed"],
    ["counts that multiply", 'root ::= ("a"{2000}){2000}', "500000 allowed"],
    ["groups nested 10,000 deep", `root ::= ${"(".repeat(10_000)}"a"${")".repeat(10_000)}`, "256 deep"],
  ];
  it.each(cases)("%s: a 400 naming `grammar` and the bound", async (_what, grammar, bound) => {
    for (const route of ROUTES) {
      const e = await refused(route, { grammar });
      expect(e.param, route).toBe("grammar");
      expect(e.code, route).toBe("invalid_grammar");
      expect(e.message, route).toContain(bound);
    }
    await stillServing();
  });
});

describe("a JSON Schema oneOf whose branches overlap", () => {
  // 1 matches both branches: oneOf refuses it, and a grammar cannot.
  const schema = { oneOf: [{ type: "integer" }, { type: "integer", minimum: 0 }] };

  it("is a 400 naming response_format's schema on /v1/chat/completions and /v1/completions", async () => {
    for (const route of ["/v1/chat/completions", "/v1/completions"]) {
      const e = await refused(route, {
        response_format: { type: "json_schema", json_schema: { name: "n", schema } },
      });
      expect(e.param, route).toBe("response_format.json_schema.schema");
      expect(e.code, route).toBe("unsupported_schema");
      expect(e.message, route).toContain("oneOf");
      expect(e.message, route).toContain("overlap");
    }
    await stillServing();
  });

  it("is a 400 naming json_schema on /completion", async () => {
    const e = await refused("/completion", { json_schema: schema });
    expect(e.param).toBe("json_schema");
    expect(e.code).toBe("unsupported_schema");
    expect(e.message).toContain("oneOf");
    await stillServing();
  });

  it("one whose branches cannot overlap is enforced: generation stays inside it", async () => {
    const disjoint = { oneOf: [{ const: "left" }, { const: "right" }] };
    const res = await r.post("/completion", { prompt: "Once", n_predict: 8, json_schema: disjoint });
    expect(res.status).toBe(200);
    expect(['"left"', '"right"']).toContain(((await res.json()) as { content: string }).content);
  });
});
