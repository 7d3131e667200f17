//! Cluster mode end to end: clusters started by `scripts/cluster/start.sh` (the real
//! `redis-cli --cluster create`), pure and mixed with redis-server nodes, checked with
//! `redis-cli --cluster check`, written and read through the `redis` crate's cluster client;
//! resharding (add-node, reshard, rebalance, del-node, fix); the redirection and CLUSTER
//! errors byte for byte against redis-server. Failover is `tests/cluster_failover.rs`.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::cluster::*;
use common::{free_port, RawConn, Server};
use redis::Commands;

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
