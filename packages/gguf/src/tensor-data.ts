import { type FileHandle, open } from "node:fs/promises";
import { GgufError } from "./errors.js";
import type { GgufFile, GgufTensorInfo } from "./parse.js";

function find(file: GgufFile, tensor: GgufTensorInfo | string): GgufTensorInfo {
  if (typeof tensor !== "string") return tensor;
  const t = file.tensors.find((x) => x.name === tensor);
  if (!t) throw new GgufError("INVALID_ARGUMENT", `no tensor named "${tensor}"`, { key: tensor });
  return t;
}

function location(file: GgufFile, t: GgufTensorInfo): { path: string; start: number } {
  const part = file.parts[t.part];
  if (!part?.path) {
    throw new GgufError(
      "INVALID_ARGUMENT",
      `tensor "${t.name}" was parsed from memory; use tensorBytes() with the buffer`,
      {
        key: t.name,
      },
    );
  }
  return { path: part.path, start: part.dataOffset + t.offset };
}

/** The data of a tensor of a GGUF parsed from memory, as a view into `bytes` (no copy). */
export function tensorBytes(bytes: Uint8Array, file: GgufFile, tensor: GgufTensorInfo | string): Uint8Array {
  const t = find(file, tensor);
  const start = file.parts[0]!.dataOffset + t.offset;
  return bytes.subarray(start, start + t.byteSize);
}

/**
 * Streams the data of one tensor from its file in chunks of at most `chunkBytes`, so tensors of
 * any size can be copied or converted without holding them whole in memory.
 */
export async function* tensorDataChunks(
  file: GgufFile,
  tensor: GgufTensorInfo | string,
  chunkBytes = 16 << 20,
): AsyncGenerator<Uint8Array> {
  const t = find(file, tensor);
  const { path, start } = location(file, t);
  let fh: FileHandle;
  try {
    fh = await open(path, "r");
  } catch (e) {
    throw new GgufError("IO_ERROR", `cannot open ${path}: ${(e as Error).message}`, { path, cause: e });
  }
  try {
    let done = 0;
    while (done < t.byteSize) {
      const n = Math.min(chunkBytes, t.byteSize - done);
      const buf = new Uint8Array(n);
      let got = 0;
      while (got < n) {
        const { bytesRead } = await fh.read(buf, got, n - got, start + done + got);
        if (bytesRead === 0) {
          throw new GgufError("TRUNCATED", `file ends inside the data of tensor "${t.name}"`, {
            path,
            offset: start + done + got,
            key: t.name,
          });
        }
        got += bytesRead;
      }
      done += n;
      yield buf;
    }
  } finally {
    await fh.close();
  }
}

/** Reads the whole data of one tensor. */
export async function readTensorData(file: GgufFile, tensor: GgufTensorInfo | string): Promise<Uint8Array> {
  const t = find(file, tensor);
  const out = new Uint8Array(t.byteSize);
  let at = 0;
  for await (const chunk of tensorDataChunks(file, t, Math.max(t.byteSize, 1))) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}

/** Reads `length` bytes of a tensor's data starting `start` bytes into it. */
export async function readTensorRange(
  file: GgufFile,
  tensor: GgufTensorInfo | string,
  start: number,
  length: number,
): Promise<Uint8Array> {
  const t = find(file, tensor);
  if (start < 0 || length < 0 || start + length > t.byteSize) {
    throw new GgufError(
      "INVALID_ARGUMENT",
      `range ${start}+${length} is outside tensor "${t.name}" (${t.byteSize} bytes)`,
    );
  }
  const { path, start: base } = location(file, t);
  const fh = await open(path, "r").catch((e: Error) => {
    throw new GgufError("IO_ERROR", `cannot open ${path}: ${e.message}`, { path, cause: e });
  });
  try {
    const buf = new Uint8Array(length);
    let got = 0;
    while (got < length) {
      const { bytesRead } = await fh.read(buf, got, length - got, base + start + got);
      if (bytesRead === 0) {
        throw new GgufError("TRUNCATED", `file ends inside the data of tensor "${t.name}"`, {
          path,
          key: t.name,
        });
      }
      got += bytesRead;
    }
    return buf;
  } finally {
    await fh.close();
  }
}
