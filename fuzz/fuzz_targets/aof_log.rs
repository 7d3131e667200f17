//! The incremental-log loader on arbitrary bytes. Raw mode (even first byte): `check` and
//! `replay` never panic, the valid prefix is itself a clean log with the same records, and
//! the records re-encode to a clean log. Structured mode (odd first byte): the rest builds a
//! valid log (commands, MULTI blocks, time annotations, checkpoints) which is then cut at an
//! arbitrary byte: what loads is a prefix of the written records, ending on a whole block.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vermilion::aof::format::{self, Problem};

fn records(data: &[u8]) -> (Vec<(Option<i64>, Vec<Vec<u8>>)>, format::Verdict) {
    let mut out = Vec::new();
    let v = format::replay(data, |r| out.push((r.time_ms, r.argv.iter().map(|a| a.to_vec()).collect())));
    (out, v)
}

fn raw(data: &[u8]) {
    let (recs, v) = records(data);
    assert!(v.valid_len <= data.len());
    assert_eq!(v.records, recs.len());
    let (again, clean) = records(&data[..v.valid_len]);
    assert_eq!(clean.problem, None, "the valid prefix is a clean log");
    assert_eq!(again, recs);
    let mut log = Vec::new();
    for (time, argv) in &recs {
        if let Some(ms) = time {
            format::encode_time(&mut log, *ms);
        }
        format::encode_command(&mut log, argv);
    }
    format::encode_checkpoint(&mut log, 0);
    let (back, v) = records(&log);
    assert_eq!(v.problem, None);
    assert_eq!(back, recs);
}

fn structured(data: &[u8]) {
    if data.len() < 3 {
        return;
    }
    let cut_hint = u16::from_le_bytes([data[0], data[1]]) as usize;
    let mut log = Vec::new();
    let mut written: Vec<Vec<Vec<u8>>> = Vec::new();
    // Record count after each whole unit (a command or a whole MULTI block).
    let mut unit_ends = vec![0usize];
    let mut segment = 0;
    for (i, chunk) in data[2..].split(|&b| b == 0xff).enumerate() {
        let argv: Vec<Vec<u8>> = chunk.split(|&b| b == 0xfe).map(|a| a.to_vec()).filter(|a| !a.is_empty()).collect();
        if argv.is_empty() || argv[0].eq_ignore_ascii_case(b"multi") || argv[0].eq_ignore_ascii_case(b"exec") {
            continue;
        }
        if i % 3 == 2 {
            format::encode_command(&mut log, &[b"MULTI".as_slice()]);
            format::encode_command(&mut log, &argv);
            format::encode_command(&mut log, &argv);
            format::encode_command(&mut log, &[b"EXEC".as_slice()]);
            written.extend([vec![b"MULTI".to_vec()], argv.clone(), argv, vec![b"EXEC".to_vec()]]);
        } else {
            if i % 2 == 1 {
                format::encode_time(&mut log, i as i64);
            }
            format::encode_command(&mut log, &argv);
            written.push(argv);
        }
        unit_ends.push(written.len());
        if i % 4 == 3 {
            format::encode_checkpoint(&mut log, segment);
            segment = log.len();
        }
    }
    let (full, v) = records(&log);
    assert_eq!(v.problem, None);
    assert_eq!(full.len(), written.len());
    let cut = cut_hint % (log.len() + 1);
    let (got, v) = records(&log[..cut]);
    assert!(matches!(v.problem, None | Some(Problem::Truncated { .. })), "a cut is never corruption: {:?}", v.problem);
    assert!(unit_ends.contains(&got.len()), "only whole blocks load");
    for (g, w) in got.iter().zip(written.iter()) {
        assert_eq!(&g.1, w);
    }
}

fuzz_target!(|data: &[u8]| {
    match data.first() {
        Some(b) if b & 1 == 1 => structured(&data[1..]),
        _ => raw(data),
    }
});
