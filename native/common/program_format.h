// Generated from @minfer/ir (packages/ir/src/native-header.ts) by `pnpm --filter @minfer/ir gen:native`.
// Do not edit: change the TypeScript and regenerate. A test fails when the two differ.
#pragma once
#include <cstdint>

namespace minfer::program {

constexpr uint32_t kMagic = 0x4750464du;
constexpr uint32_t kVersion = 1;
constexpr int kHeaderBytes = 32;
constexpr int kTensorRecordBytes = 80;
constexpr int kNodeRecordBytes = 128;
constexpr int kMaxInputs = 8;
constexpr int kMaxOutputs = 4;
constexpr int kMaxParams = 16;
// Header flags (PROGRAM_FLAG_* in packages/ir/src/program.ts).
constexpr uint32_t kFlagBatchInvariant = 1u;
constexpr uint32_t kFlagsKnown = 1u;

enum class DType : int32_t {
  F32 = 0,
  F16 = 1,
  BF16 = 30,
  I32 = 26,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  IQ1_M = 29,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

// The name of a dtype, for messages ("dtype N" for an id outside the enum).
inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::I32: return "I32";
    case DType::Q4_0: return "Q4_0";
    case DType::Q4_1: return "Q4_1";
    case DType::Q5_0: return "Q5_0";
    case DType::Q5_1: return "Q5_1";
    case DType::Q8_0: return "Q8_0";
    case DType::Q8_1: return "Q8_1";
    case DType::Q2_K: return "Q2_K";
    case DType::Q3_K: return "Q3_K";
    case DType::Q4_K: return "Q4_K";
    case DType::Q5_K: return "Q5_K";
    case DType::Q6_K: return "Q6_K";
    case DType::Q8_K: return "Q8_K";
    case DType::IQ2_XXS: return "IQ2_XXS";
    case DType::IQ2_XS: return "IQ2_XS";
    case DType::IQ3_XXS: return "IQ3_XXS";
    case DType::IQ1_S: return "IQ1_S";
    case DType::IQ4_NL: return "IQ4_NL";
    case DType::IQ3_S: return "IQ3_S";
    case DType::IQ2_S: return "IQ2_S";
    case DType::IQ4_XS: return "IQ4_XS";
    case DType::IQ1_M: return "IQ1_M";
    case DType::TQ1_0: return "TQ1_0";
    case DType::TQ2_0: return "TQ2_0";
    case DType::MXFP4: return "MXFP4";
  }
  return "an unknown dtype";
}

// Elements and bytes per block of each dtype (1 and the element size for plain types).
struct BlockLayout {
  int32_t dtype;
  int32_t block_size;
  int32_t type_size;
};
constexpr BlockLayout kBlockLayouts[] = {
    {0, 1, 4},  // F32
    {1, 1, 2},  // F16
    {30, 1, 2},  // BF16
    {26, 1, 4},  // I32
    {2, 32, 18},  // Q4_0
    {3, 32, 20},  // Q4_1
    {6, 32, 22},  // Q5_0
    {7, 32, 24},  // Q5_1
    {8, 32, 34},  // Q8_0
    {9, 32, 36},  // Q8_1
    {10, 256, 84},  // Q2_K
    {11, 256, 110},  // Q3_K
    {12, 256, 144},  // Q4_K
    {13, 256, 176},  // Q5_K
    {14, 256, 210},  // Q6_K
    {15, 256, 292},  // Q8_K
    {16, 256, 66},  // IQ2_XXS
    {17, 256, 74},  // IQ2_XS
    {18, 256, 98},  // IQ3_XXS
    {19, 256, 50},  // IQ1_S
    {20, 32, 18},  // IQ4_NL
    {21, 256, 110},  // IQ3_S
    {22, 256, 82},  // IQ2_S
    {23, 256, 136},  // IQ4_XS
    {29, 256, 56},  // IQ1_M
    {34, 256, 54},  // TQ1_0
    {35, 256, 66},  // TQ2_0
    {39, 32, 17},  // MXFP4
};

enum class Op : int32_t {
  GET_ROWS = 1,  // out[:, i] = a[:, idx[i]] (a may be quantized; out F32)
  MUL_MAT = 2,  // out[m, n] = sum_k a[k, m] * b[k, n], broadcasting a over b's dims 2 and 3
  ADD = 3,  // out = a + b, b broadcast over a
  MUL = 4,  // out = a * b, b broadcast over a
  SCALE = 5,  // out = a * scale + bias
  RMS_NORM = 6,  // out = a / sqrt(mean(a^2) + eps), per row
  NORM = 7,  // out = (a - mean(a)) / sqrt(var(a) + eps), per row
  ROPE = 8,  // rotary embedding of a [headDim, nHead, nTokens] at positions pos (I32 [nTokens]); optional freqFactors F32 [nDims/2]
  SOFTMAX = 9,  // out = softmax(a * scale + mask), per row
  ATTENTION = 10,  // out = softmax(softcap(q·k * scale) + mask) · v; q [hd, nHead, nQ], k [hd, nKvHead, nKv], v [hdv, nKvHead, nKv], mask F32 [nKv, nQ] or spans I32 [2, nQ]
  SILU = 11,  // out = a * sigmoid(a)
  GELU = 12,  // out = gelu(a) (tanh approximation)
  SWIGLU = 13,  // out = silu(gate) * up
  CPY = 14,  // out = a converted to the output's dtype (the output may be a view of another tensor)
  SET_ROWS = 15,  // dst[:, idx[i]] = src[:, i]; the output is dst (written in place)
  CONCAT = 16,  // out = a and b joined along dim
  ARGSORT = 17,  // out (I32) = indices that sort each row
  TOP_K = 18,  // out (I32 [k, rows]) = indices of the k largest of each row, largest first
  MUL_MAT_ID = 19,  // out[:, e, t] = as[:, :, ids[e, t]]ᵀ · b[:, e or 0, t] (mixture-of-experts)
  TANH = 20,  // out = tanh(a)
  GEGLU = 21,  // out = gelu(gate) * up (gelu's tanh approximation)
  GELU_ERF = 22,  // out = 0.5 * a * (1 + erf(a / sqrt(2))) (exact gelu)
  RMS_NORM_MUL = 32,  // out = rms_norm(a, eps) * w (fused)
  MUL_MAT_MULTI = 33,  // out_i = mul_mat(w_i, x) [+ c_i] for weights w_1..w_n sharing x, optional F32 addends c_1..c_n broadcast as ADD's b (fused)
  MUL_MAT_ADD = 34,  // out = mul_mat(a, b) + c, c F32 broadcast over the product as ADD's b (fused)
};

// Parameter word indices of each op (i32 values or f32 bit patterns), and input/output counts.
namespace param {
namespace GET_ROWS {
constexpr int kCount = 0;
constexpr int kMinInputs = 2;
constexpr int kMaxInputs = 2;
constexpr int kMinOutputs = 1;
constexpr int kMaxOutputs = 1;
}  // namespace GET_ROWS
namespace MUL_MAT {
constexpr int kCount = 0;
constexpr int kMinInputs = 2;
constexpr int kMaxInputs = 2;
constexpr int kMinOutputs = 1;
constexpr int kMaxOutputs = 1;
}  // namespace MUL_MAT
namespace ADD {
constexpr int kCount = 0;
constexpr int kMinInputs = 2;
constexpr int kMaxInputs = 2;
constexpr int kMinOutputs = 1;
constexpr int kMaxOutputs = 1;
}  // namespace ADD
namespace MUL {
constexpr int kCount = 0;
constexpr int kMinInputs = 2;
constexpr int kMaxInputs = 2;
constexpr int kMinOutputs = 1;
constexpr int kMaxOutputs = 1;
}  // namespace MUL
namespace SCALE {
constexpr int scale = 0;  // f32
constexpr int bias = 1;  // f32
constexpr int kCount = 2;
constexpr int kMinInputs = 1;
constexpr int kMaxInputs = 1;
constexpr int kMinOutputs = 1;
constexpr int kMaxOutputs = 1;
}  // namespace SCALE
namespace RMS_NORM {
constexpr int eps = 0;  // f32
constexpr int kCount = 1;
constexpr int kMinInputs = 1;
constexpr int kMaxInputs = 1;
constexpr int kMinOutputs = 1;
constexpr int kMaxOutputs = 1;
}  // namespace RMS_NORM
namespace NORM {
constexpr int eps = 0;  // f32
constexpr int kCount = 1;
constexpr int kMinInputs = 1;
constexpr int kMaxInputs = 1;
constexpr int kMinOutputs = 1;
constexpr int kMaxOutputs = 1;
}  // namespace NORM
namespace ROPE {
constexpr int mode = 0;  // i32
constexpr int nDims = 1;  // i32
constexpr int nCtxOrig = 2;  // i32
constexpr int freqBase = 3;  // f32
constexpr int freqScale = 4;  // f32
constexpr int extFactor = 5;  // f32
constexpr int attnFactor = 6;  // f32
constexpr int betaFast = 7;  // f32
constexpr int betaSlow = 8;  // f32
constexpr int kCount = 9;
constexpr int kMinInputs = 2;
constexpr int kMaxInputs = 3;
constexpr int kMinOutputs = 1;
constexpr int kMaxOutputs = 1;
}  // namespace ROPE
namespace SOFTMAX {
constexpr int scale = 0;  // f32
constexpr int maxBias = 1;  // f32
constexpr int kCount = 2;
constexpr int kMinInputs = 1;
constexpr int kMaxInputs = 2;
constexpr int kMinOutputs = 1;
constexpr int kMaxOutputs = 1;
}  // namespace SOFTMAX
namespace ATTENTION {
constexpr int scale = 0;  // f32
constexpr int softcap = 1;  // f32
constexpr int kCount = 2;
constexpr int kMinInputs = 4;
constexpr int kMaxInputs = 4;
constexpr int kMinOutputs = 1;
constexpr int kMaxOutputs = 1;
}  // namespace ATTENTION
namespace SILU {
constexpr int kCount = 0;
constexpr int kMinInputs = 1;
constexpr int kMaxInputs = 1;
constexpr int kMinOutputs = 1;
constexpr int kMaxOutputs = 1;
}  // namespace SILU
namespace GELU {
constexpr int kCount = 0;
constexpr int kMinInputs = 1;
constexpr int kMaxInputs = 1;
constexpr int kMinOutputs = 1;
constexpr int kMaxOutputs = 1;
}  // namespace GELU
namespace SWIGLU {
constexpr int kCount = 0;
constexpr int kMinInputs = 2;
constexpr int kMaxInputs = 2;
constexpr int kMinOutputs = 1;
constexpr int kMaxOutputs = 1;
}  // namespace SWIGLU
namespace CPY {
constexpr int kCount = 0;
constexpr int kMinInputs = 1;
constexpr int kMaxInputs = 1;
constexpr int kMinOutputs = 1;
constexpr int kMaxOutputs = 1;
}  // namespace CPY
namespace SET_ROWS {
constexpr int kCount = 0;
constexpr int kMinInputs = 3;
constexpr int kMaxInputs = 3;
constexpr int kMinOutputs = 1;
constexpr int kMaxOutputs = 1;
}  // namespace SET_ROWS
namespace CONCAT {
constexpr int dim = 0;  // i32
constexpr int kCount = 1;
constexpr int kMinInputs = 2;
constexpr int kMaxInputs = 2;
constexpr int kMinOutputs = 1;
constexpr int kMaxOutputs = 1;
}  // namespace CONCAT
namespace ARGSORT {
constexpr int descending = 0;  // i32
constexpr int kCount = 1;
constexpr int kMinInputs = 1;
constexpr int kMaxInputs = 1;
constexpr int kMinOutputs = 1;
constexpr int kMaxOutputs = 1;
}  // namespace ARGSORT
namespace TOP_K {
constexpr int k = 0;  // i32
constexpr int kCount = 1;
constexpr int kMinInputs = 1;
constexpr int kMaxInputs = 1;
constexpr int kMinOutputs = 1;
constexpr int kMaxOutputs = 1;
}  // namespace TOP_K
namespace MUL_MAT_ID {
constexpr int kCount = 0;
constexpr int kMinInputs = 3;
constexpr int kMaxInputs = 3;
constexpr int kMinOutputs = 1;
constexpr int kMaxOutputs = 1;
}  // namespace MUL_MAT_ID
namespace TANH {
constexpr int kCount = 0;
constexpr int kMinInputs = 1;
constexpr int kMaxInputs = 1;
constexpr int kMinOutputs = 1;
constexpr int kMaxOutputs = 1;
}  // namespace TANH
namespace GEGLU {
constexpr int kCount = 0;
constexpr int kMinInputs = 2;
constexpr int kMaxInputs = 2;
constexpr int kMinOutputs = 1;
constexpr int kMaxOutputs = 1;
}  // namespace GEGLU
namespace GELU_ERF {
constexpr int kCount = 0;
constexpr int kMinInputs = 1;
constexpr int kMaxInputs = 1;
constexpr int kMinOutputs = 1;
constexpr int kMaxOutputs = 1;
}  // namespace GELU_ERF
namespace RMS_NORM_MUL {
constexpr int eps = 0;  // f32
constexpr int kCount = 1;
constexpr int kMinInputs = 2;
constexpr int kMaxInputs = 2;
constexpr int kMinOutputs = 1;
constexpr int kMaxOutputs = 1;
}  // namespace RMS_NORM_MUL
namespace MUL_MAT_MULTI {
constexpr int kCount = 0;
constexpr int kMinInputs = 3;
constexpr int kMaxInputs = 7;
constexpr int kMinOutputs = 2;
constexpr int kMaxOutputs = 3;
}  // namespace MUL_MAT_MULTI
namespace MUL_MAT_ADD {
constexpr int kCount = 0;
constexpr int kMinInputs = 3;
constexpr int kMaxInputs = 3;
constexpr int kMinOutputs = 1;
constexpr int kMaxOutputs = 1;
}  // namespace MUL_MAT_ADD
}  // namespace param

#pragma pack(push, 1)
struct Header {
  uint32_t magic, version, n_buffers, n_tensors, n_nodes, tensor_record_bytes, node_record_bytes, flags;
};
struct TensorRecord {
  int32_t dtype;
  int32_t buffer;
  int64_t offset;
  int64_t ne[4];
  int64_t nb[4];
};
struct NodeRecord {
  int32_t op, n_inputs, n_outputs, n_params;
  int32_t inputs[kMaxInputs];
  int32_t outputs[kMaxOutputs];
  uint32_t params[kMaxParams];
};
#pragma pack(pop)
static_assert(sizeof(Header) == kHeaderBytes, "header layout");
static_assert(sizeof(TensorRecord) == kTensorRecordBytes, "tensor record layout");
static_assert(sizeof(NodeRecord) == kNodeRecordBytes, "node record layout");

}  // namespace minfer::program
