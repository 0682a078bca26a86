import { type IntervalHistogram, monitorEventLoopDelay } from "node:perf_hooks";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Batcher, BatcherObserver, JobResult } from "./batcher.js";
import { LlamaMetrics } from "./llama-metrics.js";

/**
 * The server's Prometheus metrics (prom-client, one registry per server): requests, tokens,
 * latencies, the queue, busy slots, KV cells in use and decode batch sizes, and llama-server's
 * `llamacpp:` set (llama-metrics.ts). Gauges of the batcher's state are read when /metrics is scraped.
 */
export class ServerMetrics {
  readonly registry = new Registry();
  #delay: IntervalHistogram | undefined;
  readonly #requests: Counter<"endpoint" | "status">;
  readonly #rejected: Counter;
  readonly #promptTokens: Counter;
  readonly #cachedTokens: Counter;
  readonly #generated: Counter;
  readonly #finishes: Counter<"reason">;
  readonly #duration: Histogram<"endpoint">;
  readonly #ttft: Histogram;
  readonly #queueWait: Histogram;
  readonly #batchTokens: Histogram;
  readonly #steps: Counter;
  readonly #stepDecode: Histogram;
  readonly #stepGap: Histogram;
  readonly #stepGenerate: Histogram;
  #batcher: Batcher | undefined;
  readonly #llama: LlamaMetrics;

  constructor() {
    const registers = [this.registry];
    this.#llama = new LlamaMetrics(this.registry);
    this.#requests = new Counter({
      name: "minfer_requests_total",
      help: "HTTP requests answered, by endpoint and status code",
      labelNames: ["endpoint", "status"],
      registers,
    });
    this.#rejected = new Counter({
      name: "minfer_requests_rejected_queue_full_total",
      help: "Requests refused with 503 because every slot was busy and the queue was full",
      registers,
    });
    this.#promptTokens = new Counter({
      name: "minfer_prompt_tokens_total",
      help: "Prompt tokens of finished generations (cached ones included)",
      registers,
    });
    this.#cachedTokens = new Counter({
      name: "minfer_prompt_tokens_cached_total",
      help: "Prompt tokens reused from the KV cache instead of prefilled",
      registers,
    });
    this.#generated = new Counter({
      name: "minfer_generated_tokens_total",
      help: "Tokens generated",
      registers,
    });
    this.#finishes = new Counter({
      name: "minfer_generations_total",
      help: "Finished generations by reason (eog, stop, length, context, abort, timeout)",
      labelNames: ["reason"],
      registers,
    });
    this.#duration = new Histogram({
      name: "minfer_request_duration_seconds",
      help: "Time from request to the last byte of the response",
      labelNames: ["endpoint"],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers,
    });
    this.#ttft = new Histogram({
      name: "minfer_time_to_first_token_seconds",
      help: "Time from taking a slot to the first generated token (prefill)",
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.#queueWait = new Histogram({
      name: "minfer_queue_wait_seconds",
      help: "Time a request waited for a free slot",
      buckets: [0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30],
      registers,
    });
    this.#batchTokens = new Histogram({
      name: "minfer_decode_batch_tokens",
      help: "Tokens per decode step (generating slots plus prompt chunks)",
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048],
      registers,
    });
    this.#steps = new Counter({ name: "minfer_decode_steps_total", help: "Decode steps run", registers });
    const stepBuckets = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];
    this.#stepDecode = new Histogram({
      name: "minfer_decode_step_seconds",
      help: "Time of a decode step, from the call to its logits",
      buckets: stepBuckets,
      registers,
    });
    this.#stepGenerate = new Histogram({
      name: "minfer_decode_generate_step_seconds",
      help: "Time of a decode step that only generates (no prompt tokens in it), from the call to its logits",
      buckets: stepBuckets,
      registers,
    });
    this.#stepGap = new Histogram({
      name: "minfer_decode_step_gap_seconds",
      help: "Time between a decode step's return and the next step's start while generating (sampling, planning, output the overlap does not cover): what the device waits for",
      buckets: stepBuckets,
      registers,
    });
    const self = this;
    const gauge = (name: string, help: string, read: (b: Batcher) => number) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          if (self.#batcher) this.set(read(self.#batcher));
        },
      });
    gauge("minfer_slots_total", "Slots (sequences that generate at once)", (b) => b.parallel);
    gauge("minfer_slots_busy", "Slots running a request", (b) => b.busy);
    gauge("minfer_queue_waiting", "Requests waiting for a slot", (b) => b.waiting);
    gauge("minfer_kv_cells_used", "KV cache cells in use (idle slots keep theirs for prefix reuse)", (b) =>
      b.context.used(),
    );
    gauge("minfer_kv_cells_total", "KV cache cells", (b) => b.context.nCtx);
    // How long the event loop was held at once: what every request (and /health) waited on top of
    // its own work. Sampled every 10 ms once the model is loaded (see attach).
    const delay = monitorEventLoopDelay({ resolution: 10 });
    this.#delay = delay;
    new Gauge({
      name: "minfer_event_loop_delay_max_seconds",
      help: "Longest delay of the event loop since the model was loaded",
      registers,
      collect() {
        this.set(delay.max / 1e9);
      },
    });
    new Gauge({
      name: "minfer_event_loop_delay_p99_seconds",
      help: "99th percentile of the event loop's delay since the model was loaded",
      registers,
      collect() {
        this.set(delay.percentile(99) / 1e9);
      },
    });
  }

  /** Stops sampling the event loop. */
  close(): void {
    this.#delay?.disable();
  }

  /** Reads the gauges from this batcher from now on. */
  attach(batcher: Batcher): void {
    this.#batcher = batcher;
    this.#llama.attach(batcher);
    this.#delay?.enable();
  }

  /** The observer to give the batcher. */
  observer(): BatcherObserver {
    return {
      onStep: (s) => {
        this.#llama.onStep();
        this.#steps.inc();
        this.#batchTokens.observe(s.tokens);
        this.#stepDecode.observe(s.ms / 1000);
        if (s.promptTokens === 0) this.#stepGenerate.observe(s.ms / 1000);
        if (s.gapMs !== undefined) this.#stepGap.observe(s.gapMs / 1000);
      },
      onJobEnd: (r: JobResult) => {
        this.#llama.onJobEnd(r);
        this.#promptTokens.inc(r.promptTokens);
        this.#cachedTokens.inc(r.cachedTokens);
        this.#generated.inc(r.tokens.length);
        this.#finishes.inc({ reason: r.finish });
        this.#queueWait.observe(r.queuedMs / 1000);
        if (r.tokens.length > 0) this.#ttft.observe(r.promptMs / 1000);
      },
    };
  }

  request(endpoint: string, status: number, seconds: number): void {
    this.#requests.inc({ endpoint, status: String(status) });
    this.#duration.observe({ endpoint }, seconds);
  }

  rejected(): void {
    this.#rejected.inc();
  }
}
