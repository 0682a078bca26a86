import { StopMatcher } from "@minfer/engine";
import type { Sampler, TokenLogprob } from "@minfer/sampler";
import type { StreamDecoder } from "@minfer/tokenizer";

// A generation request as the batcher runs it: what is asked (JobSpec), what it reports per token
// (TokenEvent) and at the end (JobResult), and the batcher's running state of it (Job).

/**
 * Why a job ended: the engine's reasons, plus "timeout" (its deadline passed) and "shutdown" (the
 * server stopped it while closing; "abort" is the client's own cancellation).
 */
export type JobFinish = "eog" | "stop" | "length" | "context" | "abort" | "timeout" | "shutdown";

/** One generated token as a job reports it. */
export interface TokenEvent {
  readonly token: number;
  /** The text this token released (may be empty: held back for a stop string, or half a character). */
  readonly text: string;
  /** Present when the job asked for log-probabilities. */
  readonly logprob?: number;
  readonly top?: readonly TokenLogprob[];
  /** Present when the job asked for post-sampling probabilities (JobSpec.postSampling). */
  readonly post?: PostSampling;
}

/** The distribution a token was drawn from, after truncation and temperature: its probability and the top ones. */
export interface PostSampling {
  readonly p: number;
  readonly top: readonly { token: number; p: number }[];
}

/** What a request asks the batcher to generate. */
export interface JobSpec {
  /** The prompt's token ids (at least one). */
  readonly ids: readonly number[];
  /** This job's own sampler (its state follows the job). */
  readonly sampler: Sampler;
  /** Control tokens the generated text shows (a chat format's markers; see `DecodeOptions.preserve`). */
  readonly preserve?: ReadonlySet<number>;
  readonly maxTokens?: number;
  readonly stop?: readonly string[];
  /** Ask for log-probabilities with this many alternatives per token (0 = the drawn token's only). */
  readonly nProbs?: number;
  /** With nProbs: the alternatives after the sampler's truncation and temperature, as probabilities (`post`). */
  readonly postSampling?: boolean;
  /** Reuse the longest cached prefix held by any slot. Default true. */
  readonly cachePrompt?: boolean;
  /** Run in this slot (llama-server's `id_slot`), waiting for it when it is busy; default: any. */
  readonly slot?: number;
  /**
   * With the batcher's context shift: the first tokens a shift keeps (-1: the whole prompt).
   * Default 0 (only the BOS, when the model adds one).
   */
  readonly nKeep?: number;
  /**
   * Jobs with the same group object share one prompt (the n choices of a request): a job whose
   * group-mate is still prefilling the prompt waits for it and copies its K/V rows instead.
   */
  readonly group?: object;
  /**
   * With the batcher's speculative decoding: this job's most and fewest drafted tokens per
   * verification (llama-server's `speculative.n_max` / `speculative.n_min`; n_max 0 turns it off
   * for this job). Default: the batcher's.
   */
  readonly draftMax?: number;
  readonly draftMin?: number;
  readonly signal?: AbortSignal;
  /** performance.now() after which the job ends with "timeout". */
  readonly deadline?: number;
  /** Called once, when the job gets a slot (before its prompt is prefilled). */
  onStart?(info: { slot: number; cachedTokens: number }): void;
  /** Called for every generated token, then once more with `token: -1` for text held back at the end. */
  onToken?(event: TokenEvent): void;
  /**
   * Called as the prompt is read: once when the job gets its slot (`processed` = the cached
   * tokens), then after each chunk decoded, until `processed` = `total`.
   */
  onPrefill?(progress: { total: number; cache: number; processed: number }): void;
}

/** How a job ended. */
export interface JobResult {
  readonly finish: JobFinish;
  readonly tokens: readonly number[];
  readonly text: string;
  readonly promptTokens: number;
  readonly cachedTokens: number;
  /** Waiting for a slot, prefilling, generating (milliseconds). */
  readonly queuedMs: number;
  readonly promptMs: number;
  readonly generateMs: number;
  /** The stop string that ended the text (finish "stop" by a stop string). */
  readonly stopWord?: string;
  /** The context was shifted (older tokens dropped) or filled: llama-server's `truncated`. */
  readonly truncated: boolean;
  /**
   * With speculative decoding: tokens drafted and verified, those accepted, and the verifications
   * that had drafts (llama-server's `draft_n`, `draft_n_accepted`); absent without.
   */
  readonly speculative?: { readonly drafted: number; readonly accepted: number; readonly steps: number };
}

/** A job's running state inside the batcher. */
export class Job {
  readonly spec: JobSpec;
  readonly queuedAt = performance.now();
  startedAt = 0;
  prefilledAt = 0;
  nPast = 0;
  cached = 0;
  chunk = 0;
  /** The sampled token the next decode holds (-1: none). */
  pending = -1;
  /** The decode in flight holds this job's tokens: its slot and cells stay until that decode returns. */
  inFlight = false;
  /** Resolved or rejected; the batcher uses it (and its sampler) no more. */
  ended = false;
  /** Ended by a failure while in flight: its slot's cells are all removed when the decode returns. */
  clearOnLanding = false;
  /** A group-mate whose prefill this job waits for (then copies). */
  leader: Job | undefined;
  readonly tokens: number[] = [];
  text = "";
  /** The stop string that ended the text, once one has. */
  stopWord: string | undefined;
  /** Older tokens were dropped to go on (context shift). */
  shifted = false;
  /**
   * Cells the slot keeps when the job ends (a stop string found in a token's text after later
   * tokens were taken from accepted drafts: those leave, as if never sampled); undefined: all.
   */
  keep: number | undefined;
  /** Speculative decoding's counters (see JobResult.speculative); steps 0: none drafted yet. */
  readonly drafting = { drafted: 0, accepted: 0, steps: 0 };
  decoder!: StreamDecoder;
  stops: StopMatcher;
  resolve!: (r: JobResult) => void;
  reject!: (e: unknown) => void;
  readonly done: Promise<JobResult>;

  constructor(spec: JobSpec) {
    this.spec = spec;
    this.stops = new StopMatcher(spec.stop ?? []);
    this.done = new Promise((res, rej) => {
      this.resolve = res;
      this.reject = rej;
    });
  }
}
