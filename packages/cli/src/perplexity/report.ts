// The text minfer perplexity prints: the same lines, labels and number formats as llama.cpp's
// llama-perplexity, so that scripts reading one read the other.
import type { KldChunkStats, KldSummary, Measured } from "./kld.js";
import type { PerplexityEstimate } from "./ppl.js";

/** printf's %W.Df: `digits` decimals, right-aligned in `width`; nan and inf spelled as C does. */
export function fixed(x: number, digits: number, width = 0): string {
  const s = Number.isNaN(x) ? "nan" : !Number.isFinite(x) ? (x > 0 ? "inf" : "-inf") : x.toFixed(digits);
  return s.padStart(width);
}

/** The running value after chunk `i` (0-based): `[1]12.3456,`. */
export function chunkPpl(i: number, ppl: number): string {
  return `[${i + 1}]${fixed(ppl, 4)},`;
}

/** The closing line of a perplexity run. */
export function finalEstimate(e: PerplexityEstimate): string {
  return e.uncertainty === undefined
    ? "Unexpected negative standard deviation of log(prob)"
    : `Final estimate: PPL = ${fixed(e.ppl, 4)} +/- ${fixed(e.uncertainty, 5)}`;
}

/** The column heads of the per-chunk KL divergence lines. */
export const KLD_CHUNK_HEADER =
  "chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence              Δp RMS            Same top p";

const pm = (m: Measured, digits: number, width: number, scale = 1) =>
  `${fixed(scale * m.value, digits, width)} ± ${fixed(scale * m.uncertainty, digits, width)}`;

/** One per-chunk KL divergence line (chunk `i`, 0-based), over all tokens so far. */
export function kldChunkLine(i: number, s: KldChunkStats): string {
  return (
    `${String(i + 1).padStart(4)}` +
    `    ${pm(s.ppl, 4, 9)}` +
    `    ${pm(s.lnRatio, 5, 10)}` +
    `    ${pm(s.kld, 5, 10)}` +
    `    ${pm(s.rmsDp, 3, 6, 100)} %` +
    `    ${pm(s.sameTop, 3, 6, 100)} %`
  );
}

/** The statistics blocks printed at the end of a KL divergence run. */
export function kldSummaryLines(s: KldSummary): string[] {
  const pct = (x: number) => `${fixed(100 * x, 3, 6)}%`;
  return [
    "====== Perplexity statistics ======",
    `Mean PPL(Q)                   : ${pm(s.pplQ, 6, 10)}`,
    `Mean PPL(base)                : ${pm(s.pplBase, 6, 10)}`,
    `Cor(ln(PPL(Q)), ln(PPL(base))): ${fixed(100 * s.correlation, 2, 6)}%`,
    `Mean ln(PPL(Q)/PPL(base))     : ${pm(s.lnRatio, 6, 10)}`,
    `Mean PPL(Q)/PPL(base)         : ${pm(s.ratio, 6, 10)}`,
    `Mean PPL(Q)-PPL(base)         : ${pm(s.difference, 6, 10)}`,
    "",
    "====== KL divergence statistics ======",
    `Mean    KLD: ${pm(s.kld, 6, 10)}`,
    ...s.kldPercentiles.map(([label, v]) => `${label.padEnd(7)} KLD: ${fixed(v, 6, 10)}`),
    "",
    "====== Token probability statistics ======",
    `Mean    Δp: ${fixed(100 * s.dp.value, 3, 6)} ± ${fixed(100 * s.dp.uncertainty, 3, 5)} %`,
    ...s.dpPercentiles.map(([label, v]) => `${label.padEnd(7)} Δp: ${pct(v)}`),
    `RMS Δp    : ${fixed(100 * s.rmsDp.value, 3, 6)} ± ${fixed(100 * s.rmsDp.uncertainty, 3, 5)} %`,
    `Same top p: ${fixed(100 * s.sameTop.value, 3, 6)} ± ${fixed(100 * s.sameTop.uncertainty, 3, 5)} %`,
  ];
}
