import { EngineError } from "./errors.js";

/**
 * Tokens to decode, possibly of several sequences. Per-token fields are arrays of the tokens'
 * length; a scalar applies to every token.
 */
export interface Batch {
  /** Token ids. */
  readonly tokens: ArrayLike<number>;
  /**
   * The sequence (or sequences: a token shared by several) each token belongs to. Default 0.
   */
  readonly seq?: number | ArrayLike<number | ArrayLike<number>>;
  /**
   * Each token's position. Default: each sequence continues after its last position in the
   * cache (its earlier tokens in this batch counted).
   */
  readonly pos?: ArrayLike<number>;
  /**
   * Which tokens' logits come back: "last" (default: the last token of each sequence in the
   * batch), "all", "none", or a flag per token.
   */
  readonly logits?: "last" | "all" | "none" | ArrayLike<boolean>;
  /**
   * With a context made with `candidates`: read back only each logits row's candidate ids and
   * their logits (`Logits.candidates`, `Logits.candidateLogits`); the rows themselves stay on the
   * device, where `Logits.fetch` reads one until the next decode call (`Logits.get` throws
   * LOGITS_NOT_READ). For a batch of at most `nUbatch` tokens. Default false.
   */
  readonly candidatesOnly?: boolean;
  /**
   * Each token's segment (BERT's token type: 0 for the first text, 1 for the second of a pair),
   * for encoders that have segment embeddings; integers below the model's type count. Default 0.
   */
  readonly tokenTypes?: ArrayLike<number>;
  /**
   * Each token's results (its logits, the K/V it writes) are to be the same bits as when it is
   * decoded alone, a token a call: a device whose `caps.batchInvariant` is true (the CPU) then takes
   * no kernel whose summation order depends on how many tokens the batch has (its panel GEMM); one
   * without it (CUDA today) accepts the request and computes as usual. Speculative verification sets
   * it, so that greedy output with drafts is greedy output without. May be slower for batches of
   * more than a few tokens. Default false.
   */
  readonly batchInvariant?: boolean;
}

/** A batch checked and spelled out per token. */
export interface NormalizedBatch {
  readonly tokens: Int32Array;
  readonly seqIds: readonly (readonly number[])[];
  readonly pos: Int32Array;
  readonly wantLogits: Uint8Array;
  /** Each token's segment; undefined when the batch gave none (all 0). */
  readonly tokenTypes: Int32Array | undefined;
  /** Batch.batchInvariant. */
  readonly batchInvariant: boolean;
}

/** Limits of a batch beyond the vocabulary: segment ids and positions the model has embeddings for. */
export interface BatchLimits {
  /** Segment ids are integers below this. Default 1 (only 0). */
  readonly nTokenTypes?: number;
  /** Positions are integers below this (a model with a table of absolute positions). Default 2^31 − 1. */
  readonly posLimit?: number;
}

function bad(message: string): never {
  throw new EngineError("INVALID_ARGUMENT", `decode: ${message}`);
}

function isIndex(v: unknown, limit: number): v is number {
  return typeof v === "number" && Number.isInteger(v) && v >= 0 && v < limit;
}

function seqOf(batch: Batch, i: number, nSeqMax: number): number[] {
  const s = batch.seq;
  const one = (v: unknown): number => {
    if (!isIndex(v, nSeqMax))
      bad(`token ${i}: sequence ${String(v)} is not an integer in [0, ${nSeqMax}) (the context's nSeqMax)`);
    return v;
  };
  if (s === undefined) return [0];
  if (typeof s === "number") return [one(s)];
  const v = s[i];
  if (typeof v === "number") return [one(v)];
  if (
    v === undefined ||
    v === null ||
    typeof v !== "object" ||
    typeof v.length !== "number" ||
    v.length === 0
  )
    bad(`token ${i}: seq must be a sequence id or a non-empty list of them`);
  const ids = Array.from(v, one);
  if (new Set(ids).size !== ids.length) bad(`token ${i}: sequence ids repeat (${ids.join(", ")})`);
  return ids;
}

/**
 * Checks a batch against the vocabulary and the context, and fills in defaults: `lastPos(seq)`
 * gives a sequence's last position in the cache (-1 when empty).
 */
export function normalizeBatch(
  batch: Batch,
  nVocab: number,
  nSeqMax: number,
  lastPos: (seq: number) => number,
  limits: BatchLimits = {},
): NormalizedBatch {
  if (batch === null || typeof batch !== "object") bad("give a batch { tokens, seq?, pos?, logits? }");
  const { tokens } = batch;
  if (tokens === null || typeof tokens !== "object" || typeof tokens.length !== "number")
    bad("batch.tokens must be an array of token ids");
  const n = tokens.length;
  if (n === 0) bad("batch.tokens is empty; give at least one token");
  const ids = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const t = tokens[i];
    if (!isIndex(t, nVocab)) bad(`token ${i} is ${String(t)}; token ids are integers in [0, ${nVocab})`);
    ids[i] = t;
  }
  if (typeof batch.seq === "object" && batch.seq !== null && batch.seq.length !== n)
    bad(`batch.seq has ${batch.seq.length} entries for ${n} tokens`);
  // (a loop: Array.from over an array-like was most of this function's time in a decode step's profile)
  const seqIds: number[][] = new Array(n);
  for (let i = 0; i < n; i++) seqIds[i] = seqOf(batch, i, nSeqMax);

  const pos = new Int32Array(n);
  if (batch.pos !== undefined) {
    if (batch.pos === null || typeof batch.pos !== "object" || batch.pos.length !== n)
      bad(`batch.pos must have one position per token (${n})`);
    for (let i = 0; i < n; i++) {
      const p = batch.pos[i];
      if (!isIndex(p, 2 ** 31 - 1)) bad(`token ${i}: position ${String(p)} is not a non-negative integer`);
      pos[i] = p;
    }
  } else {
    const next = new Map<number, number>();
    for (let i = 0; i < n; i++) {
      const seqs = seqIds[i]!;
      let p = -1;
      for (const s of seqs) p = Math.max(p, next.get(s) ?? lastPos(s) + 1);
      pos[i] = p;
      for (const s of seqs) next.set(s, p + 1);
    }
  }

  const posLimit = limits.posLimit ?? 2 ** 31 - 1;
  for (let i = 0; i < n; i++)
    if (pos[i]! >= posLimit)
      bad(
        `token ${i}: position ${pos[i]} is past the model's ${posLimit} positions (its context_length); ` +
          "this model cannot take longer sequences",
      );

  let tokenTypes: Int32Array | undefined;
  if (batch.tokenTypes !== undefined) {
    const tt = batch.tokenTypes;
    if (tt === null || typeof tt !== "object" || tt.length !== n)
      bad(`batch.tokenTypes must have one segment id per token (${n})`);
    const nTypes = limits.nTokenTypes ?? 1;
    tokenTypes = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      const v = tt[i];
      if (!isIndex(v, nTypes))
        bad(
          `token ${i}: token type ${String(v)} is not an integer in [0, ${nTypes}) (the model's segment count)`,
        );
      tokenTypes[i] = v;
    }
  }

  const want = new Uint8Array(n);
  const mode = batch.logits ?? "last";
  if (mode === "all") want.fill(1);
  else if (mode === "last") {
    const seen = new Set<number>();
    for (let i = n - 1; i >= 0; i--) {
      const fresh = seqIds[i]!.some((s) => !seen.has(s));
      if (fresh) want[i] = 1;
      for (const s of seqIds[i]!) seen.add(s);
    }
  } else if (mode !== "none") {
    if (mode === null || typeof mode !== "object" || mode.length !== n)
      bad(`batch.logits must be "last", "all", "none" or one flag per token (${n})`);
    for (let i = 0; i < n; i++) want[i] = mode[i] ? 1 : 0;
  }
  const invariant = batch.batchInvariant ?? false;
  if (typeof invariant !== "boolean") bad(`batch.batchInvariant must be a boolean, got ${String(invariant)}`);
  return { tokens: ids, seqIds, pos, wantLogits: want, tokenTypes, batchInvariant: invariant };
}
