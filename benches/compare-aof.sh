#!/usr/bin/env bash
# Durable-log throughput, redis-server vs vermilion-server in the same run, both with
# `appendonly yes` and the same `appendfsync` (issue 6's rows), 50 clients:
#   set, incr      redis-benchmark -t
#   evalsha_incr   EVALSHA of a script doing one INCR
#   ticket_hold    data/scripts/ticket_hold.lua for random customers
#   multi_5_incr   MULTI, 5 x INCR, EXEC (examples/txbench: redis-benchmark cannot send one)
# Usage: benches/compare-aof.sh [requests] [rounds] [policies...]
# Each row runs `rounds` times per server, alternating; the best of each is reported.
# Servers and client are pinned as benches/common.sh says (PIN=0 to turn it off).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100000}
ROUNDS=${2:-3}
shift $(( $# > 2 ? 2 : $# )) || true
POLICIES=("$@")
[ ${#POLICIES[@]} -eq 0 ] && POLICIES=(everysec always)
CLIENTS=50
cargo build --release --quiet --bin vermilion-server --example txbench
. benches/common.sh
WORK=$(mktemp -d)
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null; rm -rf "$WORK"' EXIT

rps() {
  local p=$1 n=$2; shift 2
  { "${CLIENT_CPU[@]}" redis-benchmark -p "$p" -c "$CLIENTS" -n "$n" -r 100000 --csv "$@" 2>/dev/null || true; } | awk -F'"' 'NR==2 {print $4}'
}
t_set() { rps "$1" "$N" -t set; }
t_incr() { rps "$1" "$N" -t incr; }
t_evalsha() { local sha; sha=$(redis-cli -p "$1" script load "return redis.call('incr', KEYS[1])"); rps "$1" "$N" EVALSHA "$sha" 1 counter; }
t_hold() { local sha; sha=$(redis-cli -p "$1" script load "$(cat data/scripts/ticket_hold.lua)"); rps "$1" "$N" EVALSHA "$sha" 3 'event:{1}' 'event:{1}:holds' 'event:{1}:hold_qty' 'cust:__rand_int__' 2 600000 1; }
t_multi() { "${CLIENT_CPU[@]}" target/release/examples/txbench "$1" "$CLIENTS" $((N / CLIENTS / 5)); }

printf '%-22s %12s %12s %7s\n' test redis vermilion ratio
for POLICY in "${POLICIES[@]}"; do
  RPORT=$(port); VPORT=$(port)
  mkdir -p "$WORK/r-$POLICY" "$WORK/v-$POLICY"
  setsid "${SERVER_CPU[@]}" redis-server --port "$RPORT" --save '' --appendonly yes --appendfsync "$POLICY" --dir "$WORK/r-$POLICY" >/dev/null 2>&1 &
  PIDS+=($!)
  setsid "${SERVER_CPU[@]}" target/release/vermilion-server --port "$VPORT" --appendonly yes --appendfsync "$POLICY" --dir "$WORK/v-$POLICY" >/dev/null 2>&1 &
  PIDS+=($!)
  for p in "$RPORT" "$VPORT"; do
    ready "$p"
    redis-cli -p "$p" hset 'event:{1}' available 1000000000 held 0 reserved 0 sold 0 >/dev/null
  done
  row "set ($POLICY)" t_set
  row "incr ($POLICY)" t_incr
  row "evalsha_incr ($POLICY)" t_evalsha
  row "ticket_hold ($POLICY)" t_hold
  row "multi_5_incr ($POLICY)" t_multi
  redis-cli -p "$RPORT" shutdown nosave >/dev/null 2>&1 || true
  redis-cli -p "$VPORT" shutdown nosave >/dev/null 2>&1 || true
done
