import type { EncoderHparams } from "@minfer/models";
import type { Context } from "./context.js";
import { type EmbedInput, embed } from "./embed.js";
import { EngineError } from "./errors.js";
import type { Model } from "./model.js";

/**
 * The tokens a reranker scores for (query, document). A model with a `rerank` chat template
 * (Qwen3-Reranker's) gets it with `{query}` and `{document}` replaced, special tokens parsed. Else
 * the pair as its tokenizer joins two texts: BERT's `[CLS] query [SEP] document [SEP]` with token
 * type 1 for the document's part when the model has segment embeddings (as transformers encodes a
 * pair: llama.cpp leaves every type 0 and the last [SEP] out, which scores differently); otherwise
 * llama.cpp's order — BOS, query, EOS (or SEP), SEP, document, EOS — each where the vocabulary adds it.
 */
export function rerankInput(model: Model, query: string, document: string): EmbedInput {
  const tok = model.tokenizer;
  const template = model.chatTemplates.get("rerank")?.source;
  if (template !== undefined) {
    const text = template.replaceAll("{query}", query).replaceAll("{document}", document);
    return tok.encode(text, { addSpecial: false, parseSpecial: true });
  }
  const q = tok.encode(query, { addSpecial: false });
  const d = tok.encode(document, { addSpecial: false });
  const { special, addBos, addEos, addSep, model: kind } = tok.vocab;
  if (kind === "bert") {
    const cls = special.bos ?? special.cls;
    const sep = special.sep ?? special.eos;
    if (cls === undefined || sep === undefined)
      throw new EngineError(
        "INVALID_ARGUMENT",
        "rerank: the vocabulary has no [CLS]/[SEP] tokens to join a pair",
      );
    const first = [cls, ...q, sep];
    const second = [...d, sep];
    const twoTypes =
      model.tensors.byName.has("token_types.weight") && (model.hparams as EncoderHparams).nTokenTypes > 1;
    return {
      tokens: [...first, ...second],
      ...(twoTypes ? { tokenTypes: [...first.map(() => 0), ...second.map(() => 1)] } : {}),
    };
  }
  const eos = special.eos ?? special.sep;
  const out: number[] = [];
  if (addBos && special.bos !== undefined) out.push(special.bos);
  out.push(...q);
  if (addEos && eos !== undefined) out.push(eos);
  if (addSep && special.sep !== undefined) out.push(special.sep);
  out.push(...d);
  if (addEos && eos !== undefined) out.push(eos);
  return out;
}

/**
 * Relevance scores of `documents` for `query` with a context made with `embeddings: true,
 * pooling: "rank"`: each pair's first classifier output (llama.cpp's score), in the documents' order.
 */
export async function rerank(
  ctx: Context,
  query: string,
  documents: readonly string[],
  o: { readonly signal?: AbortSignal } = {},
): Promise<number[]> {
  if (ctx.pooling !== "rank")
    throw new EngineError(
      "INVALID_ARGUMENT",
      'rerank: make the Context with embeddings: true, pooling: "rank"',
    );
  const inputs = documents.map((d) => rerankInput(ctx.model, query, d));
  const r = await embed(ctx, inputs, { ...(o.signal ? { signal: o.signal } : {}) });
  return r.map((e) => e.rows[0]![0]!);
}
