import type { Context, GenerationTimings } from "@minfer/engine";

const rate = (n: number, ms: number) => (ms > 0 ? (n * 1000) / ms : 0);

/**
 * The one-line summary every generation ends with on stderr, as llama.cpp's "prompt eval" and
 * "eval" lines: tokens, milliseconds, tokens per second.
 */
export function timingSummary(t: GenerationTimings): string {
  const prefilled = t.promptTokens - t.reusedTokens;
  return (
    `timings: prompt eval ${prefilled} tokens${t.reusedTokens ? ` (+${t.reusedTokens} reused)` : ""}, ` +
    `${t.promptMs.toFixed(2)} ms, ${rate(prefilled, t.promptMs).toFixed(2)} tok/s | ` +
    `eval ${t.generatedTokens} tokens, ${t.generateMs.toFixed(2)} ms, ${rate(t.generatedTokens, t.generateMs).toFixed(2)} tok/s`
  );
}

/**
 * Per generated token, for --verbose: the wall time of the step that produced it (sampling,
 * detokenizing, writing, the decode), the backend compute of that decode, and the rest — the
 * JS overhead — in ms and as a share of the step. The first token comes out of the prompt
 * decode, so its step is the prefill and is not counted in the totals.
 */
export class StepTimer {
  #last = performance.now();
  #steps = 0;
  #stepMs = 0;
  #computeMs = 0;
  #jsMs = 0;

  constructor(
    readonly ctx: Context,
    readonly out: NodeJS.WritableStream = process.stderr,
  ) {}

  /** Restarts the clock (at the start of a generation). */
  start(): void {
    this.#last = performance.now();
  }

  /** Called as the `index`-th token (0-based) arrives. */
  token(index: number, id: number): void {
    const now = performance.now();
    const step = now - this.#last;
    const { computeMs, totalMs } = this.ctx.lastTiming;
    // generate() starts the next decode before this token is handled, so a step can be shorter
    // than its decode: then no JavaScript was on the critical path (0, not a negative time).
    const js = Math.max(0, step - computeMs);
    if (index > 0) {
      this.#steps++;
      this.#stepMs += step;
      this.#computeMs += computeMs;
      this.#jsMs += js;
    }
    this.out.write(
      `token ${index} (id ${id}): step ${step.toFixed(3)} ms, compute ${computeMs.toFixed(3)} ms, ` +
        `JS overhead ${js.toFixed(3)} ms (${pct(js, step)}; in decode ${(totalMs - computeMs).toFixed(3)} ms)` +
        `${index === 0 ? " [prefill]" : ""}\n`,
    );
    // Measured after writing, so the next step includes this write as the user sees it.
    this.#last = performance.now();
  }

  /** The totals over the decode steps (all tokens but the first). */
  summary(): string {
    if (this.#steps === 0) return "per-token: no decode steps";
    const js = this.#jsMs;
    return (
      `per-token: ${this.#steps} decode steps, mean step ${(this.#stepMs / this.#steps).toFixed(3)} ms, ` +
      `compute ${(this.#computeMs / this.#steps).toFixed(3)} ms, JS overhead ${(js / this.#steps).toFixed(3)} ms (${pct(js, this.#stepMs)} of the step)`
    );
  }
}

function pct(part: number, whole: number): string {
  return `${whole > 0 ? ((100 * part) / whole).toFixed(1) : "0.0"}%`;
}
