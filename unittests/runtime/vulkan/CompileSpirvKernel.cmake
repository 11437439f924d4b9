# Compiles one hand-written gpu.func kernel (a .mlir file holding one
# gpu.module) to a SPIR-V binary, run as
#   cmake -DMLIR_OPT=... -DMLIR_TRANSLATE=... [-DSPIRV_VAL=...]
#         -DINPUT=k.mlir -DOUTPUT=k.spv -P CompileSpirvKernel.cmake
#
# The pipeline is the one the compiler's Vulkan target uses, except that scf
# stays structured: convert-gpu-to-spirv converts scf.for/scf.if itself but
# not the cf.br that convert-scf-to-cf would make of them.
set(pipeline "builtin.module(spirv-attach-target{ver=v1.3 caps=Shader,GroupNonUniformArithmetic exts=SPV_KHR_storage_buffer_storage_class client_api=Vulkan},gpu.module(lower-affine,convert-math-to-spirv),fold-memref-alias-ops,convert-gpu-to-spirv,spirv.module(spirv-lower-abi-attrs,spirv-update-vce))")

set(lowered "${OUTPUT}.lowered.mlir")
set(spirv_mlir "${OUTPUT}.spirv.mlir")

execute_process(
  COMMAND "${MLIR_OPT}" "${INPUT}" "--pass-pipeline=${pipeline}" -o "${lowered}"
  RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "mlir-opt failed on ${INPUT}")
endif()

# mlir-translate serializes a spirv.module alone: cut it out of the builtin
# module that still holds the gpu.module beside it.
file(READ "${lowered}" text)
string(FIND "${text}" "spirv.module" start)
if(start EQUAL -1)
  message(FATAL_ERROR "${INPUT}: no spirv.module after lowering")
endif()
string(SUBSTRING "${text}" ${start} -1 text)
string(FIND "${text}" "\n  }\n" end)
if(end EQUAL -1)
  message(FATAL_ERROR "${INPUT}: the spirv.module does not end")
endif()
math(EXPR end "${end} + 4")
string(SUBSTRING "${text}" 0 ${end} module)

# spirv-lower-abi-attrs gives the push-constant variable a descriptor binding
# too, which Vulkan forbids (spirv-val rejects it): drop it.
string(REGEX REPLACE "( @[A-Za-z0-9_]+) bind\\([0-9]+, [0-9]+\\)( : !spirv.ptr<[^\n]*PushConstant>)"
       "\\1\\2" module "${module}")
file(WRITE "${spirv_mlir}" "${module}\n")

execute_process(
  COMMAND "${MLIR_TRANSLATE}" --no-implicit-module --serialize-spirv "${spirv_mlir}"
          -o "${OUTPUT}"
  RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "mlir-translate --serialize-spirv failed on ${spirv_mlir}")
endif()

if(SPIRV_VAL)
  execute_process(COMMAND "${SPIRV_VAL}" --target-env vulkan1.1 "${OUTPUT}"
                  RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    file(REMOVE "${OUTPUT}")
    message(FATAL_ERROR "spirv-val rejects ${OUTPUT} (compiled from ${INPUT})")
  endif()
endif()
