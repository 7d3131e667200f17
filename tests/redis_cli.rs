//! The real `redis-cli` against vermilion-server: one-shot commands, commands fed on stdin,
//! and `--pipe` mass insertion. Where the output format is redis-cli's business (errors,
//! nils), the same invocation is also run against the real redis-server and compared.

mod common;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use common::Server;

fn cli(port: u16, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new("redis-cli")
        .arg("-p")
        .arg(port.to_string())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn redis-cli");
    let mut input = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let out = child.wait_with_output().expect("redis-cli output");
    writer.join().unwrap();
    out
}

fn stdout(port: u16, args: &[&str], stdin: &[u8]) -> String {
    let out = cli(port, args, stdin);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn one_shot_commands() {
    let s = Server::start(&[]);
    assert_eq!(stdout(s.port, &["PING"], b""), "PONG\n");
    assert_eq!(stdout(s.port, &["SET", "k", "v"], b""), "OK\n");
    assert_eq!(stdout(s.port, &["GET", "k"], b""), "v\n");
    assert_eq!(stdout(s.port, &["SET", "k", "hello world"], b""), "OK\n");
    assert_eq!(stdout(s.port, &["GET", "k"], b""), "hello world\n");
    assert_eq!(stdout(s.port, &["APPEND", "k", "!"], b""), "12\n");
    assert_eq!(stdout(s.port, &["EXISTS", "k", "nokey"], b""), "1\n");
    assert_eq!(stdout(s.port, &["GET", "nokey"], b""), "\n");
    assert_eq!(stdout(s.port, &["DBSIZE"], b""), "1\n");
    assert_eq!(stdout(s.port, &["-n", "1", "DBSIZE"], b""), "0\n");
    assert_eq!(stdout(s.port, &["ECHO", "a b"], b""), "a b\n");
}

/// Each invocation, against redis-server and against us, gives the same stdout.
#[test]
fn same_output_as_with_redis_server() {
    let ours = Server::start(&[]);
    let redis = Server::start_redis(&[]);
    let cases: &[(&[&str], &[u8])] = &[
        (&["SET", "k", "v"], b""),
        (&["GET", "nokey"], b""),
        (&["INCR", "k"], b""),
        (&["NOSUCH", "x"], b""),
        (&["GET"], b""),
        (&["MSET", "a", "1", "b", "2"], b""),
        (&["MGET", "a", "nokey", "b"], b""),
        (&["KEYS", "nomatch*"], b""),
        (&["CONFIG", "GET", "maxmemory"], b""),
        (&["--no-raw", "GET", "k"], b""),
        (&["--no-raw", "MGET", "a", "nokey"], b""),
        (&["--no-raw", "INCR", "a"], b""),
        (&["--no-raw", "INCR", "k"], b""),
        (&["--no-raw", "KEYS", "nomatch*"], b""),
        (&["-3", "GET", "nokey"], b""),
        (&["-3", "--no-raw", "HELLO", "3"], b""),
        (&[], b"SET a 1\nINCR a\nGET a\nINCR k\nGET nokey\nDEL a\n"),
        (&[], b"SET q \"x y\"\nGET q\nECHO 'it''s'\n"),
        (&["-x", "SET", "fromstdin"], b"payload\n"),
        (&["GET", "fromstdin"], b""),
    ];
    let mut diffs = Vec::new();
    for (args, input) in cases {
        let a = cli(redis.port, args, input);
        let b = cli(ours.port, args, input);
        // HELLO's id differs between servers: compare without digits there.
        let norm = |o: &Output| {
            let s = String::from_utf8_lossy(&o.stdout).into_owned();
            if args.contains(&"HELLO") {
                s.chars().filter(|c| !c.is_ascii_digit()).collect()
            } else {
                s
            }
        };
        if norm(&a) != norm(&b) || a.status.code() != b.status.code() {
            diffs.push(format!(
                "redis-cli {args:?} stdin {:?}:\n  redis: {:?} (exit {:?})\n  ours:  {:?} (exit {:?})",
                String::from_utf8_lossy(input),
                String::from_utf8_lossy(&a.stdout),
                a.status.code(),
                String::from_utf8_lossy(&b.stdout),
                b.status.code()
            ));
        }
    }
    assert!(diffs.is_empty(), "{} redis-cli outputs differ:\n{}", diffs.len(), diffs.join("\n"));
}

#[test]
fn commands_on_stdin() {
    let s = Server::start(&[]);
    assert_eq!(stdout(s.port, &[], b"SET a 1\nINCR a\nGET a\n"), "OK\n2\n2\n");
    assert_eq!(stdout(s.port, &[], b"SET b \"two words\"\nGET b\nSTRLEN b\nDEL a b\nEXISTS a b\n"), "OK\ntwo words\n9\n2\n0\n");
}

#[test]
fn pipe_mass_insertion_100k() {
    let s = Server::start(&[]);
    let mut input = Vec::with_capacity(100_000 * 48);
    for i in 0..100_000 {
        let key = format!("key:{i}");
        let val = format!("value:{i}");
        input.extend_from_slice(format!("*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n${}\r\n{val}\r\n", key.len(), val.len()).as_bytes());
    }
    let out = cli(s.port, &["--pipe"], &input);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "redis-cli --pipe failed: {text} {}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("errors: 0, replies: 100000"), "redis-cli --pipe summary: {text}");
    assert_eq!(stdout(s.port, &["DBSIZE"], b""), "100000\n");
    assert_eq!(stdout(s.port, &["GET", "key:99999"], b""), "value:99999\n");
}

/// `redis-cli --rdb` asks for an RDB file alone (REPLCONF rdb-only): it gets one, which
/// redis-check-rdb accepts (tests/rdb.rs loads it into redis-server); `--functions-rdb` gets
/// the libraries alone.
#[test]
fn rdb_transfers_give_real_files() {
    let server = Server::start(&["--appendonly", "yes"]);
    let mut c = server.raw();
    assert_eq!(c.call(&[b"SET", b"k", b"v"]), b"+OK\r\n");
    let dir = tempfile::tempdir().unwrap();
    for mode in ["--rdb", "--functions-rdb"] {
        let path = dir.path().join(format!("{}.rdb", &mode[2..]));
        let out = cli(server.port, &[mode, path.to_str().unwrap()], b"");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && err.contains("Transfer finished with success"), "{mode}: {err}");
        let check = std::process::Command::new("redis-check-rdb").arg(&path).output().unwrap();
        let report = String::from_utf8_lossy(&check.stdout);
        assert!(check.status.success(), "{mode}: {report}");
        let keys = if mode == "--rdb" { "1 keys read" } else { "0 keys read" };
        assert!(report.contains(keys), "{mode}: {report}");
    }
    // A replica's REPLCONF options are validated as Redis does.
    assert_eq!(c.call(&[b"REPLCONF", b"rdb-only", b"2"]), b"-ERR value is out of range, value must between 0 and 1\r\n");
    assert_eq!(c.call(&[b"REPLCONF", b"rdb-filter-only", b"bogus"]), b"-ERR Unsupported rdb-filter-only option: bogus\r\n");
    assert_eq!(c.call(&[b"REPLCONF", b"rdb-filter-only", b""]), b"+OK\r\n");
}

/// `redis-cli --replica` (SYNC) prints the commands the primary logs: it gets the snapshot to
/// skip, then plain commands without the log's annotations (which stopped it at the first
/// `#` line with "Bad bool value").
#[test]
fn replica_mode_prints_the_stream() {
    let server = Server::start(&["--appendonly", "yes"]);
    let mut c = server.raw();
    assert_eq!(c.call(&[b"SET", b"before", b"1"]), b"+OK\r\n");
    let mut child = Command::new("redis-cli")
        .args(["-p", &server.port.to_string(), "--replica"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("redis-cli");
    // Wait for the sync to be served (the replica shows in INFO), then write.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !String::from_utf8_lossy(&c.call(&[b"INFO", b"replication"])).contains("connected_slaves:1") {
        assert!(std::time::Instant::now() < deadline, "redis-cli --replica never attached");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(c.call(&[b"SET", b"a", b"1"]), b"+OK\r\n");
    assert_eq!(c.call(&[b"EVAL", b"return redis.call('INCR', KEYS[1])", b"1", b"n"]), b":1\r\n");
    assert_eq!(c.call(&[b"SET", b"last", b"x"]), b"+OK\r\n");
    std::thread::sleep(std::time::Duration::from_millis(500));
    let _ = child.kill();
    let out = child.wait_with_output().expect("output");
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("SYNC done. Logging commands from master."), "{text}");
    assert!(text.contains("\"SET\",\"a\",\"1\""), "{text}");
    assert!(text.contains("\"EVAL\",\"return redis.call('INCR', KEYS[1])\",\"1\",\"n\""), "{text}");
    assert!(text.contains("\"SET\",\"last\",\"x\""), "{text}");
    assert!(!text.contains("Bad bool") && !text.contains("before"), "{text}");
}
