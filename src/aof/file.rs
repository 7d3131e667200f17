//! The incremental log file being appended to, and its fsync policy.
//!
//! `always`: `append` returns after fdatasync (the executor calls it once per batch: group
//! commit). `everysec`: a background thread fdatasyncs once a second when something was
//! written; if one of its fsyncs takes more than two seconds, `append` waits for it, so a
//! stalled disk delays writes instead of letting the unsynced tail grow without bound.
//! `no`: written, fsync left to the OS.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fsync {
    Always = 0,
    EverySec = 1,
    No = 2,
}

impl Fsync {
    pub fn parse(s: &str) -> Fsync {
        match s {
            "always" => Fsync::Always,
            "no" => Fsync::No,
            _ => Fsync::EverySec,
        }
    }
}

/// What the executor and the fsync thread share.
struct Shared {
    file: File,
    policy: AtomicU8,
    /// Bytes written with write(2).
    written: AtomicU64,
    /// Bytes known to be on disk.
    synced: AtomicU64,
    /// When the running background fsync started (ms), 0 when none runs.
    fsync_since: AtomicI64,
    stop: AtomicBool,
    /// The last background fsync failed (errno text kept by the executor's next append).
    fsync_failed: AtomicBool,
}

pub struct LogFile {
    shared: Arc<Shared>,
    pub path: PathBuf,
    /// Bytes in the file (all written).
    pub size: u64,
}

/// How long a background fsync may run before appends wait for it.
const STALL_MS: i64 = 2000;

impl LogFile {
    /// Opens (or creates) `path` for appending; its current length counts as written and synced.
    pub fn open(path: &Path, policy: Fsync) -> std::io::Result<LogFile> {
        let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        let size = file.metadata()?.len();
        let shared = Arc::new(Shared {
            file,
            policy: AtomicU8::new(policy as u8),
            written: AtomicU64::new(size),
            synced: AtomicU64::new(size),
            fsync_since: AtomicI64::new(0),
            stop: AtomicBool::new(false),
            fsync_failed: AtomicBool::new(false),
        });
        let bg = shared.clone();
        std::thread::Builder::new().name("aof-fsync".into()).spawn(move || fsync_loop(&bg))?;
        Ok(LogFile { shared, path: path.to_path_buf(), size })
    }

    pub fn set_policy(&self, policy: Fsync) {
        self.shared.policy.store(policy as u8, Ordering::Relaxed);
    }

    fn policy(&self) -> Fsync {
        match self.shared.policy.load(Ordering::Relaxed) {
            0 => Fsync::Always,
            1 => Fsync::EverySec,
            _ => Fsync::No,
        }
    }

    /// Appends `bytes`, then syncs as the policy demands. On failure the file is cut back
    /// to its previous length (no half record stays) and the error returned.
    pub fn append(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if self.shared.fsync_failed.swap(false, Ordering::AcqRel) {
            return Err(std::io::Error::other("background fsync failed"));
        }
        let policy = self.policy();
        if policy == Fsync::EverySec {
            self.wait_for_stalled_fsync();
        }
        if let Err(e) = (&self.shared.file).write_all(bytes) {
            let _ = self.shared.file.set_len(self.size);
            return Err(e);
        }
        if policy == Fsync::Always {
            if let Err(e) = self.shared.file.sync_data() {
                // Not known to be on disk: cut it off again, so the retry (which writes the
                // same records) cannot leave them twice.
                let _ = self.shared.file.set_len(self.size);
                return Err(e);
            }
        }
        self.size += bytes.len() as u64;
        self.shared.written.store(self.size, Ordering::Release);
        if policy == Fsync::Always {
            self.shared.synced.store(self.size, Ordering::Release);
        }
        Ok(())
    }

    fn wait_for_stalled_fsync(&self) {
        loop {
            let since = self.shared.fsync_since.load(Ordering::Acquire);
            if since == 0 || crate::clock::now_ms() - since < STALL_MS {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// fsyncs everything written (shutdown, rewrite switch).
    pub fn sync(&self) -> std::io::Result<()> {
        let written = self.shared.written.load(Ordering::Acquire);
        self.shared.file.sync_data()?;
        self.shared.synced.store(written, Ordering::Release);
        Ok(())
    }

    /// Bytes written but not yet known to be on disk.
    pub fn unsynced(&self) -> u64 {
        self.shared.written.load(Ordering::Acquire).saturating_sub(self.shared.synced.load(Ordering::Acquire))
    }

    /// Whether a background fsync is running now.
    pub fn fsync_in_progress(&self) -> bool {
        self.shared.fsync_since.load(Ordering::Acquire) != 0
    }
}

/// Cuts a log file back to `len` and appends `seal` (the checkpoint closing what remains,
/// see `format::seal`), then fsyncs it.
pub fn cut_and_seal(path: &Path, len: u64, seal: Option<&[u8]>) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new().write(true).open(path)?;
    f.set_len(len)?;
    if let Some(line) = seal {
        use std::io::Seek;
        f.seek(std::io::SeekFrom::Start(len))?;
        f.write_all(line)?;
    }
    f.sync_all()
}

impl Drop for LogFile {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
    }
}

fn fsync_loop(s: &Shared) {
    let mut last = std::time::Instant::now();
    while !s.stop.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(50));
        if s.policy.load(Ordering::Relaxed) != Fsync::EverySec as u8 || last.elapsed() < Duration::from_secs(1) {
            continue;
        }
        last = std::time::Instant::now();
        let written = s.written.load(Ordering::Acquire);
        if written <= s.synced.load(Ordering::Acquire) {
            continue;
        }
        s.fsync_since.store(crate::clock::now_ms().max(1), Ordering::Release);
        let ok = s.file.sync_data().is_ok();
        s.fsync_since.store(0, Ordering::Release);
        if ok {
            s.synced.fetch_max(written, Ordering::AcqRel);
        } else {
            s.fsync_failed.store(true, Ordering::Release);
        }
    }
}
