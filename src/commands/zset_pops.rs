//! The sorted-set pops: ZPOPMIN, ZPOPMAX, ZMPOP and their blocking forms BZPOPMIN,
//! BZPOPMAX and BZMPOP (served from the key that became ready, logged as the pop they did).

use super::access::modify;
use super::effects::arg;
use super::keys::notify_del_if_gone;
use super::zsets::{empty, pick, pick_mut};
use super::{parse_block_timeout, BlockRequest, CmdError, Ctx};
use crate::notify;
use crate::protocol::Reply;
use crate::util::opt_is;
use bytes::Bytes;

/// Redis's `genericZpopCommand` (`count` -1: no COUNT given).
fn pop_generic(ctx: &mut Ctx<'_>, keys: &[Bytes], max: bool, emitkey: bool, count: i64, nested: bool) -> Result<Reply, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut found = None;
    for key in keys {
        if let Some(e) = ctx.ks.get_mut(db, key, now) {
            if pick(&e.value).is_none() {
                return Err(CmdError::WrongType);
            }
            found = Some(key);
            break;
        }
    }
    let Some(key) = found else {
        return Ok(if emitkey { Reply::NilArray } else { Reply::Array(Vec::new()) });
    };
    if count == 0 {
        return Ok(Reply::Array(Vec::new()));
    }
    let count = if count == -1 { 1 } else { count as u64 };
    let popped = modify(ctx, key, pick_mut, empty, |z| {
        let mut out = Vec::new();
        while (out.len() as u64) < count {
            let Some(id) = (if max { z.last() } else { z.first() }) else { break };
            let (m, s) = z.get(id);
            let m = Bytes::copy_from_slice(m);
            z.remove(&m);
            out.push((m, s));
        }
        out
    })?
    .unwrap_or_default();
    ctx.dirty(popped.len() as u64);
    if !popped.is_empty() {
        ctx.signal_modified(key);
        ctx.notify(notify::ZSET, if max { "zpopmax" } else { "zpopmin" }, key);
        notify_del_if_gone(ctx, key);
    }
    let items: Vec<Reply> = if nested {
        popped.into_iter().map(|(m, s)| Reply::Array(vec![Reply::Bulk(m), Reply::Double(s)])).collect()
    } else {
        popped.into_iter().flat_map(|(m, s)| [Reply::Bulk(m), Reply::Double(s)]).collect()
    };
    Ok(if emitkey { Reply::Array(vec![Reply::Bulk(key.clone()), Reply::Array(items)]) } else { Reply::Array(items) })
}

fn zpop_min_max(ctx: &mut Ctx<'_>, args: &[Bytes], max: bool) -> Result<Reply, CmdError> {
    if args.len() > 3 {
        return Err(CmdError::Syntax);
    }
    let mut count = -1;
    if args.len() == 3 {
        count = crate::util::parse_i64(&args[2])
            .filter(|&n| n >= 0)
            .ok_or_else(|| CmdError::other("ERR value is out of range, must be positive"))?;
    }
    let nested = ctx.resp3() && count != -1;
    pop_generic(ctx, &args[1..2], max, false, count, nested)
}

/// ```text
/// ZPOPMIN key [count]
/// ```
pub fn zpopmin(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    zpop_min_max(ctx, args, false)
}

/// ```text
/// ZPOPMAX key [count]
/// ```
pub fn zpopmax(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    zpop_min_max(ctx, args, true)
}

/// ```text
/// ZMPOP numkeys key [key ...] <MIN | MAX> [COUNT count]
/// ```
pub fn zmpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (where_idx, max, count) = parse_mpop(args, 1)?;
    pop_generic(ctx, &args[2..where_idx], max, true, count, true)
}

/// The arguments of ZMPOP and BZMPOP from `numkeys` (at `first`) on: the index of MIN|MAX,
/// whether it is MAX, and the count (1 by default).
fn parse_mpop(args: &[Bytes], first: usize) -> Result<(usize, bool, i64), CmdError> {
    let positive = |a: &[u8], msg: &'static str| crate::util::parse_i64(a).filter(|&n| n >= 1).ok_or_else(|| CmdError::other(msg));
    let numkeys = positive(&args[first], "ERR numkeys should be greater than 0")?;
    let where_idx = match usize::try_from(numkeys).ok().and_then(|n| n.checked_add(first + 1)) {
        Some(i) if i < args.len() => i,
        _ => return Err(CmdError::Syntax),
    };
    let max = if opt_is(&args[where_idx], "min") {
        false
    } else if opt_is(&args[where_idx], "max") {
        true
    } else {
        return Err(CmdError::Syntax);
    };
    let mut count = -1;
    let mut j = where_idx + 1;
    while j < args.len() {
        if count == -1 && opt_is(&args[j], "count") && j + 1 < args.len() {
            j += 1;
            count = positive(&args[j], "ERR count should be greater than 0")?;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    Ok((where_idx, max, count.max(1)))
}

/// Redis's `blockingGenericZpopCommand`: pops from the first existing key of `keys` (a
/// WRONGTYPE stops the search), else asks the executor to park the client, which runs the
/// command again when one of the keys is written. `count` is `None` for BZPOPMIN/BZPOPMAX
/// (a flat `[key, member, score]` reply), `Some` for BZMPOP (`[key, [[member, score]...]]`).
fn blocking_pop(ctx: &mut Ctx<'_>, keys: &[Bytes], max: bool, count: Option<i64>, deadline_ms: Option<i64>) -> Result<Reply, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    // A woken client is served from the key that became ready only.
    let serving = ctx.client.serving.clone();
    for key in keys.iter().filter(|k| serving.as_ref().is_none_or(|s| s == *k)) {
        match ctx.ks.get_mut(db, key, now) {
            None => continue,
            Some(e) if pick(&e.value).is_none() => return Err(CmdError::WrongType),
            Some(_) => {}
        }
        // Logged as the non-blocking pop it came to.
        let side = arg(if max { "MAX" } else { "MIN" });
        let pop = if max { "ZPOPMAX" } else { "ZPOPMIN" };
        let key = std::slice::from_ref(key);
        let logged = |reply: &Reply| match (count, reply) {
            (Some(_), Reply::Array(parts)) => match parts.get(1) {
                Some(Reply::Array(items)) => {
                    Some(vec![arg("ZMPOP"), arg("1"), key[0].clone(), side.clone(), arg("COUNT"), arg(&items.len().max(1).to_string())])
                }
                _ => None,
            },
            (None, Reply::Array(parts)) if !parts.is_empty() => Some(vec![arg(pop), key[0].clone()]),
            _ => None,
        };
        let reply = match count {
            Some(n) => pop_generic(ctx, key, max, true, n, true),
            None => Ok(match pop_generic(ctx, key, max, true, -1, false)? {
                Reply::Array(mut parts) if parts.len() == 2 => match parts.pop() {
                    Some(Reply::Array(items)) => {
                        parts.extend(items);
                        Reply::Array(parts)
                    }
                    other => {
                        parts.extend(other);
                        Reply::Array(parts)
                    }
                },
                other => other,
            }),
        }?;
        if let Some(argv) = logged(&reply) {
            ctx.log_as_one(argv);
        }
        return Ok(reply);
    }
    ctx.then(super::Next::Block(Box::new(BlockRequest {
        kind: super::BlockKind::ZSet,
        keys: keys.to_vec(),
        deadline_ms,
        timeout_reply: Reply::NilArray,
        rerun: None,
    })));
    Ok(Reply::NoReply)
}

fn bzpop_min_max(ctx: &mut Ctx<'_>, args: &[Bytes], max: bool) -> Result<Reply, CmdError> {
    let deadline = parse_block_timeout(&args[args.len() - 1], ctx.now_ms)?;
    blocking_pop(ctx, &args[1..args.len() - 1], max, None, deadline)
}

/// ```text
/// BZPOPMIN key [key ...] timeout
/// ```
pub fn bzpopmin(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    bzpop_min_max(ctx, args, false)
}

/// ```text
/// BZPOPMAX key [key ...] timeout
/// ```
pub fn bzpopmax(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    bzpop_min_max(ctx, args, true)
}

/// ```text
/// BZMPOP timeout numkeys key [key ...] <MIN | MAX> [COUNT count]
/// ```
pub fn bzmpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    // The timeout is read last, after the other arguments (as Redis does).
    let (where_idx, max, count) = parse_mpop(args, 2)?;
    let deadline = parse_block_timeout(&args[1], ctx.now_ms)?;
    blocking_pop(ctx, &args[3..where_idx], max, Some(count), deadline)
}
