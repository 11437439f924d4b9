// Compiles a kiln_graph module to an artifact the way a user's would travel:
// through its bytes.
#ifndef KILN_UNITTESTS_COMPILER_COMPILEFORTEST_H
#define KILN_UNITTESTS_COMPILER_COMPILEFORTEST_H

#include "kiln/Compiler/Compiler.h"
#include "kiln/runtime/Runtime.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

namespace kiln::testing {

inline runtime::Artifact compileForTest(llvm::StringRef source) {
  mlir::MLIRContext context;
  loadCompilerDialects(context);
  auto module = mlir::parseSourceString<mlir::ModuleOp>(source, &context);
  EXPECT_TRUE(module);
  if (!module)
    return {};
  auto compiled = compileGraphModule(*module, {});
  if (!compiled) {
    ADD_FAILURE() << llvm::toString(compiled.takeError());
    return {};
  }
  std::vector<uint8_t> bytes = runtime::serializeArtifact(compiled->artifact);
  runtime::Artifact artifact;
  runtime::Status status = runtime::parseArtifact(bytes.data(), bytes.size(), artifact);
  EXPECT_TRUE(status.ok()) << status.message();
  return artifact;
}

/// A CPU device with `threads` threads, from the runtime's driver registry.
inline std::unique_ptr<runtime::Device> cpuDevice(int threads) {
  runtime::DeviceOptions options;
  options.numThreads = threads;
  auto device = runtime::createDevice("cpu", options);
  EXPECT_TRUE(device.ok()) << device.status().message();
  return device.ok() ? std::move(*device) : nullptr;
}

} // namespace kiln::testing

#endif
