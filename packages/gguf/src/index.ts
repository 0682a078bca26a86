/**
 * Read, write, split and merge GGUF files; the ggml type table; reference quantize/dequantize.
 * @module @minfer/gguf
 */

export type { GgufLayout, GgufTensorSpec } from "./encode.js";
export { encodeHeader } from "./encode.js";
export type { GgufErrorCode, GgufErrorDetails } from "./errors.js";
export { GgufError } from "./errors.js";
export { FILE_TYPE_Q4_K_M, fileTypeOf, MIX_FILE_TYPE } from "./file-type.js";
export type { GgmlTypeId, GgmlTypeInfo, GgmlTypeName } from "./ggml-types.js";
export { GGML_TYPES, GgmlType, ggmlByteSize, ggmlTypeByName, ggmlTypeInfo } from "./ggml-types.js";
export type { Imatrix } from "./imatrix.js";
export { parseImatrix, readImatrix } from "./imatrix.js";
export type { ImatrixMeta, ImatrixSums } from "./imatrix-write.js";
export { encodeImatrix } from "./imatrix-write.js";
export type { GgufArray, GgufArrayItems, GgufKV, GgufPlainValue, GgufScalar } from "./metadata.js";
export { GgufMetadata, plainValue } from "./metadata.js";
export type { GgufFile, GgufPart, GgufTensorInfo } from "./parse.js";
export { GGUF_MAGIC } from "./parse.js";
export {
  bf16ToF32,
  DEQUANTIZE_TYPES,
  dequantize,
  f16ToF32,
  f32ToBf16,
  f32ToF16,
  IMPORTANCE_REQUIRED_TYPES,
  IMPORTANCE_TYPES,
  QUANTIZE_TYPES,
  quantize,
} from "./quant/index.js";
export type { ModelFacts, QuantMix, TensorRole } from "./quantize-mixes.js";
export {
  isQuantizable,
  mixInfo,
  mixTypes,
  modelFacts,
  QUANT_MIXES,
  quantMixByName,
  tensorRole,
  useMoreBits,
} from "./quantize-mixes.js";
export type { QuantTarget, TensorPlan } from "./quantize-plan.js";
export {
  checkImatrix,
  chooseType,
  chooseTypes,
  convertTensor,
  fallbackType,
  importanceNeeds,
  llamaQuantTarget,
  planQuantization,
  QUANT_RECIPES,
  quantTargetByName,
  quantTargetOf,
  recipeTypes,
} from "./quantize-plan.js";
export { parseGguf, readGguf, readGgufSync } from "./read.js";
export type { SplitOptions } from "./split.js";
export { mergeGguf, planSplit, splitGguf } from "./split.js";
export { SPLIT_KEYS, splitPartName } from "./split-names.js";
export type { SynthArch, SynthPreset } from "./synth/presets.js";
export { resolvePreset, SYNTH_ARCHS, SYNTH_PRESETS } from "./synth/presets.js";
export type { SynthChunk, SynthLayout, SynthLayoutOptions, SynthModel, SynthOptions } from "./synth/synth.js";
export { synthChunk, synthesizeLayout, synthesizeModel, synthVocabSize } from "./synth/synth.js";
export { byteVocabulary } from "./synth/vocab.js";
export { readTensorData, readTensorRange, tensorBytes, tensorDataChunks } from "./tensor-data.js";
export type { GgufValueTypeId } from "./value-types.js";
export { GgufValueType, valueTypeName } from "./value-types.js";
export type { GgufTensorToWrite, GgufWriteOptions, TensorDataSource } from "./write.js";
export { encodeGguf, writeGguf } from "./write.js";
