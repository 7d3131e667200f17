//! Server commands: TIME, BGREWRITEAOF, SAVE, BGSAVE, LASTSAVE, SLOWLOG, SHUTDOWN, MONITOR (INFO,
//! CONFIG and DEBUG have files of their own).

use bytes::Bytes;

use super::{help, help_reply, CmdError, Ctx};
use crate::config::P;
use crate::protocol::Reply;
use crate::state::{SaveOnShutdown, ShutdownRequest};
use crate::util::eq_ignore_case;

/// ```text
/// TIME
/// ```
pub fn time(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    let us = crate::clock::now_us();
    Ok(Reply::Array(vec![Reply::bulk_string((us / 1_000_000).to_string()), Reply::bulk_string((us % 1_000_000).to_string())]))
}

/// ```text
/// BGREWRITEAOF
/// ```
/// The executor does the rewrite once the handler returns.
pub fn bgrewriteaof(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    ctx.then(super::Next::Persist(crate::state::PersistRequest::Rewrite));
    Ok(Reply::NoReply)
}

/// ```text
/// SAVE
/// ```
pub fn save(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    ctx.then(super::Next::Persist(crate::state::PersistRequest::Save));
    Ok(Reply::NoReply)
}

/// ```text
/// BGSAVE [SCHEDULE]
/// ```
pub fn bgsave(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let schedule = match args.get(1) {
        None => false,
        Some(a) if eq_ignore_case(a, "schedule") => true,
        Some(_) => return Err(CmdError::Syntax),
    };
    ctx.then(super::Next::Persist(crate::state::PersistRequest::BgSave { schedule }));
    Ok(Reply::NoReply)
}

/// ```text
/// LASTSAVE
/// ```
pub fn lastsave(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(Reply::Int(ctx.server.lastsave))
}

/// ```text
/// SLOWLOG GET [count]
/// ```
pub fn slowlog_get(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if args.len() > 3 {
        return Err(crate::commands::subcommand_syntax_error(args));
    }
    let count = match args.get(2) {
        None => 10,
        Some(a) => match crate::util::parse_i64(a) {
            Some(n) if n >= -1 => n,
            _ => return Err(CmdError::other("ERR count should be greater than or equal to -1")),
        },
    };
    let take = if count == -1 { usize::MAX } else { count as usize };
    let entries = ctx
        .server
        .slowlog
        .iter()
        .take(take)
        .map(|e| {
            Reply::Array(vec![
                Reply::Int(e.id as i64),
                Reply::Int(e.time),
                Reply::Int(e.duration_us as i64),
                Reply::Array(e.args.iter().cloned().map(Reply::Bulk).collect()),
                Reply::bulk_string(e.addr.clone()),
                Reply::Bulk(e.name.clone()),
            ])
        })
        .collect();
    Ok(Reply::Array(entries))
}

pub fn slowlog_len(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(Reply::Int(ctx.server.slowlog.len() as i64))
}

pub fn slowlog_reset(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    ctx.server.slowlog.clear();
    Ok(Reply::OK)
}

pub fn slowlog_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(help_reply(help::SLOWLOG))
}

/// ```text
/// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]
/// ```
/// On success nothing is replied: the connection closes as the server exits.
pub fn shutdown(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (mut save, mut nosave, mut abort, mut force) = (false, false, false, false);
    for a in &args[1..] {
        if eq_ignore_case(a, "nosave") {
            nosave = true;
        } else if eq_ignore_case(a, "save") {
            save = true;
        } else if eq_ignore_case(a, "force") {
            force = true;
        } else if eq_ignore_case(a, "now") {
        } else if eq_ignore_case(a, "abort") {
            abort = true;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    if (save && nosave) || (abort && args.len() > 2) {
        return Err(CmdError::Syntax);
    }
    if abort {
        return Err(CmdError::other("ERR No shutdown in progress."));
    }
    let save = match (save, nosave) {
        (true, _) => SaveOnShutdown::Save,
        (_, true) => SaveOnShutdown::NoSave,
        _ => SaveOnShutdown::Default,
    };
    ctx.then(super::Next::Shutdown(ShutdownRequest { save, force }));
    ctx.client.close_after_reply = true;
    Ok(Reply::NoReply)
}

/// What an `enable-*-command`/`enable-protected-configs` setting allows this client:
/// `local` means loopback clients only.
pub(super) fn allowed_by(ctx: &Ctx<'_>, setting: P) -> bool {
    match ctx.server.config.get(setting) {
        "yes" => true,
        "local" => ctx.client.addr.starts_with("127.") || ctx.client.addr.starts_with("[::1]"),
        _ => false,
    }
}

/// ```text
/// MONITOR
/// ```
pub fn monitor(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    // Inside EXEC (or a script), where one reply per command is expected.
    if ctx.client.deny_blocking {
        return Err(CmdError::other("ERR MONITOR isn't allowed for DENY BLOCKING client"));
    }
    if !ctx.client.monitor {
        ctx.client.monitor = true;
        ctx.server.monitors.push(ctx.client.id);
    }
    Ok(Reply::OK)
}

/// One MONITOR line, as Redis prints it: `+<sec>.<usec> [<db> <addr>] "arg" ...`, each
/// argument quoted with `sdscatrepr`'s escapes.
pub fn monitor_line(now_us: i64, db: usize, addr: &str, args: &[Bytes]) -> Reply {
    let mut line = format!("{}.{:06} [{} {}]", now_us / 1_000_000, now_us % 1_000_000, db, addr);
    for a in args {
        line.push(' ');
        line.push_str(&crate::util::sds_repr(a));
    }
    Reply::Status(line.into())
}
