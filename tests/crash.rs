//! Crash recovery and replay determinism with the real binary:
//! - kill -9 at random moments under load from many clients (`appendfsync always`), then a
//!   restart: every acknowledged write is there and no script or transaction is half there.
//!   `VERMILION_CRASH_CYCLES` sets the number of cycles (default 50; thousands in long mode).
//! - a random workload of scripts that read unordered collections, use math.random, expiring
//!   keys and TTL-dependent logic: the dataset digest is the same after a restart, after a
//!   rewrite, and after mixing both.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Rng, Server};
use redis::Connection;

fn seed() -> u64 {
    std::env::var("VERMILION_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1) | 1)
}

const DET: &str = "redis.call('incr', KEYS[1]) for i = 1, 3000 do end redis.call('incr', KEYS[2]) return 1";
const RANDOM_DIRTY: &str = "redis.call('time') redis.call('incr', KEYS[1]) return redis.call('incr', KEYS[2])";

/// What one client saw acknowledged.
#[derive(Default, Debug, Clone)]
struct Acked {
    n: i64,
    list: i64,
    det: i64,
    random: i64,
    multi: i64,
}

fn client_load(port: u16, id: usize, stop: Arc<AtomicBool>, det_sha: String) -> Acked {
    let mut acked = Acked::default();
    let Ok(mut c) = redis::Client::open(format!("redis://127.0.0.1:{port}/")).and_then(|c| c.get_connection()) else {
        return acked;
    };
    let k = |name: &str| format!("c{id}:{name}");
    // The list holds 0, 1, 2... across cycles: continue from what survived.
    let Ok(mut next) = redis::cmd("LLEN").arg(k("list")).query::<i64>(&mut c) else {
        return acked;
    };
    let mut i: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let step: redis::RedisResult<()> = (|| {
            let n: i64 = redis::cmd("INCR").arg(k("n")).query(&mut c)?;
            acked.n = acked.n.max(n);
            let len: i64 = redis::cmd("RPUSH").arg(k("list")).arg(next).query(&mut c)?;
            next += 1;
            acked.list = len;
            let mut eval = if i.is_multiple_of(2) { redis::cmd("EVAL") } else { redis::cmd("EVALSHA") };
            eval.arg(if i.is_multiple_of(2) { DET } else { det_sha.as_str() }).arg(2).arg(k("a")).arg(k("b"));
            let _: i64 = eval.query(&mut c)?;
            acked.det += 1;
            let _: i64 = redis::cmd("EVAL").arg(RANDOM_DIRTY).arg(2).arg(k("ra")).arg(k("rb")).query(&mut c)?;
            acked.random += 1;
            let _: (i64, i64) = redis::pipe().atomic().cmd("INCR").arg(k("ma")).cmd("INCR").arg(k("mb")).query(&mut c)?;
            acked.multi += 1;
            if id == 0 && i.is_multiple_of(40) {
                let _: String = redis::cmd("BGREWRITEAOF").query(&mut c)?;
            }
            Ok(())
        })();
        if step.is_err() {
            break;
        }
    }
    acked
}

fn get(c: &mut Connection, key: &str) -> i64 {
    redis::cmd("GET").arg(key).query::<Option<i64>>(c).unwrap_or_else(|e| panic!("GET {key}: {e}")).unwrap_or(0)
}

fn verify(c: &mut Connection, id: usize, acked: &Acked, cycle: usize) {
    let k = |name: &str| format!("c{id}:{name}");
    let ctx = format!("cycle {cycle}, client {id}, acknowledged {acked:?}");
    assert!(get(c, &k("n")) >= acked.n, "INCR lost: {ctx}");
    let list: Vec<i64> = redis::cmd("LRANGE").arg(k("list")).arg(0).arg(-1).query(c).expect("lrange");
    assert!(list.len() as i64 >= acked.list, "RPUSH lost: {ctx}");
    assert!(list.iter().enumerate().all(|(i, v)| *v == i as i64), "list order: {list:?} {ctx}");
    let (a, b) = (get(c, &k("a")), get(c, &k("b")));
    assert_eq!(a, b, "half a deterministic script: {ctx}");
    assert!(a >= acked.det, "deterministic script lost: {ctx}");
    let (ra, rb) = (get(c, &k("ra")), get(c, &k("rb")));
    assert_eq!(ra, rb, "half a random-dirty script: {ctx}");
    assert!(ra >= acked.random, "random-dirty script lost: {ctx}");
    let (ma, mb) = (get(c, &k("ma")), get(c, &k("mb")));
    assert_eq!(ma, mb, "half a transaction: {ctx}");
    assert!(ma >= acked.multi, "transaction lost: {ctx}");
}

#[test]
fn kill_9_under_load_loses_no_acknowledged_write_and_leaves_nothing_half_done() {
    let cycles: usize = std::env::var("VERMILION_CRASH_CYCLES").ok().and_then(|s| s.parse().ok()).unwrap_or(50);
    let seed = seed();
    println!("seed {seed} (VERMILION_SEED to repeat), {cycles} cycles");
    let mut rng = Rng(seed);
    let args = ["--appendfsync", "always"];
    let mut s = Server::start(&args);
    let clients = 6;
    let mut totals: Vec<Acked> = vec![Acked::default(); clients];
    let det_sha: String = {
        let mut c = s.client();
        redis::cmd("SCRIPT").arg("LOAD").arg(DET).query(&mut c).expect("script load")
    };
    let started = Instant::now();
    for cycle in 0..cycles {
        let stop = Arc::new(AtomicBool::new(false));
        let handles: Vec<_> = (0..clients)
            .map(|id| {
                let (stop, sha, port) = (stop.clone(), det_sha.clone(), s.port);
                std::thread::spawn(move || client_load(port, id, stop, sha))
            })
            .collect();
        std::thread::sleep(Duration::from_millis(20 + rng.below(150)));
        s.kill9();
        stop.store(true, Ordering::Relaxed);
        let acked: Vec<Acked> = handles.into_iter().map(|h| h.join().expect("client thread")).collect();
        s.restart(&args);
        let mut c = s.client();
        for (id, a) in acked.iter().enumerate() {
            // Counters only grow: what this cycle saw acknowledged is the new floor.
            let t = &mut totals[id];
            t.n = t.n.max(a.n);
            t.list = t.list.max(a.list);
            t.det = if a.det > 0 { get(&mut c, &format!("c{id}:a")).max(t.det) } else { t.det };
            verify(&mut c, id, t, cycle);
            t.random = t.random.max(get(&mut c, &format!("c{id}:ra")));
            t.multi = t.multi.max(get(&mut c, &format!("c{id}:ma")));
        }
    }
    let ops: i64 = totals.iter().map(|t| t.n).sum();
    println!("{cycles} kill -9 cycles, {ops} client rounds acknowledged, {:.1} s", started.elapsed().as_secs_f64());
}

/// One random step of the determinism workload.
fn random_step(c: &mut Connection, rng: &mut Rng) {
    let j = rng.below(8);
    let r = rng.below(50);
    let cmd = match rng.below(12) {
        0 => redis::cmd("SADD").arg(format!("set{j}")).arg(format!("m{r}")).clone(),
        1 => redis::cmd("SREM").arg(format!("set{j}")).arg(format!("m{r}")).clone(),
        2 => redis::cmd("HSET").arg(format!("h{j}")).arg(format!("f{r}")).arg(r).clone(),
        3 => redis::cmd("SET").arg(format!("short{j}")).arg(r).arg("PX").arg(20 + rng.below(150)).clone(),
        4 => redis::cmd("SET").arg(format!("long{j}")).arg(r).arg("EX").arg(1000).clone(),
        5 => redis::cmd("EVAL")
            .arg("local m = redis.call('smembers', KEYS[1]) redis.call('set', KEYS[2], table.concat(m, ',')) return #m")
            .arg(2)
            .arg(format!("set{j}"))
            .arg(format!("derived{j}"))
            .clone(),
        6 => redis::cmd("EVAL").arg("local k = redis.call('keys', 'set*') redis.call('set', 'keylist', table.concat(k, ' ')) return #k").arg(0).clone(),
        7 => redis::cmd("EVAL")
            .arg("local f = redis.call('hkeys', KEYS[1]) local v = redis.call('hvals', KEYS[1]) redis.call('rpush', 'hlog', table.concat(f, ',') .. '=' .. table.concat(v, ',')) return 1")
            .arg(1)
            .arg(format!("h{j}"))
            .clone(),
        8 => redis::cmd("EVAL").arg("redis.call('set', KEYS[1], tostring(math.random()) .. ':' .. tostring(math.random(1000))) return 1").arg(1).arg(format!("rnd{j}")).clone(),
        9 => redis::cmd("EVAL")
            .arg("local t = redis.call('pttl', KEYS[1]) if t > 100 then redis.call('incr', 'ttl_hi') elseif t > 0 then redis.call('incr', 'ttl_lo') else redis.call('incr', 'ttl_none') end redis.call('rpush', 'exists_log', redis.call('exists', KEYS[1])) return t")
            .arg(1)
            .arg(format!("short{j}"))
            .clone(),
        10 => redis::cmd("EVAL").arg("local m = redis.call('spop', KEYS[1]) if m then redis.call('rpush', 'popped', m) end return 1").arg(1).arg(format!("set{j}")).clone(),
        _ => redis::cmd("EXPIRE").arg(format!("long{j}")).arg(500 + rng.below(500)).clone(),
    };
    let _: redis::RedisResult<redis::Value> = cmd.query(c);
}

/// Lets every short TTL run out, then touches every key so the expired ones are deleted
/// (and their DELs logged): the digest then depends on nothing but the data.
fn settle(c: &mut Connection) -> Snapshot {
    std::thread::sleep(Duration::from_millis(250));
    // KEYS hides expired keys without deleting them; active expiry deletes them (and logs
    // their DELs) soon: wait until DBSIZE, which counts them, agrees.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(c).expect("keys");
        let size: usize = redis::cmd("DBSIZE").query(c).expect("dbsize");
        if size == keys.len() {
            break;
        }
        assert!(Instant::now() < deadline, "expired keys never went away");
        std::thread::sleep(Duration::from_millis(20));
    }
    snapshot(c)
}

/// The dataset digest, and each key's own digest (to name the keys that differ).
#[derive(Debug, PartialEq)]
struct Snapshot {
    digest: String,
    keys: std::collections::BTreeMap<String, String>,
}

fn snapshot(c: &mut Connection) -> Snapshot {
    let digest: String = redis::cmd("DEBUG").arg("DIGEST").query(c).expect("digest");
    let mut names: Vec<String> = redis::cmd("KEYS").arg("*").query(c).expect("keys");
    if names.len() > 2000 {
        // Too many to list one by one: the dataset digest alone decides.
        names.clear();
    }
    let keys = names
        .into_iter()
        .map(|k| {
            let d: Vec<String> = redis::cmd("DEBUG").arg("DIGEST-VALUE").arg(&k).query(c).expect("digest-value");
            (k, d.concat())
        })
        .collect();
    Snapshot { digest, keys }
}

fn assert_same(after: Snapshot, before: &Snapshot, what: &str) {
    if after.digest != before.digest {
        let differ: Vec<&String> = before.keys.iter().filter(|(k, v)| after.keys.get(*k) != Some(v)).map(|(k, _)| k).collect();
        let extra: Vec<&String> = after.keys.keys().filter(|k| !before.keys.contains_key(*k)).collect();
        panic!("{what}: digest differs; keys that differ or are gone: {differ:?}; keys that appeared: {extra:?}");
    }
}

#[test]
fn replay_gives_the_same_digest_after_restarts_and_rewrites() {
    let seed = seed();
    println!("seed {seed} (VERMILION_SEED to repeat)");
    let mut rng = Rng(seed);
    let mut s = Server::start(&[]);
    for round in 0..4 {
        let mut c = s.client();
        let until = Instant::now() + Duration::from_millis(300);
        let mut steps = 0;
        while Instant::now() < until || steps < 300 {
            random_step(&mut c, &mut rng);
            steps += 1;
        }
        let before = settle(&mut c);
        assert_ne!(before.digest, "0".repeat(40));
        match round {
            // A clean shutdown, then kill -9 after a rewrite, then DEBUG RELOAD.
            0 => {
                let _: redis::RedisResult<()> = redis::cmd("SHUTDOWN").query(&mut c);
                assert!(s.wait_exit(Duration::from_secs(5)));
                s.restart(&[]);
            }
            1 => {
                let _: String = redis::cmd("BGREWRITEAOF").query(&mut c).expect("rewrite");
                for _ in 0..100 {
                    random_step(&mut c, &mut rng);
                }
                let before = settle(&mut c);
                let _: redis::RedisResult<()> = redis::cmd("SHUTDOWN").query(&mut c);
                assert!(s.wait_exit(Duration::from_secs(5)));
                s.restart(&[]);
                assert_same(snapshot(&mut s.client()), &before, &format!("round {round}: restart after a rewrite"));
                continue;
            }
            2 => {
                let _: () = redis::cmd("DEBUG").arg("RELOAD").query(&mut c).expect("reload");
            }
            _ => {
                let _: () = redis::cmd("DEBUG").arg("LOADAOF").query(&mut c).expect("loadaof");
            }
        }
        assert_same(snapshot(&mut s.client()), &before, &format!("round {round}"));
    }
}

/// A rewrite of a dataset large enough to take many slices, while clients keep changing
/// keys the walk has not reached yet (INCR, APPEND, RPUSH: replaying them twice would show),
/// renaming, deleting, moving, swapping databases and running scripts: base + new log must
/// load to exactly the dataset the clients see.
#[test]
fn a_rewrite_under_concurrent_writes_snapshots_the_moment_it_began() {
    let mut s = Server::start(&[]);
    let mut c = s.client();
    let n = 60_000;
    for chunk in (0..n).collect::<Vec<_>>().chunks(5_000) {
        let mut p = redis::pipe();
        for i in chunk {
            p.cmd("SET").arg(format!("k{i}")).arg(i).ignore();
            if i % 10 == 0 {
                p.cmd("RPUSH").arg(format!("l{i}")).arg("a").ignore();
                p.cmd("HSET").arg(format!("h{i}")).arg("f").arg(i).ignore();
            }
        }
        let _: () = p.query(&mut c).expect("load");
    }
    let _: () = redis::cmd("SELECT").arg(2).query(&mut c).expect("select");
    let _: () = redis::cmd("SET").arg("in2").arg("x").query(&mut c).expect("set");
    let _: () = redis::cmd("SELECT").arg(0).query(&mut c).expect("select");
    let _: String = redis::cmd("BGREWRITEAOF").query(&mut c).expect("rewrite");
    let mut rng = Rng(seed());
    let mut rounds = 0;
    while rounds < 400 || redis::cmd("INFO").arg("persistence").query::<String>(&mut c).expect("info").contains("aof_rewrite_in_progress:1")
    {
        rounds += 1;
        let i = rng.below(n);
        let mut p = redis::pipe();
        p.cmd("INCR").arg(format!("k{i}")).ignore();
        p.cmd("APPEND").arg(format!("k{}", rng.below(n))).arg("+").ignore();
        p.cmd("RPUSH").arg(format!("l{}", rng.below(n / 10) * 10)).arg(rounds).ignore();
        p.cmd("HINCRBY").arg(format!("h{}", rng.below(n / 10) * 10)).arg("f").arg(1).ignore();
        p.cmd("DEL").arg(format!("k{}", rng.below(n))).ignore();
        p.cmd("RENAME").arg(format!("k{}", rng.below(n))).arg(format!("renamed{rounds}")).ignore();
        p.cmd("EVAL")
            .arg("redis.call('incr', KEYS[1]) return redis.call('rpush', KEYS[2], 'from-script')")
            .arg(2)
            .arg(format!("k{}", rng.below(n)))
            .arg(format!("l{}", rng.below(n / 10) * 10))
            .ignore();
        p.cmd("MOVE").arg(format!("k{}", rng.below(n))).arg(3).ignore();
        if rounds % 97 == 0 {
            p.cmd("SWAPDB").arg(2).arg(4).ignore();
        }
        let _: redis::RedisResult<()> = p.query(&mut c);
        if rounds > 20_000 {
            panic!("the rewrite never finished");
        }
    }
    let info: String = redis::cmd("INFO").arg("persistence").query(&mut c).expect("info");
    assert!(info.contains("aof_last_bgrewrite_status:ok") && info.contains("aof_rewrites:1"), "{info}");
    let before = settle(&mut c);
    s.restart(&[]);
    assert_same(snapshot(&mut s.client()), &before, &format!("after a rewrite under {rounds} rounds of writes"));
}
