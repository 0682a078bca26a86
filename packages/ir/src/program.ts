import { type DType, dtypeName } from "./dtype.js";
import { IrError } from "./errors.js";
import { MAX_PARAMS, type Op, opSpec } from "./ops.js";
import { byteSpan, type Shape } from "./tensor.js";

/**
 * The program encoding: one graph split for one device as a flat little-endian byte layout that
 * native code reads without parsing. native/common/program_format.h is generated from the
 * constants below (`pnpm --filter @minfer/ir gen:native`), and a test fails if the two differ.
 *
 *   header   8 × u32: magic, version, nBuffers, nTensors, nNodes, tensorRecordBytes, nodeRecordBytes, flags
 *   buffers  nBuffers × u64: the bytes each buffer slot must have at least
 *   tensors  nTensors × TENSOR record: i32 dtype, i32 buffer slot, i64 byte offset, i64 ne[4], i64 nb[4]
 *   nodes    nNodes × NODE record: i32 op, nIn, nOut, nParams, i32 in[MAX_IN], i32 out[MAX_OUT],
 *            u32 params[MAX_PARAMS] (i32 values, or f32 bit patterns)
 */
export const PROGRAM_MAGIC = 0x4750464d; // "MFPG"
/** Bumped whenever the layout or an op's parameters change. */
export const PROGRAM_VERSION = 1;
export const PROGRAM_HEADER_BYTES = 32;
export const TENSOR_RECORD_BYTES = 80;
export const MAX_NODE_INPUTS = 8;
export const MAX_NODE_OUTPUTS = 4;
export const PROGRAM_MAX_PARAMS = 16;
/**
 * Program flag: every output column (token) must come out as the same bits as when that column is
 * computed alone — no kernel whose summation order depends on the number of columns (a panel
 * GEMM, a column-split mat-vec). Speculative verification asks for it, so that greedy output with
 * drafts is the output without; it may be slower.
 */
export const PROGRAM_FLAG_BATCH_INVARIANT = 1;
/** The flags this build knows (a program with another bit set is refused). */
export const PROGRAM_FLAGS_KNOWN = PROGRAM_FLAG_BATCH_INVARIANT;
export const NODE_RECORD_BYTES = 16 + 4 * MAX_NODE_INPUTS + 4 * MAX_NODE_OUTPUTS + 4 * PROGRAM_MAX_PARAMS;

if (MAX_PARAMS > PROGRAM_MAX_PARAMS)
  throw new Error("an op has more parameters than the program encoding holds");

/** A tensor as a program sees it: where its bytes are and how they are laid out. */
export interface ProgramTensor {
  readonly dtype: DType;
  /** Index into the program's buffer slots. */
  readonly buffer: number;
  /** Byte offset of element [0,0,0,0] in the buffer. */
  readonly offset: number;
  readonly ne: Shape;
  readonly nb: Shape;
}

export interface ProgramNode {
  readonly op: Op;
  /** Indices into the program's tensors. */
  readonly inputs: readonly number[];
  readonly outputs: readonly number[];
  readonly params: readonly number[];
}

export interface ProgramSpec {
  /** Bytes each buffer slot must have at least. */
  readonly bufferSizes: readonly number[];
  readonly tensors: readonly ProgramTensor[];
  readonly nodes: readonly ProgramNode[];
  /** PROGRAM_FLAG_* bits. Default 0. */
  readonly flags?: number;
}

function bad(message: string): never {
  throw new IrError("BAD_PROGRAM", message);
}

/** Encodes a program; every tensor must lie inside its buffer and every index must exist. */
export function encodeProgram(p: ProgramSpec): Uint8Array {
  const size =
    PROGRAM_HEADER_BYTES +
    8 * p.bufferSizes.length +
    TENSOR_RECORD_BYTES * p.tensors.length +
    NODE_RECORD_BYTES * p.nodes.length;
  const bytes = new Uint8Array(size);
  const dv = new DataView(bytes.buffer);
  let at = 0;
  const u32 = (v: number) => {
    dv.setUint32(at, v, true);
    at += 4;
  };
  const i32 = (v: number) => {
    dv.setInt32(at, v, true);
    at += 4;
  };
  const i64 = (v: number) => {
    dv.setBigInt64(at, BigInt(v), true);
    at += 8;
  };
  for (const v of [PROGRAM_MAGIC, PROGRAM_VERSION, p.bufferSizes.length, p.tensors.length, p.nodes.length])
    u32(v);
  const flags = p.flags ?? 0;
  if (!Number.isInteger(flags) || flags < 0 || (flags & ~PROGRAM_FLAGS_KNOWN) !== 0)
    bad(`program flags ${flags} are not a set of PROGRAM_FLAG_* bits`);
  for (const v of [TENSOR_RECORD_BYTES, NODE_RECORD_BYTES, flags]) u32(v);
  for (const s of p.bufferSizes) {
    if (!Number.isSafeInteger(s) || s < 0) bad(`buffer size ${s} is not a byte count`);
    i64(s);
  }
  p.tensors.forEach((t, i) => {
    dtypeName(t.dtype);
    if (!(t.buffer >= 0 && t.buffer < p.bufferSizes.length))
      bad(`tensor ${i} uses buffer slot ${t.buffer} of ${p.bufferSizes.length}`);
    const end = t.offset + byteSpan(t);
    if (!Number.isSafeInteger(t.offset) || t.offset < 0 || end > p.bufferSizes[t.buffer]!) {
      bad(
        `tensor ${i} (bytes ${t.offset}..${end}) does not fit in buffer ${t.buffer} (${p.bufferSizes[t.buffer]} bytes)`,
      );
    }
    i32(t.dtype);
    i32(t.buffer);
    i64(t.offset);
    for (const n of t.ne) i64(n);
    for (const n of t.nb) i64(n);
  });
  p.nodes.forEach((n, i) => {
    const s = opSpec(n.op);
    if (!s) bad(`node ${i} has unknown op ${n.op}`);
    if (n.inputs.length > MAX_NODE_INPUTS || n.outputs.length > MAX_NODE_OUTPUTS)
      bad(`node ${i} has too many inputs or outputs`);
    if (n.params.length !== s.params.length)
      bad(`node ${i} (${s.name}) has ${n.params.length} parameters, expects ${s.params.length}`);
    for (const t of [...n.inputs, ...n.outputs]) {
      if (!(Number.isInteger(t) && t >= 0 && t < p.tensors.length))
        bad(`node ${i} (${s.name}) refers to tensor ${t} of ${p.tensors.length}`);
    }
    const start = at;
    for (const v of [n.op, n.inputs.length, n.outputs.length, n.params.length]) i32(v);
    at = start + 16;
    n.inputs.forEach((t, k) => {
      dv.setInt32(start + 16 + 4 * k, t, true);
    });
    n.outputs.forEach((t, k) => {
      dv.setInt32(start + 16 + 4 * MAX_NODE_INPUTS + 4 * k, t, true);
    });
    const pBase = start + 16 + 4 * MAX_NODE_INPUTS + 4 * MAX_NODE_OUTPUTS;
    s.params.forEach(([, kind], k) => {
      if (kind === "i32") dv.setInt32(pBase + 4 * k, n.params[k]!, true);
      else dv.setFloat32(pBase + 4 * k, n.params[k]!, true);
    });
    at = start + NODE_RECORD_BYTES;
  });
  return bytes;
}

/** Decodes a program (for tests and debugging); refuses a wrong magic or version. */
export function decodeProgram(bytes: Uint8Array): ProgramSpec {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < PROGRAM_HEADER_BYTES || dv.getUint32(0, true) !== PROGRAM_MAGIC)
    bad("not a program (bad magic)");
  const version = dv.getUint32(4, true);
  if (version !== PROGRAM_VERSION) bad(`program version ${version}; this build reads ${PROGRAM_VERSION}`);
  const [nBuf, nT, nN] = [dv.getUint32(8, true), dv.getUint32(12, true), dv.getUint32(16, true)];
  const flags = dv.getUint32(28, true);
  let at = PROGRAM_HEADER_BYTES;
  const bufferSizes: number[] = [];
  for (let i = 0; i < nBuf; i++, at += 8) bufferSizes.push(Number(dv.getBigInt64(at, true)));
  const tensors: ProgramTensor[] = [];
  for (let i = 0; i < nT; i++, at += TENSOR_RECORD_BYTES) {
    const q = (k: number) => Number(dv.getBigInt64(at + 8 + 8 * k, true));
    tensors.push({
      dtype: dv.getInt32(at, true) as DType,
      buffer: dv.getInt32(at + 4, true),
      offset: q(0),
      ne: [q(1), q(2), q(3), q(4)],
      nb: [q(5), q(6), q(7), q(8)],
    });
  }
  const nodes: ProgramNode[] = [];
  for (let i = 0; i < nN; i++, at += NODE_RECORD_BYTES) {
    const op = dv.getInt32(at, true) as Op;
    const [nIn, nOut, nP] = [
      dv.getInt32(at + 4, true),
      dv.getInt32(at + 8, true),
      dv.getInt32(at + 12, true),
    ];
    const s = opSpec(op);
    const pBase = at + 16 + 4 * MAX_NODE_INPUTS + 4 * MAX_NODE_OUTPUTS;
    nodes.push({
      op,
      inputs: Array.from({ length: nIn }, (_, k) => dv.getInt32(at + 16 + 4 * k, true)),
      outputs: Array.from({ length: nOut }, (_, k) =>
        dv.getInt32(at + 16 + 4 * MAX_NODE_INPUTS + 4 * k, true),
      ),
      params: Array.from({ length: nP }, (_, k) =>
        s?.params[k]?.[1] === "f32" ? dv.getFloat32(pBase + 4 * k, true) : dv.getInt32(pBase + 4 * k, true),
      ),
    });
  }
  return { bufferSizes, tensors, nodes, ...(flags !== 0 ? { flags } : {}) };
}
