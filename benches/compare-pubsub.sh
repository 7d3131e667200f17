#!/usr/bin/env bash
# PUBLISH throughput with 1 and with 50 subscribers, redis-server vs vermilion-server in the
# same run. Subscribers are examples/subdrain.rs threads (64 KB reads, no parsing): with 50
# redis-cli processes parsing and printing every message the row measured them, not the
# server (Vermilion's CPU per PUBLISH was half Redis's while the ratio swung 0.64-1.3).
# Each row is the best of ROUNDS alternating runs per server (the VM's noise is +-10%).
# With PIN=1 (benches/common.sh) both servers run on CPU 1, and redis-benchmark, the
# subscribers and txbench on CPU 0 (unpinned, the 1-subscriber P=16 row read 0.86-1.28).
# After the throughput rows, the delivery latency of a probe channel under the
# 50-subscriber load (examples/publat).
# Usage: benches/compare-pubsub.sh [requests] [clients] [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100000}
CLIENTS=${2:-50}
ROUNDS=${3:-3}
cargo build --release --quiet --bin vermilion-server --example txbench --example subdrain --example publat
. benches/common.sh
RPORT=$(port); VPORT=$(port)
WORK=$(mktemp -d)
setsid "${SERVER_CPU[@]}" redis-server --port "$RPORT" --save '' --appendonly no --dir "$WORK" >/dev/null 2>&1 &
RPID=$!
setsid "${SERVER_CPU[@]}" target/release/vermilion-server --port "$VPORT" --save '' --appendonly no --dir "$WORK" >/dev/null 2>&1 &
VPID=$!
SUBS=()
trap 'kill $RPID $VPID "${SUBS[@]}" 2>/dev/null; rm -rf "$WORK"' EXIT
for p in "$RPORT" "$VPORT"; do
  ready "$p"
done
# rps_at PIPELINE PORT: PUBLISH requests per second.
# Pipelined rows run ten times the requests (100,000 took under 100 ms at -P 16).
rps_at() { { "${CLIENT_CPU[@]}" redis-benchmark -p "$2" -c "$CLIENTS" -n "$(( $1 == 1 ? N : N * 10 ))" -P "$1" --csv PUBLISH bench-channel hello-subscribers 2>/dev/null || true; } | awk -F'"' 'NR==2 {print $4}'; }
printf '%-12s %4s %12s %12s %7s\n' subscribers P redis vermilion ratio
have=0
for subs in 1 50; do
  for p in "$RPORT" "$VPORT"; do
    "${CLIENT_CPU[@]}" target/release/examples/subdrain "$p" $((subs - have)) bench-channel &
    SUBS+=($!)
  done
  have=$subs
  for p in "$RPORT" "$VPORT"; do
    for _ in $(seq 100); do
      [ "$(redis-cli -p "$p" pubsub numsub bench-channel | tail -1)" = "$subs" ] && break
      sleep 0.05
    done
    got=$(redis-cli -p "$p" pubsub numsub bench-channel | tail -1)
    if [ "$got" != "$subs" ]; then
      echo "port $p has $got subscribers, not $subs" >&2
      exit 1
    fi
  done
  for pl in 1 16; do
    ROW_WIDTH=17 row "$(printf '%-12s %4s' "$subs" "$pl")" rps_at "$pl"
  done
done

# What a subscriber waits for its messages under that load: examples/publat publishes a
# timestamp every ms on a channel of its own and its subscriber takes the time to arrival,
# for 1.5 s of the 50-subscriber P=1 load (the server keeps pushes back for up to 200 us
# while requests keep coming: this shows what that costs, or saves, in delivery time).
echo
echo "delivery latency (us) during the 50-subscriber P=1 load: messages p50 p99 p99.9 max"
for p in "$RPORT" "$VPORT"; do
  "${CLIENT_CPU[@]}" redis-benchmark -p "$p" -c "$CLIENTS" -n "$N" -P 1 -q PUBLISH bench-channel hello-subscribers >/dev/null 2>&1 &
  load=$!
  sleep 0.2
  lat=$("${CLIENT_CPU[@]}" target/release/examples/publat "$p" 1.5 1000 || true)
  wait "$load" || true
  printf '%-12s %s\n' "$([ "$p" = "$RPORT" ] && echo redis || echo vermilion)" "$lat"
done

echo
printf '%-22s %12s %12s %7s\n' test redis vermilion ratio
txbench() { "${CLIENT_CPU[@]}" target/release/examples/txbench "$1" 50 2000; }
row "multi_5_incr_exec tx/s" txbench
