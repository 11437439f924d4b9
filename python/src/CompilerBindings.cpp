// kiln._C.compiler: FX graph JSON -> artifact bytes. No torch in here.
#include "Bindings.h"

#include "kiln/Compiler/Compiler.h"
#include "kiln/Importer/FxImporter.h"
#include "kiln/Pipelines/Pipelines.h"
#include "kiln/Target/CPU/CpuCodegen.h"

#include "llvm/Config/llvm-config.h"

#include <pybind11/stl.h>

namespace py = pybind11;

namespace kiln::python {

namespace {
/// Raises kiln._C.CompileError(message) with `nodes`: the FX nodes the
/// diagnostics name (empty when the failure is not located at a node).
[[noreturn]] void raiseCompileError(const py::exception<std::runtime_error> &type,
                                    llvm::Error error) {
  std::string message;
  std::vector<std::string> nodes;
  llvm::handleAllErrors(
      std::move(error),
      [&](const CompileFailure &failure) {
        message = failure.message;
        nodes = failure.nodes;
      },
      [&](const llvm::ErrorInfoBase &other) { message = other.message(); });
  py::object exception = py::reinterpret_borrow<py::object>(type.ptr())(message);
  exception.attr("nodes") = nodes;
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

/// One dict per kernel: name, workgroups (0 until the loops stage assigns
/// them), fused ops, source locations and FX nodes.
py::list kernelDicts(const std::vector<KernelSummary> &summaries) {
  py::list kernels;
  for (const KernelSummary &k : summaries) {
    py::dict kernel;
    kernel["name"] = k.name;
    kernel["workgroups"] = k.workgroups;
    kernel["ops"] = k.ops;
    kernel["locations"] = k.locations;
    kernel["nodes"] = k.nodes;
    kernels.append(kernel);
  }
  return kernels;
}
} // namespace

void initCompiler(py::module_ &root, py::module_ m) {
  static py::exception<std::runtime_error> compileError(root, "CompileError",
                                                        PyExc_RuntimeError);
  m.def(
      "compile",
      [](const std::string &json, const std::string &target, bool keepStages) {
        CompileOptions options;
        options.target = target;
        options.keepStages = keepStages;
        CompiledGraph compiled = compileOrRaise(compileError, json, options);
        std::vector<uint8_t> bytes = runtime::serializeArtifact(compiled.artifact);
        py::dict result;
        result["artifact"] = py::bytes(reinterpret_cast<const char *>(bytes.data()),
                                       bytes.size());
        result["kernels"] = (int)compiled.artifact.kernels.size();
        result["kernel_info"] = kernelDicts(compiled.kernels);
        result["stages"] = compiled.stages;
        result["stage_times_ms"] = compiled.stageTimesMs;
        result["kernels_compiled"] = compiled.kernelsCompiled;
        result["kernels_reused"] = compiled.kernelsReused;
        py::list asmList;
        if (!compiled.llvmIR.empty())
          asmList.append(py::make_tuple("kernels.ll", compiled.llvmIR));
        if (!compiled.assembly.empty())
          asmList.append(py::make_tuple("kernels.s", compiled.assembly));
        for (const auto &[file, text] : compiled.kernelFiles)
          asmList.append(py::make_tuple(file, text));
        result["kernel_asm"] = asmList;
        result["target"] = compiled.artifact.executables.front().format;
        return result;
      },
      py::arg("graph_json"), py::arg("target") = "cpu", py::arg("keep_stages") = false,
      "Compile the JSON form of an FX graph; raises CompileError with diagnostics.");
  m.def(
      "form_kernels",
      [](const std::string &json, const std::string &target) {
        CompileOptions options;
        options.target = target;
        options.formKernelsOnly = true;
        CompiledGraph formed = compileOrRaise(compileError, json, options);
        py::dict result;
        result["kernel_info"] = kernelDicts(formed.kernels);
        result["stage_times_ms"] = formed.stageTimesMs;
        return result;
      },
      py::arg("graph_json"), py::arg("target") = "cpu",
      "Import and run the graph stages only: the kernels fusion forms (name, ops, "
      "locations, nodes), without generating code. Raises CompileError.");
  m.def(
      "pipeline",
      [](const std::string &target) {
        auto cpu = cpu::CpuTarget::fromTargetName(target);
        if (!cpu)
          throw py::value_error(llvm::toString(cpu.takeError()));
        std::vector<std::pair<std::string, std::string>> stages;
        for (const PipelineStage &stage : graphStages(*cpu))
          stages.push_back({stage.name, stage.pipeline});
        for (const PipelineStage &stage : cpuKernelStages(*cpu))
          stages.push_back({stage.name, stage.pipeline});
        return stages;
      },
      py::arg("target") = "cpu",
      "The compiler's stages for a target, in order: (name, textual pass pipeline); "
      "the kernel stages run on the kernel functions, then native code generation.");
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
  m.def("supported_targets", [] {
    return std::vector<std::string>{"cpu", "cpu:x86-64-v2", "cpu:x86-64-v3", "cpu:x86-64-v4",
                                    "cpu:<name>"};
  });
  m.def(
      "target_info",
      [](const std::string &target) {
        auto cpu = cpu::CpuTarget::fromTargetName(target);
        if (!cpu)
          throw py::value_error(llvm::toString(cpu.takeError()));
        py::dict info;
        info["triple"] = cpu->triple;
        info["cpu"] = cpu->cpu;
        info["features"] = cpu->features;
        info["vector_bits"] = cpu->vectorBits();
        return info;
      },
      py::arg("target"),
      "The CPU a target option names (triple, cpu, features, vector_bits); ValueError "
      "for an unknown one.");
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
