//! Pub/Sub with real clients: reply shapes and subscribed-mode errors compared with Redis in
//! RESP2 and RESP3, several subscribers and patterns receiving every message in publish order,
//! PUBLISH inside MULTI delivered after EXEC, a subscriber that never reads being
//! disconnected (output buffer limit) while the server's memory returns near its baseline, and
//! pushes kept back under load (`Executor::release_batch`) arriving complete, in order and
//! within milliseconds.

mod common;

use std::io::Read;
use std::time::{Duration, Instant};

use common::diff::DiffPair;
use common::Server;

/// The tests that load the server (100 MB to a subscriber, the timed publish load) take turns,
/// so that the latency one measures is not the others' load.
static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn heavy() -> std::sync::MutexGuard<'static, ()> {
    HEAVY.lock().unwrap_or_else(|e| e.into_inner())
}

fn s(b: Vec<u8>) -> String {
    String::from_utf8_lossy(&b).into_owned()
}

#[test]
fn shapes_and_subscribed_mode_match_redis() {
    let mut d = DiffPair::start();
    d.assert_script(
        "pubsub resp2",
        &[
            "UNSUBSCRIBE",
            "PUNSUBSCRIBE",
            "SUNSUBSCRIBE",
            "SUBSCRIBE a b",
            "PSUBSCRIBE h*",
            "SSUBSCRIBE s1",
            "PING",
            "PING x",
            "GET a",
            "MULTI",
            "UNSUBSCRIBE b",
            "UNSUBSCRIBE a",
            "PUNSUBSCRIBE h*",
            "SUNSUBSCRIBE s1",
            "GET a",
            "PUBSUB NUMSUB a b",
            "PUBSUB NUMPAT",
            "PUBSUB FOO",
            "PUBSUB HELP",
            "PUBLISH nobody hi",
        ],
    );
    // Connection 1 subscribes; connection 0 publishes and inspects.
    d.assert_script(
        "pubsub two clients",
        &[
            "1> SUBSCRIBE news",
            "1> PSUBSCRIBE n*",
            "0> PUBSUB CHANNELS",
            "0> PUBSUB CHANNELS n*",
            "0> PUBSUB NUMSUB news other",
            "0> PUBSUB NUMPAT",
            "0> PUBLISH news hello",
        ],
    );
    d.on(1);
    // The two messages (channel, then pattern) reach connection 1 on both servers alike.
    d.check_raw(b"", 2, common::diff::Cmp::Exact).expect("messages");
    d.on(2).hello(3).expect("hello").expect("resp3");
    d.assert_script(
        "pubsub resp3",
        &["2> SUBSCRIBE self", "2> PUBLISH self hi", "2> GET nokey", "2> PING", "2> UNSUBSCRIBE self", "2> UNSUBSCRIBE"],
    );
}

#[test]
fn every_subscriber_gets_every_message_in_order() {
    let server = Server::start(&[]);
    let mut subs: Vec<_> = (0..3).map(|_| server.raw()).collect();
    assert_eq!(s(subs[0].call(&[b"SUBSCRIBE", b"ch"])), "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n");
    assert_eq!(s(subs[1].call(&[b"PSUBSCRIBE", b"c*"])), "*3\r\n$10\r\npsubscribe\r\n$2\r\nc*\r\n:1\r\n");
    subs[2].call(&[b"HELLO", b"3"]);
    assert_eq!(s(subs[2].call(&[b"SUBSCRIBE", b"ch"])), ">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n");
    let mut publisher = server.raw();
    for i in 0..200 {
        let msg = format!("m{i}");
        assert_eq!(publisher.call(&[b"PUBLISH", b"ch", msg.as_bytes()]), b":3\r\n");
    }
    for i in 0..200 {
        let msg = format!("m{i}");
        let len = msg.len();
        assert_eq!(s(subs[0].read_reply()), format!("*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n${len}\r\n{msg}\r\n"));
        assert_eq!(s(subs[1].read_reply()), format!("*4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\nch\r\n${len}\r\n{msg}\r\n"));
        assert_eq!(s(subs[2].read_reply()), format!(">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n${len}\r\n{msg}\r\n"));
    }
}

/// Many messages to the same subscribers in one batch (a pipelined publisher), then in a
/// second batch: each subscriber is released once per batch and must still get them all.
#[test]
fn pipelined_publishes_reach_every_subscriber_in_order() {
    let server = Server::start(&[]);
    let mut both = server.raw();
    both.call(&[b"SUBSCRIBE", b"ch"]);
    both.call(&[b"PSUBSCRIBE", b"c*"]);
    let mut resp3 = server.raw();
    resp3.call(&[b"HELLO", b"3"]);
    resp3.call(&[b"SUBSCRIBE", b"ch"]);
    let mut publisher = server.raw();
    for batch in 0..2 {
        let mut pipeline = Vec::new();
        for i in 0..300 {
            let msg = format!("b{batch}m{i}");
            pipeline.extend_from_slice(format!("*3\r\n$7\r\nPUBLISH\r\n$2\r\nch\r\n${}\r\n{msg}\r\n", msg.len()).as_bytes());
        }
        publisher.send(&pipeline);
        for _ in 0..300 {
            assert_eq!(publisher.read_reply(), b":3\r\n");
        }
        for i in 0..300 {
            let msg = format!("b{batch}m{i}");
            let len = msg.len();
            assert_eq!(s(both.read_reply()), format!("*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n${len}\r\n{msg}\r\n"));
            assert_eq!(s(both.read_reply()), format!("*4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\nch\r\n${len}\r\n{msg}\r\n"));
            assert_eq!(s(resp3.read_reply()), format!(">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n${len}\r\n{msg}\r\n"));
        }
    }
}

#[test]
fn publish_inside_multi_is_delivered_after_exec() {
    let server = Server::start(&[]);
    let mut sub = server.raw();
    sub.call(&[b"SUBSCRIBE", b"t"]);
    let mut p = server.raw();
    p.call(&[b"MULTI"]);
    assert_eq!(p.call(&[b"PUBLISH", b"t", b"one"]), b"+QUEUED\r\n");
    assert_eq!(p.call(&[b"PUBLISH", b"t", b"two"]), b"+QUEUED\r\n");
    // Nothing has arrived before EXEC.
    sub.stream.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let mut probe = [0u8; 1];
    assert!(sub.stream.read(&mut probe).is_err(), "a message arrived before EXEC");
    sub.stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(p.call(&[b"EXEC"]), b"*2\r\n:1\r\n:1\r\n");
    assert!(s(sub.read_reply()).ends_with("$3\r\none\r\n"));
    assert!(s(sub.read_reply()).ends_with("$3\r\ntwo\r\n"));
}

fn rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse().ok()).unwrap_or(0)
}

#[test]
fn a_subscriber_that_never_reads_is_disconnected() {
    let _turn = heavy();
    let server = Server::start(&[]);
    let mut slow = server.raw();
    slow.call(&[b"SUBSCRIBE", b"firehose"]);
    let mut p = server.raw();
    let baseline = rss_kb(server.pid());
    let chunk = vec![b'x'; 1024 * 1024];
    let start = Instant::now();
    let mut delivered_to = Vec::new();
    for _ in 0..100 {
        let r = p.call(&[b"PUBLISH", b"firehose", &chunk]);
        delivered_to.push(r);
    }
    // Past the 32 MB pubsub hard limit the subscriber is gone: later publishes reach nobody.
    assert_eq!(delivered_to.last().map(|r| r.as_slice()), Some(&b":0\r\n"[..]), "subscriber still attached");
    assert!(start.elapsed() < Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(500));
    let after = rss_kb(server.pid());
    assert!(after < baseline + 48 * 1024, "RSS grew from {baseline} kB to {after} kB");
    let info = s(p.call(&[b"INFO", b"clients"]));
    assert!(info.contains("connected_clients:1"), "{info}");
}

/// The soft limit: over it for longer than its time, a subscriber is disconnected; over it
/// briefly (it reads again in time), it stays. The hard limit is out of reach here.
#[test]
fn soft_output_limit_disconnects_after_its_time() {
    let _turn = heavy();
    let server = Server::start(&["--client-output-buffer-limit", "pubsub 0 1mb 1"]);
    let mut p = server.raw();
    let chunk = vec![b'x'; 256 * 1024];
    // A subscriber that never reads: over 1 MB queued for more than a second.
    let mut slow = server.raw();
    slow.call(&[b"SUBSCRIBE", b"soft"]);
    let start = Instant::now();
    let mut first_zero = None;
    while start.elapsed() < Duration::from_secs(6) {
        if p.call(&[b"PUBLISH", b"soft", &chunk]) == b":0\r\n" {
            first_zero = Some(start.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let gone_after = first_zero.expect("a subscriber over the soft limit for its time is disconnected");
    assert!(gone_after >= Duration::from_millis(900), "disconnected after {gone_after:?}, before the soft limit's second");
    // A subscriber that goes over the soft limit, then reads everything within the second.
    let mut reader = server.raw();
    reader.call(&[b"SUBSCRIBE", b"burst"]);
    for _ in 0..16 {
        assert_eq!(p.call(&[b"PUBLISH", b"burst", &chunk]), b":1\r\n");
    }
    let mut got = 0usize;
    let want = 16 * (chunk.len() + 40);
    while got < want - 16 * 40 {
        got += reader.read_exact_n(64 * 1024).len();
    }
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(p.call(&[b"PUBLISH", b"burst", b"small"]), b":1\r\n", "a subscriber that drained in time stays");
}

/// One frame of a subscriber's stream: the elements of an array or push of bulk strings and
/// integers, or a simple string's text as the one element.
fn read_frame(r: &mut std::io::BufReader<std::net::TcpStream>) -> Vec<String> {
    use std::io::BufRead;
    fn line(r: &mut std::io::BufReader<std::net::TcpStream>) -> String {
        let mut l = String::new();
        r.read_line(&mut l).expect("read line");
        assert!(l.ends_with("\r\n"), "stream ended: {l:?}");
        l.truncate(l.len() - 2);
        l
    }
    let head = line(r);
    match head.as_bytes().first() {
        Some(b'*' | b'>') => {
            let n: usize = head[1..].parse().expect("length");
            (0..n)
                .map(|_| {
                    let item = line(r);
                    if let Some(len) = item.strip_prefix('$') {
                        let len: usize = len.parse().expect("bulk length");
                        let mut buf = vec![0u8; len + 2];
                        r.read_exact(&mut buf).expect("bulk");
                        String::from_utf8_lossy(&buf[..len]).into_owned()
                    } else {
                        item
                    }
                })
                .collect()
        }
        _ => vec![head],
    }
}

/// While publishers keep the server busy, a subscriber's pushes may wait for the batches
/// that follow (at most 200 us, see `Executor::release_batch`). They must still all arrive,
/// in each publisher's order; a RESP3 subscriber's PONG must come after every message whose
/// PUBLISH was acknowledged before the PING left; and a probe published every 5 ms meanwhile
/// must arrive within milliseconds, not once the server is idle. (This checks the hold's
/// correctness; its effect is measured by benches/compare-pubsub.sh.)
#[test]
fn pushes_kept_back_under_load_arrive_complete_in_order_and_soon() {
    let _turn = heavy();
    use std::io::{BufReader, Write};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    const PUBLISHERS: usize = 8;
    let server = Server::start(&[]);
    let base = Instant::now();
    // Per publisher, how many of its messages its PUBLISH replies have acknowledged.
    let acked: Arc<Vec<AtomicU64>> = Arc::new((0..PUBLISHERS).map(|_| AtomicU64::new(0)).collect());
    let subscribe = |args: &[&[u8]], hello3: bool| {
        let mut c = server.raw();
        if hello3 {
            c.call(&[b"HELLO", b"3"]);
        }
        let reply = c.call(args);
        assert!(s(reply).contains(":1\r\n"));
        c.stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        c.stream
    };
    // Reads messages until every publisher's "end", checking each publisher's sequence;
    // `ping` makes it ask for a PONG every 2 ms meanwhile and check what arrived before it.
    let reader = |stream: std::net::TcpStream, ping: bool| {
        let acked = acked.clone();
        std::thread::spawn(move || {
            let mut w = stream.try_clone().unwrap();
            let mut r = BufReader::new(stream);
            let mut next = [0u64; PUBLISHERS];
            let mut ended = 0;
            let mut pongs = 0;
            let mut last_ping = Instant::now();
            // The acknowledged counts when the PING left, while a PONG is awaited.
            let mut awaiting: Option<Vec<u64>> = None;
            while ended < PUBLISHERS || awaiting.is_some() {
                if ping && awaiting.is_none() && ended < PUBLISHERS && last_ping.elapsed() >= Duration::from_millis(2) {
                    awaiting = Some(acked.iter().map(|a| a.load(Ordering::Acquire)).collect());
                    w.write_all(b"*1\r\n$4\r\nPING\r\n").unwrap();
                    last_ping = Instant::now();
                }
                let f = read_frame(&mut r);
                if f == ["+PONG"] {
                    let before = awaiting.take().expect("a PONG nobody asked for");
                    for (t, &n) in before.iter().enumerate() {
                        assert!(next[t] >= n, "PONG before message {}:{} (published and acknowledged before the PING)", t, next[t]);
                    }
                    pongs += 1;
                    continue;
                }
                let payload = f.last().expect("payload").clone();
                assert!(f[0] == "message" || f[0] == "pmessage", "unexpected frame {f:?}");
                let (t, i) = payload.split_once(':').expect("t:i");
                let t: usize = t.parse().unwrap();
                if i == "end" {
                    assert!(next[t] > 0, "publisher {t} ended before any message");
                    ended += 1;
                } else {
                    assert_eq!(i.parse::<u64>().unwrap(), next[t], "publisher {t}'s messages out of order");
                    next[t] += 1;
                }
            }
            (next, pongs)
        })
    };
    let readers = vec![
        reader(subscribe(&[b"SUBSCRIBE", b"load"], false), false),
        reader(subscribe(&[b"PSUBSCRIBE", b"lo*"], false), false),
        reader(subscribe(&[b"SUBSCRIBE", b"load"], true), true),
    ];
    let probe_sub = subscribe(&[b"SUBSCRIBE", b"probe"], false);
    let probe_reader = std::thread::spawn(move || {
        let mut r = BufReader::new(probe_sub);
        let mut latencies = Vec::new();
        loop {
            let f = read_frame(&mut r);
            let payload = f.last().expect("payload");
            if payload == "stop" {
                return latencies;
            }
            let sent: u128 = payload.parse().unwrap();
            latencies.push(base.elapsed().as_micros() - sent);
        }
    });
    let publishers: Vec<_> = (0..PUBLISHERS)
        .map(|t| {
            let mut c = server.raw();
            let acked = acked.clone();
            std::thread::spawn(move || {
                let until = Instant::now() + Duration::from_millis(1500);
                let mut i = 0u64;
                // Pipelines of 32 keep the server's batches coming back to back.
                while Instant::now() < until {
                    let mut pipeline = Vec::new();
                    for k in 0..32 {
                        let msg = format!("{t}:{}", i + k);
                        pipeline.extend_from_slice(format!("*3\r\n$7\r\nPUBLISH\r\n$4\r\nload\r\n${}\r\n{msg}\r\n", msg.len()).as_bytes());
                    }
                    c.send(&pipeline);
                    assert_eq!(c.read_exact_n(4 * 32), b":3\r\n".repeat(32));
                    i += 32;
                    acked[t].store(i, Ordering::Release);
                }
                assert_eq!(c.call(&[b"PUBLISH", b"load", format!("{t}:end").as_bytes()]), b":3\r\n");
                i
            })
        })
        .collect();
    let mut prober = server.raw();
    while publishers.iter().any(|p| !p.is_finished()) {
        let stamp = base.elapsed().as_micros().to_string();
        assert_eq!(prober.call(&[b"PUBLISH", b"probe", stamp.as_bytes()]), b":1\r\n");
        std::thread::sleep(Duration::from_millis(5));
    }
    let sent: Vec<u64> = publishers.into_iter().map(|p| p.join().unwrap()).collect();
    assert_eq!(prober.call(&[b"PUBLISH", b"probe", b"stop"]), b":1\r\n");
    for (k, r) in readers.into_iter().enumerate() {
        let (got, pongs) = r.join().unwrap();
        assert_eq!(got.to_vec(), sent, "subscriber {k} missed messages");
        if k == 2 {
            assert!(pongs > 10, "only {pongs} PINGs answered during the load");
        }
    }
    let mut latencies = probe_reader.join().unwrap();
    assert!(latencies.len() > 20, "{} probes", latencies.len());
    // With the 200 us bound the median reads 0.65-0.75 ms (release build) or 2.8-3.1 ms (debug
    // build); held without a bound, 23-29 ms (release), and the debug build's RESP3 subscriber
    // got at most 10 PONGs.
    latencies.sort_unstable();
    let median = latencies[latencies.len() / 2];
    assert!(median < 15_000, "median probe latency {median} us");
    let worst = latencies[latencies.len() - 1];
    assert!(worst < 500_000, "a probe took {worst} us");
}

/// A message published just before a script that turns busy reaches its subscriber before
/// the BUSY answer to the subscriber's next command (the answer comes from the connection,
/// the message from the executor: what the executor owes leaves first).
#[test]
fn a_message_published_before_a_busy_script_arrives_before_the_busy_answer() {
    let server = Server::start(&["--busy-reply-threshold", "100"]);
    let mut sub = server.raw();
    assert!(s(sub.call(&[b"SUBSCRIBE", b"ch"])).ends_with(":1\r\n"));
    let mut runner = server.raw();
    let mut pipeline = common::diff::encode_cmd(&["PUBLISH", "ch", "before"]);
    pipeline.extend(common::diff::encode_cmd(&["EVAL", "local i = 0 while true do i = i + 1 end", "0"]));
    runner.send(&pipeline);
    // The script runs (its batch began) but is not busy yet when the PING reaches the server.
    std::thread::sleep(Duration::from_millis(30));
    sub.cmd(&[b"PING"]);
    assert_eq!(s(sub.read_reply()), "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$6\r\nbefore\r\n");
    let busy = s(sub.read_reply());
    assert!(busy.starts_with("-BUSY"), "{busy}");
    let mut admin = server.raw();
    assert_eq!(admin.call(&[b"SCRIPT", b"KILL"]), b"+OK\r\n");
    assert_eq!(runner.read_reply(), b":1\r\n");
    assert!(s(runner.read_reply()).starts_with("-ERR Script killed by user"));
}

/// Found by the pub/sub differential sweep: PUBSUB CHANNELS takes one pattern; EXEC from a
/// subscribed RESP2 client is an EXECABORT; a RESP3 client's own pushes from its script are
/// RESP3 pushes; OBJECT on a missing key fires no keymiss event; CR and LF inside an error
/// that echoes an argument go out as spaces (they broke the stream); ACL patterns may not
/// hold whitespace.
#[test]
fn pubsub_sweep_cases_match_redis() {
    use common::diff::{encode_cmd, same, Cmp};
    let mut d = DiffPair::start();
    d.assert_script(
        "pubsub and errors",
        &[
            "PUBSUB CHANNELS a b",
            "PUBSUB SHARDCHANNELS a b",
            "PUBSUB CHANNELS *",
            "CONFIG SET \"a\\r\\nb\" 1",
            "ACL CAT \"a\\r\\nb\"",
            "CLIENT LIST TYPE \"a\\r\\nb\"",
            "ACL SETUSER u1 \"~a b\"",
            "ACL SETUSER u1 \"&a\\tb\"",
            "ACL SETUSER u1 \"%R~a b\"",
            "ACL DELUSER u1",
            "1>SUBSCRIBE c",
            "1>EXEC",
            "1>MULTI",
            "1>EXEC",
        ],
    );
    d.check_raw(b"*1\r\n\r\n", 1, Cmp::Exact).unwrap();
    // A RESP3 subscriber publishing from its own script gets a push, then the count.
    d.reset_conns();
    let _ = d.hello(3).expect("HELLO 3");
    d.assert_script("resp3 subscriber", &["SUBSCRIBE c"]);
    let publish = encode_cmd(&["EVAL", "return redis.call('publish','c','x')", "0"]);
    d.check_raw(&publish, 2, Cmp::Exact).unwrap();
    // keymiss: OBJECT on a missing key is silent, GET is not.
    d.reset_conns();
    d.assert_script(
        "keymiss",
        &["CONFIG SET notify-keyspace-events Em", "1>SUBSCRIBE __keyevent@0__:keymiss", "0>OBJECT ENCODING nokey", "GET nokey2"],
    );
    let (r, o) = d.conns(1);
    let (a, b) = (r.read(), o.read());
    assert!(same(&a, &b, Cmp::Exact), "keymiss message: redis {a:?}, ours {b:?}");
    assert!(b.as_ref().is_ok_and(|r| r.raw.ends_with(b"$6\r\nnokey2\r\n")), "{b:?}");
}

/// CLIENT LIST flags in Redis's letters and order: O for MONITOR, e for NO-EVICT, t and B
/// for tracking.
#[test]
fn client_list_flags_use_redis_letters() {
    let server = Server::start(&[]);
    let mut m = server.raw();
    assert_eq!(m.call(&[b"MONITOR"]), b"+OK\r\n");
    let mut c = server.raw();
    assert_eq!(c.call(&[b"CLIENT", b"NO-EVICT", b"on"]), b"+OK\r\n");
    assert_eq!(c.call(&[b"CLIENT", b"TRACKING", b"on", b"BCAST"]), b"+OK\r\n");
    let info = String::from_utf8_lossy(&c.call(&[b"CLIENT", b"INFO"])).into_owned();
    assert!(info.contains(" flags=tBe "), "{info}");
    let list = String::from_utf8_lossy(&c.call(&[b"CLIENT", b"LIST"])).into_owned();
    assert!(list.contains(" flags=O "), "{list}");
}
