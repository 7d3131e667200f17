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
    ];
    for case in cases {
        assert!(d.check(case).unwrap_or_else(|diff| panic!("{diff}")).is_ok());
    }
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
