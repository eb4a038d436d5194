#!/usr/bin/env bash
# bench/scaling.sh - scaling of the per-CPU paths: builds Release and runs
# the counter add cases (tally and every baseline, and the bare rseq add
# they are held to: rseq_add/bare) and the group update
# cases (tally and legacy, every depth) at 1..N threads, N = every CPU this
# process may use, writing bench/results/scaling_{counter,rstat}.json and
# bench/plots/scaling.png. Runs unchanged on a bigger machine.
#   MAX_THREADS=8 bench/scaling.sh     stop at 8 threads
#   BENCH_MIN_TIME=0.2 bench/scaling.sh
set -euo pipefail
cd "$(dirname "$0")/.."
./install-deps
. bench/lib.sh
build=${TALLY_BUILD_ROOT:-build}/bench-release
n=${MAX_THREADS:-$(nproc)}
min_time=${BENCH_MIN_TIME:-0.3}
tally_bench_build "$build"
mkdir -p bench/results bench/plots
export TALLY_BENCH_THREADS="1-$n"
echo "scaling.sh: 1..$n threads on $(nproc) CPUs ($(uname -srm))"
"$build/bench/bench_counter" --benchmark_filter='^(counter_add|rseq_add)/' \
  --benchmark_min_time="$min_time" \
  --benchmark_out=bench/results/scaling_counter.json --benchmark_out_format=json
"$build/bench/bench_rstat" --benchmark_filter='^group_mod(_flushed)?/' \
  --benchmark_min_time="$min_time" \
  --benchmark_out=bench/results/scaling_rstat.json --benchmark_out_format=json
bench/plot.sh bench/results bench/plots
