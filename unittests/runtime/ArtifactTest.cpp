//===- ArtifactTest.cpp - Encoding, decoding and verifying artifacts -----===//

#include "kiln/runtime/Artifact.h"
#include "kiln/runtime/SpirvContainer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

using namespace kiln::runtime;

namespace {

Artifact sampleArtifact() {
  Artifact a;
  a.graphName = "sample";
  a.buffers = {
      {BufferKind::Input, {DType::F32, {8, 256}}, 0, 0},
      {BufferKind::Input, {DType::I64, {4}}, 1, 0},
      {BufferKind::Alloc, {DType::F32, {8, 256}}, 0, 0},
      {BufferKind::View, {DType::F32, {256}}, 2, 1024},
      {BufferKind::Alloc, {DType::Bool, {}}, 0, 0},
  };
  a.kernels = {{"k0", 3, "kernel_0_add"}, {"k1", 1, "kernel_1_scale"}};
  a.launches = {{0, 8, {0, 1, 2}}, {1, 1, {3}}, {1, 0, {4}}};
  a.checks = {{4, 3, StatusCode::IndexOutOfRange, "index out of range in aten.gather"}};
  a.buffers.push_back({BufferKind::Alloc, {DType::F32, {16, 256}}, 0, 0}); // 5
  a.collectives = {{{CollectiveKind::AllGather, ReduceOp::Sum, "tp-group", 2}, 2, 5, 1}};
  a.outputs = {2, 3};
  a.executables = {{"cpu-x86_64", "znver4", {"avx2", "fma"}, {}, {0x7f, 'E', 'L', 'F', 1, 2, 3}},
                   {"kiln-gpu", "", {}, {{32, 4, 1}, {64, 1, 1}}, {'P', 'T', 'X'}}};
  a.metadata = R"({"note": "not interpreted"})";
  return a;
}

Status parse(const std::vector<uint8_t> &bytes, Artifact &out) {
  return parseArtifact(bytes.data(), bytes.size(), out);
}

/// Recomputes the header checksum after a test edits the payload, so that
/// the check under test is the one that fails.
void reseal(std::vector<uint8_t> &bytes) {
  uint64_t sum = artifactChecksum(bytes.data() + kArtifactHeaderSize,
                                  bytes.size() - kArtifactHeaderSize);
  for (int i = 0; i < 8; ++i)
    bytes[24 + i] = static_cast<uint8_t>(sum >> (8 * i));
}

void putU32(std::vector<uint8_t> &bytes, size_t at, uint32_t value) {
  for (int i = 0; i < 4; ++i)
    bytes[at + i] = static_cast<uint8_t>(value >> (8 * i));
}

/// Where the buffer count is, for an artifact without size symbols: after
/// the header, the graph name and the symbol count.
size_t bufferCountOffset(const Artifact &a) {
  return kArtifactHeaderSize + 4 + a.graphName.size() + 4;
}

#define EXPECT_ERROR_HAS(status, text)                                         \
  do {                                                                         \
    Status s_ = (status);                                                      \
    EXPECT_FALSE(s_.ok());                                                     \
    EXPECT_NE(s_.message().find(text), std::string::npos)                      \
        << "message: " << s_.message();                                        \
  } while (0)

} // namespace

TEST(ArtifactTest, VerifyRejectsBadCollectives) {
  auto verifyWith = [](auto edit) {
    Artifact a = sampleArtifact();
    edit(a.collectives[0], a);
    return verifyArtifact(a);
  };
  EXPECT_TRUE(verifyWith([](CollectiveCmd &, Artifact &) {}).ok());
  EXPECT_ERROR_HAS(verifyWith([](CollectiveCmd &c, Artifact &) { c.output = 0; }),
                   "collective 0: its output must be an Alloc buffer");
  EXPECT_ERROR_HAS(verifyWith([](CollectiveCmd &c, Artifact &) { c.input = 40; }),
                   "collective 0: refers to buffer 40");
  EXPECT_ERROR_HAS(verifyWith([](CollectiveCmd &c, Artifact &) { c.collective.groupSize = 3; }),
                   "all_gather over 3 ranks cannot make dim 0 16 (float32[8x256] to "
                   "float32[16x256])");
  EXPECT_ERROR_HAS(verifyWith([](CollectiveCmd &c, Artifact &) { c.collective.group.clear(); }),
                   "names no process group");
  EXPECT_ERROR_HAS(verifyWith([](CollectiveCmd &c, Artifact &) { c.afterLaunches = 9; }),
                   "runs after launch 9, but there are only 3 launches");
  EXPECT_ERROR_HAS(verifyWith([](CollectiveCmd &c, Artifact &) {
                     c.collective.kind = CollectiveKind::ReduceScatter;
                   }),
                   "reduce_scatter over 2 ranks cannot make dim 0 16");
  EXPECT_ERROR_HAS(verifyWith([](CollectiveCmd &c, Artifact &a) {
                     a.collectives.push_back(c);
                     a.collectives[1].afterLaunches = 0;
                   }),
                   "collectives must be sorted by position");
}

TEST(ArtifactTest, RoundTrip) {
  Artifact a = sampleArtifact();
  std::vector<uint8_t> bytes = serializeArtifact(a);
  ASSERT_EQ(std::memcmp(bytes.data(), "KILNART\0", 8), 0);

  Artifact b;
  Status status = parse(bytes, b);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_EQ(b.executables.size(), 2u);
  for (size_t i = 0; i < a.executables.size(); ++i) {
    EXPECT_EQ(b.executables[i].format, a.executables[i].format) << i;
    EXPECT_EQ(b.executables[i].cpu, a.executables[i].cpu) << i;
    EXPECT_EQ(b.executables[i].cpuFeatures, a.executables[i].cpuFeatures) << i;
    EXPECT_EQ(b.executables[i].blockSizes, a.executables[i].blockSizes) << i;
    EXPECT_EQ(b.executables[i].bytes, a.executables[i].bytes) << i;
  }
  EXPECT_EQ(b.executables[0].cpu, "znver4");
  EXPECT_EQ(b.executableFor("kiln-gpu"), &b.executables[1]);
  EXPECT_EQ(b.executableFor("cpu-aarch64"), nullptr);
  EXPECT_EQ(b.formatList(), "'cpu-x86_64', 'kiln-gpu'");
  EXPECT_EQ(b.graphName, a.graphName);
  ASSERT_EQ(b.buffers.size(), a.buffers.size());
  for (size_t i = 0; i < a.buffers.size(); ++i) {
    EXPECT_EQ(b.buffers[i].kind, a.buffers[i].kind) << i;
    EXPECT_EQ(b.buffers[i].type, a.buffers[i].type) << i;
    EXPECT_EQ(b.buffers[i].source, a.buffers[i].source) << i;
    EXPECT_EQ(b.buffers[i].byteOffset, a.buffers[i].byteOffset) << i;
  }
  ASSERT_EQ(b.launches.size(), a.launches.size());
  for (size_t i = 0; i < a.launches.size(); ++i) {
    EXPECT_EQ(b.launches[i].kernel, a.launches[i].kernel) << i;
    EXPECT_EQ(b.launches[i].workgroups, a.launches[i].workgroups) << i;
    EXPECT_EQ(b.launches[i].bindings, a.launches[i].bindings) << i;
  }
  ASSERT_EQ(b.checks.size(), a.checks.size());
  for (size_t i = 0; i < a.checks.size(); ++i) {
    EXPECT_EQ(b.checks[i].buffer, a.checks[i].buffer) << i;
    EXPECT_EQ(b.checks[i].afterLaunches, a.checks[i].afterLaunches) << i;
    EXPECT_EQ(b.checks[i].code, a.checks[i].code) << i;
    EXPECT_EQ(b.checks[i].message, a.checks[i].message) << i;
  }
  ASSERT_EQ(b.collectives.size(), 1u);
  EXPECT_EQ(b.collectives[0].collective.kind, CollectiveKind::AllGather);
  EXPECT_EQ(b.collectives[0].collective.group, "tp-group");
  EXPECT_EQ(b.collectives[0].collective.groupSize, 2);
  EXPECT_EQ(b.collectives[0].input, 2u);
  EXPECT_EQ(b.collectives[0].output, 5u);
  EXPECT_EQ(b.collectives[0].afterLaunches, 1u);
  EXPECT_EQ(b.outputs, a.outputs);
  ASSERT_EQ(b.kernels.size(), a.kernels.size());
  for (size_t i = 0; i < a.kernels.size(); ++i) {
    EXPECT_EQ(b.kernels[i].symbol, a.kernels[i].symbol) << i;
    EXPECT_EQ(b.kernels[i].numBindings, a.kernels[i].numBindings) << i;
    EXPECT_EQ(b.kernels[i].name, a.kernels[i].name) << i;
  }
  EXPECT_EQ(b.metadata, a.metadata);
  EXPECT_EQ(b.numInputs(), 2u);
  EXPECT_EQ(serializeArtifact(b), bytes);
}

TEST(ArtifactTest, EmptyArtifactRoundTrips) {
  Artifact a;
  a.executables = {{"cpu-x86_64", "", {}, {}, {}}};
  Artifact b;
  Status status = parse(serializeArtifact(a), b);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(b.numInputs(), 0u);
  ASSERT_EQ(b.executables.size(), 1u);
  EXPECT_TRUE(b.executables[0].bytes.empty());
}

TEST(ArtifactTest, RejectsEveryTruncation) {
  std::vector<uint8_t> bytes = serializeArtifact(sampleArtifact());
  for (size_t size = 0; size < bytes.size(); ++size) {
    // A copy of exactly `size` bytes lets sanitizers catch any over-read.
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + size);
    Artifact out;
    Status status = parse(prefix, out);
    EXPECT_FALSE(status.ok()) << "accepted a " << size << "-byte prefix";
    EXPECT_NE(status.message().find("truncated"), std::string::npos)
        << size << ": " << status.message();
  }
}

TEST(ArtifactTest, RejectsEveryFlippedByte) {
  std::vector<uint8_t> bytes = serializeArtifact(sampleArtifact());
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (uint8_t mask : {0x01, 0x80, 0xff}) {
      std::vector<uint8_t> corrupt = bytes;
      corrupt[i] ^= mask;
      Artifact out;
      EXPECT_FALSE(parse(corrupt, out).ok())
          << "accepted byte " << i << " xor " << int(mask);
    }
  }
}

TEST(ArtifactTest, RejectsTrailingGarbage) {
  std::vector<uint8_t> bytes = serializeArtifact(sampleArtifact());
  bytes.push_back(0);
  Artifact out;
  EXPECT_ERROR_HAS(parse(bytes, out), "trailing");
}

TEST(ArtifactTest, RejectsTrailingBytesInsidePayload) {
  std::vector<uint8_t> bytes = serializeArtifact(sampleArtifact());
  bytes.push_back(0);
  uint64_t payload = bytes.size() - kArtifactHeaderSize;
  for (int i = 0; i < 8; ++i)
    bytes[16 + i] = static_cast<uint8_t>(payload >> (8 * i));
  reseal(bytes);
  Artifact out;
  EXPECT_ERROR_HAS(parse(bytes, out), "1 unexpected bytes after the last field");
}

TEST(ArtifactTest, RejectsWrongMagic) {
  std::vector<uint8_t> bytes = serializeArtifact(sampleArtifact());
  bytes[0] = 'X';
  Artifact out;
  EXPECT_ERROR_HAS(parse(bytes, out), "not a Kiln artifact");

  const char text[] = "#!/bin/sh\necho hello\n";
  EXPECT_ERROR_HAS(parseArtifact(reinterpret_cast<const uint8_t *>(text),
                                 sizeof(text), out),
                   "not a Kiln artifact");
}

TEST(ArtifactTest, RejectsWrongVersion) {
  std::vector<uint8_t> bytes = serializeArtifact(sampleArtifact());
  putU32(bytes, 8, kArtifactFormatVersion + 1);
  reseal(bytes);
  Artifact out;
  EXPECT_ERROR_HAS(parse(bytes, out),
                   "artifact format version " +
                       std::to_string(kArtifactFormatVersion + 1) +
                       ", this runtime reads version " +
                       std::to_string(kArtifactFormatVersion) + "; recompile");
}

TEST(ArtifactTest, RejectsChecksumMismatch) {
  std::vector<uint8_t> bytes = serializeArtifact(sampleArtifact());
  bytes.back() ^= 1;
  Artifact out;
  EXPECT_ERROR_HAS(parse(bytes, out), "corrupted");
}

TEST(ArtifactTest, RejectsHugeCountWithoutAllocating) {
  Artifact a = sampleArtifact();
  std::vector<uint8_t> bytes = serializeArtifact(a);
  size_t at = bufferCountOffset(a);
  putU32(bytes, at, 1u << 31);
  reseal(bytes);
  Artifact out;
  Status status = parse(bytes, out);
  EXPECT_ERROR_HAS(status, "buffer count 2147483648");
  EXPECT_ERROR_HAS(status, "at byte offset " + std::to_string(at));
}

TEST(ArtifactTest, RejectsUnknownEnums) {
  Artifact a = sampleArtifact();
  std::vector<uint8_t> bytes = serializeArtifact(a);
  size_t kindAt = bufferCountOffset(a) + 4;
  bytes[kindAt] = 9;
  reseal(bytes);
  Artifact out;
  EXPECT_ERROR_HAS(parse(bytes, out), "unknown buffer kind 9 at byte offset " +
                                          std::to_string(kindAt));

  bytes = serializeArtifact(a);
  bytes[kindAt + 1] = 42;
  reseal(bytes);
  EXPECT_ERROR_HAS(parse(bytes, out), "unknown dtype 42");
}

TEST(ArtifactTest, ParseRunsVerifier) {
  Artifact a = sampleArtifact();
  a.outputs.push_back(77);
  Artifact out;
  EXPECT_ERROR_HAS(parse(serializeArtifact(a), out),
                   "invalid artifact: output 2 refers to buffer 77");
}

TEST(ArtifactTest, VerifyAcceptsSample) {
  Status status = verifyArtifact(sampleArtifact());
  EXPECT_TRUE(status.ok()) << status.message();
}

TEST(ArtifactTest, VerifyRejectsViewOverflowingSource) {
  Artifact a = sampleArtifact();
  a.buffers[3].byteOffset = 8 * 256 * 4 - 512; // 1024-byte view, 512 left
  EXPECT_ERROR_HAS(verifyArtifact(a),
                   "buffer 3: view of 1024 bytes at byte offset 7680 does not "
                   "fit in source buffer 2 (float32[8x256], 8192 bytes)");

  a.buffers[3].byteOffset = INT64_MAX - 4; // offset + size overflows int64
  EXPECT_ERROR_HAS(verifyArtifact(a), "does not fit");
  a.buffers[3].byteOffset = -4;
  EXPECT_ERROR_HAS(verifyArtifact(a), "does not fit");
}

TEST(ArtifactTest, VerifyRejectsForwardOrMisalignedView) {
  Artifact a = sampleArtifact();
  a.buffers[3].source = 3;
  EXPECT_ERROR_HAS(verifyArtifact(a), "may only alias an earlier buffer");

  a = sampleArtifact();
  a.buffers[3].byteOffset = 2;
  EXPECT_ERROR_HAS(verifyArtifact(a), "not a multiple");
}

TEST(ArtifactTest, VerifyRejectsOutOfRangeBinding) {
  Artifact a = sampleArtifact();
  a.launches[0].bindings[2] = 99;
  EXPECT_ERROR_HAS(verifyArtifact(a),
                   "launch 0: binding 2 refers to buffer 99, but there are "
                   "only 6 buffers");
}

TEST(ArtifactTest, VerifyRejectsBindingCountMismatch) {
  Artifact a = sampleArtifact();
  a.launches[1].bindings.push_back(0);
  EXPECT_ERROR_HAS(verifyArtifact(a),
                   "launch 1: kernel 'kernel_1_scale' takes 1 bindings, the "
                   "launch passes 2");
}

TEST(ArtifactTest, VerifyRejectsBadKernelReferences) {
  Artifact a = sampleArtifact();
  a.launches[0].kernel = 2;
  EXPECT_ERROR_HAS(verifyArtifact(a), "launch 0: kernel 2 is out of range");

  a = sampleArtifact();
  a.kernels[1].symbol.clear();
  EXPECT_ERROR_HAS(verifyArtifact(a), "empty symbol");

  a = sampleArtifact();
  a.executables[1].bytes.clear();
  EXPECT_ERROR_HAS(verifyArtifact(a), "executable 1: the artifact declares 2 kernels but "
                                      "executable 'kiln-gpu' carries no bytes");
}

TEST(ArtifactTest, VerifyRejectsBadExecutables) {
  Artifact a = sampleArtifact();
  a.executables.clear();
  EXPECT_ERROR_HAS(verifyArtifact(a), "carries no executable");

  a = sampleArtifact();
  a.executables[1].format.clear();
  EXPECT_ERROR_HAS(verifyArtifact(a), "executable 1: it names no format");

  a = sampleArtifact();
  a.executables[1].format = "cpu-x86_64";
  EXPECT_ERROR_HAS(verifyArtifact(a), "executable 1: its format 'cpu-x86_64' is also executable 0's");

  a = sampleArtifact();
  a.executables[1].blockSizes.pop_back();
  EXPECT_ERROR_HAS(verifyArtifact(a), "executable 1: it has 1 block sizes for 2 kernels");

  a = sampleArtifact();
  a.executables[1].blockSizes[1].y = 0;
  EXPECT_ERROR_HAS(verifyArtifact(a), "the block size of kernel 1 is 64x0x1, which is empty");
}

/// A SPIR-V module with only what the verifier reads: OpEntryPoint GLCompute
/// %1 "name" (a name of up to 3 bytes) and its LocalSize.
std::vector<uint32_t> spirvModule(const std::string &name, BlockSize local) {
  uint32_t literal = 0;
  for (size_t i = 0; i < name.size(); ++i)
    literal |= uint32_t(static_cast<unsigned char>(name[i])) << (8 * i);
  return {kSpirvMagic, 0x00010000, 0,       8,       0,      4u << 16 | 15, 5, 1, literal,
          6u << 16 | 16, 1,        17, local.x, local.y, local.z};
}

/// sampleArtifact with its GPU executable as "vulkan-spirv".
Artifact vulkanArtifact() {
  Artifact a = sampleArtifact();
  a.executables[1].format = kVulkanSpirvFormat;
  a.executables[1].bytes =
      encodeSpirvContainer({{"k0", spirvModule("k0", {32, 4, 1})}, {"k1", spirvModule("k1", {64, 1, 1})}});
  return a;
}

TEST(ArtifactTest, VerifyChecksSpirvExecutables) {
  Artifact a = vulkanArtifact();
  Status ok = verifyArtifact(a);
  EXPECT_TRUE(ok.ok()) << ok.message();
  Artifact parsed;
  ASSERT_TRUE(parse(serializeArtifact(a), parsed).ok());

  a.executables[1].blockSizes[1] = {128, 1, 1};
  EXPECT_ERROR_HAS(verifyArtifact(a), "executable 1: the block size of kernel 1 'kernel_1_scale' "
                                      "(symbol 'k1') is 128x1x1, but its SPIR-V module's "
                                      "LocalSize is 64x1x1");
  a = vulkanArtifact();
  a.executables[1].blockSizes.clear(); // 1x1x1 each
  EXPECT_ERROR_HAS(verifyArtifact(a), "is 1x1x1, but its SPIR-V module's LocalSize is 32x4x1");

  a = vulkanArtifact();
  a.kernels[1].symbol = "k9";
  EXPECT_ERROR_HAS(verifyArtifact(a), "executable 1: no SPIR-V module for kernel 1 "
                                      "'kernel_1_scale' (symbol 'k9')");

  // A module whose entry point is not its container name.
  a = vulkanArtifact();
  a.executables[1].bytes =
      encodeSpirvContainer({{"k0", spirvModule("k0", {32, 4, 1})}, {"k1", spirvModule("kx", {64, 1, 1})}});
  EXPECT_ERROR_HAS(verifyArtifact(a), "has no entry point 'k1' with a LocalSize");

  // Corrupt containers, never a crash.
  a = vulkanArtifact();
  std::vector<uint8_t> good = a.executables[1].bytes;
  a.executables[1].bytes = {'P', 'T', 'X'};
  EXPECT_ERROR_HAS(verifyArtifact(a), "executable 1: invalid SPIR-V container");
  for (size_t size = 0; size < good.size(); ++size) {
    a.executables[1].bytes.assign(good.begin(), good.begin() + size);
    EXPECT_FALSE(verifyArtifact(a).ok()) << size << " bytes";
  }
  for (size_t at = 0; at < good.size(); ++at) {
    a.executables[1].bytes = good;
    a.executables[1].bytes[at] ^= 0xFF;
    (void)verifyArtifact(a); // some flips are harmless (the SPIR-V version)
  }
}

TEST(ArtifactTest, VerifyRejectsBadChecks) {
  Artifact a = sampleArtifact();
  a.checks[0].buffer = 99;
  EXPECT_ERROR_HAS(verifyArtifact(a), "check 0: refers to buffer 99");
  a = sampleArtifact();
  a.checks[0].buffer = 2; // f32 [8, 256]
  EXPECT_ERROR_HAS(verifyArtifact(a), "must hold one bool");
  a = sampleArtifact();
  a.checks[0].afterLaunches = 4;
  EXPECT_ERROR_HAS(verifyArtifact(a), "only 3 launches");
  a = sampleArtifact();
  a.checks.push_back({4, 1, StatusCode::Error, "earlier"});
  EXPECT_ERROR_HAS(verifyArtifact(a), "check 1: checks must be sorted");
  a = sampleArtifact();
  a.checks[0].code = StatusCode::Ok;
  EXPECT_ERROR_HAS(verifyArtifact(a), "unknown error code 0");
}

TEST(ArtifactTest, VerifyRequiresDenseInputIndices) {
  Artifact a = sampleArtifact();
  a.buffers[1].source = 2;
  EXPECT_ERROR_HAS(verifyArtifact(a),
                   "buffer 1: graph input index 2 is out of range");

  a.buffers[1].source = 0;
  EXPECT_ERROR_HAS(verifyArtifact(a), "graph input 0 is already bound");
}

TEST(ArtifactTest, VerifyRejectsBadTensorsAndFields) {
  Artifact a = sampleArtifact();
  a.buffers[2].type.shape = {-2};
  EXPECT_ERROR_HAS(verifyArtifact(a), "negative dimension");

  a = sampleArtifact(); // -1 is a symbolic dim, which needs its expression
  a.buffers[2].type.shape = {-1};
  EXPECT_ERROR_HAS(verifyArtifact(a), "1 symbolic dims but 0 dim expressions");

  a = sampleArtifact();
  a.buffers[2].type.shape = {INT64_MAX / 2, 4};
  EXPECT_ERROR_HAS(verifyArtifact(a), "overflows");

  a = sampleArtifact();
  a.buffers[2].byteOffset = 8;
  EXPECT_ERROR_HAS(verifyArtifact(a), "only View buffers");

  a = sampleArtifact();
  a.executables.clear();
  EXPECT_ERROR_HAS(verifyArtifact(a), "no target");
}

TEST(ArtifactTest, FileRoundTrip) {
  std::string path = ::testing::TempDir() + "kiln_artifact_test.kart";
  Artifact a = sampleArtifact();
  Status status = writeArtifactFile(path, a);
  ASSERT_TRUE(status.ok()) << status.message();

  Artifact b;
  status = readArtifactFile(path, b);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(serializeArtifact(b), serializeArtifact(a));
  std::remove(path.c_str());
}

TEST(ArtifactTest, WriteRefusesInvalidArtifact) {
  std::string path = ::testing::TempDir() + "kiln_artifact_invalid.kart";
  std::remove(path.c_str());
  Artifact a = sampleArtifact();
  a.outputs = {100};
  EXPECT_ERROR_HAS(writeArtifactFile(path, a), "refusing to write");
  Artifact b;
  EXPECT_FALSE(readArtifactFile(path, b).ok());
}

TEST(ArtifactTest, MissingFileNamesPath) {
  std::string path = ::testing::TempDir() + "kiln_no_such_artifact.kart";
  Artifact out;
  Status status = readArtifactFile(path, out);
  EXPECT_ERROR_HAS(status, path);
  EXPECT_ERROR_HAS(status, "No such file");
}

TEST(ArtifactTest, CorruptFileNamesPath) {
  std::string path = ::testing::TempDir() + "kiln_corrupt_artifact.kart";
  FILE *file = std::fopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  std::fputs("hello", file);
  std::fclose(file);
  Artifact out;
  Status status = readArtifactFile(path, out);
  EXPECT_ERROR_HAS(status, "artifact '" + path + "': not a Kiln artifact");
  std::remove(path.c_str());
}

TEST(ArtifactTest, CachedLaunchesAndPersistentBuffers) {
  Artifact a = sampleArtifact();
  size_t persistent = a.buffers.size();
  a.buffers.push_back({BufferKind::Persistent, {DType::F32, {8, 256}}, 0, 0});
  LaunchCmd pack{0, 1, {0, 1, static_cast<uint32_t>(persistent)}, {}};
  pack.cached = true;
  a.launches.insert(a.launches.begin(), pack);
  ASSERT_TRUE(verifyArtifact(a).ok()) << verifyArtifact(a).message();
  std::vector<uint8_t> bytes = serializeArtifact(a);
  Artifact b;
  ASSERT_TRUE(parse(bytes, b).ok());
  EXPECT_TRUE(b.launches[0].cached);
  EXPECT_FALSE(b.launches[1].cached);
  EXPECT_EQ(b.buffers[persistent].kind, BufferKind::Persistent);

  Artifact writesAlloc = a; // a cached launch may be skipped: no fresh buffers
  writesAlloc.launches[0].bindings[2] = 2;
  EXPECT_ERROR_HAS(verifyArtifact(writesAlloc), "neither a graph input nor a Persistent buffer");
  Artifact returnsPersistent = a; // later calls would overwrite the output
  returnsPersistent.outputs.push_back(static_cast<uint32_t>(persistent));
  EXPECT_ERROR_HAS(verifyArtifact(returnsPersistent), "lives in a Persistent buffer");
  Artifact symbolic = a;
  symbolic.buffers[persistent].type.shape = {-1, 256};
  EXPECT_ERROR_HAS(verifyArtifact(symbolic), "symbolic");
}
