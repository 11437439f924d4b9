// The compiler driver: graph stages, per-target kernel codegen, and the plan
// serialized into the artifact the runtime loads.
#include "kiln/Compiler/Compiler.h"
#include "kiln/Dialect/Kernel/IR/KernelOps.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"
#include "kiln/Dialect/Plan/IR/PlanOps.h"
#include "kiln/Importer/FxImporter.h"
#include "kiln/InitAll.h"
#include "kiln/Pipelines/Pipelines.h"
#include "kiln/Target/Target.h"
#include "kiln/runtime/Executable.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Triple.h"

#include <chrono>
#include <map>
#include <mutex>
#include <unistd.h>
#include <set>

using namespace mlir;
using namespace kiln;

namespace {

/// The runtime's enums for a plan.collective's names (its verifier admits
/// only these).
std::optional<runtime::CollectiveKind> collectiveKindOf(llvm::StringRef name) {
  for (auto kind : {runtime::CollectiveKind::AllReduce, runtime::CollectiveKind::AllGather,
                    runtime::CollectiveKind::ReduceScatter, runtime::CollectiveKind::AllToAll})
    if (runtime::collectiveKindName(kind) == name.str())
      return kind;
  return std::nullopt;
}

std::optional<runtime::ReduceOp> reduceOpOf(llvm::StringRef name) {
  for (auto op : {runtime::ReduceOp::Sum, runtime::ReduceOp::Avg, runtime::ReduceOp::Product,
                  runtime::ReduceOp::Min, runtime::ReduceOp::Max})
    if (runtime::reduceOpName(op) == name.str())
      return op;
  return std::nullopt;
}

/// The FX node names (the importer's NameLocs) a location carries; folded
/// ops carry several in a FusedLoc.
void collectNodeNames(Location loc, std::vector<std::string> &names,
                      std::set<std::string> &seen) {
  if (auto name = dyn_cast<NameLoc>(loc)) {
    if (seen.insert(name.getName().str()).second)
      names.push_back(name.getName().str());
  } else if (auto fused = dyn_cast<FusedLoc>(loc)) {
    for (Location inner : fused.getLocations())
      collectNodeNames(inner, names, seen);
  }
}

/// Collects diagnostics so that a failure can report all of them, with the FX
/// nodes the errors are located at.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext *context)
      : handler(context, [this](Diagnostic &diag) {
          llvm::raw_string_ostream os(text);
          os << diag.getLocation() << ": " << diag << "\n";
          for (Diagnostic &note : diag.getNotes())
            os << "  " << note.getLocation() << ": note: " << note << "\n";
          if (diag.getSeverity() == DiagnosticSeverity::Error)
            collectNodeNames(diag.getLocation(), nodes, seenNodes);
          return success();
        }) {}
  llvm::Error error(const std::string &what,
                    std::vector<std::pair<std::string, std::string>> stages = {}) const {
    return llvm::make_error<CompileFailure>(what + (text.empty() ? "" : ":\n" + text), nodes,
                                            std::move(stages));
  }

private:
  std::string text;
  std::vector<std::string> nodes;
  std::set<std::string> seenNodes;
  ScopedDiagnosticHandler handler;
};

std::string printOp(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  op->print(os, OpPrintingFlags().enableDebugInfo(true, /*prettyForm=*/false));
  return text;
}

/// "file:line" of a location, looking through names and fusions.
std::string sourceLine(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return sourceLine(name.getChildLoc());
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return (file.getFilename().str() + ":" + std::to_string(file.getLine()));
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (std::string line = sourceLine(inner); !line.empty())
        return line;
  return "";
}

class Driver {
public:
  Driver(const CompileOptions &options) : options(options) {}

  LogicalResult runStage(ModuleOp module, const PipelineStage &stage) {
    PassManager pm(module.getContext());
    std::string parseErrors;
    llvm::raw_string_ostream errorStream(parseErrors);
    if (failed(parsePassPipeline(stage.pipeline, pm, errorStream))) {
      emitError(module.getLoc()) << "invalid pipeline for stage '" << stage.name
                                 << "': " << parseErrors;
      return failure();
    }
    auto start = std::chrono::steady_clock::now();
    LogicalResult result = pm.run(module);
    auto end = std::chrono::steady_clock::now();
    result_.stageTimesMs.push_back(
        {stage.name, std::chrono::duration<double, std::milli>(end - start).count()});
    if (succeeded(result) && options.keepStages)
      result_.stages.push_back({stage.name, printOp(module)});
    return result;
  }

  /// The compile failed: the diagnostics, and with keepStages the stages
  /// that finished.
  llvm::Error failedWith(const DiagnosticCollector &diagnostics, const std::string &what) {
    return diagnostics.error(what, options.keepStages ? std::move(result_.stages)
                                                      : decltype(result_.stages)());
  }

  llvm::Expected<CompiledGraph> compile(ModuleOp module) {
    MLIRContext *context = module.getContext();
    registerAllKilnPasses();
    DiagnosticCollector diagnostics(context);
    auto target = TargetRegistry::parse(options.target);
    if (!target)
      return target.takeError();
    // The one place the target enters the IR: passes read it from here.
    targetDescription_ = (*target)->describe(*context);
    module->setAttr(kernel::KernelDialect::kTargetAttrName, targetDescription_);
    if (options.keepStages)
      result_.stages.push_back({"graph", printOp(module)});
    for (const PipelineStage &stage : graphStages(**target)) {
      if (failed(runStage(module, stage)))
        return failedWith(diagnostics, "stage '" + stage.name + "' failed");
      if (stage.name == "kernels")
        summarizeKernels(module);
    }
    if (options.formKernelsOnly)
      return std::move(result_);

    // Codegen works on a copy holding only the kernel functions.
    OwningOpRef<ModuleOp> kernels = module.clone();
    for (auto func : llvm::to_vector(kernels->getOps<func::FuncOp>()))
      if (!func->hasAttr(kernel::kKernelAttr))
        func.erase();
    // A repeated layer's kernels are lowered once (a dump keeps them all, so
    // that every stage shows every kernel).
    int duplicates = options.keepStages ? 0 : dropDuplicateKernels(module, *kernels);
    for (const PipelineStage &stage : (*target)->kernelStages()) {
      if (failed(runStage(*kernels, stage)))
        return failedWith(diagnostics, "stage '" + stage.name + "' failed");
      // What the kernel stages decided goes back onto the plan's kernels.
      if (stage.name == "linalg") {
        copyKernelFacts(module, *kernels, {kernel::kInPlaceOperandsAttr});
        if (failed(writeInputsInPlace(module)))
          return failedWith(diagnostics, "stage 'in-place' failed");
      }
      // (The CPU's "loops" and a GPU's "gpu" stage distribute workgroups.)
      if (stage.name == "loops" || stage.name == "gpu")
        copyKernelFacts(module, *kernels,
                        {kernel::kAlignmentAttr, kernel::kColumnExtentAttr,
                         kernel::kColumnAlignmentAttr, kernel::kScratchBytesAttr,
                         kernel::kScratchBuffersAttr, kernel::kWorkgroupSizeAttr});
    }
    if (failed(runStage(module, {"workgroups", "kiln-resolve-workgroups"})))
      return failedWith(diagnostics, "stage 'workgroups' failed");

    auto start = std::chrono::steady_clock::now();
    auto library = (*target)->serializeKernels(*kernels, options.keepStages);
    if (!library)
      return failedWith(diagnostics, llvm::toString(library.takeError()));
    result_.stageTimesMs.push_back(
        {"native", std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now() - start)
                       .count()});
    for (auto &[step, ms] : library->stepTimesMs)
      result_.stageTimesMs.push_back({"native." + step, ms});
    result_.kernelsCompiled = library->kernelsCompiled;
    result_.kernelsReused = library->kernelsReused + duplicates;
    recordSymbols(module, library->kernels);
    for (KernelCode &kernel : library->kernels) {
      // Kernels are exported under content-hashed symbols; the header says whose.
      std::string header = " " + kernel.name + ": exported as " + kernel.symbol +
                           " (kernels with the same code share it)\n";
      if (!kernel.ir.empty()) {
        // A comment in the IR's own syntax: LLVM IR's, or MLIR's (SPIR-V)
        // and PTX's.
        llvm::StringRef extension(kernel.irExtension);
        bool slashes = extension.ends_with("mlir") || extension == "ptx";
        std::string text = (slashes ? "//" : ";") + header + kernel.ir;
        if (extension == "ll")
          result_.llvmIR += text;
        result_.kernelFiles.push_back({kernel.name + "." + kernel.irExtension, std::move(text)});
      }
      if (!kernel.binary.empty())
        result_.kernelBinaries.push_back(
            {kernel.name + "." + kernel.binaryExtension, std::move(kernel.binary)});
      if (!kernel.assembly.empty()) {
        std::string text = "#" + header + kernel.assembly;
        result_.assembly += text;
        result_.kernelFiles.push_back(
            {kernel.name + "." + kernel.assemblyExtension, std::move(text)});
      }
    }

    if (failed(buildArtifact(module, std::move(library->executable))))
      return failedWith(diagnostics, "building the artifact failed");
    return std::move(result_);
  }

private:
  /// The plan's kernel function whose code `func`'s is (itself, or the
  /// kernel it has the same code as), as lowered in `kernels`.
  static func::FuncOp loweredAs(func::FuncOp func, ModuleOp kernels) {
    auto same = func->getAttrOfType<FlatSymbolRefAttr>(kernel::kSameCodeAsAttr);
    return kernels.lookupSymbol<func::FuncOp>(same ? same.getValue() : func.getName());
  }

  /// Erases from `kernels` every kernel function identical to an earlier one
  /// but for its name (and locations): the same code, which codegen would
  /// otherwise lower through every stage before finding it shares a symbol.
  /// The plan's copy of each is marked kiln_kernel.same_code_as the kernel
  /// whose code it takes. Returns how many were erased.
  static int dropDuplicateKernels(ModuleOp module, ModuleOp kernels) {
    int dropped = 0;
    std::map<std::string, std::string> firstWith; // printed code -> kernel name
    for (auto func : llvm::to_vector(kernels.getOps<func::FuncOp>())) {
      std::string name = func.getName().str();
      // The code with the name out of it: print a renamed clone.
      auto clone = cast<func::FuncOp>(func->clone());
      clone.setName("kernel");
      clone->setAttr(kernel::kKernelAttr, StringAttr::get(func.getContext(), "kernel"));
      std::string code;
      llvm::raw_string_ostream os(code);
      clone->print(os, OpPrintingFlags().useLocalScope());
      clone->erase();
      auto [it, inserted] = firstWith.emplace(std::move(code), name);
      if (inserted)
        continue;
      if (auto planned = module.lookupSymbol<func::FuncOp>(name))
        planned->setAttr(kernel::kSameCodeAsAttr,
                         FlatSymbolRefAttr::get(func.getContext(), it->second));
      func.erase();
      ++dropped;
    }
    return dropped;
  }

  /// Copies the attributes `names` that the kernel stages set on the kernels
  /// they lowered onto the plan's kernel functions (and onto the kernels
  /// that share their code).
  static void copyKernelFacts(ModuleOp module, ModuleOp kernels,
                              llvm::ArrayRef<llvm::StringRef> names) {
    for (auto func : module.getOps<func::FuncOp>()) {
      func::FuncOp lowered = loweredAs(func, kernels);
      if (!lowered)
        continue;
      for (llvm::StringRef name : names) {
        if (Attribute value = lowered->getAttr(name))
          func->setAttr(name, value);
        else
          func->removeAttr(name);
      }
    }
  }

  /// Binds graph inputs that the graph overwrites as the buffers of their
  /// new values where the kernels allow it (kiln-write-inputs-in-place),
  /// from the pairs kiln-mark-in-place-operands found.
  LogicalResult writeInputsInPlace(ModuleOp module) {
    func::FuncOp entry;
    for (auto func : module.getOps<func::FuncOp>())
      if (func->hasAttr(plan::kEntryAttr))
        entry = func;
    if (!entry || !entry->hasAttr(graph::kInputWritesAttr))
      return success();
    return runStage(module, {"in-place", "kiln-write-inputs-in-place"});
  }

  /// Records on each of the plan's kernel functions the executable's entry
  /// point for its code (kiln_kernel.symbol).
  static void recordSymbols(ModuleOp module, llvm::ArrayRef<KernelCode> kernels) {
    for (const KernelCode &code : kernels)
      if (auto func = module.lookupSymbol<func::FuncOp>(code.name))
        func->setAttr(kernel::kSymbolAttr, StringAttr::get(module.getContext(), code.symbol));
    for (auto func : module.getOps<func::FuncOp>())
      if (auto same = func->getAttrOfType<FlatSymbolRefAttr>(kernel::kSameCodeAsAttr))
        if (auto original = module.lookupSymbol<func::FuncOp>(same.getValue()))
          if (Attribute symbol = original->getAttr(kernel::kSymbolAttr))
            func->setAttr(kernel::kSymbolAttr, symbol);
  }

  /// An affine expression over the size symbols as the runtime's SizeExpr.
  static FailureOr<runtime::SizeExpr> sizeExpr(AffineExpr expr) {
    using Op = runtime::SizeExpr::Op;
    if (auto constant = dyn_cast<AffineConstantExpr>(expr))
      return runtime::SizeExpr::constant(constant.getValue());
    if (auto symbol = dyn_cast<AffineSymbolExpr>(expr))
      return runtime::SizeExpr::symbol(symbol.getPosition());
    auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
    if (!binary)
      return failure(); // a dim expression: sizes are over symbols only
    auto lhs = sizeExpr(binary.getLHS()), rhs = sizeExpr(binary.getRHS());
    if (failed(lhs) || failed(rhs))
      return failure();
    Op op;
    switch (binary.getKind()) {
    case AffineExprKind::Add: op = Op::Add; break;
    case AffineExprKind::Mul: op = Op::Mul; break;
    case AffineExprKind::FloorDiv: op = Op::FloorDiv; break;
    case AffineExprKind::CeilDiv: op = Op::CeilDiv; break;
    case AffineExprKind::Mod: op = Op::Mod; break;
    default: return failure();
    }
    return runtime::SizeExpr::binary(op, *lhs, *rhs);
  }

  /// The expressions of a `dims` map, for a buffer's symbolic dims.
  LogicalResult dimExprs(Location loc, AffineMapAttr dims, runtime::BufferDesc &desc) {
    if (!dims)
      return success();
    for (AffineExpr expr : dims.getValue().getResults()) {
      auto converted = sizeExpr(expr);
      if (failed(converted))
        return emitError(loc) << "size " << AffineMapAttr::get(dims.getValue())
                              << " is not an expression over size symbols";
      desc.dims.push_back(*converted);
    }
    return success();
  }

  /// A symbolic launch's workgroup count, as the static path computes it:
  /// clamp(work, 1, min(extent, cap)) workgroups, lowered to those whose
  /// aligned chunk of the extent is not empty; on a grid (the kernel splits
  /// its columns too), clamp(work, 1, cap) lowered to the grid's cells.
  FailureOr<runtime::SizeExpr> symbolicWorkgroups(plan::LaunchOp launch,
                                                  func::FuncOp kernelFunc) {
    using E = runtime::SizeExpr;
    using Op = E::Op;
    auto extent = sizeExpr(launch.getSymbolicExtentAttr().getValue().getResult(0));
    auto work = sizeExpr(launch.getSymbolicWorkAttr().getValue().getResult(0));
    if (failed(extent) || failed(work))
      return failure();
    E one = E::constant(1);
    // A kernel that splits its columns too is not capped by its rows.
    bool grid = launch.getGrid();
    E plan = E::constant((int64_t)launch.getWorkgroups());
    E cap = grid ? plan : E::binary(Op::Min, *extent, plan);
    E count = E::binary(Op::Max, one, E::binary(Op::Min, cap, *work));
    int64_t alignment = launch.getAlignment().value_or(0);
    if (grid) {
      auto columns = kernelFunc->getAttrOfType<IntegerAttr>(kernel::kColumnExtentAttr);
      auto columnAlignment =
          kernelFunc->getAttrOfType<IntegerAttr>(kernel::kColumnAlignmentAttr);
      if (!columns || !columnAlignment || alignment < 1)
        return count;
      E rowChunks = E::binary(Op::Max, one, E::binary(Op::CeilDiv, *extent, E::constant(alignment)));
      E cells = E::binary(Op::Mul, rowChunks,
                          E::constant(kernel::gridCells(1, 1, columns.getInt(),
                                                        columnAlignment.getInt())));
      return E::binary(Op::Min, count, cells);
    }
    if (alignment < 1)
      return count; // a kernel without a distributed extent runs whatever count
    E align = E::constant(alignment);
    E chunk = E::binary(Op::Mul,
                        E::binary(Op::CeilDiv, E::binary(Op::CeilDiv, *extent, count), align),
                        align);
    return E::binary(Op::Max, one, E::binary(Op::CeilDiv, *extent, chunk));
  }

  /// The plan's size symbols, each bound to the first input dim that is
  /// exactly that symbol.
  LogicalResult bindSymbols(func::FuncOp entry, runtime::Artifact &artifact) {
    auto symbols = entry->getAttrOfType<ArrayAttr>(graph::kSymbolsAttr);
    if (!symbols)
      return success();
    for (auto [index, attr] : llvm::enumerate(symbols)) {
      auto dict = dyn_cast<DictionaryAttr>(attr);
      auto name = dict ? dict.getAs<StringAttr>("name") : StringAttr();
      if (!name)
        return entry.emitError("kiln_graph.symbols entries need a name");
      runtime::SymbolDesc symbol;
      symbol.name = name.str();
      if (auto min = dict.getAs<IntegerAttr>("min"))
        symbol.min = min.getInt();
      if (auto max = dict.getAs<IntegerAttr>("max"))
        symbol.max = max.getInt();
      AffineExpr wanted = getAffineSymbolExpr(index, entry.getContext());
      bool bound = false;
      for (BlockArgument arg : entry.getArguments()) {
        auto dims = entry.getArgAttrOfType<AffineMapAttr>(arg.getArgNumber(), plan::kDimsAttr);
        if (!dims || bound)
          continue;
        auto shape = cast<MemRefType>(arg.getType()).getShape();
        unsigned nth = 0;
        for (auto [d, size] : llvm::enumerate(shape)) {
          if (!ShapedType::isDynamic(size))
            continue;
          if (dims.getValue().getResult(nth++) == wanted && !bound) {
            symbol.input = arg.getArgNumber();
            symbol.dim = d;
            bound = true;
          }
        }
      }
      // Else a 0-d int64 input that is the symbol's value.
      for (BlockArgument arg : entry.getArguments()) {
        auto value = entry.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), graph::kSymbolArgAttr);
        if (!bound && value && value.getInt() == (int64_t)index) {
          symbol.input = arg.getArgNumber();
          symbol.dim = runtime::kSymbolValue;
          bound = true;
        }
      }
      if (!bound)
        return entry.emitError("size symbol ")
               << symbol.name << " is not the size of any input dim; Kiln binds each "
               << "symbol to an input dim";
      artifact.symbols.push_back(std::move(symbol));
    }
    return success();
  }

  void summarizeKernels(ModuleOp module) {
    module.walk([&](kernel::KernelOp kernelOp) {
      KernelSummary summary;
      summary.name = kernelOp.getKernelName().str();
      std::set<std::string> seen, seenNodes;
      kernelOp.getBody().walk([&](Operation *op) {
        if (isa<kernel::YieldOp>(op) || op->getName().getStringRef() == "kiln_graph.constant")
          return;
        summary.ops.push_back(op->getName().stripDialect().str());
        std::string line = sourceLine(op->getLoc());
        if (!line.empty() && seen.insert(line).second)
          summary.locations.push_back(line);
        collectNodeNames(op->getLoc(), summary.nodes, seenNodes);
      });
      result_.kernels.push_back(std::move(summary));
    });
  }

  static FailureOr<runtime::DType> dtypeOf(Type element) {
    if (element.isF32()) return runtime::DType::F32;
    if (element.isF64()) return runtime::DType::F64;
    if (element.isF16()) return runtime::DType::F16;
    if (element.isBF16()) return runtime::DType::BF16;
    if (element.isInteger(64)) return runtime::DType::I64;
    if (element.isInteger(32)) return runtime::DType::I32;
    if (element.isUnsignedInteger(8)) return runtime::DType::U8;
    if (element.isInteger(8)) return runtime::DType::I8; // signless i8 is int8
    if (element.isInteger(1)) return runtime::DType::Bool;
    return failure();
  }

  FailureOr<runtime::TensorDesc> descOf(Location loc, Type type) {
    auto memref = cast<MemRefType>(type);
    auto dtype = dtypeOf(memref.getElementType());
    if (failed(dtype)) {
      emitError(loc) << "the runtime has no dtype for " << memref.getElementType();
      return failure();
    }
    std::vector<int64_t> shape;
    for (int64_t size : memref.getShape())
      shape.push_back(ShapedType::isDynamic(size) ? -1 : size);
    return runtime::TensorDesc{*dtype, std::move(shape)};
  }

  /// Serializes the plan function into the runtime's artifact structures.
  LogicalResult buildArtifact(ModuleOp module, std::vector<uint8_t> library) {
    func::FuncOp entry;
    for (auto func : module.getOps<func::FuncOp>())
      if (func->hasAttr(plan::kEntryAttr))
        entry = func;
    if (!entry)
      return module.emitError("no kiln_plan entry function");
    runtime::Artifact &artifact = result_.artifact;
    runtime::ExecutableDesc executable;
    // "cpu-x86_64", "cpu-aarch64": the runtime runs only its own.
    executable.format = targetDescription_.getFormat().str();
    // The features the kernels were compiled with, so that a CPU without
    // one refuses them at load instead of dying on the instruction.
    executable.cpu = targetDescription_.getChip().str();
    if (llvm::StringRef(executable.format).starts_with("cpu-"))
      for (llvm::StringRef feature : llvm::split(targetDescription_.getFeatures(), ','))
        if (feature.consume_front("+"))
          executable.cpuFeatures.push_back(feature.str());
    executable.bytes = std::move(library);
    artifact.graphName = entry.getName().str();
    if (failed(bindSymbols(entry, artifact)))
      return failure();
    uint32_t numSymbols = artifact.symbols.size();
    DenseMap<Value, uint32_t> ids;
    DenseMap<Operation *, uint32_t> kernelIds; // kernel function -> artifact kernel
    auto addBuffer = [&](Value v, runtime::BufferDesc desc) {
      ids[v] = artifact.buffers.size();
      artifact.buffers.push_back(std::move(desc));
    };
    for (BlockArgument arg : entry.getArguments()) {
      auto desc = descOf(arg.getLoc(), arg.getType());
      if (failed(desc))
        return failure();
      runtime::BufferDesc buffer{runtime::BufferKind::Input, *desc, arg.getArgNumber(), 0, {}};
      if (failed(dimExprs(arg.getLoc(),
                          entry.getArgAttrOfType<AffineMapAttr>(arg.getArgNumber(), plan::kDimsAttr),
                          buffer)))
        return failure();
      addBuffer(arg, std::move(buffer));
    }
    for (Operation &op : entry.getBody().front()) {
      if (auto alloc = dyn_cast<plan::AllocOp>(op)) {
        auto desc = descOf(op.getLoc(), alloc.getType());
        if (failed(desc))
          return failure();
        runtime::BufferDesc buffer{alloc.getPersistent() ? runtime::BufferKind::Persistent
                                                         : runtime::BufferKind::Alloc,
                                   *desc, 0, 0, {}};
        if (failed(dimExprs(op.getLoc(), alloc.getDimsAttr(), buffer)))
          return failure();
        addBuffer(alloc, std::move(buffer));
      } else if (auto view = dyn_cast<plan::ViewOp>(op)) {
        auto desc = descOf(op.getLoc(), view.getType());
        if (failed(desc))
          return failure();
        runtime::BufferDesc buffer{runtime::BufferKind::View, *desc,
                                   ids.lookup(view.getSource()), view.getByteOffset(), {}};
        if (failed(dimExprs(op.getLoc(), view.getDimsAttr(), buffer)))
          return failure();
        addBuffer(view, std::move(buffer));
      } else if (auto launch = dyn_cast<plan::LaunchOp>(op)) {
        auto kernelFunc = module.lookupSymbol<func::FuncOp>(launch.getKernel());
        auto symbol = kernelFunc ? kernelFunc->getAttrOfType<StringAttr>(kernel::kSymbolAttr)
                                 : StringAttr();
        if (!symbol)
          return launch.emitOpError("launches a kernel with no code (no ")
                 << kernel::kSymbolAttr << ")";
        auto scratchAttr = kernelFunc->getAttrOfType<IntegerAttr>(kernel::kScratchBytesAttr);
        int64_t scratch = scratchAttr ? scratchAttr.getInt() : 0;
        auto scratchBuffers = kernelFunc->getAttrOfType<ArrayAttr>(kernel::kScratchBuffersAttr);
        uint32_t numScratch = (scratch > 0) + (scratchBuffers ? scratchBuffers.size() : 0);
        auto [it, inserted] = kernelIds.try_emplace(kernelFunc, artifact.kernels.size());
        if (inserted)
          artifact.kernels.push_back({symbol.str(),
                                      (uint32_t)launch.getBindings().size() + numScratch,
                                      launch.getKernel().str(), numSymbols});
        runtime::LaunchCmd cmd{it->second, (uint32_t)launch.getWorkgroups(), {}, {}};
        if (launch.getSymbolicExtentAttr()) {
          auto count = symbolicWorkgroups(launch, kernelFunc);
          if (failed(count))
            return launch.emitOpError("has a workgroup count that is not an expression over "
                                      "size symbols");
          cmd.symbolicWorkgroups = std::move(*count);
          cmd.workgroups = 0;
        }
        cmd.cached = launch.getCached();
        for (Value binding : launch.getBindings())
          cmd.bindings.push_back(ids.lookup(binding));
        if (scratch > 0) {
          // The kernel's temporaries, private to this launch (a cached
          // launch's outlive the call, as all its buffers do).
          cmd.bindings.push_back(artifact.buffers.size());
          artifact.buffers.push_back(
              {cmd.cached ? runtime::BufferKind::Persistent : runtime::BufferKind::Alloc,
               runtime::TensorDesc{runtime::DType::U8, {scratch}}, 0, 0, {}});
        }
        // A GPU kernel's temporaries: a buffer each, sized by a constant or
        // by an expression over the size symbols.
        for (Attribute size : scratchBuffers ? scratchBuffers.getValue() : ArrayRef<Attribute>()) {
          runtime::BufferDesc buffer{cmd.cached ? runtime::BufferKind::Persistent
                                                : runtime::BufferKind::Alloc,
                                     runtime::TensorDesc{runtime::DType::U8, {0}}, 0, 0, {}};
          if (auto bytes = dyn_cast<IntegerAttr>(size)) {
            buffer.type.shape[0] = bytes.getInt();
          } else {
            auto expr = sizeExpr(cast<AffineMapAttr>(size).getValue().getResult(0));
            if (failed(expr))
              return launch.emitOpError("has a temporary whose size is not an expression over "
                                        "size symbols");
            buffer.type.shape[0] = -1;
            buffer.dims = {std::move(*expr)};
          }
          cmd.bindings.push_back(artifact.buffers.size());
          artifact.buffers.push_back(std::move(buffer));
        }
        artifact.launches.push_back(std::move(cmd));
      } else if (auto check = dyn_cast<plan::CheckOp>(op)) {
        artifact.checks.push_back(
            {ids.lookup(check.getCondition()), (uint32_t)artifact.launches.size(),
             check.getKind() == "index" ? runtime::StatusCode::IndexOutOfRange
                                        : runtime::StatusCode::Error,
             check.getMessage().str()});
      } else if (auto collective = dyn_cast<plan::CollectiveOp>(op)) {
        runtime::CollectiveCmd cmd;
        cmd.collective.kind = *collectiveKindOf(collective.getKind());
        cmd.collective.reduceOp = *reduceOpOf(collective.getReduceOp());
        cmd.collective.group = collective.getGroup().str();
        cmd.collective.groupSize = collective.getGroupSize();
        cmd.input = ids.lookup(collective.getInput());
        cmd.output = ids.lookup(collective.getOutput());
        cmd.afterLaunches = (uint32_t)artifact.launches.size();
        artifact.collectives.push_back(std::move(cmd));
      } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (Value v : ret.getOperands())
          artifact.outputs.push_back(ids.lookup(v));
      } else {
        return op.emitOpError("is not a host plan op");
      }
    }
    // GPU kernels run workgroups of several threads; CPU ones of one.
    std::vector<runtime::BlockSize> blockSizes(artifact.kernels.size());
    bool threaded = false;
    for (auto [kernelFunc, id] : kernelIds)
      if (auto size = kernelFunc->getAttrOfType<DenseI64ArrayAttr>(kernel::kWorkgroupSizeAttr)) {
        blockSizes[id] = {(uint32_t)size[0], (uint32_t)size[1], (uint32_t)size[2]};
        threaded = true;
      }
    if (threaded)
      executable.blockSizes = std::move(blockSizes);
    artifact.executables = {std::move(executable)};
    for (KernelSummary &summary : result_.kernels)
      for (runtime::LaunchCmd &cmd : artifact.launches)
        if (artifact.kernels[cmd.kernel].name == summary.name)
          summary.workgroups = cmd.symbolicWorkgroups.empty() ? (int64_t)cmd.workgroups : -1;
    artifact.metadata = metadataJson();
    runtime::Status status = runtime::verifyArtifact(artifact);
    if (!status.ok())
      return entry.emitError("internal error: invalid artifact: ") << status.message();
    return success();
  }

  std::string metadataJson() {
    llvm::json::Array kernels;
    for (const KernelSummary &k : result_.kernels) {
      llvm::json::Array ops, locations, nodes;
      for (const std::string &op : k.ops)
        ops.push_back(op);
      for (const std::string &line : k.locations)
        locations.push_back(line);
      for (const std::string &node : k.nodes)
        nodes.push_back(node);
      kernels.push_back(llvm::json::Object{{"name", k.name},
                                           {"workgroups", k.workgroups},
                                           {"ops", std::move(ops)},
                                           {"locations", std::move(locations)},
                                           {"nodes", std::move(nodes)}});
    }
    llvm::json::Object times;
    for (const auto &[stage, ms] : result_.stageTimesMs)
      times[stage] = ms;
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::json::Value(llvm::json::Object{{"kernels", std::move(kernels)},
                                               {"stage_times_ms", std::move(times)}});
    return text;
  }

  const CompileOptions &options;
  CompiledGraph result_;
  kernel::TargetAttr targetDescription_;        // what the kernels were compiled for
};

} // namespace

void kiln::useCompilerThreadPool(MLIRContext &context) {
  // One pool for the process: a context that owned threads would start and
  // join them on every compile. A forked child inherits the pool but not
  // its threads, so it makes its own (the parent's is leaked there: joining
  // threads that do not exist would hang).
  static std::mutex mutex;
  static llvm::DefaultThreadPool *pool = nullptr;
  static pid_t owner = 0;
  llvm::ThreadPoolInterface *shared;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!pool || owner != getpid()) {
      pool = new llvm::DefaultThreadPool(llvm::hardware_concurrency());
      owner = getpid();
    }
    shared = pool;
  }
  if (!context.isMultithreadingEnabled())
    context.setThreadPool(*shared);
}

void kiln::loadCompilerDialects(MLIRContext &context) {
  DialectRegistry registry;
  registerAllKilnDialects(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
}

char kiln::CompileFailure::ID = 0;

llvm::Expected<CompiledGraph> kiln::compileGraphModule(ModuleOp module,
                                                       const CompileOptions &options) {
  return Driver(options).compile(module);
}

llvm::Expected<CompiledGraph> kiln::compileFxGraphJson(llvm::StringRef json,
                                                       const CompileOptions &options) {
  auto start = std::chrono::steady_clock::now();
  MLIRContext context(MLIRContext::Threading::DISABLED);
  useCompilerThreadPool(context);
  loadCompilerDialects(context);
  DiagnosticCollector diagnostics(&context);
  OwningOpRef<ModuleOp> module = importFxGraph(json, context);
  if (!module)
    return diagnostics.error("importing the FX graph failed");
  double importMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  auto compiled = compileGraphModule(*module, options);
  if (compiled)
    compiled->stageTimesMs.insert(compiled->stageTimesMs.begin(), {"import", importMs});
  return compiled;
}

llvm::Expected<std::string> kiln::importFxGraphAsMLIR(llvm::StringRef json) {
  MLIRContext context(MLIRContext::Threading::DISABLED);
  useCompilerThreadPool(context);
  loadCompilerDialects(context);
  DiagnosticCollector diagnostics(&context);
  OwningOpRef<ModuleOp> module = importFxGraph(json, context);
  if (!module)
    return diagnostics.error("importing the FX graph failed");
  return printOp(*module);
}

llvm::Expected<CompiledGraph> kiln::compileSource(llvm::StringRef text, llvm::StringRef filename,
                                                  const CompileOptions &options) {
  if (text.ltrim().starts_with("{"))
    return compileFxGraphJson(text, options);
  MLIRContext context(MLIRContext::Threading::DISABLED);
  useCompilerThreadPool(context);
  loadCompilerDialects(context);
  DiagnosticCollector diagnostics(&context);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, filename),
                               llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return diagnostics.error("cannot parse " + filename.str());
  return compileGraphModule(*module, options);
}

llvm::Error kiln::writeStages(const CompiledGraph &compiled, llvm::StringRef directory) {
  if (std::error_code ec = llvm::sys::fs::create_directories(directory))
    return llvm::createStringError(ec, "cannot create " + directory.str());
  auto write = [&](const std::string &name, llvm::StringRef text) -> llvm::Error {
    llvm::SmallString<256> path(directory);
    llvm::sys::path::append(path, name);
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (ec)
      return llvm::createStringError(ec, "cannot write " + path.str().str());
    os << text;
    return llvm::Error::success();
  };
  for (auto [index, stage] : llvm::enumerate(compiled.stages)) {
    std::string name = (index < 10 ? "0" : "") + std::to_string(index) + "-" +
                       stage.first + ".mlir";
    if (llvm::Error err = write(name, stage.second))
      return err;
  }
  if (!compiled.llvmIR.empty())
    if (llvm::Error err = write("kernels.ll", compiled.llvmIR))
      return err;
  // Each kernel's lowest IR and assembly on its own, as the Python dumps
  // have them (kernels/kernel_0_add.ll, kernels/kernel_0_add.spirv.mlir).
  if (!compiled.kernelFiles.empty()) {
    llvm::SmallString<256> kernels(directory);
    llvm::sys::path::append(kernels, "kernels");
    if (std::error_code ec = llvm::sys::fs::create_directories(kernels))
      return llvm::createStringError(ec, "cannot create " + kernels.str().str());
    for (const auto &[name, text] : compiled.kernelFiles)
      if (llvm::Error err = write("kernels/" + name, text))
        return err;
    for (const auto &[name, bytes] : compiled.kernelBinaries)
      if (llvm::Error err = write("kernels/" + name, std::string(bytes.begin(), bytes.end())))
        return err;
  }
  if (!compiled.assembly.empty())
    if (llvm::Error err = write("kernels.s", compiled.assembly))
      return err;
  return llvm::Error::success();
}
