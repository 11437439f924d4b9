//===- ByteIO.cpp ---------------------------------------------------------===//

#include "ByteIO.h"

namespace kiln::runtime {

void ByteReader::fail(size_t atOffset, const std::string &message) {
  if (status_.ok())
    status_ = Status::error(message + " at byte offset " +
                            std::to_string(atOffset));
}

bool ByteReader::need(size_t bytes, const char *what) {
  if (!ok())
    return false;
  if (bytes <= remaining())
    return true;
  fail(offset(), "artifact truncated: " + std::string(what) + " needs " +
                     std::to_string(bytes) + " bytes but only " +
                     std::to_string(remaining()) + " remain");
  return false;
}

uint64_t ByteReader::little(int width, const char *what) {
  if (!need(static_cast<size_t>(width), what))
    return 0;
  uint64_t value = 0;
  for (int i = 0; i < width; ++i)
    value |= static_cast<uint64_t>(data_[pos_ + i]) << (8 * i);
  pos_ += static_cast<size_t>(width);
  return value;
}

bool ByteReader::lengthFits(size_t at, uint64_t length, const char *what) {
  if (!ok())
    return false;
  if (length <= remaining())
    return true;
  fail(at, "artifact truncated: " + std::string(what) + " claims " +
               std::to_string(length) + " bytes but only " +
               std::to_string(remaining()) + " remain");
  return false;
}

std::string ByteReader::string(const char *what) {
  size_t at = offset();
  uint32_t length = u32(what);
  if (!lengthFits(at, length, what))
    return {};
  std::string value(reinterpret_cast<const char *>(data_ + pos_), length);
  pos_ += length;
  return value;
}

std::vector<uint8_t> ByteReader::blob(const char *what) {
  size_t at = offset();
  uint64_t length = u64(what);
  if (!lengthFits(at, length, what))
    return {};
  std::vector<uint8_t> value(data_ + pos_, data_ + pos_ + length);
  pos_ += static_cast<size_t>(length);
  return value;
}

uint32_t ByteReader::count(const char *what, size_t minElementBytes) {
  size_t at = offset();
  uint32_t n = u32(what);
  if (!ok())
    return 0;
  // n < 2^32 and minElementBytes is small, so the product fits in uint64.
  if (static_cast<uint64_t>(n) * minElementBytes > remaining()) {
    fail(at, std::string(what) + " " + std::to_string(n) +
                 " cannot fit in the remaining " + std::to_string(remaining()) +
                 " bytes (artifact truncated or corrupted)");
    return 0;
  }
  return n;
}

} // namespace kiln::runtime
