//! The durable log with the real binary and real files: what each command and script puts
//! in the log, restarts (also after a rewrite and DEBUG RELOAD), torn tails cut at every byte,
//! corruption refused with the file and offset (and found by the check tool, which fixes it),
//! SHUTDOWN NOSAVE during a busy script, write errors, and `redis-check-aof` reading our files.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::Server;
use redis::Connection;

fn q<T: redis::FromRedisValue>(c: &mut Connection, parts: &[&str]) -> T {
    let mut cmd = redis::cmd(parts[0]);
    for p in &parts[1..] {
        cmd.arg(*p);
    }
    cmd.query(c).unwrap_or_else(|e| panic!("{parts:?}: {e}"))
}

fn digest(c: &mut Connection) -> String {
    q(c, &["DEBUG", "DIGEST"])
}

fn aof_dir(s: &Server) -> PathBuf {
    s.dir.path().join("appendonlydir")
}

/// The incremental file the manifest names last.
fn last_incr(s: &Server) -> PathBuf {
    let dir = aof_dir(s);
    let manifest = std::fs::read_to_string(dir.join("appendonly.aof.manifest")).expect("manifest");
    let name = manifest.lines().rfind(|l| l.ends_with("type i")).and_then(|l| l.split_whitespace().nth(1)).expect("an incr file");
    dir.join(name)
}

fn base_file(s: &Server) -> PathBuf {
    let dir = aof_dir(s);
    let manifest = std::fs::read_to_string(dir.join("appendonly.aof.manifest")).expect("manifest");
    let name = manifest.lines().find(|l| l.ends_with("type b")).and_then(|l| l.split_whitespace().nth(1)).expect("a base file");
    dir.join(name)
}

/// The records of a log file as space-joined strings (annotations included as `#...`).
fn records(path: &Path) -> Vec<String> {
    let data = std::fs::read(path).expect("read log");
    let mut out = Vec::new();
    let verdict = vermilion::aof::format::replay(&data, |r| {
        let mut line: Vec<String> = Vec::new();
        if let Some(ms) = r.time_ms {
            line.push(format!("#MS:{ms}"));
        }
        line.extend(r.argv.iter().map(|a| String::from_utf8_lossy(a).into_owned()));
        out.push(line.join(" "));
    });
    assert_eq!(verdict.problem, None, "{}", path.display());
    out
}

/// Waits until no rewrite is in progress.
fn wait_rewrite(c: &mut Connection) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while q::<String>(c, &["INFO", "persistence"]).contains("aof_rewrite_in_progress:1") {
        assert!(Instant::now() < deadline, "the rewrite never finished");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

#[test]
fn records_are_logged_in_their_deterministic_form() {
    let s = Server::start(&["--appendfsync", "always"]);
    let mut c = s.client();
    let t0 = now_ms();
    let _: () = q(&mut c, &["SET", "plain", "v"]);
    let _: () = q(&mut c, &["SET", "ex", "v", "EX", "100"]);
    let _: () = q(&mut c, &["SETEX", "setex", "100", "v"]);
    let _: i64 = q(&mut c, &["EXPIRE", "plain", "100"]);
    let _: i64 = q(&mut c, &["EXPIRE", "missing", "100"]);
    let _: String = q(&mut c, &["INCRBYFLOAT", "f", "0.1"]);
    let _: () = q(&mut c, &["SET", "gone", "v"]);
    let _: i64 = q(&mut c, &["EXPIRE", "gone", "-1"]);
    let _: i64 = q(&mut c, &["SADD", "s", "only"]);
    let _: String = q(&mut c, &["SPOP", "s"]);
    let _: () = q(&mut c, &["SELECT", "3"]);
    let _: i64 = q(&mut c, &["RPUSH", "l", "a"]);
    let _: redis::Value = q(&mut c, &["BLPOP", "l", "1"]);
    let _: redis::Value = redis::pipe().atomic().cmd("INCR").arg("m1").cmd("INCR").arg("m2").query(&mut c).expect("exec");
    let t1 = now_ms();
    let recs = records(&last_incr(&s));
    let abs = |r: &str, prefix: &str| -> i64 {
        let at: i64 = r.strip_prefix(prefix).and_then(|t| t.parse().ok()).unwrap_or_else(|| panic!("{r} does not start with {prefix}"));
        assert!(at >= t0 + 100_000 && at <= t1 + 100_000, "{r}: not an absolute time 100 s from now");
        at
    };
    assert_eq!(recs[0], "SELECT 0");
    assert_eq!(recs[1], "SET plain v");
    abs(&recs[2], "SET ex v PXAT ");
    abs(&recs[3], "SET setex v PXAT ");
    abs(&recs[4], "PEXPIREAT plain ");
    // EXPIRE of a missing key changed nothing: no record.
    assert_eq!(recs[5], "SET f 0.1 KEEPTTL");
    assert_eq!(recs[6..9], ["SET gone v", "DEL gone", "SADD s only"]);
    assert_eq!(recs[9], "SREM s only");
    assert_eq!(recs[10..13], ["SELECT 3", "RPUSH l a", "LPOP l"]);
    assert_eq!(recs[13..], ["MULTI", "INCR m1", "INCR m2", "EXEC"]);
}

#[test]
fn scripts_are_logged_whole_or_as_effects_and_evalsha_finds_its_body() {
    let s = Server::start(&["--appendfsync", "always"]);
    let mut c = s.client();
    let writer = "return redis.call('incr', KEYS[1])";
    let sha: String = q(&mut c, &["SCRIPT", "LOAD", writer]);
    let reader_sha: String = {
        let _: redis::Value = q(&mut c, &["EVAL", "return redis.call('get', KEYS[1])", "1", "k"]);
        q(&mut c, &["SCRIPT", "LOAD", "return redis.call('get', KEYS[1])"])
    };
    let _: i64 = q(&mut c, &["EVALSHA", &sha, "1", "k"]);
    let _: redis::Value = q(&mut c, &["EVALSHA", &reader_sha, "1", "k"]);
    let _: i64 = q(&mut c, &["EVAL", "redis.call('time') redis.call('incr', 'r1') redis.set_repl(redis.REPL_NONE) redis.call('incr', 'hidden') redis.set_repl(redis.REPL_ALL) return redis.call('incr', 'r2')", "0"]);
    let failed = redis::cmd("EVAL")
        .arg("redis.call('incr', 'before_error') return redis.call('nosuchcommand')")
        .arg(0)
        .query::<redis::Value>(&mut c);
    assert!(failed.is_err());
    let recs = records(&last_incr(&s));
    let ms = |r: &str| r.starts_with("#MS:");
    assert_eq!(recs[0], "SELECT 0");
    assert_eq!(recs[1], format!("SCRIPT LOAD {writer}"));
    // The read-only EVAL and SCRIPT LOAD of a body already loaded add nothing... the second
    // SCRIPT LOAD is a new body for the log epoch, so it is logged.
    assert_eq!(recs[2], "SCRIPT LOAD return redis.call('get', KEYS[1])");
    assert!(ms(&recs[3]) && recs[3].ends_with(&format!("EVALSHA {sha} 1 k")), "{}", recs[3]);
    assert_eq!(recs[4..8], ["MULTI", "incr r1", "incr r2", "EXEC"]);
    assert!(
        ms(&recs[8]) && recs[8].contains("redis.call('incr', 'before_error')"),
        "a script that failed after writing is logged: {}",
        recs[8]
    );
    assert_eq!(recs.len(), 9);

    // After a rewrite the base holds the script table: EVALSHA stays EVALSHA.
    let _: String = q(&mut c, &["BGREWRITEAOF"]);
    wait_rewrite(&mut c);
    let _: i64 = q(&mut c, &["EVALSHA", &sha, "1", "k"]);
    let recs = records(&last_incr(&s));
    assert!(recs[1].ends_with(&format!("EVALSHA {sha} 1 k")), "{recs:?}");
    // SCRIPT FLUSH is logged; an EVALSHA after a fresh SCRIPT LOAD finds its body in the log.
    let _: () = q(&mut c, &["SCRIPT", "FLUSH"]);
    let fresh: String = q(&mut c, &["SCRIPT", "LOAD", "return redis.call('incr', KEYS[1]) + 0"]);
    let _: i64 = q(&mut c, &["EVALSHA", &fresh, "1", "k"]);
    let recs = records(&last_incr(&s));
    assert_eq!(recs[2], "SCRIPT FLUSH");
    assert_eq!(recs[3], "SCRIPT LOAD return redis.call('incr', KEYS[1]) + 0");
    // A first EVALSHA of a script the epoch never saw is logged as EVAL with the body.
    let before = digest(&mut c);
    let mut s = s;
    s.restart(&["--appendfsync", "always"]);
    let mut c = s.client();
    assert_eq!(digest(&mut c), before);
    let _: String = q(&mut c, &["SCRIPT", "FLUSH"]);
    let _: redis::Value = q(&mut c, &["EVAL", "return 1", "0"]);
    let _: redis::Value = q(&mut c, &["EVAL", "return redis.call('incr', 'z')", "0"]);
    let recs = records(&last_incr(&s));
    assert!(
        recs.last()
            .is_some_and(|r| r.ends_with("EVAL return redis.call('incr', 'z') 0") || r.ends_with("eval return redis.call('incr', 'z') 0")),
        "{recs:?}"
    );
    assert_eq!(q::<i64>(&mut c, &["GET", "k"]), 3);
    assert_eq!(q::<i64>(&mut c, &["GET", "before_error"]), 1);
    // (`hidden`, written under REPL_NONE, is in the base since the rewrite, as in Redis.)
}

/// Writes a bit of everything; returns the digest.
fn write_everything(c: &mut Connection) -> String {
    let _: () = q(c, &["SET", "str", "hello"]);
    let _: () = q(c, &["SET", "num", "42", "PX", "500000"]);
    let _: i64 = q(c, &["RPUSH", "list", "a", "b", "c"]);
    let _: i64 = q(c, &["HSET", "hash", "f1", "v1", "f2", "v2"]);
    let _: i64 = q(c, &["SADD", "set", "x", "y", "1", "2"]);
    let _: i64 = q(c, &["SADD", "intset", "1", "2", "3"]);
    let _: i64 = q(c, &["ZADD", "zset", "1.5", "m1", "-2", "m2", "inf", "m3"]);
    let big: Vec<String> = (0..300).map(|i| format!("member-{i}")).collect();
    let mut cmd = redis::cmd("SADD");
    cmd.arg("bigset").arg(&big);
    let _: i64 = cmd.query(c).expect("sadd");
    let _: () = q(c, &["SELECT", "5"]);
    let _: () = q(c, &["SET", "in5", "yes"]);
    let _: i64 = q(c, &["EVAL", "redis.call('select', 7) redis.call('set', 'in7', 'from a script') return 1", "0"]);
    let _: () = q(c, &["SELECT", "0"]);
    let _: String = q(c, &["HINCRBYFLOAT", "hash", "f3", "1.25"]);
    digest(c)
}

#[test]
fn data_and_scripts_survive_restart_rewrite_and_reload() {
    let mut s = Server::start(&["--appendfsync", "always"]);
    let mut c = s.client();
    let expected = write_everything(&mut c);
    let sha: String = q(&mut c, &["SCRIPT", "LOAD", "return redis.call('get', KEYS[1])"]);
    // kill -9: with `always` everything acknowledged is on disk.
    s.restart(&[]);
    let mut c = s.client();
    assert_eq!(digest(&mut c), expected);
    assert_eq!(q::<Vec<bool>>(&mut c, &["SCRIPT", "EXISTS", &sha]), vec![true], "SCRIPT LOAD is logged");
    let ttl: i64 = q(&mut c, &["PTTL", "num"]);
    assert!(ttl > 400_000 && ttl <= 500_000, "{ttl}");
    let _: String = q(&mut c, &["BGREWRITEAOF"]);
    let _: () = q(&mut c, &["SET", "after-rewrite", "1"]);
    let expected = digest(&mut c);
    s.restart(&[]);
    let mut c = s.client();
    assert_eq!(digest(&mut c), expected);
    assert_eq!(q::<Vec<bool>>(&mut c, &["SCRIPT", "EXISTS", &sha]), vec![true], "the base holds the script table");
    let _: () = q(&mut c, &["DEBUG", "RELOAD"]);
    assert_eq!(digest(&mut c), expected);
    let _: () = q(&mut c, &["DEBUG", "LOADAOF"]);
    assert_eq!(digest(&mut c), expected);
    let info: String = q(&mut c, &["INFO", "persistence"]);
    assert!(info.contains("aof_enabled:1") && info.contains("aof_last_write_status:ok"), "{info}");
    // Only the files of the current generation remain.
    let mut names: Vec<String> =
        std::fs::read_dir(aof_dir(&s)).expect("dir").map(|e| e.expect("entry").file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names.len(), 3, "{names:?}");
}

#[test]
fn digest_is_redis_digest() {
    let redis = Server::start_redis(&["--enable-debug-command", "yes"]);
    let ours = Server::start(&[]);
    let (mut r, mut o) = (redis.client(), ours.client());
    assert_eq!(digest(&mut r), digest(&mut o));
    let a = write_everything(&mut r);
    let b = write_everything(&mut o);
    assert_eq!(a, b, "DEBUG DIGEST of the same data");
    for key in ["str", "list", "hash", "set", "zset", "bigset", "missing"] {
        let mut cmd = redis::cmd("DEBUG");
        cmd.arg("DIGEST-VALUE").arg(key);
        let (x, y): (Vec<String>, Vec<String>) = (cmd.query(&mut r).expect("redis"), cmd.query(&mut o).expect("ours"));
        assert_eq!(x, y, "DIGEST-VALUE {key}");
    }
}

/// Sends commands one per batch and notes, after each, the log size and the digest.
fn build_log(c: &mut Connection, s: &Server, cmds: &[&[&str]]) -> Vec<(u64, String)> {
    let mut marks = vec![(log_bytes(&last_incr(s)).len() as u64, digest(c))];
    for parts in cmds {
        let _: redis::Value = q(c, parts);
        marks.push((log_bytes(&last_incr(s)).len() as u64, digest(c)));
    }
    marks
}

const CHECKPOINT_LEN: u64 = "#C:0123456789abcdef\r\n".len() as u64;

#[test]
fn a_torn_tail_cut_at_any_byte_loads_exactly_the_whole_records_before_it() {
    let s = Server::start(&["--appendfsync", "always"]);
    let mut c = s.client();
    let marks = build_log(
        &mut c,
        &s,
        &[
            &["SET", "a", "1"],
            &["RPUSH", "l", "x", "y"],
            &["EVAL", "redis.call('incr', 'a') redis.call('rpush', 'l', 'z') return 1", "0"],
            &["EVAL", "redis.call('time') redis.call('incr', 'a') redis.call('sadd', 's', 'm') return 1", "0"],
            &["SET", "b", "2"],
        ],
    );
    let incr = last_incr(&s);
    let full = log_bytes(&incr);
    assert_eq!(full.len() as u64, marks.last().map(|m| m.0).unwrap_or(0));
    // Which state a cut at `x` must load: the last command whose records all end before x.
    let expected = |x: u64| -> &str {
        let mut best = &marks[0].1;
        for (end, d) in &marks[1..] {
            if end - CHECKPOINT_LEN <= x {
                best = d;
            }
        }
        best
    };
    let start = marks[1].0.saturating_sub(5);
    for cut in start..=full.len() as u64 {
        std::fs::write(&incr, &full[..cut as usize]).expect("write cut");
        let _: () = q(&mut c, &["DEBUG", "LOADAOF"]);
        assert_eq!(digest(&mut c), expected(cut), "cut at byte {cut} of {}", full.len());
        // What loaded stays loadable once more records follow it.
        let _: i64 = q(&mut c, &["INCR", "probe"]);
        let with_probe = digest(&mut c);
        let _: () = q(&mut c, &["DEBUG", "LOADAOF"]);
        assert_eq!(digest(&mut c), with_probe, "cut at byte {cut}, then one more write, then a reload");
    }
    // The same through a real start, for a cut inside the MULTI block of the effects.
    let inside_effects = (marks[3].0 + marks[4].0) / 2;
    std::fs::write(&incr, &full[..inside_effects as usize]).expect("write cut");
    let mut s = s;
    s.restart(&[]);
    let mut c = s.client();
    assert_eq!(digest(&mut c), marks[3].1);
    assert_eq!(q::<Option<String>>(&mut c, &["GET", "b"]), None);
}

/// The records of an incremental file: its bytes without the zeros preallocated after them
/// (a running server's file under `always`, or one a kill -9 left).
fn log_bytes(path: &Path) -> Vec<u8> {
    let mut data = std::fs::read(path).expect("read");
    data.truncate(vermilion::aof::format::logical_len(&data));
    data
}

/// A server that logged two SETs (`always`), killed: its incremental file and that file's
/// records (the zeros after them cut).
fn two_writes_then_kill() -> (Server, PathBuf, Vec<u8>) {
    let mut s = Server::start(&["--appendfsync", "always"]);
    let mut c = s.client();
    let _: () = q(&mut c, &["SET", "a", "1"]);
    let _: () = q(&mut c, &["SET", "b", "2"]);
    let incr = last_incr(&s);
    s.kill9();
    let data = log_bytes(&incr);
    std::fs::write(&incr, &data).expect("write");
    (s, incr, data)
}

#[test]
fn zeros_preallocated_under_always_survive_a_kill_and_are_cut_at_the_next_start() {
    let mut s = Server::start(&["--appendfsync", "always"]);
    let mut c = s.client();
    for i in 0..100 {
        let _: () = q(&mut c, &["SET", &format!("k{i}"), &i.to_string()]);
    }
    let incr = last_incr(&s);
    s.kill9();
    let left = std::fs::read(&incr).expect("read");
    let logical = log_bytes(&incr).len();
    assert!(left.len() >= 1 << 20 && logical < left.len(), "a zero-filled file: {} bytes, records {logical}", left.len());
    // The check tool sees the records, valid, and the zeros after them.
    let (ok, out) = check_tool(&[incr.to_str().expect("path")]);
    assert!(ok && out.contains(&format!("ok_up_to={logical}")) && out.contains("bytes of preallocated zeros"), "{out}");
    s.restart(&["--appendfsync", "always"]);
    let mut c = s.client();
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 100);
    assert_eq!(q::<String>(&mut c, &["GET", "k99"]), "99");
    // Cut at the start, then appended to right after the records (zero-filled again ahead).
    let _: () = q(&mut c, &["SET", "after", "restart"]);
    s.restart(&[]);
    let mut c = s.client();
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 101);
    assert_eq!(q::<String>(&mut c, &["GET", "after"]), "restart");
    // A clean shutdown leaves the records alone.
    let _: () = redis::cmd("SHUTDOWN").query(&mut c).or_else(|e| if e.is_io_error() { Ok(()) } else { Err(e) }).expect("shutdown");
    s.wait_exit(Duration::from_secs(10));
    let data = std::fs::read(last_incr(&s)).expect("read");
    assert!(data.ends_with(b"\r\n"), "no zeros after a clean shutdown ({} bytes)", data.len());
}

#[test]
fn a_torn_tail_is_refused_when_aof_load_truncated_is_off() {
    let (s, incr, full) = two_writes_then_kill();
    std::fs::write(&incr, &full[..full.len() - 30]).expect("cut");
    let (ok, out) = Server::run_expecting_exit(s.dir.path(), &["--aof-load-truncated", "no"]);
    assert!(!ok && out.contains("Unexpected end of file reading the append only file appendonly.aof.1.incr.aof"), "{out}");
}

fn check_tool(args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vermilion-check-aof"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run check tool");
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn corruption_is_refused_with_file_and_offset_and_the_check_tool_fixes_it() {
    let mut s = Server::start(&["--appendfsync", "always"]);
    let mut c = s.client();
    for i in 0..20 {
        let _: () = q(&mut c, &["SET", &format!("key:{i}"), &format!("value number {i}")]);
    }
    let incr = last_incr(&s);
    let dir = aof_dir(&s);
    s.kill9();
    let mut data = log_bytes(&incr);
    let (ok, out) = check_tool(&[dir.to_str().unwrap_or_default()]);
    assert!(ok && out.contains("is valid"), "{out}");
    // Flip a byte inside a value in the middle of the file.
    let mid = data.len() / 2;
    let at = mid + data[mid..].windows(5).position(|w| w == b"value").expect("a value");
    data[at + 2] ^= 0x20;
    std::fs::write(&incr, &data).expect("write");
    let (ok, out) = Server::run_expecting_exit(s.dir.path(), &[]);
    let offset =
        out.split("at offset ").nth(1).and_then(|t| t.split(|ch: char| !ch.is_ascii_digit()).next()).and_then(|n| n.parse::<usize>().ok());
    assert!(!ok && out.contains("Bad file format reading the append only file appendonly.aof.1.incr.aof"), "{out}");
    let offset = offset.expect("the refusal names the offset");
    assert!(offset <= at && at - offset < 80, "offset {offset} is the start of the segment holding byte {at}");
    let (ok, report) = check_tool(&[dir.to_str().unwrap_or_default()]);
    assert!(!ok && report.contains(&format!("at offset {offset}")), "{report}");
    let (ok, fixed) = check_tool(&["--fix", "--yes", dir.to_str().unwrap_or_default()]);
    assert!(ok && fixed.contains("Successfully truncated"), "{fixed}");
    assert_eq!(std::fs::metadata(&incr).expect("incr").len() as usize, offset);
    let s = Server::start_in(std::mem::replace(&mut s.dir, tempfile::tempdir().expect("tmp")), &[]);
    let mut c = s.client();
    let kept: i64 = q(&mut c, &["DBSIZE"]);
    assert!(kept > 0 && kept < 20, "the prefix before the corruption loads: {kept} keys");
    assert_eq!(q::<String>(&mut c, &["GET", "key:0"]), "value number 0");
}

#[test]
fn a_corrupt_base_snapshot_is_refused_with_file_and_offset() {
    let mut s = Server::start(&[]);
    let mut c = s.client();
    write_everything(&mut c);
    let _: String = q(&mut c, &["BGREWRITEAOF"]);
    wait_rewrite(&mut c);
    let base = base_file(&s);
    s.kill9();
    let mut data = std::fs::read(&base).expect("read");
    let mid = data.len() / 2;
    data[mid] ^= 0x01;
    std::fs::write(&base, &data).expect("write");
    let (ok, out) = Server::run_expecting_exit(s.dir.path(), &[]);
    let name = base.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    assert!(!ok && out.contains(&name) && out.contains("at offset") && out.contains("CRC-64 mismatch"), "{out}");
    let (ok, report) = check_tool(&[base.to_str().unwrap_or_default()]);
    assert!(!ok && report.contains("CRC-64 mismatch"), "{report}");
}

#[test]
fn redis_check_aof_accepts_our_incremental_files() {
    let s = Server::start(&["--appendfsync", "always"]);
    let mut c = s.client();
    write_everything(&mut c);
    let _: i64 = q(&mut c, &["EVAL", "redis.call('time') redis.call('incr', 'r1') return redis.call('incr', 'r2')", "0"]);
    let _: redis::Value = redis::pipe().atomic().cmd("INCR").arg("m1").cmd("INCR").arg("m2").query(&mut c).expect("exec");
    let incr = last_incr(&s);
    // A file at rest: the shutdown cuts the zeros `always` preallocates, which Redis's tool
    // would report (ours skips them).
    let mut s = s;
    let _: redis::RedisResult<()> = redis::cmd("SHUTDOWN").query(&mut c);
    assert!(s.wait_exit(Duration::from_secs(10)));
    let out = std::process::Command::new("redis-check-aof").arg(&incr).output().expect("redis-check-aof (redis-tools) is installed");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("is valid"), "{text}");
}

#[test]
fn shutdown_nosave_during_a_busy_script_that_wrote_leaves_no_trace_of_it() {
    let mut s = Server::start(&["--busy-reply-threshold", "100"]);
    let mut c = s.client();
    let _: () = q(&mut c, &["SET", "acked", "1"]);
    let mut stream = TcpStream::connect(("127.0.0.1", s.port)).expect("connect");
    stream.write_all(b"EVAL \"redis.call('set', 'partial', '1') redis.call('incr', 'acked') while true do end\" 0\r\n").expect("send");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let r: redis::RedisResult<String> = redis::cmd("GET").arg("acked").query(&mut c);
        if matches!(&r, Err(e) if e.to_string().contains("BUSY")) {
            break;
        }
        assert!(Instant::now() < deadline, "the script never became busy: {r:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut admin = TcpStream::connect(("127.0.0.1", s.port)).expect("connect");
    admin.write_all(b"SHUTDOWN NOSAVE\r\n").expect("send");
    assert!(s.wait_exit(Duration::from_secs(5)), "SHUTDOWN NOSAVE exits during a busy script");
    s.restart(&[]);
    let mut c = s.client();
    assert_eq!(q::<String>(&mut c, &["GET", "acked"]), "1");
    assert_eq!(q::<Option<String>>(&mut c, &["GET", "partial"]), None);
}

/// Reads one reply line with a timeout; None when nothing came.
fn read_line_within(stream: &TcpStream, timeout: Duration) -> Option<String> {
    stream.set_read_timeout(Some(timeout)).ok()?;
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).ok()?;
    (!line.is_empty()).then_some(line)
}

#[test]
fn a_failing_disk_refuses_writes_keeps_reads_and_recovers() {
    let mut s = Server::start(&["--appendfsync", "always"]);
    let mut c = s.client();
    let _: () = q(&mut c, &["SET", "a", "1"]);
    // Where the records end (zeros are preallocated after them under `always`).
    let size = log_bytes(&last_incr(&s)).len();
    // The kernel refuses any write past that offset now (EFBIG): a real write error.
    let limit = format!("--fsize={size}:unlimited");
    let status = std::process::Command::new("prlimit").args(["--pid", &s.pid().to_string(), &limit]).status().expect("prlimit");
    assert!(status.success());
    // The reply of a write would leave early here (its client then blocks): it waits for
    // the log like any other.
    let mut writer = TcpStream::connect(("127.0.0.1", s.port)).expect("connect");
    writer.write_all(b"SET b 2\r\nBLPOP nothing 0\r\n").expect("send");
    assert_eq!(read_line_within(&writer, Duration::from_millis(500)), None, "no reply before the write is on disk");
    assert_eq!(q::<String>(&mut c, &["GET", "a"]), "1", "reads go on");
    let refused = redis::cmd("SET").arg("c").arg("3").query::<()>(&mut c).unwrap_err().to_string();
    assert!(refused.contains("MISCONF") && refused.contains("Errors writing to the AOF file"), "{refused}");
    let info: String = q(&mut c, &["INFO", "persistence"]);
    assert!(info.contains("aof_last_write_status:err"), "{info}");
    let status =
        std::process::Command::new("prlimit").args(["--pid", &s.pid().to_string(), "--fsize=unlimited"]).status().expect("prlimit");
    assert!(status.success());
    assert_eq!(read_line_within(&writer, Duration::from_secs(5)).as_deref(), Some("+OK\r\n"), "the held reply leaves once written");
    let _: () = q(&mut c, &["SET", "c", "3"]);
    s.restart(&[]);
    let mut c = s.client();
    assert_eq!(q::<Vec<String>>(&mut c, &["MGET", "a", "b", "c"]), ["1", "2", "3"]);
}

#[test]
fn clients_get_loading_while_the_log_replays_and_info_shows_progress() {
    let mut s = Server::start(&[]);
    let mut c = s.client();
    for chunk in 0..4 {
        let mut p = redis::pipe();
        for i in 0..5_000 {
            p.cmd("SET").arg(format!("k{chunk}:{i}")).arg(i).ignore();
        }
        let _: () = p.query(&mut c).expect("load");
    }
    let _: redis::RedisResult<()> = redis::cmd("SHUTDOWN").query(&mut c);
    assert!(s.wait_exit(Duration::from_secs(10)));
    let port = common::free_port();
    // 20,000 records at 50 us each: a load of about a second to watch.
    let mut child = std::process::Command::new(common::vermilion_bin())
        .args(["--port", &port.to_string(), "--key-load-delay", "50", "--dir"])
        .arg(s.dir.path())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(60);
    let (mut saw_loading, mut saw_info) = (false, false);
    loop {
        assert!(Instant::now() < deadline, "never loaded");
        let Ok(mut conn) = TcpStream::connect(("127.0.0.1", port)) else {
            std::thread::sleep(Duration::from_millis(2));
            continue;
        };
        conn.write_all(b"PING\r\n").expect("send");
        let line = read_line_within(&conn, Duration::from_secs(30)).unwrap_or_default();
        if line == "+PONG\r\n" {
            break;
        }
        assert_eq!(line, "-LOADING Redis is loading the dataset in memory\r\n");
        saw_loading = true;
        if saw_info {
            // Asked once, early: later the load may end between the PING and the INFO.
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        conn.write_all(b"INFO persistence\r\n").expect("send");
        let mut reader = BufReader::new(&conn);
        let mut header = String::new();
        let _ = reader.read_line(&mut header);
        if let Some(len) = header.strip_prefix('$').and_then(|n| n.trim().parse::<usize>().ok()) {
            let mut body = vec![0u8; len + 2];
            let _ = std::io::Read::read_exact(&mut reader, &mut body);
            let text = String::from_utf8_lossy(&body);
            assert!(
                text.contains("loading:1\r\n") && text.contains("loading_loaded_perc:") && text.contains("loading_eta_seconds:"),
                "{text}"
            );
            saw_info = true;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        saw_loading && saw_info,
        "a client connecting during the load got -LOADING ({saw_loading}) and INFO.s loading fields ({saw_info})"
    );
}

#[test]
fn sigterm_writes_and_fsyncs_everything_before_exiting() {
    let mut s = Server::start(&["--appendfsync", "no"]);
    let mut c = s.client();
    for i in 0..100 {
        let _: () = q(&mut c, &["SET", &format!("k{i}"), "v"]);
    }
    let before = digest(&mut c);
    extern "C" {
        fn kill(pid: i32, sig: i32) -> i32;
    }
    // SAFETY: sends SIGTERM (15) to the server process this test started.
    assert_eq!(unsafe { kill(s.pid() as i32, 15) }, 0);
    assert!(s.wait_exit(Duration::from_secs(5)), "SIGTERM stops the server");
    s.restart(&[]);
    assert_eq!(digest(&mut s.client()), before);
}

#[test]
fn config_set_appendonly_turns_the_log_on_and_off_at_runtime() {
    let mut s = Server::start(&["--appendonly", "no"]);
    let mut c = s.client();
    let _: () = q(&mut c, &["SET", "before", "1"]);
    assert!(!aof_dir(&s).exists());
    let _: () = q(&mut c, &["CONFIG", "SET", "appendonly", "yes"]);
    let _: () = q(&mut c, &["CONFIG", "SET", "appendfsync", "always"]);
    assert!(base_file(&s).exists(), "turning the log on writes a base of the data in memory");
    let _: () = q(&mut c, &["SET", "after", "2"]);
    let info: String = q(&mut c, &["INFO", "persistence"]);
    assert!(info.contains("aof_enabled:1"), "{info}");
    let expected = digest(&mut c);
    s.restart(&["--appendonly", "yes"]);
    let mut c = s.client();
    assert_eq!(digest(&mut c), expected);
    let _: () = q(&mut c, &["CONFIG", "SET", "appendonly", "no"]);
    let _: () = q(&mut c, &["SET", "unlogged", "3"]);
    let info: String = q(&mut c, &["INFO", "persistence"]);
    assert!(info.contains("aof_enabled:0"), "{info}");
    s.restart(&["--appendonly", "yes"]);
    let mut c = s.client();
    assert_eq!(digest(&mut c), expected, "writes made with the log off are not in it");
}

#[test]
fn review_cases_replay_the_same() {
    let mut s = Server::start(&["--appendfsync", "always"]);
    let mut c = s.client();
    // A random-dirty script's effects keep the expiry deletions in their place.
    let _: i64 = q(
        &mut c,
        &["EVAL", "redis.call('time') redis.call('set', KEYS[1], 'x', 'PXAT', 1) return redis.call('lpush', KEYS[1], 'a')", "1", "k"],
    );
    // A refused script after a random-dirty one logs nothing again.
    let _: i64 = q(&mut c, &["EVAL", "redis.call('time') return redis.call('incr', KEYS[1])", "1", "x"]);
    let refused = redis::cmd("EVAL_RO").arg("#!lua\nreturn 1").arg(0).query::<i64>(&mut c);
    assert!(refused.is_err());
    // A rewrite asked for inside a transaction runs after it.
    let reply: redis::Value = redis::pipe().atomic().cmd("INCR").arg("t").cmd("BGREWRITEAOF").query(&mut c).expect("exec");
    assert!(format!("{reply:?}").contains("scheduled"), "{reply:?}");
    wait_rewrite(&mut c);
    let expected = digest(&mut c);
    assert_eq!(q::<Vec<String>>(&mut c, &["LRANGE", "k", "0", "-1"]), ["a"]);
    s.restart(&[]);
    let mut c = s.client();
    assert_eq!(digest(&mut c), expected);
    assert_eq!(q::<Vec<i64>>(&mut c, &["MGET", "x", "t"]), [1, 1]);
}

/// Format version 1 of the directory (manifest, base snapshot, incremental log), as written
/// on 2026-11-22 (data/aof-fixtures/v1): a later format must keep loading it.
#[test]
fn the_version_1_files_load() {
    let dir = tempfile::tempdir().expect("tmp");
    let target = dir.path().join("appendonlydir");
    std::fs::create_dir(&target).expect("mkdir");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/aof-fixtures/v1");
    for e in std::fs::read_dir(&fixture).expect("fixture") {
        let e = e.expect("entry");
        std::fs::copy(e.path(), target.join(e.file_name())).expect("copy");
    }
    let s = Server::start_in(dir, &[]);
    let mut c = s.client();
    assert_eq!(digest(&mut c), "3953117441f6c051eec824f37cfcae5b51fc1a42");
    assert_eq!(q::<i64>(&mut c, &["GET", "counter"]), 2);
    assert_eq!(q::<Vec<String>>(&mut c, &["LRANGE", "list", "0", "-1"]), ["a", "b", "c"]);
    // The base's script table (SCRIPT LOAD before the rewrite) came back.
    let sha = vermilion::scripting::sha1_hex(b"return redis.call('incr', KEYS[1])");
    assert_eq!(q::<Vec<bool>>(&mut c, &["SCRIPT", "EXISTS", &sha]), vec![true]);
    let _: () = q(&mut c, &["SELECT", "3"]);
    assert_eq!(q::<String>(&mut c, &["GET", "in3"]), "x");
}

#[test]
fn the_check_tool_asks_before_fixing() {
    let (s, incr, data) = two_writes_then_kill();
    std::fs::write(&incr, &data[..data.len() - 7]).expect("cut");
    let run = |answer: &str| {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_vermilion-check-aof"))
            .args(["--fix", incr.to_str().unwrap_or_default()])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("run check tool");
        child.stdin.take().expect("stdin").write_all(answer.as_bytes()).expect("answer");
        let out = child.wait_with_output().expect("wait");
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let (ok, out) = run("n\n");
    assert!(!ok && out.contains("Continue? [y/N]") && out.contains("Aborting..."), "{out}");
    assert_eq!(std::fs::metadata(&incr).expect("incr").len() as usize, data.len() - 7, "nothing cut without a yes");
    let (ok, out) = run("y\n");
    assert!(ok && out.contains("Successfully truncated"), "{out}");
    let backups = std::fs::read_dir(aof_dir(&s))
        .expect("dir")
        .filter(|e| e.as_ref().is_ok_and(|e| e.file_name().to_string_lossy().contains(".bak-")))
        .count();
    assert_eq!(backups, 1, "a backup of the original is kept");
    let (ok, out) = check_tool(&[incr.to_str().unwrap_or_default()]);
    assert!(ok, "{out}");
}

#[test]
fn the_log_is_rewritten_automatically_when_it_grows() {
    let mut s = Server::start(&["--auto-aof-rewrite-min-size", "20kb", "--auto-aof-rewrite-percentage", "100"]);
    let mut c = s.client();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut i = 0;
    loop {
        for _ in 0..200 {
            let _: () = q(&mut c, &["SET", &format!("k{}", i % 50), &"x".repeat(100)]);
            i += 1;
        }
        let info: String = q(&mut c, &["INFO", "persistence"]);
        if info.contains("aof_rewrites:1") || info.contains("aof_rewrites:2") {
            break;
        }
        assert!(Instant::now() < deadline, "no automatic rewrite: {info}");
    }
    wait_rewrite(&mut c);
    let expected = digest(&mut c);
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 50);
    s.restart(&[]);
    assert_eq!(digest(&mut s.client()), expected);
}

/// everysec on a stalled disk: an fsync that takes more than two seconds makes the next
/// writes wait for it (the unsynced tail stays bounded), and nothing is lost.
#[test]
fn a_stalled_fsync_delays_writes_under_everysec() {
    let mut s = Server::start_with_env(&[("VERMILION_FAILPOINT_FSYNC_DELAY_MS", "3500")], &["--appendfsync", "everysec"]);
    let mut c = s.client();
    let started = Instant::now();
    let mut slowest = Duration::ZERO;
    let mut i = 0;
    while started.elapsed() < Duration::from_secs(5) {
        let t = Instant::now();
        let _: () = q(&mut c, &["SET", &format!("k{i}"), "v"]);
        slowest = slowest.max(t.elapsed());
        i += 1;
        std::thread::sleep(Duration::from_millis(5));
    }
    // The first fsync starts about 1 s in and takes 3.5 s: writes after its second second
    // wait for it, about 1.5 s.
    assert!(slowest >= Duration::from_millis(800), "no write waited for the stalled fsync (slowest {slowest:?})");
    let expected = digest(&mut c);
    let _: redis::RedisResult<()> = redis::cmd("SHUTDOWN").query(&mut c);
    assert!(s.wait_exit(Duration::from_secs(20)));
    s.restart(&[]);
    assert_eq!(digest(&mut s.client()), expected);
}

/// `always`: a reply waits for an fdatasync that started after its record was written. A
/// write made while a sync runs is not covered by that sync (its bytes may not be in it), so
/// it waits for the next one, which starts as soon as the running one ends.
#[test]
fn always_replies_wait_for_a_sync_that_covers_their_write() {
    let mut s = Server::start_with_env(&[("VERMILION_FAILPOINT_FSYNC_DELAY_MS", "400")], &["--appendfsync", "always"]);
    let mut a = s.client();
    let mut b = s.client();
    // The connections' own setup is behind us; the next sync starts with A's write.
    let t0 = Instant::now();
    let first = std::thread::spawn(move || {
        let _: () = q(&mut a, &["SET", "a", "1"]);
        t0.elapsed()
    });
    std::thread::sleep(Duration::from_millis(150));
    let _: () = q(&mut b, &["SET", "b", "2"]);
    let second = t0.elapsed();
    let first = first.join().expect("client A");
    assert!(first >= Duration::from_millis(400), "A was answered before its sync ended ({first:?})");
    // B's write landed during A's sync (about 150 ms in): answered after the next sync,
    // about 800 ms in, not when A's sync ended (about 400 ms).
    assert!(second >= Duration::from_millis(700), "B was answered by a sync that began before its write ({second:?})");
    assert!(second < Duration::from_millis(5000), "B waited far too long ({second:?})");
    let expected = digest(&mut b);
    drop(b);
    s.restart(&[]);
    assert_eq!(digest(&mut s.client()), expected);
}

/// A script whose outcome rests on more than its text, its keys and the data is logged as its
/// effects: a replay runs as the loader (no ACL user), with the settings of the restart, no
/// subscribers and a fresh Lua state, and would not do the same. Each case is checked in the
/// log and after kill -9 and a restart; deterministic scripts (data errors included) stay one
/// EVAL record.
#[test]
fn scripts_that_depend_on_more_than_the_data_are_logged_as_their_effects() {
    let mut s = Server::start(&["--appendfsync", "always"]);
    let mut c = s.client();
    // Refused half-way by ACL: what ran before the refusal stays, nothing after it.
    let _: () = q(&mut c, &["ACL", "SETUSER", "u", "on", ">p", "~a*", "+@all"]);
    let mut u = s.client();
    let _: () = q(&mut u, &["AUTH", "u", "p"]);
    let denied = redis::cmd("EVAL")
        .arg("redis.call('SET','a1','x') redis.call('SET','b1','y') redis.call('SET','a2','z')")
        .arg(0)
        .query::<()>(&mut u);
    assert!(denied.is_err_and(|e| e.to_string().contains("can't access")));
    // What the caller's user may do, written down.
    let _: () = q(&mut u, &["EVAL", "redis.call('SET', 'acl_verdict', tostring(redis.acl_check_cmd('set', 'b1', 'v')))", "0"]);
    // Failed for the proto-max-bulk-len of the moment.
    let _: () = q(&mut c, &["CONFIG", "SET", "proto-max-bulk-len", "1mb"]);
    let too_big = redis::cmd("EVAL")
        .arg("redis.call('SET', KEYS[1], 'x') redis.call('SETRANGE', KEYS[2], 2000000, 'x') redis.call('SET', KEYS[3], 'y')")
        .arg(3)
        .arg(&["c0", "c1", "c2"])
        .query::<()>(&mut c);
    assert!(too_big.is_err());
    let _: () = q(&mut c, &["CONFIG", "SET", "proto-max-bulk-len", "512mb"]);
    // A subscriber count, a memory figure, a Lua address, the collector's figures.
    let mut sub = s.raw();
    sub.cmd(&[b"SUBSCRIBE", b"ch"]);
    let _ = sub.read_reply();
    let _: () = q(&mut c, &["EVAL", "redis.call('SET', KEYS[1], redis.call('PUBLISH', 'ch', 'hi'))", "1", "receivers"]);
    let _: () = q(&mut c, &["SET", "big", &"x".repeat(5000)]);
    let _: () = q(&mut c, &["EVAL", "redis.call('SET', KEYS[1], redis.call('MEMORY', 'USAGE', KEYS[2]))", "2", "mem", "big"]);
    let _: () = q(&mut c, &["EVAL", "redis.call('SET', KEYS[1], tostring({}))", "1", "addr"]);
    let _: () = q(&mut c, &["EVAL", "redis.call('SET', KEYS[1], collectgarbage('count'))", "1", "gc"]);
    // The order `pairs` gives keys that are tables; a weak table the collector may clear.
    let _: () = q(&mut c, &["EVAL", "local t = {} for i = 1, 20000 do t[i] = {i} end", "0"]);
    let order = "local t = {} for i = 1, 10 do t[{}] = i end local o = {} for _, v in pairs(t) do o[#o+1] = v end redis.call('SET', KEYS[1], table.concat(o, ','))";
    let _: () = q(&mut c, &["EVAL", order, "1", "order"]);
    let weak = "local w = setmetatable({}, {__mode = 'k'}) for i = 1, 200 do w[{}] = i end local n = 0 for _ in next, w do n = n + 1 end redis.call('SET', KEYS[1], n)";
    let _: () = q(&mut c, &["EVAL", weak, "1", "weak"]);
    // A function library keeps state between calls that the log does not see (FCALL_RO).
    let lib = "#!lua name=cnt\nlocal n = 0\nredis.register_function{function_name='peek', callback=function() n = n + 1 return n end, flags={'no-writes'}}\nredis.register_function('next_id', function(keys) n = n + 1 redis.call('SET', keys[1], n) return n end)";
    let _: String = q(&mut c, &["FUNCTION", "LOAD", lib]);
    let _: i64 = q(&mut c, &["FCALL_RO", "peek", "0"]);
    let _: i64 = q(&mut c, &["FCALL_RO", "peek", "0"]);
    assert_eq!(q::<i64>(&mut c, &["FCALL", "next_id", "1", "id"]), 3);
    // Deterministic, data errors and all: one EVAL record each.
    let _: () = q(&mut c, &["SET", "str", "v"]);
    let det = "redis.pcall('LPUSH', 'str', 'x') redis.call('SET', KEYS[1], tostring(42) .. tostring(nil))";
    let _: () = q(&mut c, &["EVAL", det, "1", "det"]);
    // A read-only script (not logged) changes a cjson setting that later scripts see: from
    // then on every script of this Lua state is logged as its effects.
    let _: () = q(&mut c, &["EVAL", "cjson.encode_max_depth(1)", "0"]);
    let _: () = q(&mut c, &["EVAL", "redis.call('SET', KEYS[1], tostring(pcall(cjson.encode, {{1}})))", "1", "cjson"]);
    let recs = records(&last_incr(&s));
    let evals: Vec<&String> = recs.iter().filter(|r| r.contains("EVAL ") || r.contains("eval ")).collect();
    assert_eq!(evals.len(), 1, "only the deterministic script is logged whole: {recs:?}");
    assert!(evals[0].contains("tostring(42)"), "{recs:?}");
    for (key, value) in [("a1", "x"), ("c0", "x"), ("receivers", "1")] {
        assert!(recs.iter().any(|r| r == &format!("SET {key} {value}")), "{key} as an effect: {recs:?}");
    }
    let before: Vec<Option<String>> =
        ["a1", "b1", "a2", "acl_verdict", "c0", "c1", "c2", "receivers", "mem", "addr", "gc", "det", "cjson", "order", "weak", "id"]
            .iter()
            .map(|k| q(&mut c, &["GET", k]))
            .collect();
    assert_eq!(before[..8], [Some("x".into()), None, None, Some("false".into()), Some("x".into()), None, None, Some("1".into())]);
    assert_eq!(before[11].as_deref(), Some("42nil"));
    assert_eq!(before[12].as_deref(), Some("false"));
    assert_eq!(before[15].as_deref(), Some("3"));
    drop(sub);
    s.kill9();
    s.restart(&["--appendfsync", "always"]);
    let mut c = s.client();
    let after: Vec<Option<String>> =
        ["a1", "b1", "a2", "acl_verdict", "c0", "c1", "c2", "receivers", "mem", "addr", "gc", "det", "cjson", "order", "weak", "id"]
            .iter()
            .map(|k| q(&mut c, &["GET", k]))
            .collect();
    assert_eq!(after, before);
}

/// What was accepted under a raised proto-max-bulk-len is applied again by a restart with a
/// lower one: the loader is not held to the limit (Redis's `mustObeyClient`), for commands
/// and for scripts logged whole.
#[test]
fn a_restart_with_a_lower_proto_max_bulk_len_replays_what_was_accepted() {
    let mut s = Server::start(&["--appendfsync", "always", "--proto-max-bulk-len", "1mb"]);
    let mut c = s.client();
    let _: () = q(&mut c, &["CONFIG", "SET", "proto-max-bulk-len", "4mb"]);
    let _: i64 = q(&mut c, &["SETRANGE", "plain", "2000000", "x"]);
    let _: i64 = q(&mut c, &["EVAL", "return redis.call('SETRANGE', KEYS[1], 3000000, 'y')", "1", "scripted"]);
    let _: i64 = q(&mut c, &["SETBIT", "bits", "20000000", "1"]);
    let recs = records(&last_incr(&s));
    assert!(recs.iter().any(|r| r.contains("EVAL return redis.call('SETRANGE'")), "a deterministic success stays whole: {recs:?}");
    s.kill9();
    s.restart(&["--appendfsync", "always", "--proto-max-bulk-len", "1mb"]);
    let mut c = s.client();
    assert_eq!(q::<i64>(&mut c, &["STRLEN", "plain"]), 2_000_001);
    assert_eq!(q::<i64>(&mut c, &["STRLEN", "scripted"]), 3_000_001);
    assert_eq!(q::<i64>(&mut c, &["STRLEN", "bits"]), 2_500_001);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "bits"]), 1);
    // The limit still holds for clients.
    assert!(redis::cmd("SETRANGE").arg("plain").arg(2_000_000).arg("x").query::<i64>(&mut c).is_err());
}

/// Keys SCAN or RANDOMKEY expire lazily go to the log (the replication stream) as plain
/// DELs, as Redis propagates them for commands that touch arbitrary keys; a write command
/// that expires keys still has its records wrapped in MULTI/EXEC. Compared with
/// redis-server 7.0's AOF for the same sequence.
#[test]
fn keys_scan_and_randomkey_expire_are_logged_as_plain_dels_as_in_redis() {
    let redis = Server::start_binary(Path::new("redis-server"), &["--appendonly", "yes", "--save", "", "--enable-debug-command", "yes"]);
    let ours = Server::start(&["--appendonly", "yes", "--appendfsync", "always", "--enable-debug-command", "yes"]);
    let mut logs = Vec::new();
    for s in [&redis, &ours] {
        let mut c = s.client();
        let _: () = q(&mut c, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
        // Database 1 holds only keys about to expire: RANDOMKEY expires every one it meets.
        let _: () = q(&mut c, &["SELECT", "1"]);
        for k in ["r1", "r2"] {
            let _: () = q(&mut c, &["SET", k, "v", "PX", "30"]);
        }
        let _: () = q(&mut c, &["SELECT", "0"]);
        for k in ["s1", "s2", "s3"] {
            let _: () = q(&mut c, &["SET", k, "v", "PX", "30"]);
        }
        let _: () = q(&mut c, &["SET", "keep", "v"]);
        std::thread::sleep(Duration::from_millis(80));
        let _: redis::Value = q(&mut c, &["SCAN", "0", "MATCH", "s*", "COUNT", "100"]);
        let _: () = q(&mut c, &["SELECT", "1"]);
        let _: redis::Value = q(&mut c, &["RANDOMKEY"]);
        let _: () = q(&mut c, &["SET", "after", "1"]);
        // Redis writes its AOF after the reply (appendfsync everysec): give it the time.
        std::thread::sleep(Duration::from_millis(1200));
        let recs = records(&last_incr(s));
        let from = recs.iter().position(|r| r.starts_with("SET keep")).expect("the SET of keep") + 1;
        let tail: Vec<String> = recs[from..].iter().filter(|r| !r.starts_with('#') && !r.starts_with("SELECT")).cloned().collect();
        logs.push(tail);
    }
    // The DELs' order follows each server's hash table: compare them as sets, in place.
    let shape = |l: &[String]| l.iter().map(|r| if r.starts_with("DEL") { "DEL".to_string() } else { r.clone() }).collect::<Vec<_>>();
    assert_eq!(shape(&logs[0]), shape(&logs[1]), "redis {:?} / ours {:?}", logs[0], logs[1]);
    let mut dels: Vec<Vec<String>> = logs.iter().map(|l| l.iter().filter(|r| r.starts_with("DEL")).cloned().collect()).collect();
    dels.iter_mut().for_each(|d| d.sort());
    assert_eq!(dels[0], dels[1]);
}
