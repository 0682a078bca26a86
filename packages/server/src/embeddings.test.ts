import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Context, embed, Model, rerank } from "@minfer/engine";
import type { DeviceRuntime } from "@minfer/ir";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeBert } from "./bert-fixture.js";
import { cpuRuntime, type Running, STORIES, start } from "./test-helpers.js";

// The embedding endpoints over HTTP (/v1/embeddings with the official openai client, llama-server's
// /embedding and /rerank), checked against the engine's own embed()/rerank() on the same model —
// which the CLI's embed-llamacpp test checks against llama.cpp — and llama-server's shapes and errors.

let dir = "";
let runtime: DeviceRuntime;
let model: Model;
let ranker: Model;
let emb: Running;
let none: Running;
let rank: Running;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "minfer-embeddings-"));
  runtime = await cpuRuntime();
  model = await Model.load(await writeBert(dir, "bert"), { runtime });
  ranker = await Model.load(await writeBert(dir, "bert-rank", { rank: true }), { runtime });
  emb = await start({ model, embeddings: true, contextOptions: { nUbatch: 64 } });
  none = await start({ model, embeddings: true, pooling: "none" });
  rank = await start({ model: ranker, embeddings: true });
  await Promise.all([emb.server.ready, none.server.ready, rank.server.ready]);
});
afterAll(async () => {
  await Promise.all([emb?.server.close(), none?.server.close(), rank?.server.close()]);
  model?.dispose();
  ranker?.dispose();
  runtime?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

// biome-ignore lint/suspicious/noExplicitAny: the answers' JSON, read field by field
type J = any;
const json = async (r: Response): Promise<J> => r.json();

const TEXTS = ["hello world", "I believe the meaning of life is", "a", "The quick brown fox."];

async function direct(texts: string[], pooling?: "none"): Promise<Float32Array[][]> {
  const ctx = new Context(model, {
    embeddings: true,
    nSeqMax: 4,
    nCtx: 256,
    ...(pooling ? { pooling } : {}),
  });
  try {
    return (await embed(ctx, texts)).map((e) => [...e.rows]);
  } finally {
    ctx.dispose();
  }
}

const close = (a: ArrayLike<number>, b: ArrayLike<number>, tol = 1e-6) => {
  expect(a.length).toBe(b.length);
  for (let i = 0; i < a.length; i++) expect(Math.abs(a[i]! - b[i]!)).toBeLessThan(tol);
};

describe("/v1/embeddings with the openai client", () => {
  it("float: one unit vector per input, in order, usage counting every token; the engine's values", async () => {
    const r = await emb.client.embeddings.create({ model: "bert", input: TEXTS, encoding_format: "float" });
    expect(r.object).toBe("list");
    expect(r.data.map((d) => d.index)).toEqual([0, 1, 2, 3]);
    const want = await direct(TEXTS);
    r.data.forEach((d, i) => {
      expect(d.object).toBe("embedding");
      close(d.embedding, want[i]![0]!);
      expect(Math.abs(d.embedding.reduce((s, x) => s + x * x, 0) - 1)).toBeLessThan(1e-5);
    });
    // bge's WordPiece: [CLS] hello world [SEP] is 4 tokens, "I believe the meaning of life is" 9
    expect(r.usage.prompt_tokens).toBe(TEXTS.reduce((n, t) => n + model.tokenizer.encode(t).length, 0));
    expect(model.tokenizer.encode(TEXTS[1]!).length).toBe(9);
    expect(r.usage.total_tokens).toBe(r.usage.prompt_tokens);
  });

  it("base64 (the client's default, decoded by it) gives the same floats", async () => {
    const b = await emb.client.embeddings.create({ model: "bert", input: TEXTS[0]! });
    const f = await emb.client.embeddings.create({
      model: "bert",
      input: TEXTS[0]!,
      encoding_format: "float",
    });
    expect(b.data[0]!.embedding).toEqual(f.data[0]!.embedding);
    const raw = await json(await emb.post("/v1/embeddings", { input: "x", encoding_format: "base64" }));
    expect(typeof raw.data[0].embedding).toBe("string");
    expect(Buffer.from(raw.data[0].embedding, "base64").length).toBe(4 * 32);
  });

  it("token ids, a prompt mixing ids and text, and several such prompts, as llama-server reads them", async () => {
    const ids = model.tokenizer.encode("hello world");
    const one = await json(await emb.post("/v1/embeddings", { input: ids }));
    const text = await emb.client.embeddings.create({
      model: "x",
      input: "hello world",
      encoding_format: "float",
    });
    close(one.data[0].embedding, text.data[0]!.embedding);
    const mixed = await json(await emb.post("/v1/embeddings", { input: [ids[0], "hello", ids[2], ids[3]] }));
    expect(mixed.data).toHaveLength(1);
    close(mixed.data[0].embedding, text.data[0]!.embedding);
    const many = await json(
      await emb.post("/v1/embeddings", { input: [ids, "hello world", [ids[0], "hello world"]] }),
    );
    expect(many.data).toHaveLength(3);
    close(many.data[1].embedding, text.data[0]!.embedding);
  });

  it("concurrent requests (decoded together) give what each gives alone", async () => {
    const alone = await direct(TEXTS);
    const all = await Promise.all(
      Array.from({ length: 8 }, (_, k) =>
        emb.client.embeddings.create({
          model: "x",
          input: [TEXTS[k % 4]!, TEXTS[(k + 1) % 4]!],
          encoding_format: "float",
        }),
      ),
    );
    all.forEach((r, k) => {
      close(r.data[0]!.embedding, alone[k % 4]![0]!);
      close(r.data[1]!.embedding, alone[(k + 1) % 4]![0]!);
    });
  });

  it("bad input: 400 naming the field; an input longer than a batch: 400 'too large'", async () => {
    const err = async (body: unknown, param: string | null, status = 400) => {
      const res = await emb.post("/v1/embeddings", body);
      const j = await json(res);
      expect(res.status, JSON.stringify(j)).toBe(status);
      expect(j.error.param).toBe(param);
      return j.error.message as string;
    };
    expect(await err({}, "input")).toMatch(/"input" or "content"/);
    expect(await err({ input: [] }, "input")).toMatch(/empty/);
    expect(await err({ input: [5, 999999] }, "input")).toMatch(/token 1 is 999999/);
    expect(await err({ input: ["a", { x: 1 }] }, "input[1]")).toMatch(/string or an array/);
    expect(await err({ input: "a", encoding_format: "hex" }, "encoding_format")).toMatch(/float" or "base64/);
    expect(await err({ input: "a", embd_normalize: "x" }, "embd_normalize")).toMatch(/integer/);
    expect(await err({ input: "word ".repeat(100) }, "input")).toMatch(/too large/);
  });
});

describe("llama-server's /embedding and pooling none", () => {
  it("/embedding: an array of { index, embedding: rows }, one pooled row each", async () => {
    const j = await json(await emb.post("/embedding", { content: TEXTS.slice(0, 2) }));
    const want = await direct(TEXTS.slice(0, 2));
    expect(j).toHaveLength(2);
    expect(j[1].index).toBe(1);
    expect(j[1].embedding).toHaveLength(1);
    close(j[1].embedding[0], want[1]![0]!);
  });

  it("embd_normalize -1 leaves the vector as pooled (its norm is not 1)", async () => {
    const j = await json(await emb.post("/embedding", { content: "hello world", embd_normalize: -1 }));
    const n = Math.sqrt(j[0].embedding[0].reduce((s: number, x: number) => s + x * x, 0));
    expect(Math.abs(n - 1)).toBeGreaterThan(1e-3);
  });

  it("pooling none: every token's row, not normalised; /v1/embeddings refuses it (not OpenAI's shape)", async () => {
    const j = await json(await none.post("/embedding", { content: "hello world" }));
    const want = await direct(["hello world"], "none");
    expect(j[0].embedding).toHaveLength(4);
    j[0].embedding.forEach((row: number[], t: number) => {
      close(row, want[0]![t]!);
    });
    const res = await none.post("/v1/embeddings", { input: "hello world" });
    expect(res.status).toBe(400);
    expect((await json(res)).error.message).toMatch(/Pooling type 'none' is not OAI compatible/);
  });
});

describe("rerank", () => {
  const query = "what is machine learning";
  const docs = ["A machine is a system", "Learning is acquiring knowledge", "Paris is in France"];

  it("/v1/rerank: results best first with the engine's scores, top_n, usage", async () => {
    const ctx = new Context(ranker, { embeddings: true, nSeqMax: 4, nCtx: 256 });
    const scores = await rerank(ctx, query, docs);
    ctx.dispose();
    const j = await json(await rank.post("/v1/rerank", { query, documents: docs, top_n: 2 }));
    expect(j.object).toBe("list");
    expect(j.results).toHaveLength(2);
    const order = [0, 1, 2].sort((a, b) => scores[b]! - scores[a]!);
    expect(j.results.map((r: { index: number }) => r.index)).toEqual(order.slice(0, 2));
    for (const r of j.results as { index: number; relevance_score: number }[])
      expect(Math.abs(r.relevance_score - scores[r.index]!)).toBeLessThan(1e-6);
    // [CLS] query [SEP] document [SEP], per document
    const q = ranker.tokenizer.encode(query, { addSpecial: false }).length;
    const total = docs.reduce(
      (n, d) => n + q + ranker.tokenizer.encode(d, { addSpecial: false }).length + 3,
      0,
    );
    expect(j.usage.prompt_tokens).toBe(total);
  });

  it("TEI's shape when documents come as texts: [{ index, score, text }]", async () => {
    const j = await json(await rank.post("/rerank", { query, texts: docs, return_text: true }));
    expect(j).toHaveLength(3);
    for (const r of j) expect(r.text).toBe(docs[r.index]);
    expect(j[0].score).toBeGreaterThanOrEqual(j[1].score);
  });

  it("bad requests are 400 naming the field, as llama-server's test_invalid_rerank_req", async () => {
    for (const documents of [[], null, 123, [1, 2, 3]]) {
      const res = await rank.post("/rerank", { query, documents });
      expect(res.status).toBe(400);
      expect((await json(res)).error.param).toBe("documents");
    }
    const res = await rank.post("/rerank", { documents: docs });
    expect((await json(res)).error.param).toBe("query");
  });
});

describe("/props of an embeddings server", () => {
  it("names the pooling, the batch an input must fit and the embedding size", async () => {
    const j = await json(await fetch(`${emb.url}/props`));
    expect(j).toMatchObject({ embedding: true, pooling: "mean", batch_size: 64, n_embd: 32 });
    const r = await json(await fetch(`${rank.url}/props`));
    expect(r).toMatchObject({ pooling: "rank", n_embd: 1 });
  });
});

describe("what each kind of server does not serve: 501, as llama-server", () => {
  it("completions on an embeddings server, embeddings and rerank on the others", async () => {
    const c = await emb.post("/v1/chat/completions", { messages: [{ role: "user", content: "hi" }] });
    expect(c.status).toBe(501);
    expect((await json(c)).error.message).toMatch(/does not support completions/);
    expect((await emb.post("/rerank", { query: "a", documents: ["b"] })).status).toBe(501);
    expect((await rank.post("/v1/embeddings", { input: "a" })).status).toBe(501);
    const storiesRuntime = await cpuRuntime();
    const stories = await Model.load(STORIES, { runtime: storiesRuntime });
    const gen = await start({ model: stories });
    try {
      await gen.server.ready;
      const res = await gen.post("/v1/embeddings", { input: "a" });
      expect(res.status).toBe(501);
      expect((await json(res)).error.message).toMatch(/Start it with `--embeddings`/);
    } finally {
      await gen.server.close();
      stories.dispose();
      storiesRuntime.dispose();
    }
  });
});
