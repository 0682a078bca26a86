import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { registerAnthropicRoutes } from "./anthropic/routes.js";
import { type CompletionJob, runCompletion } from "./completions.js";
import { ApiError } from "./errors.js";
import { preservedTokens } from "./preserved.js";
import { tokenizePrompt } from "./prompt.js";
import {
  chatOutput,
  promptOpensThink,
  REASONING_DEFAULTS,
  type ReasoningSettings,
  thinkBeforeCalls,
  thinkTagsOf,
} from "./reasoning/index.js";
import {
  type NativePrompt,
  type ParsedChat,
  type ParsedMessage,
  type ParseOptions,
  parseChat,
  parseCompletion,
  parseNative,
} from "./request.js";
import { registerResponsesRoutes } from "./responses/routes.js";
import { checkSchemaSize } from "./sampling.js";
import { ServerError } from "./server-error.js";
import type { ServerState } from "./state.js";
import { registerTextRoutes } from "./text-routes.js";
import {
  type CallFormat,
  genericMessages,
  genericToolGrammar,
  reasoningEndMarkers,
  TOOL_MARKERS,
  ToolCallParser,
  type ToolsRequest,
  templateCaps,
  toolCallGrammar,
  toolFormatOf,
} from "./tools/index.js";

/** llama-server's `response_fields`: each path (`a/b` is `r.a.b`) under its own name; absent ones left out. */
function pickFields(r: Record<string, unknown>, fields: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    let v: unknown = r;
    for (const k of f.split("/"))
      v = typeof v === "object" && v !== null ? (v as Record<string, unknown>)[k] : undefined;
    if (v !== undefined) out[f] = v;
  }
  return out;
}

/** The response header naming the request fields the server ignored (ServerOptions.strictApi). */
export const IGNORED_FIELDS_HEADER = "X-Minfer-Ignored-Fields";

/**
 * The chat pipeline, for endpoints that speak another API over the same jobs (OpenAI's Responses,
 * Anthropic's Messages): each turns its request into a chat request, runs it as chat does, and
 * answers in its own wire format (CompletionJob.wire).
 */
export interface ChatPipeline {
  /** ServerOptions.strictApi: a field the server does not use is a 400 instead of ignored. */
  readonly strictApi: boolean;
  /** The model's name in responses (ServerOptions.modelId, else the file's name). */
  readonly modelId: string;
  /** Reads an OpenAI chat request body, as /v1/chat/completions does (`o`: what this API allows beyond). */
  parse(body: unknown, o?: Pick<ParseOptions, "emptyMessages">): ParsedChat;
  /** The chat job; `reasoningBudget`: this request's think-block budget in tokens (else the server's). */
  job(p: ParsedChat, o?: { reasoningBudget?: number }): Promise<CompletionJob>;
  /** Runs a job (runCompletion with the server's settings). */
  run(request: FastifyRequest, reply: FastifyReply, job: CompletionJob): Promise<unknown>;
  /** The prompt tokens a job would read (before any cache reuse). */
  countTokens(job: CompletionJob): Promise<number>;
  /** Names the fields a request gave that the server ignores (a response header and a log line). */
  reportIgnored(request: FastifyRequest, reply: FastifyReply, ignored: string[]): void;
}

/**
 * Runs steps of the chat pipeline for another API's endpoint: an ApiError about a field (a chat
 * field's path) comes out naming `rename(param)`, the field of that API's request it came from.
 */
export function renamingFields(rename: (param: string) => string) {
  return <T>(step: () => Promise<T> | T): Promise<T> =>
    Promise.resolve()
      .then(step)
      .catch((e: unknown) => {
        throw renameParam(e, rename);
      });
}

function renameParam(e: unknown, rename: (param: string) => string): unknown {
  if (!(e instanceof ApiError) || e.param === null) return e;
  const param = rename(e.param);
  if (param === e.param) return e;
  // (invalidField's messages start with the field's path)
  const message = e.message.startsWith(`${e.param}:`)
    ? `${param}${e.message.slice(e.param.length)}`
    : e.message;
  return new ApiError(e.status, message, e.type, param, e.code, e.headers, e.fields);
}

/** `POST /v1/chat/completions`, `/v1/completions`, llama-server's `/completion` and its text endpoints. */
export function registerChatRoutes(
  app: FastifyInstance,
  s: ServerState,
  reasoning: ReasoningSettings = REASONING_DEFAULTS,
): void {
  const retryAfterS = 1;
  const deps = () => ({
    model: s.model,
    modelId: s.modelId,
    batcher: s.batcher,
    ...(s.timeoutMs !== undefined ? { timeoutMs: s.timeoutMs } : {}),
    retryAfterS,
    onQueueFull: () => s.metrics?.rejected(),
    limits: s.limits,
    sampling: s.sampling,
    nPredict: s.nPredict,
    verbose: s.verbose,
  });

  /** The texts of the model's BOS and EOS tokens, as templates print them ("" when it has none). */
  function templateTokens(): { bos: string; eos: string } {
    const { tokenizer } = s.model;
    const tokenText = (id: number | undefined) => (id === undefined ? "" : tokenizer.tokenText(id));
    return { bos: tokenText(tokenizer.vocab.special.bos), eos: tokenText(tokenizer.vocab.special.eos) };
  }

  /**
   * How a request's tools are written and read: in the template's own format, or, for a template with
   * none, in llama.cpp's generic JSON format — the conversation then rewritten for it (the answer format
   * and, where the template cannot show them, the tools, earlier calls and results, as text), and calls
   * parallel only where the template can show several.
   */
  function toolSetup(
    p: ParsedChat,
    t: ToolsRequest | undefined,
  ): { format: CallFormat | undefined; messages: ParsedMessage[]; parallel: boolean } {
    const template = s.template();
    if (!t || !template) return { format: undefined, messages: p.messages, parallel: false };
    const native = toolFormatOf(template.source);
    if (native) return { format: native, messages: p.messages, parallel: t.parallel };
    const caps = templateCaps(template, templateTokens());
    return {
      format: "generic",
      messages: genericMessages(p.messages, caps, t.templateTools),
      parallel: t.parallel && caps.parallelToolCalls,
    };
  }

  async function renderChat(
    messages: ParsedMessage[],
    kwargs: Record<string, unknown> = {},
    tools?: unknown[],
    turn: { addGenerationPrompt?: boolean; prefill?: string | undefined } = {},
  ): Promise<{ text: string; addSpecial: boolean; beforePrefill: string }> {
    const template = s.template();
    if (!template)
      throw new ApiError(
        400,
        `the model ${s.modelId} has no chat template; use /v1/completions or start the server with a chat template file`,
        "invalid_request_error",
        "messages",
        "no_chat_template",
      );
    const { bos, eos } = templateTokens();
    let text: string;
    try {
      text = await s.renderer.render(template, {
        messages,
        ...(tools ? { tools } : {}),
        addGenerationPrompt: turn.addGenerationPrompt ?? true,
        bosToken: bos,
        eosToken: eos,
        kwargs: { ...s.templateKwargs, ...kwargs },
      });
    } catch (e) {
      if (e instanceof ServerError) throw e;
      throw new ApiError(
        400,
        `the chat template refused the messages: ${(e as Error).message}`,
        "invalid_request_error",
        "messages",
      );
    }
    // A continued assistant message: its text after the generation prompt, the completion goes on from it.
    const beforePrefill = text;
    if (turn.prefill !== undefined) text += turn.prefill;
    return { text, addSpecial: !(bos !== "" && text.startsWith(bos)), beforePrefill };
  }

  /**
   * The chat job: tools rendered by the template, calls parsed from its format (forced by grammar when
   * tool_choice asks), the think block split off as the reasoning format says, and its budget.
   */
  async function chatJob(p: ParsedChat, o: { reasoningBudget?: number } = {}): Promise<CompletionJob> {
    const t = p.tools && p.tools.choice !== "none" ? p.tools : undefined;
    const turn = { addGenerationPrompt: p.addGenerationPrompt, prefill: p.prefill };
    const template = s.template();
    const { format, messages, parallel } = toolSetup(p, t);
    const rendered = await renderChat(messages, p.templateKwargs, t?.templateTools, turn);
    const prompt = { text: rendered.text, addSpecial: rendered.addSpecial };
    // Thinking: the template's tags, and whether its generation prompt opened the block.
    const rf = p.reasoningFormat ?? reasoning.format;
    const tags = template ? thinkTagsOf(template.source) : undefined;
    const open = tags !== undefined && promptOpensThink(rendered.beforePrefill, tags);
    const generic = format === "generic";
    if (t && (t.choice !== "auto" || generic)) checkSchemaSize(t.tools, "tools", s.limits);
    const kwargs = { ...s.templateKwargs, ...p.templateKwargs };
    const think = thinkBeforeCalls(rf, tags, open, kwargs);
    // The generic format's answer is JSON whatever tool_choice says (so even `auto` has a grammar); a
    // response_format schema there becomes the schema of its reply (llama.cpp's), not a second grammar.
    const asked = p.responseFormat;
    const reply =
      generic && t?.choice === "auto" && asked.type !== "text"
        ? asked.type === "json_schema"
          ? { schema: asked.schema, param: asked.param ?? "response_format.json_schema.schema" }
          : { schema: { type: "object" }, param: "response_format" }
        : undefined;
    const gbnf = !t
      ? undefined
      : format === "generic"
        ? genericToolGrammar(t, {
            parallel,
            ...(reply ? { response: reply } : {}),
            ...(think ? { reasoning: think } : {}),
          })
        : toolCallGrammar(t, format!, think);
    const parser = chatOutput({
      format: rf,
      tags,
      open,
      stream: p.stream,
      prefill: p.prefill,
      ends: reasoningEndMarkers(format),
      ...(t ? { tools: () => new ToolCallParser(format!, t.tools, { parallel }) } : {}),
    });
    const preserve = preservedTokens(s.model.tokenizer, [
      ...(t && format !== "generic" ? TOOL_MARKERS[format!] : []),
      ...(tags ? [tags.start, tags.end] : []),
    ]);
    const budget = o.reasoningBudget ?? reasoning.budget;
    return {
      kind: "chat",
      prompt,
      p: reply ? { ...p, responseFormat: { type: "text" } } : p,
      ...(preserve ? { preserve } : {}),
      ...(gbnf !== undefined ? { toolGrammar: { gbnf, param: generic ? "tools" : "tool_choice" } } : {}),
      ...(parser ? { parser } : {}),
      ...(tags && budget >= 0
        ? {
            reasoningBudget: {
              start: tags.start,
              end: tags.end,
              tokens: budget,
              message: reasoning.budgetMessage,
              open,
            },
          }
        : {}),
    };
  }

  /** How requests are read: strictApi, and text keys of logit_bias in the model's tokens. */
  const parseOptions = (): ParseOptions => ({
    strictApi: s.strictApi,
    contextShift: s.contextShift,
    tokenize: (text) => s.model.tokenizer.encode(text, { addSpecial: false, parseSpecial: false }),
  });

  /** Fields a request gave that the server ignores: a response header and a log line name them. */
  function reportIgnored(request: FastifyRequest, reply: FastifyReply, ignored: string[]): void {
    if (ignored.length === 0) return;
    const names = ignored.map((f) => f.replace(/[^\x20-\x7e]/g, "?").slice(0, 64)).slice(0, 32);
    reply.header(IGNORED_FIELDS_HEADER, names.join(", "));
    request.log.warn({ ignored: names }, `ignored request fields: ${names.join(", ")}`);
  }

  // The prompt a chat request renders (its template fields; tools rendered as the template shows them).
  const applyTemplate = async (body: unknown): Promise<string> => {
    const p = parseChat(body, s.model.hparams.nVocab, parseOptions());
    const turn = { addGenerationPrompt: p.addGenerationPrompt, prefill: p.prefill };
    const t = p.tools && p.tools.choice !== "none" ? p.tools : undefined;
    return (await renderChat(toolSetup(p, t).messages, p.templateKwargs, t?.templateTools, turn)).text;
  };
  registerTextRoutes(app, () => s.model, applyTemplate, s.limits);

  const pipeline: ChatPipeline = {
    get strictApi() {
      return s.strictApi;
    },
    get modelId() {
      return s.modelId;
    },
    parse: (body, o) => parseChat(body, s.model.hparams.nVocab, { ...parseOptions(), ...o }),
    job: chatJob,
    run: (request, reply, job) => runCompletion(deps(), request, reply, job),
    countTokens: async (job) =>
      (
        await tokenizePrompt(
          s.model.tokenizer,
          job.prompt.text,
          { param: "messages", addSpecial: job.prompt.addSpecial, parseSpecial: true },
          s.limits,
        )
      ).length,
    reportIgnored,
  };
  registerResponsesRoutes(app, pipeline);
  registerAnthropicRoutes(app, pipeline);

  // (chat also without the /v1 prefix, as llama-server serves it; its /completions and
  // /completion are its own format, below)
  for (const path of ["/v1/chat/completions", "/chat/completions"])
    app.post(path, async (request, reply) => {
      const p = parseChat(request.body, s.model.hparams.nVocab, parseOptions());
      reportIgnored(request, reply, p.ignored);
      return runCompletion(deps(), request, reply, await chatJob(p));
    });
  // The prompt tokens a chat request would take (llama-server's count, before any cache reuse).
  for (const path of ["/v1/chat/completions/input_tokens", "/chat/completions/input_tokens"])
    app.post(path, async (request, reply) => {
      const p = parseChat(request.body, s.model.hparams.nVocab, parseOptions());
      reportIgnored(request, reply, p.ignored);
      return { input_tokens: await pipeline.countTokens(await chatJob(p)) };
    });

  /** A native prompt as the job's: a text, or its token ids with each text part tokenized. */
  const nativePrompt = async (np: NativePrompt): Promise<CompletionJob["prompt"]> => {
    if ("text" in np) return { text: np.text, addSpecial: true };
    const ids: number[] = [];
    for (const part of np.parts)
      if (typeof part === "number") ids.push(part);
      else
        ids.push(
          ...(await tokenizePrompt(
            s.model.tokenizer,
            part,
            { param: "prompt", addSpecial: false, parseSpecial: true },
            s.limits,
          )),
        );
    return { text: "", addSpecial: false, ids };
  };

  // llama-server's own completion format (native-format.ts); several prompts: an array of results
  for (const path of ["/completion", "/completions"])
    app.post(path, async (request, reply) => {
      const p = parseNative(request.body, s.model.hparams.nVocab, parseOptions());
      reportIgnored(request, reply, p.ignored);
      const answer = async (np: NativePrompt, index: number) => {
        const out = await runCompletion(deps(), request, reply, {
          kind: "native",
          prompt: await nativePrompt(np),
          p,
          returnTokens: p.returnTokens,
          postSampling: p.postSampling,
        });
        if (out === undefined || typeof out !== "object") return out;
        const fields = p.responseFields;
        const r = { ...(out as Record<string, unknown>), index };
        return fields ? pickFields(r, fields) : r;
      };
      if (p.prompts.length === 1) return answer(p.prompts[0]!, 0);
      return Promise.all(p.prompts.map(answer));
    });
  app.post("/v1/completions", async (request, reply) => {
    const p = parseCompletion(request.body, s.model.hparams.nVocab, parseOptions());
    reportIgnored(request, reply, p.ignored);
    return runCompletion(deps(), request, reply, {
      kind: "completion",
      prompt: { text: p.prompt, addSpecial: true },
      p,
    });
  });
}
