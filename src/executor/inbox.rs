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
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

use super::{Request, RequestRx};
use crate::commands::{self, Flag, Resolved};
use crate::protocol::ProtocolVersion;
use crate::scripting::{KillOutcome, ScriptWatch};
use crate::state::{ClientId, ClientOutput, ConnFlags};

/// Where a client's replies go without the executor: its task's channel and flags.
type Output = (UnboundedSender<ClientOutput>, Arc<ConnFlags>);

/// At most this many extra network polls gather one batch.
const GATHER_ROUNDS: usize = 4;

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
    /// How to answer each connected client without the executor's client table.
    outputs: RefCell<HashMap<ClientId, Output>>,
    watch: Arc<ScriptWatch>,
}

impl Inbox {
    pub fn new(rx: RequestRx, waiter: Waiter, watch: Arc<ScriptWatch>) -> Inbox {
        Inbox {
            rx: RefCell::new(rx),
            waiter,
            timer: RefCell::new(None),
            kept: RefCell::new(VecDeque::new()),
            outputs: RefCell::new(HashMap::new()),
            watch,
        }
    }

    /// The next request: kept ones first, then the channel's, waiting at most `wait` (and
    /// running the connections meanwhile when the executor drives them).
    pub fn next(&self, wait: Duration) -> Result<Request, RecvTimeoutError> {
        if let Some(req) = self.kept.borrow_mut().pop_front() {
            return Ok(req);
        }
        let mut rx = self.rx.borrow_mut();
        let mut timer = self.timer.borrow_mut();
        let network = self.waiter.network;
        self.waiter.runtime.block_on(async {
            let req = match rx.try_recv() {
                Ok(req) => req,
                Err(_) => {
                    let sleep = arm(&mut timer, tokio::time::Instant::now() + wait);
                    tokio::select! {
                        biased;
                        req = rx.recv() => match req {
                            Some(req) => req,
                            None => return Err(RecvTimeoutError::Disconnected),
                        },
                        _ = sleep => return Err(RecvTimeoutError::Timeout),
                    }
                }
            };
            if network {
                // The runtime polled the sockets once more before handing us the request;
                // the connections it woke then read before the batch starts, and again while
                // a round brings new requests, so one batch holds every ready client (as one
                // epoll_wait per event-loop turn gives Redis) instead of two half batches
                // taking turns.
                let mut seen = rx.len();
                for _ in 0..GATHER_ROUNDS {
                    tokio::task::yield_now().await;
                    let now = rx.len();
                    if now == seen {
                        break;
                    }
                    seen = now;
                }
            }
            Ok(req)
        })
    }

    /// Whether a request is waiting, after letting the connections read what the sockets hold.
    pub fn poll_ready(&self) -> bool {
        self.drive_network();
        !self.kept.borrow().is_empty() || !self.rx.borrow().is_empty()
    }

    pub fn try_next(&self) -> Option<Request> {
        if let Some(req) = self.kept.borrow_mut().pop_front() {
            return Some(req);
        }
        self.rx.borrow_mut().try_recv().ok()
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
        }
    }

    pub fn connected(&self, id: ClientId, tx: UnboundedSender<ClientOutput>, flags: Arc<ConnFlags>) {
        self.outputs.borrow_mut().insert(id, (tx, flags));
    }

    pub fn disconnected(&self, id: ClientId) {
        self.outputs.borrow_mut().remove(&id);
    }

    /// Answers what can be answered while a script is busy; keeps the rest.
    pub fn pump(&self) {
        self.drive_network();
        loop {
            let Ok(req) = self.rx.borrow_mut().try_recv() else { break };
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
            self.last = std::time::Instant::now();
        }
    }
}

/// The replies to a batch while a script is busy, or `None` when the batch must wait for the
/// script. Redis 7.0's rules, from the command table: NOAUTH first for a client that has not
/// authenticated; SCRIPT KILL and SHUTDOWN NOSAVE are served; the other `allow-busy` commands
/// (AUTH, HELLO, MULTI, WATCH...) change state the executor owns, so their batch waits;
/// everything else gets BUSY.
pub fn busy_answers(watch: &ScriptWatch, cmds: &[Vec<bytes::Bytes>], flags: &ConnFlags) -> Option<Vec<u8>> {
    let authenticated = flags.authenticated.load(Ordering::Relaxed);
    let proto = if flags.resp3.load(Ordering::Relaxed) { ProtocolVersion::Resp3 } else { ProtocolVersion::Resp2 };
    let mut out = Vec::new();
    let busy = if watch.is_function() { BUSY_FUNCTION } else { BUSY };
    for args in cmds {
        // Redis's order of checks: the name and arity, then authentication, then BUSY.
        let cmd = match commands::resolve(args) {
            Resolved::Found(cmd) => cmd,
            Resolved::Unknown => {
                crate::protocol::encode_reply(&commands::unknown_command_error(args), proto, &mut out);
                continue;
            }
            Resolved::UnknownSubcommand => {
                crate::protocol::encode_reply(&commands::unknown_subcommand_error(args), proto, &mut out);
                continue;
            }
            Resolved::WrongArity(cmd) => {
                crate::protocol::encode_reply(&commands::wrong_arity_error(cmd), proto, &mut out);
                continue;
            }
        };
        if !authenticated && !cmd.has(Flag::NoAuth) {
            out.extend_from_slice(b"-NOAUTH Authentication required.\r\n");
            continue;
        }
        let allowed = cmd.has(Flag::AllowBusy).then_some(cmd);
        match allowed.map(|c| c.name) {
            Some(name @ ("script|kill" | "function|kill")) => {
                let by_function = name == "function|kill";
                out.extend_from_slice(match watch.kill(by_function) {
                    KillOutcome::Killed => b"+OK\r\n".as_slice(),
                    KillOutcome::NotBusy => b"-NOTBUSY No scripts in execution right now.\r\n",
                    KillOutcome::Unkillable => UNKILLABLE,
                    KillOutcome::UnkillableMaster => UNKILLABLE_MASTER,
                    // The text names the command that would work.
                    KillOutcome::WrongKind if by_function => BUSY,
                    KillOutcome::WrongKind => BUSY_FUNCTION,
                })
            }
            Some("function|stats") => {
                if !watch.is_function() {
                    out.extend_from_slice(BUSY);
                    continue;
                }
                // The function ended meanwhile: the executor answers.
                let f = watch.running_function()?;
                let ms = f.started.elapsed().as_millis() as u64;
                let reply = crate::commands::function_stats_reply(Some((f.name, f.argv, ms)), f.libraries, f.functions);
                crate::protocol::encode_reply(&reply, proto, &mut out);
            }
            Some("shutdown") => {
                // SHUTDOWN parses its options first (Redis runs it during a busy script).
                let opt = |name: &str| args[1..].iter().any(|a| crate::util::opt_is(a, name));
                let known = args[1..].iter().all(|a| ["nosave", "save", "now", "force", "abort"].iter().any(|o| crate::util::opt_is(a, o)));
                if !known || (opt("abort") && args.len() > 2) || (opt("nosave") && opt("save")) {
                    out.extend_from_slice(b"-ERR syntax error\r\n");
                } else if opt("abort") {
                    out.extend_from_slice(b"-ERR No shutdown in progress.\r\n");
                } else if opt("nosave") {
                    // The hook stops the script and the executor the server; nothing of the
                    // script is kept.
                    crate::log::warning("User requested shutdown...");
                    watch.request_shutdown();
                    return Some(out);
                } else {
                    out.extend_from_slice(busy);
                }
            }
            None => out.extend_from_slice(busy),
            Some(_) => return None,
        }
    }
    Some(out)
}

const BUSY: &[u8] = b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n";
const BUSY_FUNCTION: &[u8] = b"-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n";
const UNKILLABLE_MASTER: &[u8] =
    b"-UNKILLABLE The busy script was sent by a master instance in the context of replication and cannot be killed.\r\n";
const UNKILLABLE: &[u8] = b"-UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.\r\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_answers_follow_redis_order_of_checks() {
        let (guest, user, user3) = (ConnFlags::default(), ConnFlags::default(), ConnFlags::default());
        user.authenticated.store(true, Ordering::Relaxed);
        user3.authenticated.store(true, Ordering::Relaxed);
        user3.resp3.store(true, Ordering::Relaxed);
        let w = ScriptWatch::default();
        w.start(false, None);
        let cmd = |parts: &[&str]| parts.iter().map(|p| bytes::Bytes::copy_from_slice(p.as_bytes())).collect::<Vec<_>>();
        assert_eq!(busy_answers(&w, &[cmd(&["GET", "k"])], &guest).unwrap(), b"-NOAUTH Authentication required.\r\n");
        assert_eq!(busy_answers(&w, &[cmd(&["GET", "k"]), cmd(&["SHUTDOWN"])], &user).unwrap(), [BUSY, BUSY].concat());
        assert_eq!(busy_answers(&w, &[cmd(&["PING"]), cmd(&["AUTH", "pw"])], &user), None);
        assert_eq!(busy_answers(&w, &[cmd(&["script", "KILL"])], &user).unwrap(), b"+OK\r\n");
        assert!(w.must_abort());
        w.finish();
        w.start(false, None);
        assert_eq!(busy_answers(&w, &[cmd(&["FUNCTION", "STATS"])], &user).unwrap(), BUSY);
        assert_eq!(busy_answers(&w, &[cmd(&["FUNCTION", "KILL"])], &user).unwrap(), BUSY);
        // The name and the arity are checked before authentication and BUSY, as in Redis.
        let text = |c: &[&str], f: &ConnFlags| String::from_utf8_lossy(&busy_answers(&w, &[cmd(c)], f).unwrap()).into_owned();
        assert_eq!(text(&["GET"], &user), "-ERR wrong number of arguments for 'get' command\r\n");
        assert!(text(&["NOSUCHCMD"], &guest).starts_with("-ERR unknown command 'NOSUCHCMD'"));
        assert_eq!(text(&["SCRIPT", "bogus"], &user), "-ERR unknown subcommand 'bogus'. Try SCRIPT HELP.\r\n");
        assert_eq!(text(&["SCRIPT", "KILL", "x"], &user), "-ERR wrong number of arguments for 'script|kill' command\r\n");
        assert_eq!(text(&["SHUTDOWN", "bogus"], &user), "-ERR syntax error\r\n");
        assert_eq!(text(&["SHUTDOWN", "NOSAVE", "SAVE"], &user), "-ERR syntax error\r\n");
        assert_eq!(text(&["SHUTDOWN", "SAVE"], &user).as_bytes(), BUSY);
        w.finish();
        let f = crate::scripting::RunningFunction {
            name: "spin".into(),
            argv: vec![bytes::Bytes::from_static(b"FCALL")],
            started: std::time::Instant::now(),
            libraries: 1,
            functions: 2,
        };
        w.start(false, Some(f));
        assert_eq!(busy_answers(&w, &[cmd(&["GET", "k"])], &user).unwrap(), BUSY_FUNCTION);
        assert_eq!(busy_answers(&w, &[cmd(&["SCRIPT", "KILL"])], &user).unwrap(), BUSY_FUNCTION);
        let stats = busy_answers(&w, &[cmd(&["FUNCTION", "STATS"])], &user3).unwrap();
        assert!(stats.starts_with(b"%2\r\n$14\r\nrunning_script\r\n%3\r\n$4\r\nname\r\n$4\r\nspin\r\n"), "{stats:?}");
        assert_eq!(busy_answers(&w, &[cmd(&["FUNCTION", "KILL"])], &user).unwrap(), b"+OK\r\n");
    }
}
