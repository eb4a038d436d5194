#!/usr/bin/env bash
# bench/arena_reads.sh - sums, destroys and an exporter's render of
# counters, and a tree's flush and group destroys (bench/group_reads.c),
# at 256 CPU slots against 2, in one run (bench/arena_reads.c):
# builds the program with TALLY_CPU_SLOTS=2 and 256 (gcc -O2), runs the two
# one after the other, ROUNDS rounds each (best of), and prints each
# figure with its 256-slot / 2-slot ratio (issue 30's targets: each within
# 10x, the render of 8,000 counters under 100 ms).
#   bench/arena_reads.sh [ROUNDS]             (default 3)
#   INCLUDE=/path/to/other/include bench/arena_reads.sh   (other headers,
#                                             e.g. a checkout of the parent)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${TALLY_BUILD_ROOT:-build}/arena_reads
inc=${INCLUDE:-include}
mkdir -p "$out"
urcu=$(pkg-config --cflags --libs liburcu-memb)
for n in 2 256; do
  gcc -std=gnu11 -O2 -DTALLY_CPU_SLOTS=$n -I"$inc" bench/arena_reads.c -o "$out/ar_$n" -pthread
  gcc -std=gnu11 -O2 -DTALLY_CPU_SLOTS=$n -I"$inc" bench/group_reads.c -o "$out/gr_$n" -pthread $urcu
done
"$out/ar_2" "${1:-3}" >"$out/2.txt"
"$out/gr_2" "${1:-3}" >>"$out/2.txt"
"$out/ar_256" "${1:-3}" >"$out/256.txt"
"$out/gr_256" "${1:-3}" >>"$out/256.txt"
cat "$out/2.txt" "$out/256.txt"
awk '
  { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
  $1 == "group_reads:" { k = v["n"]; gf[v["slots"], k] = v["flush_s"]; gd[v["slots"], k] = v["destroy_s"]; gn[k] = 1; delete v; next }
  v["n"] != "" && v["render_n"] == "" { k = v["n"]; s[v["slots"], k] = v["sum_s"];
    d[v["slots"], k] = v["destroy_s"]; m[v["slots"], k] = v["rss_per"]; ns[k] = 1 }
  v["render_n"] != "" { r[v["slots"]] = v["render_s"] }
  { delete v }
  function ratio(a, b) { return b > 0 ? sprintf("%.1fx", a / b) : "-" }
  END {
    printf "| work | 2 slots | 256 slots | 256 / 2 |\n|---|---|---|---|\n"
    for (k in ns) {
      printf "| sum of %d counters | %.3f ms | %.3f ms | %s |\n", k, s[2, k] * 1e3, s[256, k] * 1e3, ratio(s[256, k], s[2, k])
      printf "| destroy of %d counters | %.3f ms | %.3f ms | %s |\n", k, d[2, k] * 1e3, d[256, k] * 1e3, ratio(d[256, k], d[2, k])
      printf "| resident bytes per counter (%d, struct included) | %.0f | %.0f | |\n", k, m[2, k], m[256, k]
    }
    printf "| render of 8000 counters (a scrape'"'"'s body) | %.2f ms | %.2f ms | %s |\n", r[2] * 1e3, r[256] * 1e3, ratio(r[256], r[2])
    for (k in gn) {
      printf "| root flush, %d dirty groups | %.3f ms | %.3f ms | %s |\n", k, gf[2, k] * 1e3, gf[256, k] * 1e3, ratio(gf[256, k], gf[2, k])
      printf "| destroy of %d groups, frees included | %.3f ms | %.3f ms | %s |\n", k, gd[2, k] * 1e3, gd[256, k] * 1e3, ratio(gd[256, k], gd[2, k])
    }
  }' "$out/2.txt" "$out/256.txt"
