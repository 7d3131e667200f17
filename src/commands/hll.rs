//! HyperLogLog commands: PFADD, PFCOUNT and PFMERGE, on string values in Redis's exact format
//! (the `HYLL` header with its cached cardinality, the sparse and the dense 6-bit register
//! encodings, MurmurHash64A and Ertl's estimator), so values and counts match redis-server
//! byte for byte.

use bytes::Bytes;

use super::{CmdError, Ctx};
use crate::config::P;
use crate::db::{StrEncoding, StrValue, Value};
use crate::notify;
use crate::protocol::Reply;

const HLL_P: u32 = 14;
const HLL_Q: u32 = 64 - HLL_P;
const HLL_REGISTERS: usize = 1 << HLL_P;
const HLL_BITS: usize = 6;
const HLL_REGISTER_MAX: u8 = (1 << HLL_BITS) - 1;
const HLL_HDR_SIZE: usize = 16;
const HLL_DENSE_SIZE: usize = HLL_HDR_SIZE + (HLL_REGISTERS * HLL_BITS).div_ceil(8);
const HLL_DENSE: u8 = 0;
const HLL_SPARSE: u8 = 1;
const HLL_ALPHA_INF: f64 = 0.721_347_520_444_481_7;

const SPARSE_VAL_MAX_VALUE: u8 = 32;
const SPARSE_VAL_MAX_LEN: usize = 4;
const SPARSE_ZERO_MAX_LEN: usize = 64;

const INVALID_HLL_ERR: &str = "INVALIDOBJ Corrupted HLL object detected";
const NOT_HLL_ERR: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";

/// The HLL data was found corrupted.
struct Corrupt;

impl From<Corrupt> for CmdError {
    fn from(_: Corrupt) -> CmdError {
        CmdError::other(INVALID_HLL_ERR)
    }
}

/// Redis's MurmurHash64A (little-endian reads), as used by `hllPatLen`.
fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let mut k = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= (b as u64) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// Redis's `hllPatLen`: the register index and the run length of zeros plus one.
fn pat_len(ele: &[u8]) -> (usize, u8) {
    let hash = murmur64a(ele, 0xadc8_3b19);
    let index = (hash & (HLL_REGISTERS as u64 - 1)) as usize;
    let rest = (hash >> HLL_P) | (1u64 << HLL_Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

fn dense_get(regs: &[u8], i: usize) -> u8 {
    let byte = i * HLL_BITS / 8;
    let fb = (i * HLL_BITS) & 7;
    let b0 = regs[byte] as u32;
    let b1 = regs.get(byte + 1).copied().unwrap_or(0) as u32;
    (((b0 >> fb) | (b1 << (8 - fb))) & HLL_REGISTER_MAX as u32) as u8
}

fn dense_set(regs: &mut [u8], i: usize, val: u8) {
    let byte = i * HLL_BITS / 8;
    let fb = (i * HLL_BITS) & 7;
    let v = val as u32;
    regs[byte] &= !((HLL_REGISTER_MAX as u32) << fb) as u8;
    regs[byte] |= (v << fb) as u8;
    if let Some(b) = regs.get_mut(byte + 1) {
        *b &= !((HLL_REGISTER_MAX as u32) >> (8 - fb)) as u8;
        *b |= (v >> (8 - fb)) as u8;
    }
}

/// Sparse opcodes: ZERO `00xxxxxx`, XZERO `01xxxxxx yyyyyyyy`, VAL `1vvvvvxx`.
fn is_zero(b: u8) -> bool {
    b & 0xc0 == 0
}

fn is_xzero(b: u8) -> bool {
    b & 0xc0 == 0x40
}

fn zero_len(b: u8) -> usize {
    (b & 0x3f) as usize + 1
}

fn xzero_len(b0: u8, b1: u8) -> usize {
    (((b0 & 0x3f) as usize) << 8 | b1 as usize) + 1
}

fn val_value(b: u8) -> u8 {
    ((b >> 2) & 0x1f) + 1
}

fn val_len(b: u8) -> usize {
    (b & 0x3) as usize + 1
}

fn val_op(value: u8, len: usize) -> u8 {
    0x80 | ((value - 1) << 2) | (len as u8 - 1)
}

/// Appends a zero run (ZERO up to 64 registers, else XZERO).
fn push_zero_run(out: &mut Vec<u8>, len: usize) {
    if len > SPARSE_ZERO_MAX_LEN {
        let l = len - 1;
        out.push(0x40 | (l >> 8) as u8);
        out.push((l & 0xff) as u8);
    } else {
        out.push((len - 1) as u8);
    }
}

/// A new, empty HLL as Redis creates it: sparse, one XZERO covering every register.
fn new_hll() -> Vec<u8> {
    let mut v = b"HYLL".to_vec();
    v.push(HLL_SPARSE);
    v.extend_from_slice(&[0u8; 11]);
    push_zero_run(&mut v, HLL_REGISTERS);
    v
}

fn invalidate_cache(data: &mut [u8]) {
    data[15] |= 0x80;
}

/// Redis's `isHLLObjectOrReply` (the type check is done by the caller).
fn is_hll(data: &[u8]) -> bool {
    data.len() >= HLL_HDR_SIZE && &data[..4] == b"HYLL" && data[4] <= HLL_SPARSE && (data[4] != HLL_DENSE || data.len() == HLL_DENSE_SIZE)
}

/// Decodes the registers of a valid HLL value into `max`, keeping the maximum of each.
fn merge_into(max: &mut [u8; HLL_REGISTERS], data: &[u8]) -> Result<(), Corrupt> {
    let body = &data[HLL_HDR_SIZE..];
    if data[4] == HLL_DENSE {
        for (i, m) in max.iter_mut().enumerate() {
            *m = (*m).max(dense_get(body, i));
        }
        return Ok(());
    }
    let mut i = 0usize;
    let mut p = 0usize;
    while p < body.len() {
        let b = body[p];
        if is_zero(b) {
            i += zero_len(b);
            p += 1;
        } else if is_xzero(b) {
            i += xzero_len(b, body.get(p + 1).copied().unwrap_or(0));
            p += 2;
        } else {
            let (len, v) = (val_len(b), val_value(b));
            if i + len > HLL_REGISTERS {
                break;
            }
            for m in &mut max[i..i + len] {
                *m = (*m).max(v);
            }
            i += len;
            p += 1;
        }
    }
    if i != HLL_REGISTERS {
        return Err(Corrupt);
    }
    Ok(())
}

/// Redis's `hllSparseToDense` (header, including the cached cardinality, kept).
fn sparse_to_dense(data: &mut Vec<u8>) -> Result<(), Corrupt> {
    if data[4] == HLL_DENSE {
        return Ok(());
    }
    let mut dense = vec![0u8; HLL_DENSE_SIZE];
    dense[..HLL_HDR_SIZE].copy_from_slice(&data[..HLL_HDR_SIZE]);
    dense[4] = HLL_DENSE;
    let body = &data[HLL_HDR_SIZE..];
    let regs = &mut dense[HLL_HDR_SIZE..];
    let (mut i, mut p) = (0usize, 0usize);
    while p < body.len() {
        let b = body[p];
        if is_zero(b) {
            i += zero_len(b);
            p += 1;
        } else if is_xzero(b) {
            i += xzero_len(b, body.get(p + 1).copied().unwrap_or(0));
            p += 2;
        } else {
            let (len, v) = (val_len(b), val_value(b));
            if i + len > HLL_REGISTERS {
                break;
            }
            for r in i..i + len {
                dense_set(regs, r, v);
            }
            i += len;
            p += 1;
        }
    }
    if i != HLL_REGISTERS {
        return Err(Corrupt);
    }
    *data = dense;
    Ok(())
}

/// Redis's `hllDenseSet`: true if the register grew.
fn dense_update(data: &mut [u8], index: usize, count: u8) -> bool {
    let regs = &mut data[HLL_HDR_SIZE..];
    if count > dense_get(regs, index) {
        dense_set(regs, index, count);
        true
    } else {
        false
    }
}

/// Redis's `hllSparseSet`, step by step (so the bytes match): sets register `index` to
/// `count` if greater, splitting opcodes in place, merging neighbours, and promoting to the
/// dense encoding when the value or the size no longer fits. True if changed.
fn sparse_set(data: &mut Vec<u8>, index: usize, count: u8, max_bytes: usize) -> Result<bool, Corrupt> {
    if count > SPARSE_VAL_MAX_VALUE {
        return promote(data, index, count);
    }
    // Step 1: find the opcode covering `index`.
    let end = data.len();
    let mut p = HLL_HDR_SIZE;
    let mut first = 0usize;
    let mut prev: Option<usize> = None;
    let mut span = 0usize;
    while p < end {
        let b = data[p];
        let mut oplen = 1;
        if is_zero(b) {
            span = zero_len(b);
        } else if b & 0x80 != 0 {
            span = val_len(b);
        } else {
            span = xzero_len(b, data.get(p + 1).copied().unwrap_or(0));
            oplen = 2;
        }
        if index < first + span {
            break;
        }
        prev = Some(p);
        p += oplen;
        first += span;
    }
    if span == 0 || p >= end {
        return Err(Corrupt);
    }
    let op = data[p];
    let (zero, xzero) = (is_zero(op), is_xzero(op));
    let runlen = if zero {
        zero_len(op)
    } else if xzero {
        xzero_len(op, data.get(p + 1).copied().unwrap_or(0))
    } else {
        val_len(op)
    };

    // Step 2: the trivial cases, else the general split.
    let mut trivial = false;
    if !zero && !xzero {
        if val_value(op) >= count {
            return Ok(false);
        }
        if runlen == 1 {
            data[p] = val_op(count, 1);
            trivial = true;
        }
    }
    if zero && runlen == 1 {
        data[p] = val_op(count, 1);
        trivial = true;
    }
    if !trivial {
        let last = first + span - 1;
        let mut seq: Vec<u8> = Vec::with_capacity(5);
        if zero || xzero {
            if index != first {
                push_zero_run(&mut seq, index - first);
            }
            seq.push(val_op(count, 1));
            if index != last {
                push_zero_run(&mut seq, last - index);
            }
        } else {
            let cur = val_value(op);
            if index != first {
                seq.push(val_op(cur, index - first));
            }
            seq.push(val_op(count, 1));
            if index != last {
                seq.push(val_op(cur, last - index));
            }
        }
        // Step 3: substitute the new sequence for the old opcode.
        let oldlen = if xzero { 2 } else { 1 };
        if seq.len() > oldlen && data.len() + seq.len() - oldlen > max_bytes {
            return promote(data, index, count);
        }
        data.splice(p..p + oldlen, seq);
    }

    // Step 4: merge adjacent VAL opcodes of equal value (up to 5 opcodes from `prev`).
    let mut p = prev.unwrap_or(HLL_HDR_SIZE);
    let mut scan = 5;
    while p < data.len() && scan > 0 {
        scan -= 1;
        let b = data[p];
        if is_xzero(b) {
            p += 2;
            continue;
        } else if is_zero(b) {
            p += 1;
            continue;
        }
        if p + 1 < data.len() && data[p + 1] & 0x80 != 0 {
            let next = data[p + 1];
            if val_value(b) == val_value(next) {
                let len = val_len(b) + val_len(next);
                if len <= SPARSE_VAL_MAX_LEN {
                    data[p + 1] = val_op(val_value(b), len);
                    data.remove(p);
                    continue;
                }
            }
        }
        p += 1;
    }
    invalidate_cache(data);
    Ok(true)
}

fn promote(data: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, Corrupt> {
    sparse_to_dense(data)?;
    dense_update(data, index, count);
    Ok(true)
}

/// Redis's `hllAdd`: true if a register changed.
fn add(data: &mut Vec<u8>, ele: &[u8], max_bytes: usize) -> Result<bool, Corrupt> {
    let (index, count) = pat_len(ele);
    match data[4] {
        HLL_DENSE => Ok(dense_update(data, index, count)),
        HLL_SPARSE => sparse_set(data, index, count, max_bytes),
        _ => Err(Corrupt),
    }
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let prev = z;
        z += x * y;
        y += y;
        if prev == z {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let prev = z;
        y *= 0.5;
        z -= (1.0 - x).powi(2) * y;
        if prev == z {
            return z / 3.0;
        }
    }
}

/// Redis's `hllCount` on registers: Ertl's improved estimator.
fn estimate(regs: &[u8; HLL_REGISTERS]) -> u64 {
    let mut histo = [0u32; 64];
    for &r in regs.iter() {
        histo[r as usize & 63] += 1;
    }
    let m = HLL_REGISTERS as f64;
    let q = HLL_Q as usize;
    let mut z = m * tau((m - histo[q + 1] as f64) / m);
    for j in (1..=q).rev() {
        z += histo[j] as f64;
        z *= 0.5;
    }
    z += m * sigma(histo[0] as f64 / m);
    (HLL_ALPHA_INF * m * m / z).round() as u64
}

/// The value at `key` if it is a valid HLL: `Ok(None)` when absent, WRONGTYPE for another
/// type or a string that is not an HLL.
fn lookup_hll<'c>(ctx: &'c mut Ctx<'_>, key: &[u8], write: bool) -> Result<Option<&'c StrValue>, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let entry = if write { ctx.ks.get_mut(db, key, now).map(|e| &*e) } else { ctx.ks.get(db, key, now) };
    match entry.map(|e| &e.value) {
        None => Ok(None),
        Some(Value::Str(s)) if s.is_int_encoded() || !is_hll(s.bytes()) => Err(CmdError::other(NOT_HLL_ERR)),
        Some(Value::Str(s)) => Ok(Some(s)),
        Some(_) => Err(CmdError::WrongType),
    }
}

/// Runs `f` on the data of an existing string key (made `raw`, as `dbUnshareStringValue`);
/// the caller signals the key when `f` changed it.
fn modify_str<R>(ctx: &mut Ctx<'_>, key: &[u8], f: impl FnOnce(&mut Vec<u8>) -> R) -> Option<R> {
    ctx.change_quietly(key, |e| match &mut e.value {
        Value::Str(s) => {
            s.set_enc(StrEncoding::Raw);
            Some(f(s.vec_mut()))
        }
        _ => None,
    })
    .flatten()
}

/// Creates an absent key holding `data` (Redis's dbAdd before PFADD/PFMERGE change it).
fn insert_str(ctx: &mut Ctx<'_>, key: &[u8], data: Vec<u8>) {
    ctx.add_value(key, Value::Str(StrValue::with_enc(data, StrEncoding::Raw)));
}

fn sparse_max_bytes(ctx: &Ctx<'_>) -> usize {
    ctx.server.config.get_int(P::HllSparseMaxBytes).max(0) as usize
}

/// ```text
/// PFADD key [element [element ...]]
/// ```
pub fn pfadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let key = &args[1][..];
    let max_bytes = sparse_max_bytes(ctx);
    let mut updated = 0u64;
    if lookup_hll(ctx, key, true)?.is_none() {
        insert_str(ctx, key, new_hll());
        updated += 1;
    }
    let result = modify_str(ctx, key, |data| {
        let mut changed = 0u64;
        for ele in &args[2..] {
            if add(data, ele, max_bytes)? {
                changed += 1;
            }
        }
        if changed > 0 || updated > 0 {
            invalidate_cache(data);
        }
        Ok::<u64, Corrupt>(changed)
    });
    updated += result.unwrap_or(Ok(0))?;
    if updated > 0 {
        ctx.signal_modified(key);
        ctx.dirty(updated);
        ctx.notify(notify::STRING, "pfadd", key);
    }
    Ok(Reply::Int((updated > 0) as i64))
}

/// ```text
/// PFCOUNT key [key ...]
/// ```
pub fn pfcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if args.len() > 2 {
        let mut max = Box::new([0u8; HLL_REGISTERS]);
        for key in &args[1..] {
            if let Some(s) = lookup_hll(ctx, key, false)? {
                merge_into(&mut max, s.bytes())?;
            }
        }
        return Ok(Reply::Int(estimate(&max) as i64));
    }
    let key = &args[1][..];
    if lookup_hll(ctx, key, false)?.is_none() {
        return Ok(Reply::Int(0));
    }
    let r = modify_str(ctx, key, |data| {
        if data[15] & 0x80 == 0 {
            let mut card = [0u8; 8];
            card.copy_from_slice(&data[8..16]);
            return Ok((u64::from_le_bytes(card), false));
        }
        let mut regs = Box::new([0u8; HLL_REGISTERS]);
        merge_into(&mut regs, data)?;
        let card = estimate(&regs);
        data[8..16].copy_from_slice(&card.to_le_bytes());
        Ok::<_, Corrupt>((card, true))
    });
    let (card, recomputed) = r.unwrap_or(Ok((0, false)))?;
    if recomputed {
        // The cached cardinality is written back: a change, as in Redis.
        ctx.signal_modified(key);
        ctx.dirty(1);
    }
    Ok(Reply::Int(card as i64))
}

/// ```text
/// PFMERGE destkey [sourcekey [sourcekey ...]]
/// ```
pub fn pfmerge(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let mut max = Box::new([0u8; HLL_REGISTERS]);
    let mut use_dense = false;
    for key in &args[1..] {
        if let Some(s) = lookup_hll(ctx, key, false)? {
            if s.bytes()[4] == HLL_DENSE {
                use_dense = true;
            }
            merge_into(&mut max, s.bytes())?;
        }
    }
    let dest = &args[1][..];
    let (db, now) = (ctx.db(), ctx.now_ms);
    if ctx.ks.get_mut(db, dest, now).is_none() {
        insert_str(ctx, dest, new_hll());
    }
    let max_bytes = sparse_max_bytes(ctx);
    let r = modify_str(ctx, dest, |data| {
        if use_dense {
            sparse_to_dense(data)?;
        }
        for (i, &v) in max.iter().enumerate() {
            if v == 0 {
                continue;
            }
            match data[4] {
                HLL_DENSE => {
                    dense_update(data, i, v);
                }
                _ => {
                    sparse_set(data, i, v, max_bytes)?;
                }
            }
        }
        invalidate_cache(data);
        Ok::<(), Corrupt>(())
    });
    r.unwrap_or(Ok(()))?;
    ctx.signal_modified(dest);
    ctx.dirty(1);
    ctx.notify(notify::STRING, "pfadd", dest);
    Ok(Reply::OK)
}

/// ```text
/// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key
/// ```
/// Redis's internal view of an HLL value: its registers (making it dense, as Redis does),
/// its sparse opcodes, its encoding, or a conversion to dense.
pub fn pfdebug(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let sub = String::from_utf8_lossy(&args[1]).to_lowercase();
    let key = &args[2][..];
    let Some(data) = lookup_hll(ctx, key, true)?.map(|s| s.bytes().to_vec()) else {
        return Err(CmdError::other("ERR The specified key does not exist"));
    };
    let sparse = data[4] == HLL_SPARSE;
    match sub.as_str() {
        "getreg" | "todense" => {
            if sparse {
                modify_str(ctx, key, sparse_to_dense).unwrap_or(Ok(()))?;
                // Redis forces the conversion's propagation.
                ctx.signal_modified(key);
                ctx.dirty(1);
            }
            if sub == "todense" {
                return Ok(Reply::Int(sparse as i64));
            }
            let Some(dense) = lookup_hll(ctx, key, false)? else { return Ok(Reply::Nil) };
            let regs = &dense.bytes()[HLL_HDR_SIZE..];
            Ok(Reply::Array((0..HLL_REGISTERS).map(|i| Reply::Int(dense_get(regs, i) as i64)).collect()))
        }
        "decode" => {
            if !sparse {
                return Err(CmdError::other("ERR HLL encoding is not sparse"));
            }
            let body = &data[HLL_HDR_SIZE..];
            let mut parts = Vec::new();
            let mut p = 0;
            while p < body.len() {
                let b = body[p];
                if is_zero(b) {
                    parts.push(format!("z:{}", zero_len(b)));
                    p += 1;
                } else if is_xzero(b) {
                    parts.push(format!("Z:{}", xzero_len(b, body.get(p + 1).copied().unwrap_or(0))));
                    p += 2;
                } else {
                    parts.push(format!("v:{},{}", val_value(b), val_len(b)));
                    p += 1;
                }
            }
            Ok(Reply::Bulk(Bytes::from(parts.join(" "))))
        }
        "encoding" => Ok(Reply::status(if sparse { "sparse" } else { "dense" })),
        _ => Err(CmdError::Other(format!("ERR Unknown PFDEBUG subcommand '{}'", String::from_utf8_lossy(&args[1])).into())),
    }
}

/// ```text
/// PFSELFTEST
/// ```
/// Checks this implementation as Redis's checks its own: registers set and read back in the
/// dense form, the sparse and dense forms agreeing element by element, and the estimate
/// within its expected error at several cardinalities.
pub fn pfselftest(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    let fail = |what: String| Err(CmdError::Other(format!("TESTFAILED {what}").into()));
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut dense = vec![0u8; HLL_DENSE_SIZE];
    for _ in 0..10 {
        let mut expect = vec![0u8; HLL_REGISTERS];
        for (i, e) in expect.iter_mut().enumerate() {
            rng = crate::util::xorshift(rng);
            *e = (rng as u8) & HLL_REGISTER_MAX;
            dense_set(&mut dense[HLL_HDR_SIZE..], i, *e);
        }
        for (i, e) in expect.iter().enumerate() {
            let got = dense_get(&dense[HLL_HDR_SIZE..], i);
            if got != *e {
                return fail(format!("Register {i} should be {e} but is {got}"));
            }
        }
    }
    let (mut sparse, mut full) = (new_hll(), new_hll());
    if sparse_to_dense(&mut full).is_err() {
        return fail("the empty sparse form did not convert".into());
    }
    let mut checkpoint = 1u64;
    for n in 1..=100_000u64 {
        rng = crate::util::xorshift(rng);
        let ele = rng.to_le_bytes();
        let (a, b) = (add(&mut sparse, &ele, 3000), add(&mut full, &ele, 3000));
        if a.is_err() || b.is_err() || a.ok() != b.ok() {
            return fail(format!("sparse and dense forms disagree at element {n}"));
        }
        if n == checkpoint {
            checkpoint *= 10;
            let mut regs = Box::new([0u8; HLL_REGISTERS]);
            if merge_into(&mut regs, &full).is_err() {
                return fail("the dense form did not read".into());
            }
            let est = estimate(&regs) as f64;
            // 1.04/sqrt(m) is the standard error; five of them, and a little slack for tiny counts.
            let max_err = 5.0 * 1.04 / (HLL_REGISTERS as f64).sqrt() * n as f64 + 1.0;
            if (est - n as f64).abs() > max_err {
                return fail(format!("Approximation error {} for cardinality {n} (estimate {est})", (est - n as f64).abs()));
            }
        }
    }
    Ok(Reply::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_and_dense_agree() {
        let mut sparse = new_hll();
        let mut dense = new_hll();
        sparse_to_dense(&mut dense).ok().unwrap();
        for i in 0..2000 {
            let ele = format!("e{i}");
            let a = add(&mut sparse, ele.as_bytes(), 3000).ok().unwrap();
            let b = add(&mut dense, ele.as_bytes(), 3000).ok().unwrap();
            assert_eq!(a, b);
        }
        let (mut r1, mut r2) = (Box::new([0u8; HLL_REGISTERS]), Box::new([0u8; HLL_REGISTERS]));
        merge_into(&mut r1, &sparse).ok().unwrap();
        merge_into(&mut r2, &dense).ok().unwrap();
        assert!(r1[..] == r2[..]);
        let est = estimate(&r1) as f64;
        assert!((est - 2000.0).abs() < 60.0, "{est}");
    }
}
