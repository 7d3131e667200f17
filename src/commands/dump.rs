//! DUMP and RESTORE: a value as Redis 7.0's serialized form (`db/rdb.rs`), so values move
//! between Vermilion and Redis in both directions.

use bytes::Bytes;

use super::effects::arg;
use super::{arg_i64, CmdError, Ctx};
use crate::db::rdb::{self, RdbError};
use crate::db::Entry;
use crate::notify;
use crate::protocol::Reply;
use crate::util::eq_ignore_case;

/// ```text
/// DUMP key
/// ```
pub fn dump(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let Some(entry) = ctx.ks.get(db, &args[1], now) else { return Ok(Reply::Nil) };
    Ok(Reply::Bulk(Bytes::from(rdb::dump_payload(&entry.value))))
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
    let existed = replace && ctx.remove(key).is_some();
    // One change either way (Redis counts RESTORE REPLACE once).
    if existed {
        ctx.dirty(1);
        ctx.log_as_one(vec![arg("DEL"), key.clone()]);
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
    let mut entry = Entry::new(value, now);
    entry.apply_access_hint(ctx.server.settings.lfu_policy, idle, freq.map(|f| f as u8), now);
    ctx.add_entry_in(db, key, entry, expire_at);
    if !existed {
        ctx.dirty(1);
    }
    // Logged with the TTL made absolute (a replay at any later time sets the same expiry).
    let at = arg(&expire_at.unwrap_or(0).to_string());
    ctx.log_as_one(vec![arg("RESTORE"), key.clone(), at, args[3].clone(), arg("REPLACE"), arg("ABSTTL")]);
    // Redis's dbAdd raises `new` even after REPLACE deleted the old value.
    ctx.notify(notify::NEW, "new", key);
    ctx.notify(notify::GENERIC, "restore", key);
    Ok(Reply::OK)
}

/// ```text
/// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password]
///     [AUTH2 username password] [KEYS key [key ...]]
/// ```
///
/// Like Redis, the transfer is synchronous: the executor waits for the target, at most
/// `timeout` ms per step.
pub fn migrate(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (mut copy, mut replace) = (false, false);
    let mut auth: Option<(Option<Bytes>, Bytes)> = None;
    let mut keys: Vec<Bytes> = vec![args[3].clone()];
    let mut j = 6;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if eq_ignore_case(&args[j], "copy") {
            copy = true;
        } else if eq_ignore_case(&args[j], "replace") {
            replace = true;
        } else if eq_ignore_case(&args[j], "auth") && more >= 1 {
            ctx.redact_arg(j + 1);
            auth = Some((None, args[j + 1].clone()));
            j += 1;
        } else if eq_ignore_case(&args[j], "auth2") && more >= 2 {
            ctx.redact_arg(j + 1);
            ctx.redact_arg(j + 2);
            auth = Some((Some(args[j + 1].clone()), args[j + 2].clone()));
            j += 2;
        } else if eq_ignore_case(&args[j], "keys") {
            if !args[3].is_empty() {
                return Err(CmdError::other("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string"));
            }
            keys = args[j + 1..].to_vec();
            break;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    let timeout = arg_i64(&args[5])?;
    let dbid = arg_i64(&args[4])?;
    let timeout = std::time::Duration::from_millis(if timeout <= 0 { 1000 } else { timeout as u64 });
    let (db, now) = (ctx.db(), ctx.now_ms);
    // The keys that exist, with their payloads and remaining TTLs.
    let mut moving = Vec::new();
    for key in keys {
        if let Some((e, expire_at)) = ctx.ks.get_with_expiry(db, &key, now) {
            let ttl = expire_at.map_or(0, |at| (at - now).max(1));
            moving.push((key, ttl, rdb::dump_payload(&e.value)));
        }
    }
    if moving.is_empty() {
        return Ok(Reply::status("NOKEY"));
    }
    let mut out = Vec::new();
    let encode = |out: &mut Vec<u8>, argv: &[&[u8]]| crate::aof::format::encode_command(out, argv);
    if let Some((user, pass)) = &auth {
        match user {
            Some(u) => encode(&mut out, &[b"AUTH", u, pass]),
            None => encode(&mut out, &[b"AUTH", pass]),
        }
    }
    let dbtext = dbid.to_string();
    encode(&mut out, &[b"SELECT", dbtext.as_bytes()]);
    // Between cluster nodes the target is importing the slot: RESTORE-ASKING is served
    // there without ASKING, as Redis's MIGRATE sends it.
    let restore: &[u8] = if ctx.server.cluster.is_some() { b"RESTORE-ASKING" } else { b"RESTORE" };
    for (key, ttl, payload) in &moving {
        let ttl = ttl.to_string();
        if replace {
            encode(&mut out, &[restore, key, ttl.as_bytes(), payload, b"REPLACE"]);
        } else {
            encode(&mut out, &[restore, key, ttl.as_bytes(), payload]);
        }
    }
    let replies = match exchange(&args[1], &args[2], timeout, &out, moving.len() + 1 + auth.is_some() as usize) {
        Ok(r) => r,
        Err(e) => return Err(CmdError::Other(e.into())),
    };
    // AUTH and SELECT first: an error there stops everything.
    let setup = 1 + auth.is_some() as usize;
    if let Some(err) = replies[..setup].iter().find_map(|r| r.strip_prefix('-')) {
        return Err(CmdError::Other(format!("ERR Target instance replied with error: {err}").into()));
    }
    let mut first_error = None;
    // What left for the other server is logged as deleted here (never MIGRATE again on replay).
    let mut deleted = Vec::new();
    for ((key, _, _), reply) in moving.iter().zip(&replies[setup..]) {
        match reply.strip_prefix('-') {
            Some(err) => {
                first_error.get_or_insert_with(|| err.to_string());
            }
            None if !copy && ctx.remove_in(db, key).is_some() => {
                deleted.push(vec![arg("DEL"), key.clone()]);
                ctx.dirty(1);
                ctx.notify(notify::GENERIC, "del", key);
            }
            None => {}
        }
    }
    ctx.log_as(deleted);
    match first_error {
        Some(err) => Err(CmdError::Other(format!("ERR Target instance replied with error: {err}").into())),
        None => Ok(Reply::OK),
    }
}

/// Sends `out` to host:port and reads `n` single-line replies (the first line of each).
fn exchange(host: &[u8], port: &[u8], timeout: std::time::Duration, out: &[u8], n: usize) -> Result<Vec<String>, &'static str> {
    use std::io::{BufRead, Write};
    use std::net::ToSocketAddrs;
    const WRITE_ERR: &str = "IOERR error or timeout writing to target instance";
    const READ_ERR: &str = "IOERR error or timeout reading to target instance";
    let addr = format!("{}:{}", String::from_utf8_lossy(host), String::from_utf8_lossy(port));
    let addr = addr.to_socket_addrs().ok().and_then(|mut a| a.next()).ok_or(WRITE_ERR)?;
    let mut sock = std::net::TcpStream::connect_timeout(&addr, timeout).map_err(|_| WRITE_ERR)?;
    sock.set_write_timeout(Some(timeout)).map_err(|_| WRITE_ERR)?;
    sock.set_read_timeout(Some(timeout)).map_err(|_| READ_ERR)?;
    sock.write_all(out).map_err(|_| WRITE_ERR)?;
    let mut reader = std::io::BufReader::new(sock);
    let mut replies = Vec::with_capacity(n);
    for _ in 0..n {
        let mut line = String::new();
        if reader.read_line(&mut line).map_err(|_| READ_ERR)? == 0 {
            return Err(READ_ERR);
        }
        replies.push(line.trim_end().to_string());
    }
    Ok(replies)
}
