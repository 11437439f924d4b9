//===- Checksum.cpp -------------------------------------------------------===//

#include "kiln/tooling/Checksum.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace kiln::runtime {

namespace {

/// Visits every element of `data` as a double, in index order.
template <class Fn>
void forEachAsDouble(const TensorDesc &desc, const void *data, Fn &&fn) {
  const auto *bytes = static_cast<const uint8_t *>(data);
  int64_t count = desc.numElements();
  // memcpy rather than a cast: `data` need not be aligned for the type.
  auto visit = [&](auto element) {
    for (int64_t i = 0; i < count; ++i) {
      std::memcpy(&element, bytes + i * sizeof(element), sizeof(element));
      fn(static_cast<double>(element));
    }
  };
  auto visitBits16 = [&](float (*toFloat)(uint16_t)) {
    for (int64_t i = 0; i < count; ++i) {
      uint16_t bits;
      std::memcpy(&bits, bytes + 2 * i, 2);
      fn(static_cast<double>(toFloat(bits)));
    }
  };
  switch (desc.dtype) {
  case DType::F32:
    return visit(float());
  case DType::F64:
    return visit(double());
  case DType::I64:
    return visit(int64_t());
  case DType::I32:
    return visit(int32_t());
  case DType::I8:
    return visit(int8_t());
  case DType::F16:
    return visitBits16(halfToFloat);
  case DType::BF16:
    return visitBits16(bfloat16ToFloat);
  case DType::U8:
    return visit(uint8_t());
  case DType::Bool:
    // Any nonzero byte counts as true, as in torch's bool-to-double.
    for (int64_t i = 0; i < count; ++i)
      fn(bytes[i] != 0 ? 1.0 : 0.0);
    return;
  }
}

} // namespace

double checksum(const TensorDesc &desc, const void *data) {
  double sum = 0;
  forEachAsDouble(desc, data, [&](double value) { sum += value; });
  return sum;
}

TensorStats tensorStats(const TensorDesc &desc, const void *data) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  TensorStats stats;
  if (desc.numElements() == 0) {
    stats.min = stats.max = kNaN;
    return stats;
  }
  stats.min = std::numeric_limits<double>::infinity();
  stats.max = -stats.min;
  bool sawNaN = false;
  forEachAsDouble(desc, data, [&](double value) {
    stats.checksum += value;
    sawNaN |= std::isnan(value);
    stats.min = std::fmin(stats.min, value);
    stats.max = std::fmax(stats.max, value);
  });
  if (sawNaN)
    stats.min = stats.max = kNaN;
  return stats;
}

} // namespace kiln::runtime
