//===- NpyTest.cpp - NumPy files, and tensor checksums -------------------===//
//
// The fixtures in data/ were written by real numpy (data/make_fixtures.py);
// the values checked here are the formulas that script uses.
//
//===----------------------------------------------------------------------===//

#include "kiln/tooling/Checksum.h"
#include "kiln/tooling/Npy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>

using namespace kiln::runtime;

namespace {

std::string dataPath(const std::string &name) {
  return std::string(KILN_TEST_DATA_DIR) + "/" + name;
}

std::vector<uint8_t> readBytes(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  EXPECT_TRUE(file) << "cannot open " << path;
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(file), {});
}

void writeBytes(const std::string &path, const std::vector<uint8_t> &bytes) {
  std::ofstream file(path, std::ios::binary);
  file.write(reinterpret_cast<const char *>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "kiln_npy_test_" + name;
}

template <class T> std::vector<uint8_t> bytesOf(const std::vector<T> &values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  if (!bytes.empty())
    std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

template <class T> std::vector<T> valuesOf(const NamedArray &array) {
  std::vector<T> values(array.data.size() / sizeof(T));
  if (!values.empty())
    std::memcpy(values.data(), array.data.data(), array.data.size());
  return values;
}

/// An array whose bytes are a pattern valid for its dtype (bools are 0/1).
NamedArray patterned(std::string name, DType dtype,
                      std::vector<int64_t> shape) {
  NamedArray array{std::move(name), TensorDesc{dtype, std::move(shape)}, {}};
  array.data.resize(static_cast<size_t>(array.desc.byteSize()));
  for (size_t i = 0; i < array.data.size(); ++i)
    array.data[i] = dtype == DType::Bool ? (i * 7 % 3 == 0)
                                         : static_cast<uint8_t>(i * 37 + 11);
  return array;
}

/// One array of every dtype, with rank 0, empty and multi-dimensional shapes.
std::vector<NamedArray> everyDType() {
  return {patterned("f32", DType::F32, {2, 3}),
          patterned("f64", DType::F64, {5}),
          patterned("i64", DType::I64, {3, 1, 2}),
          patterned("i32", DType::I32, {}),
          patterned("b", DType::Bool, {7}),
          patterned("empty", DType::F32, {0, 4})};
}

/// Parses a heap copy of exactly `size` bytes, so that reading past the end
/// is a real out-of-bounds access that sanitizers report.
Status parseNpyPrefix(const std::vector<uint8_t> &bytes, size_t size) {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[size ? size : 1]);
  if (size)
    std::memcpy(copy.get(), bytes.data(), size);
  NamedArray out;
  return parseNpy(copy.get(), size, out);
}

Status parseNpzPrefix(const std::vector<uint8_t> &bytes, size_t size) {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[size ? size : 1]);
  if (size)
    std::memcpy(copy.get(), bytes.data(), size);
  std::vector<NamedArray> out;
  return parseNpz(copy.get(), size, out);
}

void expectSameArrays(const std::vector<NamedArray> &expected,
                      const std::vector<NamedArray> &actual) {
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(expected[i].name, actual[i].name) << i;
    EXPECT_EQ(expected[i].desc, actual[i].desc) << expected[i].name;
    EXPECT_EQ(expected[i].data, actual[i].data) << expected[i].name;
  }
}

//===----------------------------------------------------------------------===//
// Round trips
//===----------------------------------------------------------------------===//

TEST(NpyTest, NpyRoundTripsEveryDType) {
  for (const NamedArray &array : everyDType()) {
    StatusOr<std::vector<uint8_t>> bytes =
        serializeNpy(array.desc, array.data.data());
    ASSERT_TRUE(bytes.ok()) << bytes.status().message();
    NamedArray parsed;
    Status status = parseNpy(bytes->data(), bytes->size(), parsed);
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(parsed.desc, array.desc);
    EXPECT_EQ(parsed.data, array.data);
    // The data starts on a 64-byte boundary, as numpy aligns it.
    EXPECT_EQ((bytes->size() - array.data.size()) % 64, 0u);

    std::string path = tempPath(array.name + ".npy");
    ASSERT_TRUE(writeNpy(path, array.desc, array.data.data()).ok());
    NamedArray read;
    status = readNpy(path, read);
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(read.name, "kiln_npy_test_" + array.name);
    EXPECT_EQ(read.desc, array.desc);
    EXPECT_EQ(read.data, array.data);
    std::remove(path.c_str());
  }
}

TEST(NpyTest, NpzRoundTripsEveryDTypeInOrder) {
  std::vector<NamedArray> arrays = everyDType();
  std::string path = tempPath("every.npz");
  Status status = writeNpz(path, arrays);
  ASSERT_TRUE(status.ok()) << status.message();
  std::vector<NamedArray> read;
  status = readNpz(path, read);
  ASSERT_TRUE(status.ok()) << status.message();
  expectSameArrays(arrays, read);
  std::remove(path.c_str());
}

TEST(NpyTest, NpzWithZip64FieldsRoundTrips) {
  std::vector<NamedArray> arrays = everyDType();
  StatusOr<std::vector<uint8_t>> bytes =
      serializeNpz(arrays, /*forceZip64=*/true);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  std::vector<NamedArray> read;
  Status status = parseNpz(bytes->data(), bytes->size(), read);
  ASSERT_TRUE(status.ok()) << status.message();
  expectSameArrays(arrays, read);
}

TEST(NpyTest, EmptyNpzRoundTrips) {
  StatusOr<std::vector<uint8_t>> bytes = serializeNpz({});
  ASSERT_TRUE(bytes.ok());
  std::vector<NamedArray> read = everyDType();
  ASSERT_TRUE(parseNpz(bytes->data(), bytes->size(), read).ok());
  EXPECT_TRUE(read.empty());
}

TEST(NpyTest, LongHeadersUseFormatVersion2) {
  // 30000 dimensions of 1 make a header too long for version 1.0's u16.
  NamedArray array = patterned("x", DType::F32, std::vector<int64_t>(30000, 1));
  StatusOr<std::vector<uint8_t>> bytes =
      serializeNpy(array.desc, array.data.data());
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ((*bytes)[6], 2);
  NamedArray parsed;
  Status status = parseNpy(bytes->data(), bytes->size(), parsed);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(parsed.desc, array.desc);
  EXPECT_EQ(parsed.data, array.data);
}

TEST(NpyTest, ReadArraysTellsNpyFromNpzByContent) {
  std::vector<NamedArray> arrays = everyDType();
  std::string npz = tempPath("by_content.bin");
  ASSERT_TRUE(writeNpz(npz, arrays).ok());
  std::vector<NamedArray> read;
  ASSERT_TRUE(readArrays(npz, read).ok());
  expectSameArrays(arrays, read);

  std::string npy = tempPath("single.npy");
  ASSERT_TRUE(writeNpy(npy, arrays[0].desc, arrays[0].data.data()).ok());
  ASSERT_TRUE(readArrays(npy, read).ok());
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].name, "kiln_npy_test_single");
  EXPECT_EQ(read[0].data, arrays[0].data);

  writeBytes(npy, {'h', 'e', 'l', 'l', 'o'});
  Status status = readArrays(npy, read);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(),
            npy + ": neither a .npy file nor an .npz archive");
  std::remove(npz.c_str());
  std::remove(npy.c_str());
}

//===----------------------------------------------------------------------===//
// Files written by numpy
//===----------------------------------------------------------------------===//

TEST(NpyTest, WritesTheSameBytesAsNumpy) {
  std::vector<float> f32 = {-0.5f, -0.25f, 0.0f, 0.25f, 0.5f, 0.75f};
  StatusOr<std::vector<uint8_t>> bytes =
      serializeNpy(TensorDesc{DType::F32, {2, 3}}, f32.data());
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, readBytes(dataPath("f32_2x3.npy")));

  int32_t scalar = -3;
  bytes = serializeNpy(TensorDesc{DType::I32, {}}, &scalar);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, readBytes(dataPath("scalar_i32.npy")));
}

TEST(NpyTest, ReadsNumpySavez) {
  std::vector<NamedArray> arrays;
  Status status = readNpz(dataPath("all_dtypes.npz"), arrays);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_EQ(arrays.size(), 6u);

  EXPECT_EQ(arrays[0].name, "f32");
  EXPECT_EQ(arrays[0].desc, (TensorDesc{DType::F32, {2, 3}}));
  EXPECT_EQ(valuesOf<float>(arrays[0]),
            (std::vector<float>{-0.5f, -0.25f, 0.0f, 0.25f, 0.5f, 0.75f}));

  EXPECT_EQ(arrays[1].name, "f64");
  EXPECT_EQ(arrays[1].desc, (TensorDesc{DType::F64, {3}}));
  EXPECT_EQ(valuesOf<double>(arrays[1]),
            (std::vector<double>{1.5, -2.25, 1e300}));

  EXPECT_EQ(arrays[2].name, "i64");
  EXPECT_EQ(arrays[2].desc, (TensorDesc{DType::I64, {2, 1}}));
  EXPECT_EQ(valuesOf<int64_t>(arrays[2]),
            (std::vector<int64_t>{-(int64_t(1) << 40), 7}));

  EXPECT_EQ(arrays[3].name, "i32");
  EXPECT_EQ(arrays[3].desc, (TensorDesc{DType::I32, {}}));
  EXPECT_EQ(valuesOf<int32_t>(arrays[3]), (std::vector<int32_t>{-3}));

  EXPECT_EQ(arrays[4].name, "b");
  EXPECT_EQ(arrays[4].desc, (TensorDesc{DType::Bool, {4}}));
  EXPECT_EQ(arrays[4].data, (std::vector<uint8_t>{1, 0, 1, 1}));

  EXPECT_EQ(arrays[5].name, "empty");
  EXPECT_EQ(arrays[5].desc, (TensorDesc{DType::F32, {0, 5}}));
  EXPECT_TRUE(arrays[5].data.empty());
}

TEST(NpyTest, ReadsPositionalSavezInOrder) {
  std::vector<NamedArray> arrays;
  Status status = readNpz(dataPath("positional.npz"), arrays);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_EQ(arrays.size(), 2u);
  EXPECT_EQ(arrays[0].name, "arr_0");
  EXPECT_EQ(arrays[0].desc, (TensorDesc{DType::F32, {2, 3}}));
  EXPECT_EQ(arrays[1].name, "arr_1");
  EXPECT_EQ(arrays[1].desc, (TensorDesc{DType::I64, {2, 1}}));
}

TEST(NpyTest, ReadsFormatVersions2And3) {
  for (const char *name : {"f64_v2.npy", "f64_v3.npy"}) {
    NamedArray array;
    Status status = readNpy(dataPath(name), array);
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(array.desc, (TensorDesc{DType::F64, {3}})) << name;
    EXPECT_EQ(valuesOf<double>(array),
              (std::vector<double>{1.5, -2.25, 1e300}));
  }
}

//===----------------------------------------------------------------------===//
// Rejected input
//===----------------------------------------------------------------------===//

std::string readError(const std::string &path) {
  std::vector<NamedArray> arrays;
  Status status = readArrays(path, arrays);
  EXPECT_FALSE(status.ok()) << path;
  return status.message();
}

TEST(NpyTest, RejectsCompressedNpz) {
  std::string path = dataPath("compressed.npz");
  EXPECT_EQ(readError(path),
            path + ": member 'x.npy': compressed .npz (savez_compressed) is "
                   "not supported; use numpy.savez");
}

TEST(NpyTest, RejectsFortranOrder) {
  std::string path = dataPath("fortran.npy");
  EXPECT_EQ(readError(path), path + ": Fortran-order arrays are not "
                                    "supported; save np.ascontiguousarray(a) "
                                    "instead");
}

TEST(NpyTest, RejectsBigEndian) {
  std::string path = dataPath("big_endian.npy");
  EXPECT_EQ(readError(path), path + ": big-endian dtype '>f4' is not "
                                    "supported; convert with a.astype('<f4')");
}

TEST(NpyTest, MissingFileIsAnErrorNamingIt) {
  std::string path = tempPath("does_not_exist.npy");
  NamedArray array;
  Status status = readNpy(path, array);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(),
            path + ": cannot open: No such file or directory");
}

Status parseHeader(const std::string &header) {
  std::vector<uint8_t> bytes = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                                static_cast<uint8_t>(header.size()), 0};
  bytes.insert(bytes.end(), header.begin(), header.end());
  NamedArray out;
  return parseNpy(bytes.data(), bytes.size(), out);
}

TEST(NpyTest, RejectsBadHeaders) {
  struct Case {
    const char *header;
    const char *error; // expected prefix of the message
  };
  const Case cases[] = {
      {"{'descr': '<u2', 'fortran_order': False, 'shape': (0,), }",
       "unsupported dtype '<u2'"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (0,), }",
       "structured dtypes are not supported"},
      {"{'descr': '<f4', 'shape': (0,), }",
       "malformed .npy header: missing key 'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (0,), 'x': 1}",
       "malformed .npy header: unexpected key 'x'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }",
       "malformed .npy header: expected a dimension"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': "
       "(99999999999999999999,), }",
       "malformed .npy header: dimension too large"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': "
       "(4294967296, 4294967296), }",
       "tensor float32[4294967296x4294967296] is too large"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (0,), }",
       "malformed .npy header: expected True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (0,), } junk",
       "malformed .npy header: unexpected text after the dictionary"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (0,), }",
       "malformed .npy header: expected ',' or '}'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
       "'shape': (0,)}",
       "malformed .npy header: duplicate key 'descr'"},
  };
  for (const Case &c : cases) {
    Status status = parseHeader(c.header);
    ASSERT_FALSE(status.ok()) << c.header;
    EXPECT_EQ(status.message().rfind(c.error, 0), 0u)
        << c.header << "\n  gave: " << status.message();
  }
  // Python 2 longs and spacing variations are fine.
  EXPECT_TRUE(
      parseHeader("{\"descr\":\"<f4\",\"fortran_order\":False,\"shape\":(0L,)}")
          .ok());
}

TEST(NpyTest, RejectsWrongDataSizes) {
  std::vector<float> values = {1, 2, 3};
  StatusOr<std::vector<uint8_t>> bytes =
      serializeNpy(TensorDesc{DType::F32, {3}}, values.data());
  ASSERT_TRUE(bytes.ok());
  bytes->push_back(0);
  NamedArray out;
  Status status = parseNpy(bytes->data(), bytes->size(), out);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(),
            "1 unexpected bytes after the 12 bytes of float32[3] data");
}

TEST(NpyTest, RejectsBoolsOtherThanZeroAndOne) {
  std::vector<uint8_t> values = {0, 1, 2};
  StatusOr<std::vector<uint8_t>> bytes =
      serializeNpy(TensorDesc{DType::Bool, {3}}, values.data());
  ASSERT_TRUE(bytes.ok());
  NamedArray out;
  Status status = parseNpy(bytes->data(), bytes->size(), out);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(),
            "bool element 2 has byte value 2; expected 0 or 1");
}

TEST(NpyTest, WritingRejectsBadArrayLists) {
  NamedArray a = patterned("a", DType::F32, {2});
  NamedArray nameless = patterned("", DType::F32, {2});
  NamedArray short_ = patterned("s", DType::F32, {2});
  short_.data.pop_back();
  EXPECT_EQ(serializeNpz({a, a}).status().message(),
            "array 'a': name used twice");
  EXPECT_EQ(serializeNpz({nameless}).status().message(),
            "an array to write has an empty name");
  EXPECT_EQ(serializeNpz({short_}).status().message(),
            "array 's': float32[2] needs 8 bytes, but it has 7");
}

TEST(NpyTest, NpyTruncatedAtEveryLengthIsRejected) {
  std::vector<std::vector<uint8_t>> files = {
      readBytes(dataPath("f32_2x3.npy")), readBytes(dataPath("f64_v2.npy")),
      readBytes(dataPath("f64_v3.npy")), readBytes(dataPath("scalar_i32.npy"))};
  for (const std::vector<uint8_t> &file : files) {
    ASSERT_TRUE(parseNpyPrefix(file, file.size()).ok());
    for (size_t size = 0; size < file.size(); ++size)
      EXPECT_FALSE(parseNpyPrefix(file, size).ok()) << size;
  }
}

TEST(NpyTest, NpzTruncatedAtEveryLengthIsRejected) {
  StatusOr<std::vector<uint8_t>> zip64 = serializeNpz(everyDType(), true);
  ASSERT_TRUE(zip64.ok());
  std::vector<std::vector<uint8_t>> files = {
      readBytes(dataPath("all_dtypes.npz")),
      readBytes(dataPath("positional.npz")), *zip64};
  for (const std::vector<uint8_t> &file : files) {
    ASSERT_TRUE(parseNpzPrefix(file, file.size()).ok());
    for (size_t size = 0; size < file.size(); ++size)
      EXPECT_FALSE(parseNpzPrefix(file, size).ok()) << size;
  }
}

TEST(NpyTest, TruncatedFileMessagesNameTheFile) {
  std::vector<uint8_t> file = readBytes(dataPath("positional.npz"));
  file.resize(file.size() - 1);
  std::string path = tempPath("truncated.npz");
  writeBytes(path, file);
  EXPECT_EQ(readError(path),
            path + ": not an .npz archive, or a truncated one: no ZIP end of "
                   "central directory record found");
  std::remove(path.c_str());
}

TEST(NpyTest, CorruptBytesNeverCrash) {
  std::vector<std::vector<uint8_t>> files = {
      readBytes(dataPath("all_dtypes.npz")), *serializeNpz(everyDType(), true)};
  for (const std::vector<uint8_t> &file : files) {
    for (size_t i = 0; i < file.size(); ++i) {
      for (uint8_t value : {uint8_t(0x00), uint8_t(0xFF), uint8_t(0x80)}) {
        std::vector<uint8_t> corrupt = file;
        corrupt[i] = value;
        (void)parseNpzPrefix(corrupt, corrupt.size());
        (void)parseNpyPrefix(corrupt, corrupt.size());
      }
    }
  }
  std::mt19937 random(42);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<uint8_t> garbage(random() % 300);
    for (uint8_t &byte : garbage)
      byte = static_cast<uint8_t>(random());
    if (trial % 2 && garbage.size() >= 6)
      std::memcpy(garbage.data(), "\x93NUMPY", 6);
    EXPECT_FALSE(parseNpzPrefix(garbage, garbage.size()).ok());
    (void)parseNpyPrefix(garbage, garbage.size());
  }
}

TEST(NpyTest, CorruptMemberDataFailsTheCrc) {
  std::vector<uint8_t> file = readBytes(dataPath("positional.npz"));
  // The last byte of the first member's data (arr_0, six float32 values).
  std::vector<NamedArray> arrays;
  ASSERT_TRUE(parseNpz(file.data(), file.size(), arrays).ok());
  size_t member = 0;
  for (size_t i = 0; i + 4 <= file.size(); ++i)
    if (std::memcmp(&file[i], arrays[0].data.data() + 20, 4) == 0)
      member = i;
  ASSERT_NE(member, 0u);
  file[member] ^= 1;
  Status status = parseNpz(file.data(), file.size(), arrays);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message().rfind("member 'arr_0.npy': corrupt data: CRC-32 ",
                                   0),
            0u)
      << status.message();
}

//===----------------------------------------------------------------------===//
// Checksums
//===----------------------------------------------------------------------===//

TEST(ChecksumTest, MatchesTorchDoubleSum) {
  // x = (((i % 97) - 48) * 0.1).astype(float32) for i in range(10000);
  // torch.from_numpy(x).double().sum().item() == -39.59999990463257.
  std::vector<float> x(10000);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>((static_cast<int>(i % 97) - 48) * 0.1);
  TensorDesc desc{DType::F32, {100, 100}};
  EXPECT_NEAR(checksum(desc, x.data()), -39.59999990463257, 1e-9);

  // (x > 0.5).double().sum() == 4429.0, exactly.
  std::vector<uint8_t> positive(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    positive[i] = x[i] > 0.5f;
  EXPECT_EQ(checksum(TensorDesc{DType::Bool, {10000}}, positive.data()),
            4429.0);
}

TEST(ChecksumTest, EveryDType) {
  std::vector<double> f64 = {1.5, -2.25, 4};
  std::vector<int64_t> i64 = {-(int64_t(1) << 40), 7};
  std::vector<int32_t> i32 = {-3, 5, 100};
  std::vector<uint8_t> b = {1, 0, 1, 1};
  EXPECT_EQ(checksum(TensorDesc{DType::F64, {3}}, f64.data()), 3.25);
  EXPECT_EQ(checksum(TensorDesc{DType::I64, {2}}, i64.data()),
            -1099511627769.0);
  EXPECT_EQ(checksum(TensorDesc{DType::I32, {3}}, i32.data()), 102.0);
  EXPECT_EQ(checksum(TensorDesc{DType::Bool, {4}}, b.data()), 3.0);
  EXPECT_EQ(checksum(TensorDesc{DType::F32, {0, 3}}, nullptr), 0.0);
}

TEST(ChecksumTest, StatsHaveMinAndMaxAndPropagateNaN) {
  std::vector<float> x = {2, -7.5, 3};
  TensorStats stats = tensorStats(TensorDesc{DType::F32, {3}}, x.data());
  EXPECT_EQ(stats.checksum, -2.5);
  EXPECT_EQ(stats.min, -7.5);
  EXPECT_EQ(stats.max, 3);

  x[1] = NAN;
  stats = tensorStats(TensorDesc{DType::F32, {3}}, x.data());
  EXPECT_TRUE(std::isnan(stats.checksum));
  EXPECT_TRUE(std::isnan(stats.min));
  EXPECT_TRUE(std::isnan(stats.max));

  stats = tensorStats(TensorDesc{DType::F32, {0}}, nullptr);
  EXPECT_EQ(stats.checksum, 0);
  EXPECT_TRUE(std::isnan(stats.min));
}

} // namespace
