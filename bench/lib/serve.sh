# bench/lib/serve.sh: what the scenario scripts that start their own isolane share (sourced by
# bench/freeze/run.sh and bench/flood/run.sh). Expects BIN (the isolane executable), TMP (the
# run's temp dir, holding isolane.toml) and PIDS (what the script's cleanup kills).

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_server NAME READY_PATH ENV...: runs `isolane serve -c $TMP/isolane.toml` (listening on
# PORT, admin on ADMIN) with the given environment, and returns once READY_PATH answers and
# every worker is up; sets SERVER. NAME is the script's, for its error message.
start_server() {
  local name=$1 ready=$2 i
  shift 2
  env "$@" ISOLANE_CODE_CACHE_DIR=off "$BIN" serve -c "$TMP/isolane.toml" >"$TMP/server.log" 2>&1 &
  SERVER=$!
  PIDS+="$SERVER "
  for i in $(seq 400); do
    # (the metrics in a variable: a `curl | grep -q` ends curl with SIGPIPE when it matches early)
    local metrics
    metrics=$(curl -sf "http://127.0.0.1:$ADMIN/metrics" || true)
    if curl -sf -o /dev/null "http://127.0.0.1:$PORT$ready" &&
       grep -q '^isolane_worker_up' <<<"$metrics" && ! grep -q '^isolane_worker_up{.*} 0' <<<"$metrics"; then
      return
    fi
    kill -0 "$SERVER" 2>/dev/null || { tail "$TMP/server.log" >&2; exit 1; }
    sleep 0.05
  done
  echo "$name: the server did not become ready" >&2
  exit 1
}

unserve() {
  kill "$SERVER" 2>/dev/null || true
  wait "$SERVER" 2>/dev/null || true
}

metric() {  # NAME: the sum of its samples
  curl -sf "http://127.0.0.1:$ADMIN/metrics" | awk -v n="$1" '$1 == n || index($1, n "{") == 1 { s += $2 } END { print s + 0 }'
}

field() { node -e 'const r = JSON.parse(process.argv[1]); console.log(process.argv[2].split(".").reduce((o, k) => o?.[k], r) ?? 0)' "$1" "$2"; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

# The pass rules the scenarios share. most/least: the largest and smallest of a space-separated
# list; p99_bound IDLE_P99: max(2 x the idle p99, 50 ms); within P BOUND: P <= BOUND; sigkills:
# workers the server killed as a last resort (from its log).
most() { tr ' ' '\n' | grep . | sort -g | tail -1; }
least() { tr ' ' '\n' | grep . | sort -g | head -1; }
p99_bound() { awk -v i="$1" 'BEGIN { b = 2 * i; if (b < 50) b = 50; printf "%.1f", b }'; }
within() { awk -v p="$1" -v b="$2" 'BEGIN { exit !(p <= b) }'; }
sigkills() { grep -c 'last resort' "$TMP/server.log" || true; }
