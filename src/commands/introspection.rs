//! COMMAND and its subcommands, generated from the command table.

use bytes::Bytes;

use super::{help, help_reply, lookup, CmdError, CommandSpec, Ctx, Doc, COMMANDS};
use crate::glob::glob_match;
use crate::protocol::Reply;
use crate::util::eq_ignore_case;

fn status_set(items: impl IntoIterator<Item = &'static str>) -> Reply {
    Reply::Set(items.into_iter().map(Reply::status).collect())
}

fn doc_reply(d: &Doc) -> Reply {
    match d {
        Doc::Str(s) => Reply::bulk(s.as_bytes()),
        Doc::Int(n) => Reply::Int(*n),
        // Inside key specs, lists are flag sets (RESP3 `~` of status strings).
        Doc::Arr(items) => Reply::Set(
            items
                .iter()
                .map(|i| match i {
                    Doc::Str(s) => Reply::status(s),
                    other => doc_reply(other),
                })
                .collect(),
        ),
        Doc::Map(pairs) => Reply::Map(pairs.iter().map(|(k, v)| (Reply::bulk(k.as_bytes()), doc_reply(v))).collect()),
    }
}

/// One command's `COMMAND INFO` entry, as Redis 7.0 shapes it.
fn info_entry(cmd: &CommandSpec) -> Reply {
    Reply::Array(vec![
        Reply::bulk(cmd.name.as_bytes()),
        Reply::Int(cmd.arity as i64),
        // may_replicate is hidden from COMMAND INFO, as in Redis.
        status_set(cmd.flags.iter().filter(|f| **f != super::Flag::MayReplicate).map(|f| f.as_str())),
        Reply::Int(cmd.first_key as i64),
        Reply::Int(cmd.last_key as i64),
        Reply::Int(cmd.key_step as i64),
        status_set(cmd.acl.iter().copied()),
        Reply::Set(cmd.tips.iter().map(|t| Reply::bulk(t.as_bytes())).collect()),
        Reply::Set(cmd.key_specs.iter().map(doc_reply).collect()),
        // Redis sends an empty set when there are none, an array otherwise.
        if cmd.subcommands.is_empty() { Reply::Set(Vec::new()) } else { Reply::Array(cmd.subcommands.iter().map(info_entry).collect()) },
    ])
}

fn docs_entry(cmd: &CommandSpec) -> Reply {
    let mut fields = vec![
        (Reply::bulk(b"summary"), Reply::bulk(cmd.summary.as_bytes())),
        (Reply::bulk(b"since"), Reply::bulk(cmd.since.as_bytes())),
        (Reply::bulk(b"group"), Reply::bulk(cmd.group.as_str().as_bytes())),
    ];
    // Fields Redis has no value for are left out.
    if !cmd.complexity.is_empty() {
        fields.push((Reply::bulk(b"complexity"), Reply::bulk(cmd.complexity.as_bytes())));
    }
    if !cmd.doc_flags.is_empty() {
        fields.push((Reply::bulk(b"doc_flags"), status_set(cmd.doc_flags.iter().copied())));
    }
    for (name, value) in [("deprecated_since", cmd.deprecated_since), ("replaced_by", cmd.replaced_by)] {
        if !value.is_empty() {
            fields.push((Reply::bulk(name.as_bytes()), Reply::bulk(value.as_bytes())));
        }
    }
    if !cmd.subcommands.is_empty() {
        fields.push((
            Reply::bulk(b"subcommands"),
            Reply::Map(cmd.subcommands.iter().map(|s| (Reply::bulk(s.name.as_bytes()), docs_entry(s))).collect()),
        ));
    }
    Reply::Map(fields)
}

/// ```text
/// COMMAND
/// ```
pub fn command(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(Reply::Array(COMMANDS.iter().map(info_entry).collect()))
}

pub fn command_count(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(Reply::Int(COMMANDS.len() as i64))
}

/// Finds `name` or `container|sub`.
fn find(name: &[u8]) -> Option<&'static CommandSpec> {
    let text = String::from_utf8_lossy(name).to_lowercase();
    match text.split_once('|') {
        None => lookup(name),
        Some((top, sub)) => lookup(top.as_bytes())?.subcommands.iter().find(|s| s.sub_name() == sub),
    }
}

/// ```text
/// COMMAND INFO [command-name ...]
/// ```
pub fn command_info(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if args.len() == 2 {
        return Ok(Reply::Array(COMMANDS.iter().map(info_entry).collect()));
    }
    Ok(Reply::Array(args[2..].iter().map(|n| find(n).map_or(Reply::Nil, info_entry)).collect()))
}

/// ```text
/// COMMAND DOCS [command-name ...]
/// ```
pub fn command_docs(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let cmds: Vec<&CommandSpec> =
        if args.len() == 2 { COMMANDS.iter().collect() } else { args[2..].iter().filter_map(|n| find(n)).collect() };
    Ok(Reply::Map(cmds.into_iter().map(|c| (Reply::bulk(c.name.as_bytes()), docs_entry(c))).collect()))
}

/// ```text
/// COMMAND GETKEYS command [arg ...]
/// ```
pub fn command_getkeys(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (cmd, inner) = keyed_command(args)?;
    let keys = super::keyspec::getkeys(cmd, inner);
    if keys.is_empty() && !cmd.has(super::Flag::NoMandatoryKeys) {
        return Err(CmdError::other("ERR Invalid arguments specified for command"));
    }
    Ok(Reply::Array(keys.into_iter().map(|i| Reply::Bulk(inner[i].clone())).collect()))
}

/// ```text
/// COMMAND GETKEYSANDFLAGS command [arg ...]
/// ```
pub fn command_getkeysandflags(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (cmd, inner) = keyed_command(args)?;
    let keys = super::keyspec::getkeys_and_flags(cmd, inner);
    if keys.is_empty() && !cmd.has(super::Flag::NoMandatoryKeys) {
        return Err(CmdError::other("ERR Invalid arguments specified for command"));
    }
    let flags = |f: Vec<&'static str>| Reply::Set(f.into_iter().map(|s| Reply::Status(s.into())).collect());
    Ok(Reply::Array(keys.into_iter().map(|(i, f)| Reply::Array(vec![Reply::Bulk(inner[i].clone()), flags(f)])).collect()))
}

/// The command COMMAND GETKEYS[ANDFLAGS] asks about, and its argv; Redis's errors in Redis's
/// order: an unknown command, a command without key arguments (its key specs all name
/// something else, as SPUBLISH's channel), then a wrong arity.
fn keyed_command(args: &[Bytes]) -> Result<(&'static CommandSpec, &[Bytes]), CmdError> {
    let inner = &args[2..];
    let (cmd, arity_ok) = match super::resolve(inner) {
        super::Resolved::Found(c) => (c, true),
        super::Resolved::WrongArity(c) => (c, false),
        _ => return Err(CmdError::other("ERR Invalid command specified")),
    };
    if !super::keyspec::has_keys(cmd) {
        return Err(CmdError::other("ERR The command has no key arguments"));
    }
    if !arity_ok {
        return Err(CmdError::other("ERR Invalid number of arguments specified for command"));
    }
    Ok((cmd, inner))
}

/// ```text
/// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]
/// ```
pub fn command_list(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let all = super::all_commands();
    let names: Vec<&'static str> = match args.len() {
        2 => all.map(|c| c.name).collect(),
        5 if eq_ignore_case(&args[2], "filterby") => {
            let value = &args[4];
            if eq_ignore_case(&args[3], "pattern") {
                all.filter(|c| glob_match(value, c.name.as_bytes(), true)).map(|c| c.name).collect()
            } else if eq_ignore_case(&args[3], "aclcat") {
                let cat = format!("@{}", String::from_utf8_lossy(value).to_lowercase());
                all.filter(|c| c.acl.contains(&cat.as_str())).map(|c| c.name).collect()
            } else if eq_ignore_case(&args[3], "module") {
                Vec::new()
            } else {
                return Err(CmdError::Syntax);
            }
        }
        _ => return Err(CmdError::Syntax),
    };
    Ok(Reply::Array(names.into_iter().map(|n| Reply::bulk(n.as_bytes())).collect()))
}

pub fn command_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(help_reply(help::COMMAND))
}
