//! CONFIG SET/GET compared with Redis 7.0 byte for byte, on the cases a differential sweep of
//! every parameter found different: parameter names and aliases in one call, the order of
//! the checks, strict integers, `save`, the flags of `shutdown-on-sig*`, empty memory
//! values, what GET prints back, and the parameters Redis validates specially. Also MODULE,
//! whose LIST client libraries call to see what a server offers.

mod common;

use common::diff::DiffPair;

#[test]
fn config_set_and_get_match_redis() {
    let mut d = DiffPair::start();
    d.assert_script(
        "names and aliases",
        &[
            // A parameter and its alias are two names: both set (the later wins), both got.
            "CONFIG SET hash-max-ziplist-entries 100 hash-max-listpack-entries 200",
            // (Redis lists a CONFIG GET in its hash table's order: compared as pairs.)
            "~~CONFIG GET hash-max-listpack-entries hash-max-ziplist-entries",
            "~~CONFIG GET replica-priority slave-priority",
            "CONFIG GET maxmemory MAXMEMORY",
            "CONFIG SET hz 5 HZ 6",
            // Names are checked before values: the duplicate is reported, not the bad value.
            "CONFIG SET hz abc hz 20",
            "CONFIG SET hz abc nosuch 1",
            "CONFIG SET databases 3 nosuch 1",
            "CONFIG SET nosuch 1 databases 3",
            "CONFIG SET hz 7 databases 3",
            "CONFIG GET hz",
        ],
    );
    d.assert_script(
        "values",
        &[
            "CONFIG SET hz +5",
            "CONFIG SET timeout 01",
            "CONFIG SET slowlog-max-len -0",
            "CONFIG SET save \"0 0\"",
            "CONFIG SET save \"3600 1  300 100\"",
            "CONFIG SET save \"1 \"",
            "CONFIG GET save",
            "CONFIG SET save \"03600 +1\"",
            "CONFIG GET save",
            "CONFIG SET save \"\"",
            "CONFIG GET save",
            "CONFIG SET shutdown-on-sigint \"save now\"",
            "CONFIG GET shutdown-on-sigint",
            "CONFIG SET shutdown-on-sigint \"NOW force Save\"",
            "CONFIG GET shutdown-on-sigint",
            "CONFIG SET shutdown-on-sigint \"save nosave\"",
            "CONFIG SET shutdown-on-sigint \"\"",
            "CONFIG SET shutdown-on-sigterm default",
            "CONFIG GET shutdown-on-sigterm",
            "CONFIG SET maxmemory \"\"",
            "CONFIG GET maxmemory",
            "CONFIG SET maxmemory kb",
            "CONFIG SET maxmemory 99999999999999999999kb",
            "CONFIG SET oom-score-adj relative",
            "CONFIG GET oom-score-adj",
            "CONFIG SET repl-backlog-size 1000",
            "CONFIG GET repl-backlog-size",
            "CONFIG SET maxmemory-clients 0%",
            "CONFIG GET maxmemory-clients",
            "CONFIG SET maxmemory-clients +5%",
            "CONFIG SET dbfilename a/b.rdb",
            "CONFIG SET proc-title-template {unknown}",
            "CONFIG SET proc-title-template {title}",
            "CONFIG SET proc-title-template \"{title} {port}\"",
            "CONFIG SET proc-title-template \"{{x {title}\"",
            "CONFIG SET proc-title-template \"x {\"",
            "CONFIG GET proc-title-template",
            "CONFIG SET cluster-announce-hostname \"bad host\"",
            "CONFIG SET cluster-announce-hostname good-host.example",
            "CONFIG SET client-output-buffer-limit \"normal 0 0 0 \"",
            "CONFIG SET client-output-buffer-limit \"normal 0 0 2147483648\"",
            "CONFIG SET client-output-buffer-limit \"normal 0 0 4294967296\"",
            "CONFIG GET client-output-buffer-limit",
            "CONFIG SET oom-score-adj-values \"0  200 800\"",
            "CONFIG SET latency-tracking-info-percentiles \" 50  99 \"",
            "CONFIG SET latency-tracking-info-percentiles 0x10",
            "CONFIG GET latency-tracking-info-percentiles",
            "CONFIG SET latency-tracking-info-percentiles 1e400",
        ],
    );
}

#[test]
fn module_commands_match_redis() {
    let mut d = DiffPair::start();
    d.assert_script(
        "module",
        &[
            "MODULE LIST",
            "MODULE HELP",
            "MODULE LOAD /nonexistent.so",
            "MODULE LOADEX /nonexistent.so CONFIG a b ARGS x",
            "MODULE UNLOAD foo",
            "MODULE",
            "MODULE foo",
            "MODULE LIST x",
            "MODULE LOAD",
        ],
    );
    // With the protection lifted, the answers of a server that has no such module.
    let mut d = DiffPair::start_with(&["--enable-module-command", "yes"], &["--enable-module-command", "yes"]);
    d.assert_script("module allowed", &["MODULE LOAD /nonexistent.so a b", "MODULE LOADEX /nonexistent.so bogus", "MODULE UNLOAD foo"]);
}

/// CONFIG SET port and bind listen again at once, as Redis does: new connections go to the
/// new port (the old one refuses them; connected clients stay), and a port or address that
/// cannot be listened on fails the whole call with Redis's text, every parameter of it kept.
#[test]
fn config_set_port_and_bind_rebind_and_roll_back_like_redis() {
    let redis = common::Server::start_redis(&["--bind", "127.0.0.1"]);
    let ours = common::Server::start(&["--bind", "127.0.0.1"]);
    // A port someone else listens on.
    let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = holder.local_addr().unwrap().port().to_string();
    let mut texts = Vec::new();
    for server in [&redis, &ours] {
        let mut c = server.raw();
        let mut got = Vec::new();
        let call = |c: &mut common::RawConn, args: &[&str]| {
            let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            String::from_utf8_lossy(&c.call(&args)).into_owned()
        };
        got.push(call(&mut c, &["CONFIG", "SET", "maxmemory", "0"]));
        got.push(call(&mut c, &["CONFIG", "SET", "port", &taken, "maxmemory", "10mb"]));
        got.push(call(&mut c, &["CONFIG", "GET", "maxmemory"]));
        got.push(call(&mut c, &["CONFIG", "SET", "bind", "10.255.255.1"]));
        got.push(call(&mut c, &["CONFIG", "GET", "bind"]));
        let fresh = common::free_port();
        got.push(call(&mut c, &["CONFIG", "SET", "port", &fresh.to_string()]));
        // The connection that asked goes on; new ones come on the new port only.
        got.push(call(&mut c, &["PING"]));
        let mut n = common::RawConn::connect(fresh);
        got.push(call(&mut n, &["PING"]));
        assert!(std::net::TcpStream::connect(("127.0.0.1", server.port)).is_err(), "the old port still accepts");
        texts.push(got);
    }
    assert_eq!(texts[0], texts[1], "redis / ours");
}
