//! Many connections at once, read by the executor thread itself (io-threads 1): every one is
//! served and released, a pipeline past the in-flight limit goes on, and a client that leaves
//! while a script holds the executor frees its maxclients slot at once.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Server;

/// Runs redis-benchmark against `port`, killed after `limit`; returns its output.
fn benchmark(port: u16, args: &[&str], limit: Duration) -> String {
    let mut child = Command::new("redis-benchmark")
        .args(["-p", &port.to_string(), "-q"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-benchmark runs");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("redis-benchmark {args:?} did not finish within {limit:?}: a connection was never read again");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    String::from_utf8_lossy(&out.stdout).replace('\r', "\n")
}

fn connected_clients(c: &mut redis::Connection) -> i64 {
    let info: String = redis::cmd("INFO").arg("clients").query(c).expect("INFO");
    info.lines().find_map(|l| l.strip_prefix("connected_clients:")).and_then(|v| v.trim().parse().ok()).expect("connected_clients")
}

/// Waits until `c`'s is the only connection left.
fn wait_alone(c: &mut redis::Connection) {
    let start = Instant::now();
    while connected_clients(c) != 1 {
        assert!(start.elapsed() < Duration::from_secs(10), "connected_clients stays at {}, not 1", connected_clients(c));
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn hundreds_of_clients_at_once_are_all_served_and_released() {
    let server = Server::start(&["--maxclients", "2000"]);
    let mut c = server.client();
    for clients in ["600", "1000"] {
        let out = benchmark(server.port, &["-c", clients, "-n", "40000", "-t", "ping_mbulk,set,get"], Duration::from_secs(60));
        for test in ["PING_MBULK", "SET", "GET"] {
            assert!(
                out.lines().any(|l| l.starts_with(&format!("{test}: ")) && l.contains("requests per second")),
                "{clients} clients, {test}: {out}"
            );
        }
        // Every benchmark connection's end is seen: only ours is left.
        wait_alone(&mut c);
    }
    let size: i64 = redis::cmd("DBSIZE").query(&mut c).expect("DBSIZE");
    assert_eq!(size, 1, "SET wrote key:__rand_int__ without -r");
}

#[test]
fn pipelines_past_the_in_flight_limit_go_on_beside_other_clients() {
    let server = Server::start(&[]);
    // 64 commands of 8 KB per pipeline: reads fill the buffer, so a connection reaches
    // the in-flight limit and must be read again once answered.
    let out = benchmark(server.port, &["-c", "20", "-n", "40000", "-P", "64", "-d", "8192", "-t", "set,lpush"], Duration::from_secs(60));
    assert!(out.contains("SET: ") && out.contains("LPUSH: "), "{out}");
    let mut c = server.client();
    let len: i64 = redis::cmd("LLEN").arg("mylist").query(&mut c).expect("LLEN");
    assert_eq!(len, 40000);
    wait_alone(&mut c);
}

#[test]
fn a_client_that_leaves_during_a_busy_script_frees_its_slot() {
    let server = Server::start(&["--maxclients", "3", "--busy-reply-threshold", "50"]);
    let mut runner = server.raw();
    runner.cmd(&[b"EVAL", b"while true do end", b"0"]);
    std::thread::sleep(Duration::from_millis(200));
    // maxclients 3: the runner plus one at a time; each leaves before the next comes.
    for round in 0..6 {
        let mut c = server.raw();
        let reply = String::from_utf8_lossy(&c.call(&[b"PING"])).into_owned();
        assert!(reply.starts_with("-BUSY"), "round {round}: {reply}");
        drop(c);
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut killer = server.raw();
    assert_eq!(killer.call(&[b"SCRIPT", b"KILL"]), b"+OK\r\n");
    let reply = String::from_utf8_lossy(&runner.read_reply()).into_owned();
    assert!(reply.contains("Script killed by user"), "{reply}");
    assert_eq!(killer.call(&[b"PING"]), b"+PONG\r\n");
}

/// One client's share of the random workload: pipelines of INCR and APPEND cut at random
/// byte boundaries, written in pieces with pauses; every reply is checked in order. Some
/// clients leave in the middle of a pipeline. Returns (key, expected counter) for a client
/// that stayed.
fn random_client(port: u16, seed: u64) -> Option<(String, i64)> {
    use std::io::{Read, Write};
    let mut rng = common::Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut sock = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    sock.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    let key = format!("c:{seed}");
    let mut count = 0i64;
    let leaves = rng.below(4) == 0;
    for round in 0..rng.below(30) + 10 {
        let n = rng.below(40) + 1;
        let mut bytes = Vec::new();
        let mut expected = Vec::new();
        for _ in 0..n {
            if rng.below(3) == 0 {
                let len = rng.below(20_000) as usize;
                let value = vec![b'x'; len];
                bytes.extend_from_slice(
                    format!("*3\r\n$6\r\nAPPEND\r\n${}\r\na:{seed}\r\n${len}\r\n", format!("a:{seed}").len()).as_bytes(),
                );
                bytes.extend_from_slice(&value);
                bytes.extend_from_slice(b"\r\n");
                expected.push(None);
            } else {
                bytes.extend_from_slice(format!("*2\r\n$4\r\nINCR\r\n${}\r\n{key}\r\n", key.len()).as_bytes());
                count += 1;
                expected.push(Some(format!(":{count}\r\n")));
            }
        }
        // Written in up to 8 pieces cut anywhere, with pauses between some.
        let mut at = 0;
        while at < bytes.len() {
            let piece = (rng.below(bytes.len() as u64 / 4 + 1) as usize + 1).min(bytes.len() - at);
            sock.write_all(&bytes[at..at + piece]).expect("write");
            at += piece;
            if leaves && round == 3 && at > bytes.len() / 2 {
                return None;
            }
            if rng.below(4) == 0 {
                std::thread::sleep(Duration::from_millis(rng.below(3)));
            }
        }
        // Every reply, in order.
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        let mut lines = 0;
        while lines < expected.len() {
            let k = sock.read(&mut buf).expect("read");
            assert!(k > 0, "client {seed}: connection closed");
            got.extend_from_slice(&buf[..k]);
            lines = got.iter().filter(|&&b| b == b'\n').count();
        }
        let text = String::from_utf8_lossy(&got).into_owned();
        let replies: Vec<&str> = text.split_inclusive("\r\n").collect();
        assert_eq!(replies.len(), expected.len(), "client {seed}: {text:?}");
        for (reply, want) in replies.iter().zip(&expected) {
            match want {
                Some(w) => assert_eq!(reply, w, "client {seed} round {round}"),
                None => assert!(reply.starts_with(':'), "client {seed}: APPEND answered {reply:?}"),
            }
        }
    }
    Some((key, count))
}

#[test]
fn random_pipelines_from_many_clients_are_answered_in_order() {
    let server = Server::start(&[]);
    let port = server.port;
    let threads: Vec<_> = (1..=40u64).map(|seed| std::thread::spawn(move || random_client(port, seed))).collect();
    let mut c = server.client();
    for t in threads {
        if let Some((key, count)) = t.join().expect("client thread") {
            let got: i64 = redis::cmd("GET").arg(&key).query(&mut c).expect("GET");
            assert_eq!(got, count, "{key}");
        }
    }
    wait_alone(&mut c);
}
