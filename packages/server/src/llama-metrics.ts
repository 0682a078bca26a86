import { Counter, Gauge, type Registry } from "prom-client";
import type { Batcher, JobResult } from "./batcher.js";

/**
 * llama-server's metrics under its names (`llamacpp:…`, the set its README lists), so dashboards
 * and alerts made for llama-server read minfer's /metrics unchanged. Prompt tokens count what was
 * prefilled (cached ones apart); the generation rate is over the decode steps after the first
 * token, as llama-server's timings are. The speculative-decoding counters stay 0 unless the
 * server drafts (ServerOptions.speculative).
 */
export class LlamaMetrics {
  readonly #promptTokens: Counter;
  readonly #cachedTokens: Counter;
  readonly #promptSeconds: Counter;
  readonly #predicted: Counter;
  readonly #predictedSeconds: Counter;
  readonly #decodes: Counter;
  readonly #tokensMax: Counter;
  readonly #drafted: Counter;
  readonly #accepted: Counter;
  readonly #verifications: Counter;
  #maxSeen = 0;
  #promptN = 0;
  #promptS = 0;
  #predictedN = 0;
  #predictedS = 0;
  #busySum = 0;
  #steps = 0;
  #batcher: Batcher | undefined;

  constructor(registry: Registry) {
    const registers = [registry];
    const counter = (name: string, help: string) =>
      new Counter({ name: `llamacpp:${name}`, help, registers });
    this.#promptTokens = counter("prompt_tokens_total", "Number of prompt tokens processed.");
    this.#cachedTokens = counter(
      "prompt_tokens_cached_total",
      "Number of prompt tokens reused from the cache.",
    );
    this.#promptSeconds = counter("prompt_seconds_total", "Prompt process time in seconds.");
    this.#predicted = counter("tokens_predicted_total", "Number of generation tokens processed.");
    this.#predictedSeconds = counter("tokens_predicted_seconds_total", "Predict process time in seconds.");
    this.#decodes = counter("n_decode_total", "Total number of decode calls.");
    this.#tokensMax = counter("n_tokens_max", "High watermark of the context size observed.");
    this.#drafted = counter(
      "spec_decode_num_draft_tokens_total",
      "Speculative: total draft tokens generated (0: no speculative decoding).",
    );
    this.#accepted = counter(
      "spec_decode_num_accepted_tokens_total",
      "Speculative: total draft tokens accepted by the target model.",
    );
    this.#verifications = counter(
      "spec_decode_num_drafts_total",
      "Speculative: total verification steps with drafts.",
    );
    const gauge = (name: string, help: string, read: () => number) =>
      new Gauge({
        name: `llamacpp:${name}`,
        help,
        registers,
        collect() {
          this.set(read());
        },
      });
    const rate = (n: number, s: number) => (s > 0 ? n / s : 0);
    gauge("prompt_tokens_seconds", "Average prompt throughput in tokens/s.", () =>
      rate(this.#promptN, this.#promptS),
    );
    gauge("predicted_tokens_seconds", "Average generation throughput in tokens/s.", () =>
      rate(this.#predictedN, this.#predictedS),
    );
    gauge("requests_processing", "Number of requests processing.", () => this.#batcher?.busy ?? 0);
    gauge("requests_deferred", "Number of requests deferred.", () => this.#batcher?.waiting ?? 0);
    gauge("n_busy_slots_per_decode", "Average number of busy slots per decode call.", () =>
      this.#steps > 0 ? this.#busySum / this.#steps : 0,
    );
  }

  attach(batcher: Batcher): void {
    this.#batcher = batcher;
  }

  onStep(): void {
    this.#decodes.inc();
    this.#steps++;
    this.#busySum += this.#batcher?.busy ?? 0;
  }

  onJobEnd(r: JobResult): void {
    const prompt = r.promptTokens - r.cachedTokens;
    this.#promptTokens.inc(prompt);
    this.#cachedTokens.inc(r.cachedTokens);
    this.#promptSeconds.inc(r.promptMs / 1000);
    this.#predicted.inc(r.tokens.length);
    this.#predictedSeconds.inc(r.generateMs / 1000);
    this.#promptN += prompt;
    this.#promptS += r.promptMs / 1000;
    // (the first token comes with the prompt's logits: the rate is over the steps after it)
    if (r.tokens.length > 1) {
      this.#predictedN += r.tokens.length - 1;
      this.#predictedS += r.generateMs / 1000;
    }
    if (r.speculative) {
      this.#drafted.inc(r.speculative.drafted);
      this.#accepted.inc(r.speculative.accepted);
      this.#verifications.inc(r.speculative.steps);
    }
    const used = r.promptTokens + r.tokens.length;
    if (used > this.#maxSeen) {
      this.#tokensMax.inc(used - this.#maxSeen);
      this.#maxSeen = used;
    }
  }
}
