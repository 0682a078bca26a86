// `minfer perplexity` (issue 21) checked against things that are not minfer's own code:
// - llama.cpp itself (node-llama-cpp's prebuilt CPU binary) on stories260K: the reference
//   perplexity of the same chunks, computed here in float64 from llama.cpp's raw logits, and a base
//   file written here from llama.cpp's logits that minfer's --kl-divergence must read;
// - the base-file layout and the KL divergence statistics against formulas written out in this file
//   (direct float64 sums over small made-up distributions), not against the modules' own code;
// - each refusal, with its code.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chunkInput, planChunks } from "./perplexity/chunks.js";
import { PerplexityError } from "./perplexity/errors.js";
import { KldAccumulator } from "./perplexity/kld.js";
import {
  decodeRow,
  encodeLogProbRow,
  LogitsFileReader,
  LogitsFileWriter,
  rowStride,
} from "./perplexity/logits-file.js";
import { PerplexityAccumulator, tokenNll } from "./perplexity/ppl.js";
import { fixtures, minfer } from "./test-helpers.js";

const STORIES = join(fixtures, "models/stories260K.gguf");
const N_CTX = 64;
/**
 * Both engines keep K/V in F32 for the comparisons with llama.cpp: with an F16 cache llama.cpp's CPU
 * rounds Q and the attention weights to F16 too (its F16 matrix products convert the other operand),
 * which moves stories260K's logits by up to 1.2e-2; with F32 they differ by < 1e-5.
 */
const KV = ["--kv-type", "f32"];

// An original story in the style of TinyStories (what stories260K was trained on), long enough for
// several chunks of 64 tokens.
const STORY = [
  "Once upon a time, there was a little girl named Mia. She lived in a small house near a big green park.",
  "Every day, Mia went to the park with her dog, Max. Max was brown and he liked to run after the ball.",
  "One sunny day, Mia saw a bird in a tree. The bird was sad because it could not find its mom.",
  'Mia said, "Do not be sad, little bird. I will help you." She looked under the tree and behind the big rock.',
  "Max helped too. He sniffed the grass and barked at a bush. Inside the bush, there was the mom bird!",
  "The little bird was so happy. It sang a sweet song for Mia and Max. Mia smiled and gave Max a big hug.",
  "The next day, Mia and her mom made a cake. They put the cake on the table and went to play outside.",
  "When they came back, the cake was gone! Mia was surprised. She looked at Max. Max had cake on his nose.",
  'Mia laughed and said, "Max, you are a silly dog." Her mom laughed too, and they made a new cake together.',
  "That night, Mia went to bed and thought about the bird, the cake and her funny dog. She was very happy.",
  "The end.",
].join(" ");

/** log Σ exp(l) over a row, in float64. */
function logSumExp(row: ArrayLike<number>): number {
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < row.length; i++) max = Math.max(max, row[i]!);
  let s = 0;
  for (let i = 0; i < row.length; i++) s += Math.exp(row[i]! - max);
  return max + Math.log(s);
}

/** Mean and standard error of the mean, two-pass, in float64. */
function meanSe(xs: readonly number[]): { mean: number; se: number } {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const ss = xs.reduce((a, b) => a + (b - mean) ** 2, 0);
  return { mean, se: Math.sqrt(ss / xs.length / (xs.length - 1)) };
}

/**
 * A base-file row written out from the layout alone: scale = (max − min)/65535, min raised to
 * max − 16, min_log_prob = min − max − log Σ exp(l − max), q = round((l − min)/scale).
 */
function referenceRow(logits: ArrayLike<number>, nVocab: number): Uint16Array {
  const row = new Uint16Array(rowStride(nVocab));
  let max = Number.NEGATIVE_INFINITY;
  let min = Number.POSITIVE_INFINITY;
  for (let i = 0; i < nVocab; i++) {
    max = Math.max(max, logits[i]!);
    min = Math.min(min, logits[i]!);
  }
  min = Math.max(min, max - 16);
  const scale = (max - min) / 65535;
  const head = new DataView(row.buffer);
  head.setFloat32(0, scale, true);
  head.setFloat32(4, min - logSumExp(logits), true);
  for (let i = 0; i < nVocab; i++) row[4 + i] = logits[i]! > min ? Math.round((logits[i]! - min) / scale) : 0;
  return row;
}

/** A deterministic pseudo-random stream in [0, 1) (mulberry32). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The numbers a `minfer perplexity` run printed. */
function parsePpl(stdout: string): { chunks: number[]; ppl: number; unc: number } {
  const chunks = [...stdout.matchAll(/\[(\d+)\]([\d.]+),/g)].map((m) => Number(m[2]));
  const m = /Final estimate: PPL = ([\d.]+) \+\/- ([\d.]+)/.exec(stdout);
  if (!m) throw new Error(`no final estimate in:\n${stdout}`);
  return { chunks, ppl: Number(m[1]), unc: Number(m[2]) };
}

function statistic(stdout: string, label: string): number {
  const escaped = label.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const m = new RegExp(`^${escaped}\\s*:?\\s*(-?[\\d.]+)`, "m").exec(stdout);
  if (!m) throw new Error(`no "${label}" in:\n${stdout}`);
  return Number(m[1]);
}

let tmp = "";
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), "minfer-ppl-"));
});
afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe("perplexity against llama.cpp (node-llama-cpp) on stories260K", () => {
  // What llama.cpp gives for the same chunks, computed in this file: tokens, per-chunk running PPL,
  // the final estimate, and the scored rows' logits (for a base file written here).
  const ref = {
    tokens: [] as number[],
    running: [] as number[],
    ppl: 0,
    unc: 0,
    rows: [] as Float64Array[],
  };
  const nVocab = 512; // stories260K's (fixtures/PROVENANCE.md)

  beforeAll(async () => {
    expect(existsSync(STORIES), `fixture ${STORIES} is missing`).toBe(true);
    const { getLlama, LlamaLogLevel } = await import("node-llama-cpp");
    const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
    const lmodel = await llama.loadModel({ modelPath: STORIES });
    try {
      expect(lmodel.tokens.shouldPrependBosToken).toBe(true);
      ref.tokens = [lmodel.tokens.bos!, ...lmodel.tokenize(STORY)];
      const lctx = await lmodel.createContext({
        contextSize: N_CTX,
        batchSize: N_CTX,
        threads: 1,
        flashAttention: false,
        experimentalKvCacheKeyType: "F32",
        experimentalKvCacheValueType: "F32",
      });
      const seq = lctx.getSequence();
      const first = N_CTX / 2;
      const nChunk = Math.floor(ref.tokens.length / N_CTX);
      const nlls: number[] = [];
      for (let c = 0; c < nChunk; c++) {
        await seq.clearHistory();
        const input = ref.tokens.slice(c * N_CTX, (c + 1) * N_CTX);
        input[0] = lmodel.tokens.bos!;
        const out = await seq.controlledEvaluate(
          input.map((t, k) => (k >= first ? [t, { generateNext: { logits: true } }] : t)) as Parameters<
            typeof seq.controlledEvaluate
          >[0],
        );
        for (let j = first; j < N_CTX - 1; j++) {
          const map = out[j]!.next.logits!;
          expect(map.size).toBe(nVocab);
          const row = new Float64Array(nVocab);
          for (const [t, l] of map) row[t] = l;
          ref.rows.push(row);
          nlls.push(logSumExp(row) - row[input[j + 1]!]!);
        }
        ref.running.push(Math.exp(nlls.reduce((a, b) => a + b, 0) / nlls.length));
      }
      const { mean, se } = meanSe(nlls);
      ref.ppl = Math.exp(mean);
      ref.unc = se * ref.ppl;
      await lctx.dispose();
    } finally {
      await lmodel.dispose();
    }
    writeFileSync(join(tmp, "story.txt"), `${STORY}\n`);
  }, 120_000);

  /** minfer perplexity of the story at -c N_CTX with F32 K/V, and `extra` flags. */
  const storyPerplexity = (...extra: string[]) =>
    minfer("perplexity", "-m", STORIES, "-f", join(tmp, "story.txt"), "-c", `${N_CTX}`, ...KV, ...extra);

  it("gives llama.cpp's perplexity, chunk by chunk", async () => {
    expect(ref.running.length).toBeGreaterThanOrEqual(5);
    const r = await storyPerplexity("-t", "1");
    expect(r.code, r.stderr).toBe(0);
    const got = parsePpl(r.stdout);
    expect(got.chunks.length).toBe(ref.running.length);
    // Printed with 4 decimals at PPL ≈ 4: a relative 1e-5 resolution; the engines' float32 logits
    // differ by ~1e-5.
    for (let i = 0; i < got.chunks.length; i++) expect(got.chunks[i]!).toBeCloseTo(ref.running[i]!, 3);
    expect(Math.abs(got.ppl / ref.ppl - 1)).toBeLessThan(1e-4);
    expect(Math.abs(got.unc / ref.unc - 1)).toBeLessThan(1e-3);
    // a smaller micro-batch cuts each chunk in pieces: the same figure
    const b = await storyPerplexity("-b", "16", "-t", "1");
    expect(b.code, b.stderr).toBe(0);
    expect(Math.abs(parsePpl(b.stdout).ppl / ref.ppl - 1)).toBeLessThan(1e-4);
  });

  it("writes a base file of llama.cpp's layout: the text's tokens, rows that decode to llama.cpp's log-probabilities", async () => {
    const base = join(tmp, "stories-minfer.kld");
    const r = await storyPerplexity("--kl-divergence-base", base);
    expect(r.code, r.stderr).toBe(0);
    expect(Math.abs(parsePpl(r.stdout).ppl / ref.ppl - 1)).toBeLessThan(1e-4);
    const bytes = readFileSync(base);
    const nChunk = ref.running.length;
    const scored = N_CTX - 1 - N_CTX / 2;
    const stride = 2 * Math.ceil(nVocab / 2) + 4;
    expect(bytes.length).toBe(20 + 4 * N_CTX * nChunk + nChunk * scored * stride * 2);
    expect(bytes.subarray(0, 8).toString("latin1")).toBe("_logits_");
    expect([bytes.readUInt32LE(8), bytes.readInt32LE(12), bytes.readInt32LE(16)]).toEqual([
      N_CTX,
      nVocab,
      nChunk,
    ]);
    const tokens = Array.from({ length: N_CTX * nChunk }, (_, i) => bytes.readInt32LE(20 + 4 * i));
    expect(tokens).toEqual(ref.tokens.slice(0, N_CTX * nChunk));
    let worst = 0;
    for (let r0 = 0; r0 < ref.rows.length; r0++) {
      const at = 20 + 4 * N_CTX * nChunk + r0 * stride * 2;
      const scale = bytes.readFloatLE(at);
      const minLogProb = bytes.readFloatLE(at + 4);
      const row = ref.rows[r0]!;
      const lse = logSumExp(row);
      for (let i = 0; i < nVocab; i++) {
        const logp = row[i]! - lse;
        if (logp < minLogProb + 1e-3) continue; // below the file's resolved range
        const decoded = scale * bytes.readUInt16LE(at + 8 + 2 * i) + minLogProb;
        worst = Math.max(worst, Math.abs(decoded - logp));
      }
    }
    // half a quantization step (16 / 65535 / 2 ≈ 1.2e-4) plus the engines' logit difference
    expect(worst).toBeLessThan(2e-4);
  });

  it("reads a base file written from llama.cpp's logits: KL divergence ≈ 0, PPL(base) = llama.cpp's", async () => {
    const nChunk = ref.running.length;
    const stride = rowStride(nVocab);
    const scored = N_CTX - 1 - N_CTX / 2;
    const head = Buffer.alloc(20 + 4 * N_CTX * nChunk);
    head.write("_logits_", 0, "latin1");
    head.writeUInt32LE(N_CTX, 8);
    head.writeInt32LE(nVocab, 12);
    head.writeInt32LE(nChunk, 16);
    for (let i = 0; i < N_CTX * nChunk; i++) head.writeInt32LE(ref.tokens[i]!, 20 + 4 * i);
    const rows = new Uint16Array(nChunk * scored * stride);
    for (const [r0, row] of ref.rows.entries()) rows.set(referenceRow(row, nVocab), r0 * stride);
    const base = join(tmp, "stories-llama.kld");
    writeFileSync(base, Buffer.concat([head, new Uint8Array(rows.buffer)]));
    const r = await minfer(
      "perplexity",
      "-m",
      STORIES,
      "--kl-divergence-base",
      base,
      "--kl-divergence",
      ...KV,
      "-t",
      "1",
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("====== KL divergence statistics ======");
    expect(Math.abs(statistic(r.stdout, "Mean    KLD"))).toBeLessThan(2e-5);
    expect(statistic(r.stdout, "Mean PPL(Q)")).toBeCloseTo(ref.ppl, 2);
    // PPL(base) from the rows alone: the quantization moves it by < 1e-4 relative
    expect(Math.abs(statistic(r.stdout, "Mean PPL(base)") / ref.ppl - 1)).toBeLessThan(2e-4);
    expect(statistic(r.stdout, "Same top p")).toBeGreaterThan(99);
    expect(Math.abs(statistic(r.stdout, "RMS Δp"))).toBeLessThan(0.05); // percent
    const lines = r.stdout.split("\n").filter((l) => /^\s+\d+\s{4}/.test(l));
    expect(lines.length).toBe(nChunk);
  });
});

describe("the base-logits file", () => {
  it("encodes a row as the layout says: scale, min log-probability, rounded steps, zero padding", () => {
    // odd vocabulary: one uint16 of padding; the last logit lies below max − 16
    const logits = new Float32Array([0.5, -1.25, 3, 2, -20]);
    const row = new Uint16Array(rowStride(5)).fill(0xabcd);
    const nll = encodeLogProbRow(logits, 1, row);
    expect(row.length).toBe(10);
    const view = new DataView(row.buffer);
    const lse = logSumExp(logits);
    const min = 3 - 16;
    expect(view.getFloat32(0, true)).toBeCloseTo(16 / 65535, 10);
    expect(view.getFloat32(4, true)).toBeCloseTo(min - lse, 5);
    expect(Array.from(row.subarray(4, 9))).toEqual(
      [0.5, -1.25, 3, 2, -20].map((l) => (l > min ? Math.round(((l - min) * 65535) / 16) : 0)),
    );
    expect(row[9]).toBe(0);
    expect(nll).toBeCloseTo(lse + 1.25, 5);
    // decoding gives log-softmax back within half a step
    const d = decodeRow(row, 0, 5);
    for (let i = 0; i < 4; i++)
      expect(Math.abs(d.scale * d.q[i]! + d.minLogProb - (logits[i]! - lse))).toBeLessThan(1.3e-4);
  });

  it("writes the header, the tokens and the rows at llama.cpp's offsets, and reads them back", async () => {
    const path = join(tmp, "small.kld");
    const nCtx = 6; // first = 3, 2 rows per chunk
    const nVocab = 5; // 10 uint16 = 20 bytes per row
    const tokens = Int32Array.from({ length: 12 }, (_, i) => (i * 3) % nVocab);
    const w = await LogitsFileWriter.create(path, { nCtx, nVocab, nChunk: 2, tokens });
    const chunk = (c: number) => Uint16Array.from({ length: 20 }, (_, i) => 1000 * c + i);
    await w.writeChunk(chunk(1));
    await w.writeChunk(chunk(2));
    await w.close();
    const bytes = readFileSync(path);
    expect(bytes.length).toBe(20 + 4 * 12 + 2 * 2 * 20);
    expect(bytes.subarray(0, 8).toString("latin1")).toBe("_logits_");
    expect(bytes.readUInt32LE(8)).toBe(6);
    expect(bytes.readInt32LE(12)).toBe(5);
    expect(bytes.readInt32LE(16)).toBe(2);
    for (let i = 0; i < 12; i++) expect(bytes.readInt32LE(20 + 4 * i)).toBe(tokens[i]);
    expect(bytes.readUInt16LE(68)).toBe(1000);
    expect(bytes.readUInt16LE(68 + 40 + 2 * 7)).toBe(2007);
    const r = await LogitsFileReader.open(path);
    try {
      expect(r.header.nCtx).toBe(6);
      expect(r.header.nVocab).toBe(5);
      expect(r.header.nChunk).toBe(2);
      expect(Array.from(r.header.tokens)).toEqual(Array.from(tokens));
      expect(Array.from(await r.readChunk(1))).toEqual(Array.from(chunk(2)));
    } finally {
      await r.close();
    }
  });

  async function refusal(name: string, bytes: Uint8Array): Promise<string> {
    const path = join(tmp, name);
    writeFileSync(path, bytes);
    try {
      await (await LogitsFileReader.open(path)).close();
    } catch (e) {
      expect(e).toBeInstanceOf(PerplexityError);
      return (e as PerplexityError).code;
    }
    return "accepted";
  }

  it("refuses a missing, foreign, cut-short or overlong file with its code", async () => {
    const good = Buffer.alloc(20 + 4 * 12 + 80);
    good.write("_logits_", 0, "latin1");
    good.writeUInt32LE(6, 8);
    good.writeInt32LE(5, 12);
    good.writeInt32LE(2, 16);
    expect(await refusal("good.kld", good)).toBe("accepted");
    await expect(LogitsFileReader.open(join(tmp, "absent.kld"))).rejects.toMatchObject({
      code: "MISSING_FILE",
    });
    const foreign = Buffer.from(good);
    foreign.write("GGUF", 0, "latin1");
    expect(await refusal("foreign.kld", foreign)).toBe("BAD_MAGIC");
    expect(await refusal("empty.kld", new Uint8Array(0))).toBe("TRUNCATED");
    expect(await refusal("header.kld", good.subarray(0, 14))).toBe("TRUNCATED");
    expect(await refusal("tokens.kld", good.subarray(0, 40))).toBe("TRUNCATED");
    expect(await refusal("rows.kld", good.subarray(0, good.length - 1))).toBe("TRUNCATED");
    expect(await refusal("long.kld", Buffer.concat([good, Buffer.alloc(2)]))).toBe("BAD_FILE");
    const badToken = Buffer.from(good);
    badToken.writeInt32LE(5, 20 + 4 * 7);
    expect(await refusal("token.kld", badToken)).toBe("BAD_FILE");
    const zeroChunks = Buffer.from(good.subarray(0, 20));
    zeroChunks.writeInt32LE(0, 16);
    expect(await refusal("zero.kld", zeroChunks)).toBe("BAD_FILE");
  });
});

describe("chunks and perplexity", () => {
  it("cuts whole chunks of the text, BOS first in each, and needs two of them", () => {
    const plan = planChunks(1000, 128);
    expect(plan).toEqual({ nCtx: 128, nChunk: 7, first: 64, scored: 63 });
    expect(planChunks(1000, 128, 3).nChunk).toBe(3);
    expect(planChunks(256, 128).nChunk).toBe(2);
    expect(planChunks(258, 129).scored).toBe(64);
    expect(() => planChunks(255, 128)).toThrow(expect.objectContaining({ code: "TEXT_TOO_SHORT" }));
    const tokens = Array.from({ length: 300 }, (_, i) => i + 10);
    expect(Array.from(chunkInput(tokens, plan, 1, 1).subarray(0, 3))).toEqual([1, 139, 140]);
    expect(Array.from(chunkInput(tokens, plan, 1).subarray(0, 3))).toEqual([138, 139, 140]);
  });

  it("scores −log softmax and estimates PPL ± its standard error as written out here", () => {
    const next = rng(7);
    const acc = new PerplexityAccumulator();
    const nlls: number[] = [];
    for (let t = 0; t < 50; t++) {
      const row = Float32Array.from({ length: 32 }, () => 6 * next() - 3);
      const tok = t % 32;
      const expected = logSumExp(row) - row[tok]!;
      expect(tokenNll(row, tok)).toBeCloseTo(expected, 5);
      acc.add(tokenNll(row, tok));
      nlls.push(expected);
    }
    const { mean, se } = meanSe(nlls);
    const e = acc.estimate();
    expect(e.ppl).toBeCloseTo(Math.exp(mean), 4);
    expect(e.uncertainty!).toBeCloseTo(se * Math.exp(mean), 4);
  });
});

describe("KL divergence statistics", () => {
  // 150 made-up tokens over a vocabulary of 9: base logits, and the "quantized" model's = base + noise.
  const nVocab = 9;
  const n = 150;
  const next = rng(21);
  const base = Array.from({ length: n }, () => Float32Array.from({ length: nVocab }, () => 8 * next() - 4));
  const model = base.map((b, t) =>
    Float32Array.from(b, (l) => l + (t % 5 === 0 ? 1.5 : 0.2) * (next() - 0.5)),
  );
  const tokens = base.map((_, t) => (t * 5) % nVocab);
  const rows = base.map((b) => referenceRow(b, nVocab));
  const acc = new KldAccumulator(n);
  for (let t = 0; t < n; t++) acc.add(model[t]!, decodeRow(rows[t]!, 0, nVocab), tokens[t]!);

  // The reference, term by term from the definitions: the base distribution is what its row says.
  const ref = base.map((_, t) => {
    const view = new DataView(rows[t]!.buffer);
    const scale = view.getFloat32(0, true);
    const minLogProb = view.getFloat32(4, true);
    const logPb = Array.from({ length: nVocab }, (_, i) => scale * rows[t]![4 + i]! + minLogProb);
    const m = model[t]!;
    const lse = logSumExp(m);
    const logQ = Array.from(m, (l) => l - lse);
    let kld = 0;
    for (let i = 0; i < nVocab; i++) if (logPb[i]! > -16) kld += Math.exp(logPb[i]!) * (logPb[i]! - logQ[i]!);
    const argmax = (xs: ArrayLike<number>) => Array.from(xs).indexOf(Math.max(...Array.from(xs)));
    const tok = tokens[t]!;
    return {
      kld,
      nll: -logQ[tok]!,
      nllBase: -logPb[tok]!,
      dp: Math.exp(logQ[tok]!) - Math.exp(logPb[tok]!),
      same: argmax(m) === argmax(logPb) ? 1 : 0,
    };
  });
  const s = acc.summary()!;
  const pick = (k: keyof (typeof ref)[number]) => ref.map((r) => r[k]);
  /** Linear interpolation between closest ranks, on the ascending values. */
  const pctl = (xs: number[], f: number) => {
    const v = [...xs].sort((a, b) => a - b);
    const p = f * (v.length - 1);
    const i = Math.floor(p);
    return (1 - (p - i)) * v[i]! + (p - i) * v[Math.min(i + 1, v.length - 1)]!;
  };

  it("mean KLD, its uncertainty and the percentiles", () => {
    const k = meanSe(pick("kld"));
    expect(s.count).toBe(n);
    expect(s.kld.value).toBeCloseTo(k.mean, 6);
    expect(s.kld.uncertainty).toBeCloseTo(k.se, 6);
    expect(k.mean).toBeGreaterThan(1e-3); // the noise is visible
    const get = (label: string) => s.kldPercentiles.find(([l]) => l.trim() === label)![1];
    expect(get("Maximum")).toBeCloseTo(Math.max(...pick("kld")), 6);
    expect(get("Minimum")).toBeCloseTo(Math.min(...pick("kld")), 6);
    expect(get("Median")).toBeCloseTo(pctl(pick("kld"), 0.5), 6);
    expect(get("99.0%")).toBeCloseTo(pctl(pick("kld"), 0.99), 6);
    expect(get("10.0%")).toBeCloseTo(pctl(pick("kld"), 0.1), 6);
    expect(get("0.1%")).toBeCloseTo(pctl(pick("kld"), 0.001), 6);
  });

  it("PPL(Q), PPL(base), their ratio, correlation and difference", () => {
    const q = meanSe(pick("nll"));
    const b = meanSe(pick("nllBase"));
    expect(s.pplQ.value).toBeCloseTo(Math.exp(q.mean), 5);
    expect(s.pplQ.uncertainty).toBeCloseTo(Math.exp(q.mean) * q.se, 5);
    expect(s.pplBase.value).toBeCloseTo(Math.exp(b.mean), 5);
    expect(s.lnRatio.value).toBeCloseTo(q.mean - b.mean, 6);
    // the ratio's uncertainty from the per-token differences (the covariance made explicit)
    const d = meanSe(ref.map((r) => r.nll - r.nllBase));
    expect(s.lnRatio.uncertainty).toBeCloseTo(d.se, 6);
    expect(s.ratio.value).toBeCloseTo(Math.exp(q.mean - b.mean), 6);
    expect(s.difference.value).toBeCloseTo(Math.exp(q.mean) - Math.exp(b.mean), 5);
    const nll = pick("nll");
    const nb = pick("nllBase");
    const cov = nll.reduce((a, x, i) => a + (x - q.mean) * (nb[i]! - b.mean), 0) / n;
    const sd = (xs: number[], m: number) => Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / n);
    expect(s.correlation).toBeCloseTo(cov / (sd(nll, q.mean) * sd(nb, b.mean)), 5);
  });

  it("Δp, RMS Δp and same top p", () => {
    const dp = meanSe(pick("dp"));
    expect(s.dp.value).toBeCloseTo(dp.mean, 6);
    expect(s.dp.uncertainty).toBeCloseTo(dp.se, 6);
    const dp2 = pick("dp").map((x) => x * x);
    expect(s.rmsDp.value).toBeCloseTo(Math.sqrt(dp2.reduce((a, x) => a + x, 0) / n), 6);
    expect(s.rmsDp.uncertainty).toBeCloseTo((0.5 / s.rmsDp.value) * meanSe(dp2).se, 6);
    const same = pick("same").reduce((a, x) => a + x, 0) / n;
    expect(same).toBeLessThan(1);
    expect(s.sameTop.value).toBeCloseTo(same, 12);
    expect(s.sameTop.uncertainty).toBeCloseTo(Math.sqrt((same * (1 - same)) / (n - 1)), 9);
    const get = (label: string) => s.dpPercentiles.find(([l]) => l.trim() === label)![1];
    expect(get("75.0%")).toBeCloseTo(pctl(pick("dp"), 0.75), 6);
    expect(get("Median")).toBeCloseTo(pctl(pick("dp"), 0.5), 6);
  });

  it("takes the first of tied top tokens on both sides", () => {
    const baseRow = referenceRow([2, 2, 0, -1], 4); // tokens 0 and 1 tie in the base
    const first = new KldAccumulator(1);
    first.add(Float32Array.of(2, 1.9, 0, -1), decodeRow(baseRow, 0, 4), 2);
    expect(first.nSameTop).toBe(1);
    const second = new KldAccumulator(1);
    second.add(Float32Array.of(1.9, 2, 0, -1), decodeRow(baseRow, 0, 4), 2);
    expect(second.nSameTop).toBe(0);
    const modelTie = new KldAccumulator(1); // the model's tie: its first token, 0, against the base's 1
    modelTie.add(Float32Array.of(3, 3, 0, -1), decodeRow(referenceRow([1, 2, 0, -1], 4), 0, 4), 2);
    expect(modelTie.nSameTop).toBe(0);
  });

  it("prints no statistics below 100 tokens", () => {
    const few = new KldAccumulator(10);
    for (let t = 0; t < 10; t++) few.add(model[t]!, decodeRow(rows[t]!, 0, nVocab), tokens[t]!);
    expect(few.summary()).toBeUndefined();
    expect(few.chunkStats().kld.value).toBeCloseTo(meanSe(pick("kld").slice(0, 10)).mean, 6);
  });
});

describe("refusals of minfer perplexity", () => {
  const text = () => join(tmp, "story.txt");
  beforeAll(() => {
    expect(existsSync(STORIES), `fixture ${STORIES} is missing`).toBe(true);
    writeFileSync(text(), `${STORY}\n`);
  });

  it("a missing text, a text too short for two chunks", async () => {
    const missing = await minfer("perplexity", "-m", STORIES, "-f", join(tmp, "nothing.txt"));
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("[MISSING_FILE]");
    const short = await minfer("perplexity", "-m", STORIES, "-f", text(), "-c", "512");
    expect(short.code).toBe(1);
    expect(short.stderr).toMatch(/\[TEXT_TOO_SHORT\].*needs at least 1024/);
    const usage = await minfer("perplexity", "-m", STORIES);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("-f TEXTFILE is required");
  });

  it("a base file that is foreign, cut short, of another vocabulary or another -c", async () => {
    const base = join(tmp, "refusals.kld");
    const w = await minfer(
      "perplexity",
      "-m",
      STORIES,
      "-f",
      text(),
      "-c",
      "32",
      "--chunks",
      "2",
      "--kl-divergence-base",
      base,
    );
    expect(w.code, w.stderr).toBe(0);
    const kld = (file: string, ...more: string[]) =>
      minfer("perplexity", "-m", STORIES, "--kl-divergence-base", file, "--kl-divergence", ...more);
    const ok = await kld(base);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stderr).toContain("too few for the statistics");
    const ctx = await kld(base, "-c", "64");
    expect(ctx.code).toBe(1);
    expect(ctx.stderr).toMatch(/\[CTX_MISMATCH\].*-c 32/);
    const bytes = readFileSync(base);
    writeFileSync(join(tmp, "cut.kld"), bytes.subarray(0, bytes.length - 100));
    const cut = await kld(join(tmp, "cut.kld"));
    expect(cut.code).toBe(1);
    expect(cut.stderr).toMatch(/\[TRUNCATED\].*1 of 2 chunks/);
    writeFileSync(join(tmp, "model-as-base.kld"), readFileSync(STORIES).subarray(0, 4096));
    const magic = await kld(join(tmp, "model-as-base.kld"));
    expect(magic.code).toBe(1);
    expect(magic.stderr).toContain("[BAD_MAGIC]");
    const other = Buffer.from(bytes);
    other.writeInt32LE(1000, 12);
    const size = 20 + 4 * 32 * 2 + 2 * 15 * rowStride(1000) * 2;
    writeFileSync(
      join(tmp, "vocab.kld"),
      Buffer.concat([other.subarray(0, 20 + 4 * 32 * 2), Buffer.alloc(size - 20 - 256)]),
    );
    const vocab = await kld(join(tmp, "vocab.kld"));
    expect(vocab.code).toBe(1);
    expect(vocab.stderr).toMatch(/\[VOCAB_MISMATCH\].*1000 tokens.*512/);
    const absent = await kld(join(tmp, "absent.kld"));
    expect(absent.code).toBe(1);
    expect(absent.stderr).toContain("[MISSING_FILE]");
  });
});
