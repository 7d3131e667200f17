//! Cluster failover end to end: kill -9 of masters in pure and mixed clusters (with the
//! writes lost with and without WAIT), the old master's return, CLUSTER FAILOVER in its three
//! forms, replica migration, the other replicas following the promoted one, reads when the
//! cluster is down, and nodes.conf across kill -9.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::cluster::*;
use common::RawConn;
use redis::Commands;

#[test]
fn nodes_conf_brings_a_node_back_after_kill_9() {
    let c = Cluster::start(3, 0, "", "--appendonly yes --appendfsync always");
    c.wait_settled(3, 0);
    write_and_read(&c, 300, &[0, 1, 2], &[]);
    let before = c.nodes(1).lines().find(|l| l.contains("myself")).expect("myself").to_string();
    let pid = pid_of(c.ports[1]).expect("pid");
    let keys = c.dbsize(1);
    let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    std::thread::sleep(Duration::from_millis(300));
    // Started again by hand over the same directory, as the script started it.
    let node_dir = c.dir.path().join(c.ports[1].to_string());
    let conf = std::fs::read_to_string(node_dir.join("nodes.conf")).expect("nodes.conf");
    assert!(conf.contains(before.split(' ').next().unwrap_or("?")), "{conf}");
    let cport = before.split(' ').nth(1).and_then(|a| a.split('@').nth(1)).expect("cport").to_string();
    let mut child = Command::new(common::vermilion_bin())
        .current_dir(&node_dir)
        .args(["--port", &c.ports[1].to_string(), "--cluster-enabled", "yes", "--cluster-port", &cport])
        .args(["--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000", "--save", "", "--appendonly", "yes"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("restart");
    common::wait_listening(c.ports[1], Duration::from_secs(10));
    let after = c.nodes(1).lines().find(|l| l.contains("myself")).expect("myself").to_string();
    assert_eq!(after.split(' ').next(), before.split(' ').next(), "same node id");
    assert_eq!(after.split(' ').skip(7).collect::<Vec<_>>(), before.split(' ').skip(7).collect::<Vec<_>>(), "same slots");
    assert_eq!(c.dbsize(1), keys, "acknowledged writes survive");
    c.wait_settled(3, 0);
    c.check();
    write_and_read(&c, 300, &[0, 1, 2], &[]);
    drop(c);
    let _ = child.kill();
    let _ = child.wait();
}

/// Kills master `victim` (an index) with kill -9 while a client writes to it with WAIT 1,
/// then checks that its replica took over, that every write WAIT confirmed is there, and
/// that the cluster client goes on. Returns (acknowledged, lost) of the writes sent without
/// WAIT in the same run.
fn kill_master_and_check(c: &Cluster, victim: usize, dead: &[usize]) -> (usize, usize) {
    let topo = topology(c, victim);
    let victim_id = topo.iter().find(|t| t.0 == c.ports[victim]).expect("victim").1.clone();
    let replica_port = topo.iter().find(|t| t.2.as_deref() == Some(&victim_id)).expect("a replica").0;
    let mut conn = c.client_without(dead);
    // Keys of the victim's slots: written with WAIT 1 (acknowledged by the replica) and
    // without.
    let victim_line = c.nodes(victim).lines().find(|l| l.contains("myself")).expect("myself").to_string();
    let keys: Vec<String> = (0..20_000)
        .map(|i| format!("fo:{i}"))
        .filter(|k| owns(&victim_line, vermilion::cluster::slot::key_slot(k.as_bytes())))
        .take(400)
        .collect();
    // Writers on the victim while it dies: two with SET alone, two with SET then WAIT 1;
    // each keeps the keys it was told were written (WAIT's: those a replica acknowledged).
    let tag = keys[0].clone();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (port, tag, stop) = (c.ports[victim], tag.clone(), stop.clone());
            std::thread::spawn(move || write_until_failure(port, &tag, w, w >= 2, &stop))
        })
        .collect();
    // Long enough for a redis-server replica's once-a-second acknowledgements to count.
    std::thread::sleep(Duration::from_millis(1500));
    let pid = pid_of(c.ports[victim]).expect("pid");
    let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    let killed = Instant::now();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let written: Vec<(bool, Vec<String>)> = writers.into_iter().enumerate().map(|(w, h)| (w >= 2, h.join().expect("writer"))).collect();
    let waited: Vec<String> = written.iter().filter(|(w, _)| *w).flat_map(|(_, k)| k.clone()).collect();
    let plain_keys: Vec<String> = written.iter().filter(|(w, _)| !*w).flat_map(|(_, k)| k.clone()).collect();
    assert!(!waited.is_empty() && !plain_keys.is_empty(), "the writers wrote");
    // The replica becomes a master, and every other node says ok.
    let deadline = Instant::now() + Duration::from_secs(30);
    let alive: Vec<usize> = (0..c.ports.len()).filter(|&i| i != victim && !dead.contains(&i)).collect();
    loop {
        let promoted = c.nodes(index_of(c, replica_port)).lines().any(|l| l.contains("myself,master") && l.split(' ').count() > 8);
        let ok = alive.iter().all(|&i| {
            let mut r = RawConn::connect(c.ports[i]);
            String::from_utf8_lossy(&r.call(&[b"CLUSTER", b"INFO"])).contains("cluster_state:ok")
        });
        if promoted && ok {
            break;
        }
        assert!(Instant::now() < deadline, "no failover:\n{}", c.nodes(index_of(c, replica_port)));
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!("failover took {:?}", killed.elapsed());
    let mut new_master = RawConn::connect(replica_port);
    for k in &waited {
        assert_eq!(new_master.call(&[b"GET", k.as_bytes()]), b"$1\r\nv\r\n".to_vec(), "{k}: acknowledged with WAIT 1 and lost");
    }
    let kept = plain_keys.iter().filter(|k| new_master.call(&[b"GET", k.as_bytes()]) == b"$1\r\nv\r\n".to_vec()).count();
    eprintln!("WAIT 1: {} writes acknowledged by a replica, none lost", waited.len());
    // The cluster client goes on. The redis crate's sync client retries a refused
    // connection to the dead node without reading the slots again (its retry policy for I/O
    // errors), so after such an error it connects again, from the live nodes, as an
    // application would; a MOVED from a live node updates it by itself.
    for k in &keys[..50] {
        let mut tries = 0;
        loop {
            let r: redis::RedisResult<()> = conn.set(k, "after");
            match r {
                Ok(()) => break,
                Err(e) if tries < 50 => {
                    tries += 1;
                    if e.is_io_error() || e.is_connection_refusal() {
                        conn = c.client_without(&[dead, &[victim]].concat());
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(e) => panic!("writes after the failover fail: {e}"),
            }
        }
    }
    assert_eq!(new_master.call(&[b"GET", keys[0].as_bytes()]), b"$5\r\nafter\r\n".to_vec());
    (plain_keys.len(), plain_keys.len() - kept)
}

/// Writes `{tag}:w:i` = v to the node at `port` until it fails or `stop`; with `wait`, each
/// SET is followed by WAIT 1 1000 and counts only if a replica acknowledged it. Returns the
/// keys that count.
fn write_until_failure(port: u16, tag: &str, w: usize, wait: bool, stop: &std::sync::atomic::AtomicBool) -> Vec<String> {
    use std::io::{BufRead, BufReader, Write};
    let Ok(stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else { return Vec::new() };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut out = stream;
    let mut done = Vec::new();
    let mut line = String::new();
    for i in 0.. {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        let key = format!("{{{tag}}}:{w}:{i}");
        let mut cmd = format!("*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n$1\r\nv\r\n", key.len());
        if wait {
            cmd.push_str("*3\r\n$4\r\nWAIT\r\n$1\r\n1\r\n$4\r\n1000\r\n");
        }
        if out.write_all(cmd.as_bytes()).is_err() {
            break;
        }
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line != "+OK\r\n" {
            break;
        }
        if wait {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            if line != ":1\r\n" {
                continue;
            }
        }
        done.push(key);
    }
    done
}

#[test]
fn kill_9_of_a_master_promotes_its_replica() {
    let c = Cluster::start(6, 1, "", "");
    c.wait_settled(3, 3);
    let old_id = id_of(c.ports[0]);
    let (sent, lost) = kill_master_and_check(&c, 0, &[]);
    eprintln!("without WAIT: {lost} of {sent} acknowledged writes lost");
    assert!(sent > 0);
    // The old master comes back: the newer epoch of its slots' owner makes it a replica.
    let node_dir = c.dir.path().join(c.ports[0].to_string());
    let cport = topology(&c, 1).iter().find(|t| t.1 == old_id).map(|_| ()).and(Some(()));
    assert!(cport.is_some());
    let conf = std::fs::read_to_string(node_dir.join("nodes.conf")).expect("nodes.conf");
    let bus = conf
        .lines()
        .find(|l| l.contains("myself"))
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|a| a.split(['@', ',']).nth(1))
        .expect("bus port")
        .to_string();
    let mut child = Command::new(common::vermilion_bin())
        .current_dir(&node_dir)
        .args(["--port", &c.ports[0].to_string(), "--cluster-enabled", "yes", "--cluster-port", &bus])
        .args(["--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000", "--save", "", "--appendonly", "no"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("restart");
    common::wait_listening(c.ports[0], Duration::from_secs(10));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let me = topology_line(c.ports[0]);
        if me.contains("myself,slave") && me.split(' ').count() <= 8 {
            break;
        }
        assert!(Instant::now() < deadline, "the old master did not become a replica: {me}");
        std::thread::sleep(Duration::from_millis(200));
    }
    c.check();
    let _ = child.kill();
    let _ = child.wait();
    let out = Command::new("redis-cli").args(["--cluster", "check", &c.addr(1)]).output().expect("redis-cli");
    assert!(String::from_utf8_lossy(&out.stdout).contains("[OK] All 16384 slots covered."));
}

#[test]
fn failover_in_a_mixed_cluster_works_both_ways() {
    // redis-server at positions 1 and 6: masters 1 (Redis), 2 and 3 (Vermilion); the
    // replicas' pairing is redis-cli's. Killing master 2 needs the votes of masters 1 and
    // 3 (Redis and Vermilion); killing master 1 next, those of the other two.
    let c = Cluster::start(6, 1, "1 6", "");
    c.wait_settled(3, 3);
    kill_master_and_check(&c, 1, &[]);
    kill_master_and_check(&c, 0, &[1]);
}

#[test]
fn cluster_failover_on_a_replica_hands_over_in_three_ways() {
    let c = Cluster::start(6, 1, "", "");
    c.wait_settled(3, 3);
    for how in [None, Some("FORCE"), Some("TAKEOVER")] {
        let topo = topology(&c, 0);
        let (replica_port, master_id) = topo.iter().find_map(|t| t.2.clone().map(|m| (t.0, m))).expect("a replica");
        // A client blocked on the master's key is redirected once the slot moves.
        let master_port = topo.iter().find(|t| t.1 == master_id).expect("master").0;
        let master_line = topology_line(master_port);
        let key = (0..10_000)
            .map(|i| format!("q{i}"))
            .find(|k| owns(&master_line, vermilion::cluster::slot::key_slot(k.as_bytes())))
            .expect("a key");
        let mut blocked = RawConn::connect(master_port);
        blocked.send(format!("*3\r\n$5\r\nBLPOP\r\n${}\r\n{key}\r\n$1\r\n0\r\n", key.len()).as_bytes());
        let mut r = RawConn::connect(replica_port);
        let mut args: Vec<&[u8]> = vec![b"CLUSTER", b"FAILOVER"];
        if let Some(h) = how {
            args.push(h.as_bytes());
        }
        assert_eq!(r.call(&args), b"+OK\r\n".to_vec());
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let t = topology(&c, index_of(&c, replica_port));
            let me_master = t.iter().any(|x| x.0 == replica_port && x.2.is_none());
            let old_follows = t.iter().any(|x| x.1 == master_id && x.2.is_some());
            if me_master && old_follows {
                break;
            }
            assert!(Instant::now() < deadline, "{how:?}: no hand-over\n{}", c.nodes(index_of(&c, replica_port)));
            std::thread::sleep(Duration::from_millis(100));
        }
        let slot = vermilion::cluster::slot::key_slot(key.as_bytes());
        assert_eq!(String::from_utf8_lossy(&blocked.read_reply()), format!("-MOVED {slot} 127.0.0.1:{replica_port}\r\n"), "{how:?}");
        c.wait_settled(3, 3);
    }
    c.check();
}

/// Replica migration: a master whose only replica dies gets one of the replicas of the
/// master that has two (after Redis's 5 s delay).
#[test]
fn an_orphaned_master_gets_a_replica_from_the_master_with_two() {
    let c = Cluster::start(7, 1, "", "");
    c.wait_settled(3, 4);
    let topo = topology(&c, 0);
    let count = |m: &str| topo.iter().filter(|t| t.2.as_deref() == Some(m)).count();
    let (rich, _) =
        topo.iter().filter(|t| t.2.is_none()).map(|t| (t.1.clone(), count(&t.1))).find(|(_, n)| *n == 2).expect("a master with 2 replicas");
    let (poor, _) =
        topo.iter().filter(|t| t.2.is_none()).map(|t| (t.1.clone(), count(&t.1))).find(|(_, n)| *n == 1).expect("a master with 1");
    let lone = topo.iter().find(|t| t.2.as_deref() == Some(poor.as_str())).expect("its replica").0;
    let pid = pid_of(lone).expect("pid");
    let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = topology(&c, index_of(&c, topo.iter().find(|t| t.1 == rich).expect("rich").0));
        let live = |m: &str| now.iter().filter(|t| t.2.as_deref() == Some(m) && !t.3).count();
        if live(&poor) == 1 && live(&rich) == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "no replica migrated:\n{}", c.nodes(0));
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A master with two replicas dies: one replica is promoted and the other follows it (with
/// its data from the new master, nothing deleted on the way); CLUSTER RESET then turns that
/// replica into an empty master alone.
#[test]
fn the_other_replica_follows_the_promoted_one() {
    let c = Cluster::start(7, 1, "", "");
    c.wait_settled(3, 4);
    let topo = topology(&c, 0);
    let count = |m: &str| topo.iter().filter(|t| t.2.as_deref() == Some(m)).count();
    let rich = topo.iter().find(|t| t.2.is_none() && count(&t.1) == 2).expect("a master with 2 replicas").clone();
    let siblings: Vec<u16> = topo.iter().filter(|t| t.2.as_deref() == Some(rich.1.as_str())).map(|t| t.0).collect();
    let line = topology_line(rich.0);
    let mut m = RawConn::connect(rich.0);
    let keys: Vec<String> =
        (0..20_000).map(|i| format!("s{i}")).filter(|k| owns(&line, vermilion::cluster::slot::key_slot(k.as_bytes()))).take(300).collect();
    for k in &keys {
        assert_eq!(m.call(&[b"SET", k.as_bytes(), b"v"]), b"+OK\r\n".to_vec());
    }
    assert_eq!(m.call(&[b"WAIT", b"2", b"5000"]), b":2\r\n".to_vec());
    let pid = pid_of(rich.0).expect("pid");
    let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    let deadline = Instant::now() + Duration::from_secs(30);
    let (winner, other) = loop {
        let roles: Vec<(u16, Option<String>)> =
            siblings.iter().map(|&p| (p, topology_line(p).split(' ').nth(3).filter(|m| *m != "-").map(str::to_string))).collect();
        if let Some(w) = roles.iter().find(|r| r.1.is_none()) {
            let wid = id_of(w.0);
            if let Some(o) = roles.iter().find(|r| r.1.as_deref() == Some(wid.as_str())) {
                break (w.0, o.0);
            }
        }
        assert!(Instant::now() < deadline, "the sibling did not follow: {roles:?}");
        std::thread::sleep(Duration::from_millis(200));
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while c.dbsize(index_of(&c, other)) != keys.len() as i64 {
        assert!(Instant::now() < deadline, "the follower has {} keys", c.dbsize(index_of(&c, other)));
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(c.dbsize(index_of(&c, winner)), keys.len() as i64);
    let mut o = RawConn::connect(other);
    assert_eq!(o.call(&[b"CLUSTER", b"RESET"]), b"+OK\r\n".to_vec());
    assert_eq!(o.call(&[b"DBSIZE"]), b":0\r\n".to_vec());
    let me = topology_line(other);
    assert!(me.contains("myself,master"), "{me}");
    let info = String::from_utf8_lossy(&o.call(&[b"CLUSTER", b"INFO"])).into_owned();
    assert!(info.contains("cluster_known_nodes:1\r\n"), "{info}");
}

/// With a master gone for good the cluster is down; `cluster-allow-reads-when-down` lets a
/// node serve reads of its own slots then, and tells writers the cluster is down.
#[test]
fn reads_when_down_serve_reads_and_refuse_writes() {
    let c = Cluster::start(3, 0, "", "");
    c.wait_settled(3, 0);
    let line = topology_line(c.ports[1]);
    let key = (0..10_000).map(|i| format!("r{i}")).find(|k| owns(&line, vermilion::cluster::slot::key_slot(k.as_bytes()))).expect("a key");
    let mut n = RawConn::connect(c.ports[1]);
    assert_eq!(n.call(&[b"SET", key.as_bytes(), b"v"]), b"+OK\r\n".to_vec());
    let pid = pid_of(c.ports[0]).expect("pid");
    let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !String::from_utf8_lossy(&n.call(&[b"CLUSTER", b"INFO"])).contains("cluster_state:fail") {
        assert!(Instant::now() < deadline, "the cluster did not go down");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(n.call(&[b"GET", key.as_bytes()]), b"-CLUSTERDOWN The cluster is down\r\n".to_vec());
    assert_eq!(n.call(&[b"CONFIG", b"SET", b"cluster-allow-reads-when-down", b"yes"]), b"+OK\r\n".to_vec());
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(n.call(&[b"GET", key.as_bytes()]), b"$1\r\nv\r\n".to_vec());
    assert_eq!(n.call(&[b"SET", key.as_bytes(), b"w"]), b"-CLUSTERDOWN The cluster is down and only accepts read commands\r\n".to_vec());
    // Without full coverage required, the two masters left serve writes too.
    assert_eq!(n.call(&[b"CONFIG", b"SET", b"cluster-require-full-coverage", b"no"]), b"+OK\r\n".to_vec());
    let deadline = Instant::now() + Duration::from_secs(30);
    while n.call(&[b"SET", key.as_bytes(), b"w"]) != b"+OK\r\n".to_vec() {
        assert!(Instant::now() < deadline, "writes did not come back");
        std::thread::sleep(Duration::from_millis(200));
    }
}
