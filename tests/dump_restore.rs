//! DUMP and RESTORE against redis-server 7.0: payloads dumped by Redis restore here and ours
//! restore into Redis, for every type and encoding size (checked with DEBUG DIGEST-VALUE
//! and OBJECT ENCODING on both sides); the options and errors compared byte for byte; a
//! restored key survives a restart through the log.

mod common;

use common::diff::{Cmp, DiffPair, Got, Resp};
use common::Server;

fn bulk(got: &Got) -> Vec<u8> {
    match got {
        Ok(r) => match &r.value {
            Resp::Blob(_, b) => b.clone(),
            other => panic!("not a bulk: {other:?}"),
        },
        Err(e) => panic!("{e:?}"),
    }
}

/// Commands that build one key of each type and encoding size, the same on both servers.
fn setup() -> Vec<String> {
    let mut s: Vec<String> = [
        "SET str:int 12345",
        "SET str:neg -1",
        "SET str:big 1099511627776",
        "SET str:zero-padded 007",
        "SET str:short hello",
        "SET str:empty \"\"",
        "SET str:binary \"a\\x00b\\xffc\"",
        "RPUSH list:small a b 1 2 -3 100000 9999999999",
        "SADD set:intset 1 2 3 -4 70000 5000000000",
        "SADD set:strings a b c",
        "HSET hash:small f v n 1 neg -2",
        "ZADD zset:small 1 a 2.5 b -3 c",
        "ZADD zset:inf +inf top -inf bottom 0 zero",
    ]
    .iter()
    .map(|x| x.to_string())
    .collect();
    s.push(format!("SET str:long {}", "a".repeat(100)));
    s.push(format!("SET str:10k {}", (0..10_000).map(|i| ((i * 7919 % 26) as u8 + b'a') as char).collect::<String>()));
    s.push(format!("RPUSH list:long {}", (0..1000).map(|i| format!("item-{i}")).collect::<Vec<_>>().join(" ")));
    s.push(format!("RPUSH list:bigitem small {} small2", "x".repeat(10_000)));
    s.push(format!("SADD set:bigintset {}", (0..600).map(|i| (i * 3).to_string()).collect::<Vec<_>>().join(" ")));
    s.push(format!("SADD set:large {}", (0..1000).map(|i| format!("m{i}")).collect::<Vec<_>>().join(" ")));
    s.push(format!("HSET hash:longvalue f {}", "v".repeat(100)));
    s.push(format!("HSET hash:large {}", (0..1000).map(|i| format!("f{i} v{i}")).collect::<Vec<_>>().join(" ")));
    s.push(format!("ZADD zset:large {}", (0..1000).map(|i| format!("{}.5 m{i}", i % 37)).collect::<Vec<_>>().join(" ")));
    s.push(format!("ZADD zset:longmember 1 {}", "m".repeat(100)));
    s
}

const KEYS: &[&str] = &[
    "str:int",
    "str:neg",
    "str:big",
    "str:zero-padded",
    "str:short",
    "str:empty",
    "str:binary",
    "str:long",
    "str:10k",
    "list:small",
    "list:long",
    "list:bigitem",
    "set:intset",
    "set:strings",
    "set:bigintset",
    "set:large",
    "hash:small",
    "hash:longvalue",
    "hash:large",
    "zset:small",
    "zset:inf",
    "zset:large",
    "zset:longmember",
];

fn digest(d: &mut DiffPair, key: &str, ours: bool) -> Got {
    let args = ["DEBUG", "DIGEST-VALUE", key];
    if ours {
        d.ours_call(&args)
    } else {
        d.redis_call(&args)
    }
}

/// DUMPs `key` on one side, RESTOREs the payload on both, and checks the value (against the
/// other side's digest of the original) and the encoding each side gives it.
fn move_payload(d: &mut DiffPair, key: &str, from_redis: bool, original: &Got) -> Result<(), String> {
    let (payload, name) =
        if from_redis { (bulk(&d.redis_call(&["DUMP", key])), "Redis's") } else { (bulk(&d.ours_call(&["DUMP", key])), "our") };
    let new_key = format!("from-{}:{key}", if from_redis { "redis" } else { "ours" });
    let restored: Vec<&[u8]> = vec![b"RESTORE", new_key.as_bytes(), b"0", &payload];
    let _ = d.check(&restored).map_err(|e| format!("RESTORE of {name} {key}: {e}"))?;
    // Checked on the side that did not dump it.
    if &digest(d, &new_key, from_redis) != original {
        return Err(format!("{key}: {name} payload restores to a different value on the other side"));
    }
    let _ = d.check(&["OBJECT", "ENCODING", &new_key]).map_err(|e| format!("{key} from {name} payload: {e}"))?;
    Ok(())
}

#[test]
fn payloads_move_both_ways_for_every_type_and_encoding() {
    let mut d = DiffPair::start_with(&["--enable-debug-command", "yes"], &[]);
    let setup = setup();
    let lines: Vec<&str> = setup.iter().map(String::as_str).collect();
    d.assert_script("setup", &lines);
    let mut failures = Vec::new();
    for key in KEYS {
        let original = digest(&mut d, key, false);
        assert!(
            matches!(&original, Ok(r) if matches!(&r.value, Resp::Agg(_, v) if matches!(&v[..], [Resp::Line(b'+', h)] if h.len() == 40))),
            "DEBUG DIGEST-VALUE {key} on redis-server: {original:?}"
        );
        if digest(&mut d, key, true) != original {
            failures.push(format!("{key}: the originals differ already"));
            continue;
        }
        // Redis's payload, then ours, each restored on both sides.
        for from_redis in [true, false] {
            if let Err(e) = move_payload(&mut d, key, from_redis, &original) {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    // The whole databases agree.
    let a = d.redis_call(&["DEBUG", "DIGEST"]);
    let b = d.ours_call(&["DEBUG", "DIGEST"]);
    assert!(matches!(&a, Ok(r) if matches!(&r.value, Resp::Line(b'+', h) if h.len() == 40)), "{a:?}");
    assert_eq!(a, b);
    assert_eq!(d.ours_call(&["DBSIZE"]), d.redis_call(&["DBSIZE"]));
}

/// A payload with `version` and a correct checksum around `body`.
fn sealed(body: &[u8], version: u16) -> Vec<u8> {
    let mut out = body.to_vec();
    out.extend_from_slice(&version.to_le_bytes());
    let crc = vermilion::db::rdb::crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

#[test]
fn options_and_errors_match_redis() {
    let mut d = DiffPair::start();
    d.assert_script("setup", &["SET k v", "RPUSH l a b c", "HSET h f v"]);
    let payload = bulk(&d.redis_call(&["DUMP", "l"]));
    let str_payload = bulk(&d.redis_call(&["DUMP", "k"]));
    let body = &payload[..payload.len() - 10];
    let mut failures = Vec::new();
    let mut run = |d: &mut DiffPair, args: Vec<Vec<u8>>, cmp: Cmp| {
        if let Err(e) = d.check_with(&args, cmp) {
            failures.push(e.to_string());
        }
    };
    let a = |parts: &[&[u8]]| parts.iter().map(|p| p.to_vec()).collect::<Vec<_>>();
    run(&mut d, a(&[b"DUMP", b"nosuch"]), Cmp::Exact);
    run(&mut d, a(&[b"DUMP"]), Cmp::Exact);
    run(&mut d, a(&[b"RESTORE", b"x", b"0", b"bad"]), Cmp::Exact);
    run(&mut d, a(&[b"RESTORE", b"x", b"0", b""]), Cmp::Exact);
    run(&mut d, a(&[b"RESTORE", b"l", b"0", &payload]), Cmp::Exact);
    run(&mut d, a(&[b"RESTORE", b"l", b"0", &str_payload, b"REPLACE"]), Cmp::Exact);
    run(&mut d, a(&[b"TYPE", b"l"]), Cmp::Exact);
    run(&mut d, a(&[b"RESTORE", b"x", b"-1", &payload]), Cmp::Exact);
    run(&mut d, a(&[b"RESTORE", b"x", b"abc", &payload]), Cmp::Exact);
    run(&mut d, a(&[b"RESTORE", b"x", b"0", &payload, b"IDLETIME", b"-1"]), Cmp::Exact);
    run(&mut d, a(&[b"RESTORE", b"x", b"0", &payload, b"IDLETIME", b"x"]), Cmp::Exact);
    run(&mut d, a(&[b"RESTORE", b"x", b"0", &payload, b"FREQ", b"256"]), Cmp::Exact);
    run(&mut d, a(&[b"RESTORE", b"x", b"0", &payload, b"IDLETIME", b"1", b"FREQ", b"1"]), Cmp::Exact);
    run(&mut d, a(&[b"RESTORE", b"x", b"0", &payload, b"NOSUCH"]), Cmp::Exact);
    run(&mut d, a(&[b"RESTORE", b"x", b"0", &payload, b"IDLETIME"]), Cmp::Exact);
    // A later RDB version, and a body cut short or followed by junk, each with a valid CRC.
    run(&mut d, a(&[b"RESTORE", b"x", b"0", &sealed(body, 11)]), Cmp::Exact);
    run(&mut d, a(&[b"RESTORE", b"x", b"0", &sealed(&body[..body.len() - 3], 10)]), Cmp::Exact);
    run(&mut d, a(&[b"RESTORE", b"x", b"0", &sealed(&[0xff, 1, 2], 10)]), Cmp::Exact);
    run(&mut d, a(&[b"RESTORE", b"x", b"0", &sealed(&[1, 0], 10)]), Cmp::Exact);
    run(&mut d, a(&[b"RESTORE", b"x", b"0", &sealed(body, 9)]), Cmp::Exact);
    run(&mut d, a(&[b"LRANGE", b"x", b"0", b"-1"]), Cmp::Exact);
    // TTLs: relative, absolute, already past.
    run(&mut d, a(&[b"RESTORE", b"t1", b"100000", &payload]), Cmp::Exact);
    run(&mut d, a(&[b"PTTL", b"t1"]), Cmp::Near(1000));
    run(&mut d, a(&[b"RESTORE", b"t2", b"1", &payload, b"ABSTTL"]), Cmp::Exact);
    run(&mut d, a(&[b"EXISTS", b"t2"]), Cmp::Exact);
    run(&mut d, a(&[b"RESTORE", b"h", b"1", &payload, b"ABSTTL", b"REPLACE"]), Cmp::Exact);
    run(&mut d, a(&[b"EXISTS", b"h"]), Cmp::Exact);
    run(&mut d, a(&[b"RESTORE", b"t3", b"99999999999999", &payload, b"ABSTTL"]), Cmp::Exact);
    run(&mut d, a(&[b"PEXPIRETIME", b"t3"]), Cmp::Exact);
    run(&mut d, a(&[b"RESTORE", b"i1", b"0", &payload, b"IDLETIME", b"1000"]), Cmp::Exact);
    run(&mut d, a(&[b"OBJECT", b"IDLETIME", b"i1"]), Cmp::Near(2));
    assert!(failures.is_empty(), "{} differences:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn restored_keys_survive_a_restart_through_the_log() {
    let mut server = Server::start(&["--appendonly", "yes"]);
    let mut c = server.raw();
    assert_eq!(c.call(&[b"RPUSH", b"src", b"a", b"b"]), b":2\r\n");
    let dumped = c.call(&[b"DUMP", b"src"]);
    let start = dumped.iter().position(|&b| b == b'\n').unwrap() + 1;
    let payload = &dumped[start..dumped.len() - 2];
    assert_eq!(c.call(&[b"RESTORE", b"copy", b"100000", payload]), b"+OK\r\n");
    assert_eq!(c.call(&[b"RESTORE", b"gone", b"1", payload, b"ABSTTL"]), b"+OK\r\n");
    assert_eq!(c.call(&[b"EVAL", b"return redis.call('RESTORE', KEYS[1], '0', ARGV[1])", b"1", b"fromscript", payload]), b"+OK\r\n");
    drop(c);
    server.restart(&["--appendonly", "yes"]);
    let mut c = server.raw();
    assert_eq!(c.call(&[b"LRANGE", b"copy", b"0", b"-1"]), b"*2\r\n$1\r\na\r\n$1\r\nb\r\n");
    assert_eq!(c.call(&[b"LRANGE", b"fromscript", b"0", b"-1"]), b"*2\r\n$1\r\na\r\n$1\r\nb\r\n");
    let pttl = String::from_utf8(c.call(&[b"PTTL", b"copy"])).unwrap();
    let ms: i64 = pttl.trim_start_matches(':').trim().parse().unwrap();
    assert!(ms > 90_000 && ms <= 100_000, "PTTL after restart: {ms}");
    assert_eq!(c.call(&[b"EXISTS", b"gone"]), b":0\r\n");
}

fn call(c: &mut common::RawConn, args: &[&str]) -> String {
    let argv: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    String::from_utf8_lossy(&c.call(&argv)).into_owned()
}

#[test]
fn migrate_between_vermilion_and_redis_in_both_directions() {
    let mut source = Server::start(&["--appendonly", "yes"]);
    let redis_target = Server::start_redis(&["--requirepass", "pw", "--enable-debug-command", "yes"]);
    let ours_target = Server::start(&[]);
    let (rt, ot) = (redis_target.port.to_string(), ours_target.port.to_string());
    let mut s = source.raw();
    call(&mut s, &["RPUSH", "l", "a", "b", "c"]);
    call(&mut s, &["SET", "k", "v", "PX", "100000"]);
    call(&mut s, &["HSET", "h", "f", "1"]);
    call(&mut s, &["ZADD", "z", "1.5", "m"]);
    let digest_l = call(&mut s, &["DEBUG", "DIGEST-VALUE", "l"]);
    // Errors, with Redis's texts (as redis-server 7.0.15 answers them).
    assert_eq!(
        call(&mut s, &["MIGRATE", "127.0.0.1", &rt, "l", "0", "1000"]),
        "-ERR Target instance replied with error: NOAUTH Authentication required.\r\n"
    );
    assert_eq!(call(&mut s, &["MIGRATE", "127.0.0.1", &rt, "nosuch", "0", "1000"]), "+NOKEY\r\n");
    assert_eq!(call(&mut s, &["MIGRATE", "127.0.0.1", "1", "l", "0", "1000"]), "-IOERR error or timeout writing to target instance\r\n");
    assert_eq!(
        call(&mut s, &["MIGRATE", "127.0.0.1", &rt, "l", "0", "1000", "KEYS", "h"]),
        "-ERR When using MIGRATE KEYS option, the key argument must be set to the empty string\r\n"
    );
    assert_eq!(call(&mut s, &["MIGRATE", "127.0.0.1", &rt, "l", "x", "1000"]), "-ERR value is not an integer or out of range\r\n");
    assert_eq!(call(&mut s, &["MIGRATE", "127.0.0.1", &rt, "l", "0", "1000", "AUTH"]), "-ERR syntax error\r\n");
    assert_eq!(
        call(&mut s, &["MIGRATE", "127.0.0.1", &rt, "l", "99", "1000", "AUTH", "pw"]),
        "-ERR Target instance replied with error: ERR DB index is out of range\r\n"
    );
    assert_eq!(call(&mut s, &["EXISTS", "l"]), ":1\r\n", "a failed MIGRATE keeps the key");
    // (As with Redis, the RESTORE pipelined behind the failed SELECT still ran on the target,
    // in its database 0: hence REPLACE below.)
    // To redis-server: moved (gone here), same value there.
    assert_eq!(call(&mut s, &["MIGRATE", "127.0.0.1", &rt, "l", "0", "1000", "AUTH2", "default", "pw", "REPLACE"]), "+OK\r\n");
    assert_eq!(call(&mut s, &["EXISTS", "l"]), ":0\r\n");
    let mut r = redis_target.raw();
    call(&mut r, &["AUTH", "pw"]);
    assert_eq!(call(&mut r, &["DEBUG", "DIGEST-VALUE", "l"]), digest_l);
    // A key that exists there: BUSYKEY unless REPLACE; COPY keeps it here.
    call(&mut s, &["RPUSH", "l", "again"]);
    assert_eq!(
        call(&mut s, &["MIGRATE", "127.0.0.1", &rt, "l", "0", "1000", "AUTH", "pw"]),
        "-ERR Target instance replied with error: BUSYKEY Target key name already exists.\r\n"
    );
    assert_eq!(call(&mut s, &["MIGRATE", "127.0.0.1", &rt, "l", "0", "1000", "AUTH", "pw", "COPY", "REPLACE"]), "+OK\r\n");
    assert_eq!(call(&mut s, &["LRANGE", "l", "0", "-1"]), "*1\r\n$5\r\nagain\r\n");
    assert_eq!(call(&mut r, &["LRANGE", "l", "0", "-1"]), "*1\r\n$5\r\nagain\r\n");
    // To another Vermilion, several keys at once into database 3, TTL kept.
    assert_eq!(call(&mut s, &["MIGRATE", "127.0.0.1", &ot, "", "3", "1000", "KEYS", "k", "h", "z", "nosuch"]), "+OK\r\n");
    let mut o = ours_target.raw();
    call(&mut o, &["SELECT", "3"]);
    assert_eq!(call(&mut o, &["GET", "k"]), "$1\r\nv\r\n");
    assert_eq!(call(&mut o, &["HGET", "h", "f"]), "$1\r\n1\r\n");
    assert_eq!(call(&mut o, &["ZSCORE", "z", "m"]), "$3\r\n1.5\r\n");
    let pttl: i64 = call(&mut o, &["PTTL", "k"]).trim_start_matches(':').trim().parse().unwrap();
    assert!(pttl > 90_000 && pttl <= 100_000, "{pttl}");
    assert_eq!(call(&mut s, &["EXISTS", "k", "h", "z"]), ":0\r\n");
    // From redis-server to Vermilion.
    call(&mut r, &["SADD", "fromredis", "x", "y"]);
    assert_eq!(call(&mut r, &["MIGRATE", "127.0.0.1", &ot, "fromredis", "0", "1000"]), "+OK\r\n");
    call(&mut o, &["SELECT", "0"]);
    assert_eq!(call(&mut o, &["SCARD", "fromredis"]), ":2\r\n");
    // The source's log says the moved keys are gone: they stay gone after a restart.
    drop(s);
    source.restart(&["--appendonly", "yes"]);
    let mut s = source.raw();
    assert_eq!(call(&mut s, &["EXISTS", "k", "h", "z"]), ":0\r\n");
    assert_eq!(call(&mut s, &["LRANGE", "l", "0", "-1"]), "*1\r\n$5\r\nagain\r\n");
}
