// Splitting the kernels' LLVM-dialect module into one module per kernel, so
// that native code generation can run kernels in parallel and compile each
// distinct kernel once (see CpuCodegen.cpp).
#include "kiln/Target/CPU/SplitKernels.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/xxhash.h"

using namespace mlir;
using namespace kiln::cpu;

static bool isKernelEntry(Operation &op) {
  auto func = dyn_cast<LLVM::LLVMFuncOp>(op);
  return func && !func.isExternal() && func.getLinkage() == LLVM::Linkage::External;
}

/// The top-level symbols `entry` reaches through symbol references, itself
/// included.
static llvm::SetVector<Operation *> reachableSymbols(ModuleOp module, Operation *entry) {
  llvm::SetVector<Operation *> reached;
  reached.insert(entry);
  for (size_t i = 0; i < reached.size(); ++i) {
    auto uses = SymbolTable::getSymbolUses(reached[i]);
    if (!uses)
      continue;
    for (const SymbolTable::SymbolUse &use : *uses)
      if (Operation *symbol = SymbolTable::lookupSymbolIn(module, use.getSymbolRef()))
        reached.insert(symbol);
  }
  return reached;
}

/// Renames `entry` and the functions named after it (its "_body") so that
/// their names start with `prefix` instead of the entry's name.
static void renameKernel(ModuleOp module, StringRef entryName, StringRef prefix) {
  SymbolTable table(module);
  for (auto func : llvm::to_vector(module.getOps<LLVM::LLVMFuncOp>())) {
    StringRef name = func.getSymName();
    if (!name.starts_with(entryName))
      continue;
    StringRef rest = name.drop_front(entryName.size());
    if (!rest.empty() && !rest.starts_with("_"))
      continue;
    (void)table.rename(func, (prefix + rest).str());
  }
}

static std::string contentSymbol(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, OpPrintingFlags().enableDebugInfo(false));
  llvm::XXH128_hash_t hash = llvm::xxh3_128bits(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(text.data()), text.size()));
  std::string symbol;
  llvm::raw_string_ostream(symbol)
      << "kiln_" << llvm::format_hex_no_prefix(hash.high64, 16)
      << llvm::format_hex_no_prefix(hash.low64, 16);
  return symbol;
}

std::vector<KernelModule> kiln::cpu::splitKernels(ModuleOp module) {
  std::vector<KernelModule> kernels;
  for (Operation &op : module.getBody()->getOperations()) {
    if (!isKernelEntry(op))
      continue;
    StringRef name = cast<LLVM::LLVMFuncOp>(op).getSymName();
    // Clone only what the kernel reaches (in module order), not the module:
    // a graph of N kernels would otherwise copy N^2 kernels.
    llvm::SetVector<Operation *> keep = reachableSymbols(module, &op);
    OwningOpRef<ModuleOp> single = ModuleOp::create(module.getLoc());
    (*single)->setAttrs(module->getAttrDictionary());
    OpBuilder builder = OpBuilder::atBlockEnd(single->getBody());
    for (Operation &other : module.getBody()->getOperations())
      if (!isa<SymbolOpInterface>(other) || keep.contains(&other))
        builder.clone(other);
    // Hash the kernel under a neutral name: identical code, identical symbol.
    constexpr llvm::StringLiteral neutral = "kiln_kernel";
    renameKernel(*single, name, neutral);
    std::string symbol = contentSymbol(*single);
    renameKernel(*single, neutral, symbol);
    kernels.push_back({name.str(), std::move(symbol), std::move(single)});
  }
  return kernels;
}
