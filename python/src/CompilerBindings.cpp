// kiln._C.compiler: FX graph JSON -> artifact bytes. No torch in here.
#include "Bindings.h"

#include "kiln/Compiler/Compiler.h"
#include "kiln/Importer/FxImporter.h"
#include "kiln/Pipelines/Pipelines.h"
#include "kiln/InitAll.h"
#include "kiln/Target/CPU/CpuTarget.h"
#include "kiln/Target/Target.h"

#include "mlir/IR/MLIRContext.h"

#include "llvm/Config/llvm-config.h"

#include <pybind11/stl.h>

namespace py = pybind11;

namespace kiln::python {

namespace {
/// The target a name names, from the compiler's registry; ValueError listing
/// the accepted names for an unknown one.
std::unique_ptr<Target> parseTargetOrRaise(const std::string &name) {
  registerAllTargets();
  auto parsed = TargetRegistry::parse(name);
  if (!parsed)
    throw py::value_error(llvm::toString(parsed.takeError()));
  return std::move(*parsed);
}

/// Raises kiln._C.CompileError(message) with `nodes`: the FX nodes the
/// diagnostics name (empty when the failure is not located at a node).
[[noreturn]] void raiseCompileError(const py::exception<std::runtime_error> &type,
                                    llvm::Error error) {
  std::string message;
  std::vector<std::string> nodes;
  std::vector<std::pair<std::string, std::string>> stages;
  llvm::handleAllErrors(
      std::move(error),
      [&](const CompileFailure &failure) {
        message = failure.message;
        nodes = failure.nodes;
        stages = failure.stages;
      },
      [&](const llvm::ErrorInfoBase &other) { message = other.message(); });
  py::object exception = py::reinterpret_borrow<py::object>(type.ptr())(message);
  exception.attr("nodes") = nodes;
  // With keep_stages: (stage, IR text) of the stages that finished.
  exception.attr("stages") = stages;
  PyErr_SetObject(type.ptr(), exception.ptr());
  throw py::error_already_set();
}
/// compileFxGraphJson without the GIL, raising CompileError on failure.
CompiledGraph compileOrRaise(const py::exception<std::runtime_error> &compileError,
                             const std::string &json, const CompileOptions &options) {
  llvm::Expected<CompiledGraph> compiled = [&] {
    py::gil_scoped_release release;
    return compileFxGraphJson(json, options);
  }();
  if (!compiled)
    raiseCompileError(compileError, compiled.takeError());
  return std::move(*compiled);
}

/// What Python gets of a compile: the artifact's bytes and what the compiler
/// did, bound as kiln._C.compiler.CompiledGraph.
struct CompileResult {
  std::string artifact; // serialized; empty for form_kernels
  std::string target;   // the artifact's executable format
  int kernelCount = 0;
  std::vector<KernelSummary> kernels;
  std::vector<std::pair<std::string, std::string>> stages;
  std::vector<std::pair<std::string, double>> stageTimesMs;
  int kernelsCompiled = 0, kernelsReused = 0;
  /// (file name, text): all kernels' LLVM IR and assembly, then each kernel's.
  std::vector<std::pair<std::string, std::string>> kernelFiles;
};

CompileResult resultOf(CompiledGraph compiled, bool serialize) {
  CompileResult result;
  if (serialize) {
    std::vector<uint8_t> bytes = runtime::serializeArtifact(compiled.artifact);
    result.artifact.assign(reinterpret_cast<const char *>(bytes.data()), bytes.size());
    result.target = compiled.artifact.executables.front().format;
    result.kernelCount = (int)compiled.artifact.kernels.size();
  }
  result.kernels = std::move(compiled.kernels);
  result.stages = std::move(compiled.stages);
  result.stageTimesMs = std::move(compiled.stageTimesMs);
  result.kernelsCompiled = compiled.kernelsCompiled;
  result.kernelsReused = compiled.kernelsReused;
  if (!compiled.llvmIR.empty())
    result.kernelFiles.push_back({"kernels.ll", std::move(compiled.llvmIR)});
  if (!compiled.assembly.empty())
    result.kernelFiles.push_back({"kernels.s", std::move(compiled.assembly)});
  for (auto &file : compiled.kernelFiles)
    result.kernelFiles.push_back(std::move(file));
  return result;
}

void bindResults(py::module_ m) {
  py::class_<KernelSummary>(m, "KernelSummary",
                            "One kernel as the user sees it: the graph ops it fused, from "
                            "which source lines and FX nodes.")
      .def_readonly("name", &KernelSummary::name)
      .def_readonly("workgroups", &KernelSummary::workgroups,
                    "Workgroups per launch; -1 when computed from symbolic sizes at each "
                    "launch, 0 when only kernels were formed")
      .def_readonly("ops", &KernelSummary::ops)
      .def_readonly("locations", &KernelSummary::locations)
      .def_readonly("nodes", &KernelSummary::nodes)
      .def("to_dict", [](const KernelSummary &k) {
        py::dict d;
        d["name"] = k.name;
        d["workgroups"] = k.workgroups;
        d["ops"] = k.ops;
        d["locations"] = k.locations;
        d["nodes"] = k.nodes;
        return d;
      })
      .def("__repr__", [](const KernelSummary &k) {
        return "KernelSummary(" + k.name + ", " + std::to_string(k.ops.size()) + " ops)";
      });
  py::class_<CompileResult>(m, "CompiledGraph", "What compiling one graph produced.")
      .def_property_readonly(
          "artifact", [](const CompileResult &r) { return py::bytes(r.artifact); },
          "The artifact's bytes (kiln._C.runtime.Executable loads them); empty when only "
          "kernels were formed")
      .def_readonly("target", &CompileResult::target, "The artifact's executable format")
      .def_readonly("kernel_count", &CompileResult::kernelCount)
      .def_readonly("kernels", &CompileResult::kernels)
      .def_readonly("stages", &CompileResult::stages, "(stage, IR text), with keep_stages")
      .def_readonly("stage_times_ms", &CompileResult::stageTimesMs)
      .def_readonly("kernels_compiled", &CompileResult::kernelsCompiled)
      .def_readonly("kernels_reused", &CompileResult::kernelsReused)
      .def_readonly("kernel_files", &CompileResult::kernelFiles,
                    "(file name, text) of the kernels' IR and assembly, with keep_stages");
}
} // namespace

void initCompiler(py::module_ &root, py::module_ m) {
  static py::exception<std::runtime_error> compileError(root, "CompileError",
                                                        PyExc_RuntimeError);
  m.attr("available") = true;
  bindResults(m);
  m.def(
      "compile",
      [](const std::string &json, const std::string &target, bool keepStages) {
        CompileOptions options;
        options.target = target;
        options.keepStages = keepStages;
        return resultOf(compileOrRaise(compileError, json, options), /*serialize=*/true);
      },
      py::arg("graph_json"), py::arg("target") = "cpu", py::arg("keep_stages") = false,
      "Compile the JSON form of an FX graph to a CompiledGraph; raises CompileError with "
      "diagnostics.");
  m.def(
      "form_kernels",
      [](const std::string &json, const std::string &target) {
        CompileOptions options;
        options.target = target;
        options.formKernelsOnly = true;
        return resultOf(compileOrRaise(compileError, json, options), /*serialize=*/false);
      },
      py::arg("graph_json"), py::arg("target") = "cpu",
      "Import and run the graph stages only: a CompiledGraph whose kernels are those "
      "fusion forms (name, ops, locations, nodes), without code or artifact. Raises "
      "CompileError.");
  m.def(
      "pipeline",
      [](const std::string &target) {
        std::unique_ptr<Target> parsed = parseTargetOrRaise(target);
        std::vector<std::pair<std::string, std::string>> stages;
        for (const PipelineStage &stage : graphStages(*parsed))
          stages.push_back({stage.name, stage.pipeline});
        for (const PipelineStage &stage : parsed->kernelStages())
          stages.push_back({stage.name, stage.pipeline});
        return stages;
      },
      py::arg("target") = "cpu",
      "The compiler's stages for a target, in order: (name, textual pass pipeline); "
      "the kernel stages run on the kernel functions, then the target serializes them.");
  m.def(
      "import_graph",
      [](const std::string &json) {
        llvm::Expected<std::string> text = importFxGraphAsMLIR(json);
        if (!text)
          raiseCompileError(compileError, text.takeError());
        return *text;
      },
      py::arg("graph_json"),
      "Import the JSON form of an FX graph; returns kiln_graph MLIR text with locations.");
  m.def("supported_ops", &supportedFxTargets,
        "ATen overloads the importer understands.");
  m.def("symbolic_ops", &symbolicFxTargets,
        "Those of the supported ATen overloads that compile with symbolic sizes.");
  m.def("symint_scalar_ops", &symintScalarFxTargets,
        "Those that take a SymInt as a scalar operand (x * s0).");
  m.def(
      "supported_targets",
      [] {
        registerAllTargets();
        std::vector<std::pair<std::string, std::string>> kinds;
        for (const TargetRegistry::Kind &kind : TargetRegistry::kinds())
          kinds.push_back({kind.kind, kind.help});
        return kinds;
      },
      "The registered target kinds: (kind, the names it accepts).");
  m.def(
      "target_info",
      [](const std::string &target) {
        std::unique_ptr<Target> parsed = parseTargetOrRaise(target);
        // The description is a Kernel dialect attribute; nothing else is needed.
        mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
        context.getOrLoadDialect<kernel::KernelDialect>();
        kernel::TargetAttr description = parsed->describe(context);
        py::dict info;
        info["kind"] = description.getKind().str();
        info["name"] = description.getName().str();
        info["format"] = description.getFormat().str();
        info["triple"] = description.getTriple().str();
        info["cpu"] = description.getChip().str();
        info["features"] = description.getFeatures().str();
        info["vector_bits"] = description.getVectorBits();
        info["vector_registers"] = description.getVectorRegisters();
        info["l1_bytes"] = description.getL1Bytes();
        info["l2_bytes"] = description.getL2Bytes();
        info["subgroup_size"] = description.getSubgroupSize();
        info["max_workgroup_size"] = description.getMaxWorkgroupSize();
        info["shared_memory_bytes"] = description.getSharedMemoryBytes();
        std::string text;
        llvm::raw_string_ostream os(text);
        os << description;
        info["attribute"] = text;
        return info;
      },
      py::arg("target"),
      "The target registry's description of a target name (kind, format, triple, cpu, "
      "features, vector_bits, ..., and the #kiln_kernel.target attribute passes read); "
      "ValueError for an unknown name, listing the accepted ones.");
  m.def(
      "build_info",
      [] {
        cpu::CpuTarget host = cpu::CpuTarget::host();
        py::dict info;
        info["llvm_version"] = LLVM_VERSION_STRING;
        info["artifact_format"] = runtime::kArtifactFormatVersion;
        info["triple"] = host.triple;
        info["cpu"] = host.cpu;
        info["features"] = host.features;
        return info;
      },
      "What the compiled code depends on besides the graph: the LLVM version, the "
      "artifact format and the host CPU's triple, name and features.");
}

} // namespace kiln::python
