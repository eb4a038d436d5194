# Shared by the exporter's test scripts: start the exporter on a free
# loopback port, wait for its "listening" line, stop everything on exit.
# Usage: . common.sh; need TOOL...; start_exporter EXPORTER ARGS...
set -euo pipefail
export LC_ALL=C
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tally-exporter.XXXXXX")
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

need() { # skip (exit 77, ctest SKIP_RETURN_CODE) when a tool is missing
  local t
  for t in "$@"; do
    if ! command -v "$t" >/dev/null 2>&1; then
      echo "SKIPPED: $t is not installed (Debian: ${pkg_of[$t]:-$t})"
      exit 77
    fi
  done
}
declare -A pkg_of=([promtool]=prometheus [prometheus]=prometheus [curl]=curl [jq]=jq)

fail() { echo "FAIL: $*" >&2; exit 1; }

# start_exporter BIN ARGS...: sets port and exporter_log.
start_exporter() {
  local bin=$1; shift
  exporter_log=$tmp/exporter.log
  "$bin" --listen 127.0.0.1:0 "$@" >"$exporter_log" 2>&1 &
  pids+=($!)
  local i
  for i in $(seq 100); do
    if grep -q listening "$exporter_log" 2>/dev/null; then
      port=$(grep -o '127\.0\.0\.1:[0-9]*' "$exporter_log" | head -1 | cut -d: -f2)
      return 0
    fi
    kill -0 "${pids[-1]}" 2>/dev/null || { cat "$exporter_log"; fail "exporter exited"; }
    sleep 0.1
  done
  cat "$exporter_log"
  fail "exporter did not print 'listening' within 10 s"
}
