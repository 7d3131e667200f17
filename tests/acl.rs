//! ACL users: rules, replies and permission checks compared with redis-server 7.0 (the same
//! users created on both, the same commands run as them, inside EVAL and MULTI too), the ACL
//! file, `user` lines in a config file, AUTH/HELLO/requirepass, and the log.

mod common;

use std::io::Write;

use common::diff::{Cmp, DiffPair, Got, Resp};
use common::Server;

/// Users both servers get before the permission table runs.
const USERS: &[&str] = &[
    "ACL SETUSER reader on >rpw ~* &* -@all +@read +@connection",
    "ACL SETUSER writer on >wpw ~app:* %R~ro:* %W~wo:* resetchannels &news.* -@all +@write +@read +eval +evalsha +publish +subscribe +psubscribe +multi +exec +discard",
    "ACL SETUSER nokeys on nopass resetkeys -@all +get +set +eval",
    "ACL SETUSER firstarg on nopass ~* -@all +select|0 +client|id +config|get",
    "ACL SETUSER selectors on nopass ~a* -@all +get (~b* +set) (~c* +get +del)",
    "ACL SETUSER cmdsonly on nopass ~* &* +@all -@dangerous -flushall +swapdb",
    "ACL SETUSER disabled off >dpw ~* +@all",
];

/// (user, password, commands run as that user). Connection 1 authenticates as the user.
const TABLE: &[(&str, &str, &[&str])] = &[
    ("reader", "rpw", &["GET k", "SET k v", "MGET a b", "HGETALL h", "PUBLISH c m", "ACL WHOAMI", "PING", "CONFIG GET maxmemory", "DEL k"]),
    (
        "writer",
        "wpw",
        &[
            "SET app:1 v",
            "GET app:1",
            "SET other v",
            "GET ro:1",
            "SET ro:1 v",
            "SET wo:1 v",
            "GET wo:1",
            "LPUSH wo:l x",
            "RPOPLPUSH app:l wo:l",
            "LMOVE ro:l wo:l LEFT RIGHT",
            "COPY app:1 wo:2",
            "APPEND wo:1 x",
            "MSET app:2 x other y",
            "PUBLISH news.today x",
            "PUBLISH sports x",
            "EVAL \"return redis.call('get', KEYS[1])\" 1 app:1",
            "EVAL \"return redis.call('get', KEYS[1])\" 1 other",
            "EVAL \"return redis.call('get', 'other')\" 0",
            "EVAL \"return redis.call('flushall')\" 0",
            "EVAL \"return redis.pcall('flushall')\" 0",
            "EVAL \"return redis.call('set', 'ro:x', '1')\" 0",
            "EVAL \"return redis.call('publish', 'sports', '1')\" 0",
            "EVAL \"return redis.call('publish', 'news.x', '1')\" 0",
            "ZUNIONSTORE app:z 2 app:a ro:b",
            "ZUNIONSTORE app:z 2 app:a other",
            "SORT app:l STORE other",
            "SORT app:l STORE app:sorted",
            "MULTI",
            "SET app:m 1",
            "GET other",
            "EXEC",
            "MULTI",
            "SET app:m 1",
            "EXEC",
        ],
    ),
    ("nokeys", "x", &["GET k", "SET k v", "EVAL \"return 1\" 0", "EVAL \"return 1\" 1 k", "PING"]),
    ("firstarg", "x", &["SELECT 0", "SELECT 1", "?CLIENT ID", "CLIENT GETNAME", "CONFIG GET maxmemory", "CONFIG SET maxmemory 0"]),
    ("selectors", "x", &["GET a1", "GET b1", "SET b1 v", "SET a1 v", "GET c1", "DEL c1", "DEL b1", "SET c1 v"]),
    ("cmdsonly", "x", &["FLUSHALL", "FLUSHDB", "KEYS *", "GET k", "SORT nosuch", "SWAPDB 0 1", "SET k v"]),
];

/// Runs a script like `DiffPair::assert_script`; lines starting with `@` describe command
/// rules, whose single-command part Redis prints in its hash table's (random) order: they
/// are compared with those rules sorted.
fn assert_rules_script(d: &mut DiffPair, script: &[&str]) {
    let mut diffs = Vec::new();
    for line in script {
        match line.strip_prefix('@') {
            Some(rest) => {
                let (_, _, args) = common::diff::parse_script_line(rest);
                let args = args.unwrap();
                let (a, b) = d.exchange(&args);
                let norm = |g: &Got| normalize_rules(&common::diff::show(g));
                if norm(&a) != norm(&b) {
                    diffs.push(format!("{rest}\n  redis: {}\n  ours:  {}", common::diff::show(&a), common::diff::show(&b)));
                }
            }
            None => diffs.extend(d.run(&[line]).into_iter().map(|x| x.to_string())),
        }
    }
    assert!(diffs.is_empty(), "{} differences:\n{}", diffs.len(), diffs.join("\n"));
}

/// Sorts the single-command rules that follow the categories in every rule list.
fn normalize_rules(text: &str) -> String {
    text.split("\\r\\n")
        .map(|line| {
            line.split_inclusive(['(', ')'])
                .map(|seg| {
                    let (body, end) = match seg.strip_suffix(['(', ')']) {
                        Some(b) => (b, &seg[b.len()..]),
                        None => (seg, ""),
                    };
                    let toks: Vec<&str> = body.split(' ').collect();
                    let Some(start) =
                        toks.iter().position(|t| *t == "+@all" || *t == "-@all" || t.ends_with("+@all") || t.ends_with("-@all"))
                    else {
                        return seg.to_string();
                    };
                    let cats = toks[start..].iter().take_while(|t| t.contains('@')).count();
                    let mut singles: Vec<&str> = toks[start + cats..].to_vec();
                    singles.sort();
                    let mut all: Vec<&str> = toks[..start + cats].to_vec();
                    all.extend(singles);
                    format!("{}{end}", all.join(" "))
                })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\\r\\n")
}

#[test]
fn acl_replies_match_redis() {
    let mut d = DiffPair::start();
    assert_rules_script(
        &mut d,
        &[
            "ACL SETUSER alice on >pw ~foo* %R~r* &chan* +@read +set -get +config|get",
            "@ACL GETUSER alice",
            "@ACL LIST",
            "ACL USERS",
            "ACL WHOAMI",
            "ACL SETUSER x",
            "ACL GETUSER x",
            "ACL SETUSER y on >a \"(+get ~a*)\" \"(+set ~b*)\"",
            "ACL GETUSER y",
            "ACL SETUSER y \"(+get\" \"~c*)\"",
            "ACL SETUSER y \"(+get\"",
            "ACL GETUSER y",
            "ACL SETUSER y clearselectors",
            "ACL GETUSER y",
            "ACL SETUSER z ~* ~foo",
            "ACL SETUSER z &* &foo",
            "ACL SETUSER z <nope",
            "ACL SETUSER z #abc",
            "ACL SETUSER z !abc",
            "ACL SETUSER z #30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4",
            "ACL SETUSER z !30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4",
            "ACL SETUSER z +nosuch",
            "ACL SETUSER z +@nosuch",
            "ACL SETUSER z bogus",
            "ACL SETUSER z +config|get|x",
            "ACL SETUSER z -select|0",
            "ACL SETUSER z +select|",
            "ACL SETUSER z +select|0 +select|1 +select",
            "@ACL GETUSER z",
            "ACL SETUSER z -select +select|0 +select|0 +get|x",
            "@ACL GETUSER z",
            "ACL SETUSER z %X~a",
            "ACL SETUSER z %~a",
            "ACL SETUSER z %RW~a %R~b %W~c %R~a",
            "@ACL GETUSER z",
            "ACL SETUSER z allkeys allchannels",
            "@ACL GETUSER z",
            "ACL SETUSER z reset",
            "ACL GETUSER z",
            "ACL SETUSER z nopass skip-sanitize-payload",
            "ACL GETUSER z",
            "ACL SETUSER w %RW~* +@all -@dangerous",
            "ACL GETUSER w",
            "ACL SETUSER w -@all +@hash +@string -hset",
            "ACL GETUSER w",
            "ACL SETUSER w +@all -flushall",
            "@ACL LIST",
            "ACL SETUSER \"a b\"",
            "ACL SETUSER a",
            "ACL GETUSER nosuch",
            "ACL DELUSER default",
            "ACL DELUSER a nosuch z",
            "ACL USERS",
            "ACL CAT",
            "ACL CAT nosuch",
            "~ACL CAT HASH",
            "~ACL CAT list",
            "ACL GENPASS 0",
            "ACL GENPASS 4097",
            "ACL GENPASS x",
            "ACL LOG x",
            "ACL LOG 1 2",
            "ACL LOAD",
            "ACL SAVE",
            "ACL HELP",
            "ACL NOSUCH",
            "ACL",
            "ACL DRYRUN nouser get x",
            "ACL DRYRUN alice nocmd",
            "ACL DRYRUN alice get",
            "ACL DRYRUN alice get foo",
            "ACL DRYRUN alice hget foo x",
            "ACL DRYRUN alice hget bar x",
            "ACL DRYRUN alice set r1 x",
            "ACL DRYRUN alice publish chan1 x",
            "ACL DRYRUN alice publish other x",
            "ACL DRYRUN alice config get maxmemory",
            "ACL DRYRUN alice config set maxmemory 0",
            "AUTH x",
            "AUTH nobody x",
            "AUTH alice wrong",
            "AUTH alice pw",
            "ACL WHOAMI",
            "AUTH default x",
        ],
    );
    // GENPASS: hex of the requested size.
    for (bits, len) in [("", 64), ("5", 2), ("256", 64), ("4096", 1024)] {
        let args: Vec<&str> = if bits.is_empty() { vec!["ACL", "GENPASS"] } else { vec!["ACL", "GENPASS", bits] };
        let got = d.ours_call(&args);
        let text = bulk(&got);
        assert_eq!(text.len(), len, "ACL GENPASS {bits}: {text}");
        assert!(text.bytes().all(|c| c.is_ascii_hexdigit()));
    }
}

fn bulk(got: &Got) -> String {
    match got {
        Ok(r) => match &r.value {
            Resp::Blob(_, b) => String::from_utf8_lossy(b).into_owned(),
            other => panic!("not a bulk: {other:?}"),
        },
        Err(e) => panic!("{e:?}"),
    }
}

#[test]
fn permission_table_matches_redis() {
    let mut d = DiffPair::start();
    d.assert_script("users", USERS);
    d.assert_script("data", &["SET app:1 one", "RPUSH app:l 3 1 2", "RPUSH ro:l a", "SET a1 x", "SET b1 y", "SET c1 z", "SET k v"]);
    for (user, pass, cmds) in TABLE {
        d.reconnect(1);
        d.on(1);
        let _ = d.check(&["AUTH", user, pass]).unwrap();
        let diffs = d.run(cmds);
        if !diffs.is_empty() {
            let list: Vec<String> = diffs.iter().map(|x| x.to_string()).collect();
            panic!("user {user}: {} differences:\n{}", diffs.len(), list.join("\n"));
        }
        // DRYRUN agrees with what just happened, as seen from an admin connection.
        d.on(0);
        for line in cmds.iter().filter(|c| !c.starts_with('?') && !c.starts_with("EVAL") && !["MULTI", "EXEC"].contains(c)) {
            let (_, _, args) = common::diff::parse_script_line(line);
            let Some(args) = args else { continue };
            let mut full: Vec<Vec<u8>> = vec![b"ACL".to_vec(), b"DRYRUN".to_vec(), user.as_bytes().to_vec()];
            full.extend(args);
            let _ = d.check(&full).unwrap();
        }
    }
    // A disabled user cannot authenticate, whatever the password.
    d.on(2);
    let _ = d.check(&["AUTH", "disabled", "dpw"]).unwrap();
    // The log: same entries in the same order (counts, reasons, contexts, objects, users).
    d.on(0);
    let ours = log_summary(&d.ours_call(&["ACL", "LOG", "100"]));
    let redis = log_summary(&d.redis_call(&["ACL", "LOG", "100"]));
    assert_eq!(ours, redis);
    assert!(ours.len() >= 20, "{ours:?}");
    assert_eq!(log_summary(&d.ours_call(&["ACL", "LOG"])).len(), 10);
    let _ = d.check(&["ACL", "LOG", "RESET"]).unwrap();
    let _ = d.check(&["ACL", "LOG"]).unwrap();
}

/// ACL LOG entries without the time and client fields.
fn log_summary(got: &Got) -> Vec<Vec<String>> {
    let Ok(r) = got else { panic!("{got:?}") };
    let Resp::Agg(_, entries) = &r.value else { panic!("{:?}", r.value) };
    entries
        .iter()
        .map(|e| {
            let Resp::Agg(_, fields) = e else { panic!("{e:?}") };
            fields
                .chunks(2)
                .filter(|kv| !matches!(&kv[0], Resp::Blob(_, k) if k == b"age-seconds" || k == b"client-info"))
                .map(|kv| format!("{:?}={:?}", kv[0], kv[1]))
                .collect()
        })
        .collect()
}

#[test]
fn changed_permissions_apply_to_queued_transactions_like_redis() {
    let mut d = DiffPair::start();
    d.assert_script(
        "setup",
        &["ACL SETUSER m on nopass ~* &* +@all", "1> AUTH m x", "1> MULTI", "1> GET a", "1> SET a b", "1> PUBLISH c x"],
    );
    d.assert_script(
        "revoke and exec",
        &["0> ACL SETUSER m -get resetkeys ~a %R~b resetchannels", "1> EXEC", "1> MULTI", "1> GET a", "1> SET b 1", "1> EXEC"],
    );
    let ours = log_summary(&d.ours_call(&["ACL", "LOG"]));
    let redis = log_summary(&d.redis_call(&["ACL", "LOG"]));
    assert_eq!(ours, redis);
}

#[test]
fn requirepass_and_default_user() {
    let mut d = DiffPair::start_with(&["--requirepass", "secret"], &["--requirepass", "secret"]);
    d.assert_script(
        "requirepass",
        &[
            "GET k",
            "ACL WHOAMI",
            "AUTH wrong",
            "AUTH default wrong",
            "HELLO 3 AUTH default wrong",
            "AUTH secret",
            "ACL GETUSER default",
            "ACL LIST",
            "CONFIG SET requirepass other",
            "ACL LIST",
            "1> GET k",
            "1> AUTH secret",
            "1> AUTH other",
            "1> GET k",
            "CONFIG SET requirepass \"\"",
            "ACL LIST",
            "2> GET k",
            "ACL SETUSER default off",
            "3> GET k",
            "3> AUTH default x",
            "3> HELLO 2 AUTH default x",
            "ACL SETUSER default on",
            "4> GET k",
        ],
    );
}

#[test]
fn deleting_a_user_disconnects_its_clients() {
    let server = Server::start(&[]);
    let mut admin = server.raw();
    assert_eq!(admin.call(&[b"ACL", b"SETUSER", b"temp", b"on", b">p", b"~*", b"+@all"]), b"+OK\r\n");
    let mut c = server.raw();
    assert_eq!(c.call(&[b"AUTH", b"temp", b"p"]), b"+OK\r\n");
    assert_eq!(c.call(&[b"PING"]), b"+PONG\r\n");
    assert_eq!(admin.call(&[b"ACL", b"DELUSER", b"temp"]), b":1\r\n");
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(c.is_closed(), "a deleted user's connection is closed");
    assert_eq!(admin.call(&[b"PING"]), b"+PONG\r\n");
}

/// A connection that deletes its own user is closed after the reply, and the rest of its
/// pipeline never runs (it could read any key while waiting to be closed). Clients of the
/// user on other connections, later in the same batch, are refused too.
#[test]
fn deleting_your_own_user_closes_your_connection_at_once() {
    let server = Server::start(&[]);
    let mut admin = server.raw();
    assert_eq!(admin.call(&[b"SET", b"secret", b"s"]), b"+OK\r\n");
    assert_eq!(admin.call(&[b"ACL", b"SETUSER", b"u", b"on", b">p", b"-@all", b"+acl|deluser", b"+ping", b"~k"]), b"+OK\r\n");
    let mut c = server.raw();
    assert_eq!(c.call(&[b"AUTH", b"u", b"p"]), b"+OK\r\n");
    let mut other = server.raw();
    assert_eq!(other.call(&[b"AUTH", b"u", b"p"]), b"+OK\r\n");
    c.send(b"ACL DELUSER u\r\nGET secret\r\nACL SETUSER evil on nopass ~* +@all\r\n");
    assert_eq!(c.read_reply(), b":1\r\n");
    assert!(c.is_closed(), "the connection that deleted its own user is closed (nothing more answered)");
    assert!(other.is_closed(), "another connection of the deleted user is closed");
    assert_eq!(admin.call(&[b"ACL", b"USERS"]), b"*1\r\n$7\r\ndefault\r\n");
    // With only unrestricted users left, a deleted user's client still runs nothing.
    assert_eq!(admin.call(&[b"ACL", b"SETUSER", b"w", b"on", b">p", b"+@all", b"~*", b"&*"]), b"+OK\r\n");
    let mut w = server.raw();
    assert_eq!(w.call(&[b"AUTH", b"w", b"p"]), b"+OK\r\n");
    w.send(b"ACL DELUSER w\r\nGET secret\r\n");
    assert_eq!(w.read_reply(), b":1\r\n");
    assert!(w.is_closed());
    assert_eq!(admin.call(&[b"ACL", b"USERS"]), b"*1\r\n$7\r\ndefault\r\n");
}

#[test]
fn usernames_with_whitespace_and_shard_channel_rules_match_redis() {
    let mut d = DiffPair::start();
    d.assert_script(
        "usernames",
        &[
            "ACL SETUSER \"a\\nb\" on",
            "ACL SETUSER \"a\\tb\" on",
            "ACL SETUSER \"a\\rb\" on",
            "ACL SETUSER \"a\\x0bb\" on",
            "ACL SETUSER \"a\\x0cb\" on",
            "ACL SETUSER \"a b\" on",
            "ACL USERS",
        ],
    );
    // A shard channel is a channel for ACL: `&` patterns decide, SUNSUBSCRIBE needs nothing.
    d.assert_script(
        "shard channels",
        &[
            "ACL SETUSER u on >p +@all &a*",
            "ACL DRYRUN u spublish a1 m",
            "ACL DRYRUN u spublish b1 m",
            "ACL DRYRUN u ssubscribe a1 b1",
            "AUTH u p",
            "SPUBLISH a1 m",
            "SPUBLISH x m",
            "SUNSUBSCRIBE a1",
            "AUTH default x",
        ],
    );
}

#[test]
fn acl_file_load_save_and_config_users() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("users.acl");
    std::fs::write(&path, "user default on nopass ~* &* +@all\nuser alice on >pw ~a* -@all +get\n").unwrap();
    let path_s = path.to_str().unwrap().to_string();
    let server = Server::start(&["--aclfile", &path_s]);
    let mut admin = server.raw();
    let mut alice = server.raw();
    assert_eq!(alice.call(&[b"AUTH", b"alice", b"pw"]), b"+OK\r\n");
    assert_eq!(alice.call(&[b"GET", b"a1"]), b"$-1\r\n");
    assert_eq!(alice.call(&[b"GET", b"b1"]), b"-NOPERM this user has no permissions to access one of the keys used as arguments\r\n");
    // SAVE writes every user; LOAD of a file with an error changes nothing.
    assert_eq!(admin.call(&[b"ACL", b"SETUSER", b"bob", b"on", b">bpw", b"~b*", b"+@all"]), b"+OK\r\n");
    assert_eq!(admin.call(&[b"ACL", b"SAVE"]), b"+OK\r\n");
    let saved = std::fs::read_to_string(&path).unwrap();
    assert!(saved.contains("user bob on #"), "{saved}");
    assert!(saved.contains("user alice on #"), "{saved}");
    std::fs::write(&path, "user default on nopass ~* &* +@all\nuser carol on +nosuch\n").unwrap();
    let err = String::from_utf8(admin.call(&[b"ACL", b"LOAD"])).unwrap();
    assert_eq!(
        err,
        format!("-ERR {path_s}:2: Error in applying operation '+nosuch': Unknown command or category name in ACL. WARNING: ACL errors detected, no change to the previously active ACL rules was performed\r\n")
    );
    assert_eq!(admin.call(&[b"ACL", b"USERS"]), b"*3\r\n$5\r\nalice\r\n$3\r\nbob\r\n$7\r\ndefault\r\n");
    // A good file replaces the users; alice's connection is gone with her.
    std::fs::write(&path, saved.replace("user alice", "user alicia")).unwrap();
    assert_eq!(admin.call(&[b"ACL", b"LOAD"]), b"+OK\r\n");
    assert_eq!(admin.call(&[b"ACL", b"USERS"]), b"*3\r\n$6\r\nalicia\r\n$3\r\nbob\r\n$7\r\ndefault\r\n");
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(alice.is_closed());
    drop(server);

    // `user` lines in a config file.
    let conf = dir.path().join("v.conf");
    let mut f = std::fs::File::create(&conf).unwrap();
    writeln!(f, "user default on >adminpw ~* &* +@all").unwrap();
    writeln!(f, "user app on >apppw ~app:* -@all +@read +set").unwrap();
    drop(f);
    let server = Server::start(&[conf.to_str().unwrap()]);
    let mut c = server.raw();
    assert_eq!(c.call(&[b"GET", b"x"]), b"-NOAUTH Authentication required.\r\n");
    assert_eq!(c.call(&[b"AUTH", b"app", b"apppw"]), b"+OK\r\n");
    assert_eq!(c.call(&[b"SET", b"app:1", b"v"]), b"+OK\r\n");
    assert_eq!(c.call(&[b"FLUSHALL"]), b"-NOPERM this user has no permissions to run the 'flushall' command\r\n");
    assert_eq!(c.call(&[b"AUTH", b"adminpw"]), b"+OK\r\n");
    assert_eq!(c.call(&[b"ACL", b"WHOAMI"]), b"$7\r\ndefault\r\n");

    // A bad ACL file stops the server at startup, as in Redis.
    std::fs::write(&path, "user x on +nosuch\n").unwrap();
    let status = Server::exit_status_at_startup(&["--aclfile", &path_s]);
    assert!(status.is_some_and(|s| !s.success()), "a server with a bad ACL file must stop at once: {status:?}");
}

#[test]
fn restricted_default_user_does_not_stop_log_replay() {
    let mut server = Server::start(&["--appendonly", "yes"]);
    let mut c = server.raw();
    assert_eq!(c.call(&[b"SET", b"k", b"v"]), b"+OK\r\n");
    assert_eq!(c.call(&[b"EVAL", b"return redis.call('incr', KEYS[1])", b"1", b"n"]), b":1\r\n");
    drop(c);
    let conf = server.dir.path().join("v.conf");
    std::fs::write(&conf, "user default on nopass ~* -@all +get\n").unwrap();
    let conf_s = conf.to_str().unwrap().to_string();
    server.restart(&[&conf_s, "--appendonly", "yes"]);
    let mut c = server.raw();
    assert_eq!(c.call(&[b"GET", b"k"]), b"$1\r\nv\r\n");
    assert_eq!(c.call(&[b"GET", b"n"]), b"$1\r\n1\r\n");
    assert_eq!(c.call(&[b"SET", b"k", b"w"]), b"-NOPERM this user has no permissions to run the 'set' command\r\n");
}

#[test]
fn acl_log_records_script_and_auth_denials() {
    let mut d = DiffPair::start();
    d.assert_script(
        "log",
        &[
            "ACL SETUSER bob on nopass ~k* +@all -flushall &*",
            "1> AUTH bob x",
            "1> EVAL \"return redis.call('set','zz','1')\" 0",
            "1> EVAL \"return redis.call('flushall')\" 0",
            "1> EVAL \"return redis.pcall('flushall')\" 0",
            "1> EVAL \"return redis.call('set',KEYS[1],'1')\" 1 zz",
            "1> EVAL \"return redis.call('set',KEYS[1],'1')\" 1 kk",
            "2> AUTH bob wrong",
            "2> AUTH nobody wrong",
        ],
    );
    let ours = log_summary(&d.ours_call(&["ACL", "LOG"]));
    let redis = log_summary(&d.redis_call(&["ACL", "LOG"]));
    assert_eq!(ours, redis);
    let _ = d.check_with(&["ACL", "LOG", "0"], Cmp::Exact).unwrap();
}

#[test]
fn subscribers_that_lose_a_channel_are_disconnected_like_redis() {
    let mut d = DiffPair::start();
    d.assert_script(
        "subscribe",
        &[
            "ACL SETUSER subu on nopass ~* &news* +@all",
            "1> AUTH subu x",
            "1> SUBSCRIBE news1",
            "2> AUTH subu x",
            "2> PSUBSCRIBE news*",
            // Still allowed: nobody goes.
            "0> ACL SETUSER subu &news*",
            "1> PING",
            "2> PING",
            // The pattern is no longer allowed as such (news1 still is).
            "0> ACL SETUSER subu resetchannels &news1",
            "1> PING",
        ],
    );
    // Connection 2 was closed by both servers.
    let (r, o) = d.conns(2);
    assert!(r.closed_within(std::time::Duration::from_secs(2)), "redis-server kept the subscriber");
    assert!(o.closed_within(std::time::Duration::from_secs(2)), "the subscriber that lost its pattern is still connected");
}

/// ACL files written for Redis name commands Vermilion does not implement (`-xadd`): such
/// rules are accepted, and malformed `cmd|sub` rules get Redis's error for each form.
#[test]
fn rules_naming_redis_only_commands_and_malformed_subcommands_match_redis() {
    let mut d = DiffPair::start();
    let mut script = Vec::new();
    for rule in [
        "+@all -xadd",
        "-cluster|info",
        "+script|debug",
        "+module|list",
        "+xadd",
        "+Cluster|Info",
        "+xadd|x",
        "+cluster|nosuch",
        "+xgroup|",
        "+config|",
        "+acl|",
        "+get|x|y",
        "+config|get|x",
        "-select|0",
        "+get|",
        "+nosuch",
    ] {
        script.push(format!("ACL SETUSER u reset {rule}"));
    }
    let lines: Vec<&str> = script.iter().map(|s| s.as_str()).collect();
    d.assert_script("rules", &lines);
}

/// `%` key permissions parsed as Redis's loop does, arity of ACL CAT/GENPASS, and HELLO
/// applying each option as it reads it (a name set before a failing AUTH stays).
#[test]
fn key_permission_syntax_arity_and_hello_option_order_match_redis() {
    let mut d = DiffPair::start();
    let mut script: Vec<String> = Vec::new();
    for rule in ["%R", "%W", "%RW", "%RR~a", "%WW~a", "%RWR~a", "%R~", "%~a", "%rw~x", "%WR~x*", "%", "%R~a~b", "%Rx~a"] {
        script.push(format!("ACL SETUSER u reset {rule}"));
        script.push("ACL LIST".into());
    }
    script.extend(["ACL DELUSER u", "ACL CAT read x", "ACL GENPASS 8 x"].map(String::from));
    for hello in [
        "HELLO 2 SETNAME nm AUTH u wrong",
        "HELLO 2 AUTH u wrong SETNAME other",
        "HELLO 2 SETNAME n2 SETNAME \"a b\"",
        "HELLO 4 SETNAME n3",
        "HELLO 2 SETNAME n4 BOGUS",
    ] {
        script.push(hello.into());
        script.push("CLIENT GETNAME".into());
    }
    let lines: Vec<&str> = script.iter().map(|s| s.as_str()).collect();
    d.assert_script("syntax", &lines);
}

/// `redis.acl_check_cmd` answers for the script's user (commands and keys), as Redis does.
#[test]
fn acl_check_cmd_answers_for_the_scripts_user() {
    let mut d = DiffPair::start();
    d.assert_script(
        "acl_check_cmd",
        &[
            "ACL SETUSER u on >p +@all -set ~a*",
            "1> AUTH u p",
            "1> EVAL \"return {redis.acl_check_cmd('get','a1'), redis.acl_check_cmd('get','b1'), redis.acl_check_cmd('set','a1','v'), redis.acl_check_cmd('config','get','x')}\" 0",
            "1> EVAL \"return redis.acl_check_cmd('nosuch')\" 0",
            "1> EVAL \"return redis.acl_check_cmd('config','nosuch')\" 0",
            "EVAL \"return redis.acl_check_cmd('set','b1','v')\" 0",
        ],
    );
}
