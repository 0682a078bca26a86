import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { backend } from "@minfer/backend-cpu";
import { Model } from "@minfer/engine";
import { GgufValueType, readGguf, synthesizeModel, writeGguf } from "@minfer/gguf";
import type { DeviceRuntime } from "@minfer/ir";
import OpenAI from "openai";
import { afterAll, beforeAll } from "vitest";
import { createServer, type MinferServer, type ServerOptions } from "./index.js";

// Shared by the server's tests: fixture paths, a synthetic Qwen3 model carrying the real Qwen3
// chat template and vocabulary, and a server started on a free port with an OpenAI client.

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
export const FIXTURES = existsSync(here("../../../../shared/fixtures"))
  ? here("../../../../shared/fixtures")
  : "/work/shared/fixtures";
export const STORIES = join(FIXTURES, "models/stories260K.gguf");
export const CHAT_MODEL = here("../../cli/models/minfer-default-7m-f16.gguf");

export async function cpuRuntime(o: { panelGemm?: boolean } = {}): Promise<DeviceRuntime> {
  return backend.devices()[0]!.init({ threads: 2, ...o });
}

/**
 * stories260K on a 2-thread CPU runtime for the calling test file: loaded in beforeAll, freed in
 * afterAll. Call the returned getter inside the tests. The runtime keeps every product on the
 * dot-product kernels (`panelGemm: false`), so that a request's tokens do not depend on how many
 * others share its decodes: the overlap tests compare two servers' answers byte for byte.
 */
export function useStories(): () => Model {
  let runtime: DeviceRuntime | undefined;
  let model: Model | undefined;
  beforeAll(async () => {
    runtime = await cpuRuntime({ panelGemm: false });
    model = await Model.load(STORIES, { runtime });
  });
  afterAll(() => {
    model?.dispose();
    runtime?.dispose();
  });
  return () => {
    if (!model) throw new Error("useStories: the model is read before beforeAll loaded it");
    return model;
  };
}

/**
 * Writes a tiny random-weight model of `arch` with a fixture vocabulary and a fixture chat template
 * as `tokenizer.chat_template`; returns its path.
 */
export async function writeChatModel(
  dir: string,
  o: { arch: "llama" | "qwen2" | "qwen3"; vocab: string; template: string; seed?: number },
): Promise<string> {
  const vocab = (await readGguf(join(FIXTURES, `vocab/${o.vocab}`))).metadata;
  const m = synthesizeModel({ preset: "tiny", arch: o.arch, type: "f32", vocab, seed: o.seed ?? 5 });
  const template = readFileSync(join(FIXTURES, `templates/${o.template}`), "utf8");
  const metadata = [
    ...m.metadata.filter((kv) => kv.key !== "tokenizer.chat_template"),
    { key: "tokenizer.chat_template", type: GgufValueType.STRING, value: template },
  ];
  const path = join(dir, `${o.arch}-${o.template.replace(/\.jinja$/, "")}.gguf`);
  await writeGguf(path, metadata, m.tensors);
  return path;
}

/** A tiny Qwen3 with the Qwen2 vocabulary (the one Qwen3 uses) and the real Qwen3 chat template. */
export function writeQwen3(dir: string, seed = 5): Promise<string> {
  return writeChatModel(dir, {
    arch: "qwen3",
    vocab: "ggml-vocab-qwen2.gguf",
    template: "Qwen-Qwen3-0.6B.jinja",
    seed,
  });
}

export interface Running {
  server: MinferServer;
  url: string;
  client: OpenAI;
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<Response>;
}

/** A server on 127.0.0.1 and a free port, with an OpenAI client that does not retry. */
export async function start(options: ServerOptions): Promise<Running> {
  const server = createServer(options);
  const url = await server.listen(0, "127.0.0.1");
  const key = options.apiKey ?? "none";
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0 });
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}`, ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
  return { server, url, client, post };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `f` until it returns true (or throws after `ms`). */
export async function until(
  f: () => Promise<boolean> | boolean,
  ms = 5000,
  what = "condition",
): Promise<void> {
  const t0 = Date.now();
  while (!(await f())) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}
