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

# start_prometheus JOB: a throwaway Prometheus on a free loopback port
# (temporary config and storage, 1 s scrape interval) scraping
# 127.0.0.1:$port as job JOB; sets pport, api and query().
start_prometheus() {
  local job=$1 try i ppid ok=0
  mkdir -p "$tmp/data"
  cat >"$tmp/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: $job
    static_configs:
      - targets: ['127.0.0.1:$port']
YML
  for try in 1 2 3 4 5; do
    pport=$((20000 + RANDOM % 20000))
    prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
      --web.listen-address="127.0.0.1:$pport" --log.level=warn >"$tmp/prometheus.log" 2>&1 &
    ppid=$!
    pids+=($ppid)
    for i in $(seq 100); do
      if curl -sf --max-time 1 "http://127.0.0.1:$pport/-/ready" >/dev/null 2>&1; then ok=1; break; fi
      kill -0 $ppid 2>/dev/null || break
      sleep 0.1
    done
    [ $ok = 1 ] && break
    kill $ppid 2>/dev/null || true
  done
  [ $ok = 1 ] || { cat "$tmp/prometheus.log"; fail "prometheus did not start"; }
  api=http://127.0.0.1:$pport/api/v1/query
}
query() { curl -sf --max-time 2 --data-urlencode "query=$1" "$api"; }
