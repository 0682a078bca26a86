import { basename, dirname, join } from "node:path";
import { GgufError } from "./errors.js";
import type { GgufPart } from "./parse.js";

/** Metadata keys of split models, as llama.cpp's gguf-split writes them. */
export const SPLIT_KEYS = {
  /** uint16, 0-based index of this part. */
  index: "split.no",
  /** uint16, number of parts. */
  count: "split.count",
  /** int32, number of tensors over all parts. */
  tensorCount: "split.tensors.count",
} as const;

const PART_NAME = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/;

/** The file name of part `index` (0-based) of `count`: `prefix-00001-of-00003.gguf`. */
export function splitPartName(prefix: string, index: number, count: number): string {
  const pad = (n: number) => String(n).padStart(5, "0");
  return `${prefix}-${pad(index + 1)}-of-${pad(count)}.gguf`;
}

/** The paths of all parts, given the path of any part named by the `-0000i-of-0000n` pattern. */
export function splitPartPaths(path: string, count: number): string[] {
  const m = PART_NAME.exec(basename(path));
  if (!m) {
    throw new GgufError(
      "BAD_SPLIT",
      `${path} is part of a ${count}-part split model but is not named PREFIX-0000i-of-0000n.gguf, so the other parts cannot be found`,
      { path },
    );
  }
  if (Number(m[3]) !== count) {
    throw new GgufError("BAD_SPLIT", `file name says ${Number(m[3])} parts but split.count is ${count}`, {
      path,
    });
  }
  const prefix = join(dirname(path), m[1]!);
  return Array.from({ length: count }, (_, i) => splitPartName(prefix, i, count));
}

/** Split facts of the part a user opened; refuses a part other than the first. */
export function firstPartInfo(part: GgufPart, path: string): ReturnType<typeof splitInfo> {
  const info = splitInfo(part, path);
  if (info && info.index !== 0) {
    throw new GgufError(
      "BAD_SPLIT",
      `${path} is part ${info.index + 1} of ${info.count}; open the first part (-00001-of-${String(info.count).padStart(5, "0")}.gguf)`,
      { path },
    );
  }
  return info;
}

/** Split facts of a part, or `undefined` when it is not part of a split model. */
export function splitInfo(
  part: GgufPart,
  path: string,
): { index: number; count: number; tensorCount: number } | undefined {
  const md = part.metadata;
  if (!md.has(SPLIT_KEYS.count)) return undefined;
  const count = md.integer(SPLIT_KEYS.count);
  const index = md.optInteger(SPLIT_KEYS.index) ?? 0;
  const tensorCount = md.optInteger(SPLIT_KEYS.tensorCount) ?? part.tensors.length;
  if (count < 1 || index < 0 || index >= count) {
    throw new GgufError("BAD_SPLIT", `split.no=${index} and split.count=${count} are inconsistent`, { path });
  }
  if (count === 1) return undefined;
  return { index, count, tensorCount };
}
