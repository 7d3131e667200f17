//! MULTI/EXEC/DISCARD/WATCH with several real clients: queueing and EXECABORT, runtime errors
//! that fail one command only, WATCH aborted by another client, by the client itself, by
//! expiry, by FLUSHALL (only for keys that existed), not by a write that changed nothing;
//! blocking commands inside MULTI; a push inside MULTI serving a blocked client after EXEC.

mod common;

use std::time::Duration;

use common::diff::DiffPair;
use common::Server;

fn s(b: Vec<u8>) -> String {
    String::from_utf8_lossy(&b).into_owned()
}

#[test]
fn transaction_replies_match_redis() {
    let mut d = DiffPair::start();
    d.assert_script(
        "transactions",
        &[
            "MULTI",
            "SET a 1",
            "INCR a",
            "LPUSH a x",
            "GET a",
            "EXEC",
            "EXEC",
            "DISCARD",
            "MULTI",
            "MULTI",
            "WATCH x",
            "FOO bar",
            "SET a",
            "EXEC",
            "MULTI",
            "SET b 2",
            "DISCARD",
            "GET b",
            "WATCH k",
            "SETNX k 1",
            "MULTI",
            "GET k",
            "EXEC",
            "WATCH k",
            "SETNX k 1",
            "MULTI",
            "GET k",
            "EXEC",
            "WATCH nokey",
            "MULTI",
            "BLPOP nokey 0",
            "BLMOVE nokey dst LEFT LEFT 0",
            "BLMPOP 0 1 nokey LEFT",
            "BRPOPLPUSH nokey dst 0",
            "EXEC",
            "UNWATCH",
            "MULTI",
            "PING",
            "ECHO hi",
            "EXEC",
            "MULTI",
            "RESET",
            "EXEC",
        ],
    );
    d.hello(3).expect("hello").expect("resp3");
    d.assert_script("transactions resp3", &["MULTI", "SET r 1", "GET r", "HGETALL nohash", "EXEC", "WATCH r", "SET r 2", "MULTI", "EXEC"]);
}

#[test]
fn watch_is_aborted_by_other_clients_and_by_expiry() {
    let server = Server::start(&[]);
    let mut a = server.raw();
    let mut b = server.raw();
    // Another client's write.
    a.call(&[b"SET", b"k", b"1"]);
    assert_eq!(a.call(&[b"WATCH", b"k"]), b"+OK\r\n");
    b.call(&[b"INCR", b"k"]);
    a.call(&[b"MULTI"]);
    a.call(&[b"SET", b"k", b"100"]);
    assert_eq!(a.call(&[b"EXEC"]), b"*-1\r\n");
    assert_eq!(b.call(&[b"GET", b"k"]), b"$1\r\n2\r\n");
    // Untouched: applies.
    a.call(&[b"WATCH", b"k"]);
    a.call(&[b"MULTI"]);
    a.call(&[b"SET", b"k", b"100"]);
    assert_eq!(a.call(&[b"EXEC"]), b"*1\r\n+OK\r\n");
    // Expiry after WATCH.
    a.call(&[b"SET", b"t", b"v", b"PX", b"50"]);
    a.call(&[b"WATCH", b"t"]);
    std::thread::sleep(Duration::from_millis(120));
    a.call(&[b"MULTI"]);
    a.call(&[b"PING"]);
    assert_eq!(a.call(&[b"EXEC"]), b"*-1\r\n");
    // FLUSHALL touches only watched keys that existed.
    a.call(&[b"SET", b"e", b"1"]);
    a.call(&[b"WATCH", b"e", b"missing"]);
    b.call(&[b"FLUSHALL"]);
    a.call(&[b"MULTI"]);
    a.call(&[b"PING"]);
    assert_eq!(a.call(&[b"EXEC"]), b"*-1\r\n");
    a.call(&[b"WATCH", b"missing"]);
    b.call(&[b"FLUSHALL"]);
    a.call(&[b"MULTI"]);
    a.call(&[b"PING"]);
    assert_eq!(a.call(&[b"EXEC"]), b"*1\r\n+PONG\r\n");
    // MOVE into the watched key's database counts.
    a.call(&[b"SELECT", b"1"]);
    a.call(&[b"WATCH", b"mv"]);
    b.call(&[b"SET", b"mv", b"x"]);
    b.call(&[b"MOVE", b"mv", b"1"]);
    a.call(&[b"MULTI"]);
    a.call(&[b"PING"]);
    assert_eq!(a.call(&[b"EXEC"]), b"*-1\r\n");
}

#[test]
fn a_push_inside_multi_serves_a_blocked_client_after_exec() {
    let server = Server::start(&[]);
    let mut waiter = server.raw();
    waiter.cmd(&[b"BLPOP", b"q", b"0"]);
    std::thread::sleep(Duration::from_millis(100));
    let mut t = server.raw();
    t.call(&[b"MULTI"]);
    t.call(&[b"LPUSH", b"q", b"1"]);
    t.call(&[b"LPUSH", b"q", b"2"]);
    assert_eq!(t.call(&[b"EXEC"]), b"*2\r\n:1\r\n:2\r\n");
    // Served after the whole transaction: the head is then "2".
    assert_eq!(s(waiter.read_reply()), "*2\r\n$1\r\nq\r\n$1\r\n2\r\n");
    assert_eq!(t.call(&[b"LRANGE", b"q", b"0", b"-1"]), b"*1\r\n$1\r\n1\r\n");
}

#[test]
fn client_list_shows_the_transaction() {
    let server = Server::start(&[]);
    let mut a = server.raw();
    a.call(&[b"MULTI"]);
    a.call(&[b"PING"]);
    let mut b = server.raw();
    let list = s(b.call(&[b"CLIENT", b"LIST"]));
    assert!(list.contains("flags=x") && list.contains("multi=1"), "{list}");
}

/// A key already expired when WATCHed (Redis 7's `watchedKey.expired`): its deletion by a
/// read, a DEL or FLUSHDB is no change, its expiry no abort; a new value still aborts.
#[test]
fn watching_a_key_that_had_already_expired() {
    let mut d = DiffPair::start_with(&["--enable-debug-command", "local"], &[]);
    let expired_then = |d: &mut DiffPair, between: &[&str], key_deleted_at_watch: bool| {
        d.assert_script("setup", &["0>FLUSHALL", "DEBUG SET-ACTIVE-EXPIRE 0", "SET a 1 PX 10"]);
        std::thread::sleep(Duration::from_millis(40));
        d.assert_script("watch", &["WATCH a"]);
        if key_deleted_at_watch {
            d.assert_script("read", &["GET a"]);
        }
        d.assert_script("between", between);
        d.assert_script("exec", &["0>MULTI", "PING", "EXEC"]);
    };
    expired_then(&mut d, &[], false);
    expired_then(&mut d, &[], true);
    expired_then(&mut d, &["EXISTS a", "DEL a"], false);
    expired_then(&mut d, &["FLUSHDB"], false);
    expired_then(&mut d, &["2>SET a 2"], false);
    expired_then(&mut d, &["2>GET a", "2>SET a 2"], false);
    // A key that expires after WATCH still aborts, and so does its deletion by active expiry.
    d.assert_script("live", &["0>FLUSHALL", "DEBUG SET-ACTIVE-EXPIRE 1", "SET b 1 PX 100", "WATCH b"]);
    std::thread::sleep(Duration::from_millis(400));
    d.assert_script("expired after watch", &["MULTI", "PING", "EXEC"]);
    d.assert_script("active expiry of an expired watched key", &["FLUSHALL", "SET c 1 PX 10"]);
    std::thread::sleep(Duration::from_millis(40));
    d.assert_script("watch c", &["WATCH c"]);
    std::thread::sleep(Duration::from_millis(400));
    d.assert_script("exec c", &["DBSIZE", "MULTI", "PING", "EXEC"]);
}

/// MONITOR and SSUBSCRIBE cannot run inside EXEC (DENY BLOCKING); SUBSCRIBE can.
#[test]
fn monitor_and_ssubscribe_inside_exec_are_refused() {
    let mut d = DiffPair::start();
    d.assert_script("deny blocking", &["MULTI", "MONITOR", "EXEC", "MULTI", "SSUBSCRIBE x", "EXEC", "MULTI", "PSUBSCRIBE p*", "EXEC"]);
}

/// Any refusal of EXEC itself (authentication, arity, subscribed context) discards the
/// transaction and answers EXECABORT with the reason (Redis's execCommandAbort).
#[test]
fn a_refused_exec_is_an_execabort() {
    let mut d = DiffPair::start_with(&["--requirepass", "pw"], &["--requirepass", "pw"]);
    d.assert_script("refused exec", &["EXEC", "AUTH pw", "EXEC x", "MULTI", "EXEC x", "EXEC", "SUBSCRIBE c", "EXEC"]);
}

/// EXEC carries the flags of what it queued, as Redis's processCommand: when memory went over
/// `maxmemory` (or the server became a read-only replica) after queueing, a transaction with
/// a deny-oom (or write) command is discarded whole with EXECABORT instead of running its
/// reads and failing its writes; queued writes on a read-only replica are refused at once.
#[test]
fn exec_is_refused_whole_when_a_queued_command_would_be() {
    let mut d = common::diff::DiffPair::start();
    d.assert_script(
        "oom after queueing",
        &[
            "MULTI",
            "GET a",
            "SET a 1",
            "1> CONFIG SET maxmemory 1",
            "EXEC",
            "1> CONFIG SET maxmemory 0",
            "MULTI",
            "GET a",
            "DEL a",
            "EVAL \"#!lua flags=no-writes\\nreturn 1\" 0",
            "1> CONFIG SET maxmemory 1",
            "EXEC",
            "MULTI",
            "EVAL \"#!lua\\nreturn 1\" 0",
            "1> CONFIG SET maxmemory 1",
            "EXEC",
            "1> CONFIG SET maxmemory 0",
        ],
    );
    let dead = common::free_port().to_string();
    d.assert_script(
        "read-only replica",
        &[
            &format!("REPLICAOF 127.0.0.1 {dead}"),
            "MULTI",
            "SET a 1",
            "EXEC",
            "MULTI",
            "GET a",
            "EVAL \"#!lua\\nreturn 1\" 0",
            "EXEC",
            "MULTI",
            "GET a",
            "EXEC",
            "REPLICAOF NO ONE",
        ],
    );
}

/// Writes that change nothing: a no-op LTRIM still aborts a WATCH (Redis signals the key),
/// SWAPDB of a database with itself and a BITFIELD that writes the bytes already there do
/// not (and are not counted as changes).
#[test]
fn watch_and_writes_that_change_nothing_match_redis() {
    let mut d = common::diff::DiffPair::start();
    let mut script: Vec<&str> = Vec::new();
    for (setup, write) in [
        ("RPUSH l a", "1> LTRIM l 0 -1"),
        ("SET k 1", "1> SWAPDB 0 0"),
        ("SET k a", "1> BITFIELD k SET u8 0 97"),
        ("SET k a", "1> BITFIELD k INCRBY u8 0 0"),
        ("SET k a", "1> BITFIELD k INCRBY u8 0 256"),
        ("SET k a", "1> BITFIELD k SET u8 0 98"),
        ("SET k a", "1> BITFIELD k OVERFLOW FAIL INCRBY u8 0 1000"),
        ("SET k a", "1> BITFIELD k SET u8 0 97 SET u8 200 0"),
    ] {
        let key = if setup.starts_with("RPUSH") { "WATCH l" } else { "WATCH k" };
        script.extend(["FLUSHALL", setup, key, write, "MULTI", "PING", "EXEC", "STRLEN k"]);
    }
    d.assert_script("no-op writes", &script);
    // Changes as Redis counts them.
    let changes = |d: &mut common::diff::DiffPair, redis: bool| -> i64 {
        let got = if redis { d.redis_call(&["INFO", "persistence"]) } else { d.ours_call(&["INFO", "persistence"]) };
        let text = String::from_utf8_lossy(&got.unwrap().raw).into_owned();
        text.lines().find_map(|l| l.strip_prefix("rdb_changes_since_last_save:")).unwrap().trim().parse().unwrap()
    };
    for cmd in [
        "SET k aaaaaaaaaaaaaa",
        "BITFIELD k SET u8 0 98 SET u8 8 99",
        "BITFIELD k SET u8 0 98 SET u8 8 100",
        "BITFIELD k SET u8 0 98 SET u8 200 0",
        "BITFIELD k INCRBY u8 0 1 INCRBY u8 0 1",
        "BITFIELD k INCRBY u8 0 256",
        "BITFIELD nk SET u8 100 0",
    ] {
        let (r0, v0) = (changes(&mut d, true), changes(&mut d, false));
        let args: Vec<&str> = cmd.split(' ').collect();
        let _ = d.check(&args).unwrap();
        assert_eq!(changes(&mut d, false) - v0, changes(&mut d, true) - r0, "changes counted for {cmd}");
    }
}

/// INFO's accounting of errors as Redis keeps it: errors inside an EXEC array count as error
/// replies, EXECABORT is a failed EXEC, every refusal (arity, ACL, inside a script too) a
/// rejected call, and a script that fails a failed EVAL.
#[test]
fn error_statistics_count_transactions_refusals_and_scripts_like_redis() {
    let mut d = common::diff::DiffPair::start();
    d.assert_script(
        "errors",
        &[
            "CONFIG RESETSTAT",
            "SET a x",
            "MULTI",
            "INCR a",
            "EXEC",
            "MULTI",
            "FOO",
            "EXEC",
            "ACL SETUSER u on >p +@all -get ~*",
            "1> AUTH u p",
            "1> GET a",
            "GET",
            "EVAL \"error('x')\" 0",
            "EVAL \"return {err='X y'}\" 0",
            "EVAL \"return redis.call('get')\" 0",
            "EVAL \"return 1\" 0",
            "EVAL \"syntax error(\" 0",
            "ACL DELUSER u",
        ],
    );
    let lines = |got: common::diff::Got, prefixes: &[&str]| -> Vec<String> {
        let text = String::from_utf8_lossy(&got.unwrap().raw).into_owned();
        let mut out: Vec<String> = text
            .lines()
            .filter(|l| prefixes.iter().any(|p| l.starts_with(p)))
            // Times differ; the counts must not.
            .map(|l| l.split(',').filter(|f| !f.starts_with("usec")).collect::<Vec<_>>().join(","))
            .collect();
        out.sort();
        out
    };
    d.on(0);
    for section in ["commandstats", "errorstats", "stats"] {
        let prefixes: &[&str] = match section {
            "commandstats" => &["cmdstat_exec", "cmdstat_get", "cmdstat_eval", "cmdstat_incr", "cmdstat_multi"],
            "errorstats" => &["errorstat_"],
            _ => &["total_error_replies"],
        };
        let ours = lines(d.ours_call(&["INFO", section]), prefixes);
        let redis = lines(d.redis_call(&["INFO", section]), prefixes);
        assert_eq!(ours, redis, "INFO {section}");
    }
}

/// While EXEC runs its queue the client is still in MULTI, as in Redis: CLIENT INFO shows
/// `flags=x multi=<n>`, and an AUTH that fails there is logged with context `multi`.
#[test]
fn a_client_running_exec_still_shows_as_in_multi() {
    let mut d = common::diff::DiffPair::start();
    let fields = |got: common::diff::Got, names: &[&str]| -> Vec<String> {
        let text = String::from_utf8_lossy(&got.unwrap().raw).into_owned();
        text.split([' ', '\n', '\r']).filter(|f| names.iter().any(|n| f.starts_with(n))).map(String::from).collect()
    };
    for side in [true, false] {
        let call = |d: &mut common::diff::DiffPair, args: &[&str]| if side { d.redis_call(args) } else { d.ours_call(args) };
        let _ = call(&mut d, &["MULTI"]);
        let _ = call(&mut d, &["CLIENT", "INFO"]);
        let _ = call(&mut d, &["AUTH", "nosuch", "x"]);
        let exec = call(&mut d, &["EXEC"]);
        assert_eq!(fields(exec, &["flags=", "multi="]), ["flags=x", "multi=2"], "redis: {side}");
        let log = call(&mut d, &["ACL", "LOG", "1"]);
        let text = String::from_utf8_lossy(&log.unwrap().raw).into_owned();
        assert!(text.contains("context\r\n$5\r\nmulti\r\n"), "redis: {side}: {text}");
        assert!(text.contains("flags=x") && text.contains("multi=2"), "redis: {side}: {text}");
    }
}

/// CLIENT PAUSE WRITE holds an EXEC whose queue writes (Redis's mstate.cmd_flags), not one
/// that only reads, nor a read-only script; the held EXEC runs when the pause ends.
#[test]
fn client_pause_write_holds_a_writing_exec_and_lets_reads_through() {
    use common::diff::{same, show, Cmp};
    let mut d = DiffPair::start();
    d.on(1);
    d.assert_script("queue a write", &["MULTI", "SET k 2"]);
    d.on(2);
    d.assert_script("queue a read", &["MULTI", "GET k"]);
    d.on(0);
    d.assert_script("pause", &["CLIENT PAUSE 600 WRITE"]);
    d.on(2);
    d.assert_script("a reading EXEC and scripts go through", &["EXEC", "EVAL_RO \"return redis.call('get', KEYS[1])\" 1 k"]);
    let started = std::time::Instant::now();
    let (r, o) = d.conns(1);
    r.cmd(&["EXEC"]).expect("send");
    o.cmd(&["EXEC"]).expect("send");
    let (a, b) = (r.read(), o.read());
    assert!(started.elapsed() >= Duration::from_millis(400), "the writing EXEC was not held");
    assert!(same(&a, &b, Cmp::Exact), "redis {} / ours {}", show(&a), show(&b));
}
