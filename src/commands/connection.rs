//! Connection commands: PING, ECHO, QUIT, SELECT, HELLO, AUTH, RESET and CLIENT.

use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::{arg_i64, help, help_reply, CmdError, Ctx};
use crate::config::P;
use crate::protocol::{ProtocolVersion, Reply};
use crate::state::Client;
use crate::util::eq_ignore_case;

/// ```text
/// PING [message]
/// ```
pub fn ping(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if ctx.client.in_subscribed_mode() && args.len() <= 2 {
        // Subscribed RESP2 clients get PING's answer in the shape of a message.
        let payload = args.get(1).cloned().unwrap_or_default();
        return Ok(Reply::Array(vec![Reply::bulk(b"pong"), Reply::Bulk(payload)]));
    }
    match args.len() {
        1 => Ok(Reply::status("PONG")),
        2 => Ok(Reply::Bulk(args[1].clone())),
        _ => Err(CmdError::other("ERR wrong number of arguments for 'ping' command")),
    }
}

/// ```text
/// ECHO message
/// ```
pub fn echo(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(Reply::Bulk(args[1].clone()))
}

/// ```text
/// QUIT
/// ```
pub fn quit(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    ctx.client.close_after_reply = true;
    Ok(Reply::OK)
}

/// ```text
/// SELECT index
/// ```
pub fn select(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let db = super::keys::db_index(ctx, &args[1])?;
    if ctx.server.cluster.is_some() && db != 0 {
        return Err(CmdError::other("ERR SELECT is not allowed in cluster mode"));
    }
    ctx.client.db = db;
    Ok(Reply::OK)
}

const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

/// Checks a username/password pair; a failure goes to the ACL log, as in Redis.
/// `command` is the name as the client typed it (the log's object, as in Redis).
fn check_credentials(ctx: &mut Ctx<'_>, command: &[u8], user: &[u8], pass: &[u8]) -> bool {
    if ctx.server.acl.authenticate(user, pass) {
        return true;
    }
    let username = String::from_utf8_lossy(user).into_owned();
    let context = if ctx.client.txn.exec_queued.is_some() { "multi" } else { "toplevel" };
    log_denial(ctx, "auth", context, String::from_utf8_lossy(command).into_owned(), username);
    false
}

/// Adds an ACL LOG entry for the running client.
pub fn log_denial(ctx: &mut Ctx<'_>, reason: &'static str, context: &'static str, object: String, username: String) {
    let entry = crate::acl::LogEntry {
        count: 1,
        reason,
        context,
        object,
        username,
        ctime_ms: ctx.now_ms,
        client_info: client_line(ctx.client, None),
    };
    let max = ctx.server.config.get_int(P::AcllogMaxLen).max(0) as usize;
    ctx.server.acl.log_denial(entry, max);
}

/// ```text
/// AUTH [username] password
/// ```
pub fn auth(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if args.len() > 3 {
        return Err(CmdError::Syntax);
    }
    (1..args.len()).for_each(|j| ctx.redact_arg(j));
    let (user, pass): (&[u8], &[u8]) = if args.len() == 2 { (b"default", &args[1]) } else { (&args[1], &args[2]) };
    if args.len() == 2 && ctx.server.acl.users.get("default").is_some_and(|u| u.nopass) {
        return Err(CmdError::other(
            "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
        ));
    }
    if check_credentials(ctx, &args[0], user, pass) {
        ctx.client.set_authenticated(true);
        ctx.client.user = String::from_utf8_lossy(user).into_owned();
        Ok(Reply::OK)
    } else {
        Err(CmdError::other(WRONGPASS))
    }
}

/// ```text
/// HELLO [protover [AUTH username password] [SETNAME clientname]]
/// ```
pub fn hello(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let mut proto = None;
    if args.len() >= 2 {
        let v =
            crate::util::parse_i64(&args[1]).ok_or_else(|| CmdError::other("ERR Protocol version is not an integer or out of range"))?;
        if !(2..=3).contains(&v) {
            return Err(CmdError::other("NOPROTO unsupported protocol version"));
        }
        proto = Some(if v == 3 { ProtocolVersion::Resp3 } else { ProtocolVersion::Resp2 });
    }
    // Redis 7.0 applies each option as it reads it: a name set before a failing AUTH or a
    // bad option stays.
    let mut i = 2;
    while i < args.len() {
        let more = args.len() - i - 1;
        if eq_ignore_case(&args[i], "auth") && more >= 2 {
            ctx.redact_arg(i + 1);
            ctx.redact_arg(i + 2);
            let (user, pass) = (&args[i + 1], &args[i + 2]);
            if !check_credentials(ctx, &args[0], user, pass) {
                return Err(CmdError::other(WRONGPASS));
            }
            ctx.client.set_authenticated(true);
            ctx.client.user = String::from_utf8_lossy(user).into_owned();
            i += 3;
        } else if eq_ignore_case(&args[i], "setname") && more >= 1 {
            let name = &args[i + 1];
            validate_client_name(name)?;
            ctx.client.name = (!name.is_empty()).then(|| name.clone());
            i += 2;
        } else {
            return Err(CmdError::Other(format!("ERR Syntax error in HELLO option '{}'", String::from_utf8_lossy(&args[i])).into()));
        }
    }
    if !ctx.client.authenticated {
        return Err(CmdError::other("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"));
    }
    if let Some(p) = proto {
        ctx.client.set_proto(p);
    }
    let version = if ctx.client.proto == ProtocolVersion::Resp3 { 3 } else { 2 };
    Ok(Reply::Map(vec![
        (Reply::bulk(b"server"), Reply::bulk(b"redis")),
        (Reply::bulk(b"version"), Reply::bulk(crate::REDIS_VERSION.as_bytes())),
        (Reply::bulk(b"proto"), Reply::Int(version)),
        (Reply::bulk(b"id"), Reply::Int(ctx.client.id as i64)),
        (Reply::bulk(b"mode"), Reply::bulk(b"standalone")),
        (Reply::bulk(b"role"), Reply::bulk(b"master")),
        (Reply::bulk(b"modules"), Reply::Array(Vec::new())),
    ]))
}

/// ```text
/// RESET
/// ```
pub fn reset(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    super::transactions::discard_transaction(ctx);
    super::pubsub::unsubscribe_all(ctx);
    if ctx.client.tracking.take().is_some() {
        ctx.server.tracking.clients -= 1;
        let id = ctx.client.id;
        ctx.server.tracking.bcast.retain(|c| *c != id);
    }
    let client = &mut *ctx.client;
    client.db = 0;
    client.set_proto(ProtocolVersion::Resp2);
    client.name = None;
    let authed = ctx.server.acl.default_needs_no_auth();
    client.set_authenticated(authed);
    client.user = "default".into();
    Ok(Reply::status("RESET"))
}

fn validate_client_name(name: &[u8]) -> Result<(), CmdError> {
    if name.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        return Err(CmdError::other("ERR Client names cannot contain spaces, newlines or special characters."));
    }
    Ok(())
}

pub fn client_id(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(Reply::Int(ctx.client.id as i64))
}

pub fn client_setname(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    validate_client_name(&args[2])?;
    ctx.client.name = (!args[2].is_empty()).then(|| args[2].clone());
    Ok(Reply::OK)
}

pub fn client_getname(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(ctx.client.name.clone().map_or(Reply::Nil, Reply::Bulk))
}

pub fn client_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(help_reply(help::CLIENT))
}

/// The class CLIENT LIST/KILL TYPE filters on (replicas and masters join with replication).
fn client_type(c: &Client) -> &'static str {
    if c.replica.is_some() {
        "replica"
    } else if c.subs.channels.is_empty() && c.subs.patterns.is_empty() && c.subs.shard_channels.is_empty() {
        "normal"
    } else {
        "pubsub"
    }
}

/// One CLIENT LIST line, in Redis 7.0's field order. `current`: the command the client is
/// running (the caller's own line), whose bytes are still in Redis's query buffer and
/// whose arguments are its `argv-mem`.
pub fn client_line(c: &Client, current: Option<&[Bytes]>) -> String {
    let age = c.created.elapsed().as_secs();
    let idle = (crate::clock::now_ms() - c.last_interaction_ms).max(0) / 1000;
    // The buffers' real figures: the task's query buffer, the arguments of the running
    // command, the queued commands, the executor's output and what the task still holds.
    let argv_mem: u64 = current.map_or(c.flags.argv_partial.load(Ordering::Relaxed), |a| a.iter().map(|x| x.len() as u64).sum());
    let request: u64 = current.map_or(0, |a| {
        let digits = |n: usize| n.to_string().len() as u64;
        3 + digits(a.len()) + a.iter().map(|x| 5 + digits(x.len()) + x.len() as u64).sum::<u64>()
    });
    let qbuf = c.flags.qbuf.load(Ordering::Relaxed) + request;
    let qbuf_cap = c.flags.qbuf_cap.load(Ordering::Relaxed).max(qbuf);
    let multi_mem: u64 = c.txn.multi.as_ref().map_or(0, |q| {
        q.iter()
            .map(|(_, args)| {
                (std::mem::size_of::<crate::state::QueuedCommand>()
                    + args.iter().map(|a| a.len() + std::mem::size_of::<Bytes>()).sum::<usize>()) as u64
            })
            .sum()
    });
    let (rbs, obl) = (c.out.capacity() as u64, c.out.len() as u64);
    let omem = c.flags.task_pending.load(Ordering::Relaxed);
    let oll = (omem > 0) as u64;
    let tot_mem = std::mem::size_of::<Client>() as u64 + qbuf_cap + argv_mem + multi_mem + rbs + omem;
    let name = c.name.as_ref().map(|n| String::from_utf8_lossy(n).into_owned()).unwrap_or_default();
    let resp = if c.proto == ProtocolVersion::Resp3 { 3 } else { 2 };
    // Redis's letters, in Redis's order (catClientInfoString).
    let tracking = c.tracking.as_ref();
    let letters = [
        (c.monitor, 'O'),
        (c.replica.is_some(), 'S'),
        (!(c.subs.channels.is_empty() && c.subs.patterns.is_empty() && c.subs.shard_channels.is_empty()), 'P'),
        (c.txn.multi.is_some() || c.txn.exec_queued.is_some(), 'x'),
        (c.blocked.is_some(), 'b'),
        (tracking.is_some(), 't'),
        (tracking.is_some_and(|t| t.broken_redirect), 'R'),
        (tracking.is_some_and(|t| t.bcast), 'B'),
        (c.txn.cas_dirty, 'd'),
        (c.no_evict, 'e'),
    ];
    let mut flags: String = letters.iter().filter(|(on, _)| *on).map(|(_, l)| *l).collect();
    if flags.is_empty() {
        flags.push('N');
    }
    let multi = c.txn.multi.as_ref().map(|q| q.len()).or(c.txn.exec_queued).map_or(-1, |n| n as i64);
    format!(
        "id={} addr={} laddr={} fd=8 name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} qbuf={} qbuf-free={} argv-mem={} multi-mem={} rbs={} rbp={} obl={} oll={} omem={} tot-mem={} events=r cmd={} user={} redir=-1 resp={}\n",
        c.id,
        c.addr,
        c.laddr,
        name,
        age,
        idle,
        flags,
        c.db,
        c.subs.channels.len(),
        c.subs.patterns.len(),
        c.subs.shard_channels.len(),
        multi,
        qbuf,
        qbuf_cap - qbuf,
        argv_mem,
        multi_mem,
        rbs,
        rbs,
        obl,
        oll,
        omem,
        tot_mem,
        c.last_cmd,
        c.user,
        resp
    )
}

pub fn client_info(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(Reply::Verbatim(*b"txt", Bytes::from(client_line(ctx.client, Some(args)))))
}

/// ```text
/// CLIENT LIST [TYPE NORMAL|MASTER|REPLICA|PUBSUB] [ID client-id ...]
/// ```
pub fn client_list(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    // As in Redis: either TYPE t, or ID followed by ids (listed in the order given, an id
    // with no client skipped), never both.
    let mut kind: Option<String> = None;
    let mut ids: Option<Vec<i64>> = None;
    if args.len() == 4 && eq_ignore_case(&args[2], "type") {
        kind = Some(client_type_arg(&args[3])?);
    } else if args.len() >= 4 && eq_ignore_case(&args[2], "id") {
        let list: Option<Vec<i64>> = args[3..].iter().map(|a| crate::util::parse_i64(a)).collect();
        ids = Some(list.ok_or_else(|| CmdError::other("ERR Invalid client ID"))?);
    } else if args.len() != 2 {
        return Err(CmdError::Syntax);
    }
    let mut text = String::new();
    if let Some(ids) = ids {
        for id in ids.into_iter().filter(|id| *id > 0).map(|id| id as u64) {
            let found = if id == ctx.client.id { Some(&*ctx.client) } else { ctx.server.clients.get(&id).map(|c| &**c) };
            if let Some(c) = found {
                let current = (c.id == ctx.client.id).then_some(args);
                text.push_str(&client_line(c, current));
            }
        }
        return Ok(Reply::Verbatim(*b"txt", Bytes::from(text)));
    }
    let mut all: Vec<&Client> = ctx.server.clients.values().map(|c| &**c).collect();
    all.push(ctx.client);
    all.sort_by_key(|c| c.id);
    for c in all {
        if kind.as_deref().is_some_and(|k| k != client_type(c)) {
            continue;
        }
        let current = (c.id == ctx.client.id).then_some(args);
        text.push_str(&client_line(c, current));
    }
    Ok(Reply::Verbatim(*b"txt", Bytes::from(text)))
}

/// A TYPE argument of CLIENT LIST/KILL, as `client_type` names it (`slave` is `replica`).
fn client_type_arg(arg: &[u8]) -> Result<String, CmdError> {
    let t = String::from_utf8_lossy(arg).to_lowercase();
    if !matches!(t.as_str(), "normal" | "master" | "replica" | "slave" | "pubsub") {
        return Err(CmdError::Other(format!("ERR Unknown client type '{}'", String::from_utf8_lossy(arg)).into()));
    }
    Ok(if t == "slave" { "replica".into() } else { t })
}

/// ```text
/// CLIENT KILL ip:port
/// CLIENT KILL [ID id] [ADDR ip:port] [LADDR ip:port] [TYPE type] [USER name] [SKIPME yes|no]
/// ```
pub fn client_kill(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if args.len() == 3 {
        // Old form: one address, +OK or an error.
        let addr = &args[2][..];
        if ctx.client.addr.as_bytes() == addr {
            ctx.client.close_after_reply = true;
            return Ok(Reply::OK);
        }
        let target = ctx.server.clients.values().find(|c| c.addr.as_bytes() == addr).map(|c| c.id);
        return match target {
            Some(id) => {
                ctx.server.kill_list.push(id);
                Ok(Reply::OK)
            }
            None => Err(CmdError::other("ERR No such client")),
        };
    }
    if !args.len().is_multiple_of(2) {
        return Err(CmdError::Syntax);
    }
    let mut id = None;
    let mut addr = None;
    let mut laddr = None;
    let mut user = None;
    let mut kind = None;
    let mut skipme = true;
    for pair in args[2..].chunks(2) {
        let (opt, val) = (&pair[0], &pair[1]);
        if eq_ignore_case(opt, "id") {
            match crate::util::parse_i64(val) {
                Some(n) if n > 0 => id = Some(n as u64),
                _ => return Err(CmdError::other("ERR client-id should be greater than 0")),
            }
        } else if eq_ignore_case(opt, "addr") {
            addr = Some(val.clone());
        } else if eq_ignore_case(opt, "laddr") {
            laddr = Some(val.clone());
        } else if eq_ignore_case(opt, "user") {
            if !std::str::from_utf8(val).is_ok_and(|name| ctx.server.acl.users.contains_key(name)) {
                return Err(CmdError::Other(format!("ERR No such user '{}'", String::from_utf8_lossy(val)).into()));
            }
            user = Some(val.clone());
        } else if eq_ignore_case(opt, "type") {
            kind = Some(client_type_arg(val)?);
        } else if eq_ignore_case(opt, "skipme") {
            if eq_ignore_case(val, "yes") {
                skipme = true;
            } else if eq_ignore_case(val, "no") {
                skipme = false;
            } else {
                return Err(CmdError::Syntax);
            }
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let matches = |c: &Client| {
        id.is_none_or(|id| c.id == id)
            && addr.as_ref().is_none_or(|a| c.addr.as_bytes() == &a[..])
            && laddr.as_ref().is_none_or(|a| c.laddr.as_bytes() == &a[..])
            && user.as_ref().is_none_or(|u| c.user.as_bytes() == &u[..])
            && kind.as_deref().is_none_or(|k| k == client_type(c))
    };
    let mut killed = 0;
    // The master is not a client here: killing it drops the link, which reconnects.
    if kind.as_deref() == Some("master") && ctx.server.repl.master.is_some() {
        ctx.server.repl.kill_master = true;
        killed += 1;
    }
    let targets: Vec<u64> = ctx.server.clients.values().filter(|c| matches(c)).map(|c| c.id).collect();
    for t in targets {
        ctx.server.kill_list.push(t);
        killed += 1;
    }
    if !skipme && matches(ctx.client) {
        ctx.client.close_after_reply = true;
        killed += 1;
    }
    Ok(Reply::Int(killed))
}

/// ```text
/// CLIENT REPLY ON|OFF|SKIP
/// ```
pub fn client_reply(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if eq_ignore_case(&args[2], "on") {
        // Answered even when it is the command a SKIP silences.
        ctx.client.replies.reply_off = false;
        ctx.client.replies.reply_skip_next = false;
        ctx.client.replies.reply_skip = false;
        Ok(Reply::OK)
    } else if eq_ignore_case(&args[2], "off") {
        ctx.client.replies.reply_off = true;
        Ok(Reply::NoReply)
    } else if eq_ignore_case(&args[2], "skip") {
        if !ctx.client.replies.reply_off {
            ctx.client.replies.reply_skip_next = true;
        }
        Ok(Reply::NoReply)
    } else {
        Err(CmdError::Syntax)
    }
}

/// ```text
/// CLIENT UNBLOCK client-id [TIMEOUT|ERROR]
/// ```
/// 1 when the client waits in a blocking command (BLPOP and friends, WAIT): the executor
/// answers it right after this command, as at its deadline or with the UNBLOCKED error. A
/// client held by CLIENT PAUSE is not blocked in this sense.
pub fn client_unblock(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if args.len() > 4 {
        return Err(super::subcommand_syntax_error(args));
    }
    // Redis checks the reason before the id.
    let error = match args.get(3) {
        None => false,
        Some(r) if eq_ignore_case(r, "timeout") => false,
        Some(r) if eq_ignore_case(r, "error") => true,
        Some(_) => return Err(CmdError::other("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")),
    };
    let id = crate::util::parse_i64(&args[2]).ok_or(CmdError::NotInteger)?;
    let blocked = u64::try_from(id)
        .ok()
        .and_then(|id| ctx.server.clients.get(&id))
        .is_some_and(|c| c.blocked.as_ref().is_some_and(|b| !b.keys.is_empty() || b.deadline_ms.is_some()) || c.wait_target.is_some());
    if !blocked {
        return Ok(Reply::Int(0));
    }
    ctx.server.unblock_list.push((id as u64, error));
    Ok(Reply::Int(1))
}

/// ```text
/// CLIENT NO-EVICT ON|OFF
/// ```
pub fn client_no_evict(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if eq_ignore_case(&args[2], "on") {
        ctx.client.no_evict = true;
    } else if eq_ignore_case(&args[2], "off") {
        ctx.client.no_evict = false;
    } else {
        return Err(CmdError::Syntax);
    }
    Ok(Reply::OK)
}

/// ```text
/// CLIENT PAUSE timeout [WRITE|ALL]
/// ```
pub fn client_pause(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let all = match args.get(3) {
        None => true,
        Some(m) if eq_ignore_case(m, "all") => true,
        Some(m) if eq_ignore_case(m, "write") => false,
        Some(_) => return Err(CmdError::other("ERR CLIENT PAUSE mode must be WRITE or ALL")),
    };
    let ms = crate::util::parse_i64(&args[2]).ok_or_else(|| CmdError::other("ERR timeout is not an integer or out of range"))?;
    if ms < 0 {
        return Err(CmdError::other("ERR timeout is negative"));
    }
    let until = std::time::Instant::now() + std::time::Duration::from_millis(ms as u64);
    // A longer or stricter pause already in force stays (Redis keeps the furthest end).
    let (until, all) = match ctx.server.pause {
        Some((cur, cur_all)) => (cur.max(until), cur_all || all),
        None => (until, all),
    };
    ctx.server.pause = Some((until, all));
    Ok(Reply::OK)
}

/// ```text
/// CLIENT UNPAUSE
/// ```
pub fn client_unpause(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    ctx.server.pause = None;
    Ok(Reply::OK)
}

/// ```text
/// CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX prefix [PREFIX prefix ...]] [BCAST] [OPTIN]
///     [OPTOUT] [NOLOOP]
/// ```
pub fn client_tracking(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let on = if eq_ignore_case(&args[2], "on") {
        true
    } else if eq_ignore_case(&args[2], "off") {
        false
    } else {
        return Err(CmdError::Syntax);
    };
    let mut mode = crate::tracking::TrackingMode::default();
    let mut j = 3;
    while j < args.len() {
        let more = j + 1 < args.len();
        let a = &args[j];
        if eq_ignore_case(a, "redirect") && more {
            if mode.redirect != 0 {
                return Err(CmdError::other("ERR A client can only redirect to a single other client"));
            }
            let id = arg_i64(&args[j + 1])?;
            let exists = id > 0 && (id as u64 == ctx.client.id || ctx.server.clients.contains_key(&(id as u64)));
            if !exists {
                return Err(CmdError::other("ERR The client ID you want redirect to does not exist"));
            }
            mode.redirect = id as u64;
            j += 1;
        } else if eq_ignore_case(a, "bcast") {
            mode.bcast = true;
        } else if eq_ignore_case(a, "optin") {
            mode.optin = true;
        } else if eq_ignore_case(a, "optout") {
            mode.optout = true;
        } else if eq_ignore_case(a, "noloop") {
            mode.noloop = true;
        } else if eq_ignore_case(a, "prefix") && more {
            mode.prefixes.push(args[j + 1].clone());
            j += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    let id = ctx.client.id;
    if !on {
        if ctx.client.tracking.take().is_some() {
            ctx.server.tracking.clients -= 1;
            ctx.server.tracking.bcast.retain(|c| *c != id);
        }
        return Ok(Reply::OK);
    }
    if !mode.bcast && !mode.prefixes.is_empty() {
        return Err(CmdError::other("ERR PREFIX option requires BCAST mode to be enabled"));
    }
    if let Some(old) = &ctx.client.tracking {
        if old.bcast != mode.bcast {
            return Err(CmdError::other("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."));
        }
    }
    if mode.bcast && (mode.optin || mode.optout) {
        return Err(CmdError::other("ERR OPTIN and OPTOUT are not compatible with BCAST"));
    }
    if mode.optin && mode.optout {
        return Err(CmdError::other("ERR You can't specify both OPTIN mode and OPTOUT mode"));
    }
    if let Some(old) = &ctx.client.tracking {
        if (mode.optin && old.optout) || (mode.optout && old.optin) {
            return Err(CmdError::other("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."));
        }
    }
    let mut all_prefixes = ctx.client.tracking.as_ref().map(|m| m.prefixes.clone()).unwrap_or_default();
    if mode.bcast {
        crate::tracking::check_prefixes(&all_prefixes, &mode.prefixes).map_err(|e| CmdError::Other(e.into()))?;
        // BCAST without PREFIX tracks the empty prefix: every key.
        if mode.prefixes.is_empty() {
            mode.prefixes.push(Bytes::new());
        }
    }
    for p in &mode.prefixes {
        if !all_prefixes.contains(p) {
            all_prefixes.push(p.clone());
        }
    }
    mode.prefixes = all_prefixes;
    if ctx.client.tracking.is_none() {
        ctx.server.tracking.clients += 1;
        if mode.bcast {
            ctx.server.tracking.bcast.push(id);
        }
    }
    ctx.client.tracking = Some(mode);
    Ok(Reply::OK)
}

/// ```text
/// CLIENT CACHING YES|NO
/// ```
pub fn client_caching(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let Some(mode) = ctx.client.tracking.as_mut() else {
        return Err(CmdError::other(
            "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled",
        ));
    };
    if eq_ignore_case(&args[2], "yes") {
        if !mode.optin {
            return Err(CmdError::other("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."));
        }
        mode.caching = Some(true);
    } else if eq_ignore_case(&args[2], "no") {
        if !mode.optout {
            return Err(CmdError::other("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."));
        }
        mode.caching = Some(false);
    } else {
        return Err(CmdError::Syntax);
    }
    Ok(Reply::OK)
}

/// ```text
/// CLIENT GETREDIR
/// ```
pub fn client_getredir(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(Reply::Int(ctx.client.tracking.as_ref().map_or(-1, |m| m.redirect as i64)))
}

/// ```text
/// CLIENT TRACKINGINFO
/// ```
pub fn client_trackinginfo(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    let (flags, redirect, prefixes) = match &ctx.client.tracking {
        None => (vec!["off"], -1, Vec::new()),
        Some(m) => {
            let mut f = vec!["on"];
            if m.bcast {
                f.push("bcast");
            }
            if m.optin {
                f.push("optin");
                if m.caching == Some(true) {
                    f.push("caching-yes");
                }
            }
            if m.optout {
                f.push("optout");
                if m.caching == Some(false) {
                    f.push("caching-no");
                }
            }
            if m.noloop {
                f.push("noloop");
            }
            if m.broken_redirect {
                f.push("broken_redirect");
            }
            let mut prefixes = m.prefixes.clone();
            prefixes.sort();
            (f, m.redirect as i64, prefixes)
        }
    };
    Ok(Reply::Map(vec![
        (Reply::bulk(b"flags"), Reply::Set(flags.into_iter().map(|f| Reply::bulk(f.as_bytes())).collect())),
        (Reply::bulk(b"redirect"), Reply::Int(redirect)),
        (Reply::bulk(b"prefixes"), Reply::Array(prefixes.into_iter().map(Reply::Bulk).collect())),
    ]))
}
