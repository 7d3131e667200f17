//! `vermilion-check-aof [--fix] [--yes] <dir-or-file>`: checks an AOF directory (manifest,
//! base snapshot, incremental logs) or one file, reports the first bad offset of each file
//! and why, and with `--fix` cuts the bad tail of the last incremental log after
//! confirmation (`--yes` skips it), keeping a backup copy.
//!
//! Exit status: 0 when everything loads (or was fixed), 1 otherwise.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use vermilion::aof::format::{self, Problem};
use vermilion::aof::manifest::Manifest;
use vermilion::aof::snapshot;

struct Options {
    fix: bool,
    yes: bool,
    target: PathBuf,
}

fn usage() -> ExitCode {
    eprintln!("Usage: vermilion-check-aof [--fix] [--yes] <dir-or-file>");
    ExitCode::from(1)
}

fn parse_args() -> Option<Options> {
    let mut fix = false;
    let mut yes = false;
    let mut target = None;
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "--fix" => fix = true,
            "--yes" | "-y" => yes = true,
            _ if a.starts_with("--") => return None,
            _ if target.is_none() => target = Some(PathBuf::from(a)),
            _ => return None,
        }
    }
    Some(Options { fix, yes, target: target? })
}

/// One file's verdict: the bytes that load and what is wrong past them.
struct FileReport {
    size: u64,
    valid_len: u64,
    problem: Option<String>,
    /// The checkpoint to append after cutting (an incremental log's unsealed tail).
    seal: Option<Vec<u8>>,
}

fn check_snapshot(path: &Path) -> Result<FileReport, String> {
    let data = std::fs::read(path).map_err(|e| format!("Cannot open file {}: {e}", path.display()))?;
    let size = data.len() as u64;
    Ok(match snapshot::validate(&data) {
        Ok(loaded) => {
            println!(
                "{}: base snapshot, {} keys, {} scripts, {} function libraries, log offset {}",
                path.display(),
                loaded.keys,
                loaded.scripting.scripts.len(),
                loaded.scripting.libraries.len(),
                loaded.log_offset
            );
            FileReport { size, valid_len: size, problem: None, seal: None }
        }
        Err(e) => FileReport {
            size,
            valid_len: 0,
            problem: Some(format!("0x{:>16x}: bad base snapshot at offset {}: {}", e.offset, e.offset, e.reason)),
            seal: None,
        },
    })
}

fn check_log(path: &Path) -> Result<FileReport, String> {
    let data = std::fs::read(path).map_err(|e| format!("Cannot open file {}: {e}", path.display()))?;
    let size = data.len() as u64;
    let v = format::check(&data);
    let problem = v.problem.clone().map(|p| match p {
        Problem::Truncated { offset } => {
            format!("0x{offset:>16x}: the file ends inside a record or a MULTI block (torn tail) at offset {offset}")
        }
        Problem::Corrupt { offset, reason } => format!("0x{offset:>16x}: {reason} at offset {offset}"),
    });
    println!(
        "AOF analyzed: filename={}, size={size}, records={}, ok_up_to={}, diff={}",
        path.display(),
        v.records,
        v.valid_len,
        size - v.valid_len as u64
    );
    let zeros = data.len() - format::logical_len(&data);
    if zeros > 0 {
        println!("{zeros} bytes of preallocated zeros follow the log (appendfsync always): not part of it");
    }
    let seal = format::seal(&data, &v);
    Ok(FileReport { size, valid_len: v.valid_len as u64, problem, seal })
}

fn is_snapshot(path: &Path) -> bool {
    let mut magic = [0u8; 8];
    std::fs::File::open(path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic)).is_ok() && &magic == snapshot::MAGIC
}

fn confirm(prompt: &str) -> bool {
    print!("{prompt}");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    line.trim_start().starts_with(['y', 'Y'])
}

/// Cuts `path` back to `len` (sealing what remains with a checkpoint) after saving a backup
/// copy next to it.
fn truncate_with_backup(path: &Path, len: u64, seal: Option<&[u8]>) -> Result<(), String> {
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let backup = PathBuf::from(format!("{}.bak-{stamp}", path.display()));
    std::fs::copy(path, &backup).map_err(|e| format!("Cannot write the backup {}: {e}", backup.display()))?;
    vermilion::aof::file::cut_and_seal(path, len, seal).map_err(|e| format!("Failed to truncate AOF {}: {e}", path.display()))?;
    println!("Backup of the original file: {}", backup.display());
    Ok(())
}

/// The files to check, in load order; the last one is the only one `--fix` may cut.
fn files_of(target: &Path) -> Result<Vec<PathBuf>, String> {
    let manifest_path = if target.is_dir() {
        let found = std::fs::read_dir(target)
            .map_err(|e| format!("Cannot read {}: {e}", target.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| {
                p.extension().is_some_and(|x| x == "manifest") && !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("temp-"))
            });
        Some(found.ok_or_else(|| format!("No manifest in {}", target.display()))?)
    } else if target.extension().is_some_and(|x| x == "manifest") {
        Some(target.to_path_buf())
    } else {
        None
    };
    let Some(mp) = manifest_path else { return Ok(vec![target.to_path_buf()]) };
    let dir = mp.parent().unwrap_or(Path::new(".")).to_path_buf();
    let text = std::fs::read_to_string(&mp).map_err(|e| format!("Cannot read {}: {e}", mp.display()))?;
    let m = Manifest::parse(&text).map_err(|e| format!("{e} in {}", mp.display()))?;
    println!("Checking the AOF directory {} (manifest {})", dir.display(), mp.display());
    Ok(m.base.iter().chain(m.incrs.iter()).map(|f| dir.join(&f.name)).collect())
}

fn run(opts: &Options) -> Result<bool, String> {
    let files = files_of(&opts.target)?;
    let mut all_ok = true;
    for (i, path) in files.iter().enumerate() {
        let last = i + 1 == files.len();
        let snap = is_snapshot(path);
        let report = if snap { check_snapshot(path)? } else { check_log(path)? };
        let Some(problem) = report.problem else {
            println!("{} is valid", path.display());
            continue;
        };
        println!("{problem}");
        if !opts.fix {
            println!("AOF {} is not valid. Use the --fix option to try fixing it.", path.display());
            all_ok = false;
            continue;
        }
        if snap {
            println!("The base snapshot {} cannot be fixed: restore it from a backup.", path.display());
            all_ok = false;
            continue;
        }
        if !last {
            println!("Failed to truncate AOF {} because it is not the last file", path.display());
            all_ok = false;
            continue;
        }
        println!(
            "This will shrink the AOF {} from {} bytes, with {} bytes, to {} bytes",
            path.display(),
            report.size,
            report.size - report.valid_len,
            report.valid_len
        );
        if !opts.yes && !confirm("Continue? [y/N]: ") {
            println!("Aborting...");
            return Ok(false);
        }
        truncate_with_backup(path, report.valid_len, report.seal.as_deref())?;
        println!("Successfully truncated AOF {}", path.display());
    }
    Ok(all_ok)
}

fn main() -> ExitCode {
    let Some(opts) = parse_args() else { return usage() };
    match run(&opts) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(1)
        }
    }
}
