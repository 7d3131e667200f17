//! Replication between Vermilion and the real redis-server 7.0, in both roles, and FAILOVER
//! between them both ways. A redis-server replica gets an RDB file and plain commands; a
//! Vermilion replica of redis-server loads its RDB (streamed with an EOF mark, or with a
//! length) and logs the commands it applies as records of its own. Data is compared with
//! DEBUG DIGEST, which both servers compute the same way.

mod common;

use std::time::{Duration, Instant};

use common::probe::{digest, field, info, link_up, num, wait_info};
use common::Server;
use redis::Connection;

const REDIS_ARGS: &[&str] = &["--enable-debug-command", "yes", "--repl-diskless-sync-delay", "0"];

fn redis_server(extra: &[&str]) -> Server {
    let mut args = REDIS_ARGS.to_vec();
    args.extend_from_slice(extra);
    Server::start_redis(&args)
}

fn log_text(s: &Server) -> String {
    std::fs::read_to_string(s.dir.path().join("server.log")).unwrap_or_default()
}

fn follow(replica: &Server, primary: &Server) {
    let _: String = redis::cmd("REPLICAOF").arg("127.0.0.1").arg(primary.port).query(&mut replica.client()).expect("REPLICAOF");
}

/// WAIT on the connection that wrote: every replica acknowledged its writes.
fn wait_acked(c: &mut Connection, replicas: i64) {
    let n: i64 = redis::cmd("WAIT").arg(replicas).arg(5000).query(c).expect("WAIT");
    assert_eq!(n, replicas, "WAIT {replicas}: the replicas' acknowledgements do not cover the writes");
}

/// The replicas hold the primary's data (DEBUG DIGEST), within a few seconds.
fn same_data(primary: &Server, replicas: &[&Server]) {
    let want = digest(&mut primary.client());
    for r in replicas {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let got = digest(&mut r.client());
            if got == want {
                break;
            }
            assert!(Instant::now() < deadline, "port {} diverged from {}: {got} != {want}", r.port, primary.port);
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Every kind of write, on one connection: strings with expiry, each collection, several
/// databases, transactions, scripts (whole and by SHA, one that reads the clock), functions.
fn workload(c: &mut Connection, round: usize) {
    let q = |c: &mut Connection, args: &[&str]| {
        let mut cmd = redis::cmd(args[0]);
        for a in &args[1..] {
            cmd.arg(*a);
        }
        let _: redis::Value = cmd.query(c).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    };
    for i in 0..50 {
        let k = format!("s{round}:{i}");
        q(c, &["SET", &k, &i.to_string(), "EX", "1000"]);
        q(c, &["RPUSH", &format!("l{round}"), &k]);
        q(c, &["HSET", &format!("h{round}"), &k, &i.to_string()]);
        q(c, &["SADD", &format!("set{round}"), &k]);
        q(c, &["ZADD", &format!("z{round}"), &i.to_string(), &k]);
    }
    q(c, &["INCRBYFLOAT", "float", "1.5"]);
    q(c, &["EXPIRE", &format!("l{round}"), "5000"]);
    q(c, &["LMOVE", &format!("l{round}"), "moved", "LEFT", "RIGHT"]);
    q(c, &["SPOP", &format!("set{round}")]);
    q(c, &["XADD", "stream", "*", "round", &round.to_string()]);
    let _: redis::Value = redis::pipe().atomic().cmd("INCR").arg("tx").cmd("LPUSH").arg("txlist").arg(round).query(c).expect("MULTI/EXEC");
    q(
        c,
        &[
            "EVAL",
            "redis.call('INCR', KEYS[1]); return redis.call('HSET', KEYS[2], 'r', ARGV[1])",
            "2",
            "evals",
            "evalh",
            &round.to_string(),
        ],
    );
    let sha: String = redis::cmd("SCRIPT").arg("LOAD").arg("return redis.call('INCRBY', KEYS[1], ARGV[1])").query(c).expect("SCRIPT LOAD");
    q(c, &["EVALSHA", &sha, "1", "bysha", "3"]);
    q(c, &["EVAL", "local t = redis.call('TIME'); redis.call('SET', KEYS[1], 'clock'); return 1", "1", "clocked"]);
    q(c, &["FCALL", "bump", "1", "fn"]);
    let _: () = redis::cmd("SELECT").arg(3).query(c).expect("SELECT");
    q(c, &["SET", &format!("db3:{round}"), "x", "PX", "900000"]);
    q(c, &["DEL", "s0:1"]);
    let _: () = redis::cmd("SELECT").arg(0).query(c).expect("SELECT");
    q(c, &["DEL", &format!("s{round}:2")]);
}

const LIBRARY: &str = "#!lua name=mixed\nredis.register_function('bump', function(keys) return redis.call('INCR', keys[1]) end)";

fn prepare(c: &mut Connection) {
    let _: String = redis::cmd("FUNCTION").arg("LOAD").arg(LIBRARY).query(c).expect("FUNCTION LOAD");
    // A script the primary had before the replica came: its EVALSHA must still replicate.
    let _: String = redis::cmd("SCRIPT").arg("LOAD").arg("return redis.call('INCRBY', KEYS[1], ARGV[1])").query(c).expect("SCRIPT LOAD");
    workload(c, 0);
}

#[test]
fn a_redis_server_replica_follows_vermilion_fully_then_partially() {
    let primary = Server::start(&["--repl-ping-replica-period", "1"]);
    let mut p = primary.client();
    prepare(&mut p);
    // The writer is in database 3 when the replica comes, and stays there: the replica's
    // client starts in 0, so the stream must say where it is.
    let _: () = redis::cmd("SELECT").arg(3).query(&mut p).expect("SELECT");
    let _: () = redis::cmd("SET").arg("before-sync").arg(1).query(&mut p).expect("SET");
    let replica = redis_server(&["--logfile", "server.log"]);
    follow(&replica, &primary);
    link_up(&replica, &primary);
    let _: () = redis::cmd("SET").arg("after-sync").arg(1).query(&mut p).expect("SET");
    let _: () = redis::cmd("SELECT").arg(0).query(&mut p).expect("SELECT");
    let loaded = log_text(&replica);
    assert!(loaded.contains("Loading RDB produced by version"), "the full sync is an RDB file:\n{loaded}");
    // An EVALSHA and a SCRIPT FLUSH in one batch: the replica still gets the script's body.
    let sha: String = redis::cmd("SCRIPT").arg("LOAD").arg("return redis.call('INCR', KEYS[1])").query(&mut p).expect("SCRIPT LOAD");
    let mut raw = primary.raw();
    let mut batch = common::diff::encode_cmd(&["EVALSHA", sha.as_str(), "1", "flushed-after"]);
    batch.extend(common::diff::encode_cmd(&["SCRIPT", "FLUSH"]));
    raw.send(&batch);
    assert_eq!(raw.read_line_text(), ":1");
    assert_eq!(raw.read_line_text(), "+OK");
    for round in 1..4 {
        workload(&mut p, round);
    }
    wait_acked(&mut p, 1);
    same_data(&primary, &[&replica]);
    // PINGs in the stream move both offsets: acknowledgements still map to the log.
    std::thread::sleep(Duration::from_millis(2500));
    let _: () = redis::cmd("SET").arg("after-pings").arg(1).query(&mut p).expect("SET");
    wait_acked(&mut p, 1);
    let text = info(&mut p, "replication");
    let line = field(&text, "slave0").expect("a replica line");
    assert!(line.contains("state=online"), "{line}");

    // The replica's link drops: it continues from the plain backlog.
    let partial_before = num(&mut p, "stats", "sync_partial_ok");
    let full_before = num(&mut p, "stats", "sync_full");
    let _: i64 = redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("master").query(&mut replica.client()).expect("CLIENT KILL");
    workload(&mut p, 4);
    let deadline = Instant::now() + Duration::from_secs(20);
    while num(&mut p, "stats", "sync_partial_ok") == partial_before {
        assert!(Instant::now() < deadline, "the replica never resynced partially");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(num(&mut p, "stats", "sync_full"), full_before, "a partial resync, not a full one");
    link_up(&replica, &primary);
    workload(&mut p, 5);
    wait_acked(&mut p, 1);
    same_data(&primary, &[&replica]);
    // redis-cli --replica-style SYNC gets an RDB file too.
    let mut raw = primary.raw();
    raw.cmd(&[b"SYNC"]);
    let header = raw.read_line_text();
    let len: usize = header.strip_prefix('$').and_then(|l| l.parse().ok()).expect("a bulk length");
    assert!(raw.read_exact_n(len).starts_with(b"REDIS0010"), "SYNC sends an RDB file");
}

#[test]
fn vermilion_follows_a_redis_server_primary_and_serves_its_own_replicas() {
    let primary = redis_server(&[]);
    let mut p = primary.client();
    prepare(&mut p);
    // One replica synced with a streamed (EOF-marked) RDB, one with a file of known length.
    let streamed = Server::start(&["--logfile", "server.log"]);
    follow(&streamed, &primary);
    link_up(&streamed, &primary);
    let _: () = redis::cmd("CONFIG").arg("SET").arg("repl-diskless-sync").arg("no").query(&mut p).expect("CONFIG SET");
    let on_disk = Server::start(&["--appendonly", "no"]);
    follow(&on_disk, &primary);
    link_up(&on_disk, &primary);
    assert!(log_text(&streamed).contains("with EOF"), "the first sync was diskless");
    // A Vermilion replica of the Vermilion replica: it gets the log of records the first one
    // wrote for what it applied.
    let chained = Server::start(&[]);
    follow(&chained, &streamed);
    link_up(&chained, &streamed);
    // And a redis-server replica and a Vermilion replica of the Vermilion replica that runs
    // without its log (its in-memory stream holds records of its own, with checkpoints).
    let sub = redis_server(&[]);
    follow(&sub, &on_disk);
    link_up(&sub, &on_disk);
    let sub_v = Server::start(&[]);
    follow(&sub_v, &on_disk);
    link_up(&sub_v, &on_disk);
    for round in 1..4 {
        workload(&mut p, round);
    }
    wait_acked(&mut p, 2);
    same_data(&primary, &[&streamed, &on_disk, &chained, &sub, &sub_v]);
    // What INFO shows is the primary's offset (Sentinel compares it with the primary's).
    let theirs = num(&mut p, "replication", "master_repl_offset");
    let ours = wait_info(&streamed, "the offset", |t| field(t, "slave_repl_offset").and_then(|v| v.parse::<i64>().ok()) == Some(theirs));
    assert_eq!(field(&ours, "master_link_status").as_deref(), Some("up"));
    // Writes are refused on the replica, as on Redis's.
    let err = streamed.raw().call(&[b"SET", b"x", b"1"]);
    assert_eq!(err, b"-READONLY You can't write against a read only replica.\r\n");

    // kill -9 of the replica: it restarts from its own log, resyncs and converges.
    let mut streamed = streamed;
    streamed.kill9();
    let spec = format!("127.0.0.1 {}", primary.port);
    streamed.restart(&["--replicaof", &spec]);
    link_up(&streamed, &primary);
    workload(&mut p, 4);
    wait_acked(&mut p, 2);
    same_data(&primary, &[&streamed, &on_disk]);
    // A dropped link continues partially from redis-server's backlog.
    let partial_before = num(&mut p, "stats", "sync_partial_ok");
    let _: i64 = redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("master").query(&mut on_disk.client()).expect("CLIENT KILL");
    workload(&mut p, 5);
    let deadline = Instant::now() + Duration::from_secs(20);
    while num(&mut p, "stats", "sync_partial_ok") == partial_before {
        assert!(Instant::now() < deadline, "the Vermilion replica never resynced partially");
        std::thread::sleep(Duration::from_millis(50));
    }
    wait_acked(&mut p, 2);
    same_data(&primary, &[&streamed, &on_disk, &sub]);
}

/// Waits for `s` to be a primary with no failover in progress.
fn promoted(s: &Server) {
    let text = wait_info(s, "promotion", |t| field(t, "role").as_deref() == Some("master"));
    assert_eq!(field(&text, "master_failover_state").as_deref(), Some("no-failover"));
}

fn write_reaches(writer: &Server, reader: &Server, key: &str) {
    let _: () = redis::cmd("SET").arg(key).arg("v").query(&mut writer.client()).expect("SET on the new primary");
    let deadline = Instant::now() + Duration::from_secs(10);
    while redis::cmd("GET").arg(key).query::<Option<String>>(&mut reader.client()).expect("GET").is_none() {
        assert!(Instant::now() < deadline, "port {} never got {key} from port {}", reader.port, writer.port);
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn failover_between_vermilion_and_redis_server_both_ways_continues_partially() {
    let ours = Server::start(&[]);
    let mut o = ours.client();
    prepare(&mut o);
    let theirs = redis_server(&[]);
    follow(&theirs, &ours);
    link_up(&theirs, &ours);
    workload(&mut o, 1);
    wait_acked(&mut o, 1);

    // Vermilion hands its role to redis-server.
    let theirs_partial = num(&mut theirs.client(), "stats", "sync_partial_ok");
    assert_eq!(ours.raw().call(&[b"FAILOVER", b"TO", b"127.0.0.1", theirs.port.to_string().as_bytes(), b"TIMEOUT", b"5000"]), b"+OK\r\n");
    promoted(&theirs);
    link_up(&ours, &theirs);
    assert_eq!(field(&info(&mut o, "replication"), "master_failover_state").as_deref(), Some("no-failover"));
    assert_eq!(num(&mut theirs.client(), "stats", "sync_partial_ok"), theirs_partial + 1, "the old primary continued partially");
    assert_eq!(ours.raw().call(&[b"SET", b"x", b"1"]), b"-READONLY You can't write against a read only replica.\r\n");
    let mut t = theirs.client();
    workload(&mut t, 2);
    wait_acked(&mut t, 1);
    same_data(&theirs, &[&ours]);
    write_reaches(&theirs, &ours, "to-vermilion");

    // And back: redis-server hands its role to Vermilion.
    let ours_partial = num(&mut o, "stats", "sync_partial_ok");
    let mut admin = theirs.raw();
    assert_eq!(admin.call(&[b"FAILOVER", b"TO", b"127.0.0.1", ours.port.to_string().as_bytes(), b"TIMEOUT", b"5000"]), b"+OK\r\n");
    promoted(&ours);
    link_up(&theirs, &ours);
    assert_eq!(num(&mut ours.client(), "stats", "sync_partial_ok"), ours_partial + 1, "redis-server continued partially");
    let mut o = ours.client();
    workload(&mut o, 3);
    wait_acked(&mut o, 1);
    same_data(&ours, &[&theirs]);
    write_reaches(&ours, &theirs, "to-redis");
}

#[test]
fn redis_server_replicas_share_one_background_save_while_writes_go_on() {
    let primary = Server::start(&[]);
    let mut p = primary.client();
    prepare(&mut p);
    let _: () = redis::cmd("DEBUG").arg("POPULATE").arg(20_000).query(&mut p).expect("DEBUG POPULATE");
    // Each key takes 150 us to save: the save (about 3 s) spans the writes and the second
    // replica's arrival (redis-server connects from its once-a-second cron). The delay is a
    // sleep in the executor: longer ones would slow the connections' own turns.
    let _: () = redis::cmd("CONFIG").arg("SET").arg("rdb-key-save-delay").arg(150).query(&mut p).expect("CONFIG SET");
    let (first, second) = (redis_server(&[]), redis_server(&[]));
    follow(&first, &primary);
    let deadline = Instant::now() + Duration::from_secs(10);
    while num(&mut p, "stats", "sync_full") < 1 {
        assert!(Instant::now() < deadline, "the first replica never asked");
        std::thread::sleep(Duration::from_millis(5));
    }
    let text = info(&mut p, "persistence");
    assert_eq!(field(&text, "rdb_bgsave_in_progress").as_deref(), Some("1"), "the sync runs on a background save");
    // Writes the first replica holds, then the second replica joins the running save.
    for i in 0..20 {
        let _: () = redis::cmd("SET").arg(format!("held{i}")).arg(i).query(&mut p).expect("SET");
    }
    follow(&second, &primary);
    while num(&mut p, "stats", "sync_full") < 2 {
        assert!(Instant::now() < deadline, "the second replica never asked");
        std::thread::sleep(Duration::from_millis(5));
    }
    workload(&mut p, 1);
    let _: () = redis::cmd("SELECT").arg(5).query(&mut p).expect("SELECT");
    let _: () = redis::cmd("SET").arg("in-db5").arg("during the save").query(&mut p).expect("SET");
    let _: () = redis::cmd("SELECT").arg(0).query(&mut p).expect("SELECT");
    link_up(&first, &primary);
    link_up(&second, &primary);
    let _: () = redis::cmd("CONFIG").arg("SET").arg("rdb-key-save-delay").arg(0).query(&mut p).expect("CONFIG SET");
    assert_eq!(num(&mut p, "stats", "sync_full"), 2);
    assert_eq!(num(&mut p, "persistence", "rdb_saves"), 1, "one background save served both replicas");
    workload(&mut p, 2);
    wait_acked(&mut p, 2);
    same_data(&primary, &[&first, &second]);
    // Both follow the one feed: the second, which joined the running save, counts from
    // where the save began, as the first does.
    let offset = |s: &Server| num(&mut s.client(), "replication", "master_repl_offset");
    let deadline = Instant::now() + Duration::from_secs(10);
    while offset(&first) != offset(&second) {
        assert!(Instant::now() < deadline, "the replicas' offsets differ: {} and {}", offset(&first), offset(&second));
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(primary.dir.path().join("dump.rdb").exists(), "the save wrote dbfilename, as Redis's disk-based sync does");
}

/// As Sentinel does it: the redis-server replica is promoted on its own, and the old
/// Vermilion primary is then pointed at it. Their offsets are of different streams, so the
/// resync must be a full one (never a partial one at a wrong position), even when PINGs made
/// the plain stream longer than the log.
#[test]
fn a_vermilion_primary_pointed_at_its_promoted_redis_server_replica_resyncs_fully() {
    let ours = Server::start(&["--repl-ping-replica-period", "1"]);
    let mut o = ours.client();
    prepare(&mut o);
    let theirs = redis_server(&[]);
    follow(&theirs, &ours);
    link_up(&theirs, &ours);
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut o).expect("SET");
    wait_acked(&mut o, 1);
    // Idle: only PINGs move the plain stream.
    std::thread::sleep(Duration::from_millis(3500));
    let _: String = redis::cmd("REPLICAOF").arg("NO").arg("ONE").query(&mut theirs.client()).expect("REPLICAOF NO ONE");
    let full_before = num(&mut theirs.client(), "stats", "sync_full");
    let _: () = redis::cmd("SET").arg("on-theirs").arg("1").query(&mut theirs.client()).expect("SET");
    follow(&ours, &theirs);
    link_up(&ours, &theirs);
    assert_eq!(num(&mut theirs.client(), "stats", "sync_full"), full_before + 1, "a full sync, not a partial one");
    let mut t = theirs.client();
    workload(&mut t, 1);
    wait_acked(&mut t, 1);
    same_data(&theirs, &[&ours]);
}

/// The plain stream goes once no redis-server replica has been attached for
/// `repl-backlog-ttl`: the next one starts a new stream (a new replication id).
#[test]
fn the_plain_stream_is_dropped_after_repl_backlog_ttl_without_redis_server_replicas() {
    let primary = Server::start(&["--repl-backlog-ttl", "1"]);
    let first = redis_server(&[]);
    follow(&first, &primary);
    link_up(&first, &primary);
    let id = |s: &Server| field(&info(&mut s.client(), "replication"), "master_replid").expect("master_replid");
    let old = id(&first);
    let _: String = redis::cmd("REPLICAOF").arg("NO").arg("ONE").query(&mut first.client()).expect("REPLICAOF NO ONE");
    std::thread::sleep(Duration::from_millis(3000));
    let second = redis_server(&[]);
    follow(&second, &primary);
    link_up(&second, &primary);
    assert_ne!(id(&second), old, "a new plain stream after the ttl");
}
