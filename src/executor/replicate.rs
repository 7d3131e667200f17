//! Replication, the executor's side: serving PSYNC (partial from the backlog or the log's
//! files, full from a log rewrite's base snapshot), feeding replicas the segments the log
//! writes, applying a primary's stream as a replica, REPLICAOF, WAIT and the periodic work.
//!
//! The stream is the log (see `replication`): what a replica receives for an offset range is
//! the primary's incremental log for that range, and a replica writes what it applied to
//! its own log unchanged. Bytes for a replica go through its `Client::out` like any reply
//! (so they stay in order with its other output and count towards its output limit), or,
//! for file ranges, as one `ClientOutput::Stream` job its connection task writes.
//!
//! `primary.rs` is the primary's half, `replica.rs` the replica's.

mod failover;
mod memory_sync;
mod plain;
mod primary;
mod replica;

pub(super) use primary::PrimaryFeed;
pub(super) use replica::{ReplicaSide, MASTERDOWN, READONLY};

use super::Executor;
use crate::conn::Request;
use crate::protocol::Reply;
use crate::replication::ReplRequest;
use crate::state::Client;

impl Executor {
    /// Runs what a replication command asked for; returns its reply.
    pub(super) fn replication_request(&mut self, client: &mut Client, req: ReplRequest) -> Reply {
        match req {
            ReplRequest::Psync { replid, offset, legacy, failover } => {
                if failover {
                    if let Err(e) = self.take_over(client, &replid) {
                        return e;
                    }
                }
                self.psync(client, &replid, offset, legacy)
            }
            ReplRequest::ReplicaOf(Some((host, port))) => self.replicaof(client, host, port),
            ReplRequest::ReplicaOf(None) => self.promote(&format!("user request from 'id={} addr={}'", client.id, client.addr)),
            ReplRequest::FailoverStart => {
                self.start_failover();
                Reply::OK
            }
            ReplRequest::FailoverAbort => {
                self.abort_failover("Failover manually aborted");
                Reply::OK
            }
        }
    }

    /// What a replica's link task reports: a full sync's snapshot, a partial resync
    /// accepted, stream bytes or commands, the connection down, an acknowledgement wanted.
    pub(super) fn link_message(&mut self, req: Request) {
        match req {
            Request::ReplSnapshot { link, replid, offset, path } => {
                self.install_snapshot(link, replid, offset, path);
                self.failover_link_up(link);
            }
            Request::ReplContinue { link, replid } => {
                self.continue_stream(link, replid);
                self.failover_link_up(link);
            }
            Request::ReplStream { link, offset, data } => self.apply_stream(link, offset, data),
            Request::ReplCommands { link, offset, len, commands } => self.apply_commands(link, offset, len, commands),
            Request::ReplLinkDown { link, resume } => {
                let at = self.link_down(link);
                self.failover_link_down(link);
                let _ = resume.send(at);
            }
            Request::ReplAckWanted { link } => {
                self.replica.ack_wanted = self.replica.ack_wanted || self.server.repl.master.as_ref().is_some_and(|m| m.id == link)
            }
            _ => {}
        }
    }
}
