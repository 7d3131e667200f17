//! Generic key commands: DEL, UNLINK, EXISTS, TYPE, TOUCH, the EXPIRE and TTL families,
//! PERSIST, KEYS, SCAN, RANDOMKEY, RENAME, RENAMENX, MOVE, COPY, DBSIZE, FLUSHDB, FLUSHALL,
//! SWAPDB and OBJECT, with Redis 7.0's replies and error texts.
//!
//! Option words are compared the way Redis's `strcasecmp` sees them: up to the first NUL.

use bytes::Bytes;

use super::effects::arg;
use super::{arg_i64, help, help_reply, sanitize, CmdError, Ctx};
use crate::config::P;
use crate::db::Entry;
use crate::notify;
use crate::protocol::Reply;
use crate::util::{cstr, opt_is as is_opt, parse_scan_cursor as parse_cursor};

/// Redis's `getIntFromObject`: a `string2ll` integer within the range of a C int.
fn parse_i32(arg: &[u8]) -> Option<i32> {
    crate::util::parse_i64(arg).and_then(|n| i32::try_from(n).ok())
}

/// A database index argument (SELECT, MOVE, COPY DB): an int (Redis's
/// `getIntFromObjectOrReply` errors), then within `databases`.
pub(super) fn db_index(ctx: &Ctx<'_>, arg: &[u8]) -> Result<usize, CmdError> {
    let n = arg_i64(arg)?;
    let n = i32::try_from(n).map_err(|_| CmdError::other("ERR value is out of range, value must between -2147483648 and 2147483647"))?;
    if n < 0 || n as usize >= ctx.ks.dbs.len() {
        return Err(CmdError::DbIndexOutOfRange);
    }
    Ok(n as usize)
}

fn int(b: bool) -> Reply {
    Reply::Int(b as i64)
}

/// ```text
/// DEL key [key ...]
/// ```
pub fn del(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut deleted = 0;
    for key in &args[1..] {
        ctx.ks.expire_if_needed(db, key, now);
        if ctx.remove(key).is_some() {
            deleted += 1;
            ctx.notify(notify::GENERIC, "del", key);
        }
    }
    ctx.dirty(deleted);
    Ok(Reply::Int(deleted as i64))
}

/// ```text
/// UNLINK key [key ...]
/// ```
pub fn unlink(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    del(ctx, args)
}

/// ```text
/// EXISTS key [key ...]
/// ```
pub fn exists(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let n = args[1..].iter().filter(|key| ctx.ks.get_no_touch(db, key, now).is_some()).count();
    Ok(Reply::Int(n as i64))
}

/// ```text
/// TYPE key
/// ```
pub fn type_(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    Ok(Reply::status(ctx.ks.get_no_touch(db, &args[1], now).map_or("none", |e| e.value.type_name())))
}

/// ```text
/// TOUCH key [key ...]
/// ```
pub fn touch(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let n = args[1..].iter().filter(|key| ctx.ks.get(db, key, now).is_some()).count();
    Ok(Reply::Int(n as i64))
}

const EXPIRE_NX: u8 = 1;
const EXPIRE_XX: u8 = 2;
const EXPIRE_GT: u8 = 4;
const EXPIRE_LT: u8 = 8;

/// The NX/XX/GT/LT flags after the time argument (Redis's
/// `parseExtendedExpireArgumentsOrReply`).
fn expire_flags(args: &[Bytes]) -> Result<u8, CmdError> {
    let mut flags = 0;
    for arg in args {
        flags |= if is_opt(arg, "nx") {
            EXPIRE_NX
        } else if is_opt(arg, "xx") {
            EXPIRE_XX
        } else if is_opt(arg, "gt") {
            EXPIRE_GT
        } else if is_opt(arg, "lt") {
            EXPIRE_LT
        } else {
            let opt = String::from_utf8_lossy(cstr(arg));
            return Err(CmdError::Other(sanitize(format!("ERR Unsupported option {opt}")).into()));
        };
    }
    if flags & EXPIRE_NX != 0 && flags & (EXPIRE_XX | EXPIRE_GT | EXPIRE_LT) != 0 {
        return Err(CmdError::other("ERR NX and XX, GT or LT options at the same time are not compatible"));
    }
    if flags & EXPIRE_GT != 0 && flags & EXPIRE_LT != 0 {
        return Err(CmdError::other("ERR GT and LT options at the same time are not compatible"));
    }
    Ok(flags)
}

/// EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT (Redis's `expireGenericCommand`): the time is
/// relative to `basetime` (0 for the absolute forms), in seconds if `seconds`.
fn expire_generic(ctx: &mut Ctx<'_>, args: &[Bytes], basetime: i64, seconds: bool, name: &str) -> Result<Reply, CmdError> {
    let flags = expire_flags(&args[3..])?;
    let mut when = arg_i64(&args[2])?;
    if seconds {
        when = when.checked_mul(1000).ok_or_else(|| CmdError::InvalidExpire(name.into()))?;
    }
    when = when.checked_add(basetime).ok_or_else(|| CmdError::InvalidExpire(name.into()))?;
    let (db, now) = (ctx.db(), ctx.now_ms);
    let key = &args[1];
    let Some(current) = ctx.ks.write_expiry(db, key, now) else {
        return Ok(Reply::Int(0));
    };
    if flags & EXPIRE_NX != 0 && current.is_some() {
        return Ok(Reply::Int(0));
    }
    if flags & EXPIRE_XX != 0 && current.is_none() {
        return Ok(Reply::Int(0));
    }
    // No expiry counts as an infinite TTL: never less than, never greater than.
    if flags & EXPIRE_GT != 0 && current.is_none_or(|cur| when <= cur) {
        return Ok(Reply::Int(0));
    }
    if flags & EXPIRE_LT != 0 && current.is_some_and(|cur| when >= cur) {
        return Ok(Reply::Int(0));
    }
    // Logged with the absolute time: a replay at any later moment sets the same expiry.
    if when <= now && !ctx.ks.passive_expiry {
        ctx.remove(key);
        ctx.log_as_one(vec![arg("DEL"), key.clone()]);
        ctx.notify(notify::GENERIC, "del", key);
    } else {
        ctx.set_expiry(key, Some(when));
        ctx.log_as_one(vec![arg("PEXPIREAT"), key.clone(), arg(&when.to_string())]);
        ctx.notify(notify::GENERIC, "expire", key);
    }
    ctx.dirty(1);
    Ok(Reply::Int(1))
}

/// ```text
/// EXPIRE key seconds [NX | XX | GT | LT]
/// ```
pub fn expire(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let now = ctx.now_ms;
    expire_generic(ctx, args, now, true, "expire")
}

/// ```text
/// PEXPIRE key milliseconds [NX | XX | GT | LT]
/// ```
pub fn pexpire(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let now = ctx.now_ms;
    expire_generic(ctx, args, now, false, "pexpire")
}

/// ```text
/// EXPIREAT key unix-time-seconds [NX | XX | GT | LT]
/// ```
pub fn expireat(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    expire_generic(ctx, args, 0, true, "expireat")
}

/// ```text
/// PEXPIREAT key unix-time-milliseconds [NX | XX | GT | LT]
/// ```
pub fn pexpireat(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    expire_generic(ctx, args, 0, false, "pexpireat")
}

/// TTL, PTTL, EXPIRETIME and PEXPIRETIME (Redis's `ttlGenericCommand`): -2 for a missing
/// key, -1 without expiry, else the remaining (or absolute) time, seconds rounded.
fn ttl_generic(ctx: &mut Ctx<'_>, args: &[Bytes], ms: bool, absolute: bool) -> Result<Reply, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let Some(expire_at) = ctx.ks.read_expiry(db, &args[1], now) else {
        return Ok(Reply::Int(-2));
    };
    let Some(at) = expire_at else {
        return Ok(Reply::Int(-1));
    };
    let ttl = (if absolute { at } else { at.saturating_sub(now) }).max(0);
    // Redis computes (ttl+500)/1000 in a way that does not overflow near LLONG_MAX.
    Ok(Reply::Int(if ms { ttl } else { ((ttl as i128 + 500) / 1000) as i64 }))
}

/// ```text
/// TTL key
/// ```
pub fn ttl(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    ttl_generic(ctx, args, false, false)
}

/// ```text
/// PTTL key
/// ```
pub fn pttl(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    ttl_generic(ctx, args, true, false)
}

/// ```text
/// EXPIRETIME key
/// ```
pub fn expiretime(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    ttl_generic(ctx, args, false, true)
}

/// ```text
/// PEXPIRETIME key
/// ```
pub fn pexpiretime(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    ttl_generic(ctx, args, true, true)
}

/// ```text
/// PERSIST key
/// ```
pub fn persist(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let had = ctx.ks.get_mut(db, &args[1], now).is_some_and(|e| e.has_expire());
    if had {
        ctx.set_expiry(&args[1], None);
        ctx.dirty(1);
        ctx.notify(notify::GENERIC, "persist", &args[1]);
    }
    Ok(int(had))
}

/// ```text
/// KEYS pattern
/// ```
pub fn keys(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let pattern = &args[1][..];
    let all = pattern == b"*";
    let d = ctx.ks.db(db);
    let out = d
        .iter()
        .filter(|(k, e)| (all || crate::glob::glob_match(pattern, k, false)) && d.expire_of(k, e).is_none_or(|at| at > now))
        .map(|(k, _)| Reply::Bulk(k.to_bytes()))
        .collect();
    Ok(Reply::Array(out))
}

/// ```text
/// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
/// ```
pub fn scan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let mut cursor = parse_cursor(&args[1]).ok_or_else(|| CmdError::other("ERR invalid cursor"))?;
    let mut count: i64 = 10;
    let mut pattern: Option<&[u8]> = None;
    let mut type_name: Option<&[u8]> = None;
    let mut i = 2;
    while i < args.len() {
        let more = args.len() - i;
        if is_opt(&args[i], "count") && more >= 2 {
            count = arg_i64(&args[i + 1])?;
            if count < 1 {
                return Err(CmdError::Syntax);
            }
        } else if is_opt(&args[i], "match") && more >= 2 {
            pattern = (&args[i + 1][..] != b"*").then_some(&args[i + 1][..]);
        } else if is_opt(&args[i], "type") && more >= 2 {
            type_name = Some(cstr(&args[i + 1]));
        } else {
            return Err(CmdError::Syntax);
        }
        i += 2;
    }

    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut found: Vec<Bytes> = Vec::new();
    if ctx.ks.db(db).is_empty() {
        cursor = 0;
    } else {
        // Like Redis: at most COUNT*10 more buckets after the first, until COUNT keys.
        let mut budget = count.saturating_mul(10);
        let table = ctx.ks.db(db);
        loop {
            cursor = table.scan_step(cursor, |k, _| found.push(k.to_bytes()));
            if cursor == 0 || budget == 0 || found.len() as i64 >= count {
                break;
            }
            budget -= 1;
        }
    }

    let mut out = Vec::with_capacity(found.len());
    for key in found {
        if pattern.is_some_and(|p| !crate::glob::glob_match(p, &key, false)) {
            continue;
        }
        if let Some(t) = type_name {
            // Redis looks the key up (deleting it if expired) and compares its type name,
            // "none" for a key that is gone.
            let name = ctx.ks.get_no_touch(db, &key, now).map_or("none", |e| e.value.type_name());
            if !t.eq_ignore_ascii_case(name.as_bytes()) {
                continue;
            }
        }
        let expired = ctx.ks.db(db).expire_at(&key).is_some_and(|at| at <= now);
        if expired && ctx.ks.expire_if_needed(db, &key, now) {
            continue;
        }
        out.push(Reply::Bulk(key));
    }
    Ok(Reply::Array(vec![Reply::bulk_string((cursor as i64).to_string()), Reply::Array(out)]))
}

/// ```text
/// RANDOMKEY
/// ```
pub fn randomkey(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let server = &mut *ctx.server;
    Ok(ctx.ks.random_key(db, now, &mut || server.random()).map_or(Reply::Nil, Reply::Bulk))
}

/// RENAME and RENAMENX (Redis's `renameGenericCommand`): the value moves with its expiry.
fn rename_generic(ctx: &mut Ctx<'_>, args: &[Bytes], nx: bool) -> Result<Reply, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let (src, dst) = (&args[1], &args[2]);
    if ctx.ks.get_mut(db, src, now).is_none() {
        return Err(CmdError::NoSuchKey);
    }
    if src == dst {
        return Ok(if nx { Reply::Int(0) } else { Reply::OK });
    }
    let dst_exists = ctx.ks.get_mut(db, dst, now).is_some();
    if dst_exists && nx {
        return Ok(Reply::Int(0));
    }
    if let Some((entry, expire_at)) = ctx.remove(src) {
        ctx.remove(dst);
        ctx.add_entry_in(db, dst, entry, expire_at);
    }
    ctx.dirty(1);
    // Redis's dbAdd of the destination, then the pair of rename events.
    ctx.notify(notify::NEW, "new", dst);
    ctx.notify(notify::GENERIC, "rename_from", src);
    ctx.notify(notify::GENERIC, "rename_to", dst);
    Ok(if nx { Reply::Int(1) } else { Reply::OK })
}

/// ```text
/// RENAME key newkey
/// ```
pub fn rename(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    rename_generic(ctx, args, false)
}

/// ```text
/// RENAMENX key newkey
/// ```
pub fn renamenx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    rename_generic(ctx, args, true)
}

/// ```text
/// MOVE key db
/// ```
pub fn move_(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if ctx.server.cluster.is_some() {
        return Err(CmdError::other("ERR MOVE is not allowed in cluster mode"));
    }
    let (src, now) = (ctx.db(), ctx.now_ms);
    let dst = db_index(ctx, &args[2])?;
    if src == dst {
        return Err(CmdError::other("ERR source and destination objects are the same"));
    }
    let key = &args[1];
    if ctx.ks.get_mut(src, key, now).is_none() || ctx.ks.get_mut(dst, key, now).is_some() {
        return Ok(Reply::Int(0));
    }
    if let Some((entry, expire_at)) = ctx.remove_in(src, key) {
        ctx.add_entry_in(dst, key, entry, expire_at);
    }
    ctx.dirty(1);
    ctx.notify_db(notify::NEW, "new", key, dst);
    ctx.notify_db(notify::GENERIC, "move_from", key, src);
    ctx.notify_db(notify::GENERIC, "move_to", key, dst);
    Ok(Reply::Int(1))
}

/// ```text
/// COPY source destination [DB destination-db] [REPLACE]
/// ```
pub fn copy(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (src_db, now) = (ctx.db(), ctx.now_ms);
    let mut dst_db = src_db;
    let mut replace = false;
    let mut j = 3;
    while j < args.len() {
        if is_opt(&args[j], "replace") {
            replace = true;
        } else if is_opt(&args[j], "db") && j + 1 < args.len() {
            dst_db = db_index(ctx, &args[j + 1])?;
            j += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    if ctx.server.cluster.is_some() && (src_db != 0 || dst_db != 0) {
        return Err(CmdError::other("ERR Copying to another database is not allowed in cluster mode"));
    }
    let (src, dst) = (&args[1], &args[2]);
    if src_db == dst_db && src == dst {
        return Err(CmdError::other("ERR source and destination objects are the same"));
    }
    let Some((value, expire_at)) = ctx.ks.get_with_expiry(src_db, src, now).map(|(e, at)| (e.value.clone(), at)) else {
        return Ok(Reply::Int(0));
    };
    if ctx.ks.get_mut(dst_db, dst, now).is_some() {
        if !replace {
            return Ok(Reply::Int(0));
        }
        ctx.remove_in(dst_db, dst);
    }
    // The copy is a new object: fresh access data.
    ctx.add_entry_in(dst_db, dst, Entry::new(value, now), expire_at);
    ctx.dirty(1);
    ctx.notify_db(notify::NEW, "new", dst, dst_db);
    ctx.notify_db(notify::GENERIC, "copy_to", dst, dst_db);
    Ok(Reply::Int(1))
}

/// ```text
/// DBSIZE
/// ```
pub fn dbsize(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(Reply::Int(ctx.ks.db(ctx.db()).len() as i64))
}

/// The optional ASYNC|SYNC of FLUSHDB and FLUSHALL (freeing is synchronous either way).
fn flush_mode(args: &[Bytes]) -> Result<(), CmdError> {
    match args.len() {
        1 => Ok(()),
        2 if is_opt(&args[1], "sync") || is_opt(&args[1], "async") => Ok(()),
        _ => Err(CmdError::Syntax),
    }
}

/// ```text
/// FLUSHDB [ASYNC | SYNC]
/// ```
pub fn flushdb(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    flush_mode(args)?;
    let db = ctx.db();
    let n = ctx.empty_db(db);
    ctx.dirty(n as u64);
    Ok(Reply::OK)
}

/// ```text
/// FLUSHALL [ASYNC | SYNC]
/// ```
pub fn flushall(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    flush_mode(args)?;
    let n = ctx.empty_all();
    ctx.dirty(n as u64 + 1);
    Ok(Reply::OK)
}

/// ```text
/// SWAPDB index1 index2
/// ```
pub fn swapdb(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if ctx.server.cluster.is_some() {
        return Err(CmdError::other("ERR SWAPDB is not allowed in cluster mode"));
    }
    let a = parse_i32(&args[1]).ok_or_else(|| CmdError::other("ERR invalid first DB index"))?;
    let b = parse_i32(&args[2]).ok_or_else(|| CmdError::other("ERR invalid second DB index"))?;
    let (a, b) = (a as usize, b as usize);
    let dbs = ctx.ks.dbs.len();
    if a >= dbs || b >= dbs {
        return Err(CmdError::DbIndexOutOfRange);
    }
    // Swapping a database with itself changes nothing (Redis returns early).
    ctx.swap_dbs(a, b);
    ctx.dirty(1);
    Ok(Reply::OK)
}

/// OBJECT's lookup: expires, counts a hit or miss, does not touch, and fires no `keymiss`
/// event (Redis's LOOKUP_NONOTIFY; the flag is set again after every command).
fn object_lookup<'a>(ctx: &'a mut Ctx<'_>, key: &[u8]) -> Option<&'a Entry> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    ctx.ks.track_misses = false;
    ctx.ks.get_no_touch(db, key, now)
}

fn lfu_policy(ctx: &Ctx<'_>) -> bool {
    ctx.server.settings.lfu_policy
}

/// ```text
/// OBJECT ENCODING key
/// ```
pub fn object_encoding(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(object_lookup(ctx, &args[2]).map_or(Reply::Nil, |e| Reply::bulk(e.value.encoding().as_bytes())))
}

/// ```text
/// OBJECT REFCOUNT key
/// ```
///
/// Small integers (0..9999) are shared objects in Redis, reported with refcount INT_MAX,
/// unless a maxmemory limit with an LRU/LFU policy disables sharing.
pub fn object_refcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let policy = ctx.server.config.get(P::MaxmemoryPolicy);
    let maxmemory = crate::config::parse_memory(ctx.server.config.get(P::Maxmemory)).unwrap_or(0);
    let sharing = maxmemory == 0 || !(policy.contains("lru") || policy.contains("lfu"));
    let Some(entry) = object_lookup(ctx, &args[2]) else {
        return Ok(Reply::Nil);
    };
    let shared = match &entry.value {
        crate::db::Value::Str(s) => {
            sharing && entry.value.encoding() == "int" && crate::util::parse_i64(s.bytes()).is_some_and(|n| (0..10000).contains(&n))
        }
        _ => false,
    };
    Ok(Reply::Int(if shared { i32::MAX as i64 } else { 1 }))
}

/// ```text
/// OBJECT IDLETIME key
/// ```
pub fn object_idletime(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let lfu = lfu_policy(ctx);
    let now = ctx.now_ms;
    let Some(entry) = object_lookup(ctx, &args[2]) else {
        return Ok(Reply::Nil);
    };
    if lfu {
        return Err(CmdError::other("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."));
    }
    Ok(Reply::Int((entry.idle_ms(now) / 1000) as i64))
}

/// ```text
/// OBJECT FREQ key
/// ```
pub fn object_freq(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let lfu = lfu_policy(ctx);
    let decay = ctx.server.config.get_int(P::LfuDecayTime).max(0) as u64;
    let now = ctx.now_ms;
    let Some(entry) = object_lookup(ctx, &args[2]) else {
        return Ok(Reply::Nil);
    };
    if !lfu {
        return Err(CmdError::other("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."));
    }
    Ok(Reply::Int(entry.lfu_counter(now, decay) as i64))
}

/// ```text
/// OBJECT HELP
/// ```
pub fn object_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(help_reply(help::OBJECT))
}

/// Raises `new` if `key` is absent (expiring it first if its time has come): called by a
/// command about to create it, as Redis's `dbAdd` notifies.
pub(super) fn notify_if_new(ctx: &mut Ctx<'_>, key: &[u8]) {
    // Without a listener for `new`, no lookup: the command's own lookup expires the key just
    // the same, and this one was a second hash of the key on every HSET, SADD and LPUSH.
    if !ctx.wants_notification(notify::NEW) {
        return;
    }
    let (db, now) = (ctx.db(), ctx.now_ms);
    let absent = !ctx.ks.exists(db, key, now);
    notify_new(ctx, key, absent);
}

/// Raises `new` (class `n`) if `absent`: call it right before the command creates the key.
pub(super) fn notify_new(ctx: &mut Ctx<'_>, key: &[u8], absent: bool) {
    if absent {
        ctx.notify(notify::NEW, "new", key);
    }
}

/// Raises `del` if `key` is gone: a collection command emptied it and it was deleted.
pub(super) fn notify_del_if_gone(ctx: &mut Ctx<'_>, key: &[u8]) {
    let db = ctx.db();
    if ctx.ks.db(db).peek(key).is_none() {
        ctx.notify(notify::GENERIC, "del", key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_parsing_like_strtoul() {
        assert_eq!(parse_cursor(b""), Some(0));
        assert_eq!(parse_cursor(b"0"), Some(0));
        assert_eq!(parse_cursor(b"+7"), Some(7));
        assert_eq!(parse_cursor(b"-1"), Some(u64::MAX));
        assert_eq!(parse_cursor(b"5\0junk"), Some(5));
        assert_eq!(parse_cursor(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_cursor(b"18446744073709551616"), None);
        assert_eq!(parse_cursor(b" 1"), None);
        assert_eq!(parse_cursor(b"+"), None);
        assert_eq!(parse_cursor(b"0x1"), None);
        assert_eq!(parse_cursor(b"1 "), None);
    }

    #[test]
    fn expire_flag_rules() {
        let b = |s: &[&str]| s.iter().map(|a| Bytes::copy_from_slice(a.as_bytes())).collect::<Vec<_>>();
        assert_eq!(expire_flags(&b(&["nx"])), Ok(EXPIRE_NX));
        assert_eq!(expire_flags(&b(&["GT", "xx"])), Ok(EXPIRE_GT | EXPIRE_XX));
        assert_eq!(expire_flags(&b(&["nx\0zz"])), Ok(EXPIRE_NX));
        assert!(expire_flags(&b(&["nx", "gt"])).is_err());
        assert!(expire_flags(&b(&["lt", "gt"])).is_err());
        assert_eq!(expire_flags(&b(&["foo"])), Err(CmdError::other("ERR Unsupported option foo")));
    }
}
