//! Cluster mode end to end: clusters started by `scripts/cluster/start.sh` (the real
//! `redis-cli --cluster create`), pure and mixed with redis-server nodes, checked with
//! `redis-cli --cluster check`, written and read through the `redis` crate's cluster client;
//! the redirection and CLUSTER errors byte for byte against redis-server; nodes.conf across a
//! kill -9.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{free_port, RawConn, Server};
use redis::Commands;

/// A cluster started by the script; stopped (SHUTDOWN NOSAVE, then kill -9) when dropped.
struct Cluster {
    ports: Vec<u16>,
    dir: tempfile::TempDir,
}

fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/cluster/start.sh")
}

fn pid_of(port: u16) -> Option<u32> {
    let out = Command::new("redis-cli").args(["-p", &port.to_string(), "info", "server"]).output().ok()?;
    String::from_utf8_lossy(&out.stdout).lines().find_map(|l| l.strip_prefix("process_id:")).and_then(|p| p.trim().parse().ok())
}

impl Cluster {
    /// `redis`: 1-based positions run by redis-server.
    fn start(nodes: usize, replicas: usize, redis: &str, extra: &str) -> Cluster {
        let ports: Vec<u16> = (0..nodes).map(|_| free_port()).collect();
        let cports: Vec<u16> = (0..nodes).map(|_| free_port()).collect();
        let dir = tempfile::tempdir().expect("tempdir");
        let join = |v: &[u16]| v.iter().map(u16::to_string).collect::<Vec<_>>().join(" ");
        let out = Command::new("bash")
            .arg(script())
            .env("PORTS", join(&ports))
            .env("CPORTS", join(&cports))
            .env("REPLICAS", replicas.to_string())
            .env("REDIS", redis)
            .env("DIR", dir.path())
            .env("BIN", common::vermilion_bin())
            .env("TIMEOUT", "2000")
            .env("EXTRA", extra)
            .output()
            .expect("run start.sh");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "start.sh failed: {text}\n{}", String::from_utf8_lossy(&out.stderr));
        assert!(text.contains("[OK] All 16384 slots covered."), "{text}");
        Cluster { ports, dir }
    }

    fn addr(&self, i: usize) -> String {
        format!("127.0.0.1:{}", self.ports[i])
    }

    fn nodes(&self, i: usize) -> String {
        let mut c = RawConn::connect(self.ports[i]);
        String::from_utf8_lossy(&c.call(&[b"CLUSTER", b"NODES"])).into_owned()
    }

    /// Waits until every node sees `masters` masters with slots and `replicas` replicas, all
    /// connected, and says the cluster is ok.
    fn wait_settled(&self, masters: usize, replicas: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let settled = (0..self.ports.len()).all(|i| {
                let nodes = self.nodes(i);
                let lines: Vec<&str> = nodes.lines().filter(|l| l.contains(" connected")).collect();
                let m = lines.iter().filter(|l| l.contains("master") && l.split(' ').count() > 8).count();
                let r = lines.iter().filter(|l| l.contains("slave")).count();
                let mut c = RawConn::connect(self.ports[i]);
                let info = String::from_utf8_lossy(&c.call(&[b"CLUSTER", b"INFO"])).into_owned();
                m == masters && r == replicas && info.contains("cluster_state:ok")
            });
            if settled {
                return;
            }
            assert!(Instant::now() < deadline, "cluster did not settle:\n{}", self.nodes(0));
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn client(&self) -> redis::cluster::ClusterConnection {
        self.client_without(&[])
    }

    /// A cluster client that starts from every node but `dead`.
    fn client_without(&self, dead: &[usize]) -> redis::cluster::ClusterConnection {
        let urls: Vec<String> =
            self.ports.iter().enumerate().filter(|(i, _)| !dead.contains(i)).map(|(_, p)| format!("redis://127.0.0.1:{p}/")).collect();
        redis::cluster::ClusterClient::new(urls).expect("cluster client").get_connection().expect("cluster connection")
    }

    /// `redis-cli --cluster check` until it passes (gossip spreads a change within a few
    /// pings), at most 20 s.
    fn check(&self) -> String {
        check_at(&self.addr(0))
    }

    fn dbsize(&self, i: usize) -> i64 {
        let mut c = RawConn::connect(self.ports[i]);
        let r = String::from_utf8_lossy(&c.call(&[b"DBSIZE"])).into_owned();
        r.trim().trim_start_matches(':').parse().unwrap_or(-1)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let pids: Vec<u32> = self.ports.iter().filter_map(|&p| pid_of(p)).collect();
        for pid in pids {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
        let _ = &self.dir;
    }
}

fn check_at(addr: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let out = Command::new("redis-cli").args(["--cluster", "check", addr]).output().expect("redis-cli");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() {
            assert!(text.contains("[OK] All nodes agree about slots configuration."), "{text}");
            assert!(text.contains("[OK] All 16384 slots covered."), "{text}");
            return text;
        }
        assert!(Instant::now() < deadline, "check failed:\n{text}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Writes `n` keys through the cluster client and reads them back; then every key is on
/// exactly one master and on that master's replicas.
fn write_and_read(c: &Cluster, n: usize, masters: &[usize], replicas: &[usize]) {
    let mut conn = c.client();
    for i in 0..n {
        let _: () = conn.set(format!("key:{i}"), format!("value:{i}")).expect("SET through the cluster");
    }
    for i in 0..n {
        let v: String = conn.get(format!("key:{i}")).expect("GET through the cluster");
        assert_eq!(v, format!("value:{i}"));
    }
    let on_masters: i64 = masters.iter().map(|&i| c.dbsize(i)).sum();
    assert_eq!(on_masters, n as i64, "every key on exactly one master");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !replicas.is_empty() {
        let on_replicas: i64 = replicas.iter().map(|&i| c.dbsize(i)).sum();
        if on_replicas == n as i64 {
            break;
        }
        assert!(Instant::now() < deadline, "replicas hold {on_replicas} of {n} keys");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn roles(c: &Cluster) -> (Vec<usize>, Vec<usize>) {
    let mut masters = Vec::new();
    let mut replicas = Vec::new();
    for i in 0..c.ports.len() {
        let me = c.nodes(i).lines().find(|l| l.contains("myself")).unwrap_or_default().to_string();
        if me.contains("slave") {
            replicas.push(i);
        } else {
            masters.push(i);
        }
    }
    (masters, replicas)
}

#[test]
fn redis_cli_creates_a_cluster_of_vermilion_nodes_that_clients_use() {
    let c = Cluster::start(6, 1, "", "");
    c.wait_settled(3, 3);
    let check = c.check();
    assert!(check.contains("1 additional replica(s)"), "{check}");
    let (masters, replicas) = roles(&c);
    assert_eq!((masters.len(), replicas.len()), (3, 3));
    write_and_read(&c, 500, &masters, &replicas);

    // A node that does not own the key's slot redirects, as Redis words it.
    let slot = vermilion::cluster::slot::key_slot(b"key:1");
    let owner_line = c.nodes(0).lines().find(|l| l.contains("master") && owns(l, slot)).expect("owner").to_string();
    let owner_port: u16 = owner_line.split(' ').nth(1).and_then(|a| a.split(['@', ':']).nth(1)).and_then(|p| p.parse().ok()).expect("port");
    let other = *masters.iter().find(|&&i| c.ports[i] != owner_port).expect("another master");
    let mut raw = RawConn::connect(c.ports[other]);
    assert_eq!(raw.call(&[b"GET", b"key:1"]), format!("-MOVED {slot} 127.0.0.1:{owner_port}\r\n").into_bytes());
    assert_eq!(raw.call(&[b"MSET", b"a", b"1", b"b", b"2"]), b"-CROSSSLOT Keys in request don't hash to the same slot\r\n".to_vec());
    assert_eq!(raw.call(&[b"SELECT", b"1"]), b"-ERR SELECT is not allowed in cluster mode\r\n".to_vec());
    // Inside MULTI a redirect dooms the transaction.
    assert_eq!(raw.call(&[b"MULTI"]), b"+OK\r\n".to_vec());
    assert!(raw.call(&[b"GET", b"key:1"]).starts_with(b"-MOVED"));
    assert_eq!(raw.call(&[b"EXEC"]), b"-EXECABORT Transaction discarded because of previous errors.\r\n".to_vec());
    // A script may use only keys of this node, in one slot.
    let me = c.nodes(other).lines().find(|l| l.contains("myself")).unwrap_or_default().to_string();
    let local =
        (0..10_000).map(|i| format!("k{i}")).find(|k| owns(&me, vermilion::cluster::slot::key_slot(k.as_bytes()))).expect("a local key");
    let reply = raw.call(&[b"EVAL", b"return redis.call('get', KEYS[1])", b"1", b"key:1"]);
    assert!(reply.starts_with(b"-MOVED"), "{}", String::from_utf8_lossy(&reply));
    let reply = raw.call(&[b"EVAL", b"return redis.call('get', 'key:1')", b"1", local.as_bytes()]);
    assert!(
        String::from_utf8_lossy(&reply).starts_with("-ERR Script attempted to access a non local key in a cluster node"),
        "{}",
        String::from_utf8_lossy(&reply)
    );

    // A replica: MOVED to its master, unless READONLY.
    let replica = replicas[0];
    let master_id =
        c.nodes(replica).lines().find(|l| l.contains("myself")).and_then(|l| l.split(' ').nth(3)).expect("master id").to_string();
    let master_line = c.nodes(replica).lines().find(|l| l.starts_with(&master_id)).expect("master line").to_string();
    let key = (0..10_000)
        .map(|i| format!("key:{i}"))
        .take(500)
        .find(|k| owns(&master_line, vermilion::cluster::slot::key_slot(k.as_bytes())))
        .expect("a key of the master");
    let mut raw = RawConn::connect(c.ports[replica]);
    assert!(raw.call(&[b"GET", key.as_bytes()]).starts_with(b"-MOVED"));
    assert_eq!(raw.call(&[b"READONLY"]), b"+OK\r\n".to_vec());
    let value = key.replace("key", "value");
    assert_eq!(raw.call(&[b"GET", key.as_bytes()]), format!("${}\r\n{value}\r\n", value.len()).into_bytes());
    let key = format!("{{{key}}}:counter");
    assert!(raw.call(&[b"SET", key.as_bytes(), b"x"]).starts_with(b"-MOVED"), "writes still go to the master");

    // A script runs on the node that owns its keys, and that node's replica replays it.
    let mut owner_conn = RawConn::connect(master_port_of(&c, replica));
    assert_eq!(owner_conn.call(&[b"EVAL", b"return redis.call('incrby', KEYS[1], 41)", b"1", key.as_bytes()]), b":41\r\n".to_vec());
    assert_eq!(owner_conn.call(&[b"WAIT", b"1", b"5000"]), b":1\r\n".to_vec());
    assert_eq!(raw.call(&[b"GET", key.as_bytes()]), b"$2\r\n41\r\n".to_vec(), "the replica has the script's write");

    // SPUBLISH goes by the channel's slot, and reaches the shard's replica too.
    let channel = key.clone();
    let master_port: u16 =
        master_line.split(' ').nth(1).and_then(|a| a.split(['@', ':']).nth(1)).and_then(|p| p.parse().ok()).expect("port");
    let mut sub = RawConn::connect(c.ports[replica]);
    assert!(sub.call(&[b"SSUBSCRIBE", channel.as_bytes()]).starts_with(b"*3\r\n$10\r\nssubscribe"));
    let other_master = masters.iter().map(|&i| c.ports[i]).find(|&p| p != master_port).expect("another master");
    assert!(RawConn::connect(other_master).call(&[b"SPUBLISH", channel.as_bytes(), b"hi"]).starts_with(b"-MOVED"));
    assert_eq!(RawConn::connect(master_port).call(&[b"SPUBLISH", channel.as_bytes(), b"hi"]), b":0\r\n".to_vec());
    let expected = format!("*3\r\n$8\r\nsmessage\r\n${}\r\n{channel}\r\n$2\r\nhi\r\n", channel.len());
    assert_eq!(String::from_utf8_lossy(&sub.read_reply()), expected);

    // redis-benchmark in cluster mode, unmodified.
    let out = Command::new("redis-benchmark")
        .args(["--cluster", "-p", &c.ports[0].to_string(), "-n", "3000", "-c", "10", "-r", "1000", "-t", "set,get", "-q"])
        .output()
        .expect("redis-benchmark");
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "\n");
    assert!(text.contains("SET: ") && text.contains("GET: ") && text.matches("requests per second").count() >= 2, "{text}");
}

/// The client port of the master of the replica at index `replica`.
fn master_port_of(c: &Cluster, replica: usize) -> u16 {
    let t = topology(c, replica);
    let me = t.iter().find(|x| x.0 == c.ports[replica]).and_then(|x| x.2.clone()).expect("a replica");
    t.iter().find(|x| x.1 == me).expect("its master").0
}

/// Whether a CLUSTER NODES line's slot ranges hold `slot`.
fn owns(line: &str, slot: u16) -> bool {
    line.split(' ').skip(8).any(|r| match r.split_once('-') {
        Some((a, b)) if !a.starts_with('[') => a.parse::<u16>().is_ok_and(|a| a <= slot) && b.parse::<u16>().is_ok_and(|b| slot <= b),
        _ => r.parse::<u16>() == Ok(slot),
    })
}

#[test]
fn a_mixed_cluster_of_redis_server_and_vermilion_nodes_works_both_ways() {
    // Nodes 1 and 5 are redis-server: a Redis master with a Vermilion replica, and a
    // Vermilion master with a Redis replica (create pairs masters 1-3 with 4-6 by order).
    let c = Cluster::start(6, 1, "1 5", "--cluster-announce-hostname node.example");
    c.wait_settled(3, 3);
    c.check();
    // The hostname extension crosses both ways: a Redis node and a Vermilion node list every
    // node with it.
    for i in [0, 1] {
        let deadline = Instant::now() + Duration::from_secs(10);
        while c.nodes(i).lines().filter(|l| l.contains(",node.example ")).count() != 6 {
            assert!(Instant::now() < deadline, "hostnames missing:\n{}", c.nodes(i));
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let (masters, replicas) = roles(&c);
    assert_eq!((masters.len(), replicas.len()), (3, 3));
    write_and_read(&c, 500, &masters, &replicas);
    publish_reaches_every_node(&c);
}

/// A PUBLISH on any node reaches subscribers on every node (the bus's PUBLISH), whichever
/// server runs them.
fn publish_reaches_every_node(c: &Cluster) {
    let mut subs: Vec<RawConn> = c.ports.iter().map(|&p| RawConn::connect(p)).collect();
    for s in subs.iter_mut() {
        assert!(s.call(&[b"SUBSCRIBE", b"news"]).starts_with(b"*3\r\n$9\r\nsubscribe"));
    }
    for (i, &p) in c.ports.iter().enumerate() {
        let mut publisher = RawConn::connect(p);
        let text = format!("from-{i}");
        // PUBLISH counts the receivers on its own node only, as in Redis.
        assert_eq!(publisher.call(&[b"PUBLISH", b"news", text.as_bytes()]), b":1\r\n".to_vec());
        for s in subs.iter_mut() {
            let expected = format!("*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n${}\r\n{text}\r\n", text.len());
            assert_eq!(String::from_utf8_lossy(&s.read_reply()), expected);
        }
    }
}

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

/// The same commands to a fresh redis-server and a fresh Vermilion node, both in cluster
/// mode and alone: the replies byte for byte.
#[test]
fn cluster_commands_and_errors_match_redis() {
    let node = |redis: bool| {
        let cport = free_port().to_string();
        let args = ["--cluster-enabled", "yes", "--cluster-port", &cport, "--cluster-config-file", "nodes.conf"];
        if redis {
            Server::start_redis(&args)
        } else {
            Server::start(&args)
        }
    };
    let (r, v) = (node(true), node(false));
    let mut rc = RawConn::connect(r.port);
    let mut vc = RawConn::connect(v.port);
    let cases: &[&[&str]] = &[
        &["CLUSTER", "INFO"],
        &["CLUSTER", "SLOTS"],
        &["CLUSTER", "SHARDS"],
        &["CLUSTER", "HELP"],
        &["CLUSTER", "KEYSLOT", "{user1000}.following"],
        &["CLUSTER", "COUNTKEYSINSLOT", "16384"],
        &["CLUSTER", "COUNTKEYSINSLOT", "x"],
        &["CLUSTER", "GETKEYSINSLOT", "1", "-1"],
        &["CLUSTER", "ADDSLOTS", "16384"],
        &["CLUSTER", "ADDSLOTS", "x"],
        &["CLUSTER", "ADDSLOTS", "5", "5"],
        &["CLUSTER", "DELSLOTS", "7"],
        &["CLUSTER", "ADDSLOTSRANGE", "10", "5"],
        &["CLUSTER", "ADDSLOTSRANGE", "1"],
        &["CLUSTER", "SET-CONFIG-EPOCH", "-1"],
        &["CLUSTER", "SET-CONFIG-EPOCH", "x"],
        &["CLUSTER", "REPLICATE", "0123456789012345678901234567890123456789"],
        &["CLUSTER", "FORGET", "nobody"],
        &["CLUSTER", "COUNT-FAILURE-REPORTS", "nobody"],
        &["CLUSTER", "SETSLOT", "1", "MIGRATING", "nobody"],
        &["CLUSTER", "SETSLOT", "1", "IMPORTING", "nobody"],
        &["CLUSTER", "SETSLOT", "1", "NODE", "nobody"],
        &["CLUSTER", "SETSLOT", "1", "BOGUS"],
        &["CLUSTER", "SETSLOT", "99999", "STABLE"],
        &["CLUSTER", "MEET", "nowhere", "7000"],
        &["CLUSTER", "MEET", "127.0.0.1", "x"],
        &["CLUSTER", "MEET", "127.0.0.1", "7000", "y"],
        &["CLUSTER", "MEET", "127.0.0.1", "70000"],
        &["CLUSTER", "RESET", "BOGUS"],
        &["CLUSTER", "NOSUCH"],
        &["CLUSTER", "FAILOVER"],
        &["GET", "foo"],
        &["SET", "foo", "bar"],
        &["MSET", "a", "1", "b", "2"],
        &["MSET", "{t}a", "1", "{t}b", "2"],
        &["SELECT", "0"],
        &["SELECT", "1"],
        &["SELECT", "x"],
        &["MOVE", "foo", "1"],
        &["SWAPDB", "0", "1"],
        &["COPY", "foo", "bar", "DB", "1"],
        &["PING"],
        &["EVAL", "#!lua flags=no-cluster\nreturn 1", "0"],
        &["EVAL", "#!lua\nreturn redis.call('get', KEYS[1])", "1", "x"],
        &["SPUBLISH", "ch", "m"],
        &["CLUSTER", "ADDSLOTSRANGE", "0", "16383"],
        &["CLUSTER", "SET-CONFIG-EPOCH", "5"],
        &["CLUSTER", "SET-CONFIG-EPOCH", "6"],
        &["CLUSTER", "BUMPEPOCH"],
        &["CLUSTER", "ADDSLOTS", "100"],
        &["CLUSTER", "COUNTKEYSINSLOT", "100"],
        &["CLUSTER", "FLUSHSLOTS"],
        &["CLUSTER", "DELSLOTS", "100"],
        &["CLUSTER", "ADDSLOTS", "100"],
    ];
    // Each node's own id and port are masked (CLUSTER SHARDS shows them).
    let masked = |c: &mut RawConn, port: u16, reply: Vec<u8>| {
        let id = String::from_utf8_lossy(&c.call(&[b"CLUSTER", b"MYID"])).lines().nth(1).unwrap_or_default().to_string();
        String::from_utf8_lossy(&reply).replace(&id, "<id>").replace(&format!(":{port}\r\n"), ":<port>\r\n")
    };
    for case in cases {
        let args: Vec<&[u8]> = case.iter().map(|a| a.as_bytes()).collect();
        let (ra, va) = (rc.call(&args), vc.call(&args));
        let (ra, va) = (masked(&mut rc, r.port, ra), masked(&mut vc, v.port, va));
        assert_eq!(va, ra, "{case:?}");
    }
}

/// The node ids by port, and each replica's master id, from one node's CLUSTER NODES.
fn topology(c: &Cluster, from: usize) -> Vec<(u16, String, Option<String>, bool)> {
    c.nodes(from)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let port: u16 = f.get(1)?.split(['@', ':']).nth(1)?.parse().ok()?;
            let master = (f.get(3)? != &"-").then(|| f[3].to_string());
            Some((port, f[0].to_string(), master, f[2].contains("fail")))
        })
        .collect()
}

fn index_of(c: &Cluster, port: u16) -> usize {
    c.ports.iter().position(|&p| p == port).expect("a port of the cluster")
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

/// A node started alone (cluster mode, no slots), as `redis-cli --cluster add-node` wants.
struct Extra {
    port: u16,
    child: std::process::Child,
    _dir: tempfile::TempDir,
}

impl Extra {
    fn start(bin: &Path) -> Extra {
        let dir = tempfile::tempdir().expect("tempdir");
        let (port, cport) = (free_port(), free_port());
        let child = Command::new(bin)
            .current_dir(dir.path())
            .args(["--port", &port.to_string(), "--cluster-enabled", "yes", "--cluster-port", &cport.to_string()])
            .args(["--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000", "--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        common::wait_listening(port, Duration::from_secs(10));
        Extra { port, child, _dir: dir }
    }
}

impl Drop for Extra {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn redis_cli(args: &[&str]) -> String {
    let out = Command::new("redis-cli").args(args).output().expect("redis-cli");
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "redis-cli {args:?} failed:\n{text}");
    text
}

fn id_of(port: u16) -> String {
    let mut c = RawConn::connect(port);
    let reply = c.call(&[b"CLUSTER", b"MYID"]);
    String::from_utf8_lossy(&reply).lines().nth(1).unwrap_or_default().to_string()
}

/// The migration path: two redis-server masters hold every slot; two Vermilion nodes join
/// with `add-node`; `reshard` moves every slot to them while a client writes and reads;
/// `del-node` removes the Redis nodes. No acknowledged write is lost.
#[test]
fn every_slot_moves_from_redis_server_to_vermilion_under_load() {
    let c = Cluster::start(3, 0, "1 2 3", "");
    c.wait_settled(3, 0);
    let redis_nodes = [c.ports[0], c.ports[1], c.ports[2]];
    let (a, b) = (Extra::start(&common::vermilion_bin()), Extra::start(&common::vermilion_bin()));
    for n in [&a, &b] {
        redis_cli(&["--cluster", "add-node", &format!("127.0.0.1:{}", n.port), &c.addr(0)]);
    }
    // The new nodes are known everywhere, and know every slot, before slots move
    // (reshard checks first).
    let all: Vec<u16> = [redis_nodes[0], redis_nodes[1], redis_nodes[2], a.port, b.port].to_vec();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !all.iter().all(|&p| {
        let mut c = RawConn::connect(p);
        let nodes = String::from_utf8_lossy(&c.call(&[b"CLUSTER", b"NODES"])).into_owned();
        nodes.lines().filter(|l| l.contains(" connected") && !l.contains("handshake")).count() == all.len()
    }) {
        assert!(Instant::now() < deadline, "the new nodes did not join");
        std::thread::sleep(Duration::from_millis(100));
    }
    for p in [a.port, b.port] {
        check_at(&format!("127.0.0.1:{p}"));
    }
    // A node that just learnt the slots says ok after the rejoin delay (as Redis does);
    // until then it refuses keys, RESTORE-ASKING included.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !all.iter().all(|&p| {
        let mut c = RawConn::connect(p);
        String::from_utf8_lossy(&c.call(&[b"CLUSTER", b"INFO"])).contains("cluster_state:ok")
    }) {
        assert!(Instant::now() < deadline, "the cluster is not ok");
        std::thread::sleep(Duration::from_millis(100));
    }
    let urls: Vec<String> = all.iter().map(|p| format!("redis://127.0.0.1:{p}/")).collect();
    // The writer: SET then GET of fresh keys, through the moves.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (stop, urls) = (stop.clone(), urls.clone());
        std::thread::spawn(move || {
            let mut conn = redis::cluster::ClusterClient::new(urls).expect("client").get_connection().expect("connection");
            let mut acked = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let key = format!("load:{acked}");
                let set: redis::RedisResult<()> = conn.set(&key, acked);
                if set.is_ok() {
                    let got: u64 = conn.get(&key).expect("read back");
                    assert_eq!(got, acked);
                    acked += 1;
                }
            }
            acked
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    // Half of each Redis node's slots to each Vermilion node.
    for from in &redis_nodes {
        let held = slots_on(*from);
        for to in [a.port, b.port] {
            let slots = if to == a.port { held / 2 } else { held - held / 2 };
            // Every node has seen the previous move (reshard checks that first).
            let entry = format!("127.0.0.1:{}", a.port);
            check_at(&entry);
            redis_cli(&[
                "--cluster",
                "reshard",
                &entry,
                "--cluster-from",
                &id_of(*from),
                "--cluster-to",
                &id_of(to),
                "--cluster-slots",
                &slots.to_string(),
                "--cluster-yes",
            ]);
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let acked = writer.join().expect("writer");
    assert!(acked > 100, "the writer made progress ({acked})");
    let check = check_at(&format!("127.0.0.1:{}", a.port));
    assert!(!check.contains("[WARNING]"), "{check}");
    // Every slot is on the Vermilion nodes, and every acknowledged key is there.
    let mut conn =
        redis::cluster::ClusterClient::new(vec![format!("redis://127.0.0.1:{}/", a.port)]).expect("client").get_connection().expect("c");
    for i in 0..acked {
        let got: Option<u64> = conn.get(format!("load:{i}")).expect("get");
        assert_eq!(got, Some(i), "load:{i} lost");
    }
    assert_eq!(slots_on(a.port) + slots_on(b.port), 16384);
    // The Redis nodes leave (each took a replica role or is empty: del-node forgets it).
    for r in redis_nodes {
        redis_cli(&["--cluster", "del-node", &format!("127.0.0.1:{}", a.port), &id_of(r)]);
    }
    let check = check_at(&format!("127.0.0.1:{}", a.port));
    assert!(!check.contains(&format!(":{}", redis_nodes[0])), "{check}");
}

/// How many slots the node at `port` says it has.
fn slots_on(port: u16) -> usize {
    topology_line(port)
        .split(' ')
        .skip(8)
        .map(|r| match r.split_once('-') {
            Some((x, y)) => y.parse::<usize>().unwrap_or(0) - x.parse::<usize>().unwrap_or(0) + 1,
            None => 1,
        })
        .sum()
}

fn topology_line(port: u16) -> String {
    let mut c = RawConn::connect(port);
    let nodes = String::from_utf8_lossy(&c.call(&[b"CLUSTER", b"NODES"])).into_owned();
    nodes.lines().find(|l| l.contains("myself")).unwrap_or_default().to_string()
}

/// `redis-cli --cluster fix` closes a slot left open by an interrupted migration and
/// covers a slot nobody serves.
#[test]
fn redis_cli_fix_repairs_open_and_uncovered_slots() {
    let c = Cluster::start(3, 0, "", "");
    c.wait_settled(3, 0);
    let (from, to) = (c.ports[0], c.ports[1]);
    let mut f = RawConn::connect(from);
    let mut t = RawConn::connect(to);
    assert_eq!(t.call(&[b"CLUSTER", b"SETSLOT", b"100", b"IMPORTING", id_of(from).as_bytes()]), b"+OK\r\n".to_vec());
    assert_eq!(f.call(&[b"CLUSTER", b"SETSLOT", b"100", b"MIGRATING", id_of(to).as_bytes()]), b"+OK\r\n".to_vec());
    // Keys in flight: a script's key missing on the source is asked for at the target,
    // which serves it after ASKING.
    let key =
        (0..100_000).map(|i| format!("m{i}")).find(|k| vermilion::cluster::slot::key_slot(k.as_bytes()) == 100).expect("a key of slot 100");
    let eval: [&[u8]; 4] = [b"EVAL", b"return redis.call('set', KEYS[1], 'x')", b"1", key.as_bytes()];
    assert_eq!(f.call(&eval), format!("-ASK 100 127.0.0.1:{to}\r\n").into_bytes());
    assert!(t.call(&eval).starts_with(b"-MOVED 100"), "without ASKING the target redirects");
    assert_eq!(t.call(&[b"ASKING"]), b"+OK\r\n".to_vec());
    assert_eq!(t.call(&eval), b"+OK\r\n".to_vec());
    assert_eq!(t.call(&[b"DEL", key.as_bytes()]), format!("-MOVED 100 127.0.0.1:{from}\r\n").into_bytes(), "ASKING lasts one command");
    assert_eq!(f.call(&[b"CLUSTER", b"DELSLOTS", b"200"]), b"+OK\r\n".to_vec());
    let out = Command::new("redis-cli").args(["--cluster", "check", &c.addr(0)]).output().expect("redis-cli");
    assert!(!out.status.success(), "check sees the damage");
    // Covering a slot asks even with --cluster-yes: the answer comes on stdin.
    let mut fix = Command::new("redis-cli")
        .args(["--cluster", "fix", &c.addr(0), "--cluster-yes"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("redis-cli");
    {
        use std::io::Write;
        let mut stdin = fix.stdin.take().expect("stdin");
        let _ = stdin.write_all(b"yes\nyes\nyes\n");
    }
    let out = fix.wait_with_output().expect("fix");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    c.check();
    // An empty master joins and `rebalance --cluster-use-empty-masters` gives it slots.
    let extra = Extra::start(&common::vermilion_bin());
    redis_cli(&["--cluster", "add-node", &format!("127.0.0.1:{}", extra.port), &c.addr(0)]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !c.ports.iter().chain([&extra.port]).all(|&p| {
        let mut conn = RawConn::connect(p);
        let info = String::from_utf8_lossy(&conn.call(&[b"CLUSTER", b"INFO"])).into_owned();
        info.contains("cluster_known_nodes:4\r\n") && info.contains("cluster_state:ok")
    }) {
        assert!(Instant::now() < deadline, "the new node did not join");
        std::thread::sleep(Duration::from_millis(100));
    }
    check_at(&format!("127.0.0.1:{}", extra.port));
    redis_cli(&["--cluster", "rebalance", &c.addr(0), "--cluster-use-empty-masters", "--cluster-yes"]);
    let check = check_at(&format!("127.0.0.1:{}", extra.port));
    assert!(slots_on(extra.port) > 3000, "{check}");
    let info = redis_cli(&["--cluster", "info", &c.addr(0)]);
    assert!(info.contains("[OK] 1 keys in 4 masters.") || info.contains("keys in 4 masters"), "{info}");
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
