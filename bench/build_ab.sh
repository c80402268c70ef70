#!/usr/bin/env bash
# A/B of two isolane builds, default configuration, 64 connections, taken in turn A B A B ... on
# loopback; prints each pair and the medians and their ratio after / before.
#   bench/build_ab.sh BEFORE_DIR AFTER_DIR [WORKLOAD=hello] [REPS=3] [SECONDS=4]
# WORKLOAD: `hello` (GET /hello of the embedded examples) or `small-post` (195-byte JSON bodies to
# an app that reads the body and echoes it, tests/fixtures/apps/echo.js).
# A DIR holds `isolane` and `libisolane_engine.so` (a build directory, or copies of those two).
set -euo pipefail
cd "$(dirname "$0")/.."
BEFORE=$1 AFTER=$2 WORKLOAD=${3:-hello} REPS=${4:-3} SECS=${5:-4}
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
case "$WORKLOAD" in
  hello) APPS=() PROBE=(curl -sf) URL_PATH=/hello WRK_SCRIPT=() ;;
  small-post)
    APPS=("$PWD/tests/fixtures/apps/echo.js") PROBE=(curl -sf -X POST -d x) URL_PATH=/
    WRK_SCRIPT=(-s bench/wrk/small_post.lua) ;;
  *) echo "unknown workload $WORKLOAD (hello, small-post)" >&2; exit 2 ;;
esac
pids=()
trap 'for p in "${pids[@]:-}"; do kill "$p" 2>/dev/null || true; done' EXIT

run() {  # DIR PORT -> req/s
  ISOLANE_ENGINE=$1/libisolane_engine.so ISOLANE_LOG_LEVEL=warn \
    ISOLANE_ADMIN_LISTEN=127.0.0.1:$(($2 + 1)) "$1/isolane" serve --listen "127.0.0.1:$2" \
    "${APPS[@]}" >/dev/null 2>&1 &
  local pid=$!
  pids+=("$pid")
  for _ in $(seq 200); do "${PROBE[@]}" "http://127.0.0.1:$2$URL_PATH" >/dev/null && break; sleep 0.05; done
  wrk -t2 -c64 -d"${SECS}s" "${WRK_SCRIPT[@]}" "http://127.0.0.1:$2$URL_PATH" |
    awk '/Requests\/sec/ {print $2}'
  kill "$pid"
  wait "$pid" 2>/dev/null || true
}
median() { sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
b=() a=()
for i in $(seq "$REPS"); do
  b+=("$(run "$BEFORE" 18501)")
  a+=("$(run "$AFTER" 18511)")
  echo "run $i: before ${b[-1]} req/s, after ${a[-1]} req/s"
done
mb=$(printf '%s\n' "${b[@]}" | median)
ma=$(printf '%s\n' "${a[@]}" | median)
awk -v b="$mb" -v a="$ma" 'BEGIN { printf "median: before %.0f, after %.0f req/s: after / before %.2f\n", b, a, a / b }'
