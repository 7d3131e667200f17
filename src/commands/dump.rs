//! DUMP and RESTORE: a value as Redis 7.0's serialized form (`db/rdb.rs`), so values move
//! between Vermilion and Redis in both directions.

use bytes::Bytes;

use super::{arg_i64, CmdError, Ctx};
use crate::db::rdb::{self, RdbError};
use crate::db::{lru_clock, Entry, Value, LFU_INIT_VAL};
use crate::notify;
use crate::protocol::Reply;
use crate::util::eq_ignore_case;

/// ```text
/// DUMP key
/// ```
pub fn dump(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let Some(entry) = ctx.ks.get(db, &args[1], now) else { return Ok(Reply::Nil) };
    let payload = match &entry.value {
        Value::Str(s) => rdb::encode_str(&s.data),
        Value::List(l) => rdb::encode_elements(false, l.len(), l.iter()),
        Value::Set(s) => rdb::encode_elements(true, s.len(), s.iter()),
        Value::Hash(h) => rdb::encode_hash(h.len(), h.iter()),
        Value::ZSet(z) => rdb::encode_zset(z.len(), z.iter()),
    };
    Ok(Reply::Bulk(Bytes::from(payload)))
}

/// ```text
/// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]
/// ```
pub fn restore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq): (Option<i64>, Option<i64>) = (None, None);
    let mut j = 4;
    while j < args.len() {
        let more = j + 1 < args.len();
        if eq_ignore_case(&args[j], "replace") {
            replace = true;
        } else if eq_ignore_case(&args[j], "absttl") {
            absttl = true;
        } else if eq_ignore_case(&args[j], "idletime") && more && freq.is_none() {
            let v = arg_i64(&args[j + 1])?;
            if v < 0 {
                return Err(CmdError::other("ERR Invalid IDLETIME value, must be >= 0"));
            }
            idle = Some(v);
            j += 1;
        } else if eq_ignore_case(&args[j], "freq") && more && idle.is_none() {
            let v = arg_i64(&args[j + 1])?;
            if !(0..=255).contains(&v) {
                return Err(CmdError::other("ERR Invalid FREQ value, must be >= 0 and <= 255"));
            }
            freq = Some(v);
            j += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    let key = &args[1];
    if !replace && ctx.ks.exists(db, key, now) {
        return Err(CmdError::other("BUSYKEY Target key name already exists."));
    }
    let ttl = arg_i64(&args[2])?;
    if ttl < 0 {
        return Err(CmdError::other("ERR Invalid TTL value, must be >= 0"));
    }
    let limits = super::build_limits(&ctx.server.config);
    let value = rdb::decode(&args[3]).and_then(|d| d.into_value(&limits)).map_err(|e| match e {
        RdbError::VersionOrChecksum => CmdError::other("ERR DUMP payload version or checksum are wrong"),
        RdbError::BadFormat => CmdError::other("ERR Bad data format"),
    })?;
    let existed = replace && ctx.ks.db_mut(db).remove(key).is_some();
    if existed {
        ctx.dirty(1);
    }
    let expire_at = match ttl {
        0 => None,
        t if absttl => Some(t),
        t => Some(now.saturating_add(t)),
    };
    // Already expired: the key is not created (a replaced one stays deleted).
    if expire_at.is_some_and(|at| at <= now) {
        if existed {
            ctx.notify(notify::GENERIC, "del", key);
        }
        return Ok(Reply::OK);
    }
    let mut entry = Entry::new(value, expire_at, now);
    if ctx.server.lfu_policy {
        if let Some(f) = freq {
            entry.lru = ((((f as u8) ^ LFU_INIT_VAL) as u32) << 24) | lru_clock(now);
        }
    } else if let Some(secs) = idle {
        entry.lru = (entry.lru & !crate::db::LRU_CLOCK_MAX) | lru_clock(now.saturating_sub(secs.saturating_mul(1000)));
    }
    ctx.ks.db_mut(db).insert_entry(key.clone(), entry);
    ctx.dirty(1);
    if !existed {
        ctx.notify(notify::NEW, "new", key);
    }
    ctx.notify(notify::GENERIC, "restore", key);
    Ok(Reply::OK)
}
