import { GgufError } from "./errors.js";
import type { GgufKV } from "./metadata.js";
import type { GgufFile, GgufTensorInfo } from "./parse.js";
import { SPLIT_KEYS, splitPartName } from "./split-names.js";
import { tensorDataChunks } from "./tensor-data.js";
import { GgufValueType } from "./value-types.js";
import { type GgufWriteOptions, writeGguf } from "./write.js";

/** How to cut a model into parts (llama.cpp's `--split-max-tensors` / `--split-max-size`). */
export interface SplitOptions {
  /** Most tensors per part. */
  maxTensors?: number;
  /** Most tensor-data bytes per part (a single larger tensor still gets a part of its own). */
  maxBytes?: number;
  /** Called after each tensor of each part. */
  onProgress?: GgufWriteOptions["onProgress"];
}

const isSplitKey = (key: string) => Object.values(SPLIT_KEYS).includes(key as never);

function dataOf(file: GgufFile, t: GgufTensorInfo) {
  return { name: t.name, type: t.type, dims: t.dims, data: () => tensorDataChunks(file, t) };
}

/** Groups tensors in file order so that each group respects the limits. */
export function planSplit(tensors: readonly GgufTensorInfo[], options: SplitOptions): GgufTensorInfo[][] {
  const { maxTensors, maxBytes } = options;
  if (maxTensors === undefined && maxBytes === undefined) {
    throw new GgufError(
      "INVALID_ARGUMENT",
      "give a limit: maxTensors (--split-max-tensors) or maxBytes (--split-max-size)",
    );
  }
  if (maxTensors !== undefined && !(Number.isInteger(maxTensors) && maxTensors >= 1)) {
    throw new GgufError("INVALID_ARGUMENT", `maxTensors must be a positive integer, got ${maxTensors}`);
  }
  if (maxBytes !== undefined && !(Number.isFinite(maxBytes) && maxBytes >= 1)) {
    throw new GgufError("INVALID_ARGUMENT", `maxBytes must be positive, got ${maxBytes}`);
  }
  const groups: GgufTensorInfo[][] = [];
  let cur: GgufTensorInfo[] = [];
  let bytes = 0;
  for (const t of tensors) {
    const full =
      cur.length > 0 &&
      ((maxTensors !== undefined && cur.length >= maxTensors) ||
        (maxBytes !== undefined && bytes + t.byteSize > maxBytes));
    if (full) {
      groups.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(t);
    bytes += t.byteSize;
  }
  if (cur.length > 0 || groups.length === 0) groups.push(cur);
  if (groups.length > 65535)
    throw new GgufError("INVALID_ARGUMENT", `${groups.length} parts exceed the 65535 allowed`);
  return groups;
}

/**
 * Writes `file` as parts `PREFIX-00001-of-0000N.gguf`, … as llama.cpp's gguf-split does: the first
 * part holds all metadata, every part holds `split.no`, `split.count` and `split.tensors.count`.
 * Returns the paths written.
 */
export async function splitGguf(file: GgufFile, outPrefix: string, options: SplitOptions): Promise<string[]> {
  const groups = planSplit(file.tensors, options);
  const n = groups.length;
  const paths: string[] = [];
  for (const [i, group] of groups.entries()) {
    const splitKvs: GgufKV[] = [
      { key: SPLIT_KEYS.index, type: GgufValueType.UINT16, value: i },
      { key: SPLIT_KEYS.count, type: GgufValueType.UINT16, value: n },
      { key: SPLIT_KEYS.tensorCount, type: GgufValueType.INT32, value: file.tensors.length },
    ];
    const base = i === 0 ? [...file.metadata.entries()].filter((kv) => !isSplitKey(kv.key)) : [];
    const align = file.metadata.get("general.alignment");
    if (i > 0 && align) base.push(align);
    const path = splitPartName(outPrefix, i, n);
    await writeGguf(
      path,
      [...base, ...splitKvs],
      group.map((t) => dataOf(file, t)),
      {
        version: file.version as 2 | 3,
        onProgress: options.onProgress,
      },
    );
    paths.push(path);
  }
  return paths;
}

/** Writes a split model (opened from its first part) as one file, without the `split.*` keys. */
export async function mergeGguf(
  file: GgufFile,
  outPath: string,
  options: Pick<GgufWriteOptions, "onProgress"> = {},
): Promise<void> {
  const metadata = [...file.metadata.entries()].filter((kv) => !isSplitKey(kv.key));
  await writeGguf(
    outPath,
    metadata,
    file.tensors.map((t) => dataOf(file, t)),
    {
      version: file.version as 2 | 3,
      onProgress: options.onProgress,
    },
  );
}
