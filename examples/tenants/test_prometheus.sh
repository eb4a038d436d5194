#!/usr/bin/env bash
# A real Prometheus against examples/tenants while its tenants churn: a
# throwaway server on loopback (temporary config and storage, 1 s scrape
# interval) scrapes it while workers serve requests and a churner destroys
# and re-creates a tenant every 2 ms. The workers stop (SIGUSR1) only once
# Prometheus holds two rising samples of the root's requests, however slow
# its start; once a later scrape has landed, the HTTP API must hold:
#   - up == 1, and the root's rows (every tenant ever, destroyed ones
#     included) equal to the workers' own counts: requests, bytes and the
#     latency histogram's count, exactly;
#   - the root's request counter never going back (resets() == 0: a
#     destroyed tenant's counts stay in it), while replaced tenants' own
#     rows restart (Prometheus counts those as counter resets);
#   - every in-flight gauge series 0 now, and the root's within
#     [0, workers] at every scrape;
#   - histogram_quantile(0.99) of the root's latency histogram in the
#     exported bucket that holds tally's own p99 of the same requests, and
#     the root's bucket series (one fixed le set) in every scrape;
#   - promtool check metrics clean on a page taken while tenants churn.
# Stops everything it started. About 20 s.
# Usage: test_prometheus.sh TENANTS
. "$(dirname "$0")/../exporter/common.sh"
need prometheus curl jq timeout
bin=$1
workers=2
start_exporter "$bin" --seconds 120 --quiesce-after 60 --workers $workers --tenants 6 \
  --churn-us 2000 --expect-file "$tmp/expected"
tenants_pid=${pids[-1]}

if command -v promtool >/dev/null 2>&1; then
  curl -sf --max-time 2 "http://127.0.0.1:$port/metrics" >"$tmp/page"
  grep -q 'tenants_request_duration_seconds_bucket{group="/tenant-0",le=' "$tmp/page" ||
    fail "no per-tenant latency histogram on the page"
  promtool check metrics <"$tmp/page" >"$tmp/promtool" 2>&1 || {
    cat "$tmp/promtool"; fail "promtool check metrics"; }
  echo "ok: promtool check metrics clean on a page taken while tenants churn"
fi

start_prometheus tenants
echo "prometheus on 127.0.0.1:$pport, tenants on 127.0.0.1:$port"
val() { query "$1" | jq -r '.data.result[0].value[1] // "none"'; }

# Under load until Prometheus has seen the root's requests rise.
deadline=$((SECONDS + 50))
until awk -v r="$(val 'rate(tenants_requests_total{group="/",job="tenants"}[5m])')" \
    'BEGIN { exit !(r + 0 > 0) }'; do
  [ $SECONDS -lt $deadline ] || fail "Prometheus saw no two rising samples in 50 s under load"
  sleep 0.5
done
kill -USR1 "$tenants_pid"
for i in $(seq 200); do
  grep -q quiesced "$exporter_log" && break
  sleep 0.1
done
grep -q 'quiesced.*: exact' "$exporter_log" || { cat "$exporter_log"; fail "not quiesced exact"; }
grep quiesced "$exporter_log"

# Prometheus's latest root samples, once a scrape after the quiesce landed.
deadline=$((SECONDS + 20))
while :; do
  ok=1
  while read -r series want; do
    got=$(val "${series%\}},job=\"tenants\"}")
    [ "$got" = "$want" ] || { ok=0; last="$series: $got, want $want"; }
  done <"$tmp/expected"
  [ $ok = 1 ] && [ "$(val 'up{job="tenants"}')" = 1 ] && break
  [ $SECONDS -lt $deadline ] || fail "Prometheus never saw the exact totals ($last)"
  sleep 1
done
echo "ok: up == 1; the root's requests, bytes and latency count equal the workers' counts:" \
  "$(tr '\n' ' ' <"$tmp/expected")"

t=$(query 'timestamp(tenants_requests_total{group="/",job="tenants"})' | jq -r '.data.result[0].value[1]')
query_at() { curl -sf --max-time 2 --data-urlencode "query=$1" --data-urlencode "time=$t" "$api"; }
valt() { query_at "$1" | jq -r '.data.result[0].value[1] // "none"'; }
r=$(valt 'resets(tenants_requests_total{group="/",job="tenants"}[5m])')
[ "$r" = 0 ] || fail "the root's requests counter went back $r times"
rt=$(valt 'sum(resets(tenants_requests_total{job="tenants",group=~"/tenant-.*"}[5m]))')
rate=$(valt 'rate(tenants_requests_total{group="/",job="tenants"}[5m])')
awk -v r="$rate" 'BEGIN { exit !(r + 0 > 0) }' || fail "rate() of the root's requests: $rate"
echo "ok: the root's requests never went back (resets 0, rate $rate/s); replaced tenants' rows restarted $rt times"
nz=$(valt 'count(tenants_inflight{job="tenants"} != 0) or vector(0)')
[ "$nz" = 0 ] || fail "$nz in-flight series are not 0 after the quiesce"
hi=$(valt 'max_over_time(tenants_inflight{group="/",job="tenants"}[5m])')
lo=$(valt 'min_over_time(tenants_inflight{group="/",job="tenants"}[5m])')
awk -v lo="$lo" -v hi="$hi" -v w=$workers 'BEGIN { exit !(lo >= 0 && hi <= w) }' ||
  fail "the root's in-flight gauge left [0, $workers]: [$lo, $hi]"
ntenants=$(valt 'count(tenants_inflight{job="tenants",group=~"/tenant-.*"})')
echo "ok: every in-flight series 0 now ($ntenants tenants); the root's in [$lo, $hi] over the run"

fam=tenants_request_duration_seconds
want_p99=$(cat "$tmp/expected.p99")
prom_p99=$(valt "histogram_quantile(0.99, ${fam}_bucket{group=\"/\",job=\"tenants\"})")
page=$(curl -sf --max-time 2 "http://127.0.0.1:$port/metrics")
read -r lo hi < <(printf '%s\n' "$page" |
  sed -n "s/^${fam}_bucket{group=\"\/\",le=\"\([0-9.]*\)\"}.*/\1/p" |
  awk -v w="$want_p99" 'BEGIN { lo = 0 } $1 + 0 < w { lo = $1 } $1 + 0 >= w { print lo, $1; exit }')
[ -n "${hi:-}" ] || fail "no exported bucket holds tally's p99 $want_p99"
awk -v a="$prom_p99" -v lo="$lo" -v hi="$hi" 'BEGIN {
  exit !(a != "none" && a + 0 >= lo * (1 - 1e-12) && a + 0 <= hi * (1 + 1e-12)) }' ||
  fail "histogram_quantile(0.99) = $prom_p99, outside ($lo, $hi], which holds tally's $want_p99"
echo "ok: root p99: histogram_quantile $prom_p99 s, tally $want_p99 s, both in ($lo, $hi]"
nscr=$(valt 'count_over_time(up{job="tenants"}[5m])')
nser=$(valt "count(count_over_time(${fam}_bucket{group=\"/\",job=\"tenants\"}[5m]))")
least=$(valt "min(count_over_time(${fam}_bucket{group=\"/\",job=\"tenants\"}[5m]))")
[ "$least" = "$nscr" ] || fail "a root bucket series is missing from scrapes: $least of $nscr"
[ "$nser" -ge 5 ] && [ "$nser" -le 40 ] || fail "$nser root bucket series (want 5..40)"
echo "PASS: $nser root bucket series, each in all $nscr scrapes; tenants churned under load (${SECONDS} s)"
