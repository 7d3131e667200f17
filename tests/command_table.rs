//! The command table is generated from redis-server's own description of its commands; this
//! keeps it honest: for every command and subcommand we implement, `COMMAND INFO` (arity,
//! flags, key positions, ACL categories, tips, key specs) is byte-identical to Redis's, in
//! RESP2 and RESP3. Containers are compared through their subcommands, since we implement
//! only some of them. COMMAND GETKEYS is compared on a sample of real invocations.

mod common;

use common::diff::DiffPair;

#[test]
fn command_info_matches_redis_for_every_implemented_command() {
    let mut d = DiffPair::start();
    let mut failures = Vec::new();
    let mut compared = 0;
    for proto in [2u8, 3] {
        assert!(d.hello(proto).expect("hello").is_ok());
        for cmd in vermilion::commands::all_commands() {
            if !cmd.subcommands.is_empty() {
                continue;
            }
            compared += 1;
            if let Err(diff) = d.check(&[b"COMMAND".as_slice(), b"INFO", cmd.name.as_bytes()]) {
                failures.push(format!("RESP{proto}: {diff}"));
            }
        }
    }
    assert!(compared > 100, "only {compared} commands compared");
    assert!(failures.is_empty(), "{} differences, first:\n{}", failures.len(), failures[0]);
}

#[test]
fn command_getkeys_matches_redis() {
    let mut d = DiffPair::start();
    let cases: &[&[&[u8]]] = &[
        &[b"COMMAND", b"GETKEYS", b"SET", b"k", b"v"],
        &[b"COMMAND", b"GETKEYS", b"MSET", b"a", b"1", b"b", b"2"],
        &[b"COMMAND", b"GETKEYS", b"MGET", b"a", b"b", b"c"],
        &[b"COMMAND", b"GETKEYS", b"DEL", b"a", b"b"],
        &[b"COMMAND", b"GETKEYS", b"RENAME", b"a", b"b"],
        &[b"COMMAND", b"GETKEYS", b"LCS", b"a", b"b"],
        &[b"COMMAND", b"GETKEYS", b"PING", b"x"],
        &[b"COMMAND", b"GETKEYS", b"NOSUCH", b"x"],
        &[b"COMMAND", b"GETKEYS", b"GET", b"a", b"b"],
        &[b"COMMAND", b"GETKEYS", b"SINTERSTORE", b"d", b"a", b"b"],
        &[b"COMMAND", b"GETKEYS", b"HSET", b"h", b"f", b"v"],
        // The key-count finder lists the store key last.
        &[b"COMMAND", b"GETKEYS", b"ZUNIONSTORE", b"d", b"2abc", b"a", b"b"],
        // No key arguments is reported before a wrong arity.
        &[b"COMMAND", b"GETKEYS", b"SPUBLISH", b"ch", b"m"],
        &[b"COMMAND", b"GETKEYS", b"CLUSTER", b"INFO", b"x"],
    ];
    for case in cases {
        assert!(d.check(case).unwrap_or_else(|diff| panic!("{diff}")).is_ok());
    }
}

/// COMMAND GETKEYSANDFLAGS: the flags of the key spec that gave each key, or what Redis's own
/// key finder sets (SET and BITFIELD's variable flags, SORT, MIGRATE, the key-count finder's
/// none), in RESP2 and RESP3 (a set of status strings).
#[test]
fn command_getkeysandflags_matches_redis() {
    let mut d = DiffPair::start();
    let cases = [
        "SET a b",
        "SET a b GET EX 10",
        "LMOVE a b LEFT RIGHT",
        "GET",
        "NOSUCH a",
        "PING x",
        "GET a b",
        "EVAL x 2 a b",
        "EVAL x 1abc k",
        "EVAL x 0",
        "EVAL x 5 a",
        "FCALL f 1 a",
        "SORT k",
        "SORT k BY x STORE d",
        "SORT_RO k",
        "SORT k LIMIT 0 1 STORE d STORE e",
        "ZUNIONSTORE d 2 a b",
        "ZUNIONSTORE d 2abc a b",
        "ZUNION 2 a b",
        "MIGRATE h 1 k 0 0",
        "MIGRATE h 1 k 0 0 KEYS a",
        "SPUBLISH ch m",
        "LMPOP 2 a b LEFT",
        "BLMPOP 0 2 a b LEFT",
        "GEORADIUS k 0 0 1 km STORE d STOREDIST e",
        "GEORADIUS_RO k 0 0 1 km",
        "BITFIELD k GET u8 0",
        "BITFIELD k SET u8 0 1",
        "BITFIELD k OVERFLOW SAT",
        "BITFIELD_RO k GET u8 0",
        "OBJECT ENCODING k",
        "MSET a 1 b 2",
        "RENAME a b",
        "SMOVE a b m",
        "BITOP AND d a b",
        "GEOSEARCHSTORE d s FROMMEMBER m BYRADIUS 1 km",
        "PFMERGE d a b",
        "BRPOPLPUSH a b 0",
        "CLUSTER INFO",
        "CLIENT UNBLOCK 1",
    ];
    for proto in [2u8, 3] {
        assert!(d.hello(proto).expect("hello").is_ok());
        for case in cases {
            let mut args: Vec<&[u8]> = vec![b"COMMAND", b"GETKEYSANDFLAGS"];
            args.extend(case.split(' ').map(str::as_bytes));
            if let Err(diff) = d.check(&args) {
                panic!("RESP{proto}: {diff}");
            }
        }
        // An empty source key for MIGRATE's KEYS form.
        if let Err(diff) = d.check(&[&b"COMMAND"[..], b"GETKEYSANDFLAGS", b"MIGRATE", b"h", b"1", b"", b"0", b"0", b"KEYS", b"a", b"b"]) {
            panic!("{diff}");
        }
    }
}

/// Without cluster mode, Redis answers CLUSTER's subcommands, READONLY, READWRITE and ASKING
/// with one error (client libraries probe CLUSTER INFO); arity and unknown subcommands first.
#[test]
fn cluster_commands_answer_cluster_support_disabled() {
    let mut d = DiffPair::start();
    d.assert_script(
        "cluster",
        &[
            "CLUSTER INFO",
            "CLUSTER",
            "CLUSTER foo",
            "CLUSTER HELP",
            "CLUSTER KEYSLOT foo",
            "CLUSTER KEYSLOT",
            "CLUSTER NODES x",
            "CLUSTER SLOTS",
            "CLUSTER SHARDS",
            "READONLY",
            "READWRITE",
            "ASKING",
            "READONLY x",
            "MULTI",
            "CLUSTER INFO",
            "EXEC",
            "EVAL \"return redis.pcall('cluster','info')\" 0",
        ],
    );
}

/// COMMAND DOCS has Redis's fields and values for every implemented command (deprecation
/// fields included, complexity absent where Redis has none), but for `history` and
/// `arguments`, which Vermilion does not carry (docs/COMPATIBILITY.md).
#[test]
fn command_docs_match_redis_but_for_history_and_arguments() {
    use common::diff::Resp;
    let mut d = DiffPair::start();
    // The (field, value) pairs of one command's docs, as raw bytes, without those two.
    fn fields(r: &Resp) -> Vec<(Vec<u8>, Vec<u8>)> {
        let Resp::Agg(_, outer) = r else { panic!("{r:?}") };
        let Some(Resp::Agg(_, items)) = outer.get(1) else { return Vec::new() };
        items
            .chunks(2)
            .filter_map(|kv| {
                let Resp::Blob(_, k) = &kv[0] else { panic!("{kv:?}") };
                if k == b"history" || k == b"arguments" || k == b"subcommands" {
                    return None;
                }
                let mut v = Vec::new();
                kv[1].encode(&mut v);
                Some((k.clone(), v))
            })
            .collect()
    }
    let mut compared = 0;
    for cmd in vermilion::commands::all_commands() {
        let args = [b"COMMAND".as_slice(), b"DOCS", cmd.name.as_bytes()];
        let (Ok(ours), Ok(redis)) = (d.ours_call(&args), d.redis_call(&args)) else { panic!("{}", cmd.name) };
        assert_eq!(fields(&ours.value), fields(&redis.value), "COMMAND DOCS {}", cmd.name);
        compared += 1;
    }
    assert!(compared > 250, "only {compared} commands compared");
}
