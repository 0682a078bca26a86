import { type FileHandle, open, rename, rm } from "node:fs/promises";
import { encodeHeader, type GgufLayout, type GgufTensorSpec } from "./encode.js";
import { GgufError } from "./errors.js";
import type { GgufKV } from "./metadata.js";

/** A tensor's bytes: in memory, or produced chunk by chunk (so huge tensors are never held whole). */
export type TensorDataSource = Uint8Array | (() => AsyncIterable<Uint8Array> | Iterable<Uint8Array>);

/** A tensor to write: its description and its data. */
export interface GgufTensorToWrite extends GgufTensorSpec {
  readonly data: TensorDataSource;
}

/** Options of {@link writeGguf}. */
export interface GgufWriteOptions {
  /** GGUF version to write. Default: 3. */
  version?: 2 | 3;
  /** Called after each tensor with the bytes written so far and the file's total. */
  onProgress?: (written: number, total: number, tensor: string) => void;
}

/** Encodes a whole GGUF in memory (for small files and tests); see {@link writeGguf} for files. */
export function encodeGguf(
  metadata: Iterable<GgufKV>,
  tensors: readonly (GgufTensorSpec & { data: Uint8Array })[],
  version: 2 | 3 = 3,
): Uint8Array {
  const layout = encodeHeader(metadata, tensors, version);
  const out = new Uint8Array(layout.fileSize);
  out.set(layout.header, 0);
  const base = layout.header.length;
  tensors.forEach((t, i) => {
    checkSize(t.name, t.data.length, layout.sizes[i]!);
    out.set(t.data, base + layout.offsets[i]!);
  });
  return out;
}

function checkSize(name: string, got: number, want: number): void {
  if (got !== want) {
    throw new GgufError(
      "INVALID_ARGUMENT",
      `tensor "${name}" has ${got} bytes of data; its type and shape need ${want}`,
      {
        key: name,
      },
    );
  }
}

async function writeAll(fh: FileHandle, bytes: Uint8Array): Promise<void> {
  let done = 0;
  while (done < bytes.length) {
    const { bytesWritten } = await fh.write(bytes, done, bytes.length - done);
    done += bytesWritten;
  }
}

/**
 * Writes a GGUF file, streaming tensor data so a multi-gigabyte file is never held in memory.
 * The file appears at `path` only when complete (it is written beside it and renamed).
 */
export async function writeGguf(
  path: string,
  metadata: Iterable<GgufKV>,
  tensors: readonly GgufTensorToWrite[],
  options: GgufWriteOptions = {},
): Promise<GgufLayout> {
  const layout = encodeHeader(metadata, tensors, options.version ?? 3);
  const tmp = `${path}.partial-${process.pid}`;
  let fh: FileHandle;
  try {
    fh = await open(tmp, "w");
  } catch (e) {
    throw new GgufError("IO_ERROR", `cannot create ${tmp}: ${(e as Error).message}`, { path: tmp, cause: e });
  }
  try {
    await writeAll(fh, layout.header);
    let written = layout.header.length;
    for (const [i, t] of tensors.entries()) {
      const want = layout.sizes[i]!;
      let got = 0;
      const chunks = t.data instanceof Uint8Array ? [t.data] : t.data();
      for await (const chunk of chunks) {
        got += chunk.length;
        if (got > want) checkSize(t.name, got, want);
        await writeAll(fh, chunk);
      }
      checkSize(t.name, got, want);
      const end = layout.header.length + layout.offsets[i]! + want;
      const next = i + 1 < tensors.length ? layout.header.length + layout.offsets[i + 1]! : layout.fileSize;
      if (next > end) await writeAll(fh, new Uint8Array(next - end));
      written = next;
      options.onProgress?.(written, layout.fileSize, t.name);
    }
    await fh.close();
    await rename(tmp, path);
  } catch (e) {
    await fh.close().catch(() => {});
    await rm(tmp, { force: true });
    if (e instanceof GgufError) throw e;
    throw new GgufError("IO_ERROR", `cannot write ${path}: ${(e as Error).message}`, { path, cause: e });
  }
  return layout;
}
