import { argmax, Sampler, type SamplerOptions } from "@minfer/sampler";
import type { Context } from "./context.js";
import { EngineError } from "./errors.js";
import type { SpeculativeStats } from "./speculative/drafter.js";
import { type SpeculativeOptions, Speculator } from "./speculative/speculator.js";
import { StopMatcher } from "./stop-matcher.js";

/**
 * Anything that picks the next token from logits. The optional hooks let a stateful sampler
 * (penalties, a grammar) follow the generation: `acceptPrompt` gets the prompt's ids once, `accept`
 * every generated token (end-of-generation included) after it is chosen, and `isDone` ends
 * generation when nothing more may follow (a completed grammar; finish reason "stop").
 */
export interface TokenSampler {
  sample(logits: Float32Array): number;
  accept?(token: number): void;
  acceptPrompt?(tokens: readonly number[]): void;
  isDone?(): boolean;
}

/** Options of {@link generate}. */
export interface GenerateOptions {
  /** Most tokens to generate. Default: until an end-of-generation token or the context is full. */
  readonly maxTokens?: number;
  /** A sampler, or options of the minimal sampler (temperature 0 = greedy). Default: greedy. */
  readonly sampler?: TokenSampler | SamplerOptions;
  /** Generation ends when the text contains one of these; it and what follows are not returned. */
  readonly stop?: readonly string[];
  /** Token ids that end generation (besides end-of-generation tokens); not returned. */
  readonly stopTokens?: readonly number[];
  /** Do not stop at end-of-generation tokens. Default: false. */
  readonly ignoreEog?: boolean;
  /** Aborting ends generation (finish reason "abort"); the pieces already produced stand. */
  readonly signal?: AbortSignal;
  /** The sequence to generate in. Default: 0. */
  readonly seq?: number;
  /**
   * Keep the part of the sequence's cache that matches the prompt's start and prefill only the
   * rest (what a chat's next turn needs). Default: true. With false, the sequence is cleared.
   */
  readonly reusePrefix?: boolean;
  /**
   * Called once the prompt is in the context, before the first token is sampled; generation waits
   * for it (the CLI's --prompt-cache saves the prompt's state there).
   */
  readonly onPrompt?: () => void | Promise<void>;
  /** For a text prompt: add BOS/EOS as the vocabulary asks. Default: true. */
  readonly addSpecial?: boolean;
  /** For a text prompt: special-token text (e.g. "<|im_start|>") becomes special tokens. Default: true. */
  readonly parseSpecial?: boolean;
  /**
   * Speculative decoding: a drafter guesses the next tokens and one batched decode verifies them
   * (see {@link SpeculativeOptions}). The tokens are the ones generation without it gives — the
   * same sampling on the same logits, only fewer decode calls — up to the rounding differences of
   * a batched product.
   */
  readonly speculative?: SpeculativeOptions;
}

/**
 * One generated token and the text it released (may be empty: an unfinished character, or text
 * held back while it could start a stop string). The last piece may carry text only (no token):
 * what was held back when generation ended.
 */
export interface GeneratedPiece {
  readonly token?: number;
  readonly text: string;
}

/** Why generation ended. */
export type FinishReason = "eog" | "stop" | "length" | "context" | "abort";

/** Where a generation's time went (milliseconds). */
export interface GenerationTimings {
  readonly promptTokens: number;
  /** Prompt tokens taken from the cache instead of prefilled. */
  readonly reusedTokens: number;
  readonly promptMs: number;
  readonly generatedTokens: number;
  /** Wall time of the generation steps (sampling, detokenizing and decoding). */
  readonly generateMs: number;
  /** Of generateMs: inside the backends' execute calls. */
  readonly computeMs: number;
  /** With speculative decoding: its counters. */
  readonly speculative?: SpeculativeStats;
}

/**
 * A running generation: iterate it (once) for the pieces; afterwards `finishReason`, `tokens`,
 * `text` and `timings` describe it.
 */
export class Generation implements AsyncIterable<GeneratedPiece> {
  finishReason: FinishReason | undefined;
  readonly tokens: number[] = [];
  text = "";
  timings: GenerationTimings | undefined;
  readonly #run: () => AsyncGenerator<GeneratedPiece>;
  #started = false;

  constructor(run: (g: Generation) => AsyncGenerator<GeneratedPiece>) {
    this.#run = () => run(this);
  }

  [Symbol.asyncIterator](): AsyncIterator<GeneratedPiece> {
    if (this.#started) throw new EngineError("INVALID_ARGUMENT", "a Generation can be iterated once");
    this.#started = true;
    return this.#run();
  }

  /** Runs to the end and returns the text. */
  async complete(): Promise<string> {
    for await (const _ of this) {
      // the pieces accumulate in this.text
    }
    return this.text;
  }
}

function makeSampler(s: GenerateOptions["sampler"]): TokenSampler {
  if (s === undefined) return { sample: argmax };
  if (typeof (s as TokenSampler).sample === "function") return s as TokenSampler;
  return new Sampler(s as SamplerOptions);
}

function checkOptions(o: GenerateOptions): void {
  const bad = (m: string) => {
    throw new EngineError("INVALID_ARGUMENT", `generate: ${m}`);
  };
  if (o.maxTokens !== undefined && !(Number.isInteger(o.maxTokens) && o.maxTokens >= 0))
    bad(`maxTokens must be a non-negative integer, got ${String(o.maxTokens)}`);
  if (o.stop !== undefined && (!Array.isArray(o.stop) || o.stop.some((s) => typeof s !== "string")))
    bad("stop must be an array of strings");
  if (
    o.stopTokens !== undefined &&
    (!Array.isArray(o.stopTokens) || o.stopTokens.some((t) => !Number.isInteger(t)))
  )
    bad("stopTokens must be an array of token ids");
}

/**
 * Generates from `prompt` (text, tokenized as llama.cpp does by default, or token ids) in one
 * sequence of the context: the prompt is prefilled (reusing a matching cached prefix), then one
 * token is sampled and decoded per step until an end-of-generation token, a stop string or
 * token, `maxTokens`, a full context or the abort signal.
 */
export function generate(
  context: Context,
  prompt: string | readonly number[],
  options: GenerateOptions = {},
): Generation {
  checkOptions(options);
  const sampler = makeSampler(options.sampler);
  const tokenizer = context.model.tokenizer;
  const seq = options.seq ?? 0;
  const ids =
    typeof prompt === "string"
      ? tokenizer.encode(prompt, {
          addSpecial: options.addSpecial ?? true,
          parseSpecial: options.parseSpecial ?? true,
        })
      : [...prompt];
  if (ids.length === 0) throw new EngineError("INVALID_ARGUMENT", "generate: the prompt has no tokens");
  const stopTokens = new Set(options.stopTokens ?? []);
  const endOf = (id: number): FinishReason | undefined =>
    stopTokens.has(id) ? "stop" : !options.ignoreEog && tokenizer.isEog(id) ? "eog" : undefined;

  const spec = options.speculative ? new Speculator(context, seq, options.speculative, ids) : undefined;

  return new Generation(async function* (g) {
    const t0 = performance.now();
    sampler.acceptPrompt?.(ids);
    // Prefix reuse: keep the cached tokens that match, prefill the rest (at least one token,
    // whose logits start generation).
    let keep = 0;
    const have = options.reusePrefix === false ? undefined : context.history(seq);
    if (have) {
      while (keep < have.length && keep < ids.length && have[keep] === ids[keep]) keep++;
      if (keep === ids.length) keep--;
    }
    keep = context.truncate(seq, keep);
    let logits = await context.eval(ids.slice(keep), seq);
    // (a draft model takes in the prompt here, within the prompt's time)
    await spec?.prefill();
    const promptMs = performance.now() - t0;
    await options.onPrompt?.();
    const t1 = performance.now();
    let computeMs = 0;
    const decoder = tokenizer.streamDecoder();
    const stops = new StopMatcher(options.stop ?? []);
    const max = options.maxTokens ?? Number.POSITIVE_INFINITY;
    const finish = (reason: FinishReason) => {
      spec?.finish();
      g.finishReason = reason;
      g.timings = {
        promptTokens: ids.length,
        reusedTokens: keep,
        promptMs,
        generatedTokens: g.tokens.length,
        generateMs: performance.now() - t1,
        computeMs,
        ...(spec ? { speculative: spec.stats } : {}),
      };
    };
    let reason: FinishReason | undefined;
    // The next token's decode starts as soon as it is sampled; detokenizing, stop-string
    // matching and the consumer's handling of the piece run while the backend computes.
    let next: Promise<Float32Array> | undefined;
    try {
      // speculation: the last token confirmed a draft, and the next row of the verification's logits
      // is read when it is sampled (after the consumer's turn: a stale row throws, see Speculator)
      let ready = false;
      for (;;) {
        if (g.tokens.length >= max) reason = "length";
        else if (options.signal?.aborted) reason = "abort";
        if (reason) break;
        if (ready) logits = spec!.current();
        const id = sampler.sample(logits);
        reason = endOf(id);
        if (reason) break;
        sampler.accept?.(id);
        g.tokens.push(id);
        ready = spec?.advance(id) ?? false;
        if (g.tokens.length >= max) reason = "length";
        else if (!ready && context.used() >= context.nCtx) reason = "context";
        else if (options.signal?.aborted) reason = "abort";
        else if (!ready) {
          next = spec ? spec.step(id, max - g.tokens.length) : context.eval([id], seq);
          next.catch(() => undefined); // observed below; never an unhandled rejection meanwhile
        }
        const r = stops.push(decoder.push(id));
        g.text += r.text;
        yield { token: id, text: r.text };
        if (r.stopped || sampler.isDone?.()) reason = "stop";
        if (next) {
          logits = await next;
          next = undefined;
          computeMs += context.lastTiming.computeMs;
        }
        if (!reason && options.signal?.aborted) reason = "abort";
        if (reason) break;
      }
      if (reason !== "stop") {
        // The last bytes of the stream and any text held back for stop strings.
        const rest = stops.push(decoder.flush());
        const tail = rest.stopped ? rest.text : rest.text + stops.flush();
        if (rest.stopped) reason = "stop";
        g.text += tail;
        if (tail) yield { text: tail };
      }
      finish(reason);
    } finally {
      // The consumer stopped iterating early, or a decode failed: let a decode in flight end
      // first, so the context is idle when the generation is over.
      if (next) await next.catch(() => undefined);
      if (g.finishReason === undefined) finish("abort");
    }
  });
}

/**
 * Greedy generation (argmax at every step) of `maxTokens` tokens at most; stops at an
 * end-of-generation token (`isEog`, default the tokenizer's), which is not returned.
 */
export async function greedy(
  context: Context,
  promptIds: readonly number[],
  maxTokens: number,
  isEog: (id: number) => boolean = (id) => context.model.tokenizer.isEog(id),
): Promise<number[]> {
  const out: number[] = [];
  if (maxTokens <= 0) return out;
  let logits = await context.eval(promptIds);
  for (;;) {
    const id = argmax(logits);
    if (isEog(id)) break;
    out.push(id);
    if (out.length >= maxTokens) break;
    logits = await context.eval([id]);
  }
  return out;
}
