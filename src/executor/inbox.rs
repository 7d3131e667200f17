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
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

use super::readers::{Readers, Reads};
use crate::conn::{busy_answers, Request, RequestRx, SharedLimits, MAX_INFLIGHT};
use crate::scripting::ScriptWatch;
use crate::state::{ClientId, ClientOutput, ConnFlags, IdHasher};

/// Where a client's replies go without the executor: its task's channel and flags.
type Output = (UnboundedSender<ClientOutput>, Arc<ConnFlags>);

/// The timer set to `deadline`, reusing the registered one when it already ends within a
/// millisecond of it (the timer's resolution). A new registration while the runtime's driver
/// has no timer makes tokio wake the driver through its eventfd (a write, and an epoll_wait
/// that returns at once, on every wait): the executor's waits, which follow every batch,
/// cost those syscalls until the timer was kept.
fn arm(timer: &mut Option<Pin<Box<tokio::time::Sleep>>>, deadline: tokio::time::Instant) -> Pin<&mut tokio::time::Sleep> {
    let slack = Duration::from_millis(1);
    let sleep = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
    let current = sleep.deadline();
    if sleep.is_elapsed() || current > deadline + slack || current + slack < deadline {
        sleep.as_mut().reset(deadline);
    }
    sleep.as_mut()
}

/// How the executor thread waits for requests.
pub struct Waiter {
    runtime: tokio::runtime::Runtime,
    /// The runtime holds the connections (io-threads 1): while the executor waits it runs
    /// them, so a request costs no thread hand-off; a busy script or a long load drives it
    /// through [`Inbox::pump`] / [`Inbox::drive_network`], as Redis processes events then.
    network: bool,
}

impl Waiter {
    /// `network`: the connections' current-thread runtime; without it, a runtime of its own
    /// for the timer.
    pub fn new(network: Option<tokio::runtime::Runtime>) -> std::io::Result<Waiter> {
        Ok(match network {
            Some(runtime) => Waiter { runtime, network: true },
            None => Waiter { runtime: tokio::runtime::Builder::new_current_thread().enable_time().build()?, network: false },
        })
    }
}

pub struct Inbox {
    rx: RefCell<RequestRx>,
    waiter: Waiter,
    /// The wait's timer, kept registered from one wait to the next (see `next`).
    timer: RefCell<Option<Pin<Box<tokio::time::Sleep>>>>,
    kept: RefCell<VecDeque<Request>>,
    /// Requests read from the connections the executor reads itself, not yet taken.
    fresh: RefCell<VecDeque<Request>>,
    readers: RefCell<Readers>,
    limits: Arc<SharedLimits>,
    /// How to answer each connected client without the executor's client table.
    outputs: RefCell<HashMap<ClientId, Output, std::hash::BuildHasherDefault<IdHasher>>>,
    watch: Arc<ScriptWatch>,
    /// The client of a debugging session: its commands are the session's, never answered
    /// by the busy pump.
    held: std::cell::Cell<Option<ClientId>>,
}

impl Inbox {
    pub fn new(rx: RequestRx, waiter: Waiter, watch: Arc<ScriptWatch>, limits: Arc<SharedLimits>) -> Inbox {
        Inbox {
            rx: RefCell::new(rx),
            waiter,
            timer: RefCell::new(None),
            kept: RefCell::new(VecDeque::new()),
            fresh: RefCell::new(VecDeque::new()),
            readers: RefCell::new(Readers::default()),
            limits,
            outputs: RefCell::new(HashMap::default()),
            watch,
            held: std::cell::Cell::new(None),
        }
    }

    /// The next request: kept ones first, then new ones, waiting at most `wait` (and
    /// running the connections meanwhile when the executor drives them).
    pub fn next(&self, wait: Duration) -> Result<Request, RecvTimeoutError> {
        if let Some(req) = self.kept.borrow_mut().pop_front() {
            return Ok(req);
        }
        self.wait_new(wait)
    }

    /// The next request of client `id` only (a SYNC debugging session holds the server for
    /// it): everyone else's wait in order behind, kept for later.
    pub fn next_of(&self, id: ClientId, wait: Duration) -> Result<Request, RecvTimeoutError> {
        let mine = |r: &Request| matches!(r, Request::Commands { id: c, .. } | Request::Disconnect { id: c } if *c == id);
        {
            let mut kept = self.kept.borrow_mut();
            if let Some(at) = kept.iter().position(mine) {
                if let Some(req) = kept.remove(at) {
                    return Ok(req);
                }
            }
        }
        let deadline = std::time::Instant::now() + wait;
        loop {
            let req = self.wait_new(deadline.saturating_duration_since(std::time::Instant::now()))?;
            if mine(&req) {
                return Ok(req);
            }
            self.kept.borrow_mut().push_back(req);
        }
    }

    /// The next request not yet seen: one read from the connections the executor reads, or
    /// from the channel, waiting at most `wait`. One wake-up of the runtime reads every
    /// connection it found ready, so a batch holds every ready client, as one
    /// `epoll_wait` per event-loop turn gives Redis. The runtime runs at least once per
    /// call: its socket poll is what marks the other connections ready, and its tasks write
    /// what the executor handed them (replicas' streams among them), so a request already
    /// waiting (a client paused at the in-flight limit, the channel) must not skip it.
    fn wait_new(&self, wait: Duration) -> Result<Request, RecvTimeoutError> {
        let mut rx = self.rx.borrow_mut();
        let mut timer = self.timer.borrow_mut();
        let deadline = tokio::time::Instant::now() + wait;
        let mut first = true;
        self.waiter.runtime.block_on(std::future::poll_fn(|cx| {
            self.readers.borrow().register_wait(cx.waker());
            if std::mem::take(&mut first) && (!self.fresh.borrow().is_empty() || !rx.is_empty() || self.readers.borrow().any_ready()) {
                // Ready at once: let the runtime poll the sockets and run its tasks first
                // (a zero-timeout poll), then take it.
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            loop {
                if let Some(req) = self.fresh.borrow_mut().pop_front() {
                    return Poll::Ready(Ok(req));
                }
                match rx.poll_recv(cx) {
                    Poll::Ready(Some(req)) => return Poll::Ready(Ok(self.intercept(req))),
                    Poll::Ready(None) => return Poll::Ready(Err(RecvTimeoutError::Disconnected)),
                    Poll::Pending => {}
                }
                if self.readers.borrow().any_ready() {
                    self.read_now();
                    if !self.fresh.borrow().is_empty() {
                        continue;
                    }
                }
                if arm(&mut timer, deadline).poll(cx).is_ready() {
                    return Poll::Ready(Err(RecvTimeoutError::Timeout));
                }
                return Poll::Pending;
            }
        }))
    }

    /// Takes everything in the channel, taking over the read side of new connections: a
    /// long load calls it, so that a connection accepted just before the load began is read
    /// (and answered LOADING) during it. A `Connect` is kept, so it comes before anything
    /// read from its connection; the rest joins the new requests, taken a batch per turn
    /// of the runtime as they would have been from the channel (kept ones skip the runtime).
    pub fn absorb_channel(&self) {
        loop {
            let Ok(req) = self.rx.borrow_mut().try_recv() else { break };
            let req = self.intercept(req);
            if matches!(req, Request::Connect { .. }) {
                self.kept.borrow_mut().push_back(req);
            } else {
                self.fresh.borrow_mut().push_back(req);
            }
        }
    }

    /// A new connection whose read side comes with it is read here from now on.
    fn intercept(&self, mut req: Request) -> Request {
        if let Request::Connect { id, tx, flags, reader, .. } = &mut req {
            if let Some(half) = reader.take() {
                self.connected(*id, tx.clone(), flags.clone());
                self.readers.borrow_mut().add(*id, half, flags.clone());
            }
        }
        req
    }

    /// Reads the connections marked ready: their batches join `fresh`; what a connection
    /// answers by itself (a busy script, a load) goes to its task.
    fn read_now(&self) {
        let mut fresh = self.fresh.borrow_mut();
        let mut reads = Reads { requests: &mut fresh, answers: Vec::new() };
        self.readers.borrow_mut().read(&self.limits, &self.watch, &mut reads);
        let answers = reads.answers;
        drop(fresh);
        let outputs = self.outputs.borrow();
        for (id, bytes) in answers {
            if let Some((tx, flags)) = outputs.get(&id) {
                flags.task_pending.fetch_add(bytes.len() as u64, Ordering::AcqRel);
                let _ = tx.send(ClientOutput::Replies(bytes));
            }
        }
    }

    /// Marks `id` as the client of a debugging session (or none).
    pub fn hold(&self, id: Option<ClientId>) {
        self.held.set(id);
    }

    /// Puts a request back first in line.
    pub fn keep_front(&self, req: Request) {
        self.kept.borrow_mut().push_front(req);
    }

    /// Whether a request is waiting, after letting the connections read what the sockets hold.
    pub fn poll_ready(&self) -> bool {
        self.drive_network();
        !self.kept.borrow().is_empty() || !self.fresh.borrow().is_empty() || !self.rx.borrow().is_empty()
    }

    pub fn try_next(&self) -> Option<Request> {
        if let Some(req) = self.kept.borrow_mut().pop_front() {
            return Some(req);
        }
        if let Some(req) = self.fresh.borrow_mut().pop_front() {
            return Some(req);
        }
        let req = self.rx.borrow_mut().try_recv().ok()?;
        Some(self.intercept(req))
    }

    /// Lets the connections run once (reads, accepts, BUSY and LOADING answers) while the
    /// executor is held by a script or a load; a no-op when they run on threads of their own.
    pub fn drive_network(&self) {
        if self.waiter.network {
            self.waiter.runtime.block_on(async {
                // The first yield lets the I/O driver run, the second the tasks it woke.
                tokio::task::yield_now().await;
                tokio::task::yield_now().await;
            });
            self.read_now();
        }
    }

    pub fn connected(&self, id: ClientId, tx: UnboundedSender<ClientOutput>, flags: Arc<ConnFlags>) {
        self.outputs.borrow_mut().insert(id, (tx, flags));
    }

    pub fn disconnected(&self, id: ClientId) {
        self.outputs.borrow_mut().remove(&id);
        self.readers.borrow_mut().remove(id);
    }

    /// Answers what can be answered while a script is busy; keeps the rest.
    pub fn pump(&self) {
        self.drive_network();
        loop {
            let next = self.fresh.borrow_mut().pop_front();
            let req = match next {
                Some(req) => req,
                None => match self.rx.borrow_mut().try_recv() {
                    Ok(req) => self.intercept(req),
                    Err(_) => break,
                },
            };
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
            let waiting = self.held.get() == Some(id)
                || self.kept.borrow().iter().any(|r| matches!(r, Request::Commands { id: other, .. } if *other == id));
            let outputs = self.outputs.borrow();
            let answer = match outputs.get(&id) {
                // A replica's connection carries the stream: it is never answered from here.
                Some(out) if !waiting && !out.1.replica.load(Ordering::Acquire) => {
                    busy_answers(&self.watch, &cmds, &out.1).map(|bytes| (out, bytes))
                }
                _ => None,
            };
            match answer {
                Some(((tx, flags), bytes)) => {
                    flags.task_pending.fetch_add(bytes.len() as u64, Ordering::AcqRel);
                    let _ = tx.send(ClientOutput::Replies(bytes));
                    let before = flags.inflight.fetch_sub(1, Ordering::AcqRel);
                    if before >= MAX_INFLIGHT {
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

impl Inbox {
    /// Takes the kept command batches of clients `servable` accepts (known to the executor,
    /// not the script's own), in order; a client with an earlier kept request of another
    /// kind, or one not servable, keeps its later batches too.
    pub fn take_busy_batches(&self, servable: impl Fn(ClientId) -> bool) -> Vec<(ClientId, Vec<Vec<bytes::Bytes>>)> {
        let mut kept = self.kept.borrow_mut();
        let mut stuck: Vec<ClientId> = Vec::new();
        let mut out = Vec::new();
        let mut rest = VecDeque::with_capacity(kept.len());
        for req in kept.drain(..) {
            match req {
                Request::Commands { id, cmds, protocol_error: None } if !stuck.contains(&id) && servable(id) => out.push((id, cmds)),
                other => {
                    if let Some(id) = request_client(&other) {
                        stuck.push(id);
                    }
                    rest.push_back(other);
                }
            }
        }
        *kept = rest;
        out
    }
}

/// The client a request is about, if any.
fn request_client(req: &Request) -> Option<ClientId> {
    match req {
        Request::Commands { id, .. } | Request::Connect { id, .. } | Request::Disconnect { id } | Request::Drained { id } => Some(*id),
        _ => None,
    }
}

/// Runs the connections now and then during a long load, so that clients get their LOADING
/// answers (and a replica's link keeps reading) while the executor replays.
pub struct LoadPump {
    inbox: Option<std::rc::Rc<Inbox>>,
    last: std::time::Instant,
    calls: u32,
}

impl LoadPump {
    pub fn new(inbox: Option<std::rc::Rc<Inbox>>) -> LoadPump {
        LoadPump { inbox, last: std::time::Instant::now(), calls: 0 }
    }

    /// Called per record or key; the clock is read every 256 calls (or every call when
    /// `slow`, as with `key-load-delay`), the network driven every 10 ms.
    pub fn tick(&mut self, slow: bool) {
        let Some(inbox) = &self.inbox else { return };
        self.calls = self.calls.wrapping_add(1);
        if (slow || self.calls.is_multiple_of(256)) && self.last.elapsed() >= Duration::from_millis(10) {
            inbox.drive_network();
            inbox.absorb_channel();
            self.last = std::time::Instant::now();
        }
    }
}
