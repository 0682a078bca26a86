import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model } from "@minfer/engine";
import type { DeviceRuntime } from "@minfer/ir";
import type { Tokenizer } from "@minfer/tokenizer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IGNORED_FIELDS_HEADER } from "./chat-routes.js";
import { QWEN_FIM, QWEN_FIM_KEYS, writeFimModel } from "./infill-fixtures.js";
import { cpuRuntime, type Running, start, useStories } from "./test-helpers.js";

// POST /infill on stories260K with FIM tokens (infill-fixtures.ts). Each expected prompt is written
// out from llama-server's layout (format_prompt_infill), its pieces tokenized by the model's
// tokenizer: [extra] BOS FIM_PRE prefix prompt FIM_SUF suffix FIM_MID; the server must have read
// exactly that (the count it reports, the prompt as it shows it, and /completion given those ids
// answering the same).

const stories = useStories();
let dir: string;
let runtime: DeviceRuntime;
const models: Model[] = [];
/** Qwen's FIM tokens named by keys (ids 3–8: pre, suf, mid, pad, rep, sep): the repo-level layout. */
let repo: Running;
/** CodeLlama's ▁<PRE> ▁<SUF> ▁<MID> (ids 3–5) found by their texts; no file separator; -n 16. */
let codellama: Running;
/** stories260K as it is: no FIM tokens. */
let plain: Running;

const [PRE, SUF, MID, PAD, REP, SEP] = [3, 4, 5, 6, 7, 8];
const BOS = 1;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "minfer-infill-"));
  runtime = await cpuRuntime();
  const load = async (name: string, o: Parameters<typeof writeFimModel>[2]) => {
    const m = await Model.load(await writeFimModel(dir, name, o), { runtime });
    models.push(m);
    return m;
  };
  const common = { parallel: 1, contextOptions: { nCtx: 256 }, batchSize: 64 };
  repo = await start({
    ...common,
    model: await load("stories-fim-qwen", { rename: QWEN_FIM, keys: QWEN_FIM_KEYS }),
    limits: { promptBytes: 4096 },
  });
  codellama = await start({
    ...common,
    model: await load("stories-fim-codellama", { rename: ["▁<PRE>", "▁<SUF>", "▁<MID>"] }),
    nPredict: 16,
  });
  plain = await start({ ...common, model: stories() });
  tokenizers.set(repo, models[0]!.tokenizer);
  tokenizers.set(codellama, models[1]!.tokenizer);
});

afterAll(async () => {
  await Promise.all([repo, codellama, plain].map((r) => r?.server.close()));
  for (const m of models) m.dispose();
  runtime?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

type Native = {
  content: string;
  tokens: number[];
  stop: boolean;
  stop_type: string;
  prompt: string;
  tokens_evaluated: number;
  tokens_predicted: number;
  generation_settings: { n_predict: number; temperature: number };
  error?: { param: string | null; code: string; type: string; message: string };
};

const tokenizers = new Map<Running, Tokenizer>();
const tok = (r: Running): Tokenizer => tokenizers.get(r)!;
/** A piece as llama-server tokenizes it: no BOS, special-token texts plain (prompt: read). */
const enc = (r: Running, text: string, parseSpecial = false) =>
  tok(r).encode(text, { addSpecial: false, parseSpecial });
const post = async (r: Running, body: unknown, path = "/infill") => {
  const res = await r.post(path, body);
  return { status: res.status, headers: res.headers, body: (await res.json()) as Native };
};
const greedy = { temperature: 0, n_predict: 6, ignore_eos: true };

/** The server read `expected`: its count, the prompt as shown, and /completion on those ids answers the same. */
async function expectPrompt(r: Running, body: Record<string, unknown>, expected: number[]) {
  const a = await post(r, { ...greedy, ...body });
  expect(a.status).toBe(200);
  expect(a.body.tokens_evaluated).toBe(expected.length);
  expect(a.body.prompt).toBe(tok(r).decode(expected, { renderSpecial: true, keepLeadingSpace: true }));
  const b = await post(r, { ...greedy, prompt: expected }, "/completion");
  expect(b.body.content).toBe(a.body.content);
  return a.body;
}

const prefix = "Once upon a time, there was a little girl";
const suffix = " and they were happy.";

describe("POST /infill: the prompt llama-server builds", () => {
  it("repo-level model, no input_extra: FIM_REP myproject⏎ FIM_SEP filename⏎ BOS FIM_PRE prefix prompt FIM_SUF suffix FIM_MID", async () => {
    const r = repo;
    const expected = [
      ...[REP, ...enc(r, "myproject\n")],
      ...[SEP, ...enc(r, "filename\n")],
      BOS,
      ...[PRE, ...enc(r, prefix), ...enc(r, " named")],
      ...[SUF, ...enc(r, suffix)],
      MID,
    ];
    const out = await expectPrompt(
      r,
      { input_prefix: prefix, input_suffix: suffix, prompt: " named" },
      expected,
    );
    expect(out.stop).toBe(true);
    expect(out.tokens_predicted).toBe(6);
    expect(out.stop_type).toBe("limit");
    expect(out.content.length).toBeGreaterThan(0);
  });

  it("input_extra in the repo-level layout: FIM_SEP name⏎ text per chunk (name 'tmp' when not given)", async () => {
    const r = repo;
    const extra = [
      { filename: "llama.h", text: "LLAMA_API int32_t llama_n_threads();\n" },
      { text: "The cat sat.\n" },
    ];
    const expected = [
      ...[REP, ...enc(r, "myproject\n")],
      ...[SEP, ...enc(r, "llama.h\n"), ...enc(r, extra[0]!.text)],
      ...[SEP, ...enc(r, "tmp\n"), ...enc(r, extra[1]!.text)],
      ...[SEP, ...enc(r, "filename\n")],
      BOS,
      ...[PRE, ...enc(r, prefix)],
      ...[SUF, ...enc(r, suffix)],
      MID,
    ];
    await expectPrompt(r, { input_prefix: prefix, input_suffix: suffix, input_extra: extra }, expected);
  });

  it("FIM tokens found by text (CodeLlama's), no file separator: extra chunks after a snippet line", async () => {
    const r = codellama;
    const extra = [{ filename: "a.txt", text: "Tom had a dog." }];
    const expected = [
      ...[...enc(r, "\n\n--- snippet ---\n\n"), ...enc(r, extra[0]!.text)],
      BOS,
      ...[PRE, ...enc(r, prefix)],
      ...[SUF, ...enc(r, suffix)],
      MID,
    ];
    await expectPrompt(r, { input_prefix: prefix, input_suffix: suffix, input_extra: extra }, expected);
    // without extra and a prompt: nothing before BOS
    await expectPrompt(r, { input_prefix: prefix, input_suffix: "" }, [
      BOS,
      PRE,
      ...enc(r, prefix),
      SUF,
      MID,
    ]);
  });

  it("special-token texts in prefix, suffix and extra stay text; in the prompt they are read", async () => {
    const r = repo;
    const p = "a <|fim_suffix|> b";
    const promptText = "<|fim_pad|>";
    expect(enc(r, p)).not.toContain(SUF); // (the text is plain here)
    expect(enc(r, promptText, true)).toEqual([PAD]);
    const expected = [
      ...[REP, ...enc(r, "myproject\n"), SEP, ...enc(r, "filename\n")],
      BOS,
      ...[PRE, ...enc(r, p), PAD],
      ...[SUF, ...enc(r, "<|fim_middle|>")],
      MID,
    ];
    await expectPrompt(r, { input_prefix: p, input_suffix: "<|fim_middle|>", prompt: promptText }, expected);
  });

  it("input_prefix and input_suffix as token ids mixed with texts", async () => {
    const r = repo;
    const expected = [
      ...[REP, ...enc(r, "myproject\n"), SEP, ...enc(r, "filename\n")],
      BOS,
      ...[PRE, 42, ...enc(r, "Once upon"), 43],
      ...[SUF, ...enc(r, " the end")],
      MID,
    ];
    await expectPrompt(r, { input_prefix: [42, "Once upon", 43], input_suffix: [" the end"] }, expected);
  });

  it("cuts a long prefix to its last 48 tokens and a long suffix to its first 16 - 2 - prompt (batch 64)", async () => {
    const r = repo;
    const longPrefix = Array.from({ length: 30 }, (_, i) => `Lily saw ${i} birds.`).join(" ");
    const longSuffix = " The sun was warm and the sky was blue and the birds sang all day long.";
    const pt = enc(r, longPrefix);
    const st = enc(r, longSuffix);
    const prompt = enc(r, " She", true);
    expect(pt.length).toBeGreaterThan(48);
    expect(st.length).toBeGreaterThan(16);
    const expected = [
      ...[REP, ...enc(r, "myproject\n"), SEP, ...enc(r, "filename\n")],
      BOS,
      ...[PRE, ...pt.slice(pt.length - 48), ...prompt],
      ...[SUF, ...st.slice(0, 16 - 2 - prompt.length)],
      MID,
    ];
    await expectPrompt(r, { input_prefix: longPrefix, input_suffix: longSuffix, prompt: " She" }, expected);
  });

  it("keeps the extra context's last n_ctx - n_batch - 2 n_predict tokens (256 - 64 + 2 with no -n; 256 - 64 - 32 with -n 16)", async () => {
    const text = Array.from({ length: 40 }, (_, i) => `Ben ran ${i} times.`).join(" ");
    for (const [r, keep, before] of [
      [repo, 194, (x: Running) => [REP, ...enc(x, "myproject\n"), SEP, ...enc(x, "a\n")]],
      [codellama, 160, (x: Running) => enc(x, "\n\n--- snippet ---\n\n")],
    ] as const) {
      const after = r === repo ? [SEP, ...enc(r, "filename\n")] : [];
      const extra = [...before(r), ...enc(r, text), ...after];
      expect(extra.length).toBeGreaterThan(keep);
      const expected = [
        ...extra.slice(extra.length - keep),
        BOS,
        PRE,
        ...enc(r, "Hi"),
        SUF,
        ...enc(r, "!"),
        MID,
      ];
      await expectPrompt(
        r,
        { input_prefix: "Hi", input_suffix: "!", input_extra: [{ filename: "a", text }] },
        expected,
      );
    }
  });
});

describe("POST /infill: answers as /completion does", () => {
  const body = { input_prefix: prefix, input_suffix: suffix, ...greedy, n_predict: 8 };

  it("streams a chunk a token and a last one with stop: true, the same text as the whole answer", async () => {
    const whole = (await post(repo, body)).body;
    const res = await repo.post("/infill", { ...body, stream: true });
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const text = await res.text();
    expect(text).not.toContain("[DONE]");
    const chunks = text
      .split("\n\n")
      .filter((l) => l.startsWith("data: "))
      .map((l) => JSON.parse(l.slice(6)) as Native);
    expect(chunks).toHaveLength(9);
    expect(chunks.slice(0, -1).every((c) => !c.stop && c.tokens.length === 1)).toBe(true);
    const last = chunks.at(-1)!;
    expect(last.stop).toBe(true);
    expect(last.tokens_evaluated).toBe(whole.tokens_evaluated);
    expect(chunks.map((c) => c.content).join("")).toBe(whole.content);
  });

  it("reads /completion's fields: n_predict, return_tokens, response_fields, generation_settings", async () => {
    const a = (await post(repo, { ...body, n_predict: 3, return_tokens: true })).body;
    expect(a.tokens).toHaveLength(3);
    expect(a.tokens_predicted).toBe(3);
    expect(a.generation_settings).toMatchObject({ n_predict: 3, temperature: 0 });
    const picked = await post(repo, {
      ...body,
      response_fields: ["content", "generation_settings/n_predict"],
    });
    expect(Object.keys(picked.body).sort()).toEqual(["content", "generation_settings/n_predict"]);
    expect((picked.body as unknown as Record<string, unknown>)["generation_settings/n_predict"]).toBe(8);
  });

  it("answers llama.cpp's test_infill.py requests", async () => {
    const req = {
      input_prefix: '#include <cstdio>\n#include "llama.h"\n\nint main() {\n',
      prompt: "    int n_threads = llama_",
      input_suffix: "}\n",
      ...{ n_predict: 16, temperature: 0 }, // (the test's server: -n 64 --temp 0)
    };
    const a = await post(repo, req);
    expect(a.status).toBe(200);
    expect(a.body.content.length).toBeGreaterThan(0);
    const b = await post(repo, {
      ...req,
      input_extra: [{ filename: "llama.h", text: "LLAMA_API int32_t llama_n_threads();\n" }],
    });
    expect(b.status).toBe(200);
    expect(b.body.tokens_evaluated).toBeGreaterThan(a.body.tokens_evaluated);
  });
});

describe("POST /infill: errors", () => {
  const ok = { input_prefix: "a", input_suffix: "b" };
  const fails = async (r: Running, body: unknown, param: string | null, code?: string) => {
    const res = await post(r, body);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error!.param).toBe(param);
    if (code) expect(res.body.error!.code).toBe(code);
    return res.body.error!;
  };

  it("a model without FIM tokens: 501 infill_not_supported, as llama-server", async () => {
    const res = await post(plain, ok);
    expect(res.status, JSON.stringify(res.body)).toBe(501);
    expect(res.body.error!.code).toBe("infill_not_supported");
    const e = res.body.error!;
    expect(e.type).toBe("not_supported_error");
    expect(e.message).toMatch(/infill is not supported.*prefix, suffix, middle tokens/);
  });

  it("input_prefix and input_suffix are required, a text or token ids and texts", async () => {
    await fails(repo, { input_suffix: "b" }, "input_prefix", "missing_required_parameter");
    await fails(repo, { input_prefix: "a" }, "input_suffix", "missing_required_parameter");
    await fails(repo, { ...ok, input_prefix: { text: "a" } }, "input_prefix");
    await fails(repo, { ...ok, input_suffix: ["a", 512] }, "input_suffix[1]");
    await fails(repo, { ...ok, input_prefix: [1.5] }, "input_prefix[0]");
    await fails(repo, ["a"], null, "invalid_body");
  });

  it("bad input_extra chunks (llama.cpp's test_invalid_input_extra_req cases and more), naming the field", async () => {
    await fails(repo, { ...ok, input_extra: { text: "x" } }, "input_extra");
    await fails(repo, { ...ok, input_extra: [{}] }, "input_extra[0].text", "missing_required_parameter");
    await fails(repo, { ...ok, input_extra: [{ filename: "ok" }] }, "input_extra[0].text");
    await fails(repo, { ...ok, input_extra: [{ filename: 123 }] }, "input_extra[0].text");
    await fails(repo, { ...ok, input_extra: [{ filename: 123, text: "abc" }] }, "input_extra[0].filename");
    await fails(repo, { ...ok, input_extra: [{ filename: 123, text: 456 }] }, "input_extra[0].text");
    await fails(repo, { ...ok, input_extra: [{ text: "a" }, "b"] }, "input_extra[1]");
    await fails(repo, { ...ok, input_extra: Array(1025).fill({ text: "" }) }, "input_extra");
  });

  it("prompt must be a text; /completion's fields are checked as it checks them", async () => {
    await fails(repo, { ...ok, prompt: [1, 2] }, "prompt");
    await fails(repo, { ...ok, temperature: "hot" }, "temperature");
    await fails(repo, { ...ok, n_predict: -5 }, "n_predict");
    await fails(repo, { ...ok, n: 2 }, "n");
  });

  it("an unknown field of a chunk is named as ignored, as unknown fields are", async () => {
    const res = await post(repo, { ...ok, n_predict: 1, input_extra: [{ text: "x", path: "y" }] });
    expect(res.status).toBe(200);
    expect(res.headers.get(IGNORED_FIELDS_HEADER)).toBe("input_extra[0].path");
  });

  it("texts over the prompt size limit together: 400 prompt_too_large naming the largest", async () => {
    const big = "x".repeat(2100);
    await fails(
      repo,
      { input_prefix: big, input_suffix: "y", input_extra: [{ text: big }] },
      "input_extra",
      "prompt_too_large",
    );
  });

  it("a prompt that does not fit the context (the prompt field is not cut): 400 exceed_context_size_error", async () => {
    const e = await fails(repo, { ...ok, prompt: "Once upon a time. ".repeat(60) }, "prompt");
    expect(e.type).toBe("exceed_context_size_error");
  });
});
