//! Admin and debugging commands against redis-server 7.0: DEBUG PROTOCOL, MEMORY, LATENCY,
//! SAVE/BGSAVE/LASTSAVE, CONFIG REWRITE, DEBUG CHANGE-REPL-ID.

mod common;

use std::time::{Duration, Instant};

use common::diff::{Cmp, DiffPair, Got, Resp};
use common::Server;

#[test]
fn debug_protocol_and_help_texts_match_redis() {
    let mut d = DiffPair::start_with(&["--enable-debug-command", "yes"], &[]);
    let types =
        ["string", "integer", "double", "bignum", "null", "array", "set", "map", "attrib", "push", "verbatim", "true", "false", "nosuch"];
    for proto in [2u8, 3] {
        let _ = d.hello(proto).unwrap_or_else(|e| panic!("{e}"));
        for t in types {
            if t == "push" && proto == 3 {
                // Two frames: the push, then the real reply.
                d.check_raw(b"DEBUG PROTOCOL push\r\n", 2, Cmp::Exact).unwrap_or_else(|e| panic!("{e}"));
                continue;
            }
            if t == "attrib" && proto == 3 {
                // The attribute frame, then the reply it annotates.
                d.check_raw(b"DEBUG PROTOCOL attrib\r\n", 2, Cmp::Exact).unwrap_or_else(|e| panic!("{e}"));
                continue;
            }
            let _ = d.check(&["DEBUG", "PROTOCOL", t]).unwrap_or_else(|e| panic!("RESP{proto}: {e}"));
        }
    }
    let _ = d.hello(2).unwrap_or_else(|e| panic!("{e}"));
    d.assert_script(
        "help and errors",
        &[
            "MEMORY HELP",
            "LATENCY HELP",
            "MEMORY USAGE nosuch",
            "MEMORY USAGE",
            "MEMORY USAGE k SAMPLES",
            "MEMORY USAGE k SAMPLES x",
            "MEMORY USAGE k EXTRA",
            "MEMORY DOCTOR",
            "MEMORY PURGE",
            "MEMORY NOSUCH",
            "LATENCY LATEST",
            "LATENCY HISTORY nosuch",
            "LATENCY RESET",
            "LATENCY RESET command",
            "LATENCY DOCTOR",
            "LATENCY HISTORY",
            "LATENCY LATEST x",
            "BGSAVE x",
            "DEBUG CHANGE-REPL-ID",
        ],
    );
}

#[test]
fn latency_monitor_records_slow_commands_like_redis() {
    let mut d = DiffPair::start_with(&["--enable-debug-command", "yes"], &[]);
    d.assert_script(
        "latency",
        &[
            "LATENCY LATEST",
            "DEBUG SLEEP 0.03",
            "LATENCY LATEST",
            "CONFIG SET latency-monitor-threshold 10",
            "DEBUG SLEEP 0.03",
            "?LATENCY LATEST",
            "?LATENCY HISTORY command",
            "LATENCY RESET nosuch",
            "LATENCY RESET command",
            "LATENCY LATEST",
        ],
    );
    // The figures themselves: one sample of about 30 ms.
    let _ = d.ours_call(&["DEBUG", "SLEEP", "0.03"]);
    let Ok(r) = d.ours_call(&["LATENCY", "LATEST"]) else { panic!() };
    let Resp::Agg(_, rows) = &r.value else { panic!("{:?}", r.value) };
    let Resp::Agg(_, row) = &rows[0] else { panic!() };
    let ms = |v: &Resp| match v {
        Resp::Line(b':', n) => String::from_utf8_lossy(n).parse::<i64>().unwrap(),
        other => panic!("{other:?}"),
    };
    assert!((30..200).contains(&ms(&row[2])), "{row:?}");
}

fn int(got: &Got) -> i64 {
    match got {
        Ok(r) => match &r.value {
            Resp::Line(b':', n) => String::from_utf8_lossy(n).parse().unwrap(),
            other => panic!("not an integer: {other:?}"),
        },
        Err(e) => panic!("{e:?}"),
    }
}

#[test]
fn memory_usage_is_an_honest_estimate() {
    let mut d = DiffPair::start();
    let big = "x".repeat(1 << 20);
    let fields: Vec<String> = (0..5000).map(|i| format!("field:{i} value:{i}")).collect();
    d.assert_script("data", &[&format!("SET big {big}"), &format!("HSET h {}", fields.join(" ")), "RPUSH l a b c"]);
    let usage = int(&d.ours_call(&["MEMORY", "USAGE", "big"]));
    assert!((1 << 20..(1 << 20) + 4096).contains(&usage), "1 MB string: {usage}");
    for key in ["h", "l"] {
        let ours = int(&d.ours_call(&["MEMORY", "USAGE", key, "SAMPLES", "0"])) as f64;
        let redis = int(&d.redis_call(&["MEMORY", "USAGE", key, "SAMPLES", "0"])) as f64;
        assert!(ours / redis > 0.5 && ours / redis < 2.0, "MEMORY USAGE {key}: ours {ours}, redis {redis}");
    }
    // MEMORY STATS has Redis's fields, in Redis's order.
    let names = |got: Got| -> Vec<Vec<u8>> {
        let Ok(r) = got else { panic!() };
        let Resp::Agg(_, items) = r.value else { panic!() };
        items.chunks(2).map(|kv| if let Resp::Blob(_, k) = &kv[0] { k.clone() } else { panic!("{kv:?}") }).collect()
    };
    assert_eq!(names(d.ours_call(&["MEMORY", "STATS"])), names(d.redis_call(&["MEMORY", "STATS"])));
    // INFO memory has Redis's fields, in Redis's order.
    let info = |got: Got| -> Vec<(String, String)> {
        let Ok(r) = got else { panic!() };
        let Resp::Blob(_, text) = r.value else { panic!() };
        let text = String::from_utf8(text).unwrap();
        text.lines().filter_map(|l| l.split_once(':')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
    };
    let ours = info(d.ours_call(&["INFO", "memory"]));
    let key_names = |f: &[(String, String)]| f.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
    assert_eq!(key_names(&ours), key_names(&info(d.redis_call(&["INFO", "memory"]))));
    // The peak stays when the data goes; the machine's memory is the kernel's figure.
    let field = |f: &[(String, String)], name: &str| f.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).unwrap();
    let peak_before: u64 = field(&ours, "used_memory_peak").parse().unwrap();
    assert!(peak_before >= field(&ours, "used_memory").parse::<u64>().unwrap());
    let _ = d.ours_call(&["FLUSHALL"]);
    let after = info(d.ours_call(&["INFO", "memory"]));
    assert_eq!(field(&after, "used_memory_peak").parse::<u64>().unwrap(), peak_before);
    let perc = field(&after, "used_memory_peak_perc");
    assert!(perc.ends_with('%') && perc.trim_end_matches('%').parse::<f64>().unwrap() < 100.0, "{perc}");
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kb: u64 = meminfo.lines().find_map(|l| l.strip_prefix("MemTotal:")).unwrap().trim().trim_end_matches("kB").trim().parse().unwrap();
    assert_eq!(field(&after, "total_system_memory").parse::<u64>().unwrap(), kb * 1024);
}

#[test]
fn save_and_bgsave_write_the_rdb_file_beside_the_log() {
    let mut server = Server::start(&["--appendonly", "yes"]);
    let mut c = server.raw();
    for i in 0..100 {
        c.call(&[b"SET", format!("k{i}").as_bytes(), b"v"]);
    }
    let before: i64 = String::from_utf8(c.call(&[b"LASTSAVE"])).unwrap()[1..].trim().parse().unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(c.call(&[b"SAVE"]), b"+OK\r\n");
    let after: i64 = String::from_utf8(c.call(&[b"LASTSAVE"])).unwrap()[1..].trim().parse().unwrap();
    assert!(after > before, "LASTSAVE {before} -> {after}");
    assert!(server.dir.path().join("dump.rdb").exists());
    // As in Redis, the RDB file is not the log: no rewrite happened.
    let info = String::from_utf8(c.call(&[b"INFO", b"persistence"])).unwrap();
    assert!(info.contains("aof_rewrites:0") && info.contains("rdb_saves:1"), "{info}");
    std::fs::remove_file(server.dir.path().join("dump.rdb")).unwrap();
    assert_eq!(c.call(&[b"BGSAVE"]), b"+Background saving started\r\n");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info = String::from_utf8(c.call(&[b"INFO", b"persistence"])).unwrap();
        if info.contains("rdb_saves:2") && info.contains("rdb_bgsave_in_progress:0") {
            break;
        }
        assert!(Instant::now() < deadline, "BGSAVE never finished: {info}");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(server.dir.path().join("dump.rdb").exists());
    drop(c);
    server.restart(&["--appendonly", "yes"]);
    let mut c = server.raw();
    assert_eq!(c.call(&[b"DBSIZE"]), b":100\r\n");
    assert_eq!(c.call(&[b"CONFIG", b"SET", b"appendonly", b"no"]), b"+OK\r\n");
    assert_eq!(c.call(&[b"SAVE"]), b"+OK\r\n");
}

#[test]
fn config_rewrite_keeps_comments_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("vermilion.conf");
    std::fs::write(
        &conf,
        "# Vermilion test config\nmaxmemory 100mb\n# eviction\nmaxmemory-policy noeviction\nsave 900 1\nsave 300 10\nappendonly no\n",
    )
    .unwrap();
    let conf_s = conf.to_str().unwrap().to_string();
    let mut server = Server::start(&[&conf_s]);
    let mut c = server.raw();
    for (k, v) in
        [("maxmemory", "200mb"), ("maxmemory-policy", "allkeys-lru"), ("hz", "25"), ("save", "60 5"), ("notify-keyspace-events", "KEA")]
    {
        assert_eq!(c.call(&[b"CONFIG", b"SET", k.as_bytes(), v.as_bytes()]), b"+OK\r\n", "{k}");
    }
    assert_eq!(c.call(&[b"ACL", b"SETUSER", b"app", b"on", b">pw", b"~app:*", b"+get"]), b"+OK\r\n");
    assert_eq!(c.call(&[b"CONFIG", b"REWRITE"]), b"+OK\r\n");
    let text = std::fs::read_to_string(&conf).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        &lines[..7],
        &["# Vermilion test config", "maxmemory 200mb", "# eviction", "maxmemory-policy allkeys-lru", "save 60 5", "", "appendonly no"],
        "{text}"
    );
    assert!(lines.contains(&"# Generated by CONFIG REWRITE") && lines.contains(&"hz 25"), "{text}");
    assert!(lines.contains(&"notify-keyspace-events \"AKE\""), "{text}");
    assert!(lines.iter().any(|l| l.starts_with("user app on #")), "{text}");
    drop(c);
    server.restart(&[&conf_s]);
    let mut c = server.raw();
    assert_eq!(c.call(&[b"CONFIG", b"GET", b"maxmemory"]), b"*2\r\n$9\r\nmaxmemory\r\n$9\r\n209715200\r\n");
    assert_eq!(c.call(&[b"CONFIG", b"GET", b"hz"]), b"*2\r\n$2\r\nhz\r\n$2\r\n25\r\n");
    assert_eq!(c.call(&[b"CONFIG", b"GET", b"save"]), b"*2\r\n$4\r\nsave\r\n$4\r\n60 5\r\n");
    let mut app = server.raw();
    assert_eq!(app.call(&[b"AUTH", b"app", b"pw"]), b"+OK\r\n");
    // A second rewrite with nothing changed leaves the file as it is (but for the port the
    // test harness gives each start).
    assert_eq!(c.call(&[b"CONFIG", b"REWRITE"]), b"+OK\r\n");
    let no_port = |t: &str| t.lines().filter(|l| !l.starts_with("port ")).map(str::to_string).collect::<Vec<_>>();
    assert_eq!(no_port(&std::fs::read_to_string(&conf).unwrap()), no_port(&text));
    // Without a config file there is nothing to rewrite.
    let bare = Server::start(&[]);
    assert_eq!(bare.raw().call(&[b"CONFIG", b"REWRITE"]), b"-ERR The server is running without a config file\r\n");
}

#[test]
fn change_repl_id_starts_a_new_history() {
    let server = Server::start(&[]);
    let mut c = server.raw();
    let id = |c: &mut common::RawConn| {
        let info = String::from_utf8(c.call(&[b"INFO", b"replication"])).unwrap();
        info.lines().find_map(|l| l.strip_prefix("master_replid:")).unwrap().trim().to_string()
    };
    let before = id(&mut c);
    assert_eq!(c.call(&[b"DEBUG", b"CHANGE-REPL-ID"]), b"+OK\r\n");
    let after = id(&mut c);
    assert_ne!(before, after);
    assert_eq!(after.len(), 40);
}

#[test]
fn debug_populate_matches_redis_and_is_logged() {
    let mut d = DiffPair::start_with(&["--enable-debug-command", "yes"], &[]);
    d.assert_script(
        "DEBUG POPULATE",
        &[
            "SET key:3 keep",
            "WATCH key:12",
            "DEBUG POPULATE 10",
            "DEBUG POPULATE 3 pfx 12",
            "DEBUG POPULATE 0",
            "DEBUG POPULATE -1",
            "DEBUG POPULATE abc",
            "DEBUG POPULATE 1 x abc",
            "DEBUG POPULATE 1 x -2",
            "DEBUG POPULATE 1 2 3 4",
            "DBSIZE",
            "GET key:3",
            "GET key:9",
            "GET pfx:2",
            "STRLEN pfx:0",
            "OBJECT ENCODING pfx:1",
            "DEBUG POPULATE 1 y 50",
            "OBJECT ENCODING y:0",
            // A key it creates aborts the transaction watching it.
            "DEBUG POPULATE 13",
            "MULTI",
            "PING",
            "EXEC",
            "GET key:12",
        ],
    );
    // Redis 7.0 answers OOM only when its table cannot grow; a count this machine could
    // never hold kills it for memory. Here the answer comes at once.
    let mut server = Server::start(&["--appendonly", "yes"]);
    let mut c = server.raw();
    assert_eq!(c.call(&[b"DEBUG", b"POPULATE", b"1000000000000"]), b"-ERR OOM in dictTryExpand\r\n");
    assert_eq!(c.call(&[b"DEBUG", b"POPULATE", b"100000000", b"x", b"500000000"]), b"-ERR OOM in dictTryExpand\r\n");
    assert_eq!(
        c.call(&[b"DEBUG", b"POPULATE", b"1", b"x", b"9223372036854775807"]),
        b"-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n"
    );
    assert_eq!(c.call(&[b"DBSIZE"]), b":0\r\n");
    // What it creates is logged (Redis logs nothing of it): it is all there after a restart.
    assert_eq!(c.call(&[b"SET", b"big:7", b"mine"]), b"+OK\r\n");
    assert_eq!(c.call(&[b"DEBUG", b"POPULATE", b"2500", b"big", b"9"]), b"+OK\r\n");
    drop(c);
    server.restart(&["--appendonly", "yes"]);
    let mut c = server.raw();
    assert_eq!(c.call(&[b"DBSIZE"]), b":2500\r\n");
    assert_eq!(c.call(&[b"GET", b"big:7"]), b"$4\r\nmine\r\n");
    assert_eq!(c.call(&[b"GET", b"big:2499"]), b"$9\r\nvalue:249\r\n");
    assert_eq!(c.call(&[b"GET", b"big:0"]), b"$9\r\nvalue:0\x00\x00\r\n");
}

/// Redis's hidden test knobs are read and set by name but never listed by a pattern.
#[test]
fn hidden_parameters_are_not_listed_by_patterns() {
    let mut d = DiffPair::start();
    d.assert_script(
        "hidden",
        &[
            "CONFIG GET key-load-delay",
            "CONFIG GET loading-process-events-interval-bytes",
            "CONFIG GET rdb-key-save-delay",
            // Redis lists a pattern's matches in hash order.
            "~~CONFIG GET *load*",
            "~~CONFIG GET *delay*",
            "CONFIG SET key-load-delay -5",
            "CONFIG SET key-load-delay 99999999999",
            "CONFIG SET rdb-key-save-delay 0",
            "CONFIG SET loading-process-events-interval-bytes 10",
            "CONFIG SET key-load-delay 0",
        ],
    );
    let all = d.ours_call(&["CONFIG", "GET", "*"]);
    let Ok(all) = all else { panic!() };
    let text = String::from_utf8_lossy(&all.raw);
    assert!(!text.contains("key-load-delay") && !text.contains("loading-process-events"), "{text}");
}

/// A key a write creates starts at Redis's LFU counter (5): creating it is not an access.
#[test]
fn new_keys_start_at_the_lfu_initial_counter() {
    let mut d = DiffPair::start();
    d.assert_script(
        "lfu",
        &[
            "CONFIG SET maxmemory-policy allkeys-lfu",
            "RPUSH l a",
            "SADD s a",
            "HSET h f v",
            "HINCRBY h2 f 1",
            "ZADD z 1 a",
            "ZINCRBY z2 1 a",
            "GEOADD g 13 52 a",
            "SET k v",
            "OBJECT FREQ l",
            "OBJECT FREQ s",
            "OBJECT FREQ h",
            "OBJECT FREQ h2",
            "OBJECT FREQ z",
            "OBJECT FREQ z2",
            "OBJECT FREQ g",
            "OBJECT FREQ k",
            "CONFIG SET maxmemory-policy noeviction",
        ],
    );
}

/// INFO keyspace's avg_ttl is the mean time left of the keys with an expiry (Redis keeps an
/// estimate of the same).
#[test]
fn keyspace_avg_ttl_is_the_mean_time_left() {
    let server = Server::start(&[]);
    let mut c = server.raw();
    assert_eq!(c.call(&[b"SET", b"a", b"1", b"EX", b"100"]), b"+OK\r\n");
    assert_eq!(c.call(&[b"SET", b"b", b"1", b"EX", b"200"]), b"+OK\r\n");
    assert_eq!(c.call(&[b"SET", b"c", b"1"]), b"+OK\r\n");
    let info = String::from_utf8(c.call(&[b"INFO", b"keyspace"])).unwrap();
    let line = info.lines().find(|l| l.starts_with("db0:")).unwrap();
    let avg: i64 = line.rsplit("avg_ttl=").next().unwrap().trim().parse().unwrap();
    assert!((148_000..=150_000).contains(&avg), "{line}");
    assert!(line.starts_with("db0:keys=3,expires=2,"), "{line}");
}

/// DEBUG ERROR sends any error a client library wants to simulate (not counted in INFO
/// errorstats, as in Redis); DEBUG SET-DISABLE-DENY-SCRIPTS lets scripts call `noscript`
/// commands.
#[test]
fn debug_error_and_deny_scripts_match_redis() {
    let mut d = DiffPair::start_with(&["--enable-debug-command", "yes"], &["--enable-debug-command", "yes"]);
    d.assert_script(
        "debug error",
        &[
            "CONFIG RESETSTAT",
            "DEBUG ERROR \"LOADING Redis is loading the dataset in memory\"",
            "DEBUG ERROR \"READONLY You can't write against a read only replica.\"",
            "DEBUG ERROR \"two\\r\\nlines\"",
            "DEBUG ERROR",
            "MULTI",
            "DEBUG ERROR \"EXECABORT inside\"",
            "EXEC",
            "INFO errorstats",
            "EVAL \"return redis.call('debug', 'digest')\" 0",
            "DEBUG SET-DISABLE-DENY-SCRIPTS 1",
            "EVAL \"return redis.call('debug', 'digest')\" 0",
            "DEBUG SET-DISABLE-DENY-SCRIPTS 0",
            "EVAL \"return redis.call('debug', 'digest')\" 0",
        ],
    );
}

/// The latency monitor records the active expiry cycle (`expire-cycle`) and an eviction
/// cycle (`eviction-cycle`) where Redis does, with latency-monitor-threshold 1.
#[test]
fn latency_monitor_records_expire_and_eviction_cycles_like_redis() {
    let redis = Server::start_redis(&["--latency-monitor-threshold", "1"]);
    let ours = Server::start(&["--latency-monitor-threshold", "1", "--appendonly", "no"]);
    let mut events = Vec::new();
    for s in [&redis, &ours] {
        let mut c = s.client();
        let _: () =
            redis::cmd("EVAL").arg("for i = 1, 200000 do redis.call('set', 'e' .. i, 'v', 'PX', 50) end").arg(0).query(&mut c).unwrap();
        let _: () = redis::cmd("LATENCY").arg("RESET").query(&mut c).map(|_: i64| ()).unwrap();
        // The keys expire; the cron's cycles work on them for a while.
        std::thread::sleep(Duration::from_millis(1500));
        let _: () = redis::cmd("CONFIG").arg("SET").arg("maxmemory-policy").arg("allkeys-random").query(&mut c).unwrap();
        let _: () = redis::cmd("EVAL")
            .arg("for i = 1, 100000 do redis.call('set', 'v' .. i, string.rep('x', 100)) end")
            .arg(0)
            .query(&mut c)
            .unwrap();
        let info: String = redis::cmd("INFO").arg("memory").query(&mut c).unwrap();
        let used: u64 = info.lines().find_map(|l| l.strip_prefix("used_memory:")).unwrap().trim().parse().unwrap();
        // Half the memory goes at once: the next write evicts for more than a millisecond.
        let _: () = redis::cmd("CONFIG").arg("SET").arg("maxmemory").arg(used / 2).query(&mut c).unwrap();
        let _: () = redis::cmd("SET").arg("trigger").arg("1").query(&mut c).unwrap();
        let latest: Vec<Vec<redis::Value>> = redis::cmd("LATENCY").arg("LATEST").query(&mut c).unwrap();
        let mut names: Vec<String> = latest.iter().filter_map(|row| redis::from_redis_value::<String>(row[0].clone()).ok()).collect();
        names.sort();
        events.push(names);
    }
    // One big key evicted: its deletion takes milliseconds (`eviction-del`).
    for s in [&redis, &ours] {
        let mut c = s.client();
        let _: () = redis::cmd("CONFIG").arg("SET").arg("maxmemory").arg(0).query(&mut c).unwrap();
        let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
        let _: () = redis::cmd("EVAL")
            .arg("for i = 1, 300000, 1000 do local t = {} for j = i, i + 999 do t[#t + 1] = j end redis.call('sadd', 'big', unpack(t)) end")
            .arg(0)
            .query(&mut c)
            .unwrap();
        let _: () = redis::cmd("LATENCY").arg("RESET").query(&mut c).map(|_: i64| ()).unwrap();
        let _: () = redis::cmd("CONFIG").arg("SET").arg("maxmemory").arg(1).query(&mut c).unwrap();
        let _ = redis::cmd("SET").arg("trigger").arg("1").query::<()>(&mut c);
        let _: () = redis::cmd("CONFIG").arg("SET").arg("maxmemory").arg(0).query(&mut c).unwrap();
        let latest: Vec<Vec<redis::Value>> = redis::cmd("LATENCY").arg("LATEST").query(&mut c).unwrap();
        let names: Vec<String> = latest.iter().filter_map(|row| redis::from_redis_value::<String>(row[0].clone()).ok()).collect();
        assert!(names.contains(&"eviction-del".to_string()), "port {}: {names:?}", s.port);
    }
    for name in ["eviction-cycle", "expire-cycle"] {
        assert!(events[0].contains(&name.to_string()), "redis: {:?}", events[0]);
        assert!(events[1].contains(&name.to_string()), "ours: {:?} (redis: {:?})", events[1], events[0]);
    }
}

/// DEBUG QUICKLIST-PACKED-THRESHOLD and DEBUG REPLYBUFFER accept what Redis accepts (the list
/// commands on elements over a threshold answer the same as Redis's plain nodes).
#[test]
fn debug_quicklist_threshold_and_replybuffer_match_redis() {
    let mut d = DiffPair::start_with(&["--enable-debug-command", "yes"], &["--enable-debug-command", "yes"]);
    let big = "x".repeat(2000);
    let script: Vec<String> = vec![
        "DEBUG QUICKLIST-PACKED-THRESHOLD 1k".into(),
        "DEBUG QUICKLIST-PACKED-THRESHOLD 5gb".into(),
        "DEBUG QUICKLIST-PACKED-THRESHOLD abc".into(),
        "DEBUG QUICKLIST-PACKED-THRESHOLD 0".into(),
        "DEBUG QUICKLIST-PACKED-THRESHOLD 1k".into(),
        format!("LPUSH l a {big} b"),
        "LINDEX l 1".into(),
        format!("LINSERT l BEFORE {big} c"),
        format!("LSET l 0 {big}"),
        format!("LPOS l {big} RANK 2"),
        format!("LREM l 1 {big}"),
        "LMOVE l l2 LEFT RIGHT".into(),
        "LTRIM l 0 0".into(),
        "LRANGE l 0 -1".into(),
        "LRANGE l2 0 -1".into(),
        "DEBUG QUICKLIST-PACKED-THRESHOLD 0".into(),
        "DEBUG REPLYBUFFER PEAK-RESET-TIME never".into(),
        "DEBUG REPLYBUFFER PEAK-RESET-TIME reset".into(),
        "DEBUG REPLYBUFFER PEAK-RESET-TIME 100".into(),
        "DEBUG REPLYBUFFER PEAK-RESET-TIME x".into(),
        "DEBUG REPLYBUFFER RESIZING 0".into(),
        "DEBUG REPLYBUFFER RESIZING 1".into(),
        "DEBUG REPLYBUFFER BOGUS 1".into(),
    ];
    let script: Vec<&str> = script.iter().map(String::as_str).collect();
    d.assert_script("debug quicklist and replybuffer", &script);
}

/// A slow fsync under `appendfsync always` (a failpoint delays it) is recorded as
/// `aof-fsync-always`, as Redis records its own.
#[test]
fn latency_monitor_records_a_slow_fsync_always() {
    let server = Server::start_with_env(
        &[("VERMILION_FAILPOINT_FSYNC_DELAY_MS", "5")],
        &["--appendonly", "yes", "--appendfsync", "always", "--latency-monitor-threshold", "1"],
    );
    let mut c = server.client();
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut c).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let latest: Vec<Vec<redis::Value>> = redis::cmd("LATENCY").arg("LATEST").query(&mut c).unwrap();
    let names: Vec<String> = latest.iter().filter_map(|row| redis::from_redis_value::<String>(row[0].clone()).ok()).collect();
    assert!(names.contains(&"aof-fsync-always".to_string()), "{names:?}");
}
