//! EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT LOAD/EXISTS/FLUSH/KILL/HELP.
//!
//! The handlers check arguments and compile or find the script; the run itself happens in the
//! executor, the way EXEC does: the handler leaves a [`ScriptCall`] in
//! `Next::RunScript`, and the executor runs it with the script rules (it owns what
//! `redis.call` needs). SCRIPT KILL reaches this handler only when no script runs (a busy
//! script's kills are answered by the connection tasks).

use bytes::Bytes;

use super::{CmdError, Ctx};
use crate::protocol::Reply;
use crate::scripting::{ScriptEngine, ScriptFlags};
use crate::state::LuaDebug;

/// A script run asked for by EVAL & co.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptCall {
    /// The script's SHA1 (shared with the cache), or the function's name for FCALL.
    pub sha: std::rc::Rc<str>,
    /// The script's shebang flags.
    pub flags: ScriptFlags,
    pub numkeys: usize,
    /// EVAL_RO / EVALSHA_RO / FCALL_RO.
    pub read_only: bool,
    /// FCALL: `sha` is the function's name.
    pub function: bool,
}

/// ```text
/// EVAL script numkeys [key [key ...]] [arg [arg ...]]
/// ```
pub fn eval(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    eval_generic(ctx, args, false, false)
}

/// ```text
/// EVALSHA sha1 numkeys [key [key ...]] [arg [arg ...]]
/// ```
pub fn evalsha(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    eval_generic(ctx, args, true, false)
}

/// ```text
/// EVAL_RO script numkeys [key [key ...]] [arg [arg ...]]
/// ```
pub fn eval_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    eval_generic(ctx, args, false, true)
}

/// ```text
/// EVALSHA_RO sha1 numkeys [key [key ...]] [arg [arg ...]]
/// ```
pub fn evalsha_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    eval_generic(ctx, args, true, true)
}

fn engine<'a>(ctx: &'a mut Ctx<'_>) -> Result<&'a mut ScriptEngine, CmdError> {
    ctx.server.scripts.as_deref_mut().ok_or_else(|| CmdError::other("ERR the scripting engine is not available"))
}

fn eval_generic(ctx: &mut Ctx<'_>, args: &[Bytes], by_sha: bool, read_only: bool) -> Result<Reply, CmdError> {
    let result = eval_checked(ctx, args, by_sha, read_only);
    // SCRIPT DEBUG: Redis had started the session when it finds these errors.
    if result.is_err() && !by_sha && ctx.client.lua_debug.is_some() && !ctx.client.in_exec() {
        ctx.client.refuse_debug_session();
    }
    result
}

fn eval_checked(ctx: &mut Ctx<'_>, args: &[Bytes], by_sha: bool, read_only: bool) -> Result<Reply, CmdError> {
    // A SHA1 that is not 40 characters long cannot match: NOSCRIPT before anything else.
    if by_sha && args[1].len() != 40 {
        return Err(CmdError::other("NOSCRIPT No matching script. Please use EVAL."));
    }
    if by_sha && ctx.client.lua_debug.is_some() {
        return Err(CmdError::other("ERR Please use EVAL instead of EVALSHA for debugging"));
    }
    let numkeys = super::arg_i64(&args[2])?;
    if numkeys < 0 {
        return Err(CmdError::other("ERR Number of keys can't be negative"));
    }
    if numkeys as usize > args.len() - 3 {
        return Err(CmdError::other("ERR Number of keys can't be greater than number of args"));
    }
    if !by_sha && ctx.client.lua_debug == Some(LuaDebug::Yes) {
        // A YES debugging session compiles it in a Lua state of its own (the server's
        // script cache never sees it, as Redis's forked session's parent does not).
        let flags = ScriptFlags::parse(&args[1]).map_err(|e| CmdError::Other(format!("ERR {e}").into()))?;
        let sha = crate::scripting::sha1_hex(&args[1]);
        ctx.then(super::Next::RunScript(ScriptCall {
            sha: sha.as_str().into(),
            flags,
            numkeys: numkeys as usize,
            read_only,
            function: false,
        }));
        return Ok(Reply::NoReply);
    }
    let engine = engine(ctx)?;
    let script = if by_sha {
        engine.get(&args[1]).ok_or_else(|| CmdError::other("NOSCRIPT No matching script. Please use EVAL."))?
    } else {
        engine.load(&args[1]).map_err(|e| CmdError::Other(e.into()))?
    };
    let (sha, flags) = (script.sha.clone(), script.flags);
    ctx.then(super::Next::RunScript(ScriptCall { sha, flags, numkeys: numkeys as usize, read_only, function: false }));
    Ok(Reply::NoReply)
}

/// ```text
/// SCRIPT LOAD script
/// ```
pub fn script_load(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let script = engine(ctx)?.load(&args[2]).map_err(|e| CmdError::Other(e.into()))?;
    let sha = script.sha.to_string();
    ctx.effects.script_cache = Some(super::ScriptCacheChange::Loaded(sha.clone()));
    Ok(Reply::bulk_string(sha))
}

/// ```text
/// SCRIPT EXISTS sha1 [sha1 ...]
/// ```
pub fn script_exists(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let engine = engine(ctx)?;
    Ok(Reply::Array(args[2..].iter().map(|sha| Reply::Int(engine.exists(sha) as i64)).collect()))
}

/// ```text
/// SCRIPT FLUSH [ASYNC | SYNC]
/// ```
pub fn script_flush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if args.len() > 3 || (args.len() == 3 && !crate::util::opt_is(&args[2], "sync") && !crate::util::opt_is(&args[2], "async")) {
        return Err(CmdError::other("ERR SCRIPT FLUSH only support SYNC|ASYNC option"));
    }
    engine(ctx)?.flush().map_err(|e| CmdError::Other(format!("ERR {e}").into()))?;
    ctx.effects.script_cache = Some(super::ScriptCacheChange::Flushed);
    Ok(Reply::OK)
}

/// ```text
/// SCRIPT KILL
/// ```
pub fn script_kill(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    // Here the executor is free: nothing runs.
    Err(CmdError::other("NOTBUSY No scripts in execution right now."))
}

/// ```text
/// SCRIPT DEBUG YES | SYNC | NO
/// ```
/// Sets the mode the client's next EVAL runs in (see scripting/debugger/).
pub fn script_debug(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    // The session talks to the client directly: replies still owed would interleave.
    if !ctx.client.out.is_empty() || ctx.client.in_exec() {
        return Err(CmdError::other("ERR SCRIPT DEBUG must be called outside a pipeline"));
    }
    let mode = &args[2];
    ctx.client.lua_debug = if crate::util::eq_ignore_case(mode, "no") {
        None
    } else if crate::util::eq_ignore_case(mode, "yes") {
        Some(LuaDebug::Yes)
    } else if crate::util::eq_ignore_case(mode, "sync") {
        Some(LuaDebug::Sync)
    } else {
        return Err(CmdError::other("ERR Use SCRIPT DEBUG YES/SYNC/NO"));
    };
    Ok(Reply::OK)
}

/// ```text
/// SCRIPT HELP
/// ```
pub fn script_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(super::help_reply(&[
        "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DEBUG (YES|SYNC|NO)",
        "    Set the debug mode for subsequent scripts executed.",
        "EXISTS <sha1> [<sha1> ...]",
        "    Return information about the existence of the scripts in the script cache.",
        "FLUSH [ASYNC|SYNC]",
        "    Flush the Lua scripts cache. Very dangerous on replicas.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the scripts cache.",
        "    * SYNC: Synchronously flush the scripts cache.",
        "KILL",
        "    Kill the currently executing Lua script.",
        "LOAD <script>",
        "    Load a script into the scripts cache without executing it.",
        "HELP",
        "    Prints this help.",
    ]))
}
