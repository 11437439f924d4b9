//===- DTypeTest.cpp - DType, TensorDesc and Status -----------------------===//

#include "kiln/runtime/DType.h"
#include "kiln/runtime/Status.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

using namespace kiln::runtime;

TEST(DTypeTest, SizesAndNames) {
  EXPECT_EQ(dtypeSize(DType::F32), 4u);
  EXPECT_EQ(dtypeSize(DType::I64), 8u);
  EXPECT_EQ(dtypeSize(DType::Bool), 1u);
  EXPECT_EQ(dtypeSize(DType::F64), 8u);
  EXPECT_EQ(dtypeSize(DType::I32), 4u);
  EXPECT_EQ(dtypeSize(DType::I8), 1u);
  EXPECT_EQ(dtypeSize(DType::U8), 1u);
  EXPECT_STREQ(dtypeName(DType::U8), "uint8");
  EXPECT_EQ(dtypeSize(DType::F16), 2u);
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_STREQ(dtypeName(DType::BF16), "bfloat16");
  for (DType dtype : kAllDTypes) {
    DType parsed = DType::Bool;
    ASSERT_TRUE(parseDType(dtypeName(dtype), parsed)) << dtypeName(dtype);
    EXPECT_EQ(parsed, dtype);
    EXPECT_TRUE(isKnownDType(static_cast<uint8_t>(dtype)));
  }
  DType untouched = DType::I32;
  EXPECT_FALSE(parseDType("complex64", untouched));
  EXPECT_EQ(untouched, DType::I32);
  EXPECT_FALSE(isKnownDType(9));
}

TEST(DTypeTest, HalfAndBFloat16RoundToNearestEven) {
  // Exact values round-trip; ties go to the even neighbour; overflow goes
  // to infinity; subnormals and NaN survive.
  for (float v : {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 0x1p-14f, 0x1p-24f, 0x3p-24f})
    EXPECT_EQ(halfToFloat(floatToHalf(v)), v) << v;
  EXPECT_EQ(halfToFloat(floatToHalf(1.0f + 0x1p-11f)), 1.0f);                  // tie, to even
  EXPECT_EQ(halfToFloat(floatToHalf(1.0f + 0x3p-11f)), 1.0f + 0x1p-9f);        // tie, to even
  EXPECT_EQ(halfToFloat(floatToHalf(1.0f + 0x1p-11f + 0x1p-20f)), 1.0f + 0x1p-10f);
  EXPECT_EQ(halfToFloat(floatToHalf(65519.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(halfToFloat(floatToHalf(65520.0f))));
  EXPECT_EQ(halfToFloat(floatToHalf(0x1p-25f)), 0.0f);                         // tie, to even
  EXPECT_EQ(halfToFloat(floatToHalf(0x3p-25f)), 0x1p-23f);                     // tie, to even
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(NAN))));
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);

  for (float v : {0.0f, 1.0f, -3.0f, 0x1p-130f, 0x1.5p127f})
    EXPECT_EQ(bfloat16ToFloat(floatToBFloat16(v)), v) << v;
  EXPECT_EQ(bfloat16ToFloat(floatToBFloat16(1.0f + 0x1p-8f)), 1.0f);            // tie, to even
  EXPECT_EQ(bfloat16ToFloat(floatToBFloat16(1.0f + 0x3p-8f)), 1.0f + 0x1p-6f);  // tie, to even
  EXPECT_EQ(bfloat16ToFloat(floatToBFloat16(1.0f + 0x1p-8f + 0x1p-20f)), 1.0f + 0x1p-7f);
  EXPECT_TRUE(std::isinf(bfloat16ToFloat(floatToBFloat16(3.4e38f))));
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(floatToBFloat16(NAN))));
  EXPECT_EQ(floatToBFloat16(1.0f), 0x3f80);
}

TEST(DTypeTest, TensorDesc) {
  TensorDesc desc{DType::F32, {8, 256}};
  EXPECT_EQ(desc.numElements(), 2048);
  EXPECT_EQ(desc.byteSize(), 8192);
  EXPECT_EQ(desc.str(), "float32[8x256]");
  EXPECT_EQ((TensorDesc{DType::Bool, {}}).str(), "bool[]");
  EXPECT_EQ((TensorDesc{DType::Bool, {}}).byteSize(), 1);
  EXPECT_EQ(desc, (TensorDesc{DType::F32, {8, 256}}));
  EXPECT_NE(desc, (TensorDesc{DType::I32, {8, 256}}));
  EXPECT_NE(desc, (TensorDesc{DType::F32, {256, 8}}));
}

TEST(DTypeTest, ValidateTensorDesc) {
  EXPECT_TRUE(validateTensorDesc({DType::F64, {3, 0, 5}}).ok());
  EXPECT_FALSE(validateTensorDesc({DType::F32, {3, -1}}).ok());
  EXPECT_FALSE(validateTensorDesc({DType::F32, {INT64_MAX / 2, 2}}).ok());
  // A zero dimension after huge ones must not hide an overflowing prefix.
  EXPECT_FALSE(validateTensorDesc({DType::I64, {1ll << 40, 1ll << 40, 0}}).ok());
}

TEST(StatusTest, OkAndError) {
  Status ok = Status::OK();
  EXPECT_TRUE(ok.ok());
  EXPECT_TRUE(ok.withContext("ignored").ok());

  Status error = Status::error("no such file");
  EXPECT_FALSE(error.ok());
  EXPECT_EQ(error.withContext("reading 'x'").message(),
            "reading 'x': no such file");
}

TEST(StatusTest, StatusOr) {
  StatusOr<std::unique_ptr<int>> value(std::make_unique<int>(7));
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(**value, 7);
  std::unique_ptr<int> taken = std::move(value).value();
  EXPECT_EQ(*taken, 7);

  StatusOr<int> error(Status::error("bad"));
  EXPECT_FALSE(error.ok());
  EXPECT_EQ(error.status().message(), "bad");

  StatusOr<int> misuse(Status::OK());
  EXPECT_FALSE(misuse.ok());
  EXPECT_FALSE(misuse.status().ok());
}
