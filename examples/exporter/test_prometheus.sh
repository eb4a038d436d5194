#!/usr/bin/env bash
# A real Prometheus against the exporter: a throwaway server on loopback
# (temporary config and storage, 1 s scrape interval) scrapes it (it asks
# for OpenMetrics first); once the exporter's writers have stopped and a
# later scrape has landed, the HTTP API must say up == 1 and hold, for
# every counter sample, exactly the value the writers counted themselves
# (the exporter's --expect-file, independent of tally). Stops everything
# it started; and that histogram_quantile(0.99) over the latency histogram
# agrees with tally_hist_quantile within the bucket error. About 15 s.
# Usage: test_prometheus.sh EXPORTER
. "$(dirname "$0")/common.sh"
need prometheus curl jq timeout
bin=$1
quiesce=4
start_exporter "$bin" --seconds 40 --quiesce-after $quiesce --expect-file "$tmp/expected"

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

# Prometheus's latest samples: every series whose name ends in _total,
# as 'name{group="..."} value' lines (job and instance labels dropped).
got() {
  query '{__name__=~".+_total",job="tally"}' | jq -r '.data.result[] |
    (.metric.__name__) + (if .metric.group then "{group=\"" + .metric.group + "\"}" else "" end)
    + " " + .value[1]' | sort
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
echo "ok: up == 1; all $n counter samples in Prometheus equal the exact counts"
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
