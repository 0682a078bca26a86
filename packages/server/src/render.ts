import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import type { ChatTemplate, ChatTemplateRenderOptions } from "@minfer/tokenizer";
import { ServerError } from "./server-error.js";

// Chat templates rendered without holding the event loop. The template interpreter takes tens
// of microseconds per message: a conversation of a thousand messages would stall every other
// request for a quarter of a second. Small conversations render inline; larger ones in a worker
// thread that holds its own parse of each template.

/** Conversations up to this many messages and tools render inline (a few milliseconds at most)… */
const INLINE_ITEMS = 32;
/** …when their tools and template variables are this small as JSON (templates `tojson` them). */
const INLINE_JSON_BYTES = 16 * 1024;

/** The file URL of @minfer/tokenizer's ESM entry, for the worker to import. */
function tokenizerEntry(): string {
  const require = createRequire(import.meta.url);
  const pkgPath = require.resolve("@minfer/tokenizer/package.json");
  const pkg = JSON.parse(readFileSync(pkgPath, "utf8")) as { exports?: { "."?: { import?: string } } };
  const entry = pkg.exports?.["."]?.import;
  if (typeof entry !== "string")
    throw new ServerError(
      "WORKER_STOPPED",
      `${pkgPath} names no ESM entry (exports["."].import): the template worker cannot load the tokenizer`,
    );
  return pathToFileURL(join(dirname(pkgPath), entry)).href;
}

const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const loading = import(workerData.tokenizer);
const parsed = new Map();
parentPort.on("message", async ({ id, source, name, input }) => {
  try {
    const { ChatTemplate } = await loading;
    let t = parsed.get(source);
    if (!t) {
      t = ChatTemplate.parse(source, name);
      parsed.set(source, t);
      if (parsed.size > 8) parsed.delete(parsed.keys().next().value);
    }
    parentPort.postMessage({ id, text: t.render(input) });
  } catch (e) {
    parentPort.postMessage({ id, error: { message: String((e && e.message) || e), name: e && e.name, code: e && e.code } });
  }
});
`;

/** An error the template raised in the worker, as it was: its name, code and message. */
export class RenderError extends Error {
  constructor(
    message: string,
    override readonly name: string,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

const jsonSize = (v: unknown) => (v === undefined ? 0 : (JSON.stringify(v)?.length ?? 0));

type Pending = { resolve(text: string): void; reject(e: Error): void };

/** Renders chat templates inline when small, else in one worker thread started on first need. */
export class TemplateRenderer {
  #worker: Worker | undefined;
  readonly #pending = new Map<number, Pending>();
  #next = 0;

  async render(template: ChatTemplate, input: ChatTemplateRenderOptions): Promise<string> {
    const items = input.messages.length + (Array.isArray(input.tools) ? input.tools.length : 0);
    if (items <= INLINE_ITEMS && jsonSize(input.tools) + jsonSize(input.kwargs) <= INLINE_JSON_BYTES)
      return template.render(input);
    const worker = this.#start();
    const id = this.#next++;
    return new Promise<string>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      worker.postMessage({ id, source: template.source, name: template.name, input });
    });
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { tokenizer: tokenizerEntry() } });
    worker.unref();
    worker.on(
      "message",
      (m: { id: number; text?: string; error?: { message: string; name?: string; code?: string } }) => {
        const p = this.#pending.get(m.id);
        if (!p) return;
        this.#pending.delete(m.id);
        if (m.error) p.reject(new RenderError(m.error.message, m.error.name ?? "Error", m.error.code));
        else p.resolve(m.text!);
      },
    );
    // The worker itself failed (not the template): a server error, WORKER_STOPPED.
    const fail = (why: string, cause?: unknown) => {
      this.#worker = undefined;
      for (const p of this.#pending.values())
        p.reject(new ServerError("WORKER_STOPPED", `the template worker stopped: ${why}`, { cause }));
      this.#pending.clear();
    };
    worker.on("error", (e) => fail(e.message, e));
    worker.on("exit", (code) => fail(`exit code ${code}`));
    this.#worker = worker;
    return worker;
  }

  /** Stops the worker (pending renders reject). */
  async close(): Promise<void> {
    const w = this.#worker;
    this.#worker = undefined;
    if (w) await w.terminate();
  }
}
