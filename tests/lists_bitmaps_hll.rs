//! Lists, bitmaps and HyperLogLogs, differentially: every case runs on vermilion and on the
//! real redis-server 7.0 and the raw replies must be identical (RESP2, and RESP3 after
//! HELLO 3). Curated cases cover every command's valid and invalid forms; seeded random
//! sequences (env `DIFF_SEED` to replay, the seed is printed on failure) explore the rest.

mod common;

use std::time::{Duration, Instant};

use common::diff::DiffPair;

/// A small xorshift generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }

    /// An integer, mostly small, sometimes negative or extreme.
    fn int(&mut self, small: i64) -> String {
        match self.below(20) {
            0 => i64::MAX.to_string(),
            1 => i64::MIN.to_string(),
            2 => "x".to_string(),
            _ => (self.below(2 * small as u64 + 1) as i64 - small).to_string(),
        }
    }
}

/// One exact comparison; panics with both replies on a difference.
fn check<A: AsRef<[u8]>>(d: &mut DiffPair, args: &[A]) {
    if let Err(e) = d.check(args) {
        panic!("{e}");
    }
}

/// Both servers, with a first round trip done: a connection's first command is not sent
/// before the server has registered the client (vermilion may otherwise treat a long first
/// command as unauthenticated; see the report).
fn start() -> DiffPair {
    let mut d = DiffPair::start();
    check(&mut d, &["PING"]);
    d
}

fn seed() -> u64 {
    std::env::var("DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1) | 1)
}

/// Runs `gen`-produced commands on both servers for about `budget`, failing with the seed.
fn random_run(name: &str, budget: Duration, mut gen: impl FnMut(&mut Rng) -> Vec<String>) -> usize {
    let seed = seed();
    let mut rng = Rng(seed);
    let mut d = start();
    let start = Instant::now();
    let mut n = 0;
    while start.elapsed() < budget {
        let cmd = gen(&mut rng);
        if let Err(e) = d.check(&cmd) {
            panic!("{name}: random sequence with DIFF_SEED={seed} failed after {n} commands:\n{e}");
        }
        n += 1;
    }
    n
}

const LIST_CASES: &[&str] = &[
    "RPUSH l a b c",
    "LPUSH l x y",
    "LRANGE l 0 -1",
    "LLEN l",
    "LLEN nokey",
    "OBJECT ENCODING l",
    "TYPE l",
    "LPUSHX nokey a",
    "RPUSHX nokey a",
    "EXISTS nokey",
    "LPUSHX l p q",
    "RPUSHX l r s",
    "LRANGE l 0 -1",
    "LRANGE l -3 -1",
    "LRANGE l -100 100",
    "LRANGE l 5 2",
    "LRANGE l 100 200",
    "LRANGE l -9223372036854775808 9223372036854775807",
    "LRANGE l a 1",
    "LRANGE l 1 b",
    "LRANGE nokey 0 -1",
    "LRANGE nokey x y",
    "LINDEX l 0",
    "LINDEX l -1",
    "LINDEX l 100",
    "LINDEX l -100",
    "LINDEX l x",
    "LINDEX nokey x",
    "LINDEX nokey 0",
    "LINDEX l 9223372036854775807",
    "LINDEX l -9223372036854775808",
    "LSET l 0 first",
    "LSET l -1 last",
    "LSET l 100 z",
    "LSET l -100 z",
    "LSET l x z",
    "LSET nokey 0 z",
    "LSET nokey x z",
    "LRANGE l 0 -1",
    "LINSERT l BEFORE a A",
    "LINSERT l after a AA",
    "LINSERT l before nothere z",
    "LINSERT l middle a z",
    "LINSERT nokey before a z",
    "LINSERT nokey middle a z",
    "LRANGE l 0 -1",
    "RPUSH r a b a c a d a",
    "LREM r 2 a",
    "LRANGE r 0 -1",
    "LREM r -1 a",
    "LRANGE r 0 -1",
    "LREM r 0 a",
    "LRANGE r 0 -1",
    "LREM r 0 zz",
    "LREM r x a",
    "LREM nokey 1 a",
    "LREM r -9223372036854775808 b",
    "LREM r 0 c",
    "LREM r 0 d",
    "EXISTS r",
    "RPUSH t 0 1 2 3 4 5 6 7 8 9",
    "LTRIM t 1 -2",
    "LRANGE t 0 -1",
    "LTRIM t -3 100",
    "LRANGE t 0 -1",
    "LTRIM t x 1",
    "LTRIM nokey 0 1",
    "LTRIM t 5 1",
    "EXISTS t",
    "RPUSH t a",
    "LTRIM t -9223372036854775808 9223372036854775807",
    "LRANGE t 0 -1",
    "DEL t",
    // Pops.
    "RPUSH p 1 2 3 4 5 6",
    "LPOP p",
    "RPOP p",
    "LPOP p 2",
    "RPOP p 0",
    "RPOP p 1",
    "LPOP p -1",
    "LPOP p x",
    "LPOP p 1 2",
    "RPOP p 100",
    "EXISTS p",
    "LPOP p",
    "LPOP p 0",
    "LPOP p 3",
    "RPOP p",
    "RPOP p 9223372036854775807",
    "LPOP nokey -1",
    // LPOS.
    "RPUSH pos a b c 1 2 3 c c",
    "LPOS pos c",
    "LPOS pos c RANK 2",
    "LPOS pos c RANK -1",
    "LPOS pos c RANK -2",
    "LPOS pos c RANK 10",
    "LPOS pos c COUNT 0",
    "LPOS pos c COUNT 2",
    "LPOS pos c COUNT 0 RANK -1",
    "LPOS pos c COUNT 2 RANK 2",
    "LPOS pos c MAXLEN 3",
    "LPOS pos c MAXLEN 2",
    "LPOS pos c MAXLEN 2 COUNT 0",
    "LPOS pos c RANK -1 MAXLEN 1",
    "LPOS pos c RANK -1 MAXLEN 2 COUNT 0",
    "LPOS pos zz",
    "LPOS pos zz COUNT 1",
    "LPOS pos c RANK 0",
    "LPOS pos c RANK x",
    "LPOS pos c RANK -9223372036854775808",
    "LPOS pos c RANK 9223372036854775807",
    "LPOS pos c COUNT -1",
    "LPOS pos c COUNT x",
    "LPOS pos c MAXLEN -1",
    "LPOS pos c MAXLEN x",
    "LPOS pos c RANK",
    "LPOS pos c FOO 1",
    "LPOS pos c COUNT",
    "LPOS nokey c",
    "LPOS nokey c COUNT 1",
    "LPOS nokey c RANK 0",
    // LMOVE / RPOPLPUSH.
    "RPUSH src 1 2 3",
    "LMOVE src dst LEFT RIGHT",
    "LMOVE src dst right left",
    "LMOVE src dst middle left",
    "LMOVE src dst left middle",
    "LMOVE nokey dst left left",
    "LMOVE nokey dst x left",
    "LRANGE src 0 -1",
    "LRANGE dst 0 -1",
    "RPOPLPUSH src dst",
    "EXISTS src",
    "RPOPLPUSH src dst",
    "LRANGE dst 0 -1",
    "RPOPLPUSH dst dst",
    "LMOVE dst dst LEFT RIGHT",
    "LRANGE dst 0 -1",
    "SET str v",
    "RPOPLPUSH dst str",
    "RPOPLPUSH str dst",
    "LMOVE str dst LEFT LEFT",
    "LRANGE dst 0 -1",
    "RPUSH one only",
    "RPOPLPUSH one one",
    "LRANGE one 0 -1",
    // LMPOP.
    "RPUSH m1 a b c d",
    "LMPOP 2 nokey m1 LEFT",
    "LMPOP 2 nokey m1 RIGHT COUNT 2",
    "LMPOP 1 m1 LEFT COUNT 10",
    "EXISTS m1",
    "LMPOP 1 m1 LEFT",
    "LMPOP 0 m1 LEFT",
    "LMPOP -1 m1 LEFT",
    "LMPOP x m1 LEFT",
    "LMPOP 5 m1 LEFT",
    "LMPOP 1 m1 MIDDLE",
    "LMPOP 1 m1 LEFT COUNT 0",
    "LMPOP 1 m1 LEFT COUNT -1",
    "LMPOP 1 m1 LEFT COUNT x",
    "LMPOP 1 m1 LEFT COUNT 1 COUNT 1",
    "LMPOP 1 m1 LEFT FOO",
    "LMPOP 1 m1 LEFT COUNT",
    "LMPOP 2 str m1 LEFT",
    "RPUSH m2 z",
    "LMPOP 2 m2 str LEFT",
    "LMPOP 2 str m2 LEFT",
    // Wrong types.
    "LPUSH str a",
    "RPUSH str a",
    "LPUSHX str a",
    "RPUSHX str a",
    "LPOP str",
    "RPOP str 1",
    "LPOP str x",
    "LLEN str",
    "LRANGE str 0 1",
    "LINDEX str 0",
    "LINDEX str x",
    "LSET str 0 a",
    "LSET str x a",
    "LINSERT str before a b",
    "LREM str 0 a",
    "LTRIM str 0 1",
    "LPOS str a",
    "LPOS str a RANK 0",
    // Arity.
    "LPUSH l",
    "LPOP",
    "LRANGE l 0",
    "LMPOP 1",
    "LPOS l",
    // Binary elements and sizes.
    "RPUSH bin \"a\\x00b\" \"\" \"\\r\\n\"",
    "LRANGE bin 0 -1",
    "LPOS bin \"\"",
    "LREM bin 0 \"a\\x00b\"",
    "LRANGE bin 0 -1",
    "OBJECT ENCODING bin",
];

const LIST_RESP3_CASES: &[&str] = &[
    "RPUSH l3 a b c",
    "LPOP nokey",
    "LPOP nokey 2",
    "RPOP nokey 0",
    "LPOP l3 0",
    "LPOP l3 2",
    "LINDEX nokey 0",
    "LPOS nokey a",
    "LPOS l3 zz",
    "LPOS l3 c COUNT 0",
    "LMOVE nokey l3 LEFT LEFT",
    "LMPOP 1 nokey LEFT",
    "LMPOP 1 l3 RIGHT COUNT 5",
    "LRANGE nokey 0 -1",
];

#[test]
fn lists_curated() {
    let mut d = start();
    d.assert_script("lists", LIST_CASES);
    let _ = d.hello(3).unwrap();
    d.assert_script("lists resp3", LIST_RESP3_CASES);
    let _ = d.hello(2).unwrap();
}

#[test]
fn list_encoding_and_sizes() {
    let mut d = start();
    let small: Vec<String> = (0..128).map(|i| format!("e{i}")).collect();
    let mut cmd = vec!["RPUSH".to_string(), "enc".to_string()];
    cmd.extend(small);
    check(&mut d, &cmd);
    check(&mut d, &["OBJECT", "ENCODING", "enc"]);
    let big = "x".repeat(9000);
    check(&mut d, &["RPUSH", "enc", &big]);
    check(&mut d, &["OBJECT", "ENCODING", "enc"]);
    check(&mut d, &["RPOP", "enc"]);
    check(&mut d, &["OBJECT", "ENCODING", "enc"]);
    check(&mut d, &["LPUSH", "big", &big]);
    check(&mut d, &["OBJECT", "ENCODING", "big"]);
    check(&mut d, &["LRANGE", "big", "0", "-1"]);
    check(&mut d, &["LTRIM", "enc", "0", "0"]);
    check(&mut d, &["OBJECT", "ENCODING", "enc"]);
    check(&mut d, &["CONFIG", "SET", "list-max-listpack-size", "4"]);
    check(&mut d, &["RPUSH", "few", "a", "b", "c", "d", "e", "f"]);
    check(&mut d, &["OBJECT", "ENCODING", "few"]);
}

#[test]
fn list_random() {
    let keys = ["a", "b", "c", "s"];
    let elems = ["x", "y", "z", "1", "", "long-element-value"];
    let mut setup = true;
    let n = random_run("lists", Duration::from_secs(8), |r| {
        if setup {
            setup = false;
            return vec!["SET".into(), "s".into(), "str".into()];
        }
        let k = r.pick(&keys).to_string();
        let k2 = r.pick(&keys).to_string();
        let e = r.pick(&elems).to_string();
        let ends = ["LEFT", "RIGHT", "left", "UP"];
        let v: Vec<String> = match r.below(17) {
            0 | 1 => {
                let mut v = vec![r.pick(&["LPUSH", "RPUSH", "LPUSHX", "RPUSHX"]).to_string(), k];
                for _ in 0..=r.below(4) {
                    v.push(r.pick(&elems).to_string());
                }
                v
            }
            2 => vec![r.pick(&["LPOP", "RPOP"]).into(), k],
            3 => vec![r.pick(&["LPOP", "RPOP"]).into(), k, r.int(4)],
            4 => vec!["LRANGE".into(), k, r.int(6), r.int(6)],
            5 => vec!["LINDEX".into(), k, r.int(6)],
            6 => vec!["LSET".into(), k, r.int(6), e],
            7 => vec!["LINSERT".into(), k, r.pick(&["BEFORE", "AFTER", "after", "x"]).into(), r.pick(&elems).into(), e],
            8 => vec!["LREM".into(), k, r.int(3), e],
            9 => vec!["LTRIM".into(), k, r.int(6), r.int(6)],
            10 => {
                let mut v = vec!["LPOS".into(), k, e];
                for _ in 0..r.below(3) {
                    v.push(r.pick(&["RANK", "COUNT", "MAXLEN"]).into());
                    v.push(r.int(3));
                }
                v
            }
            11 => vec!["LMOVE".into(), k, k2, r.pick(&ends).into(), r.pick(&ends).into()],
            12 => vec!["RPOPLPUSH".into(), k, k2],
            13 => {
                let mut v = vec!["LMPOP".into(), "2".into(), k, k2, r.pick(&ends).into()];
                if r.below(2) == 0 {
                    v.push("COUNT".into());
                    v.push(r.int(3));
                }
                v
            }
            14 => vec!["LLEN".into(), k],
            15 => vec!["EXISTS".into(), k],
            _ => vec!["LRANGE".into(), k, "0".into(), "-1".into()],
        };
        v
    });
    assert!(n > 100, "only {n} commands ran");
}

/// Lists long enough to span many of the server's 8 KB chunks (elements of 0 to 3,000 bytes,
/// pushed at both ends, so chunks of both orientations), then random reads and changes at
/// any position: LINDEX/LRANGE windows, LSET/LINSERT/LREM in the middle, LTRIM, LPOS, moves
/// between lists, SORT. Every reply is compared with redis-server's.
#[test]
fn list_random_long() {
    let big = "b".repeat(3000);
    let mid = "m".repeat(700);
    let mut step = 0u64;
    let n = random_run("long lists", Duration::from_secs(6), |r| {
        step += 1;
        let k = r.pick(&["la", "lb"]).to_string();
        let elem = |r: &mut Rng| -> String {
            match r.below(12) {
                0 => big.clone(),
                1 => mid.clone(),
                2 => String::new(),
                3 | 4 => "same".into(),
                _ => format!("e{}", r.below(5000)),
            }
        };
        // Fill first: 60 pushes of 50 elements.
        if step <= 60 {
            let mut v = vec![if step.is_multiple_of(3) { "LPUSH" } else { "RPUSH" }.to_string(), k];
            v.extend((0..50).map(|_| elem(r)));
            return v;
        }
        let pos = |r: &mut Rng| -> String {
            let p = r.below(4000) as i64;
            if r.below(2) == 0 { p } else { -p - 1 }.to_string()
        };
        match r.below(16) {
            0 => vec!["LINDEX".into(), k, pos(r)],
            1 => {
                let a = pos(r);
                let b = (a.parse::<i64>().unwrap_or(0) + r.below(40) as i64).to_string();
                vec!["LRANGE".into(), k, a, b]
            }
            2 => vec!["LSET".into(), k, pos(r), elem(r)],
            3 => vec!["LINSERT".into(), k, r.pick(&["BEFORE", "AFTER"]).into(), format!("e{}", r.below(5000)), elem(r)],
            4 => vec!["LREM".into(), k, r.pick(&["0", "2", "-2", "1"]).into(), r.pick(&["same", "", "e7"]).into()],
            5 if r.below(8) == 0 => vec!["LTRIM".into(), k, r.below(50).to_string(), (-1 - r.below(50) as i64).to_string()],
            6 => vec![
                "LPOS".into(),
                k,
                r.pick(&["same", "e42", ""]).into(),
                "RANK".into(),
                r.pick(&["1", "-1", "3", "-4"]).into(),
                "COUNT".into(),
                r.int(5),
            ],
            7 => vec!["LPOS".into(), k, "same".into(), "MAXLEN".into(), r.below(3000).to_string()],
            8 => vec![r.pick(&["LPOP", "RPOP"]).into(), k, r.below(5).to_string()],
            9 => {
                vec!["LMOVE".into(), k, r.pick(&["la", "lb"]).into(), r.pick(&["LEFT", "RIGHT"]).into(), r.pick(&["LEFT", "RIGHT"]).into()]
            }
            10 => vec![r.pick(&["LPUSH", "RPUSH"]).into(), k, elem(r), elem(r)],
            11 => vec!["LLEN".into(), k],
            12 => vec!["SORT".into(), k, "BY".into(), "nosort".into(), "LIMIT".into(), r.below(3000).to_string(), "5".into()],
            13 => vec!["LRANGE".into(), k, "0".into(), "-1".into()],
            14 => vec!["LRANGE".into(), k, "-5".into(), "-1".into()],
            _ => vec!["LINDEX".into(), k, r.pick(&["0", "-1", "1", "-2"]).into()],
        }
    });
    assert!(n > 200, "only {n} commands ran");
}

#[test]
fn list_big_is_fast() {
    let server = common::Server::start(&[]);
    let mut c = server.raw();
    // Pipeline 100k LPUSH then 100k RPOP: each must be O(1).
    let start = Instant::now();
    let mut buf = Vec::new();
    for i in 0..100_000 {
        buf.extend_from_slice(&common::diff::encode_cmd(&["LPUSH", "big", &i.to_string()]));
    }
    c.send(&buf);
    for _ in 0..100_000 {
        c.read_reply();
    }
    assert_eq!(c.call(&[b"LLEN", b"big"]), b":100000\r\n");
    assert_eq!(c.call(&[b"LINDEX", b"big", b"50000"]), b"$5\r\n49999\r\n");
    let mut buf = Vec::new();
    for _ in 0..100_000 {
        buf.extend_from_slice(&common::diff::encode_cmd(&["RPOP", "big"]));
    }
    c.send(&buf);
    for _ in 0..100_000 {
        c.read_reply();
    }
    assert_eq!(c.call(&[b"EXISTS", b"big"]), b":0\r\n");
    let took = start.elapsed();
    assert!(took < Duration::from_secs(20), "200k list operations took {took:?}");
}

const BITMAP_CASES: &[&str] = &[
    "SETBIT b 7 1",
    "GET b",
    "OBJECT ENCODING b",
    "SETBIT b 7 1",
    "SETBIT b 7 0",
    "SETBIT b 100 1",
    "STRLEN b",
    "GETBIT b 100",
    "GETBIT b 99",
    "GETBIT b 100000",
    "GETBIT nokey 5",
    "GETBIT nokey x",
    "GETBIT b -1",
    "GETBIT b x",
    "SETBIT b -1 1",
    "SETBIT b x 1",
    "SETBIT b 1 2",
    "SETBIT b 1 -1",
    "SETBIT b 1 x",
    "SETBIT b 4294967296 1",
    "SETBIT b 4294967295 x",
    "SETBIT b 9223372036854775807 1",
    "SET i 12345",
    "OBJECT ENCODING i",
    "GETBIT i 2",
    "SETBIT i 2 1",
    "GET i",
    "OBJECT ENCODING i",
    "SET e abc",
    "SETBIT e 0 0",
    "OBJECT ENCODING e",
    "RPUSH lst a",
    "SETBIT lst 0 1",
    "GETBIT lst 0",
    "BITCOUNT lst",
    "BITPOS lst 1",
    "BITFIELD lst GET u8 0",
    "BITFIELD_RO lst GET u8 0",
    "BITOP AND dest lst",
    // BITCOUNT.
    "SET s foobar",
    "BITCOUNT s",
    "BITCOUNT s 0 0",
    "BITCOUNT s 1 1",
    "BITCOUNT s 1 -1",
    "BITCOUNT s -2 -1",
    "BITCOUNT s -1 -2",
    "BITCOUNT s -1 -2 BAD",
    "BITCOUNT s 5 30 BIT",
    "BITCOUNT s 5 30 bit",
    "BITCOUNT s 0 -1 BYTE",
    "BITCOUNT s -9 -1 BIT",
    "BITCOUNT s 3 3 BIT",
    "BITCOUNT s 0 100 BIT",
    "BITCOUNT s 0 0 FOO",
    "BITCOUNT s 0",
    "BITCOUNT s x 1",
    "BITCOUNT s 0 x",
    "BITCOUNT s 0 1 BIT extra",
    "BITCOUNT nokey",
    "BITCOUNT nokey 0",
    "BITCOUNT nokey x y",
    "BITCOUNT s -9223372036854775808 9223372036854775807",
    "BITCOUNT s -9223372036854775808 9223372036854775807 BIT",
    "BITCOUNT i",
    "SET empty \"\"",
    "BITCOUNT empty",
    "BITCOUNT empty 0 -1 BIT",
    // BITPOS.
    "SET z \"\\xff\\xf0\\x00\"",
    "BITPOS z 0",
    "BITPOS z 1",
    "BITPOS z 0 2",
    "BITPOS z 0 0 -1",
    "BITPOS z 1 2",
    "BITPOS z 1 2 -1",
    "BITPOS z 0 0 0",
    "BITPOS z 0 0 1",
    "BITPOS z 0 0 1 BIT",
    "BITPOS z 0 0 12 BIT",
    "BITPOS z 0 0 11 BIT",
    "BITPOS z 1 3 9 BIT",
    "BITPOS z 1 12 23 bit",
    "BITPOS z 0 -5 -1 BIT",
    "BITPOS z 1 -5 -1 BIT",
    "BITPOS z 0 1 0",
    "BITPOS z 0 0 0 BYTE",
    "BITPOS z 0 0 0 FOO",
    "BITPOS z 2",
    "BITPOS z x",
    "BITPOS z 1 x",
    "BITPOS z 1 0 x",
    "BITPOS z 1 0 x FOO",
    "BITPOS z 1 x 0 FOO",
    "BITPOS nokey 0",
    "BITPOS nokey 1",
    "BITPOS nokey 2",
    "BITPOS nokey 1 x",
    "SET ones \"\\xff\\xff\"",
    "BITPOS ones 0",
    "BITPOS ones 0 0",
    "BITPOS ones 0 0 -1",
    "BITPOS ones 0 0 15 BIT",
    "BITPOS ones 0 3 5 BIT",
    "BITPOS ones 1 3 5 BIT",
    "BITPOS empty 0",
    "BITPOS empty 1",
    "BITPOS empty 0 0 -1",
    "BITPOS i 1",
    "BITPOS z 1 -9223372036854775808 9223372036854775807 BIT",
    // BITOP.
    "SET k1 \"\\x0f\\xf0\"",
    "SET k2 \"\\xff\"",
    "BITOP AND d k1 k2",
    "GET d",
    "OBJECT ENCODING d",
    "BITOP or d k1 k2 nokey",
    "GET d",
    "BITOP XOR d k1 k2",
    "GET d",
    "BITOP NOT d k1",
    "GET d",
    "BITOP NOT d k1 k2",
    "BITOP NAND d k1",
    "BITOP AND d nokey nokey2",
    "EXISTS d",
    "SET d x EX 100",
    "BITOP AND d k1",
    "TTL d",
    "BITOP AND d k1 lst",
    "BITOP AND lst k1",
    "TYPE lst",
    "BITOP NOT d empty",
    "EXISTS d",
    "BITOP AND d i s",
    "GET d",
    // BITFIELD.
    "BITFIELD bf SET i8 0 -100 GET i8 0 GET u8 0",
    "BITFIELD bf INCRBY u4 #1 7 INCRBY u4 #1 10",
    "BITFIELD bf OVERFLOW SAT INCRBY u4 #1 10 INCRBY i4 0 -100",
    "BITFIELD bf OVERFLOW FAIL INCRBY u4 #1 100 GET u4 #1",
    "BITFIELD bf OVERFLOW wrap INCRBY i8 0 1000",
    "BITFIELD bf SET u63 0 9223372036854775807 GET u63 0 GET i64 0",
    "BITFIELD bf SET i64 0 -9223372036854775808 INCRBY i64 0 -1",
    "BITFIELD bf OVERFLOW SAT INCRBY i64 0 -1 INCRBY i64 0 9223372036854775807",
    "BITFIELD bf OVERFLOW FAIL SET i8 0 200 SET u8 0 -1 SET u8 0 255",
    "BITFIELD bf OVERFLOW SAT SET i8 0 200 SET u8 0 -1 SET i8 8 -200",
    "BITFIELD bf GET u8 1000 GET i5 3",
    "GET bf",
    "BITFIELD bf",
    "BITFIELD nokey",
    "BITFIELD nokey GET u8 0",
    "EXISTS nokey",
    "BITFIELD bf GET u64 0",
    "BITFIELD bf GET i65 0",
    "BITFIELD bf GET i0 0",
    "BITFIELD bf GET x8 0",
    "BITFIELD bf GET u 0",
    "BITFIELD bf GET \"\" 0",
    "BITFIELD bf GET u8 -1",
    "BITFIELD bf GET u8 x",
    "BITFIELD bf GET u8 #x",
    "BITFIELD bf GET u8 #-1",
    "BITFIELD bf GET u8 4294967296",
    "BITFIELD bf GET u8",
    "BITFIELD bf SET u8 0",
    "BITFIELD bf SET u8 0 x",
    "BITFIELD bf INCRBY u8 0 x",
    "BITFIELD bf OVERFLOW",
    "BITFIELD bf OVERFLOW BAD GET u8 0",
    "BITFIELD bf FOO u8 0",
    "BITFIELD bf GET u8 0 FOO",
    "BITFIELD_RO bf GET u8 0 GET i4 #3",
    "BITFIELD_RO bf SET u8 0 1",
    "BITFIELD_RO bf INCRBY u8 0 1",
    "BITFIELD_RO nokey GET u8 0",
    "BITFIELD_RO bf OVERFLOW SAT",
    "BITFIELD_RO bf OVERFLOW SAT GET u8 0",
    "BITFIELD i GET u8 0 SET u8 0 65",
    "GET i",
    "BITFIELD new OVERFLOW FAIL SET u2 100 9",
    "GET new",
    "BITFIELD new2 INCRBY u2 #3 1",
    "GET new2",
    "OBJECT ENCODING new2",
    // proto-max-bulk-len.
    "CONFIG SET proto-max-bulk-len 1mb",
    "SETBIT lim 8388607 1",
    "SETBIT lim 8388608 1",
    "GETBIT lim 8388608",
    "BITFIELD lim GET u8 8388608",
    "BITFIELD lim SET u8 #1048575 1",
    "BITFIELD lim SET u8 #1048576 1",
    "STRLEN lim",
    "CONFIG SET proto-max-bulk-len 512mb",
];

const BITMAP_RESP3_CASES: &[&str] = &["BITFIELD bf OVERFLOW FAIL INCRBY u4 0 100", "BITFIELD_RO bf GET u8 0", "BITCOUNT bf", "BITPOS bf 1"];

#[test]
fn bitmaps_curated() {
    let mut d = start();
    d.assert_script("bitmaps", BITMAP_CASES);
    let _ = d.hello(3).unwrap();
    d.assert_script("bitmaps resp3", BITMAP_RESP3_CASES);
}

#[test]
fn bitmap_random() {
    let keys = ["a", "b", "c"];
    let n = random_run("bitmaps", Duration::from_secs(8), |r| {
        let k = r.pick(&keys).to_string();
        let small = |r: &mut Rng| (r.below(80) as i64 - 10).to_string();
        match r.below(9) {
            0 | 1 => vec!["SETBIT".into(), k, small(r), r.pick(&["0", "1", "1", "2"]).into()],
            2 => vec!["GETBIT".into(), k, small(r)],
            3 => {
                let mut v = vec!["BITCOUNT".into(), k];
                if r.below(4) != 0 {
                    v.push(small(r));
                    v.push(small(r));
                    if r.below(2) == 0 {
                        v.push(r.pick(&["BIT", "BYTE", "bit"]).into());
                    }
                }
                v
            }
            4 | 5 => {
                let mut v = vec!["BITPOS".into(), k, r.pick(&["0", "1"]).into()];
                let extra = r.below(4);
                if extra >= 1 {
                    v.push(small(r));
                }
                if extra >= 2 {
                    v.push(small(r));
                }
                if extra >= 3 {
                    v.push(r.pick(&["BIT", "BYTE"]).into());
                }
                v
            }
            6 => {
                let mut v = vec!["BITOP".into(), r.pick(&["AND", "OR", "XOR", "NOT"]).into(), k];
                for _ in 0..=r.below(2) {
                    v.push(r.pick(&keys).into());
                }
                v
            }
            7 => {
                let mut v = vec!["BITFIELD".into(), k];
                for _ in 0..=r.below(3) {
                    let ty = format!("{}{}", r.pick(&["i", "u"]), 1 + r.below(64));
                    let off = if r.below(3) == 0 { format!("#{}", r.below(8)) } else { r.below(70).to_string() };
                    match r.below(4) {
                        0 => v.extend(["GET".to_string(), ty, off]),
                        1 => v.extend(["SET".to_string(), ty, off, r.int(300)]),
                        2 => v.extend(["INCRBY".to_string(), ty, off, r.int(300)]),
                        _ => v.extend(["OVERFLOW".to_string(), r.pick(&["WRAP", "SAT", "FAIL"]).to_string()]),
                    }
                }
                v
            }
            _ => vec!["GET".into(), k],
        }
    });
    assert!(n > 100, "only {n} commands ran");
}

const HLL_CASES: &[&str] = &[
    "PFADD h a b c",
    "GET h",
    "OBJECT ENCODING h",
    "TYPE h",
    "PFCOUNT h",
    "GET h",
    "PFADD h a",
    "PFADD h d",
    "GET h",
    "PFADD empty",
    "GET empty",
    "PFADD empty",
    "PFCOUNT empty",
    "PFCOUNT nokey",
    "PFCOUNT h nokey",
    "PFADD h2 c d e f g",
    "PFCOUNT h h2",
    "PFMERGE m h h2",
    "GET m",
    "PFCOUNT m",
    "PFMERGE m",
    "PFMERGE new",
    "GET new",
    "PFMERGE nokey2 nokey3",
    "GET nokey2",
    "SET str hello",
    "PFADD str a",
    "PFCOUNT str",
    "PFCOUNT h str",
    "PFMERGE m str",
    "PFMERGE str h",
    "SET int 123",
    "PFADD int a",
    "RPUSH lst a",
    "PFADD lst a",
    "PFCOUNT lst",
    "PFCOUNT h lst",
    "PFMERGE lst h",
    "PFMERGE m lst",
    "SET fake \"HYLL\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\"",
    "PFCOUNT fake",
    "SET fake2 \"HYLL\\x02\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\"",
    "PFCOUNT fake2",
    "SET bad \"HYLL\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x80\\x00\\x00\\x00\\x80\\x7f\"",
    "PFCOUNT bad",
    "PFADD bad x",
    "PFCOUNT h bad",
    "PFMERGE m bad",
    "SET short HYL",
    "PFCOUNT short",
    "PFADD",
    "PFCOUNT",
];

#[test]
fn hll_curated() {
    let mut d = start();
    d.assert_script("hll", HLL_CASES);
    // Sparse growth, promotion on a big register and on size, merges of dense values.
    let mut cmd = vec!["PFADD".to_string(), "grow".to_string()];
    cmd.extend((0..300).map(|i| format!("element-{i}")));
    check(&mut d, &cmd);
    check(&mut d, &["GET", "grow"]);
    check(&mut d, &["PFCOUNT", "grow"]);
    check(&mut d, &["GET", "grow"]);
    for step in 0..20 {
        let mut cmd = vec!["PFADD".to_string(), "grow".to_string()];
        cmd.extend((0..100).map(|i| format!("more-{step}-{i}")));
        check(&mut d, &cmd);
        check(&mut d, &["GET", "grow"]);
    }
    check(&mut d, &["PFCOUNT", "grow"]);
    check(&mut d, &["PFMERGE", "grow2", "h", "grow"]);
    check(&mut d, &["GET", "grow2"]);
    check(&mut d, &["PFMERGE", "h", "h2"]);
    check(&mut d, &["GET", "h"]);
    check(&mut d, &["CONFIG", "SET", "hll-sparse-max-bytes", "40"]);
    check(&mut d, &["PFADD", "tiny", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14"]);
    check(&mut d, &["GET", "tiny"]);
    check(&mut d, &["CONFIG", "SET", "hll-sparse-max-bytes", "3000"]);
    let _ = d.hello(3).unwrap();
    check(&mut d, &["PFCOUNT", "grow", "tiny"]);
    check(&mut d, &["PFADD", "grow", "zzz"]);
}

#[test]
fn hll_random() {
    let keys = ["a", "b", "c"];
    let n = random_run("hll", Duration::from_secs(8), |r| {
        let k = r.pick(&keys).to_string();
        match r.below(6) {
            0..=2 => {
                let mut v = vec!["PFADD".into(), k];
                for _ in 0..r.below(30) {
                    v.push(format!("e{}", r.below(5000)));
                }
                v
            }
            3 => vec!["PFCOUNT".into(), k],
            4 => vec!["PFMERGE".into(), k, r.pick(&keys).into(), r.pick(&keys).into()],
            _ => vec!["GET".into(), k],
        }
    });
    assert!(n > 100, "only {n} commands ran");
}

#[test]
fn pfcount_accuracy() {
    let mut d = start();
    for batch in 0..100 {
        let mut cmd = vec!["PFADD".to_string(), "acc".to_string()];
        cmd.extend((0..1000).map(|i| format!("item:{}", batch * 1000 + i)));
        check(&mut d, &cmd);
    }
    let got = d.check(&["PFCOUNT", "acc"]).unwrap_or_else(|e| panic!("{e}")).expect("reply");
    let count = got.value.as_int().unwrap();
    let err = (count as f64 - 100_000.0).abs() / 100_000.0;
    assert!(err < 0.02, "PFCOUNT {count} is {:.2}% off", err * 100.0);
    check(&mut d, &["GET", "acc"]);
    check(&mut d, &["PFCOUNT", "acc", "nokey"]);
}

/// PFDEBUG and PFSELFTEST as Redis 7.0 answers them (the registers, the sparse opcodes, the
/// encoding and the conversion), LOLWUT's version line, RESTORE-ASKING, and COMMAND COUNT
/// (every Redis 7.0 command is in the table).
#[test]
fn pfdebug_pfselftest_lolwut_restore_asking_and_command_count_match_redis() {
    let mut d = common::diff::DiffPair::start();
    d.assert_script(
        "internal commands",
        &[
            "PFADD h a b c d",
            "PFDEBUG DECODE h",
            "PFDEBUG ENCODING h",
            "PFDEBUG GETREG h",
            "PFDEBUG ENCODING h",
            "PFDEBUG TODENSE h",
            "PFADD h2 x",
            "PFDEBUG TODENSE h2",
            "PFDEBUG DECODE h2",
            "PFCOUNT h h2",
            "PFDEBUG NOSUCH h",
            "PFDEBUG GETREG nokey",
            "SET s x",
            "PFDEBUG GETREG s",
            "PFDEBUG GETREG",
            "PFSELFTEST",
            "PFSELFTEST x",
            "LOLWUT",
            "LOLWUT VERSION 7",
            "LOLWUT VERSION x",
            "LOLWUT VERSION 4",
            // Schotter's first two rows of squares are not disturbed: the same pixels.
            "LOLWUT VERSION 5 66 8 2",
            "LOLWUT VERSION 5 20 3 1",
            "LOLWUT VERSION 5 1 1 1",
            "LOLWUT VERSION 5 x",
            "COMMAND COUNT",
            "SET src v",
            "RESTORE-ASKING dst 0 \"\\x00\\x01v\\n\\x00\\x8b\\x9c\\xd9\\x1b\\xe7\\x8a\\x9e\\x05\"",
            "GET dst",
        ],
    );
    // The random drawings: their frame and their credits.
    for (args, credit) in [
        (&["LOLWUT", "VERSION", "5"][..], "Georg Nees - schotter, plotter on paper, 1968. Redis ver. 7.0.15\n"),
        (&["LOLWUT", "VERSION", "6", "30", "8"][..], "Original 8 bit image from Plaguemon by hikikomori. Redis ver. 7.0.15\n"),
    ] {
        let Ok(got) = d.ours_call(args) else { panic!("{args:?}") };
        let text = String::from_utf8_lossy(&got.raw).into_owned();
        assert!(text.ends_with(&format!("{credit}\r\n")), "{args:?}: {text}");
        let lines = text.lines().count();
        assert!(lines > 8, "{args:?}: {lines} lines");
    }
}
