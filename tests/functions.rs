//! Redis Functions (FUNCTION LOAD & co., FCALL, FCALL_RO) with the real binary: replies
//! compared byte for byte with redis-server 7.0 (errors, LIST, STATS, DUMP/RESTORE payloads in
//! both directions, RESP2 and RESP3), busy functions seen by a second client (FUNCTION KILL,
//! FUNCTION STATS, the BUSY texts), libraries surviving kill -9, a rewrite and DEBUG RELOAD,
//! and replicas receiving them by full synchronization and by the stream.

mod common;

use std::time::{Duration, Instant};

use common::diff::{Cmp, DiffPair, Resp};
use common::Server;
use redis::Connection;

const LIB: &str = r#"#!lua name=mylib
local function my_hset(keys, args)
  local hash = keys[1]
  return redis.call('HSET', hash, '_last_modified_', '1', unpack(args))
end
redis.register_function('my_hset', my_hset)
redis.register_function{function_name='my_get', callback=function(keys, args) return redis.call('GET', keys[1]) end, flags={'no-writes'}, description='reads a key'}
redis.register_function{function_name='fail', callback=function() return redis.call('INCR', 'str') end}
redis.register_function{function_name='oom_ok', callback=function() return 1 end, flags={'allow-oom', 'no-writes', 'allow-stale', 'no-cluster', 'allow-cross-slot-keys'}}"#;

const SPIN: &str = "#!lua name=spinlib\nredis.register_function{function_name='spin', callback=function() local i = 0 while true do i = i + 1 end end, flags={'no-writes'}}";

fn q<T: redis::FromRedisValue>(c: &mut Connection, parts: &[&str]) -> T {
    let mut cmd = redis::cmd(parts[0]);
    for p in &parts[1..] {
        cmd.arg(*p);
    }
    cmd.query(c).unwrap_or_else(|e| panic!("{parts:?}: {e}"))
}

fn err(c: &mut Connection, parts: &[&str]) -> String {
    let mut cmd = redis::cmd(parts[0]);
    for p in &parts[1..] {
        cmd.arg(*p);
    }
    match cmd.query::<redis::Value>(c) {
        Ok(v) => panic!("{parts:?} answered {v:?}, not an error"),
        Err(e) => e.to_string(),
    }
}

/// Sends `args` to both servers on connection `i` and asserts the replies are equal.
fn same(d: &mut DiffPair, args: &[&[u8]]) -> Vec<u8> {
    match d.check(args) {
        Ok(Ok(reply)) => reply.raw,
        Ok(Err(broken)) => panic!("{broken}"),
        Err(diff) => panic!("{diff}"),
    }
}

/// Every aggregate's elements sorted, recursively: Redis lists libraries and their functions
/// in hash order (seeded per process), so only the contents are comparable.
fn deep_sorted(r: &Resp) -> Resp {
    match r {
        Resp::Agg(t, items) => {
            let mut items: Vec<Resp> = items.iter().map(deep_sorted).collect();
            items.sort();
            Resp::Agg(*t, items)
        }
        other => other.clone(),
    }
}

/// Sends `args` to both servers and asserts the replies hold the same elements.
fn same_contents(d: &mut DiffPair, args: &[&str]) {
    match d.exchange(args) {
        (Ok(a), Ok(b)) => assert_eq!(deep_sorted(&a.value), deep_sorted(&b.value), "{args:?}"),
        (a, b) => panic!("{args:?}: redis {a:?}, ours {b:?}"),
    }
}

#[test]
fn function_commands_match_redis_in_resp2_and_resp3() {
    let mut d = DiffPair::start();
    let load = |d: &mut DiffPair, code: &str| {
        same(d, &[b"FUNCTION", b"LOAD", code.as_bytes()]);
    };
    load(&mut d, LIB);
    // Every registration and metadata error, as Redis words it.
    for code in [
        LIB,
        "#!lua name=bad\nredis.call('set','a','b')",
        "#!lua name=bad\nfoo = 1",
        "#!lua name=bad engine=foo\nreturn 1",
        "#!lua name=bad foo=bar\nreturn 1",
        "#!lua\nreturn 1",
        "#!lua name=\nreturn 1",
        "#!lua name=a-b\nreturn 1",
        "#!js name=x\nreturn 1",
        "no shebang",
        "#!lua name=empty\nreturn 1",
        "#!lua name=syntax\nreturn (",
        "#!lua name=err\nerror('boom')",
        "#!lua name=err\nerror({err='table boom'})",
        "#!lua name=clash\nredis.register_function('my_hset', function() end)",
        "#!lua name=badname\nredis.register_function('a b', function() end)",
        "#!lua name=badname\nredis.register_function('', function() end)",
        "#!lua name=badcb\nredis.register_function('f', 'not a function')",
        "#!lua name=badcb\nredis.register_function('f')",
        "#!lua name=badcb\nredis.register_function()",
        "#!lua name=badflag\nredis.register_function{function_name='f', callback=function() end, flags={'nope'}}",
        "#!lua name=badflag\nredis.register_function{function_name='f', callback=function() end, flags='no-writes'}",
        "#!lua name=badarg\nredis.register_function{function_name='f', callback=function() end, unknown=1}",
        "#!lua name=badarg\nredis.register_function{callback=function() end}",
        "#!lua name=badarg\nredis.register_function{function_name='f', callback=function() end, description=1}",
        "#!lua name=g\nredis.register_function('g', function() end) redis.log(redis.LOG_WARNING, 'loading g') return redis.REDIS_VERSION_NUM",
        "#!lua name=sandbox\nlocal x = redis.call\nredis.register_function('s', function() end)",
        "#!lua name=sandbox2\nredis.register_function('s2', function() return math.random() end) setmetatable(_G, nil)",
        // The load may run 500 ms at most.
        "#!lua name=loop\nwhile true do end",
        "#!lua name=t\nlocal t = {} for i=1,10 do t[i]=i end\nredis.register_function('x', function() return redis.setresp(3) end)\nredis.register_function('y', function() return redis.call('ping') end)\nredis.register_function('z', function() return math.random() end)",
    ] {
        load(&mut d, code);
    }
    d.assert_script(
        "fcall",
        &[
            "FCALL my_hset 1 h a b c d",
            "FCALL MY_HSET 1 h a b",
            "HGETALL h",
            "SET k v",
            "FCALL_RO my_get 1 k",
            "FCALL_RO my_hset 1 k",
            "FCALL my_get 1 h",
            "FCALL fail 0",
            "SET str notanumber",
            "FCALL fail 0",
            "FCALL nope 0",
            "FCALL my_get x",
            "FCALL my_get 5 a",
            "FCALL my_get -1",
            "FCALL",
            "FCALL my_get",
            "FCALL_RO oom_ok 0",
            "FCALL g 0",
            "FCALL s 0",
            "FCALL x 0",
            "FCALL y 0",
            "FCALL z 0",
            "FUNCTION DELETE t",
            "FUNCTION LIST LIBRARYNAME sandbox2",
            "FUNCTION LIST WITHCODE LIBRARYNAME g*",
            "FUNCTION LIST LIBRARYNAME nomatch",
            "FUNCTION LIST WITHCODE WITHCODE",
            "FUNCTION LIST LIBRARYNAME",
            "FUNCTION LIST foo",
            "FUNCTION STATS",
            "FUNCTION STATS x",
            "FUNCTION KILL",
            "FUNCTION HELP",
            "FUNCTION nope",
            "FUNCTION RESTORE garbage",
            "FUNCTION RESTORE x foo",
            "FUNCTION RESTORE x append extra",
            "FUNCTION FLUSH bad",
            "FUNCTION LOAD",
            "FUNCTION LOAD replace",
            "FUNCTION LOAD foo x",
            "FUNCTION DELETE nope",
            "FUNCTION DELETE",
            "FUNCTION DELETE g",
            "FUNCTION DELETE sandbox",
            "FUNCTION DELETE sandbox2",
            "SCRIPT FLUSH",
            "FCALL_RO my_get 1 k",
            "FUNCTION LIST LIBRARYNAME nomatch",
        ],
    );
    for args in
        [&["FUNCTION", "LIST"][..], &["FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "my*"], &["FUNCTION", "LIST", "LIBRARYNAME", "MYLIB"]]
    {
        same_contents(&mut d, args);
    }
    // RESP3: flags are a set, the library list maps.
    let _ = d.hello(3).expect("HELLO 3");
    same_contents(&mut d, &["FUNCTION", "LIST", "WITHCODE"]);
    d.assert_script("resp3", &["FUNCTION STATS", "FCALL_RO my_get 1 k", "FCALL_RO my_get 1 nokey", "FUNCTION LIST LIBRARYNAME x"]);
    d.assert_script(
        "delete and flush",
        &["FUNCTION DELETE mylib", "FUNCTION LIST", "FCALL my_get 1 k", "FUNCTION FLUSH SYNC", "FUNCTION DUMP", "FUNCTION STATS"],
    );
}

#[test]
fn dump_payloads_cross_between_redis_and_vermilion() {
    let mut d = DiffPair::start();
    same(&mut d, &[b"FUNCTION", b"LOAD", LIB.as_bytes()]);
    same(&mut d, &[b"FUNCTION", b"LOAD", SPIN.as_bytes()]);
    let theirs = match d.redis_call(&["FUNCTION", "DUMP"]) {
        Ok(r) => r.value.as_bytes().expect("a bulk payload").to_vec(),
        Err(e) => panic!("{e:?}"),
    };
    let ours = match d.ours_call(&["FUNCTION", "DUMP"]) {
        Ok(r) => r.value.as_bytes().expect("a bulk payload").to_vec(),
        Err(e) => panic!("{e:?}"),
    };
    // Redis compresses long strings (LZF) and we do not: the sizes differ, the contents not.
    assert!(theirs.len() > 100 && ours.len() > theirs.len(), "{} {}", theirs.len(), ours.len());
    // Each side restores the other's payload: collisions first, then every policy.
    for (name, payload) in [("redis's", &theirs), ("ours", &ours)] {
        let (a, b) = d.exchange(&[&b"FUNCTION"[..], b"RESTORE", payload, b"FLUSH"]);
        assert!(common::diff::same(&a, &b, Cmp::Exact), "RESTORE FLUSH of {name} payload: redis {a:?}, ours {b:?}");
        // Both libraries exist: which one APPEND names is Redis's hash order.
        for args in [vec![&b"FUNCTION"[..], b"RESTORE", payload], vec![&b"FUNCTION"[..], b"RESTORE", payload, b"APPEND"]] {
            for (side, got) in [("redis", d.redis_call(&args)), ("ours", d.ours_call(&args))] {
                let text = got.map(|r| String::from_utf8_lossy(&r.raw).into_owned()).unwrap_or_default();
                let named = ["mylib", "spinlib"].iter().any(|l| text == format!("-ERR Library {l} already exists\r\n"));
                assert!(named, "RESTORE of {name} payload on {side}: {text}");
            }
        }
        for args in [vec![&b"FUNCTION"[..], b"RESTORE", payload, b"REPLACE"], vec![&b"FUNCTION"[..], b"RESTORE", payload, b"FLUSH"]] {
            let (a, b) = d.exchange(&args);
            assert!(common::diff::same(&a, &b, Cmp::Exact), "RESTORE of {name} payload: redis {a:?}, ours {b:?}");
        }
        same_contents(&mut d, &["FUNCTION", "LIST", "LIBRARYNAME", "mylib", "WITHCODE"]);
        same(&mut d, &[b"FCALL", b"my_hset", b"1", b"h", b"f", b"v"]);
        same(&mut d, &[b"FUNCTION", b"FLUSH"]);
        let mut corrupt = payload.clone();
        let mid = corrupt.len() / 2;
        corrupt[mid] ^= 0x55;
        same(&mut d, &[b"FUNCTION", b"RESTORE", &corrupt]);
        // A key's DUMP payload is not a function payload.
        same(&mut d, &[b"SET", b"plain", b"value"]);
    }
    let key_payload = match d.redis_call(&["DUMP", "plain"]) {
        Ok(r) => r.value.as_bytes().expect("a bulk payload").to_vec(),
        Err(e) => panic!("{e:?}"),
    };
    same(&mut d, &[b"FUNCTION", b"RESTORE", &key_payload]);
    same(&mut d, &[b"FUNCTION", b"STATS"]);
}

fn wait_busy(c: &mut Connection) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match redis::cmd("PING").query::<String>(c) {
            Err(e) if e.to_string().contains("BUSY") => return,
            _ if Instant::now() > deadline => panic!("never busy"),
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

#[test]
fn a_busy_function_is_reported_by_function_stats_and_killed_by_function_kill_only() {
    let mut d = DiffPair::start_with(&["--busy-reply-threshold", "100"], &["--busy-reply-threshold", "100"]);
    same(&mut d, &[b"FUNCTION", b"LOAD", SPIN.as_bytes()]);
    d.on(1);
    d.on(0);
    // FCALL spin on connection 0 of both servers; connection 1 watches.
    {
        let (r, o) = d.conns(0);
        r.cmd(&["FCALL", "spin", "0", "extra-arg"]).expect("send");
        o.cmd(&["FCALL", "spin", "0", "extra-arg"]).expect("send");
    }
    let mut watcher_r = d.redis.client();
    let mut watcher_o = d.ours.client();
    wait_busy(&mut watcher_r);
    wait_busy(&mut watcher_o);
    d.on(1);
    same(&mut d, &[b"GET", b"k"]);
    same(&mut d, &[b"SCRIPT", b"KILL"]);
    // The running script: its name, the FCALL as sent, and a duration.
    let (a, b) = d.exchange(&[&b"FUNCTION"[..], b"STATS"]);
    assert!(common::diff::same(&a, &b, Cmp::IgnoreInts), "FUNCTION STATS: redis {a:?}, ours {b:?}");
    let text = b.as_ref().map(|r| String::from_utf8_lossy(&r.raw).into_owned()).unwrap_or_default();
    assert!(text.contains("spin") && text.contains("extra-arg"), "{text}");
    same(&mut d, &[b"FUNCTION", b"KILL"]);
    let (r, o) = d.conns(0);
    let (a, b) = (r.read(), o.read());
    assert!(common::diff::same(&a, &b, Cmp::Exact), "the killed FCALL: redis {a:?}, ours {b:?}");
    same(&mut d, &[b"FUNCTION", b"KILL"]);
    // An EVAL script is not a function: FUNCTION KILL and FUNCTION STATS refuse it.
    {
        let (r, o) = d.conns(0);
        r.cmd(&["EVAL", "while true do end", "0"]).expect("send");
        o.cmd(&["EVAL", "while true do end", "0"]).expect("send");
    }
    wait_busy(&mut watcher_r);
    wait_busy(&mut watcher_o);
    d.on(1);
    same(&mut d, &[b"FUNCTION", b"KILL"]);
    same(&mut d, &[b"FUNCTION", b"STATS"]);
    same(&mut d, &[b"GET", b"k"]);
    same(&mut d, &[b"SCRIPT", b"KILL"]);
    let (r, o) = d.conns(0);
    let (a, b) = (r.read(), o.read());
    assert!(common::diff::same(&a, &b, Cmp::Exact), "the killed EVAL: redis {a:?}, ours {b:?}");
    // A function that wrote cannot be killed; SHUTDOWN NOSAVE is the way out.
    let mut c = d.ours.client();
    let _: String = q(
        &mut c,
        &["FUNCTION", "LOAD", "#!lua name=w\nredis.register_function('w', function() redis.call('SET', 'w', 1) while true do end end)"],
    );
    let mut runner = d.ours.raw();
    runner.cmd(&[b"FCALL", b"w", b"0"]);
    wait_busy(&mut watcher_o);
    assert!(err(&mut watcher_o, &["FUNCTION", "KILL"]).contains("UNKILLABLE"));
}

fn digest(c: &mut Connection) -> String {
    q(c, &["DEBUG", "DIGEST"])
}

fn dump(c: &mut Connection) -> Vec<u8> {
    q(c, &["FUNCTION", "DUMP"])
}

#[test]
fn libraries_survive_kill_9_a_rewrite_and_debug_reload() {
    let mut s = Server::start(&["--appendfsync", "always"]);
    let mut c = s.client();
    let _: String = q(&mut c, &["FUNCTION", "LOAD", LIB]);
    let _: String = q(&mut c, &["FUNCTION", "LOAD", SPIN]);
    let _: String = q(&mut c, &["FUNCTION", "LOAD", "#!lua name=gone\nredis.register_function('gone', function() return 1 end)"]);
    let _: () = q(&mut c, &["FUNCTION", "DELETE", "gone"]);
    let _: i64 = q(&mut c, &["FCALL", "my_hset", "1", "h", "a", "1"]);
    let libs = dump(&mut c);
    let data = digest(&mut c);
    // The log holds the FCALL's effects: a library keeps state between calls (its upvalues)
    // that calls the log does not hold can move.
    let log = std::fs::read_dir(s.dir.path().join("appendonlydir"))
        .expect("dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".incr."))
        .map(|e| String::from_utf8_lossy(&std::fs::read(e.path()).expect("read")).into_owned())
        .collect::<String>();
    assert!(!log.contains("FCALL") && log.to_ascii_lowercase().contains("hset"), "{log}");
    s.restart(&[]);
    let mut c = s.client();
    assert_eq!(dump(&mut c), libs, "the log replays FUNCTION LOAD and DELETE");
    assert_eq!(digest(&mut c), data);
    let _: String = q(&mut c, &["BGREWRITEAOF"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while q::<String>(&mut c, &["INFO", "persistence"]).contains("aof_rewrite_in_progress:1") {
        assert!(Instant::now() < deadline, "the rewrite never finished");
        std::thread::sleep(Duration::from_millis(5));
    }
    let _: i64 = q(&mut c, &["FCALL", "my_hset", "1", "h", "b", "2"]);
    let data = digest(&mut c);
    s.restart(&[]);
    let mut c = s.client();
    assert_eq!(dump(&mut c), libs, "the base snapshot holds the libraries");
    assert_eq!(digest(&mut c), data);
    let memory: String = q(&mut c, &["INFO", "memory"]);
    assert!(memory.contains("number_of_functions:5\r\n") && memory.contains("number_of_libraries:2\r\n"), "{memory}");
    let _: () = q(&mut c, &["DEBUG", "RELOAD"]);
    assert_eq!(dump(&mut c), libs);
    assert_eq!(digest(&mut c), data);
    // A flush is logged too: after it and a kill -9 nothing comes back.
    let _: () = q(&mut c, &["FUNCTION", "FLUSH"]);
    s.restart(&[]);
    let mut c = s.client();
    let listed: Vec<redis::Value> = q(&mut c, &["FUNCTION", "LIST"]);
    assert!(listed.is_empty(), "{listed:?}");
    assert!(err(&mut c, &["FCALL", "my_get", "1", "h"]).contains("Function not found"));
}

#[test]
fn replicas_receive_libraries_by_full_sync_and_by_the_stream() {
    let primary = Server::start(&[]);
    let mut p = primary.client();
    let _: String = q(&mut p, &["FUNCTION", "LOAD", LIB]);
    let _: i64 = q(&mut p, &["FCALL", "my_hset", "1", "h", "a", "1"]);
    let _: () = q(&mut p, &["SET", "k", "v"]);
    let replica = Server::start(&[]);
    let mut r = replica.client();
    let _: String = q(&mut r, &["REPLICAOF", "127.0.0.1", &primary.port.to_string()]);
    // The stream: a second library and a write through it.
    let _: String = q(&mut p, &["FUNCTION", "LOAD", SPIN]);
    let _: i64 = q(&mut p, &["FCALL", "my_hset", "1", "h2", "b", "2"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let synced = q::<i64>(&mut r, &["EXISTS", "h2"]) == 1 && dump(&mut r) == dump(&mut p);
        if synced {
            break;
        }
        assert!(Instant::now() < deadline, "the replica never received the libraries");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(digest(&mut r), digest(&mut p));
    // A read-only replica runs no-writes functions and refuses the rest.
    assert_eq!(q::<String>(&mut r, &["FCALL_RO", "my_get", "1", "k"]), "v");
    let e = err(&mut r, &["FCALL", "my_hset", "1", "h", "x", "y"]);
    assert!(e.contains("You can't write against a read only replica."), "{e}");
    let e = err(&mut r, &["FUNCTION", "LOAD", SPIN]);
    assert!(e.contains("You can't write against a read only replica."), "{e}");
    let _: () = q(&mut p, &["FUNCTION", "DELETE", "spinlib"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while dump(&mut r) != dump(&mut p) {
        assert!(Instant::now() < deadline, "the replica never deleted the library");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn names_differing_in_case_within_a_library_load_run_and_delete_cleanly() {
    // Redis 7.0.15 registers both, finds one by FCALL and then crashes on FUNCTION DELETE
    // (it unlinks the shared case-insensitive entry twice); we delete cleanly.
    let s = Server::start(&[]);
    let mut c = s.client();
    let code =
        "#!lua name=dup\nredis.register_function('f1', function() return 1 end) redis.register_function('F1', function() return 2 end)";
    let _: String = q(&mut c, &["FUNCTION", "LOAD", code]);
    assert_eq!(q::<i64>(&mut c, &["FCALL", "f1", "0"]), q::<i64>(&mut c, &["FCALL", "F1", "0"]));
    let stats: Vec<redis::Value> = q(&mut c, &["FUNCTION", "STATS"]);
    assert!(format!("{stats:?}").contains("functions_count"), "{stats:?}");
    let memory: String = q(&mut c, &["INFO", "memory"]);
    assert!(memory.contains("number_of_functions:1\r\n"), "{memory}");
    let _: () = q(&mut c, &["FUNCTION", "DELETE", "dup"]);
    assert!(err(&mut c, &["FCALL", "f1", "0"]).contains("Function not found"));
    let _: String = q(&mut c, &["FUNCTION", "LOAD", code]);
    assert_eq!(q::<String>(&mut c, &["PING"]), "PONG");
}

#[test]
fn function_flags_decide_oom_stale_and_read_only_refusals_as_redis() {
    let mut d = DiffPair::start();
    same(&mut d, &[b"FUNCTION", b"LOAD", LIB.as_bytes()]);
    let dead = common::free_port().to_string();
    d.assert_script(
        "flags",
        &[
            "SET big xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "CONFIG SET maxmemory 1",
            // Without no-writes or allow-oom the call is refused as a deny-oom command.
            "FCALL my_hset 1 h a b",
            "FCALL_RO my_get 1 big",
            "FCALL_RO oom_ok 0",
            "FCALL_RO my_hset 1 h a b",
            "EVAL \"#!lua\\nreturn redis.call('set','a',1)\" 1 a",
            "EVAL \"#!lua flags=no-writes\\nreturn 1\" 0",
            "MULTI",
            "FCALL_RO my_get 1 big",
            "EXEC",
            "CONFIG SET maxmemory 0",
            // Inside EXEC the script's own text.
            "MULTI",
            "FCALL my_hset 1 h a b",
            "CONFIG SET maxmemory 1",
            "FCALL my_hset 1 h a b",
            "FCALL_RO my_get 1 big",
            "CONFIG SET maxmemory 0",
            "EXEC",
            "CONFIG SET replica-serve-stale-data no",
        ],
    );
    same(&mut d, &[b"REPLICAOF", b"127.0.0.1", dead.as_bytes()]);
    d.assert_script(
        "stale replica",
        &[
            "FCALL my_hset 1 h a b",
            "FCALL_RO my_get 1 big",
            "FCALL_RO oom_ok 0",
            "EVAL \"#!lua flags=no-writes,allow-stale\\nreturn 1\" 0",
            "EVAL \"#!lua flags=no-writes\\nreturn 1\" 0",
            // Without a shebang a script never runs there; with allow-stale it runs only
            // the commands allowed on a stale replica.
            "EVAL \"return 1\" 0",
            "EVAL \"return redis.call('get', KEYS[1])\" 1 k",
            "EVAL \"#!lua flags=no-writes,allow-stale\\nreturn redis.call('get', 'k')\" 0",
            "EVAL \"#!lua flags=no-writes,allow-stale\\nreturn redis.call('ping')\" 0",
            "EVAL \"#!lua flags=no-writes,allow-stale\\nreturn type(redis.call('info', 'server'))\" 0",
            // Queued: the script's flags decide at once, as for a command.
            "MULTI",
            "EVAL \"#!lua flags=no-writes\\nreturn 1\" 0",
            "EVAL \"return 1\" 0",
            "EXEC",
            "MULTI",
            "EVAL \"return 1\" 0",
            "EXEC",
            "CONFIG SET replica-serve-stale-data yes",
            "FCALL my_hset 1 h a b",
            "FCALL_RO my_get 1 big",
            "FCALL_RO my_hset 1 h a b",
            "EVAL \"#!lua\\nreturn 1\" 0",
            "REPLICAOF NO ONE",
        ],
    );
}

/// Found by a differential sweep: how `register_function` reads its flags and named
/// arguments, what the function environment lacks, `{err=...}` line ends, `pcall()`, zero
/// bytes in a shebang and FUNCTION FLUSH's arity.
#[test]
fn registration_details_and_function_environment_match_redis() {
    let mut d = DiffPair::start();
    for flags in
        ["{x='no-writes'}", "{'no-writes', nil, 'bogus'}", "{'no-writes', x='bogus'}", "{[2]='no-writes'}", "{'no-writes\\0x'}", "{true}"]
    {
        let _ = same(&mut d, &[b"FUNCTION", b"FLUSH"]);
        let code =
            format!("#!lua name=lib\nredis.register_function{{function_name='f', callback=function() return 'ran' end, flags={flags}}}");
        let _ = same(&mut d, &[b"FUNCTION", b"LOAD", code.as_bytes()]);
        let _ = same(&mut d, &[b"FCALL_RO", b"f", b"0"]);
        let _ = same(&mut d, &[b"FUNCTION", b"LIST"]);
    }
    for arg in ["[1]=1", "[2.5]=1", "[true]=1"] {
        let code = format!("#!lua name=lib2\nredis.register_function{{function_name='f2', callback=function() return 1 end, {arg}}}");
        let _ = same(&mut d, &[b"FUNCTION", b"LOAD", code.as_bytes()]);
    }
    let _ = same(&mut d, &[b"FUNCTION", b"LOAD", b"#!lua name=lib2\nredis.register_function{'f2', function() return 1 end}"]);
    let _ = same(&mut d, &[b"FUNCTION", b"FLUSH"]);
    let env = "#!lua name=env
redis.register_function('f1', function() return redis.replicate_commands() end)
redis.register_function('f2', function() return redis.breakpoint() end)
redis.register_function('f3', function() return redis.debug('x') end)
redis.register_function('f4', function() return type(__redis__err__handler) end)
redis.register_function('f5', function() local t = {} for k in pairs(redis) do t[#t+1] = k end table.sort(t) return table.concat(t, ',') end)
redis.register_function('f6', function() return {pcall()} end)
redis.register_function('f7', function() return {err='x\\r\\n'} end)";
    let _ = same(&mut d, &[b"FUNCTION", b"LOAD", env.as_bytes()]);
    for f in ["f1", "f2", "f3", "f4", "f5", "f6", "f7"] {
        let _ = same(&mut d, &[b"FCALL", f.as_bytes(), b"0"]);
    }
    for script in [
        "return type(__redis__err__handler)",
        "return {pcall()}",
        "return {pcall(pcall)}",
        "return {err='x\\n'}",
        "return {err='\\r\\n'}",
        "return {err='\\ne'}",
        "return {1, {err='x\\r'}}",
        "return {err='x\\r\\n '}",
        "return redis.error_reply('x\\n')",
        "#!lua flags=no-writes \0foo\nreturn 1",
    ] {
        let _ = same(&mut d, &[b"EVAL", script.as_bytes(), b"0"]);
    }
    for code in [&b"#!lua name=l\0x\nredis.register_function('z', function() return 1 end)"[..], b"#!lua\0 name=y\nreturn 1"] {
        let _ = same(&mut d, &[b"FUNCTION", b"LOAD", code]);
    }
    let _ = same(&mut d, &[b"FUNCTION", b"FLUSH", b"SYNC", b"ASYNC"]);
    let _ = same(&mut d, &[b"FUNCTION", b"FLUSH", b"x"]);
}
