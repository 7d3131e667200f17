//! Cluster test support: clusters started by `scripts/cluster/start.sh` (the real
//! `redis-cli --cluster create`), nodes started alone for `add-node`, and readers of CLUSTER
//! NODES. Used by `tests/cluster_mode.rs` and `tests/cluster_failover.rs`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use super::{free_port, RawConn};
use redis::Commands;

/// A cluster started by the script; stopped (SHUTDOWN NOSAVE, then kill -9) when dropped.
pub struct Cluster {
    pub ports: Vec<u16>,
    pub dir: tempfile::TempDir,
}

pub fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/cluster/start.sh")
}

pub fn pid_of(port: u16) -> Option<u32> {
    let out = Command::new("redis-cli").args(["-p", &port.to_string(), "info", "server"]).output().ok()?;
    String::from_utf8_lossy(&out.stdout).lines().find_map(|l| l.strip_prefix("process_id:")).and_then(|p| p.trim().parse().ok())
}

impl Cluster {
    /// `redis`: 1-based positions run by redis-server.
    pub fn start(nodes: usize, replicas: usize, redis: &str, extra: &str) -> Cluster {
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
            .env("BIN", super::vermilion_bin())
            .env("TIMEOUT", "2000")
            .env("EXTRA", extra)
            .output()
            .expect("run start.sh");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "start.sh failed: {text}\n{}", String::from_utf8_lossy(&out.stderr));
        assert!(text.contains("[OK] All 16384 slots covered."), "{text}");
        Cluster { ports, dir }
    }

    pub fn addr(&self, i: usize) -> String {
        format!("127.0.0.1:{}", self.ports[i])
    }

    pub fn nodes(&self, i: usize) -> String {
        let mut c = RawConn::connect(self.ports[i]);
        String::from_utf8_lossy(&c.call(&[b"CLUSTER", b"NODES"])).into_owned()
    }

    /// Waits until every node sees `masters` masters with slots and `replicas` replicas, all
    /// connected, and says the cluster is ok.
    pub fn wait_settled(&self, masters: usize, replicas: usize) {
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

    pub fn client(&self) -> redis::cluster::ClusterConnection {
        self.client_without(&[])
    }

    /// A cluster client that starts from every node but `dead`.
    pub fn client_without(&self, dead: &[usize]) -> redis::cluster::ClusterConnection {
        let urls: Vec<String> =
            self.ports.iter().enumerate().filter(|(i, _)| !dead.contains(i)).map(|(_, p)| format!("redis://127.0.0.1:{p}/")).collect();
        redis::cluster::ClusterClient::new(urls).expect("cluster client").get_connection().expect("cluster connection")
    }

    /// `redis-cli --cluster check` until it passes (gossip spreads a change within a few
    /// pings), at most 20 s.
    pub fn check(&self) -> String {
        check_at(&self.addr(0))
    }

    pub fn dbsize(&self, i: usize) -> i64 {
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

pub fn check_at(addr: &str) -> String {
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
pub fn write_and_read(c: &Cluster, n: usize, masters: &[usize], replicas: &[usize]) {
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

pub fn roles(c: &Cluster) -> (Vec<usize>, Vec<usize>) {
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

/// The client port of the master of the replica at index `replica`.
pub fn master_port_of(c: &Cluster, replica: usize) -> u16 {
    let t = topology(c, replica);
    let me = t.iter().find(|x| x.0 == c.ports[replica]).and_then(|x| x.2.clone()).expect("a replica");
    t.iter().find(|x| x.1 == me).expect("its master").0
}

/// Whether a CLUSTER NODES line's slot ranges hold `slot`.
pub fn owns(line: &str, slot: u16) -> bool {
    line.split(' ').skip(8).any(|r| match r.split_once('-') {
        Some((a, b)) if !a.starts_with('[') => a.parse::<u16>().is_ok_and(|a| a <= slot) && b.parse::<u16>().is_ok_and(|b| slot <= b),
        _ => r.parse::<u16>() == Ok(slot),
    })
}

/// The node ids by port, and each replica's master id, from one node's CLUSTER NODES.
pub fn topology(c: &Cluster, from: usize) -> Vec<(u16, String, Option<String>, bool)> {
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

pub fn index_of(c: &Cluster, port: u16) -> usize {
    c.ports.iter().position(|&p| p == port).expect("a port of the cluster")
}

/// A node started alone (cluster mode, no slots), as `redis-cli --cluster add-node` wants.
pub struct Extra {
    pub port: u16,
    child: std::process::Child,
    _dir: tempfile::TempDir,
}

impl Extra {
    pub fn start(bin: &Path) -> Extra {
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
        super::wait_listening(port, Duration::from_secs(10));
        Extra { port, child, _dir: dir }
    }
}

impl Drop for Extra {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn redis_cli(args: &[&str]) -> String {
    let out = Command::new("redis-cli").args(args).output().expect("redis-cli");
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "redis-cli {args:?} failed:\n{text}");
    text
}

pub fn id_of(port: u16) -> String {
    let mut c = RawConn::connect(port);
    let reply = c.call(&[b"CLUSTER", b"MYID"]);
    String::from_utf8_lossy(&reply).lines().nth(1).unwrap_or_default().to_string()
}

/// How many slots the node at `port` says it has.
pub fn slots_on(port: u16) -> usize {
    topology_line(port)
        .split(' ')
        .skip(8)
        .map(|r| match r.split_once('-') {
            Some((x, y)) => y.parse::<usize>().unwrap_or(0) - x.parse::<usize>().unwrap_or(0) + 1,
            None => 1,
        })
        .sum()
}

pub fn topology_line(port: u16) -> String {
    let mut c = RawConn::connect(port);
    let nodes = String::from_utf8_lossy(&c.call(&[b"CLUSTER", b"NODES"])).into_owned();
    nodes.lines().find(|l| l.contains("myself")).unwrap_or_default().to_string()
}
