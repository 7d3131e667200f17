//! FAILOVER, Redis 7.0's coordinated failover: the primary pauses writes, waits until a
//! replica has acknowledged the whole stream, then follows that replica and asks it, in the
//! same PSYNC (`PSYNC <replid> <offset> FAILOVER`), to become the primary. The replica
//! promotes itself (its old id becomes its secondary id) and answers `+CONTINUE`, so the old
//! primary continues as its replica without a full sync.
//!
//! The command's handler (`commands/replication.rs`) checks the arguments and sets
//! `ReplState::failover`; this module moves it on: `failover_progress` after every
//! acknowledgement and once a second, `failover_link_up` when the target accepted,
//! `abort_failover` otherwise. Writes wait (`must_wait_for_pause`) until the state is gone.

use super::super::Executor;
use crate::log;
use crate::protocol::Reply;
use crate::replication::{peer_ip, FailoverState, PeerState};
use crate::state::Client;

impl Executor {
    /// Writes are paused from here: the replicas are asked to acknowledge at once.
    pub(super) fn start_failover(&mut self) {
        self.flush_log();
        self.feed_replicas();
        self.feed.want_acks = true;
        self.ask_for_acks();
        self.failover_progress();
    }

    /// The wait for a caught-up replica: ends at the deadline (by failing over anyway with
    /// FORCE, else by aborting) or when the target (any replica without TO) acknowledged
    /// everything this primary wrote.
    pub(in crate::executor) fn failover_progress(&mut self) {
        let Some(f) = self.server.repl.failover.as_ref() else { return };
        if f.state != FailoverState::WaitForSync {
            return;
        }
        let (force, deadline, named) = (f.force, f.deadline_ms, f.target.clone());
        if deadline.is_some_and(|d| d <= crate::clock::now_ms()) {
            match named {
                Some((host, port)) if force => {
                    log::notice(&format!("FAILOVER to {host}:{port} time out exceeded, failing over."));
                    self.hand_over(host, port);
                }
                _ => self.abort_failover("Replica never caught up before timeout"),
            }
            return;
        }
        let end = self.log.buffered_end().unwrap_or(self.server.repl.offset);
        let caught_up = |_: &Client, p: &crate::replication::Peer| p.state == PeerState::Online && p.ack_offset == end;
        let found = match &named {
            Some((host, port)) => {
                self.server.find_replica(host, *port as i64).filter(|(c, p)| caught_up(c, p)).map(|_| (host.clone(), *port))
            }
            None => {
                self.server.replica_peers().find(|(c, p)| caught_up(c, p)).map(|(c, _)| (peer_ip(&c.addr).to_string(), c.replconf_port))
            }
        };
        if let Some((host, port)) = found {
            log::notice(&format!("Failover target {host}:{port} is synced, failing over."));
            self.hand_over(host, port);
        }
    }

    /// Follows the target with a PSYNC that asks it to take over.
    fn hand_over(&mut self, host: String, port: u16) {
        match self.become_replica(host.clone(), port, true) {
            Ok(()) => {
                let link = self.server.repl.master.as_ref().map(|m| m.id);
                if let Some(f) = self.server.repl.failover.as_mut() {
                    f.state = FailoverState::InProgress;
                    f.target = Some((host, port));
                    f.link = link;
                }
            }
            Err(e) => self.abort_failover(&e),
        }
    }

    /// FAILOVER ABORT, a timeout, or a target that refused: this server is a primary again
    /// (a new history if it had started to follow) and writes go on.
    pub(in crate::executor) fn abort_failover(&mut self, why: &str) {
        let Some(f) = self.server.repl.failover.take() else { return };
        match &f.target {
            Some((host, port)) => log::notice(&format!("FAILOVER to {host}:{port} aborted: {why}")),
            None => log::notice(&format!("FAILOVER to any replica aborted: {why}")),
        }
        if f.state == FailoverState::InProgress {
            let _: Reply = self.promote("failover aborted");
        }
        self.resume_postponed();
    }

    /// The link to the target was accepted (`+CONTINUE`, or a full sync in an edge case):
    /// the failover is done, and the writes held since it began are answered as a replica
    /// answers them.
    pub(in crate::executor) fn failover_link_up(&mut self, link: u64) {
        if self.handing_over_on(link) {
            self.server.repl.failover = None;
            self.resume_postponed();
        }
    }

    /// The link to the target went down before it accepted (refused PSYNC, connection
    /// error): the failover is aborted. Redis keeps retrying until FAILOVER ABORT; a primary
    /// that takes its role back at once leaves no window without one.
    pub(in crate::executor) fn failover_link_down(&mut self, link: u64) {
        if self.handing_over_on(link) {
            self.abort_failover("Failover target rejected psync request");
        }
    }

    /// Whether `link` is the one a failover in progress handed over on.
    fn handing_over_on(&self, link: u64) -> bool {
        self.server.repl.failover.as_ref().is_some_and(|f| f.state == FailoverState::InProgress && f.link == Some(link))
    }

    /// `PSYNC <replid> <offset> FAILOVER` to this replica: its primary hands over. The id
    /// must be the one this replica follows.
    pub(super) fn take_over(&mut self, client: &Client, replid: &str) -> Result<(), Reply> {
        log::warning(&format!("Failover request received for replid {replid}."));
        if self.server.repl.master.is_none() {
            return Err(Reply::error("ERR PSYNC FAILOVER can't be sent to a master."));
        }
        if replid != self.server.repl.shown().0 {
            return Err(Reply::error("ERR PSYNC FAILOVER replid must match my replid."));
        }
        let _: Reply = self.promote(&format!("failover request from 'id={} addr={}'", client.id, client.addr));
        Ok(())
    }
}
