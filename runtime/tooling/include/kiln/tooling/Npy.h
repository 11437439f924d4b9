//===- Npy.h - NumPy .npy files and .npz archives -------------------------===//
//
// The offline tools exchange tensors with Python as NumPy files, which numpy
// and torch read and write without Kiln:
//
//   .npy  format versions 1.0, 2.0 and 3.0; little-endian, C order; dtypes
//         <f4 <f8 <i8 <i4 |b1 (float32, float64, int64, int32, bool).
//   .npz  a ZIP archive of .npy members as numpy.savez writes it: members
//         STORED, not compressed (numpy.savez_compressed is rejected), ZIP64
//         extensions allowed.
//
// The readers accept any bytes: a truncated or corrupt file is an error that
// names the file and what is wrong, never a crash.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLING_NPY_H
#define KILN_TOOLING_NPY_H

#include "kiln/runtime/DType.h"
#include "kiln/runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::runtime {

struct NamedArray {
  /// The .npz member name without ".npy"; for a .npy file, the file name
  /// without its directory and ".npy".
  std::string name;
  TensorDesc desc;
  /// desc.byteSize() bytes, row-major.
  std::vector<uint8_t> data;
};

/// Encodes one array as a .npy file (version 1.0, or 2.0 for headers too
/// long for 1.0). `data` holds desc.byteSize() bytes.
StatusOr<std::vector<uint8_t>> serializeNpy(const TensorDesc &desc,
                                            const void *data);

/// Decodes a whole .npy file into out.desc and out.data; out.name is left
/// alone. Messages say what is wrong but not which file: callers add that.
Status parseNpy(const uint8_t *data, size_t size, NamedArray &out);

/// Encodes arrays as an .npz archive: each array becomes the STORED member
/// "<name>.npy", in order. Names must be non-empty and distinct. With
/// `forceZip64`, every size and offset goes into ZIP64 fields even when it
/// would fit in 32 bits (as numpy's own force_zip64 does for local headers);
/// otherwise ZIP64 is used only where needed.
StatusOr<std::vector<uint8_t>>
serializeNpz(const std::vector<NamedArray> &arrays, bool forceZip64 = false);

/// Decodes an .npz archive into its arrays, in central directory (archive)
/// order, replacing `out`.
Status parseNpz(const uint8_t *data, size_t size, std::vector<NamedArray> &out);

/// File versions of the above; their messages start with the path.
Status readNpy(const std::string &path, NamedArray &out);
Status readNpz(const std::string &path, std::vector<NamedArray> &out);
Status writeNpy(const std::string &path, const TensorDesc &desc,
                const void *data);
Status writeNpz(const std::string &path, const std::vector<NamedArray> &arrays);

/// Reads a .npy file (one array) or an .npz archive (its arrays in order),
/// telling them apart by content rather than by file name.
Status readArrays(const std::string &path, std::vector<NamedArray> &out);

} // namespace kiln::runtime

#endif // KILN_TOOLING_NPY_H
