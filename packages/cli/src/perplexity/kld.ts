// KL divergence and the other statistics llama-perplexity's --kl-divergence prints
// (tools/perplexity/perplexity.cpp, kl_divergence()), against a base file's quantized
// log-probabilities (logits-file.ts). Per scored token, with base log p_b(i) = scale·q[i] + min:
//   KLD    = Σ_{i: log p_b(i) > −16} p_b(i) · (log p_b(i) − log q(i))   (float64 sum of float32 terms)
//   nll    = −log q(token),  nll_base = −log p_b(token)
//   Δp     = q(token) − p_b(token)
//   same top: argmax of the logits (first on ties) = argmax of the base row (first on ties)
// and over all tokens: mean ± standard error (counts above 10), covariance of nll and nll_base
// (counts of 10 or more), percentiles by linear interpolation in float32. Each value is rounded as
// llama.cpp rounds it (float32 where it holds a float, float64 where it holds a double).
import type { DecodedRow } from "./logits-file.js";

const f32 = Math.fround;

/** A value and its uncertainty. */
export interface Measured {
  readonly value: number;
  readonly uncertainty: number;
}

/** Mean and standard error of the mean from a sum, a sum of squares and a count. */
export function meanAndUncertainty(sum: number, sum2: number, count: number): Measured {
  if (count < 1) return { value: 0, uncertainty: 0 };
  const mean = sum / count;
  const variance = sum2 / count - mean * mean;
  return { value: mean, uncertainty: variance > 0 && count > 10 ? Math.sqrt(variance / (count - 1)) : 0 };
}

/** Covariance of two means (of a and b) from their sums and the sum of products. */
export function covariance(sumA: number, sumB: number, sumAB: number, count: number): number {
  if (count < 10) return 0;
  return (sumAB / count - (sumA / count) * (sumB / count)) / (count - 1);
}

/** The `fraction` percentile of ascending `sorted`, interpolated linearly in float32. */
export function percentile(sorted: Float32Array, fraction: number): number {
  const frac = f32(fraction);
  if (frac <= 0) return sorted[0]!;
  if (frac >= 1) return sorted[sorted.length - 1]!;
  let p = f32(frac * f32(sorted.length - 1));
  const ip = Math.trunc(p);
  p = f32(p - ip);
  const next = sorted[Math.min(ip + 1, sorted.length - 1)]!;
  return f32(f32(f32(1 - p) * sorted[ip]!) + f32(p * next));
}

/** The median of ascending `sorted` (the mean of the two middle values, in float32, for an even count). */
export function median(sorted: Float32Array): number {
  const n = sorted.length;
  return n % 2 === 0 ? f32(0.5 * f32(sorted[n / 2]! + sorted[n / 2 - 1]!)) : sorted[(n - 1) / 2]!;
}

/** What the line after each chunk shows (over all tokens so far). */
export interface KldChunkStats {
  readonly ppl: Measured;
  readonly lnRatio: Measured;
  readonly kld: Measured;
  /** RMS of Δp (a fraction). */
  readonly rmsDp: Measured;
  /** Share of tokens whose top token agrees (a fraction). */
  readonly sameTop: Measured;
}

/** The statistics printed at the end. */
export interface KldSummary {
  readonly count: number;
  readonly pplQ: Measured;
  readonly pplBase: Measured;
  /** Correlation of ln PPL(Q) and ln PPL(base) (a fraction). */
  readonly correlation: number;
  readonly lnRatio: Measured;
  readonly ratio: Measured;
  readonly difference: Measured;
  readonly kld: Measured;
  /** [label, value]: Maximum, 99.9%, …, Median, …, Minimum. */
  readonly kldPercentiles: readonly (readonly [string, number])[];
  readonly dp: Measured;
  readonly dpPercentiles: readonly (readonly [string, number])[];
  readonly rmsDp: Measured;
  readonly sameTop: Measured;
}

/** Per-token sums (float64) and values (float32) over the scored tokens, as llama.cpp keeps them. */
export class KldAccumulator {
  sumNll = 0;
  sumNll2 = 0;
  sumNllBase = 0;
  sumNllBase2 = 0;
  sumNllNllBase = 0;
  sumKld = 0;
  sumKld2 = 0;
  sumPDiff = 0;
  sumPDiff2 = 0;
  sumPDiff4 = 0;
  maxPDiff = 0;
  nSameTop = 0;
  count = 0;
  /** F32 [capacity]: each token's KLD, in order. */
  readonly kldValues: Float32Array;
  /** F32 [capacity]: each token's Δp, in order. */
  readonly pDiffValues: Float32Array;

  constructor(capacity: number) {
    this.kldValues = new Float32Array(capacity);
    this.pDiffValues = new Float32Array(capacity);
  }

  /** Adds one scored token: the model's logits F32 [nVocab] and the base file's row for it. */
  add(logits: Float32Array, base: DecodedRow, token: number): void {
    const n = logits.length;
    const { scale, minLogProb, q } = base;
    let max = logits[0]!;
    let imax = 0;
    for (let i = 1; i < n; i++)
      if (logits[i]! > max) {
        max = logits[i]!;
        imax = i;
      }
    let sumExp = 0;
    for (let i = 0; i < n; i++) sumExp += f32(Math.exp(f32(logits[i]! - max)));
    const logSumExp = f32(Math.log(sumExp));
    const nll = f32(f32(max + logSumExp) - logits[token]!);
    this.sumNll += nll;
    this.sumNll2 += f32(nll * nll);
    const nllBase = -f32(f32(scale * q[token]!) + minLogProb);
    this.sumNllBase += nllBase;
    this.sumNllBase2 += f32(nllBase * nllBase);
    this.sumNllNllBase += f32(nll * nllBase);

    const logNorm = f32(max + logSumExp); // log q(i) = logits[i] − logNorm
    let kld = 0;
    let imaxBase = -1;
    let topBase = 0;
    for (let i = 0; i < n; i++) {
      const logPBase = f32(f32(scale * q[i]!) + minLogProb);
      if (i === 0 || logPBase > topBase) {
        topBase = logPBase;
        imaxBase = i;
      }
      if (logPBase > -16) kld += f32(f32(Math.exp(logPBase)) * f32(f32(logPBase - logits[i]!) + logNorm));
    }
    this.sumKld += kld;
    this.sumKld2 += kld * kld;
    if (imax === imaxBase) this.nSameTop++;

    const pDiff = f32(f32(Math.exp(-nll)) - f32(Math.exp(-nllBase)));
    const pDiff2 = f32(pDiff * pDiff);
    this.sumPDiff += pDiff;
    this.sumPDiff2 += pDiff2;
    this.sumPDiff4 += pDiff2 * pDiff2;
    this.maxPDiff = Math.max(this.maxPDiff, Math.abs(pDiff));
    this.kldValues[this.count] = kld;
    this.pDiffValues[this.count] = pDiff;
    this.count++;
  }

  #pplQ(): Measured {
    return meanAndUncertainty(this.sumNll, this.sumNll2, this.count);
  }

  #pplBase(): Measured {
    return meanAndUncertainty(this.sumNllBase, this.sumNllBase2, this.count);
  }

  #lnRatio(): Measured {
    const a = this.#pplQ();
    const b = this.#pplBase();
    const cov = covariance(this.sumNll, this.sumNllBase, this.sumNllNllBase, this.count);
    return {
      value: a.value - b.value,
      uncertainty: Math.sqrt(a.uncertainty ** 2 + b.uncertainty ** 2 - 2 * cov),
    };
  }

  #rmsDp(): Measured {
    const mse = meanAndUncertainty(this.sumPDiff2, this.sumPDiff4, this.count);
    const rms = Math.sqrt(mse.value);
    return { value: rms, uncertainty: (0.5 / rms) * mse.uncertainty };
  }

  #sameTop(): Measured {
    const p = this.nSameTop / this.count;
    return { value: p, uncertainty: Math.sqrt((p * (1 - p)) / (this.count - 1)) };
  }

  /** The running figures printed after each chunk. */
  chunkStats(): KldChunkStats {
    const log = this.#pplQ();
    const ppl = Math.exp(log.value);
    return {
      ppl: { value: ppl, uncertainty: ppl * log.uncertainty },
      lnRatio: this.#lnRatio(),
      kld: meanAndUncertainty(this.sumKld, this.sumKld2, this.count),
      rmsDp: this.#rmsDp(),
      sameTop: this.#sameTop(),
    };
  }

  /** The final statistics; undefined below 100 tokens (too few, as llama.cpp says by printing none). */
  summary(): KldSummary | undefined {
    if (this.count < 100) return undefined;
    const klds = this.kldValues.slice(0, this.count).sort();
    const dps = this.pDiffValues.slice(0, this.count).sort();
    const logQ = this.#pplQ();
    const logBase = this.#pplBase();
    const pplQ = Math.exp(logQ.value);
    const pplBase = Math.exp(logBase.value);
    const pplQUnc = pplQ * logQ.uncertainty;
    const pplBaseUnc = pplBase * logBase.uncertainty;
    const cov = covariance(this.sumNll, this.sumNllBase, this.sumNllNllBase, this.count);
    const lnRatio = this.#lnRatio();
    const ratio = Math.exp(lnRatio.value);
    const pplCov = pplQ * pplBase * cov;
    const at = (v: Float32Array, labels: readonly [string, number][]) =>
      labels.map(([label, fr]) => [label, percentile(v, fr)] as const);
    return {
      count: this.count,
      pplQ: { value: pplQ, uncertainty: pplQUnc },
      pplBase: { value: pplBase, uncertainty: pplBaseUnc },
      correlation: cov / (logQ.uncertainty * logBase.uncertainty),
      lnRatio,
      ratio: { value: ratio, uncertainty: ratio * lnRatio.uncertainty },
      difference: {
        value: pplQ - pplBase,
        uncertainty: Math.sqrt(pplQUnc ** 2 + pplBaseUnc ** 2 - 2 * pplCov),
      },
      kld: meanAndUncertainty(this.sumKld, this.sumKld2, this.count),
      kldPercentiles: [
        ["Maximum", klds[klds.length - 1]!],
        ...at(klds, [
          ["99.9%", 0.999],
          ["99.0%", 0.99],
          ["95.0%", 0.95],
          ["90.0%", 0.9],
        ]),
        ["Median", median(klds)],
        ...at(klds, [
          ["10.0%", 0.1],
          [" 5.0%", 0.05],
          [" 1.0%", 0.01],
          [" 0.1%", 0.001],
        ]),
        ["Minimum", klds[0]!],
      ],
      dp: meanAndUncertainty(this.sumPDiff, this.sumPDiff2, this.count),
      dpPercentiles: [
        ["Maximum", dps[dps.length - 1]!],
        ...at(dps, [
          ["99.9%", 0.999],
          ["99.0%", 0.99],
          ["95.0%", 0.95],
          ["90.0%", 0.9],
          ["75.0%", 0.75],
        ]),
        ["Median", median(dps)],
        ...at(dps, [
          ["25.0%", 0.25],
          ["10.0%", 0.1],
          [" 5.0%", 0.05],
          [" 1.0%", 0.01],
          [" 0.1%", 0.001],
        ]),
        ["Minimum", dps[0]!],
      ],
      rmsDp: this.#rmsDp(),
      sameTop: this.#sameTop(),
    };
  }
}
