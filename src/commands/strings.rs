//! String commands: GET, SET and its variants, MGET/MSET, APPEND, STRLEN, the INCR family,
//! GETRANGE/SETRANGE and LCS, with redis-server 7.0's replies, errors and checking order.

use bytes::Bytes;

use super::effects::arg;
use super::{arg_i64, CmdError, Ctx};
use crate::config::P;
use crate::db::{StrEncoding, StrValue, Value};
use crate::notify;
use crate::protocol::Reply;
use crate::util::opt_is;
use crate::util::{incr_by_float, parse_i64, FloatBase, IncrFloatError};

// The option flags of SET and GETEX (Redis's OBJ_SET_* bits).
const NX: u32 = 1;
const XX: u32 = 1 << 1;
const GET: u32 = 1 << 2;
const KEEPTTL: u32 = 1 << 3;
const PERSIST: u32 = 1 << 4;
const EX: u32 = 1 << 5;
const PX: u32 = 1 << 6;
const EXAT: u32 = 1 << 7;
const PXAT: u32 = 1 << 8;
const ANY_EXPIRE: u32 = EX | PX | EXAT | PXAT;

/// The string value at `key`, `None` if absent, WRONGTYPE for another type. `write` picks
/// Redis's `lookupKeyWrite` (no hit/miss counted) over `lookupKeyRead`; both expire lazily.
fn lookup_str<'c>(ctx: &'c mut Ctx<'_>, key: &[u8], write: bool) -> Result<Option<&'c StrValue>, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let entry = if write { ctx.ks.get_mut(db, key, now).map(|e| &*e) } else { ctx.ks.get(db, key, now) };
    match entry.map(|e| &e.value) {
        None => Ok(None),
        Some(Value::Str(s)) => Ok(Some(s)),
        Some(_) => Err(CmdError::WrongType),
    }
}

/// What `getGenericCommand` replies: the value, or a null if the key is absent.
fn get_reply(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<Reply, CmdError> {
    Ok(lookup_str(ctx, key, false)?.map_or(Reply::Nil, |s| Reply::bulk(s.bytes())))
}

/// Stores a fresh string value (copying key and value out of the request) through the
/// keyspace write API, which signals the key.
fn store(ctx: &mut Ctx<'_>, key: &[u8], data: &[u8], enc: StrEncoding, expire_at: Option<i64>) {
    ctx.write_value(key, Value::Str(StrValue::from_slice(data, enc)), expire_at);
}

/// proto-max-bulk-len, which the log loader and a primary's stream are not held to (Redis's
/// `mustObeyClient`): what was accepted once is applied again whatever the setting now.
fn max_bulk_len(ctx: &Ctx<'_>) -> i128 {
    if ctx.client.superuser {
        return i128::MAX;
    }
    ctx.server.config.get_int(P::ProtoMaxBulkLen) as i128
}

/// Parses the options of SET (from argv[3]) or GETEX (from argv[2]) exactly like Redis's
/// `parseExtendedStringArgumentsOrReply`; returns the flags and the expire argument.
fn parse_ext_args(args: &[Bytes], for_set: bool) -> Result<(u32, Option<&Bytes>), CmdError> {
    let mut flags = 0;
    let mut expire = None;
    let mut j = if for_set { 3 } else { 2 };
    while j < args.len() {
        let opt = &args[j][..];
        let has_next = j + 1 < args.len();
        let kind = if opt_is(opt, "EX") {
            EX
        } else if opt_is(opt, "PX") {
            PX
        } else if opt_is(opt, "EXAT") {
            EXAT
        } else if opt_is(opt, "PXAT") {
            PXAT
        } else {
            0
        };
        if for_set && opt_is(opt, "NX") && flags & XX == 0 {
            flags |= NX;
        } else if for_set && opt_is(opt, "XX") && flags & NX == 0 {
            flags |= XX;
        } else if for_set && opt_is(opt, "GET") {
            flags |= GET;
        } else if for_set && opt_is(opt, "KEEPTTL") && flags & (PERSIST | ANY_EXPIRE) == 0 {
            flags |= KEEPTTL;
        } else if !for_set && opt_is(opt, "PERSIST") && flags & (ANY_EXPIRE | KEEPTTL) == 0 {
            flags |= PERSIST;
        } else if kind != 0 && has_next && flags & (KEEPTTL | PERSIST | (ANY_EXPIRE & !kind)) == 0 {
            flags |= kind;
            expire = Some(&args[j + 1]);
            j += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    Ok((flags, expire))
}

/// Redis's `getExpireMillisecondsOrReply`: the absolute expiry time in ms.
fn expire_ms(ctx: &Ctx<'_>, arg: &[u8], flags: u32, cmd: &str) -> Result<i64, CmdError> {
    let invalid = || CmdError::InvalidExpire(cmd.to_string());
    let mut ms = arg_i64(arg)?;
    let seconds = flags & (EX | EXAT) != 0;
    if ms <= 0 || (seconds && ms > i64::MAX / 1000) {
        return Err(invalid());
    }
    if seconds {
        ms *= 1000;
    }
    if flags & (EX | PX) != 0 {
        ms = ms.wrapping_add(ctx.now_ms);
    }
    if ms <= 0 {
        return Err(invalid());
    }
    Ok(ms)
}

/// Redis's `setGenericCommand`, shared by SET, SETNX, SETEX and PSETEX.
#[allow(clippy::too_many_arguments)]
fn set_generic(
    ctx: &mut Ctx<'_>,
    flags: u32,
    key: &[u8],
    val: &[u8],
    expire: Option<&Bytes>,
    cmd: &str,
    ok_reply: Reply,
    abort_reply: Reply,
) -> Result<Reply, CmdError> {
    let when = match expire {
        Some(e) => Some(expire_ms(ctx, e, flags, cmd)?),
        None => None,
    };
    let got = if flags & GET != 0 { Some(get_reply(ctx, key)?) } else { None };
    let (db, now) = (ctx.db(), ctx.now_ms);
    let old_expire = ctx.ks.write_expiry(db, key, now);
    let found = old_expire.is_some();
    if (flags & NX != 0 && found) || (flags & XX != 0 && !found) {
        return Ok(got.unwrap_or(abort_reply));
    }
    let expire_at = if when.is_some() {
        when
    } else if flags & KEEPTTL != 0 {
        old_expire.flatten()
    } else {
        None
    };
    // A time already past is stored as is: the key then expires on its next access, as in Redis.
    store(ctx, key, val, StrEncoding::Auto, expire_at);
    ctx.dirty(1);
    // EX, PX and EXAT are logged as the absolute PXAT they come to (GET, NX and XX, decided
    // already, are dropped).
    if let Some(at) = when {
        ctx.log_as_one(vec![arg("SET"), Bytes::copy_from_slice(key), Bytes::copy_from_slice(val), arg("PXAT"), arg(&at.to_string())]);
    }
    ctx.notify(notify::STRING, "set", key);
    if when.is_some() {
        ctx.notify(notify::GENERIC, "expire", key);
    }
    Ok(got.unwrap_or(ok_reply))
}

/// ```text
/// GET key
/// ```
pub fn get(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    get_reply(ctx, &args[1])
}

/// ```text
/// SET key value [NX | XX] [GET] [EX seconds | PX milliseconds |
///   EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]
/// ```
pub fn set(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (flags, expire) = parse_ext_args(args, true)?;
    set_generic(ctx, flags, &args[1], &args[2], expire, "set", Reply::OK, Reply::Nil)
}

/// ```text
/// SETNX key value
/// ```
pub fn setnx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    set_generic(ctx, NX, &args[1], &args[2], None, "setnx", Reply::Int(1), Reply::Int(0))
}

/// ```text
/// SETEX key seconds value
/// ```
pub fn setex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    set_generic(ctx, EX, &args[1], &args[3], Some(&args[2]), "setex", Reply::OK, Reply::Nil)
}

/// ```text
/// PSETEX key milliseconds value
/// ```
pub fn psetex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    set_generic(ctx, PX, &args[1], &args[3], Some(&args[2]), "psetex", Reply::OK, Reply::Nil)
}

/// ```text
/// GETSET key value
/// ```
pub fn getset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let got = get_reply(ctx, &args[1])?;
    store(ctx, &args[1], &args[2], StrEncoding::Auto, None);
    ctx.dirty(1);
    ctx.notify(notify::STRING, "set", &args[1]);
    Ok(got)
}

/// ```text
/// GETDEL key
/// ```
pub fn getdel(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let got = get_reply(ctx, &args[1])?;
    if ctx.remove(&args[1]).is_some() {
        ctx.dirty(1);
        ctx.notify(notify::GENERIC, "del", &args[1]);
    }
    Ok(got)
}

/// ```text
/// GETEX key [EX seconds | PX milliseconds | EXAT unix-time-seconds |
///   PXAT unix-time-milliseconds | PERSIST]
/// ```
pub fn getex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (flags, expire) = parse_ext_args(args, false)?;
    let key = &args[1][..];
    let Some(value) = lookup_str(ctx, key, false)? else {
        return Ok(Reply::Nil);
    };
    let reply = Reply::bulk(value.bytes());
    let when = match expire {
        Some(e) => Some(expire_ms(ctx, e, flags, "getex")?),
        None => None,
    };
    let (db, now) = (ctx.db(), ctx.now_ms);
    let absolute = flags & (EXAT | PXAT) != 0;
    match when {
        // Like Redis's checkAlreadyExpired: a replica sets the time instead of deleting.
        Some(at) if absolute && at <= now && !ctx.ks.passive_expiry => {
            ctx.remove(key);
            ctx.dirty(1);
            ctx.log_as_one(vec![arg("DEL"), Bytes::copy_from_slice(key)]);
            ctx.notify(notify::GENERIC, "del", key);
        }
        Some(at) => {
            ctx.set_expiry(key, Some(at));
            ctx.dirty(1);
            ctx.log_as_one(vec![arg("PEXPIREAT"), Bytes::copy_from_slice(key), arg(&at.to_string())]);
            ctx.notify(notify::GENERIC, "expire", key);
        }
        None if flags & PERSIST != 0 => {
            let had = ctx.ks.db(db).peek(key).is_some_and(|e| e.has_expire());
            if had {
                ctx.set_expiry(key, None);
                ctx.dirty(1);
                ctx.log_as_one(vec![arg("PERSIST"), Bytes::copy_from_slice(key)]);
                ctx.notify(notify::GENERIC, "persist", key);
            }
        }
        None => {}
    }
    Ok(reply)
}

/// ```text
/// MGET key [key ...]
/// ```
pub fn mget(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut out = Vec::with_capacity(args.len() - 1);
    for key in &args[1..] {
        out.push(match ctx.ks.get(db, key, now).map(|e| &e.value) {
            Some(Value::Str(s)) => Reply::bulk(s.bytes()),
            _ => Reply::Nil,
        });
    }
    Ok(Reply::Array(out))
}

fn mset_generic(ctx: &mut Ctx<'_>, args: &[Bytes], nx: bool) -> Result<Reply, CmdError> {
    if args.len().is_multiple_of(2) {
        let name = if nx { "msetnx" } else { "mset" };
        return Err(CmdError::Other(format!("ERR wrong number of arguments for '{name}' command").into()));
    }
    let (db, now) = (ctx.db(), ctx.now_ms);
    if nx {
        for pair in args[1..].chunks(2) {
            if ctx.ks.get_mut(db, &pair[0], now).is_some() {
                return Ok(Reply::Int(0));
            }
        }
    }
    for pair in args[1..].chunks(2) {
        store(ctx, &pair[0], &pair[1], StrEncoding::Auto, None);
        ctx.notify(notify::STRING, "set", &pair[0]);
    }
    ctx.dirty((args.len() as u64 - 1) / 2);
    Ok(if nx { Reply::Int(1) } else { Reply::OK })
}

/// ```text
/// MSET key value [key value ...]
/// ```
pub fn mset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    mset_generic(ctx, args, false)
}

/// ```text
/// MSETNX key value [key value ...]
/// ```
pub fn msetnx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    mset_generic(ctx, args, true)
}

/// ```text
/// APPEND key value
/// ```
pub fn append(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (key, tail) = (&args[1][..], &args[2][..]);
    let len = match lookup_str(ctx, key, true)? {
        None => {
            // A new key holds the argument itself, encoded as SET would.
            store(ctx, key, tail, StrEncoding::Auto, None);
            tail.len()
        }
        Some(s) => {
            if s.len() as i128 + tail.len() as i128 > max_bulk_len(ctx) {
                return Err(CmdError::StringTooLong);
            }
            ctx.change(key, |e| match &mut e.value {
                Value::Str(s) => {
                    s.vec_mut().extend_from_slice(tail);
                    s.set_enc(StrEncoding::Raw);
                    s.len()
                }
                _ => 0,
            })
            .unwrap_or(0)
        }
    };
    ctx.dirty(1);
    ctx.notify(notify::STRING, "append", key);
    Ok(Reply::Int(len as i64))
}

/// ```text
/// STRLEN key
/// ```
pub fn strlen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(Reply::Int(lookup_str(ctx, &args[1], false)?.map_or(0, |s| s.len() as i64)))
}

/// Redis's `incrDecrCommand`: the value is replaced in place, keeping its TTL.
fn incr_decr(ctx: &mut Ctx<'_>, key: &[u8], incr: i64) -> Result<Reply, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    // One hash computation, and the digits rewritten in the value's slot.
    let pos = ctx.ks.write_position(db, key, now);
    let old = match pos.map(|i| &ctx.ks.db(db).entry_at(i).value) {
        None => 0,
        Some(Value::Str(s)) => parse_i64(s.bytes()).ok_or(CmdError::NotInteger)?,
        Some(_) => return Err(CmdError::WrongType),
    };
    let value = old.checked_add(incr).ok_or(CmdError::Overflow)?;
    match pos {
        Some(i) => ctx.change_at(i, key, |e| {
            if let Value::Str(s) = &mut e.value {
                *s = StrValue::from_slice(crate::util::format_i64_into(value, &mut [0; 20]), StrEncoding::Auto);
            }
        }),
        None => store(ctx, key, crate::util::format_i64_into(value, &mut [0; 20]), StrEncoding::Auto, None),
    }
    ctx.dirty(1);
    ctx.notify(notify::STRING, "incrby", key);
    Ok(Reply::Int(value))
}

/// ```text
/// INCR key
/// ```
pub fn incr(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    incr_decr(ctx, &args[1], 1)
}

/// ```text
/// DECR key
/// ```
pub fn decr(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    incr_decr(ctx, &args[1], -1)
}

/// ```text
/// INCRBY key increment
/// ```
pub fn incrby(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let incr = arg_i64(&args[2])?;
    incr_decr(ctx, &args[1], incr)
}

/// ```text
/// DECRBY key decrement
/// ```
pub fn decrby(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let decr = arg_i64(&args[2])?;
    if decr == i64::MIN {
        return Err(CmdError::other("ERR decrement would overflow"));
    }
    incr_decr(ctx, &args[1], -decr)
}

/// ```text
/// INCRBYFLOAT key increment
/// ```
pub fn incrbyfloat(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let key = &args[1][..];
    let result = match lookup_str(ctx, key, true)? {
        None => incr_by_float(FloatBase::Int(0), &args[2]).map(|v| (false, v)),
        Some(s) => {
            // An integer-encoded value is read as the integer, any other as a string.
            let base = match parse_i64(s.bytes()) {
                Some(n) if s.is_int_encoded() => FloatBase::Int(n),
                _ => FloatBase::Str(s.bytes()),
            };
            incr_by_float(base, &args[2]).map(|v| (true, v))
        }
    };
    let (exists, data) = result.map_err(|e| match e {
        IncrFloatError::BaseNotFloat | IncrFloatError::IncrNotFloat => CmdError::NotFloat,
        IncrFloatError::NanOrInfinity => CmdError::other("ERR increment would produce NaN or Infinity"),
    })?;
    let value = Bytes::copy_from_slice(&data);
    if exists {
        ctx.change(key, |e| e.value = Value::Str(StrValue::with_enc(data, StrEncoding::NotInt)));
    } else {
        store(ctx, key, &data, StrEncoding::NotInt, None);
    }
    ctx.dirty(1);
    // Logged as the value it came to: float formatting must not differ on replay.
    ctx.log_as_one(vec![arg("SET"), Bytes::copy_from_slice(key), value.clone(), arg("KEEPTTL")]);
    ctx.notify(notify::STRING, "incrbyfloat", key);
    Ok(Reply::Bulk(value))
}

/// ```text
/// GETRANGE key start end
/// ```
pub fn getrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let mut start = arg_i64(&args[2])?;
    let mut end = arg_i64(&args[3])?;
    let empty = || Reply::Bulk(Bytes::new());
    let Some(s) = lookup_str(ctx, &args[1], false)? else {
        return Ok(empty());
    };
    let len = s.len() as i64;
    if start < 0 && end < 0 && start > end {
        return Ok(empty());
    }
    if start < 0 {
        start = start.wrapping_add(len);
    }
    if end < 0 {
        end = end.wrapping_add(len);
    }
    start = start.max(0);
    end = end.max(0);
    if end >= len {
        end = len - 1;
    }
    if len == 0 || start > end {
        return Ok(empty());
    }
    Ok(Reply::bulk(&s.bytes()[start as usize..=end as usize]))
}

/// ```text
/// SUBSTR key start end
/// ```
pub fn substr(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    getrange(ctx, args)
}

/// ```text
/// SETRANGE key offset value
/// ```
pub fn setrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (key, value) = (&args[1][..], &args[3][..]);
    let offset = arg_i64(&args[2])?;
    if offset < 0 {
        return Err(CmdError::other("ERR offset is out of range"));
    }
    let too_long = offset as i128 + value.len() as i128 > max_bulk_len(ctx);
    let exists = match lookup_str(ctx, key, true)? {
        None if value.is_empty() => return Ok(Reply::Int(0)),
        Some(s) if value.is_empty() => return Ok(Reply::Int(s.len() as i64)),
        found => found.is_some(),
    };
    if too_long {
        return Err(CmdError::StringTooLong);
    }
    let offset = offset as usize;
    let end = offset + value.len();
    let len = if exists {
        ctx.change(key, |e| match &mut e.value {
            Value::Str(s) => {
                if s.len() < end {
                    s.vec_mut().resize(end, 0);
                }
                s.vec_mut()[offset..end].copy_from_slice(value);
                s.set_enc(StrEncoding::Raw);
                s.len()
            }
            _ => 0,
        })
        .unwrap_or(0)
    } else {
        let mut data = vec![0u8; end];
        data[offset..].copy_from_slice(value);
        store(ctx, key, &data, StrEncoding::Raw, None);
        end
    };
    ctx.dirty(1);
    ctx.notify(notify::STRING, "setrange", key);
    Ok(Reply::Int(len as i64))
}

/// ```text
/// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN min-match-len] [WITHMATCHLEN]
/// ```
pub fn lcs(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut fetch = |key: &[u8]| match ctx.ks.get(db, key, now).map(|e| &e.value) {
        None => Ok(Vec::new()),
        Some(Value::Str(s)) => Ok(s.bytes().to_vec()),
        Some(_) => Err(CmdError::other("ERR The specified keys must contain string values")),
    };
    let (a, b) = (fetch(&args[1]), fetch(&args[2]));
    let (a, b) = (a?, b?);
    let (mut getlen, mut getidx, mut withmatchlen, mut minmatchlen) = (false, false, false, 0i64);
    let mut j = 3;
    while j < args.len() {
        let opt = &args[j][..];
        if opt_is(opt, "IDX") {
            getidx = true;
        } else if opt_is(opt, "LEN") {
            getlen = true;
        } else if opt_is(opt, "WITHMATCHLEN") {
            withmatchlen = true;
        } else if opt_is(opt, "MINMATCHLEN") && j + 1 < args.len() {
            minmatchlen = arg_i64(&args[j + 1])?.max(0);
            j += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    if getidx && getlen {
        return Err(CmdError::other("ERR If you want both the length and indexes, please just use IDX."));
    }
    if a.len() as u64 >= u32::MAX as u64 - 1 || b.len() as u64 >= u32::MAX as u64 - 1 {
        return Err(CmdError::other("ERR String too long for LCS"));
    }
    let (alen, blen) = (a.len(), b.len());
    let cells = (alen as u64 + 1) * (blen as u64 + 1);
    if cells as i128 * 4 > max_bulk_len(ctx) {
        return Err(CmdError::other("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"));
    }
    let mut table: Vec<u32> = Vec::new();
    if table.try_reserve_exact(cells as usize).is_err() {
        return Err(CmdError::other("ERR Insufficient memory, failed allocating transient memory for LCS"));
    }
    table.resize(cells as usize, 0);
    let w = blen + 1;
    for i in 1..=alen {
        for j in 1..=blen {
            table[i * w + j] =
                if a[i - 1] == b[j - 1] { table[(i - 1) * w + j - 1] + 1 } else { table[(i - 1) * w + j].max(table[i * w + j - 1]) };
        }
    }
    let total = table[alen * w + blen];
    if getlen {
        return Ok(Reply::Int(total as i64));
    }

    // Walk back from the end, building the LCS and the ranges of matches (Redis's loop).
    let mut result = vec![0u8; total as usize];
    let mut idx = total as usize;
    let mut matches = Vec::new();
    let (mut a_start, mut a_end, mut b_start, mut b_end) = (alen, 0, 0, 0);
    let (mut i, mut j) = (alen, blen);
    while i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            result[idx - 1] = a[i - 1];
            if a_start == alen {
                (a_start, a_end, b_start, b_end) = (i - 1, i - 1, j - 1, j - 1);
            } else if a_start == i && b_start == j {
                a_start -= 1;
                b_start -= 1;
            } else {
                emit = true;
            }
            if a_start == 0 || b_start == 0 {
                emit = true;
            }
            idx -= 1;
            i -= 1;
            j -= 1;
        } else {
            if table[(i - 1) * w + j] > table[i * w + j - 1] {
                i -= 1;
            } else {
                j -= 1;
            }
            if a_start != alen {
                emit = true;
            }
        }
        let match_len = a_end.wrapping_sub(a_start).wrapping_add(1) as u32;
        if emit {
            if getidx && (minmatchlen == 0 || match_len as i64 >= minmatchlen) {
                let mut m = vec![
                    Reply::Array(vec![Reply::Int(a_start as i64), Reply::Int(a_end as i64)]),
                    Reply::Array(vec![Reply::Int(b_start as i64), Reply::Int(b_end as i64)]),
                ];
                if withmatchlen {
                    m.push(Reply::Int(match_len as i64));
                }
                matches.push(Reply::Array(m));
            }
            a_start = alen;
        }
    }
    if getidx {
        return Ok(Reply::Map(vec![(Reply::bulk(b"matches"), Reply::Array(matches)), (Reply::bulk(b"len"), Reply::Int(total as i64))]));
    }
    Ok(Reply::Bulk(Bytes::from(result)))
}
