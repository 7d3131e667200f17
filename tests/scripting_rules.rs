//! The scripting rules Vermilion adds to Redis 7.0 or where it keeps the older behaviour on
//! purpose (they make a whole EVAL safe to log and replay), asserted directly, plus busy
//! scripts with real clients: BUSY seen by a second client, SCRIPT KILL, UNKILLABLE,
//! SHUTDOWN NOSAVE, and the sandbox's defences against memory bombs and deep recursion.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::Server;
use redis::{Connection, Value};

fn eval(c: &mut Connection, body: &str, keys: &[&str], args: &[&str]) -> redis::RedisResult<Value> {
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(body).arg(keys.len()).arg(keys).arg(args);
    cmd.query(c)
}

fn eval_string(c: &mut Connection, body: &str) -> String {
    match eval(c, body, &[], &[]) {
        Ok(Value::BulkString(b)) => String::from_utf8_lossy(&b).into_owned(),
        other => panic!("{body}: {other:?}"),
    }
}

fn strings(v: Value) -> Vec<String> {
    match v {
        Value::Array(items) => items
            .into_iter()
            .map(|i| match i {
                Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
                other => format!("{other:?}"),
            })
            .collect(),
        other => panic!("not an array: {other:?}"),
    }
}

#[test]
fn math_random_is_reseeded_for_every_script() {
    let s = Server::start(&[]);
    let mut c = s.client();
    let body = "return tostring(math.random()) .. ' ' .. tostring(math.random()) .. ' ' .. tostring(math.random(10)) .. ' ' .. tostring(math.random(5, 7))";
    let first = eval_string(&mut c, body);
    assert!(first.starts_with("0.17082803611217 "), "{first}");
    // The same script, and any other script, starts from the same state again.
    assert_eq!(eval_string(&mut c, body), first);
    assert_eq!(eval_string(&mut c, "return tostring(math.random())"), "0.17082803611217");
    // randomseed works within a script and does not leak into the next one.
    let seeded = eval_string(&mut c, "math.randomseed(42) return tostring(math.random())");
    assert_ne!(seeded, "0.17082803611217");
    assert_eq!(eval_string(&mut c, "math.randomseed(42) return tostring(math.random())"), seeded);
    assert_eq!(eval_string(&mut c, "return tostring(math.random())"), "0.17082803611217");
    let err = eval(&mut c, "return math.random(0)", &[], &[]).unwrap_err().to_string();
    assert!(err.contains("interval is empty"), "{err}");
    let err = eval(&mut c, "return math.random(1, 2, 3)", &[], &[]).unwrap_err().to_string();
    assert!(err.contains("wrong number of arguments"), "{err}");
}

/// KEYS and ARGV are the run's own, whatever an earlier script did to its tables (the
/// server refills them between runs when it can).
#[test]
fn keys_and_argv_hold_only_the_runs_arguments() {
    let s = Server::start(&[]);
    let mut c = s.client();
    let show = "local n = 0 for _ in pairs(KEYS) do n = n + 1 end for _ in pairs(ARGV) do n = n + 1 end return {#KEYS, #ARGV, tostring(KEYS[1]), tostring(KEYS[2]), tostring(ARGV[1]), tostring(ARGV[2]), tostring(KEYS.extra), tostring(ARGV[5]), n}";
    let dirty = [
        "KEYS[1] = 'changed' ARGV[1] = 'changed' return 1",
        "KEYS[5] = 'x' ARGV[5] = 'y' KEYS.extra = 1 return 1",
        "KEYS[1] = nil ARGV[2] = nil return 1",
        "setmetatable(KEYS, {__index = function() return 'leak' end}) setmetatable(ARGV, {__index = function() return 'leak' end}) return 1",
        "table.insert(KEYS, 'more') table.remove(ARGV) return 1",
        "for i = 1, 100 do KEYS[i] = i ARGV[i] = i end return 1",
        // Keys planted in the hash part, where a scan from the last argument would not look.
        "for i = 1, 7 do ARGV['f' .. i] = i KEYS['f' .. i] = i end ARGV[2] = 'planted' KEYS[2] = 'planted' for i = 1, 7 do ARGV['f' .. i] = nil KEYS['f' .. i] = nil end return 1",
        "KEYS.extra = ARGV ARGV.extra = KEYS return 1",
    ];
    for body in dirty {
        for (keys, args) in [(&["a", "b"][..], &["x", "y"][..]), (&["a"][..], &["x"][..]), (&[][..], &[][..])] {
            eval(&mut c, body, keys, args).unwrap();
            // The same number of arguments, then fewer, then more.
            let want = |k: &[&str], a: &[&str]| {
                let mut v = vec![k.len().to_string(), a.len().to_string()];
                for i in 0..2 {
                    v.push(k.get(i).unwrap_or(&"nil").to_string());
                }
                for i in 0..2 {
                    v.push(a.get(i).unwrap_or(&"nil").to_string());
                }
                v.extend(["nil".to_string(), "nil".to_string(), (k.len() + a.len()).to_string()]);
                v
            };
            let shown: Vec<String> = match eval(&mut c, show, keys, args).unwrap() {
                Value::Array(items) => items
                    .into_iter()
                    .map(|i| match i {
                        Value::Int(n) => n.to_string(),
                        Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
                        other => format!("{other:?}"),
                    })
                    .collect(),
                other => panic!("{other:?}"),
            };
            assert_eq!(shown, want(keys, args), "after {body} with {keys:?} {args:?}");
            let shown = strings(
                eval(
                    &mut c,
                    "return {tostring(KEYS[1]), tostring(ARGV[1]), tostring(getmetatable(KEYS)), tostring(getmetatable(ARGV))}",
                    &["k1", "k2", "k3"],
                    &["v1"],
                )
                .unwrap(),
            );
            assert_eq!(shown, ["k1", "v1", "nil", "nil"], "after {body}");
        }
    }
}

/// Running out of Lua memory while KEYS/ARGV are made leaves the globals read-only.
#[test]
fn out_of_memory_while_making_arguments_leaves_the_globals_closed() {
    let s = Server::start(&[]);
    let mut c = s.client();
    // Keep 160 MB of Lua memory (of 256) alive through KEYS until the next run replaces it.
    let hold = "local m = {} for i = 1, 5 do m[i] = string.rep(string.char(96 + i), 2^25) end setmetatable(KEYS, m) return 1";
    eval(&mut c, hold, &[], &[]).unwrap();
    let big = "a".repeat(110 << 20);
    let err = eval(&mut c, "return 1", &[], &[&big]).unwrap_err().to_string();
    assert!(err.contains("not enough memory"), "{err}");
    let err = eval(&mut c, "redis = {call = function() return 'fake' end} return 1", &[], &[]).unwrap_err().to_string();
    assert!(err.contains("Attempt to modify a readonly table"), "{err}");
    assert_eq!(eval(&mut c, "return redis.call('ping')", &[], &[]).unwrap(), Value::SimpleString("PONG".into()));
}

#[test]
fn unordered_replies_reach_scripts_sorted() {
    let s = Server::start(&[]);
    let mut c = s.client();
    let _: () = redis::cmd("SADD").arg("s1").arg(&["z", "y", "x", "b", "a", "10", "9", "100"]).query(&mut c).unwrap();
    let _: () = redis::cmd("SADD").arg("s2").arg(&["a", "x", "10", "q"]).query(&mut c).unwrap();
    let _: () = redis::cmd("HSET").arg("h").arg(&["f3", "v1", "f1", "v3", "f2", "v2"]).query(&mut c).unwrap();
    let _: () = redis::cmd("MSET").arg(&["kb", "1", "ka", "2", "kc", "3"]).query(&mut c).unwrap();
    let cases: &[(&str, &[&str])] = &[
        ("return redis.call('smembers', 's1')", &["10", "100", "9", "a", "b", "x", "y", "z"]),
        ("return redis.call('sinter', 's1', 's2')", &["10", "a", "x"]),
        ("return redis.call('sunion', 's1', 's2')", &["10", "100", "9", "a", "b", "q", "x", "y", "z"]),
        ("return redis.call('sdiff', 's1', 's2')", &["100", "9", "b", "y", "z"]),
        ("return redis.call('hkeys', 'h')", &["f1", "f2", "f3"]),
        ("return redis.call('hvals', 'h')", &["v1", "v2", "v3"]),
        ("return redis.call('hgetall', 'h')", &["f1", "v3", "f2", "v2", "f3", "v1"]),
        ("return redis.call('keys', 'k*')", &["ka", "kb", "kc"]),
        // SORT of a set with BY a constant (no sorting asked) sorts lexicographically for a script.
        ("return redis.call('sort', 's1', 'by', 'nosort')", &["10", "100", "9", "a", "b", "x", "y", "z"]),
    ];
    for (body, want) in cases {
        let got = strings(eval(&mut c, body, &[], &[]).unwrap());
        assert_eq!(&got, want, "{body}");
    }
}

#[test]
fn time_is_frozen_for_the_whole_script() {
    let s = Server::start(&[]);
    let mut c = s.client();
    // The key expires 50 ms into the script; the script busy-waits 300 ms and still sees it,
    // so every decision inside the script uses its start time.
    let body = "redis.call('set', 'k', 'v', 'px', 50)
local n = 0
for i = 1, 30000000 do n = n + 1 end
return {redis.call('get', 'k') or 'gone', redis.call('pttl', 'k'), redis.call('exists', 'k')}";
    let started = Instant::now();
    let v = eval(&mut c, body, &[], &[]).unwrap();
    assert!(started.elapsed() >= Duration::from_millis(60), "the loop was too short to test anything: {:?}", started.elapsed());
    match v {
        Value::Array(items) => {
            assert_eq!(items[0], Value::BulkString(b"v".to_vec()));
            assert_eq!(items[1], Value::Int(50));
            assert_eq!(items[2], Value::Int(1));
        }
        other => panic!("{other:?}"),
    }
    // After the script, real time applies again.
    let got: Option<String> = redis::cmd("GET").arg("k").query(&mut c).unwrap();
    assert_eq!(got, None);
}

#[test]
fn blocking_commands_in_scripts_do_not_block_and_wake_others_after_the_script() {
    let s = Server::start(&[]);
    let mut c = s.client();
    let v = eval(&mut c, "return redis.call('blmpop', 10, 1, 'empty', 'left')", &[], &[]).unwrap();
    assert_eq!(v, Value::Nil);
    let v = eval(&mut c, "return redis.call('bzmpop', 10, 1, 'empty', 'min')", &[], &[]).unwrap();
    assert_eq!(v, Value::Nil);
    // A client blocked on a list is served after the script that pushed, not during it.
    let mut waiter = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    waiter.write_all(b"*3\r\n$5\r\nBLPOP\r\n$1\r\nq\r\n$1\r\n5\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let v = eval(&mut c, "redis.call('rpush', 'q', 'a', 'b') return redis.call('llen', 'q')", &[], &[]).unwrap();
    assert_eq!(v, Value::Int(2), "the waiter must not take an element while the script runs");
    waiter.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut r = BufReader::new(waiter);
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert_eq!(line, "*2\r\n");
    let llen: i64 = redis::cmd("LLEN").arg("q").query(&mut c).unwrap();
    assert_eq!(llen, 1);
}

#[test]
fn publish_from_a_script_is_delivered_after_the_script() {
    let s = Server::start(&[]);
    let mut sub = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    sub.write_all(b"*2\r\n$9\r\nSUBSCRIBE\r\n$2\r\nch\r\n").unwrap();
    sub.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut r = BufReader::new(sub.try_clone().unwrap());
    let mut buf = String::new();
    for _ in 0..6 {
        r.read_line(&mut buf).unwrap();
    }
    let mut c = s.client();
    let v = eval(&mut c, "local n = redis.call('publish', 'ch', 'hello') redis.call('set', 'after', 'yes') return n", &[], &[]).unwrap();
    assert_eq!(v, Value::Int(1));
    let mut msg = String::new();
    for _ in 0..7 {
        r.read_line(&mut msg).unwrap();
    }
    assert!(msg.ends_with("$5\r\nhello\r\n"), "{msg:?}");
    let after: String = redis::cmd("GET").arg("after").query(&mut c).unwrap();
    assert_eq!(after, "yes");
}

#[test]
fn scripts_respect_maxmemory() {
    let s = Server::start(&["--maxmemory", "1", "--maxmemory-policy", "noeviction"]);
    let mut c = s.client();
    let err = eval(&mut c, "return redis.call('set', 'a', '1')", &[], &[]).unwrap_err().to_string();
    assert!(err.contains("command not allowed when used memory > 'maxmemory'"), "{err}");
    // Reads and deletions still work; allow-oom scripts may write; shebang scripts without it
    // (nor no-writes) are refused before they start, as a deny-oom command (Redis 7.0.15's text).
    assert_eq!(eval(&mut c, "return redis.call('get', 'a')", &[], &[]).unwrap(), Value::Nil);
    assert_eq!(eval(&mut c, "return redis.call('del', 'a')", &[], &[]).unwrap(), Value::Int(0));
    let ok = eval(&mut c, "#!lua flags=allow-oom\nreturn redis.call('set', 'a', '1')", &[], &[]).unwrap();
    assert_eq!(ok, Value::Okay);
    let err = eval(&mut c, "#!lua\nreturn 1", &[], &[]).unwrap_err().to_string();
    assert!(err.contains("command not allowed when used memory > 'maxmemory'.") && !err.contains("script:"), "{err}");
    assert_eq!(eval(&mut c, "#!lua flags=no-writes\nreturn 1", &[], &[]).unwrap(), Value::Int(1));
}

#[test]
fn memory_bombs_and_deep_recursion_fail_the_script_not_the_server() {
    let s = Server::start(&[]);
    let mut c = s.client();
    let bombs = [
        "return string.rep('x', 2^30)",
        "local s = string.rep('x', 2^27) return s .. s .. s",
        "local s = 'x' while true do s = s .. s end",
        "local t = {} local i = 0 while true do i = i + 1 t[i] = string.rep('y', 1024) .. i end",
        "local function f() return f() + 1 end return f()",
        "local function f(n) local x = f(n + 1) return x end return f(1)",
        "return unpack({}, 1, 1e8)",
        "return unpack({}, -2147483648, 2147483647)",
        "local t = setmetatable({}, {__index = function(t, k) return t[k + 1] end}) return t[1]",
        "return cjson.decode(string.rep('[', 100000))",
        "local t = {} t[1] = t return cjson.encode(t)",
        "return assert(loadstring(string.rep('(', 100000)))",
        "return string.format('%0999999d', 1)",
        "local co = coroutine.wrap(function() local i = 0 while true do i = i + 1 coroutine.yield(string.rep('z', 2^20) .. i) end end) local t = {} while true do t[#t + 1] = co() end",
        // Replies pushed by redis.call until Lua's memory runs out in the middle of a push (each
        // value distinct: Lua interns equal strings, so the same reply twice costs nothing).
        "redis.call('set', 'bomb', string.rep('x', 2^20)) local t = {} local i = 0 while true do i = i + 1 redis.call('setrange', 'bomb', 0, i) t[i] = redis.call('get', 'bomb') end",
        "redis.call('del', 'bombl') for i = 1, 1000 do redis.call('rpush', 'bombl', i) end local t = {} local i = 0 while true do i = i + 1 t[i] = redis.call('lrange', 'bombl', 0, -1) end",
    ];
    for body in bombs {
        let started = Instant::now();
        let r = eval(&mut c, body, &[], &[]);
        assert!(r.is_err(), "{body}: {r:?}");
        assert!(started.elapsed() < Duration::from_secs(20), "{body} took {:?}", started.elapsed());
        let pong: String = redis::cmd("PING").query(&mut c).expect("the server survives");
        assert_eq!(pong, "PONG");
    }
    // Memory errors inside redis.call caught by the script: it goes on, and so do its calls.
    let caught = eval(
        &mut c,
        "local t, n, i = {}, 0, 0 while n < 3 do i = i + 1 if not pcall(function() redis.call('setrange', 'bomb', 0, i) t[i] = redis.call('get', 'bomb') end) then n = n + 1 t = {} collectgarbage() end end return {n, #redis.call('get', 'bomb')}",
        &[],
        &[],
    )
    .unwrap();
    assert_eq!(caught, Value::Array(vec![Value::Int(3), Value::Int(1 << 20)]));
    // A cyclic table packs to cmsgpack's nesting limit (16 levels, then nil), as in Redis.
    let packed = eval(&mut c, "local t = {} t[1] = t return cmsgpack.pack(t)", &[], &[]).unwrap();
    let mut want = vec![0x91u8; 16];
    want.push(0xc0);
    assert_eq!(packed, Value::BulkString(want));
    // The Lua memory is given back.
    let _ = eval(&mut c, "return 1", &[], &[]).unwrap();
    let info: String = redis::cmd("INFO").arg("memory").query(&mut c).unwrap();
    let lua: u64 = info.lines().find_map(|l| l.strip_prefix("used_memory_lua:")).and_then(|v| v.trim().parse().ok()).unwrap();
    assert!(lua < 64 * 1024 * 1024, "used_memory_lua {lua}");
}

/// Sends EVAL on a raw connection without waiting for the reply.
fn start_script(port: u16, body: &str) -> TcpStream {
    let mut t = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut cmd = format!("*3\r\n$4\r\nEVAL\r\n${}\r\n{}\r\n$1\r\n0\r\n", body.len(), body);
    if body.is_empty() {
        cmd.clear();
    }
    t.write_all(cmd.as_bytes()).unwrap();
    t.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    t
}

fn read_line(t: &TcpStream) -> String {
    let mut r = BufReader::new(t.try_clone().unwrap());
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    line
}

fn wait_busy(c: &mut Connection) {
    c.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match redis::cmd("PING").query::<String>(c) {
            Err(e) if e.to_string().contains("BUSY") => return,
            _ if Instant::now() > deadline => panic!("never busy"),
            _ => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

#[test]
fn busy_script_can_be_killed_when_it_has_not_written() {
    let s = Server::start(&["--busy-reply-threshold", "100"]);
    let mut other = s.client();
    let runner = start_script(s.port, "local i = 0 while true do i = i + 1 end");
    wait_busy(&mut other);
    let err = redis::cmd("GET").arg("x").query::<Option<String>>(&mut other).unwrap_err().to_string();
    assert!(
        err.contains("BUSY") && err.contains("Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."),
        "{err}"
    );
    let killed_at = Instant::now();
    let ok: String = redis::cmd("SCRIPT").arg("KILL").query(&mut other).unwrap();
    assert_eq!(ok, "OK");
    let reply = read_line(&runner);
    assert!(killed_at.elapsed() < Duration::from_millis(100), "kill took {:?}", killed_at.elapsed());
    assert!(reply.starts_with("-ERR Script killed by user with SCRIPT KILL... script: "), "{reply}");
    let pong: String = redis::cmd("PING").query(&mut other).unwrap();
    assert_eq!(pong, "PONG");
    let err = redis::cmd("SCRIPT").arg("KILL").query::<String>(&mut other).unwrap_err().to_string();
    assert!(err.contains("No scripts in execution right now."), "{err}");
    // pcall cannot swallow the kill.
    let runner = start_script(s.port, "while true do pcall(function() local i = 0 while true do i = i + 1 end end) end");
    wait_busy(&mut other);
    let ok: String = redis::cmd("SCRIPT").arg("KILL").query(&mut other).unwrap();
    assert_eq!(ok, "OK");
    assert!(read_line(&runner).starts_with("-ERR Script killed by user"));
}

/// With `io-threads` above 1 the connections run on threads of their own instead of on the
/// executor's (the default): pipelines from several clients, a busy script's BUSY answers and
/// SCRIPT KILL work the same way there.
#[test]
fn network_threads_of_their_own_serve_pipelines_and_busy_answers() {
    let s = Server::start(&["--io-threads", "2", "--busy-reply-threshold", "100"]);
    let clients: Vec<_> = (0..4)
        .map(|t| {
            let port = s.port;
            std::thread::spawn(move || {
                let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap().get_connection().unwrap();
                let mut pipe = redis::pipe();
                for i in 0..200 {
                    pipe.cmd("SET").arg(format!("k{t}:{i}")).arg(i).ignore();
                }
                for i in 0..200 {
                    pipe.cmd("GET").arg(format!("k{t}:{i}"));
                }
                let got: Vec<u32> = pipe.query(&mut c).unwrap();
                assert_eq!(got, (0..200).collect::<Vec<u32>>());
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    let mut other = s.client();
    let n: u64 = redis::cmd("DBSIZE").query(&mut other).unwrap();
    assert_eq!(n, 800);
    let runner = start_script(s.port, "local i = 0 while true do i = i + 1 end");
    wait_busy(&mut other);
    let ok: String = redis::cmd("SCRIPT").arg("KILL").query(&mut other).unwrap();
    assert_eq!(ok, "OK");
    assert!(read_line(&runner).starts_with("-ERR Script killed by user"));
    let pong: String = redis::cmd("PING").query(&mut other).unwrap();
    assert_eq!(pong, "PONG");
}

/// A reply owed to another client when a script starts leaves while the script is busy (as
/// Redis flushes pending replies then), not only when it ends.
#[test]
fn replies_owed_to_other_clients_leave_during_a_busy_script() {
    let s = Server::start(&["--busy-reply-threshold", "100"]);
    let mut other = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    other.set_nodelay(true).unwrap();
    other.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    // Sent back to back, so that the PING and the EVAL can share one executor batch.
    other.write_all(b"*1\r\n$4\r\nPING\r\n").unwrap();
    let runner = start_script(s.port, "local i = 0 while true do i = i + 1 end");
    let started = Instant::now();
    assert_eq!(read_line(&other), "+PONG\r\n");
    assert!(started.elapsed() < Duration::from_secs(2), "the reply waited {:?}", started.elapsed());
    let mut killer = s.client();
    wait_busy(&mut killer);
    let ok: String = redis::cmd("SCRIPT").arg("KILL").query(&mut killer).unwrap();
    assert_eq!(ok, "OK");
    assert!(read_line(&runner).starts_with("-ERR Script killed by user"));
}

#[test]
fn busy_script_that_wrote_is_unkillable_and_shutdown_nosave_stops_the_server() {
    let mut s = Server::start(&["--busy-reply-threshold", "100"]);
    let mut other = s.client();
    let _runner = start_script(s.port, "redis.call('set', 'x', '1') local i = 0 while true do i = i + 1 end");
    wait_busy(&mut other);
    let err = redis::cmd("SCRIPT").arg("KILL").query::<String>(&mut other).unwrap_err().to_string();
    assert!(err.contains("UNKILLABLE") && err.contains("Sorry the script already executed write commands against the dataset."), "{err}");
    let err = redis::cmd("SHUTDOWN").query::<String>(&mut other).unwrap_err().to_string();
    assert!(err.contains("BUSY"), "{err}");
    let _ = redis::cmd("SHUTDOWN").arg("NOSAVE").query::<String>(&mut other);
    assert!(s.wait_exit(Duration::from_secs(5)), "SHUTDOWN NOSAVE did not stop the server");
}

#[test]
fn a_client_library_connecting_during_a_busy_script_gets_busy_replies() {
    let s = Server::start(&["--busy-reply-threshold", "100"]);
    let runner = start_script(s.port, "local i = 0 while true do i = i + 1 end");
    // The redis crate pipelines CLIENT SETINFO while connecting: it must get answers.
    let mut late = s.client();
    wait_busy(&mut late);
    let ok: String = redis::cmd("SCRIPT").arg("KILL").query(&mut late).unwrap();
    assert_eq!(ok, "OK");
    assert!(read_line(&runner).starts_with("-ERR Script killed by user"));
}

#[test]
fn redis_log_writes_to_the_server_log_honouring_loglevel() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let s = Server::start(&["--logfile", log.to_str().unwrap(), "--loglevel", "notice"]);
    let mut c = s.client();
    eval(&mut c, "redis.log(redis.LOG_WARNING, 'warned', 'from', 42) redis.log(redis.LOG_DEBUG, 'too quiet') return 1", &[], &[]).unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.lines().any(|l| l.contains(" # warned from 42")), "{text}");
    assert!(!text.contains("too quiet"), "{text}");
}

/// Redis 7.0 runs MULTI, WATCH, UNWATCH, AUTH, HELLO, RESET and QUIT while a script is busy
/// (they change only the connection), refuses the rest with BUSY, and a refusal inside MULTI
/// dooms the transaction: after SCRIPT KILL the EXEC answers EXECABORT. The sequence of the
/// compatibility issue, against redis-server 7.0, byte for byte.
#[test]
fn connection_commands_run_during_a_busy_script_as_in_redis() {
    use common::diff::{same, show, Cmp, DiffPair};
    let mut d = DiffPair::start_with(&["--busy-reply-threshold", "100"], &["--busy-reply-threshold", "100"]);
    let mut diffs: Vec<String> = Vec::new();
    fn check(d: &mut DiffPair, diffs: &mut Vec<String>, conn: usize, args: &[&str], cmp: Cmp) {
        if let Err(e) = d.on(conn).check_with(args, cmp) {
            diffs.push(format!("{conn}> {args:?}: {e}"));
        }
    }
    // Every connection exists before the script starts.
    for conn in 1..=4 {
        check(&mut d, &mut diffs, conn, &["PING"], Cmp::Exact);
    }
    {
        let (r, o) = d.conns(0);
        r.cmd(&["EVAL", "while true do end", "0"]).expect("send");
        o.cmd(&["EVAL", "while true do end", "0"]).expect("send");
    }
    wait_busy(&mut d.redis.client());
    wait_busy(&mut d.ours.client());
    check(&mut d, &mut diffs, 1, &["MULTI"], Cmp::Exact);
    check(&mut d, &mut diffs, 1, &["INCR", "x"], Cmp::Exact);
    check(&mut d, &mut diffs, 1, &["WATCH", "w"], Cmp::Exact);
    check(&mut d, &mut diffs, 2, &["WATCH", "w"], Cmp::Exact);
    check(&mut d, &mut diffs, 2, &["UNWATCH"], Cmp::Exact);
    check(&mut d, &mut diffs, 2, &["AUTH", "nopass"], Cmp::Exact);
    check(&mut d, &mut diffs, 2, &["HELLO", "3"], Cmp::IgnoreInts);
    check(&mut d, &mut diffs, 2, &["GET", "x"], Cmp::Exact);
    check(&mut d, &mut diffs, 3, &["MULTI"], Cmp::Exact);
    check(&mut d, &mut diffs, 3, &["RESET"], Cmp::Exact);
    check(&mut d, &mut diffs, 3, &["DISCARD"], Cmp::Exact);
    check(&mut d, &mut diffs, 4, &["QUIT"], Cmp::Exact);
    check(&mut d, &mut diffs, 2, &["SCRIPT", "KILL"], Cmp::Exact);
    let (r, o) = d.conns(0);
    let (a, b) = (r.read(), o.read());
    if !same(&a, &b, Cmp::Exact) {
        diffs.push(format!("the killed EVAL: redis {} / ours {}", show(&a), show(&b)));
    }
    check(&mut d, &mut diffs, 1, &["INCR", "x"], Cmp::Exact);
    check(&mut d, &mut diffs, 1, &["EXEC"], Cmp::Exact);
    check(&mut d, &mut diffs, 1, &["PING"], Cmp::Exact);
    check(&mut d, &mut diffs, 1, &["GET", "x"], Cmp::Exact);
    assert!(diffs.is_empty(), "{} differences:\n{}", diffs.len(), diffs.join("\n"));
}
