//===- Profile.cpp - Timings of runs and launches, printed ----------------===//

#include "kiln/tooling/Profile.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace kiln::runtime {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

void printTimes(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  std::printf("time: median %.4g ms, min %.4g ms over %zu runs\n", median(ms),
              ms[0], ms.size());
}

void printProfile(const Artifact &artifact,
                  const std::vector<std::vector<double>> &runs) {
  struct Row {
    size_t launch;
    double ms;
  };
  std::vector<Row> rows;
  double total = 0;
  for (size_t l = 0; l < artifact.launches.size(); ++l) {
    std::vector<double> samples;
    for (const std::vector<double> &run : runs)
      samples.push_back(run[l]);
    rows.push_back({l, median(samples)});
    total += rows.back().ms;
  }
  std::sort(rows.begin(), rows.end(),
            [](const Row &a, const Row &b) { return a.ms > b.ms; });
  std::printf("profile: %zu launches, %.4g ms in kernels (medians)\n",
              rows.size(), total);
  for (const Row &row : rows) {
    const LaunchCmd &launch = artifact.launches[row.launch];
    // A symbolic launch's count depends on the sizes of each run.
    std::string workgroups = launch.symbolicWorkgroups.empty()
                                 ? std::to_string(launch.workgroups) + " workgroups"
                                 : "workgroups sized at launch";
    std::printf("  launch %-3zu %-32s %-26s %9.4f ms  %5.1f%%\n", row.launch,
                artifact.kernels[launch.kernel].name.c_str(), workgroups.c_str(), row.ms,
                total > 0 ? 100 * row.ms / total : 0);
  }
}

} // namespace kiln::runtime
