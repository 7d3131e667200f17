//! CONFIG GET, SET, REWRITE, RESETSTAT and HELP, and what a changed parameter does beyond
//! its stored value.

use bytes::Bytes;

use super::{help, help_reply, CmdError, Ctx};
use crate::config::P;
use crate::config::{Config, SetError};
use crate::protocol::Reply;
use crate::util::eq_ignore_case;

/// The parameters Redis flags SENSITIVE_CONFIG: CONFIG SET hides their values from MONITOR
/// and SLOWLOG.
const SENSITIVE: &[&str] = &["masteruser", "masterauth", "requirepass"];

/// ```text
/// CONFIG GET parameter [parameter ...]
/// ```
pub fn config_get(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let mut pairs: Vec<(Reply, Reply)> = Vec::new();
    // Keyed by the name matched (a parameter's own or an alias: Redis lists both when both
    // are asked for), case-insensitively.
    let mut seen = std::collections::HashSet::new();
    for pattern in &args[2..] {
        // A plain name (no glob characters) is looked up directly and echoed as typed.
        if !pattern.iter().any(|c| matches!(c, b'*' | b'?' | b'[')) {
            let name = String::from_utf8_lossy(pattern);
            if let Some(param) = Config::param(&name) {
                if seen.insert(name.to_ascii_lowercase()) {
                    pairs.push((Reply::Bulk(pattern.clone()), Reply::bulk_string(ctx.server.config.get_named(param.name).to_string())));
                }
            }
            continue;
        }
        for (name, value) in ctx.server.config.matching(pattern) {
            if seen.insert(name.to_string()) {
                pairs.push((Reply::bulk(name.as_bytes()), Reply::bulk_string(value)));
            }
        }
    }
    Ok(Reply::Map(pairs))
}

/// ```text
/// CONFIG SET parameter value [parameter value ...]
/// ```
/// All or nothing, in Redis's two passes: the names first (unknown, immutable, protected,
/// given twice: the first problem in argument order), then every value on a copy before any
/// takes effect. A parameter and its alias are two names, as in Redis (the later one wins).
pub fn config_set(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if !args.len().is_multiple_of(2) {
        return Err(CmdError::Syntax);
    }
    // Every sensitive value is hidden from MONITOR and SLOWLOG, whatever fails after.
    for j in (2..args.len()).step_by(2) {
        if SENSITIVE.iter().any(|p| eq_ignore_case(&args[j], p)) {
            ctx.redact_arg(j + 1);
        }
    }
    let failed = |name: &str, reason: &str| {
        CmdError::Other(format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {reason}").into())
    };
    let pairs: Vec<(String, String)> = args[2..]
        .chunks(2)
        .map(|pair| (String::from_utf8_lossy(&pair[0]).into_owned(), String::from_utf8_lossy(&pair[1]).into_owned()))
        .collect();
    // Pass 1: the names. An unknown name anywhere is reported unless an earlier name failed.
    let mut problem: Option<CmdError> = None;
    let mut given: Vec<String> = Vec::new();
    let mut names: Vec<&'static str> = Vec::new();
    for (name, _) in &pairs {
        let Some(param) = Config::param(name) else {
            return Err(problem.unwrap_or_else(|| {
                CmdError::Other(format!("ERR Unknown option or number of arguments for CONFIG SET - '{name}'").into())
            }));
        };
        let lower = name.to_ascii_lowercase();
        if problem.is_none() {
            if !param.mutable {
                problem = Some(failed(name, "can't set immutable config"));
            } else if crate::config::PROTECTED.contains(&param.name) && !super::server::allowed_by(ctx, P::EnableProtectedConfigs) {
                // Where files go is for the configuration file alone, unless it says otherwise.
                problem = Some(failed(name, "can't set protected config"));
            } else if given.contains(&lower) {
                problem = Some(failed(name, "duplicate parameter"));
            }
        }
        given.push(lower);
        if !names.contains(&param.name) {
            names.push(param.name);
        }
    }
    if let Some(err) = problem {
        return Err(err);
    }
    // Pass 2: the values, on a copy.
    let mut staged: Config = ctx.server.config.clone();
    for (name, value) in &pairs {
        let checked = match staged.set(name, value, false) {
            Ok(()) => apply_check(Config::param(name).map_or("", |p| p.name), value),
            Err(SetError::Unknown) => Err("Unknown option".into()),
            Err(SetError::Invalid(reason)) => Err(reason),
        };
        if let Err(reason) = checked {
            return Err(failed(name, &reason));
        }
    }
    // A new port or bind address is listened on before anything is committed: a failure
    // leaves every parameter of the call as it was, as Redis restores them.
    let (port, bind) = (staged.get(P::Port), staged.get(P::Bind));
    if port != ctx.server.config.get(P::Port) || bind != ctx.server.config.get(P::Bind) {
        let binds: Vec<String> = bind.split_whitespace().map(str::to_string).collect();
        let port_changed = port != ctx.server.config.get(P::Port);
        let port: u16 = port.parse().unwrap_or(0);
        if let Err(e) = crate::server::replace_plain_listeners(&binds, port) {
            crate::log::warning(&format!("CONFIG SET could not listen where asked: {e}"));
            return Err(if port_changed {
                failed("port", "Unable to listen on this port. Check server logs.")
            } else {
                failed("bind", "Failed to bind to specified addresses.")
            });
        }
    }
    ctx.server.config = staged;
    for name in names {
        apply(ctx, name);
    }
    ctx.server.config_changed();
    ctx.ks.lfu.log_factor = ctx.server.config.get_int(P::LfuLogFactor).max(0) as u64;
    ctx.ks.lfu.decay_time = ctx.server.config.get_int(P::LfuDecayTime).max(0) as u64;
    Ok(Reply::OK)
}

/// Side-effect checks that can fail before anything is applied.
fn apply_check(name: &str, value: &str) -> Result<(), String> {
    if name == "dir" && !std::path::Path::new(value).is_dir() {
        return Err("No such file or directory".into());
    }
    Ok(())
}

/// Effects of a changed parameter beyond its stored value.
fn apply(ctx: &mut Ctx<'_>, name: &str) {
    let config = &ctx.server.config;
    match name {
        "loglevel" | "logfile" => crate::log::configure(crate::log::Level::parse(config.get(P::Loglevel)), config.get(P::Logfile)),
        "dir" => {
            let _ = std::env::set_current_dir(config.get(P::Dir));
        }
        "protected-mode" => ctx.acl_changed(),
        "requirepass" => {
            // The default user's password; like Redis, nobody is logged out.
            let pass = config.get(P::Requirepass).to_string();
            ctx.server.acl.set_requirepass(&pass);
            ctx.acl_changed();
        }
        "appendonly" | "appendfsync" => ctx.then(super::Next::Persist(crate::state::PersistRequest::Reconfigure)),
        _ => {}
    }
}

/// ```text
/// CONFIG REWRITE
/// ```
pub fn config_rewrite(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    let Some(path) = ctx.server.config.config_file.clone() else {
        return Err(CmdError::other("ERR The server is running without a config file"));
    };
    let old = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(CmdError::Other(format!("ERR Rewriting config file: {}", crate::util::strerror(&e)).into())),
    };
    // Users go in the config file unless an ACL file holds them (as in Redis).
    let users: Vec<String> = if ctx.server.config.get(P::Aclfile).is_empty() {
        ctx.server.acl.users.values().map(|u| format!("user {} {}", u.name, u.describe())).collect()
    } else {
        Vec::new()
    };
    let text = crate::config::rewrite::rewrite(&old, &ctx.server.config, &users);
    // Written aside and renamed: a crash never leaves half a config file.
    let tmp = path.with_extension(format!("rewrite-{}", std::process::id()));
    let written = std::fs::write(&tmp, text).and_then(|_| std::fs::rename(&tmp, &path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        crate::log::warning(&format!("CONFIG REWRITE failed: {e}"));
        return Err(CmdError::Other(format!("ERR Rewriting config file: {}", crate::util::strerror(&e)).into()));
    }
    crate::log::notice("CONFIG REWRITE executed with success.");
    Ok(Reply::OK)
}

pub fn config_resetstat(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    ctx.server.stats = Default::default();
    ctx.ks.stats = Default::default();
    ctx.server.limits.net_input_bytes.store(0, std::sync::atomic::Ordering::Relaxed);
    ctx.server.limits.reads_processed.store(0, std::sync::atomic::Ordering::Relaxed);
    Ok(Reply::OK)
}

pub fn config_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(help_reply(help::CONFIG))
}
