#!/usr/bin/env python3
"""Replication lag probe (benches/compare-replication.sh): until SIGINT, every 10 ms write
`lagprobe = <n>` to the primary and time until the replica returns it; sample the byte lag
(primary master_repl_offset - replica slave_repl_offset) as well. Prints
"p50ms p99ms p50bytes p99bytes"."""
import signal
import socket
import sys
import time


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.f = self.s.makefile("rb")

    def call(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.s.sendall(out)
        line = self.f.readline()
        if line[:1] == b"$":
            n = int(line[1:])
            return None if n < 0 else self.f.read(n + 2)[:-2]
        return line[1:].strip()


def offset(conn, name):
    text = conn.call("INFO", "replication").decode()
    for line in text.splitlines():
        if line.startswith(name + ":"):
            return int(line.split(":")[1])
    return 0


def pct(values, p):
    if not values:
        return 0
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


def main():
    primary, replica = Conn(int(sys.argv[1])), Conn(int(sys.argv[2]))
    stop = []
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    lags, bytes_lag = [], []
    n = 0
    while not stop:
        n += 1
        primary.call("SET", "lagprobe", n)
        t0 = time.time()
        while replica.call("GET", "lagprobe") != str(n).encode() and not stop:
            pass
        if not stop:
            lags.append((time.time() - t0) * 1000)
        bytes_lag.append(max(0, offset(primary, "master_repl_offset") - offset(replica, "slave_repl_offset")))
        time.sleep(0.01)
    print("%.2f %.2f %d %d" % (pct(lags, 0.5), pct(lags, 0.99), pct(bytes_lag, 0.5), pct(bytes_lag, 0.99)))


if __name__ == "__main__":
    main()
