//! What connection tasks know about the running script, without asking the executor (which
//! is inside Lua): the lock-free `ScriptWatch` of DESIGN.md "Busy scripts".
//!
//! The executor marks a script running and, from the Lua count hook, timed out once it passes
//! `busy-reply-threshold`. From then on connection tasks answer `-BUSY` themselves and serve
//! SCRIPT KILL (a compare-and-swap: a script that has written cannot be killed, and one that
//! was killed cannot write) and SHUTDOWN NOSAVE (a request the hook honours at once).

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use bytes::Bytes;

const IDLE: u8 = 0;
const RUNNING: u8 = 1;
const WROTE: u8 = 2;
const KILLED: u8 = 3;

/// The answer to SCRIPT KILL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillOutcome {
    Killed,
    NotBusy,
    Unkillable,
}

#[derive(Debug, Default)]
pub struct ScriptWatch {
    state: AtomicU8,
    timed_out: AtomicBool,
    shutdown: AtomicBool,
}

impl ScriptWatch {
    /// A script starts (executor).
    pub fn start(&self) {
        self.timed_out.store(false, Ordering::Release);
        self.state.store(RUNNING, Ordering::Release);
    }

    /// The script ended (executor).
    pub fn finish(&self) {
        self.state.store(IDLE, Ordering::Release);
        self.timed_out.store(false, Ordering::Release);
    }

    /// Before the script's first write (executor): false when a kill got there first, and
    /// the write must not happen.
    pub fn may_write(&self) -> bool {
        match self.state.compare_exchange(RUNNING, WROTE, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => true,
            Err(state) => state == WROTE,
        }
    }

    /// The script ran past `busy-reply-threshold` (executor, from the hook).
    pub fn set_timed_out(&self) {
        self.timed_out.store(true, Ordering::Release);
    }

    /// Whether other clients get `-BUSY` now (connection tasks).
    pub fn is_busy(&self) -> bool {
        self.timed_out.load(Ordering::Acquire) && self.state.load(Ordering::Acquire) != IDLE
    }

    /// SCRIPT KILL (connection tasks, or the executor when nothing runs).
    pub fn kill(&self) -> KillOutcome {
        match self.state.compare_exchange(RUNNING, KILLED, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => KillOutcome::Killed,
            Err(KILLED) => KillOutcome::Killed,
            Err(WROTE) => KillOutcome::Unkillable,
            Err(_) => KillOutcome::NotBusy,
        }
    }

    /// Whether the running script must stop now (killed, or the server is shutting down).
    pub fn must_abort(&self) -> bool {
        self.state.load(Ordering::Acquire) == KILLED || self.shutdown.load(Ordering::Acquire)
    }

    pub fn killed(&self) -> bool {
        self.state.load(Ordering::Acquire) == KILLED
    }

    /// SHUTDOWN NOSAVE during a busy script (connection tasks).
    pub fn request_shutdown(&self) {
        self.shutdown.store(true, Ordering::Release);
    }

    pub fn shutdown_requested(&self) -> bool {
        self.shutdown.load(Ordering::Acquire)
    }
}

impl ScriptWatch {
    /// The replies to a batch while a script is busy (Redis 7.0's rules: SCRIPT KILL, SHUTDOWN
    /// NOSAVE, BUSY for the rest), or `None` when the batch holds a command that is allowed
    /// then but needs the executor (AUTH, MULTI, WATCH...): such a batch waits for the script.
    /// `authenticated`: whether the client has passed AUTH (if a password is set); the others
    /// get NOAUTH, which Redis checks before BUSY.
    pub fn busy_answers(&self, cmds: &[Vec<Bytes>], authenticated: bool) -> Option<Vec<u8>> {
        let is = |arg: &[u8], name: &str| arg.eq_ignore_ascii_case(name.as_bytes());
        let mut out = Vec::new();
        for args in cmds {
            let name = &args[0];
            if ALLOWED_BUT_QUEUED.iter().any(|c| is(name, c)) {
                return None;
            }
            if !authenticated {
                out.extend_from_slice(b"-NOAUTH Authentication required.\r\n");
            } else if is(name, "script") && args.len() == 2 && is(&args[1], "kill") {
                out.extend_from_slice(match self.kill() {
                    KillOutcome::Killed => b"+OK\r\n".as_slice(),
                    KillOutcome::NotBusy => b"-NOTBUSY No scripts in execution right now.\r\n",
                    KillOutcome::Unkillable => UNKILLABLE,
                });
            } else if is(name, "shutdown") && args[1..].iter().any(|a| is(a, "nosave")) && !args[1..].iter().any(|a| is(a, "save")) {
                // The hook stops the script and the executor the server; nothing of the
                // script is kept.
                crate::log::warning("User requested shutdown...");
                self.request_shutdown();
                return Some(out);
            } else {
                out.extend_from_slice(b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n");
            }
        }
        Some(out)
    }
}

const UNKILLABLE: &[u8] = b"-UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.\r\n";

/// Commands Redis 7.0 serves during a busy script (flag `allow-busy`) that need the executor.
const ALLOWED_BUT_QUEUED: &[&str] = &["auth", "hello", "multi", "discard", "watch", "unwatch", "quit", "reset", "replconf"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_that_wrote_cannot_be_killed_and_a_killed_one_cannot_write() {
        let w = ScriptWatch::default();
        assert_eq!(w.kill(), KillOutcome::NotBusy);
        w.start();
        assert!(w.may_write());
        assert_eq!(w.kill(), KillOutcome::Unkillable);
        w.finish();
        w.start();
        assert_eq!(w.kill(), KillOutcome::Killed);
        assert!(!w.may_write());
        assert!(w.must_abort());
        w.finish();
        assert!(!w.must_abort());
    }

    #[test]
    fn busy_answers_follow_redis_order_of_checks() {
        let w = ScriptWatch::default();
        w.start();
        let cmd = |parts: &[&str]| parts.iter().map(|p| Bytes::copy_from_slice(p.as_bytes())).collect::<Vec<_>>();
        assert_eq!(w.busy_answers(&[cmd(&["GET", "k"])], false).unwrap(), b"-NOAUTH Authentication required.\r\n");
        assert!(w.busy_answers(&[cmd(&["GET", "k"])], true).unwrap().starts_with(b"-BUSY Redis is busy running a script."));
        assert_eq!(w.busy_answers(&[cmd(&["PING"]), cmd(&["AUTH", "pw"])], true), None);
        assert_eq!(w.busy_answers(&[cmd(&["script", "KILL"])], true).unwrap(), b"+OK\r\n");
        assert!(w.must_abort());
    }
}
