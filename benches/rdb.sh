#!/usr/bin/env bash
# RDB files, redis-server 7.0 against Vermilion in the same run: SAVE time and file size,
# BGSAVE wall time and the worst PING round trip while it runs, and the time to start on a
# dump.rdb (each server on its own file and on the other's).
#
#   benches/rdb.sh                 # N=1000000 keys (DEBUG POPULATE, 10-byte values) + 1000 hashes, sets, zsets of 100
#
# Servers pinned to CPU 1 (PIN=0: unpinned); the measuring client on CPU 0.
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/common.sh
N=${N:-1000000}
release_binary
RBIN=$(command -v redis-server)
scratch

# start NAME BIN DIR: a server without the log in DIR; sets PORT_NAME, PID_NAME, and
# READY_MS (spawn to the first PONG, which comes after the load).
start() {
  local name=$1 bin=$2 dir=$3 p t0
  p=$(port)
  mkdir -p "$dir"
  t0=$(date +%s%N)
  (cd "$dir" && exec "${SERVER_CPU[@]}" "$bin" --port "$p" --save '' --appendonly no --loglevel warning --enable-debug-command yes) >/dev/null 2>&1 &
  PIDS+=($!)
  ready "$p"
  eval "PORT_$name=$p PID_$name=$!"
  READY_MS=$(( ($(date +%s%N) - t0) / 1000000 ))
}
stop() { eval "kill \$PID_$1"; sleep 0.5; }

fill() {
  local p=$1
  redis-cli -p "$p" debug populate "$N" key 10 >/dev/null
  python3 - "$p" <<'PY' | redis-cli -p "$1" --pipe >/dev/null
import sys
w = sys.stdout.write
def cmd(*a):
    w("*%d\r\n" % len(a) + "".join("$%d\r\n%s\r\n" % (len(x), x) for x in a))
for i in range(1000):
    cmd("HSET", "h%d" % i, *[s for j in range(100) for s in ("f%d" % j, "v%d" % j)])
    cmd("SADD", "s%d" % i, *["m%d" % j for j in range(100)])
    cmd("ZADD", "z%d" % i, *[s for j in range(100) for s in (str(j), "m%d" % j)])
PY
}

ms() { python3 -c "import time; print(int(time.time()*1000))"; }

echo "keys: $N strings + 1000 hashes, sets and sorted sets of 100"
printf '%-10s %10s %12s %12s %14s %16s %16s\n' server "SAVE ms" "file bytes" "BGSAVE ms" "max PING ms" "load own ms" "load other's ms"
for s in redis ours; do
  bin=$RBIN; [ $s = ours ] && bin=$VBIN
  start "$s" "$bin" "$TMP/$s"
  eval "p=\$PORT_$s"
  fill "$p"
  t0=$(ms); redis-cli -p "$p" save >/dev/null; save_ms=$(( $(ms) - t0 ))
  size=$(stat -c %s "$TMP/$s/dump.rdb")
  # BGSAVE: wall time until INFO says it ended, PINGs every ms meanwhile.
  bg=$(python3 - "$p" <<'PY'
import socket, sys, time
p = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", p))
def call(line):
    s.sendall(line)
    data = b""
    while not data.endswith(b"\r\n") or (data.startswith(b"$") and data.count(b"\r\n") < 2):
        data += s.recv(1 << 20)
    return data
t0 = time.time()
call(b"BGSAVE\r\n")
worst = 0.0
while True:
    a = time.time(); call(b"PING\r\n"); worst = max(worst, time.time() - a)
    if b"rdb_bgsave_in_progress:0" in call(b"INFO persistence\r\n"):
        break
    time.sleep(0.001)
print("%d %.2f" % ((time.time() - t0) * 1000, worst * 1000))
PY
)
  stop "$s"
  cp "$TMP/$s/dump.rdb" "$TMP/$s.rdb"
  eval "save_$s=$save_ms size_$s=$size bg_$s='$bg'"
done
for s in redis ours; do
  bin=$RBIN; [ $s = ours ] && bin=$VBIN
  other=ours; [ $s = ours ] && other=redis
  rm -rf "$TMP/l"; mkdir -p "$TMP/l"; cp "$TMP/$s.rdb" "$TMP/l/dump.rdb"
  start "l$s" "$bin" "$TMP/l"; own=$READY_MS; stop "l$s"
  rm -rf "$TMP/l"; mkdir -p "$TMP/l"; cp "$TMP/$other.rdb" "$TMP/l/dump.rdb"
  start "m$s" "$bin" "$TMP/l"; theirs=$READY_MS; stop "m$s"
  [ -z "${KEEP:-}" ] || cp "$TMP/$s.rdb" "$KEEP.$s.rdb"
  eval "printf '%-10s %10s %12s %12s %14s %16s %16s\n' $s \$save_$s \$size_$s \${bg_$s% *} \${bg_$s#* } $own $theirs"
done
