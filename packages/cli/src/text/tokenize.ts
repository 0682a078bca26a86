import { readFile } from "node:fs/promises";
import { expectPositionals, type OptionSpec, parseArgs } from "../args.js";
import { CliError } from "../errors.js";
import { loadTokenizer } from "./load-tokenizer.js";

export const tokenizeOptions: OptionSpec[] = [
  {
    flags: ["-m", "--model"],
    kind: "string",
    metavar: "FILE",
    help: "GGUF whose tokenizer to use (a vocab-only GGUF is enough)",
  },
  { flags: ["-p", "--prompt"], kind: "string", metavar: "TEXT", help: "text to tokenize" },
  { flags: ["-f", "--file"], kind: "string", metavar: "TEXTFILE", help: "read the text from a file" },
  { flags: ["--ids"], kind: "boolean", help: "print only a JSON array of token ids on one line" },
  {
    flags: ["--no-special"],
    kind: "boolean",
    help: "add no BOS/EOS and treat special-token text as plain text",
  },
];

export async function tokenizeCommand(argv: string[]): Promise<number> {
  const { options, positionals } = parseArgs(argv, tokenizeOptions);
  expectPositionals(positionals, []);
  if (options.model === undefined) throw new CliError("MISSING_ARGUMENT", "-m FILE is required");
  if ((options.prompt === undefined) === (options.file === undefined)) {
    throw new CliError("MISSING_ARGUMENT", "give the text with exactly one of -p TEXT or -f TEXTFILE");
  }
  const text =
    options.prompt !== undefined
      ? (options.prompt as string)
      : await readFile(options.file as string, "utf8");
  const { tokenizer } = await loadTokenizer(options.model as string);
  const special = !options.noSpecial;
  const ids = await tokenizer.encodeAsync(text, { addSpecial: special, parseSpecial: special });
  if (options.ids) {
    process.stdout.write(`${JSON.stringify(ids)}\n`);
    return 0;
  }
  const lines = ids.map((id) => {
    const piece = new TextDecoder().decode(tokenizer.tokenBytes(id, { renderSpecial: true }));
    return `${String(id).padStart(6)} -> ${JSON.stringify(piece)}`;
  });
  process.stdout.write(`${lines.join("\n")}${lines.length ? "\n" : ""}`);
  return 0;
}
