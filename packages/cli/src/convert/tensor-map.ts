// Checkpoint tensors → the GGUF tensors an architecture declares (archs/*.ts), with the shape each
// must have and the value transforms (Llama's Q/K row permutation, Gemma's w + 1).
import type { Rename, Slot } from "./archs/types.js";
import { ConvertError } from "./errors.js";
import { isFloatDtype, type SafeTensor } from "./safetensors.js";

/** One GGUF tensor to write and where its values come from. */
export interface PlannedTensor {
  /** GGUF name. */
  readonly name: string;
  /** GGUF dims (innermost first): the safetensors shape reversed. */
  readonly dims: readonly number[];
  /** The checkpoint tensor (absent for values computed by the converter). */
  readonly src?: SafeTensor;
  /** Values computed by the converter (llama3 `rope_freqs.weight`, LongRoPE factors). */
  readonly values?: Float32Array;
  /** Store w + 1 (Gemma's RMSNorm). */
  readonly addOne?: boolean;
  /** Write only `rows` rows of the source (the first, or those after `rowOffset`). */
  readonly rows?: number;
  /** Source rows skipped before the first one written. */
  readonly rowOffset?: number;
  /** Written as F32 whatever type is asked. */
  readonly f32?: boolean;
  /**
   * Llama Q/K: rows are permuted within each of `heads` heads of `headDim` rows (see
   * {@link permuteRows}).
   */
  readonly permute?: { heads: number; headDim: number };
}

/**
 * The row permutation Llama's Q and K weights get. Hugging Face's Llama applies RoPE to the two
 * halves of each head (dimension i is paired with i + d/2: NeoX style); GGUF's llama pairs
 * adjacent dimensions (2i, 2i + 1). So within each head of d rows, GGUF row 2i + j (j = 0, 1) is
 * Hugging Face row j·d/2 + i. `rows` holds whole heads (a multiple of `headDim` rows of `rowLen`).
 */
export function permuteRows(rows: Float32Array, rowLen: number, headDim: number): Float32Array {
  const out = new Float32Array(rows.length);
  const half = headDim / 2;
  const nRows = rows.length / rowLen;
  for (let h = 0; h < nRows; h += headDim) {
    for (let i = 0; i < half; i++) {
      for (let j = 0; j < 2; j++) {
        const from = (h + j * half + i) * rowLen;
        out.set(rows.subarray(from, from + rowLen), (h + 2 * i + j) * rowLen);
      }
    }
  }
  return out;
}

/** Checkpoint tensors that carry nothing GGUF needs (recomputed RoPE tables). */
const IGNORED = /(^|\.)rotary_emb\.inv_freq$/;

export interface TensorPlan {
  plan: PlannedTensor[];
  /** Tensors skipped or trimmed, for the summary. */
  notes: string[];
}

/**
 * Maps every checkpoint tensor (renamed by `rename`, which may skip it with a reason) to its GGUF
 * tensor, checking names and shapes. An unknown tensor, a missing one or one of the wrong shape is
 * refused by name. With tied embeddings (or no lm_head.weight) there is no output.weight: the
 * output projection reuses token_embd.weight.
 */
export function planTensors(
  source: string,
  want: Map<string, Slot>,
  tensors: Map<string, SafeTensor>,
  opts: { tied: boolean; rename?: (name: string) => Rename },
): TensorPlan {
  const found = new Map<string, SafeTensor>();
  const skipped = new Map<string, number>();
  for (const [name, t] of tensors) {
    if (IGNORED.test(name)) continue;
    const to = opts.rename ? opts.rename(name) : name;
    if (typeof to !== "string") {
      skipped.set(to.skip, (skipped.get(to.skip) ?? 0) + 1);
      continue;
    }
    if (!want.has(to))
      throw new ConvertError(
        "UNKNOWN_TENSOR",
        `tensor "${name}" (in ${t.file}) is not one a ${source} checkpoint of this config has`,
      );
    if (found.has(to))
      throw new ConvertError("BAD_FILE", `tensors "${found.get(to)!.name}" and "${name}" are both ${to}`);
    found.set(to, t);
  }
  const notes = [...skipped].map(([why, n]) => `skipped ${n} tensor${n === 1 ? "" : "s"}: ${why}`);
  const plan: PlannedTensor[] = [];
  for (const [hf, slot] of want) {
    const src = found.get(hf);
    if (slot.lmHead && (opts.tied || !src)) continue;
    if (!src) throw new ConvertError("MISSING_TENSOR", `tensor "${hf}" is missing from the checkpoint`);
    if (!isFloatDtype(src.dtype))
      throw new ConvertError(
        "UNSUPPORTED_DTYPE",
        `tensor "${src.name}" (in ${src.file}) is ${src.dtype}; only F32, F16 and BF16 weights are converted`,
      );
    const s = src.shape;
    const skip = slot.skipRows ?? 0;
    const fits = slot.trimRows
      ? s.length === 2 && s[0]! >= slot.shape[0]! && s[1] === slot.shape[1]
      : s.length === slot.shape.length && s.every((d, i) => d === slot.shape[i]! + (i === 0 ? skip : 0));
    if (!fits)
      throw new ConvertError(
        "BAD_SHAPE",
        `tensor "${src.name}" (in ${src.file}) has shape [${s.join(", ")}]; config.json implies [${[slot.shape[0]! + skip, ...slot.shape.slice(1)].join(", ")}]`,
      );
    const rows = (slot.trimRows && s[0]! > slot.shape[0]!) || skip > 0 ? slot.shape[0] : undefined;
    if (rows !== undefined && skip > 0)
      notes.push(
        `${slot.gguf}: dropped the first ${skip} of ${s[0]} rows (positions start after padding_idx)`,
      );
    else if (rows !== undefined)
      notes.push(`${slot.gguf}: kept the first ${rows} of ${s[0]} rows (the vocabulary)`);
    plan.push({
      name: slot.gguf,
      dims: [...slot.shape].reverse(),
      src,
      ...(slot.permute ? { permute: slot.permute } : {}),
      ...(slot.addOne ? { addOne: true } : {}),
      ...(rows !== undefined ? { rows } : {}),
      ...(skip > 0 ? { rowOffset: skip } : {}),
      ...(slot.f32 ? { f32: true } : {}),
    });
  }
  return { plan, notes };
}
