//! Redis's RDB file, against redis-server 7.0 and its tools: files each side writes load on
//! the other with the same DEBUG DIGEST, redis-check-rdb accepts ours, a Redis directory
//! (dump.rdb or appendonlydir) migrates, redis-cli --rdb gets a real file, and BGSAVE, save
//! points, SHUTDOWN's save and DEBUG RELOAD behave as Redis's do.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{RawConn, Server};

const DEBUG: [&str; 2] = ["--enable-debug-command", "yes"];

fn call(c: &mut RawConn, args: &[&str]) -> String {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    String::from_utf8_lossy(&c.call(&args)).into_owned()
}

fn digest(port: u16) -> String {
    call(&mut RawConn::connect(port), &["DEBUG", "DIGEST"])
}

fn info_field(c: &mut RawConn, name: &str) -> String {
    let info = call(c, &["INFO", "persistence"]);
    info.lines().find_map(|l| l.strip_prefix(&format!("{name}:"))).unwrap_or_else(|| panic!("no {name} in {info}")).trim().to_string()
}

/// Every type in each of Redis's encodings (small and large), expiries, a second database,
/// a stream with a group, a pending entry and a consumer, and a function library.
fn fill(c: &mut RawConn) {
    let big = "a".repeat(300);
    let run = |c: &mut RawConn, args: &[&str]| {
        let r = call(c, args);
        assert!(!r.starts_with('-'), "{args:?}: {r}");
    };
    run(c, &["SET", "s", "hello"]);
    run(c, &["SET", "n", "12345"]);
    run(c, &["SET", "neg", "-70000"]);
    run(c, &["SET", "big", &big]);
    run(c, &["SET", "bin", "\u{0}\u{1}\r\nx"]);
    run(c, &["RPUSH", "list", "a", "b", "1", "2"]);
    run(c, &["SADD", "ints", "1", "2", "3", "-5"]);
    run(c, &["SADD", "strs", "a", "b", "c"]);
    run(c, &["HSET", "h", "f", "v", "n", "1"]);
    run(c, &["ZADD", "z", "1", "a", "2.5", "b", "-inf", "c", "3", &big]);
    for i in 0..300 {
        let (m, v) = (format!("m{i}"), format!("{i}"));
        run(c, &["RPUSH", "biglist", &v, &m]);
        run(c, &["SADD", "bigints", &v]);
        run(c, &["SADD", "bigset", &m]);
        run(c, &["HSET", "bighash", &m, &v]);
        run(c, &["ZADD", "bigzset", &v, &m]);
    }
    run(c, &["SADD", "bigints", &"9".repeat(18)]);
    run(c, &["XADD", "x", "1-1", "f", "v"]);
    run(c, &["XADD", "x", "2-1", "a", "b", "c", "d"]);
    run(c, &["XGROUP", "CREATE", "x", "g", "0"]);
    run(c, &["XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "x", ">"]);
    run(c, &["SET", "e", "v", "PXAT", "4102444800000"]);
    run(c, &["HSET", "eh", "f", "v"]);
    run(c, &["PEXPIREAT", "eh", "4102444800123"]);
    run(c, &["SELECT", "3"]);
    run(c, &["SET", "db3", "yes"]);
    run(c, &["SELECT", "0"]);
    run(c, &["FUNCTION", "LOAD", "#!lua name=lib1\nredis.register_function('f1', function() return 'one' end)"]);
}

fn check_rdb(path: &Path) {
    let out = Command::new("redis-check-rdb").arg(path).output().expect("run redis-check-rdb (apt install redis-tools)");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("RDB looks OK"), "redis-check-rdb refused {}:\n{text}", path.display());
}

/// A fresh directory holding a copy of `file` as dump.rdb.
fn dir_with(file: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(file, dir.path().join("dump.rdb")).unwrap();
    dir
}

fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < deadline, "{what}: not within {timeout:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn each_side_loads_the_others_file_with_the_same_digest() {
    let ours = Server::start(&["--appendonly", "no", "--save", "", DEBUG[0], DEBUG[1]]);
    let redis = Server::start_redis(&DEBUG);
    let (mut oc, mut rc) = (ours.raw(), redis.raw());
    fill(&mut oc);
    fill(&mut rc);
    let (od, rd) = (digest(ours.port), digest(redis.port));
    assert_eq!(od, rd, "the same commands gave different datasets");
    assert_eq!(call(&mut oc, &["SAVE"]), "+OK\r\n");
    assert_eq!(call(&mut rc, &["SAVE"]), "+OK\r\n");
    let (ofile, rfile) = (ours.dir.path().join("dump.rdb"), redis.dir.path().join("dump.rdb"));
    check_rdb(&ofile);

    // Ours into redis-server.
    let r2 =
        Server::start_binary_in(Path::new("redis-server"), dir_with(&ofile), &["--appendonly", "no", "--save", "", DEBUG[0], DEBUG[1]]);
    assert_eq!(digest(r2.port), od, "redis-server loaded our file to another dataset");
    let mut c = r2.raw();
    assert_eq!(call(&mut c, &["FCALL", "f1", "0"]), "$3\r\none\r\n");
    assert_eq!(call(&mut c, &["PEXPIRETIME", "eh"]), ":4102444800123\r\n");
    // Written as a plain set, re-encoded by redis-server as it loads.
    assert_eq!(call(&mut c, &["OBJECT", "ENCODING", "bigints"]), "$6\r\nintset\r\n");

    // Redis's (its listpacks, intsets, quicklists, LZF strings, stream listpacks) into ours.
    let o2 = Server::start_in(dir_with(&rfile), &["--appendonly", "no", "--save", "", DEBUG[0], DEBUG[1]]);
    assert_eq!(digest(o2.port), rd, "we loaded redis-server's file to another dataset");
    let mut c = o2.raw();
    assert_eq!(call(&mut c, &["FCALL", "f1", "0"]), "$3\r\none\r\n");
    assert!(call(&mut c, &["XPENDING", "x", "g"]).contains("alice"));
    assert_eq!(info_field(&mut c, "rdb_last_load_keys_loaded"), "19");
}

#[test]
fn eviction_hints_travel_in_the_file() {
    for (policy, probe) in [("allkeys-lfu", "FREQ"), ("allkeys-lru", "IDLETIME")] {
        let redis = Server::start_redis(&["--maxmemory-policy", policy]);
        let mut c = redis.raw();
        call(&mut c, &["SET", "hot", "1"]);
        for _ in 0..200 {
            call(&mut c, &["GET", "hot"]);
        }
        call(&mut c, &["SET", "cold", "1"]);
        // Only the hint matters here: restore an idle time Redis will report back.
        call(
            &mut c,
            &[
                "RESTORE",
                "idle",
                "0",
                &String::from_utf8_lossy(&{
                    let mut d = RawConn::connect(redis.port);
                    d.cmd(&[b"DUMP", b"cold"]);
                    let r = d.read_reply();
                    let start = r.iter().position(|&b| b == b'\n').unwrap() + 1;
                    r[start..r.len() - 2].to_vec()
                }),
                "IDLETIME",
                "5000",
            ],
        );
        let want = call(&mut c, &["OBJECT", probe, "hot"]);
        let want_idle = call(&mut c, &["OBJECT", probe, "idle"]);
        call(&mut c, &["SAVE"]);
        let ours = Server::start_in(
            dir_with(&redis.dir.path().join("dump.rdb")),
            &["--appendonly", "no", "--save", "", "--maxmemory-policy", policy],
        );
        let mut oc = ours.raw();
        assert_eq!(call(&mut oc, &["OBJECT", probe, "hot"]), want, "{policy}: OBJECT {probe} of a hot key");
        if probe == "IDLETIME" {
            assert_eq!(call(&mut oc, &["OBJECT", probe, "idle"]), want_idle, "{policy}: the idle time");
        }
        // And back: our file carries the same hint into redis-server.
        call(&mut oc, &["SAVE"]);
        let r2 = Server::start_binary_in(
            Path::new("redis-server"),
            dir_with(&ours.dir.path().join("dump.rdb")),
            &["--appendonly", "no", "--save", "", "--maxmemory-policy", policy],
        );
        assert_eq!(call(&mut r2.raw(), &["OBJECT", probe, "hot"]), want, "{policy}: redis-server read our hint");
    }
}

#[test]
fn a_redis_directory_migrates_and_the_log_takes_over() {
    // dump.rdb of a Redis that ran without its AOF, started with our log on.
    let redis = Server::start_redis(&DEBUG);
    let mut rc = redis.raw();
    fill(&mut rc);
    call(&mut rc, &["SAVE"]);
    let want = digest(redis.port);
    let mut ours = Server::start_in(dir_with(&redis.dir.path().join("dump.rdb")), &["--appendonly", "yes", DEBUG[0], DEBUG[1]]);
    assert_eq!(digest(ours.port), want);
    call(&mut ours.raw(), &["SET", "after", "1"]);
    // The log holds it all now: the RDB file is no longer needed.
    std::fs::remove_file(ours.dir.path().join("dump.rdb")).unwrap();
    ours.restart(&["--appendonly", "yes", DEBUG[0], DEBUG[1]]);
    let mut c = ours.raw();
    assert_eq!(call(&mut c, &["GET", "after"]), "$1\r\n1\r\n");
    call(&mut c, &["DEL", "after"]);
    assert_eq!(digest(ours.port), want);

    // Redis 7's appendonlydir: a base in RDB form (or, without the preamble, of commands),
    // then incremental files of commands.
    for preamble in ["yes", "no"] {
        redis_appendonlydir_migrates(preamble);
    }
}

fn redis_appendonlydir_migrates(preamble: &str) {
    let redis = Server::start_redis(&["--appendonly", "yes", "--aof-use-rdb-preamble", preamble, DEBUG[0], DEBUG[1]]);
    let mut rc = redis.raw();
    fill(&mut rc);
    call(&mut rc, &["BGREWRITEAOF"]);
    wait_for("Redis's rewrite", Duration::from_secs(10), || info_field(&mut rc, "aof_rewrite_in_progress") == "0");
    call(&mut rc, &["SET", "incr", "after base"]);
    call(&mut rc, &["EVAL", "redis.call('hset', KEYS[1], 'a', ARGV[1])", "1", "scripted", "x"]);
    let want = digest(redis.port);
    let dir = tempfile::tempdir().unwrap();
    let src = redis.dir.path().join("appendonlydir");
    std::fs::create_dir(dir.path().join("appendonlydir")).unwrap();
    let mut base = String::new();
    for f in std::fs::read_dir(&src).unwrap() {
        let f = f.unwrap();
        let name = f.file_name().to_string_lossy().into_owned();
        if name.contains(".base.") {
            base = name;
        }
        std::fs::copy(f.path(), dir.path().join("appendonlydir").join(f.file_name())).unwrap();
    }
    let want_suffix = if preamble == "yes" { ".base.rdb" } else { ".base.aof" };
    assert!(base.ends_with(want_suffix), "Redis wrote {base} with aof-use-rdb-preamble {preamble}");
    let mut ours = Server::start_in(dir, &["--appendonly", "yes", DEBUG[0], DEBUG[1]]);
    assert_eq!(digest(ours.port), want, "{base}");
    call(&mut ours.raw(), &["SET", "ours", "1"]);
    ours.restart(&["--appendonly", "yes", DEBUG[0], DEBUG[1]]);
    let mut c = ours.raw();
    assert_eq!(call(&mut c, &["GET", "ours"]), "$1\r\n1\r\n");
    // A rewrite gives the directory a base of ours; it still loads.
    call(&mut c, &["BGREWRITEAOF"]);
    wait_for("our rewrite", Duration::from_secs(10), || info_field(&mut c, "aof_rewrite_in_progress") == "0");
    ours.restart(&["--appendonly", "yes", DEBUG[0], DEBUG[1]]);
    assert_eq!(call(&mut ours.raw(), &["GET", "ours"]), "$1\r\n1\r\n");
}

#[test]
fn redis_cli_rdb_receives_a_real_file() {
    let ours = Server::start(&["--appendonly", "yes", DEBUG[0], DEBUG[1]]);
    let mut c = ours.raw();
    fill(&mut c);
    let want = digest(ours.port);
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("dump.rdb");
    let st = Command::new("redis-cli").args(["-p", &ours.port.to_string(), "--rdb"]).arg(&file).output().unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    check_rdb(&file);
    let r = Server::start_binary_in(Path::new("redis-server"), out, &["--appendonly", "no", "--save", "", DEBUG[0], DEBUG[1]]);
    assert_eq!(digest(r.port), want);

    let fdir = tempfile::tempdir().unwrap();
    let ffile = fdir.path().join("dump.rdb");
    let st = Command::new("redis-cli").args(["-p", &ours.port.to_string(), "--functions-rdb"]).arg(&ffile).output().unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    let r = Server::start_binary_in(Path::new("redis-server"), fdir, &["--appendonly", "no", "--save", ""]);
    let mut rc = r.raw();
    assert_eq!(call(&mut rc, &["DBSIZE"]), ":0\r\n");
    assert_eq!(call(&mut rc, &["FCALL", "f1", "0"]), "$3\r\none\r\n");
    // The server served the transfer and goes on.
    assert_eq!(call(&mut c, &["PING"]), "+PONG\r\n");
}

#[test]
fn bgsave_writes_the_dataset_as_of_its_start() {
    // 100 us per key: the walk spans about 2 s of batches.
    let mut ours = Server::start(&["--appendonly", "no", "--save", "", "--rdb-key-save-delay", "100"]);
    let mut c = ours.raw();
    call(&mut c, &["DEBUG", "POPULATE", "20000", "k", "16"]);
    assert_eq!(call(&mut c, &["BGSAVE"]), "+Background saving started\r\n");
    assert_eq!(info_field(&mut c, "rdb_bgsave_in_progress"), "1");
    assert_eq!(call(&mut c, &["BGSAVE"]), "-ERR Background save already in progress\r\n");
    assert_eq!(call(&mut c, &["SAVE"]), "-ERR Background save already in progress\r\n");
    // Changes during the walk: the file keeps the values of the moment BGSAVE began.
    // In one pipeline: the walk advances a slice per batch.
    let mut n = 0;
    for i in (0..20000).step_by(97) {
        c.cmd(&[b"SET", format!("k:{i}").as_bytes(), b"changed"]);
        c.cmd(&[b"DEL", format!("k:{}", i + 1).as_bytes()]);
        n += 2;
    }
    c.cmd(&[b"SET", b"new-during-save", b"1"]);
    for _ in 0..=n {
        assert!(!c.read_reply().starts_with(b"-"));
    }
    assert_eq!(info_field(&mut c, "rdb_bgsave_in_progress"), "1", "the walk ended before the changes: not a test of them");
    // A flush during the walk does not empty the file either.
    call(&mut c, &["FLUSHDB"]);
    wait_for("the background save", Duration::from_secs(60), || info_field(&mut c, "rdb_bgsave_in_progress") == "0");
    assert_eq!(info_field(&mut c, "rdb_last_bgsave_status"), "ok");
    assert_eq!(info_field(&mut c, "rdb_saves"), "1");
    check_rdb(&ours.dir.path().join("dump.rdb"));
    // A restart without the log loads the file: the state when BGSAVE began.
    ours.restart(&["--appendonly", "no", "--save", ""]);
    let mut c = ours.raw();
    assert_eq!(call(&mut c, &["DBSIZE"]), ":20000\r\n");
    assert_eq!(call(&mut c, &["GET", "k:970"]), "$16\r\nvalue:970\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\r\n");
    assert_eq!(call(&mut c, &["EXISTS", "k:971", "new-during-save"]), ":1\r\n");
}

/// XREADGROUP's key spec calls its stream read-only, yet it creates a consumer and fills the
/// group's pending list: a BGSAVE under way must keep the group as it was when it began.
#[test]
fn bgsave_keeps_a_consumer_group_as_of_its_start() {
    let mut ours = Server::start(&["--appendonly", "no", "--save", "", "--rdb-key-save-delay", "100"]);
    let mut c = ours.raw();
    // Made first: the walk goes over the keys newest first, so it reaches the stream last.
    call(&mut c, &["XADD", "s", "1-1", "f", "v"]);
    call(&mut c, &["XGROUP", "CREATE", "s", "g", "0"]);
    call(&mut c, &["DEBUG", "POPULATE", "10000", "k", "16"]);
    assert_eq!(call(&mut c, &["BGSAVE"]), "+Background saving started\r\n");
    c.cmd(&[b"XREADGROUP", b"GROUP", b"g", b"alice", b"STREAMS", b"s", b">"]);
    assert!(c.read_reply().starts_with(b"*1"), "the read delivered the entry");
    assert_eq!(info_field(&mut c, "rdb_bgsave_in_progress"), "1", "the walk ended before the read: not a test of it");
    wait_for("the background save", Duration::from_secs(60), || info_field(&mut c, "rdb_bgsave_in_progress") == "0");
    ours.restart(&["--appendonly", "no", "--save", ""]);
    let mut c = ours.raw();
    assert_eq!(call(&mut c, &["XPENDING", "s", "g"]), "*4\r\n:0\r\n$-1\r\n$-1\r\n*-1\r\n", "the file holds the group before the read");
}

#[test]
fn kill_9_during_bgsave_leaves_the_previous_file() {
    let mut ours = Server::start(&["--appendonly", "no", "--save", ""]);
    let mut c = ours.raw();
    call(&mut c, &["SET", "first", "1"]);
    assert_eq!(call(&mut c, &["SAVE"]), "+OK\r\n");
    call(&mut c, &["DEBUG", "POPULATE", "300000"]);
    call(&mut c, &["BGSAVE"]);
    ours.kill9();
    ours.restart(&["--appendonly", "no", "--save", ""]);
    let mut c = ours.raw();
    let n = call(&mut c, &["DBSIZE"]);
    // Either the old file, or the new one if the save won the race: never a torn one.
    assert!(n == ":1\r\n" || n == ":300001\r\n", "{n}");
}

#[test]
fn save_points_shutdown_and_debug_reload() {
    let mut ours = Server::start(&["--appendonly", "no", "--save", "1 1", DEBUG[0], DEBUG[1]]);
    let mut c = ours.raw();
    let before: i64 = call(&mut c, &["LASTSAVE"])[1..].trim().parse().unwrap();
    call(&mut c, &["SET", "a", "1"]);
    // One change and more than one second: the save point fires a BGSAVE.
    wait_for("the save point", Duration::from_secs(10), || info_field(&mut c, "rdb_saves") == "1");
    let after: i64 = call(&mut c, &["LASTSAVE"])[1..].trim().parse().unwrap();
    assert!(after > before);
    assert_eq!(info_field(&mut c, "rdb_changes_since_last_save"), "0");

    // DEBUG RELOAD without the log: save, empty, load back.
    fill(&mut c);
    let want = digest(ours.port);
    assert_eq!(call(&mut c, &["DEBUG", "RELOAD"]), "+OK\r\n");
    assert_eq!(digest(ours.port), want);

    // SHUTDOWN with save points set saves; NOSAVE does not.
    call(&mut c, &["CONFIG", "SET", "save", "3600 1"]);
    call(&mut c, &["SET", "at-shutdown", "1"]);
    c.cmd(&[b"SHUTDOWN"]);
    assert!(ours.wait_exit(Duration::from_secs(10)));
    ours.restart(&["--appendonly", "no", "--save", "", DEBUG[0], DEBUG[1]]);
    let mut c = ours.raw();
    assert_eq!(call(&mut c, &["GET", "at-shutdown"]), "$1\r\n1\r\n");
    call(&mut c, &["SET", "lost", "1"]);
    c.cmd(&[b"SHUTDOWN", b"NOSAVE"]);
    assert!(ours.wait_exit(Duration::from_secs(10)));
    ours.restart(&["--appendonly", "no", "--save", "", DEBUG[0], DEBUG[1]]);
    let mut c = ours.raw();
    assert_eq!(call(&mut c, &["EXISTS", "lost", "at-shutdown"]), ":1\r\n");

    // A save that cannot be written stops SHUTDOWN, as in Redis; FORCE exits anyway.
    std::fs::create_dir(ours.dir.path().join(format!("temp-{}.rdb", ours.pid()))).unwrap();
    assert_eq!(call(&mut c, &["SAVE"]), "-ERR\r\n");
    assert_eq!(call(&mut c, &["SHUTDOWN", "SAVE"]), "-ERR Errors trying to SHUTDOWN. Check logs.\r\n");
    assert_eq!(call(&mut c, &["PING"]), "+PONG\r\n");
    c.cmd(&[b"SHUTDOWN", b"SAVE", b"FORCE"]);
    assert!(ours.wait_exit(Duration::from_secs(10)));
}

#[test]
fn bad_files_stop_the_start_with_a_clear_error() {
    let redis = Server::start_redis(&[]);
    let mut rc = redis.raw();
    call(&mut rc, &["DEBUG", "POPULATE", "100"]);
    call(&mut rc, &["SAVE"]);
    let good = std::fs::read(redis.dir.path().join("dump.rdb")).unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", good[..good.len() / 2].to_vec()),
        ("flipped", {
            let mut b = good.clone();
            let n = b.len() / 2;
            b[n] ^= 0x5a;
            b
        }),
        ("garbage", b"not an rdb file at all".to_vec()),
        ("future version", {
            let mut b = good.clone();
            b[5..9].copy_from_slice(b"0011");
            b
        }),
    ];
    for (name, bytes) in cases {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("dump.rdb"), &bytes).unwrap();
        let (ok, log) = Server::run_expecting_exit(dir.path(), &["--appendonly", "no"]);
        assert!(!ok, "{name}: the server started");
        assert!(log.contains("Fatal error loading the DB"), "{name}: {log}");
        assert!(!log.contains("panicked"), "{name}: {log}");
    }
}
