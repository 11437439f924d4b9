//===- ListDevices.h - kiln-run --devices ---------------------------------===//

#ifndef KILN_TOOLING_LISTDEVICES_H
#define KILN_TOOLING_LISTDEVICES_H

#include <string>

namespace kiln::runtime {

/// One line per registered driver: its device's describe(), or why it has
/// none on this machine; for "vulkan", the physical devices it could pick
/// ($KILN_VULKAN_DEVICE), the selected one marked "*".
std::string listDevices();

} // namespace kiln::runtime

#endif // KILN_TOOLING_LISTDEVICES_H
