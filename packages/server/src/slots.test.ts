import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readSequenceFile, SEQUENCE_FILE_MAGIC, writeSequenceFile } from "@minfer/engine";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Running, start, useStories } from "./test-helpers.js";

// llama-server's slot actions: a slot's tokens and K/V rows saved to a file, restored into
// another slot (which then reuses them as a cached prefix), erased; id_slot picks the slot.

const stories = useStories();
let r: Running;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "minfer-slots-"));
  r = await start({ model: stories(), parallel: 2, contextOptions: { nCtx: 512 }, slotSavePath: dir });
});

afterAll(async () => {
  await r?.server.close();
  rmSync(dir, { recursive: true, force: true });
});

// biome-ignore lint/suspicious/noExplicitAny: the responses are read loosely, field by field
type Res = Record<string, any>;
const post = async (path: string, body: object = {}) => {
  const res = await r.post(path, body);
  return { status: res.status, body: (await res.json()) as Res };
};
const complete = (prompt: string, slot: number) =>
  post("/completion", { prompt, id_slot: slot, n_predict: 8, temperature: 0 });

describe("slot actions", () => {
  it("save a slot, restore it into another, which then reads only the new part of a prompt; erase", async () => {
    const a = await complete("What is the capital of France?", 1);
    const nPrompt = a.body.timings.prompt_n as number;
    expect(a.body.timings.cache_n).toBe(0);
    const saved = await post("/slots/1?action=save", { filename: "one.bin" });
    expect(saved.status).toBe(200);
    // the prompt and the generated tokens but the last (not decoded yet)
    expect(saved.body.n_saved).toBe(nPrompt + 8 - 1);
    const file = readSequenceFile(new Uint8Array(readFileSync(join(dir, "one.bin"))));
    expect(file.tokens).toHaveLength(saved.body.n_saved);
    const restored = await post("/slots/0?action=restore", { filename: "one.bin" });
    expect(restored.body).toMatchObject({ id_slot: 0, n_restored: saved.body.n_saved });
    const b = await complete("What is the capital of Germany?", 0);
    expect(b.body.timings.cache_n).toBeGreaterThan(0);
    // the same text as a slot that read the whole prompt
    const fresh = await post("/completion", {
      prompt: "What is the capital of Germany?",
      n_predict: 8,
      temperature: 0,
      cache_prompt: false,
    });
    expect(b.body.content).toBe(fresh.body.content);
    const erased = await post("/slots/0?action=erase");
    expect(erased.body.n_erased).toBeGreaterThan(0);
    const c = await complete("What is the capital of Germany?", 0);
    expect(c.body.timings.cache_n).toBe(0);
  });

  it("refuses what it cannot do, naming it", async () => {
    expect((await post("/slots/0?action=fly")).body.error.param).toBe("action");
    expect((await post("/slots/7?action=erase")).status).toBe(404);
    for (const filename of ["../x", "a/b", ".hidden", "", 3])
      expect((await post("/slots/0?action=save", { filename })).body.error.param).toBe("filename");
    expect((await post("/slots/0?action=restore", { filename: "missing.bin" })).body.error.message).toContain(
      "does not exist",
    );
    writeFileSync(join(dir, "junk.bin"), "not a slot file at all");
    expect((await post("/slots/0?action=restore", { filename: "junk.bin" })).body.error.message).toContain(
      "magic",
    );
    expect((await post("/completion", { prompt: "a", id_slot: 5 })).body.error.param).toBe("id_slot");
    // a slot running a request is busy
    const long = r.post("/completion", {
      prompt: "Once",
      id_slot: 1,
      n_predict: 200,
      temperature: 0,
      ignore_eos: true,
    });
    await new Promise((f) => setTimeout(f, 50));
    expect((await post("/slots/1?action=erase")).status).toBe(409);
    expect((await long).status).toBe(200);
  });

  it("reads the token list packed or plain (as older llama-servers wrote it); refuses a truncated or mismatched file", () => {
    const state = new Uint8Array([1, 2, 3]);
    const f = writeSequenceFile([5, 6, 7], state);
    expect(readSequenceFile(f)).toEqual({ tokens: [5, 6, 7], state });
    const plain = new Uint8Array(12 + 12 + 3);
    const v = new DataView(plain.buffer);
    v.setUint32(0, SEQUENCE_FILE_MAGIC, true);
    v.setUint32(4, 3, true);
    v.setUint32(8, 3, true);
    [5, 6, 7].forEach((t, i) => {
      v.setUint32(12 + 4 * i, t, true);
    });
    plain.set(state, 24);
    expect(readSequenceFile(plain)).toEqual({ tokens: [5, 6, 7], state });
    expect(() => readSequenceFile(f.subarray(0, 20))).toThrow(/runs past/);
    expect(() => readSequenceFile(f.subarray(0, f.length - 3))).toThrow(/no state/);
  });
});

describe("without a save directory", () => {
  it("answers save and restore with 501; erase works", async () => {
    const s = await start({ model: stories(), parallel: 1, contextOptions: { nCtx: 256 } });
    try {
      const res = await s.post("/slots/0?action=save", { filename: "x.bin" });
      expect(res.status).toBe(501);
      expect((await s.post("/slots/0?action=erase", {})).status).toBe(200);
    } finally {
      await s.server.close();
    }
  });
});
