//! List commands: pushes, pops, ranges, LINSERT/LREM/LTRIM/LPOS, LMOVE/RPOPLPUSH, LMPOP and
//! the blocking BLPOP/BRPOP/BLMOVE/BRPOPLPUSH/BLMPOP, with redis-server 7.0's replies, errors
//! and checking order. A blocking command that finds nothing asks the executor to park the
//! client (see executor/blocking.rs); when woken it runs again and serves itself.

use bytes::Bytes;

use super::access::{modify, modify_or_create, read};
use super::effects::arg;
use super::keys::{notify_del_if_gone, notify_if_new, notify_new};
use super::{arg_i64, parse_block_timeout, BlockRequest, CmdError, Ctx};
use crate::db::list::ListValue;
use crate::db::Value;
use crate::notify;
use crate::protocol::Reply;
use crate::util::opt_is;

fn pick(v: &Value) -> Option<&ListValue> {
    match v {
        Value::List(l) => Some(l),
        _ => None,
    }
}

fn pick_mut(v: &mut Value) -> Option<&mut ListValue> {
    match v {
        Value::List(l) => Some(l),
        _ => None,
    }
}

fn is_empty(l: &ListValue) -> bool {
    l.is_empty()
}

fn new_list() -> Value {
    Value::List(Box::default())
}

/// Redis's `getRangeLongFromObjectOrReply`: an integer within `min..=max`, else `msg` (or the
/// generic texts when `msg` is `None`).
fn arg_range(arg: &[u8], min: i64, max: i64, msg: Option<&'static str>) -> Result<i64, CmdError> {
    let err = |generic: CmdError| msg.map_or(generic, CmdError::other);
    let v = crate::util::parse_i64(arg).ok_or_else(|| err(CmdError::NotInteger))?;
    if v < min || v > max {
        return Err(err(CmdError::Other(format!("ERR value is out of range, value must between {min} and {max}").into())));
    }
    Ok(v)
}

/// Which end of a list.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Head,
    Tail,
}

/// Redis's `getListPositionFromObjectOrReply`: LEFT or RIGHT.
fn parse_end(arg: &[u8]) -> Result<End, CmdError> {
    if opt_is(arg, "LEFT") {
        Ok(End::Head)
    } else if opt_is(arg, "RIGHT") {
        Ok(End::Tail)
    } else {
        Err(CmdError::Syntax)
    }
}

fn push(l: &mut ListValue, end: End, item: Bytes) {
    match end {
        End::Head => l.push_front(item),
        End::Tail => l.push_back(item),
    }
}

fn pop(l: &mut ListValue, end: End) -> Option<Bytes> {
    match end {
        End::Head => l.pop_front(),
        End::Tail => l.pop_back(),
    }
}

/// Pops up to `count` elements from `end`, in pop order.
fn pop_many(l: &mut ListValue, end: End, count: u64) -> Vec<Reply> {
    let n = (count.min(l.len() as u64)) as usize;
    (0..n).filter_map(|_| pop(l, end)).map(Reply::Bulk).collect()
}

/// Redis's `pushGenericCommand`.
fn push_generic(ctx: &mut Ctx<'_>, args: &[Bytes], end: End, xx: bool) -> Result<Reply, CmdError> {
    let key = &args[1][..];
    let items = &args[2..];
    let f = |l: &mut ListValue| {
        for item in items {
            push(l, end, Bytes::copy_from_slice(item));
        }
        l.len()
    };
    let len = if xx {
        match modify(ctx, key, pick_mut, is_empty, f)? {
            Some(len) => len,
            None => return Ok(Reply::Int(0)),
        }
    } else {
        notify_if_new(ctx, key);
        modify_or_create(ctx, key, pick_mut, is_empty, new_list, f)?
    };
    ctx.signal_modified(key);
    ctx.dirty(items.len() as u64);
    ctx.notify(notify::LIST, if end == End::Head { "lpush" } else { "rpush" }, key);
    Ok(Reply::Int(len as i64))
}

/// ```text
/// LPUSH key element [element ...]
/// ```
pub fn lpush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    push_generic(ctx, args, End::Head, false)
}

/// ```text
/// RPUSH key element [element ...]
/// ```
pub fn rpush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    push_generic(ctx, args, End::Tail, false)
}

/// ```text
/// LPUSHX key element [element ...]
/// ```
pub fn lpushx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    push_generic(ctx, args, End::Head, true)
}

/// ```text
/// RPUSHX key element [element ...]
/// ```
pub fn rpushx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    push_generic(ctx, args, End::Tail, true)
}

/// The event of a pop from `end`.
fn pop_event(end: End) -> &'static str {
    if end == End::Head {
        "lpop"
    } else {
        "rpop"
    }
}

/// Redis's `popGenericCommand`: one element as a bulk string, or with a count an array.
fn pop_generic(ctx: &mut Ctx<'_>, args: &[Bytes], end: End) -> Result<Reply, CmdError> {
    if args.len() > 3 {
        let name = String::from_utf8_lossy(&args[0]).to_lowercase();
        return Err(CmdError::Other(format!("ERR wrong number of arguments for '{name}' command").into()));
    }
    let count = match args.get(2) {
        Some(arg) => Some(arg_range(arg, 0, i64::MAX, Some("ERR value is out of range, must be positive"))? as u64),
        None => None,
    };
    let key = &args[1][..];
    let reply = modify(ctx, key, pick_mut, is_empty, |l| match count {
        None => (pop(l, end).map_or(Reply::Nil, Reply::Bulk), 1),
        Some(0) => (Reply::Array(Vec::new()), 0),
        Some(n) => {
            let items = pop_many(l, end, n);
            let n = items.len() as u64;
            (Reply::Array(items), n)
        }
    })?;
    match reply {
        None => Ok(if count.is_some() { Reply::NilArray } else { Reply::Nil }),
        Some((reply, n)) => {
            ctx.dirty(n);
            if n > 0 {
                ctx.signal_modified(key);
                ctx.notify(notify::LIST, pop_event(end), key);
                notify_del_if_gone(ctx, key);
            }
            Ok(reply)
        }
    }
}

/// ```text
/// LPOP key [count]
/// ```
pub fn lpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    pop_generic(ctx, args, End::Head)
}

/// ```text
/// RPOP key [count]
/// ```
pub fn rpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    pop_generic(ctx, args, End::Tail)
}

/// ```text
/// LLEN key
/// ```
pub fn llen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(Reply::Int(read(ctx, &args[1], pick)?.map_or(0, |l| l.len() as i64)))
}

/// Redis's range normalisation (LRANGE, LTRIM): `Some((start, end))` inclusive within the
/// list, `None` for an empty range.
fn normalize_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let mut start = if start < 0 { len + start } else { start };
    let mut end = if end < 0 { len + end } else { end };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= len {
        return None;
    }
    if end >= len {
        end = len - 1;
    }
    Some((start as usize, end as usize))
}

/// ```text
/// LRANGE key start stop
/// ```
pub fn lrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let start = arg_i64(&args[2])?;
    let end = arg_i64(&args[3])?;
    let Some(l) = read(ctx, &args[1], pick)? else {
        return Ok(Reply::Array(Vec::new()));
    };
    Ok(Reply::Array(match normalize_range(start, end, l.len()) {
        None => Vec::new(),
        Some((s, e)) => l.range_bytes(s, e).map(Reply::Bulk).collect(),
    }))
}

/// A list index (negative from the tail) as a position, if within the list.
fn position(index: i64, len: usize) -> Option<usize> {
    let len = len as i64;
    let i = if index < 0 { len + index } else { index };
    (0..len).contains(&i).then_some(i as usize)
}

/// ```text
/// LINDEX key index
/// ```
pub fn lindex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    // Redis looks the key up before parsing the index.
    let index = arg_i64(&args[2]);
    let Some(l) = read(ctx, &args[1], pick)? else {
        return Ok(Reply::Nil);
    };
    let index = index?;
    Ok(position(index, l.len()).and_then(|i| l.get(i)).map_or(Reply::Nil, |b| Reply::Bulk(Bytes::copy_from_slice(b))))
}

/// ```text
/// LSET key index element
/// ```
pub fn lset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let key = &args[1][..];
    let (db, now) = (ctx.db(), ctx.now_ms);
    match ctx.ks.get_mut(db, key, now).map(|e| matches!(e.value, Value::List(_))) {
        None => return Err(CmdError::NoSuchKey),
        Some(false) => return Err(CmdError::WrongType),
        Some(true) => {}
    }
    let index = arg_i64(&args[2])?;
    let item = Bytes::copy_from_slice(&args[3]);
    let done = modify(ctx, key, pick_mut, is_empty, |l| match position(index, l.len()) {
        Some(i) => l.set(i, item),
        None => false,
    })?;
    if done != Some(true) {
        return Err(CmdError::other("ERR index out of range"));
    }
    ctx.signal_modified(key);
    ctx.dirty(1);
    ctx.notify(notify::LIST, "lset", key);
    Ok(Reply::OK)
}

/// ```text
/// LINSERT key <BEFORE | AFTER> pivot element
/// ```
pub fn linsert(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let after = if opt_is(&args[2], "AFTER") {
        true
    } else if opt_is(&args[2], "BEFORE") {
        false
    } else {
        return Err(CmdError::Syntax);
    };
    let (pivot, item) = (&args[3][..], &args[4][..]);
    let r = modify(ctx, &args[1], pick_mut, is_empty, |l| {
        let found = l.iter().position(|x| x == pivot);
        match found {
            Some(i) => {
                l.insert(if after { i + 1 } else { i }, Bytes::copy_from_slice(item));
                l.len() as i64
            }
            None => -1,
        }
    })?;
    match r {
        None => Ok(Reply::Int(0)),
        Some(n) => {
            if n > 0 {
                ctx.signal_modified(&args[1]);
                ctx.dirty(1);
                ctx.notify(notify::LIST, "linsert", &args[1]);
            }
            Ok(Reply::Int(n))
        }
    }
}

/// ```text
/// LREM key count element
/// ```
pub fn lrem(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let count = arg_i64(&args[2])?;
    let elem = &args[3][..];
    let limit = count.unsigned_abs();
    let removed = modify(ctx, &args[1], pick_mut, is_empty, |l| {
        let len = l.len();
        // Mark the matches to remove, scanning from the chosen end.
        let mut drop = vec![false; len];
        let mut removed = 0u64;
        let mut visit = |i: usize, x: &[u8]| {
            if (limit == 0 || removed < limit) && x == elem {
                drop[i] = true;
                removed += 1;
            }
        };
        if count < 0 {
            for (i, x) in l.iter().enumerate().rev() {
                visit(i, x);
            }
        } else {
            for (i, x) in l.iter().enumerate() {
                visit(i, x);
            }
        }
        if removed > 0 {
            l.retain(|i, _| !drop[i]);
        }
        removed
    })?
    .unwrap_or(0);
    ctx.dirty(removed);
    if removed > 0 {
        ctx.signal_modified(&args[1]);
        ctx.notify(notify::LIST, "lrem", &args[1]);
        notify_del_if_gone(ctx, &args[1]);
    }
    Ok(Reply::Int(removed as i64))
}

/// ```text
/// LTRIM key start stop
/// ```
pub fn ltrim(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let start = arg_i64(&args[2])?;
    let end = arg_i64(&args[3])?;
    let removed = modify(ctx, &args[1], pick_mut, is_empty, |l| {
        let len = l.len();
        match normalize_range(start, end, len) {
            None => {
                l.keep_range(0, 0);
                len
            }
            Some((s, e)) => {
                l.keep_range(s, e + 1);
                len - l.len()
            }
        }
    })?;
    if let Some(n) = removed {
        // Redis signals the key even when nothing was trimmed (a WATCH on it aborts).
        ctx.signal_modified(&args[1]);
        ctx.dirty(n as u64);
        ctx.notify(notify::LIST, "ltrim", &args[1]);
        notify_del_if_gone(ctx, &args[1]);
    }
    Ok(Reply::OK)
}

/// ```text
/// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]
/// ```
pub fn lpos(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let elem = &args[2][..];
    let (mut rank, mut count, mut maxlen) = (1i64, -1i64, 0i64);
    let mut j = 3;
    while j < args.len() {
        let opt = &args[j][..];
        let more = j + 1 < args.len();
        if opt_is(opt, "RANK") && more {
            j += 1;
            // Redis 7.0 takes any long here (RANK i64::MIN then negates to itself).
            rank = arg_i64(&args[j])?;
            if rank == 0 {
                return Err(CmdError::other(
                    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... \
                     or use negative to start from the end of the list",
                ));
            }
        } else if opt_is(opt, "COUNT") && more {
            j += 1;
            count = arg_range(&args[j], 0, i64::MAX, Some("ERR COUNT can't be negative"))?;
        } else if opt_is(opt, "MAXLEN") && more {
            j += 1;
            maxlen = arg_range(&args[j], 0, i64::MAX, Some("ERR MAXLEN can't be negative"))?;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    let from_tail = rank < 0;
    // Signed arithmetic that wraps as Redis's does (i64::MIN stays negative: every match
    // counts, and COUNT never stops the scan).
    let rank = if from_tail { rank.wrapping_neg() } else { rank };
    let Some(l) = read(ctx, &args[1], pick)? else {
        return Ok(if count != -1 { Reply::Array(Vec::new()) } else { Reply::Nil });
    };
    let len = l.len();
    let mut found = Vec::new();
    let mut matches = 0i64;
    let iter: Box<dyn Iterator<Item = &[u8]>> = if from_tail { Box::new(l.iter().rev()) } else { Box::new(l.iter()) };
    for (index, x) in iter.enumerate() {
        if maxlen != 0 && index as i64 >= maxlen {
            break;
        }
        if x != elem {
            continue;
        }
        matches += 1;
        if matches >= rank {
            found.push(if from_tail { len - index - 1 } else { index } as i64);
            if count == -1 || (count != 0 && matches.wrapping_sub(rank).wrapping_add(1) >= count) {
                break;
            }
        }
    }
    if count == -1 {
        Ok(found.first().map_or(Reply::Nil, |&i| Reply::Int(i)))
    } else {
        Ok(Reply::Array(found.into_iter().map(Reply::Int).collect()))
    }
}

/// Redis's `lmoveGenericCommand`.
fn lmove_generic(ctx: &mut Ctx<'_>, src: &[u8], dst: &[u8], from: End, to: End) -> Result<Reply, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    match ctx.ks.get_mut(db, src, now).map(|e| matches!(e.value, Value::List(_))) {
        None => return Ok(Reply::Nil),
        Some(false) => return Err(CmdError::WrongType),
        Some(true) => {}
    }
    let dst_absent = match ctx.ks.get_mut(db, dst, now) {
        Some(e) if !matches!(e.value, Value::List(_)) => return Err(CmdError::WrongType),
        found => found.is_none(),
    };
    let item = if src == dst {
        // Rotated in place: the list (one element or more) keeps its TTL, as in Redis.
        modify(ctx, src, pick_mut, is_empty, |l| {
            let item = pop(l, from)?;
            push(l, to, item.clone());
            Some(item)
        })?
        .flatten()
    } else {
        modify(ctx, src, pick_mut, is_empty, |l| pop(l, from))?.flatten()
    };
    let Some(item) = item else {
        return Ok(Reply::Nil);
    };
    if src != dst {
        let stored = item.clone();
        // Redis pushes first (creating the destination), then reports the pop and the deletion.
        notify_new(ctx, dst, dst_absent);
        modify_or_create(ctx, dst, pick_mut, is_empty, new_list, |l| push(l, to, stored))?;
    }
    ctx.signal_modified(dst);
    ctx.signal_modified(src);
    ctx.dirty(1);
    ctx.notify(notify::LIST, if to == End::Head { "lpush" } else { "rpush" }, dst);
    ctx.notify(notify::LIST, pop_event(from), src);
    notify_del_if_gone(ctx, src);
    Ok(Reply::Bulk(item))
}

/// ```text
/// LMOVE source destination <LEFT | RIGHT> <LEFT | RIGHT>
/// ```
pub fn lmove(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let from = parse_end(&args[3])?;
    let to = parse_end(&args[4])?;
    lmove_generic(ctx, &args[1], &args[2], from, to)
}

/// ```text
/// RPOPLPUSH source destination
/// ```
pub fn rpoplpush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    lmove_generic(ctx, &args[1], &args[2], End::Tail, End::Head)
}

/// ```text
/// LMPOP numkeys key [key ...] <LEFT | RIGHT> [COUNT count]
/// ```
pub fn lmpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    mpop(ctx, args, 1, None)
}

/// LMPOP and BLMPOP from the `numkeys` argument on; `timeout` is `Some` for BLMPOP.
fn mpop(ctx: &mut Ctx<'_>, args: &[Bytes], first: usize, timeout: Option<Option<i64>>) -> Result<Reply, CmdError> {
    let numkeys = arg_range(&args[first], 1, i64::MAX, Some("ERR numkeys should be greater than 0"))?;
    let where_idx = match (numkeys as u64).checked_add(first as u64 + 1) {
        Some(i) if i < args.len() as u64 => i as usize,
        _ => return Err(CmdError::Syntax),
    };
    let end = parse_end(&args[where_idx])?;
    let mut count = -1i64;
    let mut j = where_idx + 1;
    while j < args.len() {
        if count == -1 && opt_is(&args[j], "COUNT") && j + 1 < args.len() {
            j += 1;
            count = arg_range(&args[j], 1, i64::MAX, Some("ERR count should be greater than 0"))?;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    let count = if count == -1 { 1 } else { count as u64 };
    let keys = &args[first + 1..where_idx];
    // A woken client is served from the key that became ready only.
    let serving = ctx.client.serving.clone();
    for key in keys.iter().filter(|k| serving.as_ref().is_none_or(|s| s == *k)) {
        let (db, now) = (ctx.db(), ctx.now_ms);
        match ctx.ks.get_mut(db, key, now).map(|e| matches!(e.value, Value::List(_))) {
            None => continue,
            Some(false) => return Err(CmdError::WrongType),
            Some(true) => {}
        }
        if let Some(items) = modify(ctx, key, pick_mut, is_empty, |l| pop_many(l, end, count))? {
            ctx.signal_modified(key);
            ctx.dirty(items.len() as u64);
            if timeout.is_some() {
                // BLMPOP is logged as the LMPOP it came to.
                let count = arg(&items.len().max(1).to_string());
                ctx.log_as_one(vec![arg("LMPOP"), arg("1"), key.clone(), args[where_idx].clone(), arg("COUNT"), count]);
            }
            ctx.notify(notify::LIST, pop_event(end), key);
            notify_del_if_gone(ctx, key);
            return Ok(Reply::Array(vec![Reply::Bulk(key.clone()), Reply::Array(items)]));
        }
    }
    match timeout {
        Some(deadline) => Ok(block(ctx, keys, deadline)),
        None => Ok(Reply::NilArray),
    }
}

/// Asks the executor to park the client on `keys`; every blocking list command times out
/// with a null array, as in Redis.
fn block(ctx: &mut Ctx<'_>, keys: &[Bytes], deadline_ms: Option<i64>) -> Reply {
    ctx.then(super::Next::Block(Box::new(BlockRequest {
        kind: super::BlockKind::List,
        keys: keys.to_vec(),
        deadline_ms,
        timeout_reply: Reply::NilArray,
        rerun: None,
    })));
    Reply::NoReply
}

/// Redis's `blockingPopGenericCommand`: the first non-empty list of `keys` gives an element.
fn blocking_pop(ctx: &mut Ctx<'_>, args: &[Bytes], end: End) -> Result<Reply, CmdError> {
    let deadline = parse_block_timeout(&args[args.len() - 1], ctx.now_ms)?;
    let keys = &args[1..args.len() - 1];
    // A woken client is served from the key that became ready only.
    let serving = ctx.client.serving.clone();
    for key in keys.iter().filter(|k| serving.as_ref().is_none_or(|s| s == *k)) {
        let (db, now) = (ctx.db(), ctx.now_ms);
        match ctx.ks.get_mut(db, key, now).map(|e| matches!(e.value, Value::List(_))) {
            None => continue,
            Some(false) => return Err(CmdError::WrongType),
            Some(true) => {}
        }
        if let Some(Some(item)) = modify(ctx, key, pick_mut, is_empty, |l| pop(l, end))? {
            ctx.signal_modified(key);
            ctx.dirty(1);
            ctx.log_as_one(vec![arg(if end == End::Head { "LPOP" } else { "RPOP" }), key.clone()]);
            ctx.notify(notify::LIST, pop_event(end), key);
            notify_del_if_gone(ctx, key);
            return Ok(Reply::Array(vec![Reply::Bulk(key.clone()), Reply::Bulk(item)]));
        }
    }
    Ok(block(ctx, keys, deadline))
}

/// ```text
/// BLPOP key [key ...] timeout
/// ```
pub fn blpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    blocking_pop(ctx, args, End::Head)
}

/// ```text
/// BRPOP key [key ...] timeout
/// ```
pub fn brpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    blocking_pop(ctx, args, End::Tail)
}

/// Redis's `blmoveGenericCommand`: LMOVE when the source has elements, else block on it.
fn blocking_move(ctx: &mut Ctx<'_>, args: &[Bytes], from: End, to: End, timeout_arg: &[u8]) -> Result<Reply, CmdError> {
    let deadline = parse_block_timeout(timeout_arg, ctx.now_ms)?;
    let (db, now) = (ctx.db(), ctx.now_ms);
    match ctx.ks.get_mut(db, &args[1], now).map(|e| matches!(e.value, Value::List(_))) {
        // Where it may not block (in EXEC), Redis answers a null bulk here, not a null array.
        None if ctx.client.deny_blocking => Ok(Reply::Nil),
        None => Ok(block(ctx, &args[1..2], deadline)),
        Some(false) => Err(CmdError::WrongType),
        Some(true) => {
            let reply = lmove_generic(ctx, &args[1], &args[2], from, to)?;
            // Logged as the non-blocking form (what it did).
            let mut logged = match args.len() {
                4 => vec![arg("RPOPLPUSH")],
                _ => vec![arg("LMOVE")],
            };
            logged.extend_from_slice(&args[1..args.len() - 1]);
            ctx.log_as_one(logged);
            Ok(reply)
        }
    }
}

/// ```text
/// BLMOVE source destination <LEFT | RIGHT> <LEFT | RIGHT> timeout
/// ```
pub fn blmove(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let from = parse_end(&args[3])?;
    let to = parse_end(&args[4])?;
    blocking_move(ctx, args, from, to, &args[5])
}

/// ```text
/// BRPOPLPUSH source destination timeout
/// ```
pub fn brpoplpush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    blocking_move(ctx, args, End::Tail, End::Head, &args[3])
}

/// ```text
/// BLMPOP timeout numkeys key [key ...] <LEFT | RIGHT> [COUNT count]
/// ```
pub fn blmpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let deadline = parse_block_timeout(&args[1], ctx.now_ms)?;
    mpop(ctx, args, 2, Some(deadline))
}
