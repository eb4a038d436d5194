#!/usr/bin/env bash
# Run fuzz_export, keep its first renders, and lint the text 0.0.4 ones
# with promtool (exit 0: no problem) and parse the JSON ones with jq.
# promtool takes one stream: the first 10 renders are linted one by one,
# as rendered; all of them also go through together, each family renamed
# fN<name> (a prefix that adds no word, so it changes no lint rule) so that
# names stay unique.
# Usage: fuzz.sh FUZZ_EXPORT [ITERATIONS [FILES]]
set -euo pipefail
export LC_ALL=C
for t in promtool jq; do
  command -v $t >/dev/null || { echo "SKIPPED: $t is not installed"; exit 77; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tally-fuzz.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$1" "${2:-3000}" 7 "$tmp" "${3:-1000}"
lint() { # file [label]
  local out
  if ! out=$(promtool check metrics <"$1" 2>&1); then
    echo "FAIL: promtool check metrics on ${2:-$1}: $out"
    head -60 "$1" | cat -A
    exit 1
  fi
}
n=0
: >"$tmp/all.txt"
for f in "$tmp"/*.prom; do
  n=$((n + 1))
  [ $n -le 10 ] && lint "$f"
  sed -e "s/^# \(HELP\|TYPE\) /&f${n}/" -e "/^#/!s/^/f${n}/" "$f" >>"$tmp/all.txt"
done
lint "$tmp/all.txt" "$n renders together"
m=0
for f in "$tmp"/*.json; do
  [ -e "$f" ] || continue
  m=$((m + 1))
done
jq -e -s "length == $m and all(.[]; .families | type == \"array\")" "$tmp"/*.json >/dev/null ||
  { echo "FAIL: jq on the JSON renders"; exit 1; }
[ "$n" -ge 20 ] || { echo "FAIL: only $n renders to lint"; exit 1; }
echo "PASS: promtool clean on $n fuzzed renders ($(wc -l <"$tmp/all.txt") lines), jq on $m"
