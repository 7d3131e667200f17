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
mod config_cmd;
pub mod connection;
mod debug;
mod diagnostics;
mod dump;
mod effects;
mod error;
mod functions;
mod geo;
mod handlers;
mod hashes;
mod help;
mod hll;
mod info;
mod introspection;
mod keys;
mod lists;
mod lolwut;
mod module;
pub mod pubsub;
mod replication;
pub mod scripting;
mod server;
mod sets;
mod sort;
mod stream_claims;
mod stream_groups;
mod stream_info;
mod stream_reads;
mod streams;
mod strings;
pub mod transactions;
mod zset_algebra;
mod zset_pops;
mod zsets;

pub use crate::spec::{
    all_commands, keyspec, lookup, resolve, sanitize, unknown_command_error, unknown_subcommand_error, wrong_arity_error, CommandSpec, Doc,
    Flag, Group, Resolved, Trait, COMMANDS, COMMAND_IDS,
};
pub use crate::state::{BlockKind, BlockRequest};
pub use effects::{touch_all_watched, Effects, Logged, Next, ScriptCacheChange, Signals};
pub use error::CmdError;
pub use replication::dataset_rdb;

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
    /// What the call changed, stated where it changed (see `effects.rs`).
    pub effects: &'a mut Effects,
}

impl<'a> Ctx<'a> {
    pub fn new(
        ks: &'a mut Keyspace,
        client: &'a mut Client,
        server: &'a mut ServerState,
        now_ms: i64,
        effects: &'a mut Effects,
    ) -> Ctx<'a> {
        Ctx { ks, client, server, now_ms, effects }
    }
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

    /// Whether replies go out in RESP3 (maps, doubles, nulls of their own).
    pub fn resp3(&self) -> bool {
        self.client.proto == crate::protocol::ProtocolVersion::Resp3
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
        let flags = self.server.settings.notify_flags;
        flags & class != 0 && flags & (crate::notify::KEYSPACE | crate::notify::KEYEVENT) != 0
    }

    /// [`Ctx::notify`] for a key of another database (MOVE, COPY DB, SWAPDB).
    pub fn notify_db(&mut self, class: u32, event: &'static str, key: &[u8], db: usize) {
        if !self.wants_notification(class) {
            return;
        }
        self.effects.notifications.push(crate::notify::Notification { class, event, db, key: Bytes::copy_from_slice(key) });
    }
}

pub type Handler = fn(&mut Ctx<'_>, &[Bytes]) -> Result<Reply, CmdError>;

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

/// Redis's `addReplySubcommandSyntaxError`: a subcommand its handler does not know, or given
/// the wrong number of arguments.
pub fn subcommand_syntax_error(args: &[Bytes]) -> CmdError {
    let sub = crate::spec::c_string_prefix(&args[1], 128);
    let name = String::from_utf8_lossy(&args[0]).to_uppercase();
    CmdError::Other(sanitize(format!("ERR unknown subcommand or wrong number of arguments for '{sub}'. Try {name} HELP.")).into())
}

pub use debug::{populate_key, populate_value};
pub use server::monitor_line as server_monitor_line;

/// Runs a resolved command's handler and maps its error.
pub fn call(cmd: &'static CommandSpec, ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    match handlers::HANDLERS[cmd.id](ctx, args) {
        Ok(reply) => reply,
        Err(e) => e.into_reply(),
    }
}

/// A HELP reply: one status line per text line.
pub fn help_reply(lines: &[&'static str]) -> Reply {
    Reply::Array(lines.iter().map(|l| Reply::status(l)).collect())
}

pub use crate::state::build_limits;

/// Parses an integer argument with Redis's rules.
pub fn arg_i64(arg: &[u8]) -> Result<i64, CmdError> {
    crate::util::parse_i64(arg).ok_or(CmdError::NotInteger)
}
