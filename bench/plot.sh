#!/usr/bin/env bash
# bench/plot.sh [RESULTS_DIR [PLOTS_DIR]] - PNG plots (gnuplot) from the
# benchmark JSON files:
#   counter_threads.png   counter add throughput vs threads, every counter
#   vec_threads.png       tally_vec mod/inc throughput vs threads
#   group_depth.png       group update cost vs tree depth, tally vs legacy
#   scaling.png           counter add and group update at 1..N threads
#                         (from scaling.sh's files, when present)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
results=${1:-bench/results}
plots=${2:-bench/plots}
mkdir -p "$plots"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Write "threads value" series, one file per implementation, for the rows
# whose run_name matches prefix/<impl>/real_time/threads:N.
series() { # files prefix outdir [scale: ips->Mops | ns-per-op]
  local prefix=$2 out=$3 mode=$4
  mkdir -p "$out"
  tally_bench_rows "$1" | awk -F'\t' -v p="$prefix" -v out="$out" -v mode="$mode" '
    index($1, p "/") == 1 {
      rest = substr($1, length(p) + 2)
      n = split(rest, parts, "/")
      impl = parts[1]
      x = $2
      for (i = 2; i <= n; i++)
        if (parts[i] ~ /^depth:/) { x = substr(parts[i], 7); impl = impl "_threads" $2 }
      if (mode == "mops") y = $3 / 1e6
      else y = ($3 > 0 ? 1e9 * $2 / $3 : $4)
      print x, y >> (out "/" impl ".dat")
    }'
  for f in "$out"/*.dat; do [ -f "$f" ] && sort -n -o "$f" "$f"; done
  return 0
}

plot_lines() { # outpng title xlabel ylabel logscale-y datadir [xtics]
  local png=$1 title=$2 xl=$3 yl=$4 logy=$5 dir=$6
  local files=()
  [ -d "$dir" ] && files=("$dir"/*.dat)
  [ ${#files[@]} -gt 0 ] && [ -f "${files[0]}" ] || return 0
  {
    echo "set terminal pngcairo size 900,560 font 'sans,10'"
    echo "set output '$png'"
    echo "set title '$title'"
    echo "set xlabel '$xl'; set ylabel '$yl'"
    echo "set key outside right; set grid"
    # 12 distinct colours, then dashed lines
    local i=1 c
    for c in 1f77b4 ff7f0e 2ca02c d62728 9467bd 8c564b e377c2 7f7f7f bcbd22 17becf 000000 ffbb00; do
      echo "set linetype $i lc rgb '#$c' lw 2 pt $i dt 1"
      echo "set linetype $((i + 12)) lc rgb '#$c' lw 2 pt $i dt 2"
      i=$((i + 1))
    done
    echo "set linetype cycle 24"
    [ "$logy" = 1 ] && echo "set logscale y"
    echo "set xtics 1"
    printf 'plot '
    local first=1
    for f in "${files[@]}"; do
      local name
      name=$(basename "$f" .dat)
      [ $first = 1 ] || printf ', '
      first=0
      printf "'%s' using 1:2 with linespoints title '%s'" "$f" "${name//_/ }"
    done
    echo
  } > "$tmp/p.gp"
  gnuplot "$tmp/p.gp"
  echo "plot.sh: $png"
}

shopt -s nullglob
if [ -s "$results/counter.json" ]; then
  series "$results/counter.json" counter_add "$tmp/counter" mops
  plot_lines "$plots/counter_threads.png" "counter add: throughput vs threads (all threads together)" \
    threads "Mops/s (log)" 1 "$tmp/counter"
fi
if [ -s "$results/vec.json" ]; then
  series "$results/vec.json" vec_mod "$tmp/vec" mops
  for f in "$tmp/vec"/*.dat; do mv "$f" "$tmp/vec/mod_$(basename "$f")"; done
  series "$results/vec.json" vec_inc "$tmp/vecinc" mops
  for f in "$tmp/vecinc"/*.dat; do mv "$f" "$tmp/vec/inc_$(basename "$f")"; done
  plot_lines "$plots/vec_threads.png" "tally_vec: throughput vs threads" threads "Mops/s" 0 "$tmp/vec"
fi
if [ -s "$results/rstat.json" ]; then
  mkdir -p "$tmp/depth"
  for p in group_mod group_mod_flushed; do
    series "$results/rstat.json" "$p" "$tmp/d_$p" ns
    for f in "$tmp/d_$p"/*.dat; do mv "$f" "$tmp/depth/${p}_$(basename "$f")"; done
  done
  plot_lines "$plots/group_depth.png" "group update: ns per update per thread vs depth" \
    "depth (levels below the root)" "ns per update (log)" 1 "$tmp/depth"
fi
if [ -s "$results/scaling_counter.json" ] || [ -s "$results/scaling_rstat.json" ]; then
  mkdir -p "$tmp/scale"
  if [ -s "$results/scaling_counter.json" ]; then
    series "$results/scaling_counter.json" counter_add "$tmp/sc" mops
    for f in "$tmp/sc"/*.dat; do mv "$f" "$tmp/scale/counter_$(basename "$f")"; done
  fi
  if [ -s "$results/scaling_rstat.json" ]; then
    # group_mod at depth 4, as throughput per thread count
    tally_bench_rows "$results/scaling_rstat.json" | awk -F'\t' -v out="$tmp/scale" '
      $1 ~ /\/depth:4\// {
        split($1, parts, "/")
        print $2, $3 / 1e6 >> (out "/" parts[1] "_" parts[2] "_depth4.dat")
      }'
    for f in "$tmp/scale"/*.dat; do sort -n -o "$f" "$f"; done
  fi
  plot_lines "$plots/scaling.png" "scaling: throughput vs threads (all threads together)" \
    threads "Mops/s (log)" 1 "$tmp/scale"
fi
