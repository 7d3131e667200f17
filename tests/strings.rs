//! String commands, differentially: every case runs on vermilion and on the real redis-server
//! 7.0, and the raw reply bytes must be identical (RESP2, and RESP3 after HELLO 3).
//!
//! Cases are written one command per line, arguments separated by spaces; `''` is the empty
//! argument, `\0` a NUL byte, `\s` a space. `SLEEP ms` pauses the test, `STAT name` compares a field of INFO stats, and `HELLO` replies
//! (which carry the client id) are not compared. A section that needs commands outside this
//! group (lists, TTL, OBJECT) is skipped, with a notice, while vermilion lacks them.

mod common;

use common::{RawConn, Server};

/// A group of cases, run in its own database.
struct Section {
    name: &'static str,
    /// Commands vermilion must implement for the section to be meaningful.
    requires: &'static [&'static str],
    cases: String,
}

fn parse_line(line: &str) -> Vec<Vec<u8>> {
    line.split(' ')
        .filter(|t| !t.is_empty())
        .map(|t| if t == "''" { Vec::new() } else { t.replace("\\0", "\0").replace("\\s", " ").into_bytes() })
        .collect()
}

fn show(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

fn call(conn: &mut RawConn, args: &[Vec<u8>]) -> Vec<u8> {
    let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
    conn.call(&refs)
}

/// True if `reply` says the command does not exist (yet) on this server.
fn unsupported(reply: &[u8]) -> bool {
    reply.starts_with(b"-ERR not implemented") || reply.starts_with(b"-ERR unknown command")
}

/// The `name:value` line of an INFO reply.
fn stat(info: &[u8], name: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(info);
    let prefix = format!("{}:", String::from_utf8_lossy(name));
    text.split("\r\n").find(|l| l.starts_with(&prefix)).map(|l| l.to_string())
}

/// Deterministic pseudo-random strings over a small alphabet, for LCS.
fn lcs_cases() -> String {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut out = String::new();
    for i in 0..40 {
        let alphabet = if i % 2 == 0 { &b"ab"[..] } else { &b"abcd"[..] };
        let (la, lb) = (next() % 24, next() % 24);
        let mut word = |n: u64| -> String { (0..n).map(|_| alphabet[(next() % alphabet.len() as u64) as usize] as char).collect() };
        let (a, b) = (word(la), word(lb));
        let (a, b) = (if a.is_empty() { "''".to_string() } else { a }, if b.is_empty() { "''".to_string() } else { b });
        out.push_str(&format!("MSET ra{i} {a} rb{i} {b}\nLCS ra{i} rb{i}\nLCS ra{i} rb{i} LEN\nLCS ra{i} rb{i} IDX WITHMATCHLEN\n"));
        out.push_str(&format!("LCS rb{i} ra{i} IDX MINMATCHLEN {}\n", i % 4));
    }
    out
}

fn sections() -> Vec<Section> {
    let s = |name, requires, cases: &str| Section { name, requires, cases: cases.to_string() };
    vec![
        s("set and get", &[], SET),
        s("getex getset getdel setnx setex psetex", &[], GETEX),
        s("mget mset msetnx append strlen", &[], MULTI),
        s("incr family", &[], INCR),
        s("getrange setrange substr", &[], RANGE),
        s("lcs", &[], LCS),
        Section { name: "lcs random", requires: &[], cases: lcs_cases() },
        s("expiry by time", &[], EXPIRY),
        s("ttl", &["TTL __probe", "EXPIRETIME __probe", "PEXPIRETIME __probe"], TTL),
        s("wrong type", &["RPUSH __probe x"], WRONGTYPE),
        s("encoding", &["OBJECT ENCODING __probe"], ENCODING),
        s("resp3", &[], RESP3),
        s("stats", &["CONFIG RESETSTAT"], STATS),
    ]
}

#[test]
fn strings_match_redis() {
    let ours = Server::start(&[]);
    let redis = Server::start_redis(&[]);
    let (mut a, mut b) = (ours.raw(), redis.raw());
    let mut compared = 0;
    let mut skipped = Vec::new();
    for (db, section) in sections().iter().enumerate() {
        let select = vec![b"SELECT".to_vec(), db.to_string().into_bytes()];
        assert_eq!(call(&mut a, &select), call(&mut b, &select), "SELECT {db}");
        let missing: Vec<&str> = section.requires.iter().copied().filter(|p| unsupported(&call(&mut a, &parse_line(p)))).collect();
        for p in section.requires {
            call(&mut b, &parse_line(p));
        }
        if !missing.is_empty() {
            eprintln!("skipping section '{}': vermilion lacks {missing:?}", section.name);
            skipped.push(section.name);
            continue;
        }
        for (n, line) in section.cases.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let args = parse_line(line);
            if args[0].eq_ignore_ascii_case(b"SLEEP") {
                let ms: u64 = std::str::from_utf8(&args[1]).unwrap().parse().unwrap();
                std::thread::sleep(std::time::Duration::from_millis(ms));
                continue;
            }
            if args[0].eq_ignore_ascii_case(b"STAT") {
                let info = [b"INFO".to_vec(), b"stats".to_vec()];
                let (x, y) = (stat(&call(&mut a, &info), &args[1]), stat(&call(&mut b, &info), &args[1]));
                assert!(x == y, "section '{}' line {}: `{line}`: redis {y:?}, vermilion {x:?}", section.name, n + 1);
                compared += 1;
                continue;
            }
            let (x, y) = (call(&mut a, &args), call(&mut b, &args));
            if args[0].eq_ignore_ascii_case(b"HELLO") {
                assert_eq!(x[0], y[0], "HELLO reply kind");
                continue;
            }
            assert!(x == y, "section '{}' line {}: `{line}`\n  redis:     {}\n  vermilion: {}", section.name, n + 1, show(&y), show(&x));
            compared += 1;
        }
        let reset = vec![b"HELLO".to_vec(), b"2".to_vec()];
        call(&mut a, &reset);
        call(&mut b, &reset);
    }
    eprintln!("{compared} replies identical; skipped sections: {skipped:?}");
    assert!(compared > 300, "only {compared} cases compared");
}

const SET: &str = r"
GET nokey
SET k v
GET k
set k v1 xx
GET k
SET k2 v XX
GET k2
SET k v3 NX
SET k3 v nx
GET k3
GET k
SET k v NX XX
SET k v XX NX
SET k v nx nx
SET k v xx xx
SET k v GET
SET k v2 get get
GET k
SET k v3 GET NX
SET nk1 a GET NX
GET nk1
SET nk2 a GET XX
GET nk2
SET nk3 a XX GET
SET k v4 XX GET
SET k v EX 100 PX 100
SET k v EX 100 EX 200
SET k v PX 100 PXAT 1
SET k v EXAT 1 EX 1
SET k v PXAT 1 EXAT 1
SET k v KEEPTTL EX 10
SET k v EX 10 KEEPTTL
SET k v PXAT 99999999999999 KEEPTTL
SET k v KEEPTTL KEEPTTL
SET k v KEEPTTL
GET k
SET k v EX
SET k v PX
SET k v EXAT
SET k v PXAT
SET k v NX EX
SET k v EX abc
SET k v EX ''
SET k v EX 0
SET k v EX -1
SET k v PX 0
SET k v PX -5
SET k v EXAT 0
SET k v PXAT 0
SET k v EXAT -1
SET k v PXAT -9223372036854775808
SET k v EX 9223372036854775807
SET k v EX 9223372036854775808
SET k v EX 9223372036854775
SET k v EX 9223372036854774
SET k v EX 9223372036854
SET k v PX 9223372036854775807
SET k v PX 9223372036854775000
SET k v EXAT 9223372036854775
SET k v EXAT 9223372036854776
SET k v PXAT 9223372036854775807
GET k
SET k v EX 1.5
SET k v EX 01
SET k v EX \s1
SET k v EX 1\s
SET k v EX +1
SET k v EX -0
SET k v PERSIST
SET k v FOO
SET k v GETX
SET k v G
SET k v E
SET k v ''
SET k v EX\0 10
SET k v nx\0zz
SET k v g\0
SET k v ex 100 get
SET k v px 100000 xx get
SET k v5 keepttl get xx
SET k v Ex 10 nX
SET k v eXaT 4000000000 xx
SET k v pXaT 4000000000000 xx gEt
SET k v pXaT 4000000000000 xx gEt keepttl
SET k ''
GET k
STRLEN k
SET k \0\0bin\0
GET k
SET k 12345
GET k
SET k -0
SET k 9223372036854775808
GET k
SET longvalue aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
GET longvalue
SET past v EXAT 1
GET past
SET past v PXAT 1000 GET
GET past
SET past v PXAT 1000 NX GET
SET past2 v PXAT 1000 NX GET
GET past2
SET
SET k
GET
GET a b
";

const GETEX: &str = r"
SETNX sn v
SETNX sn v2
GET sn
SETNX sn
SETEX se 100 v
GET se
SETEX se 0 v
SETEX se -1 v
SETEX se abc v
SETEX se 9223372036854775807 v
SETEX se 9223372036854775 v
SETEX se 1.5 v
SETEX se 100
PSETEX pe 100000 v
GET pe
PSETEX pe 0 v
PSETEX pe -100 v
PSETEX pe 9223372036854775807 v
PSETEX pe x v
GETSET gs new
GETSET gs newer
GET gs
GETSET gs
GETDEL gs
GETDEL gs
GET gs
GETDEL nokey
GETEX nokey
GETEX nokey EX -1
GETEX nokey EX abc
GETEX nokey FOO
GETEX nokey EX
SET g v
GETEX g
GETEX g EX 100
GETEX g PX 100000
GETEX g EXAT 4000000000
GETEX g PXAT 4000000000000
GETEX g PERSIST
GETEX g PERSIST PERSIST
GETEX g EX 100 EX 200
GETEX g EX 100 PX 100
GETEX g EX 100 PERSIST
GETEX g PERSIST EX 100
GETEX g NX
GETEX g XX
GETEX g GET
GETEX g KEEPTTL
GETEX g EX
GETEX g PX
GETEX g EX 0
GETEX g EX -1
GETEX g PX 0
GETEX g EXAT 0
GETEX g PXAT -1
GETEX g EX abc
GETEX g EX 9223372036854775807
GETEX g EX 9223372036854775
GETEX g PX 9223372036854775807
GETEX g EXAT 9223372036854775
GETEX g persist\0x
GET g
GETEX g EXAT 1
GET g
GETEX g
SET g v2
GETEX g PXAT 1
GETEX g
SET g v3
GETEX g PXAT 100 PERSIST
GET g
";

const MULTI: &str = r"
MSET a 1 b 2 c 3
MGET a b c nokey a
MGET nokey
MSET a
MSET a 1 b
MSET a 1 a 2
GET a
MSETNX a 1 x 2
GET x
MSETNX x 1 y 2
MGET x y
MSETNX z 1 z 2
GET z
MSETNX q 1 r
MSETNX q
APPEND ap hello
APPEND ap \sworld
GET ap
APPEND ap ''
STRLEN ap
APPEND ap2 ''
GET ap2
STRLEN ap2
APPEND num 12
APPEND num 34
INCR num
GET num
APPEND ap
STRLEN nokey
STRLEN a
STRLEN
SET bin a\0b
STRLEN bin
APPEND bin \0
GET bin
";

const INCR: &str = r"
INCR i
INCR i
DECR i
DECR i
DECR i
INCRBY i 10
INCRBY i -20
DECRBY i 5
DECRBY i -5
GET i
INCRBY i abc
INCRBY i 1.5
INCRBY i ''
INCRBY i 9223372036854775808
INCRBY i \s1
DECRBY i -9223372036854775808
DECRBY i 9223372036854775807
DECRBY i 9223372036854775807
GET i
SET i 9223372036854775807
INCR i
INCRBY i 0
INCRBY i -1
SET i -9223372036854775808
DECR i
DECRBY i 1
INCRBY i -1
INCRBY i 9223372036854775807
INCR i
SET i \s1
INCR i
SET i 1\s
INCR i
SET i 01
INCR i
SET i +1
INCR i
SET i -0
INCR i
SET i 1.0
INCR i
SET i 9223372036854775808
INCR i
SET i ''
INCR i
SET i abc
DECR i
INCRBY i 1
INCRBYFLOAT f 1
INCRBYFLOAT f 0.1
INCRBYFLOAT f -1.1
INCRBYFLOAT f 10.50
INCRBYFLOAT f 5.0e3
INCRBYFLOAT f -5e3
INCRBYFLOAT f 1e400
INCRBYFLOAT f inf
INCRBYFLOAT f -inf
INCRBYFLOAT f nan
INCRBYFLOAT f abc
INCRBYFLOAT f ''
INCRBYFLOAT f \s1
INCRBYFLOAT f 1\s
INCRBYFLOAT f 0x10
INCRBYFLOAT f 1e-400
INCRBYFLOAT f 3.0000000000000001
GET f
SET f 1.7976931348623157e308
INCRBYFLOAT f 1.7976931348623157e308
INCRBYFLOAT f 1
SET f 007
INCRBYFLOAT f 1
SET f \s5
INCRBYFLOAT f 1
SET f 5.
INCRBYFLOAT f 1
SET f .5
INCRBYFLOAT f .5
SET f 1e5
INCRBYFLOAT f 0
SET f 9223372036854775807
INCRBYFLOAT f 1
SET f abc
INCRBYFLOAT f 1
INCRBYFLOAT f2 -0
INCRBYFLOAT f3 0.1
INCRBYFLOAT f3 0.2
INCRBYFLOAT f4 123456789012345678901234567890
INCRBYFLOAT f5 0.00000000000000000001
INCR f3
INCRBYFLOAT i2 5
INCR i2
";

const RANGE: &str = r"
SET s Hello\sWorld
GETRANGE s 0 4
GETRANGE s -5 -1
GETRANGE s 0 -1
GETRANGE s 0 100
GETRANGE s -100 100
GETRANGE s 5 3
GETRANGE s -1 -5
GETRANGE s -1 -1
GETRANGE s 10 10
GETRANGE s 11 11
GETRANGE s 100 200
GETRANGE s -100 -50
GETRANGE s -100 -200
GETRANGE s 0 0
GETRANGE s -9223372036854775808 9223372036854775807
GETRANGE s 9223372036854775807 -9223372036854775808
GETRANGE s -9223372036854775808 -9223372036854775808
GETRANGE s 9223372036854775807 9223372036854775807
GETRANGE s a 1
GETRANGE s 1 b
GETRANGE s 9223372036854775808 1
GETRANGE nokey 0 -1
GETRANGE nokey a b
SUBSTR s 0 4
SUBSTR s -3 -1
SUBSTR nokey 0 1
SUBSTR s 0
SET n 12345
GETRANGE n 1 2
GETRANGE n -2 -1
SET e ''
GETRANGE e 0 -1
GETRANGE e 0 0
GETRANGE e -1 0
SETRANGE s 6 Redis
GET s
SETRANGE s 20 !
GET s
STRLEN s
SETRANGE s 0 ''
SETRANGE s 100 ''
SETRANGE new 5 x
GET new
SETRANGE new2 0 ''
GET new2
SETRANGE new3 3 ''
SETRANGE s -1 x
SETRANGE s -1 ''
SETRANGE s abc x
SETRANGE s 1.5 x
SETRANGE s 9223372036854775807 x
SETRANGE s 9223372036854775807 ''
SETRANGE s 536870912 x
SETRANGE s 536870911 xx
SETRANGE nokey 536870912 x
SETRANGE nokey 9223372036854775808 x
GET nokey
SETRANGE n 0 9
GET n
INCR n
SETRANGE n 5 6
GET n
SETRANGE bin 2 \0\0
GET bin
CONFIG SET proto-max-bulk-len 1mb
SETRANGE big 1048570 abcdefgh
SETRANGE big 1048570 abcdef
STRLEN big
APPEND big x
APPEND big ''
CONFIG SET proto-max-bulk-len 512mb
APPEND big x
STRLEN big
";

const LCS: &str = r"
MSET key1 ohmytext key2 mynewtext
LCS key1 key2
LCS key1 key2 LEN
LCS key1 key2 len
LCS key1 key2 IDX
LCS key1 key2 IDX MINMATCHLEN 4
LCS key1 key2 IDX MINMATCHLEN 4 WITHMATCHLEN
LCS key1 key2 WITHMATCHLEN IDX
LCS key1 key2 WITHMATCHLEN
LCS key1 key2 MINMATCHLEN 3
LCS key1 key2 MINMATCHLEN -5 IDX
LCS key1 key2 IDX MINMATCHLEN 100
LCS key1 key2 IDX MINMATCHLEN abc
LCS key1 key2 IDX MINMATCHLEN
LCS key1 key2 LEN IDX
LCS key1 key2 IDX LEN
LCS key1 key2 LEN LEN
LCS key1 key2 IDX IDX
LCS key1 key2 FOO
LCS key1 key2 idx\0x
LCS key1 nokey
LCS nokey nokey2
LCS nokey nokey2 IDX
LCS nokey nokey2 LEN
LCS key1 nokey IDX WITHMATCHLEN
LCS key1 key1 IDX WITHMATCHLEN
LCS key2 key1 IDX WITHMATCHLEN
MSET x1 abcabcabc x2 cba
LCS x1 x2 IDX WITHMATCHLEN
LCS x2 x1 IDX WITHMATCHLEN
MSET y1 aaaaaaaaaa y2 aaa
LCS y1 y2 IDX WITHMATCHLEN
LCS y2 y1 IDX
LCS y1
CONFIG SET proto-max-bulk-len 1mb
SETRANGE big1 599 a
LCS big1 big1 LEN
LCS big1 big1 LEN IDX
LCS big1 key1 LEN
CONFIG SET proto-max-bulk-len 512mb
LCS big1 big1 LEN
";

const EXPIRY: &str = r"
PSETEX t1 1000 v
SET t2 v PX 1000
SET t2 v2 KEEPTTL
SET t3 v PX 1000
SET t3 v3
SET t4 v PX 1000
GETSET t4 v4
SET t5 10 PX 1000
INCR t5
SET t6 x PX 1000
APPEND t6 y
SET t7 x PX 1000
SETRANGE t7 0 y
SET t8 v PX 1000
GETEX t8 PERSIST
SET t9 v
GETEX t9 PX 1000
SET t10 v PX 1000
MSET t10 w
SET t11 1.5 PX 1000
INCRBYFLOAT t11 1
SET t12 v PX 1000
SET t12 w GET KEEPTTL
SETEX t13 1 v
GETEX t13 PX 1000
SET t14 v PX 1000
SET t14 w NX
SET t15 v PX 1000
SET t15 w XX
SET t16 v PX 1000
MSETNX t16 a t16b b
SET t17 v EX 100
SET t17 w KEEPTTL PX 1000
GETRANGE t1 0 -1
SLEEP 1050
MGET t1 t2 t3 t4 t5 t6 t7 t8 t9 t10 t11 t12 t13 t14 t15 t16 t16b t17
SETNX t1 again
GET t1
STRLEN t2
APPEND t3 z
";

const TTL: &str = r"
SET e1 v EX 100
TTL e1
SET e1 v2 KEEPTTL
TTL e1
SET e1 v3 KEEPTTL GET
TTL e1
SET e1 v3
TTL e1
SETEX e2 100 v
TTL e2
PSETEX e3 100000 v
TTL e3
SET e4 v EXAT 4000000000
EXPIRETIME e4
SET e4 v PXAT 4000000000123
PEXPIRETIME e4
GETEX e4 PERSIST
TTL e4
GETEX e4 EXAT 4000000001
EXPIRETIME e4
GETEX e4 EX 100
TTL e4
GETEX e4 PXAT 4000000000999
PEXPIRETIME e4
GETEX e4
PEXPIRETIME e4
SET e5 10 EX 100
INCR e5
TTL e5
INCRBYFLOAT e5 1.5
TTL e5
APPEND e5 1
TTL e5
SETRANGE e5 0 9
TTL e5
GETSET e5 1
TTL e5
SET e6 v EX 100
MSET e6 w
TTL e6
SET e7 v EX 100
SET e7 w NX
TTL e7
SET e7 w XX
TTL e7
SET e8 v EXAT 9223372036854775
EXPIRETIME e8
SET e9 v PXAT 9223372036854775807
PEXPIRETIME e9
";

const WRONGTYPE: &str = r"
RPUSH l a
SET k v
GET l
SET l v GET
SET l v GET NX
SET l v GET EX 0
SET l v GET FOO
GETSET l v
GETDEL l
GETEX l
GETEX l EX 0
GETEX l FOO
MGET l k nokey
APPEND l x
STRLEN l
INCR l
DECR l
INCRBY l x
INCRBY l 1
DECRBY l 1
INCRBYFLOAT l x
INCRBYFLOAT l 1
GETRANGE l 0 1
GETRANGE l a b
SUBSTR l 0 1
SETRANGE l 0 x
SETRANGE l 0 ''
SETRANGE l -1 x
SETRANGE l a x
LCS l k
LCS k l
LCS k l FOO
LCS nokey l IDX
SETNX l v
MSETNX l v z w
SET l v XX
GET l
RPUSH l2 a
MSET l2 v
GET l2
RPUSH l3 a
SETEX l3 100 v
GET l3
";

const ENCODING: &str = r"
SET s 123
OBJECT ENCODING s
APPEND s 4
OBJECT ENCODING s
INCR s
OBJECT ENCODING s
SET s abc
OBJECT ENCODING s
APPEND s ''
OBJECT ENCODING s
APPEND new abc
OBJECT ENCODING new
APPEND new2 123
OBJECT ENCODING new2
SETRANGE new3 0 abc
OBJECT ENCODING new3
SET s abc
SETRANGE s 0 x
OBJECT ENCODING s
SET s abc
SETRANGE s 0 ''
OBJECT ENCODING s
SET s aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
OBJECT ENCODING s
GETSET s 12
OBJECT ENCODING s
MSET s 12 t abc
OBJECT ENCODING s
OBJECT ENCODING t
";

const RESP3: &str = r"
HELLO 3
GET nokey
SET k v
GET k
SET k v GET
SET nk v GET
SET k v NX
SET k v NX GET
GETEX nokey
GETDEL nokey
MGET k nokey
MSET a 1 b 2
MSETNX a 1
INCRBYFLOAT f 1.5
GETRANGE nokey 0 1
MSET key1 ohmytext key2 mynewtext
LCS key1 key2
LCS key1 key2 LEN
LCS key1 key2 IDX
LCS key1 key2 IDX MINMATCHLEN 4 WITHMATCHLEN
LCS nokey nokey2 IDX
LCS key1 key2 IDX LEN
SET k v EX 0
HELLO 2
LCS key1 key2 IDX
GET nokey
";

const STATS: &str = r"
CONFIG RESETSTAT
SET k v
GET k
GET nokey
SET k v GET
SET nk v GET NX
SET k v XX
SETNX k v
MGET k nokey k
GETEX k
GETEX nokey
GETSET k v
GETDEL nokey
STRLEN k
GETRANGE k 0 1
APPEND k x
INCR n
INCRBYFLOAT n 1
SETRANGE k 1 x
MSETNX k v
LCS k nokey
STAT keyspace_hits
STAT keyspace_misses
SET past v PXAT 1
GET past
SET past2 v PXAT 1
GETEX past2
SET past3 v
GETEX past3 EXAT 1
STAT expired_keys
STAT keyspace_hits
STAT keyspace_misses
";
