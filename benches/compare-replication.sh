#!/usr/bin/env bash
# Replication, redis-server vs vermilion-server in the same run (issue 7):
#  1. primary throughput with two replicas attached (appendonly yes, appendfsync everysec on
#     every server), 50 clients: SET and EVALSHA (one INCR); the best of `rounds` each;
#  2. replication lag while redis-benchmark SETs run: a probe writes a timestamp to the
#     primary every 10 ms and times until the first replica shows it (p50 / p99 ms), and
#     the byte lag (primary offset - replica offset) sampled every 10 ms (p50 / p99);
#  3. full sync of KEYS keys: REPLICAOF to master_link_status:up on a fresh replica.
# Usage: benches/compare-replication.sh [requests] [rounds] [keys]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200000}
ROUNDS=${2:-3}
KEYS=${3:-1000000}
CLIENTS=50
cargo build --release --quiet --bin vermilion-server
. benches/common.sh
WORK=$(mktemp -d)
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null; rm -rf "$WORK"' EXIT

# start KIND NAME PORT [args...]
start() {
  local kind=$1 name=$2 p=$3; shift 3
  mkdir -p "$WORK/$name"
  if [ "$kind" = redis ]; then
    setsid redis-server --port "$p" --save '' --appendonly yes --appendfsync everysec --repl-diskless-sync-delay 0 \
      --dir "$WORK/$name" "$@" >"$WORK/$name/log" 2>&1 &
  else
    setsid target/release/vermilion-server --port "$p" --appendonly yes --appendfsync everysec --dir "$WORK/$name" "$@" \
      >"$WORK/$name/log" 2>&1 &
  fi
  PIDS+=($!)
  ready "$p"
}
up() { # waits until the replica on $1 has its link up; prints the seconds it took since $2
  for _ in $(seq 60000); do
    redis-cli -p "$1" info replication 2>/dev/null | grep -q 'master_link_status:up' && break
    sleep 0.005
  done
  python3 -c "import time; print('%.3f' % (time.time() - $2))"
}
rps() {
  local p=$1; shift
  { redis-benchmark -p "$p" -c "$CLIENTS" -n "$N" -r 100000 --csv "$@" 2>/dev/null || true; } | awk -F'"' 'NR==2 {print $4}'
}
t_set() { rps "$1" -t set; }
t_evalsha() { local sha; sha=$(redis-cli -p "$1" script load "return redis.call('incr', KEYS[1])"); rps "$1" EVALSHA "$sha" 1 counter; }

RP=$(port); R1=$(port); R2=$(port); VP=$(port); V1=$(port); V2=$(port)
start redis rp "$RP"; start redis r1 "$R1"; start redis r2 "$R2"
start vermilion vp "$VP"; start vermilion v1 "$V1"; start vermilion v2 "$V2"
for r in "$R1" "$R2"; do redis-cli -p "$r" replicaof 127.0.0.1 "$RP" >/dev/null; done
for v in "$V1" "$V2"; do redis-cli -p "$v" replicaof 127.0.0.1 "$VP" >/dev/null; done
for r in "$R1" "$R2" "$V1" "$V2"; do up "$r" "$(date +%s.%N)" >/dev/null; done

printf '%-34s %12s %12s %7s\n' test redis vermilion ratio
RPORT=$RP VPORT=$VP ROW_WIDTH=34
row "set, 2 replicas (rps)" t_set
row "evalsha_incr, 2 replicas (rps)" t_evalsha

# Lag under a SET load.
lag() { # primary replica -> "p50ms p99ms p50bytes p99bytes"
  local p=$1 r=$2
  python3 benches/repl_lag.py "$p" "$r" >"$WORK/lag" &
  local probe=$!
  rps "$p" -t set >/dev/null
  kill -INT "$probe" 2>/dev/null || true
  wait "$probe" 2>/dev/null || true
  cat "$WORK/lag"
}
read -r rl50 rl99 rb50 rb99 < <(lag "$RP" "$R1")
read -r vl50 vl99 vb50 vb99 < <(lag "$VP" "$V1")
printf '%-34s %12s %12s\n' "lag p50 / p99 (ms)" "$rl50 / $rl99" "$vl50 / $vl99"
printf '%-34s %12s %12s\n' "lag p50 / p99 (bytes)" "$rb50 / $rb99" "$vb50 / $vb99"

# Full sync of KEYS keys.
python3 - "$KEYS" >"$WORK/keys.resp" <<'PY'
import sys
out = sys.stdout.buffer
for i in range(int(sys.argv[1])):
    k, v = b"key:%d" % i, b"value-%d" % i
    out.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
PY
for p in "$RP" "$VP"; do redis-cli -p "$p" --pipe <"$WORK/keys.resp" >/dev/null; done
R3=$(port); V3=$(port)
start redis r3 "$R3"; start vermilion v3 "$V3"
t0=$(date +%s.%N); redis-cli -p "$R3" replicaof 127.0.0.1 "$RP" >/dev/null; rs=$(up "$R3" "$t0")
t0=$(date +%s.%N); redis-cli -p "$V3" replicaof 127.0.0.1 "$VP" >/dev/null; vs=$(up "$V3" "$t0")
python3 -c "r=$rs; v=$vs; print('%-34s %12.3f %12.3f %7.2f' % ('full sync of $KEYS keys (s)', r, v, r/v if v else 0))"
echo "(ratio: vermilion/redis for rps, redis/vermilion for the full sync time: above 1 is faster)"
