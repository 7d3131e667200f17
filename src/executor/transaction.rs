//! EXEC: the queued commands run back to back, answered as one array.

use bytes::Bytes;

use super::{Args, Executor};
use crate::commands::{self, Ctx};
use crate::protocol::Reply;
use crate::state::Client;

impl Executor {
    /// EXEC: runs the queued commands back to back (nothing else runs meanwhile, there being
    /// one thread) and answers their replies as one array; or EXECABORT / a null array.
    pub(super) fn exec_transaction(&mut self, client: &mut Client) -> Reply {
        let queued = client.txn.multi.take().unwrap_or_default();
        // A watched key whose time ran out since WATCH counts as changed (Redis 7).
        let now = self.now_ms;
        let expired = |(db, key): &(usize, Bytes)| self.ks.db(*db).expire_at(key).is_some_and(|at| at <= now);
        if client.txn.watched.iter().any(|w| expired(w) && !client.txn.watched_expired.contains(w)) {
            client.txn.cas_dirty = true;
        }
        let reply = if client.txn.multi_dirty {
            Reply::error("EXECABORT Transaction discarded because of previous errors.")
        } else if client.txn.cas_dirty {
            Reply::NilArray
        } else {
            client.deny_blocking = true;
            client.txn.exec_queued = Some(queued.len());
            let mut replies = Vec::with_capacity(queued.len());
            for (cmd, args) in &queued {
                let r = self.execute_args(client, Args::Borrowed(args), Some(cmd));
                // Each error in the EXEC array is an error reply for INFO, as in Redis.
                if let Reply::Error(text) = &r {
                    self.server.stats.count_error(text);
                }
                replies.push(r);
            }
            client.deny_blocking = false;
            client.txn.exec_queued = None;
            Reply::Array(replies)
        };
        let mut scratch = commands::Effects::default();
        let mut ctx = Ctx::new(&mut self.ks, client, &mut self.server, self.now_ms, &mut scratch);
        commands::transactions::discard_transaction(&mut ctx);
        reply
    }
}
