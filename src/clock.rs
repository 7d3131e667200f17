//! Wall-clock time in the units Redis uses.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// Microseconds since the Unix epoch.
pub fn now_us() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as i64)
}

/// Wall-clock time derived from a monotonic instant, so that one cheap clock read per batch
/// of commands gives "now" in ms (for expiry) without a system-clock read each time.
/// Re-anchored by the executor's cron, so a step of the system clock shows within one cron
/// period (NTP's slewing drifts the two by far less than a millisecond in that time).
#[derive(Debug, Clone, Copy)]
pub struct Anchor {
    at: Instant,
    us: i64,
}

impl Anchor {
    pub fn now() -> Anchor {
        Anchor { at: Instant::now(), us: now_us() }
    }

    /// Milliseconds since the Unix epoch at `t` (an instant taken after the anchor).
    pub fn ms_at(&self, t: Instant) -> i64 {
        (self.us + t.saturating_duration_since(self.at).as_micros() as i64) / 1000
    }
}

/// A reading of a cheap monotonic counter, for timing commands (the slowlog, INFO
/// commandstats): every command is timed, and `Instant::now()` (a vDSO call) costs 32 ns on
/// this VM against 13 ns for the CPU's time-stamp counter, 5% of a trivial pipelined command.
/// The counter is used only where the kernel keeps its own time with it (clocksource `tsc`:
/// constant rate, checked in step across cores); elsewhere a stamp is an `Instant`'s
/// nanoseconds. Only durations come from stamps: "now" for expiry stays on the system clock
/// ([`Anchor`]), so a counter gone wrong could only skew a duration.
#[derive(Debug, Clone, Copy)]
pub struct Stamp(u64);

/// How stamps turn into time, settled once per process.
struct Ticks {
    tsc: bool,
    base: Instant,
    /// Microseconds per tick.
    us_per_tick: f64,
}

static TICKS: std::sync::OnceLock<Ticks> = std::sync::OnceLock::new();

fn ticks() -> &'static Ticks {
    TICKS.get_or_init(|| {
        let base = Instant::now();
        let tsc = cfg!(target_arch = "x86_64")
            && std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource").is_ok_and(|s| s.trim() == "tsc");
        if tsc {
            // The rate, against the monotonic clock over 2 ms (a 32 ns read at each end:
            // within 0.003%, re-measured by no one since the kernel vouches it is constant).
            let (t0, c0) = (Instant::now(), read_tsc());
            while t0.elapsed() < std::time::Duration::from_millis(2) {
                std::hint::spin_loop();
            }
            let (t1, c1) = (Instant::now(), read_tsc());
            let us = t1.duration_since(t0).as_nanos() as f64 / 1000.0;
            if c1 > c0 && us > 0.0 {
                let us_per_tick = us / (c1 - c0) as f64;
                // Below 100 MHz or above 20 GHz something is off: keep the monotonic clock.
                if (0.000_05..0.01).contains(&us_per_tick) {
                    return Ticks { tsc: true, base, us_per_tick };
                }
            }
        }
        Ticks { tsc: false, base, us_per_tick: 0.001 }
    })
}

#[cfg(target_arch = "x86_64")]
fn read_tsc() -> u64 {
    // SAFETY: RDTSC exists on every x86_64 CPU and has no preconditions.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
fn read_tsc() -> u64 {
    0
}

impl Stamp {
    pub fn now() -> Stamp {
        let t = ticks();
        if t.tsc {
            Stamp(read_tsc())
        } else {
            Stamp(t.base.elapsed().as_nanos() as u64)
        }
    }

    /// Microseconds from `earlier` to this stamp (0 if `earlier` is not earlier).
    pub fn micros_since(self, earlier: Stamp) -> u64 {
        (self.0.saturating_sub(earlier.0) as f64 * ticks().us_per_tick) as u64
    }

    /// Settles the counter's rate now rather than on the first command timed.
    pub fn calibrate() {
        ticks();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_measure_what_the_monotonic_clock_does() {
        Stamp::calibrate();
        let (t0, s0) = (Instant::now(), Stamp::now());
        std::thread::sleep(std::time::Duration::from_millis(30));
        let (s1, t1) = (Stamp::now(), Instant::now());
        let us = s1.micros_since(s0) as i64;
        let real = t1.duration_since(t0).as_micros() as i64;
        assert!((us - real).abs() <= real / 100 + 5, "stamps {us} us, monotonic clock {real} us");
        assert_eq!(s0.micros_since(s1), 0);
    }

    #[test]
    fn anchored_time_follows_the_wall_clock() {
        let anchor = Anchor::now();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let (t, wall) = (Instant::now(), now_ms());
        assert!((anchor.ms_at(t) - wall).abs() <= 1, "{} vs {wall}", anchor.ms_at(t));
    }
}
