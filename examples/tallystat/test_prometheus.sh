#!/usr/bin/env bash
# A real Prometheus scraping `tallystat --serve` while prefork's workers are
# killed (SIGKILL) and restarted: a throwaway server on loopback (temporary
# config and storage, 1 s scrape interval) scrapes the reader, which runs
# outside the workers and attaches the region read-only. prefork (4
# workers, started once Prometheus has scraped the empty region, stopped
# once 6 s have passed and Prometheus saw the counts move 4 times) kills a
# worker every 0.1 to 0.3 s, usually in a request (holding the per-process
# gauge inflight_requests +1), and starts another; it never kills one
# between an add and its acknowledgement (see
# prefork.c), so what the workers acknowledged is exact. Once the workers
# have stopped and a later scrape has landed, Prometheus must hold, for
# every series, exactly what the workers acknowledged (the labelled family
# requests_total, response_bytes_total, the latency histogram's
# request_latency_seconds_count and _sum, and inflight_requests 0);
# histogram_quantile() over the served buckets within the bucket that holds
# the exact quantile of every latency acknowledged (the bucket's error: its
# le set is fixed, the 1-2-5 grid); no counter reset in any counter series
# over the run (resets() == 0: restarts never move a shared count back); the
# per-process gauge within [0, workers] at every scrape (a dead worker's +1
# left the sum with it: a shared gauge would have climbed by one per kill
# in a request); and promtool finds the page clean. Stops everything it
# started. About 15 s.
# Usage: test_prometheus.sh TALLYSTAT PREFORK
. "$(dirname "$0")/../exporter/common.sh"
need prometheus promtool curl jq
tallystat=$1 prefork=$2
workers=4
region=$tmp/region

"$prefork" -k 200 -s 300 -e "$tmp/want" -q "$tmp/quantiles" -w "$tmp/go" -x "$tmp/stop" \
  "$region" $workers 6 \
  >"$tmp/prefork.out" 2>"$tmp/prefork.log" &
fpid=$!
pids+=($fpid)
# Initialised, not only there: a reader refuses a region still being made.
for i in $(seq 200); do grep -q "region ready" "$tmp/prefork.log" && break; sleep 0.05; done
grep -q "region ready" "$tmp/prefork.log" || { cat "$tmp/prefork.log"; fail "prefork made no region"; }

: >"$tmp/serve.log"
"$tallystat" --serve 127.0.0.1:0 "$region" 2>>"$tmp/serve.log" &
pids+=($!)
port=
for i in $(seq 100); do
  port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/serve.log")
  [ -n "$port" ] && break
  kill -0 "${pids[-1]}" 2>/dev/null || { cat "$tmp/serve.log"; fail "tallystat --serve exited"; }
  sleep 0.1
done
[ -n "$port" ] || fail "tallystat printed no 'listening on' line"

start_prometheus tally
echo "prometheus on 127.0.0.1:$pport, tallystat on 127.0.0.1:$port"

# The workers start once Prometheus has scraped the empty region.
for i in $(seq 200); do
  [ "$(query 'up{job="tally"}' | jq -r '.data.result[0].value[1] // "none"' || echo none)" = 1 ] && break
  sleep 0.1
done
touch "$tmp/go"
deadline=$((SECONDS + 60))
until [ "$(query 'changes(response_bytes_total{job="tally"}[5m])' |
  jq -r '.data.result[0].value[1] // 0' || echo 0)" -ge 4 ]; do
  [ $SECONDS -lt $deadline ] || { touch "$tmp/stop"; fail "Prometheus saw the counts move fewer than 4 times in 60 s"; }
  sleep 0.5
done
touch "$tmp/stop"
wait $fpid || { cat "$tmp/prefork.log"; fail "prefork failed"; }
cat "$tmp/prefork.log"
kills=$(sed -n 's/.*quiesced: \([0-9]*\) kills.*/\1/p' "$tmp/prefork.log")
[ "${kills:-0}" -ge 10 ] || fail "only ${kills:-0} workers killed"
n=$(wc -l <"$tmp/want")

labels='def labels: [.metric | to_entries[] |
    select(.key != "__name__" and .key != "job" and .key != "instance") |
    "\(.key)=\"\(.value)\""] | sort | if length > 0 then "{" + join(",") + "}" else "" end;'
got() {
  query '{__name__=~"requests_total|response_bytes_total|request_latency_seconds_count|request_latency_seconds_sum|inflight_requests",job="tally"}' |
    jq -r "$labels"' .data.result[] | (.metric.__name__) + labels + " " + .value[1]' | sort
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
    fail "Prometheus's samples never matched what the workers acknowledged"
  fi
  sleep 1
done
echo "ok: up == 1; all $n series in Prometheus equal what the workers acknowledged, across $kills kills and restarts"

t_last=$(query 'timestamp(response_bytes_total{job="tally"})' | jq -r '.data.result[0].value[1]')
query_at() { curl -sf --max-time 2 --data-urlencode "query=$1" --data-urlencode "time=$t_last" "$api"; }
nscr=$(query_at 'count_over_time(response_bytes_total{job="tally"}[5m])' | jq -r '.data.result[0].value[1] // 0')
[ "$nscr" -ge 6 ] || fail "only $nscr scrapes"
moving=$(query_at 'changes(response_bytes_total{job="tally"}[5m])' | jq -r '.data.result[0].value[1] // 0')
[ "$moving" -ge 4 ] || fail "only $moving scrapes saw the workers' counts move"
for f in requests_total response_bytes_total request_latency_seconds_count; do
  r=$(query_at "max(resets($f{job=\"tally\"}[5m]))" "$t_last" | jq -r '.data.result[0].value[1]')
  [ "$r" = 0 ] || fail "Prometheus saw $r counter resets in $f"
done
echo "ok: no counter resets in 3 families over $nscr scrapes ($moving while the workers ran)"

lo=$(query_at 'min_over_time(inflight_requests{job="tally"}[5m])' | jq -r '.data.result[0].value[1]')
hi=$(query_at 'max_over_time(inflight_requests{job="tally"}[5m])' | jq -r '.data.result[0].value[1]')
awk -v lo="$lo" -v hi="$hi" -v w=$workers 'BEGIN { exit !(lo != "" && lo >= 0 && hi <= w && hi > 0) }' ||
  fail "inflight_requests went outside [0, $workers] (or stayed 0): min $lo, max $hi"
meta=$(curl -sf --max-time 2 "http://127.0.0.1:$pport/api/v1/metadata?metric=inflight_requests" |
  jq -r '.data.inflight_requests[0].type // "none"')
[ "$meta" = gauge ] || fail "inflight_requests is not a gauge ($meta)"
echo "ok: inflight_requests (per-process) in [$lo, $hi] over the run, $kills workers killed, 0 now"

curl -sf --max-time 2 "http://127.0.0.1:$port/metrics" >"$tmp/page"
promtool check metrics <"$tmp/page" || fail "promtool check metrics"

# histogram_quantile() over the buckets Prometheus scraped: in the bucket
# (lo, hi] of the served le set that holds the exact quantile.
sed -n 's/^request_latency_seconds_bucket{le="\([0-9.]*\)"}.*/\1/p' "$tmp/page" >"$tmp/les"
[ "$(wc -l <"$tmp/les")" = 39 ] || fail "the histogram serves $(wc -l <"$tmp/les") finite le bounds, not 39"
[ "$(wc -l <"$tmp/quantiles")" = 3 ] || fail "prefork gave no exact quantiles"
while read -r q exact; do
  est=$(query_at "histogram_quantile($q, request_latency_seconds_bucket{job=\"tally\"})" |
    jq -r '.data.result[0].value[1] // "none"')
  awk -v e="$est" -v x="$exact" 'NR == 1 { lo = 0 } { if (!hi && $1 + 0 >= x + 0) hi = $1; else if (!hi) lo = $1 }
    END { if (e == "none" || !hi) exit 1; exit !(lo + 0 < x + 0 && e + 0 >= lo + 0 && e + 0 <= hi + 0) }' "$tmp/les" ||
    fail "histogram_quantile($q) = $est: not in the bucket of the exact $exact"
  echo "ok: histogram_quantile($q) = $est, exact $exact, one bucket"
done <"$tmp/quantiles"
echo "PASS: Prometheus scraping tallystat --serve, workers killed and restarted"
