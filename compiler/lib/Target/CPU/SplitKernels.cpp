// Splitting the kernels' LLVM-dialect module into one module per kernel, so
// that native code generation can run kernels in parallel and compile each
// distinct kernel once (see CpuCodegen.cpp).
#include "kiln/Target/CPU/SplitKernels.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Threading.h"
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
  std::vector<LLVM::LLVMFuncOp> entries;
  for (Operation &op : module.getBody()->getOperations())
    if (isKernelEntry(op))
      entries.push_back(cast<LLVM::LLVMFuncOp>(op));
  // Kernels are split in parallel where the context allows it (cloning only
  // reads the source module; printing for the hash is most of the cost).
  std::vector<KernelModule> kernels(entries.size());
  parallelFor(module->getContext(), 0, entries.size(), [&](size_t i) {
    StringRef name = entries[i].getSymName();
    // Clone only what the kernel reaches (in module order), not the module:
    // a graph of N kernels would otherwise copy N^2 kernels.
    llvm::SetVector<Operation *> keep = reachableSymbols(module, entries[i]);
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
    kernels[i] = {name.str(), std::move(symbol), std::move(single)};
  });
  return kernels;
}
