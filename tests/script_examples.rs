//! The example Lua scripts of `data/scripts/`, run the way users run them: with
//! `redis-cli --eval` from a shell, and from an application through the `redis` crate
//! (EVALSHA first, EVAL on NOSCRIPT). Every story runs against the real redis-server 7.0 and
//! against vermilion-server, through both paths, and expects the same replies everywhere.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::thread::sleep;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sha1::{Digest, Sha1};

use common::Server;

const SCRIPTS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/scripts");

/// Every script of `data/scripts/`, in the order their documented invocations make sense.
const ALL_SCRIPTS: &[&str] = &[
    "ticket_hold.lua",
    "ticket_prepare.lua",
    "ticket_purchase.lua",
    "rate_limit_fixed_window.lua",
    "rate_limit_sliding_window.lua",
    "lock_acquire.lua",
    "lock_extend.lua",
    "lock_release.lua",
    "counter_publish.lua",
];

// The ticket scripts' keys; the {42} hash tag keeps an event's keys in one cluster slot.
const EVENT: &str = "event:{42}";
const HOLDS: &str = "event:{42}:holds";
const HOLD_QTY: &str = "event:{42}:hold_qty";

/// A script file: its body and the SHA1 clients use for EVALSHA.
struct Script {
    name: &'static str,
    body: String,
    sha: String,
}

impl Script {
    fn load(name: &'static str) -> Script {
        let path = Path::new(SCRIPTS_DIR).join(name);
        let body = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        let sha = Sha1::digest(body.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        Script { name, body, sha }
    }
}

/// A reply, the same whether it was read by the `redis` crate or from `redis-cli --no-raw`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reply {
    Int(i64),
    Str(String),
    Status(String),
    Nil,
    Err(String),
    Array(Vec<Reply>),
}

impl Reply {
    /// The integers of an array reply.
    fn ints(&self, who: &str) -> Vec<i64> {
        match self {
            Reply::Array(items) => items
                .iter()
                .map(|r| match r {
                    Reply::Int(n) => *n,
                    other => panic!("{who}: expected integers, got {other:?} in {self:?}"),
                })
                .collect(),
            other => panic!("{who}: expected an array of integers, got {other:?}"),
        }
    }
}

fn ints(values: &[i64]) -> Reply {
    Reply::Array(values.iter().map(|n| Reply::Int(*n)).collect())
}

fn err(message: &str) -> Reply {
    Reply::Err(message.to_string())
}

fn bulk(s: &str) -> Reply {
    Reply::Str(s.to_string())
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("clock after 1970").as_millis() as i64
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Via {
    /// `redis-cli --no-raw -p PORT --eval data/scripts/X.lua k1 k2 , a1 a2`
    Cli,
    /// The `redis` crate: EVALSHA, and EVAL when the server answers NOSCRIPT.
    Crate,
}

/// A user of one server: runs the scripts one way, and plain commands through the crate.
struct Client {
    who: String,
    port: u16,
    via: Via,
    con: redis::Connection,
    /// How many times EVALSHA got NOSCRIPT and the script was sent with EVAL instead.
    fallbacks: usize,
}

impl Client {
    fn new(server_name: &str, server: &Server, via: Via) -> Client {
        let how = match via {
            Via::Cli => "redis-cli --eval",
            Via::Crate => "the redis crate (EVALSHA/EVAL)",
        };
        Client { who: format!("{server_name} via {how}"), port: server.port, via, con: server.client(), fallbacks: 0 }
    }

    fn eval(&mut self, script: &Script, keys: &[&str], args: &[&str]) -> Reply {
        match self.via {
            Via::Cli => self.eval_cli(script, keys, args),
            Via::Crate => self.eval_crate(script, keys, args),
        }
    }

    fn eval_cli(&mut self, script: &Script, keys: &[&str], args: &[&str]) -> Reply {
        let mut argv: Vec<String> = vec!["--eval".into(), format!("data/scripts/{}", script.name)];
        argv.extend(keys.iter().map(|k| k.to_string()));
        if !args.is_empty() {
            argv.push(",".into());
            argv.extend(args.iter().map(|a| a.to_string()));
        }
        let stdout = redis_cli(self.port, &argv);
        parse_cli_reply(&stdout).unwrap_or_else(|e| panic!("{}: redis-cli {argv:?}: {e}; output {stdout:?}", self.who))
    }

    fn eval_crate(&mut self, script: &Script, keys: &[&str], args: &[&str]) -> Reply {
        let mut evalsha = redis::cmd("EVALSHA");
        evalsha.arg(&script.sha).arg(keys.len()).arg(keys).arg(args);
        match evalsha.query::<redis::Value>(&mut self.con) {
            Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
                self.fallbacks += 1;
                let mut eval = redis::cmd("EVAL");
                eval.arg(&script.body).arg(keys.len()).arg(keys).arg(args);
                to_reply(eval.query(&mut self.con), &self.who)
            }
            result => to_reply(result, &self.who),
        }
    }

    /// A plain command, through the crate.
    fn call<T: redis::FromRedisValue>(&mut self, args: &[&str]) -> T {
        let mut cmd = redis::cmd(args[0]);
        cmd.arg(&args[1..]);
        cmd.query(&mut self.con).unwrap_or_else(|e| panic!("{}: {args:?}: {e}", self.who))
    }

    fn hget(&mut self, key: &str, field: &str) -> Option<String> {
        self.call(&["HGET", key, field])
    }

    /// The event's counters: [available, held, reserved, sold].
    fn inventory(&mut self) -> [i64; 4] {
        let v: Vec<Option<i64>> = self.call(&["HMGET", EVENT, "available", "held", "reserved", "sold"]);
        let get = |i: usize| v[i].unwrap_or_else(|| panic!("{EVENT} lacks a counter: {v:?}"));
        [get(0), get(1), get(2), get(3)]
    }
}

fn to_reply(result: redis::RedisResult<redis::Value>, who: &str) -> Reply {
    match result {
        Ok(value) => value_to_reply(value, who),
        Err(e) => match e.code() {
            Some(code) => Reply::Err(match e.detail() {
                Some(detail) => format!("{code} {detail}"),
                None => code.to_string(),
            }),
            None => panic!("{who}: transport error: {e}"),
        },
    }
}

fn value_to_reply(value: redis::Value, who: &str) -> Reply {
    match value {
        redis::Value::Int(n) => Reply::Int(n),
        redis::Value::BulkString(b) => Reply::Str(String::from_utf8(b).expect("utf-8 bulk string")),
        redis::Value::SimpleString(s) => Reply::Status(s),
        redis::Value::Okay => Reply::Status("OK".into()),
        redis::Value::Nil => Reply::Nil,
        redis::Value::Array(items) => Reply::Array(items.into_iter().map(|v| value_to_reply(v, who)).collect()),
        redis::Value::ServerError(e) => Reply::Err(match e.details() {
            Some(detail) => format!("{} {detail}", e.code()),
            None => e.code().to_string(),
        }),
        other => panic!("{who}: unexpected RESP2 value {other:?}"),
    }
}

/// Runs `redis-cli --no-raw -p PORT ARGS...` from the repository root; returns its stdout.
fn redis_cli(port: u16, args: &[String]) -> String {
    let out = Command::new("redis-cli")
        .arg("--no-raw")
        .arg("-p")
        .arg(port.to_string())
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run redis-cli");
    assert!(out.stderr.is_empty(), "redis-cli {args:?} wrote to stderr: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("redis-cli prints utf-8")
}

/// Parses redis-cli's human format (what `--no-raw` and a terminal show) for the replies our
/// scripts give: a scalar, or a flat array of scalars.
fn parse_cli_reply(stdout: &str) -> Result<Reply, String> {
    let lines: Vec<&str> = stdout.lines().collect();
    match lines.as_slice() {
        [] => Err("no output".into()),
        ["(empty array)"] => Ok(Reply::Array(Vec::new())),
        [first, ..] if first.starts_with("1) ") => {
            let mut items = Vec::new();
            for (i, line) in lines.iter().enumerate() {
                let prefix = format!("{}) ", i + 1);
                let item = line.strip_prefix(&prefix).ok_or_else(|| format!("line {line:?} is not array item {}", i + 1))?;
                if item.starts_with("1) ") {
                    return Err("nested arrays are not expected".into());
                }
                items.push(parse_cli_scalar(item)?);
            }
            Ok(Reply::Array(items))
        }
        [only] => parse_cli_scalar(only),
        _ => Err("several lines but not an array".into()),
    }
}

fn parse_cli_scalar(s: &str) -> Result<Reply, String> {
    if let Some(n) = s.strip_prefix("(integer) ") {
        return n.parse().map(Reply::Int).map_err(|e| format!("integer {n:?}: {e}"));
    }
    if let Some(e) = s.strip_prefix("(error) ") {
        return Ok(Reply::Err(e.to_string()));
    }
    if s == "(nil)" {
        return Ok(Reply::Nil);
    }
    if let Some(inner) = s.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        if inner.contains('\\') {
            return Err(format!("escaped string {s:?} is not expected"));
        }
        return Ok(Reply::Str(inner.to_string()));
    }
    Ok(Reply::Status(s.to_string()))
}

/// Starts the real redis-server, then vermilion-server, and gives each to `f`.
fn for_each_server(mut f: impl FnMut(&str, &Server)) {
    for (name, server) in [("redis-server", Server::start_redis(&[])), ("vermilion", Server::start(&[]))] {
        f(name, &server);
    }
}

/// Runs a story on both servers, once through redis-cli and once through the crate, each time
/// on an empty server with an empty script cache.
fn for_each_server_and_client(mut f: impl FnMut(&Server, &mut Client)) {
    for_each_server(|name, server| {
        for via in [Via::Cli, Via::Crate] {
            let mut c = Client::new(name, server, via);
            c.call::<()>(&["FLUSHALL"]);
            c.call::<()>(&["SCRIPT", "FLUSH"]);
            f(server, &mut c);
        }
    });
}

fn new_event(c: &mut Client, available: i64) {
    c.call::<()>(&["HSET", EVENT, "available", &available.to_string(), "held", "0", "reserved", "0", "sold", "0"]);
}

/// ticket_hold.lua for `who`; `now: None` lets the script read the server clock.
fn hold(c: &mut Client, script: &Script, who: &str, tickets: i64, ttl_ms: i64, now: Option<i64>) -> Reply {
    let (tickets, ttl_ms) = (tickets.to_string(), ttl_ms.to_string());
    let now = now.map(|n| n.to_string());
    let mut args = vec![who, tickets.as_str(), ttl_ms.as_str()];
    args.extend(now.as_deref());
    c.eval(script, &[EVENT, HOLDS, HOLD_QTY], &args)
}

/// ticket_prepare.lua: `who` orders `tickets` as order `order`.
fn prepare(c: &mut Client, script: &Script, order: &str, who: &str, tickets: i64, now: i64) -> Reply {
    c.eval(script, &[EVENT, HOLDS, HOLD_QTY, order], &[who, &tickets.to_string(), &now.to_string()])
}

/// ticket_purchase.lua: `transition` (AUTHORIZE, COMPLETE, FAIL) on `order`.
fn purchase(c: &mut Client, script: &Script, order: &str, transition: &str, note: &str) -> Reply {
    c.eval(script, &[EVENT, order], &[transition, note])
}

#[test]
fn ticket_holds_count_against_capacity_and_expired_holds_are_freed() {
    let script = Script::load("ticket_hold.lua");
    for_each_server_and_client(|_, c| {
        new_event(c, 5);
        let t0 = now_ms();

        // Alice and Bob hold 2 + 3 of the 5 tickets for 150 ms: nothing is free any more.
        assert_eq!(hold(c, &script, "alice", 2, 150, Some(t0)), ints(&[1, 3, t0 + 150]), "{}", c.who);
        assert_eq!(hold(c, &script, "bob", 3, 150, Some(t0)), ints(&[1, 0, t0 + 150]), "{}", c.who);
        assert_eq!(hold(c, &script, "carol", 1, 60_000, Some(t0)), ints(&[0, 0, 0]), "{}: capacity reached", c.who);
        assert_eq!(c.inventory(), [5, 5, 0, 0], "{}", c.who);

        // Alice changes her mind: her new hold of 1 replaces the old one, and Carol gets the
        // ticket she let go.
        assert_eq!(hold(c, &script, "alice", 1, 150, Some(t0)), ints(&[1, 1, t0 + 150]), "{}", c.who);
        assert_eq!(hold(c, &script, "carol", 1, 60_000, Some(t0)), ints(&[1, 0, t0 + 60_000]), "{}", c.who);

        // Alice and Bob walk away. Once their holds expire, the next call frees their tickets.
        sleep(Duration::from_millis(200));
        let t1 = now_ms();
        assert_eq!(hold(c, &script, "dave", 4, 60_000, Some(t1)), ints(&[1, 0, t1 + 60_000]), "{}: expired holds freed", c.who);
        assert_eq!(c.inventory(), [5, 5, 0, 0], "{}", c.who);
        assert_eq!(c.call::<Vec<String>>(&["ZRANGE", HOLDS, "0", "-1"]), ["carol", "dave"], "{}", c.who);
        let sizes: HashMap<String, i64> = c.call(&["HGETALL", HOLD_QTY]);
        assert_eq!(sizes, HashMap::from([("carol".to_string(), 1), ("dave".to_string(), 4)]), "{}", c.who);
        assert_eq!(hold(c, &script, "erin", 1, 100, Some(t1)), ints(&[0, 0, 0]), "{}", c.who);

        // Without `now`, the script reads the server clock. Dave shrinks his hold to 2 for
        // 500 ms; once it has expired, Erin can hold the 4 tickets Carol does not hold.
        let before = now_ms();
        let granted = hold(c, &script, "dave", 2, 500, None).ints(&c.who);
        let after = now_ms();
        assert_eq!(granted[..2], [1, 2], "{}", c.who);
        assert!((before + 500..=after + 500).contains(&granted[2]), "{}: expiry {granted:?} from the server clock", c.who);
        assert_eq!(hold(c, &script, "erin", 4, 100, None), ints(&[0, 2, 0]), "{}: Dave still holds 2", c.who);
        sleep(Duration::from_millis(550));
        assert_eq!(hold(c, &script, "erin", 4, 60_000, None).ints(&c.who)[..2], [1, 0], "{}", c.who);
        assert_eq!(c.inventory(), [5, 5, 0, 0], "{}", c.who);
        assert_eq!(c.call::<Vec<String>>(&["ZRANGE", HOLDS, "0", "-1"]), ["carol", "erin"], "{}", c.who);

        // Bad requests are refused before anything changes.
        assert_eq!(hold(c, &script, "frank", 0, 100, Some(t1)), err("ERR ticket count must be a positive integer"), "{}", c.who);
        assert_eq!(hold(c, &script, "frank", 1, -5, Some(t1)), err("ERR hold ttl must be a positive integer (ms)"), "{}", c.who);
        let no_event = c.eval(&script, &["event:{43}", "event:{43}:holds", "event:{43}:hold_qty"], &["frank", "1", "100"]);
        assert_eq!(no_event, err("NOEVENT event:{43} has no available field"), "{}", c.who);
        assert_eq!(c.inventory(), [5, 5, 0, 0], "{}", c.who);
    });
}

#[test]
fn purchase_moves_through_its_states_only_from_the_expected_state() {
    let hold_script = Script::load("ticket_hold.lua");
    let prepare_script = Script::load("ticket_prepare.lua");
    let script = Script::load("ticket_purchase.lua");
    for_each_server_and_client(|_, c| {
        new_event(c, 10);
        let now = now_ms();

        // Alice holds 3 tickets, then checks out: her hold becomes order 1001, RESERVED.
        let alice = "order:{42}:1001";
        assert_eq!(hold(c, &hold_script, "alice", 3, 60_000, Some(now)), ints(&[1, 7, now + 60_000]), "{}", c.who);
        let reserved = prepare(c, &prepare_script, alice, "alice", 3, now);
        assert_eq!(reserved, Reply::Array(vec![bulk("RESERVED"), Reply::Int(7)]), "{}", c.who);
        assert_eq!(c.inventory(), [7, 0, 3, 0], "{}: available, held, reserved, sold", c.who);
        assert_eq!(c.call::<i64>(&["ZCARD", HOLDS]), 0, "{}: the hold was consumed", c.who);

        // A double-clicked checkout does not reserve twice.
        let again = prepare(c, &prepare_script, alice, "alice", 3, now);
        assert_eq!(again, err("WRONGSTATE order order:{42}:1001 is already RESERVED"), "{}", c.who);

        // Completing an unpaid order is refused, and changes nothing.
        let early = purchase(c, &script, alice, "COMPLETE", "");
        assert_eq!(early, err("WRONGSTATE order order:{42}:1001 is RESERVED, COMPLETE needs AUTHORIZED"), "{}", c.who);
        assert_eq!(c.hget(alice, "state").as_deref(), Some("RESERVED"), "{}", c.who);
        assert_eq!(c.inventory(), [7, 0, 3, 0], "{}", c.who);

        // The payment goes through; a replayed payment callback is refused.
        assert_eq!(purchase(c, &script, alice, "AUTHORIZE", "pay-7731"), bulk("AUTHORIZED"), "{}", c.who);
        let replay = purchase(c, &script, alice, "AUTHORIZE", "pay-7731");
        assert_eq!(replay, err("WRONGSTATE order order:{42}:1001 is AUTHORIZED, AUTHORIZE needs RESERVED"), "{}", c.who);

        // Completion moves the tickets from reserved to sold; a late failure cannot undo it.
        assert_eq!(purchase(c, &script, alice, "COMPLETE", ""), bulk("COMPLETED"), "{}", c.who);
        assert_eq!(c.inventory(), [7, 0, 0, 3], "{}", c.who);
        let late = purchase(c, &script, alice, "FAIL", "timeout");
        assert_eq!(late, err("WRONGSTATE order order:{42}:1001 is COMPLETED, FAIL needs RESERVED or AUTHORIZED"), "{}", c.who);
        assert_eq!(c.inventory(), [7, 0, 0, 3], "{}", c.who);
        let order: HashMap<String, String> = c.call(&["HGETALL", alice]);
        let expected = [("state", "COMPLETED"), ("customer", "alice"), ("quantity", "3"), ("event", EVENT), ("payment_ref", "pay-7731")];
        assert_eq!(order, expected.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(), "{}", c.who);

        // Bob's card is declined after authorization: FAIL gives his 2 tickets back.
        let bob = "order:{42}:1002";
        assert_eq!(prepare(c, &prepare_script, bob, "bob", 2, now), Reply::Array(vec![bulk("RESERVED"), Reply::Int(5)]), "{}", c.who);
        assert_eq!(c.inventory(), [5, 0, 2, 3], "{}", c.who);
        assert_eq!(purchase(c, &script, bob, "AUTHORIZE", "pay-7740"), bulk("AUTHORIZED"), "{}", c.who);
        assert_eq!(purchase(c, &script, bob, "FAIL", "card declined"), bulk("FAILED"), "{}", c.who);
        assert_eq!(c.hget(bob, "failure").as_deref(), Some("card declined"), "{}", c.who);
        assert_eq!(c.inventory(), [7, 0, 0, 3], "{}", c.who);
        let after_fail = purchase(c, &script, bob, "COMPLETE", "");
        assert_eq!(after_fail, err("WRONGSTATE order order:{42}:1002 is FAILED, COMPLETE needs AUTHORIZED"), "{}", c.who);

        // Carol never pays: a RESERVED order can fail too.
        let carol = "order:{42}:1003";
        assert_eq!(prepare(c, &prepare_script, carol, "carol", 1, now), Reply::Array(vec![bulk("RESERVED"), Reply::Int(6)]), "{}", c.who);
        assert_eq!(purchase(c, &script, carol, "FAIL", "payment timeout"), bulk("FAILED"), "{}", c.who);
        assert_eq!(c.inventory(), [7, 0, 0, 3], "{}", c.who);

        // Mistakes are named.
        let missing = purchase(c, &script, "order:{42}:9999", "AUTHORIZE", "pay-1");
        assert_eq!(missing, err("NOORDER order order:{42}:9999 does not exist"), "{}", c.who);
        let unknown = purchase(c, &script, alice, "SHIP", "");
        assert_eq!(unknown, err("ERR unknown transition 'SHIP', expected AUTHORIZE, COMPLETE or FAIL"), "{}", c.who);
        let dave = "order:{42}:1004";
        assert_eq!(prepare(c, &prepare_script, dave, "dave", 1, now), Reply::Array(vec![bulk("RESERVED"), Reply::Int(6)]), "{}", c.who);
        let elsewhere = c.eval(&script, &["event:{43}", dave], &["AUTHORIZE", "pay-1"]);
        assert_eq!(elsewhere, err("ERR order order:{42}:1004 belongs to event:{42}, not event:{43}"), "{}", c.who);
        assert_eq!(c.hget(dave, "state").as_deref(), Some("RESERVED"), "{}", c.who);
    });
}

#[test]
fn availability_never_goes_below_zero() {
    let hold_script = Script::load("ticket_hold.lua");
    let prepare_script = Script::load("ticket_prepare.lua");
    let purchase_script = Script::load("ticket_purchase.lua");
    for_each_server_and_client(|_, c| {
        new_event(c, 5);
        let now = now_ms();
        let reserved = |free: i64| Reply::Array(vec![bulk("RESERVED"), Reply::Int(free)]);

        // 3 + 2 tickets fit; an order that does not fit is refused whole, not partly served.
        assert_eq!(prepare(c, &prepare_script, "order:{42}:1", "alice", 3, now), reserved(2), "{}", c.who);
        let too_many = prepare(c, &prepare_script, "order:{42}:2", "bob", 3, now);
        assert_eq!(too_many, err("SOLDOUT 3 requested for order:{42}:2, 2 available"), "{}", c.who);
        assert_eq!(prepare(c, &prepare_script, "order:{42}:3", "bob", 2, now), reserved(0), "{}", c.who);
        let sold_out = prepare(c, &prepare_script, "order:{42}:4", "carol", 1, now);
        assert_eq!(sold_out, err("SOLDOUT 1 requested for order:{42}:4, 0 available"), "{}", c.who);
        assert_eq!(c.inventory(), [0, 0, 5, 0], "{}", c.who);
        assert_eq!(c.call::<i64>(&["EXISTS", "order:{42}:2", "order:{42}:4"]), 0, "{}: refused orders are not created", c.who);

        // Alice's payment fails: her 3 tickets are available again. Dave holds 2 of them, so
        // Erin cannot take them, but Dave can check out his 2 plus the last free one.
        assert_eq!(purchase(c, &purchase_script, "order:{42}:1", "FAIL", "card declined"), bulk("FAILED"), "{}", c.who);
        assert_eq!(c.inventory(), [3, 0, 2, 0], "{}", c.who);
        assert_eq!(hold(c, &hold_script, "dave", 2, 60_000, Some(now)), ints(&[1, 1, now + 60_000]), "{}", c.who);
        let erin = prepare(c, &prepare_script, "order:{42}:5", "erin", 2, now);
        assert_eq!(erin, err("SOLDOUT 2 requested for order:{42}:5, 1 available"), "{}", c.who);
        assert_eq!(prepare(c, &prepare_script, "order:{42}:6", "dave", 3, now), reserved(0), "{}", c.who);
        assert_eq!(c.inventory(), [0, 0, 5, 0], "{}", c.who);

        // Counters edited by hand: completing would drive `reserved` below zero, so it is refused.
        c.call::<()>(&["HSET", EVENT, "reserved", "0"]);
        assert_eq!(purchase(c, &purchase_script, "order:{42}:3", "AUTHORIZE", "pay-1"), bulk("AUTHORIZED"), "{}", c.who);
        let corrupt = purchase(c, &purchase_script, "order:{42}:3", "COMPLETE", "");
        assert_eq!(corrupt, err("CORRUPT event:{42} has 0 reserved tickets, order order:{42}:3 holds 2"), "{}", c.who);
        assert_eq!(c.inventory(), [0, 0, 0, 0], "{}", c.who);
        assert_eq!(c.hget("order:{42}:3", "state").as_deref(), Some("AUTHORIZED"), "{}", c.who);
    });
}

/// Many checkouts at once: exactly the capacity is reserved; then two workers race to settle
/// every order (one completes, one fails) and each order is settled exactly once.
#[test]
fn concurrent_checkouts_never_oversell_and_settle_each_order_once() {
    let prepare_script = Script::load("ticket_prepare.lua");
    let purchase_script = Script::load("ticket_purchase.lua");
    for_each_server(|name, server| {
        let mut c = Client::new(name, server, Via::Crate);
        new_event(&mut c, 20);
        let now = now_ms();
        let replies: Vec<(String, Reply)> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..4)
                .map(|w| {
                    let prepare_script = &prepare_script;
                    s.spawn(move || {
                        let mut c = Client::new(name, server, Via::Crate);
                        (0..10)
                            .map(|i| {
                                let order = format!("order:{{42}}:w{w}-{i}");
                                let reply = prepare(&mut c, prepare_script, &order, &format!("customer-{w}-{i}"), 1, now);
                                (order, reply)
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            workers.into_iter().flat_map(|w| w.join().expect("checkout worker")).collect()
        });
        let won: Vec<&str> =
            replies.iter().filter(|(_, r)| matches!(r, Reply::Array(a) if a[0] == bulk("RESERVED"))).map(|(o, _)| o.as_str()).collect();
        let refused =
            replies.iter().filter(|(_, r)| matches!(r, Reply::Err(e) if e.starts_with("SOLDOUT 1 requested for order:{42}:w"))).count();
        assert_eq!((won.len(), refused), (20, 20), "{name}: {replies:?}");
        assert_eq!(c.inventory(), [0, 0, 20, 0], "{name}");

        for order in &won {
            assert_eq!(purchase(&mut c, &purchase_script, order, "AUTHORIZE", "pay"), bulk("AUTHORIZED"), "{name}");
        }
        let [completed, failed]: [Vec<Reply>; 2] = std::thread::scope(|s| {
            let settle = |transition: &'static str| {
                let (won, purchase_script) = (&won, &purchase_script);
                s.spawn(move || {
                    let mut c = Client::new(name, server, Via::Crate);
                    won.iter().map(|order| purchase(&mut c, purchase_script, order, transition, "")).collect::<Vec<_>>()
                })
            };
            let (complete, fail) = (settle("COMPLETE"), settle("FAIL"));
            [complete.join().expect("complete worker"), fail.join().expect("fail worker")]
        });
        let mut wins = [0, 0];
        for (i, order) in won.iter().enumerate() {
            let outcome = (&completed[i], &failed[i]);
            match outcome {
                (Reply::Str(s), Reply::Err(e)) if s == "COMPLETED" && e.starts_with("WRONGSTATE") => wins[0] += 1,
                (Reply::Err(e), Reply::Str(s)) if s == "FAILED" && e.starts_with("WRONGSTATE") => wins[1] += 1,
                _ => panic!("{name}: {order} settled as {outcome:?}"),
            }
        }
        assert_eq!(wins[0] + wins[1], 20, "{name}");
        assert_eq!(c.inventory(), [wins[1], 0, 0, wins[0]], "{name}: failed orders back in stock, completed ones sold");
    });
}

#[test]
fn fixed_window_allows_exactly_the_limit_then_refuses_until_the_window_resets() {
    let script = Script::load("rate_limit_fixed_window.lua");
    let key = "rl:fixed:{user:17}:search";
    for_each_server_and_client(|_, c| {
        let hit = |c: &mut Client| c.eval(&script, &[key], &["3", "1000"]).ints(&c.who);
        let ttl_ok = |ttl: i64| (1..=1000).contains(&ttl);

        for remaining in [2, 1, 0] {
            let r = hit(c);
            assert!(r[..2] == [1, remaining] && ttl_ok(r[2]), "{}: allowed with {remaining} left, got {r:?}", c.who);
        }
        for _ in 0..2 {
            let r = hit(c);
            assert!(r[..2] == [0, 0] && ttl_ok(r[2]), "{}: refused, got {r:?}", c.who);
        }
        assert_eq!(c.call::<i64>(&["GET", key]), 5, "{}: refused hits count too", c.who);

        // A new window opens once the counter expires.
        let wait = c.call::<i64>(&["PTTL", key]);
        assert!(ttl_ok(wait), "{}: PTTL {wait}", c.who);
        sleep(Duration::from_millis(wait as u64 + 50));
        let r = hit(c);
        assert!(r[..2] == [1, 2] && ttl_ok(r[2]), "{}: new window, got {r:?}", c.who);

        // A counter that lost its TTL is given one again instead of blocking forever.
        c.call::<()>(&["SET", key, "7"]);
        assert_eq!(hit(c), [0, 0, 1000], "{}", c.who);
        let ttl = c.call::<i64>(&["PTTL", key]);
        assert!(ttl_ok(ttl), "{}: PTTL {ttl}", c.who);

        // A limit of 0 refuses everything; bad arguments are refused before counting.
        let zero = c.eval(&script, &["rl:fixed:{user:18}:search"], &["0", "1000"]).ints(&c.who);
        assert_eq!(zero[..2], [0, 0], "{}", c.who);
        let bad = c.eval(&script, &["rl:fixed:{user:19}:search"], &["3", "0"]);
        assert_eq!(bad, err("ERR window must be a positive integer (ms)"), "{}", c.who);
        let bad = c.eval(&script, &["rl:fixed:{user:19}:search"], &["many", "1000"]);
        assert_eq!(bad, err("ERR limit must be a non-negative integer"), "{}", c.who);
        assert_eq!(c.call::<i64>(&["EXISTS", "rl:fixed:{user:19}:search"]), 0, "{}", c.who);
    });
}

#[test]
fn sliding_window_refuses_over_the_limit_and_recovers_as_the_window_slides() {
    let script = Script::load("rate_limit_sliding_window.lua");
    let key = "rl:sliding:{user:17}:upload";
    for_each_server_and_client(|_, c| {
        // The caller's clock drives the window: 3 requests per 1000 ms.
        let t = now_ms();
        let request = |c: &mut Client, at: i64, id: &str| c.eval(&script, &[key], &["3", "1000", &(t + at).to_string(), id]);
        assert_eq!(request(c, 0, "r1"), ints(&[1, 2, 0]), "{}", c.who);
        assert_eq!(request(c, 100, "r2"), ints(&[1, 1, 0]), "{}", c.who);
        assert_eq!(request(c, 200, "r3"), ints(&[1, 0, 0]), "{}", c.who);
        assert_eq!(request(c, 300, "r4"), ints(&[0, 0, 700]), "{}: r1 leaves the window in 700 ms", c.who);
        assert_eq!(request(c, 999, "r5"), ints(&[0, 0, 1]), "{}", c.who);
        assert_eq!(c.call::<i64>(&["ZCARD", key]), 3, "{}: refused requests are not logged", c.who);
        assert_eq!(request(c, 1000, "r6"), ints(&[1, 0, 0]), "{}: r1 slid out", c.who);
        assert_eq!(request(c, 1050, "r7"), ints(&[0, 0, 50]), "{}: r2 leaves at 1100", c.who);
        assert_eq!(request(c, 1200, "r8"), ints(&[1, 1, 0]), "{}: r2 and r3 slid out", c.who);
        assert_eq!(c.call::<Vec<String>>(&["ZRANGE", key, "0", "-1"]), ["r6", "r8"], "{}", c.who);
        let ttl = c.call::<i64>(&["PTTL", key]);
        assert!((1..=1000).contains(&ttl), "{}: the log expires one window after the last request, PTTL {ttl}", c.who);

        // With the real clock: 2 requests per 400 ms; the third waits, then goes through.
        let quick = "rl:sliding:{user:18}:upload";
        let now_request = |c: &mut Client, id: &str| c.eval(&script, &[quick], &["2", "400", &now_ms().to_string(), id]).ints(&c.who);
        assert_eq!(now_request(c, "q1"), [1, 1, 0], "{}", c.who);
        assert_eq!(now_request(c, "q2"), [1, 0, 0], "{}", c.who);
        let refused = now_request(c, "q3");
        assert!(refused[..2] == [0, 0] && (1..=400).contains(&refused[2]), "{}: got {refused:?}", c.who);
        sleep(Duration::from_millis(450));
        assert_eq!(now_request(c, "q4"), [1, 1, 0], "{}: recovered after the window", c.who);
        sleep(Duration::from_millis(450));
        assert_eq!(c.call::<i64>(&["EXISTS", quick]), 0, "{}: an idle log expires", c.who);

        let no_id = c.eval(&script, &[quick], &["2", "400", &now_ms().to_string()]);
        assert_eq!(no_id, err("ERR a unique request id is required"), "{}", c.who);
    });
}

#[test]
fn lock_is_released_and_extended_only_by_its_owner() {
    let acquire = Script::load("lock_acquire.lua");
    let release = Script::load("lock_release.lua");
    let extend = Script::load("lock_extend.lua");
    let key = "lock:{invoice:88}";
    let (a, b) = ("worker-a-6f1c2a1e", "worker-b-93d0e7aa");
    for_each_server_and_client(|_, c| {
        // A takes the lock; B has to wait; A retrying its acquire is fine.
        assert_eq!(c.eval(&acquire, &[key], &[a, "5000"]), ints(&[1, 5000]), "{}", c.who);
        let busy = c.eval(&acquire, &[key], &[b, "5000"]).ints(&c.who);
        assert!(busy[0] == 0 && (1..=5000).contains(&busy[1]), "{}: B must wait, got {busy:?}", c.who);
        assert_eq!(c.eval(&acquire, &[key], &[a, "5000"]), ints(&[1, 5000]), "{}", c.who);

        // B can neither release nor extend A's lock.
        assert_eq!(c.eval(&release, &[key], &[b]), Reply::Int(0), "{}", c.who);
        assert_eq!(c.eval(&extend, &[key], &[b, "60000"]), Reply::Int(0), "{}", c.who);
        assert_eq!(c.call::<Option<String>>(&["GET", key]).as_deref(), Some(a), "{}", c.who);
        assert!(c.call::<i64>(&["PTTL", key]) <= 5000, "{}: B's extend was ignored", c.who);

        // A extends it for a long job, then releases it; releasing twice is harmless.
        assert_eq!(c.eval(&extend, &[key], &[a, "60000"]), Reply::Int(1), "{}", c.who);
        assert!(c.call::<i64>(&["PTTL", key]) > 5000, "{}: A's extend applied", c.who);
        assert_eq!(c.eval(&release, &[key], &[a]), Reply::Int(1), "{}", c.who);
        assert_eq!(c.call::<i64>(&["EXISTS", key]), 0, "{}", c.who);
        assert_eq!(c.eval(&release, &[key], &[a]), Reply::Int(0), "{}", c.who);

        // B takes it for 100 ms and stalls; the lock expires and A takes it. B, waking up,
        // cannot release or extend A's lock.
        assert_eq!(c.eval(&acquire, &[key], &[b, "100"]), ints(&[1, 100]), "{}", c.who);
        sleep(Duration::from_millis(150));
        assert_eq!(c.eval(&acquire, &[key], &[a, "5000"]), ints(&[1, 5000]), "{}: B's lock expired", c.who);
        assert_eq!(c.eval(&release, &[key], &[b]), Reply::Int(0), "{}", c.who);
        assert_eq!(c.eval(&extend, &[key], &[b, "60000"]), Reply::Int(0), "{}", c.who);
        assert_eq!(c.call::<Option<String>>(&["GET", key]).as_deref(), Some(a), "{}", c.who);

        assert_eq!(c.eval(&acquire, &[key], &[b, "soon"]), err("ERR lock ttl must be a positive integer (ms)"), "{}", c.who);
    });
}

/// A new connection to `server` for SUBSCRIBE, which waits up to 5 s for a message.
fn subscriber(server: &Server) -> redis::Connection {
    let con = server.client();
    con.set_read_timeout(Some(Duration::from_secs(5))).expect("set read timeout");
    con
}

/// The payloads of the next `n` messages on a subscribed connection.
fn next_messages(pubsub: &mut redis::PubSub<'_>, n: usize) -> Vec<String> {
    (0..n)
        .map(|_| {
            let msg = pubsub.get_message().expect("a published message within 5 s");
            msg.get_payload::<String>().expect("a text payload")
        })
        .collect()
}

#[test]
fn counter_publishes_exactly_once_per_threshold_crossing() {
    let script = Script::load("counter_publish.lua");
    let key = "votes:{poll:5}";
    let channel = "alerts:votes";
    for_each_server_and_client(|server, c| {
        let mut sub = subscriber(server);
        let mut pubsub = sub.as_pubsub();
        pubsub.subscribe(channel).expect("subscribe");
        let add = |c: &mut Client, n: &str| c.eval(&script, &[key], &[n, "10", channel]);

        assert_eq!(add(c, "4"), ints(&[4, 0, 0]), "{}", c.who);
        assert_eq!(add(c, "4"), ints(&[8, 0, 0]), "{}", c.who);
        assert_eq!(add(c, "4"), ints(&[12, 1, 1]), "{}: crossed 10, one subscriber told", c.who);
        assert_eq!(add(c, "4"), ints(&[16, 0, 0]), "{}: already above", c.who);
        assert_eq!(add(c, "-10"), ints(&[6, 0, 0]), "{}", c.who);
        assert_eq!(add(c, "5"), ints(&[11, 1, 1]), "{}: a new crossing", c.who);
        assert_eq!(add(c, "100"), ints(&[111, 0, 0]), "{}", c.who);
        assert_eq!(c.call::<i64>(&["PUBLISH", channel, "end of test"]), 1, "{}", c.who);
        let expected = ["votes:{poll:5} reached 10: 12", "votes:{poll:5} reached 10: 11", "end of test"];
        assert_eq!(next_messages(&mut pubsub, 3), expected, "{}: exactly one message per crossing", c.who);

        // Nobody listening: still announced once, to no one.
        assert_eq!(c.eval(&script, &["votes:{poll:7}"], &["3", "2", "alerts:nobody"]), ints(&[3, 1, 0]), "{}", c.who);

        assert_eq!(add(c, "1.5"), err("ERR increment must be an integer"), "{}", c.who);
        c.call::<()>(&["SET", "votes:{poll:9}", "many"]);
        let line = script.body.lines().position(|l| l.contains("redis.call('INCRBY'")).expect("an INCRBY line") + 1;
        let not_a_number = c.eval(&script, &["votes:{poll:9}"], &["1", "10", channel]);
        let expected = format!("ERR value is not an integer or out of range script: {}, on @user_script:{line}.", script.sha);
        assert_eq!(not_a_number, Reply::Err(expected), "{}", c.who);
    });
}

/// 4 clients add 1 at the same time, 100 times in all: only the call that reaches 50 publishes.
#[test]
fn concurrent_increments_publish_once() {
    let script = Script::load("counter_publish.lua");
    let (key, channel) = ("votes:{poll:6}", "alerts:votes");
    for_each_server(|name, server| {
        let mut sub = subscriber(server);
        let mut pubsub = sub.as_pubsub();
        pubsub.subscribe(channel).expect("subscribe");
        let replies: Vec<Vec<i64>> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..4)
                .map(|_| {
                    let script = &script;
                    s.spawn(move || {
                        let mut c = Client::new(name, server, Via::Crate);
                        (0..25).map(|_| c.eval(script, &[key], &["1", "50", channel]).ints(&c.who)).collect::<Vec<_>>()
                    })
                })
                .collect();
            workers.into_iter().flat_map(|w| w.join().expect("increment worker")).collect()
        });
        let published: Vec<&Vec<i64>> = replies.iter().filter(|r| r[1] == 1).collect();
        assert_eq!(published, [&vec![50, 1, 1]], "{name}");
        let mut values: Vec<i64> = replies.iter().map(|r| r[0]).collect();
        values.sort_unstable();
        assert_eq!(values, (1..=100).collect::<Vec<_>>(), "{name}: every increment applied once");
        let mut c = Client::new(name, server, Via::Crate);
        assert_eq!(c.call::<i64>(&["PUBLISH", channel, "end of test"]), 1, "{name}");
        assert_eq!(next_messages(&mut pubsub, 2), ["votes:{poll:6} reached 50: 50", "end of test"], "{name}");
    });
}

/// What an application's client library does: EVALSHA with the SHA1 of the file, EVAL once
/// when the server does not know it yet, EVALSHA from then on.
#[test]
fn clients_run_scripts_by_sha_and_fall_back_to_eval_once() {
    let scripts: Vec<Script> = ALL_SCRIPTS.iter().map(|name| Script::load(name)).collect();
    for_each_server(|name, server| {
        let mut c = Client::new(name, server, Via::Crate);
        c.call::<()>(&["SCRIPT", "FLUSH"]);
        for script in &scripts {
            assert_eq!(c.call::<Vec<i64>>(&["SCRIPT", "EXISTS", &script.sha]), [0], "{name}: {}", script.name);
        }

        let release = &scripts[ALL_SCRIPTS.iter().position(|n| *n == "lock_release.lua").expect("lock_release.lua")];
        assert_eq!(c.eval(release, &["lock:{x}"], &["me"]), Reply::Int(0), "{name}");
        assert_eq!(c.fallbacks, 1, "{name}: the first EVALSHA gets NOSCRIPT");
        assert_eq!(c.eval(release, &["lock:{x}"], &["me"]), Reply::Int(0), "{name}");
        assert_eq!(c.fallbacks, 1, "{name}: EVAL cached the script");
        assert_eq!(c.call::<Vec<i64>>(&["SCRIPT", "EXISTS", &release.sha]), [1], "{name}");

        // redis-cli --eval sends EVAL, which caches the script too.
        let acquire = &scripts[ALL_SCRIPTS.iter().position(|n| *n == "lock_acquire.lua").expect("lock_acquire.lua")];
        let mut cli = Client::new(name, server, Via::Cli);
        assert_eq!(cli.eval(acquire, &["lock:{y}"], &["me", "1000"]), ints(&[1, 1000]), "{name}");
        assert_eq!(c.call::<Vec<i64>>(&["SCRIPT", "EXISTS", &acquire.sha]), [1], "{name}");
        assert_eq!(c.eval(acquire, &["lock:{y}"], &["me", "1000"]), ints(&[1, 1000]), "{name}");
        assert_eq!(c.fallbacks, 1, "{name}");

        // Deploy time: SCRIPT LOAD every file; the server's SHA1 is the one clients compute.
        for script in &scripts {
            let sha: String = c.call(&["SCRIPT", "LOAD", &script.body]);
            assert_eq!(sha, script.sha, "{name}: {}", script.name);
        }
    });
}

/// Each script's header documents its keys, arguments, replies and a redis-cli invocation;
/// the README lists every script; and the documented invocations run as written.
#[test]
fn documented_invocations_run_as_written() {
    let readme = std::fs::read_to_string(Path::new(SCRIPTS_DIR).join("README.md")).expect("data/scripts/README.md");
    let mut on_disk: Vec<String> = std::fs::read_dir(SCRIPTS_DIR)
        .expect("data/scripts")
        .map(|e| e.expect("dir entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".lua"))
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = ALL_SCRIPTS.iter().map(|s| s.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed, "every script in data/scripts/ is tested here");

    let mut invocations = Vec::new();
    for name in ALL_SCRIPTS {
        let script = Script::load(name);
        assert!(readme.contains(name), "README.md mentions {name}");
        for needle in ["KEYS[1]", "Returns", "-- redis-cli --eval"] {
            assert!(script.body.contains(needle), "{name}'s header documents {needle:?}");
        }
        let prefix = format!("-- redis-cli --eval data/scripts/{name} ");
        let line = script.body.lines().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("{name}: no {prefix:?} line"));
        assert!(readme.contains(line.trim_start_matches("-- ")), "README.md shows {name}'s invocation");
        invocations.push((name, line.trim_start_matches("-- redis-cli ").split_whitespace().map(String::from).collect::<Vec<_>>()));
    }

    for_each_server(|server_name, server| {
        let mut c = Client::new(server_name, server, Via::Cli);
        c.call::<()>(&["FLUSHALL"]);
        new_event(&mut c, 100);
        for (name, args) in &invocations {
            let out = redis_cli(server.port, args);
            let reply = parse_cli_reply(&out).unwrap_or_else(|e| panic!("{server_name}: {name}: {e} in {out:?}"));
            let fine = match **name {
                "ticket_hold.lua" => reply.ints(name)[..2] == [1, 98],
                "ticket_prepare.lua" => reply == Reply::Array(vec![bulk("RESERVED"), Reply::Int(98)]),
                "ticket_purchase.lua" => reply == bulk("AUTHORIZED"),
                "rate_limit_fixed_window.lua" => reply.ints(name)[..2] == [1, 9],
                "rate_limit_sliding_window.lua" => reply == ints(&[1, 4, 0]),
                "lock_acquire.lua" => reply == ints(&[1, 30000]),
                "lock_extend.lua" | "lock_release.lua" => reply == Reply::Int(1),
                "counter_publish.lua" => reply == ints(&[1, 0, 0]),
                _ => false,
            };
            assert!(fine, "{server_name}: {name} {args:?} replied {reply:?}");
        }
    });
}
