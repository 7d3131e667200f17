//! Comparing stream replies of the two servers where they may legitimately differ: idle times
//! and timestamps within [`TIME_TOLERANCE_MS`], and (for copies restored from the other
//! server's DUMP) XINFO STREAM's node counts. Shared by tests/streams.rs and
//! tests/streams_blocking.rs.

use super::diff::{Got, Resp};

/// How far apart the two servers' idle times and timestamps may be (both run on this machine,
/// and the pair sends every command to both before reading either reply).
pub const TIME_TOLERANCE_MS: i64 = 1000;

/// What an integer of a reply is, for [`loosen`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Compared exactly (part of the masked tree).
    Plain,
    /// A time: compared within [`TIME_TOLERANCE_MS`].
    Time,
    /// Not compared.
    Skip,
    /// A list of PEL entries: `[id, consumer, time, count]` (XPENDING, XINFO FULL's group
    /// `pending`) or `[id, time, count]` (XINFO FULL's consumer `pending`).
    Pel,
}

thread_local! {
    /// Set while comparing streams restored from the other server's DUMP: Vermilion cuts
    /// the entries into nodes again on RESTORE (tombstones gone) where Redis keeps the
    /// payload's listpacks, so the node counts (`radix-tree-keys`, `radix-tree-nodes`) may
    /// differ there (docs/COMPATIBILITY.md).
    pub static LAYOUT_LOOSE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The reply with its loose integers replaced by placeholders, and those integers in order
/// (`None` where a skipped value was). Map keys (at even positions of RESP2 flat maps and
/// RESP3 maps) decide: `idle` and `seen-time` are times, `radix-tree-nodes` is skipped,
/// `pending` holding an array is a PEL list. `top_pel` treats the whole reply as a PEL list
/// (XPENDING's extended form).
pub fn loosen(r: &Resp, top_pel: bool) -> (Resp, Vec<Option<i64>>) {
    fn walk(r: &Resp, role: Role, out: &mut Vec<Option<i64>>) -> Resp {
        match (role, r) {
            (Role::Time, Resp::Line(b':', _)) => {
                out.push(r.as_int());
                Resp::Line(b':', b"<time>".to_vec())
            }
            (Role::Skip, _) => {
                out.push(None);
                Resp::Line(b'+', b"<not compared>".to_vec())
            }
            (Role::Pel, Resp::Agg(t, items)) => {
                let items = items
                    .iter()
                    .map(|e| match e {
                        Resp::Agg(te, fields) if fields.len() == 4 || fields.len() == 3 => {
                            let time_at = if fields.len() == 4 { 2 } else { 1 };
                            let fields = fields
                                .iter()
                                .enumerate()
                                .map(|(i, f)| walk(f, if i == time_at { Role::Time } else { Role::Plain }, out))
                                .collect();
                            Resp::Agg(*te, fields)
                        }
                        other => walk(other, Role::Plain, out),
                    })
                    .collect();
                Resp::Agg(*t, items)
            }
            (_, Resp::Agg(t, items)) => {
                let mut next = Role::Plain;
                let mut done = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    done.push(walk(item, next, out));
                    next = Role::Plain;
                    if i % 2 == 0 {
                        next = match item.as_bytes() {
                            Some(b"idle") | Some(b"seen-time") => Role::Time,
                            Some(b"radix-tree-nodes") | Some(b"radix-tree-keys") if LAYOUT_LOOSE.with(|l| l.get()) => Role::Skip,
                            Some(b"pending") => Role::Pel,
                            _ => Role::Plain,
                        };
                    }
                }
                Resp::Agg(*t, done)
            }
            _ => r.clone(),
        }
    }
    let mut out = Vec::new();
    let masked = walk(r, if top_pel { Role::Pel } else { Role::Plain }, &mut out);
    (masked, out)
}

/// True if the two outcomes are equal once loosened (see [`loosen`]).
pub fn same_loosely(a: &Got, b: &Got, top_pel: bool) -> bool {
    match (a, b) {
        (Ok(a), Ok(b)) => {
            let (ma, ta) = loosen(&a.value, top_pel);
            let (mb, tb) = loosen(&b.value, top_pel);
            ma == mb
                && ta.len() == tb.len()
                && ta.iter().zip(&tb).all(|(x, y)| match (x, y) {
                    (Some(x), Some(y)) => (x - y).abs() <= TIME_TOLERANCE_MS,
                    (None, None) => true,
                    _ => false,
                })
        }
        (Err(x), Err(y)) => x == y,
        _ => false,
    }
}
