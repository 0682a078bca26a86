import { readFile } from "node:fs/promises";
import type { Model } from "@minfer/engine";
import { Grammar, jsonSchemaToGbnf, Sampler, SamplerError, type SamplerOptions } from "@minfer/sampler";
import type { OptionSpec, ParsedOptions } from "../args.js";
import { CliError } from "../errors.js";

/** The sampler chain's flags, spelled as llama.cpp spells them (defaults are llama.cpp's). */
export const chainOptions: OptionSpec[] = [
  { flags: ["--min-p"], kind: "number", metavar: "P", help: "min-p cut in [0, 1]; 0 = off (default: 0.05)" },
  {
    flags: ["--typical"],
    kind: "number",
    metavar: "P",
    help: "locally typical sampling in (0, 1]; 1 = off (default)",
  },
  {
    flags: ["--top-n-sigma"],
    kind: "number",
    metavar: "N",
    help: "keep logits ≥ max − N·σ; ≤ 0 = off (default: -1)",
  },
  {
    flags: ["--xtc-probability"],
    kind: "number",
    metavar: "P",
    help: "XTC: chance of excluding the top choices (default: 0)",
  },
  {
    flags: ["--xtc-threshold"],
    kind: "number",
    metavar: "P",
    help: "XTC: probability a top choice needs (default: 0.1)",
  },
  {
    flags: ["--repeat-penalty"],
    kind: "number",
    metavar: "X",
    help: "repetition penalty; 1 = off (default)",
  },
  {
    flags: ["--repeat-last-n"],
    kind: "integer",
    metavar: "N",
    help: "tokens the penalties look at; 0 = off, -1 = all (default: 64)",
  },
  { flags: ["--presence-penalty"], kind: "number", metavar: "X", help: "presence penalty (default: 0)" },
  { flags: ["--frequency-penalty"], kind: "number", metavar: "X", help: "frequency penalty (default: 0)" },
  { flags: ["--dry-multiplier"], kind: "number", metavar: "X", help: "DRY multiplier; 0 = off (default)" },
  { flags: ["--dry-base"], kind: "number", metavar: "X", help: "DRY base (default: 1.75)" },
  {
    flags: ["--dry-allowed-length"],
    kind: "integer",
    metavar: "N",
    help: "DRY: repeats this long are free (default: 2)",
  },
  {
    flags: ["--dry-penalty-last-n"],
    kind: "integer",
    metavar: "N",
    help: "DRY window; -1 = all, 0 = off (default: -1)",
  },
  {
    flags: ["--mirostat"],
    kind: "integer",
    metavar: "N",
    help: "mirostat 1 or 2 instead of the cuts; 0 = off (default)",
  },
  { flags: ["--mirostat-lr"], kind: "number", metavar: "ETA", help: "mirostat learning rate (default: 0.1)" },
  { flags: ["--mirostat-ent"], kind: "number", metavar: "TAU", help: "mirostat target entropy (default: 5)" },
  {
    flags: ["--logit-bias"],
    kind: "string",
    metavar: "ID(+|-)BIAS",
    repeat: true,
    help: "add BIAS to token ID's logit, e.g. 15043+1 or 15043-inf to ban it (repeatable)",
  },
  {
    flags: ["--grammar"],
    kind: "string",
    metavar: "GBNF",
    help: "constrain the output to this GBNF grammar",
  },
  {
    flags: ["--grammar-file"],
    kind: "string",
    metavar: "F",
    help: "constrain the output to the GBNF grammar in F",
  },
  {
    flags: ["-j", "--json-schema"],
    kind: "string",
    metavar: "SCHEMA",
    help: "constrain the output to JSON valid under this JSON Schema (inline, or @FILE)",
  },
];

/** SamplerOptions field → the flag that sets it (for error messages). */
const FLAG_OF: Record<string, string> = {
  temperature: "--temp",
  topK: "--top-k",
  topP: "--top-p",
  minP: "--min-p",
  typicalP: "--typical",
  topNSigma: "--top-n-sigma",
  xtcProbability: "--xtc-probability",
  xtcThreshold: "--xtc-threshold",
  repeatPenalty: "--repeat-penalty",
  repeatLastN: "--repeat-last-n",
  presencePenalty: "--presence-penalty",
  frequencyPenalty: "--frequency-penalty",
  dryMultiplier: "--dry-multiplier",
  dryBase: "--dry-base",
  dryAllowedLength: "--dry-allowed-length",
  dryPenaltyLastN: "--dry-penalty-last-n",
  mirostat: "--mirostat",
  mirostatEta: "--mirostat-lr",
  mirostatTau: "--mirostat-ent",
  logitBias: "--logit-bias",
  seed: "--seed",
};

/** `15043+1`, `15043-0.5`, `15043-inf` (llama.cpp's spelling) → [id, bias]. */
export function parseLogitBias(spec: string, nVocab: number): [number, number] {
  const m = /^(\d+)([+-])(inf|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)$/i.exec(spec.trim());
  if (!m)
    throw new CliError(
      "INVALID_ARGUMENT",
      `--logit-bias expects ID+BIAS or ID-BIAS (e.g. 15043+1, 15043-inf), got "${spec}"`,
    );
  const id = Number(m[1]);
  if (id >= nVocab)
    throw new CliError(
      "INVALID_ARGUMENT",
      `--logit-bias: token ${id} is outside the vocabulary of ${nVocab}`,
    );
  const size = m[3]!.toLowerCase() === "inf" ? Number.POSITIVE_INFINITY : Number(m[3]);
  return [id, m[2] === "-" ? -size : size];
}

/** The GBNF text of --grammar, --grammar-file or --json-schema (at most one), if any. */
async function grammarText(options: ParsedOptions): Promise<string | undefined> {
  const given = ["grammar", "grammarFile", "jsonSchema"].filter((k) => options[k] !== undefined);
  if (given.length > 1)
    throw new CliError("INVALID_ARGUMENT", "give at most one of --grammar, --grammar-file and --json-schema");
  if (options.grammar !== undefined) return options.grammar as string;
  if (options.grammarFile !== undefined) return readText(options.grammarFile as string, "--grammar-file");
  if (options.jsonSchema === undefined) return undefined;
  const raw = options.jsonSchema as string;
  const text = raw.startsWith("@") ? await readText(raw.slice(1), "--json-schema") : raw;
  let schema: unknown;
  try {
    schema = JSON.parse(text);
  } catch (e) {
    throw new CliError("INVALID_ARGUMENT", `--json-schema is not valid JSON: ${(e as Error).message}`);
  }
  return jsonSchemaToGbnf(schema);
}

async function readText(path: string, flag: string): Promise<string> {
  try {
    return await readFile(path, "utf8");
  } catch (e) {
    throw new CliError(
      "INVALID_ARGUMENT",
      `${flag}: cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? e})`,
    );
  }
}

/**
 * The chain's flags over `basic` (the basic options, already checked) as sampler options: no
 * logit bias, grammar or vocabulary. Checked by the sampler's own rules, reported with the flag's
 * name.
 */
export function chainSettings(options: ParsedOptions, basic: SamplerOptions): SamplerOptions {
  const o = options as Record<string, unknown>;
  const num = (k: string) => (o[k] === undefined ? {} : { [k]: o[k] as number });
  const mirostat = o.mirostat as number | undefined;
  if (mirostat !== undefined && mirostat !== 0 && mirostat !== 1 && mirostat !== 2)
    throw new CliError("INVALID_ARGUMENT", `--mirostat must be 0, 1 or 2, got ${mirostat}`);
  const settings: SamplerOptions = {
    ...basic,
    ...num("minP"),
    ...(o.typical !== undefined ? { typicalP: o.typical as number } : {}),
    ...num("topNSigma"),
    ...num("xtcProbability"),
    ...num("xtcThreshold"),
    ...num("repeatPenalty"),
    ...num("repeatLastN"),
    ...num("presencePenalty"),
    ...num("frequencyPenalty"),
    ...num("dryMultiplier"),
    ...num("dryBase"),
    ...num("dryAllowedLength"),
    ...num("dryPenaltyLastN"),
    ...(mirostat !== undefined ? { mirostat: mirostat as 0 | 1 | 2 } : {}),
    ...(o.mirostatLr !== undefined ? { mirostatEta: o.mirostatLr as number } : {}),
    ...(o.mirostatEnt !== undefined ? { mirostatTau: o.mirostatEnt as number } : {}),
  };
  withFlagNames(() => new Sampler(settings));
  return settings;
}

/** Runs f, reporting a SamplerError about an option with that option's flag. */
function withFlagNames<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    const arg = (e as { argument?: string }).argument;
    if (e instanceof SamplerError && arg !== undefined && FLAG_OF[arg])
      throw new CliError("INVALID_ARGUMENT", `${FLAG_OF[arg]}: ${e.message}`);
    throw e;
  }
}

/**
 * The sampler of `run` and `chat`: the basic options (already checked), the chain's flags, and a
 * grammar or JSON Schema constraint over the model's vocabulary. The sampler's own checks name the
 * option; they are reported with the flag's name.
 */
export async function makeSampler(
  options: ParsedOptions,
  basic: SamplerOptions,
  model: Model,
): Promise<Sampler> {
  const o = options as Record<string, unknown>;
  const bias = ((o.logitBias as string[] | undefined) ?? []).map((s) =>
    parseLogitBias(s, model.hparams.nVocab),
  );
  const settings = chainSettings(options, basic);
  const gbnf = await grammarText(options);
  const constraint = gbnf === undefined ? undefined : Grammar.parse(gbnf).constraint(model.tokenizer);
  return withFlagNames(
    () =>
      new Sampler({
        ...settings,
        ...(bias.length > 0 ? { logitBias: new Map(bias) } : {}),
        vocab: model.tokenizer,
        ...(constraint ? { constraint } : {}),
      }),
  );
}
