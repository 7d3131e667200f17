# Helpers shared by the comparison scripts (sourced, not run).

# PIN=1 (the default on a machine of 2 cores or more): servers run on CPU 1 and the benchmark
# client on CPU 0 (`"${SERVER_CPU[@]}" redis-server ...`, `"${CLIENT_CPU[@]}" redis-benchmark
# ...`), so that the scheduler does not put the client on the server's core for part of one
# run only. PIN=0 runs everything unpinned.
if [ "$(nproc)" -ge 2 ]; then PIN=${PIN:-1}; else PIN=0; fi
SERVER_CPU=() CLIENT_CPU=()
if [ "$PIN" = 1 ]; then SERVER_CPU=(taskset -c 1); CLIENT_CPU=(taskset -c 0); fi

# A free TCP port on loopback.
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Waits until the server on port $1 answers PONG (not LOADING), up to 20 s.
ready() { for _ in $(seq 2000); do redis-cli -p "$1" ping 2>/dev/null | grep -q PONG && return; sleep 0.01; done; }

# The largest of its numeric arguments (empty ones ignored).
best() { python3 -c "import sys; print(max([float(x) for x in sys.argv[1:] if x] or [0]))" "$@"; }

# One comparison row: runs `"$@" PORT` ROUNDS times against redis ($RPORT) and vermilion
# ($VPORT), alternating, and prints the best of each and their ratio (label width
# $ROW_WIDTH, default 22).
row() {
  local name=$1; shift
  local rs=() vs=()
  for _ in $(seq "$ROUNDS"); do
    rs+=("$("$@" "$RPORT")")
    vs+=("$("$@" "$VPORT")")
  done
  local r v
  r=$(best "${rs[@]}"); v=$(best "${vs[@]}")
  python3 -c "r=$r; v=$v; print('%-${ROW_WIDTH:-22}s %12.0f %12.0f %7.2f' % ('$name', r, v, v/r if r else 0))"
}

# The release binary, built if missing, as an absolute path in VBIN.
release_binary() {
  VBIN=${VBIN:-target/release/vermilion-server}
  [ -x "$VBIN" ] || cargo build --release --quiet --bin vermilion-server
  VBIN=$(realpath "$VBIN")
}

# A scratch directory in TMP, and the servers started into PIDS stopped (and TMP removed) at exit.
scratch() {
  TMP=$(mktemp -d)
  PIDS=()
  trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"' EXIT
}

# A process's CPU time so far (utime + stime from /proc/PID/stat), in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
