//! Pending entries: XPENDING, XCLAIM and XAUTOCLAIM (Redis 7.0's `xpendingCommand`,
//! `xclaimCommand`, `xautoclaimCommand`). A claim is logged as Redis propagates it: one
//! idempotent XCLAIM ... FORCE JUSTID per entry it changed, and XGROUP SETID when only the
//! group's last ID moved.

use bytes::Bytes;

use super::access::{modify, read};
use super::stream_reads::{setid_record, xclaim_record};
use super::streams::{entry_reply, id_reply, never_empty, pick, pick_mut, range_bound, strict_id};
use super::{CmdError, Ctx};
use crate::db::stream::{StreamId, StreamValue};
use crate::notify;
use crate::protocol::Reply;
use crate::spec::c_string_prefix;
use crate::util::{opt_is, parse_i64};

fn no_group(key: &[u8], group: &[u8]) -> CmdError {
    CmdError::other(format!(
        "NOGROUP No such key '{}' or consumer group '{}'",
        c_string_prefix(key, usize::MAX),
        c_string_prefix(group, usize::MAX)
    ))
}

fn int_or(a: &[u8], msg: &'static str) -> Result<i64, CmdError> {
    parse_i64(a).ok_or_else(|| CmdError::other(msg))
}

/// ```text
/// XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
/// ```
pub fn xpending(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let argc = args.len();
    if argc != 3 && !(6..=9).contains(&argc) {
        return Err(CmdError::Syntax);
    }
    let mut range = None;
    if argc >= 6 {
        let mut at = 3;
        let mut min_idle = 0;
        if opt_is(&args[3], "idle") {
            min_idle = parse_i64(&args[4]).ok_or(CmdError::NotInteger)?;
            if argc < 8 {
                return Err(CmdError::Syntax);
            }
            at += 2;
        }
        let count = parse_i64(&args[at + 2]).ok_or(CmdError::NotInteger)?.max(0);
        let start = range_bound(&args[at], true)?;
        let end = range_bound(&args[at + 1], false)?;
        let consumer = args.get(at + 3).cloned();
        range = Some((min_idle, start, end, count, consumer));
    }
    let (key, group) = (&args[1], &args[2]);
    let now = super::streams::wall_ms(ctx);
    let s = read(ctx, key, pick)?;
    let Some(g) = s.and_then(|s| s.groups.get(group)) else { return Err(no_group(key, group)) };
    let Some((min_idle, start, end, count, consumer)) = range else {
        let (Some((first, _)), Some((last, _))) = (g.pel.first_key_value(), g.pel.last_key_value()) else {
            return Ok(Reply::Array(vec![Reply::Int(0), Reply::Nil, Reply::Nil, Reply::NilArray]));
        };
        let holders = g
            .consumers
            .iter()
            .filter(|(_, c)| !c.pel.is_empty())
            .map(|(name, c)| Reply::Array(vec![Reply::Bulk(name.clone()), Reply::Bulk(Bytes::from(c.pel.len().to_string()))]))
            .collect();
        return Ok(Reply::Array(vec![Reply::Int(g.pel.len() as i64), id_reply(*first), id_reply(*last), Reply::Array(holders)]));
    };
    let ids: Box<dyn Iterator<Item = &StreamId>> = match &consumer {
        Some(name) => match g.consumers.get(name) {
            Some(c) => Box::new(c.pel.range(start..)),
            None => return Ok(Reply::Array(Vec::new())),
        },
        None => Box::new(g.pel.keys().filter(move |id| **id >= start)),
    };
    let mut out = Vec::new();
    let mut left = count;
    for id in ids.take_while(|id| **id <= end) {
        if left == 0 {
            break;
        }
        let Some(n) = g.pel.get(id) else { continue };
        if min_idle != 0 && now - n.delivery_time < min_idle {
            continue;
        }
        left -= 1;
        out.push(Reply::Array(vec![
            id_reply(*id),
            Reply::Bulk(n.consumer.clone()),
            Reply::Int((now - n.delivery_time).max(0)),
            Reply::Int(n.delivery_count as i64),
        ]));
    }
    Ok(Reply::Array(out))
}

/// What a claim does to one pending entry, shared by XCLAIM and XAUTOCLAIM: the entry gone
/// from the stream leaves the PEL (`Gone`), else it becomes the consumer's.
enum Claimed {
    Gone,
    Taken,
}

/// Gives `id` to `consumer` (created on first need: whether it was), with `delivery_time`,
/// and the delivery count set (`retry`) or counted up (unless JUSTID); the record for the log.
#[allow(clippy::too_many_arguments)]
fn claim_one(
    s: &mut StreamValue,
    key: &Bytes,
    group: &Bytes,
    consumer: &Bytes,
    id: StreamId,
    delivery_time: i64,
    retry: Option<u64>,
    justid: bool,
    now: i64,
    created: &mut bool,
    records: &mut Vec<Vec<Bytes>>,
) -> Claimed {
    let exists = s.exists(id);
    let Some(g) = s.groups.get_mut(group) else { return Claimed::Gone };
    if !exists {
        if let Some(n) = g.pel.get(&id) {
            records.push(xclaim_record(key, group, id, n, g.last_id));
            g.ack(id);
        }
        return Claimed::Gone;
    }
    if g.create_consumer(consumer, now) {
        *created = true;
    } else if let Some(c) = g.consumers.get_mut(consumer) {
        c.seen_time = now;
    }
    g.assign(id, consumer, delivery_time, |old| match (retry, old) {
        (Some(n), _) => n,
        (None, Some(n)) if justid => n,
        (None, Some(n)) => n + 1,
        // A FORCE-created entry starts at 1 (Redis's streamCreateNACK), counted like any
        // other.
        (None, None) if justid => 1,
        (None, None) => 2,
    });
    if let Some(n) = g.pel.get(&id) {
        records.push(xclaim_record(key, group, id, n, g.last_id));
    }
    Claimed::Taken
}

/// ```text
/// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-time-milliseconds]
///     [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID lastid]
/// ```
pub fn xclaim(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (key, group, consumer) = (&args[1], &args[2], &args[3]);
    let now = super::streams::wall_ms(ctx);
    if read(ctx, key, pick)?.and_then(|s| s.groups.get(group)).is_none() {
        return Err(no_group(key, group));
    }
    let min_idle = int_or(&args[4], "ERR Invalid min-idle-time argument for XCLAIM")?.max(0);
    let mut ids = Vec::new();
    let mut j = 5;
    while j < args.len() {
        match strict_id(&args[j]) {
            Ok(id) => ids.push(id),
            Err(_) => break,
        }
        j += 1;
    }
    let (mut force, mut justid) = (false, false);
    let mut delivery: Option<i64> = None;
    let mut retry: Option<i64> = None;
    let mut last_id = StreamId::MIN;
    while j < args.len() {
        let moreargs = args.len() - 1 - j;
        let opt = &args[j];
        if opt_is(opt, "force") {
            force = true;
        } else if opt_is(opt, "justid") {
            justid = true;
        } else if opt_is(opt, "idle") && moreargs > 0 {
            j += 1;
            delivery = Some(now - int_or(&args[j], "ERR Invalid IDLE option argument for XCLAIM")?);
        } else if opt_is(opt, "time") && moreargs > 0 {
            j += 1;
            delivery = Some(int_or(&args[j], "ERR Invalid TIME option argument for XCLAIM")?);
        } else if opt_is(opt, "retrycount") && moreargs > 0 {
            j += 1;
            retry = Some(int_or(&args[j], "ERR Invalid RETRYCOUNT option argument for XCLAIM")?);
        } else if opt_is(opt, "lastid") && moreargs > 0 {
            j += 1;
            last_id = strict_id(&args[j])?;
        } else {
            return Err(CmdError::other(format!("ERR Unrecognized XCLAIM option '{}'", c_string_prefix(opt, usize::MAX))));
        }
        j += 1;
    }
    // A bogus time (negative, in the future) means now, as Redis reads it.
    let delivery_time = match delivery {
        Some(t) if (0..=now).contains(&t) => t,
        _ => now,
    };
    let retry = retry.filter(|r| *r >= 0).map(|r| r as u64);
    let out = modify(ctx, key, pick_mut, never_empty, |s| {
        let mut records = Vec::new();
        let mut created = false;
        let mut replies = Vec::new();
        let mut moved_last = false;
        if let Some(g) = s.groups.get_mut(group) {
            if last_id > g.last_id {
                g.last_id = last_id;
                moved_last = true;
            }
        }
        for id in ids {
            let pending = s.groups.get(group).and_then(|g| g.pel.get(&id).map(|n| n.delivery_time));
            if s.exists(id) {
                match pending {
                    // Only FORCE claims an entry nobody holds; min-idle-time applies to held ones.
                    None if !force => continue,
                    Some(t) if min_idle != 0 && now - t < min_idle => continue,
                    _ => {}
                }
            }
            if pending.is_none() && !s.exists(id) {
                continue;
            }
            match claim_one(s, key, group, consumer, id, delivery_time, retry, justid, now, &mut created, &mut records) {
                Claimed::Gone => {}
                Claimed::Taken => replies.push(match justid {
                    true => id_reply(id),
                    false => entry_reply(id, s.get(id).unwrap_or_default()),
                }),
            }
        }
        if records.is_empty() && moved_last {
            if let Some(g) = s.groups.get(group) {
                records.push(setid_record(key, group, g));
            }
        }
        (created, replies, records)
    })?;
    let Some((created, replies, records)) = out else { return Err(no_group(key, group)) };
    finish_claim(ctx, key, created, records);
    Ok(Reply::Array(replies))
}

/// Counts, notifies and logs what a claim changed.
fn finish_claim(ctx: &mut Ctx<'_>, key: &Bytes, created: bool, records: Vec<Vec<Bytes>>) {
    if created {
        ctx.dirty(1);
        ctx.notify(notify::STREAM, "xgroup-createconsumer", key);
    }
    ctx.dirty(records.len() as u64);
    ctx.log_as(records);
}

/// ```text
/// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
/// ```
pub fn xautoclaim(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (key, group, consumer) = (&args[1], &args[2], &args[3]);
    let now = super::streams::wall_ms(ctx);
    let min_idle = int_or(&args[4], "ERR Invalid min-idle-time argument for XAUTOCLAIM")?.max(0);
    let start = range_bound(&args[5], true)?;
    let mut count: i64 = 100;
    let mut justid = false;
    let mut j = 6;
    while j < args.len() {
        let moreargs = args.len() - 1 - j;
        if opt_is(&args[j], "count") && moreargs > 0 {
            let max = i64::MAX / 16;
            count = parse_i64(&args[j + 1]).filter(|n| (1..=max).contains(n)).ok_or_else(|| CmdError::other("ERR COUNT must be > 0"))?;
            j += 1;
        } else if opt_is(&args[j], "justid") {
            justid = true;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    if read(ctx, key, pick)?.and_then(|s| s.groups.get(group)).is_none() {
        return Err(no_group(key, group));
    }
    let out = modify(ctx, key, pick_mut, never_empty, |s| {
        let mut records = Vec::new();
        let mut created = false;
        let mut replies = Vec::new();
        let mut deleted = Vec::new();
        let mut attempts = count.saturating_mul(10);
        let mut left = count;
        let mut cursor = Some(start);
        while attempts > 0 && left > 0 {
            let Some(from) = cursor else { break };
            let next = s.groups.get(group).and_then(|g| g.pel.range(from..).next().map(|(id, n)| (*id, n.delivery_time)));
            let Some((id, delivered)) = next else {
                cursor = None;
                break;
            };
            attempts -= 1;
            cursor = id.incr();
            if !s.exists(id) {
                claim_one(s, key, group, consumer, id, now, None, justid, now, &mut created, &mut records);
                deleted.push(id_reply(id));
                left -= 1;
                continue;
            }
            if min_idle != 0 && now - delivered < min_idle {
                continue;
            }
            claim_one(s, key, group, consumer, id, now, None, justid, now, &mut created, &mut records);
            replies.push(match justid {
                true => id_reply(id),
                false => entry_reply(id, s.get(id).unwrap_or_default()),
            });
            left -= 1;
        }
        // The next pending entry is the cursor of the next call (0-0: the end).
        let next = cursor.and_then(|from| s.groups.get(group).and_then(|g| g.pel.range(from..).next().map(|(id, _)| *id)));
        (created, records, Reply::Array(vec![id_reply(next.unwrap_or(StreamId::MIN)), Reply::Array(replies), Reply::Array(deleted)]))
    })?;
    let Some((created, records, reply)) = out else { return Err(no_group(key, group)) };
    finish_claim(ctx, key, created, records);
    Ok(reply)
}
