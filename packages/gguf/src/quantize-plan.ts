import { GgufError } from "./errors.js";
import { fileTypeOf } from "./file-type.js";
import { GGML_TYPES, GgmlType, type GgmlTypeInfo, ggmlTypeByName, ggmlTypeInfo } from "./ggml-types.js";
import {
  DEQUANTIZE_TYPES,
  dequantize,
  IMPORTANCE_REQUIRED_TYPES,
  QUANTIZE_TYPES,
  quantize,
} from "./quant/index.js";
import {
  isQuantizable,
  type ModelFacts,
  mixInfo,
  mixTypes,
  QUANT_MIXES,
  type QuantMix,
  quantMixByName,
} from "./quantize-mixes.js";

/** What happens to one tensor when a file is quantized. */
export interface TensorPlan {
  readonly name: string;
  readonly from: GgmlTypeInfo;
  readonly to: GgmlTypeInfo;
  /** Why the tensor does not get the requested type, when it does not. */
  readonly note?: string;
}

// Where llama.cpp sends a type whose blocks do not fit a tensor's rows (its type fallback); a
// 32-element type that does not fit, or a fallback that does not fit either, gives F16.
const FALLBACK: ReadonlyMap<number, number> = new Map([
  [GgmlType.IQ1_S, GgmlType.IQ4_NL],
  [GgmlType.IQ1_M, GgmlType.IQ4_NL],
  [GgmlType.IQ2_XXS, GgmlType.IQ4_NL],
  [GgmlType.IQ2_XS, GgmlType.IQ4_NL],
  [GgmlType.IQ2_S, GgmlType.IQ4_NL],
  [GgmlType.IQ3_XXS, GgmlType.IQ4_NL],
  [GgmlType.IQ3_S, GgmlType.IQ4_NL],
  [GgmlType.IQ4_XS, GgmlType.IQ4_NL],
  [GgmlType.TQ1_0, GgmlType.Q4_0],
  [GgmlType.TQ2_0, GgmlType.Q4_0],
  [GgmlType.Q2_K, GgmlType.Q4_0],
  [GgmlType.Q3_K, GgmlType.Q4_0],
  [GgmlType.Q4_K, GgmlType.Q5_0],
  [GgmlType.Q5_K, GgmlType.Q5_1],
  [GgmlType.Q6_K, GgmlType.Q8_0],
]);

/**
 * llama.cpp's fallback for a matrix with rows of `row` elements that asks for `type`: the type
 * itself when its blocks fit the rows; else the i-quants of 256 → IQ4_NL, Q2_K / Q3_K / TQ1_0 /
 * TQ2_0 → Q4_0, Q4_K → Q5_0,
 * Q5_K → Q5_1, Q6_K → Q8_0, and F16 when that does not fit either (or the type has blocks of 32).
 */
export function fallbackType(row: number, type: GgmlTypeInfo): { to: GgmlTypeInfo; note?: string } {
  if (row % type.blockSize === 0) return { to: type };
  const next = FALLBACK.get(type.id);
  const to = ggmlTypeInfo(
    next !== undefined && row % ggmlTypeInfo(next).blockSize === 0 ? next : GgmlType.F16,
  );
  return {
    to,
    note: `rows of ${row} are not a multiple of the ${type.name} block size ${type.blockSize}; using ${to.name}`,
  };
}

/**
 * The type a weight of `dims` gets when `target` is asked for: vectors (norms, biases) stay F32;
 * a matrix whose rows are not whole blocks of `target` falls back as in llama.cpp
 * ({@link fallbackType}), and the fallback is reported in `note`.
 */
export function chooseType(
  dims: readonly number[],
  target: GgmlTypeInfo,
): { to: GgmlTypeInfo; note?: string } {
  if (dims.length < 2) return { to: ggmlTypeInfo(GgmlType.F32) };
  return fallbackType(dims[0]!, target);
}

/**
 * Names {@link quantTargetByName} takes as mixes besides the ggml type names: the mixes whose
 * names are not also a type's.
 */
export const QUANT_RECIPES: readonly string[] = Object.freeze(
  QUANT_MIXES.filter((m) => !GGML_TYPES.some((t) => t.name === m)),
);

/**
 * What a file is quantized to: one ggml type for every matrix (`recipe` absent), or one of
 * llama.cpp's mixes, where most matrices get `base` and some get another type.
 */
export interface QuantTarget {
  /** "Q4_K", "Q8_0", …, or the mix's name ("Q4_K_M"). */
  readonly name: string;
  /** The type most matrices get. */
  readonly base: GgmlTypeInfo;
  /** The file's `general.file_type`, if llama.cpp defines one. */
  readonly fileType: number | undefined;
  /** The mix whose rules choose each tensor's type; absent: every matrix gets `base`. */
  readonly recipe?: QuantMix;
  /** A mix asked for without its rules (llama-quantize --pure): every matrix gets `base`. */
  readonly pure?: true;
}

/** The target that gives every matrix `type`. */
export function quantTargetOf(type: GgmlTypeInfo): QuantTarget {
  return { name: type.name, base: type, fileType: fileTypeOf(type.id) };
}

function mixTarget(mix: QuantMix, pure: boolean): QuantTarget {
  const { base, fileType } = mixInfo(mix);
  const target = { name: mix, base: ggmlTypeInfo(base), fileType };
  return pure ? { ...target, pure: true } : { ...target, recipe: mix };
}

function typeTarget(name: string): QuantTarget {
  try {
    return quantTargetOf(ggmlTypeByName(name));
  } catch (e) {
    if (e instanceof GgufError) {
      throw new GgufError(e.code, `${e.message}; mixes: ${QUANT_MIXES.join(", ")}`);
    }
    throw e;
  }
}

/**
 * Looks a target up by name, case-insensitively: a ggml type name (`"q4_k"`, `"q4_0"`: every
 * matrix that type) or a mix that is not also a type's name (`"q4_k_m"`, `"q3_k_s"`, …). What
 * `minfer gguf synth --type` takes. Throws `UNKNOWN_TENSOR_TYPE` for anything else.
 */
export function quantTargetByName(name: string): QuantTarget {
  const mix = quantMixByName(name);
  return mix && QUANT_RECIPES.includes(mix) ? mixTarget(mix, false) : typeTarget(name);
}

/**
 * Looks a target up by name as llama-quantize reads it: each of llama.cpp's file types
 * ({@link QUANT_MIXES}: Q4_0, Q8_0, Q2_K, Q4_K_M, IQ4_XS, …) is its mix, so `"q4_0"` puts
 * output.weight at Q6_K as llama.cpp does; other ggml type names (`"q4_k"`, `"f16"`) give every
 * matrix that type. With `pure`, every matrix gets the mix's base type (llama-quantize --pure);
 * the file type stays the mix's. What `minfer gguf quantize` takes.
 */
export function llamaQuantTarget(name: string, options: { pure?: boolean } = {}): QuantTarget {
  const mix = quantMixByName(name);
  return mix ? mixTarget(mix, Boolean(options.pure)) : typeTarget(name);
}

/**
 * The type each tensor gets for `target` before the row-size fallback of {@link fallbackType}:
 * the mix's rules ({@link mixTypes}) with `model`'s facts, or `target.base` for every tensor.
 */
export function recipeTypes(
  tensors: readonly { name: string; dims: readonly number[] }[],
  target: QuantTarget,
  model: ModelFacts = {},
): GgmlTypeInfo[] {
  if (!target.recipe) return tensors.map(() => target.base);
  const quantizable = tensors.map((t) => isQuantizable(t.name, t.dims));
  const blockSize = (id: number) => ggmlTypeInfo(id).blockSize;
  return mixTypes(tensors, target.recipe, model, quantizable, blockSize).map((id) => ggmlTypeInfo(id));
}

/**
 * The type of each of `tensors` for `target`: vectors F32; matrices llama.cpp never quantizes
 * (MoE routers, positional embeddings, …) their own type (`type`, or F32 when not given); other
 * matrices {@link recipeTypes}, then {@link fallbackType} with its note. `model` holds what the
 * mixes read of the metadata ({@link modelFacts}); what it lacks is read off the tensors.
 */
export function chooseTypes(
  tensors: readonly { name: string; dims: readonly number[]; type?: number }[],
  target: QuantTarget,
  model: ModelFacts = {},
): { to: GgmlTypeInfo; note?: string }[] {
  const wanted = recipeTypes(tensors, target, model);
  return tensors.map((t, i) => {
    if (t.dims.length < 2) return { to: ggmlTypeInfo(GgmlType.F32) };
    if (!isQuantizable(t.name, t.dims)) return { to: ggmlTypeInfo(t.type ?? GgmlType.F32) };
    return wanted[i]!.quantized ? fallbackType(t.dims[0]!, wanted[i]!) : { to: wanted[i]! };
  });
}

/**
 * Plans the quantization of a model's tensors to `target` (a type {@link quantize} writes, or a
 * mix from {@link llamaQuantTarget} / {@link quantTargetByName}). `model`: what the mixes read of
 * the file's metadata ({@link modelFacts}: layer count, GQA ratio, experts, architecture). Tensors
 * already quantized are refused unless `allowRequantize`, as in llama.cpp.
 */
export function planQuantization(
  tensors: readonly { name: string; type: number; dims: readonly number[] }[],
  target: GgmlTypeInfo | QuantTarget,
  allowRequantize = false,
  model: ModelFacts = {},
): TensorPlan[] {
  const goal = "base" in target ? target : quantTargetOf(target);
  if (!QUANTIZE_TYPES.includes(goal.base.name)) {
    throw new GgufError(
      "UNSUPPORTED_DTYPE",
      `cannot quantize to ${goal.base.name}; supported: ${QUANTIZE_TYPES.join(", ")}`,
    );
  }
  const chosen = chooseTypes(tensors, goal, model);
  return tensors.map((t, i) => {
    const from = ggmlTypeInfo(t.type);
    const { to, note } = chosen[i]!;
    if (from.id !== to.id && !QUANTIZE_TYPES.includes(to.name)) {
      throw new GgufError(
        "UNSUPPORTED_DTYPE",
        `${goal.name} gives tensor "${t.name}" ${to.name}, which cannot be written; supported: ${QUANTIZE_TYPES.join(", ")}`,
        { key: t.name },
      );
    }
    if (from.id !== to.id && !DEQUANTIZE_TYPES.includes(from.name)) {
      throw new GgufError(
        "UNSUPPORTED_DTYPE",
        `tensor "${t.name}" is ${from.name}, which cannot be read back to f32`,
      );
    }
    if (from.quantized && from.id !== to.id && !allowRequantize) {
      throw new GgufError(
        "UNSUPPORTED_DTYPE",
        `tensor "${t.name}" is already quantized (${from.name}); requantizing loses quality — allow it explicitly (--allow-requantize)`,
        { key: t.name },
      );
    }
    return note ? { name: t.name, from, to, note } : { name: t.name, from, to };
  });
}

/**
 * Converts one tensor's bytes from one type to another through f32. `importance` (one value per
 * column; `data` holds whole rows) weighs the quantizer's error, as in {@link quantize}.
 */
export function convertTensor(
  data: Uint8Array,
  from: number,
  to: number,
  nElements: number,
  importance?: Float32Array,
): Uint8Array {
  if (from === to) return data;
  return quantize(to, dequantize(from, data, nElements), importance);
}

/** The types llama-quantize writes only from imatrix data for the tensor (its tensor_requires_imatrix). */
const IMATRIX_TYPES: ReadonlySet<number> = new Set<number>([
  GgmlType.IQ1_S,
  GgmlType.IQ1_M,
  GgmlType.IQ2_XXS,
  GgmlType.IQ2_XS,
  GgmlType.IQ2_S,
  GgmlType.IQ3_XXS,
]);

/** token_embd and output, which llama-quantize never asks imatrix data for (llama-imatrix has none). */
const isEmbedding = (name: string) =>
  name === "output.weight" || name === "token_embd.weight" || name === "per_layer_token_embd.weight";

/**
 * What importance each tensor of a plan needs: `"required"` where the plan converts it to IQ1_S,
 * IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S or IQ3_XXS, except token_embd and output (llama-quantize refuses
 * these without imatrix data for the tensor); `"uniform"` for such an exception whose type's
 * quantizer cannot run without an importance ({@link IMPORTANCE_REQUIRED_TYPES}): it is given
 * equal importance for every column, as llama-imatrix records none for it; `undefined` otherwise.
 */
export function importanceNeeds(plan: readonly TensorPlan[]): ("required" | "uniform" | undefined)[] {
  return plan.map((p) => {
    if (p.from.id === p.to.id || !IMATRIX_TYPES.has(p.to.id)) return undefined;
    if (!isEmbedding(p.name)) return "required";
    return IMPORTANCE_REQUIRED_TYPES.includes(p.to.name) ? "uniform" : undefined;
  });
}

/**
 * Checks that `imatrix` (entries by tensor name; `undefined`: none given) has what `plan` needs
 * ({@link importanceNeeds}): throws `INVALID_ARGUMENT` when the plan needs an importance matrix
 * and none is given, `BAD_IMATRIX` when it lacks the entry of a tensor that needs one. Either way
 * the message names the type and the tensor.
 */
export function checkImatrix(
  plan: readonly TensorPlan[],
  imatrix: { has(name: string): boolean } | undefined,
): void {
  const needs = importanceNeeds(plan);
  const i = needs.findIndex((n, k) => n === "required" && !imatrix?.has(plan[k]!.name));
  if (i < 0) return;
  const { name, to } = plan[i]!;
  if (!imatrix) {
    const more = needs.filter((n) => n === "required").length - 1;
    throw new GgufError(
      "INVALID_ARGUMENT",
      `this quantization needs an importance matrix: tensor "${name}" would be ${to.name}, which llama.cpp ` +
        `writes only from one${more > 0 ? ` (and ${more} more tensors need one)` : ""}; pass --imatrix FILE, made by llama-imatrix`,
    );
  }
  throw new GgufError(
    "BAD_IMATRIX",
    `the importance matrix has no entry for tensor "${name}", which ${to.name} needs: ` +
      "it was made for another model, or the tensor was never used when it was collected",
    { key: name },
  );
}
