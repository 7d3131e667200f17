//! Every known Redis Lua security fix, reproduced as a script that must fail safely: the same
//! reply as redis-server 7.0 (which carries the fixes), a server that still answers, a
//! sandbox left intact for the next script, and no state leaking from one script to another.

mod common;

use common::diff::{DiffPair, Got};

/// (what it reproduces, script). Scripts return `{pcall(...)}` so an error is a value.
const CASES: &[(&str, &str)] = &[
    // Bytecode: CVE-2015-4335 (loadstring of bytecode), and the `\27Lua` signature.
    ("bytecode via string.dump", "return {pcall(loadstring, string.dump(function() return 1 end))}"),
    ("bytecode signature", "local f, e = loadstring('\\27Lua') return {tostring(f), e}"),
    // Readonly tables and metatables: CVE-2022-24735, CVE-2025-46818.
    ("global creation", "return {pcall(function() x = 1 end)}"),
    ("_G write", "return {pcall(function() _G.x = 1 end)}"),
    ("rawset on redis", "return {pcall(rawset, redis, 'call', 1)}"),
    ("redis.call replaced", "return {pcall(function() redis.call = function() end end)}"),
    ("string library replaced", "return {pcall(function() string.upper = nil end)}"),
    ("cjson replaced", "return {pcall(function() cjson.encode = nil end)}"),
    ("_G metatable removed", "return {pcall(setmetatable, _G, nil)}"),
    ("string metatable index", "return {pcall(function() getmetatable('').__index = {} end)}"),
    ("string metatable __index.upper", "return {pcall(function() getmetatable('').__index.upper = nil end)}"),
    ("redis metatable", "return {pcall(setmetatable, redis, {})}"),
    // Unreachable globals: files, environment, other scripts' state.
    ("io", "return {pcall(function() return io.open('/etc/passwd') end)}"),
    ("os.execute", "return {pcall(function() return os.execute('true') end)}"),
    ("os.getenv", "return {pcall(function() return os.getenv('HOME') end)}"),
    ("dofile", "return {pcall(function() return dofile('/etc/passwd') end)}"),
    ("loadfile", "return {pcall(function() return loadfile('/etc/passwd') end)}"),
    ("require", "return {pcall(function() return require('os') end)}"),
    ("package", "return {pcall(function() return package.loaded end)}"),
    ("debug library", "return {pcall(function() return debug.getinfo(1) end)}"),
    ("getfenv", "return {pcall(function() return getfenv(0) end)}"),
    ("newproxy", "return {pcall(function() return newproxy(true) end)}"),
    // Stack exhaustion: CVE-2021-32626 (huge returns), CVE-2025-46817 (unpack ranges).
    ("unpack huge range", "return {pcall(unpack, {}, 1, 1e8)}"),
    ("unpack negative range", "return {pcall(unpack, {}, -2147483648, 2147483647)}"),
    ("deep recursion", "local function f(n) return f(n + 1) + 1 end return {pcall(f, 1)}"),
    ("huge reply table", "local t = {} for i = 1, 200000 do t[i] = i end return #t"),
    // cjson / cmsgpack / struct / bit: CVE-2018-11218, CVE-2018-11219, CVE-2020-14147,
    // CVE-2024-31449.
    ("cjson deep nesting", "return {pcall(cjson.decode, string.rep('[', 100000))}"),
    ("cjson deep encode", "local t = {} local c = t for i = 1, 10000 do c[1] = {} c = c[1] end return {pcall(cjson.encode, t)}"),
    ("cmsgpack deep nesting", "return {pcall(cmsgpack.unpack, string.rep('\\145', 100000))}"),
    ("cmsgpack many args", "local t = {} for i = 1, 10000 do t[i] = i end return {pcall(function() return #cmsgpack.pack(unpack(t)) end)}"),
    ("cmsgpack truncated", "return {pcall(cmsgpack.unpack, '\\219\\255\\255\\255\\255')}"),
    ("struct huge size", "return {pcall(struct.pack, '>I200000', 1)}"),
    ("struct overflowing count", "return {pcall(struct.unpack, 'i9999999999', 'x')}"),
    ("struct string past the end", "return {pcall(struct.unpack, 'c100', 'x')}"),
    ("struct negative", "return {pcall(struct.unpack, 'i-1', 'xxxx')}"),
    ("bit.tohex INT_MIN", "return {pcall(bit.tohex, 1, -2147483648)}"),
    ("string.format width", "return {pcall(string.format, '%10000d', 1)}"),
    ("string.rep huge", "return {pcall(string.rep, 'x', -1)}"),
    // GC abuse: CVE-2024-46981.
    ("collectgarbage", "return {pcall(collectgarbage, 'collect')}"),
    (
        "__gc metamethod",
        "local t = setmetatable({}, {__gc = function() redis.call('set', 'gc', '1') end}) t = nil collectgarbage() return 1",
    ),
    // Lexer and parser: CVE-2025-49844, CVE-2025-46819.
    ("long string bracket", "return {pcall(loadstring, '[=' .. string.rep('=', 100000) .. '[x]')}"),
    ("parser nesting", "return {pcall(loadstring, string.rep('(', 100000))}"),
];

/// What the next script must still see: the sandbox as Redis builds it.
const INTEGRITY: &str = "return {type(string.upper), type(redis.call), type(cjson.encode), tostring(getmetatable('').__index == string), type(rawget(_G, 'x'))}";

#[test]
fn lua_security_fixes_fail_safely_like_redis() {
    let mut d = DiffPair::start();
    let mut failures = Vec::new();
    for (name, body) in CASES {
        if let Err(e) = d.check(&["EVAL", body, "0"]) {
            failures.push(format!("{name}: {e}"));
        }
        if let Err(e) = d.check(&["EVAL", INTEGRITY, "0"]) {
            failures.push(format!("after {name}: {e}"));
        }
        if let Err(e) = d.check(&["PING"]) {
            failures.push(format!("after {name}, PING: {e}"));
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    // The __gc script's write did not run outside a script (or it did on both alike).
    let _ = d.check(&["EXISTS", "gc"]).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn scripts_cannot_see_each_other() {
    let mut d = DiffPair::start();
    let scripts = [
        // One script tries to leave something behind, by every door it has...
        "pcall(function() x = 1 end) pcall(function() redis.x = 1 end) pcall(function() string.x = 1 end) pcall(rawset, _G, 'y', 2) return 1",
        // ...the next finds nothing of it.
        "return {type(rawget(_G, 'x')), type(rawget(_G, 'y')), type(redis.x), type(string.x)}",
        "return {pcall(function() return KEYS[1] end)}",
    ];
    for body in scripts {
        let got = d.check(&["EVAL", body, "0"]).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(got, Got::Ok(_)));
    }
    // KEYS and ARGV are the caller's own in each call.
    let _ = d.check(&["EVAL", "return {KEYS[1], ARGV[1]}", "1", "a", "b"]).unwrap_or_else(|e| panic!("{e}"));
    let _ = d.check(&["EVAL", "return {KEYS[1], ARGV[1]}", "0"]).unwrap_or_else(|e| panic!("{e}"));
}
