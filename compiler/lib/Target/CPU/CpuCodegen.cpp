#include "kiln/Target/CPU/CpuCodegen.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

#include <mutex>

using namespace kiln::cpu;

CpuTarget CpuTarget::host() {
  CpuTarget target;
  target.triple = llvm::sys::getProcessTriple();
  target.cpu = llvm::sys::getHostCPUName().str();
  std::string features;
  for (const auto &feature : llvm::sys::getHostCPUFeatures()) {
    if (!features.empty())
      features += ",";
    features += (feature.second ? "+" : "-") + feature.first().str();
  }
  target.features = features;
  return target;
}

std::string CpuTarget::name() const {
  std::string arch = triple.substr(0, triple.find('-'));
  return "cpu-" + arch + "-" + cpu;
}

static void initializeLLVMTargets() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
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

/// Links `object` into a shared object with lld and returns its bytes.
static llvm::Expected<std::vector<uint8_t>> linkSharedObject(llvm::StringRef object) {
  auto linker = findLinker();
  if (!linker)
    return linker.takeError();
  llvm::SmallString<128> objectPath, libraryPath;
  if (auto ec = llvm::sys::fs::createTemporaryFile("kiln-kernels", "o", objectPath))
    return llvm::createStringError(ec, "cannot create a temporary object file");
  if (auto ec = llvm::sys::fs::createTemporaryFile("kiln-kernels", "so", libraryPath)) {
    llvm::sys::fs::remove(objectPath);
    return llvm::createStringError(ec, "cannot create a temporary library file");
  }
  auto cleanup = llvm::make_scope_exit([&] {
    llvm::sys::fs::remove(objectPath);
    llvm::sys::fs::remove(libraryPath);
  });
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(objectPath, ec);
    if (ec)
      return llvm::createStringError(ec, "cannot write " + objectPath);
    os << object;
  }
  llvm::SmallVector<llvm::StringRef> args{*linker, "-shared", "--hash-style=gnu",
                                          "-z", "now", "-o", libraryPath, objectPath};
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

llvm::Expected<CpuCodegenResult>
kiln::cpu::generateSharedObject(mlir::ModuleOp module, const CpuCodegenOptions &options) {
  initializeLLVMTargets();
  mlir::DialectRegistry registry;
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  module->getContext()->appendDialectRegistry(registry);

  llvm::LLVMContext llvmContext;
  auto llvmModule = mlir::translateModuleToLLVMIR(module, llvmContext, "kiln_kernels");
  if (!llvmModule)
    return llvm::createStringError("translating the kernels to LLVM IR failed");

  const CpuTarget &target = options.target;
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
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(triple);
  // The vectorizer's cost model reads the CPU from each function.
  for (llvm::Function &function : *llvmModule) {
    if (function.isDeclaration())
      continue;
    function.addFnAttr("target-cpu", target.cpu);
    function.addFnAttr("target-features", target.features);
    function.addFnAttr(llvm::Attribute::NoUnwind);
  }

  auto optimize = mlir::makeOptimizingTransformer(3, 0, machine.get());
  if (llvm::Error err = optimize(llvmModule.get()))
    return std::move(err);

  CpuCodegenResult result;
  if (options.keepText) {
    llvm::raw_string_ostream os(result.llvmIR);
    llvmModule->print(os, nullptr);
    llvm::SmallString<0> assembly;
    llvm::raw_svector_ostream asmStream(assembly);
    llvm::legacy::PassManager asmPasses;
    auto clone = llvm::CloneModule(*llvmModule);
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
  passes.run(*llvmModule);

  auto library = linkSharedObject(object.str());
  if (!library)
    return library.takeError();
  result.sharedObject = std::move(*library);
  return result;
}
