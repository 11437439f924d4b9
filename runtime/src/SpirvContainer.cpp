//===- SpirvContainer.cpp - The "vulkan-spirv" executable format ----------===//

#include "kiln/runtime/SpirvContainer.h"

namespace kiln::runtime {

static void putU32(std::vector<uint8_t> &out, uint32_t value) {
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

std::vector<uint8_t> encodeSpirvContainer(const std::vector<SpirvKernelBinary> &kernels) {
  std::vector<uint8_t> out;
  putU32(out, kSpirvContainerMagic);
  putU32(out, kSpirvContainerVersion);
  putU32(out, static_cast<uint32_t>(kernels.size()));
  for (const SpirvKernelBinary &kernel : kernels) {
    putU32(out, static_cast<uint32_t>(kernel.entryPoint.size()));
    out.insert(out.end(), kernel.entryPoint.begin(), kernel.entryPoint.end());
    while (out.size() % 4)
      out.push_back(0);
    putU32(out, static_cast<uint32_t>(kernel.words.size()));
    for (uint32_t word : kernel.words)
      putU32(out, word);
  }
  return out;
}

namespace {
/// Bounds-checked reads; every size is checked against what remains before
/// anything is allocated, so a corrupt count cannot reserve gigabytes.
class Reader {
public:
  explicit Reader(const std::vector<uint8_t> &bytes) : bytes_(bytes) {}
  size_t offset() const { return pos_; }
  size_t remaining() const { return bytes_.size() - pos_; }

  bool u32(uint32_t &value) {
    if (remaining() < 4)
      return false;
    value = 0;
    for (int i = 0; i < 4; ++i)
      value |= uint32_t(bytes_[pos_ + i]) << (8 * i);
    pos_ += 4;
    return true;
  }
  const uint8_t *take(size_t size) {
    if (remaining() < size)
      return nullptr;
    const uint8_t *at = bytes_.data() + pos_;
    pos_ += size;
    return at;
  }

private:
  const std::vector<uint8_t> &bytes_;
  size_t pos_ = 0;
};

Status bad(const Reader &reader, const std::string &message) {
  return Status::error("invalid SPIR-V container: " + message + " at byte offset " +
                       std::to_string(reader.offset()));
}
} // namespace

StatusOr<std::vector<SpirvKernelBinary>>
decodeSpirvContainer(const std::vector<uint8_t> &bytes) {
  Reader reader(bytes);
  uint32_t magic = 0, version = 0, count = 0;
  if (!reader.u32(magic) || magic != kSpirvContainerMagic)
    return bad(reader, "it does not start with the magic \"KSPV\"");
  if (!reader.u32(version) || version != kSpirvContainerVersion)
    return bad(reader, "version " + std::to_string(version) + ", this runtime reads " +
                           std::to_string(kSpirvContainerVersion));
  if (!reader.u32(count))
    return bad(reader, "truncated before the kernel count");
  // Each kernel takes at least 8 bytes (two counts).
  if (count > reader.remaining() / 8)
    return bad(reader, std::to_string(count) + " kernels cannot fit in " +
                           std::to_string(reader.remaining()) + " bytes");
  std::vector<SpirvKernelBinary> kernels(count);
  for (uint32_t i = 0; i < count; ++i) {
    std::string which = "kernel " + std::to_string(i);
    uint32_t nameBytes = 0;
    if (!reader.u32(nameBytes))
      return bad(reader, which + ": truncated before its name");
    size_t padded = (size_t(nameBytes) + 3) / 4 * 4;
    const uint8_t *name = reader.take(padded);
    if (!name)
      return bad(reader, which + ": a name of " + std::to_string(nameBytes) +
                             " bytes overruns the container");
    if (nameBytes == 0)
      return bad(reader, which + ": an empty entry-point name");
    kernels[i].entryPoint.assign(reinterpret_cast<const char *>(name), nameBytes);
    which += " ('" + kernels[i].entryPoint + "')";
    uint32_t wordCount = 0;
    if (!reader.u32(wordCount))
      return bad(reader, which + ": truncated before its word count");
    if (wordCount > reader.remaining() / 4)
      return bad(reader, which + ": " + std::to_string(wordCount) +
                             " words overrun the container");
    size_t moduleAt = reader.offset();
    kernels[i].words.resize(wordCount);
    for (uint32_t &word : kernels[i].words)
      (void)reader.u32(word);
    // A module is at least its 5-word header.
    if (wordCount < 5 || kernels[i].words[0] != kSpirvMagic)
      return Status::error("invalid SPIR-V container: " + which +
                           ": its module is not SPIR-V (no magic 0x07230203 at byte offset " +
                           std::to_string(moduleAt) + ")");
  }
  if (reader.remaining() != 0)
    return bad(reader, std::to_string(reader.remaining()) + " bytes after the last kernel");
  return kernels;
}

/// SPIR-V opcodes and operands read here (SPIR-V spec, section 3).
constexpr uint32_t kOpEntryPoint = 15;
constexpr uint32_t kOpExecutionMode = 16;
constexpr uint32_t kExecutionModeLocalSize = 17;
constexpr uint32_t kOpCapability = 17;
constexpr size_t kSpirvHeaderWords = 5;

/// Byte `i` of the literal string at `words[at]`: SPIR-V packs string bytes
/// little-endian into words, whatever the host's byte order.
static char literalByte(const std::vector<uint32_t> &words, size_t at, size_t i) {
  return static_cast<char>(words[at + i / 4] >> (8 * (i % 4)));
}

/// Whether the NUL-terminated literal string at `words[at]`, within
/// [at, end), is `name`.
static bool literalEquals(const std::vector<uint32_t> &words, size_t at, size_t end,
                          std::string_view name) {
  if (name.size() >= (end - at) * 4) // no room for the NUL
    return false;
  for (size_t i = 0; i < name.size(); ++i)
    if (literalByte(words, at, i) != name[i])
      return false;
  return literalByte(words, at, name.size()) == '\0';
}

std::optional<BlockSize> spirvLocalSize(const std::vector<uint32_t> &words,
                                        std::string_view entryPoint) {
  if (words.size() < kSpirvHeaderWords || words[0] != kSpirvMagic)
    return std::nullopt;
  // Entry points precede execution modes (the module layout of section 2.4),
  // so one pass finds the function, then its mode.
  std::optional<uint32_t> function;
  for (size_t at = kSpirvHeaderWords; at < words.size();) {
    uint32_t opcode = words[at] & 0xFFFF, length = words[at] >> 16;
    if (length == 0 || length > words.size() - at)
      return std::nullopt;
    size_t end = at + length;
    if (opcode == kOpEntryPoint && length >= 4 && !function &&
        literalEquals(words, at + 3, end, entryPoint)) {
      function = words[at + 2];
    } else if (opcode == kOpExecutionMode && length == 6 && function &&
               words[at + 1] == *function && words[at + 2] == kExecutionModeLocalSize) {
      return BlockSize{words[at + 3], words[at + 4], words[at + 5]};
    }
    at = end;
  }
  return std::nullopt;
}

std::vector<uint32_t> spirvCapabilities(const std::vector<uint32_t> &words) {
  std::vector<uint32_t> capabilities;
  if (words.size() < kSpirvHeaderWords || words[0] != kSpirvMagic)
    return capabilities;
  // Capabilities come first in a module (section 2.4): stop at the first
  // instruction of any other kind.
  for (size_t at = kSpirvHeaderWords; at < words.size();) {
    uint32_t opcode = words[at] & 0xFFFF, length = words[at] >> 16;
    if (length == 0 || length > words.size() - at || opcode != kOpCapability)
      break;
    if (length == 2)
      capabilities.push_back(words[at + 1]);
    at += length;
  }
  return capabilities;
}

} // namespace kiln::runtime
