#!/usr/bin/env bash
# Data-type throughput and memory, side by side: redis-benchmark against redis-server and
# vermilion-server started with the same settings, in the same run.
#
# Rows: LPUSH, RPOP, LRANGE_100, SADD, SPOP, HSET, ZADD (redis-benchmark's own tests),
# ZRANGEBYSCORE on a 100k-member sorted set, GEOADD, and GEOSEARCH (radius 5 km) on a key of
# GEO_MEMBERS (default 1,000,000) members spread over a 100 km square.
# Then memory: 1,000,000 small hashes, 1,000,000 sorted-set members and 1,000,000 stream entries
# (XADD s * f1 v1 f2 v2 f3 v3: IDs from each server's clock), compared as the growth
# of Redis's used_memory and of Vermilion's resident set size (what the process really holds).
#
# Each row is the best of ROUNDS runs per server, alternating. With PIN=1 (the default on a
# machine of 2 cores or more, see benches/common.sh) both servers run on CPU 1 and
# redis-benchmark on CPU 0 (unpinned, single rows moved by 15-25% from run to run here).
#
# Usage: benches/compare-types.sh [requests-per-test] [clients]
#   env: PIPELINES (default "1 16"), ROUNDS (default 3), PIN, GEO_MEMBERS,
#        MEM_KEYS (default 1000000), SKIP_MEMORY=1
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100000}
CLIENTS=${2:-50}
PIPELINES=${PIPELINES:-"1 16"}
GEO_MEMBERS=${GEO_MEMBERS:-1000000}
MEM_KEYS=${MEM_KEYS:-1000000}
ROUNDS=${ROUNDS:-3}

cargo build --release --quiet --bin vermilion-server
. benches/common.sh
RPORT=$(port); VPORT=$(port)
WORK=$(mktemp -d)
start() {
  setsid "${SERVER_CPU[@]}" redis-server --port "$RPORT" --save '' --appendonly no --dir "$WORK" >"$WORK/redis.log" 2>&1 &
  RPID=$!
  setsid "${SERVER_CPU[@]}" target/release/vermilion-server --port "$VPORT" --save '' --appendonly no --dir "$WORK" >"$WORK/vermilion.log" 2>&1 &
  VPID=$!
  for p in "$RPORT" "$VPORT"; do
    ready "$p"
  done
}
stop() { kill "$RPID" "$VPID" 2>/dev/null || true; wait "$RPID" "$VPID" 2>/dev/null || true; }
trap 'stop; rm -rf "$WORK"' EXIT
start

rps() { # port pipeline args... (the last CSV row that is not -t lrange_100's LPUSH fill row)
  local p=$1 pl=$2 n=$N; shift 2
  # Pipelined rows run ten times the requests: at -P 16, 100,000 requests took 70-100 ms,
  # short enough for one scheduler hiccup to move a row by 5-10%. (Not GEOSEARCH, which
  # runs N/50 queries of milliseconds each: SCALE=1.)
  [ "$pl" = 1 ] || n=$((N * ${SCALE:-10}))
  { "${CLIENT_CPU[@]}" redis-benchmark -p "$p" -c "$CLIENTS" -n "$n" -P "$pl" -r 100000 --csv "$@" 2>/dev/null || true; } | awk -F'"' 'NR > 1 && $2 !~ /needed to benchmark/ {v = $4} END {print v}'
}
row() { # label pipeline args...
  local label=$1 pl=$2; shift 2
  local rs=() vs=() r v
  for _ in $(seq "$ROUNDS"); do
    rs+=("$(rps "$RPORT" "$pl" "$@")"); vs+=("$(rps "$VPORT" "$pl" "$@")")
  done
  r=$(best "${rs[@]}"); v=$(best "${vs[@]}")
  python3 -c "r=float('${r:-0}'); v=float('${v:-0}'); print('%-15s %4s %12.0f %12.0f %7.2f' % ('$label', '$pl', r, v, v/r if r else 0))"
}

# Data for the read rows, identical on both servers.
python3 - "$GEO_MEMBERS" >"$WORK/geo.resp" <<'PY'
import random, sys
random.seed(7)
n = int(sys.argv[1])
out = sys.stdout
for i in range(0, n, 100):
    args = [b"GEOADD", b"geobig"]
    for j in range(i, min(n, i + 100)):
        # A ~100 km square around (13.4, 52.5).
        lon = 13.4 + (random.random() - 0.5) * 1.47
        lat = 52.5 + (random.random() - 0.5) * 0.9
        args += [b"%.6f" % lon, b"%.6f" % lat, b"m%d" % j]
    out.write("*%d\r\n" % len(args))
    for a in args:
        out.write("$%d\r\n%s\r\n" % (len(a), a.decode()))
PY
for p in "$RPORT" "$VPORT"; do
  redis-cli -p "$p" --pipe <"$WORK/geo.resp" >/dev/null || echo "warning: errors loading geo data on port $p"
  redis-benchmark -p "$p" -c 50 -n 100000 -r 100000 -t zadd -q >/dev/null 2>&1
done

printf '%-15s %4s %12s %12s %7s\n' test P redis vermilion ratio
for pl in $PIPELINES; do
  for t in lpush rpop lrange_100 sadd spop hset zadd; do row "$t" "$pl" -t "$t"; done
  row zrangebyscore "$pl" ZRANGEBYSCORE myzset 0 100000 LIMIT 0 10
  row geoadd "$pl" GEOADD geo 13.__rand_int__ 52.__rand_int__ m:__rand_int__
  SCALE=1 N=$(( N / 50 )) row geosearch_5km "$pl" GEOSEARCH geobig FROMLONLAT 13.4 52.5 BYRADIUS 5 km
done

[ "${SKIP_MEMORY:-0}" = 1 ] && exit 0
echo
echo "memory for $MEM_KEYS small hashes (HSET key:i f v), $MEM_KEYS sorted-set members and $MEM_KEYS stream entries"
stop; start
used() { redis-cli -p "$RPORT" info memory | awk -F: '/^used_memory:/ {print $2+0}'; }
rss() { awk '{print $2 * 4096}' "/proc/$VPID/statm"; }
measure() { # label generator
  local label=$1 gen=$2 r0 v0 r1 v1
  python3 -c "$gen" "$MEM_KEYS" >"$WORK/mem.resp"
  r0=$(used); v0=$(rss)
  redis-cli -p "$RPORT" --pipe <"$WORK/mem.resp" >/dev/null
  redis-cli -p "$VPORT" --pipe <"$WORK/mem.resp" >/dev/null
  sleep 1
  # What each allocator holds unused is given back first (Redis: jemalloc's dirty pages),
  # so the figure does not depend on when a grown table's old buffer was returned.
  redis-cli -p "$RPORT" memory purge >/dev/null; redis-cli -p "$VPORT" memory purge >/dev/null
  r1=$(used); v1=$(rss)
  python3 -c "n=$MEM_KEYS; r=($r1-$r0)/n; v=($v1-$v0)/n; print('%-22s redis %6.1f B/item   vermilion %6.1f B/item   ratio %.2f' % ('$label', r, v, v/r))"
}
measure small_hashes 'import sys
n=int(sys.argv[1])
for i in range(n):
    k=b"key:%d"%i
    sys.stdout.write("*4\r\n$4\r\nHSET\r\n$%d\r\n%s\r\n$1\r\nf\r\n$1\r\nv\r\n"%(len(k),k.decode()))'
measure zset_members 'import sys
n=int(sys.argv[1])
for i in range(0,n,100):
    a=["ZADD","bigz"]
    for j in range(i,min(n,i+100)):
        a+=[str(j),"member:%d"%j]
    sys.stdout.write("*%d\r\n"%len(a)+"".join("$%d\r\n%s\r\n"%(len(x),x) for x in a))'
measure stream_entries 'import sys
n=int(sys.argv[1])
e="*9\r\n$4\r\nXADD\r\n$1\r\ns\r\n$1\r\n*\r\n$2\r\nf1\r\n$2\r\nv1\r\n$2\r\nf2\r\n$2\r\nv2\r\n$2\r\nf3\r\n$2\r\nv3\r\n"
sys.stdout.write(e*n)'
