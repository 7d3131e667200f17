//! The unmodified redis-sentinel (Debian's package, Redis 7.0) driving Vermilion: three
//! sentinels monitor a Vermilion primary with two Vermilion replicas. They discover the
//! replicas and each other; after kill -9 of the primary they promote a replica and repoint
//! the other; the old primary, restarted, is turned into a replica and its config file
//! rewritten; a client that finds the primary through the sentinels (the `redis` crate's
//! sentinel support) keeps writing, and with `min-replicas-to-write 1` and `WAIT 1 0` after
//! each write no acknowledged write is lost. A second scenario: a sentinel stops a busy
//! script on the primary with SCRIPT KILL.

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::probe::{digest, field, info};
use common::{free_port, wait_listening, Daemon, Server};

const MASTER: &str = "mymaster";

/// A config file for a Vermilion node (CONFIG REWRITE, as sentinels send it, needs one).
fn node_config(dir: &Path, name: &str, lines: &str) -> PathBuf {
    let path = dir.join(format!("{name}.conf"));
    std::fs::write(&path, format!("appendonly yes\nmin-replicas-to-write 1\nmin-replicas-max-lag 10\n{lines}")).unwrap();
    path
}

fn start_node(config: &Path) -> Server {
    Server::start(&[config.to_str().unwrap()])
}

/// A redis-sentinel monitoring `primary_port` with `quorum`, fast timeouts.
fn sentinel(dir: &Path, primary_port: u16, quorum: u32) -> (Daemon, u16) {
    let port = free_port();
    let work = dir.join(format!("sentinel-{port}"));
    std::fs::create_dir_all(&work).unwrap();
    let conf = work.join("sentinel.conf");
    std::fs::write(
        &conf,
        format!(
            "port {port}\nbind 127.0.0.1\ndir {}\nlogfile {}\nsentinel monitor {MASTER} 127.0.0.1 {primary_port} {quorum}\n\
             sentinel down-after-milliseconds {MASTER} 1000\nsentinel failover-timeout {MASTER} 10000\n\
             sentinel parallel-syncs {MASTER} 1\n",
            work.display(),
            work.join("sentinel.log").display()
        ),
    )
    .unwrap();
    let d = Daemon::spawn("redis-sentinel", &[conf.to_str().unwrap()]);
    wait_listening(port, Duration::from_secs(10));
    (d, port)
}

fn sentinel_conn(port: u16) -> redis::Connection {
    redis::Client::open(format!("redis://127.0.0.1:{port}/")).and_then(|c| c.get_connection()).expect("connect to sentinel")
}

/// SENTINEL MASTER's flat field list as pairs.
fn master_fields(port: u16) -> Vec<(String, String)> {
    let flat: Vec<String> = redis::cmd("SENTINEL").arg("MASTER").arg(MASTER).query(&mut sentinel_conn(port)).expect("SENTINEL MASTER");
    flat.chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect()
}

fn master_field(port: u16, name: &str) -> String {
    master_fields(port).into_iter().find(|(k, _)| k == name).map(|(_, v)| v).unwrap_or_default()
}

fn master_port_by_name(port: u16) -> u16 {
    let addr: Vec<String> =
        redis::cmd("SENTINEL").arg("GET-MASTER-ADDR-BY-NAME").arg(MASTER).query(&mut sentinel_conn(port)).expect("GET-MASTER-ADDR");
    addr[1].parse().unwrap()
}

/// The primary every sentinel names, when they agree.
fn agreed_primary(sentinels: &[u16]) -> Option<u16> {
    let first = master_port_by_name(sentinels[0]);
    sentinels[1..].iter().all(|&s| master_port_by_name(s) == first).then_some(first)
}

fn wait_for(what: &str, timeout: Duration, cond: impl FnMut() -> bool) {
    wait_or_explain(what, timeout, cond, String::new);
}

/// `wait_for`, printing `explain()` (logs, INFO) when the time runs out.
fn wait_or_explain(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool, explain: impl Fn() -> String) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        if Instant::now() >= deadline {
            panic!("{what}: not within {timeout:?}\n{}", explain());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The sentinels' logs and each node's INFO replication, for a failure message.
fn explain(dir: &Path, nodes: &[&Server]) -> String {
    let mut out = String::new();
    for s in nodes {
        let text = redis::Client::open(format!("redis://127.0.0.1:{}/", s.port))
            .and_then(|c| c.get_connection())
            .and_then(|mut c| redis::cmd("INFO").arg("replication").query::<String>(&mut c))
            .unwrap_or_else(|e| e.to_string());
        out.push_str(&format!("--- node {} INFO replication\n{text}\n", s.port));
    }
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if let Ok(log) = std::fs::read_to_string(entry.path().join("sentinel.log")) {
            out.push_str(&format!("--- {}\n{log}\n", entry.path().display()));
        }
    }
    out
}

fn follows(s: &Server, primary_port: u16) -> bool {
    let Ok(mut c) = redis::Client::open(format!("redis://127.0.0.1:{}/", s.port)).and_then(|c| c.get_connection()) else {
        return false;
    };
    let Ok(text) = redis::cmd("INFO").arg("replication").query::<String>(&mut c) else { return false };
    field(&text, "master_port").as_deref() == Some(primary_port.to_string().as_str())
        && field(&text, "master_link_status").as_deref() == Some("up")
}

/// What the writer thread did: keys acknowledged (SET OK and WAIT 1 0 ≥ 1), and when the
/// first acknowledged write after the kill happened.
#[derive(Default)]
struct Writes {
    acked: Vec<u64>,
    errors: u64,
    first_after: Option<Instant>,
}

fn writer(sentinels: Vec<u16>, stop: Arc<AtomicBool>, killed: Arc<Mutex<Option<Instant>>>, out: Arc<Mutex<Writes>>) {
    let urls: Vec<String> = sentinels.iter().map(|p| format!("redis://127.0.0.1:{p}/")).collect();
    let mut client =
        redis::sentinel::SentinelClient::build(urls, MASTER, None, redis::sentinel::SentinelServerType::Master).expect("SentinelClient");
    let mut conn: Option<redis::Connection> = None;
    let mut i = 0u64;
    while !stop.load(Ordering::Acquire) {
        if conn.is_none() {
            conn = client.get_connection().ok();
            if let Some(c) = conn.as_mut() {
                let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
            }
        }
        let Some(c) = conn.as_mut() else {
            out.lock().unwrap().errors += 1;
            std::thread::sleep(Duration::from_millis(20));
            continue;
        };
        i += 1;
        let set: redis::RedisResult<()> = redis::cmd("SET").arg(format!("w:{i}")).arg(i).query(c);
        let waited: redis::RedisResult<i64> = match set {
            Ok(()) => redis::cmd("WAIT").arg(1).arg(0).query(c),
            Err(e) => Err(e),
        };
        match waited {
            Ok(n) if n >= 1 => {
                let mut w = out.lock().unwrap();
                w.acked.push(i);
                if w.first_after.is_none() && killed.lock().unwrap().is_some() {
                    w.first_after = Some(Instant::now());
                }
            }
            Ok(_) => out.lock().unwrap().errors += 1,
            Err(_) => {
                out.lock().unwrap().errors += 1;
                conn = None;
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

#[test]
fn sentinels_promote_a_replica_after_kill_9_repoint_the_rest_and_lose_no_acknowledged_write() {
    let files = tempfile::tempdir().unwrap();
    let p_conf = node_config(files.path(), "p", "");
    let mut p = start_node(&p_conf);
    let a = start_node(&node_config(files.path(), "a", &format!("replicaof 127.0.0.1 {}\n", p.port)));
    let b = start_node(&node_config(files.path(), "b", &format!("replicaof 127.0.0.1 {}\n", p.port)));
    wait_for("replicas up", Duration::from_secs(20), || follows(&a, p.port) && follows(&b, p.port));
    let sentinels: Vec<(Daemon, u16)> = (0..3).map(|_| sentinel(files.path(), p.port, 2)).collect();
    let ports: Vec<u16> = sentinels.iter().map(|(_, port)| *port).collect();

    // Discovery: the replicas through INFO, the other sentinels through __sentinel__:hello.
    wait_for("discovery", Duration::from_secs(30), || {
        ports.iter().all(|&s| master_field(s, "num-slaves") == "2" && master_field(s, "num-other-sentinels") == "2")
    });
    let clients: String = redis::cmd("CLIENT").arg("LIST").query(&mut p.client()).unwrap();
    assert!(clients.matches("name=sentinel-").count() >= 6, "sentinels name their connections (CLIENT SETNAME):\n{clients}");
    let channels: Vec<String> = redis::cmd("PUBSUB").arg("CHANNELS").query(&mut p.client()).unwrap();
    assert_eq!(channels, vec!["__sentinel__:hello".to_string()]);

    let stop = Arc::new(AtomicBool::new(false));
    let killed = Arc::new(Mutex::new(None));
    let writes = Arc::new(Mutex::new(Writes::default()));
    let w = {
        let (ports, stop, killed, writes) = (ports.clone(), stop.clone(), killed.clone(), writes.clone());
        std::thread::spawn(move || writer(ports, stop, killed, writes))
    };
    wait_for("writes before the kill", Duration::from_secs(20), || writes.lock().unwrap().acked.len() >= 200);

    let old_port = p.port;
    p.kill9();
    let t_kill = Instant::now();
    *killed.lock().unwrap() = Some(t_kill);
    wait_for("a new primary", Duration::from_secs(60), || agreed_primary(&ports).is_some_and(|m| m != old_port));
    let t_switch = t_kill.elapsed();
    // With a 1 s down-after, a loaded machine can make the sentinels fail over a second
    // time (the promoted replica slow to answer one PING): every check below follows the
    // primary the sentinels agree on at that moment, not the first one chosen.
    let replicas = [&a, &b];
    let repointed = || {
        agreed_primary(&ports)
            .is_some_and(|m| replicas.iter().any(|r| r.port == m) && replicas.iter().filter(|r| r.port != m).all(|r| follows(r, m)))
    };
    wait_or_explain("the other replica repointed", Duration::from_secs(30), repointed, || explain(files.path(), &[&a, &b]));
    wait_for("a write through the new primary", Duration::from_secs(30), || writes.lock().unwrap().first_after.is_some());
    let first_write = writes.lock().unwrap().first_after.unwrap() - t_kill;
    println!("kill -9 -> sentinels switch: {t_switch:?}; kill -9 -> first acknowledged write: {first_write:?}");

    // The old primary comes back on its port with its own config file: the sentinels make
    // it a replica of the new primary and rewrite its file.
    p.restart_same_port(&[p_conf.to_str().unwrap()]);
    assert_eq!(p.port, old_port);
    wait_or_explain(
        "the old primary follows the new one",
        Duration::from_secs(60),
        || repointed() && agreed_primary(&ports).is_some_and(|m| follows(&p, m)),
        || explain(files.path(), &[&p, &a, &b]),
    );
    let new_port = agreed_primary(&ports).expect("the sentinels agree");
    let (new, other) = if new_port == a.port { (&a, &b) } else { (&b, &a) };
    assert_eq!(new.port, new_port, "the sentinels chose a replica");
    let text = std::fs::read_to_string(&p_conf).unwrap();
    assert!(text.contains(&format!("replicaof 127.0.0.1 {new_port}")), "config file not rewritten:\n{text}");
    let other_conf = std::fs::read_to_string(files.path().join(if other.port == a.port { "a.conf" } else { "b.conf" })).unwrap();
    assert!(other_conf.contains(&format!("replicaof 127.0.0.1 {new_port}")), "repointed replica's file:\n{other_conf}");
    wait_for("writes after the rejoin", Duration::from_secs(20), || {
        let w = writes.lock().unwrap();
        w.acked.len() >= 400 && w.first_after.is_some()
    });
    stop.store(true, Ordering::Release);
    w.join().unwrap();

    // Every acknowledged write is on the new primary, and every node holds the same data.
    let acked = writes.lock().unwrap().acked.clone();
    let mut c = new.client();
    let mut lost = Vec::new();
    for i in &acked {
        let v: Option<u64> = redis::cmd("GET").arg(format!("w:{i}")).query(&mut c).unwrap();
        if v != Some(*i) {
            lost.push(*i);
        }
    }
    assert!(lost.is_empty(), "{} of {} acknowledged writes lost: {:?}", lost.len(), acked.len(), &lost[..lost.len().min(20)]);
    let want = digest(&mut c);
    wait_for("every node converged", Duration::from_secs(30), || {
        [&p, other].iter().all(|s| {
            let t = info(&mut s.client(), "replication");
            field(&t, "slave_repl_offset") == field(&info(&mut new.client(), "replication"), "master_repl_offset")
        })
    });
    for s in [&p, other] {
        assert_eq!(digest(&mut s.client()), want, "port {} diverged", s.port);
    }
    println!("{} writes acknowledged, {} attempts failed or unacknowledged", acked.len(), writes.lock().unwrap().errors);
}

#[test]
fn a_sentinel_stops_a_busy_script_on_the_primary_with_script_kill() {
    let files = tempfile::tempdir().unwrap();
    let p = start_node(&node_config(files.path(), "p", "busy-reply-threshold 100\nmin-replicas-to-write 0\n"));
    // One sentinel with quorum 2 can mark the primary down but never fail it over.
    let (_s, port) = sentinel(files.path(), p.port, 2);
    wait_for("the sentinel connected", Duration::from_secs(20), || master_field(port, "role-reported") == "master");
    let mut c = p.client();
    let started = Instant::now();
    let r: redis::RedisResult<()> = redis::cmd("EVAL").arg("local i = 0 while true do i = i + 1 end").arg(0).query(&mut c);
    let err = r.expect_err("the script ran forever").to_string();
    assert!(err.contains("Script killed by user with SCRIPT KILL"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(30));
    let pong: String = redis::cmd("PING").query(&mut c).unwrap();
    assert_eq!(pong, "PONG");
    let stats = info(&mut p.client(), "replication");
    assert_eq!(field(&stats, "role").as_deref(), Some("master"));
}
