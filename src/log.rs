//! The server log, in Redis's line format: `pid:role day month year hh:mm:ss.mmm level message`,
//! with the level marks `.` debug, `-` verbose, `*` notice, `#` warning. Written to stdout or to
//! `logfile` (opened for append per line, as Redis does, so log rotation works).

use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Debug = 0,
    Verbose = 1,
    Notice = 2,
    Warning = 3,
}

impl Level {
    pub fn parse(s: &str) -> Level {
        match s {
            "debug" => Level::Debug,
            "verbose" => Level::Verbose,
            "warning" => Level::Warning,
            _ => Level::Notice,
        }
    }

    fn mark(self) -> char {
        match self {
            Level::Debug => '.',
            Level::Verbose => '-',
            Level::Notice => '*',
            Level::Warning => '#',
        }
    }
}

static LEVEL: AtomicU8 = AtomicU8::new(Level::Notice as u8);
static ROLE: AtomicU8 = AtomicU8::new(b'C');
static FILE: Mutex<Option<String>> = Mutex::new(None);

/// Sets the minimum level and the destination (empty: stdout).
pub fn configure(level: Level, logfile: &str) {
    LEVEL.store(level as u8, Ordering::Relaxed);
    if let Ok(mut f) = FILE.lock() {
        *f = (!logfile.is_empty()).then(|| logfile.to_string());
    }
}

/// `C` while starting up, `M` once serving as a primary, `S` as a replica.
pub fn set_role(role: u8) {
    ROLE.store(role, Ordering::Relaxed);
}

pub fn enabled(level: Level) -> bool {
    level as u8 >= LEVEL.load(Ordering::Relaxed)
}

pub fn log(level: Level, msg: &str) {
    if !enabled(level) {
        return;
    }
    let line = format!("{}:{} {} {} {}\n", std::process::id(), ROLE.load(Ordering::Relaxed) as char, timestamp(), level.mark(), msg);
    let target = FILE.lock().ok().and_then(|f| f.clone());
    match target {
        Some(path) => {
            if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
                let _ = f.write_all(line.as_bytes());
            }
        }
        None => {
            let _ = std::io::stdout().lock().write_all(line.as_bytes());
        }
    }
}

pub fn notice(msg: &str) {
    log(Level::Notice, msg)
}

pub fn warning(msg: &str) {
    log(Level::Warning, msg)
}

pub fn verbose(msg: &str) {
    log(Level::Verbose, msg)
}

/// `22 Nov 2026 02:29:12.123` (UTC).
fn timestamp() -> String {
    let ms = crate::clock::now_ms();
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86400);
    let rem = secs.rem_euclid(86400);
    let (y, m, d) = civil_from_days(days);
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    format!(
        "{:02} {} {} {:02}:{:02}:{:02}.{:03}",
        d,
        MONTHS[(m - 1) as usize],
        y,
        rem / 3600,
        (rem / 60) % 60,
        rem % 60,
        ms.rem_euclid(1000)
    )
}

/// Days since 1970-01-01 to (year, month, day), Howard Hinnant's algorithm.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    #[test]
    fn civil() {
        assert_eq!(super::civil_from_days(0), (1970, 1, 1));
        assert_eq!(super::civil_from_days(20_414), (2025, 11, 22));
    }
}
