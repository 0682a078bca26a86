// The pre-tokenizer of a byte-level BPE tokenizer.json, recognised by its structure and split
// regex, and the `tokenizer.ggml.pre` name llama.cpp (and @minfer/tokenizer) gives it.
//
// llama.cpp's converter names a pre-tokenizer by hashing the token ids of a test string, so models
// with the same split rule but different vocabularies get different names (Llama 3 `llama-bpe`,
// DBRX and OLMo 2 `dbrx`, GLM-4 `glm4`); the names of one rule split text identically. The rule is
// recognised here, and the architecture picks among its names.
import { PRE_TOKENIZERS } from "@minfer/tokenizer";
import { ConvertError } from "./errors.js";

const CONTRACTIONS_I = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
const TAIL = " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const UPPER = "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]";
const LOWER = "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]";

/** A split rule and the `tokenizer.ggml.pre` names that implement it (the first is the default). */
interface Rule {
  rule: string;
  names: readonly string[];
}

/** Split regexes exactly as Hugging Face writes them in tokenizer.json. */
export const KNOWN_SPLITS: Record<string, Rule> = {
  [`${CONTRACTIONS_I}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|${TAIL}`]: {
    rule: "llama3 (cl100k)",
    names: ["llama-bpe", "dbrx", "smaug-bpe", "glm4"],
  },
  [`${CONTRACTIONS_I}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}|${TAIL}`]: { rule: "qwen2", names: ["qwen2"] },
  "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+": {
    rule: "gpt-2",
    names: ["gpt-2"],
  },
  [`[^\\r\\n\\p{L}\\p{N}]?${UPPER}*${LOWER}+${CONTRACTIONS_I}?|[^\\r\\n\\p{L}\\p{N}]?${UPPER}+${LOWER}*${CONTRACTIONS_I}?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`]:
    { rule: "o200k", names: ["gpt-4o"] },
};

/** ByteLevel with its own (GPT-2) regex, alone. */
const GPT2_RULE: Rule = { rule: "gpt-2", names: ["gpt-2", "olmo", "mpt"] };
/** Digits (one at a time), then ByteLevel with the GPT-2 regex (StarCoder, Refact, Granite). */
const DIGITS_GPT2_RULE: Rule = {
  rule: "digits + gpt-2",
  names: ["starcoder", "refact", "command-r", "smollm"],
};

interface Step {
  type?: string;
  pattern?: { Regex?: string; String?: string };
  use_regex?: boolean;
  individual_digits?: boolean;
  pretokenizers?: Step[];
}

function rule(path: string, pre: Step | null | undefined): Rule {
  const parts = !pre ? [] : pre.type === "Sequence" ? (pre.pretokenizers ?? []) : [pre];
  const splits = parts.filter((p) => p.type === "Split");
  const digits = parts.filter((p) => p.type === "Digits");
  const byteLevel = parts.find((p) => p.type === "ByteLevel");
  const rest = parts.filter((p) => !["Split", "ByteLevel", "Digits"].includes(p.type ?? ""));
  if (!byteLevel)
    throw new ConvertError(
      "UNSUPPORTED_TOKENIZER",
      `${path}: pre_tokenizer ${JSON.stringify(pre?.type ?? null)} has no ByteLevel step; only byte-level BPE is supported`,
    );
  if (rest.length)
    throw new ConvertError(
      "UNKNOWN_PRE_TOKENIZER",
      `${path}: pre-tokenizer step(s) ${rest.map((p) => p.type).join(", ")} are not supported`,
    );
  const regexOn = byteLevel.use_regex !== false;
  if (splits.length === 0 && digits.length === 0 && regexOn) return GPT2_RULE;
  if (splits.length === 0 && digits.length === 1 && regexOn && digits[0]!.individual_digits === true)
    return DIGITS_GPT2_RULE;
  if (splits.length === 1 && digits.length === 0 && !regexOn) {
    const regex = splits[0]!.pattern?.Regex;
    const known = regex !== undefined ? KNOWN_SPLITS[regex] : undefined;
    if (known) return known;
    throw new ConvertError(
      "UNKNOWN_PRE_TOKENIZER",
      `${path}: the pre-tokenizer's split pattern ${JSON.stringify(splits[0]!.pattern)} is not one minfer knows (known: ${Object.values(
        KNOWN_SPLITS,
      )
        .map((r) => r.rule)
        .join(", ")})`,
    );
  }
  throw new ConvertError(
    "UNKNOWN_PRE_TOKENIZER",
    `${path}: a pre-tokenizer of ${splits.length} Split and ${digits.length} Digits step(s) with ByteLevel use_regex ${byteLevel.use_regex} is not one minfer knows`,
  );
}

/**
 * The `tokenizer.ggml.pre` name of a tokenizer.json pre-tokenizer: of the names of its split rule,
 * the first that the architecture prefers (`prefer`), else the rule's default. One that minfer
 * does not know is refused with it.
 */
export function identifyPreTokenizer(
  path: string,
  pre: Step | null | undefined,
  prefer: readonly string[] = [],
): string {
  const r = rule(path, pre);
  const name = prefer.find((n) => r.names.includes(n)) ?? r.names[0]!;
  if (!PRE_TOKENIZERS.includes(name))
    throw new ConvertError(
      "UNKNOWN_PRE_TOKENIZER",
      `${path}: pre-tokenizer ${name} (${r.rule}) is not implemented by @minfer/tokenizer`,
    );
  return name;
}
