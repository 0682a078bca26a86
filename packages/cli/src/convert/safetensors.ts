// Safetensors files read lazily: the header is parsed (with bounds checks) up front, tensor data
// is read by offset when a tensor's rows are wanted, so a model is never held in memory whole.
import { existsSync } from "node:fs";
import { type FileHandle, open, readFile, stat } from "node:fs/promises";
import { basename, join } from "node:path";
import { f16ToF32 } from "@minfer/gguf";
import { ConvertError } from "./errors.js";

/** Element types read from safetensors (the ones Hugging Face LLM checkpoints use). */
export const SAFETENSORS_DTYPES = { F32: 4, F16: 2, BF16: 2 } as const;
export type SafetensorsDtype = keyof typeof SAFETENSORS_DTYPES;

/**
 * Integer types of the buffers some checkpoints save beside their weights (BERT's
 * `embeddings.position_ids`, I64): indexed so an architecture can skip them by name, never read.
 */
export const SAFETENSORS_INT_DTYPES = { I64: 8, I32: 4, I16: 2, I8: 1, U8: 1, BOOL: 1 } as const;
export type SafetensorsIntDtype = keyof typeof SAFETENSORS_INT_DTYPES;

/** Whether tensors of `dtype` can be read as floats. */
export const isFloatDtype = (dtype: string): dtype is SafetensorsDtype => dtype in SAFETENSORS_DTYPES;

const dtypeSize = (dtype: SafetensorsDtype | SafetensorsIntDtype): number =>
  isFloatDtype(dtype) ? SAFETENSORS_DTYPES[dtype] : SAFETENSORS_INT_DTYPES[dtype];

/** One tensor of a safetensors file: where its bytes are. */
export interface SafeTensor {
  readonly name: string;
  readonly file: string;
  readonly dtype: SafetensorsDtype | SafetensorsIntDtype;
  /** Row-major shape as stored (outermost first). */
  readonly shape: readonly number[];
  /** Absolute byte offset of the data in `file`. */
  readonly offset: number;
  readonly byteLength: number;
}

/** The largest header accepted (the format's own reference reader uses 100 MB). */
const MAX_HEADER = 100_000_000;

/** Parses the header of one safetensors file; a malformed or truncated one is BAD_FILE naming it. */
export async function readSafetensorsHeader(file: string): Promise<SafeTensor[]> {
  const bad = (why: string) => new ConvertError("BAD_FILE", `${file}: not a valid safetensors file: ${why}`);
  const size = (await stat(file)).size;
  if (size < 8) throw bad(`${size} bytes, shorter than the 8-byte header length`);
  const fh = await open(file, "r");
  try {
    const lenBuf = new Uint8Array(8);
    await fh.read(lenBuf, 0, 8, 0);
    const len = Number(new DataView(lenBuf.buffer).getBigUint64(0, true));
    if (len > MAX_HEADER || 8 + len > size)
      throw bad(`header length ${len} exceeds the file (${size} bytes) or ${MAX_HEADER}`);
    const headerBytes = new Uint8Array(len);
    await fh.read(headerBytes, 0, len, 8);
    let header: unknown;
    try {
      header = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(headerBytes));
    } catch (e) {
      throw bad(`header is not JSON (${(e as Error).message})`);
    }
    if (typeof header !== "object" || header === null || Array.isArray(header))
      throw bad("header is not a JSON object");
    const dataStart = 8 + len;
    const dataSize = size - dataStart;
    const out: SafeTensor[] = [];
    for (const [name, v] of Object.entries(header as Record<string, unknown>)) {
      if (name === "__metadata__") continue;
      const e = v as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
      if (typeof e !== "object" || e === null) throw bad(`entry "${name}" is not an object`);
      if (typeof e.dtype !== "string") throw bad(`tensor "${name}" has no dtype`);
      if (!(e.dtype in SAFETENSORS_DTYPES) && !(e.dtype in SAFETENSORS_INT_DTYPES))
        throw new ConvertError(
          "UNSUPPORTED_DTYPE",
          `${file}: tensor "${name}" is ${e.dtype}; supported: ${Object.keys(SAFETENSORS_DTYPES).join(", ")}`,
        );
      const dtype = e.dtype as SafetensorsDtype | SafetensorsIntDtype;
      const shape = e.shape;
      if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0))
        throw bad(`tensor "${name}" has a bad shape ${JSON.stringify(shape)}`);
      const offs = e.data_offsets;
      if (
        !Array.isArray(offs) ||
        offs.length !== 2 ||
        !offs.every((o) => Number.isSafeInteger(o) && o >= 0) ||
        offs[0] > offs[1]
      )
        throw bad(`tensor "${name}" has bad data_offsets ${JSON.stringify(offs)}`);
      const [begin, end] = offs as [number, number];
      const want = (shape as number[]).reduce((a, d) => a * d, 1) * dtypeSize(dtype);
      if (end - begin !== want)
        throw bad(
          `tensor "${name}" ${dtype}${JSON.stringify(shape)} needs ${want} bytes, its offsets span ${end - begin}`,
        );
      if (end > dataSize)
        throw bad(`tensor "${name}" ends at byte ${end} of the data, which has ${dataSize} (truncated?)`);
      out.push({ name, file, dtype, shape: shape as number[], offset: dataStart + begin, byteLength: want });
    }
    return out;
  } finally {
    await fh.close();
  }
}

/** All tensors of a checkpoint directory: `model.safetensors`, or the shards its index names. */
export async function readCheckpointTensors(dir: string): Promise<Map<string, SafeTensor>> {
  const index = join(dir, "model.safetensors.index.json");
  const single = join(dir, "model.safetensors");
  let files: string[];
  if (existsSync(index)) {
    let map: unknown;
    try {
      map = (JSON.parse(await readFile(index, "utf8")) as { weight_map?: unknown }).weight_map;
    } catch (e) {
      throw new ConvertError("BAD_FILE", `${index}: not valid JSON (${(e as Error).message})`);
    }
    if (typeof map !== "object" || map === null)
      throw new ConvertError("BAD_FILE", `${index}: no "weight_map" object`);
    files = [...new Set(Object.values(map as Record<string, unknown>).map(String))].map((f) => {
      if (f !== basename(f)) throw new ConvertError("BAD_FILE", `${index}: shard "${f}" is not a file name`);
      return join(dir, f);
    });
  } else if (existsSync(single)) files = [single];
  else
    throw new ConvertError(
      "MISSING_FILE",
      `${dir} has neither model.safetensors nor model.safetensors.index.json (only safetensors checkpoints are read)`,
    );
  const tensors = new Map<string, SafeTensor>();
  for (const f of files) {
    if (!existsSync(f)) throw new ConvertError("MISSING_FILE", `shard ${f} (named by the index) is missing`);
    for (const t of await readSafetensorsHeader(f)) {
      if (tensors.has(t.name))
        throw new ConvertError(
          "BAD_FILE",
          `tensor "${t.name}" is in both ${tensors.get(t.name)!.file} and ${f}`,
        );
      tensors.set(t.name, t);
    }
  }
  return tensors;
}

/** Reads rows of tensors (as float32) from their files, keeping one handle per file open. */
export class TensorReader {
  readonly #handles = new Map<string, Promise<FileHandle>>();

  /** Rows [r0, r1) of `t` seen as a matrix of `shape[0]` rows (a vector is one row). */
  async rows(t: SafeTensor, r0: number, r1: number): Promise<Float32Array> {
    const dtype = t.dtype;
    if (!isFloatDtype(dtype))
      throw new ConvertError(
        "UNSUPPORTED_DTYPE",
        `${t.file}: tensor "${t.name}" is ${dtype}, not a float type`,
      );
    const nRows = t.shape.length > 1 ? t.shape[0]! : 1;
    const rowElems = nRows === 0 ? 0 : t.byteLength / SAFETENSORS_DTYPES[dtype] / nRows;
    const n = (r1 - r0) * rowElems;
    const bytes = new Uint8Array(n * SAFETENSORS_DTYPES[dtype]);
    const start = t.offset + r0 * rowElems * SAFETENSORS_DTYPES[dtype];
    let h = this.#handles.get(t.file);
    if (!h) {
      h = open(t.file, "r");
      this.#handles.set(t.file, h);
    }
    const fh = await h;
    let done = 0;
    while (done < bytes.length) {
      const { bytesRead } = await fh.read(bytes, done, bytes.length - done, start + done);
      if (bytesRead === 0)
        throw new ConvertError("BAD_FILE", `${t.file}: tensor "${t.name}" is truncated (end of file)`);
      done += bytesRead;
    }
    return toF32(bytes, dtype, n);
  }

  async close(): Promise<void> {
    for (const h of this.#handles.values()) await (await h).close();
    this.#handles.clear();
  }
}

function toF32(bytes: Uint8Array, dtype: SafetensorsDtype, n: number): Float32Array {
  if (dtype === "F32") return new Float32Array(bytes.buffer, 0, n);
  const h = new Uint16Array(bytes.buffer, 0, n);
  const out = new Float32Array(n);
  if (dtype === "BF16") {
    const u = new Uint32Array(out.buffer);
    for (let i = 0; i < n; i++) u[i] = h[i]! << 16;
  } else {
    for (let i = 0; i < n; i++) out[i] = f16ToF32(h[i]!);
  }
  return out;
}
