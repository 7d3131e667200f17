//! Commands: the command table (data), the dispatcher that applies every generic check the
//! table's flags call for, and one file of handlers per command group.
//!
//! A handler gets a [`Ctx`] (the keyspace, the calling client, the server state, the
//! command's time) and the argument vector (name included, as Redis's argv), and returns
//! `Result<Reply, CmdError>`; the error maps to Redis's code word in one place.

mod access;
mod acl;
mod bitmaps;
mod cluster;
pub mod connection;
mod diagnostics;
mod dump;
mod error;
mod functions;
mod geo;
mod hashes;
mod help;
mod hll;
mod introspection;
mod keys;
pub mod keyspec;
mod lists;
mod module;
pub mod pubsub;
mod replication;
pub mod scripting;
mod server;
mod sets;
mod sort;
mod spec;
mod strings;
mod table;
pub mod transactions;
mod zsets;

pub use error::CmdError;
pub use functions::stats_reply as function_stats_reply;
pub use spec::{CommandSpec, Doc, Flag, Group};
pub use table::{COMMANDS, COMMAND_IDS};

use std::collections::HashMap;
use std::sync::OnceLock;

use bytes::Bytes;

use crate::db::Keyspace;
use crate::protocol::Reply;
use crate::state::{Client, ServerState};

/// What a handler works with.
pub struct Ctx<'a> {
    pub ks: &'a mut Keyspace,
    pub client: &'a mut Client,
    pub server: &'a mut ServerState,
    /// The command's time in ms since the epoch (frozen for the whole command).
    pub now_ms: i64,
}

impl Ctx<'_> {
    /// The client's selected database.
    pub fn db(&self) -> usize {
        self.client.db
    }

    /// After a change of users: other clients that lost their access go after this batch,
    /// and so does this one, right after its reply (Redis's CLIENT_CLOSE_AFTER_COMMAND: the
    /// rest of its pipeline is not run).
    pub fn acl_changed(&mut self) {
        self.server.acl_changed();
        if self.server.lost_access(self.client) {
            self.client.acl_revoked = true;
            self.client.close_after_reply = true;
        }
    }

    /// Counts a change to the dataset (Redis's `server.dirty`).
    pub fn dirty(&mut self, n: u64) {
        self.server.dirty += n;
    }

    /// Raises a keyspace event (Redis's `notifyKeyspaceEvent`) for `key` in the client's
    /// database; the executor publishes it after the command if `notify-keyspace-events`
    /// enables its class.
    pub fn notify(&mut self, class: u32, event: &'static str, key: &[u8]) {
        let db = self.client.db;
        self.notify_db(class, event, key, db);
    }

    /// Whether an event of `class` would be published (notify-keyspace-events).
    pub fn wants_notification(&self, class: u32) -> bool {
        let flags = self.server.notify_flags;
        flags & class != 0 && flags & (crate::notify::KEYSPACE | crate::notify::KEYEVENT) != 0
    }

    /// [`Ctx::notify`] for a key of another database (MOVE, COPY DB, SWAPDB).
    pub fn notify_db(&mut self, class: u32, event: &'static str, key: &[u8], db: usize) {
        if !self.wants_notification(class) {
            return;
        }
        self.server.notifications.push(crate::notify::Notification { class, event, db, key: Bytes::copy_from_slice(key) });
    }
}

pub type Handler = fn(&mut Ctx<'_>, &[Bytes]) -> Result<Reply, CmdError>;

/// What a blocking command asks for when it finds nothing to serve: the executor parks the
/// client on `keys` and runs the command again when one of them is written, or answers
/// `timeout_reply` at the deadline. The handler sets it in `Client::block_request` and
/// returns [`Reply::NoReply`].
#[derive(Debug, Clone, PartialEq)]
pub struct BlockRequest {
    pub keys: Vec<Bytes>,
    /// Absolute ms; `None` blocks forever.
    pub deadline_ms: Option<i64>,
    pub timeout_reply: Reply,
}

/// Redis's `getTimeoutFromObjectOrReply` for seconds (decimals allowed): `None` for 0
/// (forever), else the absolute deadline in ms.
pub fn parse_block_timeout(arg: &[u8], now_ms: i64) -> Result<Option<i64>, CmdError> {
    let secs = crate::util::parse_f64(arg).ok_or_else(|| CmdError::other("ERR timeout is not a float or out of range"))?;
    // Rounded up to the ms, as Redis's `ceill`: 0.0005 waits 1 ms, -0.0005 is 0 (forever).
    let ms = (secs * 1000.0).ceil();
    // C's cast of an out-of-range long double gives LLONG_MIN on x86: "negative".
    if !ms.is_finite() || !(0.0..9.2e18).contains(&ms) {
        return Err(CmdError::other("ERR timeout is negative"));
    }
    let ms = ms as i64;
    if ms == 0 {
        return Ok(None);
    }
    ms.checked_add(now_ms).map(Some).ok_or_else(|| CmdError::other("ERR timeout is out of range"))
}

type CommandIndex = HashMap<&'static [u8], &'static CommandSpec, crate::util::FixedTableHasher>;

fn index() -> &'static CommandIndex {
    static INDEX: OnceLock<CommandIndex> = OnceLock::new();
    INDEX.get_or_init(|| COMMANDS.iter().map(|c| (c.name.as_bytes(), c)).collect())
}

/// Finds a top-level command by name, case-insensitively, without allocating.
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    thread_local! {
        /// The last command found: clients and streams send runs of the same command, and
        /// comparing the name costs less than hashing it and probing the table.
        static LAST: std::cell::Cell<Option<&'static CommandSpec>> = const { std::cell::Cell::new(None) };
    }
    if let Some(cmd) = LAST.get() {
        if cmd.name.as_bytes().eq_ignore_ascii_case(name) {
            return Some(cmd);
        }
    }
    let found = lookup_indexed(name);
    if found.is_some() {
        LAST.set(found);
    }
    found
}

fn lookup_indexed(name: &[u8]) -> Option<&'static CommandSpec> {
    let mut buf = [0u8; 32];
    if name.len() > buf.len() {
        return None;
    }
    let lower = &mut buf[..name.len()];
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    index().get(&*lower).copied()
}

/// The outcome of resolving an argv against the table.
pub enum Resolved {
    Found(&'static CommandSpec),
    Unknown,
    UnknownSubcommand,
    WrongArity(&'static CommandSpec),
}

/// Resolves `args` to a command or subcommand and checks its arity.
pub fn resolve(args: &[Bytes]) -> Resolved {
    let Some(cmd) = lookup(&args[0]) else {
        return Resolved::Unknown;
    };
    let cmd = if cmd.subcommands.is_empty() || args.len() < 2 {
        cmd
    } else {
        match cmd.subcommands.iter().find(|s| s.sub_name().as_bytes().eq_ignore_ascii_case(&args[1])) {
            Some(sub) => sub,
            None => return Resolved::UnknownSubcommand,
        }
    };
    if !cmd.arity_ok(args.len()) {
        return Resolved::WrongArity(cmd);
    }
    Resolved::Found(cmd)
}

/// Redis's reply to a command that is not in the table.
pub fn unknown_command_error(args: &[Bytes]) -> Reply {
    let mut list = String::new();
    for arg in &args[1..] {
        if list.len() >= 128 {
            break;
        }
        let room = 128 - list.len();
        let text = c_string_prefix(arg, room);
        list.push_str(&format!("'{text}' "));
    }
    let name = c_string_prefix(&args[0], 128);
    Reply::Error(sanitize(format!("ERR unknown command '{name}', with args beginning with: {list}")).into())
}

/// Redis's reply to an unknown subcommand of a container command.
pub fn unknown_subcommand_error(args: &[Bytes]) -> Reply {
    let sub = c_string_prefix(&args[1], 128);
    let name = String::from_utf8_lossy(&args[0]).to_uppercase();
    Reply::Error(sanitize(format!("ERR unknown subcommand '{sub}'. Try {name} HELP.")).into())
}

/// Redis's `addReplySubcommandSyntaxError`: a subcommand its handler does not know, or given
/// the wrong number of arguments.
pub fn subcommand_syntax_error(args: &[Bytes]) -> CmdError {
    let sub = c_string_prefix(&args[1], 128);
    let name = String::from_utf8_lossy(&args[0]).to_uppercase();
    CmdError::Other(sanitize(format!("ERR unknown subcommand or wrong number of arguments for '{sub}'. Try {name} HELP.")).into())
}

pub fn wrong_arity_error(cmd: &CommandSpec) -> Reply {
    Reply::Error(format!("ERR wrong number of arguments for '{}' command", cmd.name).into())
}

/// What `%.Ns` of a C string prints: up to the first NUL, at most `max` bytes.
fn c_string_prefix(arg: &[u8], max: usize) -> String {
    let end = arg.iter().position(|&b| b == 0).unwrap_or(arg.len()).min(max);
    String::from_utf8_lossy(&arg[..end]).into_owned()
}

/// Error texts must not break the protocol: Redis turns CR and LF into spaces.
pub fn sanitize(s: String) -> String {
    if s.contains(['\r', '\n']) {
        s.replace(['\r', '\n'], " ")
    } else {
        s
    }
}

pub use server::monitor_line as server_monitor_line;
pub use server::{populate_key, populate_value};

/// Every command and subcommand of the table.
pub fn all_commands() -> impl Iterator<Item = &'static CommandSpec> {
    COMMANDS.iter().flat_map(|c| std::iter::once(c).chain(c.subcommands.iter()))
}

/// Runs a resolved command's handler and maps its error.
pub fn call(cmd: &'static CommandSpec, ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    match (cmd.handler)(ctx, args) {
        Ok(reply) => reply,
        Err(e) => e.into_reply(),
    }
}

/// A HELP reply: one status line per text line.
pub fn help_reply(lines: &[&'static str]) -> Reply {
    Reply::Array(lines.iter().map(|l| Reply::status(l)).collect())
}

/// The encoding limits of collections built in one go (snapshot loading, RESTORE).
pub fn build_limits(c: &crate::config::Config) -> crate::db::BuildLimits {
    crate::db::BuildLimits {
        hash: crate::db::hash::HashLimits {
            max_entries: c.get_int("hash-max-listpack-entries").max(0) as u64,
            max_value: c.get_int("hash-max-listpack-value").max(0) as u64,
        },
        max_intset: c.get_int("set-max-intset-entries").max(0) as u64,
        zset_entries: c.get_int("zset-max-listpack-entries"),
        zset_value: c.get_int("zset-max-listpack-value"),
    }
}

/// Parses an integer argument with Redis's rules.
pub fn arg_i64(arg: &[u8]) -> Result<i64, CmdError> {
    crate::util::parse_i64(arg).ok_or(CmdError::NotInteger)
}
