/**
 * Tensors, dtypes, ops, the graph builder, fusion, the program encoding and the backend contract.
 * @module @minfer/ir
 */

export type {
  BackendBuffer,
  BackendEntry,
  Device,
  DeviceCaps,
  DeviceInitOptions,
  DeviceMemory,
  DeviceRead,
  DeviceRuntime,
  DeviceVariant,
  DeviceWrite,
  ExecuteOptions,
  ExecuteResult,
  OpQuery,
  WeightQuantizer,
} from "./backend.js";
export { BACKEND_API_VERSION, WEIGHT_QUANTIZER } from "./backend.js";
export type { DTypeName } from "./dtype.js";
export {
  blockOf,
  DType,
  dtypeName,
  FLOAT_DTYPES,
  isDType,
  isQuantized,
  rowBytes,
  WEIGHT_DTYPES,
} from "./dtype.js";
export type { IrErrorCode } from "./errors.js";
export { IrError } from "./errors.js";
export { graphToDot, graphToJson } from "./export.js";
export type { FusionOptions } from "./fusion.js";
export { fuse } from "./fusion.js";
export type { Graph, RopeParams } from "./graph.js";
export { GraphBuilder } from "./graph.js";
export type { OutputSpec } from "./infer.js";
export { canRepeat, inferOutputs } from "./infer.js";
export { opInfoHeaderSource, programHeaderSource } from "./native-header.js";
export { opQueryKey, opQueryProgram } from "./op-query.js";
export type { OpName, OpSpec, ParamKind } from "./ops.js";
export { MAX_PARAMS, OP_SPECS, Op, opSpec, RopeMode } from "./ops.js";
export type { ProgramNode, ProgramSpec, ProgramTensor } from "./program.js";
export {
  decodeProgram,
  encodeProgram,
  MAX_NODE_INPUTS,
  MAX_NODE_OUTPUTS,
  NODE_RECORD_BYTES,
  PROGRAM_FLAG_BATCH_INVARIANT,
  PROGRAM_FLAGS_KNOWN,
  PROGRAM_HEADER_BYTES,
  PROGRAM_MAGIC,
  PROGRAM_MAX_PARAMS,
  PROGRAM_VERSION,
  TENSOR_RECORD_BYTES,
} from "./program.js";
export { replay } from "./replay.js";
export type { Node, Shape, Tensor, TensorKind } from "./tensor.js";
export { byteSpan, contiguousStrides, describe, isContiguous, numel, viewRoot } from "./tensor.js";
