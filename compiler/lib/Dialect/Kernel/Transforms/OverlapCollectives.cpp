// Orders a kernel-level function so that kernels run while its collectives
// are in flight.
//
// The runtime starts a collective where the plan puts it and waits for it
// before the first launch that uses its input's or output's memory
// (Program::run). Program order from the FX graph rarely leaves anything in
// between: the wait_tensor comes right before the first use, and the work
// that does not depend on the collective (the weight gradients next to a
// tensor-parallel input gradient's all_reduce) sits wherever autograd put
// it. This pass list-schedules the function's units: a collective as soon
// as its operand is ready, then every unit that does not touch a collective
// in flight, in program order, before one that does (and so waits).
// Collectives keep their order: every rank must issue them alike, and every
// rank runs this same deterministic schedule.
#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Kernel/IR/KernelOps.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"

#include <set>

namespace kiln::kernel {
#define GEN_PASS_DEF_OVERLAPCOLLECTIVESPASS
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace kiln::kernel

using namespace mlir;
using namespace kiln;

namespace {

/// The value whose memory `value` is: reshapes between kernels become plan
/// views of their input.
Value memoryOf(Value value) {
  while (auto reshape = value.getDefiningOp<graph::ReshapeOp>())
    value = reshape.getInput();
  return value;
}

/// Units that may move: kernels, collectives (among themselves in order),
/// and ops without side effects (views, constants). Anything else stays
/// between the units before and after it.
bool movable(Operation *op) {
  return isa<kernel::KernelOp, graph::CollectiveOp>(op) || isMemoryEffectFree(op);
}

class Scheduler {
public:
  explicit Scheduler(Block &block) {
    for (Operation &op : block.without_terminator())
      ops.push_back(&op);
    for (auto [index, op] : llvm::enumerate(ops))
      position[op] = index;
  }

  void run() {
    std::vector<SmallVector<size_t>> users(ops.size());
    std::vector<int> unscheduledDeps(ops.size(), 0);
    auto addDep = [&](size_t from, size_t to) { // `to` runs after `from`
      users[from].push_back(to);
      ++unscheduledDeps[to];
    };
    int64_t lastBarrier = -1, lastCollective = -1;
    for (size_t index = 0; index < ops.size(); ++index) {
      Operation *op = ops[index];
      llvm::SmallDenseSet<size_t> deps;
      op->walk([&](Operation *nested) {
        for (Value operand : nested->getOperands())
          if (Operation *def = operand.getDefiningOp())
            if (auto it = position.find(def); it != position.end() && it->second != index)
              deps.insert(it->second);
      });
      if (lastBarrier >= 0)
        deps.insert(lastBarrier);
      if (isa<graph::CollectiveOp>(op)) {
        if (lastCollective >= 0)
          deps.insert(lastCollective);
        lastCollective = index;
      }
      if (!movable(op)) {
        for (size_t earlier = lastBarrier + 1; earlier < index; ++earlier)
          deps.insert(earlier);
        lastBarrier = index;
      }
      for (size_t dep : deps)
        addDep(dep, index);
    }

    std::set<size_t> ready;
    for (size_t index = 0; index < ops.size(); ++index)
      if (unscheduledDeps[index] == 0)
        ready.insert(index);
    SmallVector<Operation *> order;
    while (!ready.empty()) {
      size_t next = pick(ready);
      ready.erase(next);
      schedule(ops[next]);
      order.push_back(ops[next]);
      for (size_t user : users[next])
        if (--unscheduledDeps[user] == 0)
          ready.insert(user);
    }
    assert(order.size() == ops.size() && "the units' dependences form a cycle");
    for (Operation *op : order)
      op->moveBefore(op->getBlock()->getTerminator());
  }

private:
  /// A ready collective first (started as early as possible); else the
  /// first unit in program order that leaves every collective in flight;
  /// else the first unit.
  size_t pick(const std::set<size_t> &ready) {
    for (size_t index : ready)
      if (isa<graph::CollectiveOp>(ops[index]))
        return index;
    for (size_t index : ready)
      if (!touchesInFlight(ops[index]))
        return index;
    return *ready.begin();
  }

  /// The values `op` reads from outside itself: a kernel (isolated from
  /// above) reads only its operands, so its body need not be walked.
  static SmallVector<Value> valuesRead(Operation *op) {
    if (op->getNumRegions() == 0 || op->hasTrait<OpTrait::IsIsolatedFromAbove>())
      return SmallVector<Value>(op->getOperands());
    SmallVector<Value> values;
    op->walk([&](Operation *nested) { llvm::append_range(values, nested->getOperands()); });
    return values;
  }

  /// Whether running `op` uses the memory of a collective in flight (which
  /// the runtime then waits for). Views use no memory of their own.
  bool touchesInFlight(Operation *op) {
    if (isa<graph::ReshapeOp>(op))
      return false;
    return llvm::any_of(valuesRead(op),
                        [&](Value value) { return inFlight.contains(memoryOf(value)); });
  }

  void schedule(Operation *op) {
    if (auto collective = dyn_cast<graph::CollectiveOp>(op)) {
      // Its memory: what it reads and what it makes. (Program::run waits
      // before a later collective that touches it; that needs no help.)
      Value input = memoryOf(collective->getOperand(0));
      Value output = collective->getResult(0);
      inFlight.insert(input);
      inFlight.insert(output);
      memoryOfCollective.push_back({input, output});
      return;
    }
    if (!touchesInFlight(op))
      return;
    // The runtime waits here for every collective whose memory it uses.
    SmallVector<std::pair<Value, Value>> stillInFlight;
    llvm::DenseSet<Value> used;
    for (Value value : valuesRead(op))
      used.insert(memoryOf(value));
    inFlight.clear();
    for (auto [input, output] : memoryOfCollective)
      if (!used.contains(input) && !used.contains(output)) {
        stillInFlight.push_back({input, output});
        inFlight.insert(input);
        inFlight.insert(output);
      }
    memoryOfCollective = std::move(stillInFlight);
  }

  SmallVector<Operation *> ops;
  llvm::DenseMap<Operation *, size_t> position;
  llvm::DenseSet<Value> inFlight;
  SmallVector<std::pair<Value, Value>> memoryOfCollective; // those in flight
};

struct OverlapCollectivesPass
    : kiln::kernel::impl::OverlapCollectivesPassBase<OverlapCollectivesPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func.getBody().hasOneBlock())
      return;
    Block &block = func.getBody().front();
    if (llvm::none_of(block, [](Operation &op) { return isa<graph::CollectiveOp>(op); }))
      return; // the order of a graph without collectives stays as fusion made it
    Scheduler(block).run();
  }
};

} // namespace
