#!/usr/bin/env bash
# Slow and idle clients cannot lock a scraper out of the exporter
# (tally/serve.h), and bad --listen values are refused:
#   - "--listen 127.0.0.1:abc" exits 2 with a message naming the port;
#   - 64 connections from 127.0.0.1 that trickle one header byte every 3 s
#     (never idle long enough for the idle timeout) and 64 more that sit
#     idle: a scrape from 127.0.0.1 is answered within 2 s, twice, 4 s
#     apart, and 8 concurrent scrapes beside them all succeed;
#   - a connection that trickles one byte a second is closed by the
#     request deadline (--request-timeout 2), not kept for ever.
# Usage: test_slow.sh EXPORTER
. "$(dirname "$0")/common.sh"
need curl promtool timeout
bin=$1

out=$("$bin" --listen 127.0.0.1:abc --seconds 2 --quiesce-after 1 2>&1) && rc=0 || rc=$?
[ "$rc" -eq 2 ] || fail "--listen 127.0.0.1:abc: exit $rc, want 2 ($out)"
grep -q "the port is not a number" <<<"$out" || fail "--listen 127.0.0.1:abc said: $out"
echo "ok: --listen 127.0.0.1:abc refused: $out"

start_exporter "$bin" --seconds 30 --quiesce-after 1
url=http://127.0.0.1:$port/metrics

# ms since t0 of a scrape that must succeed within 2 s, promtool-clean.
scrape_ms() {
  local t0 t1
  t0=$(date +%s%N)
  curl -sS --max-time 2 -o "$tmp/$1" "$url" || fail "scrape $1 failed beside slow clients"
  t1=$(date +%s%N)
  promtool check metrics <"$tmp/$1" || fail "promtool on scrape $1"
  echo $(((t1 - t0) / 1000000))
}

# 64 tricklers: a request line, then one header byte every 3 s; each exits
# when the server closes it.
tricklers=()
for i in $(seq 64); do
  (
    exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 0
    printf 'GET /metrics HTTP/1.1\r\nX-Slow: ' >&3 || exit 0
    while printf 'x' >&3 2>/dev/null; do sleep 3; done
  ) 2>/dev/null &
  tricklers+=($!)
done
sleep 1
# 64 idle connections, opened after the tricklers.
idle=()
for i in $(seq 64); do
  exec {f}<>"/dev/tcp/127.0.0.1/$port" || fail "idle connection $i"
  idle+=("$f")
done
sleep 3 # every trickler has sent a byte since
ms=$(scrape_ms a)
echo "ok: scrape beside 64 trickling and 64 idle connections in $ms ms"
pids_conc=()
for i in $(seq 8); do
  curl -sS --max-time 2 -o "$tmp/c$i" "$url" & pids_conc+=($!)
done
for p in "${pids_conc[@]}"; do wait "$p" || fail "a concurrent scrape failed"; done
for i in $(seq 8); do
  grep -q '^demo_requests_total{group="/"} [0-9]' "$tmp/c$i" || fail "concurrent scrape $i"
done
echo "ok: 8 concurrent scrapes"
sleep 4
ms=$(scrape_ms b)
echo "ok: again 4 s later in $ms ms"
for f in "${idle[@]}"; do exec {f}>&-; done
for p in "${tricklers[@]}"; do kill "$p" 2>/dev/null || true; done
for p in "${tricklers[@]}"; do wait "$p" 2>/dev/null || true; done
kill "${pids[0]}"
wait "${pids[0]}" 2>/dev/null || true
pids=()

# The request deadline: a byte a second keeps the idle timeout (5 s) away,
# the deadline (2 s) closes it.
start_exporter "$bin" --seconds 15 --quiesce-after 1 --request-timeout 2
exec {slow}<>"/dev/tcp/127.0.0.1/$port"
printf 'GET /metrics HTTP/1.1\r\nX-Slow: ' >&$slow
(while printf 'x' >&$slow 2>/dev/null; do sleep 1; done) 2>/dev/null &
feeder=$!
t0=$(date +%s%N)
timeout 8 cat <&$slow >/dev/null && rc=0 || rc=$?
t1=$(date +%s%N)
kill "$feeder" 2>/dev/null || true
wait "$feeder" 2>/dev/null || true
exec {slow}>&-
ms=$(((t1 - t0) / 1000000))
[ "$rc" -ne 124 ] || fail "a trickling connection was not closed within 8 s (deadline 2 s)"
[ "$ms" -ge 1500 ] && [ "$ms" -le 4500 ] || fail "the trickler was closed after $ms ms, want 2-4 s"
echo "ok: a trickling connection closed by the 2 s request deadline after $ms ms"
curl -sS --max-time 2 -o /dev/null "http://127.0.0.1:$port/metrics" || fail "final scrape"
kill "${pids[0]}"
wait "${pids[0]}" 2>/dev/null || true
pids=()
echo "PASS: slow and idle clients lock no scraper out"
