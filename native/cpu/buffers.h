// Host memory the CPU backend computes on: zero-filled 64-byte-aligned allocations, and read-only
// private mappings of a file range. A buffer is shared (shared_ptr) by its JavaScript object and
// any execute using it; while an execute holds it, dispose() is refused (BUSY) instead of freeing
// memory under the pool. Using a disposed buffer is an error (DISPOSED).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "status.h"

namespace minfer::cpu {

class Buffer {
 public:
  // `bytes` zero-filled bytes, 64-byte aligned (a 0-byte buffer has a valid, empty pointer).
  static Status allocate(uint64_t bytes, std::shared_ptr<Buffer>* out);
  // Bytes [offset, offset + length) of the file at `path`, mapped read-only and private.
  static Status map_file(const std::string& path, uint64_t offset, uint64_t length,
                         std::shared_ptr<Buffer>* out);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  uint64_t size() const { return size_; }
  bool read_only() const { return read_only_; }
  bool disposed() const;
  // Refused with BUSY while an execute holds the buffer.
  Status dispose();

  // Holds the buffer for an execute: DISPOSED when it is gone. Pair with release().
  Status acquire(uint8_t** data);
  void release();

  // Copies from/to JavaScript memory; checks range, disposal, read-only, and (write) BUSY.
  Status write(uint64_t offset, const void* src, uint64_t length);
  Status read(uint64_t offset, void* dst, uint64_t length) const;

 private:
  Buffer() = default;
  void free_memory();

  mutable std::mutex mu_;
  uint8_t* data_ = nullptr;  // first byte the buffer exposes
  void* base_ = nullptr;     // what was allocated or mapped
  size_t base_bytes_ = 0;
  enum class Kind { Heap, Anonymous, File } kind_ = Kind::Heap;
  uint64_t size_ = 0;
  bool read_only_ = false;
  bool disposed_ = false;
  int holds_ = 0;
};

}  // namespace minfer::cpu
