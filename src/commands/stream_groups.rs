//! Consumer groups: the XGROUP subcommands and XACK (Redis 7.0's `xgroupCommand`,
//! `xackCommand`).

use bytes::Bytes;

use super::access::{modify, read};
use super::help;
use super::streams::{loose_id, never_empty, new_stream, pick, pick_mut, strict_id};
use super::{help_reply, subcommand_syntax_error, CmdError, Ctx};
use crate::db::stream::{Group, StreamId};
use crate::notify;
use crate::protocol::Reply;
use crate::spec::c_string_prefix;
use crate::util::{cstr, opt_is, parse_i64};

/// What every XGROUP subcommand but HELP checks first, in Redis's order: the options of
/// CREATE and SETID, the key's type, the key's existence (unless MKSTREAM), the group's
/// (for SETID, CREATECONSUMER and DELCONSUMER). Returns MKSTREAM and ENTRIESREAD.
fn check(ctx: &mut Ctx<'_>, args: &[Bytes], sub: &str) -> Result<(bool, i64), CmdError> {
    let (create, setid) = (sub == "create", sub == "setid");
    let mut mkstream = false;
    let mut entries_read = -1;
    let mut i = 5;
    while i < args.len() {
        if create && opt_is(&args[i], "mkstream") {
            mkstream = true;
            i += 1;
        } else if (create || setid) && opt_is(&args[i], "entriesread") && i + 1 < args.len() {
            entries_read = parse_i64(&args[i + 1]).ok_or(CmdError::NotInteger)?;
            if entries_read < 0 && entries_read != -1 {
                return Err(CmdError::other("ERR value for ENTRIESREAD must be positive or -1"));
            }
            i += 2;
        } else {
            return Err(subcommand_syntax_error(args));
        }
    }
    let (key, group) = (&args[2], &args[3]);
    let s = read(ctx, key, pick)?;
    if !mkstream {
        let Some(s) = s else {
            return Err(CmdError::other(
                "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.",
            ));
        };
        if !s.groups.contains_key(group) && matches!(sub, "setid" | "createconsumer" | "delconsumer") {
            return Err(CmdError::other(format!(
                "NOGROUP No such consumer group '{}' for key name '{}'",
                c_string_prefix(group, usize::MAX),
                c_string_prefix(key, usize::MAX)
            )));
        }
    }
    Ok((mkstream, entries_read))
}

/// ```text
/// XGROUP CREATE key group <id | $> [MKSTREAM] [ENTRIESREAD entries-read]
/// ```
pub fn xgroup_create(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (_, entries_read) = check(ctx, args, "create")?;
    if args.len() > 8 {
        return Err(subcommand_syntax_error(args));
    }
    let key = &args[2];
    let existing = read(ctx, key, pick)?.map(|s| s.last_id);
    let id = match cstr(&args[4]) {
        b"$" => existing.unwrap_or(StreamId::MIN),
        _ => strict_id(&args[4])?,
    };
    if existing.is_none() {
        // MKSTREAM (checked): the empty stream first, as Redis's dbAdd.
        ctx.add_value(key, new_stream());
        ctx.signal_modified(key);
    }
    let group = args[3].clone();
    let created = modify(ctx, key, pick_mut, never_empty, |s| {
        if s.groups.contains_key(&group) {
            return false;
        }
        s.groups.insert(group, Group::new(id, entries_read));
        true
    })?
    .unwrap_or(false);
    if !created {
        return Err(CmdError::other("BUSYGROUP Consumer Group name already exists"));
    }
    ctx.dirty(1);
    ctx.notify(notify::STREAM, "xgroup-create", key);
    Ok(Reply::OK)
}

/// ```text
/// XGROUP SETID key group <id | $> [ENTRIESREAD entries-read]
/// ```
pub fn xgroup_setid(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (_, entries_read) = check(ctx, args, "setid")?;
    if args.len() != 5 && args.len() != 7 {
        return Err(subcommand_syntax_error(args));
    }
    let key = &args[2];
    let explicit = match cstr(&args[4]) {
        b"$" => None,
        _ => Some(loose_id(&args[4], 0)?),
    };
    let group = &args[3];
    modify(ctx, key, pick_mut, never_empty, |s| {
        let id = explicit.unwrap_or(s.last_id);
        if let Some(g) = s.groups.get_mut(group) {
            g.last_id = id;
            g.entries_read = entries_read;
        }
    })?;
    ctx.dirty(1);
    ctx.notify(notify::STREAM, "xgroup-setid", key);
    Ok(Reply::OK)
}

/// ```text
/// XGROUP DESTROY key group
/// ```
pub fn xgroup_destroy(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    check(ctx, args, "destroy")?;
    let (key, group) = (&args[2], &args[3]);
    let removed = modify(ctx, key, pick_mut, never_empty, |s| s.groups.remove(group).is_some())?.unwrap_or(false);
    if !removed {
        return Ok(Reply::Int(0));
    }
    ctx.dirty(1);
    ctx.notify(notify::STREAM, "xgroup-destroy", key);
    // Its blocked XREADGROUP clients are answered NOGROUP.
    ctx.signal_ready(key);
    Ok(Reply::Int(1))
}

/// ```text
/// XGROUP CREATECONSUMER key group consumer
/// ```
pub fn xgroup_createconsumer(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    check(ctx, args, "createconsumer")?;
    let (key, group, consumer) = (&args[2], &args[3], &args[4]);
    let now = super::streams::wall_ms(ctx);
    let created = modify(ctx, key, pick_mut, never_empty, |s| s.groups.get_mut(group).is_some_and(|g| g.create_consumer(consumer, now)))?
        .unwrap_or(false);
    if created {
        ctx.dirty(1);
        ctx.notify(notify::STREAM, "xgroup-createconsumer", key);
    }
    Ok(Reply::Int(created as i64))
}

/// ```text
/// XGROUP DELCONSUMER key group consumer
/// ```
pub fn xgroup_delconsumer(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    check(ctx, args, "delconsumer")?;
    let (key, group, consumer) = (&args[2], &args[3], &args[4]);
    let pending = modify(ctx, key, pick_mut, never_empty, |s| s.groups.get_mut(group).and_then(|g| g.delete_consumer(consumer)))?.flatten();
    let Some(pending) = pending else { return Ok(Reply::Int(0)) };
    ctx.dirty(1);
    ctx.notify(notify::STREAM, "xgroup-delconsumer", key);
    Ok(Reply::Int(pending as i64))
}

/// ```text
/// XGROUP HELP
/// ```
pub fn xgroup_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(help_reply(help::XGROUP))
}

/// ```text
/// XACK key group id [id ...]
/// ```
pub fn xack(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (key, group) = (&args[1], &args[2]);
    match read(ctx, key, pick)? {
        Some(s) if s.groups.contains_key(group) => {}
        _ => return Ok(Reply::Int(0)),
    }
    // All IDs are checked first: the command acknowledges all or nothing.
    let ids = args[3..].iter().map(|a| strict_id(a)).collect::<Result<Vec<_>, _>>()?;
    let acked = modify(ctx, key, pick_mut, never_empty, |s| {
        let Some(g) = s.groups.get_mut(group) else { return 0 };
        ids.into_iter().filter(|id| g.ack(*id)).count()
    })?
    .unwrap_or(0);
    ctx.dirty(acked as u64);
    Ok(Reply::Int(acked as i64))
}
