import { readFile } from "node:fs/promises";
import { createInterface } from "node:readline";
import { type Context, EngineError, generate, type Model } from "@minfer/engine";
import type { Sampler } from "@minfer/sampler";
import { type ChatMessage, ChatTemplate } from "@minfer/tokenizer";
import { expectPositionals, type OptionSpec, parseArgs } from "../args.js";
import { CliError } from "../errors.js";
import { describeContext, loadModel, newContext } from "./load.js";
import {
  check,
  contextOptions,
  modelOption,
  modelPath,
  runSettings,
  samplerSettings,
  samplingOptions,
} from "./options.js";
import { chainOptions, makeSampler } from "./sampling.js";
import { onInterrupt } from "./signal.js";
import { timingSummary } from "./timings.js";

export const chatOptions: OptionSpec[] = [
  modelOption,
  { flags: ["--system"], kind: "string", metavar: "TEXT", help: "the system message" },
  {
    flags: ["--chat-template-file"],
    kind: "string",
    metavar: "F",
    help: "use this Jinja template instead of the model's",
  },
  {
    flags: ["-n", "--n-predict"],
    kind: "integer",
    metavar: "N",
    help: "most tokens per reply; -1 = until end of generation (default: -1)",
  },
  ...samplingOptions,
  ...chainOptions,
  ...contextOptions,
  {
    flags: ["--verbose"],
    kind: "boolean",
    help: "print diagnostics and, per turn, the reused and prefilled prompt tokens to stderr",
  },
];

async function chatTemplate(model: Model, file: string | undefined): Promise<ChatTemplate> {
  if (file !== undefined) return ChatTemplate.parse(await readFile(file, "utf8"), file);
  if (model.chatTemplate) return model.chatTemplate;
  throw new CliError(
    "INVALID_ARGUMENT",
    `${model.path} has no chat template (tokenizer.chat_template); give one with --chat-template-file F`,
  );
}

/** The prompt of the conversation so far, ending with the assistant's turn header. */
function render(
  template: ChatTemplate,
  model: Model,
  messages: ChatMessage[],
): { text: string; addSpecial: boolean } {
  const { tokenizer } = model;
  const tokenText = (id: number | undefined) => (id === undefined ? "" : tokenizer.tokenText(id));
  const bos = tokenText(tokenizer.vocab.special.bos);
  const text = template.render({
    messages,
    addGenerationPrompt: true,
    bosToken: bos,
    eosToken: tokenText(tokenizer.vocab.special.eos),
  });
  // A template that writes BOS itself must not get a second one from the tokenizer.
  return { text, addSpecial: !(bos !== "" && text.startsWith(bos)) };
}

/**
 * `minfer chat`: user lines from stdin (a terminal or a pipe), replies on stdout, one per line.
 * Each turn re-renders the whole conversation; the cached prefix is reused, so only the new
 * turn is prefilled. `/reset` starts over, `/exit` or end of input ends.
 */
export async function chatCommand(argv: string[]): Promise<number> {
  const { options, positionals } = parseArgs(argv, chatOptions);
  expectPositionals(positionals, []);
  const path = modelPath(options, true);
  const n = options.nPredict as number | undefined;
  if (n !== undefined) check(n >= -1, "-n", "-1 or an integer >= 0", n);
  const settings = runSettings(options);
  const basic = samplerSettings(options);
  const verbose = Boolean(options.verbose);
  const loaded = await loadModel(path, settings, verbose);
  let ctx: Context | undefined;
  try {
    const sampler = await makeSampler(options, basic, loaded.model);
    const template = await chatTemplate(loaded.model, options.chatTemplateFile as string | undefined);
    ctx = newContext(loaded.model, settings);
    if (verbose) process.stderr.write(`${describeContext(ctx)}\n`);
    return await converse(ctx, template, sampler, {
      system: options.system as string | undefined,
      maxTokens: n !== undefined && n >= 0 ? n : undefined,
      verbose,
    });
  } finally {
    ctx?.dispose();
    loaded.close();
  }
}

async function converse(
  ctx: Context,
  template: ChatTemplate,
  sampler: Sampler,
  o: { system: string | undefined; maxTokens: number | undefined; verbose: boolean },
): Promise<number> {
  const tty = Boolean(process.stdin.isTTY);
  const rl = createInterface({
    input: process.stdin,
    ...(tty ? { output: process.stderr, terminal: true } : { terminal: false }),
  });
  const start = (): ChatMessage[] => (o.system !== undefined ? [{ role: "system", content: o.system }] : []);
  let messages = start();
  let turn: AbortController | undefined;
  let interrupted = false;
  const interrupt = () => {
    if (turn) turn.abort();
    else {
      interrupted = true;
      rl.close();
    }
  };
  rl.on("SIGINT", interrupt);
  const stopListening = onInterrupt(interrupt);
  if (tty) {
    process.stderr.write("chat: /reset starts over, /exit or Ctrl+D ends\n");
    rl.setPrompt("> ");
    rl.prompt();
  }
  try {
    for await (const line of rl) {
      const input = line.trim();
      if (input === "/exit") break;
      if (input === "/reset") {
        messages = start();
        ctx.clear();
        if (tty) process.stderr.write("(conversation cleared)\n");
      } else if (input !== "") {
        messages.push({ role: "user", content: line });
        turn = new AbortController();
        const reply = await respond(ctx, template, sampler, messages, { ...o, signal: turn.signal });
        turn = undefined;
        if (reply === undefined) messages.pop();
        else messages.push({ role: "assistant", content: reply });
      }
      if (tty) rl.prompt();
    }
  } finally {
    stopListening();
    rl.close();
  }
  return interrupted ? 130 : 0;
}

/** One assistant reply: streamed to stdout; undefined when the conversation no longer fits. */
async function respond(
  ctx: Context,
  template: ChatTemplate,
  sampler: Sampler,
  messages: ChatMessage[],
  o: { maxTokens: number | undefined; verbose: boolean; signal: AbortSignal },
): Promise<string | undefined> {
  const prompt = render(template, ctx.model, messages);
  try {
    const g = generate(ctx, prompt.text, {
      sampler,
      addSpecial: prompt.addSpecial,
      ...(o.maxTokens !== undefined ? { maxTokens: o.maxTokens } : {}),
      signal: o.signal,
    });
    for await (const piece of g) if (piece.text) process.stdout.write(piece.text);
    process.stdout.write("\n");
    const t = g.timings!;
    if (o.verbose) {
      process.stderr.write(
        `turn: ${t.promptTokens} prompt tokens, ${t.reusedTokens} reused, ${t.promptTokens - t.reusedTokens} prefilled; ` +
          `${t.generatedTokens} generated (${g.finishReason})\n${timingSummary(t)}\n`,
      );
    }
    if (g.finishReason === "context")
      process.stderr.write(`minfer: the context is full (${ctx.nCtx} tokens); /reset to start over\n`);
    return g.text;
  } catch (e) {
    if (e instanceof EngineError && e.code === "NO_KV_ROOM") {
      process.stderr.write(
        `minfer: the conversation no longer fits the context (${ctx.nCtx} tokens); /reset to start over or raise -c\n`,
      );
      return undefined;
    }
    throw e;
  }
}
