#!/usr/bin/env bash
# bench/memory.sh - what a counter, a vector item, a group and a histogram cost per CPU
# slot, measured at 2 (or this machine's), 64 and 256 slots: builds
# tests/plain/memory.c in Release (no sanitizer) with TALLY_CPU_SLOTS=N,
# once as this machine runs it (every CPU here adds to each object) and
# once with TALLY_PCPU_MODE 3 (a thread per slot: every slot adds), and
# writes bench/results/memory.tsv and bench/plots/memory.png (bytes per
# counter and the counter's error bound against slots).
#   bench/memory.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=${TALLY_BUILD_ROOT:-build}/memory
mkdir -p "$out" bench/results bench/plots
urcu=$(pkg-config --cflags --libs liburcu-memb)
tsv=bench/results/memory.tsv
echo -e "slots\tmode\tkind\ttouched\tarena_per\tstruct_per\theap_per\trss_per\tvmdata_per\tbound" >"$tsv"
for n in 2 64 256; do
  for mode in 0 3; do
    bin=$out/memory_${n}_$mode
    # shellcheck disable=SC2086
    gcc -std=gnu11 -O2 -DTALLY_CPU_SLOTS=$n -DTALLY_PCPU_MODE=$mode -Iinclude -Itests \
      tests/plain/memory.c -o "$bin" $urcu -pthread -lm
    "$bin" | awk -v mode=$mode '/^memory: slots=/ {
        for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v["slots"], mode, v["kind"], v["touched"],
          v["arena_per"], v["struct_per"], v["heap_per"], v["rss_per"], v["vmdata_per"], v["bound"] }' >>"$tsv"
  done
done
column -t "$tsv"
awk -F'\t' '$3 == "counter" && $2 == 0 { print $1, $5 + $6 + $7, 16 * ($1 + 1) + $6 + 16, 128 * ($1 + 1) + 48, $10 }' \
  "$tsv" >"$out/here.dat"
awk -F'\t' '$3 == "counter" && $2 == 3 { print $1, $5 + $6 + $7 }' "$tsv" >"$out/all.dat"
gnuplot <<GP
set terminal png size 900,560 noenhanced
set output "bench/plots/memory.png"
set title "tally_counter (a tree from 64 slots): bytes per counter (arena + struct + heap), and read()'s error bound"
set xlabel "CPU slots (TALLY_CPU_SLOTS)"
set ylabel "bytes per counter"
set y2label "error bound (tally_counter_error_bound)"
set logscale xy
set logscale y2
set y2tics
set xtics (2, 64, 256)
set key bottom right
plot "$out/here.dat" using 1:2 with linespoints title "resident: every CPU here added", \
     "$out/all.dat" using 1:2 with linespoints title "resident: every slot added (a thread each)", \
     "$out/here.dat" using 1:3 with lines dashtype 2 title "promise: 16 B per slot + struct + 16", \
     "$out/here.dat" using 1:4 with lines dashtype 3 title "before: 128 B chunk per slot + struct", \
     "$out/here.dat" using 1:5 axes x1y2 with linespoints title "error bound (right axis)"
GP
echo "memory.sh: $tsv, bench/plots/memory.png"
