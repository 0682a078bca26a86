import { statSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { type ContextOptions, type Model, POOLINGS, type Pooling } from "@minfer/engine";
import {
  chatTemplateArg,
  createServer,
  REASONING_FORMATS,
  type ReasoningFormat,
  SERVER_DEFAULTS,
  SERVER_LIMITS,
  type ServerOptions,
  type ServerSpeculation,
} from "@minfer/server";
import { ChatTemplate } from "@minfer/tokenizer";
import { expectPositionals, type OptionSpec, parseArgs } from "../args.js";
import { CliError } from "../errors.js";
import { type Loaded, loadModel } from "./load.js";
import {
  check,
  contextOptions,
  modelOption,
  modelPath,
  runSettings,
  samplerSettings,
  samplingOptions,
} from "./options.js";
import { chainOptions, chainSettings } from "./sampling.js";
import { modelsOptions, serveModels } from "./serve-models.js";
import { loadDraft, specSettings, speculativeOptions } from "./speculative.js";

/** `run`'s sampler flags that are per request on a server (a request's own grammar or bias). */
const SERVE_NOT_DEFAULTS = new Set(["--logit-bias", "--grammar", "--grammar-file", "--json-schema"]);

export const serveOptions: OptionSpec[] = [
  modelOption,
  ...modelsOptions,
  { flags: ["--host"], kind: "string", metavar: "HOST", help: "address to listen on (default: 127.0.0.1)" },
  {
    flags: ["--port"],
    kind: "integer",
    metavar: "PORT",
    help: "port to listen on; 0 = any free one (default: 8080)",
  },
  {
    flags: ["-np", "--parallel"],
    kind: "integer",
    metavar: "N",
    help: `slots: requests generating at once, batched together; -c is shared out to them (default: ${SERVER_DEFAULTS.parallel})`,
  },
  {
    flags: ["--queue"],
    kind: "integer",
    metavar: "N",
    help: `requests that may wait for a slot; more get 503 + Retry-After (default: ${SERVER_DEFAULTS.queueSize})`,
  },
  {
    flags: ["--timeout"],
    kind: "number",
    metavar: "S",
    help: "per-request limit in seconds, arrival to last token; past it, 504 (default: none)",
  },
  {
    flags: ["--drain-timeout"],
    kind: "number",
    metavar: "S",
    help: `on SIGINT/SIGTERM, seconds running requests may take to finish; then each is answered 503 / an error event (default: ${SERVER_DEFAULTS.drainSeconds})`,
  },
  {
    flags: ["--read-timeout"],
    kind: "number",
    metavar: "S",
    help: `seconds a client has to send a whole request, headers and body; past it, 408 and the connection closes (default: ${SERVER_LIMITS.requestTimeoutMs / 1000})`,
  },
  { flags: ["--metrics"], kind: "boolean", help: "serve Prometheus metrics at /metrics (default: off)" },
  { flags: ["--slots"], kind: "boolean", help: "serve the slots' state at /slots (the default)" },
  {
    flags: ["--context-shift"],
    kind: "boolean",
    help: "when a slot's context fills, drop the older half of its tokens (after the request's n_keep) and go on, as llama-server's --context-shift (default: generation stops there, finish length)",
  },
  {
    flags: ["--no-context-shift"],
    kind: "boolean",
    help: "stop generating when a slot's context fills (the default)",
  },
  {
    flags: ["-kvu", "--kv-unified"],
    kind: "boolean",
    help: "one KV pool of -c cells all slots draw from, as llama-server's --kv-unified: one request may use all of it while the others leave room; idle slots' cached prompts are dropped when a step needs their cells, and when the generating requests alone no longer fit, the one holding the most cells ends with a 503 (default: each slot its own -c / -np cells)",
  },
  {
    flags: ["--batch-invariant"],
    kind: "boolean",
    help: "decode every step batch-invariantly: a request's output is what it would be decoded alone, whatever runs beside it or is drafted (greedy output the same with and without -md / --spec-type, at any -np); costs throughput on CUDA (no tensor-core products for steps of several tokens, prompts included) and on AVX-512 CPUs (default: only a step verifying one request's drafts alone)",
  },
  {
    flags: ["--slot-save-path"],
    kind: "string",
    metavar: "DIR",
    help: "the directory POST /slots/{id}?action=save|restore writes and reads slot files in (default: none, those actions answer 501)",
  },
  { flags: ["--no-slots"], kind: "boolean", help: "answer /slots with 501, as llama-server's --no-slots" },
  {
    flags: ["--no-overlap-output"],
    kind: "boolean",
    help: "deliver each step's tokens (text, stop strings, SSE writes) before the next decode starts, not while it runs (default: while it runs)",
  },
  {
    flags: ["--no-candidates-only"],
    kind: "boolean",
    help: "read every sampled row of logits back from the device, even when each stream's sampler can take its token from the row's best ids and their logits (default: only those are read then)",
  },
  {
    flags: ["--no-webui"],
    kind: "boolean",
    help: "do not serve the chat page at / (default: served, without the API key; the page asks for it)",
  },
  {
    flags: ["--api-key"],
    kind: "string",
    metavar: "KEY",
    help: "require `Authorization: Bearer KEY` on every endpoint but /health (default: no key)",
  },
  {
    flags: ["-a", "--alias"],
    kind: "string",
    metavar: "NAME",
    help: "the model id in /v1/models and in responses (default: the file name without .gguf); several, comma-separated, are listed as its aliases and the first in sorted order is the id, as llama-server's --alias",
  },
  {
    flags: ["--tags"],
    kind: "string",
    metavar: "TAGS",
    help: "comma-separated tags listed with the model in /v1/models, as llama-server's --tags",
  },
  {
    flags: ["--cors-origins"],
    kind: "string",
    metavar: "ORIGINS",
    help: "origins browsers may call from: * (any, the default), localhost, or a comma-separated list such as https://app.example",
  },
  {
    flags: ["--embedding", "--embeddings"],
    kind: "boolean",
    help: "serve embeddings (/v1/embeddings, /embedding) instead of completions, as llama-server's --embedding; an embedding model (BERT family) needs it. An input must fit one batch (-b)",
  },
  {
    flags: ["--pooling"],
    kind: "string",
    metavar: "TYPE",
    help: "with --embedding: none, mean, cls, last or rank (default: the model file's pooling_type, else mean for an encoder and last for a decoder)",
  },
  {
    flags: ["--reranking", "--rerank"],
    kind: "boolean",
    help: "serve /rerank (and /v1/rerank) with the model's classifier head: --embedding --pooling rank, as llama-server's --reranking",
  },
  {
    flags: ["--strict-api"],
    kind: "boolean",
    help: "refuse (400) a request field the server does not know or does not use (default: ignore it and name it in the X-Minfer-Ignored-Fields response header and the log, as llama-server does)",
  },
  {
    flags: ["--chat-template"],
    kind: "string",
    metavar: "NAME|JINJA",
    help: "use this chat template instead of the model's: a built-in name (chatml, llama3, command-r) or a Jinja template inline",
  },
  {
    flags: ["--chat-template-file"],
    kind: "string",
    metavar: "F",
    help: "use this Jinja chat template instead of the model's",
  },
  {
    flags: ["--chat-template-kwargs"],
    kind: "string",
    metavar: "JSON",
    help: "template variables every chat request renders with, under its own chat_template_kwargs, e.g. '{\"enable_thinking\": false}'",
  },
  {
    flags: ["--reasoning"],
    kind: "string",
    metavar: "on|off|auto",
    help: "whether templates that can think are asked to (their enable_thinking variable): on, off, or auto (the template's default, the default), as llama-server's --reasoning",
  },
  {
    flags: ["--reasoning-format"],
    kind: "string",
    metavar: "FORMAT",
    help: "how a thinking model's think block is returned: none (left in content), deepseek (in reasoning_content), deepseek-legacy (in reasoning_content; streams keep it in content, tags included), or auto (as deepseek, the default), as llama-server's --reasoning-format; a request's reasoning_format overrides it",
  },
  {
    flags: ["--reasoning-budget"],
    kind: "integer",
    metavar: "N",
    help: "tokens a think block may hold before its end tag is forced: -1 no limit (the default), 0 the block ends as it opens, as llama-server's --reasoning-budget",
  },
  {
    flags: ["--reasoning-budget-message"],
    kind: "string",
    metavar: "TEXT",
    help: "text forced before the end tag when the reasoning budget is spent (default: none), as llama-server's --reasoning-budget-message",
  },
  ...contextOptions.map((o) =>
    o.flags.includes("-c")
      ? {
          ...o,
          help: "KV cache tokens shared out equally to the slots (default: min(4096, the model's); 0 = the model's)",
        }
      : o.flags.includes("-b")
        ? {
            ...o,
            help: `most tokens one decode step holds: generating slots plus prompt chunks (default: ${SERVER_DEFAULTS.batchSize})`,
          }
        : o,
  ),
  // Sampling defaults of requests that leave a field unset, as llama-server's flags set them.
  ...samplingOptions,
  ...chainOptions.filter((o) => !SERVE_NOT_DEFAULTS.has(o.flags.at(-1)!)),
  {
    flags: ["-n", "--n-predict"],
    kind: "integer",
    metavar: "N",
    help: "tokens a request generates when it gives no max_tokens / n_predict; -1 = no limit (default)",
  },
  {
    flags: ["--verbose"],
    kind: "boolean",
    help: "log every request (JSON lines on stdout), and give every non-streamed response a __verbose object (the prompt as read, the settings), as llama-server does",
  },
  // Speculative decoding in every slot (no --draft-fixed: the server drafts up to --draft-max).
  ...speculativeOptions.filter((o) => !o.flags.includes("--draft-fixed")),
];

/** --chat-template-kwargs (a JSON object) with --reasoning's enable_thinking over it. */
function templateKwargsOf(options: Record<string, unknown>): Record<string, unknown> | undefined {
  let kw: Record<string, unknown> | undefined;
  const raw = options.chatTemplateKwargs as string | undefined;
  if (raw !== undefined) {
    try {
      kw = JSON.parse(raw) as Record<string, unknown>;
    } catch (e) {
      throw new CliError("INVALID_ARGUMENT", `--chat-template-kwargs is not JSON: ${(e as Error).message}`);
    }
    if (typeof kw !== "object" || kw === null || Array.isArray(kw))
      throw new CliError("INVALID_ARGUMENT", "--chat-template-kwargs must be a JSON object");
  }
  const r = options.reasoning as string | undefined;
  if (r === undefined || r === "auto") return kw;
  if (r !== "on" && r !== "off")
    throw new CliError("INVALID_ARGUMENT", `--reasoning must be on, off or auto, got ${JSON.stringify(r)}`);
  return { ...kw, enable_thinking: r === "on" };
}

/** --reasoning-format, --reasoning-budget and --reasoning-budget-message as ServerOptions. */
function reasoningOptions(
  options: Record<string, unknown>,
): Pick<ServerOptions, "reasoningFormat" | "reasoningBudget" | "reasoningBudgetMessage"> {
  const format = options.reasoningFormat as string | undefined;
  if (format !== undefined && !(REASONING_FORMATS as readonly string[]).includes(format))
    throw new CliError(
      "INVALID_ARGUMENT",
      `--reasoning-format must be one of ${REASONING_FORMATS.join(", ")}, got ${JSON.stringify(format)}`,
    );
  const budget = options.reasoningBudget as number | undefined;
  if (budget !== undefined)
    check(budget >= -1, "--reasoning-budget", "-1 (no limit) or an integer >= 0", budget);
  const message = options.reasoningBudgetMessage as string | undefined;
  return {
    ...(format !== undefined ? { reasoningFormat: format as ReasoningFormat } : {}),
    ...(budget !== undefined ? { reasoningBudget: budget } : {}),
    ...(message !== undefined ? { reasoningBudgetMessage: message } : {}),
  };
}

/** A comma-separated list of names (--alias, --tags): each 1-256 characters, no control characters. */
function nameList(value: string | undefined, flag: string): string[] | undefined {
  if (value === undefined) return undefined;
  const names = value.split(",").map((n) => n.trim());
  if (names.some((n) => n === "" || n.length > 256 || /[\u0000-\u001f\u007f]/.test(n)))
    throw new CliError(
      "INVALID_ARGUMENT",
      `${flag} takes comma-separated names of 1-256 characters with no control characters`,
    );
  return [...new Set(names)];
}

/** --chat-template's value as a template (a CliError naming the flag when it is neither). */
function templateOf(value: string): ChatTemplate {
  try {
    return chatTemplateArg(value);
  } catch (e) {
    throw new CliError("INVALID_ARGUMENT", `--chat-template: ${(e as Error).message}`);
  }
}

async function readTemplate(file: string): Promise<ChatTemplate> {
  let source: string;
  try {
    source = await readFile(file, "utf8");
  } catch (e) {
    throw new CliError(
      "INVALID_ARGUMENT",
      `--chat-template-file: cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? e})`,
    );
  }
  return ChatTemplate.parse(source, file);
}

/**
 * `minfer serve`: an OpenAI-compatible HTTP server (see @minfer/server). It listens at once
 * (/health answers 503 while the model loads), batches the slots' requests together, and on
 * SIGINT/SIGTERM stops taking requests, lets running ones finish (30 s at most) and exits 0.
 */
export async function serveCommand(argv: string[]): Promise<number> {
  const { options, positionals } = parseArgs(argv, serveOptions);
  expectPositionals(positionals, []);
  if (options.modelsDir !== undefined) return serveModels(options, argv, serveOptions);
  for (const flag of ["modelsMax", "keepAlive"])
    if (options[flag] !== undefined)
      throw new CliError(
        "INVALID_ARGUMENT",
        `--${flag === "modelsMax" ? "models-max" : "keep-alive"} applies to --models-dir`,
      );
  const path = modelPath(options, true);
  const host = (options.host as string | undefined) ?? "127.0.0.1";
  const port = (options.port as number | undefined) ?? 8080;
  check(Number.isInteger(port) && port >= 0 && port <= 65535, "--port", "an integer in [0, 65535]", port);
  const parallel = (options.parallel as number | undefined) ?? SERVER_DEFAULTS.parallel;
  check(parallel >= 1 && parallel <= 256, "-np", "an integer in [1, 256]", parallel);
  const queueSize = (options.queue as number | undefined) ?? SERVER_DEFAULTS.queueSize;
  check(queueSize >= 0, "--queue", "0 or a positive integer", queueSize);
  const timeout = options.timeout as number | undefined;
  if (timeout !== undefined) check(timeout > 0, "--timeout", "a positive number of seconds", timeout);
  const drainSeconds = (options.drainTimeout as number | undefined) ?? SERVER_DEFAULTS.drainSeconds;
  check(drainSeconds >= 0, "--drain-timeout", "0 or a positive number of seconds", drainSeconds);
  const readTimeout = options.readTimeout as number | undefined;
  if (readTimeout !== undefined)
    check(
      readTimeout >= 0.01 && readTimeout <= 3600,
      "--read-timeout",
      "seconds in [0.01, 3600]",
      readTimeout,
    );
  const readMs = readTimeout !== undefined ? Math.round(readTimeout * 1000) : undefined;
  const sampling = chainSettings(options, samplerSettings(options));
  const nPredict = options.nPredict as number | undefined;
  if (nPredict !== undefined) check(nPredict >= -1, "-n", "-1 (no limit) or an integer >= 0", nPredict);
  const apiKey = options.apiKey as string | undefined;
  const aliases = nameList(options.alias as string | undefined, "--alias");
  const tags = nameList(options.tags as string | undefined, "--tags");
  // (llama-server's id of several aliases: the first in sorted order)
  const alias = aliases ? [...aliases].sort()[0] : undefined;
  if (apiKey !== undefined && apiKey === "")
    throw new CliError("INVALID_ARGUMENT", "--api-key must not be empty");
  if (options.slots && options.noSlots)
    throw new CliError("INVALID_ARGUMENT", "give one of --slots and --no-slots");
  const templateKwargs = templateKwargsOf(options);
  const reasoning = reasoningOptions(options);
  if (options.contextShift && options.noContextShift)
    throw new CliError("INVALID_ARGUMENT", "give one of --context-shift and --no-context-shift");
  const slotSavePath = options.slotSavePath as string | undefined;
  if (slotSavePath !== undefined && !statSync(slotSavePath, { throwIfNoEntry: false })?.isDirectory())
    throw new CliError("INVALID_ARGUMENT", `--slot-save-path ${slotSavePath} is not a directory`);
  const settings = runSettings(options);
  const batchSize = settings.nUbatch ?? SERVER_DEFAULTS.batchSize;
  const templateFile = options.chatTemplateFile as string | undefined;
  const templateArg = options.chatTemplate as string | undefined;
  if (templateFile !== undefined && templateArg !== undefined)
    throw new CliError("INVALID_ARGUMENT", "give one of --chat-template and --chat-template-file");
  const chatTemplate =
    templateFile !== undefined
      ? await readTemplate(templateFile)
      : templateArg !== undefined
        ? templateOf(templateArg)
        : undefined;
  const verbose = Boolean(options.verbose);

  let loaded: Loaded | undefined;
  // The offload plan sizes its worst-case graph as the server's context runs: -np sequences, -b tokens.
  const loading = loadModel(path, { ...settings, nUbatch: batchSize, nSeqMax: parallel }, verbose).then(
    (l) => {
      loaded = l;
      return l.model;
    },
  );
  const modelReady = loading.then((m) => {
    const nCtx = settings.nCtx === 0 ? m.hparams.nCtxTrain : settings.nCtx;
    if (nCtx !== undefined && Math.floor(nCtx / (options.kvUnified ? 1 : parallel)) < 2)
      throw new CliError("INVALID_ARGUMENT", `-c ${nCtx} cannot be shared by ${parallel} slots (-np)`);
    return m;
  });
  const contextOptions: ContextOptions = {
    ...(settings.nCtx !== undefined ? { nCtx: settings.nCtx } : {}),
    nUbatch: batchSize,
    ...(settings.kvDtype !== undefined ? { kvDtype: settings.kvDtype } : {}),
    ...(options.kvUnified ? { kvUnified: true } : {}),
  };
  const embeddings = Boolean(options.embedding || options.reranking);
  const spec = specSettings(options);
  if (spec && embeddings)
    throw new CliError(
      "INVALID_ARGUMENT",
      "speculative decoding (-md, --spec-type) is for generation, not --embedding",
    );
  if (options.batchInvariant && embeddings)
    throw new CliError("INVALID_ARGUMENT", "--batch-invariant is for generation, not --embedding");
  let draftModel: Model | undefined;
  // (the draft model loads on the main model's runtimes, after it)
  const speculative: Promise<ServerSpeculation> | undefined = spec
    ? loading.then(async () => {
        draftModel = await loadDraft(spec, loaded!);
        return {
          draft: draftModel ?? "ngram",
          draftMax: spec.draftMax,
          draftMin: spec.draftMin,
          pMin: spec.pMin,
          ngramMax: spec.ngramMax,
        };
      })
    : undefined;
  const closeModels = () => {
    draftModel?.dispose();
    loaded?.close();
  };
  const pooling = options.reranking ? "rank" : (options.pooling as string | undefined);
  if (options.reranking && options.pooling !== undefined && options.pooling !== "rank")
    throw new CliError(
      "INVALID_ARGUMENT",
      `--reranking ranks (pooling rank); it cannot take --pooling ${String(options.pooling)}`,
    );
  if (pooling !== undefined && !embeddings)
    throw new CliError("INVALID_ARGUMENT", "--pooling applies to embeddings: give --embedding with it");
  if (pooling !== undefined && !(POOLINGS as readonly string[]).includes(pooling))
    throw new CliError("INVALID_ARGUMENT", `--pooling must be one of ${POOLINGS.join(", ")}, got ${pooling}`);
  const server = createServer({
    model: modelReady,
    ...(embeddings ? { embeddings: true } : {}),
    ...(pooling !== undefined ? { pooling: pooling as Pooling } : {}),
    parallel,
    contextOptions,
    batchSize,
    queueSize,
    ...(timeout !== undefined ? { timeoutSeconds: timeout } : {}),
    metrics: Boolean(options.metrics),
    ...(options.noSlots ? { slots: false } : {}),
    ...(options.noOverlapOutput ? { overlapOutput: false } : {}),
    ...(options.noCandidatesOnly ? { candidatesOnly: false } : {}),
    ...(chatTemplate ? { chatTemplate } : {}),
    ...(apiKey !== undefined ? { apiKey } : {}),
    ...(options.noWebui ? { webui: false } : {}),
    ...(options.strictApi ? { strictApi: true } : {}),
    ...(options.corsOrigins !== undefined ? { corsOrigins: options.corsOrigins as string } : {}),
    ...(alias !== undefined ? { modelId: alias, aliases } : {}),
    ...(tags ? { tags } : {}),
    ...(verbose ? { verbose: true } : {}),
    ...(templateKwargs ? { templateKwargs } : {}),
    ...reasoning,
    ...(slotSavePath !== undefined ? { slotSavePath } : {}),
    ...(options.contextShift ? { contextShift: true } : {}),
    ...(options.batchInvariant ? { batchInvariant: true } : {}),
    ...(speculative ? { speculative } : {}),
    sampling,
    ...(nPredict !== undefined && nPredict >= 0 ? { nPredict } : {}),
    logger: verbose,
    ...(readMs !== undefined
      ? {
          limits: {
            requestTimeoutMs: readMs,
            headersTimeoutMs: Math.min(SERVER_LIMITS.headersTimeoutMs, readMs),
          },
        }
      : {}),
  });
  let address: string;
  try {
    address = await server.listen(port, host);
  } catch (e) {
    await server.close();
    await loading.catch(() => undefined);
    await speculative?.catch(() => undefined);
    closeModels();
    const err = e as NodeJS.ErrnoException;
    if (err.code === "EADDRINUSE" || err.code === "EACCES" || err.code === "EADDRNOTAVAIL")
      throw new CliError("INVALID_ARGUMENT", `cannot listen on ${host}:${port} (${err.code})`);
    throw e;
  }
  process.stderr.write(`serve: listening on ${address} (OpenAI base URL ${address}/v1); loading ${path}\n`);
  let signal: string | undefined;
  const stopped = new Promise<string>((resolve) => {
    const stop = (s: string) => {
      process.off("SIGINT", onInt);
      process.off("SIGTERM", onTerm);
      signal = s;
      resolve(s);
    };
    const onInt = () => stop("SIGINT");
    const onTerm = () => stop("SIGTERM");
    process.on("SIGINT", onInt);
    process.on("SIGTERM", onTerm);
  });
  try {
    await Promise.race([server.ready, stopped]);
  } catch (e) {
    await server.close();
    closeModels();
    throw e;
  }
  if (signal === undefined && server.embedder) {
    const e = server.embedder;
    process.stderr.write(
      [
        `serve: model ${server.modelId} (${path})`,
        `serve: embeddings (pooling ${e.pooling}), up to ${e.maxTokens} tokens an input (-b), ${e.context.nSeqMax} inputs a decode; ` +
          `device ${loaded!.gpu ? loaded!.model.placement.describe() : `cpu, ${loaded!.runtime.threads} threads (${loaded!.runtime.simd})`}`,
        `serve: ready on ${address}`,
        "",
      ].join("\n"),
    );
  } else if (signal === undefined) {
    const b = server.batcher;
    const ctx = b.context;
    const rt = loaded!.runtime;
    const template = chatTemplate
      ? (templateFile ?? `--chat-template ${chatTemplate.name}`)
      : loaded!.model.chatTemplate
        ? "the model's"
        : "chatml (the model has none; as llama-server falls back)";
    process.stderr.write(
      [
        `serve: model ${server.modelId} (${path})`,
        loaded!.gpu
          ? `serve: ${loaded!.model.placement.describe()}; cpu ${rt.threads} threads (${rt.simd}) for the rest`
          : `serve: device cpu, ${rt.threads} threads (${rt.simd}); every layer and op runs on it`,
        (options.kvUnified
          ? `serve: ${b.parallel} slot${b.parallel > 1 ? "s" : ""} sharing one KV pool of ${ctx.nCtx} cells (${ctx.kvDtype}); up to`
          : `serve: ${b.parallel} slot${b.parallel > 1 ? "s" : ""} × ${b.ctxPerSlot} tokens of context each ` +
            `(KV cache ${ctx.nCtx} cells, ${ctx.kvDtype}); up to`) +
          ` ${b.batchSize} tokens per decode step; ` +
          `queue ${b.queueSize}; timeout ${timeout !== undefined ? `${timeout} s` : "none"}`,
        ...(spec
          ? [
              `serve: speculative decoding in every slot: ${spec.type === "ngram" ? `n-gram look-up (n ${Math.min(2, spec.ngramMax)}-${spec.ngramMax})` : `draft model ${spec.draftPath}`}, ` +
                `up to ${spec.draftMax} drafted tokens a step${spec.draftMin > 0 ? `, at least ${spec.draftMin}` : ""}`,
            ]
          : []),
        `serve: chat template: ${template}; API key: ${apiKey !== undefined ? "required" : "none"}; ` +
          `metrics: ${options.metrics ? "/metrics" : "off"}; chat page: ${options.noWebui ? "off" : `${address}/`}`,
        `serve: ready on ${address}`,
        "",
      ].join("\n"),
    );
  }
  const s = await stopped;
  process.stderr.write(
    `serve: ${s}: no new requests; letting running ones finish (${drainSeconds} s at most)\n`,
  );
  const finished = await server.drain(drainSeconds);
  if (!finished)
    process.stderr.write("serve: requests still running were stopped and told the server is shutting down\n");
  closeModels();
  return 0;
}
