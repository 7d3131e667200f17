# Helpers shared by the comparison scripts (sourced, not run).

# A free TCP port on loopback.
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Waits until the server on port $1 answers PONG (not LOADING), up to 20 s.
ready() { for _ in $(seq 2000); do redis-cli -p "$1" ping 2>/dev/null | grep -q PONG && return; sleep 0.01; done; }

# The largest of its numeric arguments (empty ones ignored).
best() { python3 -c "import sys; print(max([float(x) for x in sys.argv[1:] if x] or [0]))" "$@"; }
