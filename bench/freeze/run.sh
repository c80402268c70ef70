#!/usr/bin/env bash
# bench/freeze/run.sh: render-pool.md's freeze, reproduced (`bench/run freeze` runs it).
#
# A default server (only addresses and apps set) with five apps: hello and json (the healthy
# routes, measured), sse (100 clients hold event streams), render (one client in a loop, each
# request spinning 5 s of wall time in one turn: wedged renders, ended by the 2 s CPU budget
# unless the hogs left them less CPU than that) and storm (its module rewritten
# every 100 ms). The host is saturated: a CPU hog on every core. The healthy routes' p99 is
# measured on the idle server first, then under all of that, in the same run.
# Pass: p99 under max(2 x idle p99, 50 ms); no worker SIGKILLed and no respawn; no request lost
# (a shed one has 503 + Retry-After); no stream lost. Each mechanism is then turned off in turn
# (the defaults stay on in the product) and the same figures reported.
#
#   bench/freeze/run.sh [--quick]      (BENCH_REPS, BENCH_DURATION override 3 runs of 10 s)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BIN=$ROOT/build/isolane
[ -x "$BIN" ] || { echo "bench/freeze: build first (make build)" >&2; exit 1; }
DURATION=${BENCH_DURATION:-10}
REPS=${BENCH_REPS:-3}
[ "${1:-}" = "--quick" ] && DURATION=${BENCH_DURATION:-4}
CORES=$(nproc)
TMP=$(mktemp -d)
chmod 755 "$TMP"  # workers started by root run as nobody and read the modules from here
PIDS=""
cleanup() {
  for p in $PIDS; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT
log() { echo "-- $*" >&2; }

cp -r "$ROOT/bench/apps" "$TMP/apps"
cp "$ROOT/bench/freeze/render.js" "$ROOT/bench/freeze/storm.js" "$TMP/apps/"
chmod -R a+rX "$TMP/apps"

source "$ROOT/bench/lib/serve.sh"

# serve VARIANT_ENV...: starts the server with the given environment; sets PORT, ADMIN, SERVER.
serve() {
  PORT=$(port)
  ADMIN=$(port)
  cat >"$TMP/isolane.toml" <<TOML
[server]
listen = "127.0.0.1:$PORT"
admin_listen = "127.0.0.1:$ADMIN"

[[app]]
name = "hello"
module = "$TMP/apps/hello.js"
route = "/hello"

[[app]]
name = "json"
module = "$TMP/apps/json.js"
route = "/json"

[[app]]
name = "sse"
module = "$TMP/apps/sse.js"
route = "/sse"
streaming = true

[[app]]
name = "render"
module = "$TMP/apps/render.js"
route = "/render"

[[app]]
name = "storm"
module = "$TMP/apps/storm.js"
route = "/storm"
TOML
  start_server bench/freeze "/hello" "$@"
}

# run_variant NAME ENV...: REPS runs of idle then freeze; one table row (medians).
run_variant() {
  local name=$1 rep idle freeze hogs i
  shift
  local idles="" p99s="" p50s="" maxes="" sheds="" lost="" kills="" respawns="" sse="" renders=""
  for rep in $(seq "$REPS"); do
    log "$name, run $rep of $REPS"
    serve "$@"
    idle=$(node "$ROOT/bench/freeze/driver.mjs" --port "$PORT" --seconds "$DURATION" --healthy 16)
    hogs=""
    for i in $(seq "$CORES"); do
      node -e 'for (;;) {}' &
      hogs+="$! "
    done
    PIDS+="$hogs"
    freeze=$(node "$ROOT/bench/freeze/driver.mjs" --port "$PORT" --seconds "$DURATION" --healthy 16 \
      --renders 1 --sse 100 --storm "$TMP/apps/storm.js")
    for i in $hogs; do kill -9 "$i" 2>/dev/null || true; wait "$i" 2>/dev/null || true; done
    log "idle: $idle"
    log "frozen: $freeze"
    idles+="$(field "$idle" healthy.p99Ms) "
    p99s+="$(field "$freeze" healthy.p99Ms) "
    p50s+="$(field "$freeze" healthy.p50Ms) "
    maxes+="$(field "$freeze" healthy.maxMs) "
    sheds+="$(field "$freeze" healthy.status.503) "
    lost+="$(( $(field "$freeze" healthy.lost) + $(field "$freeze" healthy.shedWithoutRetryAfter) + $(field "$freeze" renders.lost) )) "
    sse+="$(field "$freeze" sse.lost) "
    renders+="$(field "$freeze" renders.status.500)/$(field "$freeze" renders.status.200) "
    kills+="$(sigkills) "
    respawns+="$(metric isolane_worker_respawns_total) "
    unserve
  done
  local idle99 p99 bound pass="pass"
  idle99=$(echo "$idles" | median)
  p99=$(echo "$p99s" | median)
  bound=$(p99_bound "$idle99")
  within "$p99" "$bound" || pass="FAIL (p99)"
  [ "$(echo "$lost" | most)" = 0 ] || pass="FAIL (lost)"
  [ "$(echo "$kills $respawns" | most)" = 0 ] || pass="FAIL (kill/respawn)"
  [ "$(echo "$sse" | most)" = 0 ] || pass="FAIL (sse)"
  printf '| %s | %.1f | %.1f | %.1f | %.0f | %s | %s | %s | %s | %s | %s |\n' "$name" "$idle99" \
    "$(echo "$p50s" | median)" "$p99" "$(echo "$maxes" | median)" "$bound" "$(echo "$sheds" | median)" \
    "$(echo "$renders" | median)" "$(echo "$lost" | median)" "$(echo "$kills" | median)/$(echo "$respawns" | median)" "$pass"
}

echo "freeze: $REPS runs of ${DURATION} s idle + ${DURATION} s frozen per row, medians; $CORES CPU hogs; healthy routes /hello and /json, 16 clients"
echo
echo "| mechanisms | idle p99 ms | frozen p50 ms | frozen p99 ms | frozen max ms | bound ms | healthy 503s | renders ended at the CPU budget/answered | lost | SIGKILLs/respawns | verdict |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
run_variant "all on (defaults)"
run_variant "wedge-aware scheduling off" ISOLANE_WEDGED_TURN_MS=0
run_variant "delay admission off" ISOLANE_SHED_DELAY_MS=0
run_variant "both off" ISOLANE_WEDGED_TURN_MS=0 ISOLANE_SHED_DELAY_MS=0
