import { ApiError, invalidField } from "./errors.js";
import { quote } from "./quote.js";

// The fields of llama-server's `POST /infill` that `/completion` does not have. The rest of the body
// (sampling, stream, n_predict, …) is read by the native completion parser, as llama-server does.

const bad = invalidField;

/** input_prefix / input_suffix: a text, or token ids mixed with texts (llama-server's forms). */
export type InfillText = string | readonly (number | string)[];

/** One `input_extra` chunk: another file's text and its name ("tmp" when not given, as llama-server). */
export interface InfillExtra {
  readonly filename: string;
  readonly text: string;
}

export interface ParsedInfill {
  readonly prefix: InfillText;
  readonly suffix: InfillText;
  /** `prompt` ("" when not given): text placed after the prefix (special tokens in it are read). */
  readonly prompt: string;
  readonly extra: readonly InfillExtra[];
  /** The body without the infill fields and with an empty prompt, for the native completion parser. */
  readonly rest: Record<string, unknown>;
  /** Keys of extra chunks the server does not use (`input_extra[0].x`), as ignored fields are reported. */
  readonly ignored: string[];
}

/** The fields only `/infill` reads. */
export const INFILL_FIELDS = ["input_prefix", "input_suffix", "input_extra", "prompt"] as const;

/** Most chunks one request's input_extra may hold. */
export const MAX_INFILL_EXTRA = 1024;

const CHUNK_KEYS = new Set(["filename", "text"]);

function infillText(v: unknown, key: string, nVocab: number): InfillText {
  if (v === undefined || v === null) throw bad(key, "is required", "missing_required_parameter");
  if (typeof v === "string") return v;
  if (!Array.isArray(v))
    throw bad(key, `must be a string or an array of token ids and strings, got ${quote(v)}`);
  v.forEach((t, i) => {
    if (typeof t === "string") return;
    if (typeof t !== "number" || !Number.isInteger(t) || t < 0 || t >= nVocab)
      throw bad(`${key}[${i}]`, `must be a token id in [0, ${nVocab}) or a string, got ${quote(t)}`);
  });
  return v as (number | string)[];
}

function extraChunks(v: unknown, strictApi: boolean, ignored: string[]): InfillExtra[] {
  if (v === undefined || v === null) return [];
  const shape = 'must be an array of {"filename": string, "text": string} objects';
  if (!Array.isArray(v)) throw bad("input_extra", `${shape}, got ${quote(v)}`);
  if (v.length > MAX_INFILL_EXTRA)
    throw bad("input_extra", `at most ${MAX_INFILL_EXTRA} chunks, got ${v.length}`);
  return v.map((c, i) => {
    const where = `input_extra[${i}]`;
    if (typeof c !== "object" || c === null || Array.isArray(c))
      throw bad(where, `must be a {"filename": string, "text": string} object, got ${quote(c)}`);
    const chunk = c as Record<string, unknown>;
    if (typeof chunk.text !== "string")
      throw bad(
        `${where}.text`,
        chunk.text === undefined ? "is required (a string)" : `must be a string, got ${quote(chunk.text)}`,
        chunk.text === undefined ? "missing_required_parameter" : "invalid_value",
      );
    const name = chunk.filename;
    if (name !== undefined && name !== null && typeof name !== "string")
      throw bad(`${where}.filename`, `must be a string, got ${quote(name)}`);
    for (const k of Object.keys(chunk))
      if (!CHUNK_KEYS.has(k)) {
        if (strictApi) throw bad(`${where}.${k}`, "unknown field (--strict-api)", "unknown_parameter");
        ignored.push(`${where}.${k}`);
      }
    return { filename: typeof name === "string" ? name : "tmp", text: chunk.text };
  });
}

/**
 * Reads `/infill`'s own fields: `input_prefix` and `input_suffix` (required), `input_extra`
 * (optional chunks, each checked), `prompt` (optional text). Every problem is a 400 naming the field.
 */
export function parseInfill(raw: unknown, nVocab: number, strictApi = false): ParsedInfill {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    throw new ApiError(
      400,
      "the request body must be a JSON object",
      "invalid_request_error",
      null,
      "invalid_body",
    );
  const body = raw as Record<string, unknown>;
  const prefix = infillText(body.input_prefix, "input_prefix", nVocab);
  const suffix = infillText(body.input_suffix, "input_suffix", nVocab);
  const p = body.prompt;
  if (p !== undefined && p !== null && typeof p !== "string")
    throw bad("prompt", `must be a string (the text after the prefix), got ${quote(p)}`);
  const ignored: string[] = [];
  const extra = extraChunks(body.input_extra, strictApi, ignored);
  // (fromEntries defines each key as an own field: a "__proto__" key stays a field, and is refused as one)
  const rest: Record<string, unknown> = Object.fromEntries(
    Object.entries(body).filter(([k]) => !(INFILL_FIELDS as readonly string[]).includes(k)),
  );
  rest.prompt = "";
  return { prefix, suffix, prompt: typeof p === "string" ? p : "", extra, rest, ignored };
}
