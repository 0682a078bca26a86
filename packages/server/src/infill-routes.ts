import type { Model } from "@minfer/engine";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { IGNORED_FIELDS_HEADER } from "./chat-routes.js";
import { runCompletion } from "./completions.js";
import { ApiError } from "./errors.js";
import { buildInfillPrompt, FIM_REQUIRED, type FimLookup, fimTokens } from "./infill-prompt.js";
import { type InfillText, type ParsedInfill, parseInfill } from "./infill-request.js";
import { tokenizePrompt } from "./prompt.js";
import { parseNative } from "./request.js";
import type { ServerState } from "./state.js";

const FIM_NAMES = { pre: "prefix", suf: "suffix", mid: "middle" } as const;

/** Each model's FIM tokens, looked up once. */
const lookups = new WeakMap<Model, FimLookup>();

function fimOf(model: Model): FimLookup {
  let found = lookups.get(model);
  if (!found) {
    found = fimTokens(model.file.metadata, model.tokenizer.vocab.tokens);
    lookups.set(model, found);
  }
  return found;
}

/** A 400 for a model without the prefix, suffix and middle tokens infill needs. */
function notSupported(modelId: string, fim: FimLookup): ApiError | undefined {
  const missing = FIM_REQUIRED.filter((r) => fim.ids[r] === undefined).map(
    (r) => FIM_NAMES[r as keyof typeof FIM_NAMES],
  );
  if (missing.length === 0) return undefined;
  const why = fim.notes.length > 0 ? ` (${fim.notes.join("; ")})` : "";
  // (501, as llama-server answers a model without FIM tokens)
  return new ApiError(
    501,
    `infill is not supported by the model ${modelId}: it has no FIM ${missing.join(", ")} token` +
      `${missing.length > 1 ? "s" : ""}${why}; use a code model with fill-in-the-middle tokens ` +
      "(tokenizer.ggml.fim_pre_token_id, fim_suf_token_id, fim_mid_token_id)",
    "not_supported_error",
    null,
    "infill_not_supported",
  );
}

/** llama-server's `response_fields` (as /completion applies them; chat-routes.ts has the same). */
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

/** The request's texts in bytes, each field's and all together (the prompt size limit is on the sum). */
function textBytes(inf: ParsedInfill): { total: number; largest: string } {
  const sizes = new Map<string, number>();
  const add = (field: string, v: InfillText) => {
    const texts = typeof v === "string" ? [v] : v.filter((x): x is string => typeof x === "string");
    sizes.set(
      field,
      texts.reduce((n, t) => n + Buffer.byteLength(t), 0),
    );
  };
  add("input_prefix", inf.prefix);
  add("input_suffix", inf.suffix);
  add("prompt", inf.prompt);
  let extra = 0;
  for (const c of inf.extra) extra += Buffer.byteLength(c.text) + Buffer.byteLength(c.filename);
  sizes.set("input_extra", extra);
  let total = 0;
  let largest = "input_prefix";
  for (const [k, n] of sizes) {
    total += n;
    if (n > sizes.get(largest)!) largest = k;
  }
  return { total, largest };
}

/** llama-server's `POST /infill` (fill-in-the-middle with the model's FIM tokens). */
export function registerInfillRoutes(app: FastifyInstance, s: ServerState): void {
  const deps = () => ({
    model: s.model,
    modelId: s.modelId,
    batcher: s.batcher,
    ...(s.timeoutMs !== undefined ? { timeoutMs: s.timeoutMs } : {}),
    retryAfterS: 1,
    onQueueFull: () => s.metrics?.rejected(),
    limits: s.limits,
    sampling: s.sampling,
    nPredict: s.nPredict,
    verbose: s.verbose,
  });

  /** Fields given that the server ignores: a response header and a log line name them. */
  function reportIgnored(request: FastifyRequest, reply: FastifyReply, ignored: string[]): void {
    if (ignored.length === 0) return;
    const names = ignored.map((f) => f.replace(/[^\x20-\x7e]/g, "?").slice(0, 64)).slice(0, 32);
    reply.header(IGNORED_FIELDS_HEADER, names.join(", "));
    request.log.warn({ ignored: names }, `ignored request fields: ${names.join(", ")}`);
  }

  app.post("/infill", async (request, reply) => {
    const model = s.model;
    const { tokenizer } = model;
    const fim = fimOf(model);
    const refused = notSupported(s.modelId, fim);
    if (refused) throw refused;
    const nVocab = model.hparams.nVocab;
    const inf = parseInfill(request.body, nVocab, s.strictApi);
    const p = parseNative(inf.rest, nVocab, {
      strictApi: s.strictApi,
      contextShift: s.contextShift,
      tokenize: (text) => tokenizer.encode(text, { addSpecial: false, parseSpecial: false }),
    });
    reportIgnored(request, reply, [...p.ignored, ...inf.ignored]);

    const bytes = textBytes(inf);
    if (bytes.total > s.limits.promptBytes)
      throw new ApiError(
        400,
        `the infill texts (input_prefix, input_suffix, input_extra, prompt) are ${bytes.total} bytes together; ` +
          `the server takes at most ${s.limits.promptBytes}`,
        "invalid_request_error",
        bytes.largest,
        "prompt_too_large",
      );
    // Prefix, suffix and extra context are read as plain text (special-token texts in code stay
    // text); the prompt's special tokens are read, as llama-server tokenizes them.
    const plain = (text: string, param: string) =>
      tokenizePrompt(tokenizer, text, { param, addSpecial: false, parseSpecial: false }, s.limits);
    const mixed = async (v: InfillText, param: string): Promise<number[]> => {
      if (typeof v === "string") return plain(v, param);
      const out: number[] = [];
      for (let i = 0; i < v.length; i++) {
        const x = v[i]!;
        if (typeof x === "number") out.push(x);
        else for (const t of await plain(x, `${param}[${i}]`)) out.push(t);
      }
      return out;
    };
    const extra = [];
    for (let i = 0; i < inf.extra.length; i++) {
      const c = inf.extra[i]!;
      extra.push({
        file: await plain(`${c.filename}\n`, `input_extra[${i}].filename`),
        text: await plain(c.text, `input_extra[${i}].text`),
      });
    }
    const parts = {
      prefix: await mixed(inf.prefix, "input_prefix"),
      suffix: await mixed(inf.suffix, "input_suffix"),
      prompt: await tokenizePrompt(
        tokenizer,
        inf.prompt,
        { param: "prompt", addSpecial: false, parseSpecial: true },
        s.limits,
      ),
      extra,
    };
    const vocab = tokenizer.vocab;
    const ids = buildInfillPrompt(parts, {
      fim: fim.ids,
      bos: vocab.addBos ? vocab.special.bos : undefined,
      nBatch: s.batcher.batchSize,
      nPredict: s.nPredict ?? -1,
      nCtx: s.batcher.ctxPerSlot,
      tokenize: (text) => tokenizer.encode(text, { addSpecial: false, parseSpecial: false }),
    });

    const out = await runCompletion(deps(), request, reply, {
      kind: "native",
      prompt: { text: "", addSpecial: false, ids },
      p,
      returnTokens: p.returnTokens,
      postSampling: p.postSampling,
    });
    if (out === undefined || typeof out !== "object") return out;
    return p.responseFields ? pickFields(out as Record<string, unknown>, p.responseFields) : out;
  });
}
