//! Differential tests: the same commands to redis-server 7.0 and vermilion-server, raw reply
//! bytes compared (see tests/common/diff.rs).
//!
//! (a) Curated scripts, one test per command family; every difference of a script is listed.
//! (b) A seeded random generator of command sequences (valid and invalid) over a small key
//!     space. Env: `DIFF_SECONDS` (default 20), `DIFF_SEED` (default: time-based, printed),
//!     `DIFF_ONLY=get,set` / `DIFF_SKIP=lcs` (command names), `DIFF_KEEP_GOING=1` (record the
//!     first difference per command name, restart the sequence, fail at the end).
//!     To cover a new command: add `(name, weight)` to `GEN` and a case to `Gen::command`
//!     (use only deterministic arguments: expirations immediate or >= 100 s, see `rel_expire`).

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::diff::{show, show_cmd, Cmp, DiffPair, Got};

// ---------------------------------------------------------------------------------------
// (a) curated scripts
// ---------------------------------------------------------------------------------------

fn now_s() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64
}

#[test]
fn connection_commands() {
    let mut d = DiffPair::start();
    d.assert_script(
        "connection",
        &[
            "PING",
            "PING hello",
            "PING \"\"",
            "PING a b",
            "ping",
            "PiNg \"with space\"",
            "ECHO hello",
            "ECHO \"\"",
            "ECHO \"a\\x00b\\r\\nc\"",
            "ECHO",
            "ECHO a b",
            "SELECT 0",
            "SELECT 1",
            "SET k db1",
            "GET k",
            "SELECT 15",
            "SELECT 16",
            "SELECT -1",
            "SELECT abc",
            "SELECT 2147483648",
            "SELECT -2147483649",
            "SELECT 1.5",
            "SELECT \"\"",
            "SELECT 9223372036854775808",
            "SELECT",
            "SELECT 0",
            "GET k",
            "SET k db0",
            "SWAPDB 0 1",
            "GET k",
            "SELECT 1",
            "GET k",
            "SWAPDB 1 1",
            "SWAPDB 0 16",
            "SWAPDB -1 0",
            "SWAPDB a 0",
            "SWAPDB 0 b",
            "SWAPDB 0",
            "SWAPDB 0 1 2",
            "SELECT 0",
            "1> GET k",
            "1> SELECT 1",
            "1> GET k",
            "0> SWAPDB 0 1",
            "1> GET k",
            "0> GET k",
            "?HELLO",
            "?HELLO 2",
            "HELLO 1",
            "HELLO 4",
            "HELLO abc",
            "HELLO -1",
            "HELLO 3 FOO",
            "HELLO 3 AUTH default",
            "?HELLO 3 AUTH default wrong",
            "?HELLO 2",
            "HELLO 3 SETNAME \"bad name\"",
            "?HELLO 2 SETNAME myname",
            "CLIENT GETNAME",
            "AUTH",
            "AUTH x",
            "AUTH default x",
            "AUTH nobody x",
            "AUTH a b c",
            "?CLIENT ID",
            "CLIENT ID extra",
            "CLIENT GETNAME",
            "CLIENT SETNAME conn0",
            "CLIENT GETNAME",
            "CLIENT SETNAME \"has space\"",
            "CLIENT SETNAME \"new\\nline\"",
            "CLIENT SETNAME \"\"",
            "CLIENT GETNAME",
            "CLIENT SETNAME",
            "CLIENT SETNAME a b",
            "CLIENT GETNAME x",
            "CLIENT",
            "CLIENT NOSUCH",
            "client nosuch arg",
            "?HELLO 3",
            "PING",
            "PING x",
            "ECHO x",
            "CLIENT GETNAME",
            "CLIENT SETNAME r3",
            "CLIENT GETNAME",
            "GET nosuchkey",
            "?CLIENT ID",
            "?HELLO 2",
            "GET nosuchkey",
            "CLIENT GETNAME",
            "2> CLIENT GETNAME",
            "2> SELECT 2",
            "2> DBSIZE",
            "2> RESET",
            "2> DBSIZE",
        ],
    );
}

#[test]
fn auth_with_requirepass() {
    let mut d = DiffPair::start_with(&["--requirepass", "s3cret"], &["--requirepass", "s3cret"]);
    d.assert_script(
        "requirepass",
        &[
            "GET k",
            "PING",
            "SELECT 1",
            "CLIENT ID",
            "HELLO 3",
            "?HELLO",
            "AUTH wrong",
            "AUTH default wrong",
            "AUTH someone s3cret",
            "AUTH a b c",
            "GET k",
            "AUTH s3cret",
            "GET k",
            "PING",
            "1> HELLO 3 AUTH default wrong",
            "1> GET k",
            "?1> HELLO 3 AUTH default s3cret",
            "1> GET k",
            "2> AUTH default s3cret",
            "2> SET k v",
            "2> GET k",
            "2> RESET",
            "2> GET k",
        ],
    );
}

#[test]
fn string_get_set() {
    let mut d = DiffPair::start();
    let future_s = (now_s() + 100_000).to_string();
    let future_ms = ((now_s() + 100_000) * 1000).to_string();
    let script: Vec<String> = [
        "GET k",
        "SET k v",
        "GET k",
        "SET k \"\"",
        "GET k",
        "STRLEN k",
        "SET k v NX",
        "SET k2 v NX",
        "SET k v XX",
        "SET nokey v XX",
        "EXISTS nokey",
        "SET k v NX XX",
        "SET k v XX NX",
        "SET k v GET",
        "SET k w GET",
        "SET newk w GET",
        "SET k v EX 100",
        "%1 TTL k",
        "SET k v PX 100000",
        "%1000 PTTL k",
        "SET k v EX 100 KEEPTTL",
        "SET k v KEEPTTL EX 100",
        "SET k v KEEPTTL",
        "%1000 PTTL k",
        "SET k v",
        "TTL k",
        "SET k v EX 0",
        "SET k v EX -1",
        "SET k v PX 0",
        "SET k v EX abc",
        "SET k v EX 1.5",
        "SET k v EX",
        "SET k v PX",
        "SET k v EX 10 PX 100",
        "SET k v EX 10 EX 10",
        "SET k v EX 9223372036854775807",
        "SET k v PX 9223372036854775807",
        "SET k v EX 9223372036854775",
        "SET k v EX 922337203685477",
        "SET k v EXAT 0",
        "SET k v PXAT -1",
        "SET k v EXAT 1",
        "GET k",
        "SET k v PXAT 1",
        "EXISTS k",
        "SET k v EXAT __FUTURE_S__",
        "%1 EXPIRETIME k",
        "%1 TTL k",
        "SET k v PXAT __FUTURE_MS__",
        "%1000 PEXPIRETIME k",
        "SET k v NX GET",
        "SET k v XX GET",
        "SET fresh v NX GET",
        "GET fresh",
        "SET k v GET EX 100",
        "SET k v FOO",
        "SET k v ex 100 nx",
        "set k v Px 100000 Xx get",
        "SET k",
        "SET",
        "SET k v EX 100 GET GET",
        "SET k v NX NX",
        "SET k v KEEPTTL KEEPTTL",
        "SET \"\" emptykey",
        "GET \"\"",
        "SET \"bin\\x00key\\r\\n\" \"bin\\x00val\\r\\n\\xff\"",
        "GET \"bin\\x00key\\r\\n\"",
        "STRLEN \"bin\\x00key\\r\\n\"",
        "GET k extra",
        "GET",
        "SETNX k v",
        "SETNX nx1 v",
        "GET nx1",
        "SETNX k",
        "SETEX k 100 v",
        "%1 TTL k",
        "SETEX k 0 v",
        "SETEX k -5 v",
        "SETEX k abc v",
        "SETEX k 9223372036854775807 v",
        "SETEX k 100",
        "PSETEX k 100000 v",
        "%1000 PTTL k",
        "PSETEX k 0 v",
        "PSETEX k -1 v",
        "PSETEX k x v",
        "GETSET k new",
        "GETSET nokey2 new",
        "GET nokey2",
        "TTL k",
        "GETSET k",
        "GETDEL k",
        "GETDEL k",
        "EXISTS k",
        "GETDEL",
        "GETDEL a b",
        "SET k v EX 100",
        "GETEX k",
        "%1 TTL k",
        "GETEX k PERSIST",
        "TTL k",
        "GETEX k EX 200",
        "%1 TTL k",
        "GETEX k PX 300000",
        "%1000 PTTL k",
        "GETEX k EXAT __FUTURE_S__",
        "%1 EXPIRETIME k",
        "GETEX k PXAT __FUTURE_MS__",
        "%1000 PEXPIRETIME k",
        "GETEX k EX 0",
        "GETEX k EX -1",
        "GETEX k EX abc",
        "GETEX k PX 0",
        "GETEX k EX 10 PX 100",
        "GETEX k EX 10 PERSIST",
        "GETEX k PERSIST PERSIST",
        "GETEX k EX",
        "GETEX k FOO",
        "GETEX k EX 9223372036854775807",
        "GETEX nokey EX 100",
        "GETEX nokey FOO",
        "GETEX k EXAT 1",
        "EXISTS k",
        "GETEX",
        "MSET a 1 b 2 c 3",
        "MGET a b c nokey",
        "MGET a",
        "MGET",
        "MSET a",
        "MSET a 1 b",
        "MSET",
        "MSET a 1 a 2",
        "GET a",
        "MSETNX a 1 z 2",
        "EXISTS z",
        "MSETNX x 1 y 2",
        "MGET x y",
        "MSETNX x 1 x 2",
        "MSETNX q 1 q 2",
        "GET q",
        "MSETNX a",
        "MSETNX a 1 b",
        "SET e 1 EX 100",
        "MSET e 2",
        "TTL e",
    ]
    .iter()
    .map(|l| l.replace("__FUTURE_S__", &future_s).replace("__FUTURE_MS__", &future_ms))
    .collect();
    let refs: Vec<&str> = script.iter().map(|s| s.as_str()).collect();
    d.assert_script("strings: get/set family", &refs);
}

#[test]
fn string_numbers_and_ranges() {
    let mut d = DiffPair::start();
    d.assert_script(
        "strings: numbers, append, ranges, lcs",
        &[
            "INCR n",
            "INCR n",
            "GET n",
            "DECR n",
            "DECR n",
            "DECR n",
            "INCRBY n 100",
            "INCRBY n -1000",
            "DECRBY n 5",
            "DECRBY n -5",
            "INCRBY n abc",
            "INCRBY n 1.5",
            "INCRBY n \"\"",
            "INCRBY n 9223372036854775808",
            "DECRBY n -9223372036854775808",
            "DECRBY n 9223372036854775807",
            "INCRBY n",
            "SET n 9223372036854775807",
            "INCR n",
            "INCRBY n 0",
            "SET n -9223372036854775808",
            "DECR n",
            "DECRBY n 1",
            "INCR n",
            "OBJECT ENCODING n",
            "SET n \" 1\"",
            "INCR n",
            "SET n \"1 \"",
            "INCR n",
            "SET n 01",
            "INCR n",
            "SET n +1",
            "INCR n",
            "SET n -0",
            "INCR n",
            "SET n abc",
            "INCR n",
            "DECR n",
            "SET n 1.0",
            "INCR n",
            "SET n \"\"",
            "INCR n",
            "SET n 12345678901234567890",
            "INCR n",
            "INCR",
            "INCR a b",
            "DECR",
            "INCRBYFLOAT f 1.5",
            "INCRBYFLOAT f 0.1",
            "INCRBYFLOAT f -0.1",
            "INCRBYFLOAT f 1e3",
            "INCRBYFLOAT f 5.0e3",
            "INCRBYFLOAT f -1e3",
            "INCRBYFLOAT f 3.0e-3",
            "INCRBYFLOAT f abc",
            "INCRBYFLOAT f \"\"",
            "INCRBYFLOAT f inf",
            "INCRBYFLOAT f -inf",
            "INCRBYFLOAT f nan",
            "INCRBYFLOAT f 1e308",
            "INCRBYFLOAT f 1e308",
            "GET f",
            "INCRBYFLOAT f .5",
            "INCRBYFLOAT f 1.",
            "INCRBYFLOAT f \" 1\"",
            "INCRBYFLOAT f 0x10",
            "SET f 10",
            "INCRBYFLOAT f 0",
            "INCRBYFLOAT f 10.50",
            "SET f 5.0e3",
            "INCRBYFLOAT f 200",
            "SET f 3",
            "INCRBYFLOAT f 0.3333333333333333",
            "INCRBYFLOAT f 1.7976931348623157e308",
            "SET f abc",
            "INCRBYFLOAT f 1",
            "SET f 9223372036854775807",
            "INCRBYFLOAT f 1",
            "INCRBYFLOAT f",
            "INCRBYFLOAT nokeyf -2.5",
            "APPEND s hello",
            "APPEND s \" world\"",
            "GET s",
            "APPEND s \"\"",
            "APPEND empty \"\"",
            "EXISTS empty",
            "STRLEN s",
            "STRLEN nokey",
            "STRLEN",
            "APPEND s",
            "SET i 10",
            "APPEND i 5",
            "GET i",
            "OBJECT ENCODING i",
            "GETRANGE s 0 4",
            "GETRANGE s -5 -1",
            "GETRANGE s 0 -1",
            "GETRANGE s 5 2",
            "GETRANGE s -100 100",
            "GETRANGE s 100 200",
            "GETRANGE s -1 -5",
            "GETRANGE s 0 0",
            "GETRANGE s -1 -1",
            "GETRANGE s 9223372036854775807 9223372036854775807",
            "GETRANGE s -9223372036854775808 9223372036854775807",
            "GETRANGE s a 1",
            "GETRANGE s 1 b",
            "GETRANGE nokey 0 -1",
            "GETRANGE empty 0 -1",
            "SET z \"\"",
            "GETRANGE z 0 -1",
            "GETRANGE z -1 0",
            "GETRANGE s 0",
            "SUBSTR s 0 4",
            "SUBSTR s -3 -1",
            "SUBSTR s 3 1",
            "SUBSTR s x 1",
            "SUBSTR s 0",
            "SETRANGE s 0 J",
            "GET s",
            "SETRANGE s 20 tail",
            "GET s",
            "SETRANGE s -1 x",
            "SETRANGE s x x",
            "SETRANGE s 536870912 x",
            "SETRANGE s 536870911 xy",
            "SETRANGE s 9223372036854775807 x",
            "SETRANGE s 536870912 \"\"",
            "SETRANGE nk 5 \"\"",
            "EXISTS nk",
            "SETRANGE nk 5 abc",
            "GET nk",
            "SETRANGE nk 0 \"\"",
            "SETRANGE i 1 9",
            "GET i",
            "SETRANGE s 0",
            "MSET l1 ohmytext l2 mynewtext",
            "LCS l1 l2",
            "LCS l1 l2 LEN",
            "LCS l1 l2 IDX",
            "LCS l1 l2 IDX MINMATCHLEN 4",
            "LCS l1 l2 IDX MINMATCHLEN 4 WITHMATCHLEN",
            "LCS l1 l2 IDX WITHMATCHLEN",
            "LCS l1 l2 LEN IDX",
            "LCS l1 l2 MINMATCHLEN -1 IDX",
            "LCS l1 l2 MINMATCHLEN abc",
            "LCS l1 l2 MINMATCHLEN",
            "LCS l1 l2 FOO",
            "LCS l1 nokey",
            "LCS nokey nokey2",
            "LCS nokey nokey2 IDX",
            "LCS l1 l1 IDX WITHMATCHLEN",
            "LCS l1 l2 len",
            "LCS l1",
            "SET r1 abcdefghij",
            "SET r2 xbxdxfxhxj",
            "LCS r1 r2 IDX WITHMATCHLEN",
            "LCS r1 r2 IDX MINMATCHLEN 2",
            "SET ts 123",
            "OBJECT ENCODING ts",
            "SET ts abc",
            "OBJECT ENCODING ts",
            "SET ts aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "OBJECT ENCODING ts",
            "SET ts aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "OBJECT ENCODING ts",
            "SET ts 12345678901234567890",
            "OBJECT ENCODING ts",
            "SET ts -9223372036854775808",
            "OBJECT ENCODING ts",
            "SET ts 007",
            "OBJECT ENCODING ts",
            "SET ts abc",
            "APPEND ts d",
            "OBJECT ENCODING ts",
            "SET ts abc",
            "SETRANGE ts 0 x",
            "OBJECT ENCODING ts",
            "INCRBYFLOAT ts2 1.5",
            "OBJECT ENCODING ts2",
            "INCR ts3",
            "OBJECT ENCODING ts3",
            "INCRBYFLOAT ts4 5",
            "OBJECT ENCODING ts4",
            "INCRBYFLOAT ts4 0.5",
            "INCRBYFLOAT ts4 0.5",
            "OBJECT ENCODING ts4",
            "SETRANGE nul 3 x",
            "INCRBYFLOAT nul 1",
            "INCRBY nul 1",
            "SET nul2 \"1\\x00\"",
            "INCRBYFLOAT nul2 1",
            "INCR nul2",
            "SET nul3 \"\\x001\"",
            "INCRBYFLOAT nul3 1",
            "INCRBYFLOAT f \"1\\x00\"",
            "INCRBY f \"1\\x00\"",
            "OBJECT ENCODING nokey",
            "OBJECT ENCODING",
            "OBJECT ENCODING a b",
            "OBJECT NOSUCH",
            "OBJECT",
        ],
    );
}

#[test]
fn key_commands() {
    let mut d = DiffPair::start();
    let future_s = (now_s() + 100_000).to_string();
    let later_s = (now_s() + 200_000).to_string();
    let future_ms = ((now_s() + 100_000) * 1000).to_string();
    let script: Vec<String> = [
        "MSET a 1 b 2 c 3",
        "DEL a",
        "DEL a",
        "DEL b c nokey",
        "DEL",
        "MSET a 1 b 2",
        "DEL a a b",
        "MSET a 1 b 2",
        "UNLINK a b x",
        "UNLINK",
        "MSET a 1 b 2",
        "EXISTS a",
        "EXISTS a a b nokey",
        "EXISTS",
        "TYPE a",
        "TYPE nokey",
        "TYPE",
        "TYPE a b",
        "TOUCH a b nokey",
        "TOUCH",
        "EXPIRE a 100",
        "%1 TTL a",
        "%1000 PTTL a",
        "EXPIRE a 100 NX",
        "EXPIRE b 100 NX",
        "EXPIRE a 200 XX",
        "EXPIRE nottl 100 XX",
        "SET nottl v",
        "EXPIRE nottl 100 XX",
        "EXPIRE nottl 100 GT",
        "EXPIRE nottl 100 LT",
        "TTL nottl",
        "EXPIRE a 50 GT",
        "EXPIRE a 500 GT",
        "%1 TTL a",
        "EXPIRE a 1000 LT",
        "EXPIRE a 300 LT",
        "%1 TTL a",
        "EXPIRE a 100 NX XX",
        "EXPIRE a 100 GT LT",
        "EXPIRE a 100 NX GT",
        "EXPIRE a 100 XX GT",
        "EXPIRE a 100 FOO",
        "EXPIRE a 100 nx",
        "EXPIRE a abc",
        "EXPIRE a 1.5",
        "EXPIRE a",
        "EXPIRE nokey 100",
        "EXPIRE a 9223372036854775807",
        "EXPIRE a 9223372036854775",
        "EXPIRE a -9223372036854775808",
        "PEXPIRE a 9223372036854775807",
        "PEXPIRE a 100000",
        "%1000 PTTL a",
        "PEXPIRE a 100000 XX",
        "PEXPIRE a 50000 LT",
        "%1000 PTTL a",
        "PEXPIRE a abc",
        "EXPIREAT a __FUTURE_S__",
        "%1 EXPIRETIME a",
        "%1000 PEXPIRETIME a",
        "EXPIREAT a __LATER_S__ GT",
        "EXPIREAT a __FUTURE_S__ GT",
        "EXPIREAT a abc",
        "EXPIREAT a 9223372036854775807",
        "PEXPIREAT a __FUTURE_MS__",
        "%1000 PEXPIRETIME a",
        "PEXPIREAT a 9223372036854775807",
        "PEXPIREAT a abc",
        "PERSIST a",
        "PERSIST a",
        "PERSIST nokey",
        "PERSIST",
        "TTL a",
        "PTTL a",
        "TTL nokey",
        "PTTL nokey",
        "EXPIRETIME a",
        "EXPIRETIME nokey",
        "PEXPIRETIME nokey",
        "TTL",
        "PTTL a b",
        "SET gone v",
        "EXPIRE gone 0",
        "EXISTS gone",
        "SET gone v",
        "EXPIRE gone -10",
        "EXISTS gone",
        "SET gone v",
        "PEXPIRE gone -1",
        "EXISTS gone",
        "SET gone v",
        "EXPIREAT gone 1",
        "EXISTS gone",
        "SET gone v",
        "PEXPIREAT gone 0",
        "EXISTS gone",
        "SET gone v",
        "EXPIRE gone 0 XX",
        "EXISTS gone",
        "SET gone v EX 100",
        "EXPIRE gone 0 GT",
        "EXISTS gone",
        "EXPIRE gone 0 LT",
        "EXISTS gone",
        "FLUSHDB",
        "MSET k1 1 k2 2 k3 3 other 4 \"\" empty \"k\\x00z\" bin",
        "~KEYS *",
        "~KEYS k*",
        "~KEYS k?",
        "~KEYS k[12]",
        "~KEYS k[^1]",
        "~KEYS k[1-2]",
        "~KEYS *3",
        "~KEYS \"\"",
        "~KEYS nomatch*",
        "~KEYS [",
        "~KEYS \\\\*",
        "~KEYS *\\x00*",
        "KEYS",
        "KEYS a b",
        "DBSIZE",
        "DBSIZE x",
        "RENAME k1 r1",
        "GET r1",
        "EXISTS k1",
        "RENAME nokey x",
        "RENAME r1 r1",
        "RENAME nokey nokey",
        "SET ex v EX 100",
        "RENAME ex ex2",
        "%1 TTL ex2",
        "RENAME ex2 k2",
        "%1 TTL k2",
        "RENAME k2",
        "RENAMENX k3 other",
        "RENAMENX k3 fresh",
        "RENAMENX k3 x",
        "RENAMENX fresh fresh",
        "RENAMENX nokey x",
        "MOVE fresh 1",
        "EXISTS fresh",
        "SELECT 1",
        "GET fresh",
        "SET fresh db1",
        "SELECT 0",
        "SET fresh db0",
        "MOVE fresh 1",
        "MOVE nokey 1",
        "MOVE fresh 0",
        "MOVE fresh 16",
        "MOVE fresh -1",
        "MOVE fresh abc",
        "MOVE fresh",
        "SET src hello EX 100",
        "COPY src dst",
        "GET dst",
        "%1 TTL dst",
        "COPY src dst",
        "COPY src dst REPLACE",
        "COPY src dst DB 1",
        "SELECT 1",
        "GET dst",
        "SELECT 0",
        "COPY src dst DB 1",
        "COPY src dst DB 1 REPLACE",
        "COPY src src",
        "COPY src src DB 0",
        "COPY nokey dst",
        "COPY src dst DB 16",
        "COPY src dst DB -1",
        "COPY src dst DB abc",
        "COPY src dst DB",
        "COPY src dst FOO",
        "COPY src dst REPLACE REPLACE",
        "COPY src",
        "SET n 123",
        "COPY n ncopy",
        "OBJECT ENCODING ncopy",
        "DBSIZE",
        "FLUSHDB",
        "DBSIZE",
        "SET a 1",
        "FLUSHDB SYNC",
        "DBSIZE",
        "SET a 1",
        "FLUSHDB ASYNC",
        "DBSIZE",
        "FLUSHDB FOO",
        "FLUSHDB SYNC ASYNC",
        "SELECT 1",
        "DBSIZE",
        "SELECT 0",
    ]
    .iter()
    .map(|l| l.replace("__FUTURE_S__", &future_s).replace("__LATER_S__", &later_s).replace("__FUTURE_MS__", &future_ms))
    .collect();
    let refs: Vec<&str> = script.iter().map(|s| s.as_str()).collect();
    d.assert_script("keys", &refs);
}

#[test]
fn server_commands_and_errors() {
    let mut d = DiffPair::start();
    d.assert_script(
        "server",
        &[
            "CONFIG GET maxmemory",
            "CONFIG GET MAXMEMORY",
            "CONFIG GET databases",
            "CONFIG GET maxmemory-policy",
            "CONFIG GET nosuchparam",
            "~~CONFIG GET maxmemory*",
            "~~CONFIG GET maxmemory databases",
            "CONFIG GET",
            "CONFIG SET maxmemory abc",
            "CONFIG SET maxmemory -1",
            "CONFIG SET nosuchparam 1",
            "CONFIG SET databases 3",
            "CONFIG SET maxmemory-policy bogus",
            "CONFIG SET maxmemory 1 maxmemory 2",
            "CONFIG SET maxmemory",
            "CONFIG SET maxmemory 1 maxmemory-policy",
            "CONFIG SET",
            "CONFIG",
            "CONFIG NOSUCH",
            "CONFIG nosuch a b",
            "NOSUCHCOMMAND",
            "NOSUCHCOMMAND a b c",
            "nosuchcommand \"with space\" \"\"",
            "\"\"",
            "\"a\\x00b\" x",
            "FOO \"\\x00\\xffbin\\r\\n\"",
            "foo aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa b",
            "foo a b c d e f g h i j k l m n o p q r s t u v w x y z aa bb cc dd ee ff gg hh ii jj kk ll mm nn oo pp qq rr ss tt uu vv ww xx yy zz",
            "CLIENT FOO",
            "OBJECT FOO",
            "OBJECT FOO bar",
            "SLOWLOG FOO",
            "COMMAND FOO",
        ],
    );
}

/// CONFIG SET's bounds, units and the parameters Redis parses specially.
#[test]
fn config_set_bounds_and_special_values() {
    let mut d = DiffPair::start();
    d.assert_script(
        "config set",
        &[
            "CONFIG SET proto-max-bulk-len 1",
            "CONFIG SET proto-max-bulk-len 99999999999999999999",
            "CONFIG SET proto-max-bulk-len 2mb",
            "CONFIG GET proto-max-bulk-len",
            "CONFIG SET client-query-buffer-limit 1",
            "CONFIG SET active-expire-effort 0",
            "CONFIG SET active-expire-effort 11",
            "CONFIG SET active-expire-effort 5",
            "CONFIG GET active-expire-effort",
            "CONFIG SET client-output-buffer-limit \"normal 0 0\"",
            "CONFIG SET client-output-buffer-limit \"foo 0 0 0\"",
            "CONFIG SET client-output-buffer-limit \"master 1 2 3\"",
            "CONFIG SET client-output-buffer-limit \"pubsub 1kb 2mb 3\"",
            "CONFIG GET client-output-buffer-limit",
            "CONFIG SET client-output-buffer-limit \"REPLICA 1 2 3 normal 5 6 7 normal 8 9 10\"",
            "CONFIG GET client-output-buffer-limit",
            "CONFIG SET client-output-buffer-limit \"pubsub 1 2 3kb\"",
            "CONFIG SET client-output-buffer-limit \"pubsub 1 2 -3\"",
            "CONFIG SET client-output-buffer-limit \"pubsub 1 -2 3\"",
            "CONFIG SET client-output-buffer-limit \"pubsub 99999999999999999999 2 +3\"",
            "CONFIG SET client-output-buffer-limit \"\"",
            "CONFIG GET client-output-buffer-limit",
            "CONFIG SET oom-score-adj-values \"1 2\"",
            "CONFIG SET oom-score-adj-values \"a 2 3\"",
            "CONFIG SET oom-score-adj-values \"1 2 3000\"",
            "CONFIG SET oom-score-adj-values \"1 -2 +3\"",
            "CONFIG GET oom-score-adj-values",
            "CONFIG SET latency-tracking-info-percentiles \"50 abc\"",
            "CONFIG SET latency-tracking-info-percentiles 101",
            "CONFIG SET latency-tracking-info-percentiles -1",
            "CONFIG SET latency-tracking-info-percentiles \"50 99.99 1e1 0 .5 99.123456789\"",
            "CONFIG GET latency-tracking-info-percentiles",
            "CONFIG SET latency-tracking-info-percentiles \"\"",
            "CONFIG GET latency-tracking-info-percentiles",
            "CONFIG SET hz 0",
            "CONFIG GET hz",
            "CONFIG SET hz 1000",
            "CONFIG GET hz",
            "CONFIG SET hz 10",
            "CONFIG SET maxclients 0",
            "CONFIG SET maxclients 4294967296",
            "CONFIG SET lfu-log-factor -1",
            "CONFIG SET lfu-decay-time 2147483648",
            "CONFIG SET repl-timeout 0",
            "CONFIG SET maxmemory-samples 0",
            "CONFIG SET maxmemory-eviction-tenacity 101",
            "CONFIG SET active-defrag-cycle-max 100",
            "CONFIG SET zset-max-ziplist-value x",
            "CONFIG SET zset-max-ziplist-value 1kb",
            "CONFIG GET zset-max-listpack-value",
            "CONFIG SET dir /nonexistent/x",
            "CONFIG SET dir /tmp",
            "CONFIG SET dbfilename x.rdb",
            "CONFIG SET maxmemory 99999999999999999999",
            "CONFIG GET maxmemory",
            "CONFIG SET maxmemory 0",
            "CONFIG SET maxmemory-clients 10%",
            "CONFIG GET maxmemory-clients",
            "CONFIG SET maxmemory-clients 101%",
            "CONFIG SET maxmemory-clients x",
            "CONFIG SET maxmemory-clients 0",
            "CONFIG SET rdbchecksum no",
            "CONFIG SET socket-mark-id 1",
            "CONFIG SET jemalloc-bg-thread yes",
        ],
    );
}

/// Subcommand errors that Redis's handlers give themselves, and option checks found by the
/// review sweep.
#[test]
fn handler_subcommand_errors() {
    let mut d = DiffPair::start_with(&["--enable-debug-command", "local"], &[]);
    d.assert_script(
        "handler errors",
        &[
            "SLOWLOG GET 1 2",
            "DEBUG FOO",
            "DEBUG SLEEP",
            "DEBUG OBJECT",
            "DEBUG PROTOCOL",
            "DEBUG SET-ACTIVE-EXPIRE",
            "SET s abc",
            "MEMORY USAGE s SAMPLES -1",
            "MEMORY USAGE nokey SAMPLES -1",
            "MEMORY USAGE s SAMPLES 1 SAMPLES",
            "MEMORY USAGE s FOO",
            "COMMAND INFO GET|x",
            "COMMAND INFO nosuch config|get|x get",
        ],
    );
}

/// COMMAND GETKEYS: key specs all or nothing, the commands' own key finders where a spec
/// cannot be followed (key counts out of range, SORT, MIGRATE KEYS).
#[test]
fn getkeys_follow_specs_and_key_finders() {
    let mut d = DiffPair::start();
    d.assert_script(
        "getkeys",
        &[
            "COMMAND GETKEYS eval r 1 a",
            "COMMAND GETKEYS eval r 0",
            "COMMAND GETKEYS eval r 3 a b",
            "COMMAND GETKEYS eval r -1",
            "COMMAND GETKEYS eval r x",
            "COMMAND GETKEYS evalsha abc 2 a b c",
            "COMMAND GETKEYS eval_ro r 1 a",
            "COMMAND GETKEYS fcall f 1 a",
            "COMMAND GETKEYS fcall_ro f 0",
            "COMMAND GETKEYS zunion 2 a b",
            "COMMAND GETKEYS zinter 2 a b WEIGHTS 1 2",
            "COMMAND GETKEYS zdiff 3 a b",
            "COMMAND GETKEYS zintercard 1 a LIMIT 2",
            "COMMAND GETKEYS sintercard 2 a b",
            "COMMAND GETKEYS lmpop 2 a b LEFT",
            "COMMAND GETKEYS blmpop 0 2 a b LEFT",
            "COMMAND GETKEYS zmpop 1 a MIN",
            "COMMAND GETKEYS bzmpop 1 1 a MAX",
            "COMMAND GETKEYS zunionstore d 2 a b",
            "COMMAND GETKEYS zinterstore d 3 a b",
            "COMMAND GETKEYS zdiffstore d x a",
            "COMMAND GETKEYS zunionstore d -1 a",
            "COMMAND GETKEYS sort a STORE b",
            "COMMAND GETKEYS sort a BY x GET y STORE b STORE c",
            "COMMAND GETKEYS sort a LIMIT 0 1",
            "COMMAND GETKEYS sort_ro a BY x",
            "COMMAND GETKEYS georadius a 0 0 1 km STORE b",
            "COMMAND GETKEYS georadius a 0 0 1 km STOREDIST b",
            "COMMAND GETKEYS georadiusbymember a m 1 km STORE b",
            "COMMAND GETKEYS migrate h 1 \"\" 0 5 KEYS a b",
            "COMMAND GETKEYS migrate h 1 k 0 5",
            "COMMAND GETKEYS migrate h 1 k 0 5 KEYS a",
            "COMMAND GETKEYS migrate h 1 \"\" 0 5 AUTH pw KEYS a",
            "COMMAND GETKEYS get a",
            "COMMAND GETKEYS mset a 1 b 2",
            "COMMAND GETKEYS mset a 1 b",
            "COMMAND GETKEYS set a b GET",
            "COMMAND GETKEYS lmove a b LEFT RIGHT",
            "COMMAND GETKEYS ping",
            "COMMAND GETKEYS object encoding a",
            "COMMAND GETKEYS bitfield a GET u8 0",
            "COMMAND GETKEYS blpop a b 0",
            "COMMAND GETKEYS spop a",
        ],
    );
}

/// Every command of the table with one argument too few (and one too many for fixed arity).
#[test]
fn wrong_arity_for_every_command() {
    let mut d = DiffPair::start();
    let mut diffs = Vec::new();
    let mut cases = 0;
    for spec in vermilion::commands::COMMANDS.iter().flat_map(|c| std::iter::once(c).chain(c.subcommands.iter())) {
        let words: Vec<Vec<u8>> = spec.name.split('|').map(|w| w.to_ascii_uppercase().into_bytes()).collect();
        let mut counts = Vec::new();
        let arity = spec.arity as i64;
        if arity > 0 {
            counts.push(arity - 1);
            counts.push(arity + 1);
        } else {
            counts.push(-arity - 1);
        }
        for n in counts {
            // A subcommand needs its container and its own name; fewer is the container's case.
            if n < words.len() as i64 {
                continue;
            }
            let mut args: Vec<Vec<u8>> = words.iter().take(n as usize).cloned().collect();
            while args.len() < n as usize {
                args.push(b"x".to_vec());
            }
            cases += 1;
            if let Err(e) = d.check(&args) {
                diffs.push(e.to_string());
            }
        }
    }
    eprintln!("wrong arity: {cases} cases, {} differences", diffs.len());
    assert!(diffs.is_empty(), "{} of {cases} wrong-arity cases differ:\n{}", diffs.len(), diffs.join("\n"));
}

/// The harness's comparison modes and script syntax (no server needed).
#[test]
fn harness_compare_modes() {
    use common::diff::{parse_script_line, same, Reply, Resp};
    let reply = |v: Resp| -> Got { Ok(Reply { raw: v.to_bytes(), value: v }) };
    let bulk = |s: &str| Resp::Blob(b'$', s.as_bytes().to_vec());
    let int = |n: i64| Resp::Line(b':', n.to_string().into_bytes());
    let ab = reply(Resp::Agg(b'*', vec![bulk("a"), bulk("b")]));
    let ba = reply(Resp::Agg(b'*', vec![bulk("b"), bulk("a")]));
    assert!(!same(&ab, &ba, Cmp::Exact));
    assert!(same(&ab, &ba, Cmp::Unordered));
    let m1 = reply(Resp::Agg(b'*', vec![bulk("k1"), bulk("v1"), bulk("k2"), bulk("v2")]));
    let m2 = reply(Resp::Agg(b'*', vec![bulk("k2"), bulk("v2"), bulk("k1"), bulk("v1")]));
    let m3 = reply(Resp::Agg(b'*', vec![bulk("k2"), bulk("v1"), bulk("k1"), bulk("v2")]));
    assert!(same(&m1, &m2, Cmp::UnorderedPairs));
    assert!(!same(&m1, &m3, Cmp::UnorderedPairs));
    assert!(same(&reply(int(99)), &reply(int(100)), Cmp::Near(1)));
    assert!(!same(&reply(int(98)), &reply(int(100)), Cmp::Near(1)));
    assert!(!same(&reply(int(-1)), &reply(int(0)), Cmp::Near(1)));
    assert!(!same(&reply(int(-2)), &reply(int(-1)), Cmp::Near(5)));
    assert!(same(&reply(int(7)), &reply(int(8)), Cmp::IgnoreInts));
    assert!(!same(&reply(int(7)), &reply(bulk("7")), Cmp::IgnoreInts));
    assert!(same(&Err(common::diff::Broken::Closed), &Err(common::diff::Broken::Closed), Cmp::Exact));
    assert!(!same(&reply(int(1)), &Err(common::diff::Broken::Timeout), Cmp::Exact));
    let map = Resp::Agg(b'%', vec![bulk("a"), int(1)]);
    assert_eq!(map.to_bytes(), b"%1\r\n$1\r\na\r\n:1\r\n");
    let (conn, cmp, args) = parse_script_line("2> %1000 PTTL \"a b\"");
    assert_eq!((conn, cmp), (Some(2), Cmp::Near(1000)));
    assert_eq!(args.unwrap(), vec![b"PTTL".to_vec(), b"a b".to_vec()]);
    assert_eq!(parse_script_line("~~CONFIG GET *").1, Cmp::UnorderedPairs);
    assert_eq!(parse_script_line("SET k \">\"").2.unwrap()[2], b">".to_vec());
    assert!(parse_script_line("# comment").2.is_none());
}

// ---------------------------------------------------------------------------------------
// (b) seeded random sequences
// ---------------------------------------------------------------------------------------

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T: ?Sized>(&mut self, items: &[&'a T]) -> &'a T {
        items[self.below(items.len())]
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }
}

const KEYS: &[&[u8]] = &[b"k0", b"k1", b"k2", b"k3", b"", b"b\x00\r\nk", b"n", b"f"];
const VALUES: &[&[u8]] = &[
    b"",
    b"0",
    b"1",
    b"-1",
    b"123",
    b"007",
    b"3.5",
    b"-0.25",
    b"1e3",
    b" 1",
    b"1 ",
    b"+1",
    b"0x10",
    b"inf",
    b"nan",
    b"9223372036854775807",
    b"-9223372036854775808",
    b"9223372036854775808",
    b"abc",
    b"hello world",
    b"\x00\xff\r\nbin",
    b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    b"ohmytext",
    b"mynewtext",
];
const INTS: &[&[u8]] = &[
    b"0",
    b"1",
    b"-1",
    b"2",
    b"5",
    b"17",
    b"100",
    b"-100",
    b"2147483647",
    b"9223372036854775807",
    b"-9223372036854775808",
    b"9223372036854775808",
    b"abc",
    b"",
    b"1.5",
    b" 3",
    b"01",
];
const FLOATS: &[&[u8]] = &[
    b"1",
    b"1.5",
    b"-2",
    b"0.1",
    b"-0.1",
    b"1e3",
    b"5.0e3",
    b"3.0e-3",
    b"1e308",
    b"-1e308",
    b"abc",
    b"",
    b"inf",
    b"-inf",
    b"nan",
    b".5",
    b"1.",
    b" 1",
    b"0x10",
    b"10.50",
    b"1.7976931348623157e308",
    b"0",
];
const OFFSETS: &[&[u8]] =
    &[b"0", b"1", b"2", b"5", b"-1", b"-2", b"-5", b"100", b"-100", b"9223372036854775807", b"-9223372036854775808", b"x"];
const PATTERNS: &[&[u8]] = &[b"*", b"k*", b"k?", b"k[0-1]", b"k[^0]", b"*\x00*", b"[", b"\\*", b"", b"*k*", b"?", b"b*", b"n"];

/// The commands the generator knows, with weights.
const GEN: &[(&str, u32)] = &[
    ("get", 8),
    ("set", 12),
    ("setnx", 2),
    ("setex", 2),
    ("psetex", 2),
    ("getset", 2),
    ("getdel", 2),
    ("getex", 3),
    ("mget", 3),
    ("mset", 3),
    ("msetnx", 2),
    ("append", 4),
    ("strlen", 3),
    ("incr", 3),
    ("decr", 2),
    ("incrby", 3),
    ("decrby", 2),
    ("incrbyfloat", 4),
    ("getrange", 3),
    ("setrange", 3),
    ("substr", 1),
    ("lcs", 2),
    ("del", 3),
    ("unlink", 1),
    ("exists", 3),
    ("type", 2),
    ("touch", 1),
    ("expire", 3),
    ("pexpire", 2),
    ("expireat", 2),
    ("pexpireat", 1),
    ("ttl", 3),
    ("pttl", 2),
    ("expiretime", 1),
    ("pexpiretime", 1),
    ("persist", 2),
    ("keys", 2),
    ("rename", 2),
    ("renamenx", 2),
    ("move", 2),
    ("copy", 2),
    ("dbsize", 1),
    ("flushdb", 1),
    ("select", 2),
    ("swapdb", 1),
    ("object", 2),
    ("ping", 1),
    ("echo", 1),
    ("client", 1),
    ("hello", 1),
    ("config", 1),
    ("unknown", 1),
    ("arity", 3),
    ("rpush", 2),
];

struct Gen {
    rng: Rng,
    has_rpush: bool,
    now_s: i64,
    /// Relative expires handed out: each is drawn once, since two equal ones set by
    /// successive commands compare (GT/LT) by which millisecond each command ran in.
    rel_used: std::collections::HashSet<i64>,
}

fn b(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

impl Gen {
    fn key(&mut self) -> Vec<u8> {
        self.rng.pick(KEYS).to_vec()
    }
    fn value(&mut self) -> Vec<u8> {
        if self.rng.chance(3) {
            return vec![b'x'; self.rng.range(100, 3000) as usize];
        }
        self.rng.pick(VALUES).to_vec()
    }
    fn int(&mut self) -> Vec<u8> {
        self.rng.pick(INTS).to_vec()
    }
    fn db(&mut self) -> Vec<u8> {
        match self.rng.below(10) {
            0 => b("16"),
            1 => b("-1"),
            2 => b("x"),
            _ => self.rng.below(3).to_string().into_bytes(),
        }
    }
    /// A relative expire: immediate (0/negative), long enough never to elapse during the run
    /// (no races between the two servers), or invalid.
    fn rel_expire(&mut self, ms: bool) -> Vec<u8> {
        let mul = if ms { 1000 } else { 1 };
        match self.rng.below(12) {
            0 => b("0"),
            1 => b("-5"),
            2 => b("abc"),
            3 => b("9223372036854775807"),
            // The seconds*1000 overflow boundary, scaled for milliseconds so the value still
            // overflows (or fails to parse): an in-range value this large races the clock
            // under GT/LT (two such expires 1 ms apart compare by when each command ran).
            4 => {
                let s = (9223372036854775i64 + self.rng.range(0, 2)).to_string();
                if ms { format!("{s}000") } else { s }.into_bytes()
            }
            5 => b("1.5"),
            _ => loop {
                // A long run starts over rather than run out of values.
                if self.rel_used.len() > 50_000 {
                    self.rel_used.clear();
                }
                let v = self.rng.range(100, 100_000);
                if self.rel_used.insert(v) {
                    break (v * mul).to_string().into_bytes();
                }
            },
        }
    }
    fn abs_expire(&mut self, ms: bool) -> Vec<u8> {
        let mul = if ms { 1000 } else { 1 };
        match self.rng.below(10) {
            0 => b("1"),
            1 => b("0"),
            2 => b("-1"),
            3 => b("x"),
            4 => b("9223372036854775807"),
            _ => ((self.now_s + self.rng.range(100, 100_000)) * mul).to_string().into_bytes(),
        }
    }
    fn keys(&mut self, min: usize, max: usize) -> Vec<Vec<u8>> {
        let n = self.rng.range(min as i64, max as i64) as usize;
        (0..n).map(|_| self.key()).collect()
    }

    /// One command and how to compare its reply.
    fn command(&mut self, name: &str) -> (Vec<Vec<u8>>, Cmp) {
        let mut c: Vec<Vec<u8>> = vec![name.to_ascii_uppercase().into_bytes()];
        if self.rng.chance(5) {
            c[0] = name.as_bytes().to_vec();
        }
        let mut cmp = Cmp::Exact;
        match name {
            "get" | "getdel" | "strlen" | "incr" | "decr" | "type" | "persist" => c.push(self.key()),
            "ttl" | "expiretime" => {
                c.push(self.key());
                cmp = Cmp::Near(1);
            }
            "pttl" | "pexpiretime" => {
                c.push(self.key());
                cmp = Cmp::Near(1000);
            }
            "set" => {
                c.push(self.key());
                c.push(self.value());
                let opts = self.rng.below(4);
                for _ in 0..opts {
                    match self.rng.below(11) {
                        0 => c.push(b("NX")),
                        1 => c.push(b("XX")),
                        2 => c.push(b("GET")),
                        3 => c.push(b("KEEPTTL")),
                        4 | 5 => {
                            c.push(b("EX"));
                            let e = self.rel_expire(false);
                            c.push(e);
                        }
                        6 => {
                            c.push(b("PX"));
                            let e = self.rel_expire(true);
                            c.push(e);
                        }
                        7 => {
                            c.push(b("EXAT"));
                            let e = self.abs_expire(false);
                            c.push(e);
                        }
                        8 => {
                            c.push(b("PXAT"));
                            let e = self.abs_expire(true);
                            c.push(e);
                        }
                        9 => c.push(b("px")),
                        _ => c.push(b("BOGUS")),
                    }
                }
            }
            "setnx" | "getset" | "append" => {
                c.push(self.key());
                c.push(self.value());
            }
            "setex" | "psetex" => {
                c.push(self.key());
                let e = self.rel_expire(name == "psetex");
                c.push(e);
                c.push(self.value());
            }
            "getex" => {
                c.push(self.key());
                for _ in 0..self.rng.below(3) {
                    match self.rng.below(7) {
                        0 => c.push(b("PERSIST")),
                        1 => {
                            c.push(b("EX"));
                            let e = self.rel_expire(false);
                            c.push(e);
                        }
                        2 => {
                            c.push(b("PX"));
                            let e = self.rel_expire(true);
                            c.push(e);
                        }
                        3 => {
                            c.push(b("EXAT"));
                            let e = self.abs_expire(false);
                            c.push(e);
                        }
                        4 => {
                            c.push(b("PXAT"));
                            let e = self.abs_expire(true);
                            c.push(e);
                        }
                        5 => c.push(b("EX")),
                        _ => c.push(b("NOPE")),
                    }
                }
            }
            "mget" | "exists" | "touch" | "del" | "unlink" => {
                let ks = self.keys(1, 5);
                c.extend(ks);
            }
            "mset" | "msetnx" => {
                for _ in 0..self.rng.range(1, 3) {
                    c.push(self.key());
                    c.push(self.value());
                }
                if self.rng.chance(10) {
                    c.push(self.key());
                }
            }
            "incrby" | "decrby" => {
                c.push(self.key());
                c.push(self.int());
            }
            "incrbyfloat" => {
                c.push(self.key());
                c.push(self.rng.pick(FLOATS).to_vec());
            }
            "getrange" | "substr" => {
                c.push(self.key());
                c.push(self.rng.pick(OFFSETS).to_vec());
                c.push(self.rng.pick(OFFSETS).to_vec());
            }
            "setrange" => {
                c.push(self.key());
                let off = match self.rng.below(10) {
                    0 => b("-1"),
                    1 => b("536870912"),
                    2 => b("9223372036854775807"),
                    3 => b("x"),
                    _ => self.rng.range(0, 300).to_string().into_bytes(),
                };
                c.push(off);
                c.push(self.value());
            }
            "lcs" => {
                c.push(self.key());
                c.push(self.key());
                for _ in 0..self.rng.below(4) {
                    match self.rng.below(6) {
                        0 => c.push(b("LEN")),
                        1 | 2 => c.push(b("IDX")),
                        3 => c.push(b("WITHMATCHLEN")),
                        4 => {
                            c.push(b("MINMATCHLEN"));
                            c.push(self.rng.pick(&[&b"0"[..], b"2", b"4", b"-1", b"x"]).to_vec());
                        }
                        _ => c.push(b("FOO")),
                    }
                }
            }
            "expire" | "pexpire" | "expireat" | "pexpireat" => {
                c.push(self.key());
                let ms = name.starts_with('p');
                let e = if name.ends_with("at") { self.abs_expire(ms) } else { self.rel_expire(ms) };
                c.push(e);
                for _ in 0..self.rng.below(3) {
                    c.push(self.rng.pick(&[&b"NX"[..], b"XX", b"GT", b"LT", b"gt", b"FOO"]).to_vec());
                }
            }
            "keys" => {
                c.push(self.rng.pick(PATTERNS).to_vec());
                cmp = Cmp::Unordered;
            }
            "rename" | "renamenx" => {
                c.push(self.key());
                c.push(self.key());
            }
            "move" => {
                c.push(self.key());
                let db = self.db();
                c.push(db);
            }
            "copy" => {
                c.push(self.key());
                c.push(self.key());
                for _ in 0..self.rng.below(3) {
                    if self.rng.chance(50) {
                        c.push(b("REPLACE"));
                    } else {
                        c.push(b("DB"));
                        let db = self.db();
                        c.push(db);
                    }
                }
            }
            "dbsize" => {}
            "flushdb" => {
                if self.rng.chance(30) {
                    c.push(self.rng.pick(&[&b"SYNC"[..], b"ASYNC", b"FOO"]).to_vec());
                }
            }
            "select" => {
                let db = self.db();
                c.push(db);
            }
            "swapdb" => {
                let a = self.db();
                let b2 = self.db();
                c.push(a);
                c.push(b2);
            }
            "object" => {
                if self.rng.chance(90) {
                    c.push(b("ENCODING"));
                    c.push(self.key());
                } else {
                    c.push(b("NOSUCH"));
                }
            }
            "ping" => {
                if self.rng.chance(50) {
                    c.push(self.value());
                }
            }
            "echo" => c.push(self.value()),
            "client" => match self.rng.below(4) {
                0 => c.push(b("GETNAME")),
                1 => {
                    c.push(b("SETNAME"));
                    c.push(self.rng.pick(&[&b"name1"[..], b"", b"bad name", b"x\n"]).to_vec());
                }
                2 => {
                    c.push(b("ID"));
                    cmp = Cmp::IgnoreInts;
                }
                _ => c.push(b("NOSUCH")),
            },
            "hello" => {
                c.push(self.rng.pick(&[&b"2"[..], b"3", b"3", b"4", b"x"]).to_vec());
                cmp = Cmp::IgnoreInts;
            }
            "config" => match self.rng.below(3) {
                0 => {
                    c.push(b("GET"));
                    c.push(self.rng.pick(&[&b"maxmemory"[..], b"databases", b"nosuch"]).to_vec());
                }
                1 => {
                    c.push(b("SET"));
                    c.push(self.rng.pick(&[&b"maxmemory"[..], b"nosuch", b"databases"]).to_vec());
                    c.push(self.rng.pick(&[&b"abc"[..], b"-1", b"0"]).to_vec());
                }
                _ => c.push(b("NOSUCH")),
            },
            "unknown" => {
                c[0] = self.rng.pick(&[&b"NOSUCHCMD"[..], b"", b"GETT", b"x\x00y"]).to_vec();
                for _ in 0..self.rng.below(3) {
                    c.push(self.value());
                }
            }
            "arity" => {
                let (name, n): (&str, usize) = *self.rng.pick(
                    &[
                        &("get", 0usize),
                        &("get", 2),
                        &("set", 1),
                        &("setex", 2),
                        &("incrby", 1),
                        &("getrange", 2),
                        &("lcs", 1),
                        &("expire", 1),
                        &("rename", 1),
                        &("copy", 1),
                        &("mget", 0),
                        &("del", 0),
                        &("ttl", 2),
                        &("dbsize", 1),
                        &("select", 0),
                        &("echo", 2),
                    ][..],
                );
                c[0] = name.to_ascii_uppercase().into_bytes();
                for _ in 0..n {
                    c.push(self.key());
                }
            }
            "rpush" => {
                c.push(self.key());
                for _ in 0..self.rng.range(1, 3) {
                    c.push(self.value());
                }
            }
            other => panic!("generator has no case for {other}"),
        }
        (c, cmp)
    }
}

fn env_list(name: &str) -> Option<Vec<String>> {
    std::env::var(name).ok().filter(|s| !s.is_empty()).map(|s| s.split(',').map(|x| x.trim().to_ascii_lowercase()).collect())
}

#[test]
fn random_sequences() {
    let seconds: u64 = std::env::var("DIFF_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let seed: u64 = std::env::var("DIFF_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        let t = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        t.as_secs() ^ (t.subsec_nanos() as u64) << 20
    });
    let keep_going = std::env::var("DIFF_KEEP_GOING").is_ok_and(|v| v != "0" && !v.is_empty());
    let only = env_list("DIFF_ONLY");
    let skip = env_list("DIFF_SKIP").unwrap_or_default();
    eprintln!("random differential: DIFF_SEED={seed} DIFF_SECONDS={seconds}");

    let mut d = DiffPair::start_with(&["--enable-debug-command", "yes"], &[]);
    // Keys set with a past expiry stay until touched; without this, when each server's active
    // expiry cycle happens to delete them would make DBSIZE/KEYS race between the two.
    for side in [d.redis_call(&[&b"DEBUG"[..], b"SET-ACTIVE-EXPIRE", b"0"]), d.ours_call(&[&b"DEBUG"[..], b"SET-ACTIVE-EXPIRE", b"0"])] {
        assert!(matches!(side, Ok(r) if !r.value.is_error()), "DEBUG SET-ACTIVE-EXPIRE 0 refused");
    }
    // Other types exist only if our server implements RPUSH (it answers with an integer).
    let has_rpush = matches!(d.ours_call(&[&b"RPUSH"[..], b"__probe", b"x"]), Ok(r) if r.value.as_int().is_some());
    let _ = d.ours_call(&[&b"DEL"[..], b"__probe"]);
    if !has_rpush {
        eprintln!("our server has no RPUSH: no other-type keys in the random sequences");
    }
    let mut table: Vec<(&str, u32)> = GEN
        .iter()
        .copied()
        .filter(|(n, _)| *n != "rpush" || has_rpush)
        .filter(|(n, _)| only.as_ref().is_none_or(|o| o.iter().any(|x| x == n)))
        .filter(|(n, _)| !skip.iter().any(|x| x == n))
        .collect();
    if table.is_empty() {
        table.push(("ping", 1));
    }
    let total: u32 = table.iter().map(|(_, w)| w).sum();

    let mut gen = Gen { rng: Rng(seed), has_rpush, now_s: now_s(), rel_used: Default::default() };
    let mut per_cmd: BTreeMap<String, u64> = BTreeMap::new();
    let mut commands = 0u64;
    let mut error_replies = 0u64;
    let mut sequences = 0u64;
    let mut failures: BTreeMap<String, String> = BTreeMap::new();
    let mut diff_counts: BTreeMap<String, u64> = BTreeMap::new();
    let start = Instant::now();
    let deadline = start + Duration::from_secs(seconds);

    'outer: while Instant::now() < deadline {
        sequences += 1;
        d.reset_conns();
        if let Err(e) = d.check(&[b"FLUSHALL"]) {
            let msg = format!("seed {seed}, sequence {sequences}: resetting with FLUSHALL differs:\n{e}");
            if keep_going {
                failures.entry("flushall".into()).or_insert(msg);
            } else {
                panic!("{msg}");
            }
        }
        let nconns = gen.rng.range(1, 3) as usize;
        let len = gen.rng.range(10, 150) as usize;
        let mut history: Vec<String> = Vec::new();
        if gen.has_rpush && gen.rng.chance(50) {
            let _ = d.check(&[&b"RPUSH"[..], b"k3", b"a", b"b"]);
            history.push("RPUSH k3 a b".into());
        }
        for index in 0..len {
            if Instant::now() >= deadline {
                break 'outer;
            }
            let conn = gen.rng.below(nconns);
            d.on(conn);
            let mut pick = gen.rng.below(total as usize) as u32;
            let mut name = table[0].0;
            for (n, w) in &table {
                if pick < *w {
                    name = n;
                    break;
                }
                pick -= w;
            }
            let (args, cmp) = gen.command(name);
            // LCS is O(N*M) in time and memory: skip it when the strings are large.
            if name == "lcs" {
                let mut cells = 1u64;
                for k in &args[1..3] {
                    let len = match d.redis_call(&[&b"STRLEN"[..], k]) {
                        Ok(r) => r.value.as_int().unwrap_or(0).max(1) as u64,
                        Err(_) => 1,
                    };
                    cells *= len;
                }
                if cells > 4_000_000 {
                    continue;
                }
            }
            let label = if args[0].eq_ignore_ascii_case(b"client") || args[0].eq_ignore_ascii_case(b"config") {
                format!("{} {}", String::from_utf8_lossy(&args[0]).to_lowercase(), String::from_utf8_lossy(&args[1]).to_lowercase())
            } else {
                name.to_string()
            };
            *per_cmd.entry(label.clone()).or_default() += 1;
            commands += 1;
            history.push(format!("{conn}> {}", show_cmd(&args)));
            let (a, b2): (Got, Got) = d.exchange(&args);
            if matches!(&a, Ok(r) if r.value.is_error()) {
                error_replies += 1;
            }
            if !common::diff::same(&a, &b2, cmp) {
                let mut msg = format!(
                    "random differential FAILED: DIFF_SEED={seed} sequence {sequences} command #{index} (connection {conn}, compare {cmp:?})\n  sent:  {}\n  redis: {}\n  ours:  {}\n",
                    show_cmd(&args),
                    show(&a),
                    show(&b2)
                );
                let from = history.len().saturating_sub(40);
                msg.push_str(&format!("  sequence so far (last {}):\n", history.len() - from));
                for h in &history[from..] {
                    msg.push_str(&format!("    {h}\n"));
                }
                if keep_going {
                    *diff_counts.entry(label.clone()).or_default() += 1;
                    if let std::collections::btree_map::Entry::Vacant(e) = failures.entry(label) {
                        eprintln!("{msg}");
                        e.insert(msg);
                    }
                    continue 'outer;
                }
                eprintln!("{msg}");
                print_stats(commands, error_replies, sequences, start, &per_cmd);
                panic!("{msg}");
            }
        }
    }
    print_stats(commands, error_replies, sequences, start, &per_cmd);
    if !failures.is_empty() {
        let mut msg = format!("DIFF_SEED={seed}: {} command kinds differ:\n", failures.len());
        for (k, v) in &failures {
            let n = diff_counts.get(k).copied().unwrap_or(0);
            msg.push_str(&format!("== {k} ({n} differing sequences; the first one:)\n{v}\n"));
        }
        panic!("{msg}");
    }
}

fn print_stats(commands: u64, errors: u64, sequences: u64, start: Instant, per_cmd: &BTreeMap<String, u64>) {
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "random differential: {commands} commands ({errors} answered with an error by redis) in {sequences} sequences, {secs:.1} s ({:.0} commands/s, {:.1} sequences/s)",
        commands as f64 / secs,
        sequences as f64 / secs
    );
    let line: Vec<String> = per_cmd.iter().map(|(k, v)| format!("{k}={v}")).collect();
    eprintln!("per command: {}", line.join(" "));
}
