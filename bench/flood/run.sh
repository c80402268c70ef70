#!/usr/bin/env bash
# bench/flood/run.sh: fair share under a CPU flood (`bench/run flood` runs it).
#
# A default server (only addresses and apps set) with an app `wedge` whose every request spins
# 3 s in one synchronous turn (the 2 s CPU budget ends each: 500 CPU_LIMIT) and well-behaved
# apps that return a string. One client sends 100 sequential requests to each well-behaved app,
# first on the idle server, then while 8 clients loop on `wedge` (from 3 s before until the
# end). Rows: 2 apps (wedge + good) and 16 apps (wedge + 15), each with the defaults and with
# wedge-aware scheduling off (ISOLANE_WEDGED_TURN_MS=0, which also turns off the detection of
# heavy apps), the state before fair share; then 2 apps on one worker of one thread, with the
# reserve thread (the default there) and without it.
# Pass: every well-behaved request answered 200; the worst app's p99 under max(2 x its idle p99,
# 50 ms); no worker SIGKILLed, no respawn; the flood still runs (its 500s).
#
#   bench/flood/run.sh [--quick]      (BENCH_REPS overrides 3 runs)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BIN=$ROOT/build/isolane
[ -x "$BIN" ] || { echo "bench/flood: build first (make build)" >&2; exit 1; }
REPS=${BENCH_REPS:-3}
REQUESTS=100
[ "${1:-}" = "--quick" ] && REPS=${BENCH_REPS:-1}
TMP=$(mktemp -d)
chmod 755 "$TMP"  # workers started by root run as nobody and read the modules from here
PIDS=""
cleanup() {
  for p in $PIDS; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT
log() { echo "-- $*" >&2; }

mkdir -p "$TMP/apps"
cp "$ROOT/bench/apps/hello.js" "$ROOT/bench/freeze/render.js" "$TMP/apps/"
chmod -R a+rX "$TMP/apps"

source "$ROOT/bench/lib/serve.sh"

# serve GOOD_APPS ENV...: starts the server with `wedge` and GOOD_APPS (comma-separated, each
# the hello app); sets PORT, ADMIN, SERVER.
serve() {
  local good=$1 app
  shift
  PORT=$(port)
  ADMIN=$(port)
  {
    printf '[server]\nlisten = "127.0.0.1:%s"\nadmin_listen = "127.0.0.1:%s"\n\n' "$PORT" "$ADMIN"
    printf '[[app]]\nname = "wedge"\nmodule = "%s"\nroute = "/wedge"\n\n' "$TMP/apps/render.js"
    for app in ${good//,/ }; do
      printf '[[app]]\nname = "%s"\nmodule = "%s"\nroute = "/%s"\n\n' "$app" "$TMP/apps/hello.js" "$app"
    done
  } >"$TMP/isolane.toml"
  start_server bench/flood "/${good%%,*}/" "$@"
}

# run_variant NAME GOOD_APPS ENV...: REPS runs of idle then flood; one table row (medians).
run_variant() {
  local name=$1 good=$2 rep idle flood
  shift 2
  local idles="" oks="" p50s="" p99s="" maxes="" sheds="" lost="" floods="" kills="" respawns=""
  for rep in $(seq "$REPS"); do
    log "$name, run $rep of $REPS"
    serve "$good" "$@"
    idle=$(node "$ROOT/bench/flood/driver.mjs" --port "$PORT" --apps "$good" --requests "$REQUESTS")
    flood=$(node "$ROOT/bench/flood/driver.mjs" --port "$PORT" --apps "$good" --requests "$REQUESTS" \
      --flood 8 --warm 3)
    log "idle: $(field "$idle" worst)"
    log "flood: $(field "$flood" worst) $(field "$flood" flood)"
    idles+="$(field "$idle" worst.p99Ms) "
    oks+="$(field "$flood" worst.ok) "
    p50s+="$(field "$flood" worst.p50Ms) "
    p99s+="$(field "$flood" worst.p99Ms) "
    maxes+="$(field "$flood" worst.maxMs) "
    sheds+="$(field "$flood" worst.shed) "
    lost+="$(field "$flood" worst.lost) "
    floods+="$(field "$flood" flood.status.500)/$(field "$flood" flood.status.503) "
    kills+="$(sigkills) "
    respawns+="$(metric isolane_worker_respawns_total) "
    unserve
  done
  local idle99 p99 bound pass="pass"
  idle99=$(echo "$idles" | median)
  p99=$(echo "$p99s" | median)
  bound=$(p99_bound "$idle99")
  within "$p99" "$bound" || pass="FAIL (p99)"
  [ "$(echo "$oks" | least)" = "$REQUESTS" ] || pass="FAIL (not every request 200)"
  [ "$(echo "$lost" | most)" = 0 ] || pass="FAIL (lost)"
  [ "$(echo "$kills $respawns" | most)" = 0 ] || pass="FAIL (kill/respawn)"
  printf '| %s | %.1f | %s/%s | %s | %.1f | %.1f | %.0f | %s | %s | %s | %s |\n' "$name" "$idle99" \
    "$(echo "$oks" | median)" "$REQUESTS" "$(echo "$sheds" | median)" "$(echo "$p50s" | median)" "$p99" \
    "$(echo "$maxes" | median)" "$bound" "$(echo "$floods" | median)" \
    "$(echo "$kills" | median)/$(echo "$respawns" | median)" "$pass"
}

fifteen=$(seq -s, -f 'good%g' 1 15)
echo "flood: $REPS runs per row, medians; 8 clients loop on 3 s spins of one app (the 2 s CPU budget ends each); one client sends $REQUESTS sequential requests to each other app, idle then under the flood; default config on $(nproc) cores; figures of the worst well-behaved app"
echo
echo "| setup | idle p99 ms | 200s | 503s | flood p50 ms | flood p99 ms | flood max ms | bound ms | flood 500s/503s | SIGKILLs/respawns | verdict |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
run_variant "2 apps, defaults" good
run_variant "2 apps, wedge-aware scheduling off" good ISOLANE_WEDGED_TURN_MS=0
run_variant "16 apps, defaults" "$fifteen"
run_variant "16 apps, wedge-aware scheduling off" "$fifteen" ISOLANE_WEDGED_TURN_MS=0
run_variant "2 apps, one worker of one thread (a reserve thread)" good ISOLANE_POOL_SIZE=1
run_variant "2 apps, one worker of one thread, no reserve" good ISOLANE_POOL_SIZE=1 ISOLANE_RESERVE_THREAD=0
