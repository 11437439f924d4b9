//===- DType.h - Element types and tensor descriptions --------------------===//

#ifndef KILN_RUNTIME_DTYPE_H
#define KILN_RUNTIME_DTYPE_H

#include "kiln/runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::runtime {

/// Values are part of the artifact format: never renumber.
enum class DType : uint8_t {
  F32 = 0, I64 = 1, Bool = 2, F64 = 3, I32 = 4, I8 = 5, U8 = 6, F16 = 7, BF16 = 8
};
/// Every DType, in encoding order.
inline constexpr DType kAllDTypes[] = {DType::F32, DType::I64, DType::Bool,
                                       DType::F64, DType::I32, DType::I8,
                                       DType::U8,  DType::F16, DType::BF16};

/// True when `raw` is the encoding of a DType this runtime knows.
bool isKnownDType(uint8_t raw);
/// Bytes per element; Bool is one byte.
size_t dtypeSize(DType dtype);
/// The torch spelling: "float32", "int64", "bool", "float64", "int32",
/// "int8", "uint8", "float16", "bfloat16".
const char *dtypeName(DType dtype);
/// Inverse of dtypeName; returns false (leaving `out` alone) on unknown names.
bool parseDType(std::string_view name, DType &out);

/// IEEE half and bfloat16 bits to float (exact), and float to them rounded
/// to nearest even, as torch's c10::Half and c10::BFloat16 convert (NaN stays
/// a quiet NaN). For the tools (checksums, random inputs); kernels convert
/// with the CPU's instructions or the compiler's own expansion.
float halfToFloat(uint16_t bits);
float bfloat16ToFloat(uint16_t bits);
uint16_t floatToHalf(float value);
uint16_t floatToBFloat16(float value);

/// A dense, row-major tensor type.
struct TensorDesc {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;

  /// Only meaningful for descs accepted by validateTensorDesc (no negative
  /// dimensions, no overflow).
  int64_t numElements() const;
  int64_t byteSize() const;
  /// e.g. "float32[8x256]"; rank 0 prints as "float32[]".
  std::string str() const;

  bool operator==(const TensorDesc &other) const {
    return dtype == other.dtype && shape == other.shape;
  }
  bool operator!=(const TensorDesc &other) const { return !(*this == other); }
};

/// Rejects negative dimensions and sizes whose byte count overflows int64.
Status validateTensorDesc(const TensorDesc &desc);

} // namespace kiln::runtime

#endif // KILN_RUNTIME_DTYPE_H
