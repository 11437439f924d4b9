//===- DTypeTest.cpp - DType, TensorDesc and Status -----------------------===//

#include "kiln/runtime/DType.h"
#include "kiln/runtime/Status.h"

#include <gtest/gtest.h>

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
  for (DType dtype : {DType::F32, DType::I64, DType::Bool, DType::F64, DType::I32,
                      DType::I8, DType::U8}) {
    DType parsed = DType::Bool;
    ASSERT_TRUE(parseDType(dtypeName(dtype), parsed)) << dtypeName(dtype);
    EXPECT_EQ(parsed, dtype);
  }
  DType untouched = DType::I32;
  EXPECT_FALSE(parseDType("float16", untouched));
  EXPECT_EQ(untouched, DType::I32);
  EXPECT_TRUE(isKnownDType(6));
  EXPECT_FALSE(isKnownDType(7));
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
