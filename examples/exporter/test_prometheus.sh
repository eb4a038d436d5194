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
# once quiesced; and that histogram_quantile(0.99) over the latency
# histogram agrees with tally_hist_quantile within the bucket error. Stops
# everything it started. About 15 s.
# Usage: test_prometheus.sh EXPORTER
. "$(dirname "$0")/common.sh"
need prometheus curl jq timeout
bin=$1
quiesce=4
writers=2
start_exporter "$bin" --seconds 40 --quiesce-after $quiesce --expect-file "$tmp/expected" \
  --writers $writers --reset-every 1 --wait-first-scrape

# A free port for Prometheus: try a few in the ephemeral range.
mkdir -p "$tmp/data"
cat >"$tmp/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: tally
    static_configs:
      - targets: ['127.0.0.1:$port']
YML
for try in 1 2 3 4 5; do
  pport=$((20000 + RANDOM % 20000))
  prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
    --web.listen-address="127.0.0.1:$pport" --log.level=warn >"$tmp/prometheus.log" 2>&1 &
  ppid=$!
  pids+=($ppid)
  ok=0
  for i in $(seq 100); do
    if curl -sf --max-time 1 "http://127.0.0.1:$pport/-/ready" >/dev/null 2>&1; then ok=1; break; fi
    kill -0 $ppid 2>/dev/null || break
    sleep 0.1
  done
  [ $ok = 1 ] && break
  kill $ppid 2>/dev/null || true
done
[ $ok = 1 ] || { cat "$tmp/prometheus.log"; fail "prometheus did not start"; }
echo "prometheus on 127.0.0.1:$pport, exporter on 127.0.0.1:$port"

api=http://127.0.0.1:$pport/api/v1/query
query() { curl -sf --max-time 2 --data-urlencode "query=$1" "$api"; }

# Wait for the writers to stop and the expected values to be written.
for i in $(seq 200); do
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
# The latency histogram: Prometheus' histogram_quantile(0.99) over the
# scraped buckets agrees with tally_hist_quantile(0.99) within the bucket
# error (both answer a point of the bucket that holds the rank, whose width
# is at most 2 x the stated error of its value).
read -r want_p99 err n_lat <"$tmp/expected.p99"
[ "${n_lat:-0}" -gt 1000 ] || fail "only ${n_lat:-0} latencies recorded"
prom_p99=$(query 'histogram_quantile(0.99, demo_request_latency_seconds_bucket{job="tally"})' |
  jq -r '.data.result[0].value[1] // "none"')
awk -v a="$prom_p99" -v b="$want_p99" -v e="$err" 'BEGIN {
  d = a - b; if (d < 0) d = -d; exit !(a != "none" && d <= 2 * e * b) }' ||
  fail "histogram_quantile(0.99) = $prom_p99, tally_hist_quantile = $want_p99 (bound 2 x $err)"
echo "ok: histogram_quantile(0.99) = $prom_p99 s, tally_hist_quantile(0.99) = $want_p99 s ($n_lat latencies)"
samples=$(query 'scrape_samples_scraped{job="tally"}' | jq -r '.data.result[0].value[1]')
[ "${samples:-0}" -gt 0 ] || fail "no samples scraped"
echo "PASS: Prometheus scraped $samples OpenMetrics samples per scrape; counters exact after quiescing (${SECONDS} s)"
