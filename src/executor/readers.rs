//! The plain connections the executor thread reads itself (`io-threads 1`).
//!
//! Each connection's read side is polled with a waker of its own, which marks the connection
//! ready and wakes the executor's wait (`Inbox::next`). The runtime's I/O driver calls those
//! wakers right after its `epoll_wait`, and the executor, woken directly, reads every marked
//! connection in the same turn: one poll of the sockets per batch, as Redis's event loop
//! does. A task reading each connection instead wakes the executor through the request
//! channel, after which the runtime polls the sockets twice more before the executor runs.
//! The connection's task still writes what the executor could not, and closes it.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use bytes::BytesMut;
use tokio::io::AsyncReadExt;
use tokio::net::tcp::OwnedReadHalf;

use crate::conn::read::{self, Decoded};
use crate::conn::{Request, SharedLimits, MAX_INFLIGHT};
use crate::protocol::RequestDecoder;
use crate::scripting::ScriptWatch;
use crate::state::{ClientId, ConnFlags, IdHasher};

/// The connections whose wakers fired, and the executor's wait to wake.
#[derive(Default)]
struct ReadyList {
    ids: Mutex<Vec<ClientId>>,
    wait: Mutex<Option<Waker>>,
}

/// One connection's waker: marks it ready.
struct Mark {
    id: ClientId,
    list: Arc<ReadyList>,
}

impl Wake for Mark {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if let Ok(mut ids) = self.list.ids.lock() {
            ids.push(self.id);
        }
        if let Ok(wait) = self.list.wait.lock() {
            if let Some(w) = wait.as_ref() {
                w.wake_by_ref();
            }
        }
    }
}

struct Reader {
    half: OwnedReadHalf,
    buf: BytesMut,
    decoder: RequestDecoder,
    flags: Arc<ConnFlags>,
    waker: Waker,
}

/// Where reading the ready connections puts what it gave.
pub struct Reads<'a> {
    /// Batches and disconnections, in the order they were read (the inbox's new requests).
    pub requests: &'a mut std::collections::VecDeque<Request>,
    /// Answers given without the executor (busy script, loading), for the client's task.
    pub answers: Vec<(ClientId, Vec<u8>)>,
}

#[derive(Default)]
pub struct Readers {
    conns: HashMap<ClientId, Reader, std::hash::BuildHasherDefault<IdHasher>>,
    ready: Arc<ReadyList>,
    /// Connections at the in-flight limit: read again once the executor answers.
    paused: Vec<ClientId>,
}

impl Readers {
    /// Takes over the read side of connection `id`; it is read at the next [`Readers::read`].
    pub fn add(&mut self, id: ClientId, half: OwnedReadHalf, flags: Arc<ConnFlags>) {
        let waker = Waker::from(Arc::new(Mark { id, list: self.ready.clone() }));
        let reader = Reader { half, buf: BytesMut::with_capacity(16 * 1024), decoder: RequestDecoder::new(), flags, waker };
        self.conns.insert(id, reader);
        self.mark(id);
    }

    /// Stops reading connection `id` (disconnected or killed).
    pub fn remove(&mut self, id: ClientId) {
        self.conns.remove(&id);
    }

    fn mark(&self, id: ClientId) {
        if let Ok(mut ids) = self.ready.ids.lock() {
            ids.push(id);
        }
    }

    /// The executor's wait, woken when a connection becomes readable.
    pub fn register_wait(&self, waker: &Waker) {
        if let Ok(mut wait) = self.ready.wait.lock() {
            match wait.as_ref() {
                Some(w) if w.will_wake(waker) => {}
                _ => *wait = Some(waker.clone()),
            }
        }
    }

    /// Whether a connection waits to be read.
    pub fn any_ready(&self) -> bool {
        let resumable =
            self.paused.iter().any(|id| self.conns.get(id).is_some_and(|r| r.flags.inflight.load(Ordering::Acquire) < MAX_INFLIGHT));
        resumable || self.ready.ids.lock().is_ok_and(|ids| !ids.is_empty())
    }

    /// Reads every connection marked ready (and every paused one the executor has since
    /// answered) until its socket has nothing more.
    pub fn read(&mut self, limits: &SharedLimits, watch: &ScriptWatch, out: &mut Reads<'_>) {
        let mut ids = match self.ready.ids.lock() {
            Ok(mut ids) => std::mem::take(&mut *ids),
            Err(_) => return,
        };
        let conns = &self.conns;
        self.paused.retain(|id| match conns.get(id) {
            Some(r) if r.flags.inflight.load(Ordering::Acquire) < MAX_INFLIGHT => {
                ids.push(*id);
                false
            }
            Some(_) => true,
            None => false,
        });
        // A connection marked twice is read twice: the second read finds the socket's
        // readiness cleared and costs no system call.
        for id in ids {
            self.read_one(id, limits, watch, out);
        }
    }

    fn read_one(&mut self, id: ClientId, limits: &SharedLimits, watch: &ScriptWatch, out: &mut Reads<'_>) {
        let Some(r) = self.conns.get_mut(&id) else { return };
        loop {
            if r.flags.inflight.load(Ordering::Acquire) >= MAX_INFLIGHT {
                if !self.paused.contains(&id) {
                    self.paused.push(id);
                }
                return;
            }
            read::make_room(&mut r.buf);
            let mut cx = Context::from_waker(&r.waker);
            // A pending read registers the connection's waker and keeps no state: the
            // future can be dropped. Unconstrained by tokio's cooperative budget: past 128
            // reads in one poll it answers Pending with a deferred wake-up, which is lost
            // when the `block_on` that made it returns (the deferred list lives in its
            // context), and the connection would never be read again. The in-flight limit
            // bounds what one connection gets per turn instead.
            let read = tokio::task::unconstrained(r.half.read_buf(&mut r.buf));
            let n = match std::pin::pin!(read).poll(&mut cx) {
                Poll::Pending => return,
                Poll::Ready(Ok(n)) => n,
                Poll::Ready(Err(_)) => 0,
            };
            read::count_read(limits, n);
            if n == 0 {
                return self.hang_up(id, limits, out);
            }
            match read::decode(&mut r.buf, &mut r.decoder, id, limits, watch, &r.flags) {
                Decoded::Batch { cmds, protocol_error } => {
                    let last = protocol_error.is_some();
                    out.requests.push_back(Request::Commands { id, cmds, protocol_error });
                    if last {
                        // The batch ends the connection: nothing more is read.
                        self.conns.remove(&id);
                        return;
                    }
                }
                Decoded::Answered(bytes) => out.answers.push((id, bytes)),
                Decoded::Nothing => {}
                Decoded::Close => return self.hang_up(id, limits, out),
            }
        }
    }

    /// Ends connection `id` from the reading side (end of stream, or the query-buffer
    /// limit): it stops counting toward maxclients now, not when the executor (maybe held
    /// by a script) gets to its disconnection.
    fn hang_up(&mut self, id: ClientId, limits: &SharedLimits, out: &mut Reads<'_>) {
        if let Some(r) = self.conns.remove(&id) {
            r.flags.release_slot(limits);
        }
        out.requests.push_back(Request::Disconnect { id });
    }
}
