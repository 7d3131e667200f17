//! FCALL, FCALL_RO and FUNCTION LOAD/DELETE/FLUSH/LIST/DUMP/RESTORE/STATS/KILL/HELP.
//!
//! FCALL leaves a [`ScriptCall`] for the executor, as EVAL does (same script rules, same
//! logging: the whole FCALL when deterministic, its effects otherwise). The FUNCTION
//! subcommands that change the libraries count as writes (`dirty`), so they are records of
//! the log and reach replicas like any write.

use bytes::Bytes;

use super::scripting::ScriptCall;
use super::{CmdError, Ctx};
use crate::protocol::Reply;
use crate::scripting::functions::{Functions, RestorePolicy};
use crate::util::opt_is;

fn functions<'a>(ctx: &'a mut Ctx<'_>) -> Result<&'a mut Functions, CmdError> {
    ctx.server.scripts.as_deref_mut().map(|e| &mut e.functions).ok_or_else(|| CmdError::other("ERR the scripting engine is not available"))
}

/// ```text
/// FCALL function numkeys [key [key ...]] [arg [arg ...]]
/// ```
pub fn fcall(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    fcall_generic(ctx, args, false)
}

/// ```text
/// FCALL_RO function numkeys [key [key ...]] [arg [arg ...]]
/// ```
pub fn fcall_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    fcall_generic(ctx, args, true)
}

fn fcall_generic(ctx: &mut Ctx<'_>, args: &[Bytes], read_only: bool) -> Result<Reply, CmdError> {
    let def = functions(ctx)?.get(&args[1]).ok_or_else(|| CmdError::other("ERR Function not found"))?;
    let (name, flags) = (def.name.clone(), def.flags);
    let numkeys = crate::util::parse_i64(&args[2]).ok_or_else(|| CmdError::other("ERR Bad number of keys provided"))?;
    if numkeys > (args.len() - 3) as i64 {
        return Err(CmdError::other("ERR Number of keys can't be greater than number of args"));
    }
    if numkeys < 0 {
        return Err(CmdError::other("ERR Number of keys can't be negative"));
    }
    ctx.then(super::Next::RunScript(ScriptCall { sha: name.into(), flags, numkeys: numkeys as usize, read_only, function: true }));
    Ok(Reply::NoReply)
}

/// ```text
/// FUNCTION LOAD [REPLACE] function-code
/// ```
pub fn function_load(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let code = &args[args.len() - 1];
    let mut replace = false;
    for opt in &args[2..args.len() - 1] {
        if !opt_is(opt, "replace") {
            return Err(CmdError::Other(format!("ERR Unknown option given: {}", String::from_utf8_lossy(opt)).into()));
        }
        replace = true;
    }
    // The log and the primary's stream replay what was accepted: no time limit there.
    let timeout = !ctx.client.superuser;
    let name = functions(ctx)?.load(code, replace, timeout).map_err(|e| CmdError::Other(e.into()))?;
    ctx.dirty(1);
    Ok(Reply::bulk_string(name))
}

/// ```text
/// FUNCTION DELETE library-name
/// ```
pub fn function_delete(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let name = String::from_utf8_lossy(&args[2]).into_owned();
    if !functions(ctx)?.delete(&name) {
        return Err(CmdError::other("ERR Library not found"));
    }
    ctx.dirty(1);
    Ok(Reply::OK)
}

/// ```text
/// FUNCTION FLUSH [ASYNC | SYNC]
/// ```
pub fn function_flush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if args.len() > 3 {
        return Err(crate::commands::subcommand_syntax_error(args));
    }
    if args.len() == 3 && !opt_is(&args[2], "sync") && !opt_is(&args[2], "async") {
        return Err(CmdError::other("ERR FUNCTION FLUSH only supports SYNC|ASYNC option"));
    }
    functions(ctx)?.flush();
    ctx.dirty(1);
    Ok(Reply::OK)
}

/// ```text
/// FUNCTION LIST [LIBRARYNAME library-name-pattern] [WITHCODE]
/// ```
pub fn function_list(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (mut with_code, mut pattern): (bool, Option<&Bytes>) = (false, None);
    let mut i = 2;
    while i < args.len() {
        if !with_code && opt_is(&args[i], "withcode") {
            with_code = true;
        } else if pattern.is_none() && opt_is(&args[i], "libraryname") {
            if i + 1 >= args.len() {
                return Err(CmdError::other("ERR library name argument was not given"));
            }
            i += 1;
            pattern = Some(&args[i]);
        } else {
            return Err(CmdError::Other(format!("ERR Unknown argument {}", String::from_utf8_lossy(&args[i])).into()));
        }
        i += 1;
    }
    let fns = functions(ctx)?;
    let libs = fns.libraries().filter(|lib| pattern.is_none_or(|p| crate::glob::glob_match(p, lib.name.as_bytes(), true)));
    Ok(Reply::Array(
        libs.map(|lib| {
            let funcs = lib.functions.values().map(|f| {
                Reply::Map(vec![
                    (Reply::bulk_string("name"), Reply::bulk_string(f.name.clone())),
                    (Reply::bulk_string("description"), f.description.clone().map_or(Reply::Nil, Reply::bulk_string)),
                    (Reply::bulk_string("flags"), Reply::Set(f.flag_names().into_iter().map(Reply::status).collect())),
                ])
            });
            let mut fields = vec![
                (Reply::bulk_string("library_name"), Reply::bulk_string(lib.name.clone())),
                (Reply::bulk_string("engine"), Reply::bulk_string("LUA")),
                (Reply::bulk_string("functions"), Reply::Array(funcs.collect())),
            ];
            if with_code {
                fields.push((Reply::bulk_string("library_code"), Reply::Bulk(lib.code.clone())));
            }
            Reply::Map(fields)
        })
        .collect(),
    ))
}

/// ```text
/// FUNCTION DUMP
/// ```
pub fn function_dump(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    let fns = functions(ctx)?;
    Ok(Reply::Bulk(crate::db::rdb::encode_functions(fns.libraries().map(|l| &l.code[..])).into()))
}

/// ```text
/// FUNCTION RESTORE serialized-value [FLUSH | APPEND | REPLACE]
/// ```
pub fn function_restore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if args.len() > 4 {
        // Redis's addReplySubcommandSyntaxError: the subcommand as typed.
        return Err(CmdError::Other(
            crate::commands::sanitize(format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.",
                String::from_utf8_lossy(&args[1]),
                String::from_utf8_lossy(&args[0]).to_ascii_uppercase()
            ))
            .into(),
        ));
    }
    let policy = match args.get(3) {
        None => RestorePolicy::Append,
        Some(p) if opt_is(p, "flush") => RestorePolicy::Flush,
        Some(p) if opt_is(p, "append") => RestorePolicy::Append,
        Some(p) if opt_is(p, "replace") => RestorePolicy::Replace,
        Some(_) => return Err(CmdError::other("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")),
    };
    use crate::db::rdb::{FunctionPayloadError as E, RdbError};
    let codes = crate::db::rdb::decode_functions(&args[2]).map_err(|e| {
        CmdError::other(match e {
            E::Rdb(RdbError::VersionOrChecksum) => "ERR DUMP payload version or checksum are wrong",
            E::Rdb(RdbError::BadFormat) => "ERR Failed loading library payload",
            E::NotFunction => "ERR given type is not a function",
            E::PreGa => "ERR Pre-GA function format not supported",
        })
    })?;
    functions(ctx)?.restore(&codes, policy).map_err(|e| CmdError::Other(e.into()))?;
    ctx.dirty(1);
    Ok(Reply::OK)
}

/// ```text
/// FUNCTION STATS
/// ```
/// Here nothing runs (a busy function's STATS is answered by `executor::busy_answers`).
pub fn function_stats(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    let fns = functions(ctx)?;
    Ok(crate::scripting::functions::stats_reply(None, fns.library_count(), fns.registered_count()))
}

/// ```text
/// FUNCTION KILL
/// ```
pub fn function_kill(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    // Here the executor is free: nothing runs.
    Err(CmdError::other("NOTBUSY No scripts in execution right now."))
}

/// ```text
/// FUNCTION HELP
/// ```
pub fn function_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(super::help_reply(&[
        "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "LOAD [REPLACE] <FUNCTION CODE>",
        "    Create a new library with the given library name and code.",
        "DELETE <LIBRARY NAME>",
        "    Delete the given library.",
        "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
        "    Return general information on all the libraries:",
        "    * Library name",
        "    * The engine used to run the Library",
        "    * Library description",
        "    * Functions list",
        "    * Library code (if WITHCODE is given)",
        "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
        "STATS",
        "    Return information about the current function running:",
        "    * Function name",
        "    * Command used to run the function",
        "    * Duration in MS that the function is running",
        "    If no function is running, return nil",
        "    In addition, returns a list of available engines.",
        "KILL",
        "    Kill the current running function.",
        "FLUSH [ASYNC|SYNC]",
        "    Delete all the libraries.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the libraries.",
        "    * SYNC: Synchronously flush the libraries.",
        "DUMP",
        "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
        "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
        "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
        "    control how to handle existing libraries (default APPEND):",
        "    * FLUSH: delete all existing libraries.",
        "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
        "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
        "      libraries with the new libraries (notice that even on this option there is a chance of failure",
        "      in case of functions name collision with another library).",
        "HELP",
        "    Prints this help.",
    ]))
}
