//! DEBUG: the subcommands Redis's test suite and users rely on (SLEEP, RELOAD, POPULATE,
//! DIGEST, OBJECT, PROTOCOL...).

use bytes::Bytes;

use super::{help_reply, CmdError, Ctx};
use crate::config::P;
use crate::protocol::{ProtocolVersion, Reply};
use crate::util::eq_ignore_case;

/// ```text
/// DEBUG SLEEP seconds | SET-ACTIVE-EXPIRE 0|1 | OBJECT key | HELP
/// ```
/// Allowed per `enable-debug-command` (`local`, our default, means loopback clients only).
pub fn debug(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if !super::server::allowed_by(ctx, P::EnableDebugCommand) {
        return Err(CmdError::other("ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."));
    }
    let sub = String::from_utf8_lossy(&args[1]).to_lowercase();
    // No DEBUG subcommand is logged as sent (POPULATE states its own records).
    ctx.log_as(Vec::new());
    match (sub.as_str(), args.len()) {
        ("sleep", 3) => {
            let secs = crate::util::parse_f64(&args[2]).unwrap_or(0.0);
            if secs > 0.0 && secs.is_finite() {
                // Blocks the executor on purpose: that is what DEBUG SLEEP is for.
                std::thread::sleep(std::time::Duration::from_secs_f64(secs.min(3600.0)));
            }
            Ok(Reply::OK)
        }
        ("set-active-expire", 3) => {
            ctx.server.active_expire_enabled = crate::util::parse_i64(&args[2]).unwrap_or(1) != 0;
            Ok(Reply::OK)
        }
        ("set-disable-deny-scripts", 3) => {
            // atoi, as Redis reads it.
            ctx.server.allow_noscript_in_scripts = crate::util::parse_i64(&args[2]).unwrap_or(0) != 0;
            Ok(Reply::OK)
        }
        ("error", 3) => {
            // Any error a client library wants to see (LOADING, READONLY...): the text with
            // newlines as spaces, sent as is; INFO does not count it, as Redis's
            // addReplySds does not.
            let text: String = String::from_utf8_lossy(&args[2]).chars().map(|c| if c == '\r' || c == '\n' { ' ' } else { c }).collect();
            Ok(Reply::uncounted_error(text))
        }
        ("digest", 2) => Ok(Reply::Status(crate::db::digest::dataset_digest(ctx.ks).into())),
        ("digest-value", _) => {
            let db = ctx.db();
            Ok(Reply::Array(
                args[2..].iter().map(|k| Reply::Status(crate::db::digest::value_digest(ctx.ks.db(db).peek(k)).into())).collect(),
            ))
        }
        ("reload", _) => {
            ctx.then(super::Next::Persist(crate::state::PersistRequest::Reload));
            Ok(Reply::NoReply)
        }
        ("loadaof", 2) => {
            ctx.then(super::Next::Persist(crate::state::PersistRequest::LoadAof));
            Ok(Reply::NoReply)
        }
        ("object", 3) => {
            let db = ctx.db();
            let Some(entry) = ctx.ks.db(db).peek(&args[2]) else {
                return Err(CmdError::NoSuchKey);
            };
            Ok(Reply::Status(
                format!(
                    "Value at:0x0 refcount:1 encoding:{} serializedlength:{} lru:0 lru_seconds_idle:0",
                    entry.value.encoding(),
                    entry.value.mem_usage()
                )
                .into(),
            ))
        }
        ("protocol", 3) => debug_protocol(ctx, &args[2]),
        ("populate", 3..=5) => debug_populate(ctx, args),
        ("change-repl-id", 2) => {
            // A new history: nobody can continue the old one from here.
            let repl = &mut ctx.server.repl;
            repl.replid = crate::replication::new_replid();
            repl.replid2 = crate::replication::NO_REPLID.to_string();
            repl.second_offset = None;
            Ok(Reply::OK)
        }
        // Redis stores a list element above this size in a plain node of its own. Here an
        // element over a chunk's 8 KB always has a chunk of its own, whatever the threshold:
        // the commands answer the same; the setting is checked as Redis checks it.
        ("quicklist-packed-threshold", 3) => {
            let size = std::str::from_utf8(&args[2]).ok().and_then(crate::config::parse_memory);
            match size {
                Some(sz) if sz <= (1u64 << 32) - (1 << 20) => Ok(Reply::OK),
                _ => Err(CmdError::other("ERR argument must be a memory value bigger than 1 and smaller than 4gb")),
            }
        }
        // The reply buffer's peak reset and resizing: our output buffers are sized per write.
        ("replybuffer", 4) => {
            let sub = String::from_utf8_lossy(&args[2]).to_lowercase();
            match sub.as_str() {
                "peak-reset-time" => {
                    if !eq_ignore_case(&args[3], "never") && !eq_ignore_case(&args[3], "reset") {
                        crate::commands::arg_i64(&args[3])?;
                    }
                    Ok(Reply::OK)
                }
                "resizing" => Ok(Reply::OK),
                _ => Err(crate::commands::subcommand_syntax_error(args)),
            }
        }
        ("listpack", 3) => Err(CmdError::other("ERR DEBUG LISTPACK is not supported: values are not listpacks here")),
        ("help", _) => Ok(help_reply(&[
            "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CHANGE-REPL-ID",
            "    Change the replication IDs of the instance.",
            "    Dangerous: should be used only for testing the replication subsystem.",
            "DIGEST",
            "    Output a hex signature representing the current DB content.",
            "DIGEST-VALUE <key> [<key> ...]",
            "    Output a hex signature of the values of all the specified keys.",
            "ERROR <string>",
            "    Return a Redis protocol error with <string> as message. Useful for clients",
            "    unit tests to simulate Redis errors.",
            "LOADAOF",
            "    Flush the AOF buffers on disk and reload the AOF in memory.",
            "OBJECT <key>",
            "    Show low level info about the key and associated value.",
            "POPULATE <count> [<prefix>] [<size>]",
            "    Create <count> string keys named key:<num>. If <prefix> is specified then",
            "    it is used instead of the 'key' prefix. These are logged (as MSETs), so",
            "    they survive a restart and reach replicas.",
            "PROTOCOL <type>",
            "    Reply with a test value of the specified type. <type> can be: string,",
            "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
            "    true, false.",
            "RELOAD [option value] ...",
            "    Save the RDB on disk and reload it back to memory.",
            "SET-ACTIVE-EXPIRE <0|1>",
            "    Setting it to 0 disables expiring keys in background when they are not",
            "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
            "    default.",
            "QUICKLIST-PACKED-THRESHOLD <size>",
            "    Sets the threshold for elements to be inserted as plain vs packed nodes",
            "    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.",
            "REPLYBUFFER PEAK-RESET-TIME <NEVER||RESET|time>",
            "    Sets the time (in milliseconds) to wait between client reply buffer peak resets.",
            "REPLYBUFFER RESIZING <0|1>",
            "    Enable or disable the reply buffer resize cron job",
            "SET-DISABLE-DENY-SCRIPTS <0|1>",
            "    Enable or disable the deny-script flag of commands (scripts may then call",
            "    commands flagged noscript).",
            "SLEEP <seconds>",
            "    Stop the server for <seconds>. Decimals allowed.",
            "HELP",
            "    Prints this help.",
        ])),
        _ => Err(crate::commands::subcommand_syntax_error(args)),
    }
}

/// The value DEBUG POPULATE gives key number `j`: `value:<j>`, or with a size, that text
/// cut or padded with zero bytes to `size`.
pub fn populate_value(j: u64, size: usize) -> Vec<u8> {
    let mut v = format!("value:{j}").into_bytes();
    if size > 0 {
        v.resize(size, 0);
    }
    v
}

/// The key DEBUG POPULATE `args` names number `j`. Redis formats it with `snprintf("%s:%lu")` into 128 bytes: the prefix ends at a zero
/// byte and the key at 127 bytes.
pub fn populate_key(args: &[Bytes], j: u64) -> Vec<u8> {
    let prefix: &[u8] = args.get(3).map_or(b"key", |p| &p[..]);
    let prefix = prefix.split(|&c| c == 0).next().unwrap_or_default();
    let mut key = prefix.to_vec();
    key.extend_from_slice(format!(":{j}").as_bytes());
    key.truncate(127);
    key
}

fn populate_arg(arg: &[u8]) -> Result<u64, CmdError> {
    match crate::util::parse_i64(arg) {
        Some(n) if n >= 0 => Ok(n as u64),
        _ => Err(CmdError::other("ERR value is out of range, must be positive")),
    }
}

/// ```text
/// DEBUG POPULATE count [prefix] [size]
/// ```
/// Creates string keys `prefix:0..count` (existing ones are left alone), as Redis's test
/// suite and users filling a test instance expect. Unlike Redis, what it creates is logged
/// (as MSETs, see `executor/persist.rs`), so it survives a restart and reaches replicas.
fn debug_populate(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let count = populate_arg(&args[2])?;
    let size = match args.get(4) {
        Some(a) => populate_arg(a)?,
        None => 0,
    };
    // A value is a string: no longer than one may be (Redis would try to allocate it).
    if size as i128 > ctx.server.config.get_int(P::ProtoMaxBulkLen) as i128 {
        return Err(CmdError::StringTooLong);
    }
    // Redis sizes the key table first and answers this when it cannot: keys that could
    // never fit in this machine's memory (32 bytes each at least, plus their values) fail
    // the same way instead of filling memory until the process is killed.
    if count.saturating_mul(32 + size) > crate::util::total_memory().unwrap_or(u64::MAX) {
        return Err(CmdError::other("ERR OOM in dictTryExpand"));
    }
    let size = size as usize;
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut created = 0;
    // Logged as MSETs of what it created, 1,000 keys each.
    let mut records = Vec::new();
    let mut mset = vec![Bytes::from_static(b"MSET")];
    for j in 0..count {
        let key = populate_key(args, j);
        if ctx.ks.exists(db, &key, now) {
            continue;
        }
        let data = populate_value(j, size);
        mset.push(Bytes::copy_from_slice(&key));
        mset.push(Bytes::copy_from_slice(&data));
        if mset.len() > 2000 {
            records.push(std::mem::replace(&mut mset, vec![Bytes::from_static(b"MSET")]));
        }
        let value = crate::db::Value::Str(crate::db::StrValue::with_enc(data, crate::db::StrEncoding::Auto));
        ctx.write_value(&key, value, None);
        created += 1;
    }
    if mset.len() > 1 {
        records.push(mset);
    }
    ctx.dirty(created);
    ctx.log_as(records);
    Ok(Reply::OK)
}

/// DEBUG PROTOCOL: one test value of each RESP3 type, as Redis's debug.c sends them.
fn debug_protocol(ctx: &mut Ctx<'_>, name: &[u8]) -> Result<Reply, CmdError> {
    let resp3 = ctx.client.proto == ProtocolVersion::Resp3;
    let name = String::from_utf8_lossy(name).to_ascii_lowercase();
    let ints = || (0..3).map(Reply::Int).collect::<Vec<_>>();
    Ok(match name.as_str() {
        "string" => Reply::bulk(b"Hello World"),
        "integer" => Reply::Int(12345),
        // Redis's test value, not π.
        #[allow(clippy::approx_constant)]
        "double" => Reply::Double(3.141),
        "bignum" => Reply::BigNumber("1234567999999999999999999999999999999".into()),
        "null" => Reply::Nil,
        "array" => Reply::Array(ints()),
        "set" => Reply::Set(ints()),
        "map" => Reply::Map((0..3).map(|j| (Reply::Int(j), Reply::Bool(j == 1))).collect()),
        "attrib" => Reply::Sequence(vec![
            Reply::Attribute(vec![(
                Reply::bulk(b"key-popularity"),
                Reply::Array(vec![Reply::bulk(b"key:123"), Reply::Int(90)]),
            )]),
            Reply::bulk(b"Some real reply following the attribute"),
        ]),
        "push" if !resp3 => return Err(CmdError::other("ERR RESP2 is not supported by this command")),
        "push" => Reply::Sequence(vec![
            Reply::Push(vec![Reply::bulk(b"server-cpu-usage"), Reply::Int(42)]),
            Reply::bulk(b"Some real reply following the push reply"),
        ]),
        "true" => Reply::Bool(true),
        "false" => Reply::Bool(false),
        "verbatim" => Reply::Verbatim(*b"txt", Bytes::from_static(b"This is a verbatim\nstring")),
        _ => {
            return Err(CmdError::other(
                "ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
            ))
        }
    })
}
