import { blockOf, DType } from "./dtype.js";
import { OP_SPECS } from "./ops.js";
import {
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

/**
 * The C++ mirror of the program encoding (native/common/program_format.h), generated from the
 * same constants so the two cannot drift; a test compares the committed file with this text.
 */
export function programHeaderSource(): string {
  const L: string[] = [];
  L.push(
    "// Generated from @minfer/ir (packages/ir/src/native-header.ts) by `pnpm --filter @minfer/ir gen:native`.",
  );
  L.push("// Do not edit: change the TypeScript and regenerate. A test fails when the two differ.");
  L.push("#pragma once");
  L.push("#include <cstdint>");
  L.push("");
  L.push("namespace minfer::program {");
  L.push("");
  L.push(`constexpr uint32_t kMagic = 0x${PROGRAM_MAGIC.toString(16)}u;`);
  L.push(`constexpr uint32_t kVersion = ${PROGRAM_VERSION};`);
  L.push(`constexpr int kHeaderBytes = ${PROGRAM_HEADER_BYTES};`);
  L.push(`constexpr int kTensorRecordBytes = ${TENSOR_RECORD_BYTES};`);
  L.push(`constexpr int kNodeRecordBytes = ${NODE_RECORD_BYTES};`);
  L.push(`constexpr int kMaxInputs = ${MAX_NODE_INPUTS};`);
  L.push(`constexpr int kMaxOutputs = ${MAX_NODE_OUTPUTS};`);
  L.push(`constexpr int kMaxParams = ${PROGRAM_MAX_PARAMS};`);
  L.push("// Header flags (PROGRAM_FLAG_* in packages/ir/src/program.ts).");
  L.push(`constexpr uint32_t kFlagBatchInvariant = ${PROGRAM_FLAG_BATCH_INVARIANT}u;`);
  L.push(`constexpr uint32_t kFlagsKnown = ${PROGRAM_FLAGS_KNOWN}u;`);
  L.push("");
  L.push("enum class DType : int32_t {");
  for (const [name, id] of Object.entries(DType)) L.push(`  ${name} = ${id},`);
  L.push("};");
  L.push("");
  L.push('// The name of a dtype, for messages ("dtype N" for an id outside the enum).');
  L.push("inline const char* dtype_name(DType t) {");
  L.push("  switch (t) {");
  for (const name of Object.keys(DType)) L.push(`    case DType::${name}: return "${name}";`);
  L.push("  }");
  L.push('  return "an unknown dtype";');
  L.push("}");
  L.push("");
  L.push("// Elements and bytes per block of each dtype (1 and the element size for plain types).");
  L.push("struct BlockLayout {");
  L.push("  int32_t dtype;");
  L.push("  int32_t block_size;");
  L.push("  int32_t type_size;");
  L.push("};");
  L.push("constexpr BlockLayout kBlockLayouts[] = {");
  for (const [name, id] of Object.entries(DType)) {
    const b = blockOf(id);
    L.push(`    {${id}, ${b.blockSize}, ${b.typeSize}},  // ${name}`);
  }
  L.push("};");
  L.push("");
  L.push("enum class Op : int32_t {");
  for (const s of OP_SPECS) L.push(`  ${s.name} = ${s.code},  // ${s.doc.replace(/\s+/g, " ")}`);
  L.push("};");
  L.push("");
  L.push("// Parameter word indices of each op (i32 values or f32 bit patterns), and input/output counts.");
  L.push("namespace param {");
  for (const s of OP_SPECS) {
    L.push(`namespace ${s.name} {`);
    s.params.forEach(([p, kind], i) => {
      L.push(`constexpr int ${p} = ${i};  // ${kind}`);
    });
    L.push(`constexpr int kCount = ${s.params.length};`);
    L.push(`constexpr int kMinInputs = ${s.inputs[0]};`);
    L.push(`constexpr int kMaxInputs = ${s.inputs[1]};`);
    L.push(`constexpr int kMinOutputs = ${s.outputs[0]};`);
    L.push(`constexpr int kMaxOutputs = ${s.outputs[1]};`);
    L.push(`}  // namespace ${s.name}`);
  }
  L.push("}  // namespace param");
  L.push("");
  L.push("#pragma pack(push, 1)");
  L.push("struct Header {");
  L.push(
    "  uint32_t magic, version, n_buffers, n_tensors, n_nodes, tensor_record_bytes, node_record_bytes, flags;",
  );
  L.push("};");
  L.push("struct TensorRecord {");
  L.push("  int32_t dtype;");
  L.push("  int32_t buffer;");
  L.push("  int64_t offset;");
  L.push("  int64_t ne[4];");
  L.push("  int64_t nb[4];");
  L.push("};");
  L.push("struct NodeRecord {");
  L.push("  int32_t op, n_inputs, n_outputs, n_params;");
  L.push("  int32_t inputs[kMaxInputs];");
  L.push("  int32_t outputs[kMaxOutputs];");
  L.push("  uint32_t params[kMaxParams];");
  L.push("};");
  L.push("#pragma pack(pop)");
  L.push('static_assert(sizeof(Header) == kHeaderBytes, "header layout");');
  L.push('static_assert(sizeof(TensorRecord) == kTensorRecordBytes, "tensor record layout");');
  L.push('static_assert(sizeof(NodeRecord) == kNodeRecordBytes, "node record layout");');
  L.push("");
  L.push("}  // namespace minfer::program");
  return `${L.join("\n")}\n`;
}

/**
 * native/common/op_info.h: the op vocabulary as every backend's loader validates it (name,
 * parameter count, input and output counts of each op), generated with program_format.h from
 * OP_SPECS so a new op needs no hand-written line; a test compares the committed file with this text.
 */
export function opInfoHeaderSource(): string {
  const L: string[] = [];
  L.push(
    "// Generated from @minfer/ir (packages/ir/src/native-header.ts) by `pnpm --filter @minfer/ir gen:native`.",
  );
  L.push("// Do not edit: change the TypeScript and regenerate. A test fails when the two differ.");
  L.push("// The op vocabulary as every backend's loader validates it: name, parameter count and");
  L.push("// input/output counts of each op, from program_format.h's param::<OP>:: constants.");
  L.push("#pragma once");
  L.push('#include "program_format.h"');
  L.push("");
  L.push("namespace minfer::program {");
  L.push("");
  L.push("struct OpInfo {");
  L.push("  Op op;");
  L.push("  const char* name;");
  L.push("  int n_params;");
  L.push("  int min_inputs, max_inputs;");
  L.push("  int min_outputs, max_outputs;");
  L.push("};");
  L.push("");
  L.push("// Hidden: the CPU and CUDA addons share one process, and an exported inline variable is a");
  L.push("// STB_GNU_UNIQUE symbol that the dynamic loader binds process-wide (even for RTLD_LOCAL): the");
  L.push("// addon loaded first would lend its op table (input counts included) to the other.");
  L.push("#if defined(__GNUC__) || defined(__clang__)");
  L.push('#define MINFER_OPS_HIDDEN __attribute__((visibility("hidden")))');
  L.push("#else");
  L.push("#define MINFER_OPS_HIDDEN");
  L.push("#endif");
  L.push("#define MINFER_OP(NAME)                                                                    \\");
  L.push(
    "  OpInfo{Op::NAME, #NAME, param::NAME::kCount, param::NAME::kMinInputs, param::NAME::kMaxInputs, \\",
  );
  L.push("         param::NAME::kMinOutputs, param::NAME::kMaxOutputs}");
  L.push("MINFER_OPS_HIDDEN inline constexpr OpInfo kOps[] = {");
  for (const s of OP_SPECS) L.push(`    MINFER_OP(${s.name}),`);
  L.push("};");
  L.push("#undef MINFER_OP");
  L.push("");
  L.push("// nullptr when `code` is not an op this build knows.");
  L.push("inline const OpInfo* op_info(int32_t code) {");
  L.push("  for (const OpInfo& info : kOps) {");
  L.push("    if (static_cast<int32_t>(info.op) == code) return &info;");
  L.push("  }");
  L.push("  return nullptr;");
  L.push("}");
  L.push("");
  L.push('// The op\'s name, or "unknown op" for codes outside the vocabulary (for messages).');
  L.push("inline const char* op_name(int32_t code) {");
  L.push("  const OpInfo* info = op_info(code);");
  L.push('  return info ? info->name : "unknown op";');
  L.push("}");
  L.push("");
  L.push("}  // namespace minfer::program");
  return `${L.join("\n")}\n`;
}
