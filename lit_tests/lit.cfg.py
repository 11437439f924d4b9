import os
import platform

import lit.formats

config.name = "Kiln"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".json"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = getattr(config, "kiln_obj_root", config.test_source_root)
config.environment["PATH"] = os.pathsep.join(
    [config.kiln_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])]
)
config.substitutions.append(("%fake_libcuda", config.kiln_fake_libcuda))
# The host's architecture, for tests of what another architecture's artifacts
# do here (UNSUPPORTED: host-aarch64).
config.available_features.add("host-" + platform.machine().lower())
# SPIR-V validation of the Vulkan target's kernels (Debian's spirv-tools).
import shutil
if shutil.which("spirv-val"):
    config.available_features.add("spirv-val")
# ptxas (the CUDA toolkit's) for the NVIDIA target's kernels.
if shutil.which("ptxas"):
    config.available_features.add("ptxas")
# The ROCm device libraries (Debian's rocm-device-libs, or ROCm) for the AMD targets.
if os.path.isdir("/usr/lib/x86_64-linux-gnu/amdgcn/bitcode") or os.path.isdir("/opt/rocm"):
    config.available_features.add("rocm-device-libs")
