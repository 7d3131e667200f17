#!/usr/bin/env bash
# Side-by-side throughput: redis-benchmark against redis-server and vermilion-server, started
# with the same settings (no persistence), in the same run. Prints requests/s and the ratio
# Vermilion/Redis per test, without pipelining and with -P 16.
#
# Usage: benches/compare-redis.sh [requests-per-test] [clients]
#   env: TESTS (default ping_inline,ping_mbulk,set,get,incr,mset), PIPELINES (default "1 16"),
#        VERMILION_ARGS (extra server arguments, e.g. "--io-threads 2"), ROUNDS (default 1)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200000}
CLIENTS=${2:-50}
TESTS=${TESTS:-ping_inline,ping_mbulk,set,get,incr,mset}
PIPELINES=${PIPELINES:-"1 16"}
ROUNDS=${ROUNDS:-1}
command -v redis-benchmark >/dev/null || { echo "redis-benchmark not found (apt-get install redis-tools)"; exit 1; }

cargo build --release --quiet --bin vermilion-server
. benches/common.sh
RPORT=$(port); VPORT=$(port)
WORK=$(mktemp -d)
setsid redis-server --port "$RPORT" --save '' --appendonly no --dir "$WORK" --daemonize no >"$WORK/redis.log" 2>&1 &
RPID=$!
# shellcheck disable=SC2086
setsid target/release/vermilion-server --port "$VPORT" --save '' --appendonly no --dir "$WORK" ${VERMILION_ARGS:-} >"$WORK/vermilion.log" 2>&1 &
VPID=$!
trap 'kill $RPID $VPID 2>/dev/null; rm -rf "$WORK"' EXIT
for p in "$RPORT" "$VPORT"; do
  ready "$p"
done

rps() { # port test pipeline
  redis-benchmark -p "$1" -c "$CLIENTS" -n "$N" -P "$3" -t "$2" --csv 2>/dev/null | awk -F'"' 'NR==2 {print $4}'
}

printf '%-12s %4s %14s %14s %8s\n' test P redis vermilion ratio
IFS=',' read -ra T <<<"$TESTS"
for p in $PIPELINES; do
  for t in "${T[@]}"; do
    r_sum=0; v_sum=0
    for _ in $(seq "$ROUNDS"); do
      r=$(rps "$RPORT" "$t" "$p"); v=$(rps "$VPORT" "$t" "$p")
      r_sum=$(python3 -c "print($r_sum + float('${r:-0}'))"); v_sum=$(python3 -c "print($v_sum + float('${v:-0}'))")
    done
    python3 -c "r=$r_sum/$ROUNDS; v=$v_sum/$ROUNDS; print('%-12s %4s %14.0f %14.0f %8.2f' % ('$t', '$p', r, v, v/r if r else 0))"
  done
done
