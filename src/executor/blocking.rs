//! Blocking commands (BLPOP and friends): parking a client on keys, serving it when one of
//! them is written, and answering at its deadline.
//!
//! A blocking handler that finds nothing sets `Client::block_request` and replies nothing.
//! The executor parks the client with the rest of its pipeline. After every write command it
//! marks the written keys that have waiters as ready; once the command is over, each ready
//! key's waiters are served in the order they blocked by running their command again (so the
//! serving logic is the command's own). A ready key serves only the waiters of its type (a list
//! key the list waiters, as Redis 7.0's `handleClientsBlockedOnKeys`): the others stay. A
//! waiter whose command would block again stays where it is in the queue.

use std::collections::{BTreeSet, HashMap, VecDeque};

use bytes::Bytes;

use super::Executor;
use crate::commands::BlockRequest;
use crate::protocol::Reply;
use crate::state::{Blocked, Client, ClientId};

/// Clients waiting in blocking commands (Redis's `blocking_keys` and `ready_keys`).
#[derive(Default)]
pub(super) struct Waiters {
    /// Parked clients per (db, key), in the order they blocked.
    pub by_key: HashMap<(usize, Bytes), VecDeque<ClientId>>,
    /// Keys written while someone waits on them, to serve after the current command.
    pub ready: VecDeque<(usize, Bytes)>,
    /// Deadlines of parked clients.
    pub timeouts: BTreeSet<(i64, ClientId)>,
    /// Clients whose pipelines wait to resume at the next `serve_ready`: those CLIENT
    /// UNBLOCK answered (see `unblock_now`), and those that wrote a key clients wait on (the
    /// waiters are served first, as Redis serves them after every command).
    pub unblocked: Vec<ClientId>,
}

impl Executor {
    /// Parks `client` on the keys of `request`, keeping `cmds[index..]` for later.
    pub(super) fn park(
        &mut self,
        client: &mut Client,
        mut cmds: Vec<Vec<Bytes>>,
        index: usize,
        mut request: BlockRequest,
        protocol_error: Option<String>,
    ) {
        if let Some(argv) = request.rerun.take() {
            cmds[index] = argv;
        }
        for key in &request.keys {
            let queue = self.waiters.by_key.entry((client.db, key.clone())).or_default();
            if !queue.contains(&client.id) {
                queue.push_back(client.id);
            }
        }
        if let Some(deadline) = request.deadline_ms {
            self.waiters.timeouts.insert((deadline, client.id));
        }
        if client.wait_target.is_some() {
            self.feed.waiting_acks.push(client.id);
            self.feed.want_acks = true;
        }
        // What the batch answered before this command goes out now, as Redis would.
        self.send_early(client);
        client.blocked = Some(Blocked {
            cmds,
            index,
            db: client.db,
            keys: request.keys,
            kind: request.kind,
            deadline_ms: request.deadline_ms,
            timeout_reply: request.timeout_reply,
            protocol_error,
        });
    }

    /// Removes a parked client from every queue and from the deadlines.
    pub(super) fn unpark(&mut self, id: ClientId, blocked: &Blocked) {
        for key in &blocked.keys {
            let slot = (blocked.db, key.clone());
            if let Some(queue) = self.waiters.by_key.get_mut(&slot) {
                queue.retain(|c| *c != id);
                if queue.is_empty() {
                    self.waiters.by_key.remove(&slot);
                }
            }
        }
        if let Some(deadline) = blocked.deadline_ms {
            self.waiters.timeouts.remove(&(deadline, id));
        }
    }

    /// After a write: if someone waits on this key, serve them once the command is over.
    pub(super) fn signal_key(&mut self, db: usize, key: Bytes) {
        let slot = (db, key);
        if self.waiters.by_key.contains_key(&slot) && !self.waiters.ready.contains(&slot) {
            self.waiters.ready.push_back(slot);
        }
    }

    /// Serves the waiters of every ready key, in blocking order, until each key has nothing
    /// more to give. Serving may write other keys (BLMOVE) and make them ready in turn.
    pub(super) fn serve_ready(&mut self) {
        loop {
            self.serve_keys();
            if self.waiters.unblocked.is_empty() {
                return;
            }
            // Their pipelines may write keys others wait on: served in the next round.
            self.resume_unblocked();
        }
    }

    fn serve_keys(&mut self) {
        while let Some(slot) = self.waiters.ready.pop_front() {
            // Where in the key's queue the search resumes: waiters before it were tried and
            // left blocked (they keep their place; the ones after may still take something,
            // stream readers each waiting past their own ID). One pass over the queue.
            let mut from = 0;
            loop {
                // Served only from a key of the type it waits for (checked now, at serve
                // time: the key may have changed again since it was signalled). The first
                // waiter in blocking order of that type is served.
                let value = match self.ks.exists(slot.0, &slot.1, self.now_ms) {
                    true => self.ks.db(slot.0).peek(&slot.1).map(|e| &e.value),
                    false => None,
                };
                let clients = &self.server.clients;
                let waiting = |id: &ClientId| {
                    let kind = clients.get(id).and_then(|c| c.blocked.as_ref()).map(|b| b.kind);
                    kind.is_none_or(|k| k.served_by(value))
                };
                let Some((at, id)) = self
                    .waiters
                    .by_key
                    .get(&slot)
                    .and_then(|q| q.iter().enumerate().skip(from).find(|(_, id)| waiting(id)))
                    .map(|(at, id)| (at, *id))
                else {
                    break;
                };
                // Served or dropped, it leaves the queue and the next one takes its index.
                from = at;
                let Some(mut client) = self.server.clients.remove(&id) else {
                    self.drop_waiter(&slot, id);
                    continue;
                };
                let Some(blocked) = client.blocked.take() else {
                    self.server.clients.insert(id, client);
                    self.drop_waiter(&slot, id);
                    continue;
                };
                client.db = blocked.db;
                client.serving = Some(slot.1.clone());
                let reply = self.execute(&mut client, &blocked.cmds[blocked.index]);
                client.serving = None;
                if client.block_request.take().is_some() {
                    // Nothing it can take after all: it keeps its place.
                    client.blocked = Some(blocked);
                    self.server.clients.insert(id, client);
                    from = at + 1;
                    continue;
                }
                self.unpark(id, &blocked);
                self.emit(&mut client, &reply);
                self.resume_after_block(&mut client, blocked);
                self.server.clients.insert(id, client);
            }
        }
    }

    /// Takes a client that is no longer parked out of a key's queue.
    fn drop_waiter(&mut self, slot: &(usize, Bytes), id: ClientId) {
        if let Some(q) = self.waiters.by_key.get_mut(slot) {
            q.retain(|c| *c != id);
            if q.is_empty() {
                self.waiters.by_key.remove(slot);
            }
        }
    }

    /// Runs the rest of a woken client's pipeline and queues its replies (unless it blocked
    /// again).
    pub(super) fn resume_after_block(&mut self, client: &mut Client, blocked: Blocked) {
        self.run_commands(client, blocked.cmds, blocked.index + 1, blocked.protocol_error, None);
        self.finish_step(client);
    }

    /// Answers every parked client whose deadline has passed.
    pub(super) fn expire_blocked(&mut self) {
        self.now_ms = crate::clock::now_ms();
        while let Some(&(deadline, id)) = self.waiters.timeouts.first() {
            if deadline > self.now_ms {
                break;
            }
            self.waiters.timeouts.pop_first();
            self.answer_parked(id);
        }
        self.serve_ready();
    }

    /// CLIENT UNBLOCK, right after the command (as Redis does it within the command): each
    /// client it named that still waits in a blocking command gets its timeout reply or the
    /// UNBLOCKED error now and leaves every queue; the rest of its pipeline stays held and
    /// runs at the next `serve_ready` (Redis runs it from its unblocked-clients list).
    pub(super) fn unblock_now(&mut self) {
        for (id, error) in std::mem::take(&mut self.server.unblock_list) {
            self.unblock_one(id, error.then(|| Reply::error("UNBLOCKED client unblocked via CLIENT UNBLOCK")));
        }
    }

    /// Answers a client waiting in a blocking command with `error` (None: its timeout reply)
    /// and takes it out of every queue; the rest of its pipeline stays held and runs at the
    /// next `serve_ready`. CLIENT UNBLOCK, and cluster mode's redirection of a client whose
    /// keys moved away.
    pub(super) fn unblock_one(&mut self, id: ClientId, error: Option<Reply>) {
        let Some(mut client) = self.server.clients.remove(&id) else { return };
        let waiting =
            client.blocked.as_ref().is_some_and(|b| !b.keys.is_empty() || b.deadline_ms.is_some()) || client.wait_target.is_some();
        if let (true, Some(mut blocked)) = (waiting, client.blocked.take()) {
            // Redis 7.0 counts the unblocked command as failed, TIMEOUT or ERROR.
            if let crate::commands::Resolved::Found(cmd) = crate::commands::resolve(&blocked.cmds[blocked.index]) {
                self.server.stats.command(cmd.id).failed_calls += 1;
            }
            self.unpark(id, &blocked);
            let acked = self.take_wait(&mut client);
            let reply = error.unwrap_or_else(|| acked.unwrap_or_else(|| blocked.timeout_reply.clone()));
            self.emit(&mut client, &reply);
            // Held on nothing (no key, no deadline) until its pipeline resumes.
            blocked.keys.clear();
            blocked.deadline_ms = None;
            client.blocked = Some(blocked);
            self.waiters.unblocked.push(id);
        }
        self.server.clients.insert(id, client);
    }

    /// Runs the pipelines of the clients CLIENT UNBLOCK answered.
    fn resume_unblocked(&mut self) {
        for id in std::mem::take(&mut self.waiters.unblocked) {
            let Some(mut client) = self.server.clients.remove(&id) else { continue };
            if let Some(blocked) = client.blocked.take() {
                client.db = blocked.db;
                self.resume_after_block(&mut client, blocked);
            }
            self.server.clients.insert(id, client);
        }
    }

    /// WAIT's answer for a client leaving it: how many replicas acknowledged by now.
    fn take_wait(&mut self, client: &mut Client) -> Option<Reply> {
        let (offset, _) = client.wait_target.take()?;
        self.feed.waiting_acks.retain(|w| *w != client.id);
        Some(Reply::Int(self.server.acked_replicas(offset) as i64))
    }

    /// Answers a parked client at its deadline (WAIT: how many replicas acknowledged by
    /// now), and resumes its pipeline.
    fn answer_parked(&mut self, id: ClientId) {
        let Some(mut client) = self.server.clients.remove(&id) else { return };
        if let Some(blocked) = client.blocked.take() {
            self.unpark(id, &blocked);
            let acked = self.take_wait(&mut client);
            let reply = acked.unwrap_or_else(|| blocked.timeout_reply.clone());
            self.emit(&mut client, &reply);
            self.resume_after_block(&mut client, blocked);
        }
        self.server.clients.insert(id, client);
    }
}
