#!/usr/bin/env bash
# bench/run.sh - the whole benchmark suite in one command: install what is
# missing, build Release, run every benchmark into bench/results/*.json,
# describe the machine (bench/results/machine.txt), plot (bench/plots/*.png)
# and summarise the targets (bench/results/summary.md).
#
#   bench/run.sh                       the full run (a few minutes)
#   BENCH_MIN_TIME=0.05 bench/run.sh   shorter (noisier) runs
#   BENCH_REPETITIONS=9 bench/run.sh   repetitions (default 5; interleaved
#                                      at random, medians are reported)
#   BENCH_FILTER='counter_add' bench/run.sh    only matching benchmarks; the
#                                      other results in bench/results stay
#   BENCH_ONLY='bench_counter' bench/run.sh   only these binaries (their
#                                      result files are rewritten, the
#                                      others stay)
#   TALLY_BENCH_THREADS=1,2,4,8 bench/run.sh   thread counts (harness.h)
#   TALLY_BENCH_PIN=0 bench/run.sh             no CPU pinning
# Figures are ratios measured side by side in one run: run it on a quiet
# machine (nothing else busy on its CPUs).
set -euo pipefail
cd "$(dirname "$0")/.."
./install-deps
. bench/lib.sh
build=${TALLY_BUILD_ROOT:-build}/bench-release
min_time=${BENCH_MIN_TIME:-0.2}
reps=${BENCH_REPETITIONS:-5}
filter=${BENCH_FILTER:-.}
tally_bench_build "$build"
mkdir -p bench/results bench/plots

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "kernel: $(uname -srm)"
  echo "compiler: $(c++ --version | head -1)"
  echo "glibc: $(ldd --version 2>&1 | head -1)"
  echo "benchmark: libbenchmark $(dpkg-query -W -f='${Version}' libbenchmark-dev 2>/dev/null || echo '?')"
  echo "settings: min_time=$min_time repetitions=$reps threads=${TALLY_BENCH_THREADS:-1,2,4} pin=${TALLY_BENCH_PIN:-1} filter=$filter only=${BENCH_ONLY:-all}"
  echo "load before the run: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
  lscpu 2>/dev/null | grep -E '^(Architecture|Model name|Model|CPU\(s\)|On-line CPU\(s\) list|Thread\(s\) per core|Core\(s\) per socket|Socket\(s\)|NUMA node\(s\)|Hypervisor vendor|L1d cache|L2 cache|L3 cache|CPU max MHz|BogoMIPS):' || true
} > bench/results/machine.txt

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
only=" ${BENCH_ONLY:-${TALLY_BENCHES[*]}} "
for b in "${TALLY_BENCHES[@]}"; do
  [ -x "$build/bench/$b" ] || continue
  [[ $only == *" $b "* ]] || continue
  out=bench/results/${b#bench_}.json
  echo "==== $b -> $out"
  rm -f "$tmp/new.json"
  "$build/bench/$b" --benchmark_filter="$filter" --benchmark_min_time="$min_time" \
    --benchmark_repetitions="$reps" --benchmark_enable_random_interleaving=true \
    --benchmark_display_aggregates_only=true \
    --benchmark_out="$tmp/new.json" --benchmark_out_format=json
  # A filtered run replaces only the benchmarks it ran: the others keep
  # their results (an unfiltered run rewrites the file).
  tally_bench_merge "$tmp/new.json" "$out" "$filter"
done
echo "load after the run: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')" \
  >> bench/results/machine.txt

bench/plot.sh bench/results bench/plots
bench/report.sh bench/results | tee bench/results/summary.md
