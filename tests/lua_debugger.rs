//! The Lua debugger (SCRIPT DEBUG, `redis-cli --ldb`) against redis-server 7.0: the same
//! sessions, byte for byte, over the protocol and through redis-cli in a pseudo-terminal;
//! what YES and SYNC sessions leave in the data, the log and a replica; and the other
//! clients during a session.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{RawConn, Server};

/// One debugging session: the script, its keys and arguments, and the debugger commands
/// typed at its stops (those after the session's end are not sent).
struct Session {
    script: &'static str,
    keys: &'static [&'static str],
    args: &'static [&'static str],
    commands: &'static [&'static str],
}

const BASICS: Session = Session {
    script: "local a = 1\nlocal t = {1,2,'x'}\nredis.call('set', KEYS[1], ARGV[1])\nredis.debug('hi', t, a)\nlocal v = redis.call('get', KEYS[1])\nredis.breakpoint()\nreturn v\n",
    keys: &["k"],
    args: &["v1"],
    commands: &[
        "help", "s", "p", "p t", "p KEYS", "p ARGV", "b 5", "b", "l", "w", "t", "e a+1", "e nosuch(", "e 1+1", "r incr ctr", "r get k", "m", "m 10", "p t",
        "m 0", "c", "c", "s",
    ],
};

const FUNCTIONS: Session = Session {
    script: "local function add(a, b)\n  local sum = a + b\n  return sum\nend\nlocal t = {name = 'x', list = {1, 2, {3}}, [5] = true}\nlocal r = add(1, 2)\nredis.debug(t, r, nil, false, 'a\\nb')\nreturn r\n",
    keys: &[],
    args: &[],
    commands: &["b 2", "c", "t", "p", "p sum", "p a", "p b", "s", "s", "t", "s", "s", "p", "p t", "s", "c"],
};

const REPLIES: Session = Session {
    script: "redis.call('hset', 'h', 'a', '1', 'b', '2')\nredis.call('rpush', 'l', 'x', 'y')\nredis.call('zadd', 'z', 1.5, 'm')\nlocal a = redis.call('hgetall', 'h')\nlocal b = redis.call('lrange', 'l', 0, -1)\nlocal c = redis.call('zrange', 'z', 0, -1, 'withscores')\nlocal d = redis.pcall('lpush', 'h', 'x')\nlocal e = redis.call('incrbyfloat', 'f', '1.5')\nredis.setresp(3)\nlocal f = redis.call('hgetall', 'h')\nlocal g = redis.call('zscore', 'z', 'm')\nlocal n = redis.call('get', 'nothing')\nlocal s = redis.call('smembers', 'nothing')\nredis.setresp(2)\nlocal n2 = redis.call('get', 'nothing')\nlocal ok = redis.call('set', 'k', 'v')\nlocal no = redis.pcall('nosuchcommand')\nlocal bad = redis.pcall('get')\nlocal typ = redis.pcall('get', {})\nreturn {a, b, c}\n",
    keys: &[],
    args: &[],
    commands: &[
        "s", "s", "s", "s", "s", "s", "s", "s", "s", "s", "s", "s", "s", "s", "s", "s", "s", "s", "s", "s", "s", "p", "r hgetall h", "r exists h l", "s",
    ],
};

const MAXLEN: Session = Session {
    script: "local big = string.rep('x', 300)\nredis.call('set', 'big', big)\nlocal got = redis.call('get', 'big')\nreturn #got\n",
    keys: &[],
    args: &[],
    commands: &["s", "s", "s", "p got", "m 61", "r get big", "m 0", "r get big", "m", "m 5", "c"],
};

const BREAKPOINTS: Session = Session {
    script: "local x = 0\nfor i = 1, 3 do\n  x = x + i\nend\nredis.call('set', 'x', x)\nreturn x\n",
    keys: &[],
    args: &[],
    commands: &[
        "b", "b 3", "b 3 5", "b 99", "b zz", "b -4", "b", "l 3 1", "l 0", "l 100", "c", "p", "c", "p x", "b -3", "b", "c", "foo", "r",
        "e x = 1", "c",
    ],
};

const ABORT: Session = Session {
    script: "redis.call('set', 'written', 'before-abort')\nlocal x = 1\nreturn x\n",
    keys: &[],
    args: &[],
    commands: &["s", "s", "a"],
};

const CAUGHT_ABORT: Session = Session {
    script: "local ok, err = pcall(function()\n  local y = 1\n  return y\nend)\nreturn {ok and 1 or 0, 'after'}\n",
    keys: &[],
    args: &[],
    commands: &["s", "s", "a", "c"],
};

/// MOVE, SORT ... BY/GET, DBSIZE and KEYS reach keys beyond those they name (set up before
/// the sessions).
const OTHER_KEYS: Session = Session {
    script: "local sorted = redis.call('sort', 'l', 'by', 'w_*', 'get', '#', 'get', 'o_*')\nlocal moved = redis.call('move', 'm', 1)\nreturn {sorted, moved, redis.call('dbsize'), #redis.call('keys', 'w_*')}\n",
    keys: &[],
    args: &[],
    commands: &["s", "s", "c"],
};

const COMPILE_ERROR: Session = Session { script: "local x = 1\nreturn x +\n", keys: &[], args: &[], commands: &["s"] };

const REFUSED_COMMAND: Session =
    Session { script: "local x = 1\nredis.call('nosuch', 'q', '1')\nreturn x", keys: &[], args: &[], commands: &["s", "s", "s"] };

/// Runs `session` on a fresh connection in `mode` (YES or SYNC): the raw bytes of every
/// reply, up to the connection's close.
fn transcript(port: u16, mode: &str, session: &Session) -> Vec<u8> {
    transcript_of(port, mode, session.script, session.keys, session.args, session.commands)
}

fn transcript_of(port: u16, mode: &str, script: &str, keys: &[&str], args: &[&str], commands: &[&str]) -> Vec<u8> {
    let mut conn = RawConn::connect(port);
    let mut out = conn.call(&[b"SCRIPT", b"DEBUG", mode.as_bytes()]);
    let numkeys = keys.len().to_string();
    let mut eval: Vec<&[u8]> = vec![b"EVAL", script.as_bytes(), numkeys.as_bytes()];
    eval.extend(keys.iter().map(|k| k.as_bytes()));
    eval.extend(args.iter().map(|a| a.as_bytes()));
    conn.cmd(&eval);
    let mut commands = commands.iter();
    loop {
        let reply = conn.read_reply();
        out.extend_from_slice(&reply);
        if reply.windows(14).any(|w| w == b"+<endsession>\r") {
            // The EVAL's reply follows, then the server closes the connection.
            out.extend_from_slice(&conn.read_reply());
            assert!(conn.is_closed(), "the connection closes after a session");
            out.extend_from_slice(b"<closed>");
            return out;
        }
        // Out of commands: `abort` ends the session (the next one may then start at once).
        let cmd = commands.next().copied().unwrap_or("abort");
        let args: Vec<&[u8]> = cmd.split(' ').map(str::as_bytes).collect();
        conn.cmd(&args);
    }
}

/// Waits until `replica` has finished its first synchronization.
fn wait_linked(replica: &Server) {
    let mut c = replica.client();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let info: String = redis::cmd("INFO").arg("replication").query(&mut c).unwrap();
        if info.contains("master_link_status:up") && info.contains("master_sync_in_progress:0") {
            return;
        }
        assert!(Instant::now() < deadline, "the replica never synced: {info}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn show(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).replace("\r\n", "\n")
}

/// Every session above, in both modes, gives Redis's bytes; so does the data it leaves.
#[test]
fn sessions_match_redis_byte_for_byte() {
    let ours = Server::start(&[]);
    let redis = Server::start_redis(&["--enable-debug-command", "yes"]);
    let sessions =
        [&BASICS, &FUNCTIONS, &REPLIES, &MAXLEN, &BREAKPOINTS, &ABORT, &CAUGHT_ABORT, &OTHER_KEYS, &COMPILE_ERROR, &REFUSED_COMMAND];
    for port in [ours.port, redis.port] {
        let mut c = RawConn::connect(port);
        for cmd in ["RPUSH l a b c", "MSET w_a 3 w_b 1 w_c 2 o_a A o_b B o_c C m zero", "SELECT 1", "SET m one"] {
            let args: Vec<&[u8]> = cmd.split(' ').map(str::as_bytes).collect();
            c.call(&args);
        }
    }
    for mode in ["yes", "sync"] {
        for (i, session) in sessions.iter().enumerate() {
            let theirs = transcript(redis.port, mode, session);
            let mine = transcript(ours.port, mode, session);
            assert_eq!(show(&mine), show(&theirs), "session {i} in mode {mode}");
            assert!(show(&mine).contains("<endsession>"), "session {i} ran to its end: {}", show(&mine));
            if std::env::var_os("SHOW_LDB").is_some() {
                println!("--- session {i} ({mode})\n{}", show(&mine));
            }
            let digest = |port: u16| RawConn::connect(port).call(&[b"DEBUG", b"DIGEST"]);
            assert_eq!(digest(ours.port), digest(redis.port), "the data after session {i} in mode {mode}");
        }
    }
    // SYNC kept the aborted script's write; YES never wrote.
    assert_eq!(RawConn::connect(ours.port).call(&[b"GET", b"written"]), b"$12\r\nbefore-abort\r\n");
}

/// Addresses (`"function@0x55d0..."`) differ between processes.
fn without_addresses(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("@0x") {
        out.push_str(&rest[..at + 1]);
        rest = rest[at + 3..].trim_start_matches(|c: char| c.is_ascii_hexdigit());
        out.push_str("ADDR");
    }
    out.push_str(rest);
    out
}

/// Random debugger commands over a few scripts, both modes, byte for byte with Redis (but
/// for addresses): a bounded, seeded sweep of what the fixed sessions above do not reach.
#[test]
fn random_sessions_match_redis() {
    let ours = Server::start(&[]);
    let redis = Server::start_redis(&["--enable-debug-command", "yes"]);
    let scripts: [(&str, &[&str], &[&str]); 4] = [
        (BASICS.script, BASICS.keys, BASICS.args),
        (FUNCTIONS.script, FUNCTIONS.keys, FUNCTIONS.args),
        (REPLIES.script, REPLIES.keys, REPLIES.args),
        (
            "local acc = {}\nfor i = 1, 4 do\n  acc[#acc + 1] = redis.call('incrby', KEYS[1], i)\n  if i == 3 then redis.breakpoint() end\nend\nredis.debug(acc, #acc)\nreturn acc\n",
            &["counter"],
            &[],
        ),
    ];
    let vocabulary: &[&str] = &[
        "s",
        "n",
        "step",
        "next",
        "c",
        "continue",
        "l",
        "list",
        "l 3",
        "l 2 1",
        "l 0 0",
        "l 99",
        "w",
        "whole",
        "p",
        "print",
        "p a",
        "p t",
        "p i",
        "p acc",
        "p KEYS",
        "p ARGV",
        "p nosuch",
        "b",
        "b 2",
        "b 3",
        "b 5",
        "b -3",
        "b 0",
        "b 1 4",
        "b x",
        "b 999",
        "t",
        "trace",
        "e 1",
        "e #KEYS",
        "e KEYS[1]",
        "e {1,{2,{3}}}",
        "e nil",
        "e 'a\\tb'",
        "e 2^53",
        "e 0.1",
        "e -0",
        "e 1/0",
        "e (",
        "r ping",
        "r get counter",
        "r incr counter",
        "r hgetall h",
        "r echo hello",
        "r nosuch",
        "r set",
        "m",
        "m 70",
        "m 0",
        "m 1",
        "h",
        "help",
        "foo",
        "r",
        "e",
    ];
    let mut rng = common::Rng(0x5eed_1db6);
    for round in 0..80 {
        let (script, keys, args) = scripts[rng.below(scripts.len() as u64) as usize];
        let commands: Vec<&str> = (0..5 + rng.below(20)).map(|_| vocabulary[rng.below(vocabulary.len() as u64) as usize]).collect();
        for mode in ["yes", "sync"] {
            let theirs = without_addresses(&show(&transcript_of(redis.port, mode, script, keys, args, &commands)));
            let mine = without_addresses(&show(&transcript_of(ours.port, mode, script, keys, args, &commands)));
            assert_eq!(mine, theirs, "round {round} in mode {mode}: {commands:?}");
        }
    }
}

/// Errors around a session's start: EVALSHA, a bad key count, a session inside a pipeline.
#[test]
fn refusals_match_redis() {
    let ours = Server::start(&[]);
    let redis = Server::start_redis(&[]);
    let run = |port: u16, steps: &[&[&[u8]]]| {
        let mut conn = RawConn::connect(port);
        let mut out = Vec::new();
        for step in steps {
            out.extend_from_slice(&conn.call(step));
        }
        out
    };
    let cases: [&[&[&[u8]]]; 5] = [
        &[&[b"MULTI"], &[b"SCRIPT", b"DEBUG", b"YES"], &[b"EXEC"], &[b"EVAL", b"return 1", b"0"]],
        &[&[b"SCRIPT", b"DEBUG", b"YES"], &[b"EVALSHA", b"e0e1f9fabfc9d4800c877a703b823ac0578ff8db", b"0"], &[b"PING"]],
        &[&[b"SCRIPT", b"DEBUG", b"SYNC"], &[b"EVAL", b"return 1", b"-1"]],
        &[&[b"SCRIPT", b"DEBUG", b"YES"], &[b"EVAL", b"return 1", b"5"]],
        &[&[b"SCRIPT", b"DEBUG", b"YES"], &[b"SCRIPT", b"DEBUG", b"NO"], &[b"EVAL", b"return 1", b"0"], &[b"SCRIPT", b"DEBUG", b"MAYBE"]],
    ];
    for (i, steps) in cases.iter().enumerate() {
        assert_eq!(show(&run(ours.port, steps)), show(&run(redis.port, steps)), "case {i}");
    }
    // Inside a pipeline (replies still owed), as Redis refuses it.
    for port in [ours.port, redis.port] {
        let mut conn = RawConn::connect(port);
        conn.send(b"PING\r\nSCRIPT DEBUG YES\r\n");
        assert_eq!(conn.read_reply(), b"+PONG\r\n");
        assert_eq!(conn.read_reply(), b"-ERR SCRIPT DEBUG must be called outside a pipeline\r\n", "port {port}");
    }
}

/// What the debugger reads at a stop: one command per read (a second one sent with it is
/// dropped, as Redis's debugger drops the rest of its buffer), and Redis's limits on
/// arguments (an empty one is a protocol error, which ends the script).
#[test]
fn debugger_input_matches_redis() {
    let ours = Server::start(&[]);
    let redis = Server::start_redis(&[]);
    let run = |port: u16, input: &[u8]| {
        let mut conn = RawConn::connect(port);
        let mut out = conn.call(&[b"SCRIPT", b"DEBUG", b"YES"]);
        conn.cmd(&[b"EVAL", b"local x = 1\nlocal y = 2\nreturn x + y", b"0"]);
        out.extend_from_slice(&conn.read_reply());
        conn.send(input);
        out.extend_from_slice(&conn.read_reply());
        // What a following command gets shows where the session is.
        conn.cmd(&[b"s"]);
        out.extend_from_slice(&conn.read_reply());
        out
    };
    let pipelined = b"*1\r\n$1\r\ns\r\n*1\r\n$1\r\ns\r\n";
    assert_eq!(show(&run(ours.port, pipelined)), show(&run(redis.port, pipelined)));
    let empty_arg = b"*2\r\n$1\r\np\r\n$0\r\n\r\n";
    let ended = |port: u16, input: &[u8]| {
        let mut conn = RawConn::connect(port);
        conn.call(&[b"SCRIPT", b"DEBUG", b"YES"]);
        conn.cmd(&[b"EVAL", b"local x = 1\nreturn x", b"0"]);
        let mut out = conn.read_reply();
        conn.send(input);
        out.extend_from_slice(&conn.read_reply());
        out.extend_from_slice(&conn.read_reply());
        assert!(conn.is_closed());
        out
    };
    let (mine, theirs) = (ended(ours.port, empty_arg), ended(redis.port, empty_arg));
    assert_eq!(show(&mine), show(&theirs));
    // Bad protocol at a stop (the connection stops reading after it): the same end.
    let bad = b"*1\r\n$x\r\n";
    let (mine, theirs) = (ended(ours.port, bad), ended(redis.port, bad));
    assert_eq!(show(&mine), show(&theirs));
    assert!(show(&mine).contains("-ERR protocol error script:"), "{}", show(&mine));
}

/// A script stuck in a loop stops after busy-reply-threshold ("timeout reached").
#[test]
fn an_endless_loop_stops_like_redis() {
    let ours = Server::start(&["--busy-reply-threshold", "100"]);
    let redis = Server::start_redis(&["--busy-reply-threshold", "100"]);
    let session = Session { script: "local i = 0\nwhile true do\n  i = i + 1\nend\n", keys: &[], args: &[], commands: &["c", "l", "a"] };
    let normalize = |t: Vec<u8>| show(&t);
    assert_eq!(normalize(transcript(ours.port, "yes", &session)), normalize(transcript(redis.port, "yes", &session)));
}

/// YES: other clients are served while the session waits at a stop and see none of its
/// writes; nothing of it reaches the data, the log or a replica.
#[test]
fn yes_sessions_serve_others_and_leave_nothing() {
    let mut primary = Server::start(&[]);
    let replica = Server::start(&["--replicaof", "127.0.0.1", &primary.port.to_string()]);
    wait_linked(&replica);
    let mut c = primary.client();
    let _: () = redis::cmd("SET").arg("x").arg("orig").query(&mut c).unwrap();
    let mut dbg = primary.raw();
    assert_eq!(dbg.call(&[b"SCRIPT", b"DEBUG", b"YES"]), b"+OK\r\n");
    dbg.cmd(&[b"EVAL", b"redis.call('set', 'x', 'debug')\nredis.call('del', 'gone')\nreturn redis.call('get', 'x')", b"0"]);
    let first = dbg.read_reply();
    assert!(show(&first).contains("Stopped at 1"), "{}", show(&first));
    // Another client, while the session waits: answered at once, with the real data.
    let started = Instant::now();
    let seen: String =
        redis::cmd("EVAL").arg("redis.call('set', 'gone', 'here') return redis.call('get', 'x')").arg(0).query(&mut c).unwrap();
    assert_eq!(seen, "orig");
    assert!(started.elapsed() < Duration::from_secs(1), "served during the session");
    // One session at a time: a second debugging client is told so (and its session ends).
    let mut second = primary.raw();
    assert_eq!(second.call(&[b"SCRIPT", b"DEBUG", b"YES"]), b"+OK\r\n");
    second.cmd(&[b"EVAL", b"return 1", b"0"]);
    assert_eq!(second.read_reply(), b"*1\r\n+<endsession>\r\n");
    assert!(show(&second.read_reply()).starts_with("-ERR another Lua debugging session is running"));
    assert!(second.is_closed());
    assert!(show(&dbg.call(&[b"s"])).contains("Stopped at 2"));
    // The session reads its own write; the real key keeps its value.
    assert!(show(&dbg.call(&[b"r", b"get", b"x"])).contains("<reply> \"debug\""));
    let x: String = redis::cmd("GET").arg("x").query(&mut c).unwrap();
    assert_eq!(x, "orig");
    let end = dbg.call(&[b"c"]);
    assert!(show(&end).contains("<endsession>"));
    assert_eq!(dbg.read_reply(), b"$5\r\ndebug\r\n");
    assert!(dbg.is_closed());
    let after: (String, String) = redis::cmd("MGET").arg("x").arg("gone").query(&mut c).unwrap();
    assert_eq!(after, ("orig".to_string(), "here".to_string()), "the session's SET and DEL are gone with it");
    // The replica and the log agree: only the other client's write happened.
    // WAIT covers this client's writes: one after the session's covers those too.
    let _: () = redis::cmd("SET").arg("fence").arg(1).query(&mut c).unwrap();
    let acked: i64 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut c).unwrap();
    assert_eq!(acked, 1);
    let mut r = replica.client();
    let on_replica: (String, String) = redis::cmd("MGET").arg("x").arg("gone").query(&mut r).unwrap();
    assert_eq!(on_replica, after);
    primary.restart(&[]);
    let mut c = primary.client();
    let reloaded: (String, String) = redis::cmd("MGET").arg("x").arg("gone").query(&mut c).unwrap();
    assert_eq!(reloaded, after);
}

/// What a YES session cannot do to the others: an endless `eval` at a stop is stopped at
/// busy-reply-threshold; FLUSHALL in the view fails nobody's WATCH; SHUTDOWN from another
/// client ends the session and the server.
#[test]
fn yes_sessions_keep_the_server_safe() {
    let mut server = Server::start(&["--busy-reply-threshold", "200"]);
    let mut c = server.client();
    let _: () = redis::cmd("SET").arg("w").arg("1").query(&mut c).unwrap();
    let mut watcher = server.raw();
    assert_eq!(watcher.call(&[b"WATCH", b"w"]), b"+OK\r\n");
    let mut dbg = server.raw();
    assert_eq!(dbg.call(&[b"SCRIPT", b"DEBUG", b"YES"]), b"+OK\r\n");
    dbg.cmd(&[b"EVAL", b"redis.call('flushall')\nreturn redis.call('dbsize')", b"0"]);
    assert!(show(&dbg.read_reply()).contains("Stopped at 1"));
    let started = Instant::now();
    let looped = show(&dbg.call(&[b"e", b"while", b"true", b"do", b"end"]));
    assert!(looped.contains("<error> eval ran past busy-reply-threshold"), "{looped}");
    assert!(started.elapsed() < Duration::from_secs(3));
    // Nor can a pcall in the code keep it going.
    let caught = show(&dbg.call(&[b"e", b"while", b"true", b"do", b"pcall(function()", b"while", b"true", b"do", b"end", b"end)", b"end"]));
    assert!(caught.contains("<error> eval ran past busy-reply-threshold"), "{caught}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(show(&dbg.call(&[b"s"])).contains("<redis> flushall"));
    assert!(show(&dbg.call(&[b"r", b"dbsize"])).contains("<reply> 0"));
    // The real data and the watcher's transaction are untouched.
    let w: String = redis::cmd("GET").arg("w").query(&mut c).unwrap();
    assert_eq!(w, "1");
    assert_eq!(watcher.call(&[b"MULTI"]), b"+OK\r\n");
    assert_eq!(watcher.call(&[b"INCR", b"w"]), b"+QUEUED\r\n");
    assert_eq!(watcher.call(&[b"EXEC"]), b"*1\r\n:2\r\n", "the session's FLUSHALL touched no watched key");
    shut_down_beside(&mut server, &mut dbg);
}

/// SHUTDOWN NOSAVE from another client during `dbg`'s YES session: the session ends with
/// the shutdown's error, then the server exits.
fn shut_down_beside(server: &mut Server, dbg: &mut RawConn) {
    let mut other = server.raw();
    other.cmd(&[b"SHUTDOWN", b"NOSAVE"]);
    let end = show(&dbg.read_reply());
    assert!(end.contains("<endsession>"), "{end}");
    assert!(show(&dbg.read_reply()).contains("the server is shutting down"));
    assert!(server.wait_exit(Duration::from_secs(10)), "the server exits");
}

/// SHUTDOWN while a YES session's script runs (between stops, catching errors in a loop):
/// the others are served meanwhile, and the shutdown ends the script and the server.
#[test]
fn shutdown_ends_a_running_yes_session() {
    let mut server = Server::start(&[]);
    let mut dbg = server.raw();
    assert_eq!(dbg.call(&[b"SCRIPT", b"DEBUG", b"YES"]), b"+OK\r\n");
    dbg.cmd(&[b"EVAL", b"local n = 0\nwhile true do\n  pcall(function() n = n + 1 end)\nend", b"0"]);
    assert!(show(&dbg.read_reply()).contains("Stopped at 1"));
    dbg.cmd(&[b"c"]);
    std::thread::sleep(Duration::from_millis(200));
    let mut c = server.client();
    let pong: String = redis::cmd("PING").query(&mut c).unwrap();
    assert_eq!(pong, "PONG", "served while the script runs");
    shut_down_beside(&mut server, &mut dbg);
}

/// SYNC: the server waits for the debugging client (another client's command is answered
/// only after the session); the session's writes stay, in the log and on a replica.
#[test]
fn sync_sessions_hold_the_server_and_keep_their_writes() {
    let mut primary = Server::start(&[]);
    let replica = Server::start(&["--replicaof", "127.0.0.1", &primary.port.to_string()]);
    wait_linked(&replica);
    let mut dbg = primary.raw();
    assert_eq!(dbg.call(&[b"SCRIPT", b"DEBUG", b"SYNC"]), b"+OK\r\n");
    dbg.cmd(&[b"EVAL", b"redis.call('set', 'x', 'debug')\nredis.call('incr', 'n')\nreturn 1", b"0"]);
    assert!(show(&dbg.read_reply()).contains("Stopped at 1"));
    let mut other = primary.raw();
    other.stream.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    other.cmd(&[b"GET", b"x"]);
    let mut buf = [0u8; 16];
    assert!(std::io::Read::read(&mut other.stream, &mut buf).is_err(), "nobody else is served during a SYNC session");
    assert!(show(&dbg.call(&[b"s"])).contains("<redis> set x debug"));
    let end = dbg.call(&[b"c"]);
    assert!(show(&end).contains("<endsession>"), "{}", show(&end));
    assert_eq!(dbg.read_reply(), b":1\r\n");
    other.stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(other.read_reply(), b"$5\r\ndebug\r\n", "answered after the session, with its write");
    let mut c = primary.client();
    // WAIT covers this client's writes: one after the session's covers those too.
    let _: () = redis::cmd("SET").arg("fence").arg(1).query(&mut c).unwrap();
    let acked: i64 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut c).unwrap();
    assert_eq!(acked, 1);
    let mut r = replica.client();
    let on_replica: (String, i64) = redis::cmd("MGET").arg("x").arg("n").query(&mut r).unwrap();
    assert_eq!(on_replica, ("debug".to_string(), 1));
    primary.restart(&[]);
    let mut c = primary.client();
    let reloaded: (String, i64) = redis::cmd("MGET").arg("x").arg("n").query(&mut c).unwrap();
    assert_eq!(reloaded, ("debug".to_string(), 1), "kept by the log (as the script's effects)");
}

/// A client that leaves mid-session: the script runs on to its end without stopping, and
/// the server serves others afterwards.
#[test]
fn a_debugging_client_that_leaves_ends_its_session() {
    for mode in [&b"YES"[..], b"SYNC"] {
        let server = Server::start(&[]);
        let mut dbg = server.raw();
        assert_eq!(dbg.call(&[b"SCRIPT", b"DEBUG", mode]), b"+OK\r\n");
        dbg.cmd(&[b"EVAL", b"redis.call('set', 'x', '1')\nredis.call('set', 'y', '2')\nreturn 1", b"0"]);
        assert!(show(&dbg.read_reply()).contains("Stopped at 1"));
        drop(dbg);
        let mut c = server.client();
        let pong: String = redis::cmd("PING").query(&mut c).unwrap();
        assert_eq!(pong, "PONG");
        let y: Option<String> = redis::cmd("GET").arg("y").query(&mut c).unwrap();
        let expected = if mode == b"SYNC" { Some("2".to_string()) } else { None };
        assert_eq!(y, expected, "the script ran to its end ({})", String::from_utf8_lossy(mode));
        let clients: String = redis::cmd("CLIENT").arg("LIST").query(&mut c).unwrap();
        assert_eq!(clients.lines().count(), 1, "the debugging client is gone: {clients}");
    }
}

/// `redis-cli --ldb` (and `--ldb-sync-mode`) in a pseudo-terminal (util-linux `script`),
/// typing one line at a time: the screen is Redis's, escape sequences included.
#[test]
fn redis_cli_ldb_transcripts_match_redis() {
    if Command::new("script").arg("--version").output().is_err() {
        panic!("util-linux `script` is needed for the pseudo-terminal");
    }
    let ours = Server::start(&[]);
    let redis = Server::start_redis(&[]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hold.lua");
    std::fs::write(
        &file,
        "-- hold stock for an order\nlocal stock = tonumber(redis.call('get', KEYS[1]) or '0')\nlocal want = tonumber(ARGV[1])\nif stock < want then\n  return redis.error_reply('not enough')\nend\nredis.call('decrby', KEYS[1], want)\nredis.call('set', KEYS[2], want, 'ex', ARGV[2])\nreturn stock - want\n",
    )
    .unwrap();
    let sessions: [(&str, &[&str]); 3] = [
        ("--ldb", &["s", "p", "n", "p stock", "b 8", "c", "p", "r get stock:1", "c", "quit"]),
        ("--ldb-sync-mode", &["w", "b 7", "c", "t", "e want * 2", "s", "c", "quit"]),
        ("--ldb", &["s", "restart", "s", "s", "abort", "quit"]),
    ];
    for (flag, lines) in sessions {
        let mut screens = Vec::new();
        for port in [redis.port, ours.port] {
            let mut c = RawConn::connect(port);
            c.call(&[b"SET", b"stock:1", b"10"]);
            c.call(&[b"DEL", b"hold:7"]);
            let cli = format!("redis-cli -p {port} {flag} --eval {} stock:1 hold:7 , 2 600", file.display());
            let mut child = Command::new("script")
                .args(["-qfec", &cli, "/dev/null"])
                .env("TERM", "dumb")
                .env("HOME", dir.path())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("script");
            let mut stdin = child.stdin.take().unwrap();
            let mut stdout = child.stdout.take().unwrap();
            let screen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
            let reader = {
                let screen = screen.clone();
                std::thread::spawn(move || {
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = std::io::Read::read(&mut stdout, &mut buf) {
                        if n == 0 {
                            break;
                        }
                        screen.lock().unwrap().extend_from_slice(&buf[..n]);
                    }
                })
            };
            // Each line is typed once redis-cli shows its next prompt: the terminal echoes a
            // line when it is typed, so typing ahead would interleave with the replies.
            let prompts = |screen: &[u8]| {
                let text = String::from_utf8_lossy(screen);
                text.matches("debugger> ").count() + text.matches(&format!(":{port}> ")).count()
            };
            for (typed, line) in lines.iter().enumerate() {
                let deadline = Instant::now() + Duration::from_secs(20);
                while prompts(&screen.lock().unwrap()) <= typed {
                    assert!(Instant::now() < deadline, "no prompt for {line:?}: {}", String::from_utf8_lossy(&screen.lock().unwrap()));
                    std::thread::sleep(Duration::from_millis(10));
                }
                let _ = stdin.write_all(format!("{line}\n").as_bytes());
            }
            drop(stdin);
            let _ = child.wait();
            let _ = reader.join();
            let out = screen.lock().unwrap().clone();
            let screen = String::from_utf8_lossy(&out).replace(&port.to_string(), "PORT").replace('\r', "");
            screens.push(screen);
            let data = RawConn::connect(port).call(&[b"MGET", b"stock:1", b"hold:7"]);
            screens.push(show(&data));
        }
        assert!(screens[0].contains("lua debugger>"), "redis-cli ran a session: {}", screens[0]);
        if lines.contains(&"restart") {
            assert_eq!(screens[0].matches("Lua debugging session started").count(), 2, "restarted: {}", screens[0]);
        }
        assert_eq!(screens[2], screens[0], "{flag} {lines:?}: the screen");
        assert_eq!(screens[3], screens[1], "{flag} {lines:?}: the data after it");
    }
}
