#include "kiln/Target/Target.h"
#include "kiln/Target/Passes.h"

#include "llvm/ADT/StringExtras.h"

#include <mutex>

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_ATTACHTARGETPASS
#include "kiln/Target/Passes.h.inc"
} // namespace kiln

kiln::Target::~Target() = default;

namespace {

std::mutex &registryMutex() {
  static std::mutex mutex;
  return mutex;
}

std::vector<kiln::TargetRegistry::Kind> &registered() {
  static std::vector<kiln::TargetRegistry::Kind> kinds;
  return kinds;
}

} // namespace

void kiln::TargetRegistry::add(Kind kind) {
  std::lock_guard<std::mutex> lock(registryMutex());
  for (Kind &known : registered())
    if (known.kind == kind.kind) {
      known = std::move(kind);
      return;
    }
  registered().push_back(std::move(kind));
}

kiln::PipelineStage kiln::linalgKernelStage() {
  return {"linalg", "kiln-extract-kernels,convert-kiln-graph-to-linalg,func.func(linalg-generalize-named-ops,"
                    "kiln-fuse-elementwise),canonicalize,cse,func.func(kiln-mark-in-place-operands)"};
}

std::vector<kiln::PipelineStage> kiln::gpuKernelStages(bool subgroupReductions,
                                                       llvm::StringRef warpMma) {
  std::string map = "kiln-gpu-map-workgroups{subgroups=" +
                    std::string(subgroupReductions ? "true" : "false") +
                    " warp-mma=" + (warpMma.empty() ? "none" : warpMma.str()) + "}";
  return {
      linalgKernelStage(),
      {"bufferized", "kiln-bufferize-kernels,canonicalize,cse"},
      {"gpu", "func.func(kiln-gpu-lower-kernel-ops,kiln-gpu-prepare-kernels,"
              "convert-linalg-to-parallel-loops,kiln-lower-sort{parallel-steps=true}," + map +
                  "),kiln-approximate-math{libm-calls=false},canonicalize,cse"},
  };
}

std::vector<kiln::TargetRegistry::Kind> kiln::TargetRegistry::kinds() {
  std::lock_guard<std::mutex> lock(registryMutex());
  return registered();
}

llvm::Expected<std::unique_ptr<kiln::Target>> kiln::TargetRegistry::parse(llvm::StringRef name) {
  std::vector<Kind> all = kinds();
  if (all.empty())
    return llvm::createStringError("no targets are registered (kiln::registerAllTargets())");
  llvm::StringRef kind = name.split(':').first;
  for (const Kind &known : all)
    if (known.kind == kind)
      return known.parse(name);
  std::vector<std::string> accepted;
  for (const Kind &known : all)
    accepted.push_back(known.help);
  return llvm::createStringError("unknown target '" + name.str() + "': expected " +
                                 llvm::join(accepted, "; or "));
}

namespace {

struct AttachTargetPass : kiln::impl::AttachTargetPassBase<AttachTargetPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (target.empty()) {
      module.emitError("kiln-attach-target needs a target name (target=cpu:x86-64-v3)");
      return signalPassFailure();
    }
    auto parsed = kiln::TargetRegistry::parse(target);
    if (!parsed) {
      module.emitError(llvm::toString(parsed.takeError()));
      return signalPassFailure();
    }
    module->setAttr(kiln::kernel::KernelDialect::kTargetAttrName,
                    (*parsed)->describe(*module.getContext()));
  }
};

} // namespace
