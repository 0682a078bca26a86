// Importance matrices as llama.cpp's llama-imatrix writes them: for every weight matrix, the mean
// of x² over the activations each of its input columns saw. Two file formats:
//
//  - GGUF (current llama-imatrix): per weight W, an F32 tensor `W.in_sum2` of shape
//    [n_cols, n_mat] holding Σx² per column, and an F32 tensor `W.counts` of shape [1, n_mat]
//    holding how many activation rows were summed (n_mat > 1 for a stack of experts, one row of
//    sums and one count per expert), plus `imatrix.*` metadata (datasets, chunk count and size).
//    The mean is in_sum2 / counts; an expert that saw no activations gets 1 for every column.
//  - legacy .dat (`--output-format dat`): little-endian int32 entry count, then per entry an int32
//    name length, the name's bytes, an int32 call count, an int32 value count and that many f32
//    values (already means, scaled by the call count), then optionally the chunk count and a
//    dataset name. The mean is value / calls (the values themselves when the count is 0).
import { readFile } from "node:fs/promises";
import { GgufError } from "./errors.js";
import { GgmlType } from "./ggml-types.js";
import { GGUF_MAGIC } from "./parse.js";
import { parseGguf } from "./read.js";
import { tensorBytes } from "./tensor-data.js";

/**
 * An importance matrix: weight tensor name → mean x² per input column. A weight of n_cols columns
 * gets n_cols values; a stack of n_mat experts gets n_cols·n_mat, expert e's at [e·n_cols, …).
 */
export type Imatrix = Map<string, Float32Array>;

const SUMS = ".in_sum2";
const COUNTS = ".counts";

function bad(message: string, key?: string): never {
  throw new GgufError("BAD_IMATRIX", message, key !== undefined ? { key } : {});
}

/** The f32 values of `bytes` (any alignment), as a fresh array. */
function f32s(bytes: Uint8Array): Float32Array {
  const out = new Float32Array(bytes.length / 4);
  new Uint8Array(out.buffer).set(bytes);
  return out;
}

/** Checks every value of an entry is finite and ≥ 0. */
function checkValues(name: string, v: Float32Array, what: string): void {
  for (let j = 0; j < v.length; j++) {
    const x = v[j]!;
    if (!(x >= 0 && x < Number.POSITIVE_INFINITY))
      bad(`imatrix entry ${name}: ${what}[${j}] is ${x}; it must be finite and ≥ 0`, name);
  }
}

function parseGgufImatrix(bytes: Uint8Array): Imatrix {
  const file = parseGguf(bytes);
  const sums = new Map<string, (typeof file.tensors)[number]>();
  const counts = new Map<string, (typeof file.tensors)[number]>();
  for (const t of file.tensors) {
    if (t.name.endsWith(SUMS)) sums.set(t.name.slice(0, -SUMS.length), t);
    else if (t.name.endsWith(COUNTS)) counts.set(t.name.slice(0, -COUNTS.length), t);
  }
  for (const name of counts.keys())
    if (!sums.has(name)) bad(`imatrix entry ${name} has ${name}${COUNTS} but no ${name}${SUMS}`, name);
  if (sums.size === 0) bad(`no ${SUMS} tensors: not an importance matrix`);
  const out: Imatrix = new Map();
  for (const [name, s] of sums) {
    const c = counts.get(name);
    if (!c) bad(`imatrix entry ${name} has ${name}${SUMS} but no ${name}${COUNTS}`, name);
    if (s.type !== GgmlType.F32 || c.type !== GgmlType.F32)
      bad(
        `imatrix entry ${name}: ${SUMS} and ${COUNTS} must be F32, not ${s.typeName} and ${c.typeName}`,
        name,
      );
    const nMat = c.nElements;
    if (nMat < 1 || s.nElements < 1 || s.nElements % nMat !== 0 || (s.dims[1] ?? 1) !== nMat)
      bad(
        `imatrix entry ${name}: ${SUMS} of shape [${s.dims.join(", ")}] does not match ${nMat} count(s)`,
        name,
      );
    const sum = f32s(tensorBytes(bytes, file, s));
    const count = f32s(tensorBytes(bytes, file, c));
    checkValues(name, sum, "sum");
    checkValues(name, count, "count");
    const cols = s.nElements / nMat;
    const mean = new Float32Array(s.nElements);
    for (let e = 0; e < nMat; e++) {
      const n = count[e]!;
      for (let j = 0; j < cols; j++) mean[e * cols + j] = n > 0 ? sum[e * cols + j]! / n : 1;
    }
    checkValues(name, mean, "mean");
    out.set(name, mean);
  }
  return out;
}

function parseLegacyImatrix(bytes: Uint8Array): Imatrix {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let pos = 0;
  const i32 = (what: string): number => {
    if (pos + 4 > bytes.length)
      throw new GgufError("TRUNCATED", `imatrix file ends inside ${what}`, { offset: pos });
    const v = view.getInt32(pos, true);
    pos += 4;
    return v;
  };
  const n = i32("the entry count");
  if (n < 1) bad(`legacy imatrix: entry count ${n}; it must be at least 1`);
  const out: Imatrix = new Map();
  const utf8 = new TextDecoder("utf-8", { fatal: true });
  for (let i = 0; i < n; i++) {
    const len = i32(`entry ${i}'s name length`);
    if (len < 1 || len > bytes.length - pos)
      throw new GgufError("TRUNCATED", `imatrix entry ${i}: name length ${len} runs past the file`, {
        offset: pos - 4,
      });
    let name: string;
    try {
      name = utf8.decode(bytes.subarray(pos, pos + len));
    } catch {
      throw new GgufError("INVALID_UTF8", `imatrix entry ${i}: the name is not UTF-8`, { offset: pos });
    }
    pos += len;
    const calls = i32(`entry ${name}'s call count`);
    const nval = i32(`entry ${name}'s value count`);
    if (calls < 0) bad(`imatrix entry ${name}: call count ${calls} is negative`, name);
    if (nval < 1) bad(`imatrix entry ${name}: value count ${nval}; it must be at least 1`, name);
    if (nval * 4 > bytes.length - pos)
      throw new GgufError("TRUNCATED", `imatrix entry ${name}: ${nval} values run past the file`, {
        offset: pos,
      });
    if (out.has(name))
      throw new GgufError("DUPLICATE_TENSOR", `imatrix entry ${name} appears twice`, { key: name });
    const v = f32s(bytes.subarray(pos, pos + 4 * nval));
    pos += 4 * nval;
    checkValues(name, v, "value");
    if (calls > 0) for (let j = 0; j < nval; j++) v[j] = v[j]! / calls;
    out.set(name, v);
  }
  // What follows (the chunk count and the dataset's name) is optional and not needed here.
  return out;
}

/**
 * Parses an importance matrix held in memory: llama-imatrix's GGUF output (recognized by its
 * magic) or its legacy .dat format. Returns each weight's mean x² per input column (see
 * {@link Imatrix}). Throws `BAD_IMATRIX` for contents that are not a usable importance matrix
 * (a sum without a count, non-F32 data, shapes that disagree, negative or non-finite values),
 * `TRUNCATED` for a legacy file that ends early, and the GGUF reader's errors for a broken GGUF.
 */
export function parseImatrix(bytes: Uint8Array): Imatrix {
  const isGguf =
    bytes.length >= 4 &&
    new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(0, true) === GGUF_MAGIC;
  return isGguf ? parseGgufImatrix(bytes) : parseLegacyImatrix(bytes);
}

/** Reads and parses the importance matrix at `path` ({@link parseImatrix}); `IO_ERROR` if unreadable. */
export async function readImatrix(path: string): Promise<Imatrix> {
  let bytes: Uint8Array;
  try {
    bytes = await readFile(path);
  } catch (cause) {
    throw new GgufError("IO_ERROR", "cannot read imatrix file", { path, cause });
  }
  try {
    return parseImatrix(bytes);
  } catch (e) {
    if (e instanceof GgufError && e.path === undefined)
      throw new GgufError(e.code, `${path}: ${e.message}`, { key: e.key, cause: e });
    throw e;
  }
}
