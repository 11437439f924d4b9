//===- Checksum.h - One-number summaries of tensors for comparing runs ----===//
//
// kiln-run prints these so that a run without Python can be compared with the
// same graph run by torch.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLING_CHECKSUM_H
#define KILN_TOOLING_CHECKSUM_H

#include "kiln/runtime/DType.h"

#include <cstdint>

namespace kiln::runtime {

/// The sum of all elements converted to double (bool as 0 or 1), added in
/// index order into a single double accumulator. `data` holds desc.byteSize()
/// bytes; an empty tensor sums to 0.
///
/// This is what Python computes as `t.double().sum().item()`, up to rounding:
/// torch adds in a different order (pairwise and vectorized), so for float
/// tensors the last bits may differ, by at most about
/// numElements * 2^-53 * (the sum of |element|). Integer and bool sums are
/// exact, hence equal, while every partial sum stays below 2^53 in magnitude.
double checksum(const TensorDesc &desc, const void *data);

struct TensorStats {
  double checksum = 0; // as checksum()
  /// Elements converted to double. NaN when any element is NaN (as torch's
  /// min and max), and also for empty tensors, which have neither.
  double min = 0;
  double max = 0;
};

TensorStats tensorStats(const TensorDesc &desc, const void *data);

} // namespace kiln::runtime

#endif // KILN_TOOLING_CHECKSUM_H
