#!/usr/bin/env bash
# PUBLISH throughput with 1 and with 50 subscribers, redis-server vs vermilion-server in the
# same run (subscribers are redis-cli processes discarding what they receive).
# Usage: benches/compare-pubsub.sh [requests] [clients]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100000}
CLIENTS=${2:-50}
cargo build --release --quiet --bin vermilion-server
. benches/common.sh
RPORT=$(port); VPORT=$(port)
WORK=$(mktemp -d)
redis-server --port "$RPORT" --save '' --appendonly no --dir "$WORK" >/dev/null 2>&1 &
RPID=$!
target/release/vermilion-server --port "$VPORT" --save '' --appendonly no --dir "$WORK" >/dev/null 2>&1 &
VPID=$!
SUBS=()
trap 'kill $RPID $VPID "${SUBS[@]}" 2>/dev/null; rm -rf "$WORK"' EXIT
for p in "$RPORT" "$VPORT"; do
  ready "$p"
done
rps() { { redis-benchmark -p "$1" -c "$CLIENTS" -n "$N" -P "$2" --csv PUBLISH bench-channel hello-subscribers 2>/dev/null || true; } | awk -F'"' 'NR==2 {print $4}'; }
printf '%-12s %4s %12s %12s %7s\n' subscribers P redis vermilion ratio
have=0
for subs in 1 50; do
  while [ "$have" -lt "$subs" ]; do
    for p in "$RPORT" "$VPORT"; do
      redis-cli -p "$p" subscribe bench-channel >/dev/null 2>&1 &
      SUBS+=($!)
    done
    have=$((have + 1))
  done
  sleep 0.5
  for pl in 1 16; do
    r=$(rps "$RPORT" "$pl"); v=$(rps "$VPORT" "$pl")
    python3 -c "r=float('${r:-0}'); v=float('${v:-0}'); print('%-12s %4s %12.0f %12.0f %7.2f' % ('$subs', '$pl', r, v, v/r if r else 0))"
  done
done

echo
cargo build --release --quiet --example txbench
r=$(target/release/examples/txbench "$RPORT" 50 1000); v=$(target/release/examples/txbench "$VPORT" 50 1000)
printf '%-22s %12s %12s %7s\n' test redis vermilion ratio
python3 -c "r=float('${r:-0}'); v=float('${v:-0}'); print('%-22s %12.0f %12.0f %7.2f' % ('multi_5_incr_exec tx/s', r, v, v/r if r else 0))"
