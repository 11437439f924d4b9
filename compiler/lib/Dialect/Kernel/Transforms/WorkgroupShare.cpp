// A workgroup's share of a kernel's rows and columns, computed at run time
// from its id and the launch's count (see Passes.h): what
// kiln-distribute-workgroups and the GPU mapping emit alike.
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

using namespace mlir;

kiln::kernel::WorkgroupShare kiln::kernel::workgroupShare(OpBuilder &b, Location loc, Value id,
                                                          Value count, Value extent,
                                                          int64_t alignment, int64_t columns,
                                                          int64_t columnAlignment) {
  auto index = [&](int64_t value) -> Value {
    return arith::ConstantIndexOp::create(b, loc, value);
  };
  // ceil(ceil(n / parts) / align) * align, as workgroupChunk.
  auto alignedChunk = [&](Value n, Value parts, int64_t align) -> Value {
    Value alignValue = index(align);
    return arith::MulIOp::create(
        b, loc,
        arith::CeilDivUIOp::create(b, loc, arith::CeilDivUIOp::create(b, loc, n, parts),
                                   alignValue),
        alignValue);
  };
  Value chunk = extent ? alignedChunk(extent, count, alignment) : Value();
  WorkgroupShare share;
  Value rowGroup = id;
  if (columns > 0) {
    // `count` covers a grid: ceil(extent / chunk) row chunks, each with
    // count / that many column chunks.
    Value one = index(1);
    Value rowGroups =
        extent ? arith::MaxUIOp::create(
                     b, loc, one,
                     arith::CeilDivUIOp::create(b, loc, extent,
                                                arith::MaxUIOp::create(b, loc, chunk, one)))
                     .getResult()
               : one;
    Value columnGroups =
        arith::MaxUIOp::create(b, loc, one, arith::DivUIOp::create(b, loc, count, rowGroups));
    rowGroup = arith::DivUIOp::create(b, loc, id, columnGroups);
    Value columnGroup = arith::RemUIOp::create(b, loc, id, columnGroups);
    Value columnsValue = index(columns);
    Value columnChunk = alignedChunk(columnsValue, columnGroups, columnAlignment);
    share.columnBegin = arith::MinUIOp::create(
        b, loc, arith::MulIOp::create(b, loc, columnGroup, columnChunk), columnsValue);
    share.columnEnd = arith::MinUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, share.columnBegin, columnChunk), columnsValue);
  }
  if (extent) {
    share.begin =
        arith::MinUIOp::create(b, loc, arith::MulIOp::create(b, loc, rowGroup, chunk), extent);
    share.end =
        arith::MinUIOp::create(b, loc, arith::AddIOp::create(b, loc, share.begin, chunk), extent);
  }
  return share;
}
