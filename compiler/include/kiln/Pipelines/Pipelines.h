#ifndef KILN_PIPELINES_PIPELINES_H
#define KILN_PIPELINES_PIPELINES_H

#include "kiln/Target/Target.h"

#include <string>
#include <vector>

namespace kiln {

/// Graph stages: kiln_graph -> fused kiln_kernel.kernel ops -> kernel
/// functions and the kiln_plan host plan, then `target`'s plan passes.
std::vector<PipelineStage> graphStages(const Target &target);

/// Registers `kiln-graph-to-plan` (the graph stages with the CPU's plan
/// passes) and `kiln-cpu-codegen` (the CPU kernel stages) as pass pipelines
/// for kiln-opt. Both read the module's kiln_kernel.target, which
/// `kiln-attach-target` sets.
void registerPipelines();

} // namespace kiln

#endif
