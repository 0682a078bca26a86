// The prompt of llama-server's `POST /infill`: the model's fill-in-the-middle (FIM) tokens around the
// code before and after the cursor, with extra context (other files) in front, cut to fit as
// llama-server cuts it (tools/server/server-common.cpp, format_prompt_infill).

export {
  FIM_ROLES,
  FIM_TEXTS,
  type FimLookup,
  type FimRole,
  type FimTokens,
  fimTokens,
} from "@minfer/tokenizer";

import type { FimRole, FimTokens } from "@minfer/tokenizer";

/** The roles an infill prompt cannot do without. */
export const FIM_REQUIRED: readonly FimRole[] = ["pre", "suf", "mid"];

/** One `input_extra` chunk, tokenized: `file` is the tokens of its filename and a newline. */
export interface InfillChunk {
  readonly file: readonly number[];
  readonly text: readonly number[];
}

/** A request's parts, tokenized (prefix and suffix without special tokens, as llama-server reads them). */
export interface InfillParts {
  readonly prefix: readonly number[];
  readonly suffix: readonly number[];
  /** `prompt`: goes right after the prefix, where llama-server puts it (see below). */
  readonly prompt: readonly number[];
  readonly extra: readonly InfillChunk[];
}

/** What shapes the prompt besides the request: the model's tokens and the server's sizes. */
export interface InfillLayout {
  readonly fim: FimTokens;
  /** The BOS token when the vocabulary adds one (add_bos_token), else undefined. */
  readonly bos: number | undefined;
  /** Tokens one decode step holds (llama-server's n_batch, -b): the prefix and suffix share it. */
  readonly nBatch: number;
  /** The server's generated-token default (llama-server's -n; -1: none): room kept for the answer. */
  readonly nPredict: number;
  /** A slot's context. */
  readonly nCtx: number;
  /** Suffix before prefix (llama-server's --spm-infill); default prefix, suffix, middle. */
  readonly spm?: boolean;
  /** The tokens of a short fixed text (no special tokens), for the layout's own lines. */
  readonly tokenize: (text: string) => number[];
}

/** The repository name the repo-level layout gives (llama-server's fixed one). */
const REPO_NAME = "myproject\n";
/** The name the repo-level layout gives the file being edited (llama-server's fixed one). */
const CURRENT_FILE = "filename\n";
/** What separates extra chunks when the model has no file separator token. */
const SNIPPET_SEPARATOR = "\n\n--- snippet ---\n\n";

/**
 * The prompt token ids of an infill request, laid out as llama-server lays them out:
 *
 *   [extra] [BOS] FIM_PRE prefix prompt FIM_SUF suffix FIM_MID        (SPM: FIM_SUF suffix FIM_PRE prefix prompt FIM_MID)
 *
 * where the extra context is, with a file separator token (the repo-level layout,
 * arXiv:2409.12186), `FIM_REP myproject⏎ FIM_SEP name⏎ text … FIM_SEP filename⏎` (FIM_REP part only
 * when the model has it), and otherwise each chunk's text after a `--- snippet ---` line.
 *
 * The prefix keeps its last 3/4 of a batch of tokens; the suffix its first quarter of a batch less
 * the prompt's tokens and two; the extra context its last `nCtx - nBatch - 2 * nPredict` tokens
 * (with nPredict -1, two more). The `prompt` follows the prefix, as llama-server's code places it;
 * its README says after FIM_MID (llama.cpp issue #22678, unmerged PR #22761).
 */
export function buildInfillPrompt(parts: InfillParts, layout: InfillLayout): number[] {
  const { fim } = layout;
  const pre = fim.pre;
  const suf = fim.suf;
  const mid = fim.mid;
  if (pre === undefined || suf === undefined || mid === undefined)
    throw new Error("buildInfillPrompt: the model has no FIM prefix, suffix and middle tokens");

  const extra: number[] = [];
  if (fim.rep !== undefined) extra.push(fim.rep, ...layout.tokenize(REPO_NAME));
  for (const chunk of parts.extra) {
    if (fim.sep !== undefined) pushAll(extra, [fim.sep], chunk.file);
    else pushAll(extra, layout.tokenize(SNIPPET_SEPARATOR));
    pushAll(extra, chunk.text);
  }
  if (fim.sep !== undefined) extra.push(fim.sep, ...layout.tokenize(CURRENT_FILE));

  const quarter = Math.floor(layout.nBatch / 4);
  const prefixTake = Math.min(parts.prefix.length, 3 * quarter);
  const suffixTake = Math.min(parts.suffix.length, Math.max(0, quarter - (2 + parts.prompt.length)));
  const extraTake = Math.min(Math.max(0, layout.nCtx - layout.nBatch - 2 * layout.nPredict), extra.length);

  const before: number[] = [pre];
  pushAll(before, parts.prefix.slice(parts.prefix.length - prefixTake), parts.prompt);
  const after: number[] = [suf];
  pushAll(after, parts.suffix.slice(0, suffixTake));

  const out = extra.slice(extra.length - extraTake);
  if (layout.bos !== undefined) out.push(layout.bos);
  pushAll(out, layout.spm ? after : before, layout.spm ? before : after, [mid]);
  return out;
}

/** Appends arrays one element at a time (a spread of a long array would overflow the call stack). */
function pushAll(out: number[], ...arrays: (readonly number[])[]): void {
  for (const a of arrays) for (const x of a) out.push(x);
}
