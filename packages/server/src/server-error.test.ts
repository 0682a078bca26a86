import { Model } from "@minfer/engine";
import type { DeviceRuntime } from "@minfer/ir";
import { ChatTemplate } from "@minfer/tokenizer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Batcher, type JobSpec } from "./batcher.js";
import { createServer, ServerError, type ServerErrorCode } from "./index.js";
import { resolveLimits } from "./limits.js";
import { TemplateRenderer } from "./render.js";
import { CHAT_MODEL, cpuRuntime } from "./test-helpers.js";
import { ToolCallParser, toolCallGrammar } from "./tools/index.js";

// Each way the server fails outside a request's answer is a ServerError with a stable code and a
// message naming the problem.

/** What `f` throws (or the promise rejects with), checked to be a ServerError of `code` whose message matches. */
async function refused(f: () => unknown, code: ServerErrorCode, message: RegExp): Promise<ServerError> {
  let err: unknown;
  try {
    await f();
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(ServerError);
  const e = err as ServerError;
  expect(e.name).toBe("ServerError");
  expect(e.code).toBe(code);
  expect(e.message).toMatch(message);
  return e;
}

/** A model promise that never settles until `fail` is called: the server stays loading. */
function pendingModel(): { model: Promise<Model>; fail(): void } {
  let fail = () => {};
  const model = new Promise<Model>((_, reject) => {
    fail = () => reject(new Error("test over"));
  });
  return { model, fail };
}

/** Stands in for a loaded model where only its path and trained context are read. */
const fakeModel = (nCtxTrain: number) =>
  ({ path: "/m/tiny.gguf", hparams: { nCtxTrain } }) as unknown as Model;

describe("ServerError INVALID_ARGUMENT: a caller's bad option", () => {
  it("limits: an unknown key, a value that is not a positive integer, inconsistent timeouts", async () => {
    await refused(
      () => resolveLimits({ nope: 1 } as never),
      "INVALID_ARGUMENT",
      /limits\.nope is not a server limit; limits: .*bodyBytes/,
    );
    await refused(
      () => resolveLimits({ bodyBytes: 0 }),
      "INVALID_ARGUMENT",
      /limits\.bodyBytes must be a positive integer, got 0/,
    );
    await refused(
      () => resolveLimits({ headersTimeoutMs: 5000, requestTimeoutMs: 1000 }),
      "INVALID_ARGUMENT",
      /limits\.headersTimeoutMs \(5000\) must not exceed limits\.requestTimeoutMs \(1000\)/,
    );
    await refused(
      () => createServer({ model: fakeModel(64), limits: { bodyBytes: -1 } }),
      "INVALID_ARGUMENT",
      /bodyBytes/,
    );
  });

  it("createServer: parallel, batchSize, queueSize, timeoutSeconds", async () => {
    const model = fakeModel(64);
    await refused(
      () => createServer({ model, parallel: 0 }),
      "INVALID_ARGUMENT",
      /parallel must be an integer >= 1, got 0/,
    );
    await refused(
      () => createServer({ model, batchSize: 1.5 }),
      "INVALID_ARGUMENT",
      /batchSize must be an integer >= 1, got 1\.5/,
    );
    await refused(
      () => createServer({ model, queueSize: -1 }),
      "INVALID_ARGUMENT",
      /queueSize must be an integer >= 0, got -1/,
    );
    await refused(
      () => createServer({ model, timeoutSeconds: 0 }),
      "INVALID_ARGUMENT",
      /timeoutSeconds must be a positive number, got 0/,
    );
  });

  it("a context too small for the slots ends loading with INVALID_ARGUMENT", async () => {
    const server = createServer({ model: fakeModel(64), parallel: 4, contextOptions: { nCtx: 4 } });
    try {
      await refused(
        () => server.ready,
        "INVALID_ARGUMENT",
        /a context of 4 tokens cannot be shared by 4 slots/,
      );
    } finally {
      await server.close();
    }
  });

  it("the batcher's options", async () => {
    const model = fakeModel(64);
    const options = { parallel: 1, ctxPerSlot: 16, batchSize: 8, queueSize: 0 };
    await refused(
      () => new Batcher(model, { ...options, parallel: 0 }),
      "INVALID_ARGUMENT",
      /parallel must be a positive integer, got 0/,
    );
    await refused(
      () => new Batcher(model, { ...options, ctxPerSlot: 2.5 }),
      "INVALID_ARGUMENT",
      /ctxPerSlot .* got 2\.5/,
    );
    await refused(
      () => new Batcher(model, { ...options, queueSize: -1 }),
      "INVALID_ARGUMENT",
      /queueSize must be a non-negative integer, got -1/,
    );
  });
});

describe("ServerError NOT_READY: the model is not loaded yet", () => {
  it("server.batcher and server.context before ready", async () => {
    const { model, fail } = pendingModel();
    const server = createServer({ model });
    try {
      await refused(() => server.batcher, "NOT_READY", /not loaded yet \(await server\.ready\)/);
      await refused(() => server.context, "NOT_READY", /not loaded yet/);
    } finally {
      fail();
      await server.ready.catch(() => undefined);
      await server.close();
    }
  });
});

describe("ServerError INTERNAL: states the server never reaches", () => {
  it("ToolCallParser used after end()", async () => {
    const p = new ToolCallParser("hermes", []);
    p.end();
    await refused(() => p.push("x"), "INTERNAL", /ToolCallParser\.push after end\(\)/);
    await refused(() => p.end(), "INTERNAL", /ToolCallParser\.end called twice/);
  });

  it("toolCallGrammar for a tool_choice naming no tool (parseTools refuses that as a 400 first)", async () => {
    const req = { tools: [], choice: { name: "nope" }, parallel: false, templateTools: [] };
    await refused(() => toolCallGrammar(req, "hermes"), "INTERNAL", /tool_choice names no tool/);
  });
});

describe("ServerError WORKER_STOPPED: the template worker, not the template", () => {
  it("a render pending in the worker when it stops", async () => {
    const renderer = new TemplateRenderer();
    const template = ChatTemplate.parse("{% for m in messages %}{{ m.content }}{% endfor %}", "t");
    // More messages than render inline: this one goes to the worker thread.
    const messages = Array.from({ length: 64 }, (_, i) => ({ role: "user", content: `m${i}` }));
    const pending = renderer.render(template, { messages });
    await renderer.close();
    await refused(() => pending, "WORKER_STOPPED", /the template worker stopped: exit code/);
  });
});

describe("ServerError from Batcher.submit", () => {
  let runtime: DeviceRuntime;
  let model: Model;
  beforeAll(async () => {
    runtime = await cpuRuntime();
    model = await Model.load(CHAT_MODEL, { runtime });
  });
  afterAll(async () => {
    model?.dispose();
    runtime?.dispose();
  });

  it("INVALID_ARGUMENT for an empty prompt, PROMPT_TOO_LONG, CLOSED after close", async () => {
    const batcher = new Batcher(model, { parallel: 1, ctxPerSlot: 8, batchSize: 8, queueSize: 0 });
    const spec = (n: number) => ({ ids: Array.from({ length: n }, () => 1) }) as unknown as JobSpec;
    await refused(() => batcher.submit(spec(0)), "INVALID_ARGUMENT", /the prompt has no tokens/);
    await refused(
      () => batcher.submit(spec(8)),
      "PROMPT_TOO_LONG",
      /the prompt has 8 tokens; a slot's context holds 8/,
    );
    await batcher.close();
    await refused(() => batcher.submit(spec(1)), "CLOSED", /shutting down/);
  });
});
