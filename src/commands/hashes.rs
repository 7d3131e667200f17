//! Hash commands: HSET/HMSET/HSETNX, HGET/HMGET/HGETALL/HKEYS/HVALS, HDEL, HLEN, HEXISTS,
//! HSTRLEN, HINCRBY/HINCRBYFLOAT, HRANDFIELD and HSCAN, with redis-server 7.0's replies,
//! errors and checking order. Also the helpers the set commands share (SCAN options,
//! random sampling).
//!
//! Option words are compared the way Redis's `strcasecmp` sees them: up to the first NUL.

use std::collections::HashMap;

use bytes::Bytes;

use super::access::{modify, modify_or_create, read};
use super::keys::{notify_del_if_gone, notify_if_new};
use super::{arg_i64, CmdError, Ctx};
use crate::db::hash::{HashLimits, HashValue};
use crate::db::{Keyspace, Value};
use crate::notify;
use crate::protocol::{ProtocolVersion, Reply};
pub(super) use crate::util::opt_is;
use crate::util::{incr_by_float, parse_i64, FloatBase, IncrFloatError};

fn pick(v: &Value) -> Option<&HashValue> {
    match v {
        Value::Hash(h) => Some(h),
        _ => None,
    }
}

fn pick_mut(v: &mut Value) -> Option<&mut HashValue> {
    match v {
        Value::Hash(h) => Some(h),
        _ => None,
    }
}

fn new_hash() -> Value {
    Value::Hash(HashValue::default())
}

/// The hash at `key` for reading, borrowing only the keyspace (so the caller can use the
/// server's random generator meanwhile).
fn lookup_hash<'k>(ks: &'k mut Keyspace, db: usize, key: &[u8], now: i64) -> Result<Option<&'k HashValue>, CmdError> {
    match ks.get(db, key, now) {
        None => Ok(None),
        Some(e) => pick(&e.value).map(Some).ok_or(CmdError::WrongType),
    }
}

fn limits(ctx: &Ctx<'_>) -> HashLimits {
    ctx.server.settings.encoding_limits.hash
}

/// Redis's `getRangeLongFromObjectOrReply(-LONG_MAX, LONG_MAX)` for the count of
/// HRANDFIELD and SRANDMEMBER.
pub(super) fn parse_rand_count(arg: &[u8]) -> Result<i64, CmdError> {
    match arg_i64(arg)? {
        i64::MIN => Err(CmdError::other("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")),
        n => Ok(n),
    }
}

/// The most elements a negative count may draw (SRANDMEMBER, HRANDFIELD, ZRANDMEMBER). With
/// repetition the reply's length is the client's number alone: Redis builds it however large,
/// so a count of -10^12 on a one-member set fills memory until the process is killed, every
/// client and the unsaved data with it. 2^24 draws of a short member take about 1.2 GB here
/// before encoding (a `Reply` and a copy per element).
pub(super) const MAX_DRAWS: u64 = 1 << 24;

/// Refuses a negative count beyond [`MAX_DRAWS`], after every check Redis itself makes.
pub(super) fn check_draws(count: u64, uniq: bool) -> Result<(), CmdError> {
    if uniq || count <= MAX_DRAWS {
        return Ok(());
    }
    Err(CmdError::other(format!("ERR value is out of range, a negative count may draw at most {MAX_DRAWS} elements")))
}

/// `k` distinct indices out of `0..n` in random order (a partial Fisher-Yates shuffle, sparse
/// when `k` is small next to `n`): O(k) expected time.
pub(super) fn sample_distinct(n: usize, k: usize, rng: &mut impl FnMut() -> u64) -> Vec<usize> {
    let k = k.min(n);
    let mut out = Vec::with_capacity(k);
    if k.saturating_mul(4) >= n {
        let mut all: Vec<usize> = (0..n).collect();
        for i in 0..k {
            let j = i + (rng() % (n - i) as u64) as usize;
            all.swap(i, j);
            out.push(all[i]);
        }
    } else {
        let mut moved: HashMap<usize, usize> = HashMap::with_capacity(k * 2);
        for i in 0..k {
            let j = i + (rng() % (n - i) as u64) as usize;
            let at_j = moved.get(&j).copied().unwrap_or(j);
            let at_i = moved.get(&i).copied().unwrap_or(i);
            moved.insert(j, at_i);
            out.push(at_j);
        }
    }
    out
}

/// Redis's `parseScanCursorOrReply` (`strtoul`): no leading space, an optional sign (a minus
/// wraps around), decimal digits up to the first NUL, no overflow; "" is cursor 0.
pub(super) fn parse_cursor(arg: &[u8]) -> Result<u64, CmdError> {
    crate::util::parse_scan_cursor(arg).ok_or_else(|| CmdError::other("ERR invalid cursor"))
}

/// The options of HSCAN/SSCAN (Redis's `scanGenericCommand`, step 1).
pub(super) struct ScanOpts<'a> {
    pub count: i64,
    /// `None` when every element matches (no MATCH, or MATCH `*`).
    pub pattern: Option<&'a [u8]>,
}

pub(super) fn parse_scan_opts(args: &[Bytes], start: usize) -> Result<ScanOpts<'_>, CmdError> {
    let mut opts = ScanOpts { count: 10, pattern: None };
    let mut i = start;
    while i < args.len() {
        let more = args.len() - i;
        if opt_is(&args[i], "count") && more >= 2 {
            opts.count = arg_i64(&args[i + 1])?;
            if opts.count < 1 {
                return Err(CmdError::Syntax);
            }
        } else if opt_is(&args[i], "match") && more >= 2 {
            opts.pattern = (&args[i + 1][..] != b"*").then_some(&args[i + 1][..]);
        } else {
            return Err(CmdError::Syntax);
        }
        i += 2;
    }
    Ok(opts)
}

impl ScanOpts<'_> {
    pub fn matches(&self, element: &[u8]) -> bool {
        self.pattern.is_none_or(|p| crate::glob::glob_match(p, element, false))
    }
}

/// The reply of every SCAN-like command: the next cursor (as Redis prints it) and the items.
pub(super) fn scan_reply(cursor: u64, items: Vec<Reply>) -> Reply {
    Reply::Array(vec![Reply::bulk_string((cursor as i64).to_string()), Reply::Array(items)])
}

/// HSET and HMSET (Redis's `hsetCommand`): every string is checked against the listpack
/// value limit before anything is written.
fn hset_generic(ctx: &mut Ctx<'_>, args: &[Bytes], name: &str) -> Result<Reply, CmdError> {
    if args.len() % 2 == 1 {
        return Err(CmdError::Other(format!("ERR wrong number of arguments for '{name}' command").into()));
    }
    let limits = limits(ctx);
    notify_if_new(ctx, &args[1]);
    let created = modify_or_create(ctx, &args[1], pick_mut, HashValue::is_empty, new_hash, |h| {
        h.check_lengths(args[2..].iter().map(|a| &a[..]), limits);
        args[2..].chunks(2).filter(|p| h.set(&p[0], &p[1], limits)).count()
    })?;
    ctx.signal_modified(&args[1]);
    ctx.dirty((args.len() as u64 - 2) / 2);
    ctx.notify(notify::HASH, "hset", &args[1]);
    Ok(if name == "hset" { Reply::Int(created as i64) } else { Reply::OK })
}

/// ```text
/// HSET key field value [field value ...]
/// ```
pub fn hset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    hset_generic(ctx, args, "hset")
}

/// ```text
/// HMSET key field value [field value ...]
/// ```
pub fn hmset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    hset_generic(ctx, args, "hmset")
}

/// ```text
/// HSETNX key field value
/// ```
pub fn hsetnx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let limits = limits(ctx);
    let (field, value) = (&args[2][..], &args[3][..]);
    notify_if_new(ctx, &args[1]);
    let set = modify_or_create(ctx, &args[1], pick_mut, HashValue::is_empty, new_hash, |h| {
        if h.contains(field) {
            return false;
        }
        h.check_lengths([field, value], limits);
        h.set(field, value, limits)
    })?;
    if set {
        ctx.signal_modified(&args[1]);
        ctx.dirty(1);
        ctx.notify(notify::HASH, "hset", &args[1]);
    }
    Ok(Reply::Int(set as i64))
}

/// ```text
/// HGET key field
/// ```
pub fn hget(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let h = read(ctx, &args[1], pick)?;
    Ok(h.and_then(|h| h.get(&args[2])).map_or(Reply::Nil, Reply::bulk))
}

/// ```text
/// HMGET key field [field ...]
/// ```
pub fn hmget(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let h = read(ctx, &args[1], pick)?;
    let out = args[2..].iter().map(|f| h.and_then(|h| h.get(f)).map_or(Reply::Nil, Reply::bulk)).collect();
    Ok(Reply::Array(out))
}

/// ```text
/// HGETALL key
/// ```
pub fn hgetall(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let h = read(ctx, &args[1], pick)?;
    Ok(Reply::Map(h.map_or_else(Vec::new, |h| h.iter().map(|(f, v)| (Reply::bulk(f), Reply::bulk(v))).collect())))
}

/// ```text
/// HKEYS key
/// ```
pub fn hkeys(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let h = read(ctx, &args[1], pick)?;
    Ok(Reply::Array(h.map_or_else(Vec::new, |h| h.iter().map(|(f, _)| Reply::bulk(f)).collect())))
}

/// ```text
/// HVALS key
/// ```
pub fn hvals(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let h = read(ctx, &args[1], pick)?;
    Ok(Reply::Array(h.map_or_else(Vec::new, |h| h.iter().map(|(_, v)| Reply::bulk(v)).collect())))
}

/// ```text
/// HDEL key field [field ...]
/// ```
pub fn hdel(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let deleted = modify(ctx, &args[1], pick_mut, HashValue::is_empty, |h| args[2..].iter().filter(|f| h.remove(f)).count())?;
    let deleted = deleted.unwrap_or(0);
    ctx.dirty(deleted as u64);
    if deleted > 0 {
        ctx.signal_modified(&args[1]);
        ctx.notify(notify::HASH, "hdel", &args[1]);
        notify_del_if_gone(ctx, &args[1]);
    }
    Ok(Reply::Int(deleted as i64))
}

/// ```text
/// HLEN key
/// ```
pub fn hlen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(Reply::Int(read(ctx, &args[1], pick)?.map_or(0, |h| h.len() as i64)))
}

/// ```text
/// HEXISTS key field
/// ```
pub fn hexists(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(Reply::Int(read(ctx, &args[1], pick)?.is_some_and(|h| h.contains(&args[2])) as i64))
}

/// ```text
/// HSTRLEN key field
/// ```
pub fn hstrlen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(Reply::Int(read(ctx, &args[1], pick)?.and_then(|h| h.get(&args[2])).map_or(0, |v| v.len() as i64)))
}

/// ```text
/// HINCRBY key field increment
/// ```
pub fn hincrby(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let incr = arg_i64(&args[3])?;
    let limits = limits(ctx);
    let field = &args[2][..];
    notify_if_new(ctx, &args[1]);
    let value = modify_or_create(ctx, &args[1], pick_mut, HashValue::is_empty, new_hash, |h| {
        let old = match h.get(field) {
            Some(v) => parse_i64(v).ok_or_else(|| CmdError::other("ERR hash value is not an integer"))?,
            None => 0,
        };
        let value = old.checked_add(incr).ok_or(CmdError::Overflow)?;
        h.set(field, value.to_string().as_bytes(), limits);
        Ok::<_, CmdError>(value)
    })??;
    ctx.signal_modified(&args[1]);
    ctx.dirty(1);
    ctx.notify(notify::HASH, "hincrby", &args[1]);
    Ok(Reply::Int(value))
}

/// ```text
/// HINCRBYFLOAT key field increment
/// ```
pub fn hincrbyfloat(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let incr = &args[3][..];
    // The increment is checked first, and an infinite one has its own error.
    match incr_by_float(FloatBase::Int(0), incr) {
        Err(IncrFloatError::NanOrInfinity) => return Err(CmdError::other("ERR value is NaN or Infinity")),
        Err(_) => return Err(CmdError::NotFloat),
        Ok(_) => {}
    }
    let limits = limits(ctx);
    let field = &args[2][..];
    notify_if_new(ctx, &args[1]);
    let data = modify_or_create(ctx, &args[1], pick_mut, HashValue::is_empty, new_hash, |h| {
        let result = match h.get(field) {
            Some(v) => incr_by_float(FloatBase::Str(v), incr),
            None => incr_by_float(FloatBase::Int(0), incr),
        };
        let data = result.map_err(|e| match e {
            IncrFloatError::BaseNotFloat => CmdError::other("ERR hash value is not a float"),
            IncrFloatError::IncrNotFloat => CmdError::NotFloat,
            IncrFloatError::NanOrInfinity => CmdError::other("ERR increment would produce NaN or Infinity"),
        })?;
        let data = Bytes::from(data);
        h.set(field, &data, limits);
        Ok::<_, CmdError>(data)
    })??;
    ctx.signal_modified(&args[1]);
    ctx.dirty(1);
    // Logged as the value it came to: float formatting must not differ on replay.
    ctx.log_as_one(vec![super::effects::arg("HSET"), args[1].clone(), args[2].clone(), data.clone()]);
    ctx.notify(notify::HASH, "hincrbyfloat", &args[1]);
    Ok(Reply::Bulk(data))
}

/// ```text
/// HRANDFIELD key [count [WITHVALUES]]
/// ```
pub fn hrandfield(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    if args.len() < 3 {
        let server = &mut *ctx.server;
        let h = lookup_hash(ctx.ks, db, &args[1], now)?;
        return Ok(h.and_then(|h| h.random(server.random())).map_or(Reply::Nil, |(f, _)| Reply::bulk(f)));
    }
    let l = parse_rand_count(&args[2])?;
    if args.len() > 4 || (args.len() == 4 && !opt_is(&args[3], "withvalues")) {
        return Err(CmdError::Syntax);
    }
    let withvalues = args.len() == 4;
    if withvalues && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&l) {
        return Err(CmdError::other("ERR value is out of range"));
    }
    let resp3 = ctx.client.proto == ProtocolVersion::Resp3;
    let server = &mut *ctx.server;
    let Some(h) = lookup_hash(ctx.ks, db, &args[1], now)? else {
        return Ok(Reply::Array(Vec::new()));
    };
    let (count, uniq) = (l.unsigned_abs(), l >= 0);
    if count == 0 || h.is_empty() {
        return Ok(Reply::Array(Vec::new()));
    }
    check_draws(count, uniq)?;
    // RESP3 nests each field/value pair in an array, RESP2 flattens them.
    let mut out = Vec::new();
    let push = |out: &mut Vec<Reply>, f: &[u8], v: &[u8]| {
        if !withvalues {
            out.push(Reply::bulk(f));
        } else if resp3 {
            out.push(Reply::Array(vec![Reply::bulk(f), Reply::bulk(v)]));
        } else {
            out.push(Reply::bulk(f));
            out.push(Reply::bulk(v));
        }
    };
    let size = h.len() as u64;
    // A listpack is scanned to reach an entry: list it once for the draws.
    let listed: Option<Vec<(&[u8], &[u8])>> = h.is_listpack().then(|| h.iter().collect());
    let at = |i: usize| match &listed {
        Some(all) => all.get(i).copied(),
        None => h.entry_at(i),
    };
    if !uniq || count == 1 {
        out.reserve(count.min(1 << 16) as usize);
        for _ in 0..count {
            if let Some((f, v)) = at((server.random() % size) as usize) {
                push(&mut out, f, v);
            }
        }
    } else if count >= size {
        for (f, v) in h.iter() {
            push(&mut out, f, v);
        }
    } else {
        for i in sample_distinct(size as usize, count as usize, &mut || server.random()) {
            if let Some((f, v)) = at(i) {
                push(&mut out, f, v);
            }
        }
    }
    Ok(Reply::Array(out))
}

/// ```text
/// HSCAN key cursor [MATCH pattern] [COUNT count]
/// ```
pub fn hscan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let mut cursor = parse_cursor(&args[2])?;
    let Some(h) = read(ctx, &args[1], pick)? else {
        return Ok(scan_reply(0, Vec::new()));
    };
    let opts = parse_scan_opts(args, 3)?;
    let mut found: Vec<(Bytes, Bytes)> = Vec::new();
    // Like Redis: COUNT is doubled (fields and values are counted), then at most COUNT*10
    // more buckets after the first, until COUNT entries; a small hash comes whole in one
    // step, whatever the cursor.
    let count = opts.count;
    let mut budget = count.saturating_mul(20);
    loop {
        cursor = h.scan_step(cursor, |f, v| found.push((Bytes::copy_from_slice(f), Bytes::copy_from_slice(v))));
        if cursor == 0 || budget == 0 || found.len() as i64 >= count {
            break;
        }
        budget -= 1;
    }
    let mut out = Vec::with_capacity(found.len() * 2);
    for (f, v) in found {
        if opts.matches(&f) {
            out.push(Reply::Bulk(f));
            out.push(Reply::Bulk(v));
        }
    }
    Ok(scan_reply(cursor, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_is_distinct_and_in_range() {
        let mut x = 88172645463325252u64;
        let mut rng = || {
            x = crate::util::xorshift(x);
            x
        };
        for (n, k) in [(10, 10), (10, 3), (1000, 5), (1000, 999), (1, 1), (5, 0), (3, 7)] {
            let mut got = sample_distinct(n, k, &mut rng);
            assert_eq!(got.len(), k.min(n));
            got.sort_unstable();
            got.dedup();
            assert_eq!(got.len(), k.min(n));
            assert!(got.iter().all(|&i| i < n));
        }
    }

    #[test]
    fn cursors_like_strtoul() {
        assert_eq!(parse_cursor(b"").ok(), Some(0));
        assert_eq!(parse_cursor(b"12").ok(), Some(12));
        assert_eq!(parse_cursor(b"-1").ok(), Some(u64::MAX));
        assert_eq!(parse_cursor(b"+7\0x").ok(), Some(7));
        assert!(parse_cursor(b" 1").is_err());
        assert!(parse_cursor(b"1x").is_err());
        assert!(parse_cursor(b"99999999999999999999999").is_err());
    }
}
