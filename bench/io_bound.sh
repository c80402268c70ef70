#!/usr/bin/env bash
# I/O-bound handlers at high concurrency: "async" (awaits a 20 ms timer) and "upstream" (fetches
# from a loopback upstream that answers after 10 ms), on isolane (default configuration:
# subprocess pool, every protection on) and on Node 20 (plain node:http), measured side by side
# (A B A B ...) with wrk. Prints medians of REPS runs: req/s, p99, errors, and the ratio.
#   bench/io_bound.sh [DURATION_S=5] [REPS=3]
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-5}
REPS=${2:-3}
BIN=build/isolane
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
[ -x "$BIN" ] || make build >/dev/null
ulimit -n 65536 2>/dev/null || true

ISO=18441; NODE=18442; UP=18443; ADMIN=18444
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]:-}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

cat > "$tmp/isolane.toml" <<TOML
[server]
listen = "127.0.0.1:$ISO"
admin_listen = "127.0.0.1:$ADMIN"
[[app]]
name = "async"
module = "$PWD/bench/apps/async.js"
route = "/async"
[[app]]
name = "upstream"
module = "$PWD/bench/apps/upstream.js"
route = "/upstream"
fetch_allow = ["127.0.0.1"]
[app.vars]
UPSTREAM = "http://127.0.0.1:$UP/"
TOML

waitFor() { for _ in $(seq 200); do curl -sf "$1" >/dev/null && return; sleep 0.05; done; echo "no answer from $1" >&2; exit 1; }
node bench/baselines/upstream.mjs $UP & pids+=($!)
waitFor "http://127.0.0.1:$UP/"
ISOLANE_LOG_LEVEL=warn "$BIN" serve --config "$tmp/isolane.toml" 2>"$tmp/isolane.log" & pids+=($!)
node bench/baselines/node_server.mjs $NODE "http://127.0.0.1:$UP/" & pids+=($!)
waitFor "http://127.0.0.1:$ISO/async"
waitFor "http://127.0.0.1:$NODE/async"

# -> "rps p99ms errors"
measure() {
  local out rps p99 errs
  out=$(wrk -t2 -c"$2" -d"${DURATION}s" --timeout 10s --latency "$1")
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v*=1000}; print v}' <<<"$out")
  errs=$(awk '/Non-2xx|Socket errors/ {for (i=1;i<=NF;i++) if ($i ~ /^[0-9]+,?$/) {gsub(",","",$i); s+=$i}} END {print s+0}' <<<"$out")
  echo "$rps $p99 $errs"
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -A R P E
printf "%-10s %6s %-8s %10s %9s %7s\n" scenario conns server "req/s" "p99 ms" errors
for scenario in async upstream; do
  for conns in 256 1000; do
    for server in isolane node; do R[$server]=""; P[$server]=""; E[$server]=""; done
    for rep in $(seq "$REPS"); do
      for server in isolane node; do
        port=$([ $server = isolane ] && echo $ISO || echo $NODE)
        wrk -t1 -c32 -d1s "http://127.0.0.1:$port/$scenario" >/dev/null
        read -r rps p99 errs < <(measure "http://127.0.0.1:$port/$scenario" "$conns")
        R[$server]+="$rps "; P[$server]+="$p99 "; E[$server]+="$errs "
      done
    done
    for server in isolane node; do
      r=$(tr ' ' '\n' <<<"${R[$server]}" | grep . | median)
      p=$(tr ' ' '\n' <<<"${P[$server]}" | grep . | median)
      e=$(tr ' ' '\n' <<<"${E[$server]}" | grep . | median)
      printf "%-10s %6s %-8s %10.0f %9.2f %7s\n" "$scenario" "$conns" "$server" "$r" "$p" "$e"
      eval "m_$server=$r"
    done
    awk -v a="$m_isolane" -v b="$m_node" -v s="$scenario" -v c="$conns" \
      'BEGIN {printf "%-10s %6s isolane/node req/s: %.2f\n", s, c, a/b}'
  done
done
