// A kernel's workgroup memory, shared by its top-level ops in turn (see
// Mapping.h).
#include "Mapping.h"

using namespace mlir;
using namespace kiln::gpu;

static int64_t bufferBytes(Type type, int64_t elements) {
  return elements * int64_t(llvm::divideCeil(type.getIntOrFloatBitWidth(), 8));
}

int64_t WorkgroupMemory::bytesToTake(ArrayRef<Type> types, int64_t elements) const {
  DenseMap<BufferShape, unsigned> wanted;
  int64_t bytes = 0;
  for (Type type : types) {
    BufferShape shape{type, elements};
    auto pooled = pool.find(shape);
    auto used = takenByOp.find(shape);
    unsigned free = (pooled == pool.end() ? 0 : pooled->second.size()) -
                    (used == takenByOp.end() ? 0 : used->second);
    if (++wanted[shape] > free)
      bytes += bufferBytes(type, elements);
  }
  return bytes;
}

SmallVector<Value> WorkgroupMemory::take(Location loc, ArrayRef<Type> types, int64_t elements) {
  left -= bytesToTake(types, elements);
  SmallVector<Value> buffers;
  for (Type type : types) {
    BufferShape shape{type, elements};
    SmallVector<Value> &pooled = pool[shape];
    unsigned &used = takenByOp[shape];
    if (used == pooled.size()) {
      // In the order taken, at the start of the kernel.
      OpBuilder b = lastAllocation ? OpBuilder(lastAllocation->getBlock(),
                                               std::next(lastAllocation->getIterator()))
                                   : OpBuilder::atBlockBegin(entry);
      pooled.push_back(workgroupBuffer(b, loc, type, elements));
      lastAllocation = pooled.back().getDefiningOp();
    }
    buffers.push_back(pooled[used++]);
  }
  return buffers;
}
