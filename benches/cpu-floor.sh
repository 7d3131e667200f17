#!/usr/bin/env bash
# PING against the floor: server CPU per request (utime+stime from /proc/PID/stat) and
# throughput for ../shared/bench/floor_epoll.c (an epoll loop that only answers +PONG: what
# the kernel alone costs), redis-server and Vermilion, in the same run, alternating, best
# (lowest CPU) of ROUNDS. Servers on CPU 1, redis-benchmark on CPU 0 (see common.sh).
#
#   benches/cpu-floor.sh                 # CLIENTS=50 N=300000 ROUNDS=3
#   CLIENTS=500 benches/cpu-floor.sh
#
# With perf installed and permitted, COUNT=1 also prints epoll_wait calls, system calls and
# context switches per request for each server.
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/common.sh

ROUNDS=${ROUNDS:-3}
N=${N:-300000}
CLIENTS=${CLIENTS:-50}
COUNT=${COUNT:-0}
FLOOR_SRC=${FLOOR_SRC:-../shared/bench/floor_epoll.c}
release_binary

TMP=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT

SERVERS=()
if [ -f "$FLOOR_SRC" ] && gcc -O2 -o "$TMP/floor_epoll" "$FLOOR_SRC" 2>/dev/null; then
  p=$(port)
  "${SERVER_CPU[@]}" "$TMP/floor_epoll" "$p" >/dev/null 2>&1 &
  PIDS+=($!)
  eval "PORT_floor=$p PID_floor=$!"
  SERVERS+=(floor)
else
  echo "no floor server ($FLOOR_SRC or gcc missing): redis and ours only" >&2
fi
for s in redis ours; do
  p=$(port)
  mkdir -p "$TMP/$s"
  bin=redis-server
  [ "$s" = ours ] && bin=$VBIN
  (cd "$TMP/$s" && exec "${SERVER_CPU[@]}" "$bin" --port "$p" --save '' --appendonly no --loglevel warning) >/dev/null 2>&1 &
  PIDS+=($!)
  eval "PORT_$s=$p PID_$s=$!"
  SERVERS+=("$s")
done
sleep 0.5
for s in "${SERVERS[@]}"; do eval "p=\$PORT_$s"; ready "$p" || true; done
sleep 0.3

hz=$(getconf CLK_TCK)
declare -A best_us=() best_rps=()
for _ in $(seq "$ROUNDS"); do
  for s in "${SERVERS[@]}"; do
    eval "p=\$PORT_$s pid=\$PID_$s"
    before=$(cpu_ticks "$pid")
    rps=$("${CLIENT_CPU[@]}" redis-benchmark -p "$p" -n "$N" -c "$CLIENTS" -q --csv -t ping_mbulk 2>/dev/null | tail -1 | awk -F'"' '{print $4}')
    after=$(cpu_ticks "$pid")
    us=$(python3 -c "print('%.3f' % (($after-$before)*1e6/$hz/$N))")
    if [ -z "${best_us[$s]:-}" ] || python3 -c "import sys; sys.exit(0 if $us < ${best_us[$s]} else 1)"; then
      best_us[$s]=$us best_rps[$s]=$rps
    fi
  done
done
printf '%-6s %10s %9s %9s\n' server rps us/req vs-floor
for s in "${SERVERS[@]}"; do
  ratio=-
  [ -n "${best_us[floor]:-}" ] && ratio=$(python3 -c "print('%.2f' % (${best_us[$s]} / ${best_us[floor]}))")
  printf '%-6s %10s %9s %9s\n' "$s" "${best_rps[$s]}" "${best_us[$s]}" "$ratio"
done

if [ "$COUNT" = 1 ] && command -v perf >/dev/null; then
  echo "per request: epoll_wait, system calls, context switches"
  for s in "${SERVERS[@]}"; do
    eval "p=\$PORT_$s pid=\$PID_$s"
    perf stat -x, -e syscalls:sys_enter_epoll_wait,raw_syscalls:sys_enter,context-switches -p "$pid" -o "$TMP/perf.$s" &
    pp=$!
    sleep 0.2
    "${CLIENT_CPU[@]}" redis-benchmark -p "$p" -n "$N" -c "$CLIENTS" -q -t ping_mbulk >/dev/null 2>&1
    kill -INT "$pp"
    wait "$pp" || true
    python3 - "$s" "$N" "$TMP/perf.$s" <<'EOF'
import sys
name, n, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
vals = [l.split(',')[0] for l in open(path) if l[:1].isdigit()]
print('%-6s ' % name + ' '.join('%8.3f' % (float(v) / n) for v in vals))
EOF
  done
fi
