//! What the executor answers while a script of its own is busy: Redis 7.0 runs MULTI,
//! DISCARD, WATCH, UNWATCH, AUTH, HELLO, QUIT, RESET and REPLCONF then (they change only the
//! connection), answers SCRIPT KILL, FUNCTION KILL, FUNCTION STATS and SHUTDOWN NOSAVE, and
//! refuses the rest with BUSY, which also dooms a transaction the client has open. The
//! connection tasks answer what needs no executor state (`conn::busy_answers`); the batches
//! they leave wait in the inbox, and the script's hook hands them here between two of its
//! instructions (no command of the script is running then).

use bytes::Bytes;

use super::{Args, Executor};
use crate::conn::busy_answers_outside_multi;
use crate::protocol::Reply;
use crate::state::Client;

impl Executor {
    /// Serves the batches other clients sent while the script runs (from the Lua hook).
    pub(super) fn serve_while_busy(&mut self) {
        let Some(inbox) = self.inbox.clone() else { return };
        let clients = &self.server.clients;
        let batches = inbox.take_busy_batches(|id| {
            // A client held at a command (blocked, paused, throttled) keeps its order: its
            // batches wait for the script too.
            clients
                .get(&id)
                .is_some_and(|c| c.blocked.is_none() && c.replica.is_none() && !c.flags.replica.load(std::sync::atomic::Ordering::Acquire))
        });
        for (id, cmds) in batches {
            let Some(mut client) = self.server.clients.remove(&id) else { continue };
            client.open_batches += 1;
            for mut args in cmds {
                if client.close_after_reply {
                    break;
                }
                let reply = self.busy_command(&mut client, &mut args);
                self.emit(&mut client, &reply);
            }
            self.finish_step(&mut client);
            self.server.clients.insert(id, client);
        }
    }

    /// One command of another client while the script is busy.
    fn busy_command(&mut self, client: &mut Client, args: &mut Vec<Bytes>) -> Reply {
        // What the connection would answer (errors, NOAUTH, BUSY, SCRIPT KILL...); the
        // allow-busy commands it leaves to the executor (MULTI, WATCH, AUTH...) run for real.
        let watch = self.server.script_watch.clone();
        let Some(bytes) = busy_answers_outside_multi(&watch, std::slice::from_ref(args), &client.flags) else {
            return self.execute_args(client, Args::Owned(args), None);
        };
        // Inside MULTI a refusal dooms the transaction, as Redis's rejectCommand does.
        if client.txn.multi.is_some() && bytes.first() == Some(&b'-') {
            client.txn.multi_dirty = true;
        }
        client.out.extend_from_slice(&bytes);
        Reply::NoReply
    }
}
