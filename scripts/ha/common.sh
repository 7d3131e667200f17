# Sourced by the demos in scripts/ha: the release binary (built if missing) as VBIN, a
# temporary directory DIR (KEEP=1 keeps it), PIDS killed on exit, and `up PORT` waiting for a
# PONG.
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
VBIN=${VBIN:-target/release/vermilion-server}
[ -x "$VBIN" ] || cargo build --release --quiet --bin vermilion-server
VBIN=$(realpath -s "$VBIN")
DIR=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ "${KEEP:-0}" = 1 ]; then echo "files kept in $DIR"; else rm -rf "$DIR"; fi
}
trap cleanup EXIT
trap "exit 130" INT TERM
up() { for _ in $(seq 500); do redis-cli -p "$1" ping 2>/dev/null | grep -q PONG && return; sleep 0.02; done; echo "port $1 not up"; exit 1; }
