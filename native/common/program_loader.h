// Parsing and validation of a program (program_format.h) against the buffers it will run on,
// shared by every backend's executor. Everything in a program comes from JavaScript and is
// checked here before any kernel sees it: header, record sizes, dtypes, buffer slots, byte spans
// against the actual buffer sizes, op codes, input/output/parameter counts, tensor indices and
// writes into read-only buffers. A failure names the tensor or node (index and op); it never
// crashes. Backends then resolve each node's kernel and run its own shape check.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "op_info.h"
#include "program_format.h"

namespace minfer::program {

// A program tensor resolved to memory (host or device addresses alike): element [i0,i1,i2,i3] of
// a plain dtype is at data + i0*nb[0] + i1*nb[1] + i2*nb[2] + i3*nb[3]; for block dtypes nb[0] is
// the block size in bytes.
struct Tensor {
  DType dtype;
  uint8_t* data;
  int64_t ne[4];
  int64_t nb[4];
};

// One buffer slot as a loader sees it. `data` is nullptr when only checking a program.
struct BufferBinding {
  uint8_t* data = nullptr;
  uint64_t size = 0;
  bool read_only = false;
};

enum class LoadCode : int { Ok = 0, BadProgram, OutOfRange, UnsupportedOp };

struct LoadResult {
  LoadCode code = LoadCode::Ok;
  std::string message;
  bool ok() const { return code == LoadCode::Ok; }
};

struct ParsedNode {
  Op op;
  int n_inputs, n_outputs;
  int32_t inputs[kMaxInputs];    // tensor indices, -1 past n_inputs
  int32_t outputs[kMaxOutputs];  // tensor indices, -1 past n_outputs
  uint32_t params[kMaxParams];
};

struct ParsedProgram {
  std::vector<Tensor> tensors;
  std::vector<ParsedNode> nodes;
  uint32_t flags = 0;  // kFlag* bits of the header
};

inline const BlockLayout* block_layout(int32_t dtype) {
  for (const BlockLayout& b : kBlockLayouts) {
    if (b.dtype == dtype) return &b;
  }
  return nullptr;
}

// "node 3 (ROPE): ", the start of every message about a node.
inline std::string node_prefix(size_t i, int32_t op) {
  return "node " + std::to_string(i) + " (" + op_name(op) + "): ";
}

namespace loader_detail {

inline LoadResult bad(const std::string& m) { return LoadResult{LoadCode::BadProgram, m}; }
inline std::string str(int64_t v) { return std::to_string(v); }

// Bytes from the tensor's first byte to one past its last: sum over dims of (n-1)*nb plus one
// element (or block). False on overflow.
inline bool byte_span(const TensorRecord& t, const BlockLayout& b, int64_t* span) {
  for (int i = 0; i < 4; i++) {
    if (t.ne[i] == 0) {
      *span = 0;
      return true;
    }
  }
  int64_t last = b.type_size;
  for (int i = 0; i < 4; i++) {
    const int64_t n = i == 0 ? t.ne[0] / b.block_size : t.ne[i];
    int64_t step;
    if (__builtin_mul_overflow(n - 1, t.nb[i], &step) || __builtin_add_overflow(last, step, &last)) return false;
  }
  *span = last;
  return true;
}

inline LoadResult load_tensor(size_t i, const TensorRecord& t, const std::vector<BufferBinding>& buffers, Tensor* out) {
  const std::string who = "tensor " + std::to_string(i) + ": ";
  const BlockLayout* b = block_layout(t.dtype);
  if (!b) return bad(who + "unknown dtype id " + str(t.dtype));
  if (t.buffer < 0 || static_cast<size_t>(t.buffer) >= buffers.size()) {
    return bad(who + "buffer slot " + str(t.buffer) + " is not one of the program's " +
               std::to_string(buffers.size()) + " slots");
  }
  if (t.offset < 0) return bad(who + "negative byte offset " + str(t.offset));
  int64_t numel = 1;
  for (int d = 0; d < 4; d++) {
    if (t.ne[d] < 0) return bad(who + "negative ne[" + std::to_string(d) + "] = " + str(t.ne[d]));
    if (t.nb[d] < 0) return bad(who + "negative nb[" + std::to_string(d) + "] = " + str(t.nb[d]));
    if (__builtin_mul_overflow(numel, t.ne[d], &numel)) return bad(who + "element count overflows");
  }
  if (b->block_size > 1) {
    if (t.ne[0] % b->block_size != 0) {
      return bad(who + "ne[0] = " + str(t.ne[0]) + " is not a whole number of " + str(b->block_size) +
                 "-element blocks");
    }
    if (t.nb[0] != b->type_size) {
      return bad(who + "nb[0] = " + str(t.nb[0]) + " must be the block size in bytes (" + str(b->type_size) + ")");
    }
  }
  int64_t span = 0;
  int64_t end = 0;
  if (!byte_span(t, *b, &span) || __builtin_add_overflow(t.offset, span, &end)) {
    return bad(who + "byte span overflows");
  }
  const BufferBinding& buf = buffers[t.buffer];
  if (static_cast<uint64_t>(end) > buf.size) {
    return LoadResult{LoadCode::OutOfRange, who + "bytes " + str(t.offset) + ".." + str(end) +
                                                " are outside buffer slot " + str(t.buffer) + " (" +
                                                std::to_string(buf.size) + " bytes)"};
  }
  out->dtype = static_cast<DType>(t.dtype);
  out->data = buf.data ? buf.data + t.offset : nullptr;
  for (int d = 0; d < 4; d++) {
    out->ne[d] = t.ne[d];
    out->nb[d] = t.nb[d];
  }
  return LoadResult{};
}

}  // namespace loader_detail

// Parses and validates `bytes` against `buffers` (one binding per buffer slot) into `out`.
inline LoadResult parse_program(const uint8_t* bytes, size_t length, const std::vector<BufferBinding>& buffers,
                                ParsedProgram* out) {
  using loader_detail::bad;
  using loader_detail::str;
  if (!bytes || length < static_cast<size_t>(kHeaderBytes)) {
    return bad("a program of " + std::to_string(length) + " bytes is shorter than its " +
               std::to_string(kHeaderBytes) + "-byte header");
  }
  Header h;
  std::memcpy(&h, bytes, sizeof h);
  if (h.magic != kMagic) return bad("not a program (bad magic)");
  if (h.version != kVersion) {
    return bad("program version " + std::to_string(h.version) + "; this build reads version " +
               std::to_string(kVersion));
  }
  if (h.tensor_record_bytes != static_cast<uint32_t>(kTensorRecordBytes) ||
      h.node_record_bytes != static_cast<uint32_t>(kNodeRecordBytes)) {
    return bad("record sizes " + std::to_string(h.tensor_record_bytes) + "/" + std::to_string(h.node_record_bytes) +
               " do not match this build's " + std::to_string(kTensorRecordBytes) + "/" +
               std::to_string(kNodeRecordBytes));
  }
  if ((h.flags & ~kFlagsKnown) != 0) {
    return bad("program flags " + std::to_string(h.flags) + " include bits this build does not know (it knows " +
               std::to_string(kFlagsKnown) + ")");
  }
  const uint64_t expected = uint64_t{kHeaderBytes} + uint64_t{8} * h.n_buffers +
                            uint64_t{kTensorRecordBytes} * h.n_tensors + uint64_t{kNodeRecordBytes} * h.n_nodes;
  if (expected != length) {
    return bad("header counts (" + std::to_string(h.n_buffers) + " buffers, " + std::to_string(h.n_tensors) +
               " tensors, " + std::to_string(h.n_nodes) + " nodes) need " + std::to_string(expected) +
               " bytes; the program has " + std::to_string(length));
  }
  if (h.n_buffers != buffers.size()) {
    return bad("the program has " + std::to_string(h.n_buffers) + " buffer slots but " +
               std::to_string(buffers.size()) + " buffers were passed");
  }
  const uint8_t* at = bytes + kHeaderBytes;
  for (uint32_t i = 0; i < h.n_buffers; i++, at += 8) {
    int64_t need;
    std::memcpy(&need, at, 8);
    if (need < 0) return bad("buffer slot " + std::to_string(i) + " declares a negative size");
    if (static_cast<uint64_t>(need) > buffers[i].size) {
      return LoadResult{LoadCode::OutOfRange, "buffer slot " + std::to_string(i) + ": the program needs " + str(need) +
                                                  " bytes, the buffer has " + std::to_string(buffers[i].size)};
    }
  }

  ParsedProgram p;
  p.tensors.resize(h.n_tensors);
  std::vector<int32_t> tensor_slot(h.n_tensors);
  for (uint32_t i = 0; i < h.n_tensors; i++, at += kTensorRecordBytes) {
    TensorRecord t;
    std::memcpy(&t, at, sizeof t);
    LoadResult s = loader_detail::load_tensor(i, t, buffers, &p.tensors[i]);
    if (!s.ok()) return s;
    tensor_slot[i] = t.buffer;
  }

  p.flags = h.flags;
  p.nodes.resize(h.n_nodes);
  for (uint32_t i = 0; i < h.n_nodes; i++, at += kNodeRecordBytes) {
    NodeRecord n;
    std::memcpy(&n, at, sizeof n);
    const OpInfo* info = op_info(n.op);
    if (!info) {
      return LoadResult{LoadCode::UnsupportedOp,
                        "node " + std::to_string(i) + ": op code " + str(n.op) + " is not an op this build knows"};
    }
    const std::string who = node_prefix(i, n.op);
    if (n.n_inputs < info->min_inputs || n.n_inputs > info->max_inputs) {
      return bad(who + std::to_string(n.n_inputs) + " inputs; the op takes " + std::to_string(info->min_inputs) +
                 ".." + std::to_string(info->max_inputs));
    }
    if (n.n_outputs < info->min_outputs || n.n_outputs > info->max_outputs) {
      return bad(who + std::to_string(n.n_outputs) + " outputs; the op takes " + std::to_string(info->min_outputs) +
                 ".." + std::to_string(info->max_outputs));
    }
    if (n.n_params != info->n_params) {
      return bad(who + std::to_string(n.n_params) + " parameters; the op takes " + std::to_string(info->n_params));
    }
    ParsedNode& a = p.nodes[i];
    a.op = static_cast<Op>(n.op);
    a.n_inputs = n.n_inputs;
    a.n_outputs = n.n_outputs;
    for (int k = 0; k < kMaxInputs; k++) a.inputs[k] = -1;
    for (int k = 0; k < kMaxOutputs; k++) a.outputs[k] = -1;
    for (int k = 0; k < n.n_inputs; k++) {
      const int32_t t = n.inputs[k];
      if (t < 0 || static_cast<uint32_t>(t) >= h.n_tensors) {
        return bad(who + "input " + std::to_string(k) + " is tensor " + str(t) + " of " + std::to_string(h.n_tensors));
      }
      a.inputs[k] = t;
    }
    for (int k = 0; k < n.n_outputs; k++) {
      const int32_t t = n.outputs[k];
      if (t < 0 || static_cast<uint32_t>(t) >= h.n_tensors) {
        return bad(who + "output " + std::to_string(k) + " is tensor " + str(t) + " of " +
                   std::to_string(h.n_tensors));
      }
      if (buffers[tensor_slot[t]].read_only) {
        return bad(who + "output " + std::to_string(k) + " (tensor " + str(t) + ") is in read-only buffer slot " +
                   str(tensor_slot[t]));
      }
      a.outputs[k] = t;
    }
    std::memcpy(a.params, n.params, sizeof n.params);
  }
  *out = std::move(p);
  return LoadResult{};
}

}  // namespace minfer::program
