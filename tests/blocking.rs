//! Blocking list commands with several real clients: served in the order they blocked, woken
//! by pushes from any client (and by BLMOVE chains), timeouts with sub-second precision, an
//! error when the key changes type, pipelines behind a blocked command, dead waiters skipped;
//! and the immediate (non-blocking) paths and errors compared with Redis.

mod common;

use std::time::{Duration, Instant};

use common::diff::DiffPair;
use common::Server;

fn s(b: Vec<u8>) -> String {
    String::from_utf8_lossy(&b).into_owned()
}

#[test]
fn push_wakes_a_blocked_client() {
    let server = Server::start(&[]);
    let mut waiter = server.raw();
    let mut pusher = server.raw();
    waiter.cmd(&[b"BLPOP", b"q", b"0"]);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(pusher.call(&[b"RPUSH", b"q", b"hello"]), b":1\r\n");
    assert_eq!(s(waiter.read_reply()), "*2\r\n$1\r\nq\r\n$5\r\nhello\r\n");
    assert_eq!(pusher.call(&[b"LLEN", b"q"]), b":0\r\n");
    let info = s(pusher.call(&[b"INFO", b"clients"]));
    assert!(info.contains("blocked_clients:0"), "{info}");
}

#[test]
fn waiters_are_served_in_blocking_order() {
    let server = Server::start(&[]);
    let mut waiters: Vec<_> = (0..3).map(|_| server.raw()).collect();
    for w in waiters.iter_mut() {
        w.cmd(&[b"BRPOP", b"a", b"b", b"0"]);
        // Make the blocking order unambiguous.
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut pusher = server.raw();
    let info = s(pusher.call(&[b"INFO", b"clients"]));
    assert!(info.contains("blocked_clients:3"), "{info}");
    // One push of three elements: each waiter gets one, first blocked first served.
    assert_eq!(pusher.call(&[b"LPUSH", b"b", b"x", b"y", b"z"]), b":3\r\n");
    let got: Vec<String> = waiters.iter_mut().map(|w| s(w.read_reply())).collect();
    assert_eq!(got, vec!["*2\r\n$1\r\nb\r\n$1\r\nx\r\n", "*2\r\n$1\r\nb\r\n$1\r\ny\r\n", "*2\r\n$1\r\nb\r\n$1\r\nz\r\n"]);
}

#[test]
fn timeouts_have_sub_second_precision() {
    let server = Server::start(&[]);
    let mut c = server.raw();
    let start = Instant::now();
    assert_eq!(c.call(&[b"BLPOP", b"nothing", b"0.25"]), b"*-1\r\n");
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(240) && took < Duration::from_millis(600), "took {took:?}");
    c.call(&[b"HELLO", b"3"]);
    let start = Instant::now();
    assert_eq!(c.call(&[b"BLMOVE", b"nothing", b"dst", b"LEFT", b"RIGHT", b"0.05"]), b"_\r\n");
    assert!(start.elapsed() < Duration::from_millis(400));
}

#[test]
fn blmove_chain_serves_the_next_waiter() {
    let server = Server::start(&[]);
    let mut mover = server.raw();
    let mut popper = server.raw();
    mover.cmd(&[b"BLMOVE", b"src", b"dst", b"RIGHT", b"LEFT", b"0"]);
    std::thread::sleep(Duration::from_millis(50));
    popper.cmd(&[b"BLPOP", b"dst", b"0"]);
    std::thread::sleep(Duration::from_millis(50));
    let mut pusher = server.raw();
    pusher.call(&[b"RPUSH", b"src", b"v"]);
    assert_eq!(s(mover.read_reply()), "$1\r\nv\r\n");
    assert_eq!(s(popper.read_reply()), "*2\r\n$3\r\ndst\r\n$1\r\nv\r\n");
    assert_eq!(pusher.call(&[b"EXISTS", b"src", b"dst"]), b":0\r\n");
}

#[test]
fn pipeline_after_a_blocked_command_waits_its_turn() {
    let server = Server::start(&[]);
    let mut c = server.raw();
    c.send(b"PING\r\nBLPOP k 0\r\nECHO after\r\n");
    assert_eq!(c.read_reply(), b"+PONG\r\n");
    std::thread::sleep(Duration::from_millis(100));
    let mut pusher = server.raw();
    pusher.call(&[b"RPUSH", b"k", b"1"]);
    assert_eq!(s(c.read_reply()), "*2\r\n$1\r\nk\r\n$1\r\n1\r\n");
    assert_eq!(s(c.read_reply()), "$5\r\nafter\r\n");
}

/// Redis 7.0 serves a list waiter from a list only: a key that becomes a string leaves it
/// blocked (no WRONGTYPE), and the list that comes later serves it.
#[test]
fn type_change_leaves_the_waiter_blocked() {
    let server = Server::start(&[]);
    let mut waiter = server.raw();
    waiter.cmd(&[b"BLPOP", b"k", b"0"]);
    std::thread::sleep(Duration::from_millis(100));
    let mut other = server.raw();
    other.call(&[b"SET", b"k", b"string"]);
    let info = s(other.call(&[b"INFO", b"clients"]));
    assert!(info.contains("blocked_clients:1"), "{info}");
    other.call(&[b"DEL", b"k"]);
    other.call(&[b"RPUSH", b"k", b"v"]);
    assert_eq!(s(waiter.read_reply()), "*2\r\n$1\r\nk\r\n$1\r\nv\r\n");
}

#[test]
fn a_dead_waiter_loses_nothing() {
    let server = Server::start(&[]);
    {
        let mut gone = server.raw();
        gone.cmd(&[b"BLPOP", b"k", b"0"]);
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(200));
    let mut c = server.raw();
    assert_eq!(c.call(&[b"RPUSH", b"k", b"kept"]), b":1\r\n");
    assert_eq!(c.call(&[b"LLEN", b"k"]), b":1\r\n");
    let info = s(c.call(&[b"INFO", b"clients"]));
    assert!(info.contains("blocked_clients:0") && info.contains("connected_clients:1"), "{info}");
}

#[test]
fn immediate_paths_and_errors_match_redis() {
    let mut d = DiffPair::start();
    d.assert_script(
        "blocking",
        &[
            "RPUSH l1 a b c",
            "RPUSH l2 x",
            "BLPOP nosuch l1 l2 0",
            "BRPOP l2 l1 1",
            "BLMOVE l1 l3 LEFT RIGHT 0",
            "BRPOPLPUSH l1 l3 0",
            "LRANGE l3 0 -1",
            "RPUSH l4 1 2 3 4 5",
            "BLMPOP 0 2 nosuch l4 LEFT COUNT 2",
            "BLMPOP 0 1 l4 RIGHT",
            "SET s v",
            "BLPOP s 0",
            "BLMOVE s l3 LEFT LEFT 0",
            "BLMOVE l3 s LEFT LEFT 0",
            "BLPOP l4 -1",
            "BLPOP l4 abc",
            "BLPOP l4 inf",
            "BLPOP nosuch 0.01",
            "BLMOVE l3 l5 UP LEFT 0",
            "BLMOVE l3 l5 LEFT RIGHT x",
            "BLMPOP x 1 l4 LEFT",
            "BLMPOP 0 0 l4 LEFT",
            "BLMPOP 0 1 l4 MIDDLE",
            "BLMPOP 0 1 l4 LEFT COUNT 0",
            "BLMPOP 0 5 l4 LEFT",
            "BLPOP",
            "BRPOPLPUSH a b",
        ],
    );
}

/// Timeouts round up to the millisecond, as Redis's `ceill`: under 1 ms waits 1 ms (not
/// forever), and a negative one above -1 ms is 0 (forever, not an error).
#[test]
fn timeouts_under_a_millisecond_round_up() {
    let mut d = DiffPair::start();
    d.assert_script(
        "sub-ms timeouts",
        &[
            "BLPOP nokey 0.0005",
            "BRPOP nokey 1e-9",
            "BZPOPMIN nokey 0.0001",
            "BZMPOP 0.0009 1 nokey MIN",
            "BLMPOP 0.0005 1 nokey LEFT",
            "BLMOVE nokey d LEFT LEFT 0.0005",
            "BLPOP nokey -0.0011",
            "BLPOP nokey -1",
        ],
    );
    let server = Server::start(&[]);
    let mut waiter = server.raw();
    let mut pusher = server.raw();
    waiter.cmd(&[b"BLPOP", b"q", b"-0.0005"]);
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(pusher.call(&[b"RPUSH", b"q", b"v"]), b":1\r\n");
    assert_eq!(s(waiter.read_reply()), "*2\r\n$1\r\nq\r\n$1\r\nv\r\n");
}

/// CLIENT UNBLOCK: a client in a blocking command (or WAIT) gets its timeout reply (TIMEOUT,
/// the default) or the UNBLOCKED error, its pipeline goes on, and Redis 7.0's accounting
/// (the command counted as failed, the UNBLOCKED error in errorstats) holds; a client not
/// blocked gives 0. Compared byte for byte with Redis, RESP2 and RESP3.
#[test]
fn client_unblock_matches_redis() {
    let mut d = DiffPair::start();
    let blocks: &[&[&str]] = &[
        &["BLPOP", "k", "0"],
        &["BRPOPLPUSH", "a", "b", "0"],
        &["BLMOVE", "a", "b", "LEFT", "RIGHT", "100"],
        &["BZPOPMIN", "z", "0"],
        &["BLMPOP", "0", "1", "k", "LEFT"],
        &["WAIT", "1", "0"],
    ];
    for proto in [2u8, 3] {
        for block in blocks {
            for mode in [None, Some("TIMEOUT"), Some("error")] {
                d.reset_conns();
                if let Err(diff) = d.check(&["CONFIG", "RESETSTAT"]) {
                    panic!("{diff}");
                }
                let mut ids = Vec::new();
                {
                    let (r, o) = d.conns(1);
                    for c in [r, o] {
                        if proto == 3 {
                            assert!(c.call(&["HELLO", "3"]).is_ok());
                        }
                        let id = c.call(&["CLIENT", "ID"]).expect("client id").value.as_int().expect("id");
                        ids.push(id.to_string());
                        let mut pipeline = common::diff::encode_cmd(block);
                        pipeline.extend(common::diff::encode_cmd(&["PING", "after"]));
                        c.send(&pipeline).expect("send");
                    }
                }
                std::thread::sleep(Duration::from_millis(100));
                let what = format!("RESP{proto} {block:?} {mode:?}");
                let (r0, o0) = d.conns(0);
                let unblock = |c: &mut common::diff::Conn, id: &str| {
                    let mut args = vec!["CLIENT", "UNBLOCK", id];
                    args.extend(mode);
                    c.call(&args).expect("unblock").raw
                };
                assert_eq!(unblock(r0, &ids[0]), b":1\r\n", "{what}");
                assert_eq!(unblock(o0, &ids[1]), b":1\r\n", "{what}");
                let (r1, o1) = d.conns(1);
                let theirs = [r1.read().expect("reply").raw, r1.read().expect("pong").raw];
                let ours = [o1.read().expect("reply").raw, o1.read().expect("pong").raw];
                assert_eq!(ours, theirs, "{what}");
                // Once answered it is not blocked any more.
                let (r0, o0) = d.conns(0);
                assert_eq!(r0.call(&["CLIENT", "UNBLOCK", &ids[0]]).expect("again").raw, b":0\r\n");
                assert_eq!(o0.call(&["CLIENT", "UNBLOCK", &ids[1]]).expect("again").raw, b":0\r\n");
                let stats = |c: &mut common::diff::Conn| {
                    let info = c.call(&["INFO", "commandstats"]).expect("info").value.as_bytes().map(|b| b.to_vec()).unwrap_or_default();
                    let info = String::from_utf8_lossy(&info).into_owned();
                    let errors = c.call(&["INFO", "errorstats"]).expect("info").raw;
                    let name = format!("cmdstat_{}:", block[0].to_lowercase());
                    let line = info
                        .lines()
                        .find(|l| l.starts_with(&name))
                        .map(|l| l.split(",usec").next().unwrap_or("").to_string() + &l[l.find(",rejected").unwrap_or(l.len())..]);
                    (line, errors)
                };
                assert_eq!(stats(o0), stats(r0), "{what}");
            }
        }
    }
    d.reset_conns();
    d.assert_script(
        "unblock errors",
        &[
            "CLIENT UNBLOCK 1 2 3",
            "CLIENT UNBLOCK abc",
            "CLIENT UNBLOCK abc foo",
            "CLIENT UNBLOCK 99 foo",
            "CLIENT UNBLOCK 99 error",
            "CLIENT UNBLOCK -1",
            "CLIENT UNBLOCK 1.5",
            "CLIENT UNBLOCK",
        ],
    );
}

/// A client held by CLIENT PAUSE is not blocked: CLIENT UNBLOCK gives 0 and the command runs
/// after the pause (Redis 7.0.15 aborts on this one: "Unknown btype").
#[test]
fn client_unblock_leaves_paused_clients_alone() {
    let server = Server::start(&[]);
    let mut held = server.raw();
    let mut admin = server.raw();
    let id = s(held.call(&[b"CLIENT", b"ID"]));
    let id = id.trim_start_matches(':').trim_end();
    assert_eq!(admin.call(&[b"CLIENT", b"PAUSE", b"5000", b"WRITE"]), b"+OK\r\n");
    held.cmd(&[b"BLPOP", b"k", b"0"]);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(admin.call(&[b"CLIENT", b"UNBLOCK", id.as_bytes()]), b":0\r\n");
    assert_eq!(admin.call(&[b"CLIENT", b"UNPAUSE"]), b"+OK\r\n");
    std::thread::sleep(Duration::from_millis(100));
    // Now it is blocked on the key, and can be unblocked.
    assert_eq!(admin.call(&[b"CLIENT", b"UNBLOCK", id.as_bytes(), b"ERROR"]), b":1\r\n");
    assert_eq!(s(held.read_reply()), "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n");
}

fn cmd(text: &str) -> Vec<String> {
    text.split(' ').map(String::from).collect()
}

/// CLIENT UNBLOCK acts within the command, as in Redis: a push right after it in the same
/// pipeline stays in the list; a second UNBLOCK of the same client answers 0 and its next
/// command still runs; an UNBLOCK in a pipeline that resumes after a timeout takes effect.
/// And a waiter is served right after the command that pushed, before the pusher's next
/// one (Redis serves blocked clients after every command).
#[test]
fn client_unblock_acts_within_the_command() {
    use common::diff::{encode_cmd, Conn};
    let mut d = DiffPair::start();
    let id = |c: &mut Conn| c.call(&["CLIENT", "ID"]).expect("id").value.as_int().expect("int").to_string();
    // (the blocked client's pipeline, the other client's commands given the target's id, how
    // many replies each reads)
    type Case<'a> = (&'a [&'a [&'a str]], fn(&str) -> Vec<Vec<String>>, usize, usize);
    let cases: [Case; 6] = [
        (
            &[&["BLPOP", "a", "0"]],
            |t| {
                vec![
                    vec!["CLIENT".into(), "UNBLOCK".into(), t.into()],
                    vec!["LPUSH".into(), "a".into(), "x".into()],
                    vec!["LLEN".into(), "a".into()],
                ]
            },
            3,
            1,
        ),
        (
            &[&["BLPOP", "a", "0"], &["SET", "x", "1"]],
            |t| {
                vec![
                    vec!["CLIENT".into(), "UNBLOCK".into(), t.into()],
                    vec!["CLIENT".into(), "UNBLOCK".into(), t.into(), "ERROR".into()],
                    vec!["GET".into(), "x".into()],
                ]
            },
            3,
            2,
        ),
        (
            &[&["BLPOP", "a", "0"]],
            |t| vec![vec!["BLPOP".into(), "q".into(), "0.1".into()], vec!["CLIENT".into(), "UNBLOCK".into(), t.into()]],
            2,
            1,
        ),
        // A waiter is served right after the push, before the pusher's next command.
        (&[&["BLPOP", "l", "0"], &["PING"]], |_| vec![cmd("RPUSH l v1"), cmd("LPOP l"), cmd("LRANGE l 0 -1")], 3, 2),
        (&[&["BLPOP", "l", "0"], &["PING"]], |_| vec![cmd("RPUSH l v1"), cmd("RPUSH l v2"), cmd("LRANGE l 0 -1")], 3, 2),
        (&[&["BLPOP", "l", "0"], &["PING"]], |_| vec![cmd("RPUSH l v1"), cmd("DEL l"), cmd("LRANGE l 0 -1")], 3, 2),
    ];
    for (blocked_cmds, unblocker, unblocker_replies, blocked_replies) in cases {
        d.reset_conns();
        let _ = d.check(&["FLUSHALL"]);
        let mut outcome = Vec::new();
        for side in 0..2 {
            let (r1, o1) = d.conns(1);
            let target = if side == 0 { r1 } else { o1 };
            let target_id = id(target);
            let mut bytes = Vec::new();
            for c in blocked_cmds {
                bytes.extend(encode_cmd(c));
            }
            target.send(&bytes).expect("send");
            std::thread::sleep(std::time::Duration::from_millis(100));
            let (r0, o0) = d.conns(0);
            let other = if side == 0 { r0 } else { o0 };
            let mut bytes = Vec::new();
            for c in unblocker(&target_id) {
                bytes.extend(encode_cmd(&c));
            }
            other.send(&bytes).expect("send");
            let theirs: Vec<Vec<u8>> = (0..unblocker_replies).map(|_| other.read().expect("reply").raw).collect();
            let (r1, o1) = d.conns(1);
            let target = if side == 0 { r1 } else { o1 };
            let mine: Vec<Vec<u8>> = (0..blocked_replies).map(|_| target.read().expect("reply").raw).collect();
            outcome.push((theirs, mine));
        }
        assert_eq!(outcome[1], outcome[0], "{blocked_cmds:?}");
    }
}
