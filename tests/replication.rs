//! Replication with real processes on loopback: full and partial resyncs, a chained replica,
//! restarts, promotion, WAIT, read-only replicas, the stream-equals-log property, and bad
//! input on the replication port. Every scenario ends with the replicas' DEBUG DIGEST equal
//! to the primary's at the same offset.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::probe::{digest, field, info, num};
use common::{Rng, Server};
use redis::Connection;

fn replicaof(c: &mut Connection, primary: &Server) {
    let _: String = redis::cmd("REPLICAOF").arg("127.0.0.1").arg(primary.port).query(c).expect("REPLICAOF");
}

/// INFO, retried while the server answers an error (BUSY during a long script).
fn info_retry(s: &Server, section: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match redis::cmd("INFO").arg(section).query::<String>(&mut s.client()) {
            Ok(text) => return text,
            Err(e) => assert!(Instant::now() < deadline, "INFO kept failing: {e}"),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until every replica is up and at the primary's offset, then compares digests. The
/// primary's active expiry is paused meanwhile, so that no deletion moves the offset
/// between the reads.
fn converge(primary: &Server, replicas: &[&Server]) -> i64 {
    let mut p = primary.client();
    let _: () = redis::cmd("DEBUG").arg("SET-ACTIVE-EXPIRE").arg(0).query(&mut p).expect("DEBUG SET-ACTIVE-EXPIRE");
    let deadline = Instant::now() + Duration::from_secs(30);
    let offset = loop {
        let offset = num(&mut p, "replication", "master_repl_offset");
        let mut all = true;
        for r in replicas {
            let text = info_retry(r, "replication");
            let up = field(&text, "master_link_status").as_deref() == Some("up");
            let at = field(&text, "slave_repl_offset").and_then(|v| v.parse::<i64>().ok());
            all &= up && at == Some(offset);
        }
        if all && offset == num(&mut p, "replication", "master_repl_offset") {
            let want = digest(&mut p);
            for r in replicas {
                assert_eq!(digest(&mut r.client()), want, "replica on port {} diverged at offset {offset}", r.port);
            }
            break offset;
        }
        assert!(Instant::now() < deadline, "replicas did not reach the primary's offset {offset}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let _: () = redis::cmd("DEBUG").arg("SET-ACTIVE-EXPIRE").arg(1).query(&mut p).expect("DEBUG SET-ACTIVE-EXPIRE");
    offset
}

/// The current incremental log of a server's directory, and the offset it starts at
/// (its base snapshot's log offset plus the earlier incremental files).
fn incr_log(s: &Server) -> (u64, Vec<u8>) {
    let dir = s.dir.path().join("appendonlydir");
    let manifest = std::fs::read_to_string(dir.join("appendonly.aof.manifest")).expect("manifest");
    let names: Vec<String> =
        manifest.lines().filter(|l| l.starts_with("file ")).filter_map(|l| l.split_whitespace().nth(1).map(str::to_string)).collect();
    let base = std::fs::read(dir.join(&names[0])).expect("base");
    let mut start = u64::from_le_bytes(base[16..24].try_into().expect("header"));
    for n in &names[1..names.len() - 1] {
        start += std::fs::metadata(dir.join(n)).map(|m| m.len()).unwrap_or(0);
    }
    (start, std::fs::read(dir.join(&names[names.len() - 1])).expect("incr"))
}

/// The bytes two logs hold for the offsets both cover are the same.
fn assert_same_bytes(a: &Server, b: &Server) -> usize {
    let (sa, la) = incr_log(a);
    let (sb, lb) = incr_log(b);
    let from = sa.max(sb);
    let to = (sa + la.len() as u64).min(sb + lb.len() as u64);
    assert!(to > from, "no common range: [{sa}, +{}) and [{sb}, +{})", la.len(), lb.len());
    let x = &la[(from - sa) as usize..(to - sa) as usize];
    let y = &lb[(from - sb) as usize..(to - sb) as usize];
    assert!(x == y, "the logs differ in [{from}, {to})");
    x.len()
}

const DET: &str = "local m = redis.call('SMEMBERS', KEYS[1]) local h = redis.call('HKEYS', KEYS[2]) \
    redis.call('RPUSH', KEYS[3], #m .. ':' .. #h .. ':' .. math.random(1000)) \
    redis.call('HSET', KEYS[2], 'f' .. math.random(50), ARGV[1]) return #m";
const RANDOM_DIRTY: &str = "local p = redis.call('SPOP', KEYS[1]) local r = redis.call('SRANDMEMBER', KEYS[1]) \
    local t = redis.call('TIME') redis.call('SET', KEYS[2], tostring(p) .. tostring(r) .. t[2]) return 1";

/// One client's mixed load until `stop`.
fn load(port: u16, seed: u64, stop: Arc<AtomicBool>) -> u64 {
    let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/")).and_then(|c| c.get_connection()).expect("connect");
    let mut rng = Rng(seed | 1);
    let mut ops = 0;
    while !stop.load(Ordering::Relaxed) {
        let k = rng.below(40);
        let r: redis::RedisResult<redis::Value> = match rng.below(9) {
            0 => redis::cmd("SET").arg(format!("s{k}")).arg(rng.next()).query(&mut c),
            1 => redis::cmd("INCR").arg(format!("n{k}")).query(&mut c),
            2 => redis::cmd("SADD").arg(format!("set{}", k % 4)).arg(rng.below(30)).query(&mut c),
            3 => redis::pipe()
                .atomic()
                .cmd("INCR")
                .arg(format!("m{k}"))
                .cmd("LPUSH")
                .arg(format!("l{}", k % 5))
                .arg(k)
                .cmd("LTRIM")
                .arg(format!("l{}", k % 5))
                .arg(0)
                .arg(20)
                .query(&mut c),
            4 => redis::cmd("EVAL").arg(DET).arg(3).arg(format!("set{}", k % 4)).arg(format!("h{}", k % 3)).arg("out").arg(k).query(&mut c),
            5 => redis::cmd("EVAL").arg(RANDOM_DIRTY).arg(2).arg(format!("set{}", k % 4)).arg(format!("rd{k}")).query(&mut c),
            6 => redis::cmd("SET").arg(format!("e{k}")).arg(k).arg("PX").arg(1 + rng.below(300)).query(&mut c),
            7 => redis::cmd("PEXPIRE").arg(format!("s{k}")).arg(1 + rng.below(500)).query(&mut c),
            _ => redis::cmd("SELECT").arg(rng.below(3)).query(&mut c),
        };
        r.expect("a command of the load failed");
        ops += 1;
    }
    ops
}

fn run_load(port: u16, clients: u64, for_how_long: Duration) -> u64 {
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..clients)
        .map(|i| {
            let stop = stop.clone();
            std::thread::spawn(move || load(port, 0x5eed + i * 7919, stop))
        })
        .collect();
    std::thread::sleep(for_how_long);
    stop.store(true, Ordering::Relaxed);
    threads.into_iter().map(|t| t.join().expect("load thread")).sum()
}

#[test]
fn a_chained_pair_of_replicas_converges_under_mixed_load_and_receives_the_log_bytes() {
    chained_pair(&[], true);
}

/// The same without the log on the primary and on the first replica: the stream is framed
/// in memory, full syncs get a snapshot walked for them, and the first replica, itself
/// without a log, feeds the second.
#[test]
fn a_chained_pair_converges_without_the_log_on_the_primary_and_the_middle_replica() {
    chained_pair(&["--appendonly", "no"], false);
}

fn chained_pair(no_log: &[&str], logs: bool) {
    let mut primary_args = vec!["--repl-backlog-size", "64mb"];
    primary_args.extend_from_slice(no_log);
    let primary = Server::start(&primary_args);
    // Data before any replica: the full sync carries it (and the script cache).
    run_load(primary.port, 2, Duration::from_millis(300));
    let a = Server::start(no_log);
    let b = Server::start(&[]);
    replicaof(&mut a.client(), &primary);
    replicaof(&mut b.client(), &a);
    // The load goes on while the syncs happen.
    let ops = run_load(primary.port, 4, Duration::from_secs(3));
    assert!(ops > 100, "the load ran ({ops} operations)");
    let offset = converge(&primary, &[&a, &b]);
    assert!(offset > 0);
    let mut p = primary.client();
    assert_eq!(num(&mut p, "stats", "sync_full"), 1, "one full sync (the chained replica syncs from the first)");
    assert_eq!(num(&mut a.client(), "stats", "sync_full"), 1);
    if logs {
        // The stream is the log: the replicas' logs hold the primary's bytes.
        let common = assert_same_bytes(&primary, &a);
        assert!(common > 10_000, "only {common} bytes in common");
        assert_same_bytes(&a, &b);
    } else {
        assert!(!primary.dir.path().join("appendonlydir").exists(), "the primary wrote a log");
        // The last replica has a log: it holds the stream the middle one passed on.
        let (_, bytes) = incr_log(&b);
        assert!(bytes.len() > 10_000, "only {} bytes in the chained replica's log", bytes.len());
    }
    // ROLE on both sides.
    let role: redis::Value = redis::cmd("ROLE").query(&mut p).expect("ROLE");
    let text = format!("{role:?}");
    assert!(text.contains("master") && text.contains(&a.port.to_string()), "{text}");
    let role: redis::Value = redis::cmd("ROLE").query(&mut b.client()).expect("ROLE");
    let text = format!("{role:?}");
    assert!(text.contains("slave") && text.contains("connected") && text.contains(&a.port.to_string()), "{text}");
    let rinfo = info(&mut a.client(), "replication");
    for f in ["role:slave", "master_link_status:up", "master_sync_in_progress:0", "slave_read_only:1", "connected_slaves:1"] {
        assert!(rinfo.contains(f), "{f} missing from {rinfo}");
    }
    let pinfo = info(&mut p, "replication");
    assert!(pinfo.contains("slave0:ip=127.0.0.1") && pinfo.contains("state=online"), "{pinfo}");
}

/// kill -9 of a replica that had one full sync, and its restart (from its own log if it has
/// one): a partial resync; then the link cut by the primary: partial again. Returns the
/// `--replicaof` argument for later restarts.
fn kill_then_cut(primary: &Server, r: &mut Server) -> String {
    let mut p = primary.client();
    let partial = |p: &mut Connection| num(p, "stats", "sync_partial_ok");
    let full = |p: &mut Connection| num(p, "stats", "sync_full");
    r.kill9();
    let _: () = redis::cmd("SET").arg("during").arg("down").query(&mut p).expect("SET");
    let replicaof_arg = format!("127.0.0.1 {}", primary.port);
    r.restart(&["--replicaof", &replicaof_arg]);
    converge(primary, &[&*r]);
    assert_eq!((full(&mut p), partial(&mut p)), (1, 1), "a partial resync after kill -9");
    let killed: i64 = redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("replica").query(&mut p).expect("CLIENT KILL");
    assert_eq!(killed, 1);
    let _: () = redis::cmd("SET").arg("after").arg("cut").query(&mut p).expect("SET");
    converge(primary, &[&*r]);
    assert_eq!((full(&mut p), partial(&mut p)), (1, 2), "a partial resync after CLIENT KILL TYPE replica");
    replicaof_arg
}

/// Without the log on the primary: partial resyncs from the backlog after kill -9 and a cut
/// link, a full one (a fresh snapshot) when the backlog no longer holds the offset, and a
/// full sync asked for while writes flow gets them all after its snapshot.
#[test]
fn a_primary_without_the_log_resyncs_from_memory_or_with_a_fresh_snapshot() {
    let primary = Server::start(&["--appendonly", "no", "--repl-backlog-size", "16kb"]);
    let mut r = Server::start(&[]);
    run_load(primary.port, 2, Duration::from_millis(300));
    // The full sync is asked for under load: what is written during the walk follows it.
    let port = primary.port;
    let loader = std::thread::spawn(move || run_load(port, 2, Duration::from_millis(1500)));
    std::thread::sleep(Duration::from_millis(200));
    replicaof(&mut r.client(), &primary);
    assert!(loader.join().expect("load") > 100);
    converge(&primary, &[&r]);
    let mut p = primary.client();
    let partial = |p: &mut Connection| num(p, "stats", "sync_partial_ok");
    let full = |p: &mut Connection| num(p, "stats", "sync_full");
    assert_eq!((full(&mut p), partial(&mut p)), (1, 0));

    let replicaof_arg = kill_then_cut(&primary, &mut r);

    // More than the backlog while it is down, and no file to read it from: a full sync.
    r.kill9();
    run_load(primary.port, 2, Duration::from_millis(700));
    r.restart(&["--replicaof", &replicaof_arg]);
    converge(&primary, &[&r]);
    assert_eq!(full(&mut p), 2, "a full sync when the backlog does not hold the offset");

    // WAIT counts the replica's acknowledgements of the in-memory stream.
    let _: () = redis::cmd("INCR").arg("waited").query(&mut p).expect("INCR");
    let n: i64 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut p).expect("WAIT");
    assert_eq!(n, 1);
    assert!(!primary.dir.path().join("appendonlydir").exists(), "the primary wrote a log");
}

#[test]
fn a_replica_killed_or_cut_off_resyncs_partially_from_memory_or_disk_else_fully() {
    let mut primary = Server::start(&["--repl-backlog-size", "16kb"]);
    let mut r = Server::start(&[]);
    replicaof(&mut r.client(), &primary);
    run_load(primary.port, 2, Duration::from_millis(500));
    converge(&primary, &[&r]);
    let mut p = primary.client();
    let partial = |p: &mut Connection| num(p, "stats", "sync_partial_ok");
    let full = |p: &mut Connection| num(p, "stats", "sync_full");
    assert_eq!((full(&mut p), partial(&mut p)), (1, 0));

    let replicaof_arg = kill_then_cut(&primary, &mut r);

    // More than the backlog while it is down: the primary's log file still holds it.
    r.kill9();
    run_load(primary.port, 2, Duration::from_millis(700));
    assert!(num(&mut p, "replication", "repl_backlog_histlen") <= 64 * 1024);
    r.restart(&["--replicaof", &replicaof_arg]);
    converge(&primary, &[&r]);
    assert_eq!((full(&mut p), partial(&mut p)), (1, 3), "a partial resync from the log's file");

    // The log rewritten past the replica's offset, and more than the backlog after: full.
    r.kill9();
    run_load(primary.port, 2, Duration::from_millis(300));
    let _: String = redis::cmd("BGREWRITEAOF").query(&mut p).expect("BGREWRITEAOF");
    let deadline = Instant::now() + Duration::from_secs(10);
    while num(&mut p, "persistence", "aof_rewrite_in_progress") != 0 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
    }
    run_load(primary.port, 2, Duration::from_millis(500));
    r.restart(&["--replicaof", &replicaof_arg]);
    converge(&primary, &[&r]);
    assert_eq!(full(&mut p), 2, "a full sync when neither memory nor disk holds the offset");
    assert!(num(&mut p, "stats", "sync_partial_err") >= 1);

    // The primary restarts from its own log (same port): the replica reconnects and converges.
    run_load(primary.port, 2, Duration::from_millis(200));
    // Every short expiry of the load passes and its key goes: the digest is then stable.
    std::thread::sleep(Duration::from_millis(700));
    for db in 0..3 {
        let _: () = redis::cmd("SELECT").arg(db).query(&mut p).expect("SELECT");
        let _: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut p).expect("KEYS");
    }
    let before = digest(&mut p);
    primary.restart_same_port(&["--repl-backlog-size", "16kb"]);
    let mut p = primary.client();
    assert_eq!(digest(&mut p), before, "the primary reloaded its log");
    let _: () = redis::cmd("SET").arg("after").arg("restart").query(&mut p).expect("SET");
    converge(&primary, &[&r]);
}

#[test]
fn promotion_keeps_the_history_so_the_other_replica_continues_partially() {
    let primary = Server::start(&[]);
    let a = Server::start(&[]);
    let b = Server::start(&[]);
    replicaof(&mut a.client(), &primary);
    replicaof(&mut b.client(), &primary);
    run_load(primary.port, 2, Duration::from_millis(800));
    converge(&primary, &[&a, &b]);
    let old_id = field(&info(&mut a.client(), "replication"), "master_replid").expect("replid");
    drop(primary);
    let mut ac = a.client();
    let _: String = redis::cmd("REPLICAOF").arg("NO").arg("ONE").query(&mut ac).expect("REPLICAOF NO ONE");
    let text = info(&mut ac, "replication");
    assert_eq!(field(&text, "role").as_deref(), Some("master"));
    assert_eq!(field(&text, "master_replid2"), Some(old_id), "the old id is the secondary id");
    assert!(field(&text, "second_repl_offset").and_then(|v| v.parse::<i64>().ok()).unwrap_or(-1) > 0);
    // The promoted server takes writes and logs them itself.
    let _: () = redis::cmd("SET").arg("promoted").arg("yes").query(&mut ac).expect("SET on the new primary");
    replicaof(&mut b.client(), &a);
    run_load(a.port, 2, Duration::from_millis(300));
    converge(&a, &[&b]);
    assert_eq!(num(&mut ac, "stats", "sync_partial_ok"), 1, "partial resync via the secondary id");
    assert_eq!(num(&mut ac, "stats", "sync_full"), 0);
    let v: String = redis::cmd("GET").arg("promoted").query(&mut b.client()).expect("GET");
    assert_eq!(v, "yes");
    assert_same_bytes(&a, &b);
}

#[test]
fn wait_counts_acknowledging_replicas_and_min_replicas_refuses_writes() {
    let primary = Server::start(&[]);
    let mut p = primary.client();
    let _: () = redis::cmd("SET").arg("k").arg("0").query(&mut p).expect("SET");
    let started = Instant::now();
    let n: i64 = redis::cmd("WAIT").arg(1).arg(200).query(&mut p).expect("WAIT");
    assert_eq!(n, 0);
    assert!(started.elapsed() >= Duration::from_millis(190), "WAIT waited for its timeout");
    let n: i64 = redis::cmd("WAIT").arg(0).arg(0).query(&mut p).expect("WAIT 0 0");
    assert_eq!(n, 0);

    let a = Server::start(&[]);
    let b = Server::start(&[]);
    replicaof(&mut a.client(), &primary);
    converge(&primary, &[&a]);
    let _: () = redis::cmd("INCR").arg("k").query(&mut p).expect("INCR");
    let n: i64 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut p).expect("WAIT");
    assert_eq!(n, 1);
    replicaof(&mut b.client(), &primary);
    converge(&primary, &[&a, &b]);
    let _: () = redis::cmd("INCR").arg("k").query(&mut p).expect("INCR");
    let started = Instant::now();
    let n: i64 = redis::cmd("WAIT").arg(2).arg(5000).query(&mut p).expect("WAIT");
    assert_eq!(n, 2);
    assert!(started.elapsed() < Duration::from_secs(2), "acknowledgements come at once, not once a second");
    // WAIT on a replica is refused.
    let err = redis::cmd("WAIT").arg(1).arg(10).query::<i64>(&mut a.client()).unwrap_err().to_string();
    assert!(err.contains("WAIT cannot be used with replica instances"), "{err}");

    // min-replicas-to-write: two good replicas needed.
    let _: () = redis::cmd("CONFIG").arg("SET").arg("min-replicas-to-write").arg(2).query(&mut p).expect("CONFIG SET");
    let _: () = redis::cmd("SET").arg("ok").arg("1").query(&mut p).expect("two good replicas: the write goes");
    drop(b);
    let deadline = Instant::now() + Duration::from_secs(10);
    while num(&mut p, "replication", "connected_slaves") != 1 {
        assert!(Instant::now() < deadline, "the primary did not notice the replica left");
        std::thread::sleep(Duration::from_millis(20));
    }
    let n: i64 = redis::cmd("WAIT").arg(2).arg(300).query(&mut p).expect("WAIT");
    assert_eq!(n, 1, "one replica left to acknowledge");
    let err = redis::cmd("SET").arg("refused").arg("1").query::<()>(&mut p).unwrap_err().to_string();
    assert!(err.contains("Not enough good replicas to write."), "{err}");
    let _: () = redis::cmd("CONFIG").arg("SET").arg("min-replicas-to-write").arg(1).query(&mut p).expect("CONFIG SET");
    let _: () = redis::cmd("SET").arg("accepted").arg("1").query(&mut p).expect("one good replica is enough now");
    let v: Option<String> = redis::cmd("GET").arg("ok").query(&mut p).expect("reads go on");
    assert_eq!(v.as_deref(), Some("1"));
}

#[test]
fn a_read_only_replica_refuses_writes_hides_expired_keys_and_keeps_the_stream_scripts() {
    let primary = Server::start(&[]);
    let r = Server::start(&[]);
    let mut p = primary.client();
    let mut rc = r.client();
    replicaof(&mut rc, &primary);
    converge(&primary, &[&r]);
    let err = redis::cmd("SET").arg("x").arg("1").query::<()>(&mut rc).unwrap_err().to_string();
    assert!(err.contains("You can't write against a read only replica."), "{err}");
    let err = redis::cmd("EVAL").arg("return redis.call('SET', 'x', '1')").arg(0).query::<()>(&mut rc).unwrap_err().to_string();
    assert!(err.contains("You can't write against a read only replica."), "{err}");
    let err = redis::cmd("EVAL").arg("#!lua\nreturn 1").arg(0).query::<i64>(&mut rc).unwrap_err().to_string();
    assert!(err.contains("read only replica"), "a shebang script without no-writes is refused up front: {err}");
    let ro: i64 = redis::cmd("EVAL_RO").arg("return redis.call('EXISTS', KEYS[1])").arg(1).arg("x").query(&mut rc).expect("EVAL_RO");
    assert_eq!(ro, 0);

    // A script body loaded on the primary, then EVALSHA: the replica runs it even after a
    // local SCRIPT FLUSH.
    let body = "return redis.call('INCRBY', KEYS[1], ARGV[1])";
    let sha: String = redis::cmd("SCRIPT").arg("LOAD").arg(body).query(&mut p).expect("SCRIPT LOAD");
    let _: i64 = redis::cmd("EVALSHA").arg(&sha).arg(1).arg("counter").arg(5).query(&mut p).expect("EVALSHA");
    converge(&primary, &[&r]);
    let _: String = redis::cmd("SCRIPT").arg("FLUSH").query(&mut rc).expect("SCRIPT FLUSH on the replica");
    let _: i64 = redis::cmd("EVALSHA").arg(&sha).arg(1).arg("counter").arg(7).query(&mut p).expect("EVALSHA");
    converge(&primary, &[&r]);
    let v: i64 = redis::cmd("GET").arg("counter").query(&mut rc).expect("GET");
    assert_eq!(v, 12);

    // Expiry: the replica hides a key whose time passed but leaves the deletion to the primary.
    let _: () = redis::cmd("SET").arg("short").arg("v").arg("PX").arg(200).query(&mut p).expect("SET PX");
    converge(&primary, &[&r]);
    let _: () = redis::cmd("DEBUG").arg("SET-ACTIVE-EXPIRE").arg(0).query(&mut p).expect("DEBUG");
    std::thread::sleep(Duration::from_millis(400));
    let v: Option<String> = redis::cmd("GET").arg("short").query(&mut rc).expect("GET");
    assert_eq!(v, None, "hidden on the replica");
    let size_before: i64 = redis::cmd("DBSIZE").query(&mut rc).expect("DBSIZE");
    assert_eq!(size_before, 2, "the expired key is still there, hidden");
    let _: Option<String> = redis::cmd("GET").arg("short").query(&mut p).expect("GET on the primary deletes it");
    converge(&primary, &[&r]);
    let size_after: i64 = redis::cmd("DBSIZE").query(&mut rc).expect("DBSIZE");
    assert_eq!(size_after, size_before - 1, "the primary's DEL removed it on the replica");

    // A long script from the stream cannot be killed on the replica.
    let _: () = redis::cmd("CONFIG").arg("SET").arg("busy-reply-threshold").arg(50).query(&mut rc).expect("CONFIG SET");
    let port = primary.port;
    let long = std::thread::spawn(move || {
        let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/")).and_then(|c| c.get_connection()).expect("connect");
        let script = "local x = 0 for i = 1, 40000000 do x = x + i % 7 end redis.call('SET', 'sum', x) return x";
        redis::cmd("EVAL").arg(script).arg(0).query::<i64>(&mut c).expect("long script")
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut raw = r.raw();
    let mut seen = String::new();
    while Instant::now() < deadline {
        let reply = String::from_utf8_lossy(&raw.call(&[b"SCRIPT", b"KILL"])).to_string();
        if reply.starts_with("-UNKILLABLE") {
            seen = reply;
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let total = long.join().expect("script thread");
    converge(&primary, &[&r]);
    let reply = raw.call(&[b"SCRIPT", b"KILL"]);
    assert_eq!(reply, b"-NOTBUSY No scripts in execution right now.\r\n");
    let v: i64 = redis::cmd("GET").arg("sum").query(&mut rc).expect("GET");
    assert_eq!(v, total);
    assert_eq!(seen, "-UNKILLABLE The busy script was sent by a master instance in the context of replication and cannot be killed.\r\n");
}

#[test]
fn bad_input_on_the_replication_port_and_a_replica_that_never_reads() {
    let primary = Server::start(&[]);
    let mut p = primary.client();
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut p).expect("SET");
    // A replica that sends garbage after PSYNC gets no replies and breaks nothing.
    let mut raw = primary.raw();
    assert_eq!(raw.call(&[b"REPLCONF", b"listening-port", b"1"]), b"+OK\r\n");
    assert_eq!(raw.call(&[b"REPLCONF", b"nonsense", b"1"]), b"-ERR Unrecognized REPLCONF option: nonsense\r\n");
    raw.cmd(&[b"PSYNC", b"?", b"-1"]);
    let line = raw.read_line_text();
    assert!(line.starts_with("+FULLRESYNC "), "{line}");
    raw.send(b"\x00\xff garbage\r\n*2\r\n$4\r\nPING\r\n$1\r\nx\r\nREPLCONF ACK notanumber\r\n");
    let pong: String = redis::cmd("PING").query(&mut p).expect("the primary serves on");
    assert_eq!(pong, "PONG");
    drop(raw);
    // A replica that never reads: its output is capped, then it is disconnected.
    let _: () = redis::cmd("CONFIG").arg("SET").arg("client-output-buffer-limit").arg("replica 1mb 0 0").query(&mut p).expect("CONFIG SET");
    let mut lazy = primary.raw();
    lazy.stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    lazy.cmd(&[b"PSYNC", b"?", b"-1"]);
    std::thread::sleep(Duration::from_millis(300));
    let big = "x".repeat(64 * 1024);
    let deadline = Instant::now() + Duration::from_secs(30);
    while num(&mut p, "replication", "connected_slaves") > 0 {
        assert!(Instant::now() < deadline, "the replica that never reads was not disconnected");
        for i in 0..32 {
            let _: () = redis::cmd("SET").arg(format!("big{i}")).arg(&big).query(&mut p).expect("SET");
        }
    }
    let pong: String = redis::cmd("PING").query(&mut p).expect("the primary serves on");
    assert_eq!(pong, "PONG");
    // A real replica still syncs after all that.
    let r = Server::start(&[]);
    replicaof(&mut r.client(), &primary);
    converge(&primary, &[&r]);
}

#[test]
fn authentication_stale_data_legacy_sync_and_a_replica_without_a_log() {
    let primary = Server::start(&["--requirepass", "s3cret"]);
    let url = format!("redis://:s3cret@127.0.0.1:{}/", primary.port);
    let mut p = redis::Client::open(url).and_then(|c| c.get_connection()).expect("connect with the password");
    let _: () = redis::cmd("SET").arg("before").arg("sync").query(&mut p).expect("SET");
    let r = Server::start(&["--masterauth", "s3cret", "--appendonly", "no", "--replica-serve-stale-data", "no"]);
    let mut rc = r.client();
    // No link yet: with replica-serve-stale-data no, data commands are refused.
    let nobody = common::free_port();
    let _: String = redis::cmd("REPLICAOF").arg("127.0.0.1").arg(nobody).query(&mut rc).expect("REPLICAOF");
    let err = redis::cmd("GET").arg("before").query::<Option<String>>(&mut rc).unwrap_err().to_string();
    assert!(err.contains("Link with MASTER is down and replica-serve-stale-data is set to 'no'."), "{err}");
    let text = info(&mut rc, "replication");
    assert_eq!(field(&text, "master_link_status").as_deref(), Some("down"));
    let role: redis::Value = redis::cmd("ROLE").query(&mut rc).expect("ROLE");
    assert!(format!("{role:?}").contains("connect"), "{role:?}");
    // The primary asks for a password: the handshake gives masterauth.
    replicaof(&mut rc, &primary);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(Some(v)) = redis::cmd("GET").arg("before").query::<Option<String>>(&mut rc) {
            assert_eq!(v, "sync");
            break;
        }
        assert!(Instant::now() < deadline, "the replica never synced with masterauth");
        std::thread::sleep(Duration::from_millis(50));
    }
    let _: () = redis::cmd("CONFIG").arg("SET").arg("requirepass").arg("").query(&mut p).expect("CONFIG SET");
    run_load(primary.port, 2, Duration::from_millis(400));
    converge(&primary, &[&r]);
    // While a full sync's snapshot loads, the replica answers LOADING (key-load-delay slows
    // the load down: 3,000 keys at 200 µs each).
    let mut pipe = redis::pipe();
    for i in 0..3000 {
        pipe.cmd("SET").arg(format!("bulk{i}")).arg(i).ignore();
    }
    let _: () = pipe.query(&mut p).expect("SETs");
    let _: () = redis::cmd("CONFIG").arg("SET").arg("key-load-delay").arg(200).query(&mut rc).expect("CONFIG SET");
    // The primary has no password now: AUTH would fail the handshake (as with Redis).
    let _: () = redis::cmd("CONFIG").arg("SET").arg("masterauth").arg("").query(&mut rc).expect("CONFIG SET");
    let _: String = redis::cmd("REPLICAOF").arg("NO").arg("ONE").query(&mut rc).expect("REPLICAOF NO ONE");
    let _: () = redis::cmd("FLUSHALL").query(&mut rc).expect("FLUSHALL: the next sync must be a full one");
    replicaof(&mut rc, &primary);
    // A PING sent just before the load starts is queued for the executor and answered after
    // the load: each probe is a fresh connection that gives up after 200 ms, so one such
    // probe cannot hide the LOADING answers of those that follow.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut saw_loading = false;
    loop {
        let reply = ping_within(r.port, Duration::from_millis(200));
        if reply.starts_with("-LOADING") {
            saw_loading = true;
        } else if saw_loading && reply.starts_with("+PONG") {
            break;
        }
        assert!(Instant::now() < deadline, "never saw the replica loading (saw_loading={saw_loading}, last reply {reply:?})");
        std::thread::sleep(Duration::from_millis(5));
    }
    let _: () = redis::cmd("CONFIG").arg("SET").arg("key-load-delay").arg(0).query(&mut rc).expect("CONFIG SET");
    // The replica without a log of its own follows in memory.
    converge(&primary, &[&r]);
    assert!(!r.dir.path().join("appendonlydir").exists());
    // The old SYNC: an RDB file alone, as a bulk, no +FULLRESYNC line.
    let mut raw = primary.raw();
    raw.cmd(&[b"SYNC"]);
    let header = raw.read_line_text();
    let len: usize = header.strip_prefix('$').and_then(|l| l.parse().ok()).expect("a bulk length");
    let payload = raw.read_exact_n(len);
    assert!(payload.starts_with(b"REDIS0010"), "an RDB file, as Redis sends");
}

/// PING on a new connection: the first reply line, or "" when none comes within `timeout`.
fn ping_within(port: u16, timeout: Duration) -> String {
    use std::io::{BufRead, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else { return String::new() };
    let _ = s.set_read_timeout(Some(timeout));
    if s.write_all(b"PING\r\n").is_err() {
        return String::new();
    }
    let mut line = String::new();
    let _ = std::io::BufReader::new(s).read_line(&mut line);
    line
}

/// A stand-in primary: accepts one replica connection, answers PING and REPLCONF, and returns
/// the socket and the PSYNC arguments; the test then sends whatever bytes it wants.
fn fake_primary_session(listener: &std::net::TcpListener) -> (std::net::TcpStream, Vec<String>) {
    use std::io::{BufRead, BufReader, Write};
    let (mut sock, _) = listener.accept().expect("the replica connects");
    sock.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    let mut reader = BufReader::new(sock.try_clone().expect("clone"));
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("a command from the replica");
        let argc: usize = line.trim().trim_start_matches('*').parse().expect("a multibulk");
        let mut args = Vec::new();
        for _ in 0..argc {
            let mut len = String::new();
            reader.read_line(&mut len).expect("bulk length");
            let mut arg = String::new();
            reader.read_line(&mut arg).expect("bulk");
            args.push(arg.trim_end().to_string());
        }
        match args[0].to_ascii_uppercase().as_str() {
            "PING" => sock.write_all(b"+PONG\r\n").expect("write"),
            "REPLCONF" => sock.write_all(b"+OK\r\n").expect("write"),
            "PSYNC" => return (sock, args[1..].to_vec()),
            other => panic!("unexpected {other} from the replica"),
        }
    }
}

fn segment(cmds: &[&[&str]], good: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for c in cmds {
        vermilion::aof::format::encode_command(&mut out, c);
    }
    if good {
        vermilion::aof::format::encode_checkpoint(&mut out, 0);
    } else {
        out.extend_from_slice(b"#C:0000000000000000\r\n");
    }
    out
}

#[test]
fn a_corrupt_segment_or_snapshot_from_the_primary_changes_nothing_and_the_link_recovers() {
    use std::io::Write;
    // A real base snapshot, taken from a server's log.
    let donor = Server::start(&[]);
    let mut d = donor.client();
    let _: () = redis::cmd("SET").arg("from").arg("snapshot").query(&mut d).expect("SET");
    let _: String = redis::cmd("BGREWRITEAOF").query(&mut d).expect("BGREWRITEAOF");
    std::thread::sleep(Duration::from_millis(500));
    let dir = donor.dir.path().join("appendonlydir");
    let base_name = std::fs::read_dir(&dir)
        .expect("dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.ends_with(".base.vsnap"))
        .expect("a base");
    let base = std::fs::read(dir.join(base_name)).expect("base");
    let x = u64::from_le_bytes(base[16..24].try_into().expect("header"));
    let id = "a".repeat(40);

    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let fake_port = listener.local_addr().expect("addr").port();
    let r = Server::start(&[]);
    let mut rc = r.client();
    let _: String = redis::cmd("REPLICAOF").arg("127.0.0.1").arg(fake_port).query(&mut rc).expect("REPLICAOF");

    // Session 1: a full sync, a good segment, then one whose checksum is wrong.
    let (mut sock, psync) = fake_primary_session(&listener);
    assert_eq!(psync, ["?", "-1"], "a fresh replica asks for a full sync");
    sock.write_all(format!("+FULLRESYNC {id} {x}\r\n${}\r\n", base.len()).as_bytes()).expect("write");
    sock.write_all(&base).expect("write");
    let good = segment(&[&["SELECT", "0"], &["SET", "a", "1"]], true);
    sock.write_all(&good).expect("write");
    sock.write_all(&segment(&[&["SET", "b", "2"]], false)).expect("write");
    // The replica drops the link and asks to continue after the good segment.
    let (mut sock, psync) = fake_primary_session(&listener);
    assert_eq!(psync, [id.clone(), (x + good.len() as u64 + 1).to_string()]);
    let v: Option<String> = redis::cmd("GET").arg("from").query(&mut rc).expect("GET");
    assert_eq!(v.as_deref(), Some("snapshot"));
    let v: Option<String> = redis::cmd("GET").arg("a").query(&mut rc).expect("GET");
    assert_eq!(v.as_deref(), Some("1"));
    let v: Option<String> = redis::cmd("GET").arg("b").query(&mut rc).expect("GET");
    assert_eq!(v, None, "nothing of the corrupt segment was applied");

    // Session 2: continue; then the link is cut and the next full sync sends garbage.
    sock.write_all(format!("+CONTINUE {id}\r\n").as_bytes()).expect("write");
    // Cut inside its checkpoint line, in two reads: the segment is whole once the second
    // part arrives, with nothing after it.
    sock.set_nodelay(true).expect("nodelay");
    let seg = segment(&[&["SET", "c", "3"]], true);
    let cut = seg.len() - 10;
    sock.write_all(&seg[..cut]).expect("write");
    std::thread::sleep(Duration::from_millis(200));
    sock.write_all(&seg[cut..]).expect("write");
    let deadline = Instant::now() + Duration::from_secs(10);
    while redis::cmd("GET").arg("c").query::<Option<String>>(&mut rc).expect("GET").is_none() {
        assert!(Instant::now() < deadline, "the continued stream was not applied");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(sock);
    let (mut sock, _) = fake_primary_session(&listener);
    sock.write_all(format!("+FULLRESYNC {} 5\r\n$10\r\n0123456789", "b".repeat(40)).as_bytes()).expect("write");
    // The bad snapshot is refused: the data stays, and the replica asks for a full sync again.
    let (_sock, psync) = fake_primary_session(&listener);
    assert_eq!(psync, ["?", "-1"]);
    let v: Option<String> = redis::cmd("GET").arg("c").query(&mut rc).expect("GET");
    assert_eq!(v.as_deref(), Some("3"), "the data is as it was");
    let pong: String = redis::cmd("PING").query(&mut rc).expect("PING");
    assert_eq!(pong, "PONG");
}

#[test]
fn reloads_log_switches_restarts_and_cached_scripts_never_leave_a_replica_behind() {
    let primary = Server::start(&[]);
    let mut p = primary.client();
    let mut r = Server::start(&["--maxmemory", "1mb", "--maxmemory-policy", "allkeys-random"]);
    replicaof(&mut r.client(), &primary);
    // More data than the replica's maxmemory: a replica ignores it (replica-ignore-maxmemory).
    let big = "v".repeat(1000);
    for i in 0..2000 {
        let _: () = redis::cmd("SET").arg(format!("big{i}")).arg(&big).query(&mut p).expect("SET");
    }
    converge(&primary, &[&r]);
    let n: i64 = redis::cmd("DBSIZE").query(&mut r.client()).expect("DBSIZE");
    assert_eq!(n, 2000, "the replica evicted nothing");

    // A script cached by an EVAL that wrote nothing (so never logged), then a rewrite: its
    // EVALSHA must still reach the replica with its body.
    let body = "if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('INCR', KEYS[1]) end return 0";
    let _: i64 = redis::cmd("EVAL").arg(body).arg(1).arg("cached").query(&mut p).expect("EVAL");
    let _: String = redis::cmd("BGREWRITEAOF").query(&mut p).expect("BGREWRITEAOF");
    std::thread::sleep(Duration::from_millis(500));
    let _: () = redis::cmd("SET").arg("cached").arg(1).query(&mut p).expect("SET");
    let sha: String = redis::cmd("SCRIPT").arg("LOAD").arg(body).query(&mut p).expect("SCRIPT LOAD");
    let v: i64 = redis::cmd("EVALSHA").arg(&sha).arg(1).arg("cached").query(&mut p).expect("EVALSHA");
    assert_eq!(v, 2);
    converge(&primary, &[&r]);

    // DEBUG RELOAD and DEBUG LOADAOF on the primary: the stream goes on.
    let _: () = redis::cmd("INCR").arg("n").query(&mut p).expect("INCR");
    let _: () = redis::cmd("DEBUG").arg("RELOAD").query(&mut p).expect("DEBUG RELOAD");
    let _: () = redis::cmd("INCR").arg("n").query(&mut p).expect("INCR");
    let _: () = redis::cmd("DEBUG").arg("LOADAOF").query(&mut p).expect("DEBUG LOADAOF");
    let _: () = redis::cmd("INCR").arg("n").query(&mut p).expect("INCR");
    converge(&primary, &[&r]);

    // The log off, a write, the log on again: the stream goes on in memory between, so the
    // replica follows without a new sync.
    let full = num(&mut p, "stats", "sync_full");
    let _: () = redis::cmd("CONFIG").arg("SET").arg("appendonly").arg("no").query(&mut p).expect("CONFIG SET");
    let _: () = redis::cmd("SET").arg("unlogged").arg("1").query(&mut p).expect("SET");
    converge(&primary, &[&r]);
    let _: () = redis::cmd("CONFIG").arg("SET").arg("appendonly").arg("yes").query(&mut p).expect("CONFIG SET");
    let _: () = redis::cmd("SET").arg("logged").arg("again").query(&mut p).expect("SET");
    converge(&primary, &[&r]);
    assert_eq!(num(&mut p, "stats", "sync_full"), full, "no full sync across the switches");
    let v: Option<String> = redis::cmd("GET").arg("unlogged").query(&mut r.client()).expect("GET");
    assert_eq!(v.as_deref(), Some("1"));

    // The replica restarted on its own (no --replicaof) takes writes, then follows again:
    // its history differs now, so it gets a full sync, not a partial one.
    r.restart(&[]);
    let mut rc = r.client();
    let _: () = redis::cmd("SET").arg("local").arg("write").query(&mut rc).expect("SET on the standalone server");
    let full = num(&mut p, "stats", "sync_full");
    replicaof(&mut rc, &primary);
    converge(&primary, &[&r]);
    assert_eq!(num(&mut p, "stats", "sync_full"), full + 1);
    let v: Option<String> = redis::cmd("GET").arg("local").query(&mut r.client()).expect("GET");
    assert_eq!(v, None, "the local write is gone with the full sync");

    // The replica's log turned off while the stream flows: it follows on in memory.
    let port = primary.port;
    let writer = std::thread::spawn(move || {
        let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/")).and_then(|c| c.get_connection()).expect("connect");
        for _ in 0..2000 {
            let _: i64 = redis::cmd("INCR").arg("flowing").query(&mut c).expect("INCR");
        }
    });
    std::thread::sleep(Duration::from_millis(20));
    let _: () = redis::cmd("CONFIG").arg("SET").arg("appendonly").arg("no").query(&mut r.client()).expect("CONFIG SET");
    writer.join().expect("writer");
    converge(&primary, &[&r]);
    let v: i64 = redis::cmd("GET").arg("flowing").query(&mut r.client()).expect("GET");
    assert_eq!(v, 2000);
}

/// kill -9 of a replica under load, again and again (VERMILION_REPL_CYCLES, default 4): each
/// time it restarts from its own log, continues partially, and converges.
#[test]
fn a_replica_killed_under_load_again_and_again_continues_and_converges() {
    let cycles: u64 = std::env::var("VERMILION_REPL_CYCLES").ok().and_then(|v| v.parse().ok()).unwrap_or(4);
    let primary = Server::start(&["--repl-backlog-size", "64mb", "--logfile", "primary.log"]);
    let mut r = Server::start(&["--logfile", "replica.log"]);
    replicaof(&mut r.client(), &primary);
    converge(&primary, &[&r]);
    let replicaof_arg = format!("127.0.0.1 {}", primary.port);
    let tail = |s: &Server, name: &str| {
        let text = std::fs::read_to_string(s.dir.path().join(name)).unwrap_or_default();
        text.lines().rev().take(25).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n")
    };
    let mut rng = Rng(0x9e37_79b9);
    let mut p = primary.client();
    for cycle in 0..cycles {
        let stop = Arc::new(AtomicBool::new(false));
        let loads: Vec<_> = (0..2)
            .map(|i| {
                let stop = stop.clone();
                let port = primary.port;
                std::thread::spawn(move || load(port, cycle * 100 + i + 1, stop))
            })
            .collect();
        std::thread::sleep(Duration::from_millis(50 + rng.below(300)));
        r.kill9();
        std::thread::sleep(Duration::from_millis(rng.below(200)));
        let partial = num(&mut p, "stats", "sync_partial_ok");
        r.restart(&["--replicaof", &replicaof_arg, "--logfile", "replica.log"]);
        std::thread::sleep(Duration::from_millis(rng.below(300)));
        stop.store(true, Ordering::Relaxed);
        for l in loads {
            l.join().expect("load");
        }
        converge(&primary, &[&r]);
        // At least the restart's partial resync (a link cut under load adds another), and
        // never a full one.
        let now = num(&mut p, "stats", "sync_partial_ok");
        let full = num(&mut p, "stats", "sync_full");
        assert!(
            now > partial && full == 1,
            "cycle {cycle}: partial {partial} -> {now}, full {full}\nprimary:\n{}\nreplica:\n{}",
            tail(&primary, "primary.log"),
            tail(&r, "replica.log")
        );
    }
}

/// PUBLISH on a primary reaches the subscribers of its replicas, as in Redis (directly, in
/// MULTI/EXEC, from a script, SPUBLISH), once a replica is attached; a load from disk (a
/// replica's restart, DEBUG RELOAD) does not deliver the logged messages again.
#[test]
fn publish_on_the_primary_reaches_the_subscribers_of_its_replicas() {
    let primary = Server::start(&[]);
    let mut p = primary.client();
    // Before any replica: nothing to propagate, nothing logged.
    let _: i64 = redis::cmd("PUBLISH").arg("ch").arg("early").query(&mut p).expect("PUBLISH");
    let mut replica = Server::start(&[]);
    replicaof(&mut replica.client(), &primary);
    converge(&primary, &[&replica]);
    let mut sub = replica.raw();
    sub.cmd(&[b"SUBSCRIBE", b"ch"]);
    assert!(String::from_utf8_lossy(&sub.read_reply()).contains("subscribe"));
    let mut ssub = replica.raw();
    ssub.cmd(&[b"SSUBSCRIBE", b"sch"]);
    assert!(String::from_utf8_lossy(&ssub.read_reply()).contains("ssubscribe"));
    // The primary has no subscriber of its own: PUBLISH answers 0 there.
    assert_eq!(redis::cmd("PUBLISH").arg("ch").arg("direct").query::<i64>(&mut p).expect("PUBLISH"), 0);
    let (_, ()): (i64, ()) =
        redis::pipe().atomic().cmd("PUBLISH").arg("ch").arg("in-exec").cmd("SET").arg("k").arg("v").query(&mut p).expect("EXEC");
    let _: i64 = redis::cmd("EVAL").arg("return redis.call('PUBLISH', 'ch', 'from-script')").arg(0).query(&mut p).expect("EVAL");
    let _: i64 = redis::cmd("SPUBLISH").arg("sch").arg("sharded").query(&mut p).expect("SPUBLISH");
    let message = |c: &mut common::RawConn| String::from_utf8_lossy(&c.read_reply()).into_owned();
    for want in ["direct", "in-exec", "from-script"] {
        let got = message(&mut sub);
        assert!(got.starts_with("*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n") && got.ends_with(&format!("{want}\r\n")), "{got:?}");
    }
    assert!(message(&mut ssub).ends_with("sharded\r\n"));
    converge(&primary, &[&replica]);
    // The replica restarts from its own log (which holds the messages): nothing is delivered
    // again, and the stream goes on.
    drop(sub);
    replica.restart(&[]);
    replicaof(&mut replica.client(), &primary);
    converge(&primary, &[&replica]);
    let mut sub = replica.raw();
    sub.cmd(&[b"SUBSCRIBE", b"ch"]);
    let _ = sub.read_reply();
    let _: () = redis::cmd("DEBUG").arg("RELOAD").query(&mut replica.client()).expect("DEBUG RELOAD");
    let _: i64 = redis::cmd("PUBLISH").arg("ch").arg("after-restart").query(&mut p).expect("PUBLISH");
    let got = message(&mut sub);
    assert!(got.ends_with("after-restart\r\n"), "only the new message arrives: {got:?}");
    assert_eq!(redis::cmd("GET").arg("k").query::<String>(&mut replica.client()).expect("GET"), "v");
}

/// A replica's clients run scripts in the Lua state the primary's whole scripts replay in: a
/// cjson setting one of them changed is not what the primary's script ran under, so the
/// state is rebuilt before the replay (the cached scripts stay).
#[test]
fn a_local_script_on_a_replica_does_not_change_how_the_primarys_scripts_replay() {
    let primary = Server::start(&[]);
    let mut p = primary.client();
    let replica = Server::start(&[]);
    let mut r = replica.client();
    replicaof(&mut r, &primary);
    converge(&primary, &[&replica]);
    let local: String = redis::cmd("SCRIPT").arg("LOAD").arg("return 'local'").query(&mut r).expect("SCRIPT LOAD");
    let _: i64 = redis::cmd("EVAL").arg("cjson.encode_number_precision(1) return 1").arg(0).query(&mut r).expect("EVAL");
    let _: () = redis::cmd("EVAL").arg("redis.call('SET', KEYS[1], cjson.encode({1.2345}))").arg(1).arg("k").query(&mut p).expect("EVAL");
    converge(&primary, &[&replica]);
    assert_eq!(redis::cmd("GET").arg("k").query::<String>(&mut r).expect("GET"), "[1.2345]");
    // The replica's own cached script is still there.
    assert_eq!(redis::cmd("EVALSHA").arg(&local).arg(0).query::<String>(&mut r).expect("EVALSHA"), "local");
}
