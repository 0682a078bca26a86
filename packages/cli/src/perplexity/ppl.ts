// Perplexity as llama-perplexity computes it (tools/perplexity/perplexity.cpp, perplexity()):
// the mean negative log-likelihood of the scored tokens, summed in float64, PPL = exp(mean), and
// its uncertainty by error propagation from the standard error of the mean:
// PPL · sqrt((mean(nll²) − mean(nll)²) / (count − 1)).

const f32 = Math.fround;

/**
 * −log softmax(logits)[token] for F32 [nVocab] logits, as llama.cpp computes it when it writes no
 * base file: the float32 max, Σ exp(l − max) of float32 terms summed in float64, and
 * (logit − max) − log(sum) in float64.
 */
export function tokenNll(logits: Float32Array, token: number): number {
  const n = logits.length;
  let max = logits[0]!;
  for (let i = 1; i < n; i++) if (logits[i]! > max) max = logits[i]!;
  let sumExp = 0;
  for (let i = 0; i < n; i++) sumExp += f32(Math.exp(f32(logits[i]! - max)));
  return -(f32(logits[token]! - max) - Math.log(sumExp));
}

/** The final estimate: PPL and its uncertainty (undefined when the variance is not positive). */
export interface PerplexityEstimate {
  readonly ppl: number;
  readonly uncertainty: number | undefined;
  readonly count: number;
}

/** Sums of the scored tokens' negative log-likelihoods (float64). */
export class PerplexityAccumulator {
  nll = 0;
  nll2 = 0;
  count = 0;

  add(nll: number): void {
    this.nll += nll;
    this.nll2 += nll * nll;
    this.count++;
  }

  /** exp(mean nll) so far: the running value printed after each chunk. */
  get ppl(): number {
    return Math.exp(this.nll / this.count);
  }

  estimate(): PerplexityEstimate {
    const mean = this.nll / this.count;
    const ppl = Math.exp(mean);
    const variance = this.nll2 / this.count - mean * mean;
    const uncertainty = variance > 0 ? Math.sqrt(variance / (this.count - 1)) * ppl : undefined;
    return { ppl, uncertainty, count: this.count };
  }
}
