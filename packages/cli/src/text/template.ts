import { readFile } from "node:fs/promises";
import { ChatTemplate, chatTemplatesFromMetadata } from "@minfer/tokenizer";
import { expectPositionals, type OptionSpec, parseArgs } from "../args.js";
import { CliError } from "../errors.js";
import { loadTokenizer } from "./load-tokenizer.js";

export const templateOptions: OptionSpec[] = [
  {
    flags: ["-m", "--model"],
    kind: "string",
    metavar: "FILE",
    help: "GGUF whose chat template and BOS/EOS to use",
  },
  { flags: ["--messages"], kind: "string", metavar: "MESSAGES.json", help: "an OpenAI-style messages array" },
  { flags: ["--tools"], kind: "string", metavar: "TOOLS.json", help: "an OpenAI-style tools array" },
  { flags: ["--no-generation-prompt"], kind: "boolean", help: "do not end with the assistant's turn header" },
  {
    flags: ["--kwargs"],
    kind: "string",
    metavar: "JSON",
    help: 'extra template variables, e.g. {"enable_thinking": false}',
  },
  {
    flags: ["--chat-template-file"],
    kind: "string",
    metavar: "F",
    help: "use this Jinja template instead of the model's",
  },
  {
    flags: ["--chat-template-name"],
    kind: "string",
    metavar: "NAME",
    help: "a named template of the model (tokenizer.chat_template.NAME)",
  },
];

async function readJson(path: string, what: string): Promise<unknown> {
  const text = await readFile(path, "utf8");
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new CliError("INVALID_ARGUMENT", `${what} ${path} is not valid JSON: ${(e as Error).message}`);
  }
}

export async function templateCommand(argv: string[]): Promise<number> {
  const { options, positionals } = parseArgs(argv, templateOptions);
  expectPositionals(positionals, []);
  if (options.model === undefined) throw new CliError("MISSING_ARGUMENT", "-m FILE is required");
  if (options.messages === undefined)
    throw new CliError("MISSING_ARGUMENT", "--messages MESSAGES.json is required");
  const messages = await readJson(options.messages as string, "--messages");
  if (!Array.isArray(messages))
    throw new CliError("INVALID_ARGUMENT", "--messages must hold a JSON array of messages");
  const tools = options.tools !== undefined ? await readJson(options.tools as string, "--tools") : undefined;
  if (tools !== undefined && !Array.isArray(tools))
    throw new CliError("INVALID_ARGUMENT", "--tools must hold a JSON array");
  let kwargs: Record<string, unknown> | undefined;
  if (options.kwargs !== undefined) {
    try {
      kwargs = JSON.parse(options.kwargs as string);
    } catch (e) {
      throw new CliError("INVALID_ARGUMENT", `--kwargs is not valid JSON: ${(e as Error).message}`);
    }
    if (typeof kwargs !== "object" || kwargs === null || Array.isArray(kwargs)) {
      throw new CliError("INVALID_ARGUMENT", "--kwargs must be a JSON object");
    }
  }
  const { tokenizer, metadata } = await loadTokenizer(options.model as string);
  let source: string;
  let name: string;
  if (options.chatTemplateFile !== undefined) {
    source = await readFile(options.chatTemplateFile as string, "utf8");
    name = options.chatTemplateFile as string;
  } else {
    const templates = chatTemplatesFromMetadata(metadata);
    name = (options.chatTemplateName as string | undefined) ?? "default";
    const found = templates.get(name);
    if (found === undefined) {
      const have = [...templates.keys()];
      throw new CliError(
        "INVALID_ARGUMENT",
        have.length === 0
          ? `${options.model} has no chat template (tokenizer.chat_template); give one with --chat-template-file`
          : `${options.model} has no chat template named "${name}"; it has: ${have.join(", ")}`,
      );
    }
    source = found;
  }
  const template = ChatTemplate.parse(source, name);
  const text = (id: number | undefined) => (id === undefined ? "" : tokenizer.tokenText(id));
  const prompt = template.render({
    messages,
    tools,
    addGenerationPrompt: !options.noGenerationPrompt,
    bosToken: text(tokenizer.vocab.special.bos),
    eosToken: text(tokenizer.vocab.special.eos),
    kwargs,
  });
  process.stdout.write(prompt);
  return 0;
}
