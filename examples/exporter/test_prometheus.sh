#!/usr/bin/env bash
# A real Prometheus against the exporter: a throwaway server on loopback
# (temporary config and storage, 1 s scrape interval) scrapes it (it asks
# for OpenMetrics first); once the exporter's writers have stopped and a
# later scrape has landed, the HTTP API must say up == 1 and hold, for
# every counter sample, exactly the value the writers counted themselves
# (the exporter's --expect-file, independent of tally), although the
# exporter reset the tree's since-reset values while the writers ran
# (--reset-every 1: a service's subtree, then the whole tree, in turn, so
# at least one reset lies between two scrapes); that Prometheus saw no
# counter reset in any counter series (resets() == 0: the exported values
# are raw and never go back, so rate() and increase() never count a
# reset's drop) and that increase() over the whole run is exact, equal to
# the writers' counts (the writers start after the first scrape,
# --wait-first-scrape, so every series starts at 0, and increase() is
# evaluated at the last scrape's timestamp: no extrapolation); that the
# tree's gauge (inflight, TALLY_GROUP_ITEM_GAUGE in the tree, exported with
# no kinds given) is a gauge family, within [0, writers] throughout and 0
# once quiesced; and that, per label value of the latency family,
# histogram_quantile(0.99) agrees with tally_hist_quantile within the
# exported bucket, and the bucket series stay the same over 20 scrapes.
# Stops everything it started. About 25 s.
# Usage: test_prometheus.sh EXPORTER
. "$(dirname "$0")/common.sh"
need prometheus curl jq timeout
bin=$1
quiesce=4
writers=2
start_exporter "$bin" --seconds 40 --quiesce-after $quiesce --expect-file "$tmp/expected" \
  --writers $writers --reset-every 1 --wait-first-scrape

start_prometheus tally
echo "prometheus on 127.0.0.1:$pport, exporter on 127.0.0.1:$port"

# Wait for the writers to stop and the expected values to be written (the
# writers start at Prometheus' first scrape, however late).
for i in $(seq 600); do
  grep -q quiesced "$exporter_log" && break
  sleep 0.1
done
grep -q quiesced "$exporter_log" || fail "exporter did not quiesce"
sort "$tmp/expected" >"$tmp/want"
n=$(wc -l <"$tmp/want")
[ "$n" -gt 50 ] || fail "only $n expected samples"

# A result's labels as the exporter writes them, {k="v",...} sorted (job
# and instance dropped), for jq.
labels='def labels: [.metric | to_entries[] |
    select(.key != "__name__" and .key != "job" and .key != "instance") |
    "\(.key)=\"\(.value)\""] | sort | if length > 0 then "{" + join(",") + "}" else "" end;'
# Prometheus's latest samples: every series whose name ends in _total,
# as 'name{labels} value' lines.
got() {
  query '{__name__=~".+_total",job="tally"}' | jq -r "$labels"' .data.result[] |
    (.metric.__name__) + labels + " " + .value[1]' | sort
}
deadline=$((SECONDS + 20))
while :; do
  up=$(query 'up{job="tally"}' | jq -r '.data.result[0].value[1] // "none"' || echo none)
  got >"$tmp/got" || true
  if [ "$up" = 1 ] && cmp -s "$tmp/want" "$tmp/got"; then break; fi
  if [ $SECONDS -ge $deadline ]; then
    echo "up = $up"
    diff "$tmp/want" "$tmp/got" | head -20 || true
    tail -5 "$tmp/prometheus.log"
    fail "Prometheus's counter samples never matched the writers' counts"
  fi
  sleep 1
done
nres=$(grep -o 'quiesced, [0-9]* resets' "$exporter_log" | grep -o '[0-9][0-9]*' || echo 0)
[ "$nres" -ge 2 ] || fail "the exporter made $nres resets, want >= 2"
echo "ok: up == 1; all $n counter samples in Prometheus equal the exact counts, across $nres resets"

# The window: from the first scrape (before the writers started: every
# series 0) to the last one, at whose timestamp the queries are evaluated.
# Everything below looks 5 minutes back, past the series' start.
query_at() { curl -sf --max-time 2 --data-urlencode "query=$1" --data-urlencode "time=$2" "$api"; }
t_last=$(query 'timestamp(writer_batches_total{job="tally"})' | jq -r '.data.result[0].value[1]')
[ -n "$t_last" ] && [ "$t_last" != null ] || fail "no last scrape time"
first=$(query_at 'writer_batches_total{job="tally"}[5m]' "$t_last" | jq -r '.data.result[0].values[0][1]')
[ "$first" = 0 ] || fail "the first scrape saw writer_batches_total = $first, not 0 (--wait-first-scrape)"
# A reset lies between two scrapes: Prometheus scraped at least twice while
# the writers ran (samples above the first, 0, and below the final value),
# and the resets came every second of that time.
svc0='demo_requests_total{group="/svc0",job="tally"}'
mid=$(query_at "$svc0[5m]" "$t_last" | jq -r '.data.result[0].values | (.[-1][1]) as $last |
  [.[] | select(.[1] != "0" and .[1] != $last)] | length')
[ "${mid:-0}" -ge 2 ] || fail "only ${mid:-0} scrapes while the writers ran and reset"
# Per counter family (increase() and resets() drop the name, so one query
# per family): resets() == 0 everywhere, and increase() as the writers
# counted, line for line as in $tmp/want.
families=$(sed 's/[{ ].*//' "$tmp/want" | sort -u)
: >"$tmp/increase"
for f in $families; do
  r=$(query_at "max(resets($f{job=\"tally\"}[5m]))" "$t_last" | jq -r '.data.result[0].value[1]')
  [ "$r" = 0 ] || fail "Prometheus saw $r counter resets in $f (an exported counter went back)"
  query_at "increase($f{job=\"tally\"}[5m])" "$t_last" | jq -r --arg f "$f" "$labels"' .data.result[] |
    $f + labels + " " + .value[1]' >>"$tmp/increase"
done
sort -o "$tmp/increase" "$tmp/increase"
if ! cmp -s "$tmp/want" "$tmp/increase"; then
  diff "$tmp/want" "$tmp/increase" | head -20 || true
  fail "increase() over the run differs from the writers' counts"
fi
echo "ok: no counter resets in $(echo "$families" | wc -w) families; increase() over the run exact in all $n series"

# The tree's gauge: a gauge family (no _total), every group's level within
# [0, writers] at every scrape (a reset leaves gauges alone) and 0 now.
meta=$(curl -sf --max-time 2 "http://127.0.0.1:$pport/api/v1/metadata?metric=demo_inflight" |
  jq -r '.data.demo_inflight[0].type // "none"')
[ "$meta" = gauge ] || fail "demo_inflight is not a gauge family ($meta)"
g=$(query_at 'count(demo_inflight{job="tally"}) + count(demo_inflight_local{job="tally"})' "$t_last" |
  jq -r '.data.result[0].value[1]')
[ "$g" = 26 ] || fail "$g gauge series of demo_inflight and demo_inflight_local, want 2 x 13"
lohi=
for f in demo_inflight demo_inflight_local; do
  lo=$(query_at "min(min_over_time($f{job=\"tally\"}[5m]))" "$t_last" | jq -r '.data.result[0].value[1]')
  hi=$(query_at "max(max_over_time($f{job=\"tally\"}[5m]))" "$t_last" | jq -r '.data.result[0].value[1]')
  awk -v lo="$lo" -v hi="$hi" -v w=$writers 'BEGIN { exit !(lo != "" && lo >= 0 && hi <= w) }' ||
    fail "$f went outside [0, $writers] during the run: min $lo, max $hi"
  lohi="${lohi:+$lohi, }$f in [$lo, $hi]"
  now=$(query_at "count($f{job=\"tally\"} != 0) or vector(0)" "$t_last" | jq -r '.data.result[0].value[1]')
  [ "$now" = 0 ] || fail "$now series of $f are not 0 after quiescing"
done
[ "$(query 'count({__name__=~"demo_inflight.*_total"})' | jq -r '.data.result | length')" = 0 ] ||
  fail "the gauge was exported as a counter (demo_inflight*_total)"
echo "ok: demo_inflight is a gauge (26 series): $lohi over the run, all 0 once quiesced"
# Prometheus asked for OpenMetrics and parsed it: its metadata names the
# counter family without _total (text 0.0.4 would name demo_requests_total).
meta=$(curl -sf --max-time 2 "http://127.0.0.1:$pport/api/v1/metadata?metric=demo_requests" |
  jq -r '.data.demo_requests[0].type // "none"')
[ "$meta" = counter ] || fail "Prometheus has no OpenMetrics counter family demo_requests ($meta)"
# The latency family, a histogram per result, and the tree's per-group
# latency family (a row per group, its subtree): per result and per
# service group, Prometheus' histogram_quantile(0.99) over the scraped
# buckets lies in the exported
# bucket that holds tally_hist_quantile(0.99) (tally answers a point of its
# fine bucket, which the exported bucket contains; Prometheus interpolates
# inside the exported one), and every bucket series is in every scrape:
# after 20 scrapes, 40 series per result, each with a sample from every
# scrape (a bound that came and went would have fewer), and rate() summed
# by le across the results (which needs one le set) gives a quantile.
fam=demo_request_latency_seconds
for i in $(seq 300); do
  nscr=$(query 'count_over_time(up{job="tally"}[10m])' | jq -r '.data.result[0].value[1] // 0')
  [ "$nscr" -ge 21 ] && break
  sleep 0.1
done
[ "$nscr" -ge 21 ] || fail "only $nscr scrapes"
page=$(curl -sf --max-time 2 "http://127.0.0.1:$port/metrics")
while read -r result want_p99 n_lat; do
  # a result of the flat family, or (group=PATH) a row of the tree's
  # per-group family
  case $result in
  group=*) f=demo_group_latency_seconds sel="group=\"${result#group=}\"" ;;
  *) f=$fam sel="result=\"$result\"" ;;
  esac
  [ "${n_lat:-0}" -gt 100 ] || fail "only ${n_lat:-0} latencies recorded for $result"
  prom_p99=$(query "histogram_quantile(0.99, ${f}_bucket{job=\"tally\",$sel})" |
    jq -r '.data.result[0].value[1] // "none"')
  # the exported bucket (lo, hi] that holds tally's p99
  read -r lo hi < <(printf '%s\n' "$page" | grep -F "${f}_bucket{$sel,le=" |
    sed -n 's/.*,le="\([0-9.]*\)"}.*/\1/p' |
    awk -v w="$want_p99" 'BEGIN { lo = 0 } $1 + 0 < w { lo = $1 } $1 + 0 >= w { print lo, $1; exit }')
  [ -n "${hi:-}" ] || fail "no exported bucket holds p99 $want_p99 ($result)"
  awk -v a="$prom_p99" -v lo="$lo" -v hi="$hi" 'BEGIN {
    exit !(a != "none" && a + 0 >= lo * (1 - 1e-12) && a + 0 <= hi * (1 + 1e-12)) }' ||
    fail "histogram_quantile(0.99) = $prom_p99 ($result), outside ($lo, $hi], which holds tally's quantile $want_p99"
  echo "ok: $result: histogram_quantile(0.99) = $prom_p99 s, tally's = $want_p99 s, both in ($lo, $hi] ($n_lat latencies)"
done <"$tmp/expected.p99"
nser=$(query "count(count_over_time(${fam}_bucket{job=\"tally\"}[10m]))" | jq -r '.data.result[0].value[1] // 0')
[ "$nser" = 80 ] || fail "$nser bucket series over the run, want 80 (2 results x 40)"
# one evaluation time for both: every scrape that has writer_batches_total
# (every successful one) has every bucket series
t=$(date +%s)
queryt() { curl -sf --max-time 2 --data-urlencode "query=$1" --data-urlencode "time=$t" "$api"; }
nscr=$(queryt 'count_over_time(writer_batches_total{job="tally"}[10m])' |
  jq -r '.data.result[0].value[1] // 0')
least=$(queryt "min(count_over_time(${fam}_bucket{job=\"tally\"}[10m]))" |
  jq -r '.data.result[0].value[1] // 0')
[ "$least" = "$nscr" ] || fail "a bucket series is missing from scrapes: $least samples of $nscr scrapes"
agg=$(query "histogram_quantile(0.99, sum by (le) (rate(${fam}_bucket{job=\"tally\"}[10m])))" |
  jq -r '.data.result[0].value[1] // "none"')
awk -v a="$agg" 'BEGIN { exit !(a != "none" && a != "NaN" && a + 0 > 0) }' ||
  fail "histogram_quantile over rate() summed by le: $agg"
echo "ok: $nser bucket series, each in every one of $nscr scrapes; over rate() summed by le, p99 = $agg s"
gfam=demo_group_latency_seconds
gser=$(queryt "count(count_over_time(${gfam}_bucket{job=\"tally\"}[10m]))" | jq -r '.data.result[0].value[1] // 0')
[ "$gser" = 520 ] || fail "$gser per-group bucket series over the run, want 520 (13 groups x 40)"
gleast=$(queryt "min(count_over_time(${gfam}_bucket{job=\"tally\"}[10m]))" | jq -r '.data.result[0].value[1] // 0')
[ "$gleast" = "$nscr" ] || fail "a per-group bucket series is missing from scrapes: $gleast of $nscr"
echo "ok: $gser per-group bucket series (13 groups x 40), each in every one of $nscr scrapes"
samples=$(query 'scrape_samples_scraped{job="tally"}' | jq -r '.data.result[0].value[1]')
[ "${samples:-0}" -gt 0 ] || fail "no samples scraped"
echo "PASS: Prometheus scraped $samples OpenMetrics samples per scrape; counters exact after quiescing (${SECONDS} s)"
