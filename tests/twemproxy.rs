//! The unmodified twemproxy (Debian's nutcracker 0.5.0) in front of three Vermilion
//! primaries, ketama hashing, Redis protocol: the commands it supports give the bytes they
//! give in front of three redis-server 7.0 primaries, keys land on the same shards, scripts
//! run on the shard of their first key, and redis-benchmark runs through it.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{free_port, wait_listening, Daemon, RawConn, Server};

/// A nutcracker pool over `backends`, named s1..sN so both pools hash keys alike.
fn proxy(dir: &Path, backends: &[&Server]) -> (Daemon, u16) {
    let port = free_port();
    let servers: String = backends.iter().enumerate().map(|(i, s)| format!("   - 127.0.0.1:{}:1 s{}\n", s.port, i + 1)).collect();
    let conf = dir.join(format!("nutcracker-{port}.yml"));
    std::fs::write(
        &conf,
        format!(
            "pool:\n  listen: 127.0.0.1:{port}\n  hash: fnv1a_64\n  distribution: ketama\n  redis: true\n  \
             auto_eject_hosts: false\n  timeout: 5000\n  servers:\n{servers}"
        ),
    )
    .unwrap();
    let stats = free_port().to_string();
    let log = dir.join(format!("nutcracker-{port}.log"));
    let pid = dir.join(format!("nutcracker-{port}.pid"));
    let d = Daemon::spawn(
        "nutcracker",
        &["-c", conf.to_str().unwrap(), "-s", &stats, "-o", log.to_str().unwrap(), "-p", pid.to_str().unwrap()],
    );
    wait_listening(port, Duration::from_secs(10));
    (d, port)
}

const SCRIPT: &str = "redis.call('SET', KEYS[1], ARGV[1]) return redis.call('INCRBY', KEYS[2] or KEYS[1] .. ':n', 2)";

fn workload() -> Vec<Vec<String>> {
    let mut cmds: Vec<Vec<String>> = Vec::new();
    let c = |s: &str| s.split(' ').map(str::to_string).collect::<Vec<_>>();
    for i in 0..40 {
        cmds.push(c(&format!("SET k{i} v{i}")));
        cmds.push(c(&format!("INCRBY n{i} {i}")));
        cmds.push(c(&format!("HSET h{i} f1 a f2 {i}")));
        cmds.push(c(&format!("RPUSH l{i} a b {i}")));
        cmds.push(c(&format!("SADD s{i} 3 1 2")));
        cmds.push(c(&format!("ZADD z{i} 1 a 2 b {i} c")));
    }
    for i in 0..40 {
        cmds.push(c(&format!("GET k{i}")));
        cmds.push(c(&format!("HGETALL h{i}")));
        cmds.push(c(&format!("LRANGE l{i} 0 -1")));
        // Integer sets come back in Redis's intset order (ascending).
        cmds.push(c(&format!("SMEMBERS s{i}")));
        cmds.push(c(&format!("SCARD s{i}")));
        cmds.push(c(&format!("SMISMEMBER s{i} 1 2 3 4")));
        cmds.push(c(&format!("ZRANGE z{i} 0 -1 WITHSCORES")));
        cmds.push(c(&format!("EXPIRE k{i} 1000")));
        cmds.push(c(&format!("TTL k{i}")));
        cmds.push(c(&format!("TYPE z{i}")));
    }
    // Multi-key commands the proxy splits by shard and joins.
    cmds.push(c("MSET m1 a m2 b m3 c m4 d m5 e m6 f"));
    cmds.push(c("MGET m1 m2 m3 m4 m5 m6 nope k1 k2"));
    cmds.push(c("EXISTS m1 m2 nope k3"));
    cmds.push(c("DEL m1 m2 m3 nope"));
    cmds.push(c("MGET m1 m2 m3 m4"));
    // Scripts run on the shard of their first key; EVALSHA finds the body EVAL cached there.
    for i in 0..10 {
        let mut eval = vec!["EVAL".to_string(), SCRIPT.to_string(), "1".into(), format!("sk{i}"), format!("x{i}")];
        cmds.push(eval.clone());
        eval[0] = "EVALSHA".into();
        eval[1] = sha1_hex(SCRIPT);
        cmds.push(eval);
    }
    cmds.push(vec!["EVALSHA".into(), "ffffffffffffffffffffffffffffffffffffffff".into(), "1".into(), "k1".into()]);
    cmds.push(vec!["EVAL".into(), "return redis.call('GET', KEYS[1])".into(), "1".into(), "k7".into()]);
    cmds.push(vec![
        "EVAL".into(),
        "return {KEYS[1], ARGV[1], redis.call('TYPE', KEYS[1]).ok}".into(),
        "1".into(),
        "h3".into(),
        "arg".into(),
    ]);
    cmds.push(vec!["EVAL".into(), "return redis.call('NOSUCH')".into(), "1".into(), "k1".into()]);
    cmds.push(c("PING"));
    cmds
}

fn sha1_hex(s: &str) -> String {
    vermilion::scripting::sha1_hex(s.as_bytes())
}

fn keys_of(cmds: &[Vec<String>]) -> Vec<String> {
    let mut keys: Vec<String> = cmds
        .iter()
        .filter(|c| !["EVAL", "EVALSHA", "PING", "MSET", "MGET", "EXISTS", "DEL"].contains(&c[0].as_str()))
        .map(|c| c[1].clone())
        .collect();
    keys.extend((0..10).flat_map(|i| [format!("sk{i}"), format!("sk{i}:n")]));
    keys.extend(["m4", "m5", "m6"].map(String::from));
    keys.sort();
    keys.dedup();
    keys
}

/// Which backend holds `key` (its index), or None.
fn shard_of(backends: &[&Server], key: &str) -> Option<usize> {
    backends.iter().position(|s| s.raw().call(&[b"EXISTS", key.as_bytes()]) == b":1\r\n")
}

#[test]
fn the_proxys_commands_and_scripts_give_redis_bytes_on_the_same_shards() {
    let dir = tempfile::tempdir().unwrap();
    let v: Vec<Server> = (0..3).map(|_| Server::start(&[])).collect();
    let r: Vec<Server> = (0..3).map(|_| Server::start_redis(&[])).collect();
    let v_refs: Vec<&Server> = v.iter().collect();
    let r_refs: Vec<&Server> = r.iter().collect();
    let (_vp, v_port) = proxy(dir.path(), &v_refs);
    let (_rp, r_port) = proxy(dir.path(), &r_refs);
    let mut via_v = RawConn::connect(v_port);
    let mut via_r = RawConn::connect(r_port);
    let cmds = workload();
    for cmd in &cmds {
        let args: Vec<&[u8]> = cmd.iter().map(|a| a.as_bytes()).collect();
        let got = via_v.call(&args);
        let want = via_r.call(&args);
        assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(&want), "{cmd:?} through the proxy");
    }
    let mut spread = [0usize; 3];
    for key in keys_of(&cmds) {
        let on_v = shard_of(&v_refs, &key);
        assert_eq!(on_v, shard_of(&r_refs, &key), "key {key} on another shard");
        if let Some(i) = on_v {
            spread[i] += 1;
        }
    }
    assert!(spread.iter().all(|&n| n > 0), "ketama spread the keys over all three: {spread:?}");
    // A script's keys stay on its first key's shard (KEYS[1] .. ':n' was written there).
    for i in 0..10 {
        let home = shard_of(&v_refs, &format!("sk{i}"));
        assert!(home.is_some());
        assert_eq!(shard_of(&v_refs, &format!("sk{i}:n")), home);
    }
}

#[test]
fn redis_benchmark_runs_through_the_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let v: Vec<Server> = (0..3).map(|_| Server::start(&[])).collect();
    let refs: Vec<&Server> = v.iter().collect();
    let (_p, port) = proxy(dir.path(), &refs);
    let out = Command::new("redis-benchmark")
        .args(["-p", &port.to_string(), "-t", "set,get,incr,lpush,sadd,hset", "-n", "5000", "-c", "20", "-r", "1000", "-q"])
        .output()
        .expect("redis-benchmark");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "redis-benchmark failed: {text}{}", String::from_utf8_lossy(&out.stderr));
    for test in ["SET", "GET", "INCR", "LPUSH", "SADD", "HSET"] {
        // -q prints progress lines ended by \r, then the result.
        let line = text
            .split(['\r', '\n'])
            .find(|l| l.trim_start().starts_with(&format!("{test}:")) && l.contains("requests per second"))
            .unwrap_or_else(|| panic!("no {test} result in {text}"));
        let rps: f64 = line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).unwrap_or(0.0);
        assert!(rps > 0.0, "{line}");
    }
    // The keys went through the proxy to all three primaries.
    let total: i64 = v.iter().map(|s| redis::cmd("DBSIZE").query::<i64>(&mut s.client()).unwrap()).sum();
    assert!(total > 3, "{total} keys");
    assert!(v.iter().all(|s| redis::cmd("DBSIZE").query::<i64>(&mut s.client()).unwrap() > 0));
}
