#!/usr/bin/env bash
# A redis-server replica's full sync from a primary holding N keys, redis-server 7.0 and
# Vermilion as the primary in the same run: the time from REPLICAOF to the replica's link up,
# and the worst PING round trip on the primary meanwhile (Vermilion encodes the RDB file for a
# redis-server replica in the executor, Redis in a forked child).
#
#   benches/mixed_sync.sh          # N=1000000 keys (DEBUG POPULATE, 10-byte values)
#
# Servers pinned to CPU 1 (PIN=0: unpinned); the measuring client on CPU 0.
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/common.sh
N=${N:-1000000}
release_binary
scratch

# run NAME BIN: a primary of N keys and a fresh redis-server replica; prints one row.
run() {
  local name=$1 bin=$2 pp rp
  pp=$(port); rp=$(port)
  mkdir -p "$TMP/$name-p" "$TMP/$name-r"
  (cd "$TMP/$name-p" && exec "${SERVER_CPU[@]}" "$bin" --port "$pp" --save '' --appendonly no --enable-debug-command yes \
    --repl-diskless-sync-delay 0 --loglevel warning) >/dev/null 2>&1 &
  PIDS+=($!)
  (cd "$TMP/$name-r" && exec "${SERVER_CPU[@]}" redis-server --port "$rp" --save '' --appendonly no --loglevel warning) >/dev/null 2>&1 &
  PIDS+=($!)
  ready "$pp"; ready "$rp"
  redis-cli -p "$pp" debug populate "$N" key 10 >/dev/null
  "${CLIENT_CPU[@]}" python3 - "$name" "$pp" "$rp" "$N" <<'PY'
import socket, sys, time
name, pp, rp, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def conn(port):
    s = socket.create_connection(("127.0.0.1", port)); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1); return s
def call(s, cmd):
    s.sendall(cmd.encode() + b"\r\n"); data = b""
    while not data.endswith(b"\r\n") or (data.startswith(b"$") and data.count(b"\r\n") < 2):
        data += s.recv(1 << 20)
    return data
p, r = conn(pp), conn(rp)
t0 = time.monotonic()
call(r, f"REPLICAOF 127.0.0.1 {pp}")
worst = 0.0
while True:
    a = time.monotonic(); call(p, "PING"); worst = max(worst, time.monotonic() - a)
    if b"master_link_status:up" in call(r, "INFO replication") and int(call(r, "DBSIZE")[1:-2]) == n:
        break
    time.sleep(0.001)
print("%-10s %10d %14.0f %16.2f" % (name, n, (time.monotonic() - t0) * 1000, worst * 1000))
PY
}

printf '%-10s %10s %14s %16s\n' primary keys "sync ms" "worst PING ms"
run redis "$(command -v redis-server)"
run vermilion "$VBIN"
