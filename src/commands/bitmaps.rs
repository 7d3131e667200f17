//! Bitmap commands on string values: SETBIT/GETBIT, BITCOUNT, BITPOS, BITOP and
//! BITFIELD/BITFIELD_RO, with redis-server 7.0's replies, errors and checking order.

use bytes::Bytes;

use super::{arg_i64, CmdError, Ctx};
use crate::config::P;
use crate::db::{StrEncoding, StrValue, Value};
use crate::notify;
use crate::protocol::Reply;
use crate::util::parse_i64;
use crate::util::{cstr as c_str, opt_is};

const BIT_OFFSET_ERR: &str = "ERR bit offset is not an integer or out of range";
const BIT_VALUE_ERR: &str = "ERR bit is not an integer or out of range";
const BITFIELD_TYPE_ERR: &str = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";

/// proto-max-bulk-len, which the log loader and a primary's stream are not held to (Redis's
/// `mustObeyClient`).
fn max_bulk_len(ctx: &Ctx<'_>) -> i64 {
    if ctx.client.superuser {
        return i64::MAX;
    }
    ctx.server.config.get_int(P::ProtoMaxBulkLen)
}

/// Redis's `getBitOffsetFromArgument`: `#N` means `N * bits` when `hash` is allowed.
fn bit_offset(ctx: &Ctx<'_>, arg: &[u8], hash: bool, bits: u32) -> Result<u64, CmdError> {
    let err = || CmdError::other(BIT_OFFSET_ERR);
    let use_hash = hash && bits > 0 && arg.first() == Some(&b'#');
    let mut off = parse_i64(if use_hash { &arg[1..] } else { arg }).ok_or_else(err)?;
    if use_hash {
        off = off.wrapping_mul(bits as i64);
    }
    if off < 0 || (off >> 3) >= max_bulk_len(ctx) {
        return Err(err());
    }
    Ok(off as u64)
}

/// The string value at `key` for reading: `Ok(None)` when absent, WRONGTYPE otherwise.
fn read_str<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> Result<Option<&'c StrValue>, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    match ctx.ks.get(db, key, now).map(|e| &e.value) {
        None => Ok(None),
        Some(Value::Str(s)) => Ok(Some(s)),
        Some(_) => Err(CmdError::WrongType),
    }
}

/// Redis's `lookupStringForBitCommand` followed by `f`: the string at `key` (created if
/// absent) grown with zeros to hold bit `max_bit`, made `raw`, then changed by `f`.
/// `f` also gets whether the key was created or grown.
fn with_bit_string<R>(ctx: &mut Ctx<'_>, key: &[u8], max_bit: u64, f: impl FnOnce(&mut Vec<u8>, bool) -> R) -> Result<R, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let bytes = (max_bit >> 3) as usize + 1;
    match ctx.ks.get_mut(db, key, now).map(|e| matches!(e.value, Value::Str(_))) {
        Some(false) => Err(CmdError::WrongType),
        None => {
            let mut data = vec![0u8; bytes];
            let r = f(&mut data, true);
            // Created, not yet a change: the command signals one if it made one.
            ctx.add_value(key, Value::Str(StrValue::with_enc(data, StrEncoding::Raw)));
            Ok(r)
        }
        Some(true) => Ok(ctx
            .change_quietly(key, |e| match &mut e.value {
                Value::Str(s) => {
                    let grown = s.len() < bytes;
                    if grown {
                        s.vec_mut().resize(bytes, 0);
                    }
                    s.set_enc(StrEncoding::Raw);
                    Some(f(s.vec_mut(), grown))
                }
                _ => None,
            })
            .flatten()
            .ok_or(CmdError::NoSuchKey)?),
    }
}

/// ```text
/// SETBIT key offset value
/// ```
pub fn setbit(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let offset = bit_offset(ctx, &args[2], false, 0)?;
    let on = parse_i64(&args[3]).ok_or_else(|| CmdError::other(BIT_VALUE_ERR))?;
    if on & !1 != 0 {
        return Err(CmdError::other(BIT_VALUE_ERR));
    }
    let (old, changed) = with_bit_string(ctx, &args[1], offset, |data, grown| {
        let byte = (offset >> 3) as usize;
        let bit = 7 - (offset & 7) as u32;
        let old = (data[byte] >> bit) & 1;
        data[byte] = (data[byte] & !(1 << bit)) | ((on as u8) << bit);
        (old, grown || old as i64 != on)
    })?;
    if changed {
        ctx.signal_modified(&args[1]);
        ctx.dirty(1);
        ctx.notify(notify::STRING, "setbit", &args[1]);
    }
    Ok(Reply::Int(old as i64))
}

/// ```text
/// GETBIT key offset
/// ```
pub fn getbit(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let offset = bit_offset(ctx, &args[2], false, 0)?;
    let Some(s) = read_str(ctx, &args[1])? else {
        return Ok(Reply::Int(0));
    };
    let byte = (offset >> 3) as usize;
    let bit = 7 - (offset & 7) as u32;
    Ok(Reply::Int(s.bytes().get(byte).map_or(0, |b| (b >> bit) & 1) as i64))
}

fn popcount(bytes: &[u8]) -> i64 {
    let mut chunks = bytes.chunks_exact(8);
    let mut n: i64 = 0;
    for c in &mut chunks {
        n += u64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]).count_ones() as i64;
    }
    n + chunks.remainder().iter().map(|b| b.count_ones() as i64).sum::<i64>()
}

/// Redis's `redisBitpos`: the first bit equal to `bit`; for 0 and none found, the bit just
/// past the range; for 1 and none found, -1.
fn first_bit(bytes: &[u8], bit: bool) -> i64 {
    let skip = if bit { 0u8 } else { 0xff };
    match bytes.iter().position(|&b| b != skip) {
        None => {
            if bit {
                -1
            } else {
                bytes.len() as i64 * 8
            }
        }
        Some(i) => {
            let b = if bit { bytes[i] } else { !bytes[i] };
            i as i64 * 8 + b.leading_zeros() as i64
        }
    }
}

/// Parses the BYTE | BIT unit of BITCOUNT / BITPOS.
fn parse_unit(arg: &[u8]) -> Result<bool, CmdError> {
    if opt_is(arg, "BIT") {
        Ok(true)
    } else if opt_is(arg, "BYTE") {
        Ok(false)
    } else {
        Err(CmdError::Syntax)
    }
}

/// BITCOUNT's and BITPOS's range normalisation (negative indexes from the end, clamping,
/// BIT units turned into bytes plus masks for the partial first and last bytes): returns
/// (start byte, end byte, first-byte mask, last-byte mask).
fn byte_range(mut st: i64, mut en: i64, strlen: i64, isbit: bool) -> (i64, i64, u8, u8) {
    let totlen = if isbit { strlen << 3 } else { strlen };
    if st < 0 {
        st += totlen;
    }
    if en < 0 {
        en += totlen;
    }
    st = st.max(0);
    en = en.max(0);
    if en >= totlen {
        en = totlen - 1;
    }
    let (mut first_mask, mut last_mask) = (0u8, 0u8);
    if isbit && st <= en {
        first_mask = !((1u32 << (8 - (st & 7))) - 1) as u8;
        last_mask = ((1u32 << (7 - (en & 7))) - 1) as u8;
        st >>= 3;
        en >>= 3;
    }
    (st, en, first_mask, last_mask)
}

/// ```text
/// BITCOUNT key [start end [BYTE | BIT]]
/// ```
pub fn bitcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let Some(s) = read_str(ctx, &args[1])? else {
        return Ok(Reply::Int(0));
    };
    let p = s.bytes();
    let strlen = p.len() as i64;
    let (mut first_mask, mut last_mask) = (0u8, 0u8);
    let (start, end);
    if args.len() == 4 || args.len() == 5 {
        let st = arg_i64(&args[2])?;
        let en = arg_i64(&args[3])?;
        if st < 0 && en < 0 && st > en {
            return Ok(Reply::Int(0));
        }
        let isbit = if args.len() == 5 { parse_unit(&args[4])? } else { false };
        (start, end, first_mask, last_mask) = byte_range(st, en, strlen, isbit);
    } else if args.len() == 2 {
        start = 0;
        end = strlen - 1;
    } else {
        return Err(CmdError::Syntax);
    }
    if start > end {
        return Ok(Reply::Int(0));
    }
    let (s, e) = (start as usize, end as usize);
    let mut count = popcount(&p[s..=e]);
    if first_mask != 0 {
        count -= (p[s] & first_mask).count_ones() as i64;
    }
    if last_mask != 0 {
        count -= (p[e] & last_mask).count_ones() as i64;
    }
    Ok(Reply::Int(count))
}

/// ```text
/// BITPOS key bit [start [end [BYTE | BIT]]]
/// ```
pub fn bitpos(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let bit = arg_i64(&args[2])?;
    if bit != 0 && bit != 1 {
        return Err(CmdError::other("ERR The bit argument must be 1 or 0."));
    }
    let bit = bit == 1;
    let Some(s) = read_str(ctx, &args[1])? else {
        return Ok(Reply::Int(if bit { -1 } else { 0 }));
    };
    let p = s.bytes();
    let strlen = p.len() as i64;
    let (mut first_mask, mut last_mask) = (0u8, 0u8);
    let mut end_given = false;
    let (mut start, end);
    if (4..=6).contains(&args.len()) {
        let st = arg_i64(&args[3])?;
        let isbit = if args.len() == 6 { parse_unit(&args[5])? } else { false };
        let en = if args.len() >= 5 {
            end_given = true;
            arg_i64(&args[4])?
        } else {
            strlen - 1
        };
        (start, end, first_mask, last_mask) = byte_range(st, en, strlen, isbit);
    } else if args.len() == 3 {
        start = 0;
        end = strlen - 1;
    } else {
        return Err(CmdError::Syntax);
    }
    if start > end {
        return Ok(Reply::Int(-1));
    }
    let mut bytes = end - start + 1;
    let mask_byte = |b: u8, mask: u8| if bit { b & !mask } else { b | mask };
    let pos = 'found: {
        if first_mask != 0 {
            let mut tmp = mask_byte(p[start as usize], first_mask);
            if last_mask != 0 && bytes == 1 {
                tmp = mask_byte(tmp, last_mask);
            }
            let pos = first_bit(&[tmp], bit);
            if bytes == 1 || (pos != -1 && pos != 8) {
                break 'found pos;
            }
            start += 1;
            bytes -= 1;
        }
        let cur = bytes - if last_mask != 0 { 1 } else { 0 };
        if cur > 0 {
            let pos = first_bit(&p[start as usize..(start + cur) as usize], bit);
            if bytes == cur || (pos != -1 && pos != cur << 3) {
                break 'found pos;
            }
            start += cur;
            bytes -= cur;
        }
        first_bit(&[mask_byte(p[end as usize], last_mask)], bit)
    };
    if end_given && !bit && pos == bytes << 3 {
        return Ok(Reply::Int(-1));
    }
    Ok(Reply::Int(if pos != -1 { pos + (start << 3) } else { pos }))
}

/// ```text
/// BITOP <AND | OR | XOR | NOT> destkey key [key ...]
/// ```
pub fn bitop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    #[derive(PartialEq)]
    enum Op {
        And,
        Or,
        Xor,
        Not,
    }
    let name = &args[1][..];
    let op = if opt_is(name, "AND") {
        Op::And
    } else if opt_is(name, "OR") {
        Op::Or
    } else if opt_is(name, "XOR") {
        Op::Xor
    } else if opt_is(name, "NOT") {
        Op::Not
    } else {
        return Err(CmdError::Syntax);
    };
    if op == Op::Not && args.len() != 4 {
        return Err(CmdError::other("ERR BITOP NOT must be called with a single source key."));
    }
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut srcs: Vec<Vec<u8>> = Vec::with_capacity(args.len() - 3);
    for key in &args[3..] {
        match ctx.ks.get(db, key, now).map(|e| &e.value) {
            None => srcs.push(Vec::new()),
            Some(Value::Str(s)) => srcs.push(s.bytes().to_vec()),
            Some(_) => return Err(CmdError::WrongType),
        }
    }
    let maxlen = srcs.iter().map(Vec::len).max().unwrap_or(0);
    let dest = &args[2][..];
    if maxlen == 0 {
        ctx.delete_key(dest);
        return Ok(Reply::Int(0));
    }
    let byte = |s: &Vec<u8>, i: usize| s.get(i).copied().unwrap_or(0);
    let mut res = vec![0u8; maxlen];
    match op {
        Op::Not => {
            for (i, r) in res.iter_mut().enumerate() {
                *r = !byte(&srcs[0], i);
            }
        }
        _ => {
            res.copy_from_slice(&{
                let mut first = srcs[0].clone();
                first.resize(maxlen, 0);
                first
            });
            for s in &srcs[1..] {
                for (i, r) in res.iter_mut().enumerate() {
                    let b = byte(s, i);
                    match op {
                        Op::And => *r &= b,
                        Op::Or => *r |= b,
                        _ => *r ^= b,
                    }
                }
            }
        }
    }
    ctx.set_key(dest, Value::Str(StrValue::with_enc(res, StrEncoding::Raw)));
    ctx.dirty(1);
    ctx.notify(notify::STRING, "set", dest);
    Ok(Reply::Int(maxlen as i64))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum FieldOp {
    Get,
    Set,
    IncrBy,
}

struct BitfieldOp {
    op: FieldOp,
    offset: u64,
    value: i64,
    overflow: Overflow,
    bits: u32,
    signed: bool,
}

/// Redis's `getBitfieldTypeFromArgument`: `i1`..`i64` or `u1`..`u63`.
fn bitfield_type(arg: &[u8]) -> Result<(bool, u32), CmdError> {
    let err = || CmdError::other(BITFIELD_TYPE_ERR);
    let signed = match arg.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return Err(err()),
    };
    let bits = parse_i64(c_str(&arg[1..])).ok_or_else(err)?;
    if bits < 1 || (signed && bits > 64) || (!signed && bits > 63) {
        return Err(err());
    }
    Ok((signed, bits as u32))
}

fn get_unsigned(p: &[u8], mut offset: u64, bits: u32) -> u64 {
    let mut value = 0u64;
    for _ in 0..bits {
        let byte = p.get((offset >> 3) as usize).copied().unwrap_or(0);
        let bit = 7 - (offset & 7);
        value = (value << 1) | ((byte as u64 >> bit) & 1);
        offset += 1;
    }
    value
}

fn get_signed(p: &[u8], offset: u64, bits: u32) -> i64 {
    let mut value = get_unsigned(p, offset, bits) as i64;
    if bits < 64 && value & (1i64 << (bits - 1)) != 0 {
        value |= (-1i64) << bits;
    }
    value
}

fn set_unsigned(p: &mut [u8], mut offset: u64, bits: u32, value: u64) {
    for j in 0..bits {
        let bitval = (value >> (bits - 1 - j)) & 1;
        let byte = (offset >> 3) as usize;
        let bit = 7 - (offset & 7);
        if let Some(b) = p.get_mut(byte) {
            *b = (*b & !(1 << bit)) | ((bitval as u8) << bit);
        }
        offset += 1;
    }
}

/// Redis's `checkSignedBitfieldOverflow`: `(overflowed, limited value)`.
fn check_signed(value: i64, incr: i64, bits: u32, ow: Overflow) -> (bool, i64) {
    let max: i64 = if bits == 64 { i64::MAX } else { (1i64 << (bits - 1)) - 1 };
    let min = -max - 1;
    let maxincr = (max as u64).wrapping_sub(value as u64) as i64;
    let minincr = min.wrapping_sub(value);
    let wrap = || {
        let msb = 1u64 << (bits - 1);
        let mut c = (value as u64).wrapping_add(incr as u64);
        if bits < 64 {
            let mask = u64::MAX << bits;
            if c & msb != 0 {
                c |= mask;
            } else {
                c &= !mask;
            }
        }
        c as i64
    };
    if value > max || (bits != 64 && incr > maxincr) || (value >= 0 && incr > 0 && incr > maxincr) {
        return (true, if ow == Overflow::Wrap { wrap() } else { max });
    }
    if value < min || (bits != 64 && incr < minincr) || (value < 0 && incr < 0 && incr < minincr) {
        return (true, if ow == Overflow::Wrap { wrap() } else { min });
    }
    (false, 0)
}

/// Redis's `checkUnsignedBitfieldOverflow`.
fn check_unsigned(value: u64, incr: i64, bits: u32, ow: Overflow) -> (bool, u64) {
    let max: u64 = (1u64 << bits) - 1;
    let maxincr = max.wrapping_sub(value) as i64;
    let minincr = value.wrapping_neg() as i64;
    let wrap = || value.wrapping_add(incr as u64) & !(u64::MAX << bits);
    if value > max || (incr > 0 && incr > maxincr) {
        return (true, if ow == Overflow::Wrap { wrap() } else { max });
    }
    if incr < 0 && incr < minincr {
        return (true, if ow == Overflow::Wrap { wrap() } else { 0 });
    }
    (false, 0)
}

/// Runs one SET / INCRBY on the string; the reply is the value or a null (FAIL).
fn bitfield_write(p: &mut [u8], op: &BitfieldOp) -> Reply {
    if op.signed {
        let old = get_signed(p, op.offset, op.bits);
        let (overflow, new, ret) = if op.op == FieldOp::IncrBy {
            let (o, w) = check_signed(old, op.value, op.bits, op.overflow);
            let new = if o { w } else { old.wrapping_add(op.value) };
            (o, new, new)
        } else {
            let (o, w) = check_signed(op.value, 0, op.bits, op.overflow);
            (o, if o { w } else { op.value }, old)
        };
        if overflow && op.overflow == Overflow::Fail {
            return Reply::Nil;
        }
        set_unsigned(p, op.offset, op.bits, new as u64);
        Reply::Int(ret)
    } else {
        let old = get_unsigned(p, op.offset, op.bits);
        let (overflow, new, ret) = if op.op == FieldOp::IncrBy {
            let (o, w) = check_unsigned(old, op.value, op.bits, op.overflow);
            let new = if o { w } else { old.wrapping_add(op.value as u64) };
            (o, new, new)
        } else {
            let v = op.value as u64;
            let (o, w) = check_unsigned(v, 0, op.bits, op.overflow);
            (o, if o { w } else { v }, old)
        };
        if overflow && op.overflow == Overflow::Fail {
            return Reply::Nil;
        }
        set_unsigned(p, op.offset, op.bits, new);
        Reply::Int(ret as i64)
    }
}

fn bitfield_read(p: &[u8], op: &BitfieldOp) -> Reply {
    if op.signed {
        Reply::Int(get_signed(p, op.offset, op.bits))
    } else {
        Reply::Int(get_unsigned(p, op.offset, op.bits) as i64)
    }
}

/// Redis's `bitfieldGeneric`.
fn bitfield_generic(ctx: &mut Ctx<'_>, args: &[Bytes], read_only_cmd: bool) -> Result<Reply, CmdError> {
    let mut ops: Vec<BitfieldOp> = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut readonly = true;
    let mut highest_write: u64 = 0;
    let mut j = 2;
    while j < args.len() {
        let remaining = args.len() - j - 1;
        let sub = &args[j][..];
        let op = if opt_is(sub, "GET") && remaining >= 2 {
            FieldOp::Get
        } else if opt_is(sub, "SET") && remaining >= 3 {
            FieldOp::Set
        } else if opt_is(sub, "INCRBY") && remaining >= 3 {
            FieldOp::IncrBy
        } else if opt_is(sub, "OVERFLOW") && remaining >= 1 {
            let kind = &args[j + 1][..];
            overflow = if opt_is(kind, "WRAP") {
                Overflow::Wrap
            } else if opt_is(kind, "SAT") {
                Overflow::Sat
            } else if opt_is(kind, "FAIL") {
                Overflow::Fail
            } else {
                return Err(CmdError::other("ERR Invalid OVERFLOW type specified"));
            };
            j += 2;
            continue;
        } else {
            return Err(CmdError::Syntax);
        };
        let (signed, bits) = bitfield_type(&args[j + 1])?;
        let offset = bit_offset(ctx, &args[j + 2], true, bits)?;
        let mut value = 0;
        if op != FieldOp::Get {
            readonly = false;
            highest_write = highest_write.max(offset + bits as u64 - 1);
            value = arg_i64(&args[j + 3])?;
        }
        ops.push(BitfieldOp { op, offset, value, overflow, bits, signed });
        j += if op == FieldOp::Get { 3 } else { 4 };
    }
    if readonly {
        let data = read_str(ctx, &args[1])?.map(|s| s.bytes()).unwrap_or(&[]);
        return Ok(Reply::Array(ops.iter().map(|op| bitfield_read(data, op)).collect()));
    }
    if read_only_cmd {
        return Err(CmdError::other("ERR BITFIELD_RO only supports the GET subcommand"));
    }
    // What Redis counts as changes (dirty, WATCH, the event): a write that changed its
    // bytes, or, when the string was created or grown, every write that did not fail on
    // OVERFLOW FAIL. A SET of the value already there changes nothing.
    let (replies, changes) = with_bit_string(ctx, &args[1], highest_write, |data, grown| {
        let mut changes = 0u64;
        let replies = ops
            .iter()
            .map(|op| {
                if op.op == FieldOp::Get {
                    return bitfield_read(data, op);
                }
                // At most 9 bytes (64 bits from any bit offset): copied on the stack.
                let span = (op.offset / 8) as usize..=((op.offset + op.bits as u64 - 1) / 8) as usize;
                let mut before = [0u8; 9];
                let width = span.clone().count();
                before[..width].copy_from_slice(&data[span.clone()]);
                let reply = bitfield_write(data, op);
                if reply != Reply::Nil && (grown || data[span] != before[..width]) {
                    changes += 1;
                }
                reply
            })
            .collect::<Vec<_>>();
        (replies, changes)
    })?;
    if changes > 0 {
        ctx.signal_modified(&args[1]);
        ctx.dirty(changes);
        ctx.notify(notify::STRING, "setbit", &args[1]);
    }
    Ok(Reply::Array(replies))
}

/// ```text
/// BITFIELD key [GET encoding offset | [OVERFLOW <WRAP | SAT | FAIL>]
///   <SET encoding offset value | INCRBY encoding offset increment>
///   [GET encoding offset | [OVERFLOW <WRAP | SAT | FAIL>]
///   <SET encoding offset value | INCRBY encoding offset increment>
///   ...]]
/// ```
pub fn bitfield(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    bitfield_generic(ctx, args, false)
}

/// ```text
/// BITFIELD_RO key [GET encoding offset [GET encoding offset ...]]
/// ```
pub fn bitfield_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    bitfield_generic(ctx, args, true)
}
