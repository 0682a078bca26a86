// `minfer serve --models-dir DIR`: several models behind one address. Each model runs as a
// `minfer serve -m FILE` child of its own on 127.0.0.1 (a port of its own, a random key only this
// process knows), started when a request first names it and stopped after --keep-alive seconds
// without requests or to make room under --models-max (@minfer/server's createModelRouter).
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { createModelRouter, type PoolModel, type Upstream } from "@minfer/server";
import type { OptionSpec, ParsedOptions } from "../args.js";
import { CliError } from "../errors.js";
import { resolveModelPath } from "../hub/commands.js";
import { isHubRef } from "../hub/model-ref.js";
import { check } from "./options.js";

export const DEFAULT_MODELS_MAX = 4;
export const DEFAULT_KEEP_ALIVE_S = 300;

export const modelsOptions: OptionSpec[] = [
  {
    flags: ["--models-dir"],
    kind: "string",
    metavar: "DIR",
    help: "serve every .gguf in DIR (id: the file name without .gguf); a request's `model` picks one, loaded on first use (not with -m)",
  },
  {
    flags: ["--models-max"],
    kind: "integer",
    metavar: "N",
    help: `with --models-dir: most models loaded at once; the least recently used idle one is unloaded to make room (default: ${DEFAULT_MODELS_MAX})`,
  },
  {
    flags: ["--keep-alive"],
    kind: "number",
    metavar: "SECONDS",
    help: `with --models-dir: a model without requests for this long is unloaded; -1 = never (default: ${DEFAULT_KEEP_ALIVE_S})`,
  },
];

/** The models of a directory: its .gguf files (a split model by its first part), sorted by id. */
export function modelsIn(dir: string): PoolModel[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (e) {
    throw new CliError(
      "INVALID_ARGUMENT",
      `--models-dir: cannot read ${dir} (${(e as NodeJS.ErrnoException).code ?? e})`,
    );
  }
  const models = names
    .filter((n) => /\.gguf$/i.test(n) && (/-(\d{5})-of-\d{5}\.gguf$/i.exec(n)?.[1] ?? "00001") === "00001")
    .filter((n) => statSync(join(dir, n), { throwIfNoEntry: false })?.isFile())
    .map((n) => ({ id: n.replace(/(-00001-of-\d{5})?\.gguf$/i, ""), path: resolve(dir, n) }))
    .sort((a, b) => a.id.localeCompare(b.id));
  if (models.length === 0) throw new CliError("INVALID_ARGUMENT", `--models-dir: no .gguf files in ${dir}`);
  return models;
}

/** The serve flags a child takes as given: all but the router's own and those it sets. */
const ROUTER_FLAGS = new Set([
  "--models-dir",
  "--models-max",
  "--keep-alive",
  "--host",
  "--port",
  "--api-key",
  "-m",
  "--model",
]);

export function childArgs(argv: readonly string[], specs: readonly OptionSpec[]): string[] {
  const byFlag = new Map<string, OptionSpec>();
  for (const s of specs) for (const f of s.flags) byFlag.set(f, s);
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const flag = arg.includes("=") ? arg.slice(0, arg.indexOf("=")) : arg;
    const spec = byFlag.get(flag);
    const takesValue = spec !== undefined && spec.kind !== "boolean" && !arg.includes("=");
    const drop = spec?.flags.some((f) => ROUTER_FLAGS.has(f)) ?? false;
    if (!drop) out.push(arg);
    if (takesValue) {
      if (!drop && i + 1 < argv.length) out.push(argv[i + 1]!);
      i++;
    }
  }
  return out;
}

/** Starts `minfer serve -m model.path` on 127.0.0.1 and resolves when it is ready to serve. */
function launchChild(model: PoolModel, args: readonly string[]): Promise<Upstream> {
  const key = randomBytes(24).toString("hex");
  const child: ChildProcess = spawn(
    process.execPath,
    [
      process.argv[1]!,
      "serve",
      "-m",
      model.path,
      "--host",
      "127.0.0.1",
      "--port",
      "0",
      "--api-key",
      key,
      ...args,
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  return new Promise<Upstream>((resolveUp, reject) => {
    let url: string | undefined;
    let tail: string[] = [];
    let buf = "";
    let ready = false;
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (chunk: string) => {
      buf += chunk;
      for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        process.stderr.write(`serve[${model.id}]: ${line.replace(/^serve: /, "")}\n`);
        tail = [...tail.slice(-4), line];
        const listening = /^serve: listening on (http:\/\/\S+)/.exec(line);
        if (listening) url = listening[1];
        if (!ready && url && line.startsWith("serve: ready on ")) {
          ready = true;
          resolveUp({
            url,
            headers: { authorization: `Bearer ${key}` },
            async close() {
              child.kill("SIGTERM");
              const timer = setTimeout(() => child.kill("SIGKILL"), 35_000);
              await exited;
              clearTimeout(timer);
            },
          });
        }
      }
    });
    child.once("error", (e) => reject(new Error(`cannot start minfer serve for ${model.id}: ${e.message}`)));
    void exited.then((code) => {
      if (!ready)
        reject(
          new Error(
            `minfer serve -m ${model.path} exited (status ${code}) before it was ready: ${tail.join(" | ")}`,
          ),
        );
    });
  });
}

/** Runs the multi-model server until SIGINT / SIGTERM. */
export async function serveModels(
  options: ParsedOptions,
  argv: readonly string[],
  specs: readonly OptionSpec[],
): Promise<number> {
  if (options.model !== undefined) throw new CliError("INVALID_ARGUMENT", "give one of -m and --models-dir");
  const models = modelsIn(options.modelsDir as string);
  const max = (options.modelsMax as number | undefined) ?? DEFAULT_MODELS_MAX;
  check(Number.isInteger(max) && max >= 1, "--models-max", "an integer >= 1", max);
  const keep = (options.keepAlive as number | undefined) ?? DEFAULT_KEEP_ALIVE_S;
  check(keep === -1 || keep >= 0, "--keep-alive", "seconds >= 0, or -1 (never)", keep);
  const host = (options.host as string | undefined) ?? "127.0.0.1";
  const port = (options.port as number | undefined) ?? 8080;
  check(Number.isInteger(port) && port >= 0 && port <= 65535, "--port", "an integer in [0, 65535]", port);
  const apiKey = options.apiKey as string | undefined;
  if (apiKey !== undefined && apiKey === "")
    throw new CliError("INVALID_ARGUMENT", "--api-key must not be empty");
  const args = childArgs(argv, specs);
  const router = createModelRouter({
    models,
    maxLoaded: max,
    keepAliveMs: keep === -1 ? Number.POSITIVE_INFINITY : keep * 1000,
    launch: (m) => launchChild(m, args),
    onEvent: (line) => process.stderr.write(`serve: ${line}\n`),
    ...(apiKey !== undefined ? { apiKey } : {}),
    ...(options.noWebui ? { webui: false } : {}),
    // `model: "hf://OWNER/REPO/FILE.gguf"` (or hf://OWNER/REPO:QUANT): pulled into the cache, then served
    resolveModel: async (id) => (isHubRef(id) ? { id, path: await resolveModelPath(id) } : undefined),
  });
  let address: string;
  try {
    address = await router.listen(port, host);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === "EADDRINUSE" || err.code === "EACCES" || err.code === "EADDRNOTAVAIL")
      throw new CliError("INVALID_ARGUMENT", `cannot listen on ${host}:${port} (${err.code})`);
    throw e;
  }
  process.stderr.write(
    [
      `serve: listening on ${address} (OpenAI base URL ${address}/v1)`,
      `serve: ${models.length} model${models.length > 1 ? "s" : ""} in ${options.modelsDir as string}: ${models.map((m) => m.id).join(", ")}`,
      `serve: at most ${max} loaded at once; unloaded after ${keep === -1 ? "never" : `${keep} s`} without requests; API key: ${apiKey !== undefined ? "required" : "none"}`,
      `serve: ready on ${address}`,
      "",
    ].join("\n"),
  );
  const signal = await new Promise<string>((res) => {
    process.once("SIGINT", () => res("SIGINT"));
    process.once("SIGTERM", () => res("SIGTERM"));
  });
  process.stderr.write(`serve: ${signal}: unloading the models\n`);
  await router.close();
  return 0;
}
