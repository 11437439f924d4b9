// PTX per kernel from MLIR's NVVM target, then the toolkit's ptxas and
// fatbinary: a fatbin per kernel in the runtime's CUDA container.
#include "kiln/Target/CUDA/CudaTarget.h"

#include "kiln/runtime/GpuImageContainer.h"

#include "kiln/Target/GPU/GpuBinaries.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"

#include <chrono>

using namespace mlir;

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// A temporary file, removed when this goes.
struct TemporaryFile {
  llvm::SmallString<128> path;
  std::optional<llvm::FileRemover> remover;
  llvm::Error make(llvm::StringRef suffix) {
    if (std::error_code error = llvm::sys::fs::createTemporaryFile("kiln-kernel", suffix, path))
      return llvm::createStringError("cannot create a temporary ." + suffix.str() +
                                     " file: " + error.message());
    remover.emplace(path);
    return llvm::Error::success();
  }
};

llvm::Expected<std::string> readFile(llvm::StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return llvm::createStringError("cannot read " + path.str() + ": " + buffer.getError().message());
  return (*buffer)->getBuffer().str();
}

/// Runs `program` with `arguments`; its standard error (ptxas's report and
/// messages) comes back in `report`.
llvm::Error run(llvm::StringRef program, llvm::ArrayRef<std::string> arguments,
                const std::string &kernel, std::string &report) {
  TemporaryFile errors;
  if (llvm::Error error = errors.make("log"))
    return error;
  std::vector<llvm::StringRef> argv{program};
  for (const std::string &argument : arguments)
    argv.push_back(argument);
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, std::nullopt,
                                                llvm::StringRef(errors.path)};
  std::string message;
  int code = llvm::sys::ExecuteAndWait(program, argv, std::nullopt, redirects, 0, 0, &message);
  llvm::Expected<std::string> log = readFile(errors.path);
  report = log ? *log : "";
  if (!log)
    llvm::consumeError(log.takeError());
  if (code != 0)
    return llvm::createStringError(llvm::sys::path::filename(program).str() + " failed on kernel '" +
                                   kernel + "'" + (message.empty() ? "" : ": " + message) +
                                   (report.empty() ? "" : "\n" + report));
  return llvm::Error::success();
}

/// PTX that calls a function it does not define would fail in ptxas (or,
/// worse, at load): MLIR leaves libdevice's functions undefined when it
/// found no toolkit, and says so only in a diagnostic.
llvm::Error checkNoExternalFunctions(llvm::StringRef ptx, const std::string &kernel) {
  size_t at = ptx.find(".extern .func");
  if (at == llvm::StringRef::npos)
    return llvm::Error::success();
  llvm::StringRef line = ptx.substr(at).take_until([](char c) { return c == '\n'; });
  return llvm::createStringError("the PTX of kernel '" + kernel +
                                 "' calls a function it does not define (" + line.str() +
                                 "): libdevice was not linked");
}

} // namespace

llvm::Expected<kiln::SerializedKernels>
kiln::cuda::serializeNvvmKernels(ModuleOp kernels, llvm::StringRef chip, bool keepText) {
  SerializedKernels result;
  llvm::Expected<CudaToolkit> toolkit = findCudaToolkit();
  if (!toolkit)
    return toolkit.takeError();
  kiln::gpu::registerGpuTranslations(*kernels.getContext());

  // PTX of each gpu.module, libdevice linked from the toolkit.
  auto start = Clock::now();
  if (llvm::Error error = kiln::gpu::runReportingErrors(
          kernels, "gpu-module-to-binary{format=isa toolkit=" + toolkit->root + "}",
          "lowering the kernels to PTX failed"))
    return std::move(error);
  result.stepTimesMs.push_back({"ptx", msSince(start)});

  start = Clock::now();
  struct Job {
    std::string name, ptx;
    std::string report, error; // ptxas's report; what failed
    std::vector<uint8_t> image;
  };
  std::vector<Job> jobs;
  for (auto &[name, ptx] : kiln::gpu::binaryObjects(kernels)) {
    Job job;
    job.name = name;
    job.ptx = ptx;
    if (llvm::Error error = checkNoExternalFunctions(job.ptx, job.name))
      return std::move(error);
    jobs.push_back(std::move(job));
  }
  // ptxas and fatbinary per kernel, on every core.
  std::string sm = chip.drop_front(3).str(); // "sm_90a" -> "90a"
  auto assemble = [&](Job &job) -> llvm::Error {
    TemporaryFile ptxFile, cubin, fatbin;
    for (auto [file, suffix] : {std::pair{&ptxFile, "ptx"}, {&cubin, "cubin"}, {&fatbin, "fatbin"}})
      if (llvm::Error error = file->make(suffix))
        return error;
    {
      std::error_code error;
      llvm::raw_fd_ostream out(ptxFile.path, error);
      if (error)
        return llvm::createStringError("cannot write " + ptxFile.path.str().str() + ": " +
                                       error.message());
      out << job.ptx;
    }
    std::string ignored;
    if (llvm::Error error = run(toolkit->ptxas,
                                {"-arch=" + chip.str(), "--opt-level", "3", "-v",
                                 ptxFile.path.str().str(), "-o", cubin.path.str().str()},
                                job.name, job.report))
      return error;
    if (llvm::Error error =
            run(toolkit->fatbinary,
                {"-64", "--create=" + fatbin.path.str().str(),
                 "--image3=kind=elf,sm=" + sm + ",file=" + cubin.path.str().str(),
                 "--image3=kind=ptx,sm=" + sm + ",file=" + ptxFile.path.str().str()},
                job.name, ignored))
      return error;
    llvm::Expected<std::string> bytes = readFile(fatbin.path);
    if (!bytes)
      return bytes.takeError();
    job.image.assign(bytes->begin(), bytes->end());
    return llvm::Error::success();
  };
  {
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency());
    for (Job &job : jobs)
      pool.async([&assemble, &job] {
        if (llvm::Error error = assemble(job))
          job.error = llvm::toString(std::move(error));
      });
    pool.wait();
  }
  std::vector<runtime::GpuKernelImage> images;
  for (Job &job : jobs) {
    if (!job.error.empty())
      return llvm::createStringError(job.error);
    KernelCode code;
    code.name = job.name;
    code.symbol = job.name;
    if (keepText) {
      code.ir = job.ptx;
      code.irExtension = "ptx";
      code.assembly = job.report; // ptxas's registers, shared memory, stack and spills
      code.assemblyExtension = "ptxas.txt";
    }
    result.kernels.push_back(std::move(code));
    images.push_back({job.name, std::move(job.image)});
  }
  result.stepTimesMs.push_back({"ptxas", msSince(start)});
  result.kernelsCompiled = static_cast<int>(images.size());
  result.executable = runtime::encodeGpuImageContainer(images);
  return result;
}
