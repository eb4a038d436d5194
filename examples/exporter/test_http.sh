#!/usr/bin/env bash
# The exporter's HTTP behaviour, and promtool on its output:
#   text 0.0.4 lints clean with promtool; OpenMetrics has its content type,
#   integer values and "# EOF"; JSON parses; unknown paths 404; POST 405;
#   a malformed request, a huge header and a huge URL get an HTTP error or
#   a closed connection, never a crash; slow and idle clients hold
#   connections while other scrapes succeed at once, and the slow one is
#   dropped after the connection timeout; the exporter exits 0 at the end.
# Usage: test_http.sh EXPORTER
. "$(dirname "$0")/common.sh"
need curl promtool jq timeout
bin=$1
start_exporter "$bin" --seconds 8 --quiesce-after 1 --conn-timeout 2
url=http://127.0.0.1:$port/metrics
scrape() { curl -sS --max-time 2 "$@"; }

# text 0.0.4 through promtool
scrape -D "$tmp/h" -o "$tmp/text" "$url" || fail "text scrape"
grep -qi '^content-type: text/plain; version=0.0.4; charset=utf-8' "$tmp/h" ||
  fail "text content type: $(cat "$tmp/h")"
promtool check metrics <"$tmp/text" || fail "promtool check metrics (exit $?)"
grep -q '^demo_requests_total{group="/svc0/job1"} [0-9][0-9]*$' "$tmp/text" || fail "no job sample"
echo "ok: text 0.0.4, $(wc -l <"$tmp/text") lines, promtool clean"

# OpenMetrics
scrape -D "$tmp/h" -o "$tmp/om" -H 'Accept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5' "$url" ||
  fail "OpenMetrics scrape"
grep -qi '^content-type: application/openmetrics-text; version=1.0.0; charset=utf-8' "$tmp/h" ||
  fail "OpenMetrics content type: $(cat "$tmp/h")"
[ "$(tail -n 1 "$tmp/om")" = "# EOF" ] || fail "no # EOF at the end"
# Integers, but a histogram's _sum (a scaled sum: a decimal number).
bad=$(grep -v '^#' "$tmp/om" |
  grep -Ev '^[a-z_][a-z0-9_]*(\{[a-z_]+="[^"]*"\}|_bucket\{([a-z_]+="[^"]*",)?le="([0-9.e+-]+|\+Inf)"\})? -?[0-9]+$' |
  grep -Ev '^[a-z_][a-z0-9_]*_sum(\{[a-z_]+="[^"]*"\})? [0-9]+(\.[0-9]+)?$' || true)
[ -z "$bad" ] || fail "OpenMetrics samples not integers or malformed: $bad"
grep -q '^# TYPE demo_request_latency_seconds histogram$' "$tmp/om" || fail "OpenMetrics histogram"
for r in hit miss; do
  grep -q '^demo_request_latency_seconds_bucket{result="'$r'",le="+Inf"} [0-9]' "$tmp/om" ||
    fail "no +Inf bucket for result=$r"
done
grep -q '^# TYPE demo_requests counter$' "$tmp/om" || fail "OpenMetrics counter family"
grep -q '^demo_requests_total{group="/"} [0-9]' "$tmp/om" || fail "OpenMetrics _total sample"
echo "ok: OpenMetrics"

scrape -o "$tmp/json" "$url?format=json" && jq -e '.families | length > 0' "$tmp/json" >/dev/null ||
  fail "JSON"
scrape -o "$tmp/stat" "$url?format=stat" && grep -q '^demo_requests [0-9]' "$tmp/stat" || fail "stat"
echo "ok: JSON, stat"

code() { curl -s -o /dev/null -w '%{http_code}' --max-time 3 "$@" || true; }
[ "$(code "http://127.0.0.1:$port/nope")" = 404 ] || fail "unknown path is not 404"
[ "$(code -X POST --data x "$url")" = 405 ] || fail "POST is not 405"
echo "ok: 404, 405"

# A malformed request line: an HTTP error or a closed connection.
exec {fd}<>"/dev/tcp/127.0.0.1/$port"
printf 'THIS IS NOT HTTP\r\n\r\n' >&$fd
reply=$(timeout 5 head -c 12 <&$fd || true)
exec {fd}>&-
case $reply in "" | "HTTP/1.1 4"* | "HTTP/1.0 4"*) ;; *) fail "malformed request answered '$reply'" ;; esac
echo "ok: malformed request -> '${reply:-closed}'"

# A 64 KiB header and a 64 KiB URL: errors (4xx) or closed (000).
big=$(head -c 65536 /dev/zero | tr '\0' a)
c=$(code -H "X-Big: $big" "$url")
case $c in 4?? | 000) ;; *) fail "huge header answered $c" ;; esac
c2=$(code "$url?x=$big")
case $c2 in 4?? | 000) ;; *) fail "huge URL answered $c2" ;; esac
echo "ok: huge header -> $c, huge URL -> $c2"

# A slow client (half a request line) and 10 idle connections: another
# scrape still succeeds at once; the slow one is closed by the timeout.
exec {slow}<>"/dev/tcp/127.0.0.1/$port"
printf 'GET /metr' >&$slow
idle=()
for i in $(seq 10); do exec {f}<>"/dev/tcp/127.0.0.1/$port"; idle+=("$f"); done
t0=$(date +%s%N)
scrape -o "$tmp/text2" "$url" || fail "scrape beside slow and idle clients"
t1=$(date +%s%N)
promtool check metrics <"$tmp/text2" || fail "promtool on the scrape beside slow clients"
echo "ok: scrape beside a slow client and 10 idle ones in $(((t1 - t0) / 1000000)) ms"
timeout 6 cat <&$slow >/dev/null && rc=0 || rc=$?
[ "$rc" -ne 124 ] || fail "the slow client was not dropped within 6 s (timeout 2 s)"
exec {slow}>&-
for f in "${idle[@]}"; do exec {f}>&-; done
echo "ok: slow client dropped by the connection timeout"

kill -0 "${pids[0]}" || fail "exporter died"
scrape -o /dev/null "$url" || fail "final scrape"
wait "${pids[0]}" && rc=0 || rc=$?
pids=()
[ "$rc" -eq 0 ] || { cat "$exporter_log"; fail "exporter exited $rc"; }
grep -q 'exporter: done' "$exporter_log" || fail "no clean exit"
echo "PASS: exporter HTTP behaviour and promtool"
