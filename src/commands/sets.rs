//! Set commands: SADD, SREM, SMEMBERS, SISMEMBER/SMISMEMBER, SCARD, SPOP, SRANDMEMBER, SMOVE,
//! the SINTER/SUNION/SDIFF families (with their STORE forms and SINTERCARD) and SSCAN, with
//! redis-server 7.0's replies, errors, checking order and result encodings.

use bytes::Bytes;

use super::access::{modify, modify_or_create, read};
use super::effects::arg;
use super::hashes::{check_draws, opt_is, parse_cursor, parse_rand_count, parse_scan_opts, sample_distinct, scan_reply};
use super::keys::{notify_del_if_gone, notify_if_new, notify_new};
use super::{CmdError, Ctx};
use crate::db::set::SetValue;
use crate::db::{Key, Keyspace, Value};
use crate::notify;
use crate::protocol::Reply;

fn pick(v: &Value) -> Option<&SetValue> {
    match v {
        Value::Set(s) => Some(s),
        _ => None,
    }
}

fn pick_mut(v: &mut Value) -> Option<&mut SetValue> {
    match v {
        Value::Set(s) => Some(s),
        _ => None,
    }
}

/// `set-max-intset-entries` (cached in `ServerState::encoding_limits`).
fn max_intset(ctx: &Ctx<'_>) -> u64 {
    ctx.server.settings.encoding_limits.max_intset
}

/// The set at `key`, borrowing only the keyspace (so the caller can use the server's random
/// generator meanwhile). `write` picks `lookupKeyWrite` over `lookupKeyRead`.
fn lookup_set<'k>(ks: &'k mut Keyspace, db: usize, key: &[u8], now: i64, write: bool) -> Result<Option<&'k SetValue>, CmdError> {
    let entry = if write { ks.get_mut(db, key, now).map(|e| &*e) } else { ks.get(db, key, now) };
    match entry {
        None => Ok(None),
        Some(e) => pick(&e.value).map(Some).ok_or(CmdError::WrongType),
    }
}

fn bulks<'a>(members: impl Iterator<Item = &'a Key>) -> Vec<Reply> {
    members.map(|m| Reply::Bulk(m.to_bytes())).collect()
}

/// Redis's `getPositiveLongFromObjectOrReply` without a custom message: one error for
/// anything but a non-negative integer.
fn parse_positive(arg: &[u8]) -> Result<u64, CmdError> {
    match crate::util::parse_i64(arg) {
        Some(n) if n >= 0 => Ok(n as u64),
        _ => Err(CmdError::other("ERR value is out of range, must be positive")),
    }
}

/// ```text
/// SADD key member [member ...]
/// ```
pub fn sadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let max = max_intset(ctx);
    let first = &args[2][..];
    let create = || Value::Set(Box::new(SetValue::for_member(first)));
    notify_if_new(ctx, &args[1]);
    let added =
        modify_or_create(ctx, &args[1], pick_mut, SetValue::is_empty, create, |s| args[2..].iter().filter(|m| s.add(m, max)).count())?;
    ctx.dirty(added as u64);
    if added > 0 {
        ctx.signal_modified(&args[1]);
        ctx.notify(notify::SET, "sadd", &args[1]);
    }
    Ok(Reply::Int(added as i64))
}

/// ```text
/// SREM key member [member ...]
/// ```
pub fn srem(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let removed = modify(ctx, &args[1], pick_mut, SetValue::is_empty, |s| args[2..].iter().filter(|m| s.remove(m)).count())?.unwrap_or(0);
    ctx.dirty(removed as u64);
    if removed > 0 {
        ctx.signal_modified(&args[1]);
        ctx.notify(notify::SET, "srem", &args[1]);
        notify_del_if_gone(ctx, &args[1]);
    }
    Ok(Reply::Int(removed as i64))
}

/// ```text
/// SMEMBERS key
/// ```
pub fn smembers(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(Reply::Set(read(ctx, &args[1], pick)?.map_or_else(Vec::new, |s| bulks(s.iter()))))
}

/// ```text
/// SISMEMBER key member
/// ```
pub fn sismember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(Reply::Int(read(ctx, &args[1], pick)?.is_some_and(|s| s.contains(&args[2])) as i64))
}

/// ```text
/// SMISMEMBER key member [member ...]
/// ```
pub fn smismember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let s = read(ctx, &args[1], pick)?;
    Ok(Reply::Array(args[2..].iter().map(|m| Reply::Int(s.is_some_and(|s| s.contains(m)) as i64)).collect()))
}

/// ```text
/// SCARD key
/// ```
pub fn scard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(Reply::Int(read(ctx, &args[1], pick)?.map_or(0, |s| s.len() as i64)))
}

/// ```text
/// SPOP key [count]
/// ```
pub fn spop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if args.len() > 3 {
        return Err(CmdError::Syntax);
    }
    let count = if args.len() == 3 { Some(parse_positive(&args[2])?) } else { None };
    let (db, now, key) = (ctx.db(), ctx.now_ms, &args[1][..]);
    let server = &mut *ctx.server;
    let Some(s) = lookup_set(ctx.ks, db, key, now, true)? else {
        return Ok(if count.is_some() { Reply::Set(Vec::new()) } else { Reply::Nil });
    };
    let size = s.len();
    let Some(count) = count else {
        let Some(member) = s.random(server.random()).map(Key::to_bytes) else {
            return Ok(Reply::Nil);
        };
        modify(ctx, key, pick_mut, SetValue::is_empty, |s| s.remove(&member))?;
        ctx.signal_modified(key);
        ctx.dirty(1);
        ctx.log_as_one(vec![arg("SREM"), Bytes::copy_from_slice(key), member.clone()]);
        ctx.notify(notify::SET, "spop", key);
        notify_del_if_gone(ctx, key);
        return Ok(Reply::Bulk(member));
    };
    if count == 0 {
        return Ok(Reply::Set(Vec::new()));
    }
    if count >= size as u64 {
        // The whole set goes.
        let members: Vec<Bytes> = s.iter().map(Key::to_bytes).collect();
        ctx.remove(key);
        ctx.dirty(size as u64);
        log_srem(ctx, key, &members);
        let all = members.into_iter().map(Reply::Bulk).collect();
        ctx.notify(notify::SET, "spop", key);
        ctx.notify(notify::GENERIC, "del", key);
        return Ok(Reply::Set(all));
    }
    let count = count as usize;
    let remaining = size - count;
    let popped: Vec<Bytes> = if remaining.saturating_mul(5) > count {
        // Pop `count` random members; the set keeps its encoding.
        let picked: Vec<Bytes> =
            sample_distinct(size, count, &mut || server.random()).into_iter().filter_map(|i| s.member_at(i).map(Key::to_bytes)).collect();
        modify(ctx, key, pick_mut, SetValue::is_empty, |s| {
            for m in &picked {
                s.remove(m);
            }
        })?;
        picked
    } else {
        // Like Redis, pick the few members that stay and rebuild the set from them (so its
        // encoding is decided afresh), returning all the others.
        let max = server.settings.encoding_limits.max_intset;
        let keep = sample_distinct(size, remaining, &mut || server.random());
        let mut rebuilt = SetValue::new();
        for i in keep {
            if let Some(m) = s.member_at(i) {
                rebuilt.add_owned(m.clone(), max);
            }
        }
        let popped = s.iter().filter(|m| !rebuilt.contains(m)).map(Key::to_bytes).collect();
        ctx.change_quietly(key, |e| e.value = Value::Set(Box::new(rebuilt)));
        popped
    };
    ctx.signal_modified(key);
    ctx.dirty(count as u64);
    log_srem(ctx, key, &popped);
    ctx.notify(notify::SET, "spop", key);
    Ok(Reply::Set(popped.into_iter().map(Reply::Bulk).collect()))
}

/// SPOP is logged as the SREM of what it popped (a replay must not draw again).
fn log_srem(ctx: &mut Ctx<'_>, key: &[u8], members: &[Bytes]) {
    let mut argv = Vec::with_capacity(members.len() + 2);
    argv.extend([arg("SREM"), Bytes::copy_from_slice(key)]);
    argv.extend_from_slice(members);
    ctx.log_as_one(argv);
}

/// ```text
/// SRANDMEMBER key [count]
/// ```
pub fn srandmember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if args.len() > 3 {
        return Err(CmdError::Syntax);
    }
    let (db, now, key) = (ctx.db(), ctx.now_ms, &args[1][..]);
    if args.len() == 2 {
        let server = &mut *ctx.server;
        let s = lookup_set(ctx.ks, db, key, now, false)?;
        return Ok(s.and_then(|s| s.random(server.random())).map_or(Reply::Nil, |m| Reply::Bulk(m.to_bytes())));
    }
    let l = parse_rand_count(&args[2])?;
    let server = &mut *ctx.server;
    let Some(s) = lookup_set(ctx.ks, db, key, now, false)? else {
        return Ok(Reply::Array(Vec::new()));
    };
    let (count, uniq) = (l.unsigned_abs(), l >= 0);
    let size = s.len();
    if count == 0 {
        return Ok(Reply::Array(Vec::new()));
    }
    check_draws(count, uniq)?;
    if !uniq || count == 1 {
        let mut out = Vec::with_capacity(count.min(1 << 16) as usize);
        for _ in 0..count {
            if let Some(m) = s.random(server.random()) {
                out.push(Reply::Bulk(m.to_bytes()));
            }
        }
        return Ok(Reply::Array(out));
    }
    if count >= size as u64 {
        return Ok(Reply::Array(bulks(s.iter())));
    }
    let picked = sample_distinct(size, count as usize, &mut || server.random());
    Ok(Reply::Array(picked.into_iter().filter_map(|i| s.member_at(i)).map(|m| Reply::Bulk(m.to_bytes())).collect()))
}

/// ```text
/// SMOVE source destination member
/// ```
pub fn smove(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let (src, dst, member) = (&args[1][..], &args[2][..], &args[3][..]);
    let src_type = ctx.ks.get_mut(db, src, now).map(|e| matches!(e.value, Value::Set(_)));
    let dst_type = ctx.ks.get_mut(db, dst, now).map(|e| matches!(e.value, Value::Set(_)));
    match (src_type, dst_type) {
        (None, _) => return Ok(Reply::Int(0)),
        (Some(false), _) | (_, Some(false)) => return Err(CmdError::WrongType),
        _ => {}
    }
    if src == dst {
        return Ok(Reply::Int(read(ctx, src, pick)?.is_some_and(|s| s.contains(member)) as i64));
    }
    if modify(ctx, src, pick_mut, SetValue::is_empty, |s| s.remove(member))? != Some(true) {
        return Ok(Reply::Int(0));
    }
    ctx.signal_modified(src);
    ctx.dirty(1);
    ctx.notify(notify::SET, "srem", src);
    notify_del_if_gone(ctx, src);
    let max = max_intset(ctx);
    let create = || Value::Set(Box::new(SetValue::for_member(member)));
    notify_new(ctx, dst, dst_type.is_none());
    // The destination changed only if the member was new there (Redis signals it then only).
    if modify_or_create(ctx, dst, pick_mut, SetValue::is_empty, create, |s| s.add(member, max))? {
        ctx.signal_modified(dst);
        ctx.dirty(1);
        ctx.notify(notify::SET, "sadd", dst);
    }
    Ok(Reply::Int(1))
}

/// Looks every key up for reading (`lookupKeyRead`, expiring as needed) and checks its type:
/// WRONGTYPE at the first key holding something else. Returns which keys exist.
fn check_sets(ctx: &mut Ctx<'_>, keys: &[Bytes]) -> Result<Vec<bool>, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut present = Vec::with_capacity(keys.len());
    for key in keys {
        present.push(lookup_set(ctx.ks, db, key, now, false)?.is_some());
    }
    Ok(present)
}

/// The sets of the keys found present by [`check_sets`] (`None` for missing keys).
fn peek_sets<'k>(ks: &'k Keyspace, db: usize, keys: &[Bytes], present: &[bool]) -> Vec<Option<&'k SetValue>> {
    let db = ks.db(db);
    keys.iter().zip(present).map(|(k, &p)| if p { db.peek(k).and_then(|e| pick(&e.value)) } else { None }).collect()
}

/// Redis's `setKey` for the STORE commands (no TTL kept; under an LFU policy the old
/// counter is), or the deletion of `dst` when the result is empty. Replies the size.
fn store_set(ctx: &mut Ctx<'_>, dst: &[u8], set: SetValue, event: &'static str) -> Reply {
    let len = set.len();
    if len == 0 {
        ctx.delete_key(dst);
        return Reply::Int(0);
    }
    ctx.set_key(dst, Value::Set(Box::new(set)));
    ctx.dirty(1);
    ctx.notify(notify::SET, event, dst);
    Reply::Int(len as i64)
}

/// What the SINTER family produces.
enum InterMode<'a> {
    Members,
    Card(u64),
    Store(&'a [u8]),
}

/// Redis's `sinterGenericCommand`.
fn sinter_generic(ctx: &mut Ctx<'_>, keys: &[Bytes], mode: InterMode<'_>) -> Result<Reply, CmdError> {
    let present = check_sets(ctx, keys)?;
    let max = max_intset(ctx);
    let db = ctx.db();
    let mut members: Vec<Bytes> = Vec::new();
    let mut card: u64 = 0;
    if present.iter().all(|&p| p) {
        let mut sets: Vec<&SetValue> = peek_sets(ctx.ks, db, keys, &present).into_iter().flatten().collect();
        sets.sort_by_key(|s| s.len());
        if let Some((first, rest)) = sets.split_first() {
            for m in first.iter() {
                if rest.iter().all(|s| std::ptr::eq(*s, *first) || s.contains(m)) {
                    match mode {
                        InterMode::Card(limit) => {
                            card += 1;
                            if limit != 0 && card >= limit {
                                break;
                            }
                        }
                        _ => members.push(m.to_bytes()),
                    }
                }
            }
        }
    }
    Ok(match mode {
        InterMode::Members => Reply::Set(members.into_iter().map(Reply::Bulk).collect()),
        InterMode::Card(_) => Reply::Int(card as i64),
        InterMode::Store(dst) => {
            let mut set = SetValue::new();
            for m in members {
                set.add_owned(m, max);
            }
            store_set(ctx, dst, set, "sinterstore")
        }
    })
}

/// Redis's `sunionDiffGenericCommand`: the result is built as a fresh set (an intset while
/// it can be), then replied or stored.
fn sunion_diff(ctx: &mut Ctx<'_>, keys: &[Bytes], dst: Option<&[u8]>, diff: bool) -> Result<Reply, CmdError> {
    let present = check_sets(ctx, keys)?;
    let max = max_intset(ctx);
    let db = ctx.db();
    let sets = peek_sets(ctx.ks, db, keys, &present);
    let mut result = SetValue::new();
    let mut diff_members: Vec<Bytes> = Vec::new();
    if !diff {
        for s in sets.iter().flatten() {
            for m in s.iter() {
                result.add_owned(m.clone(), max);
            }
        }
    } else if let Some(first) = sets[0] {
        let others: Vec<&SetValue> = sets[1..].iter().flatten().copied().collect();
        // A later key naming the first set again empties the difference.
        if !others.iter().any(|s| std::ptr::eq(*s, first)) {
            for m in first.iter() {
                if !others.iter().any(|s| s.contains(m)) {
                    diff_members.push(m.to_bytes());
                }
            }
        }
    }
    match dst {
        None if diff => Ok(Reply::Set(diff_members.into_iter().map(Reply::Bulk).collect())),
        None => Ok(Reply::Set(bulks(result.iter()))),
        Some(dst) => {
            for m in diff_members {
                result.add_owned(m, max);
            }
            Ok(store_set(ctx, dst, result, if diff { "sdiffstore" } else { "sunionstore" }))
        }
    }
}

/// ```text
/// SINTER key [key ...]
/// ```
pub fn sinter(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    sinter_generic(ctx, &args[1..], InterMode::Members)
}

/// ```text
/// SINTERCARD numkeys key [key ...] [LIMIT limit]
/// ```
pub fn sintercard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let numkeys = match crate::util::parse_i64(&args[1]) {
        Some(n) if n >= 1 => n as u64,
        _ => return Err(CmdError::other("ERR numkeys should be greater than 0")),
    };
    if numkeys > args.len() as u64 - 2 {
        return Err(CmdError::other("ERR Number of keys can't be greater than number of args"));
    }
    let end = 2 + numkeys as usize;
    let mut limit = 0u64;
    let mut j = end;
    while j < args.len() {
        if opt_is(&args[j], "LIMIT") && j + 1 < args.len() {
            j += 1;
            limit = match crate::util::parse_i64(&args[j]) {
                Some(n) if n >= 0 => n as u64,
                _ => return Err(CmdError::other("ERR LIMIT can't be negative")),
            };
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    sinter_generic(ctx, &args[2..end], InterMode::Card(limit))
}

/// ```text
/// SINTERSTORE destination key [key ...]
/// ```
pub fn sinterstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    sinter_generic(ctx, &args[2..], InterMode::Store(&args[1]))
}

/// ```text
/// SUNION key [key ...]
/// ```
pub fn sunion(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    sunion_diff(ctx, &args[1..], None, false)
}

/// ```text
/// SUNIONSTORE destination key [key ...]
/// ```
pub fn sunionstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    sunion_diff(ctx, &args[2..], Some(&args[1]), false)
}

/// ```text
/// SDIFF key [key ...]
/// ```
pub fn sdiff(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    sunion_diff(ctx, &args[1..], None, true)
}

/// ```text
/// SDIFFSTORE destination key [key ...]
/// ```
pub fn sdiffstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    sunion_diff(ctx, &args[2..], Some(&args[1]), true)
}

/// ```text
/// SSCAN key cursor [MATCH pattern] [COUNT count]
/// ```
pub fn sscan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let mut cursor = parse_cursor(&args[2])?;
    let Some(s) = read(ctx, &args[1], pick)? else {
        return Ok(scan_reply(0, Vec::new()));
    };
    let opts = parse_scan_opts(args, 3)?;
    let mut found: Vec<Bytes> = Vec::new();
    if s.is_intset() {
        // Redis returns an intset whole, whatever the cursor.
        found.extend(s.iter().map(Key::to_bytes));
        cursor = 0;
    } else {
        // Like Redis: at most COUNT*10 more buckets after the first, until COUNT members.
        let count = opts.count;
        let mut budget = count.saturating_mul(10);
        loop {
            cursor = s.scan_step(cursor, |m| found.push(m.to_bytes()));
            if cursor == 0 || budget == 0 || found.len() as i64 >= count {
                break;
            }
            budget -= 1;
        }
    }
    let out = found.into_iter().filter(|m| opts.matches(m)).map(Reply::Bulk).collect();
    Ok(scan_reply(cursor, out))
}
