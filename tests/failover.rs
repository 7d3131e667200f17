//! FAILOVER between real Vermilion processes on loopback: the coordinated hand-over (writes
//! paused, the target caught up, PSYNC ... FAILOVER, the old primary continuing as a replica
//! without a full sync), a write held during it, ABORT, TIMEOUT with and without FORCE, and
//! every error text compared byte for byte with redis-server 7.0 in the same state.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::probe::{digest, field, info, link_up, num, wait_info};
use common::Server;

fn replica_of(primary: &Server, extra: &[&str]) -> Server {
    let spec = format!("127.0.0.1 {}", primary.port);
    let mut args = vec!["--replicaof", spec.as_str()];
    args.extend_from_slice(extra);
    if extra.contains(&"redis") {
        args.retain(|a| *a != "redis");
        return Server::start_redis(&args);
    }
    Server::start(&args)
}

fn replicas_online(primary: &Server, n: usize) {
    wait_info(primary, "replicas online", |t| (0..n).all(|i| t.contains(&format!("slave{i}:")) && !t.contains("wait_bgsave")));
}

fn signal(s: &Server, sig: &str) {
    let ok = Command::new("kill").arg(sig).arg(s.pid().to_string()).status().expect("kill").success();
    assert!(ok, "kill {sig}");
}

#[test]
fn failover_hands_the_role_to_a_caught_up_replica_which_the_old_primary_then_follows_partially() {
    let primary = Server::start(&[]);
    let a = replica_of(&primary, &[]);
    let b = replica_of(&primary, &[]);
    link_up(&a, &primary);
    link_up(&b, &primary);
    replicas_online(&primary, 2);
    let mut p = primary.client();
    for i in 0..200 {
        let _: () = redis::cmd("SET").arg(format!("k{i}")).arg(i).query(&mut p).unwrap();
    }
    let _: i64 = redis::cmd("EVAL").arg("return redis.call('INCRBY', KEYS[1], 5)").arg(1).arg("counter").query(&mut p).unwrap();
    let before = digest(&mut p);
    let full_before = num(&mut a.client(), "stats", "sync_full");

    let reply = primary.raw().call(&[b"FAILOVER", b"TO", b"127.0.0.1", a.port.to_string().as_bytes()]);
    assert_eq!(reply, b"+OK\r\n");
    link_up(&primary, &a);
    let at_a = wait_info(&a, "promotion", |t| field(t, "role").as_deref() == Some("master"));
    assert_eq!(field(&at_a, "master_failover_state").as_deref(), Some("no-failover"));
    let at_p = info(&mut primary.client(), "replication");
    assert_eq!(field(&at_p, "role").as_deref(), Some("slave"));
    assert_eq!(field(&at_p, "master_failover_state").as_deref(), Some("no-failover"));
    // The old primary continued: the target served it partially, no full sync anywhere.
    assert!(num(&mut a.client(), "stats", "sync_partial_ok") >= 1);
    assert_eq!(num(&mut a.client(), "stats", "sync_full"), full_before);
    // CONFIG GET replicaof (and so CONFIG REWRITE) names the new primary.
    let cfg: Vec<String> = redis::cmd("CONFIG").arg("GET").arg("replicaof").query(&mut primary.client()).unwrap();
    assert_eq!(cfg, vec!["replicaof".to_string(), format!("127.0.0.1 {}", a.port)]);
    let cfg: Vec<String> = redis::cmd("CONFIG").arg("GET").arg("replicaof").query(&mut a.client()).unwrap();
    assert_eq!(cfg, vec!["replicaof".to_string(), String::new()]);

    // The old primary refuses writes now, the new one takes them and the old one gets them.
    let err = primary.raw().call(&[b"SET", b"x", b"1"]);
    assert_eq!(err, b"-READONLY You can't write against a read only replica.\r\n");
    assert_eq!(digest(&mut a.client()), before);
    let _: () = redis::cmd("SET").arg("after").arg("failover").query(&mut a.client()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let v: Option<String> = redis::cmd("GET").arg("after").query(&mut primary.client()).unwrap();
        if v.as_deref() == Some("failover") {
            break;
        }
        assert!(Instant::now() < deadline, "the old primary never received the new primary's write");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The other replica lost its primary's role change and reconnected: it follows the old
    // primary (now a replica of a), as with Redis, and holds the same data.
    link_up(&b, &primary);
    let deadline = Instant::now() + Duration::from_secs(10);
    while digest(&mut b.client()) != digest(&mut a.client()) {
        assert!(Instant::now() < deadline, "the second replica diverged");
        std::thread::sleep(Duration::from_millis(20));
    }

    // FAILOVER with no target back to the first primary.
    let reply = a.raw().call(&[b"FAILOVER"]);
    assert_eq!(reply, b"+OK\r\n");
    wait_info(&a, "the second hand-over", |t| field(t, "role").as_deref() == Some("slave"));
    let back = wait_info(&primary, "promotion back", |t| field(t, "role").as_deref() == Some("master"));
    assert_eq!(field(&back, "master_failover_state").as_deref(), Some("no-failover"));
    let _: () = redis::cmd("SET").arg("again").arg("1").query(&mut primary.client()).unwrap();
}

#[test]
fn a_write_waits_during_the_failover_and_is_answered_as_the_new_replica_answers_it() {
    let primary = Server::start(&[]);
    let a = replica_of(&primary, &[]);
    link_up(&a, &primary);
    replicas_online(&primary, 1);
    // The target is stopped: the primary waits for it with writes paused.
    signal(&a, "-STOP");
    let _: () = redis::cmd("SET").arg("pending").arg("1").query(&mut primary.client()).unwrap();
    let mut admin = primary.raw();
    assert_eq!(admin.call(&[b"FAILOVER", b"TO", b"127.0.0.1", a.port.to_string().as_bytes()]), b"+OK\r\n");
    let text = info(&mut primary.client(), "replication");
    assert_eq!(field(&text, "master_failover_state").as_deref(), Some("waiting-for-sync"));
    assert_eq!(admin.call(&[b"FAILOVER"]), b"-ERR FAILOVER already in progress.\r\n");
    assert_eq!(admin.call(&[b"REPLICAOF", b"NO", b"ONE"]), b"-ERR REPLICAOF not allowed while failing over.\r\n");
    assert_eq!(admin.call(&[b"PSYNC", b"?", b"-1"]), b"-NOMASTERLINK Can't SYNC while failing over\r\n");
    // Reads go on; a write is held.
    assert_eq!(admin.call(&[b"GET", b"pending"]), b"$1\r\n1\r\n");
    let mut writer = primary.raw();
    writer.send(b"*3\r\n$3\r\nSET\r\n$4\r\nheld\r\n$1\r\n1\r\n");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(admin.call(&[b"GET", b"held"]), b"$-1\r\n", "a write ran during the failover");
    // The target wakes up, catches up and takes over; the held write is refused then.
    signal(&a, "-CONT");
    assert_eq!(writer.read_reply(), b"-READONLY You can't write against a read only replica.\r\n");
    wait_info(&a, "promotion", |t| field(t, "role").as_deref() == Some("master"));
    let v: Option<String> = redis::cmd("GET").arg("pending").query(&mut a.client()).unwrap();
    assert_eq!(v.as_deref(), Some("1"));
}

#[test]
fn abort_and_timeout_give_the_primary_its_writes_back_and_force_hands_over_anyway() {
    let primary = Server::start(&[]);
    let a = replica_of(&primary, &["--repl-timeout", "60"]);
    link_up(&a, &primary);
    replicas_online(&primary, 1);
    signal(&a, "-STOP");
    let _: () = redis::cmd("SET").arg("unacked").arg("1").query(&mut primary.client()).unwrap();

    // ABORT: the held write goes through.
    let mut admin = primary.raw();
    assert_eq!(admin.call(&[b"FAILOVER"]), b"+OK\r\n");
    let mut writer = primary.raw();
    writer.send(b"*3\r\n$3\r\nSET\r\n$4\r\nheld\r\n$1\r\n1\r\n");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(admin.call(&[b"FAILOVER", b"ABORT"]), b"+OK\r\n");
    assert_eq!(writer.read_reply(), b"+OK\r\n");
    assert_eq!(admin.call(&[b"FAILOVER", b"ABORT"]), b"-ERR No failover in progress.\r\n");

    // TIMEOUT without FORCE: aborted after the time, still the primary.
    let started = Instant::now();
    assert_eq!(admin.call(&[b"FAILOVER", b"TIMEOUT", b"300"]), b"+OK\r\n");
    wait_info(&primary, "the timeout", |t| field(t, "master_failover_state").as_deref() == Some("no-failover"));
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(admin.call(&[b"SET", b"after-timeout", b"1"]), b"+OK\r\n");
    let role = info(&mut primary.client(), "replication");
    assert_eq!(field(&role, "role").as_deref(), Some("master"));

    // TIMEOUT with FORCE: the hand-over starts without the acknowledgement; once the target
    // answers, it is the primary and the old one follows it.
    let port = a.port.to_string();
    assert_eq!(admin.call(&[b"FAILOVER", b"TO", b"127.0.0.1", port.as_bytes(), b"TIMEOUT", b"200", b"FORCE"]), b"+OK\r\n");
    wait_info(&primary, "the forced hand-over", |t| field(t, "master_failover_state").as_deref() == Some("failover-in-progress"));
    signal(&a, "-CONT");
    wait_info(&a, "promotion", |t| field(t, "role").as_deref() == Some("master"));
    link_up(&primary, &a);
    wait_info(&primary, "the end of the failover", |t| field(t, "master_failover_state").as_deref() == Some("no-failover"));
}

/// The same commands to a Vermilion pair and a redis-server pair in the same roles.
#[test]
fn failover_errors_match_redis_byte_for_byte() {
    let v_primary = Server::start(&[]);
    let v_replica = replica_of(&v_primary, &[]);
    let r_primary = Server::start_redis(&[]);
    let r_replica = replica_of(&r_primary, &["redis"]);
    link_up(&v_replica, &v_primary);
    link_up(&r_replica, &r_primary);
    replicas_online(&v_primary, 1);
    replicas_online(&r_primary, 1);
    let lone_v = Server::start(&[]);
    let lone_r = Server::start_redis(&[]);

    let on_primary: &[&[&str]] = &[
        &["FAILOVER", "ABORT"],
        &["FAILOVER", "TIMEOUT", "0"],
        &["FAILOVER", "TIMEOUT", "-5"],
        &["FAILOVER", "TIMEOUT", "abc"],
        &["FAILOVER", "TIMEOUT"],
        &["FAILOVER", "TIMEOUT", "10", "TIMEOUT", "20"],
        &["FAILOVER", "TO", "127.0.0.1"],
        &["FAILOVER", "TO", "127.0.0.1", "notaport"],
        &["FAILOVER", "TO", "127.0.0.1", "1", "TO", "127.0.0.1", "2"],
        &["FAILOVER", "TO", "127.0.0.1", "1"],
        &["FAILOVER", "TO", "10.9.9.9", "1", "FORCE"],
        &["FAILOVER", "FORCE"],
        &["FAILOVER", "FORCE", "FORCE"],
        &["FAILOVER", "FORCE", "TIMEOUT", "100"],
        &["FAILOVER", "ABORT", "TIMEOUT", "100"],
        &["FAILOVER", "bogus"],
        &["PSYNC", "abc", "1", "FAILOVER"],
    ];
    let run = |s: &Server, cmd: &[&str]| {
        let args: Vec<&[u8]> = cmd.iter().map(|a| a.as_bytes()).collect();
        s.raw().call(&args)
    };
    for cmd in on_primary {
        assert_eq!(
            String::from_utf8_lossy(&run(&v_primary, cmd)),
            String::from_utf8_lossy(&run(&r_primary, cmd)),
            "{cmd:?} on a primary with a replica"
        );
    }
    for cmd in [&["FAILOVER"][..], &["FAILOVER", "TIMEOUT", "100"], &["FAILOVER", "ABORT"]] {
        assert_eq!(String::from_utf8_lossy(&run(&lone_v, cmd)), String::from_utf8_lossy(&run(&lone_r, cmd)), "{cmd:?} alone");
    }
    for cmd in [&["FAILOVER"][..], &["FAILOVER", "ABORT"], &["PSYNC", "0123", "1", "FAILOVER"]] {
        assert_eq!(String::from_utf8_lossy(&run(&v_replica, cmd)), String::from_utf8_lossy(&run(&r_replica, cmd)), "{cmd:?} on a replica");
    }
    // Nothing of the above started a failover.
    let text = info(&mut v_primary.client(), "replication");
    assert_eq!(field(&text, "master_failover_state").as_deref(), Some("no-failover"));
    assert_eq!(field(&text, "role").as_deref(), Some("master"));
}
