//===- VulkanInstance.cpp - The Vulkan library, instance and devices ------===//

#include "VulkanInstance.h"

#include <cctype>
#include <cstdlib>
#include <dlfcn.h>
#include <map>
#include <mutex>

namespace kiln::runtime::vulkan {

static constexpr char kDefaultLoader[] = "libvulkan.so.1";

/// dlopen'ed once per path and never closed: loaders and ICDs do not expect
/// to be unloaded while the process runs.
static StatusOr<PFN_vkGetInstanceProcAddr> loadLibrary() {
  const char *fromEnv = std::getenv("KILN_VULKAN_LOADER");
  std::string path = fromEnv && *fromEnv ? fromEnv : kDefaultLoader;
  static std::mutex mutex;
  static std::map<std::string, void *> opened;
  std::lock_guard<std::mutex> lock(mutex);
  void *&handle = opened[path];
  if (!handle)
    handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = ::dlerror();
    return Status::error(StatusCode::Unavailable,
                         "Vulkan is not available: cannot load the Vulkan loader '" + path +
                             "' (" + (why ? why : "unknown error") +
                             "); install libvulkan1 and a Vulkan driver, e.g. "
                             "mesa-vulkan-drivers" +
                             (fromEnv ? ", or fix $KILN_VULKAN_LOADER" : ""));
  }
  auto getProcAddr =
      reinterpret_cast<PFN_vkGetInstanceProcAddr>(::dlsym(handle, "vkGetInstanceProcAddr"));
  if (!getProcAddr)
    return Status::error(StatusCode::Unavailable, "Vulkan is not available: '" + path +
                                                      "' exports no vkGetInstanceProcAddr");
  return getProcAddr;
}

std::string versionString(uint32_t version) {
  return std::to_string(VK_API_VERSION_MAJOR(version)) + "." +
         std::to_string(VK_API_VERSION_MINOR(version)) + "." +
         std::to_string(VK_API_VERSION_PATCH(version));
}

StatusOr<std::shared_ptr<Instance>> Instance::create() {
  StatusOr<PFN_vkGetInstanceProcAddr> getProcAddr = loadLibrary();
  if (!getProcAddr.ok())
    return getProcAddr.status();
  std::shared_ptr<Instance> instance(new Instance());
  instance->getProcAddr_ = *getProcAddr;
  InstanceApi &api = instance->api_;
#define KILN_VK_GLOBAL(name)                                                   \
  api.name = reinterpret_cast<PFN_##name>((*getProcAddr)(VK_NULL_HANDLE, #name));
  KILN_VK_GLOBAL_FUNCTIONS(KILN_VK_GLOBAL)
#undef KILN_VK_GLOBAL
  if (!api.vkCreateInstance)
    return Status::error(StatusCode::Unavailable,
                         "Vulkan is not available: the loader has no vkCreateInstance");
  // Kernels are SPIR-V 1.3 at most, which needs Vulkan 1.1; ask for what the
  // loader has, up to 1.3.
  uint32_t loaderVersion = VK_API_VERSION_1_0;
  if (api.vkEnumerateInstanceVersion)
    (void)api.vkEnumerateInstanceVersion(&loaderVersion);
  if (loaderVersion < VK_API_VERSION_1_1)
    return Status::error(StatusCode::Unavailable,
                         "Vulkan is not available: the loader supports Vulkan " +
                             versionString(loaderVersion) + ", Kiln needs 1.1 or newer");

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "kiln";
  app.pEngineName = "kiln";
  app.apiVersion = loaderVersion < VK_API_VERSION_1_3 ? loaderVersion : VK_API_VERSION_1_3;
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  VkResult result = api.vkCreateInstance(&info, nullptr, &instance->instance_);
  if (result == VK_ERROR_INCOMPATIBLE_DRIVER)
    return Status::error(StatusCode::Unavailable,
                         "Vulkan is not available: vkCreateInstance found no driver "
                         "(VK_ERROR_INCOMPATIBLE_DRIVER); install one, e.g. mesa-vulkan-drivers");
  KILN_RETURN_IF_ERROR(check(result, "vkCreateInstance"));

#define KILN_VK_INSTANCE(name)                                                 \
  api.name = reinterpret_cast<PFN_##name>((*getProcAddr)(instance->instance_, #name));     \
  if (!api.name)                                                               \
    return Status::error(StatusCode::Unavailable,                              \
                         "Vulkan is not available: the loader has no " #name);
  KILN_VK_INSTANCE_FUNCTIONS(KILN_VK_INSTANCE)
#undef KILN_VK_INSTANCE
  return instance;
}

Instance::~Instance() {
  if (instance_ && api_.vkDestroyInstance)
    api_.vkDestroyInstance(instance_, nullptr);
}

static std::string typeName(VkPhysicalDeviceType type) {
  switch (type) {
  case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
    return "integrated gpu";
  case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
    return "discrete gpu";
  case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
    return "virtual gpu";
  case VK_PHYSICAL_DEVICE_TYPE_CPU:
    return "cpu";
  default:
    return "other";
  }
}

StatusOr<std::vector<PhysicalDevice>> Instance::physicalDevices() const {
  uint32_t count = 0;
  KILN_RETURN_IF_ERROR(
      check(api_.vkEnumeratePhysicalDevices(instance_, &count, nullptr), "vkEnumeratePhysicalDevices"));
  std::vector<VkPhysicalDevice> handles(count);
  VkResult result = api_.vkEnumeratePhysicalDevices(instance_, &count, handles.data());
  if (result != VK_INCOMPLETE)
    KILN_RETURN_IF_ERROR(check(result, "vkEnumeratePhysicalDevices"));
  handles.resize(count);

  std::vector<PhysicalDevice> devices;
  for (uint32_t i = 0; i < handles.size(); ++i) {
    PhysicalDevice device;
    device.handle = handles[i];
    VkPhysicalDeviceProperties properties;
    api_.vkGetPhysicalDeviceProperties(handles[i], &properties);
    device.info.index = i;
    device.info.name = properties.deviceName;
    device.info.type = typeName(properties.deviceType);
    device.info.apiVersion = versionString(properties.apiVersion);
    uint32_t families = 0;
    api_.vkGetPhysicalDeviceQueueFamilyProperties(handles[i], &families, nullptr);
    std::vector<VkQueueFamilyProperties> queues(families);
    api_.vkGetPhysicalDeviceQueueFamilyProperties(handles[i], &families, queues.data());
    for (uint32_t family = 0; family < families; ++family)
      if (queues[family].queueFlags & VK_QUEUE_COMPUTE_BIT) {
        device.info.hasComputeQueue = properties.apiVersion >= VK_API_VERSION_1_1;
        device.computeQueueFamily = family;
        break;
      }
    devices.push_back(std::move(device));
  }
  return devices;
}

static std::string lower(std::string text) {
  for (char &c : text)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

static std::string describeAll(const std::vector<PhysicalDevice> &devices) {
  if (devices.empty())
    return "Vulkan reports no devices";
  std::string list = "the devices are:";
  for (const PhysicalDevice &device : devices)
    list += " " + std::to_string(device.info.index) + " '" + device.info.name + "' (" +
            device.info.type + ", Vulkan " + device.info.apiVersion +
            (device.info.hasComputeQueue ? "" : ", unusable: no compute queue or Vulkan < 1.1") +
            ");";
  list.pop_back();
  return list;
}

StatusOr<PhysicalDevice> Instance::selectPhysicalDevice() const {
  StatusOr<std::vector<PhysicalDevice>> devices = physicalDevices();
  if (!devices.ok())
    return devices.status();
  const char *wanted = std::getenv("KILN_VULKAN_DEVICE");
  if (wanted && *wanted) {
    std::string text = wanted;
    bool isIndex = text.find_first_not_of("0123456789") == std::string::npos && text.size() < 9;
    for (const PhysicalDevice &device : *devices) {
      bool named = isIndex ? device.info.index == std::stoul(text)
                           : lower(device.info.name).find(lower(text)) != std::string::npos;
      if (named && device.info.hasComputeQueue)
        return device;
    }
    return Status::error(StatusCode::Unavailable,
                         "Vulkan is not available: $KILN_VULKAN_DEVICE='" + text +
                             "' names no usable device; " + describeAll(*devices));
  }
  for (const PhysicalDevice &device : *devices)
    if (device.info.hasComputeQueue)
      return device;
  return Status::error(StatusCode::Unavailable,
                       "Vulkan is not available: no device with a compute queue and Vulkan 1.1; " +
                           describeAll(*devices) +
                           " (install a Vulkan driver, e.g. mesa-vulkan-drivers)");
}

} // namespace kiln::runtime::vulkan
