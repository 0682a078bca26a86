import { GgufError } from "./errors.js";
import { FILE_TYPE_Q4_K_M, fileTypeOf } from "./file-type.js";
import { GgmlType, type GgmlTypeInfo, ggmlTypeByName, ggmlTypeInfo } from "./ggml-types.js";
import { DEQUANTIZE_TYPES, dequantize, QUANTIZE_TYPES, quantize } from "./quant/index.js";

/** What happens to one tensor when a file is quantized. */
export interface TensorPlan {
  readonly name: string;
  readonly from: GgmlTypeInfo;
  readonly to: GgmlTypeInfo;
  /** Why the tensor does not get the requested type, when it does not. */
  readonly note?: string;
}

/**
 * The type a weight of `dims` gets when `target` is asked for: vectors (norms, biases) stay F32;
 * a matrix whose rows are not whole blocks of `target` falls back to Q8_0 (rows of 32s) or F16,
 * as llama.cpp does, and the fallback is reported in `note`.
 */
export function chooseType(
  dims: readonly number[],
  target: GgmlTypeInfo,
): { to: GgmlTypeInfo; note?: string } {
  if (dims.length < 2) return { to: ggmlTypeInfo(GgmlType.F32) };
  const row = dims[0]!;
  if (row % target.blockSize === 0) return { to: target };
  const fallback = ggmlTypeInfo(row % 32 === 0 && target.blockSize > 32 ? GgmlType.Q8_0 : GgmlType.F16);
  return {
    to: fallback,
    note: `rows of ${row} are not a multiple of the ${target.name} block size ${target.blockSize}; using ${fallback.name}`,
  };
}

/** Names of the mixed recipes {@link quantTargetByName} accepts besides the ggml type names. */
export const QUANT_RECIPES: readonly string[] = Object.freeze(["Q4_K_M"]);

/**
 * What a file is quantized to: one ggml type for every matrix (`recipe` absent), or one of
 * llama.cpp's mixed recipes, where most matrices get `base` and a few get more bits.
 */
export interface QuantTarget {
  /** "Q4_K", "Q8_0", …, or the recipe's name ("Q4_K_M"). */
  readonly name: string;
  /** The type most matrices get. */
  readonly base: GgmlTypeInfo;
  /** The file's `general.file_type`, if llama.cpp defines one. */
  readonly fileType: number | undefined;
  readonly recipe?: "Q4_K_M";
}

/** The target that gives every matrix `type`. */
export function quantTargetOf(type: GgmlTypeInfo): QuantTarget {
  return { name: type.name, base: type, fileType: fileTypeOf(type.id) };
}

/**
 * Looks a target up by name, case-insensitively: a ggml type name (`"q4_k"`) or a recipe
 * (`"q4_k_m"`). Throws `UNKNOWN_TENSOR_TYPE` for anything else.
 */
export function quantTargetByName(name: string): QuantTarget {
  if (name.toUpperCase() === "Q4_K_M") {
    return {
      name: "Q4_K_M",
      base: ggmlTypeInfo(GgmlType.Q4_K),
      fileType: FILE_TYPE_Q4_K_M,
      recipe: "Q4_K_M",
    };
  }
  try {
    return quantTargetOf(ggmlTypeByName(name));
  } catch (e) {
    if (e instanceof GgufError) {
      throw new GgufError(e.code, `${e.message}; recipes: ${QUANT_RECIPES.join(", ")}`);
    }
    throw e;
  }
}

/** llama.cpp's use_more_bits(i, n): the first and last eighth of the layers, and every third between. */
export function useMoreBits(i: number, n: number): boolean {
  const e = Math.floor(n / 8);
  return i < e || i >= Math.floor((7 * n) / 8) || (i - e) % 3 === 2;
}

const LAYER_TENSOR = /^blk\.(\d+)\.(attn_v|ffn_down)\.weight$/;

/**
 * The type each tensor gets for `target` before the row-size fallback of {@link chooseType}.
 * For Q4_K_M, as llama.cpp's llama_tensor_get_type: output.weight Q6_K; attn_v.weight and
 * ffn_down.weight Q6_K in the layers where useMoreBits(layer, count of such tensors) holds;
 * a fused attn_qkv.weight Q5_K; every other matrix (token_embd.weight included) Q4_K.
 */
export function recipeTypes(tensors: readonly { name: string }[], target: QuantTarget): GgmlTypeInfo[] {
  if (target.recipe !== "Q4_K_M") return tensors.map(() => target.base);
  const counts = new Map<string, number>();
  for (const t of tensors) {
    const m = LAYER_TENSOR.exec(t.name);
    if (m) counts.set(m[2]!, (counts.get(m[2]!) ?? 0) + 1);
  }
  const q6 = ggmlTypeInfo(GgmlType.Q6_K);
  return tensors.map((t) => {
    if (t.name === "output.weight") return q6;
    if (/^blk\.\d+\.attn_qkv\.weight$/.test(t.name)) return ggmlTypeInfo(GgmlType.Q5_K);
    const m = LAYER_TENSOR.exec(t.name);
    if (m && useMoreBits(Number(m[1]), counts.get(m[2]!)!)) return q6;
    return target.base;
  });
}

/**
 * The type of each of `tensors` for `target` ({@link recipeTypes}, then {@link chooseType}'s
 * F32 for vectors and fallback for rows that are not whole blocks), with the fallback's note.
 */
export function chooseTypes(
  tensors: readonly { name: string; dims: readonly number[] }[],
  target: QuantTarget,
): { to: GgmlTypeInfo; note?: string }[] {
  const wanted = recipeTypes(tensors, target);
  return tensors.map((t, i) => chooseType(t.dims, wanted[i]!));
}

/**
 * Plans the quantization of a model's tensors to `target` (a type {@link quantize} writes, or a
 * recipe from {@link quantTargetByName}). Tensors already quantized are refused unless
 * `allowRequantize`, as in llama.cpp.
 */
export function planQuantization(
  tensors: readonly { name: string; type: number; dims: readonly number[] }[],
  target: GgmlTypeInfo | QuantTarget,
  allowRequantize = false,
): TensorPlan[] {
  const goal = "base" in target ? target : quantTargetOf(target);
  if (!QUANTIZE_TYPES.includes(goal.base.name)) {
    throw new GgufError(
      "UNSUPPORTED_DTYPE",
      `cannot quantize to ${goal.base.name}; supported: ${QUANTIZE_TYPES.join(", ")}`,
    );
  }
  const chosen = chooseTypes(tensors, goal);
  return tensors.map((t, i) => {
    const from = ggmlTypeInfo(t.type);
    if (!DEQUANTIZE_TYPES.includes(from.name)) {
      throw new GgufError(
        "UNSUPPORTED_DTYPE",
        `tensor "${t.name}" is ${from.name}, which cannot be read back to f32`,
      );
    }
    const { to, note } = chosen[i]!;
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

/** Converts one tensor's bytes from one type to another through f32. */
export function convertTensor(data: Uint8Array, from: number, to: number, nElements: number): Uint8Array {
  if (from === to) return data;
  return quantize(to, dequantize(from, data, nElements));
}
