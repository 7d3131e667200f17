//! The stream commands on entries: XADD, XRANGE, XREVRANGE, XLEN, XDEL, XTRIM, XSETID
//! (Redis 7.0's t_stream.c), and what the other stream files share: the type pickers, ID
//! arguments and entry replies.

use bytes::Bytes;

use super::access::{modify, modify_or_create, read};
use super::effects::arg;
use super::{CmdError, Ctx};
use crate::db::stream::{parse_id, StreamId, StreamValue, Trim};
use crate::db::Value;
use crate::notify;
use crate::protocol::Reply;
use crate::util::{cstr, opt_is, parse_i64};

pub(super) fn pick(v: &Value) -> Option<&StreamValue> {
    match v {
        Value::Stream(s) => Some(s),
        _ => None,
    }
}

pub(super) fn pick_mut(v: &mut Value) -> Option<&mut StreamValue> {
    match v {
        Value::Stream(s) => Some(s),
        _ => None,
    }
}

/// A stream is never deleted for being empty.
pub(super) fn never_empty(_: &StreamValue) -> bool {
    false
}

pub(super) fn new_stream() -> Value {
    Value::Stream(Box::default())
}

/// The time consumers and pending entries record: the command's, except while the log is
/// replayed with the clock at zero (so nothing expires): then the wall clock, as a Redis
/// replica stamps what it applies with its own time (the logged XCLAIMs carry their TIME).
pub(super) fn wall_ms(ctx: &Ctx<'_>) -> i64 {
    if ctx.now_ms == 0 {
        crate::clock::now_ms()
    } else {
        ctx.now_ms
    }
}

pub(super) fn invalid_id() -> CmdError {
    CmdError::other("ERR Invalid stream ID specified as stream command argument")
}

/// An ID where `-` and `+` are refused (`streamParseStrictIDOrReply`).
pub(super) fn strict_id(a: &[u8]) -> Result<StreamId, CmdError> {
    parse_id(a, 0, true, false).map(|(id, _)| id).ok_or_else(invalid_id)
}

/// An ID where `-` and `+` mean the extremes (`streamParseIDOrReply`).
pub(super) fn loose_id(a: &[u8], missing_seq: u64) -> Result<StreamId, CmdError> {
    parse_id(a, missing_seq, false, false).map(|(id, _)| id).ok_or_else(invalid_id)
}

/// A range bound (`streamParseIntervalIDOrReply`): `(` makes it exclusive, and the ID is
/// then moved by one (an error past the extremes, as Redis words it).
pub(super) fn range_bound(a: &[u8], start: bool) -> Result<StreamId, CmdError> {
    let missing = if start { 0 } else { u64::MAX };
    if a.len() > 1 && a[0] == b'(' {
        let id = parse_id(&a[1..], missing, true, false).map(|(id, _)| id).ok_or_else(invalid_id)?;
        let moved = if start { id.incr() } else { id.decr() };
        return moved.ok_or_else(|| {
            CmdError::other(if start { "ERR invalid start ID for the interval" } else { "ERR invalid end ID for the interval" })
        });
    }
    loose_id(a, missing)
}

pub(super) fn id_reply(id: StreamId) -> Reply {
    Reply::Bulk(id.to_bytes())
}

/// One entry as Redis replies it: `[id, [field, value, ...]]`.
pub(super) fn entry_reply(id: StreamId, fields: Vec<(Bytes, Bytes)>) -> Reply {
    let flat = fields.into_iter().flat_map(|(f, v)| [Reply::Bulk(f), Reply::Bulk(v)]).collect();
    Reply::Array(vec![id_reply(id), Reply::Array(flat)])
}

pub(super) fn entries_reply(entries: Vec<(StreamId, Vec<(Bytes, Bytes)>)>) -> Reply {
    Reply::Array(entries.into_iter().map(|(id, f)| entry_reply(id, f)).collect())
}

/// The trimming options of XADD and XTRIM (`streamAddTrimArgs`), with the positions a logged
/// form rewrites.
#[derive(Default)]
struct TrimArgs {
    how: Option<Trim>,
    approx: bool,
    limit: i64,
    /// The index of the MAXLEN/MINID value, of LIMIT, and (XADD) of the ID.
    value_at: usize,
    limit_at: Option<usize>,
    id_at: usize,
    /// XADD's ID: `None` for `*`; with whether its sequence was given.
    id: Option<(StreamId, bool)>,
    no_mkstream: bool,
}

/// Redis's `streamParseAddOrTrimArgsOrReply`.
fn parse_trim_args(ctx: &Ctx<'_>, args: &[Bytes], xadd: bool) -> Result<TrimArgs, CmdError> {
    let mut t = TrimArgs::default();
    let mut limit_given = false;
    let mut i = 2;
    while i < args.len() {
        let moreargs = args.len() - 1 - i;
        let opt = &args[i];
        if xadd && cstr(opt) == b"*" {
            break;
        } else if (opt_is(opt, "maxlen") || opt_is(opt, "minid")) && moreargs > 0 {
            if t.how.is_some() {
                return Err(CmdError::other("ERR syntax error, MAXLEN and MINID options at the same time are not compatible"));
            }
            let maxlen = opt_is(opt, "maxlen");
            t.approx = false;
            let next = cstr(&args[i + 1]);
            if moreargs >= 2 && next == b"~" {
                t.approx = true;
                i += 1;
            } else if moreargs >= 2 && next == b"=" {
                i += 1;
            }
            let value = &args[i + 1];
            t.how = Some(if maxlen {
                let n = parse_i64(value).ok_or(CmdError::NotInteger)?;
                if n < 0 {
                    return Err(CmdError::other("ERR The MAXLEN argument must be >= 0."));
                }
                Trim::MaxLen(n as u64)
            } else {
                Trim::MinId(strict_id(value)?)
            });
            i += 1;
            t.value_at = i;
        } else if opt_is(opt, "limit") && moreargs > 0 {
            t.limit = parse_i64(&args[i + 1]).ok_or(CmdError::NotInteger)?;
            if t.limit < 0 {
                return Err(CmdError::other("ERR The LIMIT argument must be >= 0."));
            }
            limit_given = true;
            t.limit_at = Some(i);
            i += 1;
        } else if xadd && opt_is(opt, "nomkstream") {
            t.no_mkstream = true;
        } else if xadd {
            let (id, seq_given) = parse_id(opt, 0, true, true).ok_or_else(invalid_id)?;
            t.id = Some((id, seq_given));
            break;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    t.id_at = i;
    if t.limit != 0 && t.how.is_none() {
        return Err(CmdError::other("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"));
    }
    if !xadd && t.how.is_none() {
        return Err(CmdError::other("ERR syntax error, XTRIM must be called with a trimming strategy"));
    }
    if limit_given {
        if !t.approx {
            return Err(CmdError::other("ERR syntax error, LIMIT cannot be used without the special ~ option"));
        }
    } else if t.approx {
        // At most 100 nodes' worth of work, as Redis bounds it.
        let per_node = ctx.server.settings.encoding_limits.stream.max_entries as i64;
        t.limit = per_node.saturating_mul(100);
        if t.limit <= 0 {
            t.limit = 10000;
        }
        t.limit = t.limit.min(1_000_000);
    } else {
        t.limit = 0;
    }
    Ok(t)
}

/// The logged form of an approximate trim (`streamRewriteTrimArgument`): `~` becomes `=`
/// with the length (or first ID) the trim left, and LIMIT goes, so replay trims exactly
/// what happened here.
fn rewrite_trim(argv: &mut Vec<Bytes>, t: &TrimArgs, s: &StreamValue) {
    let Some(how) = t.how else { return };
    if !t.approx {
        return;
    }
    argv[t.value_at - 1] = arg("=");
    argv[t.value_at] = match how {
        Trim::MaxLen(_) => arg(&s.len().to_string()),
        Trim::MinId(_) => s.first_id_with_tombstones().to_bytes(),
    };
    if let Some(at) = t.limit_at {
        argv.drain(at..at + 2);
    }
}

/// ```text
/// XADD key [NOMKSTREAM] [<MAXLEN | MINID> [= | ~] threshold [LIMIT count]] <* | id>
///     field value [field value ...]
/// ```
pub fn xadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let t = parse_trim_args(ctx, args, true)?;
    let fields_at = t.id_at + 1;
    if args.len() < fields_at + 2 || (args.len() - fields_at) % 2 == 1 {
        return Err(CmdError::other("ERR wrong number of arguments for 'xadd' command"));
    }
    if let Some((id, true)) = t.id {
        if id.is_zero() {
            return Err(CmdError::other("ERR The ID specified in XADD must be greater than 0-0"));
        }
    }
    let key = &args[1];
    let now = ctx.now_ms;
    if !t.no_mkstream {
        super::keys::notify_if_new(ctx, key);
    }
    let limits = ctx.server.settings.encoding_limits.stream;
    let pairs = &args[fields_at..];
    let total: u64 = pairs.iter().map(|p| p.len() as u64).sum();
    // One lookup: the type check and the change (NOMKSTREAM: absent is a nil reply).
    let add = |s: &mut StreamValue| {
        if s.last_id == StreamId::MAX {
            return Err(CmdError::other("ERR The stream has exhausted the last possible ID, unable to add more items"));
        }
        let id = match t.id {
            Some((id, true)) => id,
            Some((id, false)) if s.last_id.ms == id.ms => {
                if s.last_id.seq == u64::MAX {
                    return Err(too_small());
                }
                StreamId::new(id.ms, s.last_id.seq + 1)
            }
            Some((id, false)) => id,
            None if (now as u64) > s.last_id.ms => StreamId::new(now as u64, 0),
            None => s.last_id.incr().unwrap_or(StreamId::MIN),
        };
        if id <= s.last_id {
            return Err(too_small());
        }
        if total > crate::db::stream::LISTPACK_MAX {
            return Err(CmdError::other("ERR Elements are too large to be stored"));
        }
        s.append(id, pairs, limits);
        let id_text = id.to_bytes();
        let trimmed = t.how.map_or(0, |how| s.trim(how, t.approx, t.limit as u64));
        let mut logged = None;
        if t.approx || t.id.is_none_or(|(_, seq_given)| !seq_given) {
            let mut argv = args.to_vec();
            argv[t.id_at] = id_text.clone();
            rewrite_trim(&mut argv, &t, s);
            logged = Some(argv);
        }
        Ok((id_text, trimmed, logged))
    };
    let added = match t.no_mkstream {
        true => match modify(ctx, key, pick_mut, never_empty, add)? {
            Some(r) => r,
            None => return Ok(Reply::Nil),
        },
        false => modify_or_create(ctx, key, pick_mut, never_empty, new_stream, add)?,
    };
    let (id_text, trimmed, logged) = added?;
    ctx.signal_modified(key);
    ctx.notify(notify::STREAM, "xadd", key);
    ctx.dirty(1);
    if trimmed > 0 {
        ctx.notify(notify::STREAM, "xtrim", key);
    }
    if let Some(argv) = logged {
        ctx.log_as_one(argv);
    }
    ctx.signal_ready(key);
    Ok(Reply::Bulk(id_text))
}

fn too_small() -> CmdError {
    CmdError::other("ERR The ID specified in XADD is equal or smaller than the target stream top item")
}

fn range_generic(ctx: &mut Ctx<'_>, args: &[Bytes], rev: bool) -> Result<Reply, CmdError> {
    let (start_arg, end_arg) = if rev { (&args[3], &args[2]) } else { (&args[2], &args[3]) };
    let start = range_bound(start_arg, true)?;
    let end = range_bound(end_arg, false)?;
    let mut count: i64 = -1;
    let mut j = 4;
    while j < args.len() {
        if opt_is(&args[j], "count") && j + 1 < args.len() {
            count = parse_i64(&args[j + 1]).ok_or(CmdError::NotInteger)?.max(0);
            j += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let Some(s) = read(ctx, &args[1], pick)? else { return Ok(Reply::Array(Vec::new())) };
    if count == 0 {
        return Ok(Reply::NilArray);
    }
    Ok(entries_reply(s.range(start, end, rev, count.max(0) as usize)))
}

/// ```text
/// XRANGE key start end [COUNT count]
/// ```
pub fn xrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    range_generic(ctx, args, false)
}

/// ```text
/// XREVRANGE key end start [COUNT count]
/// ```
pub fn xrevrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    range_generic(ctx, args, true)
}

/// ```text
/// XLEN key
/// ```
pub fn xlen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(Reply::Int(read(ctx, &args[1], pick)?.map_or(0, |s| s.len() as i64)))
}

/// ```text
/// XDEL key id [id ...]
/// ```
pub fn xdel(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let key = &args[1];
    let (db, now) = (ctx.db(), ctx.now_ms);
    match ctx.ks.get(db, key, now) {
        None => return Ok(Reply::Int(0)),
        Some(e) if pick(&e.value).is_none() => return Err(CmdError::WrongType),
        Some(_) => {}
    }
    let ids = args[2..].iter().map(|a| strict_id(a)).collect::<Result<Vec<_>, _>>()?;
    let deleted = modify(ctx, key, pick_mut, never_empty, |s| {
        let mut deleted = 0u64;
        let mut first_gone = false;
        for id in ids {
            if s.delete(id) {
                first_gone |= id == s.first_id;
                if id > s.max_deleted_id {
                    s.max_deleted_id = id;
                }
                deleted += 1;
            }
        }
        if deleted > 0 {
            if s.is_empty() {
                s.first_id = StreamId::MIN;
            } else if first_gone {
                s.first_id = s.edge_id(true).unwrap_or(StreamId::MIN);
            }
        }
        deleted
    })?
    .unwrap_or(0);
    if deleted > 0 {
        ctx.signal_modified(key);
        ctx.notify(notify::STREAM, "xdel", key);
        ctx.dirty(deleted);
    }
    Ok(Reply::Int(deleted as i64))
}

/// ```text
/// XTRIM key <MAXLEN | MINID> [= | ~] threshold [LIMIT count]
/// ```
pub fn xtrim(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let t = parse_trim_args(ctx, args, false)?;
    let key = &args[1];
    let Some(how) = t.how else { return Err(CmdError::Syntax) };
    let (deleted, logged) = match modify(ctx, key, pick_mut, never_empty, |s| {
        let deleted = s.trim(how, t.approx, t.limit as u64);
        let mut argv = args.to_vec();
        rewrite_trim(&mut argv, &t, s);
        (deleted, argv)
    })? {
        Some(r) => r,
        None => return Ok(Reply::Int(0)),
    };
    if deleted > 0 {
        ctx.notify(notify::STREAM, "xtrim", key);
        if t.approx {
            ctx.log_as_one(logged);
        }
        ctx.signal_modified(key);
        ctx.dirty(deleted);
    }
    Ok(Reply::Int(deleted as i64))
}

/// ```text
/// XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]
/// ```
pub fn xsetid(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let id = strict_id(&args[2])?;
    let mut entries_added: i64 = -1;
    let mut max_deleted = StreamId::MIN;
    let mut i = 3;
    while i < args.len() {
        let moreargs = args.len() - 1 - i;
        if opt_is(&args[i], "entriesadded") && moreargs > 0 {
            entries_added = parse_i64(&args[i + 1]).ok_or(CmdError::NotInteger)?;
            if entries_added < 0 {
                return Err(CmdError::other("ERR entries_added must be positive"));
            }
        } else if opt_is(&args[i], "maxdeletedid") && moreargs > 0 {
            max_deleted = strict_id(&args[i + 1])?;
            if id < max_deleted {
                return Err(CmdError::other("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"));
            }
        } else {
            return Err(CmdError::Syntax);
        }
        i += 2;
    }
    let key = &args[1];
    let set = modify(ctx, key, pick_mut, never_empty, |s| {
        if !s.is_empty() {
            let top = s.edge_id(false).unwrap_or(StreamId::MIN);
            if id < top {
                return Err(CmdError::other("ERR The ID specified in XSETID is smaller than the target stream top item"));
            }
            if entries_added != -1 && s.len() > entries_added as u64 {
                return Err(CmdError::other("ERR The entries_added specified in XSETID is smaller than the target stream length"));
            }
        }
        s.last_id = id;
        if entries_added != -1 {
            s.entries_added = entries_added as u64;
        }
        if !max_deleted.is_zero() {
            s.max_deleted_id = max_deleted;
        }
        Ok(())
    })?;
    match set {
        None => Err(CmdError::NoSuchKey),
        Some(r) => {
            r?;
            ctx.dirty(1);
            ctx.notify(notify::STREAM, "xsetid", key);
            Ok(Reply::OK)
        }
    }
}
