//! The Lua libraries scripts get (cjson, cmsgpack, struct, bit), differentially against the
//! real redis-server 7.0: every line of `tests/lua_cases/<lib>.lua.txt` is a script body run
//! with EVAL on both servers; the replies must be identical byte for byte. The cases cover
//! each library's types, boundaries, options, error texts and the shapes of the known Redis
//! Lua CVEs (deep nesting, huge counts, overflowing formats), which must fail cleanly.

mod common;

use common::diff::DiffPair;

fn run_cases(file: &str, min_cases: usize) {
    let path = format!("{}/tests/lua_cases/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let cases: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty() && !l.starts_with("--#")).collect();
    assert!(cases.len() >= min_cases, "{file}: only {} cases", cases.len());
    let mut d = DiffPair::start();
    let mut diffs = Vec::new();
    for (i, body) in cases.iter().enumerate() {
        if let Err(diff) = d.check(&["EVAL", body, "0"]) {
            diffs.push(format!("{file} line {}: {diff}", i + 1));
        }
    }
    // Both servers must still be alive and answering after the hostile cases.
    let _ = d.check(&["PING"]).expect("both servers still answer");
    assert!(diffs.is_empty(), "{} of {} cases differ:\n{}", diffs.len(), cases.len(), diffs.join("\n"));
}

#[test]
fn cjson_matches_redis() {
    run_cases("cjson.lua.txt", 300);
}

#[test]
fn cmsgpack_matches_redis() {
    run_cases("cmsgpack.lua.txt", 300);
}

#[test]
fn struct_matches_redis() {
    run_cases("struct.lua.txt", 200);
}

#[test]
fn bit_matches_redis() {
    run_cases("bit.lua.txt", 100);
}
