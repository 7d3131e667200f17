//! Lua scripting, differentially against the real redis-server 7.0: conversions both ways,
//! error texts (with the `script: <sha>, on @user_script:N.` suffix), pcall, the redis.*
//! API, the sandbox, SCRIPT subcommands, EVALSHA, EVAL_RO and shebang flags, in RESP2 and
//! RESP3. Where Vermilion deliberately differs (math.random reseeding, sorted output for
//! scripts), the behaviour is asserted directly instead (see tests/scripting_rules.rs).

mod common;

use common::diff::{Cmp, DiffPair};

/// Every case is `EVAL <body> <numkeys> <keys and args...>`.
struct Case<'a> {
    body: &'a str,
    rest: &'a [&'a str],
}

const fn c<'a>(body: &'a str, rest: &'a [&'a str]) -> Case<'a> {
    Case { body, rest }
}

const SETUP: &[&[&str]] = &[
    &["SET", "str", "hello"],
    &["SET", "num", "10"],
    &["RPUSH", "list", "a", "b", "c"],
    &["HSET", "hash", "f", "v"],
    &["SADD", "set1", "only"],
    &["ZADD", "zset", "1", "a", "2.5", "b"],
];

const CASES: &[Case] = &[
    // Lua -> reply
    c("return 1", &["0"]),
    c("return -1", &["0"]),
    c("return 3.99", &["0"]),
    c("return -3.99", &["0"]),
    c("return 0.5", &["0"]),
    c("return 1e300", &["0"]),
    c("return -1e300", &["0"]),
    c("return 0/0", &["0"]),
    c("return 2^53", &["0"]),
    c("return 'hello'", &["0"]),
    c("return ''", &["0"]),
    c("return '\\0bin\\255'", &["0"]),
    c("return true", &["0"]),
    c("return false", &["0"]),
    c("return nil", &["0"]),
    c("return", &["0"]),
    c("return {}", &["0"]),
    c("return {1,2,3,'four'}", &["0"]),
    c("return {1,2,3.3333,'foo',nil,'bar'}", &["0"]),
    c("return {1,{2,{3,'x'}},true,false,'z'}", &["0"]),
    c("return {foo='bar'}", &["0"]),
    c("return {ok='fine'}", &["0"]),
    c("return {ok='line\\r\\nbreak'}", &["0"]),
    c("return {err='MY error'}", &["0"]),
    c("return {err='x', ok='y'}", &["0"]),
    c("return {err='no code'}", &["0"]),
    c("return {err='line\\nbreak'}", &["0"]),
    c("return {err=12}", &["0"]),
    c("return {ok=12}", &["0"]),
    c("return {double=3.5}", &["0"]),
    c("return {double='3.5'}", &["0"]),
    c("return {big_number='123456789012345678901234567890'}", &["0"]),
    c("return {map={a=1}}", &["0"]),
    c("return {set={a=true}}", &["0"]),
    c("return {verbatim_string={format='txt', string='hello'}}", &["0"]),
    c("return {verbatim_string={format='mkd', string='# hi'}}", &["0"]),
    c("return {verbatim_string={format='txt'}, 7}", &["0"]),
    c("return {1, 2, x='y', [4]=5}", &["0"]),
    c("return {map={a={set={x=true}}, [1]={double=2}}, 3}", &["0"]),
    c("return {err={}}", &["0"]),
    c("return {ok=true, 5}", &["0"]),
    c("return {double=true, 5}", &["0"]),
    c("return {1, {err='inner'}, {ok='st'}, {big_number='12'}}", &["0"]),
    c("redis.setresp(3) return {true, false, {double=0.5}, {map={k='v'}}}", &["0"]),
    c("return function() end", &["0"]),
    c("return coroutine.create(function() end)", &["0"]),
    c("return {1, function() end, 3}", &["0"]),
    c("return KEYS", &["2", "k1", "k2", "a1"]),
    c("return ARGV", &["2", "k1", "k2", "a1", "a2"]),
    c("return {#KEYS, #ARGV}", &["0"]),
    c("return {KEYS[1], ARGV[1]}", &["1", "key", "arg"]),
    // reply -> Lua
    c("return redis.call('get', 'str')", &["0"]),
    c("return redis.call('get', 'missing')", &["0"]),
    c("return type(redis.call('get', 'missing'))", &["0"]),
    c("return tostring(redis.call('get', 'missing'))", &["0"]),
    c("return redis.call('incr', 'num')", &["0"]),
    c("return type(redis.call('incr', 'num'))", &["0"]),
    c("return redis.call('lrange', 'list', 0, -1)", &["0"]),
    c("return #redis.call('lrange', 'list', 0, -1)", &["0"]),
    c("return redis.call('set', 'k', 'v')", &["0"]),
    c("local r = redis.call('set', 'k', 'v') return type(r) .. ':' .. r.ok", &["0"]),
    c("return redis.call('ping')", &["0"]),
    c("return redis.call('type', 'list')", &["0"]),
    c("return redis.call('hgetall', 'hash')", &["0"]),
    c("return redis.call('zrange', 'zset', 0, -1, 'withscores')", &["0"]),
    c("return redis.call('zscore', 'zset', 'b')", &["0"]),
    c("return redis.call('exists', 'str', 'num', 'nope')", &["0"]),
    c("return redis.call('mget', 'str', 'nope', 'num')", &["0"]),
    c("local t = redis.call('mget', 'str', 'nope', 'num') return {type(t[2]), t[3]}", &["0"]),
    c("return redis.call('smembers', 'set1')", &["0"]),
    c("return redis.call('get', KEYS[1])", &["1", "str"]),
    c("return redis.call('echo', 3.5)", &["0"]),
    c("return redis.call('echo', 1/3)", &["0"]),
    c("return redis.call('echo', 1e20)", &["0"]),
    c("return redis.call('echo', 100)", &["0"]),
    c("return redis.call('echo', -0.0)", &["0"]),
    c("return redis.call('echo', 2^63)", &["0"]),
    c("return redis.call('echo', 0.1)", &["0"]),
    c("return redis.call('set', 'n', 12345678901234567890)", &["0"]),
    // Every number argument is formatted with %.17g, integral ones included.
    c("redis.call('set', 'n', 1e17) return redis.call('get', 'n')", &["0"]),
    c("redis.call('set', 'n', 123456789012345678) return redis.call('get', 'n')", &["0"]),
    c("redis.call('set', 'n', -2^60) return redis.call('get', 'n')", &["0"]),
    c("redis.call('set', 'n', 2^53) return redis.call('get', 'n')", &["0"]),
    c("redis.call('set', 'n', 99999999999999999) return redis.call('get', 'n')", &["0"]),
    c("return redis.call('EcHo', 'case')", &["0"]),
    // errors from redis.call / pcall
    c("return redis.call('incr', 'str')", &["0"]),
    c("return redis.call('lpush', 'str', 'x')", &["0"]),
    c("return redis.pcall('incr', 'str')", &["0"]),
    c("return redis.pcall('lpush', 'str', 'x')", &["0"]),
    c("local r = redis.pcall('incr', 'str') return r['err']", &["0"]),
    c("local ok, e = pcall(redis.call, 'incr', 'str') return {tostring(ok), e}", &["0"]),
    c("local ok, e = pcall(redis.call, 'nosuch') return e", &["0"]),
    c("local ok, e = pcall(error, {err='x'}) return type(e)", &["0"]),
    c("local ok, e = pcall(error, 'plain') return e", &["0"]),
    c("local ok, e = pcall(error, {foo='bar'}) return type(e)", &["0"]),
    c("return pcall()", &["0"]),
    c("return {coroutine.resume()}", &["0"]),
    c("return {pcall(function() error({err=5}) end)}", &["0"]),
    c("return pcall(function() return 1, 2 end)", &["0"]),
    c("local ok, e = pcall(redis.call, 'incr', 'x', 'y') return e", &["0"]),
    c("return {pcall(coroutine.resume, coroutine.create(function() error('in co') end))}", &["0"]),
    c("return redis.call('nosuch')", &["0"]),
    c("return redis.pcall('nosuch')", &["0"]),
    c("return redis.call('get')", &["0"]),
    c("return redis.call('get', 'a', 'b')", &["0"]),
    c("return redis.pcall('get')", &["0"]),
    c("return redis.call('client', 'foo')", &["0"]),
    c("return redis.call('config', 'get', 'maxmemory')", &["0"]),
    c("return redis.call('blpop', 'x', 0)", &["0"]),
    c("return redis.call('subscribe', 'ch')", &["0"]),
    c("return redis.call('multi')", &["0"]),
    c("return redis.call('eval', 'return 1', 0)", &["0"]),
    c("return redis.call('script', 'load', 'return 1')", &["0"]),
    c("return redis.call('auth', 'x')", &["0"]),
    c("return redis.call()", &["0"]),
    c("return redis.pcall()", &["0"]),
    c("return redis.call({})", &["0"]),
    c("return redis.call('get', {})", &["0"]),
    c("return redis.call('get', nil)", &["0"]),
    c("return redis.call('get', true)", &["0"]),
    c("redis.call('set', 'a', 1)\nredis.call('set', 'b', 2)\nreturn redis.call('incr', 'str')", &["0"]),
    c("\n\nreturn redis.call('incr', 'str')", &["0"]),
    // error() and runtime errors
    c("error('raw')", &["0"]),
    c("error('raw', 0)", &["0"]),
    c("error('raw', 2)", &["0"]),
    c("error(12)", &["0"]),
    c("error({err='MY thing'})", &["0"]),
    c("error({err='ERR plain'})", &["0"]),
    c("error({err=12})", &["0"]),
    c("local t = nil; return t.x", &["0"]),
    c("return 1 + {}", &["0"]),
    c("return #nil", &["0"]),
    c("local function f() error('deep') end\nlocal function g() f() end\ng()", &["0"]),
    c("return redis.error_reply('boom')", &["0"]),
    c("return redis.error_reply('MY boom')", &["0"]),
    c("return redis.error_reply('-MY boom')", &["0"]),
    c("return redis.error_reply('')", &["0"]),
    c("return redis.error_reply()", &["0"]),
    c("return redis.error_reply(1)", &["0"]),
    c("return redis.status_reply('fine')", &["0"]),
    c("return redis.status_reply()", &["0"]),
    c("return redis.status_reply(1)", &["0"]),
    c("local r = redis.error_reply('x') return type(r) .. r.err", &["0"]),
    c("error(redis.error_reply('CODE raised'))", &["0"]),
    // compile errors
    c("return 1 +", &["0"]),
    c("return 'unterminated", &["0"]),
    c("local", &["0"]),
    c("x y z", &["0"]),
    c("\n\nreturn )", &["0"]),
    c("\x1bLua", &["0"]),
    // numkeys
    c("return 1", &["-1"]),
    c("return 1", &["1"]),
    c("return 1", &["x"]),
    c("return 1", &["3", "a"]),
    c("return 1", &["99999999999999999999"]),
    // redis.* API
    c("return redis.sha1hex('')", &["0"]),
    c("return redis.sha1hex('Pizza & Mandolino')", &["0"]),
    c("return redis.sha1hex()", &["0"]),
    c("return redis.sha1hex('a', 'b')", &["0"]),
    c("return redis.sha1hex(12)", &["0"]),
    c("return redis.log(redis.LOG_WARNING, 'from a test')", &["0"]),
    c("return redis.log(redis.LOG_DEBUG, 'x', 1, 2.5)", &["0"]),
    c("return redis.log(1)", &["0"]),
    c("return redis.log('a', 'b')", &["0"]),
    c("return redis.log(9, 'b')", &["0"]),
    c("return redis.log(-1, 'b')", &["0"]),
    c("return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}", &["0"]),
    c("return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL}", &["0"]),
    c("return redis.REDIS_VERSION", &["0"]),
    c("return redis.REDIS_VERSION_NUM", &["0"]),
    c("return redis.replicate_commands()", &["0"]),
    c("return redis.breakpoint()", &["0"]),
    c("return redis.debug('x')", &["0"]),
    c("return redis.setresp(2)", &["0"]),
    c("return redis.setresp(4)", &["0"]),
    c("return redis.setresp()", &["0"]),
    c("return redis.setresp('x')", &["0"]),
    c("return redis.set_repl(redis.REPL_ALL)", &["0"]),
    c("return redis.set_repl(9)", &["0"]),
    c("return redis.set_repl()", &["0"]),
    c("return redis.set_repl(-1)", &["0"]),
    c("return redis.acl_check_cmd('get', 'a')", &["0"]),
    c("return redis.acl_check_cmd('nosuch')", &["0"]),
    c("redis.setresp(3) return redis.call('hgetall', 'hash')", &["0"]),
    c("redis.setresp(3) local r = redis.call('hgetall', 'hash') return r.map.f", &["0"]),
    c("redis.setresp(3) return type(redis.call('get', 'missing'))", &["0"]),
    c("redis.setresp(3) local r = redis.call('zscore', 'zset', 'b') return {type(r), tostring(r.double)}", &["0"]),
    c("redis.setresp(3) return redis.call('zscore', 'zset', 'b')", &["0"]),
    c("redis.setresp(3) local r = redis.call('smembers', 'set1') return r.set.only", &["0"]),
    c("redis.setresp(3) return redis.call('exists', 'str')", &["0"]),
    c("redis.setresp(3) return redis.call('ping')", &["0"]),
    // sandbox: exactly Redis's globals and library members
    c("local t = {} for k in pairs(_G) do t[#t + 1] = k end table.sort(t) return t", &["0"]),
    c("local t = {} for k, v in pairs(redis) do t[#t + 1] = k .. '=' .. type(v) end table.sort(t) return t", &["0"]),
    c("local t = {} for k in pairs(string) do t[#t + 1] = k end table.sort(t) return t", &["0"]),
    c("local t = {} for k in pairs(math) do t[#t + 1] = k end table.sort(t) return t", &["0"]),
    c("local t = {} for k in pairs(table) do t[#t + 1] = k end table.sort(t) return t", &["0"]),
    c("local t = {} for k in pairs(coroutine) do t[#t + 1] = k end table.sort(t) return t", &["0"]),
    c("local t = {} for _, lib in ipairs({'cjson', 'cmsgpack', 'struct', 'bit'}) do for k in pairs(_G[lib]) do t[#t + 1] = lib .. '.' .. k end end table.sort(t) return t", &["0"]),
    c("cjson.encode = nil", &["0"]),
    c("bit.band = nil", &["0"]),
    c("struct.pack = nil", &["0"]),
    c("cmsgpack.pack = nil", &["0"]),
    c("x = 1", &["0"]),
    c("return y", &["0"]),
    c("local a = undefined_thing", &["0"]),
    c("rawset(_G, 'x', 1)", &["0"]),
    c("setmetatable(_G, {})", &["0"]),
    c("getmetatable(_G).__index = nil", &["0"]),
    c("redis.call = 1", &["0"]),
    c("redis.new_thing = 1", &["0"]),
    c("rawset(redis, 'call', 1)", &["0"]),
    c("string.foo = 1", &["0"]),
    c("string.rep = nil", &["0"]),
    c("math.random = nil", &["0"]),
    c("table.insert(math, 1)", &["0"]),
    c("getmetatable('').__index = 1", &["0"]),
    c("getmetatable('').__index.upper = 1", &["0"]),
    c("_G.x = 1", &["0"]),
    c("_G._G.x = 1", &["0"]),
    c("return tostring(print)", &["0"]),
    c("return tostring(loadfile)", &["0"]),
    c("return tostring(dofile)", &["0"]),
    c("return tostring(os)", &["0"]),
    c("return tostring(io)", &["0"]),
    c("return tostring(debug)", &["0"]),
    c("return tostring(require)", &["0"]),
    c("return tostring(package)", &["0"]),
    c("return tostring(setfenv)", &["0"]),
    c("return tostring(getfenv)", &["0"]),
    c("return tostring(newproxy)", &["0"]),
    c("return tostring(module)", &["0"]),
    c("return type(loadstring)", &["0"]),
    c("return type(load)", &["0"]),
    c("return type(coroutine.create)", &["0"]),
    c("return type(string.dump)", &["0"]),
    c("return _VERSION", &["0"]),
    c("return loadstring(string.dump(function() return 1 end))", &["0"]),
    c("local f, e = loadstring('\\27Lua') return e", &["0"]),
    c("local f, e = loadstring(string.dump(function() return 1 end)) return tostring(f)", &["0"]),
    c("local f = loadstring('return 1 + 1') return f()", &["0"]),
    c("local f = loadstring('z = 1') return pcall(f)", &["0"]),
    c("local ok, e = pcall(loadstring('z = 1')) return e", &["0"]),
    c("local t = {} setmetatable(t, {__index = function() return 5 end}) return t.anything", &["0"]),
    c("return select('#', 1, 2, 3)", &["0"]),
    c("return unpack({1, 2, 3})", &["0"]),
    c("local ok, e = pcall(unpack, {}, 1, 1e8) return {tostring(ok), e}", &["0"]),
    c("local ok, e = pcall(string.rep, 'x', -1) return {tostring(ok), e}", &["0"]),
    c("return string.format('%5.2f|%d|%s|%q', 3.14159, 42, 'x', 'a\\nb')", &["0"]),
    c("return string.format('%d', 3.7)", &["0"]),
    c("return tostring(1e100)", &["0"]),
    c("return tostring(0.1)", &["0"]),
    c("return tostring(-0.0)", &["0"]),
    c("return tostring(1/0)", &["0"]),
    c("return tonumber('0x10')", &["0"]),
    c("return tonumber('  12  ')", &["0"]),
    c("return tonumber('1e2')", &["0"]),
    // Integer strings (read without strtod here): sign, zeros, the 15-digit edge, and what
    // is not a plain integer.
    c("local r = {} for _, s in ipairs({'0', '-0', '7', '007', '123456789012345', '1234567890123456', '-999999999999999', '9007199254740993', '1e3', '0x10', ' 5', '5 ', '-', '', '+5', '12a', '--1'}) do local n = tonumber(s) r[#r + 1] = s .. '=' .. tostring(n) .. (n == 0 and ('/' .. tostring(1 / n)) or '') end return r", &["0"]),
    c("return {tonumber('12') + 1, '41' + 1, tostring(-tonumber('-0'))}", &["0"]),
    c("return math.floor(-3.5)", &["0"]),
    c("return math.huge", &["0"]),
    c("return tostring(math.pi)", &["0"]),
    c("return math.fmod(7, 3)", &["0"]),
    c("return string.upper('abc') .. string.lower('DEF')", &["0"]),
    c("return {string.find('hello world', 'o w')}", &["0"]),
    c("return string.gsub('hello', 'l', 'L')", &["0"]),
    c("return table.concat({1, 2, 3}, ',')", &["0"]),
    c("local t = {3, 1, 2} table.sort(t) return t", &["0"]),
    c("local t = {} table.insert(t, 'a') table.insert(t, 1, 'b') return t", &["0"]),
    c("local t = {'a','b','c'} table.remove(t, 1) return t", &["0"]),
    c("return #KEYS + #ARGV", &["1", "a", "b"]),
    c("local co = coroutine.create(function(a) coroutine.yield(a + 1) return 'done' end) local _, v = coroutine.resume(co, 1) local _, w = coroutine.resume(co) return {v, w}", &["0"]),
    c("return pcall(function() error({err='inner'}) end)", &["0"]),
    c("local ok, e = xpcall(function() error('x') end, function(m) return 'handled: ' .. m end) return e", &["0"]),
    c("return gcinfo() > 0", &["0"]),
    c("return collectgarbage('count') > 0", &["0"]),
    c("local function r(n) if n == 0 then return 0 end return 1 + r(n - 1) end return r(1000)", &["0"]),
    // SELECT inside a script does not move the caller
    c("redis.call('select', 1) redis.call('set', 'in1', 'x') return redis.call('get', 'in1')", &["0"]),
    c("return redis.call('get', 'in1')", &["0"]),
    c("redis.call('select', 99)", &["0"]),
    // writes and reads
    c("redis.call('set', KEYS[1], ARGV[1]) return redis.call('get', KEYS[1])", &["1", "wk", "wv"]),
    c("return redis.call('del', 'wk', 'nope')", &["0"]),
    c("redis.call('rpush', 'l2', 1, 2, 3) return redis.call('lrange', 'l2', 0, -1)", &["0"]),
    c("return redis.call('expire', 'l2', 100)", &["0"]),
    c("return redis.call('ttl', 'l2')", &["0"]),
    c("return redis.call('lpop', 'nolist')", &["0"]),
    c("return redis.call('blmpop', 0.01, 1, 'nolist', 'left')", &["0"]),
    c("return redis.call('publish', 'ch', 'msg')", &["0"]),
    c("return redis.call('object', 'encoding', 'num')", &["0"]),
];

fn eval_args<'a>(case: &'a Case<'a>) -> Vec<&'a str> {
    let mut args = vec!["EVAL", case.body];
    args.extend_from_slice(case.rest);
    args
}

fn setup(d: &mut DiffPair) {
    let _ = d.check(&["FLUSHALL"]).expect("flushall");
    for cmd in SETUP {
        let _ = d.check(cmd).expect("setup");
    }
}

#[test]
fn eval_replies_match_redis_in_resp2_and_resp3() {
    let mut d = DiffPair::start();
    let mut diffs = Vec::new();
    for proto in [2u8, 3] {
        let _ = d.hello(proto).expect("hello");
        setup(&mut d);
        for case in CASES {
            if let Err(diff) = d.check(&eval_args(case)) {
                diffs.push(format!("RESP{proto}: {diff}"));
            }
        }
    }
    assert!(diffs.is_empty(), "{} differences:\n{}", diffs.len(), diffs.join("\n"));
    assert!(d.count >= 2 * CASES.len());
}

/// A table nested past Lua's C stack ends, 7,995 levels down, in `reached lua stack limit`
/// on both servers, byte for byte. Read raw: the reply is too deep for a recursive parser.
#[test]
fn deeply_nested_returns_are_cut_where_redis_cuts_them() {
    use std::io::{Read, Write};
    let d = DiffPair::start();
    let bodies = [
        "local t = {} t[1] = t return t",
        "local t = {} t[1] = t t[2] = 'x' return t",
        "local t = {} t[1] = {1, t} return t",
        "local t = {} local c = t for i = 1, 7993 do c[1] = {} c = c[1] end c[1] = 'leaf' return t",
        "local t = {} local c = t for i = 1, 7994 do c[1] = {} c = c[1] end c[1] = 'leaf' return t",
    ];
    let end = b"-ERR reached lua stack limit\r\n";
    for body in bodies {
        let mut replies = Vec::new();
        for port in [d.redis.port, d.ours.port] {
            let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
            s.set_read_timeout(Some(std::time::Duration::from_secs(10))).expect("timeout");
            s.write_all(&common::diff::encode_cmd(&["EVAL", body, "0"])).expect("send");
            s.write_all(b"PING\r\n").expect("send");
            let mut got = Vec::new();
            let mut buf = vec![0u8; 1 << 16];
            while !got.ends_with(b"+PONG\r\n") {
                let n = s.read(&mut buf).expect("read");
                assert!(n > 0, "closed after {} bytes", got.len());
                got.extend_from_slice(&buf[..n]);
            }
            replies.push(got);
        }
        assert!(replies[0].len() > 30_000, "{body}: redis sent {} bytes", replies[0].len());
        assert_eq!(replies[0].len(), replies[1].len(), "{body}");
        assert!(replies[0] == replies[1], "{body}: same length, different bytes");
        let cut = replies[0].windows(end.len()).any(|w| w == end);
        assert_eq!(cut, !body.contains("7993"), "{body}");
    }
}

#[test]
fn evalsha_script_subcommands_and_readonly_variants_match_redis() {
    let mut d = DiffPair::start();
    setup(&mut d);
    let sha_ret1 = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db";
    let script: &[&[&str]] = &[
        &["SCRIPT", "EXISTS", sha_ret1],
        &["EVALSHA", sha_ret1, "0"],
        &["EVALSHA_RO", sha_ret1, "0"],
        &["SCRIPT", "LOAD", "return 1"],
        &["SCRIPT", "EXISTS", sha_ret1, "ffffffffffffffffffffffffffffffffffffffff", "short"],
        &["EVALSHA", sha_ret1, "0"],
        &["EVALSHA", "E0E1F9FABFC9D4800C877A703B823AC0578FF8DB", "0"],
        &["EVALSHA", "fff", "0"],
        &["EVALSHA", sha_ret1, "-1"],
        &["EVALSHA", sha_ret1, "5"],
        &["EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "x"],
        &["SCRIPT", "LOAD", "return 1 +"],
        &["SCRIPT", "LOAD"],
        &["SCRIPT", "LOAD", "a", "b"],
        &["SCRIPT", "EXISTS"],
        &["SCRIPT", "FLUSH", "foo"],
        &["SCRIPT", "FLUSH", "sync", "async"],
        &["SCRIPT", "KILL"],
        &["SCRIPT", "KILL", "x"],
        &["SCRIPT", "NOSUCH"],
        &["SCRIPT"],
        &["SCRIPT", "HELP"],
        &["SCRIPT", "FLUSH", "ASYNC"],
        &["SCRIPT", "EXISTS", sha_ret1],
        &["EVALSHA", sha_ret1, "0"],
        &["SCRIPT", "LOAD", "return 1"],
        &["SCRIPT", "FLUSH"],
        &["SCRIPT", "EXISTS", sha_ret1],
        &["EVAL", "return redis.call('get', KEYS[1])", "1", "str"],
        &["EVAL_RO", "return redis.call('get', KEYS[1])", "1", "str"],
        &["EVAL_RO", "return redis.call('set', KEYS[1], 'x')", "1", "str"],
        &["EVAL_RO", "return redis.pcall('set', KEYS[1], 'x')", "1", "str"],
        &["EVAL_RO", "return redis.call('del', 'str')", "0"],
        &["EVAL_RO", "#!lua\nreturn 1", "0"],
        &["EVAL_RO", "#!lua flags=no-writes\nreturn redis.call('get', 'str')", "0"],
        &["EVAL", "#!lua flags=no-writes\nreturn redis.call('set', 'a', '1')", "0"],
        &["EVAL", "#!lua flags=no-writes,allow-oom\nreturn 1", "0"],
        &["EVAL", "#!lua flags=allow-stale,no-cluster,allow-cross-slot-keys\nreturn redis.call('set', 'a', '1')", "0"],
        &["EVAL", "#!lua flags=\nreturn 2", "0"],
        &["EVAL", "#!lua\nreturn 3", "0"],
        &["EVAL", "#!lua\nreturn redis.call('incr', 'str')", "0"],
        &["EVAL", "#!lua flags=bad\nreturn 1", "0"],
        &["EVAL", "#!perl\nreturn 1", "0"],
        &["EVAL", "#!lua name=x\nreturn 1", "0"],
        &["EVAL", "#!\nreturn 1", "0"],
        &["EVAL", "#!lua flags=no-writes\nerror('x')", "0"],
        &["EVAL", "#! lua\nreturn 1", "0"],
        &["EVAL_RO", "return 1", "-1"],
        &["EVALSHA_RO", "ffffffffffffffffffffffffffffffffffffffff", "0"],
        &["EVAL"],
        &["EVAL", "return 1"],
        &["EVALSHA", sha_ret1],
    ];
    for cmd in script {
        let _ = d.check(cmd).unwrap_or_else(|e| panic!("{e}"));
    }
    // EVAL inside MULTI is queued and runs at EXEC; a script error does not abort the rest.
    for cmd in [
        &["MULTI"][..],
        &["EVAL", "return redis.call('incr', 'num')", "0"],
        &["EVAL", "return redis.call('incr', 'str')", "0"],
        &["EVAL", "return 'third'", "0"],
        &["EXEC"],
    ] {
        let _ = d.check(cmd).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn info_reports_cached_scripts() {
    let mut d = DiffPair::start();
    let _ = d.check(&["SCRIPT", "FLUSH"]).expect("flush");
    for body in ["return 1", "return 2", "return 3"] {
        let _ = d.check(&["SCRIPT", "LOAD", body]).expect("load");
    }
    let info = d.ours_call(&["INFO", "memory"]);
    let text = String::from_utf8_lossy(info.as_ref().ok().and_then(|r| r.value.as_bytes()).unwrap_or_default()).into_owned();
    assert!(text.contains("number_of_cached_scripts:3\r\n"), "{text}");
    let lua = text.lines().find_map(|l| l.strip_prefix("used_memory_lua:")).and_then(|v| v.trim().parse::<u64>().ok());
    assert!(lua.is_some_and(|n| n > 10_000), "{text}");
    let scripts = text.lines().find_map(|l| l.strip_prefix("used_memory_scripts:")).and_then(|v| v.trim().parse::<u64>().ok());
    assert!(scripts.is_some_and(|n| n >= 24), "{text}");
    let _ = Cmp::Exact;
}

/// Shebang parsing, EVALSHA's early NOSCRIPT, read-only scripts and may-replicate commands,
/// the OOM check before the first write command, `math.random`'s error position,
/// `redis.set_repl`'s number conversion, and RESP3 conversions (verbatim formats, maps and
/// sets grown as Redis grows them, arrays with holes), in RESP2 and RESP3.
#[test]
fn shebangs_read_only_oom_and_resp3_conversions_match_redis() {
    let mut d = DiffPair::start();
    let common: &[&str] = &[
        "EVAL \"#!lua\" 0",
        "SCRIPT LOAD \"#!lua\"",
        "EVAL \"#!\" 0",
        "EVAL \"#!x\" 0",
        "EVAL \"#!lua flags=no-writes,\\nreturn 1\" 0",
        "EVAL \"#!lua flags=,no-writes\\nreturn 1\" 0",
        "EVAL \"#!lua flags=,\\nreturn 1\" 0",
        "EVAL \"#!lua flags=no-writes, allow-oom\\nreturn 1\" 0",
        "EVAL \"#!lua 'x\\nreturn 1\" 0",
        "EVAL \"#!lua flags=\\nreturn 1\" 0",
        "EVALSHA abc -1",
        "EVALSHA abc x",
        "EVALSHA \"\" 5",
        "EVALSHA_RO 0123456789012345678901234567890123456789a -1",
        "EVALSHA 0123456789012345678901234567890123456789 -1",
        "EVAL_RO \"return redis.call('publish','a','b')\" 0",
        "EVAL_RO \"return redis.pcall('pfcount','x')\" 0",
        "EVAL \"#!lua flags=no-writes\\nreturn redis.call('spublish','a','b')\" 0",
        "CONFIG SET maxmemory 1",
        "EVAL \"redis.call('del','zz') return redis.call('set','a','b')\" 0",
        "EVAL \"redis.call('expire','zz', 10) return redis.call('set','a','b')\" 0",
        "EVAL \"return redis.call('set','a','b')\" 0",
        "CONFIG SET maxmemory 0",
        "EVAL \"return math.random(0)\" 0",
        "EVAL \"return math.random(3, 1)\" 0",
        "EVAL \"return math.random(1, 2, 3)\" 0",
        "EVAL \"return math.random('x')\" 0",
        "EVAL \"return math.randomseed()\" 0",
        "EVAL \"local ok, e = pcall(math.random, 0) return e\" 0",
        "EVAL \"return redis.set_repl('x')\" 0",
        "EVAL \"return redis.set_repl({})\" 0",
        "EVAL \"return redis.set_repl(2.5)\" 0",
        "EVAL \"return redis.set_repl(9)\" 0",
        "EVAL \"return {verbatim_string={format='tx',string='x'}}\" 0",
        "EVAL \"return {verbatim_string={format='',string='x'}}\" 0",
        "EVAL \"return {verbatim_string={format='toolong',string='x'}}\" 0",
        "EVAL \"return {verbatim_string={format='a',string='x'}}\" 0",
        "DEL h a c",
        "HSET h e 1 eblk 2 npa 3 q 4 zz 5",
        "MSET a 1 c 3",
        "EVAL \"redis.setresp(3) return redis.call('hgetall', KEYS[1])\" 1 h",
        "EVAL \"redis.setresp(3) return cjson.encode(redis.call('hgetall', KEYS[1]))\" 1 h",
        "EVAL \"redis.setresp(3) local t = redis.call('mget', 'a', 'nokey', 'c') return #t\" 0",
        "EVAL \"redis.setresp(3) local t = redis.call('mget', 'nokey', 'a', 'nokey', 'nokey', 'c') return #t\" 0",
    ];
    d.assert_script("resp2", common);
    let _ = d.hello(3).expect("HELLO 3");
    d.assert_script("resp3", common);
}

/// `unpack` of up to 7,999 values into redis.call fits Lua's 8,000 C stack slots with the
/// reply, as in Redis (which checks one slot for a scalar reply, two for an array); past
/// that, unpack itself refuses.
#[test]
fn unpack_of_7999_arguments_into_redis_call_works_as_in_redis() {
    let mut d = DiffPair::start();
    let make = |n: usize, call: &str| format!("EVAL \"local t = {{}} for i = 1, {n} do t[i] = 'k' .. i end return {call}, unpack(t))\" 0");
    let cmds = [
        make(7999, "redis.call('del'"),
        make(7998, "redis.call('mget'"),
        make(7999, "redis.pcall('mget'"),
        make(8000, "redis.call('del'"),
        "PING".to_string(),
    ];
    let cmds: Vec<&str> = cmds.iter().map(String::as_str).collect();
    d.assert_script("unpack into redis.call", &cmds);
}

/// An OOM refusal of a command a script calls counts in INFO errorstats as Redis counts it.
#[test]
fn oom_inside_a_script_counts_in_errorstats_like_redis() {
    let mut d = DiffPair::start();
    d.assert_script(
        "oom in a script",
        &[
            "SET big xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "CONFIG SET maxmemory 1",
            "CONFIG RESETSTAT",
            "EVAL \"return redis.call('set', 'x', 'y')\" 0",
            "EVAL \"return redis.pcall('set', 'x', 'y')\" 0",
            "EVAL \"return redis.call('get', 'big')\" 0",
            "INFO errorstats",
            "CONFIG SET maxmemory 0",
        ],
    );
}

/// SCRIPT DEBUG's modes answer as Redis does; NO turns a YES off again (the next EVAL runs
/// normally). The sessions themselves are in tests/lua_debugger.rs.
#[test]
fn script_debug_no_and_bad_modes_match_redis() {
    let mut d = DiffPair::start();
    for args in [
        &["SCRIPT", "DEBUG", "NO"][..],
        &["SCRIPT", "DEBUG", "no"],
        &["SCRIPT", "DEBUG", "MAYBE"],
        &["SCRIPT", "DEBUG"],
        &["SCRIPT", "DEBUG", "YES"],
        &["SCRIPT", "DEBUG", "NO"],
        &["EVAL", "return 1", "0"],
    ] {
        if let Err(diff) = d.check(args) {
            panic!("{diff}");
        }
    }
}
