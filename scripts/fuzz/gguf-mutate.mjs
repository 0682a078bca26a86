/**
 * Mutations of a whole GGUF model for the loader fuzzers: hyperparameters, tokenizer arrays, chat
 * templates and the tensor table are changed as values and written with @minfer/gguf's writer;
 * header counts, shapes, types and offsets are patched as bytes after writing. `mutate` returns
 * the file's bytes and a description of each change (printed with a failure, to replay it).
 */
import { encodeGguf, encodeHeader, ggmlByteSize } from "../../packages/gguf/dist/index.js";
import { ggufFields } from "./gguf-fields.mjs";
import { mutateHparam, mutateTemplate, mutateTokenizer } from "./gguf-mutate-metadata.mjs";
import { mutateTensor } from "./gguf-mutate-tensors.mjs";
import { Draft } from "./gguf-values.mjs";
import { int, pick } from "./prng.mjs";

export { loadSubjects } from "./gguf-subjects.mjs";
export { iterationRng, prng } from "./prng.mjs";

/** Larger tensors than this are not written whole: the file then ends before their data. */
const MAX_DATA = 8 << 20;

/** A tensor's data for its (possibly changed) type and shape, or undefined when it cannot have any. */
function dataFor(t) {
  let size;
  try {
    size = ggmlByteSize(t.type, t.dims);
  } catch {
    return undefined;
  }
  if (!Number.isSafeInteger(size) || size > MAX_DATA) return undefined;
  if (t.data && t.data.length === size) return t.data;
  const out = new Uint8Array(size);
  if (t.data) out.set(t.data.subarray(0, Math.min(size, t.data.length)));
  return out;
}

/**
 * Writes a draft. Tensors whose data cannot be made (unknown type, ragged rows, huge) get a
 * header anyway: the file ends before their data. A draft the writer refuses (a duplicate name or
 * key, an unwritable shape) becomes undefined.
 */
function encode(d) {
  const withData = d.tensors.map((t) => ({ ...t, data: dataFor(t) }));
  try {
    if (withData.every((t) => t.data)) return encodeGguf(d.kvs, withData);
    const layout = encodeHeader(d.kvs, withData);
    const out = new Uint8Array(Math.min(layout.fileSize, layout.header.length + MAX_DATA));
    out.set(layout.header);
    withData.forEach((t, k) => {
      const at = layout.header.length + layout.offsets[k];
      if (t.data && at + t.data.length <= out.length) out.set(t.data, at);
    });
    return out;
  } catch {
    return undefined;
  }
}

const U64_EXTREMES = [0n, 1n, 2n ** 31n, 2n ** 32n - 1n, 2n ** 32n, 2n ** 53n, 2n ** 63n, 2n ** 64n - 1n];

/** Header fields patched as bytes: counts, lengths, value types, dims, tensor types, offsets; or a cut. */
function patchBytes(bytes, r) {
  const f = ggufFields(bytes);
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const kind = pick(r, [
    "counts",
    "counts",
    "strings",
    "valueTypes",
    "nDims",
    "dims",
    "dims",
    "tensorTypes",
    "offsets",
    "offsets",
    "cut",
  ]);
  if (kind === "cut") {
    const at = r() < 0.5 ? int(r, f.end) : f.end + int(r, bytes.length - f.end);
    return { bytes: bytes.slice(0, at), op: `truncate at ${at} of ${bytes.length}` };
  }
  const p = pick(r, f[kind]);
  if (kind === "valueTypes" || kind === "nDims" || kind === "tensorTypes") {
    const old = v.getUint32(p, true);
    const val = pick(r, [old + 1, old - 1, 0, 4, 8, 9, 13, 39, 1000, 0xffffffff]) >>> 0;
    v.setUint32(p, val, true);
    return { bytes, op: `${kind}@${p} ${old} -> ${val}` };
  }
  const old = v.getBigUint64(p, true);
  const roll = r();
  const val =
    roll < 0.5 ? pick(r, U64_EXTREMES) : BigInt.asUintN(64, old + BigInt(pick(r, [-32, -1, 1, 32, 4096])));
  v.setBigUint64(p, val, true);
  return { bytes, op: `${kind}@${p} ${old} -> ${val}` };
}

const VALUE_MUTATIONS = [
  [0.3, mutateHparam],
  [0.24, mutateTokenizer],
  [0.14, mutateTemplate],
  [0.26, mutateTensor],
];

/** One of `[weight, value]` pairs, with probability proportional to its weight. */
function weighted(r, choices) {
  let x = r() * choices.reduce((a, [w]) => a + w, 0);
  for (const [w, v] of choices) {
    x -= w;
    if (x < 0) return v;
  }
  return choices[choices.length - 1][1];
}

/**
 * One mutated file of `subject` from the stream `r`: 1–3 value mutations, then (sometimes, or
 * whenever the writer refused them) a byte patch of the header. `{ bytes, ops }`.
 */
export function mutate(subject, r) {
  const ops = [];
  const d = new Draft(subject);
  const nValue = r() < 0.15 ? 0 : r() < 0.7 ? 1 : 2 + int(r, 2);
  for (let k = 0; k < nValue; k++) {
    ops.push(weighted(r, VALUE_MUTATIONS)(d, r));
  }
  let bytes = encode(d);
  if (!bytes) {
    ops.push("(the writer refused that: patching bytes of the original instead)");
    bytes = encode(new Draft(subject));
  }
  if (nValue === 0 || ops.length > nValue || r() < 0.1) {
    const p = patchBytes(bytes, r);
    bytes = p.bytes;
    ops.push(p.op);
  }
  return { bytes, ops };
}
