//! Side effects of commands on other clients, compared with redis-server 7.0 byte for byte:
//! which writes abort a WATCH (LMPOP/ZMPOP and their blocking forms, GEO ... STORE, SMOVE,
//! writes that change nothing, writes to keys in other positions or databases), when a blocked
//! client is served (a transaction that pushes then deletes, SWAPDB, ...STORE commands, a
//! key that changes type), the invalidations a tracking client receives and the keyspace
//! events of those commands. The seeded random run is `tests/effects_random.rs`.
//!
//! The comment above each case states what Redis 7.0.15 does, checked by hand with redis-cli;
//! the tests also assert Redis's side of it, so a case that stops testing what it says fails.

mod common;

use std::time::Duration;

use common::diff::{encode_cmd, escape, parse_script_line, same, show, Cmp, Conn, DiffPair, Got};

/// The connection that blocks in the blocking cases.
const WAITER: usize = 1;
/// How long a client that should stay blocked is given to answer anyway.
const STAYS_BLOCKED: Duration = Duration::from_millis(300);

/// Runs script lines with `conn` current (lines prefixed `N>` switch), panicking on a difference.
fn script(d: &mut DiffPair, name: &str, conn: usize, cmds: &[&str]) {
    d.on(conn);
    d.assert_script(name, cmds);
}

/// Runs script lines with `conn` current; the differences, printed.
fn lines(d: &mut DiffPair, conn: usize, cmds: &[&str]) -> Result<(), String> {
    d.on(conn);
    let diffs = d.run(cmds);
    if diffs.is_empty() {
        return Ok(());
    }
    Err(diffs.iter().map(|x| x.to_string()).collect::<Vec<_>>().join("\n"))
}

/// Panics listing every failed case.
fn assert_cases(failures: &[String], total: usize) {
    assert!(failures.is_empty(), "{} of {total} cases differ:\n{}", failures.len(), failures.join("\n"));
}

fn args_of(line: &str) -> Vec<Vec<u8>> {
    parse_script_line(line).2.unwrap_or_else(|| panic!("not a command: {line:?}"))
}

fn raw_of(got: &Got) -> Vec<u8> {
    got.as_ref().map(|r| r.raw.clone()).unwrap_or_default()
}

// ---------------------------------------------------------------------------------------
// WATCH cases: setup, WATCH on connection 0, writes on connection 1, then MULTI; PING; EXEC.

/// (what, setup lines on connection 0, lines on connection 0 that WATCH, writes on
/// connection 1, Redis 7.0 aborts the EXEC that follows)
type WatchCase<'a> = (&'a str, &'a [&'a str], &'a [&'a str], &'a [&'a str], bool);

fn watch_case(d: &mut DiffPair, (_, setup, watch, writes, aborts): WatchCase) -> Result<(), String> {
    lines(d, 0, &["FLUSHALL"])?;
    lines(d, 0, setup)?;
    lines(d, 0, watch)?;
    lines(d, 1, writes)?;
    lines(d, 0, &["MULTI", "PING"])?;
    let exec = d.check(&["EXEC"]).map_err(|e| e.to_string())?;
    let expected: &[u8] = if aborts { b"*-1\r\n" } else { b"*1\r\n+PONG\r\n" };
    let got = raw_of(&exec);
    if got != expected {
        return Err(format!("redis-server's EXEC answered \"{}\", not what the case says", escape(&got)));
    }
    Ok(())
}

fn run_watch_cases(cases: &[WatchCase]) {
    // DEBUG (SLEEP, RELOAD, SET-ACTIVE-EXPIRE) is on in both (Redis 7.0's default is off).
    let mut d = DiffPair::start_with(&["--enable-debug-command", "yes"], &[]);
    script(&mut d, "open", 1, &["PING"]);
    let mut failures = Vec::new();
    for &case in cases {
        if let Err(e) = watch_case(&mut d, case) {
            failures.push(format!("case '{}': {e}", case.0));
        }
        // Both connections out of any transaction and back in db 0, whatever happened.
        d.on(0);
        let _ = d.exchange(&["DISCARD"]);
        let _ = d.exchange(&["UNWATCH"]);
        let _ = d.exchange(&["SELECT", "0"]);
        d.on(1);
        let _ = d.exchange(&["SELECT", "0"]);
    }
    assert_cases(&failures, cases.len());
}

const GEO: &str = "GEOADD g 13.361389 38.115556 Palermo 15.087269 37.502669 Catania";

/// Issue case 1: the MPOP family pops from a watched key.
#[test]
fn watch_is_aborted_by_mpop_commands() {
    run_watch_cases(&[
        // Redis 7.0: LMPOP that pops from the watched list aborts EXEC (nil).
        ("lmpop", &["RPUSH l a b"], &["WATCH l"], &["LMPOP 1 l LEFT"], true),
        // Redis 7.0: also when it pops the last element (the key is deleted).
        ("lmpop last element", &["RPUSH l a"], &["WATCH l"], &["LMPOP 1 l RIGHT COUNT 5"], true),
        // Redis 7.0: also when the watched key is the second one given.
        ("lmpop second key", &["RPUSH l2 x"], &["WATCH l2"], &["LMPOP 2 l1 l2 LEFT"], true),
        // Redis 7.0: LMPOP on a missing key changes nothing: EXEC runs.
        ("lmpop missing key", &[], &["WATCH l"], &["LMPOP 1 l LEFT"], false),
        // Redis 7.0: ZMPOP from the watched zset aborts EXEC.
        ("zmpop", &["ZADD z 1 a 2 b"], &["WATCH z"], &["ZMPOP 1 z MIN"], true),
        // Redis 7.0: also when it empties the zset.
        ("zmpop last element", &["ZADD z 1 a"], &["WATCH z"], &["ZMPOP 1 z MAX COUNT 3"], true),
        // Redis 7.0: BLMPOP served at once (the list has data) aborts EXEC.
        ("blmpop with data", &["RPUSH l a b"], &["WATCH l"], &["BLMPOP 0 1 l LEFT"], true),
        // Redis 7.0: BZMPOP served at once aborts EXEC.
        ("bzmpop with data", &["ZADD z 1 a 2 b"], &["WATCH z"], &["BZMPOP 0 1 z MIN"], true),
    ]);
}

/// Issue case 2: GEORADIUS[BYMEMBER] ... STORE/STOREDIST and GEOSEARCHSTORE write `dst`.
#[test]
fn watch_is_aborted_by_geo_store_commands() {
    run_watch_cases(&[
        // Redis 7.0: GEORADIUS ... STORE dst aborts a WATCH on dst.
        ("georadius store", &[GEO], &["WATCH dst"], &["GEORADIUS g 15 37 200 km STORE dst"], true),
        // Redis 7.0: GEORADIUSBYMEMBER ... STORE dst too.
        ("georadiusbymember store", &[GEO], &["WATCH dst"], &["GEORADIUSBYMEMBER g Palermo 100 km STORE dst"], true),
        // Redis 7.0: STOREDIST too.
        ("georadius storedist", &[GEO], &["WATCH dst"], &["GEORADIUS g 15 37 200 km STOREDIST dst"], true),
        // Redis 7.0: GEORADIUSBYMEMBER ... STOREDIST too.
        ("georadiusbymember storedist", &[GEO], &["WATCH dst"], &["GEORADIUSBYMEMBER g Palermo 100 km STOREDIST dst"], true),
        // Redis 7.0: GEOSEARCHSTORE (and with STOREDIST) too.
        ("geosearchstore", &[GEO], &["WATCH dst"], &["GEOSEARCHSTORE dst g FROMLONLAT 15 37 BYRADIUS 200 km"], true),
        ("geosearchstore storedist", &[GEO], &["WATCH dst"], &["GEOSEARCHSTORE dst g FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST"], true),
        // Redis 7.0: an empty result deletes an existing dst: aborts.
        ("empty result, dst existed", &[GEO, "SET dst x"], &["WATCH dst"], &["GEORADIUS g 0 0 1 km STORE dst"], true),
        // Redis 7.0: an empty result with dst missing changes nothing: EXEC runs.
        ("empty result, no dst", &[GEO], &["WATCH dst"], &["GEORADIUS g 0 0 1 km STORE dst"], false),
        // Redis 7.0: a missing source deletes an existing dst: aborts (both forms).
        ("missing source, dst existed", &["SET dst x"], &["WATCH dst"], &["GEORADIUS nog 15 37 200 km STORE dst"], true),
        ("geosearchstore, no source", &["SET dst x"], &["WATCH dst"], &["GEOSEARCHSTORE dst nog FROMLONLAT 15 37 BYRADIUS 9 km"], true),
    ]);
}

/// Issue case 3: SMOVE of a member the destination already holds does not modify it.
#[test]
fn watch_and_smove_of_a_member_already_in_the_destination() {
    run_watch_cases(&[
        // Redis 7.0: `a` already in dstset: SMOVE answers 1, dstset is not touched, EXEC runs.
        ("member already in dst", &["SADD src a", "SADD dstset a"], &["WATCH dstset"], &["SMOVE src dstset a", "SMEMBERS dstset"], false),
        // Redis 7.0: `a` not in dstset: it is added, EXEC aborts.
        ("member not in dst", &["SADD src a", "SADD dstset b"], &["WATCH dstset"], &["SMOVE src dstset a"], true),
        // Redis 7.0: the source loses the member (here its last one) either way: aborts.
        ("watching the source", &["SADD src a", "SADD dstset a"], &["WATCH src"], &["SMOVE src dstset a", "EXISTS src"], true),
        // Redis 7.0: SMOVE src src: nothing changes, EXEC runs.
        ("same set", &["SADD src a"], &["WATCH src"], &["SMOVE src src a"], false),
        // Redis 7.0: a member the source does not hold: nothing changes, EXEC runs.
        ("member not in src", &["SADD src a"], &["WATCH src"], &["SMOVE src dstset zz"], false),
    ]);
}

/// Issue case 8: writes that change nothing, and writes to a key that is not the first
/// argument or lives in another database.
#[test]
fn watch_and_no_op_or_indirect_writes() {
    const RESTORE: &str = r#"RESTORE k 0 "\x00\x01v\n\x00\x91\x08\xce\xb2\x198\x8a\xce""#;
    const RESTORE_REPLACE: &str = r#"RESTORE k 0 "\x00\x01v\n\x00\x91\x08\xce\xb2\x198\x8a\xce" REPLACE"#;
    const RESTORE_PAST: &str = r#"RESTORE k 1 "\x00\x01v\n\x00\x91\x08\xce\xb2\x198\x8a\xce" ABSTTL REPLACE"#;
    run_watch_cases(&[
        // Redis 7.0: LTRIM k 0 -1 on an existing list keeps everything but still signals: aborts.
        ("ltrim keeping all", &["RPUSH k a b"], &["WATCH k"], &["LTRIM k 0 -1"], true),
        // Redis 7.0: SREM of a non-member: no change, EXEC runs.
        ("srem non-member", &["SADD s a"], &["WATCH s"], &["SREM s nomember"], false),
        // Redis 7.0: EXPIRE of a missing key: EXEC runs; of an existing one: aborts.
        ("expire missing", &[], &["WATCH missing"], &["EXPIRE missing 10"], false),
        ("expire existing", &["SET k v"], &["WATCH k"], &["EXPIRE k 100"], true),
        // Redis 7.0: EXPIRE NX refused (a TTL exists) and PERSIST without TTL: EXEC runs.
        ("expire nx refused", &["SET k v EX 100"], &["WATCH k"], &["EXPIRE k 10 NX"], false),
        ("persist without ttl", &["SET k v"], &["WATCH k"], &["PERSIST k"], false),
        // Redis 7.0: EXPIRE in the past deletes an existing key: aborts.
        ("expire in the past", &["SET k v"], &["WATCH k"], &["EXPIRE k -1"], true),
        // Redis 7.0: DEL / UNLINK of a missing key: EXEC runs.
        ("del missing", &[], &["WATCH missing"], &["DEL missing"], false),
        ("unlink missing", &[], &["WATCH missing"], &["UNLINK missing"], false),
        // Redis 7.0: MOVE k 1 aborts a WATCH on k in db 0...
        ("move, source", &["SET k v"], &["WATCH k"], &["MOVE k 1"], true),
        // ...and a WATCH on k in db 1 (the destination).
        ("move, destination db", &["SET k v"], &["SELECT 1", "WATCH k"], &["MOVE k 1"], true),
        // Redis 7.0: MOVE refused (k exists in db 1): EXEC runs.
        ("move refused", &["SELECT 1", "SET k w", "SELECT 0", "SET k v"], &["SELECT 1", "WATCH k"], &["MOVE k 1"], false),
        // Redis 7.0: COPY a b aborts a WATCH on b, not on a.
        ("copy, destination", &["SET a v"], &["WATCH b"], &["COPY a b"], true),
        ("copy, source", &["SET a v"], &["WATCH a"], &["COPY a b"], false),
        // Redis 7.0: COPY refused (b exists) runs; COPY ... REPLACE aborts; missing source runs.
        ("copy refused", &["SET a v", "SET b w"], &["WATCH b"], &["COPY a b"], false),
        ("copy replace", &["SET a v", "SET b w"], &["WATCH b"], &["COPY a b REPLACE"], true),
        ("copy missing source", &["SET b w"], &["WATCH b"], &["COPY nosrc b REPLACE"], false),
        // Redis 7.0: COPY k k DB 1 aborts a WATCH on k in db 1.
        ("copy into another db", &["SET k v"], &["SELECT 1", "WATCH k"], &["COPY k k DB 1"], true),
        // Redis 7.0: RENAME a b aborts WATCH b and WATCH a; RENAME a a does not.
        ("rename, destination", &["SET a v"], &["WATCH b"], &["RENAME a b"], true),
        ("rename, source", &["SET a v"], &["WATCH a"], &["RENAME a b"], true),
        ("rename to itself", &["SET a v"], &["WATCH a"], &["RENAME a a"], false),
        ("renamenx refused", &["SET a v", "SET b w"], &["WATCH b"], &["RENAMENX a b"], false),
        // Redis 7.0: SORT ... STORE dst aborts; an empty result deletes dst (aborts) or, with
        // no dst, changes nothing (runs).
        ("sort store", &["RPUSH l 2 1"], &["WATCH dst"], &["SORT l STORE dst"], true),
        ("sort store empty, dst existed", &["SET dst x"], &["WATCH dst"], &["SORT nol STORE dst"], true),
        ("sort store empty, no dst", &[], &["WATCH dst"], &["SORT nol STORE dst"], false),
        // Redis 7.0: BITOP writes dst (aborts); an empty result deletes it (aborts) or, with
        // no dst, runs.
        ("bitop", &["SET a x", "SET b y"], &["WATCH dst"], &["BITOP AND dst a b"], true),
        ("bitop empty, dst existed", &["SET dst x"], &["WATCH dst"], &["BITOP AND dst a b"], true),
        ("bitop empty, no dst", &[], &["WATCH dst"], &["BITOP AND dst a b"], false),
        // Redis 7.0: PFMERGE always writes dst, even with no sources or merging into itself.
        ("pfmerge", &["PFADD h1 a"], &["WATCH hdst"], &["PFMERGE hdst h1"], true),
        ("pfmerge no sources", &[], &["WATCH hdst"], &["PFMERGE hdst"], true),
        ("pfmerge into itself", &["PFADD hdst a"], &["WATCH hdst"], &["PFMERGE hdst hdst"], true),
        // Redis 7.0: PFADD of an element already counted: EXEC runs.
        ("pfadd no change", &["PFADD h a"], &["WATCH h"], &["PFADD h a"], false),
        // Redis 7.0: SETRANGE k 0 "" changes nothing (existing or missing): runs; SETRANGE
        // writing the same bytes signals: aborts.
        ("setrange empty", &["SET k abc"], &["WATCH k"], &[r#"SETRANGE k 0 """#], false),
        ("setrange empty, missing key", &[], &["WATCH k"], &[r#"SETRANGE k 0 """#], false),
        ("setrange same bytes", &["SET k abc"], &["WATCH k"], &["SETRANGE k 0 a"], true),
        // Redis 7.0: APPEND k "" signals (and creates an empty string when missing): aborts.
        ("append empty", &["SET k abc"], &["WATCH k"], &[r#"APPEND k """#], true),
        ("append empty, missing key", &[], &["WATCH k"], &[r#"APPEND k """#, "EXISTS k"], true),
        // Redis 7.0: HSET of the same value signals: aborts; HSETNX refused, HDEL of a
        // missing field: run.
        ("hset same value", &["HSET h f v"], &["WATCH h"], &["HSET h f v"], true),
        ("hsetnx refused", &["HSET h f v"], &["WATCH h"], &["HSETNX h f w"], false),
        ("hdel missing field", &["HSET h f v"], &["WATCH h"], &["HDEL h nof"], false),
        // Redis 7.0: ZADD of the same score, ZADD NX refused, ZINCRBY 0, ZREM of a
        // non-member, SADD of a member: all run.
        ("zadd same score", &["ZADD z 1 m"], &["WATCH z"], &["ZADD z 1 m"], false),
        ("zadd nx refused", &["ZADD z 1 m"], &["WATCH z"], &["ZADD z NX 2 m"], false),
        ("zincrby 0", &["ZADD z 1 m"], &["WATCH z"], &["ZINCRBY z 0 m"], false),
        ("zrem non-member", &["ZADD z 1 m"], &["WATCH z"], &["ZREM z nom"], false),
        ("sadd existing member", &["SADD s a"], &["WATCH s"], &["SADD s a"], false),
        // Redis 7.0: SET of the same value, INCRBY 0 and LSET of the same value abort; SET NX
        // refused, LREM/LINSERT finding nothing, LPUSHX/GETDEL on a missing key run.
        ("set same value", &["SET k v"], &["WATCH k"], &["SET k v"], true),
        ("incrby 0", &["SET k 1"], &["WATCH k"], &["INCRBY k 0"], true),
        ("lset same value", &["RPUSH k a"], &["WATCH k"], &["LSET k 0 a"], true),
        ("set nx refused", &["SET k v"], &["WATCH k"], &["SET k w NX"], false),
        ("lrem nothing", &["RPUSH k a"], &["WATCH k"], &["LREM k 0 zz"], false),
        ("linsert missing pivot", &["RPUSH k a"], &["WATCH k"], &["LINSERT k BEFORE zz x"], false),
        ("lpushx missing", &[], &["WATCH k"], &["LPUSHX k a"], false),
        ("getdel missing", &[], &["WATCH k"], &["GETDEL k"], false),
        // Redis 7.0: ZUNIONSTORE/SINTERSTORE/ZRANGESTORE with an empty result delete an
        // existing dst (abort) and leave a missing one alone (run).
        ("zunionstore empty, dst existed", &["SET dst x"], &["WATCH dst"], &["ZUNIONSTORE dst 1 nosrc"], true),
        ("zunionstore empty, no dst", &[], &["WATCH dst"], &["ZUNIONSTORE dst 1 nosrc"], false),
        ("sinterstore empty, dst existed", &["SET dst x"], &["WATCH dst"], &["SINTERSTORE dst nos"], true),
        ("zrangestore empty, dst existed", &["SET dst x"], &["WATCH dst"], &["ZRANGESTORE dst nosrc 0 -1"], true),
        ("zrangestore empty, no dst", &[], &["WATCH dst"], &["ZRANGESTORE dst nosrc 0 -1"], false),
        // Redis 7.0: FLUSHDB / FLUSHALL abort a WATCH on a key that existed, not on a
        // missing one; FLUSHDB of another db runs.
        ("flushdb", &["SET k v"], &["WATCH k"], &["FLUSHDB"], true),
        ("flushdb, key missing", &[], &["WATCH k"], &["FLUSHDB"], false),
        ("flushdb of another db", &["SET k v"], &["WATCH k"], &["SELECT 1", "FLUSHDB", "SELECT 0"], false),
        ("flushall", &["SET k v"], &["WATCH k"], &["FLUSHALL"], true),
        ("flushall, key missing", &[], &["WATCH k"], &["FLUSHALL"], false),
        // Redis 7.0: SWAPDB 0 1 aborts when the watched key exists in either db, runs when
        // it exists in neither; SWAPDB of two other dbs runs.
        ("swapdb, key only in the other db", &["SELECT 1", "SET k v", "SELECT 0"], &["WATCH k"], &["SWAPDB 0 1"], true),
        ("swapdb, key only in this db", &["SET k v"], &["WATCH k"], &["SWAPDB 0 1"], true),
        ("swapdb, key in both", &["SET k v", "SELECT 1", "SET k w", "SELECT 0"], &["WATCH k"], &["SWAPDB 0 1"], true),
        ("swapdb, key in neither", &[], &["WATCH k"], &["SWAPDB 0 1"], false),
        ("swapdb of other dbs", &["SET k v"], &["WATCH k"], &["SWAPDB 2 3"], false),
        // Redis 7.0: RESTORE creating the key aborts; refused with BUSYKEY runs; REPLACE
        // aborts; with an absolute TTL in the past it deletes an existing key (aborts) and
        // creates nothing when missing (runs).
        ("restore", &[], &["WATCH k"], &[RESTORE], true),
        ("restore busykey", &["SET k x"], &["WATCH k"], &[RESTORE], false),
        ("restore replace", &["SET k x"], &["WATCH k"], &[RESTORE_REPLACE], true),
        ("restore expired, key existed", &["SET k x"], &["WATCH k"], &[RESTORE_PAST, "EXISTS k"], true),
        ("restore expired, no key", &[], &["WATCH k"], &[RESTORE_PAST, "EXISTS k"], false),
        // Redis 7.0: reads (GET, TOUCH) never abort.
        ("touch", &["SET k v"], &["WATCH k"], &["TOUCH k", "GET k"], false),
    ]);
}

// ---------------------------------------------------------------------------------------
// Blocking cases: connection 1 blocks, others act, both sides' waiter must behave alike.

/// (what, setup lines (connection 0 unless prefixed), the command connection 1 blocks in,
/// lines other connections run while it waits (connection 0 unless prefixed), Redis 7.0
/// serves the waiter right after them, lines run next on connection 0 (if the waiter stayed
/// blocked, they serve it; its reply is compared after them))
type BlockCase<'a> = (&'a str, &'a [&'a str], &'a str, &'a [&'a str], bool, &'a [&'a str]);

/// Reads the waiter's next reply on both sides, waiting at most `wait` on each.
fn read_waiter(d: &mut DiffPair, wait: Duration) -> (Got, Got) {
    let normal = d.timeout;
    let (r, o) = d.conns(WAITER);
    r.set_timeout(wait);
    o.set_timeout(wait);
    let got = (r.read(), o.read());
    r.set_timeout(normal);
    o.set_timeout(normal);
    got
}

fn block_case(d: &mut DiffPair, (_, setup, block, actor, served, then): BlockCase) -> Result<(), String> {
    // Fresh connections: a waiter left over by a failed case goes away.
    d.reset_conns();
    lines(d, WAITER, &["PING"])?;
    lines(d, 0, &["FLUSHALL"])?;
    lines(d, 0, setup)?;
    let cmd = encode_cmd(&args_of(block));
    let (r, o) = d.conns(WAITER);
    r.send(&cmd).map_err(|e| format!("send to redis-server: {e}"))?;
    o.send(&cmd).map_err(|e| format!("send to vermilion: {e}"))?;
    // Let both servers park the client before the others act.
    std::thread::sleep(Duration::from_millis(100));
    lines(d, 0, actor)?;
    let wait = if served { d.timeout } else { STAYS_BLOCKED };
    let (a, b) = read_waiter(d, wait);
    if !same(&a, &b, Cmp::Exact) {
        return Err(format!("after {actor:?} the waiter ({block}) got\n  redis: {}\n  ours:  {}", show(&a), show(&b)));
    }
    if a.is_ok() != served {
        return Err(format!("redis-server did not do what the case says: {}", show(&a)));
    }
    lines(d, 0, then)?;
    if !served {
        let normal = d.timeout;
        let (a, b) = read_waiter(d, normal);
        if !same(&a, &b, Cmp::Exact) {
            return Err(format!("after {then:?} the waiter ({block}) got\n  redis: {}\n  ours:  {}", show(&a), show(&b)));
        }
        if a.is_err() {
            return Err(format!("redis-server did not serve the waiter after {then:?}"));
        }
    }
    Ok(())
}

fn run_block_cases(cases: &[BlockCase]) {
    let mut d = DiffPair::start();
    let mut failures = Vec::new();
    for &case in cases {
        if let Err(e) = block_case(&mut d, case) {
            failures.push(format!("case '{}': {e}", case.0));
        }
    }
    assert_cases(&failures, cases.len());
}

/// Issue case 4: a transaction pushes to the waited key and then deletes it or makes it a
/// string: when Redis serves its waiters (after EXEC) there is nothing to serve.
#[test]
fn a_transaction_that_pushes_then_deletes_leaves_the_waiter_blocked() {
    let tx_list: &[&str] = &["MULTI", "LPUSH bl a", "DEL bl", "SET bl foo", "EXEC"];
    let tx_zset: &[&str] = &["MULTI", "ZADD bz 1 a", "DEL bz", "SET bz foo", "EXEC"];
    run_block_cases(&[
        // Redis 7.0: BLPOP stays blocked; DEL bl + RPUSH bl x then serve `bl x`.
        ("blpop", &[], "BLPOP bl 0", tx_list, false, &["DEL bl", "RPUSH bl x", "EXISTS bl"]),
        // Redis 7.0: BLMPOP likewise, then gets `bl [x]`.
        ("blmpop", &[], "BLMPOP 0 1 bl LEFT", tx_list, false, &["DEL bl", "RPUSH bl x", "EXISTS bl"]),
        // Redis 7.0: BZPOPMIN with ZADD instead of LPUSH likewise, then gets `bz x 2`.
        ("bzpopmin", &[], "BZPOPMIN bz 0", tx_zset, false, &["DEL bz", "ZADD bz 2 x", "EXISTS bz"]),
        // Redis 7.0: BZMPOP likewise, then gets `bz [[x 2]]`.
        ("bzmpop", &[], "BZMPOP 0 1 bz MIN", tx_zset, false, &["DEL bz", "ZADD bz 2 x", "EXISTS bz"]),
        // Redis 7.0: LPUSH then SET (no DEL) in the transaction: still blocked.
        ("blpop, push then set", &[], "BLPOP bl 0", &["MULTI", "LPUSH bl a", "SET bl foo", "EXEC"], false, &["DEL bl", "RPUSH bl x"]),
        // Redis 7.0: LPUSH, DEL, RPUSH b c: served `bl b` after EXEC, `c` stays.
        ("blpop, push, del, push", &[], "BLPOP bl 0", &["MULTI", "LPUSH bl a", "DEL bl", "RPUSH bl b c", "EXEC"], true, &["LLEN bl"]),
    ]);
}

/// Issue case 5: SWAPDB brings a list (or zset) into the waiter's database.
#[test]
fn swapdb_serves_a_client_blocked_in_the_other_database() {
    let both_dbs: &[&str] = &["SELECT 0", "EXISTS k", "SELECT 1", "EXISTS k"];
    run_block_cases(&[
        // Redis 7.0: BLPOP k in db 0; RPUSH k v in db 1; SWAPDB 0 1 serves `k v`; k is gone
        // from both.
        ("blpop", &["1>SELECT 0"], "BLPOP k 0", &["SELECT 1", "RPUSH k v", "SWAPDB 0 1"], true, both_dbs),
        // Redis 7.0: the same with BZPOPMIN and ZADD serves `k m 3`.
        ("bzpopmin", &["1>SELECT 0"], "BZPOPMIN k 0", &["SELECT 1", "ZADD k 3 m", "SWAPDB 0 1"], true, both_dbs),
        // Redis 7.0: a waiter in db 1, the list in db 0, SWAPDB 1 0: served `k a`, `b` stays
        // in db 1.
        ("waiter in db 1", &["1>SELECT 1"], "BLPOP k 0", &["RPUSH k a b", "SWAPDB 1 0"], true, &["SELECT 1", "LRANGE k 0 -1", "DBSIZE"]),
        // Redis 7.0: a string swapped in leaves it blocked; DEL + RPUSH in db 0 serve it.
        ("string swapped in", &[], "BLPOP k 0", &["SELECT 1", "SET k str", "SWAPDB 0 1"], false, &["SELECT 0", "DEL k", "RPUSH k w"]),
    ]);
}

/// Issue case 6: ...STORE commands and list moves create the waited key.
#[test]
fn store_commands_serve_blocked_clients() {
    let setup: &[&str] = &["ZADD src 1 a 2 b", "ZADD src2 2 b 3 c", GEO, "RPUSH l 3 1 2", "SADD s x y"];
    let zset: &[&str] = &["ZRANGE dst 0 -1 WITHSCORES"];
    run_block_cases(&[
        // Redis 7.0: each zset STORE serves BZPOPMIN dst with its lowest member:
        // ZUNIONSTORE `dst a 1` (b 2 stays), ZINTERSTORE `dst b 4`, ZDIFFSTORE `dst a 1`,
        // ZRANGESTORE `dst a 1`, GEOSEARCHSTORE / GEORADIUS STORE `dst Palermo <hash>`,
        // GEORADIUS STOREDIST `dst Catania 56.44...`, GEORADIUSBYMEMBER STORE `dst Palermo`.
        ("zunionstore", setup, "BZPOPMIN dst 0", &["ZUNIONSTORE dst 1 src"], true, zset),
        ("zinterstore", setup, "BZPOPMIN dst 0", &["ZINTERSTORE dst 2 src src2"], true, zset),
        ("zdiffstore", setup, "BZPOPMIN dst 0", &["ZDIFFSTORE dst 2 src src2"], true, zset),
        ("zrangestore", setup, "BZPOPMIN dst 0", &["ZRANGESTORE dst src 0 -1"], true, zset),
        ("geosearchstore", setup, "BZPOPMIN dst 0", &["GEOSEARCHSTORE dst g FROMLONLAT 15 37 BYRADIUS 200 km ASC"], true, zset),
        ("georadius store", setup, "BZPOPMIN dst 0", &["GEORADIUS g 15 37 200 km ASC STORE dst"], true, zset),
        ("georadius storedist", setup, "BZPOPMIN dst 0", &["GEORADIUS g 15 37 200 km STOREDIST dst"], true, zset),
        ("georadiusbymember store", setup, "BZPOPMIN dst 0", &["GEORADIUSBYMEMBER g Palermo 200 km STORE dst"], true, zset),
        // Redis 7.0: SORT l STORE dst serves BLPOP dst with `dst 1` (2 3 stay).
        ("sort store", setup, "BLPOP dst 0", &["SORT l STORE dst"], true, &["LRANGE dst 0 -1"]),
        // Redis 7.0: LMOVE / RPOPLPUSH into the waited list serve it (`dst 3`, `dst 2`).
        ("lmove", setup, "BLPOP dst 0", &["LMOVE l dst LEFT RIGHT"], true, &["EXISTS dst", "LRANGE l 0 -1"]),
        ("rpoplpush", setup, "BLPOP dst 0", &["RPOPLPUSH l dst"], true, &["EXISTS dst", "LRANGE l 0 -1"]),
        // Redis 7.0: SUNIONSTORE makes a set: BLPOP stays blocked until DEL + RPUSH.
        ("sunionstore", setup, "BLPOP dst 0", &["SUNIONSTORE dst s"], false, &["DEL dst", "RPUSH dst done"]),
        // Redis 7.0: ZUNIONSTORE makes a zset: BLPOP stays blocked.
        ("zunionstore for a list waiter", setup, "BLPOP dst 0", &["ZUNIONSTORE dst 1 src"], false, &["DEL dst", "RPUSH dst done"]),
        // Redis 7.0: SORT STORE makes a list: BZPOPMIN stays blocked.
        ("sort store for a zset waiter", setup, "BZPOPMIN dst 0", &["SORT l STORE dst"], false, &["DEL dst", "ZADD dst 5 done"]),
    ]);
}

/// Issue case 7: the waited key becomes another type.
#[test]
fn a_blocked_client_stays_blocked_when_the_key_changes_type() {
    run_block_cases(&[
        // Redis 7.0: BLPOP k 0, then SET k string: stays blocked; DEL k, RPUSH k v serve `k v`.
        ("blpop, set", &[], "BLPOP k 0", &["SET k string"], false, &["DEL k", "RPUSH k v"]),
        // Redis 7.0: the same from another client than the one that deletes.
        ("blpop, set by another client", &[], "BLPOP k 0", &["2>SET k string"], false, &["DEL k", "RPUSH k v"]),
        // Redis 7.0: BZPOPMIN k 0, then RPUSH k a: stays blocked; DEL + ZADD serve `k v 1`.
        ("bzpopmin, rpush", &[], "BZPOPMIN k 0", &["RPUSH k a"], false, &["DEL k", "ZADD k 1 v"]),
        // Redis 7.0: BLMOVE k d, then HSET k: stays blocked; DEL + RPUSH serve `v`.
        ("blmove, hset", &[], "BLMOVE k d LEFT LEFT 0", &["HSET k f v"], false, &["DEL k", "RPUSH k v", "LRANGE d 0 -1"]),
    ]);
}

/// A woken client is served from the key that became ready, not by running its command over
/// every key again (Redis's `serveClientsBlockedOnListKey`); and only a key that was created
/// is ready (Redis 7.0's `dbAdd`): an overwrite of a key of another type serves no one.
#[test]
fn a_woken_client_is_served_from_the_key_that_became_ready() {
    run_block_cases(&[
        // Redis 7.0: BLPOP a b 0 with a a string: RPUSH b v serves `b v` (no WRONGTYPE from a).
        ("blpop, first key wrong type", &[], "BLPOP a b 0", &["SET a x", "RPUSH b v"], true, &[]),
        // Redis 7.0: the key pushed first in the transaction is served first: `b x`.
        ("blpop, ready order", &[], "BLPOP a b 0", &["MULTI", "RPUSH b x", "RPUSH a y", "EXEC"], true, &["LRANGE a 0 -1"]),
        // Redis 7.0: BLMPOP and BZMPOP likewise serve from the ready key.
        ("blmpop, first key wrong type", &[], "BLMPOP 0 2 a b LEFT", &["SET a x", "RPUSH b v"], true, &[]),
        ("bzmpop, first key wrong type", &[], "BZMPOP 0 2 a b MIN", &["SET a x", "ZADD b 1 v"], true, &[]),
        ("bzpopmin, first key wrong type", &[], "BZPOPMIN a b 0", &["SET a x", "ZADD b 1 v"], true, &[]),
        // Redis 7.0: a string overwritten by SORT STORE / ZUNIONSTORE is not created, so not
        // ready: the waiter stays blocked until the key is deleted and pushed again.
        ("sort store over a string", &["RPUSH l 1"], "BLPOP k 0", &["SET k s", "SORT l STORE k"], false, &["DEL k", "RPUSH k v"]),
        ("zunionstore over a string", &["ZADD z 1 m"], "BZPOPMIN k 0", &["SET k s", "ZUNIONSTORE k 1 z"], false, &["DEL k", "ZADD k 2 v"]),
    ]);
}

/// FLUSHDB, SWAPDB and DEBUG RELOAD touch the watched keys present, expired or not, with
/// Redis 7.0's rules for keys already expired at WATCH.
#[test]
fn flushes_touch_watched_keys_that_are_present_even_if_expired() {
    run_watch_cases(&[
        // Redis 7.0: a key that expires after WATCH is still present at FLUSHDB: aborts.
        ("flushdb, key expired since watch", &["SET k v PX 100"], &["WATCH k", "DEBUG SLEEP 0.2"], &["FLUSHDB"], true),
        // Redis 7.0: a key already expired at WATCH and flushed changed nothing: runs.
        (
            "flushdb, key expired before watch",
            &["DEBUG SET-ACTIVE-EXPIRE 0", "SET k v PX 10", "DEBUG SLEEP 0.05"],
            &["WATCH k"],
            &["FLUSHDB", "DEBUG SET-ACTIVE-EXPIRE 1"],
            false,
        ),
        // Redis 7.0: DEBUG RELOAD empties every database first: a WATCH on a key aborts.
        ("debug reload", &["SET k v"], &["WATCH k"], &["DEBUG RELOAD"], true),
        ("debug reload, key missing", &[], &["WATCH k"], &["DEBUG RELOAD"], false),
    ]);
}

/// LMOVE and BLMOVE with the same source and destination rotate the list in place: a
/// one-element list keeps its TTL.
#[test]
fn lmove_within_one_list_keeps_its_ttl() {
    let mut d = DiffPair::start();
    script(
        &mut d,
        "lmove rotate",
        0,
        &[
            "RPUSH l a",
            "EXPIRE l 100",
            "LMOVE l l LEFT RIGHT",
            "%2 TTL l",
            "RPUSH m a b",
            "EXPIRE m 100",
            "BLMOVE m m LEFT RIGHT 0",
            "LRANGE m 0 -1",
            "%2 TTL m",
            "RPOPLPUSH m m",
            "%2 TTL m",
        ],
    );
}

// ---------------------------------------------------------------------------------------
// Tracking and keyspace events.

/// Sends `cmd` on `conn` and compares the next `n` frames (pushes included) from both.
fn frames(d: &mut DiffPair, conn: usize, cmd: &str, n: usize) {
    d.on(conn);
    if let Err(e) = d.check_raw(&encode_cmd(&args_of(cmd)), n, Cmp::Exact) {
        panic!("{conn}> {cmd}: {e}");
    }
}

/// Issue case 9: a RESP3 tracking client is told about keys written by STORE and POP
/// commands (the invalidation push before the next reply).
#[test]
fn tracking_invalidates_keys_written_by_store_and_pop_commands() {
    let mut d = DiffPair::start();
    script(&mut d, "setup", 0, &[GEO, "RPUSH l a b", "SADD s1 a", "ZADD zz 1 a 2 b"]);
    let _ = d.on(1).hello(3).unwrap_or_else(|e| panic!("{e}"));
    // (connection, command, frames Redis 7.0 answers it with)
    let steps: &[(usize, &str, usize)] = &[
        (1, "CLIENT TRACKING on", 1),
        (1, "GET dst", 1),
        (0, "GEORADIUS g 15 37 200 km STORE dst", 1),
        // Redis 7.0: `>2 invalidate [dst]`, then +PONG.
        (1, "PING", 2),
        (1, "ZRANGE dst 0 -1", 1),
        (0, "GEORADIUSBYMEMBER g Palermo 100 km STOREDIST dst", 1),
        // Redis 7.0: invalidate [dst], PONG.
        (1, "PING", 2),
        (1, "ZCARD dst", 1),
        (0, "GEOSEARCHSTORE dst g FROMLONLAT 15 37 BYRADIUS 200 km", 1),
        // Redis 7.0: invalidate [dst], PONG.
        (1, "PING", 2),
        (1, "LLEN l", 1),
        (0, "LMPOP 1 l LEFT", 1),
        // Redis 7.0: invalidate [l], PONG.
        (1, "PING", 2),
        (1, "LRANGE l 0 -1", 1),
        (0, "LMPOP 1 l LEFT COUNT 5", 1),
        // Redis 7.0: invalidate [l] (popped empty, deleted), PONG.
        (1, "PING", 2),
        (1, "SMEMBERS s1", 1),
        (1, "SCARD s2", 1),
        (0, "SMOVE s1 s2 a", 1),
        // Redis 7.0: invalidate [s1], invalidate [s2], PONG.
        (1, "PING", 3),
        (1, "ZRANGE zz 0 -1", 1),
        (0, "ZMPOP 1 zz MIN", 1),
        // Redis 7.0: invalidate [zz], PONG.
        (1, "PING", 2),
        // Redis 7.0: a read that fails with WRONGTYPE still tracks the key.
        (1, "GET dst", 1),
        (0, "SORT nol STORE dst", 1),
        // Redis 7.0: invalidate [dst] (the empty result deleted it), PONG.
        (1, "PING", 2),
        (1, "GET dst", 1),
        (0, "LMPOP 1 nol LEFT", 1),
        // Redis 7.0: nothing written, nothing pushed: PONG alone.
        (1, "PING", 1),
    ];
    for &(conn, cmd, n) in steps {
        frames(&mut d, conn, cmd, n);
    }
}

const SENTINEL: &str = "zz-effects-sentinel";
const SUB: usize = 5;

fn drain(conn: &mut Conn) -> Vec<Got> {
    conn.read_until(SENTINEL)
}

/// Issue case 10: the keyspace events of LMPOP, ZMPOP, SMOVE and GEO ... STORE.
#[test]
fn keyspace_events_of_mpop_smove_and_geo_store() {
    let mut d = DiffPair::start();
    // `n` too: `new` events are not part of `A`.
    script(&mut d, "config", 0, &["CONFIG SET notify-keyspace-events KEAn"]);
    {
        let (r, o) = d.conns(SUB);
        for c in [r, o] {
            c.cmd(&["PSUBSCRIBE", "__key*__:*"]).expect("psubscribe");
            c.read().expect("psubscribe reply");
            c.cmd(&["SUBSCRIBE", SENTINEL]).expect("subscribe");
            c.read().expect("subscribe reply");
        }
    }
    // Redis 7.0's events (keyspace then keyevent for each):
    let cmds = [
        "RPUSH l a b c",
        // lpop l
        "LMPOP 1 l LEFT COUNT 2",
        // rpop l, del l
        "LMPOP 1 l RIGHT",
        // none
        "LMPOP 1 l LEFT",
        "SADD s1 a b",
        // srem s1, sadd s2
        "SMOVE s1 s2 a",
        // srem s1, del s1, sadd s2
        "SMOVE s1 s2 b",
        "SADD s1 b",
        // b already in s2: srem s1, del s1 (no sadd)
        "SMOVE s1 s2 b",
        // none (same set; member missing)
        "SMOVE s2 s2 a",
        "SMOVE s2 s3 zz",
        GEO,
        // georadiusstore dst (STORE and STOREDIST alike, BYMEMBER too)
        "GEORADIUS g 15 37 200 km STORE dst",
        "GEORADIUS g 15 37 200 km STOREDIST dst",
        "GEORADIUSBYMEMBER g Palermo 100 km STORE dst",
        // empty result: del dst; again (no dst): none
        "GEORADIUS g 0 0 1 km STORE dst",
        "GEORADIUS g 0 0 1 km STORE dst",
        // geosearchstore dst
        "GEOSEARCHSTORE dst g FROMLONLAT 15 37 BYRADIUS 200 km",
        "ZADD z 1 a 2 b",
        // zpopmin z
        "ZMPOP 1 z MIN",
        // zpopmax z, del z
        "ZMPOP 1 z MAX COUNT 3",
        "SET k x",
        // RESTORE REPLACE over a key: new k, restore k (Redis's dbAdd raises `new` anyway)
        r#"RESTORE k 0 "\x00\x01v\n\x00\x91\x08\xce\xb2\x198\x8a\xce" REPLACE"#,
    ];
    let mut diffs = Vec::new();
    for (n, &line) in cmds.iter().enumerate() {
        if let Err(e) = lines(&mut d, 0, &[line]) {
            diffs.push(format!("#{n}: {e}"));
        }
        let _ = d.exchange(&["PUBLISH", SENTINEL, "x"]);
        let (r, o) = d.conns(SUB);
        let (a, b) = (drain(r), drain(o));
        if a != b {
            let all = |v: &[Got]| v.iter().map(show).collect::<Vec<_>>().join("\n      ");
            diffs.push(format!("#{n} `{line}`: events differ\n  redis: {}\n  ours:  {}", all(&a), all(&b)));
        }
    }
    assert!(diffs.is_empty(), "{} difference(s):\n{}", diffs.len(), diffs.join("\n"));
}
