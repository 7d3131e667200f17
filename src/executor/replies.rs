//! Releasing replies: every client's accumulated output leaves here, after the log is
//! durable for the records it answers (see persist.rs), written to the socket directly when
//! nothing of the client is queued in its task, else through the task, in order.

use super::Executor;
use crate::log;
use crate::state::{Client, ClientId, ClientOutput, OutputLimit, OUT_KEEP_BYTES};

/// How long a subscriber's pushes may wait for the batches that follow while requests keep
/// coming (see `release_batch`).
const PUSH_HOLD: std::time::Duration = std::time::Duration::from_micros(200);

/// Empties a sent output buffer, keeping its allocation unless it grew past `OUT_KEEP_BYTES`.
fn recycle(out: &mut Vec<u8>) {
    if out.capacity() > OUT_KEEP_BYTES {
        *out = Vec::new();
    } else {
        out.clear();
    }
}

impl Executor {
    /// Writes the client's output to its socket from here when nothing is queued in its
    /// task and the socket takes it; whatever is left goes through the task, in order. The
    /// output buffer is emptied but keeps its allocation for the next batch (up to
    /// `OUT_KEEP_BYTES`): one allocation per client, not one per reply.
    /// Returns true when the bytes queued in the task pass the client's output limit
    /// (`client-output-buffer-limit`: the hard one, or the soft one for longer than its
    /// time): the caller then disconnects it, as Redis does.
    pub(super) fn send_output(client: &mut Client, limit: OutputLimit) -> bool {
        client.release_due = false;
        if client.out.is_empty() {
            return false;
        }
        let mut written = 0;
        if client.flags.task_pending.load(std::sync::atomic::Ordering::Acquire) == 0 {
            if let Some(sock) = client.sock.as_mut() {
                use std::io::Write;
                while written < client.out.len() {
                    match sock.write(&client.out[written..]) {
                        Ok(0) => break,
                        Ok(n) => written += n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        // WouldBlock (socket full) or a broken connection: the task deals.
                        Err(_) => break,
                    }
                }
            }
        }
        if written == client.out.len() {
            recycle(&mut client.out);
            client.soft_limit_since_ms = None;
            return false;
        }
        // The rest goes through the task: the whole buffer when nothing went (no copy), else
        // a copy of what is left.
        let rest = if written == 0 {
            std::mem::take(&mut client.out)
        } else {
            let rest = client.out[written..].to_vec();
            recycle(&mut client.out);
            rest
        };
        let queued = client.flags.task_pending.fetch_add(rest.len() as u64, std::sync::atomic::Ordering::AcqRel) + rest.len() as u64;
        let _ = client.tx.send(ClientOutput::Replies(rest));
        if limit.hard > 0 && queued > limit.hard {
            return true;
        }
        if limit.soft == 0 || queued <= limit.soft {
            client.soft_limit_since_ms = None;
            return false;
        }
        let now = crate::clock::now_ms();
        let since = *client.soft_limit_since_ms.get_or_insert(now);
        now - since > limit.soft_ms
    }

    /// Sends what a client's batch answered so far, ahead of the batch's end (it is about to
    /// wait: blocked or paused). Its log records are written first, as for any reply; if the
    /// log cannot be written the replies stay until the client's batch ends.
    pub(super) fn send_early(&mut self, client: &mut Client) {
        self.clock_mark = None;
        if self.logging() {
            self.flush_log();
            if self.must_wait_for_log(client) {
                // Held like any reply waiting for the log; released when it is durable.
                if !self.log.held.contains(&client.id) {
                    self.log.held.push(client.id);
                }
                return;
            }
        }
        self.server.stats.net_output_bytes += client.out.len() as u64;
        self.server.stats.writes_processed += u64::from(!client.out.is_empty());
        Self::send_output(client, OutputLimit::default());
    }

    /// The output limits of a client's class (normal, pubsub or replica).
    pub(super) fn output_limit(&self, client: &Client) -> OutputLimit {
        let limits = &self.server.settings.output_limits;
        if client.replica.is_some() {
            return limits.replica;
        }
        let subscribed = !(client.subs.channels.is_empty() && client.subs.patterns.is_empty() && client.subs.shard_channels.is_empty());
        if subscribed {
            limits.pubsub
        } else {
            limits.normal
        }
    }

    /// Hands a client's output to its connection.
    fn release_client(&mut self, id: ClientId) {
        let limit = match self.server.clients.get(&id) {
            Some(c) => self.output_limit(c),
            None => return,
        };
        let Some(client) = self.server.clients.get_mut(&id) else { return };
        self.server.stats.net_output_bytes += client.out.len() as u64;
        self.server.stats.writes_processed += u64::from(!client.out.is_empty());
        if client.close_after_reply {
            let _ = client.tx.send(ClientOutput::Close(std::mem::take(&mut client.out)));
            return;
        }
        if Self::send_output(client, limit) {
            log::warning(&format!("Client id={id} scheduled to be closed ASAP for overcoming of output buffer limits."));
            self.server.kill_list.push(id);
        }
        let done = std::mem::take(&mut client.completed_batches);
        if done > 0 {
            let before = client.flags.inflight.fetch_sub(done, std::sync::atomic::Ordering::AcqRel);
            if before >= crate::conn::MAX_INFLIGHT {
                client.flags.resume.notify_one();
            }
        }
    }

    /// Releases a batch's replies, keeping back the output of clients that only received
    /// pushes while more requests are already waiting, for at most `PUSH_HOLD` and
    /// `OUT_KEEP_BYTES`: their next write then carries the messages of several batches.
    /// A subscriber woken once per batch costs both sides a write, a wake-up and a read per
    /// batch: with 50 subscribers and 50 publishers (P=1) those were most of the CPU of
    /// the client's core and a third of the server's. An idle server holds nothing.
    pub(super) fn release_batch(&mut self, inbox: &super::inbox::Inbox) {
        self.release(true);
        if self.later.is_empty() {
            return;
        }
        let since = *self.later_since.get_or_insert_with(std::time::Instant::now);
        if since.elapsed() >= PUSH_HOLD || !inbox.poll_ready() {
            self.release_later();
        }
    }

    /// Sends the pushes kept back by `release_batch` (before anything that may take time:
    /// the cron, a rewrite step, a busy script's answers, loading a snapshot, shutdown).
    pub(super) fn release_later(&mut self) {
        self.later_since = None;
        for id in std::mem::take(&mut self.later) {
            // A client kept back may since have run a write whose record is not durable
            // yet (a RESP3 subscriber can): it waits in `held` with its pushes, in order.
            if self.server.clients.get(&id).is_some_and(|c| self.must_wait_for_log(c)) {
                continue;
            }
            self.release_client(id);
        }
    }

    /// Sends every touched client its replies (one message each), pushes kept back included,
    /// and closes killed ones (public so benches can drive the executor without sockets).
    pub fn release_replies(&mut self) {
        self.release(false);
    }

    fn release(&mut self, may_hold_pushes: bool) {
        // Sending takes time: the next command reads the clock afresh.
        self.clock_mark = None;
        self.broadcast_invalidations();
        // The batch's records reach the log (and the disk, per appendfsync) before any of
        // its replies leave; if the write fails, the replies that depend on it wait.
        // Clients that waited for the log owe a reply (one sent early, before they blocked,
        // leaves with the records), whatever else their output holds: never kept back.
        let mut was_held = Vec::new();
        if self.logging() {
            self.flush_log();
            if may_hold_pushes {
                was_held.extend_from_slice(&self.log.held);
            }
            self.touched.append(&mut self.log.held);
            let mut waiting = std::mem::take(&mut self.touched);
            waiting.sort_unstable();
            waiting.dedup();
            for id in waiting {
                match self.server.clients.get(&id) {
                    Some(c) if self.must_wait_for_log(c) => self.log.held.push(id),
                    Some(_) => self.touched.push(id),
                    None => {}
                }
            }
        }
        // The segments just written are the replication stream.
        self.feed_replicas();
        self.ask_for_acks();
        self.ack_master();
        self.ks.expired.clear();
        self.expired_seen = 0;
        self.expired_notified = 0;
        // Clients that owe replies go first, then those that only receive pushes (subscribers),
        // as Redis orders its writes: the callers send their next requests while the pushes
        // go out, and the next batch finds them all.
        let mut pushes_only = Vec::new();
        for id in std::mem::take(&mut self.touched) {
            match self.server.clients.get(&id) {
                Some(c) if c.completed_batches == 0 => pushes_only.push(id),
                Some(_) => self.release_client(id),
                None => {}
            }
        }
        if !may_hold_pushes {
            self.release_later();
        }
        for id in pushes_only {
            let small = self.server.clients.get(&id).is_some_and(|c| c.out.len() < OUT_KEEP_BYTES);
            if may_hold_pushes && small && !was_held.contains(&id) {
                self.later.push(id);
            } else {
                self.release_client(id);
            }
        }
        for id in std::mem::take(&mut self.server.kill_list) {
            if let Some(client) = self.remove_client(id) {
                let _ = client.tx.send(ClientOutput::Close(Vec::new()));
            }
        }
    }
}
