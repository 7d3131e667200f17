//! Sorted set commands: ZADD and ZINCRBY, ZREM, ZCARD, ZCOUNT, ZLEXCOUNT, ZSCORE, ZMSCORE,
//! ZRANK, ZREVRANK, the ZRANGE family and ZRANGESTORE, the ZREMRANGEBY* commands, ZPOPMIN,
//! ZPOPMAX, ZMPOP, ZRANDMEMBER, ZINTER/ZUNION/ZDIFF (and their STORE forms) and ZSCAN, with
//! redis-server 7.0's replies, error texts and checking order.
//!
//! Option words are compared the way Redis's `strcasecmp` sees them: up to the first NUL.

use bytes::Bytes;

use super::access::{modify, modify_or_create, read};
use super::keys::{notify_del_if_gone, notify_if_new};
use super::{arg_i64, CmdError, Ctx};
use crate::db::zset::ops::{self, zset_add, AddOut, Spec, Src, CH, GT, INCR, LT, NX, XX};
use crate::db::zset::{LexRange, ScoreRange, ZSetValue};
use crate::db::Value;
use crate::notify;
use crate::protocol::Reply;
use crate::util::opt_is;
use crate::util::{format_double, parse_f64};

pub(super) fn pick(v: &Value) -> Option<&ZSetValue> {
    match v {
        Value::ZSet(z) => Some(z),
        _ => None,
    }
}

pub(super) fn pick_mut(v: &mut Value) -> Option<&mut ZSetValue> {
    match v {
        Value::ZSet(z) => Some(z),
        _ => None,
    }
}

pub(super) fn empty(z: &ZSetValue) -> bool {
    z.is_empty()
}

/// The listpack limits (cached in `ServerState::encoding_limits`).
/// The change of ZADD and GEOADD: `f` on the sorted set at `key`, which is created first
/// unless `xx` (then an absent key is left alone). One key lookup either way.
pub(super) fn add_to_zset(ctx: &mut Ctx<'_>, key: &[u8], xx: bool, f: impl FnOnce(&mut ZSetValue)) -> Result<(), CmdError> {
    if xx {
        modify(ctx, key, pick_mut, empty, f)?;
    } else {
        notify_if_new(ctx, key);
        modify_or_create(ctx, key, pick_mut, empty, || Value::ZSet(ZSetValue::default()), f)?;
    }
    Ok(())
}

pub(super) fn limits(ctx: &Ctx<'_>) -> (i64, i64) {
    let l = &ctx.server.settings.encoding_limits;
    (l.zset_entries, l.zset_value)
}

fn parse_score_range(min: &[u8], max: &[u8]) -> Result<ScoreRange, CmdError> {
    ops::parse_score_range(min, max).ok_or_else(|| CmdError::other("ERR min or max is not a float"))
}

fn parse_lex_range(min: &[u8], max: &[u8]) -> Result<LexRange, CmdError> {
    ops::parse_lex_range(min, max).ok_or_else(|| CmdError::other("ERR min or max not valid string range item"))
}

/// Members (and scores) as Redis's range replies send them: flat pairs in RESP2, nested
/// `[member, score]` arrays in RESP3.
pub(super) fn pairs_reply(ctx: &Ctx<'_>, items: Vec<(Bytes, f64)>, withscores: bool) -> Reply {
    if !withscores {
        return Reply::Array(items.into_iter().map(|(m, _)| Reply::Bulk(m)).collect());
    }
    if ctx.resp3() {
        Reply::Array(items.into_iter().map(|(m, s)| Reply::Array(vec![Reply::Bulk(m), Reply::Double(s)])).collect())
    } else {
        Reply::Array(items.into_iter().flat_map(|(m, s)| [Reply::Bulk(m), Reply::Double(s)]).collect())
    }
}

/// Stores a result (or deletes `key` when it is empty) and replies with its size.
pub(super) fn store_result(ctx: &mut Ctx<'_>, key: &[u8], value: ZSetValue, event: &'static str) -> Reply {
    let n = value.len();
    if n > 0 {
        ctx.set_key(key, Value::ZSet(value));
        ctx.dirty(1);
        ctx.notify(notify::ZSET, event, key);
    } else {
        ctx.delete_key(key);
    }
    Reply::Int(n as i64)
}

// ---------------------------------------------------------------------------------------
// ZADD / ZINCRBY

fn zadd_generic(ctx: &mut Ctx<'_>, args: &[Bytes], mut flags: u8) -> Result<Reply, CmdError> {
    let mut idx = 2;
    while idx < args.len() {
        let a = &args[idx];
        let f = if opt_is(a, "nx") {
            NX
        } else if opt_is(a, "xx") {
            XX
        } else if opt_is(a, "ch") {
            CH
        } else if opt_is(a, "incr") {
            INCR
        } else if opt_is(a, "gt") {
            GT
        } else if opt_is(a, "lt") {
            LT
        } else {
            break;
        };
        flags |= f;
        idx += 1;
    }
    let elements = args.len() - idx;
    if elements % 2 == 1 || elements == 0 {
        return Err(CmdError::Syntax);
    }
    let has = |f: u8| flags & f != 0;
    if has(NX) && has(XX) {
        return Err(CmdError::other("ERR XX and NX options at the same time are not compatible"));
    }
    if (has(GT) && has(NX)) || (has(LT) && has(NX)) || (has(GT) && has(LT)) {
        return Err(CmdError::other("ERR GT, LT, and/or NX options at the same time are not compatible"));
    }
    if has(INCR) && elements > 2 {
        return Err(CmdError::other("ERR INCR option supports a single increment-element pair"));
    }
    let mut pairs = Vec::with_capacity(elements / 2);
    for p in args[idx..].chunks(2) {
        pairs.push((parse_f64(&p[0]).ok_or(CmdError::NotFloat)?, &p[1]));
    }
    let key = &args[1];
    let (mut added, mut updated, mut processed, mut last) = (0u64, 0u64, 0u64, 0.0);
    let mut nan = false;
    let lim = limits(ctx);
    add_to_zset(ctx, key, has(XX), |z| {
        for (score, member) in &pairs {
            match zset_add(z, *score, member, flags, lim) {
                AddOut::Nan => {
                    nan = true;
                    return;
                }
                AddOut::Nop => continue,
                AddOut::Added(s) => {
                    added += 1;
                    last = s;
                }
                AddOut::Updated(s) => {
                    updated += 1;
                    last = s;
                }
                AddOut::Unchanged(s) => last = s,
            }
            processed += 1;
        }
    })?;
    ctx.dirty(added + updated);
    if added + updated > 0 {
        ctx.signal_modified(key);
        ctx.notify(notify::ZSET, if has(INCR) { "zincr" } else { "zadd" }, key);
    }
    if nan {
        return Err(CmdError::other("ERR resulting score is not a number (NaN)"));
    }
    if has(INCR) {
        Ok(if processed > 0 { Reply::Double(last) } else { Reply::Nil })
    } else {
        Ok(Reply::Int((if has(CH) { added + updated } else { added }) as i64))
    }
}

/// ```text
/// ZADD key [NX | XX] [GT | LT] [CH] [INCR] score member [score member ...]
/// ```
pub fn zadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    zadd_generic(ctx, args, 0)
}

/// ```text
/// ZINCRBY key increment member
/// ```
pub fn zincrby(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    zadd_generic(ctx, args, INCR)
}

// ---------------------------------------------------------------------------------------
// Single-key reads and removals

/// ```text
/// ZREM key member [member ...]
/// ```
pub fn zrem(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let n = modify(ctx, &args[1], pick_mut, empty, |z| {
        let mut n = 0;
        for m in &args[2..] {
            if z.remove(m).is_some() {
                n += 1;
                if z.is_empty() {
                    break;
                }
            }
        }
        n
    })?
    .unwrap_or(0);
    ctx.dirty(n);
    if n > 0 {
        ctx.signal_modified(&args[1]);
        ctx.notify(notify::ZSET, "zrem", &args[1]);
        notify_del_if_gone(ctx, &args[1]);
    }
    Ok(Reply::Int(n as i64))
}

/// ```text
/// ZCARD key
/// ```
pub fn zcard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(Reply::Int(read(ctx, &args[1], pick)?.map_or(0, |z| z.len() as i64)))
}

/// ```text
/// ZCOUNT key min max
/// ```
pub fn zcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let r = parse_score_range(&args[2], &args[3])?;
    let Some(z) = read(ctx, &args[1], pick)? else {
        return Ok(Reply::Int(0));
    };
    Ok(Reply::Int(ops::count_by_ranks(z.len(), z.first_in_score(&r), z.last_in_score(&r))))
}

/// ```text
/// ZLEXCOUNT key min max
/// ```
pub fn zlexcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let r = parse_lex_range(&args[2], &args[3])?;
    let Some(z) = read(ctx, &args[1], pick)? else {
        return Ok(Reply::Int(0));
    };
    if !z.is_listpack() {
        return Ok(Reply::Int(ops::count_by_ranks(z.len(), z.first_in_lex(&r), z.last_in_lex(&r))));
    }
    // The listpack walk: from the first element in range while the maximum holds.
    let mut count = 0;
    let mut cur = z.first_in_lex(&r).map(|(_, id)| id);
    while let Some(id) = cur {
        if !r.lte_max(z.get(id).0) {
            break;
        }
        count += 1;
        cur = z.next(id);
    }
    Ok(Reply::Int(count))
}

/// ```text
/// ZSCORE key member
/// ```
pub fn zscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(read(ctx, &args[1], pick)?.and_then(|z| z.score(&args[2])).map_or(Reply::Nil, Reply::Double))
}

/// ```text
/// ZMSCORE key member [member ...]
/// ```
pub fn zmscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let z = read(ctx, &args[1], pick)?;
    Ok(Reply::Array(args[2..].iter().map(|m| z.and_then(|z| z.score(m)).map_or(Reply::Nil, Reply::Double)).collect()))
}

fn rank_generic(ctx: &mut Ctx<'_>, args: &[Bytes], rev: bool) -> Result<Reply, CmdError> {
    let Some(z) = read(ctx, &args[1], pick)? else {
        return Ok(Reply::Nil);
    };
    Ok(z.rank(&args[2]).map_or(Reply::Nil, |r| Reply::Int(if rev { z.len() - 1 - r } else { r } as i64)))
}

/// ```text
/// ZRANK key member
/// ```
pub fn zrank(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    rank_generic(ctx, args, false)
}

/// ```text
/// ZREVRANK key member
/// ```
pub fn zrevrank(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    rank_generic(ctx, args, true)
}

// ---------------------------------------------------------------------------------------
// Ranges

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Rank,
    Score,
    Lex,
}

/// Redis's `zrangeGenericCommand`.
fn range_generic(
    ctx: &mut Ctx<'_>,
    args: &[Bytes],
    first: usize,
    store: bool,
    kind: Option<Kind>,
    rev: Option<bool>,
) -> Result<Reply, CmdError> {
    let (mut kind, mut rev) = (kind, rev);
    let (mut withscores, mut offset, mut limit) = (false, 0i64, -1i64);
    let mut j = first + 3;
    while j < args.len() {
        let left = args.len() - j - 1;
        let a = &args[j];
        if !store && opt_is(a, "withscores") {
            withscores = true;
        } else if opt_is(a, "limit") && left >= 2 {
            offset = arg_i64(&args[j + 1])?;
            limit = arg_i64(&args[j + 2])?;
            j += 2;
        } else if rev.is_none() && opt_is(a, "rev") {
            rev = Some(true);
        } else if kind.is_none() && opt_is(a, "bylex") {
            kind = Some(Kind::Lex);
        } else if kind.is_none() && opt_is(a, "byscore") {
            kind = Some(Kind::Score);
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    let rev = rev.unwrap_or(false);
    let kind = kind.unwrap_or(Kind::Rank);
    if limit != -1 && kind == Kind::Rank {
        return Err(CmdError::other("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"));
    }
    if withscores && kind == Kind::Lex {
        return Err(CmdError::other("ERR syntax error, WITHSCORES not supported in combination with BYLEX"));
    }
    let (mut lo, mut hi) = (&args[first + 1], &args[first + 2]);
    if rev && kind != Kind::Rank {
        std::mem::swap(&mut lo, &mut hi);
    }
    let spec = match kind {
        Kind::Rank => Spec::Rank(arg_i64(lo)?, arg_i64(hi)?),
        Kind::Score => Spec::Score(parse_score_range(lo, hi)?),
        Kind::Lex => Spec::Lex(parse_lex_range(lo, hi)?),
    };
    let items = match read(ctx, &args[first], pick)? {
        Some(z) => ops::collect_range(z, &spec, rev, offset, limit),
        None => Vec::new(),
    };
    if store {
        let lim = limits(ctx);
        // Sized up front as Redis's zsetTypeCreate(length, 0): a result past the listpack
        // limit is a skiplist from its first member, so a -0 score stays -0 (a listpack
        // keeps it as 0).
        let mut dst = if items.len() as i64 > lim.0 { ZSetValue::new_skiplist() } else { ZSetValue::new() };
        for (m, s) in &items {
            dst.insert(m, *s, lim.0, lim.1);
        }
        return Ok(store_result(ctx, &args[1], dst, "zrangestore"));
    }
    Ok(pairs_reply(ctx, items, withscores))
}

/// ```text
/// ZRANGE key start stop [BYSCORE | BYLEX] [REV] [LIMIT offset count] [WITHSCORES]
/// ```
pub fn zrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    range_generic(ctx, args, 1, false, None, None)
}

/// ```text
/// ZRANGESTORE dst src min max [BYSCORE | BYLEX] [REV] [LIMIT offset count]
/// ```
pub fn zrangestore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    range_generic(ctx, args, 2, true, None, None)
}

/// ```text
/// ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]
/// ```
pub fn zrangebyscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    range_generic(ctx, args, 1, false, Some(Kind::Score), Some(false))
}

/// ```text
/// ZREVRANGEBYSCORE key max min [WITHSCORES] [LIMIT offset count]
/// ```
pub fn zrevrangebyscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    range_generic(ctx, args, 1, false, Some(Kind::Score), Some(true))
}

/// ```text
/// ZRANGEBYLEX key min max [LIMIT offset count]
/// ```
pub fn zrangebylex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    range_generic(ctx, args, 1, false, Some(Kind::Lex), Some(false))
}

/// ```text
/// ZREVRANGEBYLEX key max min [LIMIT offset count]
/// ```
pub fn zrevrangebylex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    range_generic(ctx, args, 1, false, Some(Kind::Lex), Some(true))
}

/// Redis's `zremrangeGenericCommand`.
fn remrange_generic(ctx: &mut Ctx<'_>, args: &[Bytes], kind: Kind) -> Result<Reply, CmdError> {
    let spec = match kind {
        Kind::Rank => Spec::Rank(arg_i64(&args[2])?, arg_i64(&args[3])?),
        Kind::Score => Spec::Score(parse_score_range(&args[2], &args[3])?),
        Kind::Lex => Spec::Lex(parse_lex_range(&args[2], &args[3])?),
    };
    let n = modify(ctx, &args[1], pick_mut, empty, |z| {
        let doomed: Vec<Bytes> = match &spec {
            Spec::Rank(..) => ops::collect_range(z, &spec, false, 0, -1).into_iter().map(|(m, _)| m).collect(),
            Spec::Score(r) => {
                let mut v = Vec::new();
                let mut cur = z.first_in_score(r).map(|(_, id)| id);
                while let Some(id) = cur.filter(|&id| r.lte_max(z.get(id).1)) {
                    v.push(Bytes::copy_from_slice(z.get(id).0));
                    cur = z.next(id);
                }
                v
            }
            Spec::Lex(r) => {
                let mut v = Vec::new();
                let mut cur = z.first_in_lex(r).map(|(_, id)| id);
                while let Some(id) = cur.filter(|&id| r.lte_max(z.get(id).0)) {
                    v.push(Bytes::copy_from_slice(z.get(id).0));
                    cur = z.next(id);
                }
                v
            }
        };
        for m in &doomed {
            z.remove(m);
        }
        doomed.len() as u64
    })?
    .unwrap_or(0);
    ctx.dirty(n);
    if n > 0 {
        ctx.signal_modified(&args[1]);
        let event = match kind {
            Kind::Rank => "zremrangebyrank",
            Kind::Score => "zremrangebyscore",
            Kind::Lex => "zremrangebylex",
        };
        ctx.notify(notify::ZSET, event, &args[1]);
        notify_del_if_gone(ctx, &args[1]);
    }
    Ok(Reply::Int(n as i64))
}

/// ```text
/// ZREMRANGEBYRANK key start stop
/// ```
pub fn zremrangebyrank(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    remrange_generic(ctx, args, Kind::Rank)
}

/// ```text
/// ZREMRANGEBYSCORE key min max
/// ```
pub fn zremrangebyscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    remrange_generic(ctx, args, Kind::Score)
}

/// ```text
/// ZREMRANGEBYLEX key min max
/// ```
pub fn zremrangebylex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    remrange_generic(ctx, args, Kind::Lex)
}

// ---------------------------------------------------------------------------------------
// ZRANDMEMBER

/// ```text
/// ZRANDMEMBER key [count [WITHSCORES]]
/// ```
pub fn zrandmember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    if args.len() < 3 {
        let z = match ctx.ks.get(db, &args[1], now) {
            None => return Ok(Reply::Nil),
            Some(e) => pick(&e.value).ok_or(CmdError::WrongType)?,
        };
        let i = (ctx.server.random() % z.len().max(1) as u64) as usize;
        return Ok(z.entry_at(i).map_or(Reply::Nil, |(m, _)| Reply::Bulk(Bytes::copy_from_slice(m))));
    }
    let l = arg_i64(&args[2])?;
    if l == i64::MIN {
        return Err(CmdError::other("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"));
    }
    if args.len() > 4 || (args.len() == 4 && !opt_is(&args[3], "withscores")) {
        return Err(CmdError::Syntax);
    }
    let withscores = args.len() == 4;
    if withscores && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&l) {
        return Err(CmdError::other("ERR value is out of range"));
    }
    let z = match ctx.ks.get(db, &args[1], now) {
        None => return Ok(Reply::Array(Vec::new())),
        Some(e) => pick(&e.value).ok_or(CmdError::WrongType)?,
    };
    let (count, uniq) = (l.unsigned_abs(), l >= 0);
    super::hashes::check_draws(count, uniq)?;
    let count = count as usize;
    let mut rng = || ctx.server.random();
    let items = ops::random_members(z, count, uniq, &mut rng);
    Ok(pairs_reply(ctx, items, withscores))
}

/// ```text
/// ZSCAN key cursor [MATCH pattern] [COUNT count]
/// ```
pub fn zscan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let mut cursor = ops::parse_cursor(&args[2]).ok_or_else(|| CmdError::other("ERR invalid cursor"))?;
    let scan_reply = |cursor: u64, items: Vec<Reply>| Reply::Array(vec![Reply::bulk_string(cursor.to_string()), Reply::Array(items)]);
    let Some(z) = read(ctx, &args[1], pick)? else {
        return Ok(scan_reply(0, Vec::new()));
    };
    let mut count: i64 = 10;
    let mut pattern: Option<&[u8]> = None;
    let mut i = 3;
    while i < args.len() {
        let more = args.len() - i;
        if opt_is(&args[i], "count") && more >= 2 {
            count = arg_i64(&args[i + 1])?;
            if count < 1 {
                return Err(CmdError::Syntax);
            }
        } else if opt_is(&args[i], "match") && more >= 2 {
            pattern = (&args[i + 1][..] != b"*").then_some(&args[i + 1][..]);
        } else {
            return Err(CmdError::Syntax);
        }
        i += 2;
    }
    let mut found: Vec<(Bytes, f64)> = Vec::new();
    // Like Redis: at most COUNT*10 more buckets after the first, until COUNT entries (a
    // member and its score count as two); a packed set comes whole in one step.
    let mut budget = count.saturating_mul(10);
    loop {
        cursor = z.scan_step(cursor, |m, s| found.push((Bytes::copy_from_slice(m), s)));
        if cursor == 0 || budget == 0 || (found.len() as i64).saturating_mul(2) >= count {
            break;
        }
        budget -= 1;
    }
    let items = found
        .into_iter()
        .filter(|(m, _)| pattern.is_none_or(|p| crate::glob::glob_match(p, m, false)))
        .flat_map(|(m, s)| [Reply::Bulk(m), Reply::bulk_string(format_double(s))])
        .collect();
    Ok(scan_reply(cursor, items))
}

// ---------------------------------------------------------------------------------------
// ZREVRANGE, ZINTERCARD

/// ```text
/// ZREVRANGE key start stop [WITHSCORES]
/// ```
pub fn zrevrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    range_generic(ctx, args, 1, false, Some(Kind::Rank), Some(true))
}

/// ```text
/// ZINTERCARD numkeys key [key ...] [LIMIT limit]
/// ```
pub fn zintercard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let setnum = arg_i64(&args[1])?;
    if setnum < 1 {
        return Err(CmdError::other("ERR at least 1 input key is needed for 'zintercard' command"));
    }
    if setnum > (args.len() - 2) as i64 {
        return Err(CmdError::Syntax);
    }
    let setnum = setnum as usize;
    let keys = &args[2..2 + setnum];
    let (db, now) = (ctx.db(), ctx.now_ms);
    for key in keys {
        match ctx.ks.get(db, key, now).map(|e| &e.value) {
            None | Some(Value::ZSet(_) | Value::Set(_)) => {}
            Some(_) => return Err(CmdError::WrongType),
        }
    }
    let mut limit = 0u64;
    let mut j = 2 + setnum;
    while j < args.len() {
        if args.len() - j >= 2 && opt_is(&args[j], "limit") {
            limit = crate::util::parse_i64(&args[j + 1])
                .filter(|&n| n >= 0)
                .ok_or_else(|| CmdError::other("ERR LIMIT can't be negative"))? as u64;
            j += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let dbref = ctx.ks.db(db);
    let mut srcs: Vec<Src<'_>> = keys
        .iter()
        .map(|k| match dbref.peek(k).map(|e| &e.value) {
            Some(Value::ZSet(z)) => Src::Z(z),
            Some(Value::Set(s)) => Src::S(s),
            _ => Src::Missing,
        })
        .collect();
    srcs.sort_by_key(|s| s.len());
    let contains = |src: &Src<'_>, m: &[u8]| match src {
        Src::Missing => false,
        Src::Z(z) => z.score(m).is_some(),
        Src::S(s) => s.contains(m),
    };
    let mut card = 0u64;
    let mut visit = |m: &[u8]| {
        if srcs[1..].iter().all(|src| contains(src, m)) {
            card += 1;
        }
        limit == 0 || card < limit
    };
    match &srcs[0] {
        Src::Missing => {}
        Src::Z(z) => {
            for (m, _) in z.iter() {
                if !visit(m) {
                    break;
                }
            }
        }
        Src::S(s) => {
            for m in s.iter() {
                if !visit(m) {
                    break;
                }
            }
        }
    }
    Ok(Reply::Int(card as i64))
}
