import { DType, dtypeName, isDType, WEIGHT_DTYPES } from "@minfer/ir";
import { ModelError } from "./errors.js";

/** What a model needs to know of a tensor in the file (a `GgufTensorInfo` fits). */
export interface TensorInfo {
  readonly name: string;
  /** ggml order, innermost first. */
  readonly dims: readonly number[];
  /** ggml type id (= @minfer/ir dtype id). */
  readonly type: number;
}

/** An expected tensor: a matrix (any weight dtype) or a vector (F32: norms and biases). */
export interface TensorSpec {
  readonly name: string;
  readonly ne: readonly number[];
  readonly kind: "matrix" | "vector";
  /** May be absent from the file (e.g. `rope_freqs.weight`). */
  readonly optional?: boolean;
}

/** A tensor checked against its spec: its name (= GGUF source), dtype and shape. */
export interface ModelTensor {
  readonly name: string;
  readonly dtype: DType;
  readonly ne: readonly number[];
}

/** The checked tensors of a model. */
export interface ModelTensors {
  readonly byName: ReadonlyMap<string, ModelTensor>;
  /** No `output.weight`: the output projection reuses `token_embd.weight`. */
  readonly tiedOutput: boolean;
}

const fmt = (ne: readonly number[]) => `[${ne.join(", ")}]`;

/** Trailing 1s do not count: a GGUF [64] and [64, 1] are the same shape. */
function sameShape(a: readonly number[], b: readonly number[]): boolean {
  for (let i = 0; i < Math.max(a.length, b.length, 1); i++) if ((a[i] ?? 1) !== (b[i] ?? 1)) return false;
  return true;
}

/** Checks one tensor: present (else MISSING_TENSOR), shaped as expected (BAD_SHAPE), of its dtype class (BAD_DTYPE). */
export function checkTensor(available: ReadonlyMap<string, TensorInfo>, spec: TensorSpec): ModelTensor {
  const info = available.get(spec.name);
  if (!info)
    throw new ModelError("MISSING_TENSOR", `tensor "${spec.name}" is missing from the model file`, {
      tensor: spec.name,
    });
  if (!sameShape(info.dims, spec.ne))
    throw new ModelError(
      "BAD_SHAPE",
      `tensor "${spec.name}" has shape ${fmt(info.dims)}, expected ${fmt(spec.ne)}`,
      { tensor: spec.name, expected: spec.ne, got: info.dims },
    );
  const dtype = info.type;
  const allowed = spec.kind === "vector" ? [DType.F32] : WEIGHT_DTYPES;
  if (!isDType(dtype) || !allowed.includes(dtype)) {
    const name = isDType(dtype) ? dtypeName(dtype) : `type ${dtype}`;
    throw new ModelError(
      "BAD_DTYPE",
      `tensor "${spec.name}" is ${name}; a ${spec.kind} must be ${spec.kind === "vector" ? "F32" : "a weight type"}`,
      { tensor: spec.name },
    );
  }
  return { name: spec.name, dtype, ne: [...spec.ne] };
}

/**
 * Checks every expected tensor. `output.weight` may be absent (tied embeddings: the output
 * projection then reuses `token_embd.weight`), and so may a spec marked optional; any other absent
 * tensor is MISSING_TENSOR. `specs` is read lazily and no further than the first bad tensor.
 */
export function checkTensors(infos: Iterable<TensorInfo>, specs: Iterable<TensorSpec>): ModelTensors {
  const available = new Map<string, TensorInfo>();
  for (const t of infos) available.set(t.name, t);
  const byName = new Map<string, ModelTensor>();
  let tiedOutput = false;
  for (const spec of specs) {
    if (spec.name === "output.weight" && !available.has(spec.name)) {
      tiedOutput = true;
      continue;
    }
    if (spec.optional && !available.has(spec.name)) continue;
    byName.set(spec.name, checkTensor(available, spec));
  }
  return { byName, tiedOutput };
}

/** `blk.<N>.…`: the block a tensor belongs to. */
const BLOCK_NAME = /^blk\.(\d+)\./;

/** How many blocks the tensor table has tensors for: 1 + the highest `blk.<N>.` index (0 when none). */
export function blocksInFile(infos: Iterable<TensorInfo>): number {
  let n = 0;
  for (const t of infos) {
    const m = BLOCK_NAME.exec(t.name);
    if (m) n = Math.max(n, Number(m[1]) + 1);
  }
  return n;
}

/**
 * Checks `<arch>.block_count` against the tensor table before anything is built per block: more
 * blocks than the file has is MISSING_TENSOR naming the first tensor of the first absent block
 * (as llama.cpp reports it); fewer is BAD_KEY (the file's extra blocks would be ignored).
 */
export function checkBlockCount(
  key: string,
  nLayer: number,
  infos: Iterable<TensorInfo>,
  firstTensor: (il: number) => string,
): void {
  const inFile = blocksInFile(infos);
  if (nLayer > inFile) {
    const tensor = firstTensor(inFile);
    throw new ModelError(
      "MISSING_TENSOR",
      `tensor "${tensor}" is missing from the model file: ${key} is ${nLayer} but the file has tensors for ${inFile} blocks`,
      { key, tensor },
    );
  }
  if (nLayer < inFile)
    throw new ModelError(
      "BAD_KEY",
      `${key} is ${nLayer} but the file has tensors for ${inFile} blocks (blk.0 … blk.${inFile - 1})`,
      { key },
    );
}

/**
 * The usual `loadTensors` of a decoder: `<arch>.block_count` checked against the table (by each
 * block's first tensor, `firstTensor`), then every spec.
 */
export function checkModelTensors(
  arch: string,
  nLayer: number,
  infos: Iterable<TensorInfo>,
  specs: Iterable<TensorSpec>,
  firstTensor: (il: number) => string = (il) => `blk.${il}.attn_norm.weight`,
): ModelTensors {
  const table = [...infos];
  checkBlockCount(`${arch}.block_count`, nLayer, table, firstTensor);
  return checkTensors(table, specs);
}
