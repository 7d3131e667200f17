//! The server as an operator sees it: config file and command-line options, log lines on start
//! and stop, SIGTERM, SHUTDOWN, INFO, CONFIG, SLOWLOG, CLIENT, DEBUG SLEEP and AUTH.

mod common;

use std::io::Write;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{vermilion_bin, Server};

fn s(bytes: Vec<u8>) -> String {
    String::from_utf8_lossy(&bytes).into_owned()
}

#[test]
fn config_file_then_command_line_overrides() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("vermilion.conf");
    let mut f = std::fs::File::create(&conf).unwrap();
    writeln!(f, "# a comment\nmaxmemory 2mb\nslowlog-max-len 7\nsave 900 1\nsave 300 10\nhz 20\n").unwrap();
    let conf_s = conf.to_str().unwrap().to_string();
    let server = Server::start(&[&conf_s, "--hz", "15"]);
    let mut raw = server.raw();
    assert_eq!(s(raw.call(&[b"CONFIG", b"GET", b"maxmemory"])), "*2\r\n$9\r\nmaxmemory\r\n$7\r\n2097152\r\n");
    assert_eq!(s(raw.call(&[b"CONFIG", b"GET", b"slowlog-max-len"])), "*2\r\n$15\r\nslowlog-max-len\r\n$1\r\n7\r\n");
    assert_eq!(s(raw.call(&[b"CONFIG", b"GET", b"save"])), "*2\r\n$4\r\nsave\r\n$15\r\n900 1 300 10\r\n".replace("$15", "$12"));
    assert_eq!(s(raw.call(&[b"CONFIG", b"GET", b"hz"])), "*2\r\n$2\r\nhz\r\n$2\r\n15\r\n");
    let info = s(raw.call(&[b"INFO", b"server"]));
    assert!(info.contains(&format!("config_file:{}", std::fs::canonicalize(&conf).unwrap().display())), "{info}");
}

#[test]
fn bad_directive_is_fatal_with_redis_message() {
    let out = Command::new(vermilion_bin()).args(["--port", "1", "--no-such-thing", "5"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("FATAL CONFIG FILE ERROR") && err.contains("Bad directive or wrong number of arguments"), "{err}");
}

#[test]
fn logs_on_start_and_sigterm_shutdown() {
    // A relative logfile lands in the server's dir. The harness's readiness probe checks the
    // answering server is this one (INFO's process_id), so the log below is its own.
    let mut server = Server::start(&["--logfile", "server.log"]);
    let log = server.dir.path().join("server.log");
    let (pid, port) = (server.pid(), server.port);
    // SIGTERM: clean exit with Redis-like lines.
    unsafe_kill(pid, "TERM");
    let status = server.wait_exit_status(Duration::from_secs(10)).expect("exited after SIGTERM");
    let text = std::fs::read_to_string(&log).unwrap();
    // The status and the log together say where a failed exit stopped (seen once in CI).
    assert!(status.success(), "exit status {status:?}; log:\n{text}");
    for needle in [
        &format!("pid={pid}") as &str,
        "Vermilion is starting",
        &format!("port={port}"),
        "Ready to accept connections",
        "Received SIGTERM scheduling shutdown",
        "ready to exit, bye bye",
    ] {
        assert!(text.contains(needle), "log lacks {needle:?}:\n{text}");
    }
}

fn unsafe_kill(pid: u32, sig: &str) {
    Command::new("kill").arg(format!("-{sig}")).arg(pid.to_string()).status().unwrap();
}

#[test]
fn shutdown_command_ends_the_process_without_reply() {
    let mut server = Server::start(&[]);
    let mut raw = server.raw();
    raw.cmd(&[b"SHUTDOWN", b"NOSAVE"]);
    assert!(raw.is_closed());
    assert!(server.wait_exit(Duration::from_secs(10)));
}

#[test]
fn quit_and_client_kill_close_connections() {
    let server = Server::start(&[]);
    let mut a = server.raw();
    assert_eq!(a.call(&[b"QUIT"]), b"+OK\r\n");
    assert!(a.is_closed());

    let mut victim = server.raw();
    assert_eq!(victim.call(&[b"CLIENT", b"SETNAME", b"victim"]), b"+OK\r\n");
    let id = s(victim.call(&[b"CLIENT", b"ID"]));
    let id = id.trim_start_matches(':').trim().to_string();
    let mut killer = server.raw();
    let list = s(killer.call(&[b"CLIENT", b"LIST"]));
    assert!(list.contains("name=victim") && list.contains("cmd=client|list"), "{list}");
    assert_eq!(killer.call(&[b"CLIENT", b"KILL", b"ID", id.as_bytes()]), b":1\r\n");
    assert!(victim.is_closed());
    assert_eq!(killer.call(&[b"CLIENT", b"KILL", b"ID", id.as_bytes()]), b":0\r\n");
}

#[test]
fn auth_gates_commands() {
    let server = Server::start(&["--requirepass", "sekret"]);
    let mut raw = server.raw();
    assert_eq!(raw.call(&[b"PING"]), b"-NOAUTH Authentication required.\r\n");
    assert_eq!(raw.call(&[b"AUTH", b"wrong"]), b"-WRONGPASS invalid username-password pair or user is disabled.\r\n");
    assert_eq!(raw.call(&[b"AUTH", b"sekret"]), b"+OK\r\n");
    assert_eq!(raw.call(&[b"PING"]), b"+PONG\r\n");
    // Unauthenticated clients get Redis's tighter frame limits.
    let mut other = server.raw();
    other.send(b"*20\r\n");
    assert_eq!(other.read_reply(), b"-ERR Protocol error: unauthenticated multibulk length\r\n");
    assert!(other.is_closed());
}

#[test]
fn slowlog_and_info() {
    let server = Server::start(&["--slowlog-log-slower-than", "0"]);
    let mut raw = server.raw();
    raw.call(&[b"SLOWLOG", b"RESET"]);
    raw.call(&[b"PING"]);
    assert_eq!(raw.call(&[b"SLOWLOG", b"LEN"]), b":2\r\n");
    let got = s(raw.call(&[b"SLOWLOG", b"GET", b"2"]));
    assert!(got.contains("$4\r\nPING\r\n"), "{got}");
    let info = s(raw.call(&[b"INFO"]));
    for section in ["# Server", "# Clients", "# Memory", "# Persistence", "# Stats", "# Replication", "# CPU", "# Keyspace"] {
        assert!(info.contains(section), "INFO lacks {section}");
    }
    assert!(info.contains("redis_version:7.0.15") && info.contains("connected_clients:1"), "{info}");
    // One PING (ours); INFO twice before this one: the harness's readiness probe and ours.
    let stats = s(raw.call(&[b"INFO", b"commandstats"]));
    assert!(stats.contains("cmdstat_ping:calls=1,") && stats.contains("cmdstat_info:calls=2,"), "{stats}");
}

#[test]
fn slowlog_and_commandstats_measure_how_long_commands_take() {
    let server = Server::start(&["--slowlog-log-slower-than", "100000"]);
    let mut raw = server.raw();
    raw.call(&[b"DEBUG", b"SLEEP", b"0.2"]);
    raw.call(&[b"PING"]);
    // Only the sleep took over 100 ms.
    assert_eq!(raw.call(&[b"SLOWLOG", b"LEN"]), b":1\r\n");
    let got = s(raw.call(&[b"SLOWLOG", b"GET", b"1"]));
    // *1, *6, :id, :unix time, :duration in us, then the arguments.
    let us: u64 = got.split("\r\n").nth(4).and_then(|l| l.strip_prefix(':')).and_then(|n| n.parse().ok()).unwrap_or(0);
    assert!((200_000..1_000_000).contains(&us), "slowlog duration {us} us: {got}");
    let stats = s(raw.call(&[b"INFO", b"commandstats"]));
    let usec: u64 =
        stats.split("cmdstat_debug:calls=1,usec=").nth(1).and_then(|rest| rest.split(',').next()).and_then(|n| n.parse().ok()).unwrap_or(0);
    assert!((200_000..1_000_000).contains(&usec), "commandstats usec {usec}: {stats}");
}

#[test]
fn debug_sleep_blocks_everyone_atomically() {
    let server = Server::start(&[]);
    let mut sleeper = server.raw();
    let mut other = server.raw();
    let start = Instant::now();
    sleeper.cmd(&[b"DEBUG", b"SLEEP", b"0.3"]);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(other.call(&[b"PING"]), b"+PONG\r\n");
    assert!(start.elapsed() >= Duration::from_millis(280), "PING answered during DEBUG SLEEP");
    assert_eq!(sleeper.read_reply(), b"+OK\r\n");
}

#[test]
fn config_set_is_all_or_nothing() {
    let server = Server::start(&[]);
    let mut raw = server.raw();
    assert_eq!(
        s(raw.call(&[b"CONFIG", b"SET", b"maxmemory", b"10mb", b"appendonly", b"maybe"])),
        "-ERR CONFIG SET failed (possibly related to argument 'appendonly') - argument must be 'yes' or 'no'\r\n"
    );
    assert_eq!(s(raw.call(&[b"CONFIG", b"GET", b"maxmemory"])), "*2\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n");
    assert_eq!(raw.call(&[b"CONFIG", b"SET", b"maxmemory", b"10mb", b"hz", b"50"]), b"+OK\r\n");
    assert_eq!(s(raw.call(&[b"CONFIG", b"GET", b"maxmemory"])), "*2\r\n$9\r\nmaxmemory\r\n$8\r\n10485760\r\n");
}

/// A relative `logfile` is relative to `dir`, as in Redis (the server changes into `dir`
/// before it writes anything).
#[test]
fn a_relative_logfile_lands_in_dir() {
    let server = common::Server::start(&["--logfile", "relative-test.log"]);
    assert_eq!(server.raw().call(&[b"PING"]), b"+PONG\r\n");
    let text = std::fs::read_to_string(server.dir.path().join("relative-test.log")).unwrap_or_default();
    assert!(text.contains("Vermilion is starting"), "{text}");
    assert!(!std::path::Path::new("relative-test.log").exists(), "the log went to the test's directory");
}

/// INFO stats counts what went over the network as Redis does: bytes read, reads and reply
/// writes (one per client per turn), compared with Redis on the same exchanges.
#[test]
fn info_stats_counts_network_reads_and_writes_like_redis() {
    let mut d = common::diff::DiffPair::start();
    let counters =
        ["total_net_input_bytes", "total_net_output_bytes", "total_reads_processed", "total_writes_processed", "total_commands_processed"];
    let (r, o) = d.conns(0);
    let mut figures = Vec::new();
    for c in [r, o] {
        let mut step = |bytes: &[u8], replies: usize| {
            c.send(bytes).expect("send");
            let last = (0..replies).map(|_| c.read().expect("reply")).last();
            // One exchange at a time: each is one read on the server.
            std::thread::sleep(std::time::Duration::from_millis(20));
            last
        };
        step(b"*2\r\n$6\r\nCONFIG\r\n$9\r\nRESETSTAT\r\n", 1);
        for _ in 0..5 {
            step(b"*1\r\n$4\r\nPING\r\n", 1);
        }
        step(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n", 1);
        step(b"PING\r\n", 1);
        step(b"*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n", 2);
        let info = step(b"*2\r\n$4\r\nINFO\r\n$5\r\nstats\r\n", 1).expect("info").raw;
        let info = String::from_utf8_lossy(&info).into_owned();
        let lines: Vec<String> =
            info.lines().filter(|l| counters.iter().any(|n| l.starts_with(&format!("{n}:")))).map(String::from).collect();
        assert_eq!(lines.len(), counters.len(), "{info}");
        figures.push(lines);
    }
    assert_eq!(figures[1], figures[0]);
}

/// INFO latencystats and LATENCY HISTOGRAM: per-command histograms as Redis keeps them (the
/// same commands listed, percentiles printed with 3 decimals from Redis's bucket layout,
/// cumulative counts at powers of two microseconds), off with `latency-tracking no`, emptied
/// by CONFIG RESETSTAT.
#[test]
fn latency_histograms_per_command() {
    let mut d = common::diff::DiffPair::start();
    let mut names = Vec::new();
    for side in 0..2 {
        let (r, o) = d.conns(0);
        let c = if side == 0 { r } else { o };
        let text = |c: &mut common::diff::Conn, args: &[&str]| {
            String::from_utf8_lossy(c.call(args).expect("reply").value.as_bytes().unwrap_or_default()).into_owned()
        };
        c.call(&["CONFIG", "RESETSTAT"]).expect("resetstat");
        c.call(&["SET", "a", "b"]).expect("set");
        for _ in 0..3 {
            c.call(&["GET", "a"]).expect("get");
        }
        c.call(&["CLIENT", "ID"]).expect("client id");
        let info = text(c, &["INFO", "latencystats"]);
        let mut lines: Vec<String> =
            info.lines().skip(1).filter(|l| !l.is_empty()).map(|l| l.split(':').next().unwrap_or("").to_string()).collect();
        lines.sort();
        names.push(lines);
        for line in info.lines().skip(1).filter(|l| !l.is_empty()) {
            let values = line.split(':').nth(1).expect("values");
            let labels: Vec<&str> = values.split(',').map(|kv| kv.split('=').next().unwrap_or("")).collect();
            assert_eq!(labels, ["p50", "p99", "p99.9"], "{line}");
            for kv in values.split(',') {
                let v = kv.split('=').nth(1).expect("value");
                assert!(v.parse::<f64>().is_ok() && v.split('.').nth(1).map(str::len) == Some(3), "{line}");
            }
        }
        // RESP3: a map of command -> {calls, histogram_usec: {usec: cumulative}}.
        let raw = c.call(&["LATENCY", "HISTOGRAM", "get", "nosuch"]).expect("histogram").raw;
        let text = String::from_utf8_lossy(&raw).into_owned();
        assert!(text.starts_with("*2\r\n$3\r\nget\r\n*4\r\n$5\r\ncalls\r\n:3\r\n$14\r\nhistogram_usec\r\n*"), "{text:?}");
    }
    assert_eq!(names[1], names[0], "the same commands have histograms");
    let s = Server::start(&[]);
    let mut c = s.client();
    let _: () = redis::cmd("CONFIG").arg("SET").arg("latency-tracking").arg("no").query(&mut c).expect("config");
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut c).expect("resetstat");
    let _: Option<String> = redis::cmd("GET").arg("a").query(&mut c).expect("get");
    let info: String = redis::cmd("INFO").arg("latencystats").query(&mut c).expect("info");
    assert!(!info.contains("latency_percentiles_usec_get"), "{info}");
}
