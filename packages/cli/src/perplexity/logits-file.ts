// The base-logits file of llama.cpp's llama-perplexity (`--kl-divergence-base FILE`), read and
// written byte for byte as tools/perplexity/perplexity.cpp does (llama.cpp's perplexity() writes
// it, kl_divergence() reads it). Layout, all little-endian:
//
//   offset 0   8 bytes   "_logits_"
//          8   uint32    n_ctx    (tokens per chunk)
//         12   int32     n_vocab
//         16   int32     n_chunk
//         20   int32     tokens[n_chunk * n_ctx]   (the text's tokens, before any BOS replacement)
//   then, per chunk, n_ctx - 1 - floor(n_ctx / 2) rows (one per scored token, in order), each
//   2 * ceil(n_vocab / 2) + 4 uint16s:
//              float32   scale           = (max - min) / 65535
//              float32   min_log_prob    = min - max - log(Σ exp(l - max))
//              uint16    q[n_vocab]      log p(i) ≈ scale * q[i] + min_log_prob
//              uint16    0               when n_vocab is odd (keeps rows 4-byte aligned)
//   where max is the row's largest logit and min the smallest, raised to max - 16 if lower
//   (probabilities below e^-16 of the top one are stored as q = 0).
//
// Every value is rounded as llama.cpp rounds it (float32 where it holds a float, float64 where it
// holds a double), so the same logits give the same bytes.

import { type FileHandle, open } from "node:fs/promises";
import { endianness } from "node:os";
import { PerplexityError } from "./errors.js";

/** The file's first 8 bytes. */
export const LOGITS_MAGIC = "_logits_";

/** Bytes before the tokens: magic, n_ctx, n_vocab, n_chunk. */
export const LOGITS_HEADER_BYTES = 20;

/** Log-probabilities more than this below the top one are not resolved (stored as q = 0). */
export const LOG_PROB_RANGE = 16;

const f32 = Math.fround;

/** uint16s per row: the two float32s, the vocabulary, padded to an even count. */
export function rowStride(nVocab: number): number {
  return 2 * Math.floor((nVocab + 1) / 2) + 4;
}

/** Tokens scored per chunk (rows per chunk): those after the first half, but the last. */
export function scoredPerChunk(nCtx: number): number {
  return nCtx - 1 - Math.floor(nCtx / 2);
}

/** Bytes of one chunk's rows. */
export function chunkBytes(nCtx: number, nVocab: number): number {
  return scoredPerChunk(nCtx) * rowStride(nVocab) * 2;
}

/** Bytes of a whole file. */
export function logitsFileBytes(nCtx: number, nVocab: number, nChunk: number): number {
  return LOGITS_HEADER_BYTES + 4 * nCtx * nChunk + nChunk * chunkBytes(nCtx, nVocab);
}

function littleEndianOnly(): void {
  if (endianness() !== "LE")
    throw new PerplexityError(
      "BAD_FILE",
      "the logits file is little-endian (as llama.cpp writes it); this host is big-endian",
    );
}

/**
 * llama.cpp's rounding of a float to the nearest integer (ties to even) for |x| < 2^22: add
 * 1.5 × 2^23 in float32, which leaves the integer in the mantissa.
 */
function nearestInt(x: number): number {
  return f32(x + 12582912) - 12582912;
}

/**
 * Encodes one row of logits F32 [nVocab] as a file row (`row`: rowStride(nVocab) uint16s, 4-byte
 * aligned) and returns the negative log-likelihood of `token` as llama.cpp computes it while
 * writing: float32 max + log-sum-exp − logit.
 */
export function encodeLogProbRow(logits: Float32Array, token: number, row: Uint16Array): number {
  const n = logits.length;
  let max = logits[0]!;
  let min = logits[0]!;
  for (let i = 1; i < n; i++) {
    const l = logits[i]!;
    if (l > max) max = l;
    if (l < min) min = l;
  }
  min = Math.max(min, f32(max - LOG_PROB_RANGE));
  let sumExp = 0; // double, of float32 terms
  for (let i = 0; i < n; i++) sumExp += f32(Math.exp(f32(logits[i]! - max)));
  const logSumExp = f32(Math.log(sumExp));
  const minLogProb = f32(f32(min - max) - logSumExp);
  const scale = f32(f32(max - min) / 65535);
  const head = new Float32Array(row.buffer, row.byteOffset, 2);
  head[0] = scale;
  head[1] = minLogProb;
  if (scale !== 0) {
    const inv = f32(1 / scale);
    for (let i = 0; i < n; i++) {
      const l = logits[i]!;
      row[4 + i] = l > min ? nearestInt(f32(inv * f32(l - min))) : 0;
    }
  } else row.fill(0, 4, 4 + n);
  row.fill(0, 4 + n);
  return f32(f32(max + logSumExp) - logits[token]!);
}

/** A row's two floats and its quantized log-probabilities (a view). */
export interface DecodedRow {
  readonly scale: number;
  readonly minLogProb: number;
  /** U16 [nVocab] */
  readonly q: Uint16Array;
}

/** Row `r` of a chunk's rows (rowStride(nVocab) uint16s each). */
export function decodeRow(rows: Uint16Array, r: number, nVocab: number): DecodedRow {
  const stride = rowStride(nVocab);
  const at = r * stride;
  const head = new Float32Array(rows.buffer, rows.byteOffset + at * 2, 2);
  return { scale: head[0]!, minLogProb: head[1]!, q: rows.subarray(at + 4, at + 4 + nVocab) };
}

/** The header of a logits file. */
export interface LogitsFileHeader {
  readonly nCtx: number;
  readonly nVocab: number;
  readonly nChunk: number;
  /** I32 [nChunk * nCtx] */
  readonly tokens: Int32Array;
}

async function openFor(path: string, flags: "r" | "w"): Promise<FileHandle> {
  try {
    return await open(path, flags);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? String(e);
    throw new PerplexityError(
      "MISSING_FILE",
      `cannot ${flags === "r" ? "read" : "write"} the logits file ${path} (${code})`,
    );
  }
}

/** Writes a logits file: the header at once, then each chunk's rows in order. */
export class LogitsFileWriter {
  readonly path: string;
  readonly header: Omit<LogitsFileHeader, "tokens">;
  readonly #fh: FileHandle;
  #chunks = 0;

  private constructor(path: string, header: Omit<LogitsFileHeader, "tokens">, fh: FileHandle) {
    this.path = path;
    this.header = header;
    this.#fh = fh;
  }

  /** Creates (or truncates) `path` and writes the header with the first nChunk × nCtx tokens. */
  static async create(path: string, header: LogitsFileHeader): Promise<LogitsFileWriter> {
    littleEndianOnly();
    const { nCtx, nVocab, nChunk, tokens } = header;
    if (tokens.length < nCtx * nChunk)
      throw new RangeError(`${tokens.length} tokens for ${nChunk} chunks of ${nCtx}`);
    const fh = await openFor(path, "w");
    const head = Buffer.alloc(LOGITS_HEADER_BYTES);
    head.write(LOGITS_MAGIC, 0, "latin1");
    head.writeUInt32LE(nCtx, 8);
    head.writeInt32LE(nVocab, 12);
    head.writeInt32LE(nChunk, 16);
    const ids = tokens.subarray(0, nCtx * nChunk);
    try {
      await fh.write(head);
      await fh.write(new Uint8Array(ids.buffer, ids.byteOffset, ids.byteLength));
    } catch (e) {
      await fh.close();
      throw e;
    }
    return new LogitsFileWriter(path, { nCtx, nVocab, nChunk }, fh);
  }

  /** Appends the next chunk's rows: U16 [scoredPerChunk(nCtx), rowStride(nVocab)]. */
  async writeChunk(rows: Uint16Array): Promise<void> {
    const { nCtx, nVocab, nChunk } = this.header;
    if (rows.length !== scoredPerChunk(nCtx) * rowStride(nVocab))
      throw new RangeError(`a chunk has ${scoredPerChunk(nCtx)} rows of ${rowStride(nVocab)} uint16s`);
    if (this.#chunks >= nChunk) throw new RangeError(`the file holds ${nChunk} chunks`);
    await this.#fh.write(new Uint8Array(rows.buffer, rows.byteOffset, rows.byteLength));
    this.#chunks++;
  }

  async close(): Promise<void> {
    await this.#fh.close();
  }
}

/** Reads a logits file: the header is checked against the file's size at open, chunks are read on demand. */
export class LogitsFileReader {
  readonly path: string;
  readonly header: LogitsFileHeader;
  readonly #fh: FileHandle;

  private constructor(path: string, header: LogitsFileHeader, fh: FileHandle) {
    this.path = path;
    this.header = header;
    this.#fh = fh;
  }

  /**
   * Opens `path`: MISSING_FILE when it cannot be read, BAD_MAGIC when it is not a logits file,
   * TRUNCATED when it ends before its last chunk, BAD_FILE for an impossible header, a token
   * outside the vocabulary or bytes after the last chunk.
   */
  static async open(path: string): Promise<LogitsFileReader> {
    littleEndianOnly();
    const fh = await openFor(path, "r");
    try {
      const header = await readHeader(path, fh);
      return new LogitsFileReader(path, header, fh);
    } catch (e) {
      await fh.close();
      throw e;
    }
  }

  /** Chunk `i`'s rows: U16 [scoredPerChunk(nCtx), rowStride(nVocab)]. */
  async readChunk(i: number): Promise<Uint16Array> {
    const { nCtx, nVocab, nChunk } = this.header;
    if (!Number.isInteger(i) || i < 0 || i >= nChunk)
      throw new RangeError(`chunk ${i} is not in [0, ${nChunk})`);
    const bytes = chunkBytes(nCtx, nVocab);
    const rows = new Uint16Array(bytes / 2);
    const at = LOGITS_HEADER_BYTES + 4 * nCtx * nChunk + i * bytes;
    const { bytesRead } = await this.#fh.read(new Uint8Array(rows.buffer), 0, bytes, at);
    if (bytesRead !== bytes)
      throw new PerplexityError(
        "TRUNCATED",
        `${this.path}: chunk ${i + 1} ends after ${bytesRead} of ${bytes} bytes`,
      );
    return rows;
  }

  async close(): Promise<void> {
    await this.#fh.close();
  }
}

async function readHeader(path: string, fh: FileHandle): Promise<LogitsFileHeader> {
  const size = (await fh.stat()).size;
  const head = Buffer.alloc(LOGITS_HEADER_BYTES);
  const { bytesRead } = await fh.read(head, 0, LOGITS_HEADER_BYTES, 0);
  const magic = head.subarray(0, Math.min(8, bytesRead)).toString("latin1");
  if (!LOGITS_MAGIC.startsWith(magic) || (bytesRead >= 8 && magic !== LOGITS_MAGIC))
    throw new PerplexityError(
      "BAD_MAGIC",
      `${path} is not a llama-perplexity logits file (it starts with ${JSON.stringify(magic)}, not "${LOGITS_MAGIC}"); ` +
        "write one with --kl-divergence-base FILE without --kl-divergence",
    );
  if (bytesRead < LOGITS_HEADER_BYTES)
    throw new PerplexityError(
      "TRUNCATED",
      `${path}: the header ends after ${bytesRead} of ${LOGITS_HEADER_BYTES} bytes (was the run that wrote it stopped early?)`,
    );
  const nCtx = head.readUInt32LE(8);
  const nVocab = head.readInt32LE(12);
  const nChunk = head.readInt32LE(16);
  if (nCtx < 2 || nCtx > 2 ** 30 || nVocab < 1 || nChunk < 1)
    throw new PerplexityError(
      "BAD_FILE",
      `${path}: impossible header (n_ctx ${nCtx}, n_vocab ${nVocab}, n_chunk ${nChunk}); n_ctx must be >= 2 and the others >= 1`,
    );
  const expected = logitsFileBytes(nCtx, nVocab, nChunk);
  const tokenEnd = LOGITS_HEADER_BYTES + 4 * nCtx * nChunk;
  if (size < expected) {
    const whole = size < tokenEnd ? 0 : Math.floor((size - tokenEnd) / chunkBytes(nCtx, nVocab));
    throw new PerplexityError(
      "TRUNCATED",
      `${path} has ${size} bytes but its header (n_ctx ${nCtx}, n_vocab ${nVocab}, n_chunk ${nChunk}) needs ${expected}: ` +
        `${size < tokenEnd ? "the tokens are cut short" : `only ${whole} of ${nChunk} chunks are whole`} (was the run that wrote it stopped early?)`,
    );
  }
  if (size > expected)
    throw new PerplexityError(
      "BAD_FILE",
      `${path} has ${size - expected} bytes after its last chunk (n_ctx ${nCtx}, n_vocab ${nVocab}, n_chunk ${nChunk} make ${expected} bytes)`,
    );
  const tokens = new Int32Array(nCtx * nChunk);
  const want = tokens.byteLength;
  const got = (await fh.read(new Uint8Array(tokens.buffer), 0, want, LOGITS_HEADER_BYTES)).bytesRead;
  if (got !== want)
    throw new PerplexityError("TRUNCATED", `${path}: the tokens end after ${got} of ${want} bytes`);
  for (let i = 0; i < tokens.length; i++)
    if (tokens[i]! < 0 || tokens[i]! >= nVocab)
      throw new PerplexityError(
        "BAD_FILE",
        `${path}: token ${i} is ${tokens[i]}, outside the file's vocabulary of ${nVocab}`,
      );
  return { nCtx, nVocab, nChunk, tokens };
}
