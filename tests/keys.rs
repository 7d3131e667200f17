//! Generic key commands: byte-exact differential cases against the real redis-server 7.0
//! (RESP2 and RESP3), SCAN's guarantee under concurrent changes and table resizes, and
//! active expiry.

mod common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use common::{RawConn, Server};

/// Splits a case line into arguments: spaces separate, `\xHH` is a byte, `\s` a space.
fn parse_line(line: &str) -> Vec<Vec<u8>> {
    line.split(' ')
        .map(|word| {
            let b = word.as_bytes();
            let mut out = Vec::new();
            let mut i = 0;
            while i < b.len() {
                if b[i] == b'\\' && i + 1 < b.len() && b[i + 1] == b'x' && i + 3 < b.len() {
                    let hex = std::str::from_utf8(&b[i + 2..i + 4]).unwrap();
                    out.push(u8::from_str_radix(hex, 16).unwrap());
                    i += 4;
                } else if b[i] == b'\\' && i + 1 < b.len() && b[i + 1] == b's' {
                    out.push(b' ');
                    i += 2;
                } else {
                    out.push(b[i]);
                    i += 1;
                }
            }
            out
        })
        .collect()
}

fn call(conn: &mut RawConn, args: &[Vec<u8>]) -> Vec<u8> {
    let refs: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
    conn.call(&refs)
}

fn escape(b: &[u8]) -> String {
    b.iter().flat_map(|&c| std::ascii::escape_default(c)).map(char::from).collect()
}

/// Integers of a flat reply within `tol` of each other, everything else identical.
fn near(a: &[u8], b: &[u8], tol: i64) -> bool {
    let (la, lb): (Vec<&[u8]>, Vec<&[u8]>) = (a.split(|&c| c == b'\n').collect(), b.split(|&c| c == b'\n').collect());
    la.len() == lb.len()
        && la.iter().zip(&lb).all(|(x, y)| {
            if x == y {
                return true;
            }
            let num = |l: &[u8]| -> Option<i64> { std::str::from_utf8(l.strip_prefix(b":")?.strip_suffix(b"\r")?).ok()?.parse().ok() };
            matches!((num(x), num(y)), (Some(p), Some(q)) if (p - q).abs() <= tol)
        })
}

/// The reply's lines sorted (order-insensitive comparison of KEYS and the like).
fn sorted_lines(a: &[u8]) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = a.split(|&c| c == b'\n').map(|l| l.to_vec()).collect();
    v.sort();
    v
}

/// Runs every case on both servers; returns the differences. A case may start with `%`
/// (integers within 1: time-dependent replies), `%%` (within 200: milliseconds) or `~`
/// (element order ignored).
fn run_cases(redis: &mut RawConn, ours: &mut RawConn, cases: &[&str]) -> Vec<String> {
    let mut diffs = Vec::new();
    for case in cases {
        let (mode, line) = if let Some(rest) = case.strip_prefix("%%") {
            (b'm', rest)
        } else if let Some(rest) = case.strip_prefix('%') {
            (b'%', rest)
        } else if let Some(rest) = case.strip_prefix('~') {
            (b'~', rest)
        } else {
            (b'=', &case[..])
        };
        let args = parse_line(line);
        let (r, o) = (call(redis, &args), call(ours, &args));
        let same = match mode {
            b'%' => near(&r, &o, 1),
            b'm' => near(&r, &o, 200),
            b'~' => sorted_lines(&r) == sorted_lines(&o),
            _ => r == o,
        };
        if !same {
            diffs.push(format!("{line}\n   redis: {}\n   ours:  {}", escape(&r), escape(&o)));
        }
    }
    diffs
}

const CASES: &[&str] = &[
    "FLUSHALL",
    "SET s hello",
    "SET n 123",
    "SET n2 12345",
    "SET neg -5",
    "SET big 123456789012345678901234567890",
    "SET long aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "SET bin\\x00key v",
    // DEL / UNLINK / EXISTS / TYPE / TOUCH
    "EXISTS s",
    "EXISTS s s nokey n",
    "EXISTS bin\\x00key bin",
    "EXISTS",
    "TYPE s",
    "TYPE nokey",
    "TYPE",
    "TYPE s s",
    "TOUCH s n nokey s",
    "TOUCH",
    "DEL nokey",
    "DEL bin\\x00key bin\\x00key",
    "DEL",
    "SET d1 x",
    "SET d2 y",
    "UNLINK d1 d2 d3",
    "UNLINK",
    // EXPIRE family
    "EXPIRE nokey 100",
    "EXPIRE s 100",
    "TTL s",
    "%%PTTL s",
    "EXPIRE s 200 NX",
    "EXPIRE s 200 XX",
    "TTL s",
    "EXPIRE s 100 GT",
    "EXPIRE s 300 GT",
    "EXPIRE s 400 LT",
    "EXPIRE s 250 lt",
    "TTL s",
    "EXPIRE s 100 NX XX",
    "EXPIRE s 100 NX GT",
    "EXPIRE s 100 nx lt",
    "EXPIRE s 100 GT LT",
    "EXPIRE s 100 xx gt lt",
    "EXPIRE s 100 FOO",
    "EXPIRE s 100 nx\\x00junk",
    "EXPIRE s 100 GT\\sLT",
    "EXPIRE s abc",
    "EXPIRE s 1.5",
    "EXPIRE s 100 FOO NX XX",
    "EXPIRE nokey abc",
    "EXPIRE nokey 100 FOO",
    "EXPIRE s 9223372036854775807",
    "EXPIRE s 9223372036854775",
    "EXPIRE s -9223372036854775808",
    "EXPIRE s 92233720368547758070",
    "PEXPIRE s 9223372036854775807",
    "EXPIREAT s 9223372036854775808",
    "EXPIREAT s 9223372036854775807",
    "PEXPIREAT s 9223372036854775807 nx",
    "EXPIRE",
    "EXPIRE s",
    "SET p v",
    "EXPIRE p 100 XX",
    "EXPIRE p 100 GT",
    "EXPIRE p 100 LT",
    "TTL p",
    "PERSIST p",
    "PERSIST p",
    "PERSIST nokey",
    "TTL p",
    "PEXPIRE p 100000",
    "TTL p",
    "EXPIREAT p 4102444800",
    "TTL p",
    "EXPIRETIME p",
    "PEXPIRETIME p",
    "PEXPIREAT p 4102444800123",
    "EXPIRETIME p",
    "PEXPIRETIME p",
    "PEXPIREAT p 4102444800499",
    "EXPIRETIME p",
    "PEXPIREAT p 4102444800500",
    "EXPIRETIME p",
    "EXPIRETIME nokey",
    "PEXPIRETIME s2",
    "EXPIRETIME n",
    "PTTL n",
    "TTL n",
    "PTTL nokey",
    "PEXPIREAT p 9223372036854775807",
    "EXPIRETIME p",
    "PEXPIRETIME p",
    "EXPIRE p -1",
    "EXISTS p",
    "TTL p",
    "SET p v",
    "EXPIREAT p 1",
    "EXISTS p",
    "SET p v",
    "PEXPIRE p 0",
    "EXISTS p",
    "SET p v",
    "EXPIRE p 100",
    "EXPIRE p -5 LT",
    "EXISTS p",
    "SET p v",
    "EXPIRE p -5 GT",
    "EXPIRE p -5 XX",
    "EXPIRE p -5 NX",
    "EXISTS p",
    // KEYS
    "~KEYS *",
    "KEYS s",
    "KEYS nomatch*",
    "~KEYS n*",
    "~KEYS ?",
    "~KEYS [sn]*",
    "KEYS bin\\x00*",
    "KEYS",
    // SCAN (small: one call covers everything; results need one key or sorting)
    "~SCAN 0 COUNT 1000",
    "SCAN 0 MATCH s COUNT 1000",
    "SCAN 0 MATCH nomatch COUNT 1000",
    "SCAN 0 MATCH s COUNT 1000 TYPE string",
    "SCAN 0 MATCH s COUNT 1000 TYPE STRING",
    "SCAN 0 MATCH s COUNT 1000 TYPE list",
    "SCAN 0 MATCH s COUNT 1000 TYPE none",
    "SCAN 0 MATCH s count 1000 match n",
    "SCAN abc",
    "SCAN -",
    "SCAN +",
    "SCAN 0x10",
    "SCAN \\s1",
    "SCAN 1\\s",
    "SCAN 18446744073709551616",
    "SCAN 0 COUNT 0",
    "SCAN 0 COUNT -1",
    "SCAN 0 COUNT abc",
    "SCAN 0 COUNT",
    "SCAN 0 MATCH",
    "SCAN 0 TYPE",
    "SCAN 0 FOO bar",
    "SCAN 0 COUNT 0 MATCH",
    "SCAN abc COUNT 0",
    "SCAN",
    // RENAME / RENAMENX
    "RENAME nokey x",
    "RENAMENX nokey x",
    "RENAME s s",
    "RENAMENX s s",
    "RENAME nokey nokey",
    "SET r1 one",
    "EXPIRE r1 500",
    "RENAME r1 r2",
    "EXISTS r1",
    "GET r2",
    "TTL r2",
    "SET r3 three",
    "RENAMENX r2 r3",
    "RENAME r2 r3",
    "GET r3",
    "TTL r3",
    "EXISTS r2",
    "RENAMENX r3 r4",
    "TTL r4",
    "RENAME",
    "RENAME a",
    // MOVE
    "MOVE nokey 1",
    "MOVE s 0",
    "MOVE s 16",
    "MOVE s -1",
    "MOVE s abc",
    "MOVE s 2147483648",
    "MOVE s -2147483649",
    "MOVE s 99999999999999999999",
    "COPY s c1 DB 2147483648",
    "MOVE nokey 99",
    "MOVE nokey 0",
    "SET m mval",
    "EXPIRE m 600",
    "MOVE m 1",
    "EXISTS m",
    "SELECT 1",
    "GET m",
    "TTL m",
    "SET m other",
    "SELECT 0",
    "SET m again",
    "MOVE m 1",
    "GET m",
    // COPY
    "COPY nokey x",
    "COPY s s",
    "COPY s s DB 0",
    "COPY s s DB 1",
    "SELECT 1",
    "GET s",
    "TTL s",
    "SELECT 0",
    "COPY s s DB 1",
    "COPY s s DB 1 REPLACE",
    "COPY s c1",
    "GET c1",
    "TTL c1",
    "COPY s c1",
    "COPY s c1 replace",
    "COPY s c1 DB",
    "COPY s c1 DB abc",
    "COPY s c1 DB 16",
    "COPY s c1 DB -1",
    "COPY s c1 FOO",
    "COPY s c1 DB 16 FOO",
    "COPY s c1 FOO DB 16",
    "COPY s c1 REPLACE REPLACE DB 0",
    "COPY nokey c1 DB 16",
    "COPY n cn",
    "OBJECT ENCODING cn",
    "COPY long cl",
    "OBJECT ENCODING cl",
    "COPY",
    "SET ap abc",
    "APPEND ap def",
    "OBJECT ENCODING ap",
    "COPY ap cap",
    "OBJECT ENCODING cap",
    "SET ai 12",
    "APPEND ai 3",
    "OBJECT ENCODING ai",
    "OBJECT REFCOUNT ai",
    "SETRANGE sr 0 5",
    "OBJECT ENCODING sr",
    "SET z0 0",
    "SET z9 9999",
    "SET z10 10000",
    "SET zm -0",
    "SET zp +5",
    "SET zl 007",
    "OBJECT REFCOUNT z0",
    "OBJECT REFCOUNT z9",
    "OBJECT REFCOUNT z10",
    "OBJECT REFCOUNT zm",
    "OBJECT REFCOUNT zp",
    "OBJECT ENCODING z10",
    "OBJECT ENCODING zm",
    "OBJECT ENCODING zp",
    "OBJECT ENCODING zl",
    "SET e44 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "SET e45 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "OBJECT ENCODING e44",
    "OBJECT ENCODING e45",
    "SET i20 12345678901234567890",
    "SET i19 1234567890123456789",
    "OBJECT ENCODING i20",
    "OBJECT ENCODING i19",
    "SCAN 5\\x00a COUNT 1000 MATCH nomatch",
    "SCAN  COUNT 1000 MATCH s",
    "EXPIRE s +5",
    "EXPIRE s 05",
    "EXPIRE s \\s5",
    // OBJECT
    "OBJECT ENCODING s",
    "OBJECT ENCODING n",
    "OBJECT ENCODING neg",
    "OBJECT ENCODING big",
    "OBJECT ENCODING long",
    "OBJECT ENCODING nokey",
    "OBJECT REFCOUNT s",
    "OBJECT REFCOUNT n",
    "OBJECT REFCOUNT n2",
    "OBJECT REFCOUNT neg",
    "OBJECT REFCOUNT nokey",
    "%OBJECT IDLETIME s",
    "OBJECT IDLETIME nokey",
    "OBJECT FREQ s",
    "OBJECT FREQ nokey",
    "OBJECT HELP",
    "OBJECT help",
    "OBJECT HELP x",
    "OBJECT",
    "OBJECT FOO",
    "OBJECT FOO s",
    "OBJECT ENCODING",
    "OBJECT ENCODING s s",
    "CONFIG SET maxmemory-policy allkeys-lfu",
    "SET f fresh",
    "OBJECT FREQ f",
    "GET f",
    "OBJECT FREQ f",
    "OBJECT FREQ nokey",
    "OBJECT IDLETIME f",
    "OBJECT IDLETIME nokey",
    "CONFIG SET maxmemory-policy noeviction",
    // RANDOMKEY / DBSIZE / SWAPDB / FLUSHDB / FLUSHALL
    "SELECT 5",
    "RANDOMKEY",
    "DBSIZE",
    "SET only one",
    "RANDOMKEY",
    "DBSIZE",
    "RANDOMKEY x",
    "DBSIZE x",
    "SELECT 0",
    "SWAPDB 0 5",
    "DBSIZE",
    "GET only",
    "SWAPDB 5 0",
    "DBSIZE",
    "SWAPDB 0 0",
    "SWAPDB a 0",
    "SWAPDB 0 a",
    "SWAPDB a b",
    "SWAPDB 0 16",
    "SWAPDB -1 0",
    "SWAPDB 0 2147483648",
    "SWAPDB 2147483648 a",
    "SWAPDB 0",
    "FLUSHDB x",
    "FLUSHDB sync x",
    "FLUSHDB async a",
    "FLUSHALL x",
    "FLUSHALL sync x",
    "SELECT 5",
    "FLUSHDB SYNC",
    "DBSIZE",
    "SELECT 1",
    "FLUSHDB async",
    "DBSIZE",
    "SELECT 0",
    "~KEYS *",
    "FLUSHALL ASYNC",
    "DBSIZE",
    "SET x 1",
    "FLUSHALL sync",
    "SET x 1",
    "FLUSHALL",
    "FLUSHDB",
    "DBSIZE",
    "RANDOMKEY",
    "SCAN 0",
    "SCAN 123",
    "SCAN -1",
    "KEYS *",
];

#[test]
fn differential_against_redis() {
    let redis = Server::start_redis(&[]);
    let ours = Server::start(&[]);
    let mut all = Vec::new();
    for resp3 in [false, true] {
        let (mut r, mut o) = (redis.raw(), ours.raw());
        if resp3 {
            r.call(&[b"HELLO", b"3"]);
            o.call(&[b"HELLO", b"3"]);
        }
        for d in run_cases(&mut r, &mut o, CASES) {
            all.push(format!("[{}] {d}", if resp3 { "RESP3" } else { "RESP2" }));
        }
    }
    assert!(all.is_empty(), "{} of {} cases differ; first:\n{}", all.len(), 2 * CASES.len(), all[..all.len().min(10)].join("\n"));
}

/// Expired keys are invisible everywhere and deleted lazily, like Redis.
#[test]
fn lazy_expiry_matches_redis() {
    let redis = Server::start_redis(&["--enable-debug-command", "yes"]);
    let ours = Server::start(&[]);
    let (mut r, mut o) = (redis.raw(), ours.raw());
    // Only lazy expiry: the active cycle would race with the checks.
    let setup = [
        "DEBUG SET-ACTIVE-EXPIRE 0",
        "SET a 1",
        "SET b 2",
        "SET c 3",
        "SET keep 4",
        "PEXPIRE a 30",
        "PEXPIRE b 30",
        "PEXPIRE c 30",
        "SET d 5",
        "PEXPIRE d 30",
    ];
    let diffs = run_cases(&mut r, &mut o, &setup);
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
    std::thread::sleep(Duration::from_millis(80));
    let cases = [
        "SCAN 0 MATCH a COUNT 100 TYPE none",
        "SCAN 0 MATCH a COUNT 100",
        "EXISTS a",
        "TTL b",
        "TYPE c",
        "KEYS *",
        "SCAN 0 COUNT 100",
        "SCAN 0 COUNT 100 TYPE string",
        "RANDOMKEY",
        "RENAME d x",
        "OBJECT ENCODING a",
        "DBSIZE",
        "MOVE keep 1",
        "RANDOMKEY",
        "DBSIZE",
    ];
    let diffs = run_cases(&mut r, &mut o, &cases);
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

/// Sends `cmds` pipelined and reads every reply.
fn pipeline(conn: &mut RawConn, cmds: &[Vec<Vec<u8>>]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for args in cmds {
        out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
    }
    conn.send(&out);
    cmds.iter().map(|_| conn.read_reply()).collect()
}

fn set_cmd(key: &str, extra: &[&str]) -> Vec<Vec<u8>> {
    let mut v = vec![b"SET".to_vec(), key.as_bytes().to_vec(), b"v".to_vec()];
    v.extend(extra.iter().map(|e| e.as_bytes().to_vec()));
    v
}

/// Parses a RESP2 SCAN reply into (cursor, keys).
fn parse_scan(reply: &[u8]) -> (u64, Vec<Vec<u8>>) {
    let lines: Vec<&[u8]> = reply.split(|&c| c == b'\n').map(|l| l.strip_suffix(b"\r").unwrap_or(l)).collect();
    assert_eq!(lines[0], b"*2", "not a SCAN reply: {}", escape(reply));
    let cursor = std::str::from_utf8(lines[2]).unwrap().parse().unwrap();
    let n: usize = std::str::from_utf8(&lines[3][1..]).unwrap().parse().unwrap();
    let keys = (0..n).map(|i| lines[5 + 2 * i].to_vec()).collect();
    (cursor, keys)
}

#[test]
fn scan_returns_every_stable_key_across_resizes() {
    let server = Server::start(&[]);
    let mut c = server.raw();
    let stable: Vec<String> = (0..3000).map(|i| format!("stay:{i}")).collect();
    let cmds: Vec<_> = stable.iter().map(|k| set_cmd(k, &[])).collect();
    assert!(pipeline(&mut c, &cmds).iter().all(|r| r == b"+OK\r\n"));

    let mut seen = HashSet::new();
    let mut cursor = 0u64;
    let mut round = 0;
    let mut tmp: Vec<String> = Vec::new();
    loop {
        let reply = c.call(&[b"SCAN", cursor.to_string().as_bytes(), b"COUNT", b"50"]);
        let (next, keys) = parse_scan(&reply);
        seen.extend(keys);
        cursor = next;
        round += 1;
        // Between calls: grow the table a lot, or shrink it back, or churn.
        if round % 5 == 0 {
            let add: Vec<String> = (0..4000).map(|j| format!("tmp:{round}:{j}")).collect();
            pipeline(&mut c, &add.iter().map(|k| set_cmd(k, &[])).collect::<Vec<_>>());
            tmp.extend(add);
        } else if round % 7 == 0 && !tmp.is_empty() {
            let mut del = vec![b"DEL".to_vec()];
            del.extend(tmp.drain(..).map(String::into_bytes));
            pipeline(&mut c, &[del]);
        } else {
            let mut del = vec![b"UNLINK".to_vec()];
            del.extend(tmp.iter().take(100).map(|k| k.as_bytes().to_vec()));
            pipeline(&mut c, &[del]);
        }
        if cursor == 0 {
            break;
        }
        assert!(round < 100_000, "scan does not terminate");
    }
    let missing: Vec<&String> = stable.iter().filter(|k| !seen.contains(k.as_bytes())).collect();
    assert!(
        missing.is_empty(),
        "{} stable keys never returned, e.g. {:?} ({round} calls)",
        missing.len(),
        &missing[..missing.len().min(5)]
    );

    // MATCH and TYPE filter within one full pass.
    let reply = c.call(&[b"SCAN", b"0", b"MATCH", b"stay:12*", b"COUNT", b"100000", b"TYPE", b"string"]);
    let (cursor, keys) = parse_scan(&reply);
    assert_eq!(cursor, 0);
    assert_eq!(keys.len(), 111, "stay:12, stay:120..129, stay:1200..1299");
}

#[test]
fn active_expiry_removes_untouched_keys() {
    let server = Server::start(&[]);
    let mut c = server.raw();
    let cmds: Vec<_> = (0..2000).map(|i| set_cmd(&format!("vol:{i}"), &["PX", "100"])).collect();
    assert!(pipeline(&mut c, &cmds).iter().all(|r| r == b"+OK\r\n"));
    assert_eq!(c.call(&[b"SET", b"persistent", b"v"]), b"+OK\r\n");
    let start = Instant::now();
    loop {
        let size = c.call(&[b"DBSIZE"]);
        if size == b":1\r\n" {
            break;
        }
        assert!(start.elapsed() < Duration::from_millis(2500), "DBSIZE still {} after {:?}", escape(&size), start.elapsed());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(c.call(&[b"EXISTS", b"persistent"]), b":1\r\n");
}

/// OBJECT IDLETIME counts from the last access; OBJECT itself, TYPE, TTL and EXISTS do not
/// count as accesses; TOUCH and GET do.
#[test]
fn idletime_follows_accesses() {
    let server = Server::start(&[]);
    let mut c = server.raw();
    assert_eq!(c.call(&[b"SET", b"k", b"v"]), b"+OK\r\n");
    assert_eq!(c.call(&[b"OBJECT", b"IDLETIME", b"k"]), b":0\r\n");
    std::thread::sleep(Duration::from_millis(2100));
    for cmd in [&[&b"TYPE"[..], b"k"][..], &[b"TTL", b"k"], &[b"EXISTS", b"k"], &[b"OBJECT", b"ENCODING", b"k"]] {
        c.call(cmd);
    }
    let idle = c.call(&[b"OBJECT", b"IDLETIME", b"k"]);
    assert!(idle == b":2\r\n" || idle == b":3\r\n", "{}", escape(&idle));
    c.call(&[b"TOUCH", b"k"]);
    assert_eq!(c.call(&[b"OBJECT", b"IDLETIME", b"k"]), b":0\r\n");
}
