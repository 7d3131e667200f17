#!/usr/bin/env bash
# Loading and compaction, redis-server vs vermilion-server in the same run (issue 6):
#  1. both log KEYS plain SETs plus EVALS script runs (appendonly yes, everysec), shut down,
#     and start again: the time each takes to load (its own "DB loaded from append only
#     file" log line) and the size of its appendonlydir;
#  2. with the data loaded, PING round trips (one client, back to back) during BGREWRITEAOF
#     of the whole dataset: p50 / p99 / p99.9 / max in ms.
# Usage: benches/aof-load.sh [keys] [evals]
set -euo pipefail
cd "$(dirname "$0")/.."
KEYS=${1:-1000000}
EVALS=${2:-100000}
cargo build --release --quiet --bin vermilion-server
. benches/common.sh
WORK=$(mktemp -d)
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null; [ -n "${KEEP:-}" ] && cp "$WORK/v/log" /tmp/aof-load-vermilion.log; rm -rf "$WORK"' EXIT
RPORT=$(port); VPORT=$(port)
mkdir -p "$WORK/r" "$WORK/v"
start_r() { setsid redis-server --port "$RPORT" --save '' --appendonly yes --dir "$WORK/r" >"$WORK/r/log" 2>&1 & PIDS+=($!); }
start_v() { setsid target/release/vermilion-server --port "$VPORT" --appendonly yes --dir "$WORK/v" >"$WORK/v/log" 2>&1 & PIDS+=($!); }
start_r; start_v; ready "$RPORT"; ready "$VPORT"

python3 - "$KEYS" "$EVALS" >"$WORK/load.resp" <<'PY'
import sys
keys, evals = int(sys.argv[1]), int(sys.argv[2])
out = sys.stdout.buffer
def cmd(*args):
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
    out.write(b"".join(parts))
for i in range(keys):
    cmd("SET", "key:%d" % i, "value-%d" % i)
body = "redis.call('incr', KEYS[1]) return redis.call('hset', KEYS[2], ARGV[1], ARGV[2])"
for i in range(evals):
    cmd("EVAL", body, 2, "counter:%d" % (i % 1000), "hash:%d" % (i % 1000), "f%d" % i, i)
PY
for p in "$RPORT" "$VPORT"; do redis-cli -p "$p" --pipe <"$WORK/load.resp" >/dev/null; done
for p in "$RPORT" "$VPORT"; do redis-cli -p "$p" shutdown >/dev/null 2>&1 || true; done
wait "${PIDS[@]}" 2>/dev/null || true
PIDS=()
size() { du -sb "$1/appendonlydir" | cut -f1; }
RSIZE=$(size "$WORK/r"); VSIZE=$(size "$WORK/v")
start_r; start_v; ready "$RPORT"; ready "$VPORT"
loadtime() { grep -o 'DB loaded from append only file: [0-9.]* seconds' "$1" | awk '{print $7}'; }
RT=$(loadtime "$WORK/r/log"); VT=$(loadtime "$WORK/v/log")
printf '%-28s %14s %14s %7s\n' measure redis vermilion ratio
python3 -c "print('%-28s %14.3f %14.3f %7.2f' % ('load time (s)', $RT, $VT, $RT/$VT if $VT else 0))"
python3 -c "print('%-28s %14d %14d %7.2f' % ('appendonlydir size (bytes)', $RSIZE, $VSIZE, $VSIZE/$RSIZE))"
for p in "$RPORT" "$VPORT"; do
  [ "$(redis-cli -p "$p" dbsize)" -ge "$KEYS" ] || { echo "port $p holds $(redis-cli -p "$p" dbsize) keys"; exit 1; }
done

# PING latency while BGREWRITEAOF rewrites the dataset.
latency() {
  python3 - "$1" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", port)); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
f = s.makefile("rb")
def call(b):
    s.sendall(b); line = f.readline()
    if line.startswith(b"$"):
        n = int(line[1:]); data = f.read(n + 2); return data
    return line
call(b"BGREWRITEAOF\r\n")
lat = []
t_end = None
while True:
    t = time.perf_counter(); call(b"PING\r\n"); lat.append((time.perf_counter() - t) * 1000)
    if len(lat) % 200 == 0:
        info = call(b"INFO persistence\r\n")
        if b"aof_rewrite_in_progress:0" in info:
            break
lat.sort()
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]
print("%d %.3f %.3f %.3f %.3f" % (len(lat), q(0.5), q(0.99), q(0.999), lat[-1]))
PY
}
sleep 1
R=($(latency "$RPORT")); V=($(latency "$VPORT"))
printf '%-28s %14s %14s\n' "PING during rewrite" redis vermilion
printf '%-28s %14s %14s\n' "  pings" "${R[0]}" "${V[0]}"
printf '%-28s %14s %14s\n' "  p50 (ms)" "${R[1]}" "${V[1]}"
printf '%-28s %14s %14s\n' "  p99 (ms)" "${R[2]}" "${V[2]}"
printf '%-28s %14s %14s\n' "  p99.9 (ms)" "${R[3]}" "${V[3]}"
printf '%-28s %14s %14s\n' "  max (ms)" "${R[4]}" "${V[4]}"
