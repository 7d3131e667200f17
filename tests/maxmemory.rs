//! `maxmemory` and eviction on a real server: which keys every `maxmemory-policy` evicts
//! (LRU keeps recently read keys, LFU frequently read ones, volatile-ttl evicts the nearest
//! expiry first, volatile-* never touch keys without a TTL), the OOM error of `noeviction`
//! (byte-exact against redis-server), and how well INFO `used_memory` tracks the real
//! memory of the process.

mod common;

use std::time::Duration;

use common::{RawConn, Server};

const OOM: &[u8] = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n";

/// One command as a RESP multibulk.
fn resp(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn set(key: &str, ttl_secs: Option<u64>) -> Vec<u8> {
    let value = [b'v'; 100];
    match ttl_secs {
        Some(ttl) => resp(&[b"SET", key.as_bytes(), &value, b"EX", ttl.to_string().as_bytes()]),
        None => resp(&[b"SET", key.as_bytes(), &value]),
    }
}

/// Sends the commands in batches of 500 and returns every reply.
fn pipeline(c: &mut RawConn, cmds: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut replies = Vec::with_capacity(cmds.len());
    for chunk in cmds.chunks(500) {
        c.send(&chunk.concat());
        for _ in chunk {
            replies.push(c.read_reply());
        }
    }
    replies
}

/// Sends one pre-encoded command and returns its reply.
fn call_bytes(c: &mut RawConn, cmd: &[u8]) -> Vec<u8> {
    c.send(cmd);
    c.read_reply()
}

fn info_field(c: &mut RawConn, section: &str, field: &str) -> Option<u64> {
    let reply = c.call(&[b"INFO", section.as_bytes()]);
    let text = String::from_utf8_lossy(&reply).into_owned();
    text.lines().find_map(|l| l.strip_prefix(&format!("{field}:")).and_then(|v| v.trim().parse().ok()))
}

fn used_memory(c: &mut RawConn) -> u64 {
    info_field(c, "memory", "used_memory").expect("used_memory")
}

fn dbsize(c: &mut RawConn) -> u64 {
    let r = c.call(&[b"DBSIZE"]);
    std::str::from_utf8(&r[1..r.len() - 2]).unwrap().parse().unwrap()
}

fn exists(c: &mut RawConn, keys: &[String]) -> Vec<bool> {
    let cmds: Vec<Vec<u8>> = keys.iter().map(|k| resp(&[b"EXISTS", k.as_bytes()])).collect();
    pipeline(c, &cmds).into_iter().map(|r| r == b":1\r\n").collect()
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}:{i:05}")).collect()
}

/// Caps memory at what is in use right now: the next writes must evict.
fn cap_memory_here(c: &mut RawConn) -> u64 {
    let used = used_memory(c);
    assert_eq!(c.call(&[b"CONFIG", b"SET", b"maxmemory", used.to_string().as_bytes()]), b"+OK\r\n");
    used
}

fn get_all(keys: &[String], times: usize) -> Vec<Vec<u8>> {
    (0..times).flat_map(|_| keys.iter().map(|k| resp(&[b"GET", k.as_bytes()]))).collect()
}

/// Writes `new` keys past the limit, reading the `hot` keys `reads` times after every 50
/// writes; returns how many of `hot` and `cold` survive.
fn fill_reading(c: &mut RawConn, hot: &[String], cold: &[String], new: &[String], reads: usize) -> (usize, usize) {
    for batch in new.chunks(50) {
        let writes: Vec<Vec<u8>> = batch.iter().map(|k| set(k, None)).collect();
        assert!(pipeline(c, &writes).iter().all(|r| r == b"+OK\r\n"));
        pipeline(c, &get_all(hot, reads));
    }
    let hot_left = exists(c, hot).into_iter().filter(|&e| e).count();
    let cold_left = exists(c, cold).into_iter().filter(|&e| e).count();
    (hot_left, cold_left)
}

#[test]
fn allkeys_lru_keeps_recently_read_keys() {
    let server = Server::start(&["--maxmemory-policy", "allkeys-lru"]);
    let mut c = server.raw();
    let (hot, cold, new) = (names("hot", 100), names("cold", 800), names("new", 500));
    let writes: Vec<Vec<u8>> = hot.iter().chain(&cold).map(|k| set(k, None)).collect();
    pipeline(&mut c, &writes);
    // The LRU clock has a resolution of one second.
    std::thread::sleep(Duration::from_millis(1100));
    pipeline(&mut c, &get_all(&hot, 1));
    let limit = cap_memory_here(&mut c);
    let (hot_left, cold_left) = fill_reading(&mut c, &hot, &cold, &new, 1);
    assert_eq!(hot_left, 100, "recently read keys were evicted");
    assert!(cold_left <= 800 - 350, "idle keys should go first: {cold_left} of 800 left");
    assert!(used_memory(&mut c) <= limit);
    assert!(dbsize(&mut c) < 1400);
}

#[test]
fn allkeys_lfu_keeps_frequently_read_keys() {
    let server = Server::start(&["--maxmemory-policy", "allkeys-lfu"]);
    let mut c = server.raw();
    let (hot, cold, new) = (names("hot", 100), names("cold", 800), names("new", 500));
    let writes: Vec<Vec<u8>> = hot.iter().chain(&cold).map(|k| set(k, None)).collect();
    pipeline(&mut c, &writes);
    pipeline(&mut c, &get_all(&hot, 30));
    let freq = c.call(&[b"OBJECT", b"FREQ", b"hot:00000"]);
    let freq: u64 = std::str::from_utf8(&freq[1..freq.len() - 2]).unwrap().parse().unwrap();
    assert!(freq > 5, "reads raise the counter: {freq}");
    let limit = cap_memory_here(&mut c);
    let (hot_left, cold_left) = fill_reading(&mut c, &hot, &cold, &new, 1);
    assert_eq!(hot_left, 100, "frequently read keys were evicted");
    assert!(cold_left < 800, "nothing cold was evicted");
    assert!(used_memory(&mut c) <= limit);
}

#[test]
fn volatile_ttl_evicts_the_nearest_expiry_first() {
    let server = Server::start(&["--maxmemory-policy", "volatile-ttl", "--maxmemory-samples", "10"]);
    let mut c = server.raw();
    let (plain, near, far) = (names("plain", 200), names("near", 300), names("far", 600));
    let mut writes: Vec<Vec<u8>> = plain.iter().map(|k| set(k, None)).collect();
    writes.extend(near.iter().enumerate().map(|(i, k)| set(k, Some(1000 + i as u64))));
    writes.extend(far[..300].iter().enumerate().map(|(i, k)| set(k, Some(100_000 + i as u64))));
    pipeline(&mut c, &writes);
    let limit = cap_memory_here(&mut c);
    // 300 more keys expiring later still: about 300 keys must go.
    let writes: Vec<Vec<u8>> = far[300..].iter().enumerate().map(|(i, k)| set(k, Some(200_000 + i as u64))).collect();
    assert!(pipeline(&mut c, &writes).iter().all(|r| r == b"+OK\r\n"));
    assert!(exists(&mut c, &plain).iter().all(|&e| e), "a key without a TTL was evicted");
    let near_left = exists(&mut c, &near).into_iter().filter(|&e| e).count();
    let far_left = exists(&mut c, &far).into_iter().filter(|&e| e).count();
    assert!(near_left <= 60, "{near_left} of the 300 nearest expiries survive");
    assert!(far_left >= 540, "only {far_left} of the 600 later expiries survive");
    assert!(used_memory(&mut c) <= limit);
}

/// Every volatile-* policy evicts keys with a TTL only; once none is left, writes are
/// refused with the OOM error while reads keep working.
#[test]
fn volatile_policies_never_evict_persistent_keys() {
    for policy in ["volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"] {
        let server = Server::start(&["--maxmemory-policy", policy]);
        let mut c = server.raw();
        let (plain, volatile, more) = (names("plain", 200), names("vol", 200), names("more", 400));
        let mut writes: Vec<Vec<u8>> = plain.iter().map(|k| set(k, None)).collect();
        writes.extend(volatile.iter().map(|k| set(k, Some(1000))));
        pipeline(&mut c, &writes);
        cap_memory_here(&mut c);
        let replies = pipeline(&mut c, &more.iter().map(|k| set(k, None)).collect::<Vec<_>>());
        let ok = replies.iter().take_while(|r| r.as_slice() == b"+OK\r\n").count();
        assert!(ok > 100 && ok < 400, "{policy}: {ok} writes accepted");
        assert!(replies[ok..].iter().all(|r| r == OOM), "{policy}: {}", String::from_utf8_lossy(&replies[ok]));
        assert!(exists(&mut c, &volatile).iter().all(|&e| !e), "{policy}: a key with a TTL survived");
        assert_eq!(dbsize(&mut c), 200 + ok as u64, "{policy}: a key without a TTL was evicted");
        assert_eq!(c.call(&[b"GET", b"plain:00007"]), [b"$100\r\n".as_slice(), &[b'v'; 100], b"\r\n"].concat());
    }
}

#[test]
fn allkeys_random_stays_under_the_limit() {
    let limit = 1024 * 1024 + 300_000;
    let server = Server::start(&["--maxmemory", &limit.to_string(), "--maxmemory-policy", "allkeys-random"]);
    let mut c = server.raw();
    let keys = names("k", 3000);
    let replies = pipeline(&mut c, &keys.iter().map(|k| set(k, None)).collect::<Vec<_>>());
    assert!(replies.iter().all(|r| r == b"+OK\r\n"));
    let left = dbsize(&mut c);
    assert!(left > 100 && left < 3000, "{left} keys left");
    assert!(used_memory(&mut c) <= limit as u64);
    // Once INFO stats reports it, evicted_keys counts exactly the keys that went.
    if let Some(evicted) = info_field(&mut c, "stats", "evicted_keys").filter(|&n| n > 0) {
        assert_eq!(evicted, 3000 - left);
    }
}

#[test]
fn noeviction_refuses_writes_but_serves_reads() {
    let server = Server::start(&["--maxmemory-policy", "noeviction"]);
    let mut c = server.raw();
    let keys = names("k", 100);
    pipeline(&mut c, &keys.iter().map(|k| set(k, None)).collect::<Vec<_>>());
    // Just over the limit: the check comes before a command runs.
    let limit = used_memory(&mut c) - 1;
    assert_eq!(c.call(&[b"CONFIG", b"SET", b"maxmemory", limit.to_string().as_bytes()]), b"+OK\r\n");
    assert_eq!(call_bytes(&mut c, &set("extra", None)), OOM);
    assert_eq!(c.call(&[b"APPEND", b"k:00001", b"more"]), OOM);
    assert_eq!(c.call(&[b"GET", b"k:00001"]), [b"$100\r\n".as_slice(), &[b'v'; 100], b"\r\n"].concat());
    assert_eq!(c.call(&[b"GET", b"extra"]), b"$-1\r\n");
    assert_eq!(dbsize(&mut c), 100);
    // Deleting frees memory: writes work again, until the room made is used up.
    assert_eq!(c.call(&[b"DEL", b"k:00001", b"k:00002"]), b":2\r\n");
    let replies = pipeline(&mut c, &names("extra", 10).iter().map(|k| set(k, None)).collect::<Vec<_>>());
    let ok = replies.iter().take_while(|r| r.as_slice() == b"+OK\r\n").count();
    assert!((2..=3).contains(&ok), "{ok} writes after freeing two keys");
    assert!(replies[ok..].iter().all(|r| r == OOM));
    assert_eq!(dbsize(&mut c), 98 + ok as u64);
}

/// The same refusal, byte for byte, as redis-server with a tiny limit.
#[test]
fn oom_error_matches_redis() {
    let redis = Server::start_redis(&["--maxmemory", "1", "--maxmemory-policy", "noeviction"]);
    let ours = Server::start(&["--maxmemory", "1", "--maxmemory-policy", "noeviction"]);
    let script: &[&[&[u8]]] = &[&[b"SET", b"k", b"v"], &[b"GET", b"k"], &[b"DEL", b"k"], &[b"LPUSH", b"l", b"x"], &[b"EXISTS", b"k"]];
    let (mut r, mut o) = (redis.raw(), ours.raw());
    for cmd in script {
        assert_eq!(o.call(cmd), r.call(cmd), "{}", String::from_utf8_lossy(&cmd.concat()));
    }
    assert_eq!(r.call(&[b"SET", b"k", b"v"]), OOM);
}

/// Inside MULTI, Redis refuses every queued command (reads too) while over the limit,
/// and EXEC then aborts.
#[test]
fn oom_inside_multi_matches_redis() {
    let redis = Server::start_redis(&["--maxmemory", "1", "--maxmemory-policy", "noeviction"]);
    let ours = Server::start(&["--maxmemory", "1", "--maxmemory-policy", "noeviction"]);
    let script: &[&[&[u8]]] = &[&[b"MULTI"], &[b"SET", b"k", b"v"], &[b"GET", b"k"], &[b"EXEC"], &[b"MULTI"], &[b"GET", b"k"], &[b"EXEC"]];
    let (mut r, mut o) = (redis.raw(), ours.raw());
    for cmd in script {
        assert_eq!(
            String::from_utf8_lossy(&o.call(cmd)),
            String::from_utf8_lossy(&r.call(cmd)),
            "{}",
            String::from_utf8_lossy(&cmd.concat())
        );
    }
}

fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let kb: u64 =
        status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).unwrap();
    kb * 1024
}

/// INFO used_memory grows like the process's resident memory: 200k string keys of 100
/// bytes each, and 200k one-field hashes (the packed form, where the per-key part dominates).
#[test]
fn used_memory_tracks_rss() {
    let strings = |i: usize| set(&format!("key:{i:06}"), None);
    let hashes = |i: usize| resp(&[b"HSET", format!("hash:{i:06}").as_bytes(), b"f", b"v"]);
    for (what, make) in [("strings", &strings as &dyn Fn(usize) -> Vec<u8>), ("small hashes", &hashes)] {
        let server = Server::start(&[]);
        let mut c = server.raw();
        let (used0, rss0) = (used_memory(&mut c), rss_bytes(server.pid()));
        let n = 200_000;
        for start in (0..n).step_by(2000) {
            let cmds: Vec<Vec<u8>> = (start..start + 2000).map(make).collect();
            pipeline(&mut c, &cmds);
        }
        assert_eq!(dbsize(&mut c), n as u64);
        // What the allocator holds unused (a grown table's old buffer) is given back first.
        c.call(&[b"MEMORY", b"PURGE"]);
        let (used1, rss1) = (used_memory(&mut c), rss_bytes(server.pid()));
        let (d_used, d_rss) = (used1 - used0, rss1.saturating_sub(rss0));
        let ratio = d_used as f64 / d_rss as f64;
        eprintln!(
            "{what}: used_memory +{d_used} ({} B/key), RSS +{d_rss} ({} B/key), estimate/RSS = {ratio:.3}",
            d_used / n as u64,
            d_rss / n as u64
        );
        assert!((0.8..=1.2).contains(&ratio), "{what}: used_memory growth {d_used} vs RSS growth {d_rss}: ratio {ratio:.3}");
    }
}
