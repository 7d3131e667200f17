//! Streams, differentially against the real redis-server 7.0: every case runs on vermilion
//! and on redis-server and the raw reply bytes must be identical, under RESP2 and RESP3.
//! Covered: XADD (IDs, `ms-*`, NOMKSTREAM, MAXLEN/MINID with `=`/`~`/LIMIT, the errors and
//! their order), XRANGE/XREVRANGE bounds, XLEN, XDEL, XTRIM (exact and approximate trimming,
//! which removes whole nodes only: checked over hundreds of entries and small
//! `stream-node-max-entries`, and over entries big enough for `stream-node-max-bytes` to
//! decide), XREAD without BLOCK, XGROUP (every subcommand), XREADGROUP, XACK, XPENDING,
//! XCLAIM, XAUTOCLAIM, XINFO (STREAM, FULL, GROUPS with entries-read and lag, CONSUMERS,
//! HELP), XSETID, the generic key commands on streams (TYPE, OBJECT ENCODING, SCAN TYPE,
//! COPY, RENAME, MOVE, EXPIRE, DEBUG DIGEST/DIGEST-VALUE, WRONGTYPE both ways), DUMP/RESTORE
//! of stream payloads in both directions and the stream keyspace events.
//! The blocking forms are in `tests/streams_blocking.rs`.
//!
//! Script lines follow tests/common/diff.rs (`N>` connection, `~` unordered, `%N` integers
//! within N, `?` integers ignored); a line starting with `R2:` or `R3:` runs only under that
//! protocol version, and a line starting with `@` is compared with its time-dependent integers
//! loosened (see [`loosen`]): idle times (XPENDING's extended form, XINFO CONSUMERS' `idle`)
//! and absolute times (XINFO STREAM FULL's `seen-time` and delivery times) within
//! [`TIME_TOLERANCE_MS`]. XINFO STREAM's node counts (`radix-tree-keys`, the listpack nodes,
//! and `radix-tree-nodes`, the inner nodes of Redis's radix tree over them) are compared
//! exactly, except for a stream restored from the other server's DUMP (see `LAYOUT_LOOSE`).

mod common;

use std::time::{SystemTime, UNIX_EPOCH};

use common::diff::{parse_script_line, show, show_cmd, DiffPair, Got, Resp};
use common::stream_loose::{same_loosely, LAYOUT_LOOSE, TIME_TOLERANCE_MS};

/// One command compared loosely; the difference printed.
fn check_loose<A: AsRef<[u8]>>(d: &mut DiffPair, args: &[A]) -> Result<Got, String> {
    let top_pel = args.first().is_some_and(|a| a.as_ref().eq_ignore_ascii_case(b"XPENDING"));
    let (a, b) = d.exchange(args);
    if same_loosely(&a, &b, top_pel) {
        return Ok(a);
    }
    let sent: Vec<Vec<u8>> = args.iter().map(|x| x.as_ref().to_vec()).collect();
    Err(format!(
        "difference on connection {} (times within {TIME_TOLERANCE_MS} ms)\n  sent:  {}\n  redis: {}\n  ours:  {}",
        d.current(),
        show_cmd(&sent),
        show(&a),
        show(&b)
    ))
}

/// Runs script lines (the `@` prefix as in the module docs); every difference, printed.
fn run(d: &mut DiffPair, lines: &[&str]) -> Vec<String> {
    let mut diffs = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        let (loose, rest) = match line.trim_start().strip_prefix('@') {
            Some(rest) => (true, rest),
            None => (false, *line),
        };
        let (conn, cmp, args) = parse_script_line(rest);
        let Some(args) = args else { continue };
        d.on(conn.unwrap_or(0));
        let outcome =
            if loose { check_loose(d, &args).map(|_| ()) } else { d.check_with(&args, cmp).map(|_| ()).map_err(|e| e.to_string()) };
        if let Err(e) = outcome {
            diffs.push(format!("line {n} `{line}`: {e}"));
        }
    }
    d.on(0);
    diffs
}

fn assert_run(d: &mut DiffPair, name: &str, lines: &[&str]) {
    let diffs = run(d, lines);
    assert!(diffs.is_empty(), "script '{name}': {} of {} lines differ from redis-server:\n{}", diffs.len(), lines.len(), diffs.join("\n"));
}

/// Runs `script` under RESP2 then RESP3, each from an empty keyspace (lines prefixed `R2:` /
/// `R3:` only under that version), with every connection back to RESP2 afterwards.
fn both_protocols(d: &mut DiffPair, name: &str, script: &[&str]) {
    for proto in [2u8, 3] {
        d.reset_conns();
        assert_run(d, "flush", &["FLUSHALL"]);
        let tag = format!("R{proto}:");
        let other = if proto == 2 { "R3:" } else { "R2:" };
        let lines: Vec<String> = script
            .iter()
            .filter(|l| !l.trim_start().starts_with(other))
            .map(|l| l.trim_start().strip_prefix(tag.as_str()).unwrap_or(l).trim_start().to_string())
            .collect();
        // Connections the script uses speak `proto` from the start.
        let max_conn = lines.iter().filter_map(|l| parse_script_line(l.trim_start_matches('@')).0).max().unwrap_or(0);
        for c in 0..=max_conn {
            d.on(c);
            assert!(d.hello(proto).expect("HELLO").is_ok());
        }
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        assert_run(d, &format!("{name} (RESP{proto})"), &lines);
    }
    d.reset_conns();
}

/// Both servers; DEBUG is allowed on both (Redis 7.0's default refuses it).
fn start() -> DiffPair {
    DiffPair::start_with(&["--enable-debug-command", "yes"], &[])
}

/// `XADD key <ms>-<seq> f <i>` lines for `n` entries from `first`, one ms apart.
fn xadds(key: &str, first: u64, n: u64, value: &str) -> Vec<String> {
    (0..n).map(|i| format!("XADD {key} {}-1 f{} {value}{i}", first + i, i % 3)).collect()
}

fn lines_of(owned: &[String]) -> Vec<&str> {
    owned.iter().map(String::as_str).collect()
}

// ---------------------------------------------------------------------------------------
// XADD, XRANGE, XREVRANGE, XLEN, XDEL

const XADD_SCRIPT: &[&str] = &[
    "XADD s 1-1 f v",
    "XADD s 1-1 f v",
    "XADD s 1-0 f v",
    "XADD s 0-5 f v",
    "XADD s 1-2 f v g w",
    "XADD s 1 f v",
    "XADD s 1-* f v",
    "XADD s 2-* f v",
    "XADD s 2-* f v",
    "XADD s 1-* f v",
    "XADD s 3 f v",
    "XADD s 3-0 f v",
    "XADD s 0-0 f v",
    "XADD s 5-1 f v f v",
    "XRANGE s 5-1 5-1",
    "XADD new 0-0 f v",
    "XADD new 0 f v",
    "XADD new 0-0 MAXLEN 1 f v",
    "EXISTS new",
    "XADD new 0-* f v",
    "XADD new 0-* f v",
    "XADD new2 0-1 f v",
    "XADD new3 0-*",
    "XADD new3 0-0 f",
    "EXISTS new3",
    // `*` after a huge explicit ID: the clock is behind, so `*` continues the sequence.
    "XADD s4 99999999999999-5 a 1",
    "XADD s4 * a 2",
    "XADD s4 * a 3 b 4",
    "XADD s4 99999999999999-* a 5",
    "XADD s4 100000000000000-* a 6",
    "XADD s4 * a 7",
    "XRANGE s4 - +",
    // The last possible ID.
    "XADD top 18446744073709551615-18446744073709551614 f v",
    "XADD top * f v",
    "XADD top * f v",
    "XADD top 18446744073709551615-* f v",
    "XADD top 1-1 f v",
    "XLEN top",
    "XADD top2 18446744073709551615-* f v",
    "XADD top2 18446744073709551615-* f v",
    "XADD top3 18446744073709551615-18446744073709551615 f v",
    "XADD top3 abc f v",
    "XADD top3 0-0 f v",
    // Invalid IDs (strtoull's leading '+' and spaces are accepted, as in Redis).
    "XADD s 18446744073709551616-0 f v",
    "XADD s 1-18446744073709551616 f v",
    "XADD s -1 f v",
    "XADD s abc f v",
    "XADD s 1-2-3 f v",
    "XADD s 1- f v",
    "XADD s -1-1 f v",
    "XADD s \"\" f v",
    "XADD s 1-x f v",
    "XADD s *-1 f v",
    "XADD s - f v",
    "XADD s + f v",
    "XADD s 10-** f v",
    "XADD s ** f v",
    "XADD s 0x10 f v",
    "XADD s 1.5 f v",
    "XADD s +10 f v",
    "XADD s \" 11\" f v",
    "XADD s 12-+1 f v",
    "XADD s 13-01 f v",
    "XADD s 014-1 f v",
    "XRANGE s - +",
    // Arity: the field count is checked after the options and the ID.
    "XADD s 20-1 f",
    "XADD s 20-1 f v g",
    "XADD s 20-1",
    "XADD s abc f",
    "XADD s 0-0 f",
    "XADD s MAXLEN -1 20-1 f",
    "XADD s",
    "XADD",
    "XADD s NOMKSTREAM",
    "XADD s MAXLEN 5",
    // NOMKSTREAM
    "XADD nomk NOMKSTREAM 1-1 f v",
    "EXISTS nomk",
    "XADD nomk nomkstream * f v",
    "XADD nomk NOMKSTREAM MAXLEN 0 1-1 f v",
    "XADD nomk NOMKSTREAM 0-0 f v",
    "XADD nomk NOMKSTREAM 1-1 f",
    "EXISTS nomk",
    "XADD s NOMKSTREAM 30-1 f v",
    "XADD s NOMKSTREAM NOMKSTREAM 30-2 f v",
    "XADD s 30-3 NOMKSTREAM v",
    // Fields and values: binary, empty, integers, repeated names, new field sets.
    "XADD e 1-1 \"\" \"\"",
    "XADD e 2-1 \"bin\\x00ary\" \"v\\r\\nal\"",
    "XADD e 3-1 f1 v1 f2 v2 f3 v3",
    "XADD e 4-1 f1 x f2 y f3 z",
    "XADD e 5-1 f2 x f1 y",
    "XADD e 6-1 f1 1 f2 -2 f3 12345678901234567890",
    "XADD e 7-1 f1 1.5 f2 007 f3 \" 1\" f4 -0",
    "XADD e 8-1 f1 9223372036854775807 f2 -9223372036854775808 f3 9223372036854775808",
    "XADD e 9-1 dup a dup b",
    "XRANGE e - +",
    "XLEN e",
    "xadd E 1-1 F V",
    "XRANGE E - +",
    // Wrong type.
    "SET str x",
    "XADD str 1-1 f v",
    "XADD str NOMKSTREAM 1-1 f v",
    "XADD str 1-1 f",
    "XADD str 0-0 f v",
    "XADD str abc f v",
    "XADD str MAXLEN x 1-1 f v",
    "XLEN str",
    "XRANGE str - +",
    "XREVRANGE str + -",
    "XDEL str 1-1",
    "XTRIM str MAXLEN 1",
    "XTRIM str MAXLEN x",
    "XLEN nokey",
    "XDEL nokey 1-1",
    "XDEL nokey abc",
    "XTRIM nokey MAXLEN 0",
    "EXISTS nokey",
];

#[test]
fn xadd_ids_fields_and_errors() {
    let mut d = start();
    both_protocols(&mut d, "xadd", XADD_SCRIPT);
}

/// `*` takes the clock's milliseconds (sequence 0, or the next one in the same millisecond):
/// the two servers' IDs are compared by shape and within a second of each other and of this
/// machine's clock.
#[test]
fn xadd_star_ids_follow_the_clock() {
    let mut d = start();
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_millis() as i64;
    let parse = |got: &Got| -> (i64, u64) {
        let r = got.as_ref().unwrap_or_else(|e| panic!("XADD *: {e}"));
        let id = String::from_utf8(r.value.as_bytes().expect("a bulk ID").to_vec()).expect("utf8");
        let (ms, seq) = id.split_once('-').unwrap_or_else(|| panic!("not an ID: {id}"));
        (ms.parse().expect("ms"), seq.parse().expect("seq"))
    };
    let mut last = None;
    for i in 0..20 {
        let (a, b) = d.exchange(&["XADD", "clock", "*", "n", &i.to_string()]);
        let (ra, rb) = (parse(&a), parse(&b));
        assert!((ra.0 - rb.0).abs() < 1000 && (ra.0 - now_ms).abs() < 10_000, "redis {ra:?}, ours {rb:?}, clock {now_ms}");
        if let Some((ms, seq)) = last {
            // Ours increases like Redis's: same ms -> next seq, later ms -> seq 0.
            assert!(rb.0 > ms && rb.1 == 0 || rb.0 == ms && rb.1 == seq + 1, "ours went from {ms}-{seq} to {rb:?}");
        }
        last = Some(rb);
    }
    // `ms-*` right after: an earlier ms fails, the same ms continues the sequence.
    let (ms, seq) = last.expect("ids");
    let same = format!("{ms}-*");
    let (_, b) = d.exchange(&["XADD", "clock", &same, "n", "x"]);
    assert_eq!(parse(&b), (ms, seq + 1));
    assert_run(&mut d, "star", &["DEL clock", "XADD clock 5-* f v", "XADD clock 1-* f v", "XADD clock 5 f v", "XLEN clock"]);
}

const RANGE_SCRIPT: &[&str] = &[
    "XADD r 1-0 a 1",
    "XADD r 1-1 a 2",
    "XADD r 1-5 a 3",
    "XADD r 2-0 a 4",
    "XADD r 3-18446744073709551615 a 5",
    "XADD r 5-0 a 6 b 7",
    "XADD r 18446744073709551615-0 a 8",
    "XRANGE r - +",
    "XREVRANGE r + -",
    "XRANGE r 1 1",
    "XRANGE r 1 2",
    "XRANGE r 1-1 1-5",
    "XRANGE r 1-2 1-4",
    "XRANGE r (1-1 +",
    "XRANGE r - (1-5",
    "XRANGE r (1-0 (2-0",
    "XRANGE r (1 +",
    "XRANGE r - (2",
    "XRANGE r (2 3",
    "XRANGE r (3-18446744073709551615 +",
    "XRANGE r (0-0 1-0",
    "XRANGE r - (0-0",
    "XRANGE r (18446744073709551615-18446744073709551615 +",
    "XRANGE r - (18446744073709551615-18446744073709551615",
    "XRANGE r (18446744073709551615-18446744073709551614 +",
    "XRANGE r (- +",
    "XRANGE r - (+",
    "XRANGE r ( +",
    "XRANGE r (( +",
    "XRANGE r 5 1",
    "XRANGE r 3 3",
    "XRANGE r 18446744073709551615 18446744073709551615",
    "XRANGE r 3-18446744073709551615 +",
    "XRANGE r - + COUNT 2",
    "XRANGE r - + COUNT 0",
    "XRANGE r - + COUNT -1",
    "XRANGE r - + COUNT 100",
    "XRANGE r - + count 1 COUNT 3",
    "XRANGE r - + COUNT",
    "XRANGE r - + COUNT x",
    "XRANGE r - + COUNT 1.5",
    "XRANGE r - + LIMIT 1",
    "XRANGE r - + COUNT 1 foo",
    "XRANGE r abc +",
    "XRANGE r - abc",
    "XRANGE r 1-x +",
    "XRANGE r -1 +",
    "XRANGE r \"\" +",
    "XRANGE r - + COUNT 1 COUNT",
    "XRANGE r -",
    "XRANGE r",
    "XREVRANGE r + - COUNT 2",
    "XREVRANGE r + - COUNT 0",
    "XREVRANGE r 2 1",
    "XREVRANGE r (5 (1",
    "XREVRANGE r (1-1 -",
    "XREVRANGE r + (3-18446744073709551615",
    "XREVRANGE r (0-0 -",
    "XREVRANGE r + (18446744073709551615-18446744073709551615",
    "XREVRANGE r 1 5",
    "XREVRANGE r + - COUNT -5",
    "XREVRANGE r abc -",
    "XREVRANGE r + - FOO",
    "XRANGE nokey - +",
    "XRANGE nokey abc +",
    "XRANGE nokey - + COUNT x",
    "XREVRANGE nokey + -",
    "XRANGE nokey (0-0 +",
    // XDEL and XLEN, with the ID parse first (nothing deleted on a bad ID).
    "XLEN r",
    "XDEL r 1-1",
    "XDEL r 1-1",
    "XDEL r 1-5 9-9 2-0 2-0",
    "XDEL r 5-0 abc",
    "XDEL r 5-0 -",
    "XDEL r 5-0 +",
    "XDEL r 5",
    "XDEL r",
    "XLEN r",
    "XRANGE r - +",
    "XDEL r 1-0 3-18446744073709551615 18446744073709551615-0",
    "XLEN r",
    "XRANGE r - +",
    "EXISTS r",
    "XADD r 4-0 a x",
    "XADD r 18446744073709551615-1 a x",
    "XRANGE r - +",
];

#[test]
fn xrange_xrevrange_xlen_xdel() {
    let mut d = start();
    both_protocols(&mut d, "ranges", RANGE_SCRIPT);
}

// ---------------------------------------------------------------------------------------
// Trimming: XTRIM and XADD's MAXLEN / MINID. `~` removes whole listpack nodes only, so the
// node layout must be Redis's: a node takes `stream-node-max-entries` entries (deleted ones
// included) unless `stream-node-max-bytes` closes it first; COPY keeps the layout.

/// Run on a copy `t` of `base` (250 entries, IDs 1-1 .. 250-1) after every `COPY base t
/// REPLACE` line; `@XINFO STREAM t` shows the node count (`radix-tree-keys`), the first
/// and last entries and the counters.
const TRIM_SCRIPT: &[&str] = &[
    "COPY base t REPLACE",
    "@XINFO STREAM t",
    "XTRIM t MAXLEN 300",
    "XTRIM t MAXLEN ~ 300",
    "XTRIM t MAXLEN ~ 249",
    "XTRIM t MAXLEN ~ 150",
    "@XINFO STREAM t",
    "XTRIM t MAXLEN ~ 150",
    "XTRIM t MAXLEN = 120",
    "@XINFO STREAM t",
    "XTRIM t MAXLEN ~ 20",
    "@XINFO STREAM t",
    "XRANGE t - + COUNT 3",
    "XTRIM t MAXLEN 0",
    "@XINFO STREAM t",
    "XADD t 300-1 f v",
    "@XINFO STREAM t",
    "COPY base t REPLACE",
    "XTRIM t MAXLEN ~ 0",
    "@XINFO STREAM t",
    "COPY base t REPLACE",
    "XTRIM t MAXLEN ~ 10 LIMIT 30",
    "XTRIM t MAXLEN ~ 10 LIMIT 0",
    "XLEN t",
    "COPY base t REPLACE",
    "XTRIM t MAXLEN ~ 10 LIMIT 200",
    "@XINFO STREAM t",
    "XTRIM t MAXLEN = 10",
    "XTRIM t maxlen = 5",
    "XRANGE t - +",
    // MINID
    "COPY base t REPLACE",
    "XTRIM t MINID 0",
    "XTRIM t MINID 1-1",
    "XTRIM t MINID 1-2",
    "XTRIM t MINID ~ 95",
    "@XINFO STREAM t",
    "XTRIM t MINID ~ 131-1",
    "XTRIM t MINID = 131-1",
    "@XINFO STREAM t",
    "XTRIM t MINID ~ 240 LIMIT 50",
    "XTRIM t MINID ~ 240 LIMIT 500",
    "@XINFO STREAM t",
    "XTRIM t MINID 18446744073709551615-18446744073709551615",
    "@XINFO STREAM t",
    // Exact trimming inside a node leaves the node; XDEL holes count in the node too.
    "COPY base t REPLACE",
    "XTRIM t MAXLEN 245",
    "XDEL t 10-1 11-1 12-1 13-1 249-1 250-1",
    "@XINFO STREAM t",
    "XTRIM t MAXLEN ~ 200",
    "XTRIM t MAXLEN ~ 139",
    "@XINFO STREAM t",
    "XADD t 251-1 f v",
    "XADD t 252-1 g w",
    "@XINFO STREAM t",
    "XDEL t 251-1 252-1",
    "@XINFO STREAM t",
    "XADD t 253-1 f v",
    "@XINFO STREAM t",
    // XADD with trimming: the ID comes back, the trimming happens after the append.
    "COPY base t REPLACE",
    "XADD t MAXLEN 5 251-1 f v",
    "XRANGE t - +",
    "COPY base t REPLACE",
    "XADD t MAXLEN ~ 100 251-1 f v",
    "XADD t MAXLEN ~ 100 LIMIT 10 252-1 f v",
    "XADD t MAXLEN ~ 100 LIMIT 1000 253-1 f v",
    "@XINFO STREAM t",
    "XADD t MAXLEN = 3 NOMKSTREAM 254-1 f v",
    "XADD t MAXLEN 0 255-1 f v",
    "@XINFO STREAM t",
    "COPY base t REPLACE",
    "XADD t MINID 200 251-1 f v",
    "XADD t MINID ~ 240 252-1 f v",
    "XADD t MINID = 300 300-1 f v",
    "@XINFO STREAM t",
    "XADD t MINID 0 300-1 f v",
    "XADD t MAXLEN 1 300-1 f v",
    "XLEN t",
    // Errors, in Redis's order.
    "XTRIM t",
    "XTRIM t MAXLEN",
    "XTRIM t MAXLEN ~",
    "XTRIM t MAXLEN = x",
    "XTRIM t MAXLEN -1",
    "XTRIM t MAXLEN ~ -1",
    "XTRIM t MAXLEN 1.5",
    "XTRIM t FOO 1",
    "XTRIM t LIMIT 10",
    "XTRIM t LIMIT 0 MAXLEN 5",
    "XTRIM t MAXLEN 5 LIMIT 10",
    "XTRIM t MAXLEN ~ 5 LIMIT -1",
    "XTRIM t MAXLEN ~ 5 LIMIT x",
    "XTRIM t MAXLEN ~ 5 LIMIT",
    "XTRIM t MAXLEN 1 MINID 1",
    "XTRIM t MINID 1 MAXLEN 1",
    "XTRIM t MAXLEN 1 MAXLEN 2",
    "XTRIM t MINID abc",
    "XTRIM t MINID -",
    "XTRIM t MINID +",
    "XTRIM t MINID ~ (5",
    "XTRIM t MAXLEN 5 NOMKSTREAM",
    "XTRIM t MAXLEN 1 1-1",
    "XTRIM t MAXLEN 18446744073709551616",
    "XTRIM nokey MAXLEN 1 MINID 1",
    "XTRIM nokey LIMIT 5",
    "XADD t MAXLEN 5 MINID 5 1-1 f v",
    "XADD t LIMIT 5 1-1 f v",
    "XADD t MAXLEN 5 LIMIT 5 1-1 f v",
    "XADD t MAXLEN ~ 5 LIMIT -1 1-1 f v",
    "XADD t MAXLEN -5 1-1 f v",
    "XADD t MAXLEN x 1-1 f v",
    "XADD t MINID x 1-1 f v",
    "XADD t MAXLEN ~ 5 LIMIT 5 NOMKSTREAM 0-0 f v",
    "XADD t MAXLEN 5 * f",
    "XADD t MAXLEN = 5 FOO f v",
    "XADD t MAXLEN 5 LIMIT 5",
    "XLEN t",
];

/// Entries of 1500 bytes: two fill a 4096-byte node, whatever `stream-node-max-entries` is.
const BIG_TRIM_SCRIPT: &[&str] = &[
    "COPY bigbase t REPLACE",
    "@XINFO STREAM t",
    "XTRIM t MAXLEN ~ 15",
    "@XINFO STREAM t",
    "XTRIM t MINID ~ 10",
    "@XINFO STREAM t",
    "XTRIM t MAXLEN ~ 4 LIMIT 4",
    "XTRIM t MAXLEN = 3",
    "@XINFO STREAM t",
    "XRANGE t - + COUNT 1",
];

#[test]
fn trimming_follows_redis_nodes() {
    let mut d = start();
    let base = xadds("base", 1, 250, "v");
    let bigbase = xadds("bigbase", 1, 20, &"x".repeat(1500));
    for node_entries in ["100", "10", "7", "1"] {
        assert_run(&mut d, "config", &["FLUSHALL", &format!("CONFIG SET stream-node-max-entries {node_entries}")]);
        assert_run(&mut d, "base", &lines_of(&base));
        let diffs = run(&mut d, TRIM_SCRIPT);
        assert!(diffs.is_empty(), "stream-node-max-entries {node_entries}: {} differences:\n{}", diffs.len(), diffs.join("\n"));
    }
    for node_entries in ["100", "0"] {
        assert_run(&mut d, "config", &["FLUSHALL", &format!("CONFIG SET stream-node-max-entries {node_entries}")]);
        assert_run(&mut d, "bigbase", &lines_of(&bigbase));
        let diffs = run(&mut d, BIG_TRIM_SCRIPT);
        assert!(
            diffs.is_empty(),
            "big entries, stream-node-max-entries {node_entries}: {} differences:\n{}",
            diffs.len(),
            diffs.join("\n")
        );
    }
    // A node limit reached by entries deleted in the last node: the next XADD opens a node.
    assert_run(
        &mut d,
        "deleted entries fill nodes",
        &[
            "FLUSHALL",
            "CONFIG SET stream-node-max-entries 3",
            "XADD n 1-1 f v",
            "XADD n 2-1 f v",
            "XDEL n 2-1",
            "XADD n 3-1 f v",
            "@XINFO STREAM n",
            "XADD n 4-1 f v",
            "@XINFO STREAM n",
            "XDEL n 4-1",
            "@XINFO STREAM n",
            "XADD n 5-1 f v",
            "@XINFO STREAM n",
            "XTRIM n MAXLEN ~ 1",
            "@XINFO STREAM n",
            "CONFIG SET stream-node-max-entries 100",
        ],
    );
}

// ---------------------------------------------------------------------------------------
// XREAD (no BLOCK here), consumer groups

const XREAD_SCRIPT: &[&str] = &[
    "XADD a 1-1 f a1",
    "XADD a 2-1 f a2",
    "XADD a 3-1 f a3",
    "XADD b 5-1 f b1",
    "XREAD STREAMS a 0",
    "XREAD STREAMS a 0-0",
    "XREAD STREAMS a 1-1",
    "XREAD STREAMS a 1",
    "XREAD STREAMS a 3-1",
    "XREAD STREAMS a $",
    "XREAD COUNT 1 STREAMS a 0",
    "XREAD COUNT 2 STREAMS a b 0 0",
    "XREAD COUNT 0 STREAMS a 0",
    "XREAD COUNT -1 STREAMS a 0",
    "XREAD count 1 COUNT 2 STREAMS a 0",
    "XREAD STREAMS a b 3-1 0",
    "XREAD STREAMS nokey b 0 0",
    "XREAD STREAMS b a $ 1-1",
    "XREAD STREAMS a a 0 2-1",
    "XREAD STREAMS nokey 0",
    "XREAD STREAMS nokey $",
    "XREAD STREAMS a 18446744073709551615-18446744073709551615",
    "XREAD STREAMS a (0",
    "XREAD STREAMS a -",
    "XREAD STREAMS a +",
    "XREAD STREAMS a >",
    "XREAD STREAMS a abc",
    "XREAD STREAMS a",
    "XREAD STREAMS a b 0",
    "XREAD STREAMS",
    "XREAD COUNT 1 a 0",
    "XREAD COUNT x STREAMS a 0",
    "XREAD COUNT",
    "XREAD FOO STREAMS a 0",
    "XREAD GROUP g c STREAMS a 0",
    "XREAD NOACK STREAMS a 0",
    "XREAD BLOCK x STREAMS a 0",
    "XREAD BLOCK -1 STREAMS a 0",
    "XREAD BLOCK 10 STREAMS a 0",
    "XREAD BLOCK 10 COUNT 1 STREAMS a b 0 $",
    "XREAD STREAMS a 0 STREAMS b 0",
    "XREAD STREAMS STREAMS a 0",
    "XREAD",
    "XDEL a 3-1",
    "XREAD STREAMS a 2-1",
    "XREAD STREAMS a $",
    "SET str v",
    "XREAD STREAMS str 0",
    "XREAD STREAMS a str 0 0",
    "XREAD STREAMS nokey str 0 0",
    "XREAD STREAMS str abc",
    "XREADGROUP GROUP g c STREAMS str >",
];

#[test]
fn xread_without_blocking() {
    let mut d = start();
    both_protocols(&mut d, "xread", XREAD_SCRIPT);
}

const XGROUP_SCRIPT: &[&str] = &[
    "XGROUP HELP",
    "xgroup help",
    "XGROUP HELP extra",
    "XGROUP",
    "XGROUP FOO",
    "XGROUP FOO s g",
    "XGROUP FOO s g x",
    "XGROUP CREATE s g $",
    "XGROUP CREATE s g 0",
    "XGROUP CREATE s g $ MKSTREAM",
    "XGROUP CREATE s g $ MKSTREAM",
    "XGROUP CREATE s g2 0 MKSTREAM",
    "TYPE s",
    "XLEN s",
    "XADD s 1-1 f v",
    "XADD s 2-1 f v",
    "XADD s 3-1 f v",
    "XGROUP CREATE s g3 $",
    "XGROUP CREATE s g4 2-1",
    "XGROUP CREATE s g5 2",
    "XGROUP CREATE s g6 100-0",
    "XGROUP CREATE s g7 0 ENTRIESREAD 2",
    "XGROUP CREATE s g8 0 ENTRIESREAD -1",
    "XGROUP CREATE s g9 0 ENTRIESREAD -2",
    "XGROUP CREATE s g9 0 ENTRIESREAD x",
    "XGROUP CREATE s g9 0 ENTRIESREAD",
    "XGROUP CREATE s g9 0 MKSTREAM ENTRIESREAD 1 MKSTREAM",
    "XGROUP CREATE s g10 0 FOO",
    "XGROUP CREATE s g10 -",
    "XGROUP CREATE s g10 +",
    "XGROUP CREATE s g10 abc",
    "XGROUP CREATE s g10 >",
    "XGROUP CREATE s g10",
    "XGROUP CREATE s",
    "XGROUP CREATE s g10 0 MKSTREAM ENTRIESREAD 1 MKSTREAM extra",
    "XGROUP CREATE nokey g 0",
    "XGROUP CREATE nokey g abc",
    "XGROUP CREATE nokey g abc MKSTREAM",
    "EXISTS nokey",
    "XINFO GROUPS s",
    // SETID
    "XGROUP SETID s g 2-1",
    "XGROUP SETID s g $",
    "XGROUP SETID s g 0 ENTRIESREAD 0",
    "XGROUP SETID s g 1 ENTRIESREAD 5",
    "XGROUP SETID s g -",
    "XGROUP SETID s g +",
    "XGROUP SETID s g2 abc",
    "XGROUP SETID s g2 0 ENTRIESREAD -3",
    "XGROUP SETID s g2 0 MKSTREAM",
    "XGROUP SETID s g2 0 ENTRIESREAD",
    "XGROUP SETID s nosuch 0",
    "XGROUP SETID nokey g 0",
    "XGROUP SETID s g",
    "XINFO GROUPS s",
    // CREATECONSUMER, DELCONSUMER
    "XGROUP CREATECONSUMER s g alice",
    "XGROUP CREATECONSUMER s g alice",
    "XGROUP CREATECONSUMER s g bob",
    "XGROUP CREATECONSUMER s nosuch alice",
    "XGROUP CREATECONSUMER nokey g alice",
    "XGROUP CREATECONSUMER s g",
    "XGROUP CREATECONSUMER s g a b",
    "XGROUP DELCONSUMER s g bob",
    "XGROUP DELCONSUMER s g bob",
    "XGROUP DELCONSUMER s nosuch bob",
    "XGROUP DELCONSUMER nokey g bob",
    "XGROUP DELCONSUMER s g",
    "XGROUP SETID s g 0",
    "XREADGROUP GROUP g alice COUNT 2 STREAMS s >",
    "XREADGROUP GROUP g carol STREAMS s >",
    "XGROUP DELCONSUMER s g alice",
    "XPENDING s g",
    "XGROUP DELCONSUMER s g carol",
    "XPENDING s g",
    // DESTROY
    "XGROUP DESTROY s g",
    "XGROUP DESTROY s g",
    "XGROUP DESTROY nokey g",
    "XGROUP DESTROY s",
    "XGROUP DESTROY s g x",
    "XINFO GROUPS s",
    "XGROUP CREATE s g 0",
    "XGROUP DESTROY s g2",
    "XINFO GROUPS s",
    // Case matters for names, not subcommands.
    "xgroup create s G 0",
    "XGROUP CREATE s g $",
    "XINFO GROUPS s",
    // Wrong type.
    "SET str v",
    "XGROUP CREATE str g 0",
    "XGROUP CREATE str g 0 MKSTREAM",
    "XGROUP CREATE str g abc",
    "XGROUP SETID str g 0",
    "XGROUP DESTROY str g",
    "XGROUP CREATECONSUMER str g c",
    "XGROUP DELCONSUMER str g c",
    "XGROUP HELP str",
];

#[test]
fn xgroup_subcommands() {
    let mut d = start();
    both_protocols(&mut d, "xgroup", XGROUP_SCRIPT);
}

const XREADGROUP_SCRIPT: &[&str] = &[
    "XADD s 1-1 f v1",
    "XADD s 2-1 f v2",
    "XADD s 3-1 f v3",
    "XADD s 4-1 f v4",
    "XADD t 1-1 g w1",
    "XGROUP CREATE s g 0",
    "XGROUP CREATE t g $",
    "XREADGROUP GROUP g alice COUNT 1 STREAMS s >",
    "XREADGROUP GROUP g alice STREAMS s 0",
    "XREADGROUP GROUP g bob COUNT 2 STREAMS s >",
    "XREADGROUP GROUP g alice STREAMS s >",
    "XREADGROUP GROUP g alice STREAMS s >",
    "XREADGROUP GROUP g carol STREAMS s >",
    "XREADGROUP GROUP g alice STREAMS s 0",
    "XREADGROUP GROUP g alice STREAMS s 1-1",
    "XREADGROUP GROUP g alice STREAMS s 0 COUNT 1",
    "XREADGROUP GROUP g alice COUNT 1 STREAMS s 0",
    "XREADGROUP GROUP g bob STREAMS s 0",
    "XREADGROUP GROUP g dave STREAMS s 0",
    "XREADGROUP GROUP g bob STREAMS s t 0 >",
    "XREADGROUP GROUP g bob STREAMS t s > >",
    "XADD t 2-1 g w2",
    "XADD s 5-1 f v5",
    "XREADGROUP GROUP g bob STREAMS t s > >",
    "XREADGROUP GROUP g bob STREAMS t s 0 0",
    "@XPENDING s g",
    "@XPENDING s g - + 10",
    "@XPENDING t g - + 10",
    "@XINFO CONSUMERS s g",
    // History entries deleted since delivery come back as nil bodies.
    "XDEL s 2-1",
    "XREADGROUP GROUP g bob STREAMS s 0",
    "XREADGROUP GROUP g bob STREAMS s 2-1",
    "XTRIM s MAXLEN 0",
    "XREADGROUP GROUP g alice STREAMS s 0",
    "XREADGROUP GROUP g alice STREAMS s >",
    "@XPENDING s g - + 10",
    // NOACK: delivered, not pending; the consumer is still created.
    "XADD s 6-1 f v6",
    "XADD s 7-1 f v7",
    "XREADGROUP GROUP g erin NOACK STREAMS s >",
    "XREADGROUP GROUP g erin NOACK STREAMS s >",
    "XREADGROUP GROUP g erin STREAMS s 0",
    "XPENDING s g",
    "XINFO GROUPS s",
    "XADD s 8-1 f v8",
    "XREADGROUP NOACK GROUP g erin COUNT 5 STREAMS s >",
    "XREADGROUP GROUP g erin NOACK STREAMS s 0",
    // Errors, in Redis's order.
    "XREADGROUP GROUP g alice STREAMS s $",
    "XREADGROUP GROUP nosuch alice STREAMS s >",
    "XREADGROUP GROUP g alice STREAMS nokey >",
    "XREADGROUP GROUP g alice STREAMS s nokey > >",
    "XREADGROUP GROUP g alice STREAMS nokey s > $",
    "XREADGROUP GROUP g alice STREAMS s -",
    "XREADGROUP GROUP g alice STREAMS s abc",
    "XREADGROUP GROUP g alice STREAMS s",
    "XREADGROUP GROUP g alice STREAMS s t >",
    "XREADGROUP GROUP g STREAMS s >",
    "XREADGROUP GROUP g",
    "XREADGROUP STREAMS s >",
    "XREADGROUP COUNT 1 STREAMS s >",
    "XREADGROUP GROUP g alice COUNT x STREAMS s >",
    "XREADGROUP GROUP g alice FOO STREAMS s >",
    "XREADGROUP GROUP g alice",
    "XREADGROUP GROUP g alice BLOCK -5 STREAMS s >",
    "XREADGROUP GROUP g alice BLOCK 10 STREAMS s 0",
    "XREADGROUP GROUP g alice GROUP g bob COUNT 1 STREAMS s 0",
    "XREADGROUP",
    "XREADGROUP GROUP g alice STREAMS s >",
    "XREADGROUP GROUP g alice COUNT 0 STREAMS s 0",
    "XREADGROUP GROUP g alice COUNT -1 STREAMS s 0",
    "xreadgroup group g Alice streams s 0",
    "@XINFO CONSUMERS s g",
    // XACK
    "XACK s g 3-1",
    "XACK s g 3-1",
    "XACK s g 1-1 4-1 5-1 99-1",
    "XACK s g 8-1",
    "XACK s g 1-1 abc",
    "XACK s g -",
    "XACK s g 4",
    "XACK s nosuch 4-1",
    "XACK nokey g 4-1",
    "XACK nokey g abc",
    "XACK s g",
    "@XPENDING s g",
    "@XPENDING s g - + 10",
    "XADD str2 1-1 f v",
    "SET str v",
    "XACK str g 1-1",
    "XACK str g abc",
];

#[test]
fn xreadgroup_and_xack() {
    let mut d = start();
    both_protocols(&mut d, "xreadgroup", XREADGROUP_SCRIPT);
}

const XPENDING_SCRIPT: &[&str] = &[
    "XADD s 1-1 f v1",
    "XADD s 2-1 f v2",
    "XADD s 3-1 f v3",
    "XADD s 4-1 f v4",
    "XADD s 5-1 f v5",
    "XGROUP CREATE s g 0",
    "XGROUP CREATE s empty $",
    "XPENDING s empty",
    "XPENDING s empty - + 10",
    "XREADGROUP GROUP g alice COUNT 2 STREAMS s >",
    "XREADGROUP GROUP g bob COUNT 1 STREAMS s >",
    "XREADGROUP GROUP g carol COUNT 2 STREAMS s >",
    "XGROUP CREATECONSUMER s g zed",
    "XPENDING s g",
    "@XPENDING s g - + 10",
    "@XPENDING s g - + 2",
    "@XPENDING s g - + 0",
    "@XPENDING s g - + -1",
    "@XPENDING s g 2 4 10",
    "@XPENDING s g (2-1 (4-1 10",
    "@XPENDING s g (1 + 10",
    "@XPENDING s g 3 3 10",
    "@XPENDING s g + - 10",
    "@XPENDING s g - + 10 alice",
    "@XPENDING s g - + 10 bob",
    "@XPENDING s g - + 10 zed",
    "@XPENDING s g - + 10 nobody",
    "@XPENDING s g - + 1 carol",
    "@XPENDING s g IDLE 0 - + 10",
    "@XPENDING s g IDLE 3600000 - + 10",
    "@XPENDING s g IDLE 3600000 - + 10 alice",
    "@XPENDING s g idle -5 - + 10 carol",
    "XPENDING s g IDLE x - + 10",
    "XPENDING s g IDLE 10 - +",
    "XPENDING s g IDLE 10",
    "XPENDING s g IDLE",
    "XPENDING s g -",
    "XPENDING s g - +",
    "XPENDING s g - + x",
    "XPENDING s g - + 1.5",
    "XPENDING s g abc + 10",
    "XPENDING s g - abc 10",
    "XPENDING s g (- + 10",
    "XPENDING s g - (+ 10",
    "XPENDING s g (18446744073709551615-18446744073709551615 + 10",
    "XPENDING s g - (0-0 10",
    "@XPENDING s g - + 10 alice extra",
    "XPENDING s g IDLE 10 - + 10 alice extra",
    "XPENDING s nosuch",
    "XPENDING s nosuch - + 10",
    "XPENDING nokey g",
    "XPENDING nokey g abc + 10",
    "XPENDING s",
    "SET str v",
    "XPENDING str g",
    "XPENDING str g - + 10",
    "XPENDING str g abc + 10",
    // Summary with the PEL emptied.
    "XACK s g 1-1 2-1 3-1 4-1 5-1",
    "XPENDING s g",
    "XPENDING s g - + 10",
];

#[test]
fn xpending_forms() {
    let mut d = start();
    both_protocols(&mut d, "xpending", XPENDING_SCRIPT);
}

const XCLAIM_SCRIPT: &[&str] = &[
    "XADD s 1-1 f v1",
    "XADD s 2-1 f v2",
    "XADD s 3-1 f v3",
    "XADD s 4-1 f v4",
    "XADD s 5-1 f v5",
    "XADD s 6-1 f v6",
    "XGROUP CREATE s g 0",
    "XREADGROUP GROUP g alice COUNT 3 STREAMS s >",
    "XREADGROUP GROUP g bob COUNT 2 STREAMS s >",
    // Not idle long enough: nothing moves.
    "XCLAIM s g carol 3600000 1-1 2-1",
    "@XPENDING s g - + 10",
    "XCLAIM s g carol 0 1-1",
    "XCLAIM s g carol 0 2-1 JUSTID",
    "XCLAIM s g carol -5 3-1 9-9 4",
    "@XPENDING s g - + 10",
    "@XINFO CONSUMERS s g",
    // IDLE / TIME set the delivery time, RETRYCOUNT the counter; JUSTID does not count.
    "XCLAIM s g alice 0 1-1 IDLE 50000",
    "@XPENDING s g - + 10",
    "XCLAIM s g alice 0 2-1 IDLE 50000 RETRYCOUNT 7 JUSTID",
    "XCLAIM s g bob 40000 1-1 2-1 4-1",
    "@XPENDING s g - + 10",
    "XCLAIM s g bob 0 4-1 TIME 1000",
    "XCLAIM s g bob 0 5-1 TIME 99999999999999",
    "XCLAIM s g bob 0 3-1 IDLE -5",
    "@XPENDING s g - + 10",
    "XCLAIM s g bob 0 1-1 RETRYCOUNT 0 JUSTID",
    "XCLAIM s g bob 0 1-1 RETRYCOUNT -1 JUSTID",
    "@XPENDING s g - + 10 bob",
    // FORCE creates PEL entries for existing entries only; LASTID moves the group forward only.
    "XCLAIM s g dave 0 6-1",
    "XCLAIM s g dave 0 6-1 7-1 FORCE JUSTID",
    "XCLAIM s g dave 0 6-1 FORCE",
    "@XPENDING s g - + 10 dave",
    "XINFO GROUPS s",
    "XCLAIM s g dave 0 6-1 LASTID 100-0",
    "XINFO GROUPS s",
    "XCLAIM s g dave 0 6-1 LASTID 1-0",
    "XCLAIM s g dave 0 99-1 LASTID 200-0",
    "XINFO GROUPS s",
    // Claiming deleted entries drops them from the PEL (7.0) and returns nothing for them.
    "XDEL s 3-1 4-1",
    "XCLAIM s g erin 0 3-1 4-1 5-1",
    "@XPENDING s g - + 10",
    "XPENDING s g",
    "XCLAIM s g erin 0 3-1 FORCE",
    // Option parsing: IDs first, options after, the first non-ID starts the options.
    "XCLAIM s g erin 0 5-1 FOO",
    "XCLAIM s g erin 0 FORCE 5-1",
    "XCLAIM s g erin 0 5-1 IDLE",
    "XCLAIM s g erin 0 5-1 IDLE x",
    "XCLAIM s g erin 0 5-1 TIME x",
    "XCLAIM s g erin 0 5-1 RETRYCOUNT x",
    "XCLAIM s g erin 0 5-1 LASTID abc",
    "XCLAIM s g erin 0 5-1 LASTID -",
    "XCLAIM s g erin 0 5-1 -",
    "XCLAIM s g erin 0 5-1 (5-1",
    "XCLAIM s g erin x 5-1",
    "XCLAIM s g erin 1.5 5-1",
    "XCLAIM s g erin 0",
    "XCLAIM s g erin 0 abc",
    "XCLAIM s nosuch erin 0 5-1",
    "XCLAIM s nosuch erin x 5-1",
    "XCLAIM nokey g erin 0 5-1",
    "XCLAIM s g erin 0 5-1 justid force idle 0 retrycount 3 lastid 0-0",
    "@XPENDING s g - + 10",
    "SET str v",
    "XCLAIM str g c 0 1-1",
    "XCLAIM str g c x 1-1",
    "@XINFO CONSUMERS s g",
];

#[test]
fn xclaim_options_and_deleted_entries() {
    let mut d = start();
    both_protocols(&mut d, "xclaim", XCLAIM_SCRIPT);
}

const XAUTOCLAIM_SCRIPT: &[&str] = &[
    "XADD s 1-1 f v1",
    "XADD s 2-1 f v2",
    "XADD s 3-1 f v3",
    "XADD s 4-1 f v4",
    "XADD s 5-1 f v5",
    "XADD s 6-1 f v6",
    "XADD s 7-1 f v7",
    "XGROUP CREATE s g 0",
    "XREADGROUP GROUP g alice COUNT 4 STREAMS s >",
    "XREADGROUP GROUP g bob STREAMS s >",
    "XAUTOCLAIM s g carol 3600000 0",
    "XAUTOCLAIM s g carol 3600000 0 COUNT 1",
    "@XINFO CONSUMERS s g",
    "XAUTOCLAIM s g carol 0 0 COUNT 2",
    "XAUTOCLAIM s g carol 0 3-1 COUNT 2 JUSTID",
    "XAUTOCLAIM s g carol 0 (5-1 COUNT 1",
    "XAUTOCLAIM s g carol 0 7-1",
    "XAUTOCLAIM s g carol 0 8",
    "XAUTOCLAIM s g carol 0 -",
    "XAUTOCLAIM s g carol 0 + JUSTID",
    "@XPENDING s g - + 10",
    "XAUTOCLAIM s g dave 0 0-0 JUSTID COUNT 3",
    "@XPENDING s g - + 10",
    // Deleted entries: dropped from the PEL, listed third, and they count against COUNT.
    "XDEL s 2-1 3-1 6-1",
    "XAUTOCLAIM s g erin 0 0 COUNT 2",
    "XAUTOCLAIM s g erin 0 0 COUNT 2 JUSTID",
    "XAUTOCLAIM s g erin 0 0",
    "XPENDING s g",
    "XTRIM s MAXLEN 0",
    "XAUTOCLAIM s g erin 0 0 JUSTID",
    "XPENDING s g",
    "XAUTOCLAIM s g erin 0 0",
    // Errors, in Redis's order.
    "XAUTOCLAIM s g erin x 0",
    "XAUTOCLAIM s g erin 0 abc",
    "XAUTOCLAIM s g erin 0 (18446744073709551615-18446744073709551615",
    "XAUTOCLAIM s g erin 0 (-",
    "XAUTOCLAIM s g erin 0 0 COUNT 0",
    "XAUTOCLAIM s g erin 0 0 COUNT -1",
    "XAUTOCLAIM s g erin 0 0 COUNT x",
    "XAUTOCLAIM s g erin 0 0 COUNT 922337203685477581",
    "XAUTOCLAIM s g erin 0 0 COUNT",
    "XAUTOCLAIM s g erin 0 0 FOO",
    "XAUTOCLAIM s g erin 0",
    "XAUTOCLAIM s nosuch erin 0 0",
    "XAUTOCLAIM s nosuch erin x 0",
    "XAUTOCLAIM nokey g erin 0 0",
    "XAUTOCLAIM nokey g erin 0 0 COUNT 0",
    "XAUTOCLAIM s g erin -100 0",
    "SET str v",
    "XAUTOCLAIM str g c 0 0",
    "XAUTOCLAIM str g c 0 abc",
    "XAUTOCLAIM str g c 0 0 FOO",
];

#[test]
fn xautoclaim_cursor_count_and_deleted_entries() {
    let mut d = start();
    both_protocols(&mut d, "xautoclaim", XAUTOCLAIM_SCRIPT);
}

/// XAUTOCLAIM's attempts are bounded by COUNT * 10: with many PEL entries too young to claim,
/// the cursor stops mid-way.
#[test]
fn xautoclaim_stops_after_count_times_ten_attempts() {
    let mut d = start();
    let mut setup = xadds("s", 1, 60, "v");
    setup.push("XGROUP CREATE s g 0".into());
    setup.push("XREADGROUP GROUP g alice COUNT 30 STREAMS s >".into());
    setup.push("XCLAIM s g alice 0 31-1 32-1 33-1 FORCE JUSTID".into());
    setup.push("XREADGROUP GROUP g bob STREAMS s >".into());
    // The first 30 are idle 100 s, the rest fresh.
    setup.push(format!("XCLAIM s g alice 0 {} IDLE 100000 JUSTID", (1..=30).map(|i| format!("{i}-1")).collect::<Vec<_>>().join(" ")));
    assert_run(&mut d, "setup", &lines_of(&setup));
    assert_run(
        &mut d,
        "attempts",
        &[
            "XAUTOCLAIM s g carol 50000 0 COUNT 1 JUSTID",
            "XAUTOCLAIM s g carol 50000 31 COUNT 2 JUSTID",
            "XAUTOCLAIM s g carol 50000 0 COUNT 3 JUSTID",
            "XAUTOCLAIM s g carol 50000 0 COUNT 100 JUSTID",
            "XAUTOCLAIM s g carol 50000 0 COUNT 100 JUSTID",
            "@XPENDING s g - + 3",
            "XPENDING s g",
        ],
    );
}

// ---------------------------------------------------------------------------------------
// XINFO, XSETID

const XINFO_SCRIPT: &[&str] = &[
    "XINFO HELP",
    "xinfo help",
    "XINFO HELP extra",
    "XINFO",
    "XINFO FOO",
    "XINFO FOO s",
    "XINFO STREAM",
    "XINFO STREAM nokey",
    "XINFO GROUPS nokey",
    "XINFO CONSUMERS nokey g",
    "XINFO FOO nokey",
    "XGROUP CREATE s empty $ MKSTREAM",
    "@XINFO STREAM s",
    "@XINFO STREAM s FULL",
    "XINFO GROUPS s",
    "XINFO CONSUMERS s empty",
    "XGROUP DESTROY s empty",
    "@XINFO STREAM s",
    "@XINFO STREAM s FULL",
    "XINFO GROUPS s",
    "XADD s 1-1 name a",
    "XADD s 2-1 name b other x",
    "XADD s 3-1 name c",
    "XADD s 4-1 name d",
    "XADD s 5-1 name e",
    "@XINFO STREAM s",
    "XGROUP CREATE s g1 0",
    "XGROUP CREATE s g2 $",
    "XGROUP CREATE s g3 2-1",
    "XGROUP CREATE s g4 0 ENTRIESREAD 3",
    "XGROUP CREATECONSUMER s g1 idler",
    "XREADGROUP GROUP g1 alice COUNT 2 STREAMS s >",
    "XREADGROUP GROUP g1 bob COUNT 1 STREAMS s >",
    "XREADGROUP GROUP g3 alice STREAMS s >",
    "XINFO GROUPS s",
    "@XINFO CONSUMERS s g1",
    "@XINFO CONSUMERS s g2",
    "XINFO CONSUMERS s nosuch",
    "XINFO CONSUMERS s",
    "XINFO CONSUMERS s g1 extra",
    "XINFO GROUPS s extra",
    "@XINFO STREAM s",
    "@XINFO STREAM s FULL",
    "@XINFO STREAM s FULL COUNT 1",
    "@XINFO STREAM s FULL COUNT 0",
    "@XINFO STREAM s FULL COUNT -1",
    "@xinfo stream s full count 2",
    "XINFO STREAM s FULL COUNT x",
    "XINFO STREAM s FULL COUNT",
    "XINFO STREAM s FOO",
    "XINFO STREAM s FULL FOO 1",
    "XINFO STREAM s FULL COUNT 1 extra",
    // Lag: exact while no deletion lies ahead of a group, nil when it cannot be known.
    "XDEL s 3-1",
    "XINFO GROUPS s",
    "@XINFO STREAM s",
    "XREADGROUP GROUP g2 carol STREAMS s >",
    "XREADGROUP GROUP g1 alice COUNT 1 STREAMS s >",
    "XINFO GROUPS s",
    "XREADGROUP GROUP g1 alice STREAMS s >",
    "XINFO GROUPS s",
    "XADD s 6-1 name f",
    "XINFO GROUPS s",
    "XTRIM s MINID = 4-1",
    "XINFO GROUPS s",
    "XGROUP SETID s g2 0",
    "XGROUP SETID s g3 5-1 ENTRIESREAD 4",
    "XINFO GROUPS s",
    "XGROUP SETID s g4 99-0",
    "XINFO GROUPS s",
    "XTRIM s MAXLEN 0",
    "XINFO GROUPS s",
    "@XINFO STREAM s",
    "XADD s 7-1 name g",
    "XINFO GROUPS s",
    // An empty stream with entries added then deleted.
    "XGROUP CREATE x g1 0 MKSTREAM",
    "XINFO GROUPS x",
    "XADD x 1-0 data a",
    "XDEL x 1-0",
    "XINFO GROUPS x",
    "@XINFO STREAM x FULL",
    // The ported "Consumer group lag with XDELs" case.
    "XADD y 1-0 data a",
    "XADD y 2-0 data b",
    "XADD y 3-0 data c",
    "XADD y 4-0 data d",
    "XADD y 5-0 data e",
    "XDEL y 3-0",
    "XGROUP CREATE y g1 0",
    "XGROUP CREATE y g2 0",
    "XINFO GROUPS y",
    "XREADGROUP GROUP g1 c11 COUNT 1 STREAMS y >",
    "XINFO GROUPS y",
    "XREADGROUP GROUP g1 c11 COUNT 1 STREAMS y >",
    "XINFO GROUPS y",
    "XREADGROUP GROUP g1 c11 COUNT 1 STREAMS y >",
    "XINFO GROUPS y",
    "XREADGROUP GROUP g1 c11 COUNT 1 STREAMS y >",
    "XINFO GROUPS y",
    "XADD y 6-0 data f",
    "XINFO GROUPS y",
    "XTRIM y MINID = 3-0",
    "XINFO GROUPS y",
    "XTRIM y MINID = 5-0",
    "XINFO GROUPS y",
    "@XINFO STREAM y FULL",
    // Binary and long names.
    "XGROUP CREATE y \"g\\x00bin\" 0",
    "XGROUP CREATECONSUMER y \"g\\x00bin\" \"c\\r\\n\"",
    "XINFO GROUPS y",
    "@XINFO CONSUMERS y \"g\\x00bin\"",
    // Wrong type.
    "SET str v",
    "XINFO STREAM str",
    "XINFO GROUPS str",
    "XINFO CONSUMERS str g",
    "XINFO FOO str",
    "XINFO STREAM str FULL COUNT x",
];

#[test]
fn xinfo_stream_groups_consumers_and_lag() {
    let mut d = start();
    both_protocols(&mut d, "xinfo", XINFO_SCRIPT);
}

const XSETID_SCRIPT: &[&str] = &[
    "XSETID nokey 1-1",
    "XSETID nokey abc",
    "XADD s 1-1 f v",
    "XADD s 2-1 f v",
    "XADD s 3-1 f v",
    "XSETID s 3-1",
    "XSETID s 2-1",
    "XSETID s 3-0",
    "XSETID s 3",
    "XSETID s 10-5",
    "XADD s 10-5 f v",
    "XADD s 10-* f v",
    "XSETID s 100-0 ENTRIESADDED 50",
    "XSETID s 100-0 ENTRIESADDED 4",
    "XSETID s 100-0 ENTRIESADDED 5",
    "XSETID s 100-0 ENTRIESADDED -1",
    "XSETID s 100-0 ENTRIESADDED x",
    "XSETID s 100-0 ENTRIESADDED",
    "XSETID s 100-0 MAXDELETEDID 50-0",
    "XSETID s 100-0 MAXDELETEDID 100-1",
    "XSETID s 100-0 MAXDELETEDID abc",
    "XSETID s 100-0 MAXDELETEDID -",
    "XSETID s 100-0 ENTRIESADDED 60 MAXDELETEDID 99-0",
    "XSETID s 100-0 MAXDELETEDID 0-0",
    "XSETID s 100-0 FOO 1",
    "XSETID s 100-0 ENTRIESADDED 60 FOO",
    "XSETID s abc",
    "XSETID s -",
    "XSETID s +",
    "XSETID s (5",
    "XSETID s",
    "XSETID",
    "@XINFO STREAM s",
    "XADD s 100-0 f v",
    "XADD s 100-* f v",
    "XSETID s 100-0",
    "XDEL s 100-1",
    "XSETID s 50-0",
    "XSETID s 10-6",
    "XSETID s 10-5",
    "@XINFO STREAM s",
    // An empty stream accepts any ID and any counter.
    "XTRIM s MAXLEN 0",
    "XSETID s 1-0",
    "XSETID s 0-0 ENTRIESADDED 0 MAXDELETEDID 0-0",
    "@XINFO STREAM s",
    "XADD s 0-1 f v",
    "XGROUP CREATE e g $ MKSTREAM",
    "XSETID e 5-5 ENTRIESADDED 3 MAXDELETEDID 5-0",
    "@XINFO STREAM e FULL",
    "XINFO GROUPS e",
    "XADD e 5-5 f v",
    "XADD e 5-6 f v",
    "XINFO GROUPS e",
    "XSETID e 18446744073709551615-18446744073709551615",
    "XADD e * f v",
    "SET str v",
    "XSETID str 1-1",
    "XSETID str abc",
    "XSETID str 1-1 ENTRIESADDED -1",
];

#[test]
fn xsetid_counters_and_errors() {
    let mut d = start();
    both_protocols(&mut d, "xsetid", XSETID_SCRIPT);
}

// ---------------------------------------------------------------------------------------
// Streams as keys

const KEYS_SCRIPT: &[&str] = &[
    "XADD s 1-1 f v",
    "XADD s 2-1 f v g w",
    "XGROUP CREATE s g 0",
    "XREADGROUP GROUP g alice COUNT 1 STREAMS s >",
    "TYPE s",
    "OBJECT ENCODING s",
    "SET str v",
    "RPUSH list a",
    "HSET hash f v",
    "SADD set m",
    "ZADD zset 1 m",
    "SCAN 0 TYPE stream COUNT 1000",
    "SCAN 0 TYPE STREAM COUNT 1000",
    "SCAN 0 MATCH nomatch TYPE stream COUNT 1000",
    "XGROUP CREATE empty g $ MKSTREAM",
    "TYPE empty",
    "OBJECT ENCODING empty",
    "~KEYS *",
    "EXISTS s empty",
    // COPY duplicates entries, groups, consumers and PELs.
    "COPY s c",
    "COPY s c",
    "@XINFO STREAM c FULL",
    "XREADGROUP GROUP g bob STREAMS c >",
    "XREADGROUP GROUP g bob STREAMS s 0",
    "COPY s c REPLACE",
    "@XINFO STREAM c FULL",
    "COPY s c DB 1",
    "SELECT 1",
    "@XINFO STREAM c FULL",
    "XLEN c",
    "SELECT 0",
    "COPY empty e2",
    "@XINFO STREAM e2 FULL",
    // RENAME, MOVE, DEL, UNLINK
    "RENAME c r",
    "@XINFO STREAM r FULL",
    "EXISTS c",
    "RENAMENX r s",
    "MOVE r 0",
    "MOVE r 2",
    "MOVE r 2",
    "SELECT 2",
    "@XINFO STREAM r FULL",
    "MOVE r 1",
    "DEL r",
    "SELECT 0",
    "COPY s u",
    "UNLINK u e2",
    "EXISTS u e2",
    // Expiry.
    "COPY s x",
    "PEXPIRE x 100",
    "%1000 PTTL x",
    "DEBUG SLEEP 0.2",
    "EXISTS x",
    "XLEN x",
    "XADD x 1-1 f v",
    "XLEN x",
    "EXPIRE x 100",
    "XADD x 2-1 f v",
    "%2 TTL x",
    "XTRIM x MAXLEN 0",
    "%2 TTL x",
    "XDEL x 1-1 2-1",
    "EXISTS x",
    "%2 TTL x",
    "PERSIST x",
    "TTL x",
    // WRONGTYPE both ways.
    "GET s",
    "APPEND s x",
    "LPUSH s a",
    "LLEN s",
    "HSET s f v",
    "SADD s m",
    "ZADD s 1 m",
    "INCR s",
    "PFADD s a",
    "SETRANGE s 0 x",
    "GETBIT s 0",
    "SORT s",
    "XADD list 1-1 f v",
    "XADD hash 1-1 f v",
    "XADD set 1-1 f v",
    "XADD zset 1-1 f v",
    "XREADGROUP GROUP g c STREAMS list >",
    "XGROUP CREATE list g 0 MKSTREAM",
    "XINFO STREAM zset",
    "XLEN hash",
    "XRANGE set - +",
    "XREAD STREAMS s zset 0 0",
    "SET s v",
    "TYPE s",
    "XLEN s",
    "OBJECT ENCODING nokey",
];

#[test]
fn generic_key_commands_on_streams() {
    let mut d = start();
    both_protocols(&mut d, "keys", KEYS_SCRIPT);
}

/// The digests (which hash entry IDs as `<ms>.<seq>` and the fields and values; groups are
/// not part of them) equal Redis's.
#[test]
fn debug_digests_match_redis() {
    let mut d = start();
    let mut setup: Vec<String> = xadds("big", 1, 150, "v");
    setup.extend(
        [
            "XADD small 1-1 f v",
            "XADD small 2-5 f v g \"\"",
            "XADD small 18446744073709551615-18446744073709551615 \"bin\\x00\" 12345",
            "XADD del 1-1 a 1",
            "XADD del 2-1 a 2",
            "XDEL del 1-1",
            "XGROUP CREATE empty g $ MKSTREAM",
            "XGROUP CREATE small g 0",
            "XREADGROUP GROUP g c STREAMS small >",
            "XADD gone 1-1 a 1",
            "XDEL gone 1-1",
            "XADD ttl 1-1 a 1",
            "EXPIRE ttl 1000",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    assert_run(&mut d, "setup", &lines_of(&setup));
    assert_run(
        &mut d,
        "digests",
        &[
            "DEBUG DIGEST-VALUE big small del empty gone ttl nokey",
            "DEBUG DIGEST",
            "XTRIM big MAXLEN 10",
            "DEBUG DIGEST-VALUE big",
            "XGROUP DESTROY small g",
            "DEBUG DIGEST-VALUE small",
            "DEBUG DIGEST",
        ],
    );
}

/// DUMP payloads: Redis's restore here, ours restore into Redis, with entries, deletions,
/// groups, consumers, PELs and counters intact (XINFO STREAM FULL on both sides, digests).
#[test]
fn dump_and_restore_both_ways() {
    let mut d = start();
    let mut setup: Vec<String> = xadds("big", 1, 230, "v");
    setup.extend(
        [
            "XDEL big 5-1 150-1",
            "XTRIM big MAXLEN 200",
            "XGROUP CREATE big g1 0",
            "XGROUP CREATE big g2 $ ENTRIESREAD 200",
            "XGROUP CREATECONSUMER big g2 idle",
            "XREADGROUP GROUP g1 alice COUNT 3 STREAMS big >",
            "XREADGROUP GROUP g1 bob COUNT 2 STREAMS big >",
            "XCLAIM big g1 carol 0 35-1 IDLE 5000 RETRYCOUNT 9",
            "XADD small 1-1 f v",
            "XADD small 2-1 \"bin\\x00\" \"\" other 18446744073709551615",
            "XSETID small 9-9 ENTRIESADDED 40 MAXDELETEDID 8-8",
            "XGROUP CREATE empty g $ MKSTREAM",
            "XADD emptied 1-1 a 1",
            "XDEL emptied 1-1",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    assert_run(&mut d, "setup", &lines_of(&setup));
    let payload = |got: Got| -> Vec<u8> {
        match got {
            Ok(r) => match r.value {
                Resp::Blob(_, b) => b,
                other => panic!("DUMP: not a bulk: {other:?}"),
            },
            Err(e) => panic!("DUMP: {e}"),
        }
    };
    let mut failures = Vec::new();
    LAYOUT_LOOSE.with(|l| l.set(true));
    for key in ["big", "small", "empty", "emptied"] {
        for from_redis in [true, false] {
            let dumped = if from_redis { d.redis_call(&["DUMP", key]) } else { d.ours_call(&["DUMP", key]) };
            let bytes = payload(dumped);
            let new_key = format!("{key}:{}", if from_redis { "from-redis" } else { "from-ours" });
            let restore: Vec<&[u8]> = vec![b"RESTORE", new_key.as_bytes(), b"0", &bytes];
            if let Err(e) = d.check(&restore) {
                failures.push(format!("{key}: {e}"));
                continue;
            }
            for line in [
                format!("@XINFO STREAM {new_key} FULL"),
                format!("XINFO GROUPS {new_key}"),
                format!("DEBUG DIGEST-VALUE {new_key}"),
                format!("OBJECT ENCODING {new_key}"),
            ] {
                failures.extend(run(&mut d, &[line.as_str()]).into_iter().map(|e| format!("{key}: {e}")));
            }
            // On each side the restored copy reads like the original (the payload of the
            // other side carried everything).
            for redis_side in [true, false] {
                let info = |d: &mut DiffPair, k: &str| {
                    let args = ["XINFO", "STREAM", k, "FULL"];
                    if redis_side {
                        d.redis_call(&args)
                    } else {
                        d.ours_call(&args)
                    }
                };
                let (original, restored) = (info(&mut d, key), info(&mut d, new_key.as_str()));
                if !same_loosely(&original, &restored, false) {
                    failures.push(format!(
                        "{key}: on {} the copy restored from {} differs from the original\n  original: {}\n  restored: {}",
                        if redis_side { "redis-server" } else { "vermilion" },
                        if from_redis { "Redis's payload" } else { "our payload" },
                        show(&original),
                        show(&restored)
                    ));
                }
            }
            // The restored copy takes new entries after the payload's last ID.
            let line = format!("XADD {new_key} 18446744073709551615-* f v");
            failures.extend(run(&mut d, &[line.as_str()]).into_iter().map(|e| format!("{key}: {e}")));
        }
    }
    LAYOUT_LOOSE.with(|l| l.set(false));
    assert_run(&mut d, "errors", &["RESTORE big 0 x", "DEL big", "DEBUG DIGEST"]);
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

// ---------------------------------------------------------------------------------------
// Keyspace events

const EVENTS_SCRIPT: &[&str] = &[
    "XADD s 1-1 f v",
    "XADD s 2-1 f v",
    "XADD s MAXLEN 1 3-1 f v",
    "XADD s MAXLEN ~ 1 4-1 f v",
    "XADD s 0-1 f v",
    "XADD s NOMKSTREAM 5-1 f v",
    "XADD nomk NOMKSTREAM 1-1 f v",
    "XTRIM s MAXLEN 1",
    "XTRIM s MAXLEN 0",
    "XTRIM s MAXLEN 0",
    "XADD s 6-1 f v",
    "XADD s 7-1 f v",
    "XDEL s 6-1",
    "XDEL s 6-1 99-1",
    "XGROUP CREATE s g 0",
    "XGROUP CREATE s g 0",
    "XGROUP CREATE m g $ MKSTREAM",
    "XGROUP CREATECONSUMER s g alice",
    "XGROUP CREATECONSUMER s g alice",
    "XREADGROUP GROUP g bob STREAMS s >",
    "XREADGROUP GROUP g bob STREAMS s >",
    "XREADGROUP GROUP g carol NOACK STREAMS s 0",
    "XREADGROUP GROUP g dave STREAMS m >",
    "XCLAIM s g erin 0 7-1",
    "XCLAIM s g frank 3600000 7-1",
    "XAUTOCLAIM s g gina 0 0",
    "XAUTOCLAIM s g hank 3600000 0",
    "XACK s g 7-1",
    "XGROUP DELCONSUMER s g alice",
    "XGROUP DELCONSUMER s g nobody",
    "XGROUP SETID s g 0",
    "XGROUP SETID s g $ ENTRIESREAD 1",
    "XGROUP DESTROY s g",
    "XGROUP DESTROY s g",
    "XSETID s 100-0",
    "XSETID s 1-0",
    "XTRIM s MINID 1000",
    "XLEN s",
    "DEL s m",
    "XADD e 1-1 f v",
    "EXPIRE e 100",
    "RENAME e e2",
    "COPY e2 e3",
    "XADD e3 2-1 f v",
];

#[test]
fn keyspace_events_of_stream_commands() {
    use common::diff::{escape, Conn};
    const SENTINEL: &str = "zz-stream-sentinel";
    let mut d = start();
    assert_run(&mut d, "config", &["CONFIG SET notify-keyspace-events KEA"]);
    {
        let (r, o) = d.conns(1);
        for c in [r, o] {
            c.cmd(&["PSUBSCRIBE", "__key*__:*"]).expect("psubscribe");
            c.read().expect("psubscribe reply");
            c.cmd(&["SUBSCRIBE", SENTINEL]).expect("subscribe");
            c.read().expect("subscribe reply");
        }
    }
    let show_all = |msgs: &[Got]| {
        msgs.iter().map(|m| m.as_ref().map(|r| escape(&r.raw)).unwrap_or_else(|e| e.to_string())).collect::<Vec<_>>().join("\n      ")
    };
    let mut diffs = Vec::new();
    let mut total = 0;
    for (n, line) in EVENTS_SCRIPT.iter().enumerate() {
        diffs.extend(run(&mut d, &[*line]));
        d.on(0);
        let _ = d.exchange(&["PUBLISH", SENTINEL, &n.to_string()]);
        let (r, o) = d.conns(1);
        let drain = |c: &mut Conn| c.read_until(SENTINEL);
        let (a, b) = (drain(r), drain(o));
        total += a.len();
        if a != b {
            diffs.push(format!("line {n} `{line}`: notifications differ\n  redis: {}\n  ours:  {}", show_all(&a), show_all(&b)));
        }
    }
    // The script does raise events (two per event: keyspace and keyevent).
    assert!(total > 40, "only {total} notifications from redis-server");
    assert!(diffs.is_empty(), "{} differences:\n{}", diffs.len(), diffs.join("\n"));
}
