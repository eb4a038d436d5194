#!/usr/bin/env bash
# tallystat against a region written by prefork's workers: the values once
# they stop (exact; labelled counters as one family each; the per-process
# gauge 0 and no live process; the latency histogram's count and sum equal
# to the workers' own, its quantiles within tally_hist_error() (2^-8) of
# the exact ones), every format (promtool on the text 0.0.4, the histogram
# as 40 le series; jq on the JSON), rates with -i, --serve (curl: both
# formats, promtool, objects created after it started, SIGTERM), a POSIX
# shared-memory name, and refusals (missing, corrupted, truncated regions:
# exit 1 with the reason).
# Usage: test_tallystat.sh TALLYSTAT PREFORK
set -euo pipefail
export LC_ALL=C
tallystat=$1 prefork=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tallystat.XXXXXX")
spid=
trap '[ -z "$spid" ] || kill "$spid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
region=$tmp/region

expect=$("$prefork" -k 50 -s 100 -e "$tmp/expect.prom" -q "$tmp/quantiles" "$region" 4 0.6)
echo "$expect"
out=$("$tallystat" "$region")
echo "$out"
for kv in ${expect#expect }; do
	k=${kv%=*} v=${kv##*=}
	grep -Fqx "$k $v" <<<"$out" || fail "text: $k is not $v"
done
# The histogram's quantiles at its full precision: within 2^-8 (relative)
# of the exact quantiles of every latency the workers acknowledged.
[ "$(wc -l <"$tmp/quantiles")" = 3 ] || fail "no exact quantiles ($(cat "$tmp/quantiles"))"
while read -r q exact; do
	got=$(sed -n "s/^request_latency_seconds{quantile=\"$q\"} //p" <<<"$out")
	awk -v g="$got" -v x="$exact" 'BEGIN { d = g - x; if (d < 0) d = -d; exit !(g != "" && d <= x / 256) }' ||
		fail "text: quantile $q is $got, exact $exact (more than 2^-8 apart)"
done <"$tmp/quantiles"
# The region's mode (0600) and read-only use: tallystat changed nothing.
[ "$(stat -c %a "$region")" = 600 ] || fail "mode $(stat -c %a "$region")"
sum1=$(md5sum <"$region")
"$tallystat" -f json "$region" >"$tmp/out.json"
"$tallystat" -f prometheus "$region" >"$tmp/out.prom"
"$tallystat" -f openmetrics "$region" >"$tmp/out.om"
[ "$(md5sum <"$region")" = "$sum1" ] || fail "the reader changed the region"
while read -r line; do
	grep -Fqx "$line" "$tmp/out.prom" || fail "prometheus: no line '$line'"
done <"$tmp/expect.prom"
grep -q '^# TYPE inflight_requests gauge$' "$tmp/out.prom" || fail "prometheus: gauge type"
# Labelled objects are one family each.
[ "$(grep -c '^# TYPE requests_total counter$' "$tmp/out.prom")" = 1 ] || fail "requests: one family"
[ "$(grep -c '^requests_total{' "$tmp/out.prom")" = 3 ] || fail "requests: three series"
# The histogram: its fixed le set (the 1-2-5 grid of 1 ns .. 1 h: 39 and +Inf).
grep -q '^# TYPE request_latency_seconds histogram$' "$tmp/out.prom" || fail "histogram type"
[ "$(grep -c '^request_latency_seconds_bucket{' "$tmp/out.prom")" = 40 ] || fail "histogram: 40 le series"
n=$(sed -n 's/^request_latency_seconds_count //p' "$tmp/out.prom")
grep -Fqx "request_latency_seconds_bucket{le=\"+Inf\"} $n" "$tmp/out.prom" || fail "histogram: +Inf != count"
tail -1 "$tmp/out.om" | grep -qx '# EOF' || fail "openmetrics: no # EOF"
# Rates: three prints 0.2 s apart (5 counters and gauges, and a
# histogram's count and sum: 2 x 7 rates).
"$tallystat" -i 0.2 -n 3 "$region" >"$tmp/rates.txt"
[ "$(grep -c '/s$' "$tmp/rates.txt")" = 14 ] || { cat "$tmp/rates.txt"; fail "rates"; }
# Refusals.
if "$tallystat" "$tmp/none" 2>"$tmp/err"; then fail "a missing region was read"; fi
grep -q "No such file" "$tmp/err" || fail "missing: $(cat "$tmp/err")"
head -c 300 /dev/urandom >"$tmp/garbage"
if "$tallystat" "$tmp/garbage" 2>"$tmp/err"; then fail "garbage was read"; fi
grep -q "not a tally region" "$tmp/err" || fail "garbage: $(cat "$tmp/err")"
cp "$region" "$tmp/short" && truncate -s 5000 "$tmp/short"
if "$tallystat" "$tmp/short" 2>"$tmp/err"; then fail "a truncated region was read"; fi
grep -q "truncated" "$tmp/err" || fail "truncated: $(cat "$tmp/err")"
if "$tallystat" -f yaml "$region" 2>/dev/null; then fail "a bad format was taken"; fi
# A POSIX shared-memory name, where /dev/shm is there.
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
	name=tallystat-test-$$
	cp "$region" "/dev/shm/$name"
	"$tallystat" "shm:/$name" | grep -q '^response_bytes ' || { rm -f "/dev/shm/$name"; fail "shm:"; }
	rm -f "/dev/shm/$name"
fi
missing=""
# --serve: /metrics on a free loopback port, from outside the writers
# (TALLYSTAT_SERVE=0: built without libmicrohttpd, as in -m32 builds).
if [ "${TALLYSTAT_SERVE:-1}" = 0 ]; then
	echo "note: tallystat built without libmicrohttpd: --serve not checked"
elif command -v curl >/dev/null; then
	: >"$tmp/serve.log"
	"$tallystat" --serve 127.0.0.1:0 "$region" 2>>"$tmp/serve.log" &
	spid=$!
	port=
	for i in $(seq 100); do
		port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/serve.log")
		[ -n "$port" ] && break
		kill -0 "$spid" 2>/dev/null || { cat "$tmp/serve.log"; fail "--serve exited"; }
		sleep 0.1
	done
	[ -n "$port" ] || fail "--serve: no 'listening on' line"
	curl -sf --max-time 5 "http://127.0.0.1:$port/metrics" >"$tmp/serve.prom" || fail "--serve: curl"
	while read -r line; do
		grep -Fqx "$line" "$tmp/serve.prom" || fail "--serve: no line '$line'"
	done <"$tmp/expect.prom"
	curl -sf --max-time 5 -H 'Accept: application/openmetrics-text; version=1.0.0' \
		"http://127.0.0.1:$port/metrics" >"$tmp/serve.om" || fail "--serve: curl openmetrics"
	tail -1 "$tmp/serve.om" | grep -qx '# EOF' || fail "--serve: openmetrics: no # EOF"
	if command -v promtool >/dev/null; then
		promtool check metrics <"$tmp/serve.prom" || fail "--serve: promtool check metrics"
	fi
	# Objects made after the server started, in a family it renders
	# already: served within a few seconds (the region's source redone),
	# the old series' values kept.
	"$prefork" -m delete "$region" 1 0.1 >/dev/null
	for i in $(seq 50); do
		curl -sf --max-time 5 "http://127.0.0.1:$port/metrics" >"$tmp/serve2.prom" || true
		"$tallystat" -f prometheus "$region" >"$tmp/direct2.prom"
		grep -q '^requests_total{method="delete"} [1-9]' "$tmp/serve2.prom" &&
			cmp -s "$tmp/serve2.prom" "$tmp/direct2.prom" && break
		sleep 0.1
	done
	cmp -s "$tmp/serve2.prom" "$tmp/direct2.prom" || {
		diff "$tmp/serve2.prom" "$tmp/direct2.prom" | head; fail "--serve: not the region's values"; }
	kill -TERM "$spid"
	wait "$spid" || fail "--serve: exit status $? after SIGTERM"
	spid=
else
	missing+=" curl"
fi
# promtool and jq, where installed (else the rest passed: say so).
if command -v promtool >/dev/null; then
	promtool check metrics <"$tmp/out.prom" || fail "promtool check metrics"
else
	missing+=" promtool"
fi
if command -v jq >/dev/null; then
	jq -e '.objects | map(select(.name == "requests{method=\"get\"}")) | length == 1' \
		"$tmp/out.json" >/dev/null || fail "jq: labelled name"
	jq -e '.processes_live == 0 and .processes >= 4 and
		(.objects | map(select(.type == "process_gauge")) | .[0].value == 0)' \
		"$tmp/out.json" >/dev/null || fail "jq: per-process gauge, live processes"
	n=$(sed -n 's/^request_latency_seconds_count //p' "$tmp/out.prom")
	jq -e --argjson n "$n" '.objects | map(select(.type == "histogram")) | .[0] |
		.count == $n and (.buckets | length) == 40 and .buckets[39].count == $n and
		(.quantiles | has("0.99"))' "$tmp/out.json" >/dev/null || fail "jq: histogram"
else
	missing+=" jq"
fi
if [ -n "$missing" ]; then
	echo "SKIPPED:$missing not installed (the other checks passed)"
	exit 77
fi
echo "PASS: tallystat"
