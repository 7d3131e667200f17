//! Hash and set commands, differentially against the real redis-server 7.0: curated cases for
//! every command (valid and invalid, RESP2 and RESP3), OBJECT ENCODING at the conversion
//! thresholds, full HSCAN/SSCAN iterations, seeded random sequences per type (env `DIFF_SEED`,
//! `DIFF_SECONDS` per type, default 8) and a performance sanity check on 100k-element keys.
//!
//! Script lines follow tests/common/diff.rs (`~` unordered, `~~` unordered pairs); a line
//! starting with `R2:` or `R3:` runs only under that protocol version.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::diff::{encode_cmd, same, show, show_cmd, Cmp, Conn, DiffPair, Got, Resp};
use common::Server;

/// Runs `script` under RESP2 then RESP3 (each from an empty keyspace).
fn both_protocols(d: &mut DiffPair, name: &str, script: &[&str]) {
    for proto in [2u8, 3] {
        d.on(0);
        ok(d, &cmd("FLUSHALL"));
        assert!(d.hello(proto).unwrap().is_ok());
        let tag = format!("R{proto}:");
        let other = if proto == 2 { "R3:" } else { "R2:" };
        let lines: Vec<&str> = script
            .iter()
            .filter(|l| !l.trim_start().starts_with(other))
            .map(|l| l.trim_start().strip_prefix(tag.as_str()).unwrap_or(l))
            .collect();
        d.assert_script(&format!("{name} (RESP{proto})"), &lines);
    }
    assert!(d.hello(2).unwrap().is_ok());
}

fn cmd(line: &str) -> Vec<Vec<u8>> {
    vermilion::protocol::split_args(line.as_bytes()).expect("bad quoting")
}

#[test]
fn hash_commands() {
    let mut d = start();
    let long65 = "x".repeat(65);
    let script_owned: Vec<String> = HASH_SCRIPT.iter().map(|l| l.replace("LONG65", &long65)).collect();
    let script: Vec<&str> = script_owned.iter().map(|s| s.as_str()).collect();
    both_protocols(&mut d, "hashes", &script);
}

const HASH_SCRIPT: &[&str] = &[
    "HSET h f1 v1",
    "HSET h f1 v1b f2 v2 f3 v3",
    "HGET h f1",
    "HSET h f1",
    "HSET h",
    "HSET h f1 v1 f2",
    "hset h f1 v1 f2",
    "HMSET h f4 v4 f5 v5",
    "HMSET h f4",
    "HSETNX h f1 x",
    "HSETNX h new nv",
    "HSETNX h2 a b",
    "HSETNX h a",
    "HGET h f1",
    "HGET h nope",
    "HGET nokey f",
    "HMGET h f1 nope f2",
    "HMGET nokey a b",
    "~~HGETALL h",
    "HGETALL nokey",
    "~HKEYS h",
    "~HVALS h",
    "HKEYS nokey",
    "HVALS nokey",
    "HLEN h",
    "HLEN nokey",
    "HEXISTS h f1",
    "HEXISTS h nope",
    "HEXISTS nokey f",
    "HSTRLEN h f1",
    "HSTRLEN h nope",
    "HSTRLEN nokey f",
    "HSET h empty ''",
    "HGET h empty",
    "HSTRLEN h empty",
    "HSET h '' emptyfield",
    "HGET h ''",
    "HSET h \"bin\\x00ary\" \"v\\x00\\xff\"",
    "HGET h \"bin\\x00ary\"",
    "HDEL h nope",
    "HDEL h f1 f1 f2",
    "HDEL nokey f",
    "HDEL h2 a",
    "EXISTS h2",
    "HDEL h f3 f4 f5 new empty '' \"bin\\x00ary\"",
    "EXISTS h",
    "HLEN h",
    // Wrong type.
    "SET str v",
    "HSET str f v",
    "HSETNX str f v",
    "HMSET str f v",
    "HGET str f",
    "HMGET str f",
    "HGETALL str",
    "HKEYS str",
    "HVALS str",
    "HLEN str",
    "HEXISTS str f",
    "HSTRLEN str f",
    "HDEL str f",
    "HINCRBY str f 1",
    "HINCRBY str f x",
    "HINCRBYFLOAT str f 1",
    "HINCRBYFLOAT str f inf",
    "HRANDFIELD str",
    "HRANDFIELD str 2",
    "HRANDFIELD str 2 WITHVALUES",
    "HRANDFIELD str x",
    "HSCAN str 0",
    "HSCAN str x",
    "HSCAN str 0 COUNT 0",
    "GET str",
    "SADD aset a",
    "HGET aset a",
    "HSET aset a b",
    // Arity.
    "HGET h",
    "HMGET h",
    "HGETALL",
    "HGETALL a b",
    "HDEL h",
    "HLEN",
    "HEXISTS h",
    "HKEYS",
    "HVALS a b",
    "HSTRLEN h",
    "HINCRBY h f",
    "HINCRBYFLOAT h f",
    "HRANDFIELD",
    "HSCAN h",
    "HSETNX h f",
    "HSETNX h f v x",
    // HINCRBY.
    "HINCRBY n a 1",
    "HINCRBY n a -10",
    "HINCRBY n a 9223372036854775807",
    "HSET n big 9223372036854775807",
    "HINCRBY n big 1",
    "HINCRBY n big 0",
    "HINCRBY n big -1",
    "HSET n min -9223372036854775808",
    "HINCRBY n min -1",
    "HINCRBY n min 1",
    "HINCRBY n a x",
    "HINCRBY n a 1.5",
    "HINCRBY n a ''",
    "HINCRBY n a ' 1'",
    "HINCRBY n a 9223372036854775808",
    "HINCRBY n a -0",
    "HSET n s abc",
    "HINCRBY n s 1",
    "HSET n sp ' 1'",
    "HINCRBY n sp 1",
    "HSET n z 007",
    "HINCRBY n z 1",
    "HSET n fl 1.0",
    "HINCRBY n fl 1",
    "HINCRBY newkey f 5",
    "HGET newkey f",
    "HINCRBY newkey2 f x",
    "EXISTS newkey2",
    "~~HGETALL n",
    // HINCRBYFLOAT.
    "HINCRBYFLOAT fl a 1.5",
    "HINCRBYFLOAT fl a 1e3",
    "HINCRBYFLOAT fl a -0.5",
    "HINCRBYFLOAT fl b 0.1",
    "HINCRBYFLOAT fl b 0.2",
    "HINCRBYFLOAT fl a inf",
    "HINCRBYFLOAT fl a -inf",
    "HINCRBYFLOAT fl a +inf",
    "HINCRBYFLOAT fl a nan",
    "HINCRBYFLOAT fl a abc",
    "HINCRBYFLOAT fl a ''",
    "HINCRBYFLOAT fl a ' 1'",
    "HINCRBYFLOAT fl a 1e5000",
    "HINCRBYFLOAT fl a 0x10",
    "HSET fl s abc",
    "HINCRBYFLOAT fl s 1",
    "HSET fl sp ' 1'",
    "HINCRBYFLOAT fl sp 1",
    "HSET fl i 10",
    "HINCRBYFLOAT fl i 5.0e0",
    "HINCRBYFLOAT fl i -15",
    "HSET fl e 1e308",
    "HINCRBYFLOAT fl e 1e308",
    "HINCRBYFLOAT fl g 1.1e4932",
    "HINCRBYFLOAT fl g 1.1e4932",
    "HINCRBYFLOAT fl neg -3",
    "HINCRBYFLOAT nokey3 f 2.5",
    "HINCRBYFLOAT nokey4 f abc",
    "EXISTS nokey4",
    "~~HGETALL fl",
    "OBJECT ENCODING fl",
    // HRANDFIELD: deterministic shapes.
    "HSET one f v",
    "HRANDFIELD one",
    "HRANDFIELD one 1",
    "HRANDFIELD one -3",
    "HRANDFIELD one -3 WITHVALUES",
    "HRANDFIELD one 3 WITHVALUES",
    "HRANDFIELD one 1 withvalues",
    "HRANDFIELD one -1 WITHVALUES",
    "HRANDFIELD one 0",
    "HRANDFIELD one 0 WITHVALUES",
    "HRANDFIELD nokey",
    "HRANDFIELD nokey 3",
    "HRANDFIELD nokey -3 WITHVALUES",
    "HRANDFIELD nokey 0",
    "HRANDFIELD one x",
    "HRANDFIELD one 1.5",
    "HRANDFIELD one 1 WITHVALUE",
    "HRANDFIELD one 1 WITHVALUES x",
    "HRANDFIELD one x WITHVALUES",
    "HRANDFIELD nokey 1 foo",
    "HRANDFIELD one -9223372036854775808",
    "HRANDFIELD one -9223372036854775808 WITHVALUES",
    "HRANDFIELD one 9223372036854775807 WITHVALUES",
    "HRANDFIELD one -4611686018427387904 WITHVALUES",
    "HRANDFIELD one 4611686018427387904 WITHVALUES",
    "HRANDFIELD one 4611686018427387903 WITHVALUES",
    "HRANDFIELD one 9223372036854775807",
    "HSET multi a 1 b 2 c 3",
    "~HRANDFIELD multi 3",
    "~HRANDFIELD multi 10",
    "R2:~~HRANDFIELD multi 10 WITHVALUES",
    "R3:~HRANDFIELD multi 10 WITHVALUES",
    "R2:~~HRANDFIELD multi 3 WITHVALUES",
    "R3:~HRANDFIELD multi 3 WITHVALUES",
    // HSCAN on a listpack hash: everything at once, cursor 0.
    "HSET sc a 1 b 2 c 3 ab 4",
    "HSCAN sc 0",
    "HSCAN sc 0 COUNT 1",
    "HSCAN sc 0 MATCH a*",
    "HSCAN sc 0 match a* count 1",
    "HSCAN sc 0 MATCH * COUNT 100",
    "HSCAN sc 0 MATCH zz*",
    "HSCAN sc 7",
    "HSCAN sc -1",
    "HSCAN sc +0",
    "HSCAN sc ''",
    "HSCAN sc 0 COUNT 0",
    "HSCAN sc 0 COUNT -1",
    "HSCAN sc 0 COUNT x",
    "HSCAN sc 0 COUNT",
    "HSCAN sc 0 MATCH",
    "HSCAN sc 0 FOO bar",
    "HSCAN sc x",
    "HSCAN sc ' 1'",
    "HSCAN sc 1x",
    "HSCAN sc 99999999999999999999999",
    "HSCAN nokey 0",
    "HSCAN nokey 0 COUNT 0",
    "HSCAN nokey x",
    "HSCAN nokey 0 FOO",
    // Encodings and TYPE.
    "TYPE sc",
    "OBJECT ENCODING sc",
    "HSET big f LONG65",
    "OBJECT ENCODING big",
    "HSET big2 LONG65 v",
    "OBJECT ENCODING big2",
    "HSET nx1 a 1",
    "HSETNX nx1 a LONG65",
    "OBJECT ENCODING nx1",
    "HSETNX nx1 b LONG65",
    "OBJECT ENCODING nx1",
    "HSET ib a 1",
    "HINCRBY ib LONG65 1",
    "OBJECT ENCODING ib",
    "HSET ibf a 1",
    "HINCRBYFLOAT ibf LONG65 1",
    "OBJECT ENCODING ibf",
    "HSET keep a 1",
    "EXPIRE keep 100",
    "HSET keep b 2",
    "HDEL keep a",
    "TTL keep",
    "HDEL keep b",
    "TTL keep",
];

#[test]
fn set_commands() {
    let mut d = start();
    both_protocols(&mut d, "sets", SET_SCRIPT);
}

const SET_SCRIPT: &[&str] = &[
    "SADD s a b c",
    "SADD s a d",
    "SADD s",
    "SADD s a a a e",
    "SREM s a x",
    "SREM s",
    "SREM nokey a",
    "~SMEMBERS s",
    "SMEMBERS nokey",
    "SISMEMBER s b",
    "SISMEMBER s x",
    "SISMEMBER nokey x",
    "SMISMEMBER s b x c",
    "SMISMEMBER nokey a b",
    "SMISMEMBER s",
    "SCARD s",
    "SCARD nokey",
    "SREM s b c d e",
    "EXISTS s",
    "SADD s '' \"\\x00\\xff\"",
    "~SMEMBERS s",
    "SISMEMBER s ''",
    // Wrong type.
    "SET str v",
    "SADD str a",
    "SREM str a",
    "SMEMBERS str",
    "SISMEMBER str a",
    "SMISMEMBER str a",
    "SCARD str",
    "SPOP str",
    "SPOP str 2",
    "SPOP str -1",
    "SRANDMEMBER str",
    "SRANDMEMBER str 2",
    "SRANDMEMBER str x",
    "SSCAN str 0",
    "SSCAN str x",
    "HSET ahash f v",
    "SADD ahash a",
    "SCARD ahash",
    // Arity.
    "SADD s",
    "SREM s",
    "SMEMBERS",
    "SISMEMBER s",
    "SMISMEMBER s",
    "SCARD",
    "SPOP",
    "SRANDMEMBER",
    "SMOVE a b",
    "SINTER",
    "SINTERCARD 1",
    "SINTERSTORE d",
    "SUNION",
    "SUNIONSTORE d",
    "SDIFF",
    "SDIFFSTORE d",
    "SSCAN s",
    // SPOP.
    "SPOP nokey",
    "SPOP nokey 3",
    "SPOP nokey 0",
    "SPOP nokey -1",
    "SADD p a b c",
    "SPOP p 0",
    "SPOP p -1",
    "SPOP p x",
    "SPOP p 1 2",
    "SPOP p 1.5",
    "~SPOP p 5",
    "EXISTS p",
    "SADD p1 x",
    "SPOP p1",
    "EXISTS p1",
    "SPOP p1",
    "SADD p2 1 2 3",
    "~SPOP p2 3",
    "EXISTS p2",
    "SADD p3 only",
    "SPOP p3 1",
    "EXISTS p3",
    // SRANDMEMBER.
    "SADD r only",
    "SRANDMEMBER r",
    "SRANDMEMBER r 1",
    "SRANDMEMBER r -5",
    "SRANDMEMBER r -1",
    "SRANDMEMBER r 5",
    "SRANDMEMBER r 0",
    "SRANDMEMBER nokey",
    "SRANDMEMBER nokey 5",
    "SRANDMEMBER nokey -5",
    "SRANDMEMBER nokey 0",
    "SRANDMEMBER r x",
    "SRANDMEMBER r 1 2",
    "SRANDMEMBER r -9223372036854775808",
    "SRANDMEMBER r 9223372036854775807",
    "SADD r2 1 2 3",
    "~SRANDMEMBER r2 3",
    "~SRANDMEMBER r2 10",
    "SCARD r2",
    // SMOVE.
    "SADD m1 a b",
    "SMOVE m1 m2 a",
    "OBJECT ENCODING m2",
    "SMOVE m1 m2 zz",
    "SMOVE nokey m2 a",
    "SMOVE nokey str a",
    "SMOVE m1 str b",
    "SMOVE str m1 b",
    "SMOVE str nokey b",
    "SMOVE m1 m1 b",
    "SMOVE m1 m1 zz",
    "SMOVE m1 m2 b",
    "EXISTS m1",
    "~SMEMBERS m2",
    "SMOVE m2 m2b a",
    "SADD mi 1 2",
    "SMOVE mi mi2 1",
    "OBJECT ENCODING mi2",
    "SMOVE m2 mi2 b",
    "OBJECT ENCODING mi2",
    "SADD mi3 5",
    "SMOVE mi mi3 2",
    "EXISTS mi",
    "SMOVE mi2 mi3 1",
    "~SMEMBERS mi3",
    "OBJECT ENCODING mi3",
    // SINTER & co.
    "SADD a1 1 2 3 4 x",
    "SADD a2 2 3 4 y",
    "SADD a3 3 4 5",
    "~SINTER a1 a2 a3",
    "~SINTER a1",
    "~SINTER a1 a1",
    "SINTER a1 nokey",
    "SINTER nokey a1",
    "SINTER nokey str",
    "SINTER a1 str",
    "SINTER str nokey",
    "SINTERCARD 3 a1 a2 a3",
    "SINTERCARD 3 a1 a2 a3 LIMIT 1",
    "SINTERCARD 3 a1 a2 a3 limit 2",
    "SINTERCARD 1 a1 LIMIT 0",
    "SINTERCARD 1 a1 LIMIT 3",
    "SINTERCARD 1 a1 LIMIT 1 LIMIT 0",
    "SINTERCARD 2 a1 nokey",
    "SINTERCARD 0 a1",
    "SINTERCARD -1 a1",
    "SINTERCARD x a1",
    "SINTERCARD 3 a1 a2",
    "SINTERCARD 1 a1 LIMIT",
    "SINTERCARD 1 a1 LIMIT -1",
    "SINTERCARD 1 a1 LIMIT x",
    "SINTERCARD 1 a1 FOO",
    "SINTERCARD 2 a1 str",
    "SINTERCARD 1 str",
    "SINTERCARD 2 nokey str",
    "SINTERSTORE d a1 a2",
    "~SMEMBERS d",
    "OBJECT ENCODING d",
    "SINTERSTORE d a1 a2 a3 nokey",
    "EXISTS d",
    "SINTERSTORE d a1 nokey",
    "SINTERSTORE str a1 a2",
    "TYPE str",
    "SET str v",
    "SINTERSTORE d str a1",
    "SINTERSTORE d a1",
    "OBJECT ENCODING d",
    "SINTERSTORE d a3",
    "OBJECT ENCODING d",
    "SET d2 v",
    "EXPIRE d2 100",
    "SINTERSTORE d2 a1 a2",
    "TTL d2",
    "TYPE d2",
    "~SUNION a1 a2",
    "~SUNION a1 a2 a3 nokey",
    "SUNION nokey",
    "SUNION nokey nokey2",
    "SUNION a1 str",
    "SUNION nokey str",
    "SUNIONSTORE u a1 a2 a3",
    "OBJECT ENCODING u",
    "~SMEMBERS u",
    "SUNIONSTORE u a3 mi3",
    "OBJECT ENCODING u",
    "SUNIONSTORE u nokey",
    "EXISTS u",
    "SUNIONSTORE u str",
    "~SDIFF a1 a2 a3",
    "~SDIFF a1 a2",
    "~SDIFF a1",
    "SDIFF a1 a1",
    "SDIFF a1 a2 a1",
    "SDIFF nokey a1",
    "~SDIFF a1 nokey",
    "SDIFF a1 str",
    "SDIFF nokey str",
    "SDIFFSTORE df a1 a2 a3",
    "OBJECT ENCODING df",
    "~SMEMBERS df",
    "SDIFFSTORE df a3 a1",
    "OBJECT ENCODING df",
    "SDIFFSTORE df a1 a1",
    "EXISTS df",
    "SDIFFSTORE df nokey a1",
    "SDIFFSTORE a1 a1 a2",
    "~SMEMBERS a1",
    // SSCAN on an intset (sorted, so the order is Redis's too).
    "SADD si -5 1 2 3 10 11",
    "SSCAN si 0",
    "SSCAN si 0 COUNT 1",
    "SSCAN si 0 MATCH 1*",
    "SSCAN si 5 MATCH -*",
    "SSCAN si 0 COUNT 0",
    "SSCAN si 0 COUNT x",
    "SSCAN si 0 MATCH",
    "SSCAN si 0 BAR 1",
    "SSCAN si x",
    "SSCAN si -1",
    "SSCAN nokey 0",
    "SSCAN nokey 0 COUNT 0",
    "SSCAN nokey x",
    "TYPE si",
    "OBJECT ENCODING si",
    "SADD keep a",
    "EXPIRE keep 100",
    "SADD keep b",
    "SREM keep a",
    "TTL keep",
];

/// Every element a full HSCAN/SSCAN iteration returns on one side (pairs for HSCAN).
fn scan_all(conn: &mut Conn, command: &[u8], key: &[u8], opts: &[&[u8]]) -> Result<BTreeSet<Vec<Vec<u8>>>, String> {
    let mut cursor = b"0".to_vec();
    let mut seen = BTreeSet::new();
    let pairs = command.eq_ignore_ascii_case(b"HSCAN");
    for _ in 0..100_000 {
        let mut args: Vec<&[u8]> = vec![command, key, &cursor];
        args.extend_from_slice(opts);
        let reply = conn.call(&args).map_err(|e| e.to_string())?;
        let Resp::Agg(b'*', top) = &reply.value else {
            return Err(show(&Ok(reply)));
        };
        let (Some(next), Some(Resp::Agg(_, items))) = (top.first().and_then(|c| c.as_bytes()), top.get(1)) else {
            return Err(show(&Ok(reply.clone())));
        };
        let items: Vec<Vec<u8>> = items.iter().map(|i| i.as_bytes().unwrap_or_default().to_vec()).collect();
        if pairs {
            for p in items.chunks(2) {
                seen.insert(p.to_vec());
            }
        } else {
            for i in items {
                seen.insert(vec![i]);
            }
        }
        cursor = next.to_vec();
        if cursor == b"0" {
            return Ok(seen);
        }
    }
    Err("scan did not end".into())
}

fn check_scan_all(d: &mut DiffPair, command: &str, key: &str, opts: &[&str]) {
    let opts: Vec<&[u8]> = opts.iter().map(|o| o.as_bytes()).collect();
    let i = d.current();
    let (r, o) = d.conns(i);
    let a = scan_all(r, command.as_bytes(), key.as_bytes(), &opts);
    let b = scan_all(o, command.as_bytes(), key.as_bytes(), &opts);
    assert!(a.is_ok(), "{command} {key}: redis failed: {a:?}");
    assert_eq!(a, b, "{command} {key} {opts:?}: full iterations differ");
}

/// One command with the elements generated on the fly: `HSET key f0 v0 f1 v1 ...`.
fn bulk_cmd(parts: &[&str], n: usize, item: impl Fn(usize) -> Vec<String>) -> Vec<Vec<u8>> {
    let mut c: Vec<Vec<u8>> = parts.iter().map(|p| p.as_bytes().to_vec()).collect();
    for i in 0..n {
        c.extend(item(i).into_iter().map(String::into_bytes));
    }
    c
}

fn ok(d: &mut DiffPair, args: &[Vec<u8>]) {
    if let Err(e) = d.check(args) {
        let text = e.to_string();
        let cut = text.char_indices().nth(4000).map_or(text.len(), |(i, _)| i);
        panic!("{}{}", &text[..cut], if cut < text.len() { " [...]" } else { "" });
    }
}

/// A fresh pair. The first command goes out only once the connection is registered: a large
/// command sent right away can meet vermilion's pre-registration "unauthenticated" limit.
fn start() -> DiffPair {
    let mut d = DiffPair::start();
    line(&mut d, "PING");
    d
}

fn line(d: &mut DiffPair, l: &str) {
    ok(d, &cmd(l));
}

#[test]
fn encodings_at_thresholds() {
    let mut d = start();
    // Hashes: 512 entries stay listpack, the 513th converts, and shrinking does not convert back.
    ok(&mut d, &bulk_cmd(&["HSET", "h"], 512, |i| vec![format!("f{i}"), "v".into()]));
    line(&mut d, "OBJECT ENCODING h");
    line(&mut d, "HSET h f0 again");
    line(&mut d, "OBJECT ENCODING h");
    line(&mut d, "HSET h f512 v");
    line(&mut d, "OBJECT ENCODING h");
    ok(&mut d, &bulk_cmd(&["HDEL", "h"], 510, |i| vec![format!("f{i}")]));
    line(&mut d, "HLEN h");
    line(&mut d, "OBJECT ENCODING h");
    check_scan_all(&mut d, "HSCAN", "h", &[]);
    // Lengths: 64 bytes stay, 65 convert (field or value).
    let s64 = "y".repeat(64);
    let s65 = "y".repeat(65);
    for (k, f, v) in [("l1", &s64, &s64), ("l2", &s65, &"v".to_string()), ("l3", &"f".to_string(), &s65)] {
        ok(&mut d, &[b"HSET".to_vec(), k.into(), f.clone().into_bytes(), v.clone().into_bytes()]);
        line(&mut d, &format!("OBJECT ENCODING {k}"));
    }
    // Thresholds read at write time after CONFIG SET.
    line(&mut d, "CONFIG SET hash-max-listpack-entries 2");
    line(&mut d, "CONFIG SET hash-max-listpack-value 3");
    line(&mut d, "HSET c1 a 1 b 2");
    line(&mut d, "OBJECT ENCODING c1");
    line(&mut d, "HSET c1 c 3");
    line(&mut d, "OBJECT ENCODING c1");
    line(&mut d, "HSET c2 abc xyz");
    line(&mut d, "OBJECT ENCODING c2");
    line(&mut d, "HSET c2 abcd 1");
    line(&mut d, "OBJECT ENCODING c2");
    line(&mut d, "HSET c3 a 1");
    line(&mut d, "HINCRBYFLOAT c3 a 0.5");
    line(&mut d, "OBJECT ENCODING c3");
    line(&mut d, "HINCRBYFLOAT c3 a 1000");
    line(&mut d, "OBJECT ENCODING c3");
    line(&mut d, "CONFIG SET hash-max-listpack-entries 0");
    line(&mut d, "HSET c4 a 1");
    line(&mut d, "OBJECT ENCODING c4");
    line(&mut d, "CONFIG SET hash-max-listpack-entries 512");
    line(&mut d, "CONFIG SET hash-max-listpack-value 64");
    line(&mut d, "OBJECT ENCODING c4");
    line(&mut d, "HSET c5 a 1");
    line(&mut d, "OBJECT ENCODING c5");
    line(&mut d, "CONFIG SET hash-max-ziplist-entries 1");
    line(&mut d, "HSET c5 b 1");
    line(&mut d, "OBJECT ENCODING c5");
    line(&mut d, "CONFIG SET hash-max-ziplist-entries 512");

    // Sets: intset up to 512 integers, then hashtable; any non-integer converts.
    ok(&mut d, &bulk_cmd(&["SADD", "s"], 512, |i| vec![format!("{}", i as i64 - 100)]));
    line(&mut d, "OBJECT ENCODING s");
    line(&mut d, "SADD s 0");
    line(&mut d, "OBJECT ENCODING s");
    line(&mut d, "SADD s 100000");
    line(&mut d, "OBJECT ENCODING s");
    ok(&mut d, &bulk_cmd(&["SREM", "s"], 500, |i| vec![format!("{}", i as i64 - 100)]));
    line(&mut d, "OBJECT ENCODING s");
    check_scan_all(&mut d, "SSCAN", "s", &[]);
    for (k, first) in
        [("t1", "a"), ("t2", "1"), ("t3", "007"), ("t4", "-0"), ("t5", "9223372036854775807"), ("t6", "9223372036854775808"), ("t7", " 1")]
    {
        line(&mut d, &format!("SADD {k} '{first}'"));
        line(&mut d, &format!("OBJECT ENCODING {k}"));
    }
    line(&mut d, "SADD t2 -1 2");
    line(&mut d, "OBJECT ENCODING t2");
    line(&mut d, "SADD t2 x");
    line(&mut d, "OBJECT ENCODING t2");
    line(&mut d, "SREM t2 x");
    line(&mut d, "OBJECT ENCODING t2");
    line(&mut d, "SADD t8 1 a");
    line(&mut d, "OBJECT ENCODING t8");
    line(&mut d, "SADD t9 a 1");
    line(&mut d, "OBJECT ENCODING t9");
    line(&mut d, "SREM t9 a");
    line(&mut d, "OBJECT ENCODING t9");
    // Stored results are built fresh: an intset while they can be.
    line(&mut d, "SINTERSTORE r1 t9 t9");
    line(&mut d, "OBJECT ENCODING r1");
    line(&mut d, "SUNIONSTORE r2 t8");
    line(&mut d, "OBJECT ENCODING r2");
    line(&mut d, "SDIFFSTORE r3 t8 t9");
    line(&mut d, "OBJECT ENCODING r3");
    line(&mut d, "SMEMBERS r3");
    line(&mut d, "SUNIONSTORE r4 s");
    line(&mut d, "OBJECT ENCODING r4");
    line(&mut d, "CONFIG SET set-max-intset-entries 3");
    line(&mut d, "SADD u1 1 2 3");
    line(&mut d, "OBJECT ENCODING u1");
    line(&mut d, "SADD u1 4");
    line(&mut d, "OBJECT ENCODING u1");
    line(&mut d, "SUNIONSTORE u2 u1");
    line(&mut d, "OBJECT ENCODING u2");
    line(&mut d, "SINTERSTORE u3 u1");
    line(&mut d, "OBJECT ENCODING u3");
    // SPOP of most of a set rebuilds it from the few members that stay (Redis's case 3).
    ok(&mut d, &bulk_cmd(&["SADD", "sp"], 20, |i| vec![format!("{i}")]));
    line(&mut d, "OBJECT ENCODING sp");
    let (a, b) = d.exchange(&cmd("SPOP sp 18"));
    assert!(
        matches!((&a, &b), (Ok(x), Ok(y)) if matches!((&x.value, &y.value), (Resp::Agg(b'*', p), Resp::Agg(b'*', q)) if p.len() == 18 && q.len() == 18)),
        "{} / {}",
        show(&a),
        show(&b)
    );
    line(&mut d, "SCARD sp");
    line(&mut d, "OBJECT ENCODING sp");
    // A few pops keep the encoding (Redis's case 2).
    ok(&mut d, &bulk_cmd(&["SADD", "sq"], 20, |i| vec![format!("{i}")]));
    let _ = d.exchange(&cmd("SPOP sq 2"));
    line(&mut d, "SCARD sq");
    line(&mut d, "OBJECT ENCODING sq");
    line(&mut d, "CONFIG SET set-max-intset-entries 0");
    line(&mut d, "SADD u4 1");
    line(&mut d, "OBJECT ENCODING u4");
    line(&mut d, "CONFIG SET set-max-intset-entries 512");
    line(&mut d, "SMOVE u1 u5 1");
    line(&mut d, "OBJECT ENCODING u5");
    line(&mut d, "SMOVE t1 u6 a");
    line(&mut d, "OBJECT ENCODING u6");
}

#[test]
fn scans_of_large_collections() {
    let mut d = start();
    ok(&mut d, &bulk_cmd(&["HSET", "h"], 3000, |i| vec![format!("field:{i}"), format!("{i}")]));
    ok(&mut d, &bulk_cmd(&["SADD", "s"], 3000, |i| vec![format!("m:{i}")]));
    ok(&mut d, &bulk_cmd(&["SADD", "si"], 3000, |i| vec![format!("{i}")]));
    for (c, k) in [("HSCAN", "h"), ("SSCAN", "s"), ("SSCAN", "si")] {
        check_scan_all(&mut d, c, k, &[]);
        check_scan_all(&mut d, c, k, &["COUNT", "1"]);
        check_scan_all(&mut d, c, k, &["COUNT", "1000"]);
        check_scan_all(&mut d, c, k, &["MATCH", "*1*", "COUNT", "7"]);
    }
    // One call with a large COUNT on a hashtable returns at least COUNT elements when it can.
    for (c, k) in [("HSCAN", "h"), ("SSCAN", "s")] {
        let reply = d.ours_call(&[c.as_bytes(), k.as_bytes(), b"0", b"COUNT", b"100"]).unwrap();
        let Resp::Agg(_, top) = &reply.value else { panic!() };
        let Resp::Agg(_, items) = &top[1] else { panic!() };
        let per = if c == "HSCAN" { 2 } else { 1 };
        assert!(items.len() >= 100 * per, "{c}: only {} items", items.len());
    }
    // Elements present throughout an iteration are all returned even while the set changes.
    let i = d.current();
    let (_, ours) = d.conns(i);
    let mut cursor = b"0".to_vec();
    let mut seen = BTreeSet::new();
    let mut round = 0;
    loop {
        let reply = ours.call(&[&b"SSCAN"[..], b"s", &cursor, b"COUNT", b"50"]).unwrap();
        let Resp::Agg(_, top) = &reply.value else { panic!() };
        let Resp::Agg(_, items) = &top[1] else { panic!() };
        for it in items {
            seen.insert(it.as_bytes().unwrap().to_vec());
        }
        cursor = top[0].as_bytes().unwrap().to_vec();
        round += 1;
        let mut c: Vec<Vec<u8>> = vec![if round % 2 == 0 { b"SADD".to_vec() } else { b"SREM".to_vec() }, b"s".to_vec()];
        c.extend((0..400).map(|j| format!("tmp:{}", j + (round / 2) * 400).into_bytes()));
        ours.call(&c).unwrap();
        if cursor == b"0" {
            break;
        }
    }
    for i in 0..3000 {
        assert!(seen.contains(format!("m:{i}").as_bytes()), "SSCAN missed m:{i}");
    }
}

// ---------------------------------------------------------------------------------------
// Seeded random sequences.

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

fn seed_and_seconds() -> (u64, u64) {
    let seconds = std::env::var("DIFF_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(8);
    let seed = std::env::var("DIFF_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        let t = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        t.as_secs() ^ ((t.subsec_nanos() as u64) << 20)
    });
    (seed, seconds)
}

/// How a random command's replies are compared.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Check {
    Plain(Cmp),
    /// HRANDFIELD/SRANDMEMBER: shape and membership against a snapshot of the key.
    Random,
    /// SPOP: sizes and membership, then the key is rewritten identically on both sides.
    Pop,
    /// HSCAN/SSCAN: full iterations compared as sets.
    Scan,
}

const HKEYS: &[&str] = &["h1", "h2", "h3", "str", "s1", "nokey"];
const FIELDS: &[&str] = &["f0", "f1", "f2", "f3", "n", "x", "''", "f\\x00"];
const HVALUES: &[&str] = &["v", "1", "-3", "10", "1.5", "abc", "''", "9223372036854775807", "-9223372036854775808", "007", "1e3", "LONG"];
const INCRS: &[&str] =
    &["1", "-1", "0", "100", "x", "1.5", "9223372036854775807", "-9223372036854775808", "''", "0.5", "-2.5e2", "inf", "1e400"];

fn val(rng: &mut Rng, pool: &[&str]) -> String {
    let v = rng.pick(pool);
    if v == "LONG" {
        "z".repeat(60 + rng.below(10))
    } else {
        v.to_string()
    }
}

fn hash_command(rng: &mut Rng) -> (String, Check) {
    use Check::*;
    let key = rng.pick(HKEYS);
    let f = rng.pick(FIELDS);
    let plain = Plain(Cmp::Exact);
    let n = rng.below(22);
    let (c, chk) = match n {
        0..=2 => {
            let mut c = format!("HSET {key}");
            for _ in 0..1 + rng.below(3) {
                c += &format!(" {} {}", rng.pick(FIELDS), val(rng, HVALUES));
            }
            if rng.chance(5) {
                c += " extra";
            }
            (c, plain)
        }
        3 => (format!("HMSET {key} {f} {}", val(rng, HVALUES)), plain),
        4 => (format!("HSETNX {key} {f} {}", val(rng, HVALUES)), plain),
        5 => (format!("HGET {key} {f}"), plain),
        6 => (format!("HMGET {key} {f} {} {}", rng.pick(FIELDS), rng.pick(FIELDS)), plain),
        7 => (format!("HGETALL {key}"), Plain(Cmp::UnorderedPairs)),
        8 => (format!("HDEL {key} {f} {}", rng.pick(FIELDS)), plain),
        9 => (format!("HLEN {key}"), plain),
        10 => (format!("HEXISTS {key} {f}"), plain),
        11 => (format!("HKEYS {key}"), Plain(Cmp::Unordered)),
        12 => (format!("HVALS {key}"), Plain(Cmp::Unordered)),
        13 => (format!("HINCRBY {key} {f} {}", rng.pick(INCRS)), plain),
        14 => (format!("HINCRBYFLOAT {key} {f} {}", rng.pick(INCRS)), plain),
        15 => (format!("HSTRLEN {key} {f}"), plain),
        16 => {
            let count = rng.pick(&["", "0", "1", "2", "3", "5", "-1", "-4", "x"]);
            let wv = if !count.is_empty() && rng.chance(50) { rng.pick(&[" WITHVALUES", " withvalues", " WITH"]) } else { "" };
            (format!("HRANDFIELD {key} {count}{wv}"), Random)
        }
        17 => {
            let opts = rng.pick(&["", " COUNT 1", " COUNT 3", " MATCH f*", " MATCH *1* COUNT 2"]);
            (format!("HSCAN {key} 0{opts}"), Scan)
        }
        18 => (
            rng.pick(&["HSCAN h1 0 COUNT 0", "HSCAN h1 x", "HSCAN h1 0 MATCH", "HGET h1", "HSET h1 a", "HINCRBY h1 f", "HRANDFIELD"])
                .to_string(),
            plain,
        ),
        19 => (format!("OBJECT ENCODING {key}"), plain),
        20 => (format!("DEL {key}"), plain),
        _ => (format!("{} {key}", rng.pick(&["TYPE", "EXISTS"])), plain),
    };
    (c.replace("LONG", &"z".repeat(65)), chk)
}

const SKEYS: &[&str] = &["s1", "s2", "s3", "str", "h1", "nokey"];
const MEMBERS: &[&str] = &["1", "2", "3", "-4", "10", "a", "b", "c", "''", "007", "9223372036854775807", "x\\x00"];

fn set_command(rng: &mut Rng) -> (String, Check) {
    use Check::*;
    let key = rng.pick(SKEYS);
    let m = rng.pick(MEMBERS);
    let plain = Plain(Cmp::Exact);
    let keys = |rng: &mut Rng| (0..1 + rng.below(3)).map(|_| rng.pick(SKEYS)).collect::<Vec<_>>().join(" ");
    match rng.below(22) {
        0..=3 => {
            let n = if rng.chance(60) { 1 + rng.below(6) } else { 1 };
            let ints = rng.chance(50);
            let members: Vec<&str> = (0..n).map(|_| if ints { rng.pick(&MEMBERS[..5]) } else { rng.pick(MEMBERS) }).collect();
            (format!("SADD {key} {}", members.join(" ")), plain)
        }
        4 => (format!("SREM {key} {m} {}", rng.pick(MEMBERS)), plain),
        5 => (format!("SMEMBERS {key}"), Plain(Cmp::Unordered)),
        6 => (format!("SISMEMBER {key} {m}"), plain),
        7 => (format!("SMISMEMBER {key} {m} {}", rng.pick(MEMBERS)), plain),
        8 => (format!("SCARD {key}"), plain),
        9 => (format!("SPOP {key} {}", rng.pick(&["", "", "0", "1", "2", "4", "10", "-1", "x"])), Pop),
        10 => (format!("SRANDMEMBER {key} {}", rng.pick(&["", "0", "1", "2", "3", "10", "-1", "-5", "x"])), Random),
        11 => (format!("SMOVE {key} {} {m}", rng.pick(SKEYS)), plain),
        12 => (format!("SINTER {}", keys(rng)), Plain(Cmp::Unordered)),
        13 => {
            let n = 1 + rng.below(3);
            let ks: Vec<&str> = (0..n).map(|_| rng.pick(SKEYS)).collect();
            let numkeys = if rng.chance(90) { n.to_string() } else { rng.pick(&["0", "5", "x"]).to_string() };
            let limit = rng.pick(&["", "", " LIMIT 1", " LIMIT 2", " LIMIT 0", " LIMIT -1"]);
            (format!("SINTERCARD {numkeys} {}{limit}", ks.join(" ")), plain)
        }
        14 => (format!("SINTERSTORE {} {}", rng.pick(SKEYS), keys(rng)), plain),
        15 => (format!("SUNION {}", keys(rng)), Plain(Cmp::Unordered)),
        16 => (format!("SUNIONSTORE {} {}", rng.pick(SKEYS), keys(rng)), plain),
        17 => (format!("SDIFF {}", keys(rng)), Plain(Cmp::Unordered)),
        18 => (format!("SDIFFSTORE {} {}", rng.pick(SKEYS), keys(rng)), plain),
        19 => (format!("SSCAN {key} 0{}", rng.pick(&["", " COUNT 1", " MATCH 1*", " MATCH *a* COUNT 2"])), Scan),
        20 => (format!("OBJECT ENCODING {key}"), plain),
        _ => (
            rng.pick(&["DEL s1", "DEL s2", "TYPE s3", "SSCAN s1 0 COUNT 0", "SSCAN s1 x", "SPOP s1 1 2", "SINTERCARD 1", "SADD s1"])
                .to_string(),
            plain,
        ),
    }
}

/// A flat list of the strings in an aggregate reply (or `None` for anything else).
fn elements(r: &Resp) -> Option<(u8, Vec<Resp>)> {
    match r {
        Resp::Agg(t, items) => Some((*t, items.clone())),
        _ => None,
    }
}

/// Compares HRANDFIELD/SRANDMEMBER/SPOP replies: same shape, same length, elements drawn from
/// `snapshot` (field -> value; value empty for sets) with the right values, and distinct when
/// the count is positive.
fn random_replies_ok(a: &Got, b: &Got, snapshot: &BTreeMap<Vec<u8>, Vec<u8>>, distinct: bool, withvalues: bool) -> Result<(), String> {
    let (Ok(a), Ok(b)) = (a, b) else { return Err("broken connection".into()) };
    let check_one = |r: &Resp| -> Result<(), String> {
        let in_key = |f: &[u8], v: Option<&[u8]>| -> Result<(), String> {
            match (snapshot.get(f), v) {
                (None, _) => Err(format!("{} is not in the key", String::from_utf8_lossy(f))),
                (Some(x), Some(v)) if x[..] != *v => Err(format!("wrong value for {}", String::from_utf8_lossy(f))),
                _ => Ok(()),
            }
        };
        match r {
            Resp::Blob(b'$', m) => in_key(m, None),
            Resp::Agg(_, items) => {
                let mut fields: Vec<&[u8]> = Vec::new();
                let nested = withvalues && items.iter().all(|i| matches!(i, Resp::Agg(b'*', p) if p.len() == 2));
                if nested {
                    for i in items {
                        let Resp::Agg(_, p) = i else { unreachable!() };
                        let (f, v) = (p[0].as_bytes().ok_or("not a string")?, p[1].as_bytes().ok_or("not a string")?);
                        in_key(f, Some(v))?;
                        fields.push(f);
                    }
                } else if withvalues {
                    for p in items.chunks(2) {
                        let f = p[0].as_bytes().ok_or("not a string")?;
                        let v = p.get(1).and_then(|v| v.as_bytes()).ok_or("odd pairs")?;
                        in_key(f, Some(v))?;
                        fields.push(f);
                    }
                } else {
                    for i in items {
                        let f = i.as_bytes().ok_or("not a string")?;
                        in_key(f, None)?;
                        fields.push(f);
                    }
                }
                let set: BTreeSet<&[u8]> = fields.iter().copied().collect();
                if distinct && set.len() != fields.len() {
                    return Err("repeated element".into());
                }
                Ok(())
            }
            _ => Ok(()),
        }
    };
    match (&a.value, &b.value) {
        (Resp::Agg(ta, ia), Resp::Agg(tb, ib)) => {
            if ta != tb || ia.len() != ib.len() {
                return Err("shapes differ".into());
            }
            check_one(&a.value)?;
            check_one(&b.value)
        }
        (Resp::Blob(b'$', _), Resp::Blob(b'$', _)) => {
            check_one(&a.value)?;
            check_one(&b.value)
        }
        _ if a.raw == b.raw => Ok(()),
        _ => Err("replies differ".into()),
    }
}

/// The key's content on redis, for membership checks: field -> value, or member -> "".
fn snapshot(d: &mut DiffPair, key: &[u8]) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut out = BTreeMap::new();
    let t = d.redis_call(&[&b"TYPE"[..], key]).ok().and_then(|r| r.value.as_bytes().map(|b| b.to_vec())).unwrap_or_default();
    if t == b"hash" {
        if let Ok(r) = d.redis_call(&[&b"HGETALL"[..], key]) {
            if let Some((_, items)) = elements(&r.value) {
                for p in items.chunks(2) {
                    out.insert(p[0].as_bytes().unwrap_or_default().to_vec(), p[1].as_bytes().unwrap_or_default().to_vec());
                }
            }
        }
    } else if t == b"set" {
        if let Ok(r) = d.redis_call(&[&b"SMEMBERS"[..], key]) {
            if let Some((_, items)) = elements(&r.value) {
                for m in items {
                    out.insert(m.as_bytes().unwrap_or_default().to_vec(), Vec::new());
                }
            }
        }
    }
    out
}

fn run_random(type_name: &str, gen: fn(&mut Rng) -> (String, Check)) {
    let (seed, seconds) = seed_and_seconds();
    eprintln!("{type_name} random differential: DIFF_SEED={seed} DIFF_SECONDS={seconds}");
    let mut rng = Rng(seed);
    let mut d = start();
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let (mut commands, mut sequences) = (0u64, 0u64);
    let mut per_kind: BTreeMap<String, u64> = BTreeMap::new();
    while Instant::now() < deadline {
        sequences += 1;
        d.reset_conns();
        ok(&mut d, &cmd("FLUSHALL"));
        let proto = if rng.chance(30) { 3 } else { 2 };
        assert!(d.hello(proto).unwrap().is_ok());
        let mut history = vec![format!("HELLO {proto}")];
        // Small thresholds make conversions frequent.
        for c in [
            format!("CONFIG SET hash-max-listpack-entries {}", rng.pick(&["2", "3", "5", "512"])),
            format!("CONFIG SET hash-max-listpack-value {}", rng.pick(&["2", "4", "64"])),
            format!("CONFIG SET set-max-intset-entries {}", rng.pick(&["1", "3", "5", "512"])),
            "SET str v".to_string(),
            "HSET h1 a 1".to_string(),
            "SADD s1 1".to_string(),
        ] {
            line(&mut d, &c);
            history.push(c);
        }
        for _ in 0..rng.below(150) + 10 {
            let (text, check) = gen(&mut rng);
            let args = cmd(&text);
            commands += 1;
            *per_kind.entry(String::from_utf8_lossy(&args[0]).to_uppercase()).or_default() += 1;
            history.push(show_cmd(&args));
            let fail = |why: String, history: &[String]| -> ! {
                let from = history.len().saturating_sub(40);
                panic!(
                    "{type_name} random differential FAILED: DIFF_SEED={seed} sequence {sequences}: {why}\n  history (last {}):\n    {}",
                    history.len() - from,
                    history[from..].join("\n    ")
                );
            };
            match check {
                Check::Plain(cmp) => {
                    if let Err(e) = d.check_with(&args, cmp) {
                        fail(e.to_string(), &history);
                    }
                }
                Check::Scan => {
                    let (a, b) = d.exchange(&args);
                    if a.as_ref().is_ok_and(|r| r.value.is_error()) || b.as_ref().is_ok_and(|r| r.value.is_error()) {
                        if !same(&a, &b, Cmp::Exact) {
                            fail(format!("scan error differs: {} / {}", show(&a), show(&b)), &history);
                        }
                    } else {
                        let opts: Vec<&str> = text.split(' ').skip(3).collect();
                        let i = d.current();
                        let (r, o) = d.conns(i);
                        let ka = args[1].clone();
                        let x = scan_all(r, &args[0], &ka, &opts.iter().map(|s| s.as_bytes()).collect::<Vec<_>>());
                        let y = scan_all(o, &args[0], &ka, &opts.iter().map(|s| s.as_bytes()).collect::<Vec<_>>());
                        if x != y {
                            fail(format!("full scans differ: {x:?} / {y:?}"), &history);
                        }
                    }
                }
                Check::Random | Check::Pop => {
                    let key = args[1].clone();
                    let snap = snapshot(&mut d, &key);
                    let (a, b) = d.exchange(&args);
                    let count: Option<i64> = args.get(2).and_then(|c| std::str::from_utf8(c).ok()?.parse().ok());
                    let distinct = count.is_some_and(|c| c > 0);
                    let withvalues = args.get(3).is_some_and(|w| w.eq_ignore_ascii_case(b"withvalues"));
                    if let Err(why) = random_replies_ok(&a, &b, &snap, distinct, withvalues) {
                        fail(format!("{why}\n  sent: {}\n  redis: {}\n  ours:  {}", show_cmd(&args), show(&a), show(&b)), &history);
                    }
                    if check == Check::Pop && a.as_ref().is_ok_and(|r| !r.value.is_error()) {
                        // Both popped different members: make the key identical again.
                        let after = snapshot(&mut d, &key);
                        let card = d.ours_call(&[&b"SCARD"[..], &key]);
                        if card.ok().and_then(|r| r.value.as_int()) != Some(after.len() as i64) {
                            fail(format!("sizes differ after {}", show_cmd(&args)), &history);
                        }
                        ok(&mut d, &[b"DEL".to_vec(), key.clone()]);
                        if !after.is_empty() {
                            let mut c = vec![b"SADD".to_vec(), key.clone()];
                            c.extend(after.keys().cloned());
                            ok(&mut d, &c);
                        }
                        history.push(format!("(resync {} with {} members)", String::from_utf8_lossy(&key), after.len()));
                    }
                }
            }
        }
    }
    line(&mut d, "CONFIG SET hash-max-listpack-entries 512");
    eprintln!(
        "{type_name} random differential: {commands} commands in {sequences} sequences; per command: {}",
        per_kind.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
    );
}

#[test]
fn random_hash_sequences() {
    run_random("hash", hash_command);
}

#[test]
fn random_set_sequences() {
    run_random("set", set_command);
}

// ---------------------------------------------------------------------------------------
// Performance sanity: single-element operations on a 100k-element key stay O(1).

/// Sends `cmds` pipelined on `conn` and reads every reply; returns the elapsed time.
fn pipeline(conn: &mut Conn, cmds: &[Vec<Vec<u8>>]) -> Duration {
    let start = Instant::now();
    for chunk in cmds.chunks(1000) {
        let mut buf = Vec::new();
        for c in chunk {
            buf.extend_from_slice(&encode_cmd(c));
        }
        conn.send(&buf).unwrap();
        for _ in chunk {
            let r = conn.read().unwrap();
            assert!(!r.value.is_error(), "{}", show(&Ok(r.clone())));
        }
    }
    start.elapsed()
}

#[test]
fn big_keys_stay_fast() {
    let server = Server::start(&[]);
    let mut conn = Conn::connect(server.port, Duration::from_secs(30));
    let n = 100_000;
    let batch = 10_000;
    for (name, make) in [
        (
            "HSET",
            (|i: usize| vec![b"HSET".to_vec(), b"h".to_vec(), format!("field:{i}").into_bytes(), b"v".to_vec()])
                as fn(usize) -> Vec<Vec<u8>>,
        ),
        ("SADD", |i| vec![b"SADD".to_vec(), b"s".to_vec(), format!("member:{i}").into_bytes()]),
        ("SADD int", |i| vec![b"SADD".to_vec(), b"si".to_vec(), i.to_string().into_bytes()]),
    ] {
        let mut times = Vec::new();
        for start in (0..n).step_by(batch) {
            let cmds: Vec<Vec<Vec<u8>>> = (start..start + batch).map(make).collect();
            times.push(pipeline(&mut conn, &cmds));
        }
        let (first, last) = (times[0], *times.last().unwrap());
        let total: Duration = times.iter().sum();
        eprintln!("{name}: {n} ops in {total:?} (first batch {first:?}, last {last:?})");
        assert!(last < first * 4 + Duration::from_millis(200), "{name} slows down as the key grows: first {first:?}, last {last:?}");
        assert!(total < Duration::from_secs(30), "{name} too slow: {total:?}");
    }
    // Reads, random picks and removals on the big keys.
    let cmds: Vec<Vec<Vec<u8>>> = (0..batch)
        .flat_map(|i| {
            [
                vec![b"HGET".to_vec(), b"h".to_vec(), format!("field:{i}").into_bytes()],
                vec![b"SISMEMBER".to_vec(), b"s".to_vec(), format!("member:{i}").into_bytes()],
                vec![b"SRANDMEMBER".to_vec(), b"s".to_vec(), b"3".to_vec()],
                vec![b"HRANDFIELD".to_vec(), b"h".to_vec(), b"3".to_vec(), b"WITHVALUES".to_vec()],
                vec![b"SPOP".to_vec(), b"si".to_vec()],
                vec![b"HDEL".to_vec(), b"h".to_vec(), format!("field:{i}").into_bytes()],
                vec![b"SREM".to_vec(), b"s".to_vec(), format!("member:{i}").into_bytes()],
                vec![b"SMOVE".to_vec(), b"s".to_vec(), b"s2".to_vec(), format!("member:{}", i + batch).into_bytes()],
            ]
        })
        .collect();
    let t = pipeline(&mut conn, &cmds);
    eprintln!("{} mixed single-element ops on 100k keys in {t:?}", cmds.len());
    assert!(t < Duration::from_secs(20), "mixed ops too slow: {t:?}");
    let r = conn.call(&[&b"HLEN"[..], b"h"]).unwrap();
    assert_eq!(r.value.as_int(), Some((n - batch) as i64));
    let r = conn.call(&[&b"SCARD"[..], b"si"]).unwrap();
    assert_eq!(r.value.as_int(), Some((n - batch) as i64));
    let r = conn.call(&[&b"OBJECT"[..], b"ENCODING", b"si"]).unwrap();
    assert_eq!(r.value.as_bytes(), Some(&b"hashtable"[..]));
}

/// Keys, set members and sorted-set members of 22, 23 and 24 bytes (the longest kept inside
/// a table slot is 23, see src/db/key.rs) and 40 bytes, through every path that stores,
/// finds, moves, returns or serializes them.
#[test]
fn keys_and_members_at_the_inline_length_limit() {
    let mut d = start();
    let names: Vec<String> = [22usize, 23, 24, 40].iter().map(|&n| format!("{:x<1$}", n, n)).collect();
    let (a, b, c, e) = (&names[0], &names[1], &names[2], &names[3]);
    let text = format!(
        "SADD {b} {a} {b} {c} {e}\n\
         SADD {b} {a} {e}\n\
         SISMEMBER {b} {c}\n\
         SMISMEMBER {b} {a} {b} {c} {e} zz\n\
         ~SMEMBERS {b}\n\
         OBJECT ENCODING {b}\n\
         SMOVE {b} {c} {a}\n\
         SMOVE {b} {c} {e}\n\
         ~SMEMBERS {c}\n\
         SADD {e} {a} {b} 1 2\n\
         ~SINTER {b} {e}\n\
         SINTERSTORE {a} {b} {e}\n\
         ~SMEMBERS {a}\n\
         ~SUNION {b} {e} {c}\n\
         SREM {b} {b} {e}\n\
         ~SMEMBERS {b}\n\
         SORT {e} ALPHA\n\
         ZADD {c}z 1 {a} 1 {b} 1 {c} 1 {e} 0 x\n\
         ZADD {c}z 2 {b}\n\
         ZRANGE {c}z 0 -1 WITHSCORES\n\
         ZSCORE {c}z {c}\n\
         ZRANK {c}z {e}\n\
         ZRANGEBYLEX {c}z [{a} [{c}\n\
         ZUNIONSTORE {e}u 2 {c}z {e}\n\
         ZRANGE {e}u 0 -1 WITHSCORES\n\
         ZPOPMIN {c}z 2\n\
         ZREM {c}z {e}\n\
         ZRANGE {c}z 0 -1 WITHSCORES\n\
         SET {a}s v\n\
         SET {b}s v EX 100\n\
         RENAME {a}s {e}s\n\
         RENAME {b}s {c}\n\
         TYPE {c}\n\
         EXISTS {a} {b} {c} {e} {a}s {e}s\n\
         ~KEYS *\n\
         DEL {a} {e}s"
    );
    let lines: Vec<&str> = text.lines().collect();
    both_protocols(&mut d, "inline length limit", &lines);
    // A DUMP payload made by either server restores on both, members intact.
    for from in [0, 1] {
        d.on(0);
        ok(&mut d, &cmd("FLUSHALL"));
        ok(&mut d, &cmd(&format!("SADD {b} {a} {b} {c} {e}")));
        ok(&mut d, &cmd(&format!("ZADD {a} 1 {a} 2 {b} 3 {c} 4 {e}")));
        for key in [b, a] {
            let (redis, ours) = d.conns(0);
            let payload = match [redis, ours][from].call(&cmd(&format!("DUMP {key}"))).map(|r| r.value) {
                Ok(Resp::Blob(b'$', p)) => p,
                other => panic!("DUMP {key}: {other:?}"),
            };
            let restore = vec![b"RESTORE".to_vec(), format!("{key}r").into_bytes(), b"0".to_vec(), payload];
            let (redis, ours) = d.conns(0);
            for (name, conn) in [("redis", redis), ("vermilion", ours)] {
                assert_eq!(
                    conn.call(&restore).map(|r| r.raw),
                    Ok(b"+OK\r\n".to_vec()),
                    "RESTORE {key}r on {name}, payload of server {from}"
                );
            }
        }
        d.assert_script("restored", &[&format!("~SMEMBERS {b}r"), &format!("ZRANGE {a}r 0 -1 WITHSCORES")]);
    }
}
