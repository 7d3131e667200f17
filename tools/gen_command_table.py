#!/usr/bin/env python3
"""Generates src/spec/table.rs (the command table: data only) and src/commands/handlers.rs
(the handlers by command id) from tools/commands.txt and a running redis-server 7.0.

Usage: redis-server --port 7777 --daemonize yes; python3 tools/gen_command_table.py 7777

Redis describes its own commands (COMMAND INFO, COMMAND DOCS); taking arity, flags, key
positions, ACL categories, tips and key specs from it keeps our table honest. Handlers are
named `module::name` with `|` and `-` turned into `_` (Rust keywords get a trailing `_`).
Words starting with `+` in commands.txt are Vermilion's own traits of a command (see
`Trait` in src/spec/entry.rs): what used to be lists of command names in the executor.
"""
import socket
import sys

PORT = int(sys.argv[1]) if len(sys.argv) > 1 else 7777
KEYWORDS = {"type", "move", "copy_", "match", "ref"}


def send(sock, *args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode() if isinstance(a, str) else a
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    sock.sendall(out)
    return read(sock.makefile("rb"))


def read(f):
    line = f.readline()
    t, rest = line[:1], line[1:-2]
    if t == b"+":
        return rest.decode()
    if t == b"-":
        raise RuntimeError(rest.decode())
    if t == b":":
        return int(rest)
    if t == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)[:-2]
        return data.decode()
    if t == b"*":
        n = int(rest)
        return None if n < 0 else [read(f) for _ in range(n)]
    raise RuntimeError("unexpected %r" % line)


def pairs(lst):
    return {lst[i]: lst[i + 1] for i in range(0, len(lst), 2)}


def rust_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def doc(v):
    if isinstance(v, int):
        return "Doc::Int(%d)" % v
    if isinstance(v, str):
        return "Doc::Str(%s)" % rust_str(v)
    if isinstance(v, list):
        # Key-spec maps arrive as flat lists with string keys in even places.
        if len(v) % 2 == 0 and v and all(isinstance(v[i], str) for i in range(0, len(v), 2)) and v[0] in (
            "flags", "notes", "begin_search", "find_keys", "type", "spec", "index", "keyword",
            "startfrom", "lastkey", "keystep", "limit", "keynumidx", "firstkey"):
            # An empty `spec` is an empty map (RESP3 `%0`), not an empty list.
            return "Doc::Map(&[%s])" % ", ".join(
                "(%s, %s)" % (rust_str(v[i]), "Doc::Map(&[])" if v[i] == "spec" and v[i + 1] == [] else doc(v[i + 1]))
                for i in range(0, len(v), 2))
        return "Doc::Arr(&[%s])" % ", ".join(doc(x) for x in v)
    raise RuntimeError(v)


FLAGS = {
    "write": "Write", "readonly": "ReadOnly", "denyoom": "DenyOom", "module": "Module", "admin": "Admin",
    "pubsub": "PubSub", "noscript": "NoScript", "blocking": "Blocking", "loading": "Loading", "stale": "Stale",
    "skip_monitor": "SkipMonitor", "skip_slowlog": "SkipSlowlog", "asking": "Asking", "fast": "Fast",
    "no_auth": "NoAuth", "may_replicate": "MayReplicate", "no_mandatory_keys": "NoMandatoryKeys",
    "allow_busy": "AllowBusy", "no_multi": "NoMulti", "movablekeys": "MovableKeys",
    "no_async_loading": "NoAsyncLoading",
}
# CMD_MAY_REPLICATE, which COMMAND INFO hides on purpose (Redis 7.0's command JSON files):
# CLIENT PAUSE WRITE holds these, and read-only scripts may not call them.
MAY_REPLICATE = {"eval", "evalsha", "fcall", "function|delete", "function|flush", "function|load",
                 "function|restore", "pfcount", "publish", "script|flush", "script|load", "spublish"}
GROUPS = {
    "generic": "Generic", "string": "String", "list": "List", "set": "Set", "sorted-set": "SortedSet",
    "hash": "Hash", "pubsub": "PubSub", "transactions": "Transactions", "connection": "Connection",
    "server": "Server", "scripting": "Scripting", "hyperloglog": "HyperLogLog", "cluster": "Cluster",
    "geo": "Geo", "stream": "Stream", "bitmap": "Bitmap",
}


def typed_key_spec(k):
    """A key spec as typed data (`KeySpec`), for the code that follows it."""
    k = pairs(k)
    flags = ", ".join(rust_str(f) for f in k.get("flags", []))
    begin, find = pairs(k["begin_search"]), pairs(k["find_keys"])
    bspec, fspec = pairs(begin["spec"]) if begin.get("spec") else {}, pairs(find["spec"]) if find.get("spec") else {}
    if begin["type"] == "index":
        b = "Begin::Index(%d)" % bspec["index"]
    elif begin["type"] == "keyword":
        b = "Begin::Keyword { keyword: %s, startfrom: %d }" % (rust_str(bspec["keyword"]), bspec["startfrom"])
    else:
        b = "Begin::Unknown"
    if find["type"] == "range":
        f = "Find::Range { lastkey: %d, keystep: %d, limit: %d }" % (fspec["lastkey"], fspec["keystep"], fspec["limit"])
    elif find["type"] == "keynum":
        f = "Find::Keynum { keynumidx: %d, firstkey: %d, keystep: %d }" % (fspec["keynumidx"], fspec["firstkey"], fspec["keystep"])
    else:
        f = "Find::Unknown"
    return "KeySpec { flags: &[%s], begin: %s, find: %s }" % (flags, b, f)


def handler_name(module, name):
    if (module, name) in HANDLERS:
        return HANDLERS[(module, name)]
    fn = name.replace("|", "_").replace("-", "_")
    if fn in ("type", "move", "match"):
        fn += "_"
    return "%s::%s" % (module, fn)


def entry(sock, module, name, info, docs, subs, indent):
    pad = " " * indent
    (cname, arity, flags, first, last, step, acl, tips, key_specs, _subcmds) = info
    global NEXT_ID
    my_id = NEXT_ID
    NEXT_ID += 1
    d = pairs(docs) if docs else {}
    if cname in MAY_REPLICATE:
        flags = list(flags) + ["may_replicate"]
    flag_list = ", ".join("Flag::" + FLAGS[f] for f in flags)
    head = "CommandSpec { id: %d, name: %s, arity: %d, flags: &[%s], first_key: %d, last_key: %d, key_step: %d," % (
        my_id, rust_str(cname), arity, flag_list, first, last, step)
    lines = [
        pad + head,
        pad + "    acl: &[%s], tips: &[%s]," % (", ".join(rust_str(a) for a in acl), ", ".join(rust_str(t) for t in tips)),
        pad + "    key_specs: &[%s]," % ", ".join(doc(k) for k in key_specs),
        pad + "    keys: &[%s]," % ", ".join(typed_key_spec(k) for k in key_specs),
        pad + "    group: Group::%s, summary: %s, since: %s," % (GROUPS[d.get("group", "server")], rust_str(d.get("summary", "")), rust_str(d.get("since", ""))),
        pad + "    complexity: %s, doc_flags: &[%s]," % (rust_str(d.get("complexity", "")), ", ".join(rust_str(f) for f in d.get("doc_flags", []))),
        pad + "    deprecated_since: %s, replaced_by: %s," % (rust_str(d.get("deprecated_since", "")), rust_str(d.get("replaced_by", ""))),
    ]
    if subs:
        own = (module, cname) in WANTED
        HANDLER_BY_ID.append((my_id, handler_name(module, cname) if own else "unknown_subcommand"))
    else:
        HANDLER_BY_ID.append((my_id, handler_name(module, cname)))
    traits = ", ".join("Trait::" + TRAITS[t] for t in TRAITS_OF.get((module, cname), []))
    lines.append(pad + "    traits: &[%s]," % traits)
    if subs:
        lines.append(pad + "    subcommands: &[")
        lines.extend(subs)
        lines.append(pad + "    ] },")
    else:
        lines.append(pad + "    subcommands: &[] },")
    return lines


WANTED = set()
HANDLERS = {}
TRAITS_OF = {}
HANDLER_BY_ID = []
NEXT_ID = 0
TRAITS = {
    "subscribed": "Subscribed",
    "not-queued": "NotQueued",
    "script-sorted": "ScriptSorted",
    "script-sorted-pairs": "ScriptSortedPairs",
    "script-random": "ScriptRandom",
    "script-deterministic": "ScriptDeterministic",
    "script-body": "ScriptBody",
    "script-sha": "ScriptSha",
    "script-function": "ScriptFunction",
    "no-key-tracking": "NoKeyTracking",
    "empties-databases": "EmptiesDatabases",
    "other-database": "OtherDatabase",
    "arbitrary-keys": "ArbitraryKeys",
    "runs-queue": "RunsQueue",
    "moves-key": "MovesKey",
    "pattern-keys": "PatternKeys",
}


def main():
    wanted = []
    for line in open("tools/commands.txt"):
        line = line.strip()
        if line and not line.startswith("#"):
            module, name, *rest = line.split()
            wanted.append((module, name))
            handler = [w for w in rest if not w.startswith("+")]
            TRAITS_OF[(module, name)] = [w[1:] for w in rest if w.startswith("+")]
            if handler:
                HANDLERS[(module, name)] = handler[0]
            WANTED.add((module, name))
    sock = socket.create_connection(("127.0.0.1", PORT))
    tops = []
    subs_of = {}
    for module, name in wanted:
        top = name.split("|")[0]
        if top not in [t for _, t in tops]:
            tops.append((module, top))
        if "|" in name:
            subs_of.setdefault(top, []).append((module, name))
    out = [
        "//! The command table: generated by tools/gen_command_table.py from tools/commands.txt and",
        "//! redis-server 7.0's own COMMAND INFO/DOCS. Do not edit by hand: edit the list, regenerate.",
        "//! One entry per command, a few lines each; rustfmt leaves the layout alone. Data only:",
        "//! the handlers are `commands::handlers::HANDLERS`, indexed by `id`.",
        "",
        "use super::{Begin, CommandSpec, Doc, Find, Flag, Group, KeySpec, Trait};",
        "",
        "#[rustfmt::skip]",
        "pub static COMMANDS: &[CommandSpec] = &[",
    ]
    for module, top in tops:
        info = send(sock, "COMMAND", "INFO", top)[0]
        docs = send(sock, "COMMAND", "DOCS", top)
        docs = pairs(docs)[top] if docs else None
        sub_lines = []
        if top in subs_of:
            sub_infos = {s[0]: s for s in info[9]}
            sub_docs = pairs(pairs(docs)["subcommands"]) if docs and "subcommands" in pairs(docs) else {}
            for smodule, sname in subs_of[top]:
                sub_lines.extend(entry(sock, smodule, sname, sub_infos[sname], sub_docs.get(sname), None, 8))
        out.extend(entry(sock, module, top, info, docs, sub_lines, 4))
    out.append("];")
    out.append("")
    out.append("/// Number of entries (commands and subcommands): ids are below this.")
    out.append("pub const COMMAND_IDS: usize = %d;" % NEXT_ID)
    open("src/spec/table.rs", "w").write("\n".join(out) + "\n")
    modules = sorted({m for m, _ in wanted})
    handlers = [
        "//! The handler of every command, by command id: generated by tools/gen_command_table.py",
        "//! with src/spec/table.rs. Do not edit by hand: edit tools/commands.txt, regenerate.",
        "",
        "use super::{",
        "    %s," % ", ".join(modules),
        "    CmdError, Ctx, Handler,",
        "};",
        "use crate::protocol::Reply;",
        "use crate::spec::COMMAND_IDS;",
        "use bytes::Bytes;",
        "",
        "/// The handler of a container command reached without a known subcommand.",
        "fn unknown_subcommand(_: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {",
        "    Ok(crate::spec::unknown_subcommand_error(args))",
        "}",
        "",
        "/// `HANDLERS[cmd.id]` runs `cmd`.",
        "#[rustfmt::skip]",
        "pub static HANDLERS: [Handler; COMMAND_IDS] = [",
    ]
    for i, h in sorted(HANDLER_BY_ID):
        handlers.append("    %s, // %d" % (h, i))
    handlers.append("];")
    open("src/commands/handlers.rs", "w").write("\n".join(handlers) + "\n")


main()
