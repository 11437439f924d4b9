//===- RunGraph.h - kiln-run: load, feed, run, print ----------------------===//
//
// Loads an artifact onto a device, gives it arrays from NumPy files or seeded
// random values, runs it, and prints a checksum, min and max per output
// (comparable with torch), optionally with timings and the outputs saved as
// an .npz archive. Nothing here throws.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLING_RUNGRAPH_H
#define KILN_TOOLING_RUNGRAPH_H

#include "kiln/tooling/Inputs.h"

#include <cstdint>
#include <string>

namespace kiln::runtime {

struct RunGraphOptions {
  std::string artifactPath;
  InputSource inputs;
  std::string device = "cpu"; // a DriverRegistry name
  int threads = 0;            // 0: the device's default
  uint64_t repeat = 0;        // timed runs after the first
  uint64_t warmup = 0;        // untimed runs before them
  std::string saveOutputs;    // .npz of the first run's outputs, if set
  std::string saveInputs;     // .npz of the inputs, if set
  bool quiet = false;         // only the output and time lines
  bool profile = false;       // each launch's median time
};

/// Prints "kiln-run: error: MESSAGE" to stderr.
void printRunError(const std::string &message);

/// Runs as kiln-run does; returns its exit status (0, or 1 on errors).
int runGraph(const RunGraphOptions &options);

} // namespace kiln::runtime

#endif // KILN_TOOLING_RUNGRAPH_H
