// One model file run step by step by minfer (@minfer/engine on the CPU backend) and by llama.cpp
// (node-llama-cpp's prebuilt CPU binary), both fed the same tokens: the prompt, then llama.cpp's
// greedy choice at every step (so the two stay on one sequence even where they disagree).
//
// node-llama-cpp returns raw logits (`generateNext.logits`), so logits are compared directly, and
// log-probabilities too (each side minus its own log-sum-exp; llama.cpp's from
// `totalLogitWeight` = Σ exp(l − max)). Building the full 152k-entry logits map in JavaScript costs
// ~150 ms a step, so most steps ask llama.cpp only for its top 8 and for minfer's top 8 (the
// argmax of both and their competitors); every `fullEvery`-th step compares the whole vocabulary.
import { Context, type Model } from "@minfer/engine";

type LlamaModel = import("node-llama-cpp").LlamaModel;
type Token = import("node-llama-cpp").Token;

export interface Disagreement {
  step: number;
  llamaToken: number;
  minferToken: number;
  /** llama.cpp's logit of its choice minus its logit of minfer's choice (≥ 0). */
  llamaGap: number;
  /** minfer's logit of its choice minus its logit of llama.cpp's choice (≥ 0). */
  minferGap: number;
}

export interface CompareResult {
  steps: number;
  /** Steps where both engines' argmax is the same token. */
  agree: number;
  /** max |Δlogit| over the compared tokens of every step. */
  maxDLogit: number;
  /** max |Δ log p| over the same tokens. */
  maxDLogp: number;
  /** max |Δlogit| over the whole vocabulary, at the full steps. */
  fullMaxDLogit: number;
  fullSteps: number;
  /** Smallest top-1/top-2 logit gap llama.cpp had over the run. */
  minLlamaGap: number;
  disagreements: Disagreement[];
  llamaTokens: number[];
}

export interface CompareOptions {
  prompt: number[];
  steps: number;
  nCtx: number;
  kv: "f16" | "f32";
  /** Compare the whole vocabulary every this many steps (0: never). */
  fullEvery: number;
  threads: number;
}

const TOP = 8;

function topTokens(logits: Float32Array, k: number): number[] {
  const best: number[] = [];
  for (let i = 0; i < logits.length; i++) {
    if (best.length === k && logits[i]! <= logits[best[k - 1]!]!) continue;
    let j = best.length < k ? best.length : k - 1;
    while (j > 0 && logits[best[j - 1]!]! < logits[i]!) j--;
    best.splice(j, 0, i);
    if (best.length > k) best.pop();
  }
  return best;
}

/** float64 log-sum-exp. */
function logSumExp(values: Iterable<number>): number {
  let max = Number.NEGATIVE_INFINITY;
  for (const v of values) if (v > max) max = v;
  let sum = 0;
  for (const v of values) sum += Math.exp(v - max);
  return max + Math.log(sum);
}

/** Argmax of a map of logits; ties go to the lower token id. */
function argmaxOf(map: Map<Token, number>): number {
  let best = -1;
  let bestV = Number.NEGATIVE_INFINITY;
  for (const [t, v] of map) {
    if (v > bestV || (v === bestV && t < best)) {
      best = t;
      bestV = v;
    }
  }
  return best;
}

function argmax(logits: Float32Array): number {
  let best = 0;
  for (let i = 1; i < logits.length; i++) if (logits[i]! > logits[best]!) best = i;
  return best;
}

/** Runs `model` (minfer) and `lmodel` (llama.cpp), loaded from the same file, side by side. */
export async function compareEngines(
  model: Model,
  lmodel: LlamaModel,
  options: CompareOptions,
): Promise<CompareResult> {
  const ctx = new Context(model, { nCtx: options.nCtx, kvDtype: options.kv });
  let lctx: Awaited<ReturnType<LlamaModel["createContext"]>> | undefined;
  try {
    lctx = await lmodel.createContext({
      contextSize: options.nCtx,
      batchSize: Math.max(options.prompt.length, 1),
      threads: options.threads,
      // llama.cpp's CPU flash attention rounds Q to F16 and accumulates differently (it moves the
      // F32 logits by ~4e-4 here); its plain attention path is the one minfer implements.
      flashAttention: false,
      ...(options.kv === "f32"
        ? { experimentalKvCacheKeyType: "F32" as const, experimentalKvCacheValueType: "F32" as const }
        : {}),
    });
    const seq = lctx.getSequence();
    const r: CompareResult = {
      steps: options.steps,
      agree: 0,
      maxDLogit: 0,
      maxDLogp: 0,
      fullMaxDLogit: 0,
      fullSteps: 0,
      minLlamaGap: Number.POSITIVE_INFINITY,
      disagreements: [],
      llamaTokens: [],
    };
    let next = options.prompt;
    for (let step = 0; step < options.steps; step++) {
      const M = await ctx.eval(next);
      const mTop = topTokens(M, TOP);
      const full = options.fullEvery > 0 && step % options.fullEvery === 0;
      const logits = full ? true : { filter: { tokens: mTop as Token[], includeTop: TOP } };
      const res = await seq.controlledEvaluate(
        next.map((t, k) =>
          k === next.length - 1
            ? [t as Token, { generateNext: { logits, totalLogitWeight: true } }]
            : (t as Token),
        ),
      );
      const out = res.at(-1)?.next;
      if (!out?.logits || out.totalLogitWeight === undefined) throw new Error("llama.cpp returned no logits");
      const L = out.logits;
      const a = argmaxOf(L);
      const lMax = L.get(a as Token)!;
      const lseL = lMax + Math.log(out.totalLogitWeight);
      const lseM = logSumExp(M);
      let dl = 0;
      let dp = 0;
      for (const [t, v] of L) {
        const m = M[t]!;
        dl = Math.max(dl, Math.abs(v - m));
        dp = Math.max(dp, Math.abs(v - lseL - (m - lseM)));
      }
      r.maxDLogit = Math.max(r.maxDLogit, dl);
      r.maxDLogp = Math.max(r.maxDLogp, dp);
      if (full) {
        if (L.size !== M.length) throw new Error(`llama.cpp returned ${L.size} logits, minfer ${M.length}`);
        r.fullMaxDLogit = Math.max(r.fullMaxDLogit, dl);
        r.fullSteps++;
      }
      let second = Number.NEGATIVE_INFINITY;
      for (const [t, v] of L) if (t !== a && v > second) second = v;
      r.minLlamaGap = Math.min(r.minLlamaGap, lMax - second);
      const m = argmax(M);
      if (m === a) r.agree++;
      else {
        r.disagreements.push({
          step,
          llamaToken: a,
          minferToken: m,
          llamaGap: lMax - L.get(m as Token)!,
          minferGap: M[m]! - M[a]!,
        });
      }
      r.llamaTokens.push(a);
      next = [a];
    }
    return r;
  } finally {
    ctx.dispose();
    await lctx?.dispose();
  }
}
