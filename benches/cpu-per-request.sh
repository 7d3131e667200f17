#!/usr/bin/env bash
# Server CPU per request (utime+stime from /proc/PID/stat, in microseconds) beside throughput,
# for redis-server and Vermilion in the same run: servers pinned to CPU 1, redis-benchmark to
# CPU 0, the servers alternating within each round, the best (lowest CPU) of ROUNDS rounds.
#
#   benches/cpu-per-request.sh                      # redis vs target/release/vermilion-server
#   BASELINE=/tmp/vermilion-before benches/cpu-per-request.sh   # adds a third column: an older build
#
# Environment: ROUNDS (3), N (requests per run, 200000), CLIENTS (50), PIPELINES ("1 16"),
# TESTS ("PING SET GET INCR LPUSH SADD HSET ZADD EVALSHA XADD XRANGE10 XREADGROUP XACK").
# The stream rows: XADD of 3 fields with `*`; XRANGE - + COUNT 10 and XREADGROUP COUNT 1 `>`
# on a stream filled first with enough entries (IDs 1-0, 2-0, ...) that every XREADGROUP of
# every run gets one; XACK of random IDs among the first 100,000 (those the XREADGROUP rows
# delivered are pending).
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/common.sh

ROUNDS=${ROUNDS:-3}
N=${N:-200000}
CLIENTS=${CLIENTS:-50}
PIPELINES=${PIPELINES:-"1 16"}
TESTS=${TESTS:-"PING SET GET INCR LPUSH SADD HSET ZADD EVALSHA XADD XRANGE10 XREADGROUP XACK"}
VBIN=${VBIN:-target/release/vermilion-server}
BASELINE=${BASELINE:-}
[ -x "$VBIN" ] || cargo build --release --quiet --bin vermilion-server
VBIN=$(realpath "$VBIN")
[ -z "$BASELINE" ] || BASELINE=$(realpath "$BASELINE")

TMP=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT

# start NAME BINARY: starts a server without persistence on a free port; sets PORT_NAME, PID_NAME.
start() {
  local name=$1 bin=$2 p
  p=$(port)
  mkdir -p "$TMP/$name"
  (cd "$TMP/$name" && exec "${SERVER_CPU[@]}" "$bin" --port "$p" --save '' --appendonly no --loglevel warning) >/dev/null 2>&1 &
  PIDS+=($!)
  ready "$p"
  eval "PORT_$name=$p PID_$name=$!"
}


SHA=
# One run: prints "requests/s us-of-server-CPU-per-request".
run() {
  local p=$1 pid=$2 test=$3 pipe=$4 before after rps args
  case $test in
    EVALSHA) args=(evalsha "$SHA" 1 "key:__rand_int__" v) ;;
    PING) args=(ping) ;;
    SET) args=(set "key:__rand_int__" xxx) ;;
    GET) args=(get "key:__rand_int__") ;;
    INCR) args=(incr "counter:__rand_int__") ;;
    LPUSH) args=(lpush mylist xxx) ;;
    SADD) args=(sadd myset "element:__rand_int__") ;;
    HSET) args=(hset "myhash" "element:__rand_int__" xxx) ;;
    ZADD) args=(zadd myzset 1 "element:__rand_int__") ;;
    XADD) args=(xadd xs '*' f1 v1 f2 v2 f3 v3) ;;
    XRANGE10) args=(xrange gs - + count 10) ;;
    XREADGROUP) args=(xreadgroup group g c count 1 streams gs '>') ;;
    XACK) args=(xack gs g "__rand_int__-0") ;;
  esac
  before=$(cpu_ticks "$pid")
  rps=$("${CLIENT_CPU[@]}" redis-benchmark -p "$p" -n "$N" -c "$CLIENTS" -P "$pipe" -r 100000 -q --csv "${args[@]}" 2>/dev/null |
    tail -1 | awk -F'"' '{print $4}')
  after=$(cpu_ticks "$pid")
  local hz
  hz=$(getconf CLK_TCK)
  python3 -c "print('%.0f %.3f' % (float('$rps' or 0), ($after-$before)*1e6/$hz/$N))"
}

start redis redis-server
start ours "$VBIN"
SERVERS=(redis ours)
if [ -n "$BASELINE" ]; then
  start base "$BASELINE"
  SERVERS=(redis base ours)
fi
# The stream the XREADGROUP rows consume: one entry per request of every run.
FILL=$((N * ROUNDS * $(echo $PIPELINES | wc -w) + 1000))
python3 -c "
import sys
w = sys.stdout.write
for i in range(1, $FILL + 1):
    id = '%d-0' % i
    w('*9\r\n\$4\r\nXADD\r\n\$2\r\ngs\r\n\$%d\r\n%s\r\n' % (len(id), id) + '\$2\r\nf1\r\n\$2\r\nv1\r\n\$2\r\nf2\r\n\$2\r\nv2\r\n\$2\r\nf3\r\n\$2\r\nv3\r\n')
" >"$TMP/gs.resp"
for s in "${SERVERS[@]}"; do
  eval "p=\$PORT_$s"
  SHA=$(redis-cli -p "$p" script load "redis.call('set', KEYS[1], ARGV[1]) return 1")
  case " $TESTS " in *" X"*)
    redis-cli -p "$p" --pipe <"$TMP/gs.resp" >/dev/null
    redis-cli -p "$p" xgroup create gs g 0 >/dev/null ;;
  esac
done

printf '%-10s %3s' test P
for s in "${SERVERS[@]}"; do printf ' %12s %9s' "$s rps" "$s us"; done
printf ' %8s\n' "ours/red"
for pipe in $PIPELINES; do
  for test in $TESTS; do
    declare -A best_us=() best_rps=()
    for _ in $(seq "$ROUNDS"); do
      for s in "${SERVERS[@]}"; do
        eval "p=\$PORT_$s pid=\$PID_$s"
        read -r rps us < <(run "$p" "$pid" "$test" "$pipe")
        if [ -z "${best_us[$s]:-}" ] || python3 -c "import sys; sys.exit(0 if $us < ${best_us[$s]} else 1)"; then
          best_us[$s]=$us best_rps[$s]=$rps
        fi
      done
    done
    printf '%-10s %3s' "$test" "$pipe"
    for s in "${SERVERS[@]}"; do printf ' %12s %9s' "${best_rps[$s]}" "${best_us[$s]}"; done
    python3 -c "print(' %8.2f' % (${best_us[ours]} / ${best_us[redis]}))"
    unset best_us best_rps
  done
done
