//===- Inputs.h - A graph's inputs from NumPy files or a seed -------------===//

#ifndef KILN_TOOLING_INPUTS_H
#define KILN_TOOLING_INPUTS_H

#include "kiln/runtime/Program.h"
#include "kiln/tooling/Npy.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kiln::runtime {

/// SplitMix64: small and exactly specified, so any tool can reproduce the
/// inputs of a seed. Values are drawn input by input, element by element.
class SplitMix64 {
public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

private:
  uint64_t state_;
};

/// Floats uniform in [-1, 1), integers in [0, 10), bools 0 or 1.
NamedArray randomArray(const TensorDesc &desc, SplitMix64 &random);

/// Where a run's inputs come from.
struct InputSource {
  /// .npy and .npz files: their arrays in order, one per graph input.
  std::vector<std::string> paths;
  /// Seeded random values instead, with these sizes for the size symbols.
  bool random = false;
  uint64_t seed = 0;
  std::vector<std::pair<std::string, int64_t>> dims; // symbol = size
};

/// The graph's inputs, checked against what the program expects (symbolic
/// dims against their relations when it runs).
Status gatherInputs(const InputSource &source, const Program &program,
                    std::vector<NamedArray> &inputs);

} // namespace kiln::runtime

#endif // KILN_TOOLING_INPUTS_H
