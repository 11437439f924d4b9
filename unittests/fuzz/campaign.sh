#!/usr/bin/env bash
# A long fuzzing campaign: every fuzz target runs RUNS executions (default
# 10^6) from the committed corpus, then the corpus is minimized (libFuzzer's
# -merge: the smallest set of inputs that keeps all the coverage found) and
# written back to unittests/fuzz/corpus/ beside the hand-written seeds, ready
# to commit. ctest keeps the
# short runs. Crash reproducers are left in the work folder, and the script
# fails.
#
#   bash unittests/fuzz/campaign.sh                 # 10^6 runs per target
#   RUNS=100000 bash unittests/fuzz/campaign.sh npy # one target
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="${KILN_BUILD_DIR:-$root/build}/bin"
runs="${RUNS:-1000000}"
work="${WORK:-$(mktemp -d /tmp/kiln-fuzz-XXXXXX)}"
targets=("$@")
((${#targets[@]})) || targets=(artifact npy graph-input)

for target in "${targets[@]}"; do
  corpus="$root/unittests/fuzz/corpus/${target/graph-input/graph}"
  fuzzer="$bin/kiln-fuzz-$target"
  [ -x "$fuzzer" ] || { echo "$fuzzer is not built" >&2; exit 1; }
  mkdir -p "$work/$target/found" "$work/$target/minimized"
  echo "== $target: $runs executions (work folder $work/$target)"
  start=$(date +%s)
  "$fuzzer" -runs="$runs" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$work/$target/crash-" "$work/$target/found" "$corpus" \
    > "$work/$target/log" 2>&1 || { tail -30 "$work/$target/log"; exit 1; }
  grep -E "^Done [0-9]+ runs|stat::number_of_executed_units" "$work/$target/log" | tail -2
  echo "   $(( $(date +%s) - start )) s"
  "$fuzzer" -merge=1 "$work/$target/minimized" "$corpus" "$work/$target/found" \
    > "$work/$target/merge.log" 2>&1
  before=$(ls "$corpus" | wc -l)
  # Hand-written seeds (named, with an extension) stay; libFuzzer's inputs
  # (named by their hash) are replaced by the minimized set.
  find "$corpus" -type f ! -name '*.*' -delete
  cp "$work/$target/minimized"/* "$corpus"/
  echo "   corpus: $before -> $(ls "$corpus" | wc -l) inputs (minimized)"
done
