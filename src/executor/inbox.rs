//! The executor's incoming requests, readable from inside a busy script.
//!
//! While a script runs past `busy-reply-threshold`, the Lua hook calls [`Inbox::pump`]: the
//! requests waiting in the channel are read, and every batch that can be answered without
//! the executor (BUSY, SCRIPT KILL, SHUTDOWN NOSAVE) is answered right away through the
//! client's task, as Redis answers them from its event loop while a script runs. Everything
//! else (the caller's own pipeline, AUTH, a new connection...) is kept, in order, for the
//! executor to handle after the script. A client with a kept batch has its later batches kept
//! too, so its replies never overtake each other.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

use super::Request;
use crate::scripting::ScriptWatch;
use crate::state::{ClientId, ClientOutput, ConnFlags};

/// Where a client's replies go without the executor: its task's channel and flags.
type Output = (UnboundedSender<ClientOutput>, Arc<ConnFlags>);

pub struct Inbox {
    rx: Receiver<Request>,
    kept: RefCell<VecDeque<Request>>,
    /// How to answer each connected client without the executor's client table.
    outputs: RefCell<HashMap<ClientId, Output>>,
    watch: Arc<ScriptWatch>,
}

impl Inbox {
    pub fn new(rx: Receiver<Request>, watch: Arc<ScriptWatch>) -> Inbox {
        Inbox { rx, kept: RefCell::new(VecDeque::new()), outputs: RefCell::new(HashMap::new()), watch }
    }

    /// The next request: kept ones first, then the channel's.
    pub fn next(&self, wait: Duration) -> Result<Request, RecvTimeoutError> {
        if let Some(req) = self.kept.borrow_mut().pop_front() {
            return Ok(req);
        }
        self.rx.recv_timeout(wait)
    }

    pub fn try_next(&self) -> Option<Request> {
        if let Some(req) = self.kept.borrow_mut().pop_front() {
            return Some(req);
        }
        self.rx.try_recv().ok()
    }

    pub fn connected(&self, id: ClientId, tx: UnboundedSender<ClientOutput>, flags: Arc<ConnFlags>) {
        self.outputs.borrow_mut().insert(id, (tx, flags));
    }

    pub fn disconnected(&self, id: ClientId) {
        self.outputs.borrow_mut().remove(&id);
    }

    /// Answers what can be answered while a script is busy; keeps the rest.
    pub fn pump(&self) {
        while let Ok(req) = self.rx.try_recv() {
            // A client that connected during the script can be answered before the executor
            // has seen its connection.
            if let Request::Connect { id, tx, flags, .. } = &req {
                self.connected(*id, tx.clone(), flags.clone());
            }
            // SIGTERM/SIGINT during a busy script stop it like SHUTDOWN NOSAVE: nothing of a
            // half-run script may stay.
            if let Request::Signal { name } = &req {
                crate::log::warning(&format!("Received {name} during a busy script: stopping it"));
                self.watch.request_shutdown();
            }
            let Request::Commands { id, cmds, protocol_error: None } = req else {
                self.kept.borrow_mut().push_back(req);
                continue;
            };
            let waiting = self.kept.borrow().iter().any(|r| matches!(r, Request::Commands { id: other, .. } if *other == id));
            let outputs = self.outputs.borrow();
            let answer = match outputs.get(&id) {
                Some(out) if !waiting => {
                    self.watch.busy_answers(&cmds, out.1.authenticated.load(Ordering::Relaxed)).map(|bytes| (out, bytes))
                }
                _ => None,
            };
            match answer {
                Some(((tx, flags), bytes)) => {
                    flags.task_pending.fetch_add(bytes.len() as u64, Ordering::AcqRel);
                    let _ = tx.send(ClientOutput::Replies(bytes));
                    let before = flags.inflight.fetch_sub(1, Ordering::AcqRel);
                    if before >= crate::server::MAX_INFLIGHT {
                        flags.resume.notify_one();
                    }
                }
                None => {
                    drop(outputs);
                    self.kept.borrow_mut().push_back(Request::Commands { id, cmds, protocol_error: None });
                }
            }
        }
    }
}
