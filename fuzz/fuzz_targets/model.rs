//! Model-based fuzzing of the executor: an `Arbitrary` sequence of commands for the string,
//! hash, set, list and sorted-set groups runs on a real executor (directly, or through EVAL)
//! and every reply is compared with a small reference model's. Arbitrary raw commands (any
//! name, any arguments, valid or not) are mixed in on database 1, where they cannot disturb
//! the modelled database 0; they must only never panic.
#![no_main]

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use bytes::Bytes;
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use vermilion::config::Config;
use vermilion::executor::{Executor, Request};
use vermilion::state::ClientOutput;

type Rx = tokio::sync::mpsc::UnboundedReceiver<ClientOutput>;

thread_local! {
    static EXEC: RefCell<(Executor, Rx)> = RefCell::new({
        let mut config = Config::new();
        let _ = config.set("appendonly", "no", true);
        let mut exec = Executor::new(config);
        let rx = exec.connect_detached(1);
        (exec, rx)
    });
}

#[derive(Arbitrary, Debug, Clone, Copy)]
struct K(u8);
#[derive(Arbitrary, Debug, Clone, Copy)]
struct V(u8);

impl K {
    fn name(self) -> String {
        format!("k{}", self.0 % 4)
    }
}
impl V {
    fn text(self) -> String {
        // A few shapes: short, numeric, empty, with a NUL.
        match self.0 % 8 {
            0 => String::new(),
            1 => "12".into(),
            2 => "-3".into(),
            3 => "a\0b".into(),
            n => format!("v{n}"),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Op {
    Set(K, V),
    Get(K),
    Del(K),
    Append(K, V),
    IncrBy(K, i8),
    Strlen(K),
    Exists(K),
    Type(K),
    HSet(K, V, V),
    HGet(K, V),
    HDel(K, V),
    HLen(K),
    HGetAll(K),
    SAdd(K, V),
    SRem(K, V),
    SCard(K),
    SIsMember(K, V),
    SMembers(K),
    LPush(K, V),
    RPush(K, V),
    LPop(K),
    RPop(K),
    LLen(K),
    LRange(K, i8, i8),
    LIndex(K, i8),
    ZAdd(K, i8, V),
    ZRem(K, V),
    ZScore(K, V),
    ZCard(K),
    ZRange(K, i8, i8),
    ZRank(K, V),
    /// Anything at all, on database 1.
    Raw(Vec<Vec<u8>>),
}

#[derive(Arbitrary, Debug)]
struct Step {
    op: Op,
    via_script: bool,
}

#[derive(Clone, Debug)]
enum Val {
    Str(Vec<u8>),
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
    Set(BTreeSet<Vec<u8>>),
    List(VecDeque<Vec<u8>>),
    /// member -> score (integers only: the model needs no float formatting).
    ZSet(BTreeMap<Vec<u8>, i64>),
}

const WRONGTYPE: &[u8] = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";

fn bulk(b: &[u8]) -> Vec<u8> {
    let mut out = format!("${}\r\n", b.len()).into_bytes();
    out.extend_from_slice(b);
    out.extend_from_slice(b"\r\n");
    out
}
fn int(n: i64) -> Vec<u8> {
    format!(":{n}\r\n").into_bytes()
}
fn arr(items: Vec<Vec<u8>>) -> Vec<u8> {
    let mut out = format!("*{}\r\n", items.len()).into_bytes();
    for i in items {
        out.extend(i);
    }
    out
}
const NIL: &[u8] = b"$-1\r\n";

/// Redis's LRANGE/ZRANGE index normalisation: Some((start, end)) inclusive, or None (empty).
fn range(len: usize, start: i64, end: i64) -> Option<(usize, usize)> {
    let len = len as i64;
    let mut s = if start < 0 { len + start } else { start };
    let mut e = if end < 0 { len + end } else { end };
    if s < 0 {
        s = 0;
    }
    if s > e || s >= len {
        return None;
    }
    if e >= len {
        e = len - 1;
    }
    Some((s as usize, e as usize))
}

#[derive(Default)]
struct Model {
    keys: BTreeMap<Vec<u8>, Val>,
}

impl Model {
    /// Applies `op` and returns (argv, expected reply), or None for ops the model skips.
    fn step(&mut self, op: &Op) -> Option<(Vec<String>, Vec<u8>)> {
        use Op::*;
        let argv = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        Some(match *op {
            Set(k, v) => {
                self.keys.insert(k.name().into_bytes(), Val::Str(v.text().into_bytes()));
                (argv(&["SET", &k.name(), &v.text()]), b"+OK\r\n".to_vec())
            }
            Get(k) => {
                let r = match self.keys.get(k.name().as_bytes()) {
                    None => NIL.to_vec(),
                    Some(Val::Str(s)) => bulk(s),
                    Some(_) => WRONGTYPE.to_vec(),
                };
                (argv(&["GET", &k.name()]), r)
            }
            Del(k) => {
                let n = self.keys.remove(k.name().as_bytes()).is_some() as i64;
                (argv(&["DEL", &k.name()]), int(n))
            }
            Append(k, v) => {
                let key = k.name().into_bytes();
                let r = match self.keys.entry(key).or_insert_with(|| Val::Str(Vec::new())) {
                    Val::Str(s) => {
                        s.extend_from_slice(v.text().as_bytes());
                        int(s.len() as i64)
                    }
                    _ => WRONGTYPE.to_vec(),
                };
                (argv(&["APPEND", &k.name(), &v.text()]), r)
            }
            IncrBy(k, by) => {
                let key = k.name().into_bytes();
                let r = match self.keys.get(&key) {
                    None => {
                        self.keys.insert(key, Val::Str(by.to_string().into_bytes()));
                        int(by as i64)
                    }
                    Some(Val::Str(s)) => match std::str::from_utf8(s).ok().filter(|t| !t.starts_with('+')).and_then(|t| t.parse::<i64>().ok()) {
                        Some(n) if n.to_string().as_bytes() == s.as_slice() => match n.checked_add(by as i64) {
                            Some(m) => {
                                self.keys.insert(key, Val::Str(m.to_string().into_bytes()));
                                int(m)
                            }
                            None => b"-ERR increment or decrement would overflow\r\n".to_vec(),
                        },
                        _ => b"-ERR value is not an integer or out of range\r\n".to_vec(),
                    },
                    Some(_) => WRONGTYPE.to_vec(),
                };
                (argv(&["INCRBY", &k.name(), &by.to_string()]), r)
            }
            Strlen(k) => {
                let r = match self.keys.get(k.name().as_bytes()) {
                    None => int(0),
                    Some(Val::Str(s)) => int(s.len() as i64),
                    Some(_) => WRONGTYPE.to_vec(),
                };
                (argv(&["STRLEN", &k.name()]), r)
            }
            Exists(k) => (argv(&["EXISTS", &k.name()]), int(self.keys.contains_key(k.name().as_bytes()) as i64)),
            Type(k) => {
                let t = match self.keys.get(k.name().as_bytes()) {
                    None => "none",
                    Some(Val::Str(_)) => "string",
                    Some(Val::Hash(_)) => "hash",
                    Some(Val::Set(_)) => "set",
                    Some(Val::List(_)) => "list",
                    Some(Val::ZSet(_)) => "zset",
                };
                (argv(&["TYPE", &k.name()]), format!("+{t}\r\n").into_bytes())
            }
            HSet(k, f, v) => {
                let key = k.name().into_bytes();
                let r = match self.keys.entry(key).or_insert_with(|| Val::Hash(BTreeMap::new())) {
                    Val::Hash(h) => int(h.insert(f.text().into_bytes(), v.text().into_bytes()).is_none() as i64),
                    _ => WRONGTYPE.to_vec(),
                };
                (argv(&["HSET", &k.name(), &f.text(), &v.text()]), r)
            }
            HGet(k, f) => {
                let r = match self.keys.get(k.name().as_bytes()) {
                    None => NIL.to_vec(),
                    Some(Val::Hash(h)) => h.get(f.text().as_bytes()).map_or(NIL.to_vec(), |v| bulk(v)),
                    Some(_) => WRONGTYPE.to_vec(),
                };
                (argv(&["HGET", &k.name(), &f.text()]), r)
            }
            HDel(k, f) => {
                let key = k.name().into_bytes();
                let r = match self.keys.get_mut(&key) {
                    None => int(0),
                    Some(Val::Hash(h)) => {
                        let n = h.remove(f.text().as_bytes()).is_some() as i64;
                        if h.is_empty() {
                            self.keys.remove(&key);
                        }
                        int(n)
                    }
                    Some(_) => WRONGTYPE.to_vec(),
                };
                (argv(&["HDEL", &k.name(), &f.text()]), r)
            }
            HLen(k) => {
                let r = match self.keys.get(k.name().as_bytes()) {
                    None => int(0),
                    Some(Val::Hash(h)) => int(h.len() as i64),
                    Some(_) => WRONGTYPE.to_vec(),
                };
                (argv(&["HLEN", &k.name()]), r)
            }
            // Field order is the server's own: the model's sorted pairs are compared with
            // the reply's pairs sorted (see `canonical`).
            HGetAll(k) => {
                let r = match self.keys.get(k.name().as_bytes()) {
                    None => arr(vec![]),
                    Some(Val::Hash(h)) => arr(h.iter().flat_map(|(f, v)| [bulk(f), bulk(v)]).collect()),
                    Some(_) => WRONGTYPE.to_vec(),
                };
                (argv(&["HGETALL", &k.name()]), r)
            }
            SAdd(k, m) => {
                let key = k.name().into_bytes();
                let r = match self.keys.entry(key).or_insert_with(|| Val::Set(BTreeSet::new())) {
                    Val::Set(s) => int(s.insert(m.text().into_bytes()) as i64),
                    _ => WRONGTYPE.to_vec(),
                };
                (argv(&["SADD", &k.name(), &m.text()]), r)
            }
            SRem(k, m) => {
                let key = k.name().into_bytes();
                let r = match self.keys.get_mut(&key) {
                    None => int(0),
                    Some(Val::Set(s)) => {
                        let n = s.remove(m.text().as_bytes()) as i64;
                        if s.is_empty() {
                            self.keys.remove(&key);
                        }
                        int(n)
                    }
                    Some(_) => WRONGTYPE.to_vec(),
                };
                (argv(&["SREM", &k.name(), &m.text()]), r)
            }
            SCard(k) => {
                let r = match self.keys.get(k.name().as_bytes()) {
                    None => int(0),
                    Some(Val::Set(s)) => int(s.len() as i64),
                    Some(_) => WRONGTYPE.to_vec(),
                };
                (argv(&["SCARD", &k.name()]), r)
            }
            SIsMember(k, m) => {
                let r = match self.keys.get(k.name().as_bytes()) {
                    None => int(0),
                    Some(Val::Set(s)) => int(s.contains(m.text().as_bytes()) as i64),
                    Some(_) => WRONGTYPE.to_vec(),
                };
                (argv(&["SISMEMBER", &k.name(), &m.text()]), r)
            }
            SMembers(k) => {
                let r = match self.keys.get(k.name().as_bytes()) {
                    None => arr(vec![]),
                    Some(Val::Set(s)) => arr(s.iter().map(|m| bulk(m)).collect()),
                    Some(_) => WRONGTYPE.to_vec(),
                };
                (argv(&["SMEMBERS", &k.name()]), r)
            }
            LPush(k, v) | RPush(k, v) => {
                let left = matches!(op, LPush(..));
                let key = k.name().into_bytes();
                let r = match self.keys.entry(key).or_insert_with(|| Val::List(VecDeque::new())) {
                    Val::List(l) => {
                        if left {
                            l.push_front(v.text().into_bytes());
                        } else {
                            l.push_back(v.text().into_bytes());
                        }
                        int(l.len() as i64)
                    }
                    _ => WRONGTYPE.to_vec(),
                };
                (argv(&[if left { "LPUSH" } else { "RPUSH" }, &k.name(), &v.text()]), r)
            }
            LPop(k) | RPop(k) => {
                let left = matches!(op, LPop(..));
                let key = k.name().into_bytes();
                let r = match self.keys.get_mut(&key) {
                    None => NIL.to_vec(),
                    Some(Val::List(l)) => {
                        let v = if left { l.pop_front() } else { l.pop_back() };
                        if l.is_empty() {
                            self.keys.remove(&key);
                        }
                        v.map_or(NIL.to_vec(), |v| bulk(&v))
                    }
                    Some(_) => WRONGTYPE.to_vec(),
                };
                (argv(&[if left { "LPOP" } else { "RPOP" }, &k.name()]), r)
            }
            LLen(k) => {
                let r = match self.keys.get(k.name().as_bytes()) {
                    None => int(0),
                    Some(Val::List(l)) => int(l.len() as i64),
                    Some(_) => WRONGTYPE.to_vec(),
                };
                (argv(&["LLEN", &k.name()]), r)
            }
            LRange(k, s, e) => {
                let r = match self.keys.get(k.name().as_bytes()) {
                    None => arr(vec![]),
                    Some(Val::List(l)) => match range(l.len(), s as i64, e as i64) {
                        Some((a, b)) => arr((a..=b).map(|i| bulk(&l[i])).collect()),
                        None => arr(vec![]),
                    },
                    Some(_) => WRONGTYPE.to_vec(),
                };
                (argv(&["LRANGE", &k.name(), &s.to_string(), &e.to_string()]), r)
            }
            LIndex(k, i) => {
                let r = match self.keys.get(k.name().as_bytes()) {
                    None => NIL.to_vec(),
                    Some(Val::List(l)) => {
                        let idx = if i < 0 { l.len() as i64 + i as i64 } else { i as i64 };
                        if idx >= 0 && (idx as usize) < l.len() {
                            bulk(&l[idx as usize])
                        } else {
                            NIL.to_vec()
                        }
                    }
                    Some(_) => WRONGTYPE.to_vec(),
                };
                (argv(&["LINDEX", &k.name(), &i.to_string()]), r)
            }
            ZAdd(k, score, m) => {
                let key = k.name().into_bytes();
                let r = match self.keys.entry(key).or_insert_with(|| Val::ZSet(BTreeMap::new())) {
                    Val::ZSet(z) => int(z.insert(m.text().into_bytes(), score as i64).is_none() as i64),
                    _ => WRONGTYPE.to_vec(),
                };
                (argv(&["ZADD", &k.name(), &score.to_string(), &m.text()]), r)
            }
            ZRem(k, m) => {
                let key = k.name().into_bytes();
                let r = match self.keys.get_mut(&key) {
                    None => int(0),
                    Some(Val::ZSet(z)) => {
                        let n = z.remove(m.text().as_bytes()).is_some() as i64;
                        if z.is_empty() {
                            self.keys.remove(&key);
                        }
                        int(n)
                    }
                    Some(_) => WRONGTYPE.to_vec(),
                };
                (argv(&["ZREM", &k.name(), &m.text()]), r)
            }
            ZScore(k, m) => {
                let r = match self.keys.get(k.name().as_bytes()) {
                    None => NIL.to_vec(),
                    Some(Val::ZSet(z)) => z.get(m.text().as_bytes()).map_or(NIL.to_vec(), |s| bulk(s.to_string().as_bytes())),
                    Some(_) => WRONGTYPE.to_vec(),
                };
                (argv(&["ZSCORE", &k.name(), &m.text()]), r)
            }
            ZCard(k) => {
                let r = match self.keys.get(k.name().as_bytes()) {
                    None => int(0),
                    Some(Val::ZSet(z)) => int(z.len() as i64),
                    Some(_) => WRONGTYPE.to_vec(),
                };
                (argv(&["ZCARD", &k.name()]), r)
            }
            ZRange(k, s, e) => {
                let r = match self.keys.get(k.name().as_bytes()) {
                    None => arr(vec![]),
                    Some(Val::ZSet(z)) => {
                        let sorted = zsorted(z);
                        match range(sorted.len(), s as i64, e as i64) {
                            Some((a, b)) => {
                                arr(sorted[a..=b].iter().flat_map(|(m, sc)| [bulk(m), bulk(sc.to_string().as_bytes())]).collect())
                            }
                            None => arr(vec![]),
                        }
                    }
                    Some(_) => WRONGTYPE.to_vec(),
                };
                (argv(&["ZRANGE", &k.name(), &s.to_string(), &e.to_string(), "WITHSCORES"]), r)
            }
            ZRank(k, m) => {
                let r = match self.keys.get(k.name().as_bytes()) {
                    None => NIL.to_vec(),
                    Some(Val::ZSet(z)) => {
                        let sorted = zsorted(z);
                        sorted.iter().position(|(x, _)| x.as_slice() == m.text().as_bytes()).map_or(NIL.to_vec(), |i| int(i as i64))
                    }
                    Some(_) => WRONGTYPE.to_vec(),
                };
                (argv(&["ZRANK", &k.name(), &m.text()]), r)
            }
            Raw(_) => return None,
        })
    }
}

fn zsorted(z: &BTreeMap<Vec<u8>, i64>) -> Vec<(Vec<u8>, i64)> {
    let mut v: Vec<(Vec<u8>, i64)> = z.iter().map(|(m, s)| (m.clone(), *s)).collect();
    v.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    v
}

/// Commands a raw step may not run: they would leave database 1, change the connection's
/// mode or the server's configuration, or block.
const RAW_DENY: &[&str] = &[
    "select", "swapdb", "move", "copy", "flushall", "flushdb", "shutdown", "debug", "config", "client", "acl", "auth", "hello",
    "reset", "quit", "multi", "exec", "discard", "watch", "subscribe", "psubscribe", "ssubscribe", "monitor", "replicaof",
    "slaveof", "eval", "evalsha", "eval_ro", "evalsha_ro", "script", "blpop", "brpop", "brpoplpush", "blmove", "blmpop",
    "bzpopmin", "bzpopmax", "bzmpop", "wait", "bgrewriteaof", "psync", "sync", "replconf", "save", "bgsave", "sort",
];

fn run(exec: &mut Executor, rx: &mut Rx, argv: Vec<Bytes>) -> Vec<u8> {
    exec.handle(Request::Commands { id: 1, cmds: vec![argv], protocol_error: None });
    exec.release_replies();
    let mut out = Vec::new();
    while let Ok(ClientOutput::Replies(bytes)) = rx.try_recv() {
        out.extend_from_slice(&bytes);
    }
    out
}

/// HGETALL's pairs in sorted order (the server's order is its own).
fn canonical(name: &str, reply: Vec<u8>) -> Vec<u8> {
    if name != "HGETALL" && name != "SMEMBERS" || !reply.starts_with(b"*") {
        return reply;
    }
    // Parse the flat array of bulks.
    let mut items = Vec::new();
    let mut rest = &reply[..];
    let nl = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len() - 1);
    rest = &rest[nl + 1..];
    while !rest.is_empty() {
        let nl = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len() - 1);
        let len: usize = std::str::from_utf8(&rest[1..nl - 1]).ok().and_then(|t| t.parse().ok()).unwrap_or(0);
        items.push(rest[nl + 1..nl + 1 + len].to_vec());
        rest = &rest[nl + 1 + len + 2..];
    }
    let mut groups: Vec<Vec<Vec<u8>>> = if name == "HGETALL" { items.chunks(2).map(|c| c.to_vec()).collect() } else { items.into_iter().map(|i| vec![i]).collect() };
    groups.sort();
    arr(groups.into_iter().flatten().map(|i| bulk(&i)).collect())
}

fuzz_target!(|steps: Vec<Step>| {
    EXEC.with(|cell| {
        let (exec, rx) = &mut *cell.borrow_mut();
        let b = |s: &str| Bytes::copy_from_slice(s.as_bytes());
        run(exec, rx, vec![b("FLUSHALL")]);
        let mut model = Model::default();
        for step in steps.iter().take(64) {
            if let Op::Raw(args) = &step.op {
                let Some(name) = args.first() else { continue };
                let lower = String::from_utf8_lossy(name).to_ascii_lowercase();
                if RAW_DENY.contains(&lower.as_str()) || args.len() > 16 {
                    continue;
                }
                run(exec, rx, vec![b("SELECT"), b("1")]);
                let out = run(exec, rx, args.iter().map(|a| Bytes::copy_from_slice(a)).collect());
                assert!(!out.is_empty(), "every command gets a reply: {args:?}");
                let back = run(exec, rx, vec![b("SELECT"), b("0")]);
                assert_eq!(back, b"+OK\r\n");
                continue;
            }
            let Some((argv, expected)) = model.step(&step.op) else { continue };
            let name = argv[0].clone();
            let cmd: Vec<Bytes> = if step.via_script {
                // The same command through redis.call: same reply once converted back.
                let mut v = vec![b("EVAL"), b("return redis.call(unpack(ARGV))"), b("0")];
                v.extend(argv.iter().map(|a| b(a)));
                v
            } else {
                argv.iter().map(|a| b(a)).collect()
            };
            let got = run(exec, rx, cmd);
            let mut want = expected;
            let mut got = got;
            if step.via_script && want.starts_with(b"-") {
                // An error raised by redis.call carries the script's location.
                let first = want.split(|&c| c == b'\r').next().unwrap_or_default().to_vec();
                assert!(got.starts_with(&first), "{argv:?} via script: got {:?}, want prefix {:?}", String::from_utf8_lossy(&got), String::from_utf8_lossy(&first));
                continue;
            }
            if step.via_script && want.starts_with(b":") {
                // Lua numbers are doubles: an integer reply crosses the script as one, as in Redis.
                let n: i64 = std::str::from_utf8(&want[1..want.len() - 2]).ok().and_then(|t| t.parse().ok()).unwrap_or(0);
                want = int(n as f64 as i64);
            }
            want = canonical(&name, want);
            got = canonical(&name, got);
            assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(&want), "{argv:?} (script: {})", step.via_script);
        }
    });
});
