//! SORT and SORT_RO with redis-server 7.0's semantics (`sortCommandGeneric`): lists, sets and
//! sorted sets; numeric or ALPHA order; BY patterns (`*` substitution, `->field` of hashes,
//! no `*` = no sorting); GET patterns (`#` is the element); LIMIT; STORE into a list.
//!
//! Order details that make replies byte-identical to Redis:
//! - numeric ties are broken by comparing the elements as binary strings;
//! - ALPHA compares C strings (`strcoll` in the C/C.UTF-8 locale: bytes up to the first NUL),
//!   except with STORE, where the comparison is binary over the whole string;
//! - a full sort is stable (glibc's `qsort` is a merge sort), while BY with a LIMIT that does
//!   not cover everything uses Redis's partial quicksort (`pqsort`), ported here, so elements
//!   comparing equal come out in the same order as in Redis;
//! - a sorted set being sorted is converted to the skiplist encoding (as Redis does, even for
//!   SORT_RO and on errors);
//! - a set sorted `BY nosort` with STORE is sorted ALPHA instead (replication safety).

use std::cmp::Ordering;

use bytes::Bytes;

use super::{arg_i64, CmdError, Ctx};
use crate::db::list::ListValue;
use crate::db::Value;
use crate::notify;
use crate::protocol::Reply;
use crate::util::{cstr, opt_is};

extern "C" {
    fn strtod(s: *const std::os::raw::c_char, end: *mut *mut std::os::raw::c_char) -> f64;
    fn __errno_location() -> *mut std::os::raw::c_int;
}

const ERANGE: std::os::raw::c_int = 34;

/// SORT's conversion of a value to a score: `strtod` over the C string, which must be
/// consumed up to its NUL, without ERANGE (overflow or underflow) and not NaN.
fn sort_score(v: &[u8]) -> Option<f64> {
    let mut buf = cstr(v).to_vec();
    buf.push(0);
    let mut end: *mut std::os::raw::c_char = std::ptr::null_mut();
    // SAFETY: errno is thread-local; `buf` is NUL-terminated and strtod stops at the NUL,
    // setting `end` within `buf`.
    let (value, erange, used) = unsafe {
        *__errno_location() = 0;
        let value = strtod(buf.as_ptr() as *const _, &mut end);
        let erange = *__errno_location() == ERANGE;
        (value, erange, end.offset_from(buf.as_ptr() as *const std::os::raw::c_char) as usize)
    };
    (used == buf.len() - 1 && !erange && !value.is_nan()).then_some(value)
}

/// One element to sort (`redisSortObject`).
struct Item {
    obj: Bytes,
    score: f64,
    cmp: Option<Bytes>,
}

/// The comparison flags of `sortCompare`.
#[derive(Clone, Copy)]
struct Order {
    desc: bool,
    alpha: bool,
    bypattern: bool,
    store: bool,
}

impl Order {
    fn compare(&self, a: &Item, b: &Item) -> Ordering {
        let strings = |x: &[u8], y: &[u8]| if self.store { x.cmp(y) } else { cstr(x).cmp(cstr(y)) };
        let c = if !self.alpha {
            if a.score > b.score {
                Ordering::Greater
            } else if a.score < b.score {
                Ordering::Less
            } else {
                a.obj.cmp(&b.obj)
            }
        } else if self.bypattern {
            match (&a.cmp, &b.cmp) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) => Ordering::Less,
                (Some(_), None) => Ordering::Greater,
                (Some(x), Some(y)) => strings(x, y),
            }
        } else {
            strings(&a.obj, &b.obj)
        };
        if self.desc {
            c.reverse()
        } else {
            c
        }
    }
}

/// Redis's `pqsort` (Bentley & McIlroy's quicksort that only recurses into partitions
/// overlapping `lrange..=rrange`), over element indices instead of bytes.
fn pqsort<T>(v: &mut [T], lrange: i64, rrange: i64, cmp: &impl Fn(&T, &T) -> Ordering) {
    fn insertion<T>(v: &mut [T], a: usize, n: usize, cmp: &impl Fn(&T, &T) -> Ordering) {
        for pm in a + 1..a + n {
            let mut pl = pm;
            while pl > a && cmp(&v[pl - 1], &v[pl]).is_gt() {
                v.swap(pl, pl - 1);
                pl -= 1;
            }
        }
    }
    fn med3<T>(v: &[T], a: usize, b: usize, c: usize, cmp: &impl Fn(&T, &T) -> Ordering) -> usize {
        if cmp(&v[a], &v[b]).is_lt() {
            if cmp(&v[b], &v[c]).is_lt() {
                b
            } else if cmp(&v[a], &v[c]).is_lt() {
                c
            } else {
                a
            }
        } else if cmp(&v[b], &v[c]).is_gt() {
            b
        } else if cmp(&v[a], &v[c]).is_lt() {
            a
        } else {
            c
        }
    }
    fn vecswap<T>(v: &mut [T], a: usize, b: usize, n: usize) {
        for i in 0..n {
            v.swap(a + i, b + i);
        }
    }
    fn outside(a: usize, r: usize, lrange: i64, rrange: i64) -> bool {
        let (l, h) = (a as i64, (a + r) as i64 - 1);
        (lrange < l && rrange < l) || (lrange > h && rrange > h)
    }
    fn run<T>(v: &mut [T], mut a: usize, mut n: usize, lrange: i64, rrange: i64, cmp: &impl Fn(&T, &T) -> Ordering) {
        loop {
            if n < 7 {
                insertion(v, a, n, cmp);
                return;
            }
            let mut pm = a + n / 2;
            if n > 7 {
                let mut pl = a;
                let mut pn = a + n - 1;
                if n > 40 {
                    let d = n / 8;
                    pl = med3(v, pl, pl + d, pl + 2 * d, cmp);
                    pm = med3(v, pm - d, pm, pm + d, cmp);
                    pn = med3(v, pn - 2 * d, pn - d, pn, cmp);
                }
                pm = med3(v, pl, pm, pn, cmp);
            }
            v.swap(a, pm);
            let (mut pa, mut pb) = (a + 1, a + 1);
            // `pc` may step below `a + 1` (to `a`) when everything is greater than the pivot.
            let (mut pc, mut pd) = (a + n - 1, a + n - 1);
            let mut swapped = false;
            loop {
                while pb <= pc {
                    let c = cmp(&v[pb], &v[a]);
                    if c.is_gt() {
                        break;
                    }
                    if c.is_eq() {
                        swapped = true;
                        v.swap(pa, pb);
                        pa += 1;
                    }
                    pb += 1;
                }
                while pb <= pc {
                    let c = cmp(&v[pc], &v[a]);
                    if c.is_lt() {
                        break;
                    }
                    if c.is_eq() {
                        swapped = true;
                        v.swap(pc, pd);
                        pd -= 1;
                    }
                    pc -= 1;
                }
                if pb > pc {
                    break;
                }
                v.swap(pb, pc);
                swapped = true;
                pb += 1;
                pc -= 1;
            }
            if !swapped {
                insertion(v, a, n, cmp);
                return;
            }
            let pn = a + n;
            let r = (pa - a).min(pb - pa);
            vecswap(v, a, pb - r, r);
            let r = (pd - pc).min(pn - pd - 1);
            vecswap(v, pb, pn - r, r);
            let r = pb - pa;
            if r > 1 && !outside(a, r, lrange, rrange) {
                run(v, a, r, lrange, rrange, cmp);
            }
            let r = pd - pc;
            if r > 1 {
                a = pn - r;
                n = r;
                if !outside(a, r, lrange, rrange) {
                    continue;
                }
            }
            return;
        }
    }
    let n = v.len();
    run(v, 0, n, lrange, rrange, cmp);
}

/// Redis's `lookupKeyByPattern`: `#` is the element itself; otherwise the first `*` of the
/// pattern is replaced by the element, and a `->field` after it reads a hash field instead
/// of a string. `None` when the key is missing or of another type, or there is no `*`.
fn lookup_by_pattern(ctx: &mut Ctx<'_>, pattern: &[u8], subst: &Bytes) -> Option<Bytes> {
    if pattern.first() == Some(&b'#') && pattern.get(1).is_none_or(|&b| b == 0) {
        return Some(subst.clone());
    }
    let cpat = cstr(pattern);
    let star = cpat.iter().position(|&b| b == b'*')?;
    let after = &cpat[star + 1..];
    let field = after.windows(2).position(|w| w == b"->").filter(|&i| i + 2 < after.len()).map(|i| &pattern[star + 1 + i + 2..]);
    let postfix_len = pattern.len() - (star + 1) - field.map_or(0, |f| f.len() + 2);
    let mut key = Vec::with_capacity(star + subst.len() + postfix_len);
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(subst);
    key.extend_from_slice(&pattern[star + 1..star + 1 + postfix_len]);
    let (db, now) = (ctx.db(), ctx.now_ms);
    let entry = ctx.ks.get(db, &key, now)?;
    match (&entry.value, field) {
        (Value::Str(s), None) => Some(Bytes::copy_from_slice(s.bytes())),
        (Value::Hash(h), Some(f)) => h.get(f).map(Bytes::copy_from_slice),
        _ => None,
    }
}

/// Which type is being sorted.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    List,
    Set,
    ZSet,
}

/// Redis's `sortCommandGeneric`.
fn sort_generic(ctx: &mut Ctx<'_>, args: &[Bytes], readonly: bool) -> Result<Reply, CmdError> {
    let (mut desc, mut alpha, mut dontsort) = (false, false, false);
    let (mut limit_start, mut limit_count) = (0i64, -1i64);
    let mut sortby: Option<&Bytes> = None;
    let mut storekey: Option<&Bytes> = None;
    let mut gets: Vec<&Bytes> = Vec::new();
    let mut j = 2;
    while j < args.len() {
        let left = args.len() - j - 1;
        let a = &args[j];
        if opt_is(a, "asc") {
            desc = false;
        } else if opt_is(a, "desc") {
            desc = true;
        } else if opt_is(a, "alpha") {
            alpha = true;
        } else if opt_is(a, "limit") && left >= 2 {
            limit_start = arg_i64(&args[j + 1])?;
            limit_count = arg_i64(&args[j + 2])?;
            j += 2;
        } else if !readonly && opt_is(a, "store") && left >= 1 {
            storekey = Some(&args[j + 1]);
            j += 1;
        } else if opt_is(a, "by") && left >= 1 {
            sortby = Some(&args[j + 1]);
            // No `*` in the pattern: nothing to sort by.
            if !cstr(&args[j + 1]).contains(&b'*') {
                dontsort = true;
            }
            j += 1;
        } else if opt_is(a, "get") && left >= 1 {
            gets.push(&args[j + 1]);
            j += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }

    // Collect what is needed from the value, converting a sorted set to a skiplist.
    let (db, now) = (ctx.db(), ctx.now_ms);
    let kind = match ctx.ks.get(db, &args[1], now).map(|e| &e.value) {
        None => None,
        Some(Value::List(_)) => Some(Kind::List),
        Some(Value::Set(_)) => Some(Kind::Set),
        Some(Value::ZSet(_)) => Some(Kind::ZSet),
        Some(_) => return Err(CmdError::WrongType),
    };
    if kind == Some(Kind::ZSet) {
        to_skiplist(ctx, &args[1]);
    }
    // A set has no order of its own: sorted for the log's sake when stored or seen by a script.
    if dontsort && kind == Some(Kind::Set) && (storekey.is_some() || ctx.client.in_script) {
        dontsort = false;
        alpha = true;
        sortby = None;
    }
    let len = match ctx.ks.db(db).peek(&args[1]).map(|e| &e.value) {
        Some(Value::List(l)) => l.len(),
        Some(Value::Set(s)) => s.len(),
        Some(Value::ZSet(z)) => z.len(),
        _ => 0,
    } as i64;

    let mut start = limit_start.max(0);
    let mut end = if limit_count < 0 { len - 1 } else { start.saturating_add(limit_count - 1) };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    if end >= len {
        end = len - 1;
    }

    // Load the vector. Lists and sorted sets not sorted load just the range, in order.
    let direct = dontsort && matches!(kind, Some(Kind::List | Kind::ZSet));
    let elements: Vec<Bytes> = {
        let value = ctx.ks.db(db).peek(&args[1]).map(|e| &e.value);
        let s = start.max(0) as usize;
        let n = if end >= start { (end - start + 1) as usize } else { 0 };
        match value {
            Some(Value::List(l)) if direct => {
                if n == 0 {
                    Vec::new()
                } else if desc {
                    let total = l.len();
                    l.range(total - s - n, total - s - 1).rev().map(Bytes::copy_from_slice).collect()
                } else {
                    l.range(s, s + n - 1).map(Bytes::copy_from_slice).collect()
                }
            }
            Some(Value::ZSet(z)) if direct => {
                let mut out = Vec::with_capacity(n);
                let total = z.len();
                let mut cur = if n == 0 {
                    None
                } else if desc {
                    z.at_rank(total - 1 - s)
                } else {
                    z.at_rank(s)
                };
                while let Some(id) = cur.filter(|_| out.len() < n) {
                    out.push(Bytes::copy_from_slice(z.get(id).0));
                    cur = if desc { z.prev(id) } else { z.next(id) };
                }
                out
            }
            Some(Value::List(l)) => l.iter().map(Bytes::copy_from_slice).collect(),
            Some(Value::Set(set)) => set.iter().map(|m| m.to_bytes()).collect(),
            Some(Value::ZSet(z)) => (0..z.len()).filter_map(|i| z.entry_at(i)).map(|(m, _)| Bytes::copy_from_slice(m)).collect(),
            _ => Vec::new(),
        }
    };
    if direct {
        end -= start;
        start = 0;
    }
    let mut vector: Vec<Item> = elements.into_iter().map(|obj| Item { obj, score: 0.0, cmp: None }).collect();

    let mut conversion_error = false;
    if !dontsort {
        for item in vector.iter_mut() {
            let byval = match sortby {
                Some(p) => match lookup_by_pattern(ctx, p, &item.obj) {
                    Some(v) => v,
                    None => continue,
                },
                None => item.obj.clone(),
            };
            if alpha {
                if sortby.is_some() {
                    item.cmp = Some(byval);
                }
            } else {
                match sort_score(&byval) {
                    Some(s) => item.score = s,
                    None => conversion_error = true,
                }
            }
        }
        let order = Order { desc, alpha, bypattern: sortby.is_some(), store: storekey.is_some() };
        let cmp = |a: &Item, b: &Item| order.compare(a, b);
        if sortby.is_some() && (start != 0 || end != len - 1) {
            pqsort(&mut vector, start, end, &cmp);
        } else {
            vector.sort_by(cmp);
        }
    }

    let count = (end - start + 1).max(0) as usize;
    let range = if count > 0 { &vector[start as usize..start as usize + count] } else { &vector[..0] };
    if conversion_error {
        return Err(CmdError::other("ERR One or more scores can't be converted into double"));
    }
    let Some(storekey) = storekey else {
        let mut out = Vec::with_capacity(count * gets.len().max(1));
        for item in range {
            if gets.is_empty() {
                out.push(Reply::Bulk(item.obj.clone()));
            }
            for pattern in &gets {
                out.push(lookup_by_pattern(ctx, pattern, &item.obj).map_or(Reply::Nil, Reply::Bulk));
            }
        }
        return Ok(Reply::Array(out));
    };
    let mut list = ListValue::new();
    for item in range {
        if gets.is_empty() {
            list.push_back(item.obj.clone());
        }
        for pattern in &gets {
            list.push_back(lookup_by_pattern(ctx, pattern, &item.obj).unwrap_or_default());
        }
    }
    let outputlen = list.len();
    if outputlen > 0 {
        ctx.set_key(storekey, Value::List(Box::new(list)));
        ctx.dirty(outputlen as u64);
        ctx.notify(notify::LIST, "sortstore", storekey);
    } else {
        ctx.delete_key(storekey);
    }
    Ok(Reply::Int(outputlen as i64))
}

/// SORT converts a sorted set to the skiplist encoding for good (`zsetConvert`).
fn to_skiplist(ctx: &mut Ctx<'_>, key: &[u8]) {
    // A change of encoding only: nothing to signal.
    ctx.change_quietly(key, |e| {
        if let Value::ZSet(z) = &mut e.value {
            z.convert_to_skiplist();
        }
    });
}

/// ```text
/// SORT key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]] [ASC | DESC] [ALPHA] [STORE destination]
/// ```
pub fn sort(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    sort_generic(ctx, args, false)
}

/// ```text
/// SORT_RO key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]] [ASC | DESC] [ALPHA]
/// ```
pub fn sort_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    sort_generic(ctx, args, true)
}
