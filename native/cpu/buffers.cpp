#include "buffers.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

namespace minfer::cpu {
namespace {

constexpr uint64_t kAlign = 64;
// Large buffers come from anonymous mappings: zero pages on demand, no up-front memset.
constexpr uint64_t kMapThreshold = 1u << 21;

Status range_check(const char* what, uint64_t offset, uint64_t length, uint64_t size) {
  if (offset > size || length > size - offset) {
    return Status::Error(Code::OutOfRange, std::string(what) + " of " + std::to_string(length) +
                                               " bytes at offset " + std::to_string(offset) +
                                               " is outside the buffer of " + std::to_string(size) + " bytes");
  }
  return Status::Ok();
}

}  // namespace

Status Buffer::allocate(uint64_t bytes, std::shared_ptr<Buffer>* out) {
  if (bytes > (uint64_t{1} << 50)) {
    return Status::Error(Code::BadArgument, "cannot allocate " + std::to_string(bytes) + " bytes");
  }
  std::shared_ptr<Buffer> b(new Buffer());
  const uint64_t rounded = bytes == 0 ? kAlign : (bytes + kAlign - 1) / kAlign * kAlign;
  if (rounded >= kMapThreshold) {
    void* p = mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      return Status::Error(Code::OutOfMemory, "cannot allocate " + std::to_string(bytes) +
                                                  " bytes: " + std::strerror(errno));
    }
    b->kind_ = Kind::Anonymous;
    b->base_ = p;
  } else {
    void* p = std::aligned_alloc(kAlign, rounded);
    if (!p) return Status::Error(Code::OutOfMemory, "cannot allocate " + std::to_string(bytes) + " bytes");
    std::memset(p, 0, rounded);
    b->kind_ = Kind::Heap;
    b->base_ = p;
  }
  b->base_bytes_ = rounded;
  b->data_ = static_cast<uint8_t*>(b->base_);
  b->size_ = bytes;
  *out = std::move(b);
  return Status::Ok();
}

Status Buffer::map_file(const std::string& path, uint64_t offset, uint64_t length,
                        std::shared_ptr<Buffer>* out) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Error(Code::IoError, "cannot open " + path + ": " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    close(fd);
    return Status::Error(Code::IoError, "cannot stat " + path + ": " + std::strerror(e));
  }
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  if (offset > file_size || length > file_size - offset) {
    close(fd);
    return Status::Error(Code::OutOfRange, "bytes " + std::to_string(offset) + ".." +
                                               std::to_string(offset + length) + " are outside " + path +
                                               " (" + std::to_string(file_size) + " bytes)");
  }
  if (length == 0) {
    close(fd);
    return allocate(0, out);
  }
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t start = offset / page * page;
  const uint64_t delta = offset - start;
  void* p = mmap(nullptr, length + delta, PROT_READ, MAP_PRIVATE, fd, static_cast<off_t>(start));
  const int e = errno;
  close(fd);
  if (p == MAP_FAILED) return Status::Error(Code::IoError, "cannot map " + path + ": " + std::strerror(e));
  std::shared_ptr<Buffer> b(new Buffer());
  b->kind_ = Kind::File;
  b->base_ = p;
  b->base_bytes_ = length + delta;
  b->data_ = static_cast<uint8_t*>(p) + delta;
  b->size_ = length;
  b->read_only_ = true;
  *out = std::move(b);
  return Status::Ok();
}

Buffer::~Buffer() { free_memory(); }

void Buffer::free_memory() {
  if (!base_) return;
  if (kind_ == Kind::Heap) {
    std::free(base_);
  } else {
    munmap(base_, base_bytes_);
  }
  base_ = nullptr;
  data_ = nullptr;
}

bool Buffer::disposed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return disposed_;
}

Status Buffer::dispose() {
  std::lock_guard<std::mutex> lock(mu_);
  if (disposed_) return Status::Ok();
  if (holds_ > 0) {
    return Status::Error(Code::Busy, "cannot dispose a buffer while an execute is using it; await the execute first");
  }
  disposed_ = true;
  free_memory();
  return Status::Ok();
}

Status Buffer::acquire(uint8_t** data) {
  std::lock_guard<std::mutex> lock(mu_);
  if (disposed_) return Status::Error(Code::Disposed, "the buffer was disposed");
  holds_++;
  *data = data_;
  return Status::Ok();
}

void Buffer::release() {
  std::lock_guard<std::mutex> lock(mu_);
  if (holds_ > 0) holds_--;
}

Status Buffer::write(uint64_t offset, const void* src, uint64_t length) {
  std::lock_guard<std::mutex> lock(mu_);
  if (disposed_) return Status::Error(Code::Disposed, "write to a disposed buffer");
  if (read_only_) return Status::Error(Code::ReadOnly, "write to a read-only (file-mapped) buffer");
  if (holds_ > 0) {
    return Status::Error(Code::Busy, "write to a buffer while an execute is using it; await the execute first");
  }
  Status s = range_check("write", offset, length, size_);
  if (!s.ok()) return s;
  if (length > 0) std::memcpy(data_ + offset, src, length);
  return Status::Ok();
}

Status Buffer::read(uint64_t offset, void* dst, uint64_t length) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (disposed_) return Status::Error(Code::Disposed, "read from a disposed buffer");
  Status s = range_check("read", offset, length, size_);
  if (!s.ok()) return s;
  if (length > 0) std::memcpy(dst, data_ + offset, length);
  return Status::Ok();
}

}  // namespace minfer::cpu
