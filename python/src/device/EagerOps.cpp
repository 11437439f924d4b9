// The kiln device's ops: the native ops every PrivateUse1 backend must
// provide (allocation, views, copies, resizing), and the boxed fallback that
// runs any other op's ATen CPU kernel on CPU tensors over kiln memory
// (zero-copy views of the CPU driver's, host copies of a GPU driver's).
// Every call of either kind is counted per operator, so a user (and the
// tests) can see what ran where: kiln.device.stats().
#include "EagerDevice.h"

#include <ATen/ATen.h>
#include <ATen/CPUFunctions.h>
#include <ATen/EmptyTensor.h>
#include <ATen/NativeFunctions.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "kiln/runtime/Device.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string_view>
#include <unordered_map>

namespace rt = kiln::runtime;

namespace kiln::python::eager {
namespace {

constexpr c10::DispatchKeySet kKilnKeys(c10::DispatchKey::PrivateUse1);

//===--- Counting -------------------------------------------------------===//

OpCounts &fallbacks() {
  static OpCounts counts;
  return counts;
}

/// The device's own ops, counted by their name literals (few and fixed).
using NativeCounts = CallCounts<const char *>;

NativeCounts &natives() {
  static NativeCounts counts;
  return counts;
}

FallbackPolicy policyFromEnvironment() {
  const char *value = std::getenv("KILN_EAGER_FALLBACK");
  std::string_view text = value ? value : "";
  if (text == "warn")
    return FallbackPolicy::Warn;
  if (text == "error")
    return FallbackPolicy::Error;
  TORCH_CHECK(text.empty() || text == "allow",
              "KILN_EAGER_FALLBACK must be allow, warn or error; got '", text, "'");
  return FallbackPolicy::Allow;
}

std::atomic<FallbackPolicy> &policy() {
  static std::atomic<FallbackPolicy> value{policyFromEnvironment()};
  return value;
}

//===--- Native ops -----------------------------------------------------===//

at::Tensor emptyMemoryFormat(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                             std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                             std::optional<bool> pinMemory,
                             std::optional<c10::MemoryFormat> memoryFormat) {
  natives().add("aten::empty.memory_format");
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided,
              "the kiln device holds strided tensors only");
  TORCH_CHECK(!c10::pinned_memory_or_default(pinMemory), "only CPU memory can be pinned");
  const c10::DeviceGuard guard(c10::device_or_default(device));
  return at::detail::empty_generic(size, &deviceAllocator(), kKilnKeys,
                                   c10::dtype_or_default(dtype), memoryFormat);
}

at::Tensor emptyStrided(c10::IntArrayRef size, c10::IntArrayRef stride,
                        std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                        std::optional<c10::Device> device, std::optional<bool> pinMemory) {
  natives().add("aten::empty_strided");
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided,
              "the kiln device holds strided tensors only");
  TORCH_CHECK(!c10::pinned_memory_or_default(pinMemory), "only CPU memory can be pinned");
  const c10::DeviceGuard guard(c10::device_or_default(device));
  return at::detail::empty_strided_generic(size, stride, &deviceAllocator(), kKilnKeys,
                                           c10::dtype_or_default(dtype));
}

at::Tensor asStrided(const at::Tensor &self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                     std::optional<c10::SymInt> storageOffset) {
  natives().add("aten::as_strided");
  std::optional<int64_t> offset;
  if (storageOffset)
    offset = storageOffset->expect_int();
  return at::native::as_strided_tensorimpl(self, C10_AS_INTARRAYREF_SLOW(size),
                                           C10_AS_INTARRAYREF_SLOW(stride), offset);
}

at::Tensor view(const at::Tensor &self, c10::SymIntArrayRef size) {
  natives().add("aten::view");
  return at::native::view(self, C10_AS_INTARRAYREF_SLOW(size));
}

at::Tensor reshapeAlias(const at::Tensor &self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
  natives().add("aten::_reshape_alias");
  return at::native::_reshape_alias(self, C10_AS_INTARRAYREF_SLOW(size),
                                    C10_AS_INTARRAYREF_SLOW(stride));
}

const at::Tensor &resize(const at::Tensor &self, c10::SymIntArrayRef size,
                         std::optional<c10::MemoryFormat> memoryFormat) {
  natives().add("aten::resize_");
  // Grown here, through the device's copies (ATen's CPU resize would copy
  // the old bytes with memcpy, which a GPU driver's addresses do not take).
  int64_t numel = c10::multiply_integers(C10_AS_INTARRAYREF_SLOW(size));
  size_t needed = numel == 0 ? 0 : (size_t)(self.storage_offset() + numel) * self.itemsize();
  if (needed > self.storage().nbytes())
    resizeKilnStorage(self.storage(), needed);
  return at::native::resize_(self, C10_AS_INTARRAYREF_SLOW(size), memoryFormat);
}

/// Whether `a` and `b` lay out their elements alike in one dense block, so
/// a copy between them is one copy of bytes.
bool sameDenseLayout(const at::Tensor &a, const at::Tensor &b) {
  return a.scalar_type() == b.scalar_type() && a.sizes().equals(b.sizes()) &&
         a.is_non_overlapping_and_dense() && a.strides().equals(b.strides());
}

/// A copy where a GPU driver holds the kiln memory: one copy of bytes where
/// both sides are laid out alike, else ATen's CPU copy between host copies.
void copyThroughDriver(const at::Tensor &source, const at::Tensor &target) {
  if (source.numel() == 0)
    return;
  rt::Device &device = eagerRuntimeDevice();
  if (sameDenseLayout(source, target)) {
    size_t bytes = source.nbytes();
    void *to = target.data_ptr();
    const void *from = source.data_ptr();
    if (source.is_privateuseone() && target.is_privateuseone())
      throwIfFailed(device.copyDeviceToDevice(to, from, bytes), "copying on the device");
    else if (target.is_privateuseone())
      throwIfFailed(device.copyHostToDevice(to, from, bytes), "copying to the device");
    else
      throwIfFailed(device.copyDeviceToHost(to, from, bytes), "copying to the host");
    return;
  }
  HostStaging staging;
  at::Tensor from = source.is_privateuseone() ? staging.toHost(source) : source;
  at::Tensor to = target.is_privateuseone() ? staging.toHost(target) : target;
  at::native::copy_(to, from, false);
  if (target.is_privateuseone()) {
    staging.written(target);
    staging.flush();
  }
}

at::Tensor copyFrom(const at::Tensor &self, const at::Tensor &dst, bool nonBlocking) {
  natives().add("aten::_copy_from");
  copyInto(dst, self);
  (void)nonBlocking; // the CPU driver copies at once; a GPU driver's host copies wait
  return dst;
}

at::Tensor copyFromAndResize(const at::Tensor &self, const at::Tensor &dst) {
  natives().add("aten::_copy_from_and_resize");
  resize(dst, c10::fromIntArrayRefSlow(self.sizes()), std::nullopt);
  return copyFrom(self, dst, false);
}

at::Scalar localScalarDense(const at::Tensor &self) {
  natives().add("aten::_local_scalar_dense");
  if (memoryIsHost())
    return at::native::_local_scalar_dense_cpu(cpuView(self));
  at::Tensor host = at::empty({}, self.options().device(c10::kCPU));
  throwIfFailed(eagerRuntimeDevice().copyDeviceToHost(host.data_ptr(), self.data_ptr(),
                                                      self.itemsize()),
                "reading a scalar");
  return at::native::_local_scalar_dense_cpu(host);
}

at::Tensor &setSourceTensor(at::Tensor &self, const at::Tensor &source) {
  natives().add("aten::set_.source_Tensor");
  return at::native::set_tensor_(self, source);
}

at::Tensor &setSourceStorage(at::Tensor &self, at::Storage source) {
  natives().add("aten::set_.source_Storage");
  return at::native::set_(self, source);
}

at::Tensor &setSourceStorageOffset(at::Tensor &self, at::Storage source, int64_t offset,
                                   c10::IntArrayRef size, c10::IntArrayRef stride) {
  natives().add("aten::set_.source_Storage_storage_offset");
  return at::cpu::set_(self, source, offset, size, stride);
}

//===--- The fallback ---------------------------------------------------===//

bool isGeneratorArgument(const c10::Argument &argument) {
  c10::TypePtr type = argument.type();
  if (auto optional = type->cast<c10::OptionalType>())
    type = optional->getElementType();
  return type->kind() == c10::TypeKind::GeneratorType;
}

/// One fallback call: kiln tensors in the arguments become CPU tensors over
/// their memory (views of host memory, or host copies of a GPU driver's);
/// afterwards what the kernel wrote goes back (host copies are uploaded),
/// the views' changes (an out= argument resized or re-pointed) go back to
/// the kiln tensors, and results become kiln tensors: the same tensor for a
/// returned argument, an alias of an argument's memory for a view, and for
/// a new result its CPU memory adopted (host memory) or uploaded.
class FallbackCall {
public:
  c10::IValue toCpu(const c10::IValue &value) {
    if (value.isTensor())
      return toCpu(value.toTensor());
    if (value.isTensorList()) {
      c10::List<at::Tensor> list;
      list.reserve(value.toTensorList().size());
      for (const at::Tensor &tensor : value.toTensorList())
        list.push_back(toCpu(tensor));
      return list;
    }
    if (value.isOptionalTensorList()) {
      c10::List<std::optional<at::Tensor>> list;
      for (const std::optional<at::Tensor> &tensor : value.toOptionalTensorList())
        list.push_back(tensor ? std::optional<at::Tensor>(toCpu(*tensor)) : std::nullopt);
      return list;
    }
    if (value.isDevice() && value.toDevice().is_privateuseone()) {
      noteDevice(value.toDevice().has_index() ? value.toDevice().index() : currentDevice());
      return c10::Device(c10::kCPU);
    }
    return value;
  }

  /// Notes that the kernel writes the kiln tensors of `value` (an argument
  /// its schema marks written), after toCpu() of it.
  void written(const c10::IValue &value) {
    if (host_)
      return; // the kernel writes the memory itself
    if (value.isTensor() && value.toTensor().defined() && value.toTensor().is_privateuseone())
      staging_.written(value.toTensor());
    if (value.isTensorList())
      for (const at::Tensor &tensor : value.toTensorList())
        if (tensor.defined() && tensor.is_privateuseone())
          staging_.written(tensor);
  }

  /// The CPU generator a random op draws from: one derived from the kiln
  /// generator given, or from the device's default one.
  c10::IValue generatorFor(const c10::IValue &value) {
    if (value.isGenerator()) {
      const at::Generator &generator = value.toGenerator();
      TORCH_CHECK(generator.device().is_privateuseone(),
                  "Expected a 'kiln' device type for generator but found '",
                  generator.device().type(), "'");
      return cpuGeneratorFor(generator);
    }
    if (device_ < 0)
      return value; // no kiln tensor: nothing random happens on the device
    return cpuGeneratorFor(defaultGenerator(device_));
  }

  c10::IValue fromCpu(const c10::IValue &value) {
    if (value.isTensor())
      return fromCpu(value.toTensor());
    if (value.isTensorList()) {
      c10::List<at::Tensor> list;
      for (const at::Tensor &tensor : value.toTensorList())
        list.push_back(fromCpu(tensor));
      return list;
    }
    return value;
  }

  at::Tensor toCpu(const at::Tensor &tensor) {
    if (!tensor.defined() || !tensor.is_privateuseone())
      return tensor;
    noteDevice(tensor.device().index());
    at::Tensor view = host_ ? cpuView(tensor) : staging_.toHost(tensor);
    viewed_.push_back({tensor, view, view.storage().unsafeGetStorageImpl(), view.storage().data()});
    return view;
  }

  at::Tensor fromCpu(const at::Tensor &result) {
    if (!result.defined() || !result.is_cpu() || device_ < 0)
      return result;
    for (const Viewed &viewed : viewed_)
      if (result.unsafeGetTensorImpl() == viewed.view.unsafeGetTensorImpl())
        return viewed.kiln;
    return tensorOnStorage(kilnStorageFor(result.storage()), result);
  }

  /// Carries what the CPU kernel did back: the bytes it wrote into host
  /// copies, and its changes to the views' metadata.
  void syncArguments() {
    if (!host_)
      staging_.flush();
    for (Viewed &viewed : viewed_) {
      c10::TensorImpl *kiln = viewed.kiln.unsafeGetTensorImpl();
      const at::Tensor &view = viewed.view;
      if (view.storage().unsafeGetStorageImpl() != viewed.viewStorage ||
          view.storage().data() != viewed.data)
        kiln->set_storage_keep_dtype(kilnStorageFor(view.storage()));
      if (view.sizes() != viewed.kiln.sizes() || view.strides() != viewed.kiln.strides() ||
          view.storage_offset() != viewed.kiln.storage_offset())
        kiln->set_sizes_and_strides(view.sizes(), view.strides(), view.storage_offset());
    }
  }

private:
  struct Viewed {
    at::Tensor kiln;
    at::Tensor view;
    const c10::StorageImpl *viewStorage;
    const void *data;
  };

  void noteDevice(c10::DeviceIndex index) {
    if (device_ < 0)
      device_ = index;
  }

  /// The kiln storage of CPU memory: an argument's, if the memory is one,
  /// else the memory adopted (host memory) or a copy of it uploaded.
  c10::Storage kilnStorageFor(const c10::Storage &cpu) {
    if (!host_) {
      const c10::Storage *kiln = staging_.kilnStorageOf(cpu);
      return kiln ? *kiln : uploadCpuStorage(cpu, device_);
    }
    for (const Viewed &viewed : viewed_)
      if (cpu.unsafeGetStorageImpl() == viewed.viewStorage && cpu.data() == viewed.data)
        return viewed.kiln.storage();
    return adoptCpuStorage(cpu, device_);
  }

  bool host_ = memoryIsHost();
  HostStaging staging_;
  c10::DeviceIndex device_ = -1;
  std::vector<Viewed> viewed_;
};

bool isWritten(const c10::Argument &argument) {
  return argument.alias_info() && argument.alias_info()->isWrite();
}

void recordFallback(const c10::OperatorHandle &op) {
  FallbackPolicy current = policy().load(std::memory_order_relaxed);
  if (current == FallbackPolicy::Error) {
    fallbacks().add(&op.schema());
    TORCH_CHECK_NOT_IMPLEMENTED(false, "kiln: ", op.operator_name(),
                                " has no Kiln kernel for the kiln device, and "
                                "KILN_EAGER_FALLBACK=error forbids running ATen's CPU kernel "
                                "on kiln memory");
  }
  bool first = fallbacks().addIsFirst(&op.schema());
  if (first && current == FallbackPolicy::Warn)
    TORCH_WARN("kiln: ", op.operator_name(),
               " has no Kiln kernel yet; it runs ATen's CPU kernel on the kiln tensors' memory "
               "(counted in kiln.device.stats())");
}

} // namespace

void runOnCpu(const c10::OperatorHandle &op, torch::jit::Stack *stack) {
  recordFallback(op);
  const c10::FunctionSchema &schema = op.schema();
  const size_t numArguments = schema.arguments().size();
  const size_t first = stack->size() - numArguments;

  // Generators after the tensors: a default one is the kiln tensors' device's.
  FallbackCall call;
  std::optional<size_t> generator;
  for (size_t i = 0; i < numArguments; ++i) {
    if (isGeneratorArgument(schema.arguments()[i])) {
      generator = i; // ATen's ops take at most one
      continue;
    }
    c10::IValue &value = (*stack)[first + i];
    if (!isWritten(schema.arguments()[i])) {
      value = call.toCpu(value);
      continue;
    }
    c10::IValue kiln = value;
    value = call.toCpu(kiln);
    call.written(kiln);
  }
  if (generator)
    (*stack)[first + *generator] = call.generatorFor((*stack)[first + *generator]);

  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);

  call.syncArguments();
  const size_t numReturns = schema.returns().size();
  for (size_t i = stack->size() - numReturns; i < stack->size(); ++i)
    (*stack)[i] = call.fromCpu((*stack)[i]);
}

namespace {

//===--- Fallbacks registered by name ------------------------------------===//
//
// Convolution reaches a device other than CPU and CUDA as
// convolution_overrideable, whose default kernel throws before the boxed
// fallback could see it: these run CPU convolution on the views.

c10::OperatorHandle findOperator(const char *name, const char *overload) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
}

at::Tensor convolutionOnCpu(const at::Tensor &input, const at::Tensor &weight,
                            const std::optional<at::Tensor> &bias, c10::SymIntArrayRef stride,
                            c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation,
                            bool transposed, c10::SymIntArrayRef outputPadding, c10::SymInt groups) {
  static const c10::OperatorHandle op = findOperator("aten::convolution_overrideable", "");
  recordFallback(op);
  FallbackCall call;
  std::optional<at::Tensor> cpuBias;
  if (bias)
    cpuBias = call.toCpu(*bias);
  at::Tensor result = at::convolution_symint(call.toCpu(input), call.toCpu(weight), cpuBias, stride,
                                             padding, dilation, transposed, outputPadding, groups);
  return call.fromCpu(result);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor>
convolutionBackwardOnCpu(const at::Tensor &gradOutput, const at::Tensor &input,
                         const at::Tensor &weight, c10::SymIntArrayRef stride,
                         c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation, bool transposed,
                         c10::SymIntArrayRef outputPadding, c10::SymInt groups,
                         std::array<bool, 3> outputMask) {
  static const c10::OperatorHandle op =
      findOperator("aten::convolution_backward_overrideable", "");
  recordFallback(op);
  FallbackCall call;
  // The bias has one element per output channel.
  c10::SymInt channels = transposed ? weight.sym_size(1) * groups : weight.sym_size(0);
  std::vector<c10::SymInt> biasSizes{channels};
  auto [gradInput, gradWeight, gradBias] = at::convolution_backward_symint(
      call.toCpu(gradOutput), call.toCpu(input), call.toCpu(weight), c10::SymIntArrayRef(biasSizes),
      stride, padding, dilation, transposed, outputPadding, groups, outputMask);
  return {call.fromCpu(gradInput), call.fromCpu(gradWeight), call.fromCpu(gradBias)};
}

} // namespace

void copyInto(const at::Tensor &target, const at::Tensor &source) {
  if (!memoryIsHost()) {
    copyThroughDriver(source, target);
    return;
  }
  at::Tensor to = target.is_privateuseone() ? cpuView(target) : target;
  at::Tensor from = source.is_privateuseone() ? cpuView(source) : source;
  at::native::copy_(to, from, false);
}

void setFallbackPolicy(FallbackPolicy value) { policy().store(value); }
FallbackPolicy fallbackPolicy() { return policy().load(); }
std::map<std::string, uint64_t> fallbackCalls() { return fallbacks().byName(); }
std::map<std::string, uint64_t> nativeCalls() { return natives().byName(); }
void resetOpStats() {
  fallbacks().clear();
  natives().clear();
}

void registerEagerOps() {
  static torch::Library aten(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1, __FILE__,
                             __LINE__);
  aten.impl("empty.memory_format", TORCH_FN(emptyMemoryFormat));
  aten.impl("empty_strided", TORCH_FN(emptyStrided));
  aten.impl("as_strided", TORCH_FN(asStrided));
  aten.impl("view", TORCH_FN(view));
  aten.impl("_reshape_alias", TORCH_FN(reshapeAlias));
  aten.impl("resize_", TORCH_FN(resize));
  aten.impl("_copy_from", TORCH_FN(copyFrom));
  aten.impl("_copy_from_and_resize", TORCH_FN(copyFromAndResize));
  aten.impl("_local_scalar_dense", TORCH_FN(localScalarDense));
  aten.impl("set_.source_Tensor", TORCH_FN(setSourceTensor));
  aten.impl("set_.source_Storage", TORCH_FN(setSourceStorage));
  aten.impl("set_.source_Storage_storage_offset", TORCH_FN(setSourceStorageOffset));
  aten.impl("convolution_overrideable", TORCH_FN(convolutionOnCpu));
  aten.impl("convolution_backward_overrideable", TORCH_FN(convolutionBackwardOnCpu));

  static torch::Library all(torch::Library::IMPL, "_", c10::DispatchKey::PrivateUse1, __FILE__,
                            __LINE__);
  all.fallback(torch::CppFunction::makeFromBoxedFunction<&runOnCpu>());
}

} // namespace kiln::python::eager
