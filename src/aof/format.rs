//! The incremental log's bytes: RESP multibulk records exactly as Redis writes its AOF, plus
//! annotation lines Redis's loader and `redis-check-aof` skip (`#...\r\n`).
//!
//! Two annotations carry meaning here:
//! - `#MS:<ms>` gives the frozen time of the script record that follows it;
//! - `#C:<16 hex>` closes a segment (one executor flush): the CRC-64 of every byte since the
//!   previous checkpoint (or the start of the file). A flipped byte in a closed segment is
//!   caught; the segment after the last checkpoint is the tail, checked for framing only.
//!
//! No I/O: [`check`] validates bytes and says how much of them loads, [`replay`] hands the
//! records of a validated prefix to a callback.

use std::io::Write as _;

/// Appends one record (`*argc`, then `$len` + bytes per argument): the request encoding
/// the protocol module writes for clients, whose digits skip `fmt` (2.7% of the executor's
/// time under everysec with MULTI/EXEC when this wrote them with `write!`).
pub fn encode_command<A: AsRef<[u8]>>(out: &mut Vec<u8>, argv: &[A]) {
    crate::protocol::encode_request(argv, out);
}

/// Appends the frozen-time annotation of the record that follows.
pub fn encode_time(out: &mut Vec<u8>, ms: i64) {
    let _ = write!(out, "#MS:{ms}\r\n");
}

/// Closes the segment that started at `segment_start` in `out` with its checksum line.
pub fn encode_checkpoint(out: &mut Vec<u8>, segment_start: usize) {
    let crc = crc(&out[segment_start..]);
    let _ = write!(out, "#C:{crc:016x}\r\n");
}

pub fn crc(bytes: &[u8]) -> u64 {
    let mut d = crc64fast::Digest::new();
    d.write(bytes);
    d.sum64()
}

/// What is wrong with a log, if anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The bytes end inside a record, an annotation or a MULTI block: a torn tail.
    Truncated { offset: usize },
    /// Bytes that no writer produces (bad framing, checksum mismatch, unpaired MULTI/EXEC).
    Corrupt { offset: usize, reason: String },
}

/// The verdict on a log's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Bytes that load: whole records, and whole MULTI blocks only.
    pub valid_len: usize,
    pub problem: Option<Problem>,
    /// Records in the valid prefix (MULTI and EXEC count).
    pub records: usize,
    /// Where the last segment starts (the end of the last checkpoint line): bytes of the
    /// valid prefix past it are not covered by a checksum yet (see [`seal`]).
    pub tail_start: usize,
}

/// One record handed to [`replay`]'s callback.
pub struct Record<'a> {
    pub argv: Vec<&'a [u8]>,
    /// The `#MS:` annotation right before it, if any.
    pub time_ms: Option<i64>,
    /// Byte offset of the record in the file.
    pub offset: usize,
}

enum Step<'a> {
    Command(Vec<&'a [u8]>),
    Time(i64),
    Checkpoint(u64),
    /// Any other annotation (Redis's `#TS:`): skipped.
    Note,
}

enum StepError {
    Eof,
    Bad(usize, String),
}

/// Reads a decimal number ending in CRLF at `pos`; returns it and the position after the CRLF.
fn number(data: &[u8], mut pos: usize, what: char) -> Result<(i64, usize), StepError> {
    let start = pos;
    let mut neg = false;
    if data.get(pos) == Some(&b'-') {
        neg = true;
        pos += 1;
    }
    let mut v: i64 = 0;
    while let Some(&c) = data.get(pos) {
        if !c.is_ascii_digit() {
            break;
        }
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add((c - b'0') as i64))
            .ok_or_else(|| StepError::Bad(start, format!("Invalid {what} count")))?;
        pos += 1;
    }
    if pos == data.len() || (pos + 1 == data.len() && data[pos] == b'\r') {
        return Err(StepError::Eof);
    }
    if pos == start + neg as usize || data.get(pos..pos + 2) != Some(b"\r\n".as_slice()) {
        return Err(StepError::Bad(pos, format!("Expected a number followed by \\r\\n after '{what}'")));
    }
    Ok((if neg { -v } else { v }, pos + 2))
}

/// Parses one record or annotation at `pos`.
fn step(data: &[u8], pos: usize) -> Result<(Step<'_>, usize), StepError> {
    match data[pos] {
        b'#' => {
            let Some(nl) = data[pos..].iter().position(|&c| c == b'\n') else {
                return Err(StepError::Eof);
            };
            let end = pos + nl + 1;
            let line = &data[pos + 1..end - 1];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let parse = |rest: &[u8], radix: u32| {
                std::str::from_utf8(rest)
                    .ok()
                    .and_then(|s| i64::from_str_radix(s, radix).ok().or_else(|| u64::from_str_radix(s, radix).ok().map(|u| u as i64)))
            };
            if let Some(rest) = line.strip_prefix(b"MS:") {
                let ms = parse(rest, 10).ok_or_else(|| StepError::Bad(pos, "Invalid #MS annotation".into()))?;
                Ok((Step::Time(ms), end))
            } else if let Some(rest) = line.strip_prefix(b"C:") {
                if rest.len() != 16 {
                    return Err(StepError::Bad(pos, "Invalid checkpoint annotation".into()));
                }
                let crc = parse(rest, 16).ok_or_else(|| StepError::Bad(pos, "Invalid checkpoint annotation".into()))?;
                Ok((Step::Checkpoint(crc as u64), end))
            } else {
                Ok((Step::Note, end))
            }
        }
        b'*' => {
            let (argc, mut p) = number(data, pos + 1, '*')?;
            if argc < 1 {
                return Err(StepError::Bad(pos, "Invalid argument count".into()));
            }
            let mut argv = Vec::with_capacity((argc as usize).min(64));
            for _ in 0..argc {
                match data.get(p) {
                    None => return Err(StepError::Eof),
                    Some(b'$') => {}
                    Some(&c) => return Err(StepError::Bad(p, format!("Expected prefix '$', got: '{}'", c as char))),
                }
                let (len, q) = number(data, p + 1, '$')?;
                if len < 0 {
                    return Err(StepError::Bad(p, "Invalid bulk length".into()));
                }
                let len = len as usize;
                if data.len() - q < len.saturating_add(2) {
                    // The bytes end inside the argument (a huge length reads as a torn tail,
                    // as in Redis: nothing tells the two apart).
                    if data.len() - q >= len {
                        let tail = &data[q + len..];
                        if !b"\r\n".starts_with(tail) {
                            return Err(StepError::Bad(q + len, "Expected \\r\\n after an argument".into()));
                        }
                    }
                    return Err(StepError::Eof);
                }
                if &data[q + len..q + len + 2] != b"\r\n" {
                    return Err(StepError::Bad(q + len, "Expected \\r\\n after an argument".into()));
                }
                argv.push(&data[q..q + len]);
                p = q + len + 2;
            }
            Ok((Step::Command(argv), p))
        }
        c => Err(StepError::Bad(pos, format!("Expected prefix '*', got: '{}'", c as char))),
    }
}

/// Walks the log, calling `each` for every record of the valid prefix, in order. MULTI
/// blocks are held until their EXEC: a block the bytes cut off is never handed out.
fn walk<'a>(data: &'a [u8], mut each: impl FnMut(Record<'a>)) -> Verdict {
    let mut pos = 0;
    let mut valid_len = 0;
    let mut records = 0;
    let mut counted = 0;
    let mut segment_start = 0;
    let mut segment_records = 0;
    let mut time: Option<i64> = None;
    // Records of an open MULTI block, and the offset of its MULTI.
    let mut block: Option<(usize, Vec<Record<'a>>)> = None;
    let problem = loop {
        if pos == data.len() {
            // An open MULTI block, or an annotation with no record after it, is a torn tail.
            break match block {
                Some((multi_at, _)) => Some(Problem::Truncated { offset: multi_at }),
                None if valid_len < pos => Some(Problem::Truncated { offset: valid_len }),
                None => None,
            };
        }
        let (item, next) = match step(data, pos) {
            Ok(x) => x,
            Err(StepError::Eof) => break Some(Problem::Truncated { offset: pos }),
            Err(StepError::Bad(at, reason)) => break Some(Problem::Corrupt { offset: at, reason }),
        };
        match item {
            Step::Note => {}
            Step::Time(ms) => time = Some(ms),
            Step::Checkpoint(expected) => {
                if crc(&data[segment_start..pos]) != expected {
                    if valid_len > segment_start {
                        valid_len = segment_start;
                        records = segment_records;
                    }
                    break Some(Problem::Corrupt {
                        offset: segment_start,
                        reason: "Checksum mismatch in the segment starting here".into(),
                    });
                }
                segment_start = next;
                if block.is_none() {
                    valid_len = next;
                }
                segment_records = records;
            }
            Step::Command(argv) => {
                let rec = Record { argv, time_ms: time.take(), offset: pos };
                counted += 1;
                let multi = crate::util::eq_ignore_case(rec.argv[0], "multi");
                let exec = crate::util::eq_ignore_case(rec.argv[0], "exec");
                match block.as_mut() {
                    Some(_) if multi => break Some(Problem::Corrupt { offset: pos, reason: "Unexpected MULTI".into() }),
                    Some((_, held)) => {
                        held.push(rec);
                        if exec {
                            for r in block.take().map(|b| b.1).unwrap_or_default() {
                                each(r);
                            }
                            valid_len = next;
                            records = counted;
                        }
                    }
                    None if exec => break Some(Problem::Corrupt { offset: pos, reason: "Unexpected EXEC".into() }),
                    None if multi => block = Some((pos, vec![rec])),
                    None => {
                        each(rec);
                        valid_len = next;
                        records = counted;
                    }
                }
            }
        }
        pos = next;
    };
    // A corruption inside a MULTI block cuts back to before its MULTI.
    let valid_len = match (&problem, &block) {
        (Some(_), Some((multi_at, _))) => valid_len.min(*multi_at),
        _ => valid_len,
    };
    Verdict { valid_len, problem, records, tail_start: segment_start }
}

/// The checkpoint line that closes the unsealed tail of a log cut at `valid_len`, if it has
/// one: appended after a truncation (or to a file written without checkpoints) so that the
/// next segment's checksum starts where the writer's will.
pub fn seal(data: &[u8], verdict: &Verdict) -> Option<Vec<u8>> {
    let valid = &data[..verdict.valid_len];
    let tail_start = if verdict.tail_start <= verdict.valid_len { verdict.tail_start } else { check(valid).tail_start };
    if tail_start >= valid.len() {
        return None;
    }
    let mut line = Vec::with_capacity(24);
    let crc = crc(&valid[tail_start..]);
    let _ = write!(line, "#C:{crc:016x}\r\n");
    Some(line)
}

/// Validates a log: how much of it loads, and what is wrong with the rest.
///
/// Zero bytes at the very end are not part of the log: under `appendfsync always` the writer
/// fills the file with zeros ahead of its records (see `file.rs`), and a crash leaves them.
/// No whole record or annotation ends with a zero byte (each ends with CRLF), so the log
/// is what comes before them: a whole log ends cleanly there, a record the crash cut inside
/// the zeroed space is a torn tail as it would be at the end of the file.
pub fn check(data: &[u8]) -> Verdict {
    walk(&data[..logical_len(data)], |_| {})
}

/// The length of `data` without its trailing zero bytes (the preallocated space).
pub fn logical_len(data: &[u8]) -> usize {
    data.len() - data.iter().rev().take_while(|&&b| b == 0).count()
}

/// Hands every record of the valid prefix to `each`, in order, and returns the verdict.
/// Nothing past the valid prefix is handed out (a closed segment whose checksum fails is
/// not applied even in part): the bytes are checked first.
pub fn replay<'a>(data: &'a [u8], each: impl FnMut(Record<'a>)) -> Verdict {
    let verdict = check(data);
    walk(&data[..verdict.valid_len], each);
    verdict
}

/// Hands out the records of bytes [`check`] already found whole (`data[..valid_len]`).
pub fn replay_checked<'a>(data: &'a [u8], each: impl FnMut(Record<'a>)) {
    walk(data, each);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(cmds: &[&[&str]]) -> Vec<u8> {
        let mut out = Vec::new();
        for c in cmds {
            encode_command(&mut out, c);
        }
        let start = 0;
        encode_checkpoint(&mut out, start);
        out
    }

    fn names(data: &[u8]) -> (Vec<String>, Verdict) {
        let mut got = Vec::new();
        let v = replay(data, |r| got.push(r.argv.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect::<Vec<_>>().join(" ")));
        (got, v)
    }

    #[test]
    fn records_are_redis_multibulk() {
        let mut out = Vec::new();
        let long = "v".repeat(1234);
        encode_command(&mut out, &["SET", "key:10", long.as_str()]);
        assert_eq!(out, format!("*3\r\n$3\r\nSET\r\n$6\r\nkey:10\r\n$1234\r\n{long}\r\n").into_bytes());
    }

    #[test]
    fn whole_log_loads() {
        let data = log(&[&["SET", "a", "1"], &["MULTI"], &["INCR", "a"], &["EXEC"]]);
        let (got, v) = names(&data);
        assert_eq!(got, ["SET a 1", "MULTI", "INCR a", "EXEC"]);
        assert_eq!(v, Verdict { valid_len: data.len(), problem: None, records: 4, tail_start: data.len() });
    }

    #[test]
    fn every_cut_loads_a_prefix_of_whole_records_and_blocks() {
        let mut data = Vec::new();
        encode_command(&mut data, &["SET", "a", "1"]);
        let after_set = data.len();
        encode_command(&mut data, &["MULTI"]);
        encode_command(&mut data, &["INCR", "a"]);
        encode_command(&mut data, &["EXEC"]);
        let after_exec = data.len();
        encode_time(&mut data, 17);
        encode_command(&mut data, &["EVAL", "return 1", "0"]);
        let after_eval = data.len();
        for cut in 0..data.len() {
            let (got, v) = names(&data[..cut]);
            let expect: &[&str] = if cut < after_set {
                &[]
            } else if cut < after_exec {
                &["SET a 1"]
            } else if cut < after_eval {
                &["SET a 1", "MULTI", "INCR a", "EXEC"]
            } else {
                unreachable!()
            };
            assert_eq!(got, expect, "cut at {cut}");
            assert!(matches!(v.problem, Some(Problem::Truncated { .. }) | None), "cut at {cut}: {v:?}");
        }
    }

    #[test]
    fn a_flipped_byte_in_a_closed_segment_is_caught() {
        let mut data = log(&[&["SET", "a", "hello"]]);
        let seg2 = data.len();
        encode_command(&mut data, &["SET", "b", "world"]);
        encode_checkpoint(&mut data, seg2);
        data[seg2 + 25] ^= 1; // inside "world"
        let v = check(&data);
        assert_eq!(v.valid_len, seg2);
        assert!(matches!(v.problem, Some(Problem::Corrupt { offset, .. }) if offset == seg2), "{v:?}");
    }

    #[test]
    fn a_cut_log_sealed_then_appended_to_checks_whole() {
        let mut data = log(&[&["SET", "a", "1"]]);
        let seg = data.len();
        encode_command(&mut data, &["SET", "b", "2"]);
        encode_command(&mut data, &["SET", "c", "3"]);
        encode_checkpoint(&mut data, seg);
        // Torn inside the checkpoint: two whole records stay, unsealed.
        let mut cut = data[..data.len() - 5].to_vec();
        let v = check(&cut);
        assert_eq!(v.records, 3);
        cut.truncate(v.valid_len);
        cut.extend(seal(&data, &v).expect("an unsealed tail"));
        let next = cut.len();
        encode_command(&mut cut, &["SET", "d", "4"]);
        encode_checkpoint(&mut cut, next);
        assert_eq!(check(&cut), Verdict { valid_len: cut.len(), problem: None, records: 4, tail_start: cut.len() });
        assert_eq!(seal(&cut, &check(&cut)), None);
    }

    #[test]
    fn garbage_is_corruption_not_truncation() {
        let mut data = log(&[&["SET", "a", "1"]]);
        let good = data.len();
        data.extend_from_slice(b"xyz");
        let v = check(&data);
        assert_eq!(v.valid_len, good);
        assert!(matches!(v.problem, Some(Problem::Corrupt { offset, .. }) if offset == good));
    }

    #[test]
    fn preallocated_zeros_after_the_log_are_not_part_of_it() {
        let mut data = log(&[&["SET", "a", "1"]]);
        let seg = data.len();
        // An argument ending in zero bytes: a cut inside it still loads as the cut would.
        encode_command(&mut data, &["SET", "b", "x\0\0"]);
        encode_checkpoint(&mut data, seg);
        for cut in 0..=data.len() {
            let mut zeroed = data[..cut].to_vec();
            zeroed.resize(cut + 4096, 0);
            assert_eq!(names(&zeroed), names(&data[..cut]), "cut at {cut}");
        }
        // Zeros before records are not a tail: corruption, as any stray bytes.
        let mut inside = data.clone();
        inside.splice(seg..seg, [0u8; 8]);
        let v = check(&inside);
        assert_eq!(v.valid_len, seg);
        assert!(matches!(v.problem, Some(Problem::Corrupt { offset, .. }) if offset == seg), "{v:?}");
        assert_eq!(logical_len(&[0, 0]), 0);
        assert_eq!(logical_len(b"\r\n\0"), 2);
    }

    #[test]
    fn unpaired_exec_and_nested_multi_are_corrupt() {
        assert!(matches!(check(&log(&[&["EXEC"]])).problem, Some(Problem::Corrupt { .. })));
        let v = check(&log(&[&["SET", "a", "1"], &["MULTI"], &["MULTI"]]));
        assert!(matches!(v.problem, Some(Problem::Corrupt { .. })));
        assert_eq!(v.records, 1);
    }

    #[test]
    fn a_number_cut_after_a_stray_byte_is_corruption_not_a_panic() {
        // Found by the aof_log fuzz target: "*1x" at the very end.
        assert!(matches!(check(b"*1x").problem, Some(Problem::Corrupt { .. })));
        assert!(matches!(check(b"*1\r").problem, Some(Problem::Truncated { .. })));
        assert!(matches!(check(b"*1\r\n$3x").problem, Some(Problem::Corrupt { .. })));
    }

    #[test]
    fn time_annotation_reaches_its_record() {
        let mut data = Vec::new();
        encode_time(&mut data, 1234);
        encode_command(&mut data, &["EVAL", "return 1", "0"]);
        let mut times = Vec::new();
        replay(&data, |r| times.push(r.time_ms));
        assert_eq!(times, [Some(1234)]);
    }
}
