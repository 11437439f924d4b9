//===- Npy.cpp - NumPy .npy files and .npz archives -----------------------===//
//
// References: numpy/lib/format.py (the .npy format) and PKWARE's APPNOTE.TXT
// (ZIP, including the ZIP64 extensions numpy.savez relies on).
//
//===----------------------------------------------------------------------===//

#include "kiln/tooling/Npy.h"

#include "FileUtil.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>
#include <string_view>
#include <utility>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "Npy.cpp copies little-endian array data as is: it needs such a host"
#endif

namespace kiln::runtime {

namespace {

//===----------------------------------------------------------------------===//
// Bytes
//===----------------------------------------------------------------------===//

uint64_t readLE(const uint8_t *p, int width) {
  uint64_t value = 0;
  for (int i = 0; i < width; ++i)
    value |= static_cast<uint64_t>(p[i]) << (8 * i);
  return value;
}
uint16_t le16(const uint8_t *p) { return static_cast<uint16_t>(readLE(p, 2)); }
uint32_t le32(const uint8_t *p) { return static_cast<uint32_t>(readLE(p, 4)); }
uint64_t le64(const uint8_t *p) { return readLE(p, 8); }

void appendLE(std::vector<uint8_t> &out, uint64_t value, int width) {
  for (int i = 0; i < width; ++i)
    out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}
void appendBytes(std::vector<uint8_t> &out, const void *data, size_t size) {
  const auto *begin = static_cast<const uint8_t *>(data);
  out.insert(out.end(), begin, begin + size);
}

/// True when [offset, offset + length) lies within the first `size` bytes;
/// written so that no sum can overflow, whatever a corrupt file claims.
bool fits(uint64_t offset, uint64_t length, uint64_t size) {
  return offset <= size && length <= size - offset;
}

std::string hex32(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%08x", value);
  return text;
}

constexpr std::array<uint32_t, 256> makeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k)
      c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrcTable = makeCrcTable();

/// The CRC-32 that ZIP records for every member (the zlib/PNG polynomial).
uint32_t crc32(const uint8_t *data, size_t size) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i)
    crc = kCrcTable[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

constexpr uint8_t kNpyMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr size_t kNpyAlign = 64;
/// numpy leaves room in the header for the first dimension to grow to this
/// many digits, so arrays can be appended to in place; matching it makes our
/// files byte-identical to np.save's.
constexpr size_t kGrowthAxisMaxDigits = 21;

struct NpyDType {
  DType dtype;
  const char *descr;
};
constexpr NpyDType kNpyDTypes[] = {{DType::F32, "<f4"},
                                   {DType::F64, "<f8"},
                                   {DType::I64, "<i8"},
                                   {DType::I32, "<i4"},
                                   {DType::I8, "|i1"},
                                   {DType::U8, "|u1"},
                                   {DType::Bool, "|b1"},
                                   {DType::F16, "<f2"}};

const char *npyDescr(DType dtype) {
  for (const NpyDType &entry : kNpyDTypes)
    if (entry.dtype == dtype)
      return entry.descr;
  return nullptr;
}

/// The header text made printable and short enough to quote in a message.
std::string quoteHeader(std::string_view text) {
  constexpr size_t kMaxQuoted = 100;
  std::string quoted;
  for (size_t i = 0; i < text.size() && i < kMaxQuoted; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    quoted += (c >= 0x20 && c < 0x7F) ? static_cast<char>(c) : '?';
  }
  while (!quoted.empty() && quoted.back() == ' ')
    quoted.pop_back();
  if (text.size() > kMaxQuoted)
    quoted += "...";
  return "\"" + quoted + "\"";
}

/// Parses the header, a Python dict literal such as
///   {'descr': '<f4', 'fortran_order': False, 'shape': (8, 256), }
/// padded with spaces and ended by a newline.
class NpyHeaderParser {
public:
  explicit NpyHeaderParser(std::string_view text) : text_(text) {}

  Status parse(TensorDesc &desc) {
    std::string descr;
    bool fortranOrder = false;
    std::vector<int64_t> shape;
    bool haveDescr = false, haveOrder = false, haveShape = false;

    skipSpace();
    if (!consume('{'))
      return error("expected '{'");
    skipSpace();
    while (!consume('}')) {
      std::string key;
      KILN_RETURN_IF_ERROR(parseString(key));
      skipSpace();
      if (!consume(':'))
        return error("expected ':' after '" + key + "'");
      skipSpace();
      bool *seen = nullptr;
      if (key == "descr") {
        if (peek() == '[')
          return Status::error("structured dtypes are not supported; the "
                               "header is " +
                               quoteHeader(text_));
        KILN_RETURN_IF_ERROR(parseString(descr));
        seen = &haveDescr;
      } else if (key == "fortran_order") {
        KILN_RETURN_IF_ERROR(parseBool(fortranOrder));
        seen = &haveOrder;
      } else if (key == "shape") {
        KILN_RETURN_IF_ERROR(parseShape(shape));
        seen = &haveShape;
      } else {
        return error("unexpected key '" + key + "'");
      }
      if (*seen)
        return error("duplicate key '" + key + "'");
      *seen = true;
      skipSpace();
      if (consume(','))
        skipSpace();
      else if (peek() != '}')
        return error("expected ',' or '}'");
    }
    skipSpace();
    if (pos_ != text_.size())
      return error("unexpected text after the dictionary");
    if (!haveDescr || !haveOrder || !haveShape)
      return error(std::string("missing key '") +
                   (!haveDescr ? "descr" : !haveOrder ? "fortran_order"
                                                      : "shape") +
                   "'");
    if (fortranOrder)
      return Status::error("Fortran-order arrays are not supported; save "
                           "np.ascontiguousarray(a) instead");
    return descFor(descr, std::move(shape), desc);
  }

private:
  static Status descFor(const std::string &descr, std::vector<int64_t> shape,
                        TensorDesc &desc) {
    for (const NpyDType &entry : kNpyDTypes) {
      if (descr == entry.descr) {
        desc = TensorDesc{entry.dtype, std::move(shape)};
        return Status::OK();
      }
    }
    if (!descr.empty() && descr[0] == '>')
      return Status::error("big-endian dtype '" + descr +
                           "' is not supported; convert with a.astype('<" +
                           descr.substr(1) + "')");
    return Status::error("unsupported dtype '" + descr +
                         "' (supported: <f4 <f8 <i8 <i4 |b1, i.e. float32 "
                         "float64 int64 int32 bool)");
  }

  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool consume(char c) {
    if (pos_ >= text_.size() || text_[pos_] != c)
      return false;
    ++pos_;
    return true;
  }
  void skipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
            text_[pos_] == '\r'))
      ++pos_;
  }

  Status error(const std::string &what) const {
    return Status::error("malformed .npy header: " + what + " at character " +
                         std::to_string(pos_) + " of " + quoteHeader(text_));
  }

  Status parseString(std::string &out) {
    char quote = peek();
    if (quote != '\'' && quote != '"')
      return error("expected a quoted string");
    size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos)
      return error("unterminated string");
    out.assign(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return Status::OK();
  }

  Status parseBool(bool &out) {
    for (bool value : {false, true}) {
      std::string_view word = value ? "True" : "False";
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        out = value;
        return Status::OK();
      }
    }
    return error("expected True or False");
  }

  Status parseShape(std::vector<int64_t> &shape) {
    if (!consume('('))
      return error("expected '(' to start the shape");
    skipSpace();
    while (!consume(')')) {
      if (peek() < '0' || peek() > '9')
        return error("expected a dimension");
      int64_t dim = 0;
      while (peek() >= '0' && peek() <= '9') {
        int digit = text_[pos_++] - '0';
        if (dim > (std::numeric_limits<int64_t>::max() - digit) / 10)
          return error("dimension too large");
        dim = dim * 10 + digit;
      }
      consume('L'); // Python 2 wrote longs as "3L".
      shape.push_back(dim);
      skipSpace();
      if (consume(','))
        skipSpace();
      else if (peek() != ')')
        return error("expected ',' or ')' in the shape");
    }
    return Status::OK();
  }

  std::string_view text_;
  size_t pos_ = 0;
};

std::string shapeRepr(const std::vector<int64_t> &shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      text += ", ";
    text += std::to_string(shape[i]);
  }
  if (shape.size() == 1)
    text += ',';
  return text + ")";
}

//===----------------------------------------------------------------------===//
// .npz (ZIP)
//===----------------------------------------------------------------------===//

constexpr uint32_t kLocalHeaderSig = 0x04034b50;
constexpr uint32_t kCentralHeaderSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr size_t kLocalHeaderSize = 30;
constexpr size_t kCentralHeaderSize = 46;
constexpr size_t kEndSize = 22;
constexpr size_t kZip64EndSize = 56;
constexpr size_t kZip64LocatorSize = 20;
constexpr size_t kMaxCommentSize = 0xFFFF;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint16_t kMethodStored = 0;
constexpr uint16_t kMethodDeflated = 8;
constexpr uint16_t kFlagEncrypted = 1 << 0;
constexpr uint16_t kFlagUtf8 = 1 << 11;
constexpr uint16_t kVersionDefault = 20; // 2.0
constexpr uint16_t kVersionZip64 = 45;   // 4.5
constexpr uint16_t kMadeByUnix = 3 << 8;
constexpr uint32_t kMax32 = 0xFFFFFFFFu;
constexpr uint16_t kMax16 = 0xFFFF;
constexpr uint16_t kDosDate1980 = (0 << 9) | (1 << 5) | 1; // as numpy.savez
constexpr uint32_t kRegularFile0644 = 0100644u << 16;
constexpr const char *kNpySuffix = ".npy";

struct ZipEntry {
  std::string name;
  uint16_t flags = 0;
  uint16_t method = 0;
  uint32_t crc = 0;
  uint64_t compressedSize = 0;
  uint64_t size = 0;
  uint64_t localOffset = 0;
};

struct CentralDirectory {
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t count = 0;
  uint64_t end = 0; // where the end records start: the directory stops here
};

Status readZip64End(const uint8_t *data, size_t locatorPos,
                    CentralDirectory &dir) {
  if (le32(data + locatorPos + 4) != 0 || le32(data + locatorPos + 16) > 1)
    return Status::error("multi-disk ZIP archives are not supported");
  uint64_t recordPos = le64(data + locatorPos + 8);
  if (!fits(recordPos, kZip64EndSize, locatorPos) ||
      le32(data + recordPos) != kZip64EndSig)
    return Status::error("no ZIP64 end of central directory record at the "
                         "byte offset its locator gives (" +
                         std::to_string(recordPos) + ")");
  const uint8_t *record = data + recordPos;
  if (le32(record + 16) != 0 || le32(record + 20) != 0 ||
      le64(record + 24) != le64(record + 32))
    return Status::error("multi-disk ZIP archives are not supported");
  dir.count = le64(record + 32);
  dir.size = le64(record + 40);
  dir.offset = le64(record + 48);
  dir.end = recordPos;
  return Status::OK();
}

Status findCentralDirectory(const uint8_t *data, size_t size,
                            CentralDirectory &dir) {
  // The end record is last, followed only by its comment; requiring the
  // comment to reach exactly to the end keeps signature bytes that happen to
  // occur in array data from being mistaken for it.
  size_t endPos = 0;
  bool found = false;
  if (size >= kEndSize) {
    size_t lowest = size - kEndSize > kMaxCommentSize
                        ? size - kEndSize - kMaxCommentSize
                        : 0;
    for (size_t pos = size - kEndSize + 1; pos-- > lowest;) {
      if (le32(data + pos) == kEndSig &&
          pos + kEndSize + le16(data + pos + 20) == size) {
        endPos = pos;
        found = true;
        break;
      }
    }
  }
  if (!found)
    return Status::error("not an .npz archive, or a truncated one: no ZIP end "
                         "of central directory record found");

  const uint8_t *end = data + endPos;
  if (endPos >= kZip64LocatorSize &&
      le32(data + endPos - kZip64LocatorSize) == kZip64LocatorSig)
    return readZip64End(data, endPos - kZip64LocatorSize, dir);

  if (le16(end + 4) != 0 || le16(end + 6) != 0 ||
      le16(end + 8) != le16(end + 10))
    return Status::error("multi-disk ZIP archives are not supported");
  dir.count = le16(end + 10);
  dir.size = le32(end + 12);
  dir.offset = le32(end + 16);
  dir.end = endPos;
  if (dir.count == kMax16 || dir.size == kMax32 || dir.offset == kMax32)
    return Status::error("the end of central directory record defers to "
                         "ZIP64, but there is no ZIP64 locator before it");
  return Status::OK();
}

/// Replaces the 32-bit fields that hold their maximum value with the 64-bit
/// values of the ZIP64 extra field, which lists exactly those, in order.
Status applyZip64Extra(const uint8_t *extra, size_t extraSize, bool needSize,
                       bool needCompressedSize, bool needOffset,
                       ZipEntry &entry) {
  if (!needSize && !needCompressedSize && !needOffset)
    return Status::OK();
  for (size_t pos = 0; pos + 4 <= extraSize;) {
    uint16_t id = le16(extra + pos);
    uint16_t fieldSize = le16(extra + pos + 2);
    if (!fits(pos + 4, fieldSize, extraSize))
      return Status::error("extra field runs past the end of its entry");
    if (id == kZip64ExtraId) {
      const uint8_t *field = extra + pos + 4;
      size_t used = 0;
      for (auto [needed, value] :
           {std::pair{needSize, &entry.size},
            std::pair{needCompressedSize, &entry.compressedSize},
            std::pair{needOffset, &entry.localOffset}}) {
        if (!needed)
          continue;
        if (!fits(used, 8, fieldSize))
          return Status::error("ZIP64 extra field is too short");
        *value = le64(field + used);
        used += 8;
      }
      return Status::OK();
    }
    pos += 4 + fieldSize;
  }
  return Status::error("32-bit size or offset fields say ZIP64, but there is "
                       "no ZIP64 extra field");
}

/// Parses the central directory entry at `pos` (within [0, dirEnd)) and
/// advances `pos` past it.
Status parseCentralEntry(const uint8_t *data, uint64_t dirEnd, uint64_t &pos,
                         ZipEntry &entry) {
  if (!fits(pos, kCentralHeaderSize, dirEnd))
    return Status::error("truncated: the entry needs " +
                         std::to_string(kCentralHeaderSize) +
                         " bytes at byte offset " + std::to_string(pos) +
                         ", past the end of the central directory");
  const uint8_t *header = data + pos;
  if (le32(header) != kCentralHeaderSig)
    return Status::error("bad signature " + hex32(le32(header)) +
                         " at byte offset " + std::to_string(pos));
  entry.flags = le16(header + 8);
  entry.method = le16(header + 10);
  entry.crc = le32(header + 16);
  entry.compressedSize = le32(header + 20);
  entry.size = le32(header + 24);
  uint16_t nameSize = le16(header + 28);
  uint16_t extraSize = le16(header + 30);
  uint16_t commentSize = le16(header + 32);
  uint16_t disk = le16(header + 34);
  entry.localOffset = le32(header + 42);
  uint64_t variableSize = uint64_t(nameSize) + extraSize + commentSize;
  if (!fits(pos + kCentralHeaderSize, variableSize, dirEnd))
    return Status::error("truncated: its name, extra field and comment run "
                         "past the end of the central directory");
  const uint8_t *name = header + kCentralHeaderSize;
  entry.name.assign(reinterpret_cast<const char *>(name), nameSize);
  Status status = applyZip64Extra(
      name + nameSize, extraSize, entry.size == kMax32,
      entry.compressedSize == kMax32, entry.localOffset == kMax32, entry);
  if (status.ok() && disk != 0 && disk != kMax16)
    status = Status::error("multi-disk ZIP archives are not supported");
  if (!status.ok())
    return status.withContext("member '" + entry.name + "'");
  pos += kCentralHeaderSize + variableSize;
  return Status::OK();
}

bool endsWith(const std::string &text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Locates, checks and decodes one member's .npy bytes; messages do not name
/// the member (the caller does).
Status readMember(const uint8_t *data, const CentralDirectory &dir,
                  const ZipEntry &entry, NamedArray &out) {
  if (entry.flags & kFlagEncrypted)
    return Status::error("encrypted members are not supported");
  if (entry.method == kMethodDeflated)
    return Status::error("compressed .npz (savez_compressed) is not "
                         "supported; use numpy.savez");
  if (entry.method != kMethodStored)
    return Status::error("ZIP compression method " +
                         std::to_string(entry.method) +
                         " is not supported; only stored (uncompressed) "
                         "members are, as numpy.savez writes them");
  if (entry.compressedSize != entry.size)
    return Status::error("a stored member's compressed size (" +
                         std::to_string(entry.compressedSize) +
                         ") differs from its size (" +
                         std::to_string(entry.size) + ")");
  if (!endsWith(entry.name, kNpySuffix) ||
      entry.name.size() == std::strlen(kNpySuffix))
    return Status::error("not a .npy file, so not an array numpy.savez wrote");

  // Members precede the central directory.
  if (!fits(entry.localOffset, kLocalHeaderSize, dir.offset) ||
      le32(data + entry.localOffset) != kLocalHeaderSig)
    return Status::error("no local file header at byte offset " +
                         std::to_string(entry.localOffset));
  const uint8_t *local = data + entry.localOffset;
  uint16_t nameSize = le16(local + 26);
  uint16_t extraSize = le16(local + 28);
  uint64_t dataOffset = entry.localOffset + kLocalHeaderSize + nameSize;
  if (!fits(dataOffset, extraSize, dir.offset) ||
      std::string_view(reinterpret_cast<const char *>(local) +
                           kLocalHeaderSize,
                       nameSize) != entry.name)
    return Status::error("the local file header at byte offset " +
                         std::to_string(entry.localOffset) +
                         " does not match the central directory");
  dataOffset += extraSize;
  if (!fits(dataOffset, entry.size, dir.offset))
    return Status::error("its " + std::to_string(entry.size) +
                         " bytes at byte offset " + std::to_string(dataOffset) +
                         " run past the start of the central directory");

  const uint8_t *member = data + dataOffset;
  size_t memberSize = static_cast<size_t>(entry.size);
  uint32_t crc = crc32(member, memberSize);
  if (crc != entry.crc)
    return Status::error("corrupt data: CRC-32 is " + hex32(crc) +
                         ", the archive records " + hex32(entry.crc));
  out.name = entry.name.substr(0, entry.name.size() - std::strlen(kNpySuffix));
  return parseNpy(member, memberSize, out);
}

struct ZipMember {
  std::string name;
  uint32_t crc;
  uint64_t size; // stored, so also the compressed size
  uint64_t offset; // of its local header
};

Status checkArrayToWrite(const NamedArray &array,
                         std::set<std::string> &names) {
  std::string context = "array '" + array.name + "'";
  if (array.name.empty())
    return Status::error("an array to write has an empty name");
  if (array.name.size() + std::strlen(kNpySuffix) > kMax16)
    return Status::error(context + ": name too long for a ZIP archive");
  if (!names.insert(array.name).second)
    return Status::error(context + ": name used twice");
  KILN_RETURN_IF_ERROR(validateTensorDesc(array.desc).withContext(context));
  if (static_cast<uint64_t>(array.desc.byteSize()) != array.data.size())
    return Status::error(context + ": " + array.desc.str() + " needs " +
                         std::to_string(array.desc.byteSize()) +
                         " bytes, but it has " +
                         std::to_string(array.data.size()));
  return Status::OK();
}

/// Names with bytes beyond ASCII are UTF-8, which ZIP records in a flag.
uint16_t nameFlags(const std::string &name) {
  for (unsigned char c : name)
    if (c >= 0x80)
      return kFlagUtf8;
  return 0;
}

void appendLocalHeader(std::vector<uint8_t> &bytes, const ZipMember &member,
                       bool forceZip64) {
  // A local header's ZIP64 extra field carries both sizes.
  bool zip64 = forceZip64 || member.size >= kMax32;
  appendLE(bytes, kLocalHeaderSig, 4);
  appendLE(bytes, zip64 ? kVersionZip64 : kVersionDefault, 2);
  appendLE(bytes, nameFlags(member.name), 2);
  appendLE(bytes, kMethodStored, 2);
  appendLE(bytes, 0, 2); // time 00:00:00
  appendLE(bytes, kDosDate1980, 2);
  appendLE(bytes, member.crc, 4);
  appendLE(bytes, zip64 ? kMax32 : member.size, 4); // compressed size
  appendLE(bytes, zip64 ? kMax32 : member.size, 4); // size
  appendLE(bytes, member.name.size(), 2);
  appendLE(bytes, zip64 ? 4 + 16 : 0, 2);
  appendBytes(bytes, member.name.data(), member.name.size());
  if (zip64) {
    appendLE(bytes, kZip64ExtraId, 2);
    appendLE(bytes, 16, 2);
    appendLE(bytes, member.size, 8);
    appendLE(bytes, member.size, 8);
  }
}

void appendCentralEntry(std::vector<uint8_t> &bytes, const ZipMember &member,
                        bool forceZip64) {
  // Here the ZIP64 field holds only the values too big for their 32-bit
  // fields.
  bool bigSize = forceZip64 || member.size >= kMax32;
  bool bigOffset = forceZip64 || member.offset >= kMax32;
  uint16_t extraSize =
      (bigSize || bigOffset) ? 4 + 16 * bigSize + 8 * bigOffset : 0;
  uint16_t version = extraSize ? kVersionZip64 : kVersionDefault;
  appendLE(bytes, kCentralHeaderSig, 4);
  appendLE(bytes, kMadeByUnix | version, 2);
  appendLE(bytes, version, 2);
  appendLE(bytes, nameFlags(member.name), 2);
  appendLE(bytes, kMethodStored, 2);
  appendLE(bytes, 0, 2);
  appendLE(bytes, kDosDate1980, 2);
  appendLE(bytes, member.crc, 4);
  appendLE(bytes, bigSize ? kMax32 : member.size, 4);
  appendLE(bytes, bigSize ? kMax32 : member.size, 4);
  appendLE(bytes, member.name.size(), 2);
  appendLE(bytes, extraSize, 2);
  appendLE(bytes, 0, 2); // comment size
  appendLE(bytes, 0, 2); // disk
  appendLE(bytes, 0, 2); // internal attributes
  appendLE(bytes, kRegularFile0644, 4);
  appendLE(bytes, bigOffset ? kMax32 : member.offset, 4);
  appendBytes(bytes, member.name.data(), member.name.size());
  if (extraSize) {
    appendLE(bytes, kZip64ExtraId, 2);
    appendLE(bytes, extraSize - 4, 2);
    if (bigSize) {
      appendLE(bytes, member.size, 8);
      appendLE(bytes, member.size, 8);
    }
    if (bigOffset)
      appendLE(bytes, member.offset, 8);
  }
}

void appendEndRecords(std::vector<uint8_t> &bytes, uint64_t count,
                      uint64_t dirOffset, uint64_t dirSize, bool forceZip64) {
  bool zip64 = forceZip64 || count >= kMax16 || dirSize >= kMax32 ||
               dirOffset >= kMax32;
  if (zip64) {
    uint64_t recordOffset = bytes.size();
    appendLE(bytes, kZip64EndSig, 4);
    appendLE(bytes, kZip64EndSize - 12, 8); // the size of what follows
    appendLE(bytes, kMadeByUnix | kVersionZip64, 2);
    appendLE(bytes, kVersionZip64, 2);
    appendLE(bytes, 0, 4); // this disk
    appendLE(bytes, 0, 4); // the central directory's disk
    appendLE(bytes, count, 8);
    appendLE(bytes, count, 8);
    appendLE(bytes, dirSize, 8);
    appendLE(bytes, dirOffset, 8);
    appendLE(bytes, kZip64LocatorSig, 4);
    appendLE(bytes, 0, 4); // the ZIP64 end record's disk
    appendLE(bytes, recordOffset, 8);
    appendLE(bytes, 1, 4); // disks in all
  }
  appendLE(bytes, kEndSig, 4);
  appendLE(bytes, 0, 2); // this disk
  appendLE(bytes, 0, 2); // the central directory's disk
  appendLE(bytes, zip64 ? kMax16 : count, 2);
  appendLE(bytes, zip64 ? kMax16 : count, 2);
  appendLE(bytes, zip64 ? kMax32 : dirSize, 4);
  appendLE(bytes, zip64 ? kMax32 : dirOffset, 4);
  appendLE(bytes, 0, 2); // comment size
}

/// The file name without its directory and without a ".npy" suffix.
std::string arrayNameFromPath(const std::string &path) {
  size_t slash = path.rfind('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (endsWith(name, kNpySuffix) && name.size() > std::strlen(kNpySuffix))
    name.resize(name.size() - std::strlen(kNpySuffix));
  return name;
}

bool startsLike(const uint8_t *data, size_t size, const uint8_t *magic,
                size_t magicSize) {
  return size > 0 && std::memcmp(data, magic, std::min(size, magicSize)) == 0;
}

} // namespace

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

StatusOr<std::vector<uint8_t>> serializeNpy(const TensorDesc &desc,
                                            const void *data) {
  KILN_RETURN_IF_ERROR(validateTensorDesc(desc));
  const char *descr = npyDescr(desc.dtype);
  if (!descr)
    return Status::error("no .npy dtype for " + desc.str());
  std::string header = std::string("{'descr': '") + descr +
                       "', 'fortran_order': False, 'shape': " +
                       shapeRepr(desc.shape) + ", }";
  if (!desc.shape.empty())
    header.append(kGrowthAxisMaxDigits -
                      std::min(kGrowthAxisMaxDigits,
                               std::to_string(desc.shape[0]).size()),
                  ' ');
  // As numpy: pad with spaces and a final newline so the data starts on a
  // 64-byte boundary, using format 2.0 only when 1.0's 16-bit length cannot
  // hold the header.
  uint8_t major = 1;
  size_t prefixSize = sizeof(kNpyMagic) + 2 + 2;
  size_t headerSize = header.size() + 1;
  size_t padding = kNpyAlign - (prefixSize + headerSize) % kNpyAlign;
  if (headerSize + padding > 0xFFFF) {
    major = 2;
    prefixSize = sizeof(kNpyMagic) + 2 + 4;
    padding = kNpyAlign - (prefixSize + headerSize) % kNpyAlign;
  }
  header.append(padding, ' ');
  header += '\n';

  size_t dataSize = static_cast<size_t>(desc.byteSize());
  std::vector<uint8_t> bytes;
  bytes.reserve(prefixSize + header.size() + dataSize);
  appendBytes(bytes, kNpyMagic, sizeof(kNpyMagic));
  bytes.push_back(major);
  bytes.push_back(0);
  appendLE(bytes, header.size(), major == 1 ? 2 : 4);
  appendBytes(bytes, header.data(), header.size());
  if (dataSize)
    appendBytes(bytes, data, dataSize);
  return bytes;
}

Status parseNpy(const uint8_t *data, size_t size, NamedArray &out) {
  constexpr size_t kMagicAndVersion = sizeof(kNpyMagic) + 2;
  if (size == 0)
    return Status::error("empty file");
  if (!startsLike(data, size, kNpyMagic, sizeof(kNpyMagic)))
    return Status::error("not a .npy file: it does not start with the "
                         "\\x93NUMPY magic");
  if (size < kMagicAndVersion + 2)
    return Status::error("truncated: " + std::to_string(size) +
                         " bytes is too short for a .npy preamble");
  uint8_t major = data[6], minor = data[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    return Status::error("unsupported .npy format version " +
                         std::to_string(major) + "." + std::to_string(minor) +
                         " (supported: 1.0, 2.0, 3.0)");
  size_t lengthBytes = major == 1 ? 2 : 4;
  if (size < kMagicAndVersion + lengthBytes)
    return Status::error("truncated: " + std::to_string(size) +
                         " bytes is too short for a .npy preamble");
  uint64_t headerSize = readLE(data + kMagicAndVersion,
                               static_cast<int>(lengthBytes));
  uint64_t headerOffset = kMagicAndVersion + lengthBytes;
  if (!fits(headerOffset, headerSize, size))
    return Status::error("truncated: the " + std::to_string(headerSize) +
                         "-byte header runs past the end (" +
                         std::to_string(size) + " bytes)");

  TensorDesc desc;
  std::string_view headerText(reinterpret_cast<const char *>(data) +
                                  headerOffset,
                              static_cast<size_t>(headerSize));
  KILN_RETURN_IF_ERROR(NpyHeaderParser(headerText).parse(desc));
  KILN_RETURN_IF_ERROR(validateTensorDesc(desc));

  uint64_t dataOffset = headerOffset + headerSize;
  uint64_t available = size - dataOffset;
  uint64_t needed = static_cast<uint64_t>(desc.byteSize());
  if (available < needed)
    return Status::error("truncated: " + desc.str() + " needs " +
                         std::to_string(needed) +
                         " bytes of data, but only " +
                         std::to_string(available) + " follow the header");
  if (available > needed)
    return Status::error(std::to_string(available - needed) +
                         " unexpected bytes after the " +
                         std::to_string(needed) + " bytes of " + desc.str() +
                         " data");
  const uint8_t *elements = data + dataOffset;
  if (desc.dtype == DType::Bool) {
    // Kernels assume a bool is exactly 0 or 1.
    for (uint64_t i = 0; i < needed; ++i)
      if (elements[i] > 1)
        return Status::error("bool element " + std::to_string(i) +
                             " has byte value " + std::to_string(elements[i]) +
                             "; expected 0 or 1");
  }
  out.desc = std::move(desc);
  out.data.assign(elements, elements + needed);
  return Status::OK();
}

//===----------------------------------------------------------------------===//
// .npz
//===----------------------------------------------------------------------===//

StatusOr<std::vector<uint8_t>>
serializeNpz(const std::vector<NamedArray> &arrays, bool forceZip64) {
  std::vector<ZipMember> members;
  std::set<std::string> names;
  std::vector<uint8_t> bytes;
  for (const NamedArray &array : arrays) {
    KILN_RETURN_IF_ERROR(checkArrayToWrite(array, names));
    StatusOr<std::vector<uint8_t>> npy =
        serializeNpy(array.desc, array.data.data());
    if (!npy.ok())
      return npy.status().withContext("array '" + array.name + "'");
    ZipMember member{array.name + kNpySuffix, crc32(npy->data(), npy->size()),
                     npy->size(), bytes.size()};
    appendLocalHeader(bytes, member, forceZip64);
    appendBytes(bytes, npy->data(), npy->size());
    members.push_back(std::move(member));
  }
  uint64_t dirOffset = bytes.size();
  for (const ZipMember &member : members)
    appendCentralEntry(bytes, member, forceZip64);
  appendEndRecords(bytes, members.size(), dirOffset, bytes.size() - dirOffset,
                   forceZip64);
  return bytes;
}

Status parseNpz(const uint8_t *data, size_t size,
                std::vector<NamedArray> &out) {
  CentralDirectory dir;
  KILN_RETURN_IF_ERROR(findCentralDirectory(data, size, dir));
  if (!fits(dir.offset, dir.size, dir.end))
    return Status::error("the central directory (" + std::to_string(dir.size) +
                         " bytes at byte offset " + std::to_string(dir.offset) +
                         ") does not end before the end records at byte " +
                         std::to_string(dir.end));
  // Checked before reserving, so a corrupt count cannot reserve gigabytes.
  if (dir.count > dir.size / kCentralHeaderSize)
    return Status::error("the central directory (" + std::to_string(dir.size) +
                         " bytes) is too small for the " +
                         std::to_string(dir.count) + " members it claims");

  std::vector<ZipEntry> entries(static_cast<size_t>(dir.count));
  uint64_t pos = dir.offset;
  for (size_t i = 0; i < entries.size(); ++i)
    KILN_RETURN_IF_ERROR(
        parseCentralEntry(data, dir.offset + dir.size, pos, entries[i])
            .withContext("central directory entry " + std::to_string(i)));

  std::vector<NamedArray> arrays(entries.size());
  for (size_t i = 0; i < entries.size(); ++i)
    KILN_RETURN_IF_ERROR(readMember(data, dir, entries[i], arrays[i])
                             .withContext("member '" + entries[i].name + "'"));
  out = std::move(arrays);
  return Status::OK();
}

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

Status readNpy(const std::string &path, NamedArray &out) {
  std::vector<uint8_t> bytes;
  KILN_RETURN_IF_ERROR(readFileBytes(path, bytes).withContext(path));
  NamedArray array;
  array.name = arrayNameFromPath(path);
  KILN_RETURN_IF_ERROR(
      parseNpy(bytes.data(), bytes.size(), array).withContext(path));
  out = std::move(array);
  return Status::OK();
}

Status readNpz(const std::string &path, std::vector<NamedArray> &out) {
  std::vector<uint8_t> bytes;
  KILN_RETURN_IF_ERROR(readFileBytes(path, bytes).withContext(path));
  return parseNpz(bytes.data(), bytes.size(), out).withContext(path);
}

Status readArrays(const std::string &path, std::vector<NamedArray> &out) {
  static constexpr uint8_t kZipMagic[2] = {'P', 'K'};
  std::vector<uint8_t> bytes;
  KILN_RETURN_IF_ERROR(readFileBytes(path, bytes).withContext(path));
  if (startsLike(bytes.data(), bytes.size(), kNpyMagic, sizeof(kNpyMagic))) {
    NamedArray array;
    array.name = arrayNameFromPath(path);
    KILN_RETURN_IF_ERROR(
        parseNpy(bytes.data(), bytes.size(), array).withContext(path));
    out.clear();
    out.push_back(std::move(array));
    return Status::OK();
  }
  if (startsLike(bytes.data(), bytes.size(), kZipMagic, sizeof(kZipMagic)))
    return parseNpz(bytes.data(), bytes.size(), out).withContext(path);
  return Status::error(path + ": " +
                       (bytes.empty() ? std::string("empty file")
                                      : "neither a .npy file nor an .npz "
                                        "archive"));
}

Status writeNpy(const std::string &path, const TensorDesc &desc,
                const void *data) {
  StatusOr<std::vector<uint8_t>> bytes = serializeNpy(desc, data);
  if (!bytes.ok())
    return bytes.status().withContext(path);
  return writeFileAtomically(path, *bytes).withContext(path);
}

Status writeNpz(const std::string &path,
                const std::vector<NamedArray> &arrays) {
  StatusOr<std::vector<uint8_t>> bytes = serializeNpz(arrays);
  if (!bytes.ok())
    return bytes.status().withContext(path);
  return writeFileAtomically(path, *bytes).withContext(path);
}

} // namespace kiln::runtime
