//! The manifest: which base snapshot and which incremental logs make up the data, in order.
//!
//! Redis 7's syntax (`file <name> seq <n> type <b|h|i>`, `#` comments), with a version line
//! of ours first (a comment to Redis). Replaced atomically: temp file, fsync, rename, fsync
//! of the directory.

use std::io::Write;
use std::path::Path;

/// 2: an incremental log may end with zeros (preallocated under `appendfsync always`,
/// see `file.rs`), which readers skip; 1: it never does. Both read the same way.
pub const MANIFEST_VERSION: u32 = 2;
const VERSION_PREFIX: &str = "# vermilion-manifest ";
/// The replication id whose stream this directory's log is a copy of (a replica's log): a
/// comment to Redis, read by us to resync partially after a restart.
const REPLID_PREFIX: &str = "# vermilion-replid ";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    pub name: String,
    pub seq: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Manifest {
    pub base: Option<FileEntry>,
    /// Incremental logs, oldest first.
    pub incrs: Vec<FileEntry>,
    /// Set while the log is a copy of a primary's stream (see `REPLID_PREFIX`).
    pub replid: Option<String>,
}

impl Manifest {
    pub fn parse(text: &str) -> Result<Manifest, String> {
        let mut m = Manifest::default();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if let Some(v) = line.strip_prefix(VERSION_PREFIX) {
                let v: u32 = v.trim().parse().map_err(|_| format!("Invalid manifest version at line {}", i + 1))?;
                if v > MANIFEST_VERSION {
                    return Err(format!("Manifest version {v} is newer than this server's ({MANIFEST_VERSION})"));
                }
                continue;
            }
            if let Some(id) = line.strip_prefix(REPLID_PREFIX) {
                let id = id.trim();
                if id.len() == 40 && id.bytes().all(|c| c.is_ascii_hexdigit()) {
                    m.replid = Some(id.to_string());
                }
                continue;
            }
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            let (mut name, mut seq, mut kind) = (None, None, None);
            for pair in words.chunks(2) {
                match pair {
                    ["file", v] => name = Some(v.to_string()),
                    ["seq", v] => seq = v.parse::<u64>().ok(),
                    ["type", v] => kind = Some(*v),
                    _ => return Err(format!("Invalid AOF manifest file format at line {}", i + 1)),
                }
            }
            let (Some(name), Some(seq), Some(kind)) = (name, seq, kind) else {
                return Err(format!("Invalid AOF manifest file format at line {}", i + 1));
            };
            if name.contains('/') {
                return Err(format!("File name with a path in the manifest at line {}", i + 1));
            }
            let entry = FileEntry { name, seq };
            match kind {
                "b" => {
                    if m.base.is_some() {
                        return Err("Found duplicate base file information".into());
                    }
                    m.base = Some(entry);
                }
                "i" => {
                    if m.incrs.last().is_some_and(|last| last.seq >= entry.seq) {
                        return Err("Found a non-monotonic sequence number".into());
                    }
                    m.incrs.push(entry);
                }
                // History files are on their way out: nothing to load from them.
                "h" => {}
                _ => return Err(format!("Unknown AOF file type at line {}", i + 1)),
            }
        }
        Ok(m)
    }

    pub fn render(&self) -> String {
        let mut s = format!("{VERSION_PREFIX}{MANIFEST_VERSION}\n");
        if let Some(id) = &self.replid {
            s.push_str(&format!("{REPLID_PREFIX}{id}\n"));
        }
        if let Some(b) = &self.base {
            s.push_str(&format!("file {} seq {} type b\n", b.name, b.seq));
        }
        for f in &self.incrs {
            s.push_str(&format!("file {} seq {} type i\n", f.name, f.seq));
        }
        s
    }

    /// Writes the manifest atomically into `dir` as `name`.
    pub fn store(&self, dir: &Path, name: &str) -> std::io::Result<()> {
        let tmp = dir.join(format!("temp-{name}"));
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(self.render().as_bytes())?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, dir.join(name))?;
        sync_dir(dir)
    }
}

/// Makes a rename or a new file in `dir` durable.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_redis_syntax() {
        let m = Manifest {
            base: Some(FileEntry { name: "appendonly.aof.1.base.vsnap".into(), seq: 1 }),
            incrs: vec![
                FileEntry { name: "appendonly.aof.1.incr.aof".into(), seq: 1 },
                FileEntry { name: "appendonly.aof.2.incr.aof".into(), seq: 2 },
            ],
            replid: Some("a".repeat(40)),
        };
        assert_eq!(Manifest::parse(&m.render()), Ok(m));
        let redis = "file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n";
        assert_eq!(Manifest::parse(redis).map(|m| m.incrs.len()), Ok(1));
    }

    #[test]
    fn bad_manifests_are_refused() {
        assert!(Manifest::parse("file a seq 2 type i\nfile b seq 1 type i\n").is_err());
        assert!(Manifest::parse("garbage\n").is_err());
        assert!(Manifest::parse("file ../x seq 1 type i\n").is_err());
        assert!(Manifest::parse("# vermilion-manifest 99\n").is_err());
    }
}
