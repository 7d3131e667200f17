//! The stream type against a naive model: an `Arbitrary` sequence of appends (fields like or
//! unlike the node's master fields), deletions and trims (exact and approximate, by length
//! and by ID) with small node limits runs on `StreamValue` and on a `BTreeMap`, and every
//! range read (both directions, with counts) must agree; approximate trims may only remove
//! a prefix. Stream ID parsing takes arbitrary bytes and never panics; every ID it prints
//! parses back to itself.
#![no_main]

use std::collections::BTreeMap;

use bytes::Bytes;
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use vermilion::db::stream::{parse_id, NodeLimits, StreamId, StreamValue, Trim};

#[derive(Arbitrary, Debug)]
enum Op {
    Append { ms_step: u8, seq: u8, same: bool, value: u8 },
    Delete(u8),
    TrimLen { len: u8, approx: bool, limit: u8 },
    TrimId { at: u8, approx: bool },
    Range { from: u8, to: u8, rev: bool, count: u8 },
}

#[derive(Arbitrary, Debug)]
struct Input {
    max_entries: u8,
    max_bytes: u16,
    ops: Vec<Op>,
    id_text: Vec<u8>,
}

fuzz_target!(|input: Input| {
    let _ = parse_id(&input.id_text, 0, false, true);
    let limits = NodeLimits { max_bytes: input.max_bytes as u64, max_entries: (input.max_entries % 8) as u64 };
    let mut s = StreamValue::new();
    let mut model: BTreeMap<StreamId, Vec<(Bytes, Bytes)>> = BTreeMap::new();
    let mut last = StreamId::MIN;
    for op in input.ops.iter().take(300) {
        match *op {
            Op::Append { ms_step, seq, same, value } => {
                let id = StreamId::new(last.ms + ms_step as u64, if ms_step == 0 { last.seq + 1 + seq as u64 } else { seq as u64 });
                if id <= last {
                    continue;
                }
                let v = Bytes::from(format!("{value}"));
                let pairs =
                    if same { vec![Bytes::from_static(b"f"), v] } else { vec![Bytes::from(vec![b'g'; value as usize % 70]), v, Bytes::from_static(b"h"), Bytes::new()] };
                s.append(id, &pairs, limits);
                model.insert(id, pairs.chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect());
                last = id;
                assert_eq!(parse_id(id.to_string().as_bytes(), 0, true, false), Some((id, true)));
            }
            Op::Delete(i) => {
                let Some(id) = model.keys().nth(i as usize % (model.len() + 1)).copied() else { continue };
                assert!(s.delete(id));
                model.remove(&id);
                assert!(!s.delete(id));
            }
            Op::TrimLen { len, approx, limit } => {
                let removed = s.trim(Trim::MaxLen(len as u64), approx, limit as u64);
                let keep = s.len() as usize;
                assert!(keep >= (len as usize).min(model.len()) || removed == 0 || !approx);
                while model.len() > keep {
                    model.pop_first();
                }
                if !approx && limit == 0 {
                    assert!(model.len() <= len as usize);
                }
            }
            Op::TrimId { at, approx } => {
                let min = StreamId::new(at as u64, 0);
                s.trim(Trim::MinId(min), approx, 0);
                let keep = s.len() as usize;
                while model.len() > keep {
                    let first = model.pop_first();
                    assert!(first.is_some_and(|(id, _)| id < min));
                }
                if !approx {
                    assert!(model.keys().all(|id| *id >= min));
                }
            }
            Op::Range { from, to, rev, count } => {
                let (a, b) = (StreamId::new(from as u64, 0), StreamId::new(to as u64, u64::MAX));
                let got = s.range(a, b, rev, count as usize);
                let mut want: Vec<_> =
                    if a > b { Vec::new() } else { model.range(a..=b).map(|(k, v)| (*k, v.clone())).collect() };
                if rev {
                    want.reverse();
                }
                if count != 0 {
                    want.truncate(count as usize);
                }
                assert_eq!(got, want);
            }
        }
        assert_eq!(s.len() as usize, model.len());
    }
    assert_eq!(s.all(), model.into_iter().collect::<Vec<_>>());
});
