//===- ByteIO.h - Little-endian encoding helpers for the artifact format -===//
//
// Internal to the runtime. The reader is bounds-checked and "sticky": after
// the first failure every read returns zero and the first error is kept, so a
// parser can read a whole record and check once, and loops driven by a count
// read after a failure simply do not run.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SRC_BYTEIO_H
#define KILN_RUNTIME_SRC_BYTEIO_H

#include "kiln/runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::runtime {

class ByteWriter {
public:
  void u8(uint8_t value) { bytes_.push_back(value); }
  void u32(uint32_t value) { little(value, 4); }
  void u64(uint64_t value) { little(value, 8); }
  void i64(int64_t value) { little(static_cast<uint64_t>(value), 8); }
  void raw(const void *data, size_t size) {
    const auto *begin = static_cast<const uint8_t *>(data);
    bytes_.insert(bytes_.end(), begin, begin + size);
  }
  void string(const std::string &value) {
    u32(static_cast<uint32_t>(value.size()));
    raw(value.data(), value.size());
  }
  void blob(const std::vector<uint8_t> &value) {
    u64(value.size());
    raw(value.data(), value.size());
  }

  std::vector<uint8_t> &bytes() { return bytes_; }

private:
  void little(uint64_t value, int width) {
    for (int i = 0; i < width; ++i)
      bytes_.push_back(static_cast<uint8_t>(value >> (8 * i)));
  }

  std::vector<uint8_t> bytes_;
};

class ByteReader {
public:
  /// `baseOffset` is where `data` starts in the file, so that messages quote
  /// offsets a user can find with a hex dump.
  ByteReader(const uint8_t *data, size_t size, size_t baseOffset = 0)
      : data_(data), size_(size), base_(baseOffset) {}

  bool ok() const { return status_.ok(); }
  const Status &status() const { return status_; }
  /// Absolute offset of the next byte to read.
  size_t offset() const { return base_ + pos_; }
  size_t remaining() const { return size_ - pos_; }

  uint8_t u8(const char *what) { return static_cast<uint8_t>(little(1, what)); }
  uint32_t u32(const char *what) {
    return static_cast<uint32_t>(little(4, what));
  }
  uint64_t u64(const char *what) { return little(8, what); }
  int64_t i64(const char *what) { return static_cast<int64_t>(little(8, what)); }

  std::string string(const char *what);
  std::vector<uint8_t> blob(const char *what);

  /// Reads a u32 element count and rejects it unless `count` elements of at
  /// least `minElementBytes` each can fit in the remaining bytes. Checking
  /// before allocating keeps a corrupt count from reserving gigabytes.
  uint32_t count(const char *what, size_t minElementBytes);

  /// Records an error at `atOffset` (absolute) unless one is already kept.
  void fail(size_t atOffset, const std::string &message);

private:
  bool need(size_t bytes, const char *what);
  /// Checks a length prefix read at `at` against the remaining bytes.
  bool lengthFits(size_t at, uint64_t length, const char *what);
  uint64_t little(int width, const char *what);

  const uint8_t *data_;
  size_t size_;
  size_t base_;
  size_t pos_ = 0;
  Status status_;
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_SRC_BYTEIO_H
