//! The checks a command passes before it runs, besides the table's arity and flags: ACL
//! permissions (and the ACL LOG), the flags a script declares, maxmemory, and how a refusal
//! is answered (counted, dooming a transaction, EXECABORT for EXEC).

use bytes::Bytes;

use super::Executor;
use crate::commands::{self, CommandSpec, Ctx, Flag, Trait};
use crate::config::P;
use crate::db::Keyspace;
use crate::protocol::Reply;
use crate::state::Client;

impl Executor {
    /// The flags an EVAL, EVALSHA or FCALL's script declares (a shebang; every function
    /// does): Redis's `scriptFlagsToCmdFlags` then replaces the command's own write,
    /// may-replicate, deny-oom and stale flags. `None` for a script without flags.
    pub(super) fn declared_flags(&self, cmd: &CommandSpec, args: &[Bytes]) -> Option<crate::scripting::ScriptFlags> {
        let engine = self.server.scripts.as_deref()?;
        let flags = if cmd.is(Trait::ScriptBody) {
            crate::scripting::ScriptFlags::parse(&args[1]).ok()?
        } else if cmd.is(Trait::ScriptSha) {
            engine.get(&args[1])?.flags
        } else if cmd.is(Trait::ScriptFunction) {
            engine.functions.get(&args[1])?.flags
        } else {
            return None;
        };
        (!flags.compat).then_some(flags)
    }

    /// Whether the script of an EVAL, EVALSHA or FCALL writes, when it declares flags.
    pub(super) fn declared_writes(&self, cmd: &CommandSpec, args: &[Bytes]) -> Option<bool> {
        self.declared_flags(cmd, args).map(|f| !f.no_writes)
    }

    /// Whether `test` holds for the command, or, for EXEC, for one of the commands it would
    /// run: Redis adds the queued commands' flags to EXEC's (all or nothing).
    pub(super) fn any_to_run(client: &Client, cmd: &CommandSpec, args: &[Bytes], test: impl Fn(&CommandSpec, &[Bytes]) -> bool) -> bool {
        match client.txn.multi.as_ref() {
            Some(queue) if cmd.is(Trait::RunsQueue) => queue.iter().any(|(c, a)| test(c, a)),
            _ => test(cmd, args),
        }
    }

    /// Whether a command may run on a stale replica: its `stale` flag, or for a script that
    /// declares flags, its `allow-stale`.
    pub(super) fn allowed_when_stale(&self, cmd: &CommandSpec, args: &[Bytes]) -> bool {
        self.declared_flags(cmd, args).map_or(cmd.has(Flag::Stale), |f| f.allow_stale)
    }

    /// Under `maxmemory`, evicts per `maxmemory-policy` before a command runs (as Redis does
    /// in processCommand); false when memory is still over the limit afterwards.
    pub(super) fn within_maxmemory(&mut self) -> bool {
        let maxmemory = self.server.settings.maxmemory;
        if maxmemory == 0 || self.ks.used_memory() <= maxmemory {
            return true;
        }
        // A replica's data is its primary's (`replica-ignore-maxmemory yes`, the default).
        if self.server.repl.master.is_some() && self.server.config.get(P::ReplicaIgnoreMaxmemory) == "yes" {
            return true;
        }
        let policy = crate::db::evict::Policy::parse(self.server.config.get(P::MaxmemoryPolicy));
        let samples = self.server.config.get_int(P::MaxmemorySamples).clamp(1, 64) as usize;
        let started = std::time::Instant::now();
        self.ks.time_evictions = self.server.settings.latency_threshold_ms > 0;
        let fits = self.ks.evict(policy, samples, maxmemory, self.now_ms, &Keyspace::used_memory);
        self.latency_sample("eviction-cycle", started);
        let slowest_ms = std::mem::take(&mut self.ks.slowest_eviction_us) / 1000;
        self.latency_ms("eviction-del", slowest_ms);
        fits
    }

    /// `cmd` refused before running. A refused EXEC discards the transaction and says why
    /// (Redis's execCommandAbort: the error's code is kept, except ERR).
    pub(super) fn refuse(&mut self, client: &mut Client, cmd: &CommandSpec, reply: Reply) -> Reply {
        // Every refusal counts (Redis's rejectCommand): arity, NOAUTH, ACL, OOM, READONLY...
        self.server.stats.command(cmd.id).rejected_calls += 1;
        if !cmd.is(Trait::RunsQueue) {
            return Self::reject(client, reply);
        }
        let mut scratch = commands::Effects::default();
        let mut ctx = Ctx::new(&mut self.ks, client, &mut self.server, self.now_ms, &mut scratch);
        commands::transactions::discard_transaction(&mut ctx);
        let Reply::Error(text) = reply else { return reply };
        let why = text.strip_prefix("ERR ").unwrap_or(&text);
        Reply::Error(format!("EXECABORT Transaction discarded because of: {why}").into())
    }

    /// A command refused before running: inside MULTI it also dooms the transaction.
    pub(super) fn reject(client: &mut Client, reply: Reply) -> Reply {
        if client.txn.multi.is_some() {
            client.txn.multi_dirty = true;
        }
        reply
    }

    /// Whether the client's user may run `args` (command, keys, channels), nothing logged.
    pub(crate) fn acl_verdict(&self, client: &Client, cmd: &CommandSpec, args: &[Bytes]) -> Result<(), crate::acl::Denied> {
        if client.superuser || (self.server.acl.all_unrestricted && !client.acl_revoked) {
            return Ok(());
        }
        // A deleted user's client (closed after this batch) runs nothing more.
        match self.server.acl.users.get(&client.user).filter(|_| !client.acl_revoked) {
            Some(user) => user.check(cmd, args),
            None => Err(crate::acl::Denied::Command),
        }
    }

    /// Checks the client's user may run `args` (command, keys, channels); a refusal is
    /// logged (ACL LOG) and answered with Redis's text for where it happened.
    pub(crate) fn acl_check(&mut self, client: &mut Client, cmd: &'static commands::CommandSpec, args: &[Bytes]) -> Result<(), Reply> {
        let Err(denied) = self.acl_verdict(client, cmd, args) else { return Ok(()) };
        let (context, text) = if client.in_script {
            let text = match denied {
                crate::acl::Denied::Command => "ERR The user executing the script can't run this command or subcommand",
                crate::acl::Denied::Key(_) => {
                    "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments"
                }
                crate::acl::Denied::Channel(_) => "ERR The user executing the script can't publish to the channel mentioned in the command",
            };
            ("lua", text.to_string())
        } else if client.in_exec() {
            let reason = match denied {
                crate::acl::Denied::Command => "no permission to execute the command or subcommand",
                crate::acl::Denied::Key(_) => "no permission to touch the specified keys",
                crate::acl::Denied::Channel(_) => "no permission to access one of the channels used as arguments",
            };
            ("multi", format!("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {reason}"))
        } else {
            let text = match denied {
                crate::acl::Denied::Command => format!("NOPERM this user has no permissions to run the '{}' command", cmd.name),
                crate::acl::Denied::Key(_) => "NOPERM this user has no permissions to access one of the keys used as arguments".into(),
                crate::acl::Denied::Channel(_) => {
                    "NOPERM this user has no permissions to access one of the channels used as arguments".into()
                }
            };
            (if client.txn.multi.is_some() { "multi" } else { "toplevel" }, text)
        };
        let (reason, object) = match denied {
            crate::acl::Denied::Command => ("command", cmd.name.to_string()),
            crate::acl::Denied::Key(i) => ("key", String::from_utf8_lossy(&args[i]).into_owned()),
            crate::acl::Denied::Channel(i) => ("channel", String::from_utf8_lossy(&args[i]).into_owned()),
        };
        let username = client.user.clone();
        let mut scratch = commands::Effects::default();
        let mut ctx = Ctx::new(&mut self.ks, client, &mut self.server, self.now_ms, &mut scratch);
        commands::connection::log_denial(&mut ctx, reason, context, object, username);
        Err(Reply::Error(text.into()))
    }
}
