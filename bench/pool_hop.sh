#!/usr/bin/env bash
# The cost of the worker-pool hop: requests/s and p99 for the hello and SSR examples through the
# subprocess pool versus the in-process backend, same executor count, measured side by side
# (A B A B ...) with wrk on loopback. Prints medians of REPS runs and the ratio pool/inprocess.
#   bench/pool_hop.sh [DURATION_S=5] [REPS=3] [CONNECTIONS=64]
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-5}
REPS=${2:-3}
CONNS=${3:-64}
BIN=build/isolane
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
[ -x "$BIN" ] || make build >/dev/null

PORT=18431
ADMIN=18432
pids=()
cleanup() { for p in "${pids[@]:-}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

start() {  # backend
  ISOLANE_BACKEND=$1 ISOLANE_POOL_SIZE=2 ISOLANE_EXECUTOR_THREADS=2 ISOLANE_LOG_LEVEL=warn \
    ISOLANE_ADMIN_LISTEN=127.0.0.1:$ADMIN "$BIN" serve --listen 127.0.0.1:$PORT 2>/dev/null &
  pids+=($!)
  for _ in $(seq 200); do curl -sf "http://127.0.0.1:$PORT/hello" >/dev/null && return; sleep 0.05; done
  echo "server did not start" >&2; exit 1
}
stop() { kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true; unset 'pids[-1]'; }

# wrk's latency line: "99%   1.23ms" -> milliseconds
measure() {  # path -> "rps p99ms"
  local out rps p99
  out=$(wrk -t2 -c"$CONNS" -d"${DURATION}s" --latency "http://127.0.0.1:$PORT$1")
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v*=1000}; print v}' <<<"$out")
  echo "$rps $p99"
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -A RPS P99
for path in ${PATHS:-/hello /ssr?n=300}; do
  for backend in subprocess inprocess; do RPS[$backend$path]=""; P99[$backend$path]=""; done
done
for rep in $(seq "$REPS"); do
  for backend in subprocess inprocess; do
    start "$backend"
    for path in /hello /ssr?n=300; do
      wrk -t1 -c8 -d1s "http://127.0.0.1:$PORT$path" >/dev/null  # warm-up
      read -r rps p99 < <(measure "$path")
      RPS[$backend$path]+="$rps "
      P99[$backend$path]+="$p99 "
    done
    stop
  done
done
printf "%-12s %-11s %12s %10s\n" scenario backend "req/s" "p99 ms"
for path in ${PATHS:-/hello /ssr?n=300}; do
  for backend in subprocess inprocess; do
    r=$(tr ' ' '\n' <<<"${RPS[$backend$path]}" | grep . | median)
    p=$(tr ' ' '\n' <<<"${P99[$backend$path]}" | grep . | median)
    printf "%-12s %-11s %12.0f %10.2f\n" "$path" "$backend" "$r" "$p"
    eval "m_${backend}=$r"
  done
  awk -v a="$m_subprocess" -v b="$m_inprocess" -v p="$path" 'BEGIN {printf "%-12s pool/inprocess req/s ratio: %.2f\n", p, a/b}'
done
