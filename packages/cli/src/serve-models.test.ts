import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startTestHub } from "./hub/test-hub-server.js";
import { serveOptions } from "./run/serve.js";
import { childArgs, modelsIn } from "./run/serve-models.js";
import { type ServeProcess, startServe } from "./serve-fuzz/harness.js";
import { bin, fixtures, minfer } from "./test-helpers.js";

// `minfer serve --models-dir`: three models behind one address, at most two loaded, each answer
// checked against the same model served alone.

let dir: string;
let child: ChildProcess | undefined;
const headers = { "content-type": "application/json" };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "minfer-models-"));
  symlinkSync(resolve(fixtures, "models/stories260K.gguf"), join(dir, "stories.gguf"));
  symlinkSync(resolve(fixtures, "models/llama-2-tiny-random.gguf"), join(dir, "random.gguf"));
  const synth = await minfer(
    "gguf",
    "synth",
    "--arch",
    "llama",
    "--preset",
    "tiny",
    "--vocab",
    resolve(fixtures, "vocab/ggml-vocab-llama-spm.gguf"),
    "-o",
    join(dir, "synth.gguf"),
    "-t",
    "1",
  );
  expect(synth.code, synth.stderr).toBe(0);
  writeFileSync(join(dir, "notes.txt"), "not a model");
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => {
  if (child && child.exitCode === null) child.kill("SIGKILL");
  child = undefined;
});

function serve(...args: string[]): Promise<ServeProcess> {
  return startServe(bin, args, (p) => {
    child = p;
  });
}

interface Listing {
  data: { id: string; status: { value: string } }[];
}
const states = async (url: string, key?: string) => {
  const r = await fetch(`${url}/v1/models`, key ? { headers: { authorization: `Bearer ${key}` } } : {});
  const l = (await r.json()) as Listing;
  return Object.fromEntries(l.data.map((m) => [m.id, m.status.value]));
};

async function complete(url: string, model: string | undefined, prompt: string, key?: string) {
  const r = await fetch(`${url}/v1/completions`, {
    method: "POST",
    headers: { ...headers, ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ ...(model ? { model } : {}), prompt, max_tokens: 6, temperature: 0 }),
  });
  return {
    status: r.status,
    body: (await r.json()) as { choices?: { text: string }[]; error?: { code: string; message: string } },
  };
}

describe("minfer serve --models-dir", () => {
  it("lists a directory's models and passes the serve flags on to each model's server", () => {
    expect(modelsIn(dir).map((m) => m.id)).toEqual(["random", "stories", "synth"]);
    expect(
      childArgs(
        [
          "--models-dir",
          dir,
          "--models-max=2",
          "-np",
          "2",
          "--api-key",
          "k",
          "--port",
          "0",
          "--temp",
          "0",
          "--metrics",
        ],
        serveOptions,
      ),
    ).toEqual(["-np", "2", "--temp", "0", "--metrics"]);
  });

  it("answers requests alternating over three models with at most two loaded, as each model alone", async () => {
    const prompts = { stories: "Once upon a time", random: "Hello", synth: "The cat" } as const;
    // each model's answer when it is served alone
    const alone: Record<string, string> = {};
    for (const [id, prompt] of Object.entries(prompts)) {
      const s = await serve("-m", join(dir, `${id}.gguf`), "-np", "1", "-c", "256");
      alone[id] = (await complete(s.url, undefined, prompt)).body.choices![0]!.text;
      child!.kill("SIGKILL");
      await s.exit;
    }
    const s = await serve("--models-dir", dir, "--models-max", "2", "-np", "1", "-c", "256");
    expect(s.stderr()).toContain("3 models in");
    expect(await states(s.url)).toEqual({ random: "unloaded", stories: "unloaded", synth: "unloaded" });
    const order = ["stories", "random", "synth", "stories", "random", "synth", "stories"] as const;
    for (const [i, id] of order.entries()) {
      const r = await complete(s.url, id, prompts[id]);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.choices![0]!.text, id).toBe(alone[id]);
      const st = await states(s.url);
      expect(st[id]).toBe("loaded");
      expect(Object.values(st).filter((v) => v === "loaded")).toHaveLength(Math.min(i + 1, 2));
    }
    // the least recently used went: after …, synth, stories the loaded two are synth and stories
    expect(await states(s.url)).toEqual({ random: "unloaded", stories: "loaded", synth: "loaded" });
    const unknown = await complete(s.url, "nope", "x");
    expect(unknown.status).toBe(404);
    expect(unknown.body.error!.code).toBe("model_not_found");
    expect(unknown.body.error!.message).toContain("random, stories, synth");
    const none = await complete(s.url, undefined, "x");
    expect(none.status).toBe(400);
    expect(none.body.error!.code).toBe("model_required");
  }, 120_000);

  it("serves a loaded model while another one loads", async () => {
    const s = await serve("--models-dir", dir, "--models-max", "2", "-np", "1", "-c", "256");
    await complete(s.url, "stories", "Once");
    const t0 = performance.now();
    let loadedAt = 0;
    const loading = complete(s.url, "synth", "The cat").then((r) => {
      loadedAt = performance.now() - t0;
      return r;
    });
    await new Promise((r) => setTimeout(r, 50)); // the load has begun
    expect((await states(s.url)).synth).toBe("loading");
    const during = await complete(s.url, "stories", "Once upon");
    const servedAt = performance.now() - t0;
    expect(during.status).toBe(200);
    expect(loadedAt).toBe(0); // answered before the other model finished loading
    expect((await loading).status).toBe(200);
    console.log(
      `serve --models-dir: a loaded model answered in ${servedAt.toFixed(0)} ms while another took ${loadedAt.toFixed(0)} ms to load and answer`,
    );
  }, 60_000);

  it("unloads a model after --keep-alive without requests, and requires --api-key", async () => {
    const s = await serve(
      "--models-dir",
      dir,
      "--keep-alive",
      "0.5",
      "--api-key",
      "secret",
      "-np",
      "1",
      "-c",
      "256",
    );
    expect((await fetch(`${s.url}/v1/models`)).status).toBe(401);
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
    const page = await fetch(`${s.url}/`); // the chat page, without the key (it asks for it)
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("<title>minfer</title>");
    const r = await complete(s.url, "stories", "Once", "secret");
    expect(r.status).toBe(200);
    expect((await states(s.url, "secret")).stories).toBe("loaded");
    await new Promise((res) => setTimeout(res, 1500));
    expect((await states(s.url, "secret")).stories).toBe("unloaded");
  }, 60_000);

  it("takes a model named hf://… in a request: pulled into the cache, then served", async () => {
    const hub = await startTestHub();
    const cache = mkdtempSync(join(tmpdir(), "minfer-cache-"));
    hub.repos.set(
      "tiny/stories",
      new Map([["stories260K.gguf", { data: readFileSync(resolve(fixtures, "models/stories260K.gguf")) }]]),
    );
    const saved = { endpoint: process.env.MINFER_HF_ENDPOINT, cache: process.env.MINFER_CACHE_DIR };
    process.env.MINFER_HF_ENDPOINT = hub.endpoint;
    process.env.MINFER_CACHE_DIR = cache;
    try {
      const s = await serve("--models-dir", dir, "-np", "1", "-c", "256");
      const ref = "hf://tiny/stories/stories260K.gguf";
      const r = await complete(s.url, ref, "Once upon a time");
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.choices![0]!.text).toBe(
        (await complete(s.url, "stories", "Once upon a time")).body.choices![0]!.text,
      );
      expect((await states(s.url))[ref]).toBe("loaded");
      const missing = await complete(s.url, "hf://tiny/stories/absent.gguf", "x");
      expect(missing.status).toBe(404);
      expect(missing.body.error!.message).toContain("could not be fetched");
    } finally {
      process.env.MINFER_HF_ENDPOINT = saved.endpoint;
      process.env.MINFER_CACHE_DIR = saved.cache;
      if (saved.endpoint === undefined) delete process.env.MINFER_HF_ENDPOINT;
      if (saved.cache === undefined) delete process.env.MINFER_CACHE_DIR;
      await hub.close();
      rmSync(cache, { recursive: true, force: true });
    }
  }, 60_000);

  it("refuses bad flags before starting", async () => {
    const both = await minfer("serve", "--models-dir", dir, "-m", join(dir, "stories.gguf"));
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("give one of -m and --models-dir");
    const empty = mkdtempSync(join(tmpdir(), "minfer-empty-"));
    const none = await minfer("serve", "--models-dir", empty);
    expect(none.stderr).toContain("no .gguf files");
    rmSync(empty, { recursive: true });
    expect((await minfer("serve", "--models-max", "2")).stderr).toContain(
      "--models-max applies to --models-dir",
    );
    expect((await minfer("serve", "--models-dir", dir, "--models-max", "0")).stderr).toContain(
      "--models-max",
    );
  });
});
