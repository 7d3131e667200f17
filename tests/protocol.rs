//! Raw-bytes protocol tests against vermilion-server: exact reply bytes of every RESP2/RESP3
//! type a command gives, inline commands, pipelining, fragmented frames, protocol errors
//! (compared byte for byte with the real redis-server), isolation between connections,
//! large and binary values.

mod common;

use std::io::Write;
use std::time::Duration;

use common::diff::{escape, Broken, Cmp, Conn, DiffPair, Got};
use common::Server;

fn conn(server: &Server) -> Conn {
    Conn::connect(server.port, Duration::from_secs(10))
}

/// Sends `bytes`, returns the raw reply bytes (panics with a readable message on EOF).
fn send_read(c: &mut Conn, bytes: &[u8]) -> Vec<u8> {
    c.send(bytes).expect("send");
    match c.read() {
        Ok(r) => r.raw,
        Err(e) => panic!("no reply to \"{}\": {e}", escape(bytes)),
    }
}

fn call(c: &mut Conn, args: &[&[u8]]) -> Vec<u8> {
    match c.call(args) {
        Ok(r) => r.raw,
        Err(e) => panic!("no reply to {args:?}: {e}"),
    }
}

#[track_caller]
fn assert_bytes(got: &[u8], want: &[u8]) {
    assert!(got == want, "\n  got:  \"{}\"\n  want: \"{}\"", escape(got), escape(want));
}

fn is_int_reply(raw: &[u8]) -> bool {
    raw.len() > 3 && raw[0] == b':' && raw.ends_with(b"\r\n") && raw[1..raw.len() - 2].iter().all(|c| c.is_ascii_digit())
}

#[test]
fn resp2_types() {
    let s = Server::start(&[]);
    let mut c = conn(&s);
    // + simple string
    assert_bytes(&call(&mut c, &[b"PING"]), b"+PONG\r\n");
    assert_bytes(&call(&mut c, &[b"SET", b"k", b"v"]), b"+OK\r\n");
    // - error
    assert_bytes(&call(&mut c, &[b"NOSUCH"]), b"-ERR unknown command 'NOSUCH', with args beginning with: \r\n");
    assert_bytes(&call(&mut c, &[b"GET"]), b"-ERR wrong number of arguments for 'get' command\r\n");
    // : integer
    let id = call(&mut c, &[b"CLIENT", b"ID"]);
    assert!(is_int_reply(&id), "CLIENT ID: {}", escape(&id));
    assert_bytes(&call(&mut c, &[b"DBSIZE"]), b":1\r\n");
    assert_bytes(&call(&mut c, &[b"EXISTS", b"nokey"]), b":0\r\n");
    assert_bytes(&call(&mut c, &[b"SET", b"n", b"-9223372036854775807"]), b"+OK\r\n");
    assert_bytes(&call(&mut c, &[b"DECR", b"n"]), b":-9223372036854775808\r\n");
    // $ bulk, empty bulk, null bulk
    assert_bytes(&call(&mut c, &[b"ECHO", b"hello"]), b"$5\r\nhello\r\n");
    assert_bytes(&call(&mut c, &[b"ECHO", b""]), b"$0\r\n\r\n");
    assert_bytes(&call(&mut c, &[b"GET", b"k"]), b"$1\r\nv\r\n");
    assert_bytes(&call(&mut c, &[b"GET", b"nokey"]), b"$-1\r\n");
    assert_bytes(&call(&mut c, &[b"CLIENT", b"GETNAME"]), b"$-1\r\n");
    // * array (with a null element), empty array
    assert_bytes(&call(&mut c, &[b"MGET", b"k", b"nokey"]), b"*2\r\n$1\r\nv\r\n$-1\r\n");
    assert_bytes(&call(&mut c, &[b"KEYS", b"nomatch*"]), b"*0\r\n");
    assert_bytes(&call(&mut c, &[b"CONFIG", b"GET", b"maxmemory"]), b"*2\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n");
    // HELLO 2: a map flattened into an array of 14.
    let hello = call(&mut c, &[b"HELLO", b"2"]);
    assert!(
        hello.starts_with(b"*14\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n$5\r\nproto\r\n:2\r\n"),
        "{}",
        escape(&hello)
    );
    // *-1 null array: no command of the foundation gives one in RESP2 unless BLPOP exists.
    if vermilion::commands::lookup(b"blpop").is_some() {
        assert_bytes(&call(&mut c, &[b"BLPOP", b"nolist", b"0.01"]), b"*-1\r\n");
    } else {
        eprintln!("skip *-1: no implemented command replies with a null array yet (BLPOP absent)");
    }
}

#[test]
fn resp3_types() {
    let s = Server::start(&[]);
    let mut c = conn(&s);
    let hello = call(&mut c, &[b"HELLO", b"3"]);
    // % map
    let want_prefix: &[u8] = b"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:";
    assert!(hello.starts_with(want_prefix), "HELLO 3: {}", escape(&hello));
    assert!(
        hello.ends_with(b"\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"),
        "HELLO 3: {}",
        escape(&hello)
    );
    // _ null
    assert_bytes(&call(&mut c, &[b"GET", b"nokey"]), b"_\r\n");
    assert_bytes(&call(&mut c, &[b"CLIENT", b"GETNAME"]), b"_\r\n");
    assert_bytes(&call(&mut c, &[b"MGET", b"nokey"]), b"*1\r\n_\r\n");
    // Simple types are unchanged.
    assert_bytes(&call(&mut c, &[b"PING"]), b"+PONG\r\n");
    assert_bytes(&call(&mut c, &[b"ECHO", b"x"]), b"$1\r\nx\r\n");
    assert_bytes(&call(&mut c, &[b"EXISTS", b"nokey"]), b":0\r\n");
    // INCRBYFLOAT stays a bulk string in RESP3 (as in Redis).
    assert_bytes(&call(&mut c, &[b"INCRBYFLOAT", b"f", b"1.5"]), b"$3\r\n1.5\r\n");
    // CONFIG GET is a map in RESP3.
    assert_bytes(&call(&mut c, &[b"CONFIG", b"GET", b"maxmemory"]), b"%1\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n");
    // = verbatim string
    let info = call(&mut c, &[b"CLIENT", b"INFO"]);
    assert!(info.starts_with(b"="), "CLIENT INFO: {}", escape(&info));
    let header_end = info.windows(2).position(|w| w == b"\r\n").unwrap();
    let len: usize = std::str::from_utf8(&info[1..header_end]).unwrap().parse().unwrap();
    let body = &info[header_end + 2..info.len() - 2];
    assert_eq!(body.len(), len, "verbatim length");
    assert!(body.starts_with(b"txt:id="), "CLIENT INFO body: {}", escape(body));
    assert!(body.ends_with(b"resp=3\n"), "CLIENT INFO body: {}", escape(body));
    // , double: only sorted-set style commands give one; none in the foundation.
    if vermilion::commands::lookup(b"zscore").is_some() {
        call(&mut c, &[b"ZADD", b"z", b"1.5", b"m"]);
        assert_bytes(&call(&mut c, &[b"ZSCORE", b"z", b"m"]), b",1.5\r\n");
    } else {
        eprintln!("skip ',' double: no implemented command replies with a double yet (ZSCORE absent)");
    }
    // Back to RESP2.
    let hello2 = call(&mut c, &[b"HELLO", b"2"]);
    assert!(hello2.starts_with(b"*14\r\n"), "{}", escape(&hello2));
    assert_bytes(&call(&mut c, &[b"GET", b"nokey"]), b"$-1\r\n");
}

#[test]
fn inline_commands() {
    let s = Server::start(&[]);
    let mut c = conn(&s);
    assert_bytes(&send_read(&mut c, b"PING\r\n"), b"+PONG\r\n");
    assert_bytes(&send_read(&mut c, b"PING\n"), b"+PONG\r\n");
    assert_bytes(&send_read(&mut c, b"ping hello\r\n"), b"$5\r\nhello\r\n");
    assert_bytes(&send_read(&mut c, b"   ECHO    spaced   \r\n"), b"$6\r\nspaced\r\n");
    assert_bytes(&send_read(&mut c, b"ECHO \"hello world\"\r\n"), b"$11\r\nhello world\r\n");
    assert_bytes(&send_read(&mut c, b"ECHO 'it\\'s'\r\n"), b"$4\r\nit's\r\n");
    assert_bytes(&send_read(&mut c, b"ECHO \"\\x41\\n\\t\\\\\"\r\n"), b"$4\r\nA\n\t\\\r\n");
    assert_bytes(&send_read(&mut c, b"ECHO \"\"\r\n"), b"$0\r\n\r\n");
    // Empty lines are ignored: only one reply.
    assert_bytes(&send_read(&mut c, b"\r\n\n   \r\nPING\r\n"), b"+PONG\r\n");
    assert_bytes(&send_read(&mut c, b"SET a \"b c\"\n"), b"+OK\r\n");
    assert_bytes(&send_read(&mut c, b"GET a\n"), b"$3\r\nb c\r\n");
    assert_bytes(&send_read(&mut c, b"set 'x y' \"\"\r\n"), b"+OK\r\n");
    assert_bytes(&call(&mut c, &[b"STRLEN", b"x y"]), b":0\r\n");
    // Several inline commands in one write, mixed with a multibulk.
    c.send(b"PING\r\nECHO a\r\n*2\r\n$4\r\nECHO\r\n$1\r\nb\r\nECHO c\n").unwrap();
    for want in [&b"+PONG\r\n"[..], b"$1\r\na\r\n", b"$1\r\nb\r\n", b"$1\r\nc\r\n"] {
        assert_bytes(&c.read().unwrap().raw, want);
    }
    // Unknown inline command.
    assert_bytes(&send_read(&mut c, b"NOSUCH a b\r\n"), b"-ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b' \r\n");
}

#[test]
fn pipeline_of_10000_in_one_write() {
    let s = Server::start(&[]);
    let mut c = conn(&s);
    let mut out = Vec::new();
    for i in 0..10_000 {
        let v = i.to_string();
        out.extend_from_slice(format!("*2\r\n$4\r\nECHO\r\n${}\r\n{v}\r\n", v.len()).as_bytes());
    }
    // Write from another thread so neither side can block on a full socket buffer.
    let mut writer = c.stream.try_clone().unwrap();
    let t = std::thread::spawn(move || writer.write_all(&out).expect("write pipeline"));
    for i in 0..10_000 {
        let v = i.to_string();
        let got = c.read().unwrap_or_else(|e| panic!("reply {i}: {e}"));
        assert_bytes(&got.raw, format!("${}\r\n{v}\r\n", v.len()).as_bytes());
    }
    t.join().unwrap();
    assert_bytes(&call(&mut c, &[b"PING"]), b"+PONG\r\n");
}

#[test]
fn frame_one_byte_at_a_time() {
    let s = Server::start(&[]);
    let mut c = conn(&s);
    let mut trickle = |bytes: &[u8]| {
        for b in bytes {
            c.send(&[*b]).unwrap();
            std::thread::sleep(Duration::from_micros(200));
        }
        c.read().unwrap().raw
    };
    assert_bytes(&trickle(b"*2\r\n$4\r\nECHO\r\n$5\r\nhello\r\n"), b"$5\r\nhello\r\n");
    assert_bytes(&trickle(b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$12\r\nhello\r\nworld\r\n"), b"+OK\r\n");
    assert_bytes(&trickle(b"PING\r\n"), b"+PONG\r\n");
    assert_bytes(&trickle(b"GET key\r\n"), b"$12\r\nhello\r\nworld\r\n");
}

/// Each malformed input gets Redis's exact error, then the connection is closed.
#[test]
fn protocol_errors_match_redis_and_close() {
    let mut d = DiffPair::start();
    let long_inline = vec![b'a'; 70_000];
    let cases: Vec<(&str, Vec<u8>, &[u8])> = vec![
        ("*abc", b"*abc\r\n".to_vec(), b"-ERR Protocol error: invalid multibulk length\r\n"),
        ("*1 +x", b"*1\r\n+x\r\n".to_vec(), b"-ERR Protocol error: expected '$', got '+'\r\n"),
        ("$-5", b"*1\r\n$-5\r\n".to_vec(), b"-ERR Protocol error: invalid bulk length\r\n"),
        ("$999999999999", b"*1\r\n$999999999999\r\n".to_vec(), b"-ERR Protocol error: invalid bulk length\r\n"),
        ("unbalanced quotes", b"SET \"a b\r\n".to_vec(), b"-ERR Protocol error: unbalanced quotes in request\r\n"),
        ("unbalanced single quote", b"ECHO 'x\r\n".to_vec(), b"-ERR Protocol error: unbalanced quotes in request\r\n"),
        ("closing quote glued", b"ECHO \"a\"b\r\n".to_vec(), b"-ERR Protocol error: unbalanced quotes in request\r\n"),
        ("inline > 64KB", long_inline, b"-ERR Protocol error: too big inline request\r\n"),
        ("*2000000000000", b"*2000000000000\r\n".to_vec(), b"-ERR Protocol error: invalid multibulk length\r\n"),
    ];
    let mut failures = Vec::new();
    for (name, bytes, want) in &cases {
        d.reconnect(0);
        d.on(0);
        // Redis's own answer, to be sure the expectation is right.
        let (r, o) = d.conns(0);
        r.send(bytes).unwrap();
        let _ = o.send(bytes);
        let rg: Got = r.read();
        let og: Got = o.read();
        let r_closed = rg.is_ok() && r.closed_within(Duration::from_secs(3));
        let o_closed = og.is_ok() && o.closed_within(Duration::from_secs(3));
        assert_eq!(rg.as_ref().map(|x| x.raw.as_slice()), Ok(*want), "redis-server itself answers {name} differently");
        assert!(r_closed, "redis-server did not close after {name}");
        match &og {
            Ok(x) if x.raw == *want && o_closed => {}
            Ok(x) => failures.push(format!("{name}: got \"{}\", closed afterwards: {o_closed}", escape(&x.raw))),
            Err(e) => failures.push(format!("{name}: no reply: {e}")),
        }
    }
    d.reconnect(0);
    // The same through the harness's raw comparison (reply, then a close).
    if let Err(e) = d.check_raw(b"*1\r\n$-5\r\n", 2, Cmp::Exact) {
        failures.push(e.to_string());
    }
    assert!(failures.is_empty(), "protocol errors differ from redis-server:\n{}", failures.join("\n"));
}

#[test]
fn garbage_client_does_not_disturb_neighbour() {
    let s = Server::start(&[]);
    let mut good = conn(&s);
    let mut bad = conn(&s);
    assert_bytes(&call(&mut good, &[b"SET", b"k", b"1"]), b"+OK\r\n");
    // Half a command on the good connection, then garbage on the bad one.
    good.send(b"*2\r\n$4\r\nINCR\r\n").unwrap();
    bad.send(b"*abc\r\n").unwrap();
    assert_bytes(&bad.read().unwrap().raw, b"-ERR Protocol error: invalid multibulk length\r\n");
    assert!(bad.closed_within(Duration::from_secs(3)), "bad connection not closed");
    good.send(b"$1\r\nk\r\n").unwrap();
    assert_bytes(&good.read().unwrap().raw, b":2\r\n");
    // More garbage of other kinds from fresh connections while the good one keeps working.
    let mut expected = 2;
    let junks: [&[u8]; 5] = [b"\x01\x02\xff garbage\r\n", b"*1\r\n$-5\r\n", b"*1\r\n+x\r\n", b"GET \"k\r\n", b"\xff\xfe\r\n\r\n"];
    let mut bads = Vec::new();
    for junk in junks {
        let mut bad = Conn::connect(s.port, Duration::from_millis(300));
        bad.send(junk).unwrap();
        let _ = bad.read();
        bads.push(bad);
        expected += 1;
        assert_bytes(&call(&mut good, &[b"INCR", b"k"]), format!(":{expected}\r\n").as_bytes());
    }
    assert_bytes(&call(&mut good, &[b"PING"]), b"+PONG\r\n");
}

/// A NUL byte before the newline of an inline command: Redis's `strchr` stops at the NUL, so
/// it waits for more input (no reply, until the 64 KB inline limit). Whatever we answer, the
/// server must stay responsive. The neighbour's timeout is short on purpose: a server stuck
/// in a loop on this input may also be eating memory.
#[test]
fn inline_nul_byte_does_not_hang_server() {
    let mut d = DiffPair::start();
    let mut failures = Vec::new();
    for junk in [&b"\x00\x01\x02\xff garbage\r\n"[..], b"ECHO a\x00b\r\n", b"\x00\r\n"] {
        let (r, o) = d.conns(0);
        r.set_timeout(Duration::from_millis(300));
        o.set_timeout(Duration::from_millis(300));
        let _ = r.send(junk);
        let _ = o.send(junk);
        let (rg, og) = (r.read(), o.read());
        if og != rg {
            failures.push(format!("\"{}\": redis {} ours {}", escape(junk), common::diff::show(&rg), common::diff::show(&og)));
        }
        d.reconnect(0);
        let before = rss_kb(d.ours.pid());
        std::thread::sleep(Duration::from_millis(300));
        let after = rss_kb(d.ours.pid());
        if after > before + 100_000 {
            failures.push(format!("after \"{}\": our RSS grows from {before} kB to {after} kB in 300 ms (runaway loop?)", escape(junk)));
            break;
        }
        let mut neighbour = Conn::connect(d.ours.port, Duration::from_millis(500));
        if let Err(e) = neighbour.call(&[b"PING"]) {
            failures.push(format!("after \"{}\" on another connection, PING on a fresh connection: {e}", escape(junk)));
            break;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).unwrap_or(0)
}

#[test]
fn one_megabyte_value_round_trips() {
    let s = Server::start(&[]);
    let mut c = conn(&s);
    let value: Vec<u8> = (0..1024 * 1024).map(|i| (i * 7 % 251) as u8).collect();
    let mut want = format!("${}\r\n", value.len()).into_bytes();
    want.extend_from_slice(&value);
    want.extend_from_slice(b"\r\n");
    let echoed = call(&mut c, &[b"ECHO", &value]);
    assert!(echoed == want, "ECHO of 1 MB differs (got {} bytes)", echoed.len());
    assert_bytes(&call(&mut c, &[b"SET", b"big", &value]), b"+OK\r\n");
    let got = call(&mut c, &[b"GET", b"big"]);
    assert!(got == want, "GET of 1 MB differs (got {} bytes: {})", got.len(), escape(&got[..got.len().min(200)]));
    assert_bytes(&call(&mut c, &[b"STRLEN", b"big"]), b":1048576\r\n");
}

#[test]
fn binary_safe_keys_and_values() {
    let s = Server::start(&[]);
    let mut c = conn(&s);
    let key: &[u8] = b"k\x00e\r\ny\xff";
    let value: &[u8] = b"\x00\r\n\r\n$5\r\n*1\r\n\xff\xfe";
    assert_bytes(&call(&mut c, &[b"ECHO", value]), b"$15\r\n\x00\r\n\r\n$5\r\n*1\r\n\xff\xfe\r\n");
    assert_bytes(&call(&mut c, &[b"SET", key, value]), b"+OK\r\n");
    assert_bytes(&call(&mut c, &[b"GET", key]), b"$15\r\n\x00\r\n\r\n$5\r\n*1\r\n\xff\xfe\r\n");
    assert_bytes(&call(&mut c, &[b"GET", b"k"]), b"$-1\r\n");
    assert_bytes(&call(&mut c, &[b"EXISTS", key]), b":1\r\n");
    assert_bytes(&call(&mut c, &[b"KEYS", b"k*"]), b"*1\r\n$7\r\nk\x00e\r\ny\xff\r\n");
    assert_bytes(&call(&mut c, &[b"SET", b"", b""]), b"+OK\r\n");
    assert_bytes(&call(&mut c, &[b"GET", b""]), b"$0\r\n\r\n");
    assert_bytes(&call(&mut c, &[b"DBSIZE"]), b":2\r\n");
    assert_bytes(&call(&mut c, &[b"APPEND", key, b"\x00"]), b":16\r\n");
}

#[test]
fn quit_closes_after_reply() {
    let s = Server::start(&[]);
    let mut c = conn(&s);
    c.send(b"PING\r\nQUIT\r\nPING\r\n").unwrap();
    assert_bytes(&c.read().unwrap().raw, b"+PONG\r\n");
    assert_bytes(&c.read().unwrap().raw, b"+OK\r\n");
    assert_eq!(c.read().err(), Some(Broken::Closed));
}
