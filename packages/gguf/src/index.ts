/**
 * Read, write, split and merge GGUF files; the ggml type table; reference quantize/dequantize.
 * @module @minfer/gguf
 */
export { GgufError } from "./errors.js";
export type { GgufErrorCode, GgufErrorDetails } from "./errors.js";
export { GgmlType, GGML_TYPES, ggmlTypeInfo, ggmlTypeByName, ggmlByteSize } from "./ggml-types.js";
export type { GgmlTypeId, GgmlTypeName, GgmlTypeInfo } from "./ggml-types.js";
export { GgufValueType, valueTypeName } from "./value-types.js";
export type { GgufValueTypeId } from "./value-types.js";
export { GgufMetadata, plainValue } from "./metadata.js";
export type { GgufArray, GgufArrayItems, GgufKV, GgufPlainValue, GgufScalar } from "./metadata.js";
export { GGUF_MAGIC } from "./parse.js";
export type { GgufFile, GgufPart, GgufTensorInfo } from "./parse.js";
export { parseGguf, readGguf, readGgufSync } from "./read.js";
export { readTensorData, readTensorRange, tensorBytes, tensorDataChunks } from "./tensor-data.js";
export { encodeHeader } from "./encode.js";
export type { GgufLayout, GgufTensorSpec } from "./encode.js";
export { encodeGguf, writeGguf } from "./write.js";
export type { GgufTensorToWrite, GgufWriteOptions, TensorDataSource } from "./write.js";
export { SPLIT_KEYS, splitPartName } from "./split-names.js";
export { mergeGguf, planSplit, splitGguf } from "./split.js";
export type { SplitOptions } from "./split.js";
export {
  DEQUANTIZE_TYPES,
  QUANTIZE_TYPES,
  bf16ToF32,
  dequantize,
  f16ToF32,
  f32ToBf16,
  f32ToF16,
  quantize,
} from "./quant/index.js";
export { fileTypeOf } from "./file-type.js";
export { chooseType, convertTensor, planQuantization } from "./quantize-plan.js";
export type { TensorPlan } from "./quantize-plan.js";
export { SYNTH_ARCHS, SYNTH_PRESETS, resolvePreset } from "./synth/presets.js";
export type { SynthArch, SynthPreset } from "./synth/presets.js";
export { synthesizeModel } from "./synth/synth.js";
export type { SynthModel, SynthOptions } from "./synth/synth.js";
export { byteVocabulary } from "./synth/vocab.js";
