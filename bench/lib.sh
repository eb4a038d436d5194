# shellcheck shell=bash disable=SC2034
# bench/lib.sh - shared by run.sh, scaling.sh, plot.sh and report.sh.
# Sourced, not run. Needs jq.

# The binaries of the suite, in run order.
TALLY_BENCHES=(bench_counter bench_vec bench_rstat bench_cost bench_monotonic_w32
               bench_monotonic_w64)

# Configure and build the benchmarks in Release into $1.
tally_bench_build() {
  local build=$1
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTALLY_BUILD_BENCH=ON \
    -DTALLY_BUILD_TESTS=OFF -DTALLY_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build "$build" -j "${JOBS:-2}"
}

# One row per benchmark of the JSON files given: run_name, threads,
# items_per_second, real_time (ns), plus the user counters as k=v. With
# repetitions the median aggregate is used, else the single run.
tally_bench_rows() {
  jq -r '
    ( [.benchmarks[] | select(.run_type == "aggregate" and .aggregate_name == "median")] ) as $med
    | (if ($med | length) > 0 then $med else [.benchmarks[] | select(.run_type != "aggregate")] end)
    | .[]
    | [ .run_name, (.threads // 1), (.items_per_second // 0),
        (if .time_unit == "us" then .real_time * 1e3
         elif .time_unit == "ms" then .real_time * 1e6
         elif .time_unit == "s" then .real_time * 1e9 else .real_time end) ]
      + [ to_entries[] | select(.key | test("^(name|run_name|run_type|family_index|per_family_instance_index|repetitions|repetition_index|threads|iterations|real_time|cpu_time|time_unit|items_per_second|aggregate_name|aggregate_unit|label|error_occurred|error_message)$") | not)
          | "\(.key)=\(.value)" ]
    | @tsv' "$@"
}

# tally_bench_get FILE... -- NAME FIELD: one field of one benchmark (run_name
# NAME): ips (items/s), ns (real time per iteration), or a counter's name.
tally_bench_get() {
  local files=() name field
  while [ "$1" != "--" ]; do files+=("$1"); shift; done
  shift
  name=$1 field=$2
  tally_bench_rows "${files[@]}" | awk -F'\t' -v n="$name" -v f="$field" '
    $1 == n {
      if (f == "ips") { print $3; exit }
      if (f == "ns") { print $4; exit }
      for (i = 5; i <= NF; i++) { split($i, kv, "="); if (kv[1] == f) { print kv[2]; exit } }
    }'
}

# tally_bench_merge NEW OUT FILTER: put the results of NEW into OUT. With
# FILTER "." (every benchmark) OUT becomes NEW; otherwise OUT keeps its
# benchmarks whose run_name NEW does not have, NEW's are added, and OUT's
# context is NEW's. A NEW without benchmarks leaves OUT alone.
tally_bench_merge() {
  local new=$1 out=$2 filter=$3
  if [ ! -s "$new" ] || [ "$(jq '.benchmarks | length' "$new" 2>/dev/null || echo 0)" = 0 ]; then
    echo "bench: no benchmark matched '$filter' here; $out left as it was"
    return 0
  fi
  if [ "$filter" = . ] || [ ! -s "$out" ]; then
    cp "$new" "$out"
    return 0
  fi
  jq -s '
    (.[0].benchmarks | map(.run_name) | unique) as $names
    | .[0] + { benchmarks: ([.[1].benchmarks[] | select(.run_name as $n | $names | index($n) | not)]
                            + .[0].benchmarks) }' "$new" "$out" > "$new.merged" &&
    mv "$new.merged" "$out"
}

# tally_bench_spread FILE...: per run_name with repetitions, the median,
# min and max of items_per_second over the repetitions: run_name, threads,
# median, min, max (TSV).
tally_bench_spread() {
  jq -r '
    [.benchmarks[] | select(.run_type == "iteration" and (.items_per_second // 0) > 0)]
    | group_by(.run_name)[]
    | (map(.items_per_second) | sort) as $v
    | select(($v | length) > 1)
    | [ .[0].run_name, (.[0].threads // 1),
        (if ($v | length) % 2 == 1 then $v[($v | length - 1) / 2]
         else ($v[($v | length) / 2 - 1] + $v[($v | length) / 2]) / 2 end),
        $v[0], $v[-1] ]
    | @tsv' "$@"
}
