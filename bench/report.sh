#!/usr/bin/env bash
# bench/report.sh [RESULTS_DIR] - markdown summary of one run's JSON files:
# the headline table, the targets with met/missed, and the wraparound run.
# Ratios come from figures of the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
results=${1:-bench/results}
files=()
for f in "$results"/{counter,vec,rstat,cost,monotonic_w32,monotonic_w64}.json; do
  [ -s "$f" ] && files+=("$f")
done
[ ${#files[@]} -gt 0 ] || { echo "report.sh: no results in $results" >&2; exit 1; }
rows=$(tally_bench_rows "${files[@]}")

get() { # name field -> value or empty
  awk -F'\t' -v n="$1" -v f="$2" '
    $1 == n {
      if (f == "ips") { print $3; exit }
      if (f == "ns") { print $4; exit }
      for (i = 5; i <= NF; i++) { split($i, kv, "="); if (kv[1] == f) { print kv[2]; exit } }
    }' <<<"$rows"
}
calc() { awk "BEGIN { x = $1; printf \"%.${2:-2}f\", x }"; }
mops() { local v; v=$(get "$1" ips); [ -n "$v" ] && calc "$v / 1e6" 1 || echo "-"; }
# ns per operation per thread, from the aggregate rate
nsop() { local v t; v=$(get "$1" ips); t=$2; [ -n "$v" ] && calc "1e9 * $t / $v" 1 || echo "-"; }
verdict() { awk "BEGIN { exit !($1) }" && echo met || echo "**missed**"; }

add() { echo "counter_add/$1/real_time/threads:$2"; }
gm() { echo "group_mod/$1/depth:$2/real_time/threads:$3"; }

echo "### Counter add: aggregate Mops/s (ns per add per thread)"
echo
echo "| counter | 1 thread | 2 threads | 4 threads |"
echo "|---|---|---|---|"
for impl in tally tally_batch32 tally_nofold tally_pcpu_atomic thread_local shared_atomic urcu_uatomic mutex striped thread_cached thread_cached_exact; do
  [ -n "$(get "$(add $impl 1)" ips)" ] || continue
  printf '| %s |' "$impl"
  for t in 1 2 4; do
    printf ' %s (%s) |' "$(mops "$(add $impl $t)")" "$(nsop "$(add $impl $t)" $t)"
  done
  echo
done
echo

# The spread over the repetitions of this run: a row whose fastest and
# slowest repetition differ by more than 25% is flagged; its median is not
# a figure to quote.
spread=$(tally_bench_spread "${files[@]}")
if [ -n "$spread" ]; then
  nrows=$(wc -l <<<"$spread")
  flagged=$(awk -F'\t' '$4 > 0 && $5 / $4 > 1.25' <<<"$spread")
  nflag=0
  [ -n "$flagged" ] && nflag=$(wc -l <<<"$flagged")
  echo "### Spread over the repetitions"
  echo
  echo "$nflag of $nrows rows with repetitions have runs that disagree (max/min > 1.25):"
  echo
  if [ "$nflag" -gt 0 ]; then
    echo "| benchmark | median Mops/s | min | max | max/min |"
    echo "|---|---|---|---|---|"
    awk -F'\t' '{ printf "| %s | %.1f | %.1f | %.1f | **%.2f** |\n", $1, $3 / 1e6, $4 / 1e6, $5 / 1e6, $5 / $4 }' <<<"$flagged"
    echo
  fi
fi

if [ -n "$(get "pcpu_add/tally/real_time/threads:1" ips)" ]; then
  echo "### The per-CPU add alone (no fold): aggregate Mops/s (ns per add per thread)"
  echo
  echo "| path | 1 thread | 2 threads | 4 threads |"
  echo "|---|---|---|---|"
  for impl in "tally rseq critical section (default)" "tally_pcpu_atomic relaxed atomic RMW (TALLY_PCPU_MODE=1)"; do
    # shellcheck disable=SC2086
    set -- $impl
    printf '| %s |' "${impl#* }"
    for t in 1 2 4; do
      printf ' %s (%s) |' "$(mops "pcpu_add/$1/real_time/threads:$t")" "$(nsop "pcpu_add/$1/real_time/threads:$t" $t)"
    done
    echo
  done
  echo
fi

if [ -n "$(get "$(gm tally 1 1)" ips)" ]; then
  echo "### Group update: ns per update per thread, by depth"
  echo
  echo "| producer | threads | depth 1 | depth 4 | depth 8 |"
  echo "|---|---|---|---|---|"
  for p in "group_mod tally" "group_mod_flushed tally" "group_mod legacy"; do
    # shellcheck disable=SC2086
    set -- $p
    for t in 1 2; do
      [ -n "$(get "$1/$2/depth:1/real_time/threads:$t" ips)" ] || continue
      printf '| %s/%s | %s |' "$1" "$2" "$t"
      for d in 1 4 8; do printf ' %s |' "$(nsop "$1/$2/depth:$d/real_time/threads:$t" $t)"; done
      echo
    done
  done
  echo
fi

# A quiet machine runs thread-local increments at about 2x on 2 threads; far
# less means other work held the CPUs and multi-thread ratios are not valid.
q1=$(get "$(add thread_local 1)" ips) q2=$(get "$(add thread_local 2)" ips)
if [ -n "$q1" ] && [ -n "$q2" ]; then
  q=$(calc "$q2 / $q1")
  if awk "BEGIN { exit !($q < 1.7) }"; then
    echo "**Noisy run:** thread-local increments scaled only ${q}x from 1 to 2 threads"
    echo "(about 2x on a quiet machine): other work held the CPUs, so the 2-thread"
    echo "ratios below do not measure tally. Re-run bench/run.sh on a quiet machine."
  else
    echo "Quiet-machine check: thread-local increments scaled ${q}x from 1 to 2 threads."
  fi
  echo
fi

echo "### Targets"
echo
echo "| target | measured | verdict |"
echo "|---|---|---|"
t1=$(get "$(add tally 1)" ips) tl1=$(get "$(add thread_local 1)" ips)
t2=$(get "$(add tally 2)" ips) a2=$(get "$(add shared_atomic 2)" ips)
if [ -n "$t1" ] && [ -n "$tl1" ]; then
  r=$(calc "$tl1 / $t1")
  echo "| counter add, 1 thread, within 4x of thread-local | ${r}x slower | $(verdict "$r <= 4") |"
fi
if [ -n "$t1" ] && [ -n "$t2" ]; then
  r=$(calc "$t2 / $t1")
  echo "| counter add (default batch), 2 threads >= 1.6x 1 thread | ${r}x | $(verdict "$r >= 1.6") |"
fi
n2=$(get "$(add tally_nofold 2)" ips)
if [ -n "$t2" ] && [ -n "$n2" ]; then
  r=$(calc "$t2 / $n2")
  echo "| counter add (default batch), 2 threads >= 0.9x the bare per-CPU add (tally_nofold) | ${r}x | $(verdict "$r >= 0.9") |"
fi
if [ -n "$t2" ] && [ -n "$a2" ]; then
  r=$(calc "$t2 / $a2")
  echo "| counter add, 2 threads >= 5x shared atomic (2 threads) | ${r}x | $(verdict "$r >= 5") |"
fi
for t in 1 2 4; do
  tt=$(get "$(add tally $t)" ips)
  [ -n "$tt" ] || continue
  worst="" wr=""
  for b in striped shared_atomic mutex urcu_uatomic; do
    v=$(get "$(add $b $t)" ips)
    [ -n "$v" ] || continue
    r=$(calc "$tt / $v")
    if [ -z "$wr" ] || awk "BEGIN { exit !($r < $wr) }"; then wr=$r worst=$b; fi
  done
  [ -n "$wr" ] && echo "| counter add ($t thread(s)) ahead of every exact baseline (striped, shared atomic, mutex, uatomic) | ${wr}x the closest ($worst) | $(verdict "$wr > 1") |"
done
for t in 1 2; do
  d1=$(get "$(gm tally 1 $t)" ips) d8=$(get "$(gm tally 8 $t)" ips)
  if [ -n "$d1" ] && [ -n "$d8" ]; then
    r=$(calc "$d1 / $d8")
    echo "| group update ($t thread(s), no flusher), depth 8 within 1.5x of depth 1 | ${r}x | $(verdict "$r <= 1.5") |"
  fi
  d1=$(get "group_mod_flushed/tally/depth:1/real_time/threads:$t" ips)
  d8=$(get "group_mod_flushed/tally/depth:8/real_time/threads:$t" ips)
  if [ -n "$d1" ] && [ -n "$d8" ]; then
    r=$(calc "$d1 / $d8")
    echo "| group update ($t thread(s), flusher beside), depth 8 within 1.5x of depth 1 | ${r}x | $(verdict "$r <= 1.5") |"
  fi
  d4=$(get "$(gm tally 4 $t)" ips) l4=$(get "$(gm legacy 4 $t)" ips)
  if [ -n "$d4" ] && [ -n "$l4" ]; then
    r=$(calc "$d4 / $l4" 1)
    echo "| group update ($t thread(s)) >= 10x legacy lock-and-walk at depth 4 | ${r}x | $(verdict "$r >= 10") |"
  fi
done
rf() { # name: a row for one read_flush_5000 variant
  local n=$1 p
  p=$(get "$n" "p99.9_us")
  [ -n "$p" ] || return 0
  echo "| $2 | p99.9 $(calc "$p") us (p50 $(calc "$(get "$n" p50_us)"), p99.99 $(calc "$(get "$n" p99.99_us)"), max $(calc "$(get "$n" max_us)" 0) us; the $(calc "$(get "$n" flushes)" 0) reads that flushed: p50 $(calc "$(get "$n" flush_p50_us)"), p99 $(calc "$(get "$n" flush_p99_us)"), max $(calc "$(get "$n" flush_max_us)" 0) us) | $3 |"
}
for gap in 1000 0; do
  n="read_flush_5000/random/writers:1/writer_gap_ns:$gap"
  p=$(get "$n" "p99.9_us")
  [ -n "$p" ] || continue
  what="writer paced to ~1 M updates/s"
  [ "$gap" = 0 ] && what="writer flat out (~10 M updates/s)"
  rf "$n" "flush + read of a random group, 5,000 groups, $what: p99.9 <= 50 us" "$(verdict "$p <= 50")"
done
for gap in 1000 0; do
  rf "read_flush_5000/root/writers:1/writer_gap_ns:$gap" \
    "(worst case, informative) the root read in a tight loop, writer_gap_ns $gap" informative
done
gb=$(get "flush/tally/updated_groups:1/manual_time" group_bytes)
if [ -n "$gb" ]; then
  cpus=$(nproc --all 2>/dev/null || echo 1)
  min=$((2 * 8 * 8 * cpus))
  echo "| memory per group ~ 2 words x items x CPUs + a constant | $gb bytes for 8 items and $cpus CPUs: $(calc "$gb / $min" 1)x the $min-byte minimum (each CPU's chunk and the shared slot's are rounded up to the cache-line unit) | informative |"
fi
echo

for w in 32 64; do
  n="wrap_drive/w$w/iterations:72"
  [ -n "$(get "$n" step)" ] || continue
  if [ "$w" = 32 ]; then
    echo "### Wraparound drive (step 2^26, 72 steps through 2^31 and 2^32)"
    echo
    echo "| word | reader | delta at 2^31 | delta at 2^32 | largest delta | wrong deltas |"
    echo "|---|---|---|---|---|---|"
  fi
  for r in clamped monotonic; do
    printf '| %s bits | %s | %s | %s | %s | %s of 72 |\n' "$w" "$r" \
      "$(calc "$(get "$n" "${r}_delta_at_2^31")" 0)" "$(calc "$(get "$n" "${r}_delta_at_2^32")" 0)" \
      "$(calc "$(get "$n" "${r}_max_delta")" 0)" "$(calc "$(get "$n" "${r}_wrong_deltas")" 0)"
  done
done
echo
echo "(true step: $(calc "$(get "wrap_drive/w32/iterations:72" step)" 0))"
