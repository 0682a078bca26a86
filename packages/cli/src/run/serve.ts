import { readFile } from "node:fs/promises";
import type { ContextOptions } from "@minfer/engine";
import { createServer } from "@minfer/server";
import { ChatTemplate } from "@minfer/tokenizer";
import { expectPositionals, type OptionSpec, parseArgs } from "../args.js";
import { CliError } from "../errors.js";
import { loadModel } from "./load.js";
import { check, contextOptions, modelOption, modelPath, runSettings } from "./options.js";

export const serveOptions: OptionSpec[] = [
  modelOption,
  { flags: ["--host"], kind: "string", metavar: "HOST", help: "address to listen on (default: 127.0.0.1)" },
  {
    flags: ["--port"],
    kind: "integer",
    metavar: "PORT",
    help: "port to listen on; 0 = any free one (default: 8080)",
  },
  {
    flags: ["--api-key"],
    kind: "string",
    metavar: "KEY",
    help: "require `Authorization: Bearer KEY` on /v1/* (default: no key)",
  },
  {
    flags: ["--chat-template-file"],
    kind: "string",
    metavar: "F",
    help: "use this Jinja chat template instead of the model's",
  },
  ...contextOptions,
  { flags: ["--verbose"], kind: "boolean", help: "log every request (JSON lines on stdout)" },
];

/**
 * `minfer serve`: an OpenAI-compatible HTTP server (see @minfer/server). Requests run one at a
 * time on one context. SIGINT/SIGTERM stop it (in-flight generations are aborted), exit 0.
 */
export async function serveCommand(argv: string[]): Promise<number> {
  const { options, positionals } = parseArgs(argv, serveOptions);
  expectPositionals(positionals, []);
  const path = modelPath(options, true);
  const host = (options.host as string | undefined) ?? "127.0.0.1";
  const port = (options.port as number | undefined) ?? 8080;
  check(Number.isInteger(port) && port >= 0 && port <= 65535, "--port", "an integer in [0, 65535]", port);
  const apiKey = options.apiKey as string | undefined;
  if (apiKey !== undefined && apiKey === "") throw new CliError("BAD_VALUE", "--api-key must not be empty");
  const settings = runSettings(options);
  const templateFile = options.chatTemplateFile as string | undefined;
  let chatTemplate: ChatTemplate | undefined;
  if (templateFile !== undefined) {
    let source: string;
    try {
      source = await readFile(templateFile, "utf8");
    } catch (e) {
      throw new CliError(
        "BAD_VALUE",
        `--chat-template-file: cannot read ${templateFile} (${(e as NodeJS.ErrnoException).code ?? e})`,
      );
    }
    chatTemplate = ChatTemplate.parse(source, templateFile);
  }
  const verbose = Boolean(options.verbose);
  const loaded = await loadModel(path, settings, verbose);
  const { model, runtime } = loaded;
  const contextOptions: ContextOptions = {
    ...(settings.nCtx !== undefined
      ? { nCtx: settings.nCtx === 0 ? model.hparams.nCtxTrain : settings.nCtx }
      : {}),
    ...(settings.nUbatch !== undefined ? { nUbatch: settings.nUbatch } : {}),
    ...(settings.kvDtype !== undefined ? { kvDtype: settings.kvDtype } : {}),
  };
  let server: ReturnType<typeof createServer>;
  try {
    server = createServer({
      model,
      contextOptions,
      ...(chatTemplate ? { chatTemplate } : {}),
      ...(apiKey !== undefined ? { apiKey } : {}),
      logger: verbose,
    });
  } catch (e) {
    loaded.close();
    throw e;
  }
  let address: string;
  try {
    address = await server.listen(port, host);
  } catch (e) {
    await server.close();
    loaded.close();
    const err = e as NodeJS.ErrnoException;
    if (err.code === "EADDRINUSE" || err.code === "EACCES" || err.code === "EADDRNOTAVAIL")
      throw new CliError("BAD_VALUE", `cannot listen on ${host}:${port} (${err.code})`);
    throw e;
  }
  const ctx = server.context;
  const template = chatTemplate
    ? templateFile
    : model.chatTemplate
      ? "the model's"
      : "none (chat requests are refused; /v1/completions works)";
  process.stderr.write(
    [
      `serve: model ${server.modelId} (${path})`,
      `serve: device cpu, ${runtime.threads} threads (${runtime.simd}); everything runs on it`,
      `serve: 1 slot, context ${ctx.nCtx} tokens, micro-batch ${ctx.nUbatch}, KV ${ctx.kvDtype}; requests run one at a time`,
      `serve: chat template: ${template}; API key: ${apiKey !== undefined ? "required" : "none"}`,
      `serve: listening on ${address} (OpenAI base URL ${address}/v1)`,
      "",
    ].join("\n"),
  );
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      process.off("SIGINT", onInt);
      process.off("SIGTERM", onTerm);
      process.stderr.write(`serve: ${signal}: stopping\n`);
      resolve();
    };
    const onInt = () => stop("SIGINT");
    const onTerm = () => stop("SIGTERM");
    process.on("SIGINT", onInt);
    process.on("SIGTERM", onTerm);
  });
  await server.close();
  loaded.close();
  return 0;
}
