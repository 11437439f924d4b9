//===- kiln-run.cpp - Run a compiled Kiln graph without Python ------------===//
//
// The command line of runGraph (kiln/tooling/RunGraph.h), which does the work.
// It links only the runtime; it must never need MLIR, LLVM or torch.
//
// The tool may be built with -fno-exceptions (LLVM's flags): nothing here
// throws or catches.
//
//===----------------------------------------------------------------------===//

#include "kiln/tooling/ListDevices.h"
#include "kiln/tooling/RunGraph.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace kiln::runtime;

namespace {

const char kUsage[] =
    R"(usage: kiln-run GRAPH.kiln [--inputs FILE.npz | --inputs A.npy,B.npy |
                           --random [--seed N] [--dim S=N ...]] [--repeat N] [--warmup N]
                          [--device NAME] [--threads N] [--save-outputs OUT.npz] [--quiet]

Runs a compiled Kiln graph (an artifact from a dump directory or kiln-compile)
on a device (the CPU by default), without Python.

Inputs, required when the graph takes any:
  --inputs FILE.npz     the arrays of a numpy.savez archive, in archive order
  --inputs A.npy,B.npy  one .npy file per graph input, in order; an .npz in the
                        list contributes all of its arrays
  --random              seeded random values: floats uniform in [-1, 1),
                        integers in [0, 10), bools 0 or 1
  --seed N              the seed for --random (default 0)
  --dim S=N             with --random, for a graph compiled with symbolic sizes:
                        the value of size symbol S (as "symbol" lines name
                        them); every symbol needs one. --inputs take their
                        sizes from the arrays.

Options:
  --repeat N            after the first run, time N more (default 0)
  --warmup N            untimed runs before the timed ones (default 0)
  --device NAME         the device driver to run on (default: cpu)
  --devices             list the device drivers and their devices, then exit
  --threads N           threads that run kernels (default: $KILN_NUM_THREADS,
                        else every hardware thread)
  --save-inputs FILE    write the inputs (--random's too) to FILE, an .npz
                        archive with members input_0, input_1, ...
  --save-outputs FILE   write the outputs of the first run to FILE, an .npz
                        archive with members output_0, output_1, ...
  --profile             with --repeat: each launch's median time, slowest first
  --quiet               print only the output and time lines
  -h, --help            print this help

Each output prints as "output I: TYPE checksum=S min=A max=B": S is the sum of
its elements as doubles, which torch computes as t.double().sum().item(), up to
rounding. Exit status: 0 on success, 1 on errors, 2 on bad arguments.
)";

struct Options : RunGraphOptions {
  bool seedGiven = false;
};

/// Parses a whole decimal string into [0, max].
bool parseCount(const std::string &text, uint64_t max, uint64_t &out) {
  if (text.empty() || text[0] < '0' || text[0] > '9')
    return false;
  errno = 0;
  char *end = nullptr;
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || value > max)
    return false;
  out = value;
  return true;
}

std::vector<std::string> splitAtCommas(const std::string &text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    parts.push_back(text.substr(start, comma - start));
    if (comma == std::string::npos)
      return parts;
    start = comma + 1;
  }
}

enum class ParseResult { Run, Help, ListDevices, BadArguments };

ParseResult parseArguments(int argc, char **argv, Options &options) {
  auto bad = [](const std::string &message) {
    printRunError(message + " (see kiln-run --help)");
    return ParseResult::BadArguments;
  };
  bool haveInputs = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help")
      return ParseResult::Help;
    if (arg == "--devices")
      return ParseResult::ListDevices;
    if (arg == "--random") {
      options.inputs.random = true;
      continue;
    }
    if (arg == "--profile") {
      options.profile = true;
      continue;
    }
    if (arg == "--quiet") {
      options.quiet = true;
      continue;
    }
    if (arg.size() < 2 || arg.compare(0, 2, "--") != 0 || arg == "--") {
      if (!arg.empty() && arg[0] == '-' && arg != "-")
        return bad("unknown option '" + arg + "'");
      if (!options.artifactPath.empty())
        return bad("more than one artifact given: '" + options.artifactPath +
                   "' and '" + arg + "'");
      options.artifactPath = arg;
      continue;
    }

    // Options with a value, as "--name value" or "--name=value".
    std::string name = arg, value;
    size_t equals = arg.find('=');
    if (equals != std::string::npos) {
      name = arg.substr(0, equals);
      value = arg.substr(equals + 1);
    } else if (name == "--inputs" || name == "--seed" || name == "--repeat" ||
               name == "--warmup" || name == "--threads" ||
               name == "--save-outputs" || name == "--save-inputs" || name == "--dim" ||
               name == "--device") {
      if (i + 1 >= argc)
        return bad(name + " needs a value");
      value = argv[++i];
    } else {
      return bad("unknown option '" + arg + "'");
    }

    uint64_t number = 0;
    if (name == "--inputs") {
      if (haveInputs)
        return bad("--inputs given twice; list several files as A.npy,B.npy");
      haveInputs = true;
      options.inputs.paths = splitAtCommas(value);
      for (const std::string &path : options.inputs.paths)
        if (path.empty())
          return bad("--inputs has an empty file name in '" + value + "'");
    } else if (name == "--save-outputs" || name == "--save-inputs") {
      if (value.empty())
        return bad(name + " needs a file name");
      (name == "--save-outputs" ? options.saveOutputs : options.saveInputs) = value;
    } else if (name == "--seed") {
      if (!parseCount(value, UINT64_MAX, options.inputs.seed))
        return bad("--seed needs a non-negative integer, not '" + value + "'");
      options.seedGiven = true;
    } else if (name == "--repeat" || name == "--warmup") {
      if (!parseCount(value, 1000000000, number))
        return bad(name + " needs a non-negative integer, not '" + value + "'");
      (name == "--repeat" ? options.repeat : options.warmup) = number;
    } else if (name == "--dim") {
      size_t at = value.find('=');
      std::string symbol = value.substr(0, at);
      if (at == std::string::npos || symbol.empty() ||
          !parseCount(value.substr(at + 1), INT64_MAX, number))
        return bad("--dim needs SYMBOL=SIZE with a non-negative size, not '" + value + "'");
      for (const auto &[known, size] : options.inputs.dims)
        if (known == symbol)
          return bad("--dim gives " + symbol + " twice");
      options.inputs.dims.push_back({symbol, static_cast<int64_t>(number)});
    } else if (name == "--threads") {
      if (!parseCount(value, 4096, number) || number == 0)
        return bad("--threads needs an integer from 1 to 4096, not '" + value +
                   "'");
      options.threads = static_cast<int>(number);
    } else if (name == "--device") {
      if (value.empty())
        return bad("--device needs a driver name");
      options.device = value;
    } else {
      return bad("unknown option '" + name + "'");
    }
  }
  if (options.artifactPath.empty())
    return bad("no artifact given");
  if (options.inputs.random && haveInputs)
    return bad("--inputs and --random exclude each other");
  if (options.seedGiven && !options.inputs.random)
    return bad("--seed only applies to --random");
  if (!options.inputs.dims.empty() && !options.inputs.random)
    return bad("--dim only applies to --random (--inputs give their own sizes)");
  return ParseResult::Run;
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  switch (parseArguments(argc, argv, options)) {
  case ParseResult::Help:
    std::fputs(kUsage, stdout);
    return 0;
  case ParseResult::ListDevices:
    std::fputs(listDevices().c_str(), stdout);
    return 0;
  case ParseResult::BadArguments:
    return 2;
  case ParseResult::Run:
    break;
  }
  return runGraph(options);
}
