// A fake libcuda.so.1 for the CUDA driver's tests (KILN_CUDA_DRIVER points
// the runtime at it): one GPU ("Fake H200", sm_90, 132 SMs), memory from
// the host's heap, and a log of what the runtime asked, in order, that the
// tests read through fakeCudaLog(). fakeCudaFailNext(call, code) makes the
// next call of that name fail with that CUresult.
//
// A kernel image is a stand-in fatbin: the fatbin magic, the number of
// 8-byte parameters its entry takes (u32), then the entry's name (NUL-
// terminated); a launch logs its grid, block and each parameter's value.
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

namespace {

struct Module {
  std::string entry;
  uint32_t numParams = 0;
};

std::mutex mutex;
std::string log;
std::map<std::string, int> failures; // call -> CUresult of its next call
// The GPU's compute capability (an H200's unless a test sets another).
int capabilityMajor = 9, capabilityMinor = 0;

int fail(const char *call) {
  auto it = failures.find(call);
  if (it == failures.end())
    return 0;
  int code = it->second;
  failures.erase(it);
  return code;
}

void record(const std::string &line) { log += line + "\n"; }

} // namespace

#define FAKE_CALL(name)                                                                        \
  std::lock_guard<std::mutex> lock(mutex);                                                     \
  if (int code = fail(name)) {                                                                 \
    record(std::string(name) + " failed " + std::to_string(code));                             \
    return code;                                                                               \
  }

extern "C" {

const char *fakeCudaLog() {
  static std::string copy;
  std::lock_guard<std::mutex> lock(mutex);
  copy = log;
  return copy.c_str();
}

void fakeCudaReset() {
  std::lock_guard<std::mutex> lock(mutex);
  log.clear();
  failures.clear();
  capabilityMajor = 9;
  capabilityMinor = 0;
}

void fakeCudaSetCapability(int major, int minor) {
  std::lock_guard<std::mutex> lock(mutex);
  capabilityMajor = major;
  capabilityMinor = minor;
}

void fakeCudaFailNext(const char *call, int code) {
  std::lock_guard<std::mutex> lock(mutex);
  failures[call] = code;
}

int cuInit(unsigned) {
  FAKE_CALL("cuInit");
  return 0;
}

int cuGetErrorName(int code, const char **name) {
  switch (code) {
  case 1: *name = "CUDA_ERROR_INVALID_VALUE"; return 0;
  case 2: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return 0;
  case 500: *name = "CUDA_ERROR_NOT_FOUND"; return 0;
  case 700: *name = "CUDA_ERROR_ILLEGAL_ADDRESS"; return 0;
  default: return 1;
  }
}

int cuGetErrorString(int code, const char **text) {
  switch (code) {
  case 1: *text = "invalid argument"; return 0;
  case 2: *text = "out of memory"; return 0;
  case 500: *text = "named symbol not found"; return 0;
  case 700: *text = "an illegal memory access was encountered"; return 0;
  default: return 1;
  }
}

int cuDeviceGetCount(int *count) {
  FAKE_CALL("cuDeviceGetCount");
  *count = 1;
  return 0;
}

int cuDeviceGet(int *device, int ordinal) {
  FAKE_CALL("cuDeviceGet");
  *device = ordinal;
  return ordinal == 0 ? 0 : 101; // CUDA_ERROR_INVALID_DEVICE
}

int cuDeviceGetName(char *name, int length, int) {
  std::strncpy(name, "Fake H200", static_cast<size_t>(length));
  return 0;
}

int cuDeviceGetAttribute(int *value, int attribute, int) {
  switch (attribute) {
  case 16: *value = 132; return 0; // multiprocessors
  case 75: *value = capabilityMajor; return 0; // compute capability
  case 76: *value = capabilityMinor; return 0;
  default: return 1;
  }
}

int cuDevicePrimaryCtxRetain(void **context, int) {
  FAKE_CALL("cuDevicePrimaryCtxRetain");
  static int primary;
  *context = &primary;
  record("cuDevicePrimaryCtxRetain");
  return 0;
}

int cuDevicePrimaryCtxRelease_v2(int) {
  std::lock_guard<std::mutex> lock(mutex);
  record("cuDevicePrimaryCtxRelease");
  return 0;
}

int cuCtxSetCurrent(void *) { return 0; }

int cuStreamSynchronize(void *stream) {
  FAKE_CALL("cuStreamSynchronize");
  char text[32];
  std::snprintf(text, sizeof(text), "%p", stream);
  record(std::string("cuStreamSynchronize ") + text);
  return 0;
}

int cuCtxSynchronize() {
  FAKE_CALL("cuCtxSynchronize");
  record("cuCtxSynchronize");
  return 0;
}

int cuMemAlloc_v2(unsigned long long *address, size_t bytes) {
  FAKE_CALL("cuMemAlloc");
  void *memory = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  *address = reinterpret_cast<uintptr_t>(memory);
  return memory ? 0 : 2;
}

int cuMemFree_v2(unsigned long long address) {
  std::free(reinterpret_cast<void *>(static_cast<uintptr_t>(address)));
  return 0;
}

int cuMemcpyHtoD_v2(unsigned long long device, const void *host, size_t bytes) {
  FAKE_CALL("cuMemcpyHtoD");
  std::memcpy(reinterpret_cast<void *>(static_cast<uintptr_t>(device)), host, bytes);
  return 0;
}

int cuMemcpyDtoH_v2(void *host, unsigned long long device, size_t bytes) {
  FAKE_CALL("cuMemcpyDtoH");
  std::memcpy(host, reinterpret_cast<const void *>(static_cast<uintptr_t>(device)), bytes);
  return 0;
}

int cuMemcpyDtoD_v2(unsigned long long target, unsigned long long source, size_t bytes) {
  std::memcpy(reinterpret_cast<void *>(static_cast<uintptr_t>(target)),
              reinterpret_cast<const void *>(static_cast<uintptr_t>(source)), bytes);
  return 0;
}

int cuModuleLoadData(Module **module, const void *image) {
  FAKE_CALL("cuModuleLoadData");
  const auto *bytes = static_cast<const uint8_t *>(image);
  uint32_t magic = 0;
  std::memcpy(&magic, bytes, 4);
  if (magic != 0xBA55ED50u)
    return 200; // CUDA_ERROR_INVALID_IMAGE
  auto *loaded = new Module();
  std::memcpy(&loaded->numParams, bytes + 4, 4);
  loaded->entry = reinterpret_cast<const char *>(bytes + 8);
  *module = loaded;
  record("cuModuleLoadData " + loaded->entry);
  return 0;
}

int cuModuleUnload(Module *module) {
  std::lock_guard<std::mutex> lock(mutex);
  record("cuModuleUnload " + module->entry);
  delete module;
  return 0;
}

int cuModuleGetFunction(Module **function, Module *module, const char *name) {
  FAKE_CALL("cuModuleGetFunction");
  record("cuModuleGetFunction " + std::string(name));
  if (module->entry != name)
    return 500;
  *function = module; // a function is its module: one entry each
  return 0;
}

int cuLaunchKernel(Module *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                   unsigned by, unsigned bz, unsigned shared, void *stream, void **params,
                   void **extra) {
  FAKE_CALL("cuLaunchKernel");
  std::string line = "cuLaunchKernel " + function->entry + " grid=" + std::to_string(gx) + "," +
                     std::to_string(gy) + "," + std::to_string(gz) + " block=" +
                     std::to_string(bx) + "," + std::to_string(by) + "," + std::to_string(bz) +
                     " shared=" + std::to_string(shared);
  if (stream) {
    char text[32];
    std::snprintf(text, sizeof(text), "%p", stream);
    line += std::string(" stream=") + text;
  }
  line += " params=";
  for (uint32_t i = 0; i < function->numParams; ++i) {
    uint64_t value = 0;
    std::memcpy(&value, params[i], 8);
    line += (i ? "," : "") + std::to_string(value);
  }
  record(line);
  return 0;
}

} // extern "C"
