import type { EmbedInput } from "@minfer/engine";
import type { Tokenizer } from "@minfer/tokenizer";
import { ApiError } from "./errors.js";
import type { ServerLimits } from "./limits.js";
import { tokenizePrompt } from "./prompt.js";

// The input of /v1/embeddings (`input`) and llama-server's /embedding (`content`), as llama-server
// reads it: a text; token ids; one prompt mixing texts and ids ([12, "text", 34]); or an array of
// such prompts. Texts get the model's special tokens (BERT's [CLS] … [SEP]) when they start their
// prompt; token ids are taken as they are.

/** Most prompts one request may hold. */
export const MAX_EMBED_INPUTS = 2048;

const bad = (param: string, message: string) =>
  new ApiError(400, message, "invalid_request_error", param, "invalid_input");

/** Whether `v` is one prompt (a text, or ids and texts mixed) rather than a list of prompts. */
function isOnePrompt(v: unknown[]): boolean {
  return v.some((x) => typeof x === "number");
}

/** The prompts of an embeddings request, each as token ids. */
export async function embeddingInputs(
  value: unknown,
  param: string,
  tokenizer: Tokenizer,
  nVocab: number,
  limits: ServerLimits,
): Promise<EmbedInput[]> {
  const prompts: unknown[] =
    typeof value === "string" ? [value] : Array.isArray(value) ? (isOnePrompt(value) ? [value] : value) : [];
  if (typeof value !== "string" && !Array.isArray(value))
    throw bad(param, `"${param}" must be a string, an array of token ids, or an array of those`);
  if (Array.isArray(value) && value.length === 0)
    throw bad(param, `"${param}" is empty; give at least one input`);
  if (prompts.length > MAX_EMBED_INPUTS)
    throw bad(
      param,
      `"${param}" has ${prompts.length} inputs; the server takes at most ${MAX_EMBED_INPUTS} in one request`,
    );
  const out: EmbedInput[] = [];
  for (let i = 0; i < prompts.length; i++) {
    const p = prompts[i];
    // (one prompt — a text, or ids and texts mixed — is named as the field itself)
    const where = typeof value === "string" || isOnePrompt(value as unknown[]) ? param : `${param}[${i}]`;
    const parts = typeof p === "string" ? [p] : Array.isArray(p) ? p : undefined;
    if (parts === undefined)
      throw bad(where, `${where} must be a string or an array of token ids and strings`);
    const ids: number[] = [];
    for (let j = 0; j < parts.length; j++) {
      const x = parts[j];
      if (typeof x === "number") {
        if (!Number.isInteger(x) || x < 0 || x >= nVocab)
          throw bad(where, `${where}: token ${j} is ${x}; token ids are integers in [0, ${nVocab})`);
        ids.push(x);
      } else if (typeof x === "string") {
        ids.push(
          ...(await tokenizePrompt(
            tokenizer,
            x,
            { param: where, addSpecial: j === 0, parseSpecial: true },
            limits,
          )),
        );
      } else throw bad(where, `${where}: element ${j} must be a token id or a string`);
    }
    if (ids.length === 0) throw bad(where, "Input content cannot be empty");
    out.push(ids);
  }
  return out;
}

/** An embedding as OpenAI's base64: the float32 values, little-endian. */
export function base64Floats(v: Float32Array): string {
  const b = Buffer.alloc(v.length * 4);
  for (let i = 0; i < v.length; i++) b.writeFloatLE(v[i]!, i * 4);
  return b.toString("base64");
}
