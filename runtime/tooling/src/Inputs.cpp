//===- Inputs.cpp - A graph's inputs from NumPy files or a seed -----------===//

#include "kiln/tooling/Inputs.h"

#include <algorithm>
#include <cstring>

namespace kiln::runtime {

NamedArray randomArray(const TensorDesc &desc, SplitMix64 &random) {
  NamedArray array{"random", desc, {}};
  array.data.resize(static_cast<size_t>(desc.byteSize()));
  uint8_t *out = array.data.data();
  for (int64_t i = 0, n = desc.numElements(); i < n; ++i) {
    uint64_t bits = random.next();
    // Top bits scaled to [0, 1), then to [-1, 1); every step is exact.
    float f32 = static_cast<float>(bits >> 40) * 0x1p-24f * 2 - 1;
    double f64 = static_cast<double>(bits >> 11) * 0x1p-53 * 2 - 1;
    int64_t i64 = static_cast<int64_t>(bits % 10);
    int32_t i32 = static_cast<int32_t>(i64);
    uint8_t b = static_cast<uint8_t>(bits >> 63);
    switch (desc.dtype) {
    case DType::F32:
      std::memcpy(out + 4 * i, &f32, 4);
      break;
    case DType::F64:
      std::memcpy(out + 8 * i, &f64, 8);
      break;
    case DType::F16: {
      uint16_t half = floatToHalf(f32);
      std::memcpy(out + 2 * i, &half, 2);
      break;
    }
    case DType::BF16: {
      uint16_t bf16 = floatToBFloat16(f32);
      std::memcpy(out + 2 * i, &bf16, 2);
      break;
    }
    case DType::I64:
      std::memcpy(out + 8 * i, &i64, 8);
      break;
    case DType::I32:
      std::memcpy(out + 4 * i, &i32, 4);
      break;
    case DType::I8:
    case DType::U8:
      out[i] = static_cast<uint8_t>(i64);
      break;
    case DType::Bool:
      out[i] = b;
      break;
    }
  }
  return array;
}

/// The shape of each input for random inputs: symbolic dims get their sizes
/// from the --dim values of the graph's symbols.
static Status randomInputDescs(const InputSource &source, const Program &program,
                        std::vector<TensorDesc> &descs) {
  const Artifact &graph = program.artifact();
  std::vector<std::string> names = program.symbolNames();
  std::vector<int64_t> values(names.size(), -1);
  for (const auto &[symbol, size] : source.dims) {
    auto it = std::find(names.begin(), names.end(), symbol);
    if (it == names.end())
      return Status::error("--dim " + symbol + ": the graph has no size symbol " + symbol +
                           (names.empty() ? " (its shapes are static)" : ""));
    values[it - names.begin()] = size;
  }
  for (size_t i = 0; i < names.size(); ++i)
    if (values[i] < 0)
      return Status::error("graph '" + graph.graphName + "' has the size symbol " + names[i] +
                           ": pass --dim " + names[i] + "=N");
  descs = program.inputDescs();
  for (const BufferDesc &buffer : graph.buffers) {
    if (buffer.kind != BufferKind::Input)
      continue;
    StatusOr<TensorDesc> desc = resolveBufferDesc(buffer, values);
    if (!desc.ok())
      return desc.status().withContext("input " + std::to_string(buffer.source));
    descs[buffer.source] = std::move(*desc);
  }
  return Status::OK();
}

/// Whether `actual` fits `expected`, whose -1 dims are symbolic (the run
/// checks their relations).
static bool fits(const TensorDesc &actual, const TensorDesc &expected) {
  if (actual.dtype != expected.dtype || actual.shape.size() != expected.shape.size())
    return false;
  for (size_t d = 0; d < actual.shape.size(); ++d)
    if (expected.shape[d] != -1 && expected.shape[d] != actual.shape[d])
      return false;
  return true;
}

Status gatherInputs(const InputSource &source, const Program &program,
                    std::vector<NamedArray> &inputs) {
  const std::string &graphName = program.artifact().graphName;
  const std::vector<TensorDesc> &expected = program.inputDescs();
  inputs.clear();
  if (source.random) {
    std::vector<TensorDesc> descs;
    KILN_RETURN_IF_ERROR(randomInputDescs(source, program, descs));
    SplitMix64 random(source.seed);
    for (const TensorDesc &desc : descs)
      inputs.push_back(randomArray(desc, random));
    return Status::OK();
  }
  if (source.paths.empty()) {
    if (expected.empty())
      return Status::OK();
    return Status::error("graph '" + graphName + "' takes " +
                         std::to_string(expected.size()) +
                         " inputs: pass --inputs FILE.npz, --inputs "
                         "A.npy,B.npy,... or --random");
  }

  std::vector<std::string> sources; // the file each input came from
  for (const std::string &path : source.paths) {
    std::vector<NamedArray> arrays;
    KILN_RETURN_IF_ERROR(readArrays(path, arrays));
    for (NamedArray &array : arrays) {
      inputs.push_back(std::move(array));
      sources.push_back(path);
    }
  }
  if (inputs.size() != expected.size())
    return Status::error("graph '" + graphName + "' takes " +
                         std::to_string(expected.size()) + " inputs, but " +
                         std::to_string(inputs.size()) +
                         " arrays were given");
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!fits(inputs[i].desc, expected[i]))
      return Status::error("input " + std::to_string(i) + " ('" +
                           inputs[i].name + "' from " + sources[i] +
                           "): expected " + expected[i].str() + ", got " +
                           inputs[i].desc.str());
  }
  return Status::OK();
}

} // namespace kiln::runtime
