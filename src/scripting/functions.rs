//! Redis 7 Functions: libraries of Lua functions, loaded by FUNCTION LOAD, called by FCALL.
//!
//! As in Redis, libraries live in a Lua state of their own, built by the same sandbox as
//! EVAL's but separate from it (SCRIPT FLUSH does not touch them). A library's code runs once,
//! at load, in an environment that offers only `redis.register_function`, `redis.log` and
//! the version and log-level constants; every other name is "nonexistent". The functions it
//! registers are closures sharing that environment; once the load ends, its `__index` is
//! switched to the sandbox's globals (Redis switches its globals' `__index` the same way),
//! so at run time they see the whole sandbox and get `(keys, args)` as arguments.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use bytes::Bytes;
use mlua::{Function, Lua, Table, Value, Variadic};

use super::sandbox;
use super::shim::table_error_fn;
use super::ScriptFlags;

/// How long a library's code may run at load before it fails (Redis's LOAD_TIMEOUT_MS).
pub const LOAD_TIMEOUT_MS: u128 = 500;

/// Redis's flag names, in the order FUNCTION LIST shows them.
const FLAG_NAMES: [&str; 5] = ["no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys"];

/// One registered function.
pub struct FunctionDef {
    /// The name as registered (FCALL matches it case-insensitively).
    pub name: String,
    pub(super) func: Function,
    pub description: Option<String>,
    pub flags: ScriptFlags,
}

impl FunctionDef {
    /// The flag names FUNCTION LIST shows.
    pub fn flag_names(&self) -> Vec<&'static str> {
        let f = &self.flags;
        let set = [f.no_writes, f.allow_oom, f.allow_stale, f.no_cluster, f.allow_cross_slot_keys];
        FLAG_NAMES.iter().zip(set).filter(|(_, on)| *on).map(|(n, _)| *n).collect()
    }
}

/// A loaded library.
pub struct Library {
    pub name: String,
    /// The whole code, shebang included (FUNCTION LIST WITHCODE, DUMP, the log).
    pub code: Bytes,
    /// By name as registered: within a library names are case-sensitive (Redis registers
    /// `f` and `F` both; FCALL, case-insensitive, finds one of them).
    pub functions: BTreeMap<String, FunctionDef>,
}

/// What a library's load collects (Lua app data while its code runs).
pub(super) struct Loading {
    started: Instant,
    /// Whether the load may time out (not when replaying the log or the primary's stream).
    timeout: bool,
    timed_out: bool,
    functions: BTreeMap<String, FunctionDef>,
}

impl Loading {
    /// The count hook's check: true once the load must stop.
    pub(super) fn check_timeout(&mut self) -> bool {
        if self.timeout && self.started.elapsed().as_millis() > LOAD_TIMEOUT_MS {
            self.timed_out = true;
        }
        self.timed_out
    }
}

/// How FUNCTION RESTORE treats the libraries already there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestorePolicy {
    Flush,
    Append,
    Replace,
}

/// The libraries and their Lua state.
pub struct Functions {
    pub(super) lua: Lua,
    /// Runs a function with `(keys, args)` under the error handler.
    pub(super) runner: Function,
    /// Runs a library's code, turning its error into text.
    loader: Function,
    /// The libraries' environment and its metatable (whose `__index` is switched).
    env: Table,
    env_meta: Table,
    load_api: Table,
    globals: Table,
    libraries: BTreeMap<String, Library>,
    /// Lowercase function name → its library and its name as registered.
    index: HashMap<String, (String, String)>,
}

/// Runs a library's code; an error becomes its text (an error table's `err`, else `ERR ...`).
const LOADER: &str = r#"
local xpcall, type, tostring = xpcall, type, tostring
local function message(e)
  if type(e) == 'table' and type(e.err) == 'string' then return e.err end
  return 'ERR ' .. tostring(e)
end
return function(f) return xpcall(f, message) end
"#;

/// What the load environment answers for a name it does not have (Redis's
/// `luaProtectedTableError`).
const NONEXISTENT: &str = r#"
local error, tostring = error, tostring
return { __index = function(_, n)
  error("Script attempted to access nonexistent global variable '" .. tostring(n) .. "'", 2)
end }
"#;

impl Functions {
    pub fn new() -> mlua::Result<Functions> {
        let (lua, runner) = sandbox::new_state(sandbox::Kind::Functions)?;
        super::install_hook(&lua)?;
        let globals = lua.globals();
        let loader: Function = lua.load(LOADER).set_name("=[loader]").call(())?;
        // The load API: a `redis` table with the load-time functions, both tables strict.
        let full: Table = globals.raw_get("redis")?;
        let redis = lua.create_table()?;
        redis.raw_set("register_function", table_error_fn(&lua, register_function)?)?;
        for name in ["log", "LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE", "LOG_WARNING", "REDIS_VERSION", "REDIS_VERSION_NUM"] {
            redis.raw_set(name, full.raw_get::<Value>(name)?)?;
        }
        let strict = || lua.load(NONEXISTENT).set_name("=[load api]").call::<Table>(());
        redis.set_metatable(Some(strict()?))?;
        let load_api = lua.create_table()?;
        load_api.raw_set("redis", redis)?;
        load_api.set_metatable(Some(strict()?))?;
        sandbox::protect(&lua, &load_api)?;
        let env = lua.create_table()?;
        let env_meta = lua.create_table()?;
        env_meta.raw_set("__index", globals.clone())?;
        env.set_metatable(Some(env_meta.clone()))?;
        sandbox::protect(&lua, &env)?;
        Ok(Functions { lua, runner, loader, env, env_meta, load_api, globals, libraries: BTreeMap::new(), index: HashMap::new() })
    }

    /// FUNCTION LOAD: compiles and registers a library; returns its name. `timeout`: the
    /// code may run [`LOAD_TIMEOUT_MS`] at most. Errors are Redis's reply texts.
    pub fn load(&mut self, code: &[u8], replace: bool, timeout: bool) -> Result<String, String> {
        let (name, body_start) = metadata(code)?;
        if !replace && self.libraries.contains_key(&name) {
            return Err(format!("ERR Library '{name}' already exists"));
        }
        let lib = self.compile(name, code, body_start, timeout)?;
        if let Some(f) = lib.functions.keys().find(|f| self.owner(f).is_some_and(|owner| *owner != lib.name)) {
            return Err(format!("ERR Function {f} already exists"));
        }
        let name = lib.name.clone();
        self.delete(&name);
        self.link(lib);
        Ok(name)
    }

    /// FUNCTION RESTORE of the libraries `codes`, all or nothing.
    pub fn restore(&mut self, codes: &[Vec<u8>], policy: RestorePolicy) -> Result<(), String> {
        let mut new: BTreeMap<String, Library> = BTreeMap::new();
        let mut names: HashMap<String, String> = HashMap::new();
        for code in codes {
            let (name, body_start) = metadata(code)?;
            if new.contains_key(&name) {
                return Err(format!("ERR Library '{name}' already exists"));
            }
            let lib = self.compile(name, code, body_start, false)?;
            for f in lib.functions.keys() {
                if names.get(&f.to_lowercase()).is_some_and(|owner| *owner != lib.name) {
                    return Err(format!("ERR Function {f} already exists"));
                }
                names.insert(f.to_lowercase(), lib.name.clone());
            }
            new.insert(lib.name.clone(), lib);
        }
        if policy == RestorePolicy::Flush {
            self.flush();
        }
        let replaced: Vec<String> = new.keys().filter(|n| self.libraries.contains_key(*n)).cloned().collect();
        if policy == RestorePolicy::Append {
            if let Some(name) = replaced.first() {
                return Err(format!("ERR Library {name} already exists"));
            }
        }
        for lib in new.values() {
            for f in lib.functions.keys() {
                if self.owner(f).is_some_and(|owner| !replaced.contains(owner)) {
                    return Err(format!("ERR Function {f} already exists"));
                }
            }
        }
        for name in &replaced {
            self.delete(name);
        }
        for lib in new.into_values() {
            self.link(lib);
        }
        Ok(())
    }

    /// Runs a library's code in the load environment and collects what it registered.
    fn compile(&self, name: String, code: &[u8], body_start: usize, timeout: bool) -> Result<Library, String> {
        // The code after the shebang line, from its newline: line numbers stay the file's.
        let chunk = self
            .lua
            .load(&code[body_start..])
            .set_name("@user_function")
            .set_environment(self.env.clone())
            .into_function()
            .map_err(|e| format!("ERR Error compiling function: {}", super::compile_error_text(&e)))?;
        self.lua.set_app_data(Loading { started: Instant::now(), timeout, timed_out: false, functions: BTreeMap::new() });
        let switched = self.set_env_index(&self.load_api);
        let result = match switched {
            Ok(()) => self.loader.call::<(bool, Value)>(chunk),
            Err(e) => Err(e),
        };
        let restored = self.set_env_index(&self.globals);
        let loading = self.lua.remove_app_data::<Loading>();
        restored.map_err(|e| format!("ERR {e}"))?;
        let Some(loading) = loading else { return Err("ERR Error registering functions: ERR load state lost".into()) };
        if loading.timed_out {
            return Err("ERR Error registering functions: ERR FUNCTION LOAD timeout".into());
        }
        match result {
            Ok((true, _)) => {}
            Ok((false, Value::String(s))) => return Err(format!("ERR Error registering functions: {}", s.to_string_lossy())),
            Ok((false, _)) => return Err("ERR Error registering functions: ERR execution failure".into()),
            Err(e) => return Err(format!("ERR Error registering functions: ERR {}", super::first_line(&e.to_string()))),
        }
        if loading.functions.is_empty() {
            return Err("ERR No functions registered".into());
        }
        Ok(Library { name, code: Bytes::copy_from_slice(code), functions: loading.functions })
    }

    /// Points the libraries' environment at `target` (the load API or the globals).
    fn set_env_index(&self, target: &Table) -> mlua::Result<()> {
        // SAFETY: two tables are pushed; the metatable is unprotected, its `__index` set (which
        // pops the target), protected again and popped.
        unsafe {
            self.lua.exec_raw::<()>((self.env_meta.clone(), target.clone()), |state| {
                sandbox::set_readonly(state, -2, false);
                mlua::ffi::lua_setfield(state, -2, c"__index".as_ptr());
                sandbox::set_readonly(state, -1, true);
                mlua::ffi::lua_settop(state, -2);
            })
        }
    }

    /// The library that holds function `name` (case-insensitive).
    fn owner(&self, name: &str) -> Option<&String> {
        self.index.get(&name.to_lowercase()).map(|(lib, _)| lib)
    }

    fn link(&mut self, lib: Library) {
        for name in lib.functions.keys() {
            // Two names of one library that differ in case: the first is FCALL's.
            self.index.entry(name.to_lowercase()).or_insert_with(|| (lib.name.clone(), name.clone()));
        }
        self.libraries.insert(lib.name.clone(), lib);
    }

    /// FUNCTION DELETE; false if there is no such library.
    pub fn delete(&mut self, name: &str) -> bool {
        let Some(lib) = self.libraries.remove(name) else { return false };
        for name in lib.functions.keys() {
            self.index.remove(&name.to_lowercase());
        }
        true
    }

    /// FUNCTION FLUSH.
    pub fn flush(&mut self) {
        self.libraries.clear();
        self.index.clear();
        let _ = self.lua.gc_collect();
    }

    /// The function FCALL names (case-insensitive).
    pub fn get(&self, name: &[u8]) -> Option<&FunctionDef> {
        let (lib, name) = self.index.get(&String::from_utf8_lossy(name).to_lowercase())?;
        self.libraries.get(lib)?.functions.get(name)
    }

    /// The libraries, by name.
    pub fn libraries(&self) -> impl Iterator<Item = &Library> {
        self.libraries.values()
    }

    pub fn library_count(&self) -> usize {
        self.libraries.len()
    }

    /// INFO `number_of_functions`: the names FCALL finds.
    pub fn function_count(&self) -> usize {
        self.index.len()
    }

    /// FUNCTION STATS `functions_count`: what the libraries registered (Redis counts per
    /// library, so `f` and `F` of one library are two).
    pub fn registered_count(&self) -> usize {
        self.libraries.values().map(|l| l.functions.len()).sum()
    }

    /// INFO `used_memory_vm_functions`.
    pub fn lua_memory(&self) -> usize {
        self.lua.used_memory()
    }

    /// INFO `used_memory_functions`: the libraries' code and entries.
    pub fn memory(&self) -> usize {
        self.libraries.values().map(|l| l.code.len() + 96 + l.functions.len() * 128).sum()
    }
}

/// A library's name and where its code starts (the shebang line's newline), from its
/// `#!lua name=...` line (Redis's `functionExtractLibMetaData` and the checks after it).
pub fn metadata(code: &[u8]) -> Result<(String, usize), String> {
    if !code.starts_with(b"#!") {
        return Err("ERR Missing library metadata".into());
    }
    let invalid = || "ERR Invalid library metadata".to_string();
    let end = super::shebang_end(code).ok_or_else(invalid)?;
    let parts = crate::protocol::split_args(&code[..end]).ok_or_else(invalid)?;
    let engine = parts.first().ok_or_else(invalid)?;
    let mut name: Option<&[u8]> = None;
    for part in &parts[1..] {
        if part.len() >= 5 && part[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err("ERR Invalid metadata value, name argument was given multiple times".into());
            }
            name = Some(&part[5..]);
            continue;
        }
        return Err(format!("ERR Invalid metadata value given: {}", String::from_utf8_lossy(part)));
    }
    let name = name.ok_or("ERR Library name was not given")?;
    let engine = &engine[2..];
    if !engine.eq_ignore_ascii_case(b"lua") {
        return Err(format!("ERR Engine '{}' not found", String::from_utf8_lossy(engine)));
    }
    if !valid_name(name) {
        return Err(NAME_RULES.into());
    }
    Ok((String::from_utf8_lossy(name).into_owned(), end))
}

/// Redis 7.0 gives this text for bad function names too.
const NAME_RULES: &str = "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_')
}

/// `lua_isstring` + `lua_tostring`: strings, and numbers as Lua prints them.
fn lua_string(lua: &Lua, v: &Value) -> Option<String> {
    match v {
        Value::String(_) | Value::Integer(_) | Value::Number(_) => lua.coerce_string(v.clone()).ok().flatten().map(|s| s.to_string_lossy()),
        _ => None,
    }
}

/// `redis.register_function(name, callback)` or `redis.register_function{function_name=...,
/// callback=..., flags={...}, description=...}`.
fn register_function(lua: &Lua, args: Variadic<Value>) -> Result<(), String> {
    if lua.app_data_ref::<Loading>().is_none() {
        return Err("redis.register_function can only be called on FUNCTION LOAD command".into());
    }
    let (name, func, description, flags) =
        match args.as_slice() {
            [Value::Table(t)] => named_args(lua, t)?,
            [_] => return Err(
                "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments)."
                    .into(),
            ),
            [name, callback] => {
                let name = lua_string(lua, name).ok_or("first argument to redis.register_function must be a string")?;
                let Value::Function(func) = callback else {
                    return Err("second argument to redis.register_function must be a function".into());
                };
                (name, func.clone(), None, ScriptFlags::default())
            }
            _ => return Err("wrong number of arguments to redis.register_function".into()),
        };
    if !valid_name(name.as_bytes()) {
        return Err(NAME_RULES.trim_start_matches("ERR ").into());
    }
    let mut loading = lua.app_data_mut::<Loading>().ok_or("redis.register_function can only be called on FUNCTION LOAD command")?;
    if loading.functions.contains_key(&name) {
        return Err("Function already exists in the library".into());
    }
    loading.functions.insert(name.clone(), FunctionDef { name, func, description, flags });
    Ok(())
}

type Registration = (String, Function, Option<String>, ScriptFlags);

fn named_args(lua: &Lua, t: &Table) -> Result<Registration, String> {
    let (mut name, mut func, mut description, mut flags) = (None, None, None, ScriptFlags::default());
    for pair in t.pairs::<Value, Value>() {
        let (k, v) = pair.map_err(|e| e.to_string())?;
        // `lua_isstring` then `strcasecmp`: a number is a string here (and names nothing),
        // and the name ends at a zero byte.
        let k = lua_string(lua, &k).ok_or("named argument key given to redis.register_function is not a string")?;
        let k = c_string(&k).to_ascii_lowercase();
        match k.as_str() {
            "function_name" => {
                name = Some(lua_string(lua, &v).ok_or("function_name argument given to redis.register_function must be a string")?)
            }
            "description" => {
                description = Some(lua_string(lua, &v).ok_or("description argument given to redis.register_function must be a string")?)
            }
            "callback" => match v {
                Value::Function(f) => func = Some(f),
                _ => return Err("callback argument given to redis.register_function must be a function".into()),
            },
            "flags" => {
                let Value::Table(list) = v else {
                    return Err("flags argument to redis.register_function must be a table representing function flags".into());
                };
                flags = read_flags(lua, &list).ok_or("unknown flag given")?;
            }
            _ => return Err("unknown argument given to redis.register_function".into()),
        }
    }
    let name = name.ok_or("redis.register_function must get a function name argument")?;
    let func = func.ok_or("redis.register_function must get a callback argument")?;
    Ok((name, func, description, flags))
}

/// The text a C string holds: up to its first zero byte.
fn c_string(s: &str) -> &str {
    s.split('\0').next().unwrap_or_default()
}

/// Redis's `luaRegisterFunctionReadFlags`: the entries 1, 2, ... up to the first nil (other
/// keys are not looked at), each a string or number naming a flag.
fn read_flags(lua: &Lua, list: &Table) -> Option<ScriptFlags> {
    let mut flags = ScriptFlags::default();
    for j in 1.. {
        let v: Value = list.get(j).ok()?;
        if v.is_nil() {
            break;
        }
        let text = c_string(&lua_string(lua, &v)?).to_ascii_lowercase();
        match text.as_str() {
            "no-writes" => flags.no_writes = true,
            "allow-oom" => flags.allow_oom = true,
            "allow-stale" => flags.allow_stale = true,
            "no-cluster" => flags.no_cluster = true,
            "allow-cross-slot-keys" => flags.allow_cross_slot_keys = true,
            _ => return None,
        }
    }
    Some(flags)
}

/// FUNCTION STATS's reply; `running`: the running function's name, command and run time.
pub fn stats_reply(running: Option<(String, Vec<bytes::Bytes>, u64)>, libraries: usize, functions: usize) -> crate::protocol::Reply {
    use crate::protocol::Reply;
    let running = running.map_or(Reply::Nil, |(name, argv, ms)| {
        Reply::Map(vec![
            (Reply::bulk_string("name"), Reply::bulk_string(name)),
            (Reply::bulk_string("command"), Reply::Array(argv.into_iter().map(Reply::Bulk).collect())),
            (Reply::bulk_string("duration_ms"), Reply::Int(ms as i64)),
        ])
    });
    let lua = Reply::Map(vec![
        (Reply::bulk_string("libraries_count"), Reply::Int(libraries as i64)),
        (Reply::bulk_string("functions_count"), Reply::Int(functions as i64)),
    ]);
    Reply::Map(vec![
        (Reply::bulk_string("running_script"), running),
        (Reply::bulk_string("engines"), Reply::Map(vec![(Reply::bulk_string("LUA"), lua)])),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_errors_are_redis_texts() {
        assert_eq!(metadata(b"return 1").unwrap_err(), "ERR Missing library metadata");
        assert_eq!(metadata(b"#!lua name=x").unwrap_err(), "ERR Invalid library metadata");
        assert_eq!(metadata(b"#!lua\n").unwrap_err(), "ERR Library name was not given");
        assert_eq!(metadata(b"#!lua name=a b=c\n").unwrap_err(), "ERR Invalid metadata value given: b=c");
        assert_eq!(metadata(b"#!js name=x\n").unwrap_err(), "ERR Engine 'js' not found");
        assert_eq!(metadata(b"#!lua name=a-b\n").unwrap_err(), NAME_RULES);
        assert_eq!(metadata(b"#!LUA NAME=ab\nx").unwrap(), ("ab".to_string(), 13));
        assert_eq!(metadata(b"#!lua name=l\0x\nx").unwrap_err(), "ERR Invalid library metadata");
    }

    #[test]
    fn load_registers_and_rejects_like_redis() {
        let mut f = Functions::new().unwrap();
        let code = b"#!lua name=lib\nredis.register_function('Fa', function(k, a) return 1 end)\nredis.register_function{function_name='g', callback=function() end, flags={'NO-WRITES'}, description='d'}";
        assert_eq!(f.load(code, false, true).unwrap(), "lib");
        assert_eq!(f.get(b"FA").unwrap().name, "Fa");
        assert_eq!(f.get(b"g").unwrap().flag_names(), vec!["no-writes"]);
        assert_eq!(f.load(code, false, true).unwrap_err(), "ERR Library 'lib' already exists");
        assert_eq!(
            f.load(b"#!lua name=other\nredis.register_function('fa', function() end)", false, true).unwrap_err(),
            "ERR Function fa already exists"
        );
        assert_eq!(
            f.load(b"#!lua name=x\nlocal s = string.format('a')", false, true).unwrap_err(),
            "ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'string'"
        );
        assert_eq!(
            f.load(b"#!lua name=x\nx = 1", false, true).unwrap_err(),
            "ERR Error registering functions: ERR user_function:2: Attempt to modify a readonly table"
        );
        assert_eq!(
            f.load(b"#!lua name=x\nredis.register_function('a')", false, true).unwrap_err(),
            "ERR Error registering functions: ERR calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments)."
        );
        assert_eq!(f.load(b"#!lua name=x\nlocal a = 1", false, true).unwrap_err(), "ERR No functions registered");
        assert_eq!(
            f.load(b"#!lua name=x\nwhile true do end", false, true).unwrap_err(),
            "ERR Error registering functions: ERR FUNCTION LOAD timeout"
        );
        assert!(f.load(b"#!lua name=lib\nredis.register_function('b', function() end)", true, true).is_ok());
        assert!(f.get(b"fa").is_none() && f.get(b"b").is_some());
        assert!(f.delete("lib") && !f.delete("lib"));
        assert_eq!(f.function_count(), 0);
    }
}
