#include "kiln/Target/CPU/CpuCodegen.h"
#include "kiln/Target/CPU/SplitKernels.h"

#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/AsmParser/Parser.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/IR/Module.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Transforms/InstCombine/InstCombine.h"
#include "llvm/Transforms/Scalar/LoopUnrollPass.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/TargetParser/AArch64TargetParser.h"
#include "llvm/TargetParser/X86TargetParser.h"

#include <chrono>
#include <map>
#include <memory>
#include <mutex>

using namespace kiln::cpu;

static void initializeLLVMTargets() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Every target LLVM was built with: cross-compiling (cpu:aarch64) needs
    // more than the host's.
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
  });
}

static llvm::Expected<std::string> findLinker() {
  for (const char *name : {"ld.lld-22", "ld.lld"}) {
    if (auto path = llvm::sys::findProgramByName(name))
      return *path;
    if (auto path = llvm::sys::findProgramByName(name, {"/usr/lib/llvm-22/bin"}))
      return *path;
  }
  return llvm::createStringError("no linker found: install lld-22 (ld.lld)");
}

/// Links `objects` into one shared object with lld and returns its bytes.
static llvm::Expected<std::vector<uint8_t>>
linkSharedObject(llvm::ArrayRef<const std::string *> objects) {
  auto linker = findLinker();
  if (!linker)
    return linker.takeError();
  llvm::SmallVector<llvm::SmallString<128>> objectPaths;
  llvm::SmallString<128> libraryPath;
  auto cleanup = llvm::make_scope_exit([&] {
    for (const auto &path : objectPaths)
      llvm::sys::fs::remove(path);
    if (!libraryPath.empty())
      llvm::sys::fs::remove(libraryPath);
  });
  for (const std::string *object : objects) {
    llvm::SmallString<128> &path = objectPaths.emplace_back();
    int fd;
    if (auto ec = llvm::sys::fs::createTemporaryFile("kiln-kernel", "o", fd, path))
      return llvm::createStringError(ec, "cannot create a temporary object file");
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << *object;
    os.close();
    if (os.has_error())
      return llvm::createStringError(os.error(), "cannot write " + path);
  }
  if (auto ec = llvm::sys::fs::createTemporaryFile("kiln-kernels", "so", libraryPath))
    return llvm::createStringError(ec, "cannot create a temporary library file");
  llvm::SmallVector<llvm::StringRef> args{*linker, "-shared", "--hash-style=gnu",
                                          "-z", "now", "-o", libraryPath};
  for (const auto &path : objectPaths)
    args.push_back(path);
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(*linker, args, std::nullopt, {}, 0, 0, &message);
  if (rc != 0)
    return llvm::createStringError("linking kernels failed (" + *linker +
                                   " exited with " + std::to_string(rc) +
                                   "): " + message);
  auto buffer = llvm::MemoryBuffer::getFile(libraryPath);
  if (!buffer)
    return llvm::createStringError(buffer.getError(), "cannot read " + libraryPath);
  return std::vector<uint8_t>((*buffer)->getBufferStart(), (*buffer)->getBufferEnd());
}

namespace {
/// A kernel's native code: its object file and, when asked for, its
/// optimized LLVM IR and assembly.
struct KernelObject {
  std::string object;
  std::string llvmIR, assembly;
};

/// Step timings of one graph's codegen.
class StepTimer {
public:
  explicit StepTimer(std::vector<std::pair<std::string, double>> &steps) : steps_(steps) {}
  void finish(const char *step) {
    auto now = std::chrono::steady_clock::now();
    steps_.push_back({step, std::chrono::duration<double, std::milli>(now - last_).count()});
    last_ = now;
  }

private:
  std::vector<std::pair<std::string, double>> &steps_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

/// Kernels already compiled in this process, by symbol and target. A symbol
/// hashes the kernel's whole LLVM-dialect text, so an entry is valid for any
/// graph that contains the same kernel.
class KernelObjectCache {
public:
  std::shared_ptr<const KernelObject> lookup(const std::string &key, bool needText) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = objects_.find(key);
    if (it == objects_.end() || (needText && it->second->assembly.empty()))
      return nullptr;
    return it->second;
  }
  void insert(const std::string &key, std::shared_ptr<const KernelObject> object) {
    std::lock_guard<std::mutex> lock(mutex_);
    // Bounded: a process that compiles without end does not grow without end.
    if (objects_.size() >= kMaxEntries)
      objects_.clear();
    objects_[key] = std::move(object);
  }

private:
  static constexpr size_t kMaxEntries = 4096;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const KernelObject>> objects_;
};

KernelObjectCache &kernelObjectCache() {
  static KernelObjectCache cache;
  return cache;
}
} // namespace

/// LLVM's O3 pipeline with a smaller full-unroll limit. Kiln's emitters
/// already unroll what pays (matmul and convolution register tiles, kernel
/// taps); O3's default fully unrolls every constant loop of up to hundreds of
/// iterations, which on this code made kernels several times larger, slower
/// to compile (2-3x) and no faster: fused row kernels of the zoo's
/// transformers ran 1.3-1.6x faster without it. Partial and runtime
/// unrolling after vectorization stay on (convolutions need them).
static void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine) {
  constexpr unsigned kMaxFullUnroll = 4;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopUnrolling = false; // the default unroll passes; ours follow
  llvm::PassBuilder builder(&machine, tuning);
  builder.registerScalarOptimizerLateEPCallback(
      [](llvm::FunctionPassManager &passes, llvm::OptimizationLevel) {
        // Where O3 runs its full unroll: before vectorization.
        passes.addPass(llvm::LoopUnrollPass(llvm::LoopUnrollOptions(3)
                                                .setPartial(false)
                                                .setRuntime(false)
                                                .setUpperBound(false)
                                                .setFullUnrollMaxCount(kMaxFullUnroll)));
      });
  builder.registerVectorizerEndEPCallback(
      [](llvm::FunctionPassManager &passes, llvm::OptimizationLevel) {
        passes.addPass(llvm::LoopUnrollPass(
            llvm::LoopUnrollOptions(3).setFullUnrollMaxCount(kMaxFullUnroll)));
        passes.addPass(llvm::InstCombinePass());
      });
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);
  builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(module, modules);
}

/// Optimizes one kernel's LLVM module at O3 for the target (the loop
/// vectorizer widens the kernels' inner loops) and emits its object file.
static llvm::Expected<KernelObject> compileKernel(llvm::Module &module, const CpuTarget &target,
                                                  bool keepText, bool optimize = true) {
  std::string error;
  llvm::Triple triple(target.triple);
  const llvm::Target *llvmTarget = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!llvmTarget)
    return llvm::createStringError("unknown target " + target.triple + ": " + error);
  llvm::TargetOptions targetOptions;
  std::unique_ptr<llvm::TargetMachine> machine(llvmTarget->createTargetMachine(
      triple, target.cpu, target.features, targetOptions, llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return llvm::createStringError("cannot create a target machine for " + target.cpu);
  module.setDataLayout(machine->createDataLayout());
  module.setTargetTriple(triple);
  // The vectorizer's cost model reads the CPU from each function.
  for (llvm::Function &function : module) {
    if (function.isDeclaration())
      continue;
    function.addFnAttr("target-cpu", target.cpu);
    function.addFnAttr("target-features", target.features);
    function.addFnAttr(llvm::Attribute::NoUnwind);
  }
  if (optimize)
    optimizeModule(module, *machine);

  KernelObject result;
  if (keepText) {
    llvm::raw_string_ostream os(result.llvmIR);
    module.print(os, nullptr);
    llvm::SmallString<0> assembly;
    llvm::raw_svector_ostream asmStream(assembly);
    llvm::legacy::PassManager asmPasses;
    auto clone = llvm::CloneModule(module);
    if (!machine->addPassesToEmitFile(asmPasses, asmStream, nullptr,
                                      llvm::CodeGenFileType::AssemblyFile)) {
      asmPasses.run(*clone);
      result.assembly = assembly.str().str();
    }
  }
  llvm::SmallString<0> object;
  llvm::raw_svector_ostream objectStream(object);
  llvm::legacy::PassManager passes;
  if (machine->addPassesToEmitFile(passes, objectStream, nullptr,
                                   llvm::CodeGenFileType::ObjectFile))
    return llvm::createStringError("the target cannot emit object files");
  passes.run(module);
  result.object = object.str().str();
  return result;
}

/// Conversions LLVM calls as library functions on CPUs without them in
/// hardware: float to bfloat16 without AVX512-BF16 (select and shuffle of
/// bfloat vectors are legalized through float), and float16 both ways
/// without F16C (x86-64-v2). A kernel library cannot count on libgcc's, so
/// every library carries its own, hidden: exact, round to nearest even,
/// quiet NaNs as c10's conversions (float_to_half_fast3_rtne and
/// half_to_float, public domain, by Fabian Giesen). Integer and float bit
/// operations only: no conversion instruction that could call back here.
static constexpr const char *kConversionRoutines = R"(
define hidden bfloat @__truncsfbf2(float %x) {
  %bits = bitcast float %x to i32
  %isnan = fcmp uno float %x, %x
  %lsb = lshr i32 %bits, 16
  %odd = and i32 %lsb, 1
  %bias = add i32 %odd, 32767
  %rounded = add i32 %bits, %bias
  %high = lshr i32 %rounded, 16
  %narrow = trunc i32 %high to i16
  %result = select i1 %isnan, i16 32704, i16 %narrow
  %bf = bitcast i16 %result to bfloat
  ret bfloat %bf
}

define hidden half @__truncsfhf2(float %x) {
  %u = bitcast float %x to i32
  %sign = and i32 %u, -2147483648
  %a = xor i32 %u, %sign
  %isnan = icmp ugt i32 %a, 2139095040
  %special = select i1 %isnan, i32 32256, i32 31744
  %big = icmp uge i32 %a, 1199570944
  %af = bitcast i32 %a to float
  %aligned = fadd float %af, 5.000000e-01
  %alignedBits = bitcast float %aligned to i32
  %subnormal = sub i32 %alignedBits, 1056964608
  %small = icmp ult i32 %a, 947912704
  %m = lshr i32 %a, 13
  %odd = and i32 %m, 1
  %rebiased = add i32 %a, -939520001
  %roundedBits = add i32 %rebiased, %odd
  %normal = lshr i32 %roundedBits, 13
  %finite = select i1 %small, i32 %subnormal, i32 %normal
  %magnitude = select i1 %big, i32 %special, i32 %finite
  %signBit = lshr i32 %sign, 16
  %result = or i32 %magnitude, %signBit
  %narrow = trunc i32 %result to i16
  %h = bitcast i16 %narrow to half
  ret half %h
}

define hidden float @__extendhfsf2(half %h) {
  %bits = bitcast half %h to i16
  %u = zext i16 %bits to i32
  %magnitude = and i32 %u, 32767
  %shifted = shl i32 %magnitude, 13
  %exponent = and i32 %shifted, 260046848
  %normal = add i32 %shifted, 939524096
  %isspecial = icmp eq i32 %exponent, 260046848
  %special = add i32 %normal, 939524096
  %iszero = icmp eq i32 %exponent, 0
  %denormalBits = add i32 %normal, 8388608
  %denormalFloat = bitcast i32 %denormalBits to float
  %renormalized = fsub float %denormalFloat, 0x3F10000000000000
  %denormal = bitcast float %renormalized to i32
  %nonzero = select i1 %isspecial, i32 %special, i32 %normal
  %value = select i1 %iszero, i32 %denormal, i32 %nonzero
  %signBit = and i32 %u, 32768
  %sign = shl i32 %signBit, 16
  %result = or i32 %value, %sign
  %f = bitcast i32 %result to float
  ret float %f
}
)";

/// The object holding kConversionRoutines for `target`, made once per target.
static llvm::Expected<std::shared_ptr<const KernelObject>>
conversionRoutines(const CpuTarget &target) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const KernelObject>> made;
  std::string key = target.triple + "|" + target.cpu + "|" + target.features;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = made.find(key); it != made.end())
    return it->second;
  llvm::LLVMContext context;
  llvm::SMDiagnostic diagnostic;
  std::unique_ptr<llvm::Module> module =
      llvm::parseAssemblyString(kConversionRoutines, diagnostic, context);
  if (!module)
    return llvm::createStringError("internal error in the conversion routines: " +
                                   diagnostic.getMessage().str());
  module->setModuleIdentifier("kiln_conversions");
  auto object = compileKernel(*module, target, /*keepText=*/false, /*optimize=*/false);
  if (!object)
    return object.takeError();
  auto shared = std::make_shared<const KernelObject>(std::move(*object));
  made[key] = shared;
  return shared;
}

llvm::Expected<kiln::SerializedKernels>
kiln::cpu::generateSharedObject(mlir::ModuleOp module, const CpuTarget &target, bool keepText) {
  SerializedKernels result;
  StepTimer timer(result.stepTimesMs);
  initializeLLVMTargets();
  mlir::DialectRegistry registry;
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  module->getContext()->appendDialectRegistry(registry);
  std::string targetKey = target.triple + "|" + target.cpu + "|" + target.features;

  // One module per kernel; each distinct symbol is compiled once, and not at
  // all when this process compiled it before.
  std::vector<KernelModule> kernels = splitKernels(module);
  struct Job {
    KernelModule *kernel;
    size_t size = 0; // operations, to schedule the largest first
    std::unique_ptr<llvm::LLVMContext> context;
    std::unique_ptr<llvm::Module> llvmModule;
    llvm::Expected<KernelObject> object = KernelObject();
  };
  std::map<std::string, std::shared_ptr<const KernelObject>> objects; // by symbol
  std::vector<Job> jobs;
  for (KernelModule &kernel : kernels) {
    if (objects.count(kernel.symbol))
      continue;
    if (auto cached = kernelObjectCache().lookup(kernel.symbol + "|" + targetKey, keepText)) {
      objects[kernel.symbol] = std::move(cached);
      continue;
    }
    objects[kernel.symbol] = nullptr;
    Job &job = jobs.emplace_back();
    job.kernel = &kernel;
    kernel.module->walk([&](mlir::Operation *) { ++job.size; });
  }
  result.kernelsCompiled = jobs.size();
  result.kernelsReused = kernels.size() - jobs.size();

  // Translation to LLVM IR, optimization and code generation, one kernel per
  // task across the cores, largest first: compile time grows with the
  // kernel's size, and a large kernel started last (an attention kernel is
  // 10x a permute) would leave the other cores idle at the end. The pool
  // takes tasks in order. Translation creates attributes in the MLIR
  // context, so it runs in the tasks only where the context is thread-safe.
  mlir::MLIRContext *context = module->getContext();
  bool parallelTranslation = context->isMultithreadingEnabled();
  auto translate = [](Job &job) {
    job.context = std::make_unique<llvm::LLVMContext>();
    job.llvmModule = mlir::translateModuleToLLVMIR(*job.kernel->module, *job.context, job.kernel->name);
    if (!job.llvmModule)
      job.object = llvm::createStringError("translating it to LLVM IR failed");
    return job.llvmModule != nullptr;
  };
  if (!parallelTranslation)
    for (Job &job : jobs)
      translate(job);
  timer.finish("translate");

  std::vector<Job *> bySize;
  for (Job &job : jobs)
    bySize.push_back(&job);
  llvm::stable_sort(bySize, [](const Job *a, const Job *b) { return a->size > b->size; });
  {
    // Diagnostics from the tasks reach the context's handler one at a time,
    // in the order the tasks were queued.
    mlir::ParallelDiagnosticHandler diagnostics(context);
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency());
    for (size_t order = 0; order < bySize.size(); ++order)
      pool.async([&job = *bySize[order], order, &diagnostics, &translate, parallelTranslation,
                  &target, keepText] {
        diagnostics.setOrderIDForThread(order);
        if ((!parallelTranslation || translate(job)) && job.llvmModule)
          job.object = compileKernel(*job.llvmModule, target, keepText);
        diagnostics.eraseOrderIDForThread();
      });
    pool.wait();
  }
  for (Job &job : jobs) {
    if (!job.object)
      return llvm::createStringError("compiling kernel " + job.kernel->name + ": " +
                                     llvm::toString(job.object.takeError()));
    auto object = std::make_shared<const KernelObject>(std::move(*job.object));
    kernelObjectCache().insert(job.kernel->symbol + "|" + targetKey, object);
    objects[job.kernel->symbol] = std::move(object);
  }
  timer.finish("compile");

  auto conversions = conversionRoutines(target);
  if (!conversions)
    return conversions.takeError();
  std::vector<const std::string *> linked{&(*conversions)->object};
  for (const auto &entry : objects)
    linked.push_back(&entry.second->object);
  auto library = linkSharedObject(linked);
  if (!library)
    return library.takeError();
  result.executable = std::move(*library);
  for (const KernelModule &kernel : kernels) {
    const KernelObject &object = *objects[kernel.symbol];
    result.kernels.push_back({kernel.name, kernel.symbol, object.llvmIR, object.assembly});
  }
  timer.finish("link");
  return result;
}
