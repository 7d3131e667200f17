//! What connection tasks know about the running script, without asking the executor (which
//! is inside Lua): the lock-free `ScriptWatch` of DESIGN.md "Busy scripts".
//!
//! The executor marks a script running and, from the Lua count hook, timed out once it passes
//! `busy-reply-threshold`. From then on connection tasks answer `-BUSY` themselves and serve
//! SCRIPT KILL (a compare-and-swap: a script that has written cannot be killed, and one that
//! was killed cannot write) and SHUTDOWN NOSAVE (a request the hook honours at once); the
//! replies themselves are `executor::busy_answers`, driven by the command table.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::Instant;

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
    /// The script came from the primary's stream (or the log being loaded): it must run to
    /// its end, or the replica would diverge.
    UnkillableMaster,
    /// SCRIPT KILL of a function, or FUNCTION KILL of an EVAL script: Redis refuses with
    /// the BUSY text that names the right command.
    WrongKind,
}

/// The function an FCALL runs: what FUNCTION STATS shows while it is busy.
#[derive(Debug, Clone)]
pub struct RunningFunction {
    pub name: String,
    /// The FCALL command as the client sent it.
    pub argv: Vec<Bytes>,
    pub started: Instant,
    pub libraries: usize,
    pub functions: usize,
}

#[derive(Debug, Default)]
pub struct ScriptWatch {
    state: AtomicU8,
    timed_out: AtomicBool,
    shutdown: AtomicBool,
    from_master: AtomicBool,
    /// The running script is a function (FCALL), not an EVAL script.
    function: AtomicBool,
    /// The running script's writes are undone if it fails or is killed: SCRIPT KILL may stop
    /// it after it wrote.
    rollback: AtomicBool,
    running_function: Mutex<Option<RunningFunction>>,
}

impl ScriptWatch {
    /// A script starts (executor); `from_master`: it is a record of the replication stream
    /// or of the log being loaded.
    pub fn start(&self, from_master: bool, function: Option<RunningFunction>, rollback: bool) {
        self.from_master.store(from_master, Ordering::Release);
        self.rollback.store(rollback, Ordering::Release);
        self.function.store(function.is_some(), Ordering::Release);
        if let Ok(mut running) = self.running_function.lock() {
            *running = function;
        }
        self.timed_out.store(false, Ordering::Release);
        self.state.store(RUNNING, Ordering::Release);
    }

    /// Whether a script is running (executor or not: the state is the watch's).
    pub fn running(&self) -> bool {
        self.state.load(Ordering::Acquire) != IDLE
    }

    /// The script ended (executor). Whether SCRIPT KILL got in before its end, even after
    /// it returned: an all-or-nothing script told `+OK` must then be undone.
    pub fn finish(&self) -> bool {
        let killed = self.state.swap(IDLE, Ordering::AcqRel) == KILLED;
        self.timed_out.store(false, Ordering::Release);
        if let Ok(mut running) = self.running_function.lock() {
            *running = None;
        }
        killed
    }

    /// Whether the running script is a function (which BUSY text other clients get).
    pub fn is_function(&self) -> bool {
        self.function.load(Ordering::Acquire)
    }

    /// The running function, if a function runs.
    pub fn running_function(&self) -> Option<RunningFunction> {
        if self.state.load(Ordering::Acquire) == IDLE {
            return None;
        }
        self.running_function.lock().ok().and_then(|r| r.clone())
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

    /// SCRIPT KILL (`function` false) or FUNCTION KILL (connection tasks). Redis's order of
    /// checks: nothing runs, a master's script, a script that wrote, the wrong command.
    pub fn kill(&self, function: bool) -> KillOutcome {
        let state = self.state.load(Ordering::Acquire);
        if state == IDLE {
            return KillOutcome::NotBusy;
        }
        if self.from_master.load(Ordering::Acquire) {
            return KillOutcome::UnkillableMaster;
        }
        let rollback = self.rollback.load(Ordering::Acquire);
        if state == WROTE && !rollback {
            return KillOutcome::Unkillable;
        }
        if self.function.load(Ordering::Acquire) != function {
            return KillOutcome::WrongKind;
        }
        // A script whose writes are undone may be stopped after it wrote.
        let from = if rollback && state == WROTE { WROTE } else { RUNNING };
        match self.state.compare_exchange(from, KILLED, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => KillOutcome::Killed,
            Err(KILLED) => KillOutcome::Killed,
            Err(WROTE) if rollback => self.kill(function),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_that_wrote_cannot_be_killed_and_a_killed_one_cannot_write() {
        let w = ScriptWatch::default();
        assert_eq!(w.kill(false), KillOutcome::NotBusy);
        w.start(false, None, false);
        assert!(w.may_write());
        assert_eq!(w.kill(false), KillOutcome::Unkillable);
        w.finish();
        w.start(true, None, false);
        assert_eq!(w.kill(false), KillOutcome::UnkillableMaster);
        w.finish();
        w.start(false, None, false);
        assert_eq!(w.kill(true), KillOutcome::WrongKind);
        assert_eq!(w.kill(false), KillOutcome::Killed);
        assert!(!w.may_write());
        assert!(w.must_abort());
        w.finish();
        assert!(!w.must_abort());
        let f = RunningFunction { name: "f".into(), argv: vec![], started: Instant::now(), libraries: 1, functions: 1 };
        w.start(false, Some(f), false);
        assert!(w.is_function());
        assert_eq!(w.running_function().map(|f| f.name), Some("f".to_string()));
        assert_eq!(w.kill(false), KillOutcome::WrongKind);
        assert_eq!(w.kill(true), KillOutcome::Killed);
        w.finish();
        assert!(w.running_function().is_none());
    }

    #[test]
    fn a_rollback_script_that_wrote_can_be_killed_and_writes_no_more() {
        let w = ScriptWatch::default();
        w.start(false, None, true);
        assert!(w.may_write());
        assert_eq!(w.kill(false), KillOutcome::Killed);
        assert!(!w.may_write());
        assert!(w.must_abort());
        w.finish();
        // The flag is the running script's: the next one without it is unkillable again.
        w.start(false, None, false);
        assert!(w.may_write());
        assert_eq!(w.kill(false), KillOutcome::Unkillable);
    }
}
