//! All-or-nothing scripts (a Vermilion extension): a script with the `rollback` shebang flag,
//! or any script under `script-rollback yes`, that raises an error, is stopped by SCRIPT KILL
//! or outgrows its undo record leaves none of its writes: keys, values and expiries as before
//! (DEBUG DIGEST), no keyspace event, no blocked client served, nothing in the log or on a
//! replica. Real servers on loopback, real kill -9.

mod common;

use std::time::{Duration, Instant};

use common::probe::{digest, link_up};
use common::Server;
use redis::Connection;

const FLAGGED: &str = "#!lua flags=rollback\n";

fn eval(c: &mut Connection, body: &str, keys: &[&str]) -> redis::RedisResult<redis::Value> {
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(body).arg(keys.len());
    for k in keys {
        cmd.arg(*k);
    }
    cmd.query(c)
}

fn q(c: &mut Connection, args: &[&str]) -> redis::Value {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(c).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// A key of every type, some with an expiry.
fn fill(c: &mut Connection) {
    for args in [
        &["SET", "s", "old"][..],
        &["SET", "ttl", "v", "PX", "900000"],
        &["SET", "persist-me", "v", "PX", "800000"],
        &["SET", "gone", "v"],
        &["RPUSH", "l", "a", "b", "c"],
        &["HSET", "h", "f1", "1", "f2", "2"],
        &["SADD", "st", "x", "y"],
        &["ZADD", "z", "1", "m1", "2", "m2"],
        &["XADD", "x", "1-1", "f", "v"],
        &["SET", "n", "10"],
    ] {
        q(c, args);
    }
}

/// Writes to every key of `fill` and a new one, in every form: values, expiries set,
/// changed and removed, deletions, creations.
const WRITES: &str = "
redis.call('SET', 's', 'new')
redis.call('PEXPIRE', 'ttl', 5)
redis.call('PERSIST', 'persist-me')
redis.call('DEL', 'gone')
redis.call('LPUSH', 'l', 'z'); redis.call('RPOP', 'l'); redis.call('LSET', 'l', 1, 'B')
redis.call('HSET', 'h', 'f3', '3'); redis.call('HDEL', 'h', 'f1')
redis.call('SADD', 'st', 'w'); redis.call('SREM', 'st', 'x')
redis.call('ZADD', 'z', 5, 'm3'); redis.call('ZINCRBY', 'z', 10, 'm1')
redis.call('XADD', 'x', '2-1', 'f', 'w'); redis.call('XTRIM', 'x', 'MAXLEN', 1)
redis.call('INCRBY', 'n', 5)
redis.call('SET', 'created', 'v', 'EX', 100)
redis.call('RENAME', 's', 's2')
";

fn ttls(c: &mut Connection) -> Vec<i64> {
    ["ttl", "persist-me", "created", "s"].iter().map(|k| redis::cmd("PTTL").arg(*k).query(c).expect("PTTL")).collect()
}

#[test]
fn every_type_and_expiry_form_comes_back_after_an_error() {
    let s = Server::start(&[]);
    let mut c = s.client();
    fill(&mut c);
    let before = digest(&mut c);
    let ttls_before = ttls(&mut c);
    // A script error, an error reply returned, a failing redis.call: each undoes it all.
    for ending in ["error('boom')", "return redis.error_reply('ERR refused')", "redis.call('INCR', 'h')"] {
        let body = format!("{FLAGGED}{WRITES}{ending}");
        let err = eval(&mut c, &body, &[]).expect_err("the script fails");
        assert!(!err.to_string().is_empty());
        assert_eq!(digest(&mut c), before, "after `{ending}`: the data is as before the script");
        let now = ttls(&mut c);
        for (a, b) in now.iter().zip(&ttls_before) {
            assert!((a - b).abs() < 2_000 || (*a < 0 && a == b), "expiries as before: {now:?} vs {ttls_before:?}");
        }
    }
    // The server-wide setting does the same for scripts without the flag.
    q(&mut c, &["CONFIG", "SET", "script-rollback", "yes"]);
    eval(&mut c, &format!("{WRITES}error('boom')"), &[]).expect_err("fails");
    assert_eq!(digest(&mut c), before);
    q(&mut c, &["CONFIG", "SET", "script-rollback", "no"]);
    // A caught error is no failure: the script's writes stay, as do a plain script's.
    eval(&mut c, &format!("{FLAGGED}{WRITES}pcall(redis.call, 'INCR', 'h') return 1"), &[]).expect("a caught error");
    assert_ne!(digest(&mut c), before);
    let v: String = redis::cmd("GET").arg("s2").query(&mut c).expect("GET");
    assert_eq!(v, "new");
}

#[test]
fn a_plain_script_keeps_its_writes_as_redis_does() {
    let s = Server::start(&[]);
    let mut c = s.client();
    fill(&mut c);
    let before = digest(&mut c);
    eval(&mut c, &format!("{WRITES}error('boom')"), &[]).expect_err("fails");
    assert_ne!(digest(&mut c), before, "without rollback the writes before the error stay");
}

#[test]
fn script_kill_stops_a_rollback_script_that_wrote_and_a_plain_one_stays_unkillable() {
    let s = Server::start(&["--busy-reply-threshold", "100"]);
    let mut c = s.client();
    fill(&mut c);
    let before = digest(&mut c);
    let mut runner = s.raw();
    let body = format!("{FLAGGED}{WRITES}while true do end");
    runner.cmd(&[b"EVAL".as_slice(), body.as_bytes(), b"0"]);
    let mut admin = s.raw();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let reply = admin.call(&[b"SCRIPT", b"KILL"]);
        if reply == b"+OK\r\n" {
            break;
        }
        assert!(reply.starts_with(b"-NOTBUSY"), "{}", String::from_utf8_lossy(&reply));
        assert!(Instant::now() < deadline, "the script never got busy");
        std::thread::sleep(Duration::from_millis(20));
    }
    let killed = runner.read_line_text();
    assert!(killed.starts_with("-ERR Script killed by user with SCRIPT KILL"), "{killed}");
    assert_eq!(digest(&mut c), before, "a killed rollback script leaves nothing");
    // A script without the flag that wrote cannot be killed (Redis's rule).
    let mut runner = s.raw();
    runner.cmd(&[
        b"EVAL".as_slice(),
        b"redis.call('SET', 'w', 1) local t = redis.call('TIME')[1] while redis.call('TIME')[1] - t < 2 do end",
        b"0",
    ]);
    std::thread::sleep(Duration::from_millis(400));
    let reply = admin.call(&[b"SCRIPT", b"KILL"]);
    assert!(reply.starts_with(b"-UNKILLABLE"), "{}", String::from_utf8_lossy(&reply));
    assert_eq!(runner.read_line_text(), "$-1");
}

#[test]
fn nothing_of_a_rolled_back_script_reaches_the_log_or_the_replicas() {
    let primary = Server::start(&[]);
    let replica = Server::start(&[]);
    let redis_replica = Server::start_redis(&["--enable-debug-command", "yes"]);
    for r in [&replica, &redis_replica] {
        let _: String = redis::cmd("REPLICAOF").arg("127.0.0.1").arg(primary.port).query(&mut r.client()).expect("REPLICAOF");
        link_up(r, &primary);
    }
    let mut p = primary.client();
    fill(&mut p);
    // A subscriber on the replica: a rolled-back script's PUBLISH reached the primary's own
    // subscribers at once, so it reaches the replica's too (messages are not data).
    let mut sub = replica.raw();
    sub.cmd(&[b"SUBSCRIBE", b"news"]);
    let _ = sub.read_reply();
    eval(&mut p, &format!("{FLAGGED}redis.call('SET', 'ghost-key', 'x') redis.call('PUBLISH', 'news', 'hello'){WRITES}error('boom')"), &[])
        .expect_err("fails");
    let message = String::from_utf8_lossy(&sub.read_reply()).into_owned();
    assert!(message.contains("hello"), "{message}");
    // A flagged body loaded by SCRIPT LOAD reaches redis-server without the flag.
    let sha: String =
        redis::cmd("SCRIPT").arg("LOAD").arg(format!("{FLAGGED}redis.call('SET', 'loaded', 1) return 1")).query(&mut p).expect("LOAD");
    let _: i64 = redis::cmd("EVALSHA").arg(&sha).arg(0).query(&mut p).expect("EVALSHA");
    q(&mut p, &["SET", "marker", "1"]);
    // A flagged script that succeeds is logged whole; redis-server gets it without the flag
    // it does not know.
    eval(&mut p, &format!("{FLAGGED}redis.call('SET', 'kept', 'v') return 1"), &[]).expect("succeeds");
    let n: i64 = redis::cmd("WAIT").arg(2).arg(5000).query(&mut p).expect("WAIT");
    assert_eq!(n, 2);
    let want = digest(&mut p);
    for r in [&replica, &redis_replica] {
        let deadline = Instant::now() + Duration::from_secs(10);
        while digest(&mut r.client()) != want {
            assert!(Instant::now() < deadline, "port {} diverged", r.port);
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let mut log = Vec::new();
    for e in std::fs::read_dir(primary.dir.path().join("appendonlydir")).expect("the log's directory").flatten() {
        log.extend(std::fs::read(e.path()).expect("read"));
    }
    assert!(log.windows(b"marker".len()).any(|w| w == b"marker"), "the log holds the later write");
    assert!(!log.windows(b"ghost-key".len()).any(|w| w == b"ghost-key"), "the log holds nothing of the rolled-back script");
}

#[test]
fn kill_9_during_a_rollback_script_loses_nothing_acknowledged_and_keeps_no_part_of_it() {
    let mut s = Server::start(&["--appendfsync", "always", "--busy-reply-threshold", "100"]);
    let mut c = s.client();
    fill(&mut c);
    for i in 0..100 {
        q(&mut c, &["SET", &format!("acked{i}"), "1"]);
    }
    let before = digest(&mut c);
    let mut runner = s.raw();
    let body = format!("{FLAGGED}for i = 1, 1000 do redis.call('SET', 'partial' .. i, i) end {WRITES} while true do end");
    runner.cmd(&[b"EVAL".as_slice(), body.as_bytes(), b"0"]);
    std::thread::sleep(Duration::from_millis(500));
    s.kill9();
    s.restart(&["--appendfsync", "always"]);
    let mut c = s.client();
    assert_eq!(digest(&mut c), before, "every acknowledged write, nothing of the script");
}

#[test]
fn keyspace_events_and_blocked_clients_see_nothing_of_a_rolled_back_script() {
    let s = Server::start(&["--notify-keyspace-events", "KEA"]);
    let mut c = s.client();
    let mut sub = s.raw();
    sub.cmd(&[b"PSUBSCRIBE", b"__key*__:*"]);
    let _ = sub.read_reply();
    let mut waiter = s.raw();
    waiter.cmd(&[b"BLPOP", b"queue", b"0"]);
    std::thread::sleep(Duration::from_millis(200));
    eval(&mut c, &format!("{FLAGGED}redis.call('LPUSH', 'queue', 'ghost') redis.call('SET', 'k', 1) error('boom')"), &[])
        .expect_err("fails");
    q(&mut c, &["SET", "after", "1"]);
    // The first event the subscriber gets is the later SET's.
    let first = String::from_utf8_lossy(&sub.read_reply()).into_owned();
    assert!(first.contains("after"), "an event of the rolled-back script was delivered: {first}");
    // The blocked client is still waiting: it gets the next real push.
    eval(&mut c, &format!("{FLAGGED}redis.call('LPUSH', 'queue', 'real') return 1"), &[]).expect("succeeds");
    let served = String::from_utf8_lossy(&waiter.read_reply()).into_owned();
    assert!(served.contains("real") && !served.contains("ghost"), "{served}");
    // The later SET's second event, then the successful script's.
    let queued = (0..6).map(|_| String::from_utf8_lossy(&sub.read_reply()).into_owned()).find(|e| e.contains("queue"));
    assert!(queued.is_some(), "a successful script's events are delivered");
}

#[test]
fn a_consumer_group_read_is_undone_too() {
    let s = Server::start(&[]);
    let mut c = s.client();
    q(&mut c, &["XADD", "x", "1-1", "f", "v"]);
    q(&mut c, &["XGROUP", "CREATE", "x", "g", "0"]);
    let before = digest(&mut c);
    // XREADGROUP's key spec calls the stream read-only, yet it creates the consumer, moves
    // the group's last id and fills its pending list.
    let body = format!("{FLAGGED}redis.call('XREADGROUP', 'GROUP', 'g', 'alice', 'STREAMS', 'x', '>') error('boom')");
    eval(&mut c, &body, &[]).expect_err("fails");
    assert_eq!(digest(&mut c), before);
    let pending: Vec<redis::Value> = redis::cmd("XPENDING").arg("x").arg("g").query(&mut c).expect("XPENDING");
    assert_eq!(pending[0], redis::Value::Int(0), "no pending entry left behind");
}

#[test]
fn commands_with_unknown_keys_are_refused_and_the_record_is_bounded() {
    let s = Server::start(&[]);
    let mut c = s.client();
    fill(&mut c);
    let before = digest(&mut c);
    for cmd in
        ["redis.call('FLUSHALL')", "redis.call('SWAPDB', 0, 1)", "redis.call('MOVE', 's', 1)", "redis.call('COPY', 's', 'c', 'DB', 1)"]
    {
        let err = eval(&mut c, &format!("{FLAGGED}redis.call('SET', 's', 'changed') {cmd}"), &[]).expect_err(cmd);
        assert!(err.to_string().contains("is not allowed in a script with rollback"), "{cmd}: {err}");
        assert_eq!(digest(&mut c), before, "{cmd}");
    }
    q(&mut c, &["CONFIG", "SET", "script-rollback-max-memory", "100000"]);
    // The record holds the entries as they were: big values overwritten with small ones.
    // The first copies fit; the later ones do not, and the whole script goes.
    let big = "for i = 1, 100 do redis.call('SET', 'big' .. i, 'small') end redis.call('SET', 's', 'changed') return 1";
    q(&mut c, &["SET", "s", "x"]);
    let value = "x".repeat(10_000);
    for i in 1..=100 {
        q(&mut c, &["SET", &format!("big{i}"), &value]);
    }
    let before = digest(&mut c);
    let err = eval(&mut c, &format!("{FLAGGED}{big}"), &[]).expect_err("over the bound");
    assert!(err.to_string().contains("script-rollback-max-memory"), "{err}");
    assert_eq!(digest(&mut c), before);
    // Even when the script catches the error and returns normally.
    let caught = big.replace("redis.call('SET', 'big'", "pcall(redis.call, 'SET', 'big'");
    let err = eval(&mut c, &format!("{FLAGGED}{caught}"), &[]).expect_err("over the bound");
    assert!(err.to_string().contains("script-rollback-max-memory"), "{err}");
    assert_eq!(digest(&mut c), before);
}

#[test]
fn the_ticket_hold_script_with_an_error_half_way_leaves_stock_and_holds_unchanged() {
    let s = Server::start(&[]);
    let mut c = s.client();
    let script = std::fs::read_to_string("data/scripts/ticket_hold.lua").expect("ticket_hold.lua");
    let failing =
        script.replace("redis.call('HINCRBY', inventory, 'held', quantity - mine)", "error('injected failure after the hold was written')");
    assert_ne!(failing, script, "the injection point exists");
    q(&mut c, &["HSET", "event:{42}", "available", "100", "held", "0", "reserved", "0", "sold", "0"]);
    let keys = ["event:{42}", "event:{42}:holds", "event:{42}:hold_qty"];
    let hold = |c: &mut Connection, body: &str, who: &str, now: &str| {
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(body).arg(3).arg(keys[0]).arg(keys[1]).arg(keys[2]).arg(who).arg(2).arg(1000).arg(now);
        cmd.query::<redis::Value>(c)
    };
    // A hold that expires before the failing call: the failing call frees it first.
    hold(&mut c, &script, "bob", "1000").expect("a hold");
    let before = digest(&mut c);
    let err = hold(&mut c, &format!("{FLAGGED}{failing}"), "alice", "5000").expect_err("injected");
    assert!(err.to_string().contains("injected failure"), "{err}");
    assert_eq!(digest(&mut c), before, "stock and holds unchanged");
    hold(&mut c, &failing, "alice", "5000").expect_err("injected");
    // Without rollback the failure leaves a hold the inventory does not count.
    assert_ne!(digest(&mut c), before, "a plain script's half-way writes stay (what rollback prevents)");
}
