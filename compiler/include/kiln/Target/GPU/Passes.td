#ifndef KILN_TARGET_GPU_PASSES
#define KILN_TARGET_GPU_PASSES

include "mlir/Pass/PassBase.td"

def GpuLowerKernelOpsPass : Pass<"kiln-gpu-lower-kernel-ops", "mlir::func::FuncOp"> {
  let summary = "Lower kiln_kernel.conv2d to parallel loops";
  let description = [{
    Runs on bufferized kernels. An ungrouped float convolution with static
    sizes, at least 64 output channels and 32 output positions becomes an
    implicit GEMM: a [N * OH, OW, O] temporary set to the bias, a loop over (n * OH +
    y, x, o) combining into it over one loop on c * KH * KW (the input's
    address varies with the position, the weight's with the channel, so
    kiln-gpu-map-workgroups tiles it as a matmul), and a loop applying the
    epilogue into the output. Any other convolution becomes a parallel loop
    over its output elements, (n * OH + y, o, x), each reducing over its
    input channels and taps, with the bias and epilogue applied before the
    store. The first dimension is the kernel's rows, as
    kiln-gpu-map-workgroups expects, and the loops are marked
    `kiln_kernel.writes_apart`. Attention is left to
    kiln-gpu-map-workgroups, which picks its strategy.
  }];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::arith::ArithDialect",
                           "mlir::math::MathDialect", "mlir::memref::MemRefDialect",
                           "mlir::affine::AffineDialect"];
}

def GpuPrepareKernelsPass : Pass<"kiln-gpu-prepare-kernels", "mlir::func::FuncOp"> {
  let summary = "Shape bufferized kernels for the GPU mapping";
  let description = [{
    Runs on bufferized kernel functions, before linalg becomes loops.

    - Every linalg.generic iterates its parallel dimensions outside its
      reductions (an interchange; any order is valid for a generic), so that
      convert-linalg-to-parallel-loops gives one scf.parallel over all the
      parallel dimensions, which kiln-gpu-map-workgroups spreads over
      threads, with the reductions inside it.
    - A GPU kernel allocates no memory: every temporary (memref.alloc)
      becomes a buffer of the launch, a new argument after the bindings
      (before the size symbols), and its byte size, constant or an
      expression over the symbols, is recorded in
      `kiln_kernel.scratch_buffers`. Workgroups touch only their own rows of
      a temporary (the fusion contract), so one buffer of the temporary's
      full size serves every workgroup.
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect", "mlir::arith::ArithDialect",
                           "mlir::linalg::LinalgDialect"];
}

def GpuMapWorkgroupsPass : Pass<"kiln-gpu-map-workgroups", "mlir::func::FuncOp"> {
  let summary = "Spread a kernel's loop nests over the threads of its workgroups";
  let description = [{
    Runs on kernel functions whose linalg ops are loops (scf.parallel over
    the parallel dimensions). The mapping every GPU target shares:

    - A workgroup handles a chunk of the kernel's rows (its leading extent),
      computed as kiln-distribute-workgroups does on the CPU, from the block
      id and the grid size; the chunk's alignment (rows per workgroup, chosen
      so that the heaviest loop nest, counting the reduction a row loop
      holds, has about one element per thread) is recorded as
      `kiln_kernel.workgroup_alignment`, from which the plan sizes the grid.
    - A matmul-like top-level loop (a body that is one scf.for over k
      combining into its outputs values computed from row loads, whose
      addresses vary, through pure arithmetic, with k and the dimensions
      from the first one column loads do not vary with up to the one before
      last, and column loads, which vary with the last dimension) goes by
      tiles of outputs: 32 rows of the row dimensions flattened (an
      implicit GEMM's output rows and positions) by 64, 32 or 16 columns
      (by the last dimension's extent), for 128 threads. For each 16-deep
      stage, all threads load the row and column tiles into workgroup
      memory (through the loads' address arithmetic), then each thread
      combines its 4 x 4 (x 2, x 1) outputs over the stage from there,
      carrying them from their initial values in k order. Where the first
      dimension is a row dimension the chunk's alignment makes whole tiles.
      Narrow ones (under 8 rows or 8 columns) are not tiled.
    - Each other top-level scf.parallel becomes a loop over its linearized
      iteration space (the rows clamped to the chunk), thread t taking
      iterations t, t + T, ...; reductions run in each thread. Where the
      target has vector_bits and such a loop writes its iterations apart
      with 32-bit loads and stores contiguous along its innermost dimension
      (constant bounds, multiples of vector_bits / 32 = W elements), a
      thread takes W consecutive elements instead, those accesses becoming
      vector loads and stores; it runs so only where every buffer they
      reach is aligned to W elements (checked at launch:
      memref.extract_aligned_pointer_as_index), else element by element.
    - A reduction (a perfect scf.for nest whose innermost body, for each of
      its accumulators, loads it at loop-invariant indices, combines it and
      stores it back) spreads over the threads: each folds every T-th
      iteration of the outer loop into partials from the combines'
      identities, and the partials combine across the threads: with
      `subgroups` and 32-bit (or boolean) combines that are subgroup
      reductions, each subgroup reduces its threads' partials
      (gpu.subgroup_reduce; maximumf and minimumf NaN where any is), the
      first subgroup reduces the subgroups' results from workgroup memory,
      and its first thread folds the totals into the accumulators (two
      barriers); otherwise the partials meet in workgroup memory and fold
      in a tree (T/2, T/4, ... threads, a barrier after each round), and
      thread 0 folds the totals into the accumulators. That is done for a reduction
      into one element in a kernel not split into rows, and for a row
      reduction (a top-level scf.parallel whose body is index arithmetic
      and such a nest, indexed by the rows) when a workgroup has fewer
      than T/4 of its iterations and each reduces at least 32 elements (or
      a symbolic count): the rows then run one after another, all threads
      on each. Min, max, bitwise and integer combines always (booleans' partials as
      32-bit integers); float sums
      and products only with `reassoc`; while workgroup memory lasts.
    - Attention (kiln_kernel.attention, a kernel's top-level op) goes by
      query blocks: the largest of 32 x 32, 32 x 16, 16 x 16, 8 x 8 and 4 x 4
      (queries x keys, no larger than a constant count of either) whose
      tiles fit in workgroup memory. For each block of a (batch, head) pair,
      all threads load the queries; then for each tile of keys (causal
      attention stops after the block's last query) they load the key and
      value tiles, compute the block's scores (scaled, masked, -inf past
      the ends), a thread per query updates its running max and sum and
      turns the scores into exponentials, and every thread rescales its
      outputs (a few each, kept in registers) and adds the tile's weighted
      values; a barrier separates the steps. The [L, S] scores are never
      stored. Where the kernel holds nothing else that writes, the blocks
      go over a grid of workgroups (`kiln_kernel.column_extent`: the count
      of blocks where it is a constant, else 32 columns sharing them), so a
      long sequence spreads over many workgroups. Where no block fits, each
      query row is a thread's, running the online softmax over the keys
      alone.
    - A top-level scf.for that carries nothing and whose body is parallel
      loops writing their iterations apart and ops that write nothing (a
      scan's steps along its axis; a row loop whose rows run elementwise
      loops) runs on every thread, each parallel loop spread over the
      threads with a barrier after it (clamped to the chunk when the kernel
      is split into rows: the loop then being the rows', or, where it is
      marked `kiln_kernel.steps_over_rows` (a sort's stages), the steps'
      first dimension). Serial loops of such loops run the same way (a
      sort's stages of steps).
    - A top-level perfect scf.for nest (bounds from outside it, carrying
      nothing, writing only by stores) some of whose loops write apart
      (every store, and every load of a buffer the nest writes, indexes with
      the loop's variable directly, one position per buffer, and no other
      view of a written buffer is read): a scatter's nest, out[index[i, j],
      j] += src[i, j], writes apart by j. Those loops' iterations spread
      over the threads, the others run in order inside each thread, so
      every element sees its updates in the nest's order (deterministic, no
      atomics).
    - With `atomics`, a top-level perfect scf.for nest in a kernel not split
      into rows whose only writes are read-modify-writes an atomic does
      (store(combine(load(B[i]), v), B[i]), the load and store at the same
      indices of a binding or a reinterpretation of one, nothing else in the
      nest reading B): integer adds, max and min of 32 or 64 bits, and
      float32 adds that carry `reassoc` (their order may change). Each
      becomes a memref.atomic_rmw and every iteration of the nest spreads
      over the threads: a 1-D scatter (index_add) no longer runs on one
      thread. Integer updates give the sequential answer; float sums differ
      from it only by rounding, as ATen's CUDA index_add does.
    - A top-level loop nest whose iterations may write the same element (a
      scatter through computed indices), and any other top-level op that
      writes memory, runs on thread 0 alone: deterministic, and correct.
    - A workgroup barrier follows each of them, so that each loop nest sees
      what the ones before it wrote.

    Sets `kiln_kernel.workgroup_size` ([T, 1, 1], T from the target's
    max_workgroup_size, at most 256), and `kiln_kernel.gpu_strategies`, a
    phrase per strategy used (kiln-inspect shows them).
  }];
  let options = [
    Option<"subgroups", "subgroups", "bool", /*default=*/"true",
           "Combine reduction partials with subgroup operations (false: by "
           "the workgroup-memory tree alone, for a target without them)">,
    Option<"warpMma", "warp-mma", "std::string", /*default=*/"\"none\"",
           "Matmuls of float16 or bfloat16 operands on tensor cores: none, "
           "nvvm (mma.sync) or emulated (the same tiles and fragments, the "
           "product through workgroup memory: for tests on any GPU)">,
    Option<"atomics", "atomics", "bool", /*default=*/"true",
           "The target has atomic read-modify-writes of storage: 32- and "
           "64-bit integer add, max and min, and float32 add (false: such "
           "scatters run on thread 0)">
  ];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::scf::SCFDialect",
                           "mlir::arith::ArithDialect", "mlir::math::MathDialect",
                           "mlir::memref::MemRefDialect", "mlir::vector::VectorDialect",
                           "mlir::LLVM::LLVMDialect", "mlir::NVVM::NVVMDialect"];
}

def FormKernelModulesPass : Pass<"kiln-gpu-form-kernel-modules", "mlir::ModuleOp"> {
  let summary = "Turn mapped kernel functions into gpu.modules with the bare-pointer kernel ABI (CUDA, ROCm)";
  let description = [{
    Runs after kiln-gpu-map-workgroups, for the targets whose kernels take
    pointers (NVVM, ROCDL). Each kernel function becomes the one gpu.func of
    its own gpu.module (one module per kernel), taking its
    bindings as the memrefs they are (dense, of static shape: with
    convert-gpu-to-nvvm's bare-pointer convention each is one device
    pointer) and then the size symbols as i64, the interface of the
    runtime's GPU image container (kiln/runtime/GpuImageContainer.h). Its
    `known_block_size` is the mapping's workgroup size. Workgroup memory
    (`memref.alloc` in `#gpu.address_space<workgroup>`) becomes the
    gpu.func's workgroup attributions (shared memory); the constants a kernel
    reads (`memref.global`) are copied into its gpu.module.
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect"];
}

def GpuSubgroupsToShufflesPass
    : Pass<"kiln-gpu-subgroups-to-shuffles", "mlir::gpu::GPUModuleOp"> {
  let summary = "Lower subgroup reductions and ids for a target of fixed subgroup size";
  let description = [{
    For a target whose subgroups (warps) have a fixed size and that lowers
    gpu.shuffle but not gpu.subgroup_reduce (NVVM): each gpu.subgroup_reduce
    of a 32-bit (or narrower) scalar becomes a butterfly of gpu.shuffle xor
    (log2 of the size steps, every lane ending with the result), vectors
    broken down first; gpu.subgroup_id becomes the linear thread id over the
    subgroup size, gpu.num_subgroups the workgroup's threads over it (rounded
    up), and gpu.subgroup_size the constant. Runs on gpu.module after
    kiln-gpu-form-kernel-modules, before convert-gpu-to-nvvm (which lowers
    the shuffles to shfl.sync and gpu.lane_id to %laneid).
  }];
  let options = [
    Option<"subgroupSize", "subgroup-size", "unsigned", /*default=*/"32",
           "Lanes in a subgroup (NVIDIA's warp: 32)">,
  ];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::arith::ArithDialect",
                           "mlir::vector::VectorDialect"];
}

#endif
