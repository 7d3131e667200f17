//! Client management with real connections: CLIENT REPLY, CLIENT PAUSE (WRITE and ALL),
//! MONITOR's line format, the idle `timeout`, and `maxclients`.

mod common;

use std::time::{Duration, Instant};

use common::diff::DiffPair;
use common::Server;

fn s(b: Vec<u8>) -> String {
    String::from_utf8_lossy(&b).into_owned()
}

#[test]
fn client_reply_matches_redis() {
    let mut d = DiffPair::start();
    // Replies that are never sent cannot be compared one by one: the pipeline is compared
    // whole, ending with a command whose reply is sent.
    d.check_raw(
        b"CLIENT REPLY SKIP\r\nPING\r\nECHO a\r\nCLIENT REPLY OFF\r\nPING\r\nSET k v\r\nCLIENT REPLY ON\r\nGET k\r\nCLIENT REPLY FOO\r\nCLIENT NO-EVICT on\r\nCLIENT NO-EVICT x\r\nCLIENT PAUSE 10 FOO\r\nCLIENT PAUSE abc\r\nCLIENT PAUSE -1\r\nCLIENT UNPAUSE\r\n",
        10,
        common::diff::Cmp::Exact,
    )
    .expect("CLIENT REPLY/NO-EVICT/PAUSE replies");
}

#[test]
fn pause_write_holds_writes_only_and_pause_all_holds_everything() {
    let server = Server::start(&[]);
    let mut admin = server.raw();
    let mut c = server.raw();
    assert_eq!(admin.call(&[b"CLIENT", b"PAUSE", b"300", b"WRITE"]), b"+OK\r\n");
    let t = Instant::now();
    assert_eq!(c.call(&[b"GET", b"k"]), b"$-1\r\n");
    assert!(t.elapsed() < Duration::from_millis(200), "a read waited for a WRITE pause");
    assert_eq!(c.call(&[b"SET", b"k", b"v"]), b"+OK\r\n");
    assert!(t.elapsed() >= Duration::from_millis(250), "a write did not wait: {:?}", t.elapsed());
    assert_eq!(admin.call(&[b"CLIENT", b"PAUSE", b"200", b"ALL"]), b"+OK\r\n");
    let t = Instant::now();
    assert_eq!(c.call(&[b"PING"]), b"+PONG\r\n");
    assert!(t.elapsed() >= Duration::from_millis(150), "PING did not wait for a pause ALL");
}

/// Under PAUSE WRITE, commands that may replicate wait too (PUBLISH, PFCOUNT, an EVAL
/// without flags), while a script that declares no-writes runs, as in Redis.
#[test]
fn pause_write_holds_commands_that_may_replicate() {
    let server = Server::start(&[]);
    let mut admin = server.raw();
    let mut c = server.raw();
    let waits = |c: &mut common::RawConn, admin: &mut common::RawConn, cmd: &[&[u8]]| {
        assert_eq!(admin.call(&[b"CLIENT", b"PAUSE", b"300", b"WRITE"]), b"+OK\r\n");
        let t = Instant::now();
        c.call(cmd);
        let waited = t.elapsed() >= Duration::from_millis(250);
        assert_eq!(admin.call(&[b"CLIENT", b"UNPAUSE"]), b"+OK\r\n");
        waited
    };
    assert!(waits(&mut c, &mut admin, &[b"PUBLISH", b"ch", b"m"]), "PUBLISH ran during PAUSE WRITE");
    assert!(waits(&mut c, &mut admin, &[b"PFCOUNT", b"h"]), "PFCOUNT ran during PAUSE WRITE");
    assert!(waits(&mut c, &mut admin, &[b"EVAL", b"return 1", b"0"]), "EVAL ran during PAUSE WRITE");
    assert!(!waits(&mut c, &mut admin, &[b"EVAL", b"#!lua flags=no-writes\nreturn 1", b"0"]), "a no-writes script waited");
    assert!(!waits(&mut c, &mut admin, &[b"EVAL_RO", b"return 1", b"0"]), "EVAL_RO waited");
}

#[test]
fn monitor_shows_commands_like_redis() {
    let server = Server::start(&[]);
    let mut m = server.raw();
    assert_eq!(m.call(&[b"MONITOR"]), b"+OK\r\n");
    let mut c = server.raw();
    c.call(&[b"SET", b"a b", b"x\ny\x01\"z"]);
    c.call(&[b"SELECT", b"2"]);
    c.call(&[b"CONFIG", b"GET", b"hz"]);
    c.call(&[b"GET", b"q"]);
    let first = s(m.read_reply());
    let second = s(m.read_reply());
    let third = s(m.read_reply());
    // `+<sec>.<usec> [<db> <addr>] "args"...`; CONFIG (admin) is not shown.
    let addr_start = first.find('[').unwrap_or(0);
    assert!(first.starts_with('+') && first[1..addr_start].trim().contains('.'), "{first}");
    assert!(first.ends_with("] \"SET\" \"a b\" \"x\\ny\\x01\\\"z\"\r\n"), "{first}");
    assert!(second.contains("[2 127.0.0.1:") && second.ends_with("] \"SELECT\" \"2\"\r\n"), "{second}");
    assert!(third.ends_with("] \"GET\" \"q\"\r\n"), "{third}");
}

#[test]
fn idle_clients_are_closed_after_timeout() {
    let server = Server::start(&["--timeout", "1"]);
    let mut idle = server.raw();
    assert_eq!(idle.call(&[b"PING"]), b"+PONG\r\n");
    let mut sub = server.raw();
    sub.call(&[b"SUBSCRIBE", b"keep"]);
    std::thread::sleep(Duration::from_millis(2600));
    assert!(idle.is_closed(), "the idle client is still connected");
    let mut fresh = server.raw();
    assert_eq!(fresh.call(&[b"PUBLISH", b"keep", b"x"]), b":1\r\n", "the subscriber was closed");
}

#[test]
fn maxclients_refuses_the_extra_connection() {
    let server = Server::start(&["--maxclients", "2"]);
    let mut a = server.raw();
    let _b = server.raw();
    assert_eq!(a.call(&[b"PING"]), b"+PONG\r\n");
    let mut c = server.raw();
    assert_eq!(s(c.read_reply()), "-ERR max number of clients reached\r\n");
}

/// CLIENT REPLY: ON answers even as the command a SKIP silences; (un)subscribe confirmations
/// are pushes, sent with replies off (RESP2 and RESP3). CLIENT LIST ID and CLIENT KILL USER
/// argument checks.
#[test]
fn client_reply_pushes_list_ids_and_kill_user() {
    use common::diff::{encode_cmd, Cmp};
    let mut d = DiffPair::start();
    let raw = |cmds: &[&[&str]]| cmds.iter().flat_map(|c| encode_cmd(c)).collect::<Vec<u8>>();
    d.check_raw(&raw(&[&["CLIENT", "REPLY", "SKIP"], &["CLIENT", "REPLY", "ON"], &["PING", "q"]]), 2, Cmp::Exact).unwrap();
    let off = raw(&[&["CLIENT", "REPLY", "OFF"], &["SUBSCRIBE", "c"], &["UNSUBSCRIBE", "c"], &["CLIENT", "REPLY", "ON"], &["PING"]]);
    d.check_raw(&off, 4, Cmp::Exact).unwrap();
    let _ = d.hello(3).expect("HELLO 3");
    d.check_raw(&off, 4, Cmp::Exact).unwrap();
    d.reset_conns();
    d.assert_script(
        "client list and kill",
        &[
            "CLIENT LIST ID 0",
            "CLIENT LIST ID -1 99999",
            "CLIENT LIST ID 1 abc",
            "CLIENT LIST TYPE normal ID 1",
            "CLIENT LIST ID",
            "CLIENT KILL USER nobody",
            "CLIENT KILL USER nobody ID abc",
            "CLIENT KILL ID abc USER nobody",
            "CLIENT KILL USER default SKIPME yes",
        ],
    );
}

/// MONITOR as Redis 7.0 shows it: a script's command before its `[0 lua]` lines, a
/// transaction's commands before its EXEC, and passwords as `(redacted)` (AUTH, HELLO ...
/// AUTH, MIGRATE ... AUTH/AUTH2); SLOWLOG redacts the same arguments and ACL SETUSER's and
/// CONFIG SET's secrets.
#[test]
fn monitor_and_slowlog_order_and_redact_like_redis() {
    let redis = Server::start_redis(&[]);
    let ours = Server::start(&[]);
    let strip = |line: String| -> String {
        // `+<sec>.<usec> [<db> <addr>] ...`: the time and a client's address differ.
        let (head, rest) = line.split_once("] ").unwrap_or((&line, ""));
        let db_addr = head.split_once('[').map_or("", |(_, a)| a);
        let (db, addr) = db_addr.split_once(' ').unwrap_or((db_addr, ""));
        format!("[{db} {}] {rest}", if addr == "lua" { "lua" } else { "client" })
    };
    let commands: &[&[&str]] = &[
        &["EVAL", "redis.call('set','a','1') return redis.call('get','a')", "0"],
        &["MULTI"],
        &["SET", "b", "2"],
        &["INCR", "n"],
        &["EXEC"],
        &["AUTH", "secret"],
        &["AUTH", "user", "secret"],
        &["HELLO", "2", "AUTH", "default", "pw"],
        &["MIGRATE", "127.0.0.1", "1", "k", "0", "10", "AUTH", "pw"],
        &["MIGRATE", "127.0.0.1", "1", "k", "0", "10", "AUTH2", "u", "pw"],
        &["CONFIG", "SET", "masterauth", "pw2", "hz", "10"],
        &["ACL", "SETUSER", "bob", ">pass", "on"],
        &["PING"],
    ];
    let mut seen = Vec::new();
    for server in [&redis, &ours] {
        let mut m = server.raw();
        assert_eq!(m.call(&[b"MONITOR"]), b"+OK\r\n");
        let mut c = server.raw();
        c.call(&[b"CONFIG", b"SET", b"slowlog-log-slower-than", b"0"]);
        c.call(&[b"SLOWLOG", b"RESET"]);
        for cmd in commands {
            let args: Vec<&[u8]> = cmd.iter().map(|a| a.as_bytes()).collect();
            c.call(&args);
        }
        let mut lines = Vec::new();
        loop {
            let line = strip(s(m.read_reply()));
            let done = line.contains("\"PING\"");
            lines.push(line);
            if done {
                break;
            }
        }
        let mut con = server.client();
        let log: Vec<(i64, i64, i64, Vec<String>, String, String)> =
            redis::cmd("SLOWLOG").arg("GET").arg(100).query(&mut con).expect("SLOWLOG GET");
        let args: Vec<Vec<String>> =
            log.into_iter().map(|e| e.3).filter(|a| a[0] != "SLOWLOG" && a[0] != "CONFIG" || a.len() > 3).collect();
        seen.push((lines, args));
    }
    assert_eq!(seen[0].0, seen[1].0, "MONITOR lines: redis / ours");
    assert_eq!(seen[0].1, seen[1].1, "SLOWLOG arguments: redis / ours");
}

/// CLIENT INFO's `cmd=` is the command looked up last, as Redis's lastcmd: a refused one
/// (unknown: NULL; wrong arity; denied by ACL, also in the ACL LOG's client info), a queued
/// one, EXEC after its transaction, EVAL after its script's commands.
#[test]
fn client_info_cmd_is_the_last_command_looked_up_like_redis() {
    let redis = Server::start_redis(&[]);
    let ours = Server::start(&[]);
    let cmd_field = |text: &str| text.split_whitespace().find(|f| f.starts_with("cmd=")).unwrap_or("none").to_string();
    let steps: &[&[&str]] = &[
        &["NOSUCH"],
        &["GET"],
        &["GET", "a"],
        &["MULTI"],
        &["SET", "a", "1"],
        &["EXEC"],
        &["EVAL", "redis.call('set', 'b', '1') return redis.call('get', 'b')", "0"],
        &["AUTH", "lim", "x"],
        &["SET", "a", "2"],
    ];
    let mut seen = Vec::new();
    for server in [&redis, &ours] {
        let mut admin = server.raw();
        admin.call(&[b"ACL", b"SETUSER", b"lim", b"on", b"nopass", b"+get", b"+client|info", b"~*"]);
        let mut c = server.raw();
        let mut fields = Vec::new();
        for step in steps {
            let args: Vec<&[u8]> = step.iter().map(|a| a.as_bytes()).collect();
            c.call(&args);
            // CLIENT LIST of another client shows this one's last command.
            let list = s(admin.call(&[b"CLIENT", b"LIST"]));
            let line = list.lines().find(|l| l.starts_with("id=") && !l.contains("cmd=client|list")).unwrap_or("").to_string();
            fields.push(format!("{:?} -> {}", step, cmd_field(&line)));
        }
        let log = s(admin.call(&[b"ACL", b"LOG", b"1"]));
        fields.push(format!("acl log -> {}", cmd_field(&log)));
        seen.push(fields);
    }
    assert_eq!(seen[0], seen[1], "redis / ours");
}

/// CLIENT LIST's buffer fields are the real ones: the running command's bytes and
/// arguments (`qbuf`, `argv-mem`, equal to Redis's), a half-sent command (`qbuf`), queued
/// commands (`multi-mem`), and output a client does not read (`obl`/`omem`, `tot-mem`).
#[test]
fn client_list_buffer_fields_are_real_like_redis() {
    use std::io::Write;
    let redis = Server::start_redis(&[]);
    let ours = Server::start(&[]);
    let field = |line: &str, name: &str| -> u64 {
        line.split_whitespace().find_map(|f| f.strip_prefix(&format!("{name}="))).and_then(|v| v.parse().ok()).unwrap_or(0)
    };
    for server in [&redis, &ours] {
        let mut me = server.raw();
        let info = s(me.call(&[b"CLIENT", b"INFO"]));
        assert_eq!((field(&info, "qbuf"), field(&info, "argv-mem")), (26, 10), "{info}");
        me.call(&[b"SET", b"big", &vec![b'x'; 100_000]]);
        let mut queued = server.raw();
        queued.call(&[b"CLIENT", b"SETNAME", b"queued"]);
        queued.call(&[b"MULTI"]);
        queued.call(&[b"SET", b"k", b"v"]);
        let mut half = server.raw();
        half.call(&[b"CLIENT", b"SETNAME", b"half"]);
        half.send(b"*3\r\n$3\r\nSET\r\n");
        let mut deaf = server.raw();
        deaf.call(&[b"CLIENT", b"SETNAME", b"deaf"]);
        let mut pipeline = Vec::new();
        for _ in 0..200 {
            pipeline.extend_from_slice(b"GET big\r\n");
        }
        deaf.stream.write_all(&pipeline).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        let list = s(me.call(&[b"CLIENT", b"LIST"]));
        let line = |name: &str| list.lines().find(|l| l.contains(&format!("name={name} "))).unwrap_or("").to_string();
        let (q, h, d) = (line("queued"), line("half"), line("deaf"));
        assert!(field(&q, "multi-mem") > 0 && q.contains("multi=1"), "{q}");
        // Redis has parsed the first argument already (argv-mem), we keep the bytes (qbuf).
        assert!(field(&h, "qbuf") + field(&h, "argv-mem") > 0, "{h}");
        assert!(field(&d, "obl") + field(&d, "omem") > 100_000, "{d}");
        assert!(field(&d, "tot-mem") > 100_000, "{d}");
    }
}
