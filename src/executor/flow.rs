//! Flow control: clients held at a command and resumed later, by CLIENT PAUSE (all commands
//! or writes) or because their unsent replies passed the output high-water mark; and what
//! follows every turn of the loop (`between_batches`).

use bytes::Bytes;

use std::time::Instant;

use super::Executor;
use crate::commands::{self, CommandSpec, Flag, Resolved};
use crate::conn::{OUTPUT_HIGH_WATER, OUTPUT_LOW_WATER};
use crate::state::Client;

impl Executor {
    /// CLIENT PAUSE (all commands, or writes only) or a FAILOVER (writes): whether this
    /// command has to wait.
    pub(super) fn must_wait_for_pause(&mut self, client: &Client, args: &[Bytes]) -> bool {
        if let Some((until, _)) = self.server.pause {
            if Instant::now() >= until {
                self.server.pause = None;
            }
        }
        let all = match self.server.pause {
            Some((_, all)) => all,
            None if self.server.repl.failover.is_some() => false,
            None => return false,
        };
        if all {
            return true;
        }
        let Resolved::Found(cmd) = commands::resolve(args) else { return false };
        // EXEC writes if a command it runs does (Redis's mstate.cmd_flags).
        Self::any_to_run(client, cmd, args, |c, a| self.writes(c, a))
    }

    /// Whether a command may write or replicate: what a write pause holds.
    fn writes(&self, cmd: &CommandSpec, args: &[Bytes]) -> bool {
        match self.declared_writes(cmd, args) {
            Some(writes) => writes,
            None => cmd.has(Flag::Write) || cmd.has(Flag::MayReplicate),
        }
    }

    /// Holds a client at `cmds[index]` until the pause ends.
    pub(super) fn postpone(&mut self, client: &mut Client, cmds: Vec<Vec<Bytes>>, index: usize, protocol_error: Option<String>) {
        self.send_early(client);
        client.blocked = Some(crate::state::Blocked::held(cmds, index, client.db, protocol_error));
        self.postponed.push_back(client.id);
    }

    /// Sends what the client's batch has answered so far and tells whether the replies not
    /// yet written to its socket are over the high water mark. The connection task is asked
    /// (`ConnFlags::throttled`) to say when they drain, before the check, so no drain is missed.
    pub(super) fn output_backlogged(&mut self, client: &mut Client) -> bool {
        self.send_early(client);
        client.flags.throttled.store(true, std::sync::atomic::Ordering::Release);
        let pending = client.out.len() as u64 + client.flags.task_pending.load(std::sync::atomic::Ordering::Acquire);
        if pending < OUTPUT_HIGH_WATER {
            client.flags.throttled.store(false, std::sync::atomic::Ordering::Release);
            return false;
        }
        true
    }

    /// Holds a client at `cmds[index]` until its output drains (see `output_backlogged`).
    pub(super) fn throttle(&mut self, client: &mut Client, cmds: Vec<Vec<Bytes>>, index: usize, protocol_error: Option<String>) {
        client.blocked = Some(crate::state::Blocked::held(cmds, index, client.db, protocol_error));
        self.throttled.push(client.id);
    }

    /// Throttled clients whose output drained below the low water mark go on.
    pub(super) fn resume_throttled(&mut self) {
        let ids = std::mem::take(&mut self.throttled);
        for id in ids {
            let Some(mut client) = self.server.clients.remove(&id) else { continue };
            let pending = client.out.len() as u64 + client.flags.task_pending.load(std::sync::atomic::Ordering::Acquire);
            if pending >= OUTPUT_LOW_WATER {
                client.flags.throttled.store(true, std::sync::atomic::Ordering::Release);
                self.throttled.push(id);
            } else if let Some(b) = client.blocked.take() {
                client.db = b.db;
                self.run_commands(&mut client, b.cmds, b.index, b.protocol_error, None);
                self.finish_step(&mut client);
            }
            self.server.clients.insert(id, client);
        }
        // What the resumed pipelines wrote wakes its waiters (and CLIENT UNBLOCK's targets go on).
        self.serve_ready();
    }

    /// After a pause ends: the postponed clients go on, in the order they stopped.
    pub(super) fn resume_postponed(&mut self) {
        if self.server.pause.is_some_and(|(until, _)| Instant::now() < until) || self.server.repl.failover.is_some() {
            return;
        }
        self.server.pause = None;
        while let Some(id) = self.postponed.pop_front() {
            let Some(mut client) = self.server.clients.remove(&id) else { continue };
            if let Some(b) = client.blocked.take() {
                client.db = b.db;
                self.run_commands(&mut client, b.cmds, b.index, b.protocol_error, None);
                self.finish_step(&mut client);
            }
            self.server.clients.insert(id, client);
            if self.server.pause.is_some() || self.server.repl.failover.is_some() {
                break;
            }
        }
        self.serve_ready();
    }

    /// What follows every turn of the loop (and every request a YES debugging session serves
    /// from its stops): the replicas' buffered stream, blocked clients' timeouts, and the
    /// clients held by a pause or by their unread output.
    pub(super) fn between_batches(&mut self) {
        if self.feed.flush_due.is_some_and(|due| Instant::now() >= due) {
            self.flush_replica_output();
        }
        if !self.waiters.timeouts.is_empty() {
            self.expire_blocked();
            self.release_replies();
        }
        if !self.postponed.is_empty() {
            self.resume_postponed();
            self.release_replies();
        }
        if !self.throttled.is_empty() {
            self.resume_throttled();
            self.release_replies();
        }
    }
}
