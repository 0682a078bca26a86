import { Context } from "@minfer/engine";
import { argmax } from "@minfer/sampler";
import { afterAll, describe, expect, it } from "vitest";
import { type Running, start, useStories } from "./test-helpers.js";

// kvUnified (llama-server's --kv-unified): one KV pool all slots draw from. What llama.cpp's own
// test_completion_unified asks of it: with 4 slots in 256 cells, requests of 80, 40, 80 and 80 tokens
// all finish (the 40's cells are dropped once it is done), and a request that answers 200 has
// exactly the tokens it asked for (one that no longer fits fails instead of being cut short).

const stories = useStories();
const servers: Running[] = [];

afterAll(async () => {
  for (const r of servers) await r.server.close();
});

async function unified(parallel: number, nCtx: number): Promise<Running> {
  const r = await start({ model: stories(), parallel, contextOptions: { nCtx, kvUnified: true } });
  servers.push(r);
  return r;
}

interface Completion {
  status: number;
  tokens?: number[];
  predicted?: number;
  cached?: number;
  error?: { message: string; type: string; code?: string };
  retryAfter?: string | null;
}

async function complete(r: Running, prompt: string | number[], nPredict: number): Promise<Completion> {
  const res = await r.post("/completion", {
    prompt,
    n_predict: nPredict,
    temperature: 0,
    ignore_eos: true,
    return_tokens: true,
  });
  const body = (await res.json()) as {
    tokens?: number[];
    timings?: { predicted_n: number; cache_n: number };
    error?: Completion["error"];
  };
  return {
    status: res.status,
    ...(body.tokens ? { tokens: body.tokens } : {}),
    ...(body.timings ? { predicted: body.timings.predicted_n, cached: body.timings.cache_n } : {}),
    ...(body.error ? { error: body.error } : {}),
    retryAfter: res.headers.get("retry-after"),
  };
}

/** Greedy tokens of `prompt` on a context of its own (end-of-generation tokens banned, as ignore_eos). */
async function greedy(prompt: string | number[], n: number): Promise<number[]> {
  const model = stories();
  const ids =
    typeof prompt === "string"
      ? model.tokenizer.encode(prompt, { addSpecial: true, parseSpecial: false })
      : prompt;
  const ctx = new Context(model, { nCtx: ids.length + n });
  try {
    const out: number[] = [];
    let logits = await ctx.eval(ids);
    for (;;) {
      for (const e of model.tokenizer.vocab.eog) logits[e] = Number.NEGATIVE_INFINITY;
      out.push(argmax(logits));
      if (out.length === n) return out;
      logits = await ctx.eval([out.at(-1)!]);
    }
  } finally {
    ctx.dispose();
  }
}

describe("kvUnified: one KV pool for all slots", () => {
  it("lets one request use more than an equal share, with the tokens of a context of its own", async () => {
    const r = await unified(4, 64);
    const prompt = "Once upon a time there was a little girl named Lily. She";
    const want = await greedy(prompt, 20);
    const res = await complete(r, prompt, 20);
    expect(res.status).toBe(200);
    expect(res.tokens).toEqual(want);
    // (without the pool, a slot holds 64 / 4 = 16 cells: the prompt alone is refused)
    const apart = await start({ model: stories(), parallel: 4, contextOptions: { nCtx: 64 } });
    servers.push(apart);
    expect((await complete(apart, prompt, 20)).status).toBe(400);
  });

  it("finishes 80 + 40 + 80 + 80 tokens in 256 cells, each request with exactly its tokens (llama.cpp's case)", async () => {
    const r = await unified(4, 256);
    const want = await greedy("A", 80);
    const res = await Promise.all([80, 40, 80, 80].map((n) => complete(r, "A", n)));
    for (const [i, n] of [80, 40, 80, 80].entries()) {
      expect(res[i]!.status).toBe(200);
      expect(res[i]!.predicted).toBe(n);
      // (several sequences in one step attend over the shared pool as each would alone)
      expect(res[i]!.tokens).toEqual(want.slice(0, n));
    }
  });

  it("fails a request that no longer fits with a 503 naming the pool, never a 200 cut short", async () => {
    const r = await unified(4, 256);
    // 4 × (2 prompt + 70) cells > 256: the pool fills while all four generate.
    const res = await Promise.all([70, 70, 70, 70].map(() => complete(r, "A", 70)));
    const failed = res.filter((x) => x.status !== 200);
    expect(failed.length).toBeGreaterThan(0);
    for (const f of failed) {
      expect(f.status).toBe(503);
      expect(f.error?.code).toBe("context_full");
      expect(f.error?.message).toMatch(/KV pool .*256 cells/);
      expect(f.retryAfter).not.toBeNull();
    }
    for (const ok of res.filter((x) => x.status === 200)) expect(ok.predicted).toBe(70);
    // The pool is usable again afterwards.
    const after = await complete(r, "A", 70);
    expect(after.status).toBe(200);
    expect(after.predicted).toBe(70);
  });

  it("gives prompts the cells left when all of them do not fit, dropping a finished slot's cells after", async () => {
    const r = await unified(2, 48);
    const p = (k: number) => [1, ...Array.from({ length: 39 }, (_, i) => 200 + k * 50 + i)];
    // Two prompts in one request (they start in the same step): 80 prompt tokens in 48 cells. The
    // first step takes 40 + 8, the next the rest once the first has its token and its slot's cells
    // are dropped.
    const res = await r.post("/completion", {
      prompt: [p(0), p(1)],
      n_predict: 1,
      temperature: 0,
      ignore_eos: true,
      return_tokens: true,
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { tokens: number[] }[];
    expect(body.map((b) => b.tokens)).toEqual([await greedy(p(0), 1), await greedy(p(1), 1)]);
  });

  it("drops idle slots' cached prompts least recently used first when a request needs their cells", async () => {
    const r = await unified(3, 64);
    // Prompts as token ids with no token in common: 25 cells each once answered (the one generated
    // token is not decoded), and each one's slot chosen for it alone.
    const p = (k: number) => Array.from({ length: 25 }, (_, i) => 100 + k * 30 + i);
    expect((await complete(r, p(0), 1)).status).toBe(200); // slot A: 25 cells
    expect((await complete(r, p(1), 1)).status).toBe(200); // slot B: 25 cells
    // 25 more do not fit beside 50 in 64 cells: the least recently used (p(0)'s) is dropped.
    expect((await complete(r, p(2), 1)).status).toBe(200);
    const again1 = await complete(r, p(1), 1);
    expect(again1.status).toBe(200);
    expect(again1.cached).toBe(24); // p(1)'s cells were kept
    const again0 = await complete(r, p(0), 1);
    expect(again0.status).toBe(200);
    expect(again0.cached).toBe(0); // p(0)'s were dropped
  });
});
