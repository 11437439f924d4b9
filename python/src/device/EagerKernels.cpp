// Eager ops of the kiln device as Kiln kernels.
//
// The device's kernel, registered for an op's functional, out= and in-place
// overloads, keys each call and looks the key up in a thread-safe cache of
// loaded programs. The key holds:
// - the op;
// - per tensor, its dtype and, per dim, 1 or the class of its size (sizes
//   equal across the call share a class, as in Dynamo's duck sizing), and
//   whether it is broadcast or permuted;
// - the other arguments' values. Float arguments are read at run time where
//   the kernel allows it.
// A miss compiles, with symbolic sizes, through kiln.eager_kernels (the
// compile service and its disk cache), so one program serves every size of
// that pattern; where the compiler wants static sizes, each size gets its
// own. An operand with gaps between its elements (a slice) is read from a
// dense copy. A `_foreach_` op is one kernel over all its lists' tensors.
// A call the cache cannot serve (an out= that overlaps an input, a key Kiln
// refused) runs ATen's CPU kernel through the fallback, counted as such,
// with the reason in kiln.device.stats().
#include "../TorchRuntime.h"
#include "EagerDevice.h"

#include "kiln/runtime/Program.h"

#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/NativeFunctions.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/SmallVector.h>
#include <torch/csrc/jit/python/pybind_utils.h>
#include <torch/library.h>

#include <pybind11/pybind11.h>

#include <algorithm>
#include <charconv>
#include <type_traits>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <sstream>
#include <unordered_map>

namespace py = pybind11;

namespace kiln::python::eager {
namespace {

/// What the device knows of an op it runs as a Kiln kernel.
struct KernelOp {
  std::string name;       // the functional op Kiln compiles: "aten::add"
  std::string functional; // and its overload: "Tensor"
  bool pointwise;         // each output element reads only its own inputs' elements
  bool writesOut;         // the registered overload is the out= one
};

/// A loaded program for one key, or why there is none.
struct CachedKernel {
  std::unique_ptr<rt::Program> program;
  std::string refusal;
  /// Kiln could not compile the call with symbolic sizes, but can with
  /// static ones: each size gets its own kernel, keyed with its sizes.
  bool perSize = false;
  /// Positions of the op's results that are undefined for this call (not
  /// computed: convolution_backward's output_mask); the program returns the
  /// others, in order.
  std::vector<size_t> nones;
  /// The kernel cannot read this call's float arguments at run time: calls
  /// of this pattern key their values instead.
  bool bakeScalars = false;
  /// Inputs the op writes though its schema does not say so
  /// (native_batch_norm's running statistics), by their index among the
  /// tensors the kernel reads: the program returns their new values after
  /// the op's results, and they are copied in.
  std::vector<size_t> writes;
  /// How many seeds a random kernel takes (0-dim int64 inputs after the
  /// others), drawn from the device's generator on each call.
  size_t seeds = 0;
  /// For a kernel that writes tensors (out=, in place): the position among
  /// them of the result in each buffer the program allocates, in order.
  std::vector<size_t> allocationOrder;
};

struct Registry {
  std::unordered_map<const c10::FunctionSchema *, KernelOp> ops;
  py::object compile; // kiln.eager_kernels.compile_kernel
  std::shared_mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const CachedKernel>> kernels;
  OpCounts calls;
  std::mutex declinedMutex;
  /// Per op, the last reason a call of it went to ATen without a kernel.
  std::unordered_map<const c10::FunctionSchema *, std::string> declined;
};

Registry &registry() {
  static Registry *instance = new Registry; // leaked: holds Python objects past interpreter exit
  return *instance;
}

//===--- Keying a call --------------------------------------------------===//

enum class Category { Bool, Integral, Floating, Other };

Category categoryOf(at::ScalarType type) {
  if (type == at::kBool)
    return Category::Bool;
  if (at::isIntegralType(type, /*includeBool=*/false))
    return Category::Integral;
  if (at::isFloatingType(type))
    return Category::Floating;
  return Category::Other;
}

/// A cache key's text, appended to cheaply (no stream formatting on the
/// path every call takes).
class KeyText {
public:
  KeyText &operator<<(char c) {
    text_ += c;
    return *this;
  }
  KeyText &operator<<(const char *text) {
    text_ += text;
    return *this;
  }
  KeyText &operator<<(const std::string &text) {
    text_ += text;
    return *this;
  }
  template <typename T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  KeyText &operator<<(T value) {
    char digits[24];
    auto end = std::to_chars(digits, digits + sizeof(digits), value).ptr;
    text_.append(digits, end);
    return *this;
  }
  /// Lists, strings: rare in calls, printed as IValue prints them.
  KeyText &operator<<(const c10::IValue &value) {
    std::ostringstream printed;
    printed << value;
    text_ += printed.str();
    return *this;
  }
  const std::string &str() const { return text_; }
  void reserve(size_t bytes) { text_.reserve(bytes); }

private:
  std::string text_;
};

/// The dims of a non-overlapping tensor from the outermost in memory to the
/// innermost (ties in their order): permuted so, a dense tensor is contiguous.
/// kiln.eager_kernels.storage_order is the same rule.
std::vector<int64_t> storageOrder(const at::Tensor &tensor) {
  std::vector<int64_t> order(tensor.dim());
  for (int64_t d = 0; d < tensor.dim(); ++d)
    order[d] = d;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return tensor.stride(a) > tensor.stride(b);
  });
  return order;
}

/// One call, as the kernel sees it: the tensors it reads (in order, lists
/// flattened), the key, and the output.
class KeyedCall {
public:
  /// False if the call is not one a kernel can take.
  /// With `liftScalars`, float arguments of a call on floating tensors are
  /// read at run time (0-dim float64 inputs after the tensors), so a new
  /// learning rate does not compile a new kernel; otherwise their values are
  /// part of the key.
  bool build(const c10::FunctionSchema &schema, const torch::jit::Stack &stack, size_t first,
             bool liftScalars) {
    const auto &arguments = schema.arguments();
    key_.reserve(128);
    key_ << schema.operator_name().name << '.' << schema.operator_name().overload_name;
    // A 0-dim CPU operand (a Python number) is read at run time when it is
    // of the dimensioned tensors' category (so promotion cannot tell it from
    // a 0-dim tensor); otherwise its value is part of the kernel.
    std::optional<Category> category;
    auto noteCategory = [&](const at::Tensor &tensor) {
      if (!tensor.defined() || tensor.dim() == 0)
        return;
      Category c = categoryOf(tensor.scalar_type());
      if (category && *category != c)
        category = Category::Other;
      else if (!category)
        category = c;
    };
    for (size_t i = 0; i < arguments.size(); ++i) {
      const c10::IValue &value = stack[first + i];
      if (arguments[i].is_out())
        continue;
      if (value.isTensor())
        noteCategory(value.toTensor());
      else if (value.isTensorList())
        for (const at::Tensor &tensor : value.toTensorList())
          noteCategory(tensor);
    }
    for (size_t i = 0; i < arguments.size(); ++i) {
      const c10::IValue &value = stack[first + i];
      const c10::AliasInfo *alias = arguments[i].alias_info();
      if (alias && alias->isWrite() && !arguments[i].is_out()) {
        // In place: `self` is read, and written with the result; a list
        // (`_foreach_mul_`'s) with one result per tensor.
        if (!outs_.empty())
          return decline("more than one argument written");
        if (value.isTensor()) {
          outs_.push_back(value.toTensor());
          key_ << "|self";
          if (!addTensor(value.toTensor(), category))
            return false;
        } else if (value.isTensorList()) {
          key_ << "|selfL" << value.toTensorList().size();
          int64_t position = 0;
          for (const at::Tensor &tensor : value.toTensorList()) {
            outs_.push_back(tensor);
            if (!addTensor(tensor, category, position++))
              return false;
          }
        } else {
          return decline("a written argument that is not a tensor");
        }
        inPlace_ = true;
        continue;
      }
      if (arguments[i].is_out()) {
        if (!value.isTensor() || !outs_.empty())
          return decline("more than one out= tensor");
        const at::Tensor &out = value.toTensor();
        if (!out.is_privateuseone() || !dtypeOf(out.scalar_type()))
          return decline("an out= tensor not on the device, or of a dtype Kiln lacks");
        outs_.push_back(out);
        device_ = out.device();
        key_ << "|out:" << static_cast<int>(out.scalar_type());
        continue;
      }
      key_ << '|';
      if (value.isTensor()) {
        if (!addTensor(value.toTensor(), category))
          return false;
      } else if (value.isTensorList()) {
        key_ << "L" << value.toTensorList().size();
        int64_t position = 0;
        for (const at::Tensor &tensor : value.toTensorList())
          if (!addTensor(tensor, category, position++))
            return false;
      } else if (value.isNone()) {
        key_ << 'n';
      } else if (value.isDouble() && liftScalars && category == Category::Floating) {
        key_ << 'D';
        scalars_.push_back(value.toDouble());
        lifted_.push_back(i);
      } else if (value.isList() && liftScalars && category == Category::Floating &&
                 isDoubleList(value)) {
        // A `Scalar[]` of floats, one per tensor of the lists (`_foreach_div_`'s
        // bias corrections): read at run time, as a float argument is.
        key_ << "DL" << value.toListRef().size();
        for (const c10::IValue &element : value.toListRef())
          scalars_.push_back(element.toDouble());
        lifted_.push_back(i);
      } else if (value.isDouble()) {
        double d = value.toDouble();
        uint64_t bits;
        std::memcpy(&bits, &d, sizeof(bits));
        key_ << 'd' << bits;
      } else if (value.isInt()) {
        key_ << 'i' << value.toInt();
      } else if (value.isBool()) {
        key_ << (value.toBool() ? "T" : "F");
      } else if (value.isIntList() || value.isBoolList() || value.isDoubleList() ||
                 value.isString() || (value.isList() && isNumberList(value))) {
        key_ << value.tagKind() << ':' << value;
      } else {
        // Generators, devices, complex numbers, optional tensor lists.
        return decline(std::string("an argument of kind ") + value.tagKind());
      }
    }
    if (!device_ || tensors_.empty())
      return decline("no tensor on the device");
    return true;
  }

  /// The kiln device the call's tensors are on.
  c10::Device device() const { return *device_; }

  const std::string &key() const { return key_.str(); }
  c10::ArrayRef<at::Tensor> tensors() const { return tensors_; }
  c10::ArrayRef<at::Tensor> dense() const { return dense_; }
  c10::ArrayRef<bool> asValue() const { return asValue_; }
  /// Where the results go: the out= tensor, the in-place `self`, or each
  /// tensor of an in-place list; empty for a functional overload.
  c10::ArrayRef<at::Tensor> outs() const { return outs_; }
  /// Whether each tensor in tensors() is read from a dense copy (it has gaps).
  c10::ArrayRef<bool> materialized() const { return materialized_; }
  /// The position in its list of each tensor in tensors() (-1: not in one).
  c10::ArrayRef<int64_t> listPositions() const { return listPositions_; }
  bool inPlace() const { return inPlace_; }
  /// The float arguments read at run time, in order.
  c10::ArrayRef<double> scalars() const { return scalars_; }
  /// Whether argument `i` is read at run time (a float or a float list).
  bool isLifted(size_t i) const { return std::find(lifted_.begin(), lifted_.end(), i) != lifted_.end(); }
  /// Why build() returned false.
  const std::string &declined() const { return declined_; }
  /// The sizes of the tensors the kernel reads, for a per-size key.
  std::string sizesKey() const {
    std::ostringstream sizes;
    for (const at::Tensor &tensor : dense_)
      if (tensor.defined())
        sizes << tensor.sizes() << ';';
    return sizes.str();
  }

private:
  static bool isDoubleList(const c10::IValue &list) {
    const auto &elements = list.toListRef();
    return !elements.empty() && std::all_of(elements.begin(), elements.end(),
                                            [](const c10::IValue &e) { return e.isDouble(); });
  }
  static bool isNumberList(const c10::IValue &list) {
    const auto &elements = list.toListRef();
    return std::all_of(elements.begin(), elements.end(), [](const c10::IValue &e) {
      return e.isDouble() || e.isInt() || e.isBool();
    });
  }

  bool addTensor(const at::Tensor &tensor, std::optional<Category> category,
                 int64_t listPosition = -1) {
    listPositions_.push_back(listPosition);
    materialized_.push_back(false);
    if (!tensor.defined()) {
      key_ << 'n';
      tensors_.push_back(tensor);
      dense_.push_back(tensor);
      asValue_.push_back(false);
      return true;
    }
    std::optional<rt::DType> dtype = dtypeOf(tensor.scalar_type());
    if (!dtype)
      return decline(std::string("a tensor of dtype ") + c10::toString(tensor.scalar_type()));
    if (tensor.is_cpu()) {
      if (tensor.dim() != 0)
        return decline("a CPU tensor with dims");
      bool runtime = category && *category == categoryOf(tensor.scalar_type());
      if (!runtime) {
        // The number is part of the kernel: a wrapped number promotes as a
        // Python number does, which a 0-dim input would not reproduce.
        if (at::isFloatingType(tensor.scalar_type())) {
          double value = tensor.item<double>();
          uint64_t bits;
          std::memcpy(&bits, &value, sizeof(bits));
          key_ << "cd" << bits;
        } else {
          key_ << "ci" << tensor.item<int64_t>();
        }
        tensors_.push_back(tensor);
        dense_.push_back(tensor);
        asValue_.push_back(true);
        return true;
      }
      key_ << 'r' << static_cast<int>(tensor.scalar_type());
      tensors_.push_back(tensor);
      dense_.push_back(tensor);
      asValue_.push_back(false);
      return true;
    } else if (!tensor.is_privateuseone()) {
      return decline("a tensor on " + tensor.device().str());
    } else if (tensor.numel() == 0 || tensor.is_neg() || tensor.is_conj()) {
      return decline("an empty, negated or conjugated tensor");
    } else if (!tensor.is_contiguous()) {
      // Broadcast dims (stride 0) are read once and expanded; a transpose or
      // permutation of dense memory is read in memory order and permuted
      // back. kiln.eager_kernels does the same to the example, whose strides
      // are the tensor's.
      // The kernel expands to the sizes it was traced with (no input of it
      // has them), so they are part of the key.
      std::vector<int64_t> sizes = tensor.sizes().vec();
      key_ << 'b';
      for (int64_t d = 0; d < tensor.dim(); ++d)
        if (tensor.stride(d) == 0 && sizes[d] > 1) {
          key_ << d << '=' << sizes[d] << ',';
          sizes[d] = 1;
        }
      at::Tensor base = tensor.as_strided(sizes, tensor.strides());
      if (base.is_contiguous())
        return addDense(base, tensor);
      std::vector<int64_t> order = storageOrder(base);
      at::Tensor dense = base.permute(order);
      if (!dense.is_contiguous()) {
        // Gaps between its elements (a slice): the kernel reads a dense copy,
        // made by the device's copy.
        key_ << 'g';
        materialized_.back() = true;
        return addDense(tensor.contiguous(), tensor);
      }
      key_ << 'p';
      for (int64_t d : order)
        key_ << d << ',';
      return addDense(dense, tensor);
    }
    return addDense(tensor, tensor);
  }

  /// Adds `dense`, the memory of the call's tensor `tensor`, read in order.
  bool addDense(const at::Tensor &dense, const at::Tensor &tensor) {
    if (device_ && *device_ != tensor.device())
      return decline("tensors on two kiln devices"); // ATen says so
    device_ = tensor.device();
    key_ << 't' << static_cast<int>(tensor.scalar_type()) << '[';
    for (int64_t size : dense.sizes()) {
      if (size == 1) {
        key_ << "1,";
        continue;
      }
      size_t cls = 0;
      while (cls < sizes_.size() && sizes_[cls] != size)
        ++cls;
      if (cls == sizes_.size())
        sizes_.push_back(size);
      key_ << 's' << cls << ',';
    }
    key_ << ']';
    tensors_.push_back(tensor);
    dense_.push_back(dense);
    asValue_.push_back(false);
    return true;
  }

  bool decline(std::string why) {
    declined_ = std::move(why);
    return false;
  }

  KeyText key_;
  std::string declined_;
  // Inline room for a usual call's tensors: keying allocates only the key.
  static constexpr size_t kInline = 8;
  c10::SmallVector<int64_t, kInline> sizes_;
  c10::SmallVector<at::Tensor, kInline> tensors_;
  c10::SmallVector<at::Tensor, kInline> dense_; // each tensor's memory as the kernel reads it
  c10::SmallVector<bool, kInline> asValue_;     // a CPU number whose value is in the key
  c10::SmallVector<int64_t, kInline> listPositions_;
  c10::SmallVector<bool, kInline> materialized_; // read from a dense copy
  c10::SmallVector<at::Tensor, 1> outs_;
  bool inPlace_ = false; // outs_ are the op's mutable `self`
  c10::SmallVector<double, 2> scalars_;
  c10::SmallVector<size_t, 2> lifted_; // the arguments scalars_ come from
  std::optional<c10::Device> device_;
};

//===--- Compiling on a miss --------------------------------------------===//

/// The call's arguments for kiln.eager_kernels.compile_kernel: tensors as
/// empty CPU examples of their sizes, numbers in the key as Python numbers.
py::list exampleArguments(const c10::FunctionSchema &schema, const torch::jit::Stack &stack,
                          size_t first, const KeyedCall &call) {
  size_t next = 0; // the tensors in the order KeyedCall took them
  static py::object liftedScalar = py::module_::import("kiln.eager_kernels").attr("LiftedScalar");
  auto example = [&](const at::Tensor &tensor) -> py::object {
    bool materialized = call.materialized()[next];
    bool asValue = call.asValue()[next++];
    if (!tensor.defined())
      return py::none();
    if (asValue) // a Python number, as the caller wrote it
      return at::isFloatingType(tensor.scalar_type()) ? py::cast(tensor.item<double>())
                                                      : py::cast(tensor.item<int64_t>());
    if (tensor.is_cpu())
      return py::cast(tensor.clone()); // a 0-dim input read at run time
    // With the tensor's strides: a permuted tensor's example is permuted.
    if (materialized)
      return py::cast(at::empty(tensor.sizes(), at::TensorOptions().dtype(tensor.scalar_type())));
    return py::cast(at::empty_strided(tensor.sizes(), tensor.strides(),
                                      at::TensorOptions().dtype(tensor.scalar_type())));
  };
  py::list arguments;
  for (size_t i = 0; i < schema.arguments().size(); ++i) {
    if (schema.arguments()[i].is_out())
      continue;
    const c10::IValue &value = stack[first + i];
    if (value.isTensor()) {
      arguments.append(example(value.toTensor()));
    } else if (value.isTensorList()) {
      py::list list;
      for (const at::Tensor &tensor : value.toTensorList())
        list.append(example(tensor));
      arguments.append(list);
    } else if (call.isLifted(i) && value.isDouble()) {
      arguments.append(liftedScalar(value.toDouble()));
    } else if (call.isLifted(i)) {
      py::list list;
      for (const c10::IValue &element : value.toListRef())
        list.append(liftedScalar(element.toDouble()));
      arguments.append(list);
    } else {
      arguments.append(torch::jit::toPyObject(value));
    }
  }
  return arguments;
}

/// The buffer a result lives in: itself, or the one it views.
uint32_t rootOf(const rt::Artifact &artifact, uint32_t buffer) {
  while (artifact.buffers[buffer].kind == rt::BufferKind::View)
    buffer = artifact.buffers[buffer].source;
  return buffer;
}

/// Every result must live in memory the kernel allocates (not in an
/// input), and a kernel that writes `written` tensors (out=, in place) must
/// return that many results, each a whole buffer, which the tensor becomes
/// (in place, also a view from the start of one: the same elements in
/// another shape, which the allocator checks). Sets `kernel.allocationOrder`.
rt::Status checkResults(const rt::Artifact &artifact, size_t written, bool inPlace,
                        CachedKernel &kernel) {
  if (written) {
    if (artifact.outputs.size() != written)
      return rt::Status::error("it returns " + std::to_string(artifact.outputs.size()) +
                               " results for " + std::to_string(written) + " tensors written");
    std::vector<std::pair<uint32_t, size_t>> byBuffer;
    for (size_t position = 0; position < written; ++position) {
      uint32_t buffer = artifact.outputs[position];
      const rt::BufferDesc &desc = artifact.buffers[buffer];
      bool whole = desc.kind == rt::BufferKind::Alloc ||
                   (inPlace && desc.kind == rt::BufferKind::View && desc.byteOffset == 0 &&
                    artifact.buffers[rootOf(artifact, buffer)].kind == rt::BufferKind::Alloc);
      if (!whole)
        return rt::Status::error("its result is not a buffer of its own");
      byBuffer.push_back({rootOf(artifact, buffer), position});
    }
    // The program allocates its results' buffers in buffer order.
    std::sort(byBuffer.begin(), byBuffer.end());
    for (size_t k = 0; k < byBuffer.size(); ++k) {
      if (k && byBuffer[k].first == byBuffer[k - 1].first)
        return rt::Status::error("two results share a buffer");
      kernel.allocationOrder.push_back(byBuffer[k].second);
    }
  }
  for (uint32_t output : artifact.outputs) {
    uint32_t root = rootOf(artifact, output);
    if (artifact.buffers[root].kind != rt::BufferKind::Alloc)
      return rt::Status::error("a result aliases an input");
  }
  return rt::Status::OK();
}

std::shared_ptr<CachedKernel> compileKernel(const KernelOp &op, const KeyedCall &call,
                                            const c10::FunctionSchema &schema,
                                            const torch::jit::Stack &stack, size_t first,
                                            bool symbolic) {
  auto kernel = std::make_shared<CachedKernel>();
  py::gil_scoped_acquire gil;
  // ("artifact", bytes), ("refused", why), or ("static", why): refused with
  // symbolic sizes only.
  py::tuple result = registry().compile(op.name, op.functional,
                                        exampleArguments(schema, stack, first, call), symbolic);
  std::string status0 = result[0].cast<std::string>();
  if (status0 != "artifact") {
    kernel->refusal = result[1].cast<std::string>();
    kernel->perSize = symbolic && status0 == "static";
    kernel->bakeScalars = status0 == "bake";
    return kernel;
  }
  std::string bytes = result[1].cast<std::string>();
  kernel->nones = result[2].cast<std::vector<size_t>>();
  kernel->writes = result[3].cast<std::vector<size_t>>();
  kernel->seeds = result[4].cast<size_t>();
  rt::Artifact artifact;
  rt::Status status = rt::parseArtifact(reinterpret_cast<const uint8_t *>(bytes.data()),
                                        bytes.size(), artifact);
  if (status.ok())
    status = checkResults(artifact, op.writesOut ? call.outs().size() : 0, call.inPlace(), *kernel);
  if (status.ok()) {
    auto program = rt::Program::load(std::move(artifact), eagerRuntimeDevice());
    if (program.ok())
      kernel->program = std::move(*program);
    else
      status = program.status();
  }
  if (!status.ok())
    kernel->refusal = "the kernel for " + op.name + "." + op.functional +
                      " cannot run on the kiln device: " + status.message();
  return kernel;
}

std::shared_ptr<const CachedKernel> kernelFor(const KernelOp &op, const KeyedCall &call,
                                              const c10::FunctionSchema &schema,
                                              const torch::jit::Stack &stack, size_t first) {
  Registry &r = registry();
  auto lookup = [&](const std::string &key, bool symbolic) {
    {
      std::shared_lock<std::shared_mutex> lock(r.mutex);
      auto found = r.kernels.find(key);
      if (found != r.kernels.end())
        return found->second;
    }
    // Compiled outside the lock: other calls go on; two threads missing the
    // same key both compile, and the first to finish is kept.
    std::shared_ptr<CachedKernel> compiled = compileKernel(op, call, schema, stack, first, symbolic);
    std::unique_lock<std::shared_mutex> lock(r.mutex);
    return r.kernels.emplace(key, std::move(compiled)).first->second;
  };
  std::shared_ptr<const CachedKernel> pattern = lookup(call.key(), /*symbolic=*/true);
  if (!pattern->perSize)
    return pattern;
  return lookup(call.key() + "#" + call.sizesKey(), /*symbolic=*/false);
}

//===--- Running ----------------------------------------------------------===//

/// Hands the program its result buffers: for a call that writes tensors
/// (out=, in place) those tensors, an out= one resized to the result's
/// shape; otherwise new tensors on the device.
class ResultAllocator : public rt::Allocator {
public:
  /// `outs` empty: every result is a new tensor.
  ResultAllocator(c10::ArrayRef<at::Tensor> outs, const CachedKernel &kernel, bool inPlace,
                  c10::Device device)
      : outs_(outs), kernel_(kernel), inPlace_(inPlace), device_(device) {}
  rt::StatusOr<std::shared_ptr<rt::Buffer>> allocate(const rt::TensorDesc &desc) override {
    at::ScalarType dtype = scalarTypeOf(desc.dtype);
    if (outs_.empty()) {
      // Straight from the device's allocator (at::empty would dispatch).
      std::optional<c10::DeviceGuard> guard;
      if (device_.index() != currentDevice())
        guard.emplace(device_);
      return std::shared_ptr<rt::Buffer>(std::make_shared<TorchBuffer>(at::detail::empty_generic(
          desc.shape, &deviceAllocator(), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), dtype,
          std::nullopt)));
    }
    if (next_ >= kernel_.allocationOrder.size())
      return rt::Status::error("more results than tensors written");
    const at::Tensor &out = outs_[kernel_.allocationOrder[next_++]];
    if (dtype != out.scalar_type())
      return rt::Status::error("the result is not the written tensor's dtype");
    if (!out.sizes().equals(desc.shape)) {
      // In place, the buffer a result views: the same elements.
      if (inPlace_ && out.is_contiguous() && out.numel() == c10::multiply_integers(desc.shape))
        return std::shared_ptr<rt::Buffer>(std::make_shared<TorchBuffer>(out));
      if (inPlace_)
        return rt::Status::error("an in-place result of another shape");
      const c10::DeviceGuard guard(out.device());
      at::native::resize_(out, desc.shape, std::nullopt);
    }
    if (!out.is_contiguous())
      return rt::Status::error("the out= tensor is strided");
    return std::shared_ptr<rt::Buffer>(std::make_shared<TorchBuffer>(out));
  }

private:
  c10::ArrayRef<at::Tensor> outs_;
  const CachedKernel &kernel_;
  bool inPlace_;
  c10::Device device_;
  size_t next_ = 0;
};

/// Whether writing the call's outs cannot clobber an input before it is
/// read: an out may share memory only with the input it replaces element by
/// element (same sizes, a pointwise op, and in a list the same position).
bool outputIsSafe(const KeyedCall &call, bool pointwise) {
  c10::ArrayRef<at::Tensor> outs = call.outs();
  for (size_t o = 0; o < outs.size(); ++o) {
    for (size_t i = 0; i < call.tensors().size(); ++i) {
      const at::Tensor &input = call.tensors()[i];
      if (!input.defined() || !input.is_privateuseone())
        continue;
      at::MemOverlapStatus overlap = at::get_overlap_status(outs[o], input);
      if (overlap == at::MemOverlapStatus::No)
        continue;
      int64_t position = call.listPositions()[i];
      if (overlap == at::MemOverlapStatus::Full && pointwise &&
          input.sizes().equals(outs[o].sizes()) &&
          (outs.size() == 1 || position == static_cast<int64_t>(o)))
        continue;
      return false;
    }
  }
  return true;
}

/// The binding of an empty tensor: a valid device address no kernel reads.
void *emptyBinding() {
  // Never freed: the runtime device lives as long as the process.
  static rt::DeviceBuffer *buffer = [] {
    rt::StatusOr<rt::DeviceBuffer> made = eagerRuntimeDevice().allocate(rt::Device::kMinAlignment);
    throwIfFailed(made.status(), "allocating");
    return new rt::DeviceBuffer(std::move(*made));
  }();
  return buffer->address();
}

/// Copies `values` into this thread's buffer of the device's memory and
/// returns its address. Reused by the thread's next call: a copy from the
/// host waits for the kernels queued before it, which may read it.
uint8_t *stageValues(const std::vector<uint64_t> &values) {
  static thread_local rt::DeviceBuffer *buffer = nullptr; // never freed, as above
  size_t bytes = values.size() * sizeof(uint64_t);
  if (!buffer || buffer->size() < bytes) {
    rt::StatusOr<rt::DeviceBuffer> made = eagerRuntimeDevice().allocate(std::max<size_t>(bytes, 256));
    throwIfFailed(made.status(), "allocating");
    delete buffer;
    buffer = new rt::DeviceBuffer(std::move(*made));
  }
  throwIfFailed(eagerRuntimeDevice().copyHostToDevice(buffer->address(), values.data(), bytes),
                "copying a kernel's scalars to the device");
  return static_cast<uint8_t *>(buffer->address());
}

/// Runs the kernel; its results (the out= tensor, or new tensors) go to
/// `results`. False (having changed nothing but, perhaps, the out= tensor's
/// size) if it could not run.
bool runKernel(const CachedKernel &kernel, const KeyedCall &call, bool intoOut,
               std::vector<at::Tensor> &results) {
  const rt::Program &program = *kernel.program;
  // The inputs, in vectors kept per thread so that a call reuses their
  // memory (a launch never re-enters this function).
  static thread_local std::vector<void *> pointers;
  static thread_local std::vector<rt::TensorDesc> descs;
  pointers.clear();
  size_t count = 0;
  auto describe = [&](rt::DType dtype, c10::IntArrayRef shape) {
    if (descs.size() <= count)
      descs.emplace_back();
    rt::TensorDesc &desc = descs[count++];
    desc.dtype = dtype;
    desc.shape.assign(shape.begin(), shape.end());
  };
  // The 0-dim inputs the host passes (floats lifted out of the kernel,
  // seeds, and where the device's memory is not the host's, 0-dim CPU
  // tensors), 8 bytes each, in one block: staged in device memory there.
  bool host = memoryIsHost();
  static thread_local std::vector<uint64_t> values;
  static thread_local std::vector<size_t> valuePointers; // where each goes
  values.clear();
  valuePointers.clear();
  auto addValue = [&](const void *bytes, size_t size) {
    uint64_t bits = 0;
    std::memcpy(&bits, bytes, size);
    values.push_back(bits);
    valuePointers.push_back(pointers.size());
    pointers.push_back(nullptr);
  };
  for (size_t i = 0; i < call.dense().size(); ++i) {
    const at::Tensor &tensor = call.dense()[i];
    if (!tensor.defined() || call.asValue()[i])
      continue;
    if (!host && tensor.is_cpu())
      addValue(tensor.data_ptr(), tensor.itemsize());
    else
      pointers.push_back(tensor.numel() ? tensor.data_ptr() : emptyBinding());
    describe(*dtypeOf(tensor.scalar_type()), tensor.sizes());
  }
  for (const double &scalar : call.scalars()) {
    addValue(&scalar, sizeof(scalar));
    describe(rt::DType::F64, {});
  }
  if (kernel.seeds) {
    const at::Generator &generator = defaultGenerator(call.device().index());
    for (size_t i = 0; i < kernel.seeds; ++i) {
      int64_t seed = nextKernelSeed(generator);
      addValue(&seed, sizeof(seed));
      describe(rt::DType::I64, {});
    }
  }
  if (!values.empty()) {
    uint8_t *base = host ? reinterpret_cast<uint8_t *>(values.data()) : stageValues(values);
    for (size_t k = 0; k < values.size(); ++k)
      pointers[valuePointers[k]] = base + 8 * k;
  }
  descs.resize(count);
  ResultAllocator allocator(intoOut ? call.outs() : c10::ArrayRef<at::Tensor>(), kernel,
                            call.inPlace(), call.device());
  std::vector<std::shared_ptr<rt::Buffer>> allocated;
  std::vector<rt::OutputRef> outputs;
  // On a GPU driver the op returns with its kernels queued, as on CUDA: the
  // host waits only where it reads (a copy to the host, synchronize()).
  rt::Status status = program.run(pointers, descs, allocator, allocated, outputs, nullptr, nullptr,
                                  /*wait=*/memoryIsHost());
  if (status.code() == rt::StatusCode::IndexOutOfRange)
    TORCH_CHECK_INDEX(false, status.message());
  if (!status.ok())
    return false;
  for (const rt::OutputRef &output : outputs) {
    // Loading checked that every result lives in a buffer the kernel made.
    const at::Tensor &base = static_cast<TorchBuffer &>(*allocated[output.buffer]).tensor;
    const std::vector<int64_t> &shape = output.type.shape;
    if (output.byteOffset == 0 && base.sizes().equals(shape) &&
        base.scalar_type() == scalarTypeOf(output.type.dtype)) {
      results.push_back(base);
      continue;
    }
    std::vector<int64_t> strides(shape.size(), 1);
    for (int64_t d = (int64_t)shape.size() - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * std::max<int64_t>(shape[d + 1], 1);
    int64_t itemSize = (int64_t)rt::dtypeSize(output.type.dtype);
    results.push_back(base.view(scalarTypeOf(output.type.dtype))
                          .as_strided(shape, strides, output.byteOffset / itemSize));
  }
  return true;
}

void noteDeclined(const c10::FunctionSchema &schema, std::string why) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.declinedMutex);
  r.declined[&schema] = std::move(why);
}

void kilnKernel(const c10::OperatorHandle &op, torch::jit::Stack *stack) {
  const c10::FunctionSchema &schema = op.schema();
  const size_t first = stack->size() - schema.arguments().size();
  Registry &r = registry();
  auto found = r.ops.find(&schema);
  if (found == r.ops.end()) {
    runOnCpu(op, stack);
    return;
  }
  const KernelOp &kernelOp = found->second;
  // Keyed with float arguments read at run time, unless the kernel for that
  // key said it cannot: then with their values.
  KeyedCall lifted, baked;
  const KeyedCall *call = nullptr;
  std::shared_ptr<const CachedKernel> kernel;
  if (lifted.build(schema, *stack, first, /*liftScalars=*/true)) {
    call = &lifted;
    kernel = kernelFor(kernelOp, lifted, schema, *stack, first);
    if (kernel->bakeScalars) {
      call = baked.build(schema, *stack, first, /*liftScalars=*/false) ? &baked : nullptr;
      if (call)
        kernel = kernelFor(kernelOp, baked, schema, *stack, first);
    }
  }
  if (!call) {
    noteDeclined(schema, baked.declined().empty() ? lifted.declined() : baked.declined());
    runOnCpu(op, stack);
    return;
  }
  // An out= tensor the kernel may not write while it reads its inputs (an
  // in-place op that is not pointwise), or a strided `self`, gets the result
  // by a copy.
  c10::ArrayRef<at::Tensor> outs = call->outs();
  bool intoOut = !outs.empty() && outputIsSafe(*call, kernelOp.pointwise) &&
                 (!call->inPlace() || std::all_of(outs.begin(), outs.end(), [](const at::Tensor &t) {
                   return t.is_contiguous();
                 }));
  if (!outs.empty() && !intoOut && !call->inPlace()) {
    noteDeclined(schema, "the out= tensor overlaps an input");
    runOnCpu(op, stack);
    return;
  }
  // ATen writes a list's tensors one after another: where one overlaps
  // another position's operand, what it reads depends on that order.
  if (outs.size() > 1 && !intoOut) {
    noteDeclined(schema, "a written tensor overlaps another tensor of the call");
    runOnCpu(op, stack);
    return;
  }
  // What the op returns: its results; a list of them (`_foreach_sqrt`); or
  // nothing, having written them (`_foreach_mul_`).
  const auto &returns = schema.returns();
  bool returnsList = returns.size() == 1 && returns[0].type()->kind() == c10::TypeKind::ListType;
  std::vector<at::Tensor> results;
  results.reserve(std::max<size_t>(returns.size(), outs.size()));
  bool ran = kernel->program && runKernel(*kernel, *call, intoOut, results);
  size_t produced = results.size() + kernel->nones.size() - kernel->writes.size();
  if (!ran || (returnsList ? !kernel->nones.empty() || !kernel->writes.empty()
                           : produced != (returns.empty() ? outs.size() : returns.size()))) {
    noteDeclined(schema, kernel->program ? "the kernel could not run this call" : kernel->refusal);
    runOnCpu(op, stack);
    return;
  }
  if (!kernel->writes.empty()) {
    std::vector<at::Tensor> read; // the tensors the kernel read, in order
    for (size_t i = 0; i < call->tensors().size(); ++i)
      if (call->tensors()[i].defined() && !call->asValue()[i])
        read.push_back(call->tensors()[i]);
    size_t first = results.size() - kernel->writes.size();
    for (size_t k = 0; k < kernel->writes.size(); ++k) {
      copyInto(read.at(kernel->writes[k]), results[first + k]);
    }
    results.resize(first);
  }
  for (size_t position : kernel->nones) // sorted
    results.insert(results.begin() + (std::ptrdiff_t)std::min(position, results.size()),
                   at::Tensor());
  if (call->inPlace() && !intoOut) {
    for (size_t o = 0; o < outs.size(); ++o)
      if (!outs[o].sizes().equals(results[o].sizes())) {
        noteDeclined(schema, "an in-place result of another shape");
        runOnCpu(op, stack);
        return;
      }
    for (size_t o = 0; o < outs.size(); ++o) {
      copyInto(outs[o], results[o]);
      results[o] = outs[o];
    }
  }
  r.calls.add(&schema);
  torch::jit::drop(*stack, schema.arguments().size());
  if (returnsList)
    torch::jit::push(*stack, c10::List<at::Tensor>(results));
  else if (!returns.empty())
    for (at::Tensor &result : results)
      torch::jit::push(*stack, std::move(result));
}

} // namespace

void registerEagerKernels(const std::vector<RegisteredKernel> &ops, py::object compile) {
  static std::once_flag once;
  std::call_once(once, [&] {
    Registry &r = registry();
    r.compile = std::move(compile);
    static torch::Library library(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1,
                                  __FILE__, __LINE__);
    for (const auto &[name, overload, functionalName, functional, pointwise] : ops) {
      // Python's "default" overload is the unnamed one.
      std::string cppOverload = overload == "default" ? "" : overload;
      auto handle = c10::Dispatcher::singleton().findSchemaOrThrow(name.c_str(), cppOverload.c_str());
      // An out= or in-place overload writes its one result into a tensor.
      bool writesOut = std::any_of(handle.schema().arguments().begin(),
                                   handle.schema().arguments().end(), [](const c10::Argument &a) {
                                     return a.is_out() || (a.alias_info() && a.alias_info()->isWrite());
                                   });
      r.ops[&handle.schema()] = {functionalName, functional, pointwise, writesOut};
      std::string unqualified = name.substr(name.find("::") + 2);
      std::string registered = cppOverload.empty() ? unqualified : unqualified + "." + cppOverload;
      library.impl(registered.c_str(), torch::CppFunction::makeFromBoxedFunction<&kilnKernel>());
    }
  });
}

std::map<std::string, uint64_t> kernelCalls() { return registry().calls.byName(); }

std::map<std::string, std::string> kernelRefusals() {
  Registry &r = registry();
  std::shared_lock<std::shared_mutex> lock(r.mutex);
  std::map<std::string, std::string> refusals;
  for (const auto &[key, kernel] : r.kernels)
    if (!kernel->program && !kernel->perSize)
      refusals[key] = kernel->refusal;
  return refusals;
}

std::map<std::string, std::string> declinedCalls() {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.declinedMutex);
  std::map<std::string, std::string> declined;
  for (const auto &[schema, why] : r.declined)
    declined[c10::toString(schema->operator_name())] = why;
  return declined;
}

size_t kernelsLoaded() {
  Registry &r = registry();
  std::shared_lock<std::shared_mutex> lock(r.mutex);
  size_t count = 0;
  for (const auto &entry : r.kernels)
    count += entry.second->program != nullptr;
  return count;
}

void resetKernelCalls() {
  Registry &r = registry();
  r.calls.clear();
  std::lock_guard<std::mutex> lock(r.declinedMutex);
  r.declined.clear();
}

} // namespace kiln::python::eager
