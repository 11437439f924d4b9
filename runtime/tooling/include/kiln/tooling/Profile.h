//===- Profile.h - Timings of runs and launches, printed ------------------===//

#ifndef KILN_TOOLING_PROFILE_H
#define KILN_TOOLING_PROFILE_H

#include "kiln/runtime/Artifact.h"

#include <vector>

namespace kiln::runtime {

double median(std::vector<double> values);

/// "time: median M ms, min N ms over K runs"; `ms` must not be empty.
void printTimes(std::vector<double> ms);

/// One line per launch: its median time over `runs` (each Program::run's
/// launchMs), slowest first.
void printProfile(const Artifact &artifact, const std::vector<std::vector<double>> &runs);

} // namespace kiln::runtime

#endif // KILN_TOOLING_PROFILE_H
