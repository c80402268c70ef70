#!/usr/bin/env bash
# bench/slow_reader.sh [SECONDS] [READERS]: memory under slow readers. READERS clients (default
# 10) each read an endless streamed response at 1 KiB/s for SECONDS (default 60) while the
# server's memory (RSS and anonymous+shared PSS of the master and all its workers) is sampled
# every 10 s; halfway through, wrk checks that short requests are served meanwhile. Flow control
# holds the server's memory flat: each stream costs one window (256 KiB) at most, not what the
# app could produce. Prints one line per sample and the wrk summary.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TOTAL=${1:-60}
READERS=${2:-10}
PORT=18390
ADMIN=18391
BIN=build/isolane
APP=$(mktemp -d)/endless.js
cat > "$APP" <<'JS'
const chunk = new Uint8Array(16 * 1024).fill(120);
export default {
  fetch(request) {
    if (new URL(request.url).pathname === '/hello') return new Response('hello\n');
    return new Response(new ReadableStream({ pull(c) { c.enqueue(chunk.slice()); } }));
  },
};
JS
ISOLANE_ADMIN_LISTEN=127.0.0.1:$ADMIN "$BIN" serve "$APP" --listen 127.0.0.1:$PORT >/dev/null 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; kill $(jobs -p) 2>/dev/null; true' EXIT
for _ in $(seq 100); do curl -sf http://127.0.0.1:$PORT/hello >/dev/null && break; sleep 0.1; done

tree_kib() {  # RSS and PSS (anon+shmem) of a process and its descendants, in KiB
  local rss=0 pss=0 p
  for p in $1 $(pgrep -P "$1"); do
    rss=$((rss + $(awk '/^VmRSS:/ {print $2}' /proc/$p/status 2>/dev/null || echo 0)))
    pss=$((pss + $(awk '/^Pss_Anon:|^Pss_Shmem:/ {s += $2} END {print s + 0}' /proc/$p/smaps_rollup 2>/dev/null || echo 0)))
  done
  echo "$rss $pss"
}

read -r rss0 pss0 < <(tree_kib $SERVER)
echo "idle: RSS $((rss0 / 1024)) MiB, PSS $((pss0 / 1024)) MiB"
python3 - "$PORT" "$READERS" "$SECONDS_TOTAL" <<'PY' &
import socket, sys, time, threading
port, readers, total = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
def reader():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /endless HTTP/1.1\r\nHost: x\r\n\r\n")
    end = time.time() + total
    while time.time() < end:
        s.recv(1024)
        time.sleep(1)
    s.close()
for _ in range(readers):
    threading.Thread(target=reader, daemon=True).start()
time.sleep(total + 1)
PY
CLIENT=$!
for t in $(seq 10 10 "$SECONDS_TOTAL"); do
  sleep 10
  read -r rss pss < <(tree_kib $SERVER)
  echo "t=${t}s: RSS $((rss / 1024)) MiB (+$(((rss - rss0) / 1024))), PSS $((pss / 1024)) MiB (+$(((pss - pss0) / 1024)))"
  if [ "$t" -eq $((SECONDS_TOTAL / 2 / 10 * 10)) ]; then
    wrk -t1 -c16 -d3s http://127.0.0.1:$PORT/hello 2>/dev/null | grep -E "Requests/sec|Non-2xx|Latency" || true
  fi
done
wait $CLIENT || true
