import type { ResolvedSamplerOptions } from "@minfer/sampler";
import type { JobFinish, JobResult } from "./job.js";
import type { ParsedCommon } from "./request.js";

// llama-server's own completion format (`POST /completion`): the response object and its streamed
// chunks, with its field names.

/** How a native completion ended: an end-of-generation token, a token limit, a stop string. */
export type StopType = "none" | "eos" | "limit" | "word";

export function stopType(f: JobFinish | undefined): StopType {
  if (f === "eog") return "eos";
  if (f === "stop") return "word";
  if (f === "length" || f === "context") return "limit";
  return "none";
}

/** Prompt and generation timings, as llama-server reports them (milliseconds, per token, per second). */
export function nativeTimings(r: JobResult): Record<string, number> {
  const promptN = r.promptTokens - r.cachedTokens;
  const predictedN = r.tokens.length;
  const per = (ms: number, n: number) => (n > 0 ? ms / n : 0);
  const rate = (ms: number, n: number) => (ms > 0 ? (1000 * n) / ms : 0);
  return {
    cache_n: r.cachedTokens,
    prompt_n: promptN,
    prompt_ms: r.promptMs,
    prompt_per_token_ms: per(r.promptMs, promptN),
    prompt_per_second: rate(r.promptMs, promptN),
    predicted_n: predictedN,
    predicted_ms: r.generateMs,
    predicted_per_token_ms: per(r.generateMs, predictedN),
    predicted_per_second: rate(r.generateMs, predictedN),
  };
}

/** The settings the completion ran with, under llama-server's names. */
export function generationSettings(
  o: ResolvedSamplerOptions,
  p: ParsedCommon,
  maxTokens: number | undefined,
): Record<string, unknown> {
  return {
    n_predict: maxTokens ?? -1,
    seed: o.seed,
    temperature: o.temperature,
    dynatemp_range: o.dynatempRange,
    dynatemp_exponent: o.dynatempExponent,
    top_k: o.topK,
    top_p: o.topP,
    min_p: o.minP,
    typical_p: o.typicalP,
    xtc_probability: o.xtcProbability,
    xtc_threshold: o.xtcThreshold,
    top_n_sigma: o.topNSigma,
    repeat_last_n: o.repeatLastN,
    repeat_penalty: o.repeatPenalty,
    presence_penalty: o.presencePenalty,
    frequency_penalty: o.frequencyPenalty,
    dry_multiplier: o.dryMultiplier,
    dry_base: o.dryBase,
    dry_allowed_length: o.dryAllowedLength,
    dry_penalty_last_n: o.dryPenaltyLastN,
    dry_sequence_breakers: o.drySequenceBreakers,
    mirostat: o.mirostat,
    mirostat_tau: o.mirostatTau,
    mirostat_eta: o.mirostatEta,
    stop: p.stop,
    max_tokens: maxTokens ?? -1,
    n_probs: p.nProbs ?? 0,
    ignore_eos: p.ignoreEos,
    stream: p.stream,
    cache_prompt: p.cachePrompt,
    grammar: p.grammar ?? "",
  };
}

/** A streamed chunk of one token's text. */
export function nativeChunk(
  content: string,
  token: number,
  predicted: number,
  evaluated: number,
): Record<string, unknown> {
  return {
    index: 0,
    content,
    tokens: [token],
    stop: false,
    id_slot: -1,
    tokens_predicted: predicted,
    tokens_evaluated: evaluated,
  };
}

/**
 * The response (or, streamed, the last chunk: `content` then holds only what was not streamed
 * before, and `tokens` is empty).
 */
export function nativeResult(x: {
  readonly content: string;
  readonly tokens: readonly number[];
  readonly result: JobResult;
  readonly modelId: string;
  readonly prompt: string;
  readonly settings: Record<string, unknown>;
  readonly fullContent: string;
}): Record<string, unknown> {
  const r = x.result;
  return {
    index: 0,
    content: x.content,
    tokens: x.tokens,
    id_slot: -1,
    stop: true,
    model: x.modelId,
    tokens_predicted: r.tokens.length,
    tokens_evaluated: r.promptTokens,
    generation_settings: x.settings,
    prompt: x.prompt,
    has_new_line: x.fullContent.includes("\n"),
    truncated: false,
    stop_type: stopType(r.finish),
    stopping_word: r.stopWord ?? "",
    tokens_cached: r.promptTokens + r.tokens.length,
    timings: nativeTimings(r),
  };
}
