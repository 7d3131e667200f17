//! The ACL command: users and their rules, the refusal log, the ACL file.

use bytes::Bytes;

use super::{arg_i64, help, help_reply, CmdError, Ctx, Resolved};
use crate::acl::{self, Denied, User, CATEGORIES};
use crate::config::P;
use crate::protocol::Reply;
use crate::util::eq_ignore_case;

fn name_of(arg: &[u8]) -> String {
    String::from_utf8_lossy(arg).into_owned()
}

fn all_channels_default(ctx: &Ctx<'_>) -> bool {
    ctx.server.config.get(P::AclPubsubDefault) == "allchannels"
}

/// ```text
/// ACL SETUSER username [rule [rule ...]]
/// ```
pub fn acl_setuser(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    // Nothing of the user shows in MONITOR or SLOWLOG, as in Redis.
    (2..args.len()).for_each(|j| ctx.redact_arg(j));
    let name = &args[2];
    if !acl::valid_username(name) {
        return Err(CmdError::other("ERR Usernames can't contain spaces or null characters"));
    }
    let rules = acl::merge_selectors(&args[3..].iter().map(|a| a.to_vec()).collect::<Vec<_>>())
        .map_err(|e| CmdError::Other(format!("ERR {e}").into()))?;
    let all_channels = all_channels_default(ctx);
    let name = name_of(name);
    // Rules apply to a copy: one bad rule leaves the user as it was.
    let mut user = ctx.server.acl.users.get(&name).cloned().unwrap_or_else(|| User::new(&name, all_channels));
    for rule in &rules {
        if let Err(e) = user.apply(rule, all_channels) {
            return Err(CmdError::Other(
                format!("ERR Error in ACL SETUSER modifier '{}': {}", String::from_utf8_lossy(rule), e.text()).into(),
            ));
        }
    }
    ctx.server.acl.users.insert(name, user);
    ctx.acl_changed();
    Ok(Reply::OK)
}

/// ```text
/// ACL GETUSER username
/// ```
pub fn acl_getuser(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let Some(user) = ctx.server.acl.users.get(&name_of(&args[2])) else { return Ok(Reply::Nil) };
    let text = |s: String| Reply::Bulk(Bytes::from(s));
    let root = &user.selectors[0];
    let selectors = user.selectors[1..]
        .iter()
        .map(|s| {
            Reply::Map(vec![
                (Reply::bulk(b"commands"), text(s.commands_text())),
                (Reply::bulk(b"keys"), text(s.describe_keys())),
                (Reply::bulk(b"channels"), text(s.describe_channels())),
            ])
        })
        .collect();
    Ok(Reply::Map(vec![
        (Reply::bulk(b"flags"), Reply::Set(user.flags().into_iter().map(|f| Reply::bulk(f.as_bytes())).collect())),
        (Reply::bulk(b"passwords"), Reply::Array(user.passwords.iter().map(|p| Reply::bulk(p.as_bytes())).collect())),
        (Reply::bulk(b"commands"), text(root.commands_text())),
        (Reply::bulk(b"keys"), text(root.describe_keys())),
        (Reply::bulk(b"channels"), text(root.describe_channels())),
        (Reply::bulk(b"selectors"), Reply::Array(selectors)),
    ]))
}

/// ```text
/// ACL DELUSER username [username ...]
/// ```
pub fn acl_deluser(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let mut deleted = 0;
    for arg in &args[2..] {
        let name = name_of(arg);
        if name == "default" {
            return Err(CmdError::other("ERR The 'default' user cannot be removed"));
        }
    }
    for arg in &args[2..] {
        if ctx.server.acl.users.remove(&name_of(arg)).is_some() {
            deleted += 1;
        }
    }
    ctx.acl_changed();
    Ok(Reply::Int(deleted))
}

/// ```text
/// ACL LIST
/// ```
pub fn acl_list(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    let lines = ctx.server.acl.users.values().map(|u| Reply::Bulk(Bytes::from(format!("user {} {}", u.name, u.describe()))));
    Ok(Reply::Array(lines.collect()))
}

/// ```text
/// ACL USERS
/// ```
pub fn acl_users(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(Reply::Array(ctx.server.acl.users.keys().map(|n| Reply::bulk(n.as_bytes())).collect()))
}

/// ```text
/// ACL WHOAMI
/// ```
pub fn acl_whoami(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(Reply::bulk(ctx.client.user.as_bytes()))
}

/// ```text
/// ACL CAT [category]
/// ```
pub fn acl_cat(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    // The table's arity lets more through; Redis's handler does not.
    if args.len() > 3 {
        return Err(crate::commands::subcommand_syntax_error(args));
    }
    if args.len() == 2 {
        return Ok(Reply::Array(CATEGORIES.iter().map(|c| Reply::bulk(c.as_bytes())).collect()));
    }
    let cat = String::from_utf8_lossy(&args[2]).to_ascii_lowercase();
    if !CATEGORIES.contains(&cat.as_str()) {
        return Err(CmdError::Other(format!("ERR Unknown category '{}'", String::from_utf8_lossy(&args[2])).into()));
    }
    Ok(Reply::Array(acl::category_commands(&cat).into_iter().map(|c| Reply::bulk(c.as_bytes())).collect()))
}

/// ```text
/// ACL DRYRUN username command [arg ...]
/// ```
pub fn acl_dryrun(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let name = name_of(&args[2]);
    let Some(user) = ctx.server.acl.users.get(&name) else {
        return Err(CmdError::Other(format!("ERR User '{name}' not found").into()));
    };
    let inner = &args[3..];
    let cmd = match super::resolve(inner) {
        Resolved::Found(cmd) => cmd,
        Resolved::WrongArity(cmd) => return Ok(super::wrong_arity_error(cmd)),
        _ => return Err(CmdError::Other(format!("ERR Command '{}' not found", String::from_utf8_lossy(&inner[0])).into())),
    };
    Ok(match user.check(cmd, inner) {
        Ok(()) => Reply::OK,
        Err(Denied::Command) => Reply::Bulk(Bytes::from(format!("This user has no permissions to run the '{}' command", cmd.name))),
        Err(Denied::Key(i)) => {
            Reply::Bulk(Bytes::from(format!("This user has no permissions to access the '{}' key", String::from_utf8_lossy(&inner[i]))))
        }
        Err(Denied::Channel(i)) => {
            Reply::Bulk(Bytes::from(format!("This user has no permissions to access the '{}' channel", String::from_utf8_lossy(&inner[i]))))
        }
    })
}

/// ```text
/// ACL LOG [count | RESET]
/// ```
pub fn acl_log(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    // Like Redis: the last 10 entries unless a count is given.
    let mut count = 10;
    if args.len() == 3 {
        if eq_ignore_case(&args[2], "reset") {
            ctx.server.acl.log.clear();
            return Ok(Reply::OK);
        }
        count = arg_i64(&args[2])?.max(0) as usize;
    } else if args.len() > 3 {
        return Err(CmdError::other("ERR unknown subcommand or wrong number of arguments for 'LOG'. Try ACL HELP."));
    }
    let now = ctx.now_ms;
    let entries = ctx.server.acl.log.iter().take(count).map(|e| {
        Reply::Map(vec![
            (Reply::bulk(b"count"), Reply::Int(e.count as i64)),
            (Reply::bulk(b"reason"), Reply::bulk(e.reason.as_bytes())),
            (Reply::bulk(b"context"), Reply::bulk(e.context.as_bytes())),
            (Reply::bulk(b"object"), Reply::bulk(e.object.as_bytes())),
            (Reply::bulk(b"username"), Reply::bulk(e.username.as_bytes())),
            (Reply::bulk(b"age-seconds"), Reply::Double((now - e.ctime_ms).max(0) as f64 / 1000.0)),
            (Reply::bulk(b"client-info"), Reply::bulk(e.client_info.trim_end().as_bytes())),
        ])
    });
    Ok(Reply::Array(entries.collect()))
}

const NO_ACL_FILE: &str = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.";

/// ```text
/// ACL LOAD
/// ```
pub fn acl_load(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    let path = ctx.server.config.get(P::Aclfile).to_string();
    if path.is_empty() {
        return Err(CmdError::other(NO_ACL_FILE));
    }
    let text = std::fs::read_to_string(&path)
        .map_err(|e| CmdError::Other(format!("ERR Error loading ACLs, opening file '{path}': {e}").into()))?;
    let all_channels = all_channels_default(ctx);
    ctx.server.acl.load_file_text(&path, &text, all_channels).map_err(|e| {
        CmdError::Other(format!("ERR {e}WARNING: ACL errors detected, no change to the previously active ACL rules was performed").into())
    })?;
    ctx.acl_changed();
    Ok(Reply::OK)
}

/// ```text
/// ACL SAVE
/// ```
pub fn acl_save(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    let path = ctx.server.config.get(P::Aclfile).to_string();
    if path.is_empty() {
        return Err(CmdError::other(NO_ACL_FILE));
    }
    // Written aside and renamed, so a crash never leaves half a file.
    let tmp = format!("{path}.tmp-{}", std::process::id());
    let written = std::fs::write(&tmp, ctx.server.acl.file_text()).and_then(|_| std::fs::rename(&tmp, &path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        crate::log::warning(&format!("Saving ACL file {path}: {e}"));
        return Err(CmdError::other("ERR There was an error trying to save the ACLs. Please check the server logs for more information"));
    }
    Ok(Reply::OK)
}

/// ```text
/// ACL GENPASS [bits]
/// ```
pub fn acl_genpass(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if args.len() > 3 {
        return Err(crate::commands::subcommand_syntax_error(args));
    }
    let bits = match args.get(2) {
        Some(a) => arg_i64(a)?,
        None => 256,
    };
    if !(1..=4096).contains(&bits) {
        return Err(CmdError::other(
            "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096",
        ));
    }
    let chars = (bits as usize).div_ceil(4);
    let mut raw = vec![0u8; chars.div_ceil(2)];
    random_bytes(&mut raw);
    let mut text = crate::util::hex(&raw);
    text.truncate(chars);
    Ok(Reply::Bulk(Bytes::from(text)))
}

/// Secret-grade randomness from the kernel.
fn random_bytes(out: &mut [u8]) {
    use std::io::Read;
    let filled = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(out));
    if filled.is_err() {
        // No /dev/urandom: the std hasher's per-process random keys, a weaker fallback.
        use std::hash::{BuildHasher, Hasher};
        for chunk in out.chunks_mut(8) {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u64(crate::clock::now_ms() as u64);
            let v = h.finish().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

pub fn acl_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(help_reply(help::ACL))
}
