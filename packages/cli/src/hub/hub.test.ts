import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { fixtures, minferWithEnv } from "../test-helpers.js";
import { cachePath, findCached, listCached, partialPath } from "./cache.js";
import { type HubConfig, hubConfig } from "./config.js";
import { HubError } from "./hub-error.js";
import { parseModelRef } from "./model-ref.js";
import { pickQuantFiles, pull } from "./pull.js";
import { startTestHub, type TestHub } from "./test-hub-server.js";

const sha = (d: Uint8Array) => createHash("sha256").update(d).digest("hex");
const bytes = (n: number, seed: number) =>
  Uint8Array.from({ length: n }, (_, i) => (i * 131 + seed * 7 + (i >> 8)) & 255);

let hub: TestHub;
let dir: string;
let config: HubConfig;
const quiet = { retryDelayMs: 10, onNote: () => {} };

beforeAll(async () => {
  hub = await startTestHub();
});
afterAll(async () => {
  await hub.close();
});
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "minfer-hub-"));
  config = hubConfig({ MINFER_HF_ENDPOINT: hub.endpoint, MINFER_CACHE_DIR: dir });
  hub.repos.clear();
  hub.requests.length = 0;
  return () => rmSync(dir, { recursive: true, force: true });
});

function serve(repo: string, path: string, data: Uint8Array, extra: object = {}) {
  if (!hub.repos.has(repo)) hub.repos.set(repo, new Map());
  hub.repos.get(repo)!.set(path, { data, ...extra });
}
const storageGets = () => hub.requests.filter((r) => r.method === "GET" && r.url.startsWith("/storage/"));

describe("model references", () => {
  it("parses file and quantization references and refuses anything that leaves the repository", () => {
    expect(parseModelRef("hf://a/b/sub/m.Q4_0.gguf")).toMatchObject({
      kind: "file",
      owner: "a",
      repo: "b",
      file: "sub/m.Q4_0.gguf",
    });
    expect(parseModelRef("a/b:Q8_0")).toMatchObject({ kind: "quant", quant: "Q8_0" });
    expect(parseModelRef("hf://a/b")).toMatchObject({ kind: "quant", quant: "Q4_K_M" });
    for (const bad of [
      "hf://a/../b.gguf",
      "hf://a/b/../../x.gguf",
      "hf://a/b/x.bin",
      "hf://../b/x.gguf",
      "a",
      "a/b:Q4:x",
      "hf://a/b//x.gguf",
      "hf://a/b/c\\d.gguf",
    ])
      expect(() => parseModelRef(bad), bad).toThrow(HubError);
    expect(() => parseModelRef("a/b:Q4_0", "../main")).toThrow(/revision/);
  });

  it("picks a tag's files as a whole word, split parts together", () => {
    const files = [
      "m-Q4_K_M.gguf",
      "m-Q4_K.gguf",
      "m-Q8_0-00001-of-00002.gguf",
      "m-Q8_0-00002-of-00002.gguf",
      "README.md",
    ];
    expect(pickQuantFiles(files, "Q4_K")).toEqual(["m-Q4_K.gguf"]);
    expect(pickQuantFiles(files, "q4_k_m")).toEqual(["m-Q4_K_M.gguf"]);
    expect(pickQuantFiles(files, "Q8_0")).toEqual([
      "m-Q8_0-00001-of-00002.gguf",
      "m-Q8_0-00002-of-00002.gguf",
    ]);
  });
});

describe("pull", () => {
  it("downloads through the redirect, checks the sha256, and reuses the cache on a second pull", async () => {
    const data = bytes(300_000, 1);
    serve("o/r", "m.gguf", data);
    const first = await pull(config, parseModelRef("hf://o/r/m.gguf"), quiet);
    expect(first.files[0]).toMatchObject({
      reused: false,
      meta: { size: data.length, sha256: sha(data), checked: "sha256" },
    });
    expect(sha(readFileSync(first.files[0]!.path))).toBe(sha(data));
    expect(first.files[0]!.path).toBe(cachePath(config, parseModelRef("hf://o/r/m.gguf") as never));
    expect(storageGets()).toHaveLength(1);
    const second = await pull(config, parseModelRef("hf://o/r/m.gguf"), quiet);
    expect(second.files[0]!.reused).toBe(true);
    expect(storageGets()).toHaveLength(1); // nothing fetched again
  });

  it("resumes a download broken at 50% with a Range request and verifies the whole file", async () => {
    const data = bytes(400_000, 2);
    serve("o/r", "m.gguf", data, { breakAt: 0.5, breaks: 1 });
    const notes: string[] = [];
    const r = await pull(config, parseModelRef("hf://o/r/m.gguf"), {
      retryDelayMs: 10,
      onNote: (l) => notes.push(l),
    });
    expect(sha(readFileSync(r.files[0]!.path))).toBe(sha(data));
    const gets = storageGets();
    expect(gets).toHaveLength(2);
    expect(gets[0]!.range).toBeUndefined();
    expect(gets[1]!.range).toBe("bytes=200000-");
    expect(notes.join("\n")).toMatch(/connection broke at byte 200000 of 400000/);
    expect(notes.join("\n")).toMatch(/resuming hf:\/\/o\/r\/m.gguf at byte 200000 of 400000/);
  });

  it("keeps a broken download's bytes for the next pull, which resumes them", async () => {
    const data = bytes(400_000, 3);
    serve("o/r", "m.gguf", data, { breakAt: 0.5, breaks: 1 });
    const ref = parseModelRef("hf://o/r/m.gguf");
    await expect(pull(config, ref, { ...quiet, attempts: 1 })).rejects.toMatchObject({
      code: "DOWNLOAD_FAILED",
      message: expect.stringMatching(/run the pull again to resume/),
    });
    const partial = partialPath(cachePath(config, ref as never));
    expect(statSync(partial).size).toBe(200_000);
    expect(await findCached(config, ref as never)).toBeUndefined();
    const r = await pull(config, ref, quiet);
    expect(storageGets().at(-1)!.range).toBe("bytes=200000-");
    expect(sha(readFileSync(r.files[0]!.path))).toBe(sha(data));
    expect(existsSync(partial)).toBe(false);
  });

  it("refuses a file whose bytes do not match the published sha256, naming both, and keeps nothing", async () => {
    const data = bytes(100_000, 4);
    const bad = data.slice();
    bad[5000] ^= 1;
    serve("o/r", "m.gguf", data, { corrupt: bad });
    const ref = parseModelRef("hf://o/r/m.gguf");
    const err = await pull(config, ref, quiet).catch((e) => e);
    expect(err).toBeInstanceOf(HubError);
    expect(err.code).toBe("CHECKSUM_MISMATCH");
    expect(err.message).toContain(`expected ${sha(data)}, got ${sha(bad)}`);
    const path = cachePath(config, ref as never);
    expect(existsSync(path) || existsSync(partialPath(path))).toBe(false);
    expect(await listCached(config)).toEqual([]);
  });

  it("starts over when the partial bytes belong to another version of the file", async () => {
    const ref = parseModelRef("hf://o/r/m.gguf");
    const old = bytes(50_000, 5);
    serve("o/r", "m.gguf", old, { breakAt: 0.5, breaks: 1 });
    await expect(pull(config, ref, { ...quiet, attempts: 1 })).rejects.toMatchObject({
      code: "DOWNLOAD_FAILED",
    });
    const data = bytes(80_000, 6); // the repository changed meanwhile
    serve("o/r", "m.gguf", data);
    const r = await pull(config, ref, quiet);
    expect(storageGets().at(-1)!.range).toBeUndefined();
    expect(sha(readFileSync(r.files[0]!.path))).toBe(sha(data));
  });

  it("says so when the server publishes no sha256 (the size is still checked)", async () => {
    const data = bytes(1000, 7);
    serve("o/r", "small.gguf", data, { noSha: true });
    const notes: string[] = [];
    const r = await pull(config, parseModelRef("hf://o/r/small.gguf"), {
      ...quiet,
      onNote: (l) => notes.push(l),
    });
    expect(r.files[0]!.meta.checked).toBe("size");
    expect(notes.join("\n")).toMatch(/published no sha256; only the size was checked/);
  });

  it("resolves OWNER/REPO:QUANT from the repository's file list, every part of a split model", async () => {
    serve("o/r", "m-Q4_K_M.gguf", bytes(1000, 8));
    serve("o/r", "m-Q8_0-00001-of-00002.gguf", bytes(1000, 9));
    serve("o/r", "m-Q8_0-00002-of-00002.gguf", bytes(1000, 10));
    const r = await pull(config, parseModelRef("o/r:Q8_0"), quiet);
    expect(r.files.map((f) => f.ref.file)).toEqual([
      "m-Q8_0-00001-of-00002.gguf",
      "m-Q8_0-00002-of-00002.gguf",
    ]);
    expect((await pull(config, parseModelRef("o/r"), quiet)).files.map((f) => f.ref.file)).toEqual([
      "m-Q4_K_M.gguf",
    ]);
    await expect(pull(config, parseModelRef("o/r:Q2_K"), quiet)).rejects.toMatchObject({
      code: "NOT_FOUND",
      message: expect.stringContaining("m-Q4_K_M.gguf"),
    });
    await expect(pull(config, parseModelRef("o/none:Q2_K"), quiet)).rejects.toMatchObject({
      code: "NOT_FOUND",
    });
    await expect(pull(config, parseModelRef("hf://o/r/absent.gguf"), quiet)).rejects.toMatchObject({
      code: "NOT_FOUND",
    });
  });
});

describe("minfer pull / list / rm / -m hf://", () => {
  it("pulls, lists, runs and removes a model through the command line", async () => {
    const model = readFileSync(join(fixtures, "models/stories260K.gguf"));
    serve("tiny/stories", "stories260K.gguf", model);
    const env = { ...process.env, MINFER_HF_ENDPOINT: hub.endpoint, MINFER_CACHE_DIR: dir };
    const pulled = await minferWithEnv(env, "pull", "hf://tiny/stories/stories260K.gguf");
    expect(pulled.code, pulled.stderr).toBe(0);
    expect(pulled.stdout.trim()).toBe(join(dir, "models/tiny/stories/main/stories260K.gguf"));
    expect(pulled.stderr).toContain(`pulled hf://tiny/stories/stories260K.gguf`);
    const again = await minferWithEnv(env, "pull", "hf://tiny/stories/stories260K.gguf");
    expect(again.stderr).toContain("cached hf://tiny/stories/stories260K.gguf");

    const listed = await minferWithEnv(env, "list", "--json");
    expect(JSON.parse(listed.stdout)).toMatchObject([
      {
        model: "hf://tiny/stories/stories260K.gguf",
        size: model.length,
        sha256: sha(model),
        checked: "sha256",
      },
    ]);
    expect((await minferWithEnv(env, "list")).stdout).toMatch(/hf:\/\/tiny\/stories\/stories260K\.gguf\s+/);

    const args = ["run", "-p", "Once upon a time", "-n", "8", "--temp", "0", "--ids"];
    const viaHub = await minferWithEnv(env, ...args, "-m", "hf://tiny/stories/stories260K.gguf");
    const local = await minferWithEnv(env, ...args, "-m", join(fixtures, "models/stories260K.gguf"));
    expect(viaHub.code, viaHub.stderr).toBe(0);
    expect(viaHub.stdout).toBe(local.stdout);

    const removed = await minferWithEnv(env, "rm", "hf://tiny/stories/stories260K.gguf");
    expect(removed.stdout).toContain("removed hf://tiny/stories/stories260K.gguf");
    expect((await minferWithEnv(env, "list", "--json")).stdout.trim()).toBe("[]");
    const gone = await minferWithEnv(env, "rm", "tiny/stories/stories260K.gguf");
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain("is not in the cache");
  });

  it("reports a checksum mismatch and a bad reference as errors with their codes", async () => {
    const data = bytes(2000, 11);
    const bad = data.slice();
    bad[0] ^= 255;
    serve("o/r", "m.gguf", data, { corrupt: bad });
    const env = { ...process.env, MINFER_HF_ENDPOINT: hub.endpoint, MINFER_CACHE_DIR: dir };
    const r = await minferWithEnv(env, "pull", "hf://o/r/m.gguf");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `error [CHECKSUM_MISMATCH]: hf://o/r/m.gguf: sha256 mismatch: expected ${sha(data)}, got ${sha(bad)}`,
    );
    const b = await minferWithEnv(env, "pull", "hf://o/../m.gguf");
    expect(b.code).toBe(1);
    expect(b.stderr).toContain("error [INVALID_ARGUMENT]");
    writeFileSync(join(dir, "stray.gguf"), "x"); // a file the cache did not write is not listed
    expect((await minferWithEnv(env, "list", "--json")).stdout.trim()).toBe("[]");
  });

  it("reads the hub's configuration only for hub references", async () => {
    const env = { ...process.env, MINFER_HF_ENDPOINT: "not a url", MINFER_CACHE_DIR: dir };
    const args = ["run", "-p", "Once", "-n", "2", "--temp", "0", "--ids"];
    const local = await minferWithEnv(env, ...args, "-m", join(fixtures, "models/stories260K.gguf"));
    expect(local.code, local.stderr).toBe(0);
    const viaHub = await minferWithEnv(env, ...args, "-m", "hf://tiny/stories/stories260K.gguf");
    expect(viaHub.code).toBe(1);
    expect(viaHub.stderr).toContain('error [INVALID_ARGUMENT]: the hub endpoint "not a url" is not a URL');
  });
});
