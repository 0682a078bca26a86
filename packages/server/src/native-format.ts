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

const per = (ms: number, n: number) => (n > 0 ? ms / n : 0);
const rate = (ms: number, n: number) => (ms > 0 && n > 0 ? (1000 * n) / ms : 0);

/**
 * Prompt and generation timings, as llama-server reports them (milliseconds, per token, per
 * second). The generation rate is over the decode steps, one fewer than the tokens: the first
 * token comes from the prompt's last logits.
 */
export function nativeTimings(r: JobResult): Record<string, number> {
  const promptN = r.promptTokens - r.cachedTokens;
  const predictedN = r.tokens.length;
  return {
    cache_n: r.cachedTokens,
    prompt_n: promptN,
    prompt_ms: r.promptMs,
    prompt_per_token_ms: per(r.promptMs, promptN),
    prompt_per_second: rate(r.promptMs, promptN),
    predicted_n: predictedN,
    predicted_ms: r.generateMs,
    predicted_per_token_ms: per(r.generateMs, predictedN - 1),
    predicted_per_second: rate(r.generateMs, predictedN - 1),
    // (as llama-server: present once something was drafted)
    ...(r.speculative && r.speculative.drafted > 0
      ? { draft_n: r.speculative.drafted, draft_n_accepted: r.speculative.accepted }
      : {}),
  };
}

/** The timings of a completion still running (timings_per_token), as {@link nativeTimings} names them. */
export function partialTimings(x: {
  /** Prompt tokens read so far, cached ones included. */
  promptTokens: number;
  cachedTokens: number;
  generated: number;
  startedAt: number;
  firstTokenAt: number;
  now: number;
}): Record<string, number> {
  const promptN = x.promptTokens - x.cachedTokens;
  const promptMs =
    promptN === 0 ? 0 : x.firstTokenAt > 0 ? x.firstTokenAt - x.startedAt : x.now - x.startedAt;
  const predictedMs = x.firstTokenAt > 0 ? x.now - x.firstTokenAt : 0;
  return {
    cache_n: x.cachedTokens,
    prompt_n: promptN,
    prompt_ms: promptMs,
    prompt_per_token_ms: per(promptMs, promptN),
    prompt_per_second: rate(promptMs, promptN),
    predicted_n: x.generated,
    predicted_ms: predictedMs,
    predicted_per_token_ms: per(predictedMs, x.generated - 1),
    predicted_per_second: rate(predictedMs, x.generated - 1),
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
    // (llama-server's adaptive-p sampler, which minfer does not have: reported off)
    adaptive_target: -1,
    adaptive_decay: 0.9,
    stop: p.stop,
    max_tokens: maxTokens ?? -1,
    n_keep: p.nKeep ?? 0,
    n_discard: 0,
    min_keep: 0,
    // the bias in effect, ignore_eos's bans included (null: -inf, a ban)
    logit_bias: [...o.logitBias].map(([token, bias]) => ({
      token,
      bias: Number.isFinite(bias) ? bias : null,
    })),
    samplers: ["penalties", "dry", "top_k", "typ_p", "top_p", "min_p", "xtc", "top_n_sigma", "temperature"],
    timings_per_token: p.timingsPerToken,
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
    truncated: r.truncated,
    stop_type: stopType(r.finish),
    stopping_word: r.stopWord ?? "",
    tokens_cached: r.promptTokens + r.tokens.length,
    timings: nativeTimings(r),
  };
}
