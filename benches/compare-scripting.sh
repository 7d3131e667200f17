#!/usr/bin/env bash
# Scripting throughput, redis-server vs vermilion-server in the same run (issue 5's rows):
#   evalsha_incr  EVALSHA of a script doing one INCR
#   eval_incr     the same through EVAL (the SHA1 of the body and the cache lookup included)
#   ticket_hold   data/scripts/ticket_hold.lua for random customers
#   calls_100     a script doing 100 redis.call (INCR) per run
# Usage: benches/compare-scripting.sh [requests] [clients] [rounds]
# Each row runs `rounds` times per server, alternating; the best of each is reported.
# Servers and client are pinned as benches/common.sh says (PIN=0 to turn it off).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100000}
CLIENTS=${2:-50}
ROUNDS=${3:-3}
cargo build --release --quiet --bin vermilion-server
. benches/common.sh
RPORT=$(port); VPORT=$(port)
WORK=$(mktemp -d)
setsid "${SERVER_CPU[@]}" redis-server --port "$RPORT" --save '' --appendonly no --dir "$WORK" >/dev/null 2>&1 &
RPID=$!
setsid "${SERVER_CPU[@]}" target/release/vermilion-server --port "$VPORT" --appendonly no --dir "$WORK" >/dev/null 2>&1 &
VPID=$!
trap 'kill $RPID $VPID 2>/dev/null; rm -rf "$WORK"' EXIT
for p in "$RPORT" "$VPORT"; do
  ready "$p"
done

INCR="return redis.call('incr', KEYS[1])"
HUNDRED="for i = 1, 100 do redis.call('incr', KEYS[1]) end return redis.call('get', KEYS[1])"
HOLD=$(cat data/scripts/ticket_hold.lua)
for p in "$RPORT" "$VPORT"; do
  redis-cli -p "$p" hset 'event:{1}' available 1000000000 held 0 reserved 0 sold 0 >/dev/null
  SHA_INCR=$(redis-cli -p "$p" script load "$INCR")
  SHA_100=$(redis-cli -p "$p" script load "$HUNDRED")
  SHA_HOLD=$(redis-cli -p "$p" script load "$HOLD")
done

# rps PORT N ARGS... : requests per second reported by redis-benchmark.
rps() {
  local p=$1 n=$2; shift 2
  { "${CLIENT_CPU[@]}" redis-benchmark -p "$p" -c "$CLIENTS" -n "$n" -P "$PIPE" -r 100000 --csv "$@" 2>/dev/null || true; } | awk -F'"' 'NR==2 {print $4}'
}

row() {
  local name=$1 n=$2; shift 2
  local rs=() vs=()
  for _ in $(seq "$ROUNDS"); do
    rs+=("$(rps "$RPORT" "$n" "$@")")
    vs+=("$(rps "$VPORT" "$n" "$@")")
  done
  local r v
  r=$(best "${rs[@]}"); v=$(best "${vs[@]}")
  python3 -c "r=$r; v=$v; print('%-14s %4s %12.0f %12.0f %7.2f' % ('$name', '$PIPE', r, v, v/r if r else 0))"
}

printf '%-14s %4s %12s %12s %7s\n' test P redis vermilion ratio
for PIPE in 1 16; do
  # Pipelined rows run more requests: they finish ten times sooner.
  n=$N
  [ "$PIPE" = 1 ] || n=$((N * 4))
  row evalsha_incr "$n" EVALSHA "$SHA_INCR" 1 counter
  row eval_incr "$n" EVAL "$INCR" 1 counter
  row ticket_hold "$n" EVALSHA "$SHA_HOLD" 3 'event:{1}' 'event:{1}:holds' 'event:{1}:hold_qty' 'cust:__rand_int__' 2 600000 1
  row calls_100 $((n / 10)) EVALSHA "$SHA_100" 1 counter100
done
