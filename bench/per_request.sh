#!/usr/bin/env bash
# What one request costs, by thread: CPU time, system calls, context switches and heap
# allocations (malloc calls) per request, for isolane builds (default configuration) and for the
# Node baseline (bench/baselines/node_server.mjs under the `node` on PATH: Node 20 on the
# reference machine), on loopback.
#   bench/per_request.sh [SECONDS=4] [DIR...]     (DIR: a build directory, or a copy of `isolane`
#                                                 and `libisolane_engine.so`; default: build)
# PER_REQUEST_WORKLOAD: hello (default: the embedded hello, 64 connections), stream (bench/apps/
# stream.js, a 1 MiB streamed answer, 64 connections) or upload (bench/apps/upload.js, 10 MiB
# POSTs, 8 connections) or async (bench/apps/async.js, a 20 ms timer, 1000 connections): the same
# apps and loads as bench/run's scenarios of those names.
# Counts come from `perf stat --per-thread` over one wrk run per server (software events and
# tracepoints: these VMs expose no hardware counters, so instructions cannot be read here; CPU time
# stands in for them); mallocs from a uprobe on glibc's malloc, in a second run of their own (the
# probe slows every call, so it would inflate the CPU figures). Rows are per thread name: the
# master's reactor (isolane-io), the workers' executor threads (isolane-exec) and frame flushers (isolane-out), V8's platform
# threads (V8Worker), Node's main thread (node), and the rest. Per request = the count over the requests wrk completed.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-4}
shift || true
DIRS=("$@")
((${#DIRS[@]})) || DIRS=(build)
WORKLOAD=${PER_REQUEST_WORKLOAD:-hello}
APP=() CONNS=64 WRK_SCRIPT=() SERVE_ENV=()
case "$WORKLOAD" in
  hello) ;;
  stream) APP=("$PWD/bench/apps/stream.js") ;;
  async) APP=("$PWD/bench/apps/async.js") CONNS=1000 ;;
  upload)
    APP=("$PWD/bench/apps/upload.js") CONNS=8 WRK_SCRIPT=(-s "$PWD/bench/wrk/upload.lua")
    SERVE_ENV=(ISOLANE_MAX_BODY_BYTES=$((16 << 20))) ;;
  *) echo "unknown PER_REQUEST_WORKLOAD $WORKLOAD (hello, stream, upload, async)" >&2; exit 2 ;;
esac
for tool in wrk perf; do
  command -v "$tool" >/dev/null || { echo "$tool is missing (apt-get install $tool / linux-perf)" >&2; exit 1; }
done
LIBC=$(ldd "$(command -v wrk)" | awk '$1 ~ /^libc\.so/ {print $3}')
MALLOC_EVENT=probe_libc:malloc
ADDED_PROBE=0  # a probe this script added is removed when it exits
if ! perf probe -l 2>/dev/null | grep -q "$MALLOC_EVENT"; then
  if perf probe -q -x "$LIBC" --add malloc >/dev/null 2>&1; then ADDED_PROBE=1; else MALLOC_EVENT=""; fi
fi
[ -n "$MALLOC_EVENT" ] || echo "-- no uprobe on malloc (perf probe failed; root?): mallocs are not counted" >&2

TMP=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]:-}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$TMP"
  if ((ADDED_PROBE)); then perf probe -q -d "$MALLOC_EVENT" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
PORT=18551

start() {  # NAME DIR -> SERVER_PID, URL
  local admin=$((PORT + 1))
  if [ "$1" = node ]; then
    node bench/baselines/node_server.mjs "$PORT" >"$TMP/server.log" 2>&1 &
  else
    env "${SERVE_ENV[@]}" ISOLANE_ENGINE="$2/libisolane_engine.so" ISOLANE_LOG_LEVEL=warn \
      ISOLANE_ADMIN_LISTEN="127.0.0.1:$admin" \
      "$2/isolane" serve --listen "127.0.0.1:$PORT" "${APP[@]}" >"$TMP/server.log" 2>&1 &
  fi
  SERVER_PID=$!
  pids+=("$SERVER_PID")
  URL=http://127.0.0.1:$PORT/$WORKLOAD  # (an app given on the command line answers at /)
  for _ in $(seq 200); do curl -sf -o /dev/null "$URL" && return; sleep 0.05; done
  echo "$1 did not answer $URL" >&2; cat "$TMP/server.log" >&2; exit 1
}

# count EVENTS -> $TMP/stat.csv, REQUESTS: one wrk run counted per thread of the server's tree.
count() {
  local tree
  tree=$( (echo "$SERVER_PID"; pgrep -P "$SERVER_PID" || true) | paste -sd,)
  wrk -t2 -c"$CONNS" -d2s "${WRK_SCRIPT[@]}" "$URL" >/dev/null  # warm-up, not counted
  REQUESTS=$(perf stat -x, --per-thread -e "$1" -p "$tree" -o "$TMP/stat.csv" -- \
    wrk -t2 -c"$CONNS" -d"${SECS}s" "${WRK_SCRIPT[@]}" "$URL" | awk '/requests in/ {print $1}')
}

# per_role EVENT: "role value-per-request" lines (task-clock in microseconds), roles by thread name.
per_role() {
  awk -F, -v ev="$1" -v n="$REQUESTS" '
    $4 == ev && $2 ~ /^[0-9.]+$/ {
      name = $1; sub(/-[0-9]+$/, "", name)
      role = (name == "isolane-io" || name == "isolane-exec" || name == "isolane-out" || name == "V8Worker" || name == "node") ? name : "other"
      v = (ev == "task-clock") ? $2 * 1000 : $2   # msec -> us
      s[role] += v; total += v
    }
    END {
      for (r in s) printf "%s %.2f\n", r, s[r] / n
      printf "total %.2f\n", total / n
    }' "$TMP/stat.csv"
}

echo "$WORKLOAD, $CONNS connections"
echo "| server | req/s | figure per request | isolane-io | isolane-exec | isolane-out | node (main thread) | V8Worker | other | total |"
echo "|---|---|---|---|---|---|---|---|---|---|"
row() {  # server rps label role-lines
  local -A v=()
  while read -r role value; do v[$role]=$value; done <<<"$4"
  echo "| $1 | $2 | $3 | ${v[isolane-io]:--} | ${v[isolane-exec]:--} | ${v[isolane-out]:--} | ${v[node]:--} | ${v[V8Worker]:--} | ${v[other]:--} | ${v[total]:--} |"
}
for target in node "${DIRS[@]}"; do
  start "$target" "$target"
  count task-clock,context-switches,raw_syscalls:sys_enter
  rps=$(awk -v n="$REQUESTS" -v s="$SECS" 'BEGIN { printf "%.0f", n / s }')
  row "$target" "$rps" "CPU us" "$(per_role task-clock)"
  row "$target" "" "system calls" "$(per_role raw_syscalls:sys_enter)"
  row "$target" "" "context switches" "$(per_role context-switches)"
  if [ -n "$MALLOC_EVENT" ]; then
    count "$MALLOC_EVENT"
    row "$target" "" "malloc calls" "$(per_role "$MALLOC_EVENT")"
  fi
  kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true
done
