#!/usr/bin/env bash
# What all-or-nothing scripts cost: EVALSHA of one small write script (INCR + HSET), plain
# and with the `rollback` flag, on one server; and, with BASELINE=path/to/an/older/binary, the
# plain script on that build too (a script without rollback should pay nothing measurable).
# Server CPU per request from /proc (utime+stime), servers on CPU 1, redis-benchmark on CPU 0.
#
#   BASELINE=/tmp/vermilion-before benches/rollback-cost.sh      # N=200000 requests, 50 clients, 3 rounds
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/common.sh
N=${N:-200000}
ROUNDS=${ROUNDS:-3}
release_binary
scratch

PLAIN=$'#!lua\nredis.call(\'INCR\', KEYS[1]) redis.call(\'HSET\', KEYS[2], \'f\', ARGV[1]) return 1'
FLAGGED=$'#!lua flags=rollback\nredis.call(\'INCR\', KEYS[1]) redis.call(\'HSET\', KEYS[2], \'f\', ARGV[1]) return 1'

# start NAME BIN: a server without persistence; sets PORT_NAME and PID_NAME.
start() {
  local p
  p=$(port)
  mkdir -p "$TMP/$1"
  (cd "$TMP/$1" && exec "${SERVER_CPU[@]}" "$2" --port "$p" --save '' --appendonly no) >/dev/null 2>&1 &
  PIDS+=($!)
  ready "$p"
  eval "PORT_$1=$p PID_$1=$!"
}
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }

# run PORT PID SHA: prints "rps us-per-request" for one redis-benchmark run.
run() {
  local c0 c1 rps
  c0=$(cpu "$2")
  rps=$("${CLIENT_CPU[@]}" redis-benchmark -p "$1" -n "$N" -c 50 -q evalsha "$3" 2 k h v | tr '\r' '\n' | grep -o '[0-9.]* requests per second' | tail -1 | cut -d' ' -f1)
  c1=$(cpu "$2")
  python3 -c "import os; t=os.sysconf('SC_CLK_TCK'); print('%.0f %.2f' % ($rps, ($c1-$c0)/t*1e6/$N))"
}

start new "$VBIN"
SHA_PLAIN=$(redis-cli -p "$PORT_new" script load "$PLAIN")
SHA_FLAGGED=$(redis-cli -p "$PORT_new" script load "$FLAGGED")
if [ -n "${BASELINE:-}" ]; then
  start old "$(realpath "$BASELINE")"
  redis-cli -p "$PORT_old" script load "$PLAIN" >/dev/null
fi
printf '%-28s %10s %12s\n' row rps "us/request"
for r in $(seq "$ROUNDS"); do
  printf '%-28s %s\n' "plain (round $r)" "$(run "$PORT_new" "$PID_new" "$SHA_PLAIN")"
  printf '%-28s %s\n' "rollback (round $r)" "$(run "$PORT_new" "$PID_new" "$SHA_FLAGGED")"
  if [ -n "${BASELINE:-}" ]; then
    printf '%-28s %s\n' "plain, baseline (round $r)" "$(run "$PORT_old" "$PID_old" "$SHA_PLAIN")"
  fi
done
