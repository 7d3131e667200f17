#!/usr/bin/env python3
"""Generates src/config/params.rs: every parameter redis-server 7.0 knows, with its kind and
default, so any redis.conf loads and CONFIG GET/SET answer for all of them.

Usage: redis-cli -p PORT config get '*' | paste -d'\\t' - - | sort > /tmp/params.tsv
       python3 tools/gen_config_params.py /tmp/params.tsv
"""
import sys

I64 = 9223372036854775807
I32 = 2147483647

ALIASES = {
    "slaveof": "replicaof", "slave-announce-ip": "replica-announce-ip", "slave-announce-port": "replica-announce-port",
    "slave-ignore-maxmemory": "replica-ignore-maxmemory", "slave-lazy-flush": "replica-lazy-flush",
    "slave-priority": "replica-priority", "slave-read-only": "replica-read-only",
    "slave-serve-stale-data": "replica-serve-stale-data", "min-slaves-max-lag": "min-replicas-max-lag",
    "min-slaves-to-write": "min-replicas-to-write", "repl-ping-slave-period": "repl-ping-replica-period",
    "lua-time-limit": "busy-reply-threshold", "hash-max-ziplist-entries": "hash-max-listpack-entries",
    "hash-max-ziplist-value": "hash-max-listpack-value", "list-max-ziplist-size": "list-max-listpack-size",
    "zset-max-ziplist-entries": "zset-max-listpack-entries", "zset-max-ziplist-value": "zset-max-listpack-value",
    "cluster-slave-no-failover": "cluster-replica-no-failover",
    "cluster-slave-validity-factor": "cluster-replica-validity-factor",
}
# Memory values (units allowed) with the bounds redis-server 7.0.15 reports in its errors
# (probed: CONFIG SET of a huge and a negative value). maxmemory-clients also takes a percent.
U64 = 18446744073709551615
MEMORY = {"maxmemory": (0, U64), "cluster-link-sendbuf-limit": (0, U64), "maxmemory-clients": (0, U64),
          "proto-max-bulk-len": (1048576, I64), "client-query-buffer-limit": (1048576, I64),
          "repl-backlog-size": (1, I64), "active-defrag-ignore-bytes": (1, I64),
          "auto-aof-rewrite-min-size": (0, I64), "stream-node-max-bytes": (0, I64), "hll-sparse-max-bytes": (0, I64),
          "hash-max-listpack-value": (0, I64), "zset-max-listpack-value": (0, I64)}
ENUMS = {
    "appendfsync": ["everysec", "always", "no"],
    "maxmemory-policy": ["volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "allkeys-lru",
                         "allkeys-lfu", "allkeys-random", "noeviction"],
    "loglevel": ["debug", "verbose", "notice", "warning"],
    "supervised": ["upstart", "systemd", "auto", "no"],
    "repl-diskless-load": ["disabled", "on-empty-db", "swapdb"],
    "shutdown-on-sigint": ["default", "save", "nosave", "now", "force"],
    "shutdown-on-sigterm": ["default", "save", "nosave", "now", "force"],
    "propagation-error-behavior": ["ignore", "panic", "panic-on-replicas"],
    "enable-debug-command": ["no", "yes", "local"],
    "enable-module-command": ["no", "yes", "local"],
    "enable-protected-configs": ["no", "yes", "local"],
    "cluster-preferred-endpoint-type": ["ip", "hostname", "unknown-endpoint"],
    "oom-score-adj": ["no", "yes", "relative", "absolute"],
    "acl-pubsub-default": ["allchannels", "resetchannels"],
    "syslog-facility": ["user", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7"],
    "sanitize-dump-payload": ["no", "yes", "clients"],
    "tls-auth-clients": ["no", "yes", "optional"],
}
# Integer bounds as redis-server 7.0.15 reports them (the rest: 0 to I64).
RANGES = {"port": (0, 65535), "tls-port": (0, 65535), "databases": (1, I32), "hz": (0, I32),
          "list-max-listpack-size": (-I32 - 1, I32), "maxclients": (1, 4294967295),
          "slowlog-log-slower-than": (-1, I64), "timeout": (0, I32),
          "active-defrag-cycle-max": (1, 99), "active-defrag-cycle-min": (1, 99), "active-defrag-max-scan-fields": (1, I64),
          "active-defrag-threshold-lower": (0, 1000), "active-defrag-threshold-upper": (0, 1000),
          "active-expire-effort": (1, 10), "auto-aof-rewrite-percentage": (0, I32),
          "cluster-announce-bus-port": (0, 65535), "cluster-announce-port": (0, 65535),
          "cluster-announce-tls-port": (0, 65535), "cluster-migration-barrier": (0, I32),
          "cluster-replica-validity-factor": (0, I32), "lfu-decay-time": (0, I32), "lfu-log-factor": (0, I32),
          "list-compress-depth": (0, I32), "maxmemory-eviction-tenacity": (0, 100), "maxmemory-samples": (1, I32),
          "min-replicas-max-lag": (0, I32), "min-replicas-to-write": (0, I32), "repl-diskless-sync-delay": (0, I32),
          "repl-diskless-sync-max-replicas": (0, I32), "repl-ping-replica-period": (1, I32), "repl-timeout": (1, I32),
          "replica-announce-port": (0, 65535), "replica-priority": (0, I32), "shutdown-timeout": (0, I32),
          "tcp-keepalive": (0, I32), "tls-session-cache-size": (0, I32), "tls-session-cache-timeout": (0, I32),
          "key-load-delay": (-I32 - 1, I32), "rdb-key-save-delay": (-I32 - 1, I32),
          "loading-process-events-interval-bytes": (1024, I32)}
IMMUTABLE = {"databases", "daemonize", "io-threads", "io-threads-do-reads", "pidfile", "unixsocket",
             "unixsocketperm", "logfile", "syslog-enabled", "syslog-ident", "syslog-facility", "supervised",
             "cluster-enabled", "cluster-config-file", "aclfile", "always-show-logo", "disable-thp",
             "enable-debug-command", "enable-module-command", "enable-protected-configs", "appenddirname",
             "appendfilename", "tcp-backlog", "cluster-port", "set-proc-title",
             "server_cpulist", "bio_cpulist", "aof_rewrite_cpulist", "bgsave_cpulist", "rdbchecksum",
             "socket-mark-id", "replicaof"}
DEFAULTS = {"appendonly": "yes", "bind": "127.0.0.1 -::1", "enable-debug-command": "local", "daemonize": "no", "dir": "", "port": "6379",
            "save": "3600 1 300 100 60 10000", "pidfile": "", "client-output-buffer-limit":
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"}


def rs(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


# Hidden in CONFIG GET * but settable (Redis's test knobs): key-load-delay slows loading (us
# per record) so tests can watch a load in progress; rdb-key-save-delay is accepted and has
# no effect (there is no RDB save).
HIDDEN = ["key-load-delay\t0", "loading-process-events-interval-bytes\t2097152", "rdb-key-save-delay\t0"]
# Vermilion's own parameters (extensions Redis does not have): all-or-nothing scripts
# (docs/SCRIPTING.md, "All-or-nothing scripts").
VERMILION = ["script-rollback\tno", "script-rollback-max-memory\t67108864"]
MEMORY["script-rollback-max-memory"] = (0, I64)

rows = []
for line in list(open(sys.argv[1])) + HIDDEN + VERMILION:
    name, _, value = line.rstrip("\n").partition("\t")
    if name in ALIASES:
        continue
    value = DEFAULTS.get(name, value)
    if name in ENUMS:
        kind = "Kind::Enum(&[%s])" % ", ".join(rs(v) for v in ENUMS[name])
    elif name in MEMORY:
        kind = "Kind::Memory(%d, %d)" % MEMORY[name]
    elif value in ("yes", "no"):
        kind = "Kind::Bool"
    elif value.lstrip("-").isdigit() and name not in ("save",):
        lo, hi = RANGES.get(name, (0, I64))
        kind = "Kind::Int(%d, %d)" % (lo, hi)
    else:
        kind = "Kind::Str"
    aliases = [a for a, c in ALIASES.items() if c == name]
    rows.append("    Param { name: %s, aliases: &[%s], kind: %s, default: %s, mutable: %s },"
                % (rs(name), ", ".join(rs(a) for a in aliases), kind, rs(value), "false" if name in IMMUTABLE else "true"))

names = [r.split('"')[1] for r in rows]


def variant(name):
    return "".join(w[:1].upper() + w[1:] for w in name.replace("_", "-").split("-"))


assert len({variant(n) for n in names}) == len(names), "two parameters map to one variant"
out = ["//! Every configuration parameter redis-server 7.0 knows, with its kind and default.",
       "//! Generated by tools/gen_config_params.py; edit that script, not this file.",
       "",
       "use super::{Kind, Param};",
       "",
       "#[rustfmt::skip]",
       "pub static PARAMS: &[Param] = &["] + rows + ["];", "",
       "/// Every parameter, for code that reads one: `config.get(P::Maxmemory)`. A misspelled",
       "/// name does not compile; `p as usize` is the parameter's index in `PARAMS`.",
       "#[derive(Debug, Clone, Copy, PartialEq, Eq)]",
       "#[rustfmt::skip]",
       "pub enum P {"] + ["    %s = %d," % (variant(n), i) for i, n in enumerate(names)] + ["}", ""]
open("src/config/params.rs", "w").write("\n".join(out))
print(len(rows), "params")
