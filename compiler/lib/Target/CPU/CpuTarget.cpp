// The CPU target: its names, its description and its backend (the kernel
// stages down to the LLVM dialect, then one shared object per graph).
#include "kiln/Target/CPU/CpuTarget.h"
#include "kiln/Target/CPU/CpuCodegen.h"

#include "llvm/TargetParser/AArch64TargetParser.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/TargetParser/X86TargetParser.h"

#include <unistd.h>

using namespace kiln::cpu;

CpuTarget CpuTarget::host() {
  static const CpuTarget detected = [] {
    CpuTarget target;
    target.triple = llvm::sys::getProcessTriple();
    target.cpu = llvm::sys::getHostCPUName().str();
    for (const auto &feature : llvm::sys::getHostCPUFeatures()) {
      if (!target.features.empty())
        target.features += ",";
      target.features += (feature.second ? "+" : "-") + feature.first().str();
    }
    return target;
  }();
  return detected;
}

/// "cpu:aarch64" (generic ARMv8-A with NEON) or "cpu:aarch64:<name>" (an
/// Arm CPU as LLVM names it, e.g. "neoverse-n1"): cross-compiled kernels.
static llvm::Expected<CpuTarget> aarch64Target(llvm::StringRef target, llvm::StringRef name) {
  CpuTarget arm;
  llvm::Triple triple(llvm::sys::getProcessTriple());
  triple.setArch(llvm::Triple::aarch64);
  triple.setVendor(llvm::Triple::UnknownVendor);
  arm.triple = triple.str();
  arm.cpu = "generic";
  if (name.consume_front("aarch64:")) {
    if (!llvm::AArch64::parseCpu(name))
      return llvm::createStringError("unknown target '" + target.str() + "': '" + name.str() +
                                     "' is no AArch64 CPU that LLVM knows (e.g. "
                                     "'cpu:aarch64:neoverse-n1')");
    arm.cpu = name.str();
  }
  arm.features = "+fp-armv8,+neon"; // every AArch64 Linux CPU has them
  return arm;
}

llvm::Expected<CpuTarget> CpuTarget::fromTargetName(llvm::StringRef target) {
  if (target == "cpu" || target == "cpu:native")
    return host();
  if (target == "cpu:aarch64" || target.starts_with("cpu:aarch64:"))
    return aarch64Target(target, target.drop_front(4));
  llvm::StringRef name = target;
  if (!name.consume_front("cpu:") || name.empty() ||
      llvm::X86::parseArchX86(name, /*Only64Bit=*/true) == llvm::X86::CK_None)
    return llvm::createStringError(
        "unknown target '" + target.str() +
        "': expected 'cpu' (this machine's CPU), 'cpu:x86-64-v2', 'cpu:x86-64-v3', "
        "'cpu:x86-64-v4' (x86-64 levels, for portable artifacts), 'cpu:<name>' with an "
        "x86-64 CPU that LLVM knows, e.g. 'cpu:skylake-avx512' or 'cpu:znver4', or "
        "'cpu:aarch64' (cross-compiled for 64-bit Arm)");
  CpuTarget named;
  // The host's OS and ABI, on the x86-64 the name implies.
  llvm::Triple triple(llvm::sys::getProcessTriple());
  triple.setArch(llvm::Triple::x86_64);
  named.triple = triple.str();
  named.cpu = name.str();
  // The CPU's features with every feature they imply (avx2 implies avx), so
  // that hasFeature and the artifact's record see them all.
  llvm::SmallVector<llvm::StringRef> direct;
  llvm::X86::getFeaturesForCPU(name, direct);
  llvm::StringMap<bool> implied;
  for (llvm::StringRef feature : direct) {
    implied[feature] = true;
    llvm::X86::updateImpliedFeatures(feature, /*Enabled=*/true, implied);
  }
  std::vector<std::string> features;
  for (const auto &entry : implied)
    if (entry.second)
      features.push_back("+" + entry.first().str());
  llvm::sort(features);
  named.features = llvm::join(features, ",");
  return named;
}

int64_t CpuTarget::vectorBits() const {
  if (isAArch64())
    return 128; // NEON (SVE's widths are not fixed)
  if (hasFeature("avx512f"))
    return 512;
  if (hasFeature("avx"))
    return 256;
  return 128;
}

bool CpuTarget::hasFeature(llvm::StringRef name) const {
  return llvm::is_contained(llvm::split(features, ','), ("+" + name).str());
}

bool CpuTarget::isAArch64() const { return llvm::Triple(triple).isAArch64(); }

int64_t CpuTarget::vectorRegisters() const {
  if (isAArch64())
    return 32; // v0-v31
  return hasFeature("avx512f") ? 32 : 16; // zmm0-31 or xmm/ymm0-15
}

std::string CpuTarget::arch() const { return llvm::Triple(triple).getArchName().str(); }

std::string CpuTarget::format() const { return "cpu-" + arch(); }

/// This machine's data cache sizes, where the C library knows them (0 when
/// not): the host target describes them; named CPUs leave them unknown.
static int64_t hostCacheBytes(int name) {
#ifdef _SC_LEVEL1_DCACHE_SIZE
  long bytes = sysconf(name);
  return bytes > 0 ? bytes : 0;
#else
  (void)name;
  return 0;
#endif
}

kiln::kernel::TargetAttr CpuTarget::describe(mlir::MLIRContext &context,
                                             llvm::StringRef name) const {
  int64_t l1 = 0, l2 = 0;
#ifdef _SC_LEVEL1_DCACHE_SIZE
  if (triple == host().triple && cpu == host().cpu && features == host().features) {
    l1 = hostCacheBytes(_SC_LEVEL1_DCACHE_SIZE);
    l2 = hostCacheBytes(_SC_LEVEL2_CACHE_SIZE);
  }
#endif
  return kernel::TargetAttr::get(&context, "cpu", name, format(), triple, cpu, features,
                                 vectorBits(), vectorRegisters(), l1, l2,
                                 /*subgroup_size=*/0, /*max_workgroup_size=*/0,
                                 /*shared_memory_bytes=*/0);
}

std::vector<kiln::PipelineStage> kiln::cpu::kernelStages() {
  // float32 -> bfloat16 is written out as integer operations (exact, round
  // to nearest even, as c10::BFloat16) even where the CPU has an instruction
  // for it: AVX512-BF16's vcvtneps2bf16 flushes subnormal inputs to zero,
  // and eager keeps them. (Elsewhere LLVM would call a library function.)
  std::string expand = "arith-expand{include-bf16=true}";
  return {
      linalgKernelStage(),
      {"bufferized", "kiln-bufferize-kernels,func.func(kiln-stack-temporaries),"
                     "buffer-deallocation-pipeline,canonicalize,cse"},
      {"loops", "func.func(kiln-vectorize-matmul,kiln-lower-attention,kiln-lower-convolution,"
                "kiln-lower-sort,convert-linalg-to-loops,kiln-promote-accumulators,"
                "kiln-distribute-workgroups,kiln-version-in-place)"},
      // Conversions that work function by function are nested, so that
      // they run on the kernels in parallel; the rest need the module
      // (kiln-approximate-math declares libm functions in it).
      {"llvm", "kiln-approximate-math,func.func(expand-strided-metadata,lower-affine,"
               "convert-scf-to-cf," + expand + "),convert-math-to-funcs,"
               "func.func(convert-math-to-llvm,convert-vector-to-llvm),finalize-memref-to-llvm,"
               "func.func(convert-arith-to-llvm,convert-index-to-llvm),"
               "convert-cf-to-llvm,convert-func-to-llvm{use-bare-ptr-memref-call-conv=1},"
               "reconcile-unrealized-casts,kiln-emit-kernel-abi,llvm.func(canonicalize)"},
  };
}

std::string kiln::cpu::planPasses() { return "kiln-pack-weights"; }

namespace {

class CpuBackend final : public kiln::Target {
public:
  CpuBackend(CpuTarget cpu, std::string name) : cpu(std::move(cpu)), name(std::move(name)) {}

  kiln::kernel::TargetAttr describe(mlir::MLIRContext &context) const override {
    return cpu.describe(context, name);
  }
  std::string planPasses() const override { return kiln::cpu::planPasses(); }
  std::vector<kiln::PipelineStage> kernelStages() const override {
    return kiln::cpu::kernelStages();
  }
  llvm::Expected<kiln::SerializedKernels> serializeKernels(mlir::ModuleOp kernels,
                                                           bool keepText) const override {
    return generateSharedObject(kernels, cpu, keepText);
  }

private:
  CpuTarget cpu;
  std::string name;
};

} // namespace

void kiln::cpu::registerCpuTarget() {
  TargetRegistry::add(
      {"cpu",
       "'cpu' (this machine's CPU), 'cpu:x86-64-v2', 'cpu:x86-64-v3', 'cpu:x86-64-v4' (x86-64 "
       "levels, for portable artifacts), 'cpu:<name>' with an x86-64 CPU that LLVM knows, e.g. "
       "'cpu:skylake-avx512' or 'cpu:znver4', or 'cpu:aarch64[:<name>]' (cross-compiled for "
       "64-bit Arm, e.g. 'cpu:aarch64:neoverse-n1')",
       [](llvm::StringRef name) -> llvm::Expected<std::unique_ptr<Target>> {
         auto cpu = CpuTarget::fromTargetName(name);
         if (!cpu)
           return cpu.takeError();
         return std::make_unique<CpuBackend>(std::move(*cpu), name.str());
       }});
}
