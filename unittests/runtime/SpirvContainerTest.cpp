//===- SpirvContainerTest.cpp - The "vulkan-spirv" executable format -----===//

#include "kiln/runtime/SpirvContainer.h"

#include <gtest/gtest.h>

using namespace kiln::runtime;

namespace {

/// A minimal module header plus OpEntryPoint GLCompute %1 "name" and
/// OpExecutionMode %1 LocalSize x y z: all spirvLocalSize reads.
std::vector<uint32_t> module(const std::string &name, BlockSize local) {
  std::vector<uint32_t> words = {kSpirvMagic, 0x00010000, 0, 8, 0};
  std::vector<uint32_t> literal((name.size() + 4) / 4, 0);
  for (size_t i = 0; i < name.size(); ++i)
    literal[i / 4] |= uint32_t(static_cast<unsigned char>(name[i])) << (8 * (i % 4));
  words.push_back(uint32_t(3 + literal.size()) << 16 | 15); // OpEntryPoint
  words.push_back(5);                                       // GLCompute
  words.push_back(1);
  words.insert(words.end(), literal.begin(), literal.end());
  words.insert(words.end(), {6u << 16 | 16, 1, 17, local.x, local.y, local.z});
  return words;
}

std::vector<SpirvKernelBinary> sample() {
  return {{"add_f32", module("add_f32", {64, 1, 1})}, {"k", module("k", {8, 4, 2})}};
}

TEST(SpirvContainerTest, RoundTrips) {
  std::vector<uint8_t> bytes = encodeSpirvContainer(sample());
  EXPECT_EQ(bytes.size() % 4, 0u);
  EXPECT_EQ(bytes[0], 'K');
  EXPECT_EQ(bytes[3], 'V');
  StatusOr<std::vector<SpirvKernelBinary>> decoded = decodeSpirvContainer(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  ASSERT_EQ(decoded->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ((*decoded)[i].entryPoint, sample()[i].entryPoint);
    EXPECT_EQ((*decoded)[i].words, sample()[i].words);
  }
  StatusOr<std::vector<SpirvKernelBinary>> empty = decodeSpirvContainer(encodeSpirvContainer({}));
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_TRUE(empty->empty());
}

TEST(SpirvContainerTest, ReadsTheLocalSizeOfAnEntryPoint) {
  EXPECT_EQ(spirvLocalSize(module("add_f32", {64, 1, 1}), "add_f32"), (BlockSize{64, 1, 1}));
  EXPECT_EQ(spirvLocalSize(module("abcd", {8, 4, 2}), "abcd"), (BlockSize{8, 4, 2}));
  EXPECT_EQ(spirvLocalSize(module("abcd", {8, 4, 2}), "abc"), std::nullopt);
  EXPECT_EQ(spirvLocalSize(module("abc", {8, 4, 2}), "abcd"), std::nullopt);
  EXPECT_EQ(spirvLocalSize({}, "k"), std::nullopt);
  // An instruction whose length overruns the module, or is 0.
  std::vector<uint32_t> words = module("k", {1, 1, 1});
  words[5] = 0xFFFF0000 | 15;
  EXPECT_EQ(spirvLocalSize(words, "k"), std::nullopt);
  words[5] = 15;
  EXPECT_EQ(spirvLocalSize(words, "k"), std::nullopt);
}

TEST(SpirvContainerTest, ReadsTheCapabilitiesAModuleDeclares) {
  // OpCapability Shader, OpCapability AtomicFloat32AddEXT, then the entry
  // point: the capabilities end at the first other instruction.
  std::vector<uint32_t> words = module("k", {1, 1, 1});
  words.insert(words.begin() + 5, {2u << 16 | 17, 1, 2u << 16 | 17,
                                   kSpirvCapabilityAtomicFloat32AddEXT});
  EXPECT_EQ(spirvCapabilities(words),
            (std::vector<uint32_t>{1, kSpirvCapabilityAtomicFloat32AddEXT}));
  EXPECT_EQ(spirvCapabilities(module("k", {1, 1, 1})), std::vector<uint32_t>{});
  EXPECT_EQ(spirvCapabilities({}), std::vector<uint32_t>{});
  // A length that overruns the module, or is 0: no crash, nothing past it.
  words[5] = 0xFFFF0000 | 17;
  EXPECT_EQ(spirvCapabilities(words), std::vector<uint32_t>{});
  words[5] = 17;
  EXPECT_EQ(spirvCapabilities(words), std::vector<uint32_t>{});
}

TEST(SpirvContainerTest, RejectsCorruptContainers) {
  std::vector<uint8_t> good = encodeSpirvContainer(sample());
  // Every truncation, without crashing.
  for (size_t size = 0; size < good.size(); ++size)
    EXPECT_FALSE(decodeSpirvContainer(std::vector<uint8_t>(good.begin(), good.begin() + size)).ok())
        << size << " bytes";
  auto message = [](std::vector<uint8_t> bytes) {
    return decodeSpirvContainer(bytes).status().message();
  };
  std::vector<uint8_t> bad = good;
  bad[0] = 'X';
  EXPECT_NE(message(bad).find("magic"), std::string::npos) << message(bad);
  bad = good;
  bad[4] = 3;
  EXPECT_NE(message(bad).find("version 3"), std::string::npos) << message(bad);
  bad = good;
  bad[8] = bad[9] = bad[10] = bad[11] = 0xFF; // 4 billion kernels
  EXPECT_NE(message(bad).find("cannot fit"), std::string::npos) << message(bad);
  bad = good;
  bad.push_back(0);
  EXPECT_NE(message(bad).find("after the last kernel"), std::string::npos) << message(bad);
  // A module that is not SPIR-V is named.
  std::vector<SpirvKernelBinary> kernels = sample();
  kernels[1].words[0] = 0x12345678;
  std::string notSpirv = message(encodeSpirvContainer(kernels));
  EXPECT_NE(notSpirv.find("kernel 1 ('k')"), std::string::npos) << notSpirv;
  EXPECT_NE(notSpirv.find("0x07230203"), std::string::npos) << notSpirv;
  kernels = sample();
  kernels[0].entryPoint.clear();
  EXPECT_FALSE(decodeSpirvContainer(encodeSpirvContainer(kernels)).ok());
}

} // namespace
