//! XREAD and XREADGROUP (Redis 7.0's `xreadCommand`), and their blocking forms: a client
//! with nothing to read parks on the streams' keys; when one of them is ready the command
//! runs again, served from that key only (`Client::serving`), as Redis's
//! `serveClientsBlockedOnStreamKey` does. XREADGROUP states its logged form: what it changed
//! in the group, as Redis propagates it (XCLAIM per delivered entry, XGROUP SETID for the
//! group's last ID and read counter, XGROUP CREATECONSUMER).

use bytes::Bytes;

use super::access::{modify, read};
use super::effects::arg;
use super::streams::{entry_reply, invalid_id, never_empty, pick, pick_mut, strict_id};
use super::{BlockKind, BlockRequest, CmdError, Ctx, Next};
use crate::db::stream::{StreamId, StreamValue};
use crate::notify;
use crate::protocol::Reply;
use crate::util::{cstr, opt_is, parse_i64};

/// What a blocked XREAD is served at most when it gave no COUNT.
const BLOCKED_DEFAULT_COUNT: usize = 1000;

struct ReadArgs {
    /// Absolute deadline: `Some(None)` blocks forever, `None` does not block.
    block: Option<Option<i64>>,
    count: usize,
    streams_at: usize,
    n: usize,
    group: Option<(Bytes, Bytes)>,
    noack: bool,
}

fn parse(ctx: &Ctx<'_>, args: &[Bytes], group_cmd: bool) -> Result<ReadArgs, CmdError> {
    let mut r = ReadArgs { block: None, count: 0, streams_at: 0, n: 0, group: None, noack: false };
    let mut i = 1;
    while i < args.len() {
        let moreargs = args.len() - i - 1;
        let o = &args[i];
        if opt_is(o, "block") && moreargs > 0 {
            if ctx.client.in_script {
                let name = String::from_utf8_lossy(cstr(&args[0])).into_owned();
                return Err(CmdError::other(format!("ERR {name} command is not allowed with BLOCK option from scripts")));
            }
            i += 1;
            let ms = parse_i64(&args[i]).ok_or_else(|| CmdError::other("ERR timeout is not an integer or out of range"))?;
            if ms < 0 {
                return Err(CmdError::other("ERR timeout is negative"));
            }
            r.block = Some(if ms == 0 { None } else { Some(ms.saturating_add(ctx.now_ms)) });
        } else if opt_is(o, "count") && moreargs > 0 {
            i += 1;
            r.count = parse_i64(&args[i]).ok_or(CmdError::NotInteger)?.max(0) as usize;
        } else if opt_is(o, "streams") && moreargs > 0 {
            r.streams_at = i + 1;
            let n = args.len() - r.streams_at;
            if !n.is_multiple_of(2) {
                return Err(CmdError::other("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."));
            }
            r.n = n / 2;
            break;
        } else if opt_is(o, "group") && moreargs >= 2 {
            if !group_cmd {
                return Err(CmdError::other("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."));
            }
            r.group = Some((args[i + 1].clone(), args[i + 2].clone()));
            i += 2;
        } else if opt_is(o, "noack") {
            if !group_cmd {
                return Err(CmdError::other("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."));
            }
            r.noack = true;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    if r.streams_at == 0 {
        return Err(CmdError::Syntax);
    }
    if group_cmd && r.group.is_none() {
        return Err(CmdError::other("ERR Missing GROUP option for XREADGROUP"));
    }
    Ok(r)
}

/// The reply of the streams served: `[[key, entries]...]`, a map in RESP3.
fn streams_reply(ctx: &Ctx<'_>, served: Vec<(Bytes, Reply)>) -> Reply {
    if ctx.resp3() {
        Reply::Map(served.into_iter().map(|(k, e)| (Reply::Bulk(k), e)).collect())
    } else {
        Reply::Array(served.into_iter().map(|(k, e)| Reply::Array(vec![Reply::Bulk(k), e])).collect())
    }
}

/// ```text
/// XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]
/// ```
pub fn xread(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    read_generic(ctx, args, false)
}

/// ```text
/// XREADGROUP GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK]
///     STREAMS key [key ...] id [id ...]
/// ```
pub fn xreadgroup(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    read_generic(ctx, args, true)
}

fn read_generic(ctx: &mut Ctx<'_>, args: &[Bytes], group_cmd: bool) -> Result<Reply, CmdError> {
    let r = parse(ctx, args, group_cmd)?;
    if let Some(key) = ctx.client.serving.clone() {
        return serve_blocked(ctx, args, &r, &key);
    }
    let keys = &args[r.streams_at..r.streams_at + r.n];
    let id_args = &args[r.streams_at + r.n..];
    // Resolve every ID first (the key's type, the group, `$` and `>`), in argument order.
    let mut ids = Vec::with_capacity(r.n);
    for (key, id_arg) in keys.iter().zip(id_args) {
        let s = read(ctx, key, pick)?;
        if let Some((group, _)) = &r.group {
            if s.is_none_or(|s| !s.groups.contains_key(group)) {
                return Err(CmdError::other(format!(
                    "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
                    crate::spec::c_string_prefix(key, usize::MAX),
                    crate::spec::c_string_prefix(group, usize::MAX)
                )));
            }
        }
        let id = match cstr(id_arg) {
            b"$" if group_cmd => {
                return Err(CmdError::other(
                    "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.",
                ))
            }
            b"$" => s.map_or(StreamId::MIN, |s| s.last_id),
            b">" if !group_cmd => {
                return Err(CmdError::other(
                    "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
                ))
            }
            b">" => StreamId::MAX,
            _ => strict_id(id_arg)?,
        };
        ids.push(id);
    }
    let mut served = Vec::new();
    let mut logged = Vec::new();
    for (key, &gt) in keys.iter().zip(&ids) {
        let Some(s) = read(ctx, key, pick)? else { continue };
        match &r.group {
            Some((group, consumer)) => {
                let history = gt != StreamId::MAX;
                let group_last = s.groups.get(group).map_or(StreamId::MIN, |g| g.last_id);
                let newer = !s.is_empty() && s.edge_id(false).is_some_and(|top| top > group_last);
                if !history && !newer {
                    continue;
                }
                let from = if history { gt } else { group_last };
                let start = from.incr().unwrap_or(StreamId::MIN);
                let entries = deliver(ctx, key, group, consumer, start, r.count, history, r.noack, &mut logged)?;
                ctx.dirty(1);
                served.push((key.clone(), entries));
            }
            None => {
                if s.is_empty() || s.edge_id(false).is_none_or(|top| top <= gt) {
                    continue;
                }
                let start = gt.incr().unwrap_or(StreamId::MIN);
                let entries = super::streams::entries_reply(s.range(start, StreamId::MAX, false, r.count));
                served.push((key.clone(), entries));
            }
        }
    }
    if group_cmd {
        ctx.log_as(logged);
    }
    if !served.is_empty() {
        return Ok(streams_reply(ctx, served));
    }
    let Some(deadline_ms) = r.block else { return Ok(Reply::NilArray) };
    // `$` is what the stream's last ID was now: the command runs again with that ID.
    let mut rerun = args.to_vec();
    for (j, id) in ids.iter().enumerate() {
        if !group_cmd {
            rerun[r.streams_at + r.n + j] = id.to_bytes();
        }
    }
    ctx.then(Next::Block(Box::new(BlockRequest {
        kind: if group_cmd { BlockKind::StreamGroup } else { BlockKind::Stream },
        keys: keys.to_vec(),
        deadline_ms,
        timeout_reply: Reply::NilArray,
        rerun: Some(rerun),
    })));
    Ok(Reply::NoReply)
}

/// A blocked reader's turn on the ready `key` (Redis's `serveClientsBlockedOnStreamKey` and
/// `unblockDeletedStreamReadgroupClients`): the entries past the ID it waits for, an
/// error if its stream or group went, or (nothing new) it blocks on.
fn serve_blocked(ctx: &mut Ctx<'_>, args: &[Bytes], r: &ReadArgs, key: &Bytes) -> Result<Reply, CmdError> {
    let keys = &args[r.streams_at..r.streams_at + r.n];
    let Some(j) = keys.iter().position(|k| k == key) else { return block_again(ctx, r, keys) };
    let id_arg = &args[r.streams_at + r.n + j];
    let count = if r.count == 0 { BLOCKED_DEFAULT_COUNT } else { r.count };
    let (db, now) = (ctx.db(), ctx.now_ms);
    let s: Option<&StreamValue> = ctx.ks.get(db, key, now).and_then(|e| pick(&e.value));
    let Some(s) = s else {
        return match r.group {
            Some(_) => Err(CmdError::other("UNBLOCKED the stream key no longer exists")),
            None => block_again(ctx, r, keys),
        };
    };
    let last = s.last_id;
    let mut logged = Vec::new();
    let entries = match &r.group {
        Some((group, consumer)) => {
            let Some(g) = s.groups.get(group) else {
                return Err(CmdError::other("NOGROUP the consumer group this client was blocked on no longer exists"));
            };
            let gt = g.last_id;
            if last <= gt {
                return block_again(ctx, r, keys);
            }
            let start = gt.incr().unwrap_or(StreamId::MIN);
            let entries = deliver(ctx, key, group, consumer, start, count, false, r.noack, &mut logged)?;
            ctx.dirty(1);
            ctx.log_as(logged);
            entries
        }
        None => {
            let gt = strict_id(id_arg).map_err(|_| invalid_id())?;
            if last <= gt {
                return block_again(ctx, r, keys);
            }
            let start = gt.incr().unwrap_or(StreamId::MIN);
            super::streams::entries_reply(s.range(start, StreamId::MAX, false, count))
        }
    };
    Ok(streams_reply(ctx, vec![(key.clone(), entries)]))
}

fn block_again(ctx: &mut Ctx<'_>, r: &ReadArgs, keys: &[Bytes]) -> Result<Reply, CmdError> {
    ctx.then(Next::Block(Box::new(BlockRequest {
        kind: if r.group.is_some() { BlockKind::StreamGroup } else { BlockKind::Stream },
        keys: keys.to_vec(),
        deadline_ms: r.block.flatten(),
        timeout_reply: Reply::NilArray,
        rerun: None,
    })));
    Ok(Reply::NoReply)
}

/// The record that gives `id` to its consumer on replay (Redis's `streamPropagateXCLAIM`).
pub(super) fn xclaim_record(key: &Bytes, group: &Bytes, id: StreamId, nack: &crate::db::stream::Nack, last_id: StreamId) -> Vec<Bytes> {
    let word = Bytes::from_static;
    vec![
        word(b"XCLAIM"),
        key.clone(),
        group.clone(),
        nack.consumer.clone(),
        word(b"0"),
        id.to_bytes(),
        word(b"TIME"),
        Bytes::from(nack.delivery_time.to_string()),
        word(b"RETRYCOUNT"),
        Bytes::from(nack.delivery_count.to_string()),
        word(b"FORCE"),
        word(b"JUSTID"),
        word(b"LASTID"),
        last_id.to_bytes(),
    ]
}

/// The record that sets a group's last ID and read counter on replay
/// (`streamPropagateGroupID`).
pub(super) fn setid_record(key: &Bytes, group: &Bytes, g: &crate::db::stream::Group) -> Vec<Bytes> {
    let word = Bytes::from_static;
    vec![
        word(b"XGROUP"),
        word(b"SETID"),
        key.clone(),
        group.clone(),
        g.last_id.to_bytes(),
        word(b"ENTRIESREAD"),
        Bytes::from(g.entries_read.to_string()),
    ]
}

/// Serves a consumer of `group` from `start` (Redis's `streamReplyWithRange` with a group,
/// or from its own pending entries for a history read), creating the consumer if needed;
/// the records of what changed go to `logged`.
#[allow(clippy::too_many_arguments)]
fn deliver(
    ctx: &mut Ctx<'_>,
    key: &Bytes,
    group: &Bytes,
    consumer: &Bytes,
    start: StreamId,
    count: usize,
    history: bool,
    noack: bool,
    logged: &mut Vec<Vec<Bytes>>,
) -> Result<Reply, CmdError> {
    let now = super::streams::wall_ms(ctx);
    let out = modify(ctx, key, pick_mut, never_empty, |s| {
        let mut created = false;
        if let Some(g) = s.groups.get_mut(group) {
            created = g.create_consumer(consumer, now);
            if let Some(c) = g.consumers.get_mut(consumer) {
                c.seen_time = now;
            }
        }
        let mut records = Vec::new();
        if created {
            records.push(vec![arg("XGROUP"), arg("CREATECONSUMER"), key.clone(), group.clone(), consumer.clone()]);
        }
        let mut replies = Vec::new();
        if history {
            // The consumer's own pending entries from `start`: a deleted entry shows as nil.
            let ids: Vec<StreamId> = s
                .groups
                .get(group)
                .and_then(|g| g.consumers.get(consumer))
                .map(|c| c.pel.range(start..).take(if count == 0 { usize::MAX } else { count }).copied().collect())
                .unwrap_or_default();
            for id in ids {
                match s.get(id) {
                    Some(fields) => {
                        replies.push(entry_reply(id, fields));
                        if let Some(g) = s.groups.get_mut(group) {
                            let last = g.last_id;
                            if let Some(n) = g.pel.get_mut(&id) {
                                n.delivery_time = now;
                                n.delivery_count += 1;
                                records.push(xclaim_record(key, group, id, n, last));
                            }
                        }
                    }
                    None => replies.push(Reply::Array(vec![Reply::Bulk(id.to_bytes()), Reply::NilArray])),
                }
            }
            return (created, Reply::Array(replies), records);
        }
        let before = s.groups.get(group).map(|g| g.last_id);
        for (id, fields) in s.range(start, StreamId::MAX, false, count) {
            s.advance_group(group, id);
            replies.push(entry_reply(id, fields));
            if noack {
                continue;
            }
            if let Some(g) = s.groups.get_mut(group) {
                g.assign(id, consumer, now, |_| 1);
                let last = g.last_id;
                if let Some(n) = g.pel.get(&id) {
                    records.push(xclaim_record(key, group, id, n, last));
                }
            }
        }
        if let Some(g) = s.groups.get(group) {
            if before != Some(g.last_id) {
                records.push(setid_record(key, group, g));
            }
        }
        (created, Reply::Array(replies), records)
    })?;
    let Some((created, reply, records)) = out else { return Ok(Reply::Array(Vec::new())) };
    if created {
        ctx.dirty(1);
        ctx.notify(notify::STREAM, "xgroup-createconsumer", key);
    }
    logged.extend(records);
    Ok(reply)
}
