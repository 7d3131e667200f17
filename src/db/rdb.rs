//! Redis's DUMP payload: one value in RDB object encoding, the RDB version (2 bytes, little
//! endian) and a CRC-64/Jones of everything before it (8 bytes, little endian).
//!
//! `decode` reads every encoding Redis 7.0 writes or still loads (strings with integer and
//! LZF encodings; lists as linked lists, ziplists, quicklists of ziplists or listpacks; sets
//! as intsets or string sets; hashes and sorted sets as ziplists, listpacks or plain pairs),
//! with every length checked: a payload is untrusted input. `encode` writes the plain forms
//! (string, list, set, hash, zset-2), which Redis 7.0 loads into its own encodings. Streams
//! (types 15 and 19, read and written) are in `rdb_stream`.

use bytes::Bytes;

mod encode;
pub use encode::{dump_payload, encode_elements, encode_hash, encode_str, encode_zset, put_value};
pub(super) use encode::{put_len, put_string, seal};

pub use super::rdb_stream::{encode_stream, RdbStream};

/// The RDB version of Redis 7.0; payloads of a later version are refused, as in Redis.
pub const RDB_VERSION: u16 = 10;

const T_STRING: u8 = 0;
const T_LIST: u8 = 1;
const T_SET: u8 = 2;
const T_ZSET: u8 = 3;
const T_HASH: u8 = 4;
const T_ZSET_2: u8 = 5;
const T_LIST_ZIPLIST: u8 = 10;
const T_SET_INTSET: u8 = 11;
const T_ZSET_ZIPLIST: u8 = 12;
const T_HASH_ZIPLIST: u8 = 13;
const T_LIST_QUICKLIST: u8 = 14;
const T_STREAM_LISTPACKS: u8 = 15;
const T_HASH_LISTPACK: u8 = 16;
const T_ZSET_LISTPACK: u8 = 17;
const T_LIST_QUICKLIST_2: u8 = 18;
const T_STREAM_LISTPACKS_2: u8 = 19;

/// A decoded value, before it is given the server's encodings.
#[derive(Debug, Clone, PartialEq)]
pub enum Decoded {
    Str(Vec<u8>),
    List(Vec<Bytes>),
    Set(Vec<Bytes>),
    Hash(Vec<(Bytes, Bytes)>),
    ZSet(Vec<(Bytes, f64)>),
    Stream(Box<RdbStream>),
}

impl Decoded {
    /// The value with the server's encodings; duplicate members or fields and NaN scores
    /// are bad data, as Redis's loader says.
    pub fn into_value(self, limits: &super::BuildLimits) -> Result<super::Value, RdbError> {
        use super::{hash::HashValue, list::ListValue, set::SetValue, zset::ZSetValue, Value};
        Ok(match self {
            Decoded::Str(s) => Value::string(s),
            Decoded::List(items) => {
                let mut l = ListValue::new();
                for item in items {
                    l.push_back(item);
                }
                Value::List(Box::new(l))
            }
            Decoded::Set(members) => {
                let mut s = SetValue::for_member(&members[0]);
                for m in members {
                    if !s.add_owned(m, limits.max_intset) {
                        return Err(BAD);
                    }
                }
                Value::Set(Box::new(s))
            }
            Decoded::Hash(pairs) => {
                let mut h = HashValue::new();
                for (f, v) in pairs {
                    if !h.set(&f, &v, limits.hash) {
                        return Err(BAD);
                    }
                }
                Value::Hash(h)
            }
            Decoded::ZSet(members) => Value::ZSet(ZSetValue::from_members(members, limits.zset_entries, limits.zset_value).ok_or(BAD)?),
            Decoded::Stream(s) => Value::Stream(Box::new(super::stream::StreamValue::from_rdb(*s, limits.stream).ok_or(BAD)?)),
        })
    }
}

/// Why a payload was refused (Redis's two texts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RdbError {
    /// `ERR DUMP payload version or checksum are wrong`
    VersionOrChecksum,
    /// `ERR Bad data format`
    BadFormat,
}

/// CRC-64/Jones as Redis computes it (reflected, no final xor).
pub fn crc64(data: &[u8]) -> u64 {
    const CRC: crc::Crc<u64> = crc::Crc::<u64>::new(&crc::CRC_64_REDIS);
    CRC.checksum(data)
}

/// Checks the footer of a DUMP payload and returns the object bytes before it.
pub fn verify(payload: &[u8]) -> Result<&[u8], RdbError> {
    if payload.len() < 10 {
        return Err(RdbError::VersionOrChecksum);
    }
    let body = payload.len() - 10;
    let version = u16::from_le_bytes([payload[body], payload[body + 1]]);
    if version > RDB_VERSION {
        return Err(RdbError::VersionOrChecksum);
    }
    let mut crc = [0u8; 8];
    crc.copy_from_slice(&payload[body + 2..]);
    if crc64(&payload[..body + 2]) != u64::from_le_bytes(crc) {
        return Err(RdbError::VersionOrChecksum);
    }
    Ok(&payload[..body])
}

/// Decodes a whole DUMP payload (footer checked).
pub fn decode(payload: &[u8]) -> Result<Decoded, RdbError> {
    let body = verify(payload)?;
    let mut r = Reader { data: body, pos: 0 };
    let value = r.object()?;
    if r.pos != body.len() {
        return Err(RdbError::BadFormat);
    }
    Ok(value)
}

pub(super) struct Reader<'a> {
    pub(super) data: &'a [u8],
    pub(super) pos: usize,
}

/// An RDB length, or one of the special string encodings.
pub(super) enum Len {
    Plain(u64),
    Encoded(u8),
}

pub(super) const BAD: RdbError = RdbError::BadFormat;

impl<'a> Reader<'a> {
    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8], RdbError> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.data.len()).ok_or(BAD)?;
        let out = &self.data[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    pub(super) fn byte(&mut self) -> Result<u8, RdbError> {
        Ok(self.take(1)?[0])
    }

    pub(super) fn len_or_enc(&mut self) -> Result<Len, RdbError> {
        let first = self.byte()?;
        Ok(match first >> 6 {
            0 => Len::Plain((first & 0x3f) as u64),
            1 => Len::Plain((((first & 0x3f) as u64) << 8) | self.byte()? as u64),
            2 => match first {
                0x80 => Len::Plain(u32::from_be_bytes(self.take(4)?.try_into().map_err(|_| BAD)?) as u64),
                0x81 => Len::Plain(u64::from_be_bytes(self.take(8)?.try_into().map_err(|_| BAD)?)),
                _ => return Err(BAD),
            },
            _ => Len::Encoded(first & 0x3f),
        })
    }

    /// A count of elements: bounded by the bytes left (every element takes at least one).
    pub(super) fn count(&mut self) -> Result<usize, RdbError> {
        match self.len_or_enc()? {
            Len::Plain(n) if n <= (self.data.len() - self.pos) as u64 => Ok(n as usize),
            _ => Err(BAD),
        }
    }

    pub(super) fn string(&mut self) -> Result<Vec<u8>, RdbError> {
        match self.len_or_enc()? {
            Len::Plain(n) => Ok(self.take(usize::try_from(n).map_err(|_| BAD)?)?.to_vec()),
            Len::Encoded(0) => Ok((self.byte()? as i8).to_string().into_bytes()),
            Len::Encoded(1) => Ok(i16::from_le_bytes(self.take(2)?.try_into().map_err(|_| BAD)?).to_string().into_bytes()),
            Len::Encoded(2) => Ok(i32::from_le_bytes(self.take(4)?.try_into().map_err(|_| BAD)?).to_string().into_bytes()),
            Len::Encoded(3) => {
                let clen = self.count()?;
                let len = match self.len_or_enc()? {
                    Len::Plain(n) => usize::try_from(n).map_err(|_| BAD)?,
                    Len::Encoded(_) => return Err(BAD),
                };
                // The expansion ratio of LZF is bounded (at most 264 bytes per 3): a length
                // beyond that is a lie, refused before anything is allocated.
                if len > clen.saturating_mul(90) + 64 {
                    return Err(BAD);
                }
                lzf_decompress(self.take(clen)?, len)
            }
            Len::Encoded(_) => Err(BAD),
        }
    }

    pub(super) fn bytes(&mut self) -> Result<Bytes, RdbError> {
        self.string().map(Bytes::from)
    }

    /// A score in the old string form (ZSET type 3).
    fn string_double(&mut self) -> Result<f64, RdbError> {
        let len = self.byte()?;
        let d = match len {
            253 => f64::NAN,
            254 => f64::INFINITY,
            255 => f64::NEG_INFINITY,
            n => {
                let text = std::str::from_utf8(self.take(n as usize)?).map_err(|_| BAD)?;
                text.trim().parse::<f64>().map_err(|_| BAD)?
            }
        };
        Ok(d)
    }

    fn object(&mut self) -> Result<Decoded, RdbError> {
        let kind = self.byte()?;
        self.object_of(kind)
    }

    /// An object of type `kind` (its type byte already read).
    pub(super) fn object_of(&mut self, kind: u8) -> Result<Decoded, RdbError> {
        let v = match kind {
            T_STRING => Decoded::Str(self.string()?),
            T_LIST => {
                let n = self.count()?;
                Decoded::List((0..n).map(|_| self.bytes()).collect::<Result<_, _>>()?)
            }
            T_SET => {
                let n = self.count()?;
                Decoded::Set((0..n).map(|_| self.bytes()).collect::<Result<_, _>>()?)
            }
            T_ZSET | T_ZSET_2 => {
                let n = self.count()?;
                let mut out = Vec::with_capacity(n);
                for _ in 0..n {
                    let m = self.bytes()?;
                    let score =
                        if kind == T_ZSET { self.string_double()? } else { f64::from_le_bytes(self.take(8)?.try_into().map_err(|_| BAD)?) };
                    out.push((m, score));
                }
                Decoded::ZSet(out)
            }
            T_HASH => {
                let n = self.count()?;
                let mut out = Vec::with_capacity(n);
                for _ in 0..n {
                    out.push((self.bytes()?, self.bytes()?));
                }
                Decoded::Hash(out)
            }
            T_SET_INTSET => Decoded::Set(intset(&self.string()?)?),
            T_LIST_ZIPLIST => Decoded::List(ziplist(&self.string()?)?),
            T_HASH_ZIPLIST => Decoded::Hash(pairs(ziplist(&self.string()?)?)?),
            T_ZSET_ZIPLIST => Decoded::ZSet(scored(ziplist(&self.string()?)?)?),
            T_HASH_LISTPACK => Decoded::Hash(pairs(listpack(&self.string()?)?)?),
            T_ZSET_LISTPACK => Decoded::ZSet(scored(listpack(&self.string()?)?)?),
            T_STREAM_LISTPACKS | T_STREAM_LISTPACKS_2 => {
                Decoded::Stream(Box::new(super::rdb_stream::read(self, kind == T_STREAM_LISTPACKS_2)?))
            }
            T_LIST_QUICKLIST | T_LIST_QUICKLIST_2 => {
                let nodes = self.count()?;
                let mut items = Vec::new();
                for _ in 0..nodes {
                    if kind == T_LIST_QUICKLIST {
                        items.extend(ziplist(&self.string()?)?);
                        continue;
                    }
                    let container = match self.len_or_enc()? {
                        Len::Plain(c) => c,
                        Len::Encoded(_) => return Err(BAD),
                    };
                    let blob = self.string()?;
                    match container {
                        // PLAIN: the node is one element.
                        1 => items.push(Bytes::from(blob)),
                        2 => items.extend(listpack(&blob)?),
                        _ => return Err(BAD),
                    }
                }
                Decoded::List(items)
            }
            _ => return Err(BAD),
        };
        let empty = match &v {
            // An empty stream is a stream (one with groups, or emptied by XDEL).
            Decoded::Str(_) | Decoded::Stream(_) => false,
            Decoded::List(l) | Decoded::Set(l) => l.is_empty(),
            Decoded::Hash(h) => h.is_empty(),
            Decoded::ZSet(z) => z.is_empty(),
        };
        // Redis refuses empty collections in a payload (its sanitizer's "empty keys").
        if empty {
            return Err(BAD);
        }
        Ok(v)
    }
}

fn pairs(flat: Vec<Bytes>) -> Result<Vec<(Bytes, Bytes)>, RdbError> {
    if !flat.len().is_multiple_of(2) {
        return Err(BAD);
    }
    let mut it = flat.into_iter();
    let mut out = Vec::new();
    while let (Some(a), Some(b)) = (it.next(), it.next()) {
        out.push((a, b));
    }
    Ok(out)
}

fn scored(flat: Vec<Bytes>) -> Result<Vec<(Bytes, f64)>, RdbError> {
    pairs(flat)?
        .into_iter()
        .map(|(m, s)| {
            let score = std::str::from_utf8(&s).ok().and_then(|t| t.parse::<f64>().ok()).filter(|d| !d.is_nan()).ok_or(BAD)?;
            Ok((m, score))
        })
        .collect()
}

fn intset(blob: &[u8]) -> Result<Vec<Bytes>, RdbError> {
    if blob.len() < 8 {
        return Err(BAD);
    }
    let width = u32::from_le_bytes([blob[0], blob[1], blob[2], blob[3]]) as usize;
    let n = u32::from_le_bytes([blob[4], blob[5], blob[6], blob[7]]) as usize;
    if !matches!(width, 2 | 4 | 8) || blob.len() != 8 + n.checked_mul(width).ok_or(BAD)? {
        return Err(BAD);
    }
    let values: Vec<i64> = blob[8..]
        .chunks(width)
        .map(|c| match width {
            2 => i16::from_le_bytes([c[0], c[1]]) as i64,
            4 => i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i64,
            _ => i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]),
        })
        .collect();
    // An intset is strictly ascending (Redis's deep sanitizer checks it; one that is not
    // would break Redis's binary search, and a duplicate would change the set's size).
    if values.windows(2).any(|w| w[0] >= w[1]) {
        return Err(BAD);
    }
    Ok(values.into_iter().map(|v| Bytes::from(v.to_string())).collect())
}

/// The elements of a listpack (Redis 7's compact list encoding).
pub fn listpack(lp: &[u8]) -> Result<Vec<Bytes>, RdbError> {
    let mut it = LpIter::new(lp)?;
    let mut out = Vec::new();
    while let Some(e) = it.next_entry()? {
        out.push(match e {
            LpEntry::Int(v) => Bytes::from(v.to_string()),
            LpEntry::Str(s) => Bytes::copy_from_slice(s),
        });
    }
    it.finish()?;
    Ok(out)
}

/// One listpack element as stored: an integer encoding or a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LpEntry<'a> {
    Int(i64),
    Str(&'a [u8]),
}

/// Walks a listpack's elements with Redis's deep checks (`lpValidateIntegrity`): header
/// size, terminator, every encoding and back-length in bounds; `finish` checks the count.
pub(super) struct LpIter<'a> {
    r: Reader<'a>,
    declared: u16,
    seen: usize,
}

impl<'a> LpIter<'a> {
    pub(super) fn new(lp: &'a [u8]) -> Result<Self, RdbError> {
        if lp.len() < 7 || u32::from_le_bytes([lp[0], lp[1], lp[2], lp[3]]) as usize != lp.len() || lp[lp.len() - 1] != 0xff {
            return Err(BAD);
        }
        // The terminator is cut off: an 0xff where an element should start is bad data.
        Ok(LpIter { r: Reader { data: &lp[..lp.len() - 1], pos: 6 }, declared: u16::from_le_bytes([lp[4], lp[5]]), seen: 0 })
    }

    /// The next element, or None at the end.
    pub(super) fn next_entry(&mut self) -> Result<Option<LpEntry<'a>>, RdbError> {
        let r = &mut self.r;
        if r.pos >= r.data.len() {
            return Ok(None);
        }
        let start = r.pos;
        let b = r.byte()?;
        let item = if b & 0x80 == 0 {
            LpEntry::Int(b as i64)
        } else if b & 0xc0 == 0x80 {
            LpEntry::Str(r.take((b & 0x3f) as usize)?)
        } else if b & 0xe0 == 0xc0 {
            let raw = (((b & 0x1f) as u16) << 8) | r.byte()? as u16;
            // 13-bit two's complement.
            LpEntry::Int(if raw >= 1 << 12 { raw as i64 - (1 << 13) } else { raw as i64 })
        } else if b & 0xf0 == 0xe0 {
            let len = (((b & 0x0f) as usize) << 8) | r.byte()? as usize;
            LpEntry::Str(r.take(len)?)
        } else {
            match b {
                0xf0 => {
                    let len = u32::from_le_bytes(r.take(4)?.try_into().map_err(|_| BAD)?) as usize;
                    LpEntry::Str(r.take(len)?)
                }
                0xf1 => LpEntry::Int(i16::from_le_bytes(r.take(2)?.try_into().map_err(|_| BAD)?) as i64),
                0xf2 => {
                    let t = r.take(3)?;
                    LpEntry::Int((i32::from_le_bytes([0, t[0], t[1], t[2]]) >> 8) as i64)
                }
                0xf3 => LpEntry::Int(i32::from_le_bytes(r.take(4)?.try_into().map_err(|_| BAD)?) as i64),
                0xf4 => LpEntry::Int(i64::from_le_bytes(r.take(8)?.try_into().map_err(|_| BAD)?)),
                _ => return Err(BAD),
            }
        };
        // The entry's length, written backwards (7 bits per byte), closes every entry; it
        // must say what lpEncodeBacklen would (Redis's lpValidateNext compares the value).
        let mut back = [0u8; 5];
        let n = lp_backlen(&mut back, (r.pos - start) as u64);
        if r.take(n)? != &back[..n] {
            return Err(BAD);
        }
        self.seen += 1;
        Ok(Some(item))
    }

    /// At the end: the header's count must match, unless it says "unknown" (65535).
    pub(super) fn finish(&self) -> Result<(), RdbError> {
        if self.r.pos != self.r.data.len() || (self.declared != u16::MAX && self.declared as usize != self.seen) {
            return Err(BAD);
        }
        Ok(())
    }
}

/// How many bytes Redis's lpEncodeBacklen takes for an entry of length `l` (1 to 5).
pub(super) fn lp_backlen_size(l: u64) -> usize {
    match l {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2097150 => 3,
        2097151..=268435454 => 4,
        _ => 5,
    }
}

/// Redis's lpEncodeBacklen: the length `l` of an entry, written to be read backwards.
/// Returns how many bytes of `buf` it took (1 to 5).
pub(super) fn lp_backlen(buf: &mut [u8; 5], l: u64) -> usize {
    let n = lp_backlen_size(l);
    // The first byte carries the high bits without the continuation flag; the others
    // carry 7 bits each, flagged with 128, the lowest bits last.
    for (i, slot) in buf.iter_mut().take(n).enumerate() {
        let shift = 7 * (n - 1 - i);
        let bits = ((l >> shift) & 127) as u8;
        *slot = if i == 0 { (l >> shift) as u8 } else { bits | 128 };
    }
    n
}

/// The elements of a ziplist (the compact encoding before Redis 7).
fn ziplist(zl: &[u8]) -> Result<Vec<Bytes>, RdbError> {
    if zl.len() < 11 || u32::from_le_bytes([zl[0], zl[1], zl[2], zl[3]]) as usize != zl.len() || zl[zl.len() - 1] != 0xff {
        return Err(BAD);
    }
    let mut r = Reader { data: &zl[..zl.len() - 1], pos: 10 };
    let mut out = Vec::new();
    while r.pos < r.data.len() {
        if r.byte()? == 0xfe {
            r.take(4)?;
        }
        let b = r.byte()?;
        let item = match b >> 6 {
            0 => Bytes::copy_from_slice(r.take((b & 0x3f) as usize)?),
            1 => {
                let len = (((b & 0x3f) as usize) << 8) | r.byte()? as usize;
                Bytes::copy_from_slice(r.take(len)?)
            }
            2 if b == 0x80 => {
                let len = u32::from_be_bytes(r.take(4)?.try_into().map_err(|_| BAD)?) as usize;
                Bytes::copy_from_slice(r.take(len)?)
            }
            3 => {
                let v: i64 = match b {
                    0xc0 => i16::from_le_bytes(r.take(2)?.try_into().map_err(|_| BAD)?) as i64,
                    0xd0 => i32::from_le_bytes(r.take(4)?.try_into().map_err(|_| BAD)?) as i64,
                    0xe0 => i64::from_le_bytes(r.take(8)?.try_into().map_err(|_| BAD)?),
                    0xf0 => {
                        let t = r.take(3)?;
                        (i32::from_le_bytes([0, t[0], t[1], t[2]]) >> 8) as i64
                    }
                    0xfe => r.byte()? as i8 as i64,
                    0xf1..=0xfd => (b & 0x0f) as i64 - 1,
                    _ => return Err(BAD),
                };
                Bytes::from(v.to_string())
            }
            _ => return Err(BAD),
        };
        out.push(item);
    }
    Ok(out)
}

/// LZF decompression (the format Redis compresses RDB strings with), bounds-checked.
fn lzf_decompress(input: &[u8], out_len: usize) -> Result<Vec<u8>, RdbError> {
    let mut out: Vec<u8> = Vec::with_capacity(out_len);
    let mut i = 0;
    while i < input.len() {
        let ctrl = input[i] as usize;
        i += 1;
        if ctrl < 32 {
            // A literal run of ctrl + 1 bytes.
            let n = ctrl + 1;
            let lit = input.get(i..i + n).ok_or(BAD)?;
            if out.len() + n > out_len {
                return Err(BAD);
            }
            out.extend_from_slice(lit);
            i += n;
        } else {
            // A back reference: length (ctrl >> 5) + 2, extended by a byte when 7.
            let mut len = ctrl >> 5;
            if len == 7 {
                len += *input.get(i).ok_or(BAD)? as usize;
                i += 1;
            }
            len += 2;
            let back = ((ctrl & 0x1f) << 8) + *input.get(i).ok_or(BAD)? as usize + 1;
            i += 1;
            if back > out.len() || out.len() + len > out_len {
                return Err(BAD);
            }
            let from = out.len() - back;
            for k in 0..len {
                let b = out[from + k];
                out.push(b);
            }
        }
    }
    if out.len() != out_len {
        return Err(BAD);
    }
    Ok(out)
}

/// The RDB opcode of a function library (its code as one string), Redis 7.0's FUNCTION DUMP.
const OPCODE_FUNCTION2: u8 = 245;
/// The pre-7.0-GA library opcode, refused as Redis refuses it.
const OPCODE_FUNCTION_PRE_GA: u8 = 246;

/// Why FUNCTION RESTORE refused a payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FunctionPayloadError {
    Rdb(RdbError),
    /// An object that is not a library (`given type is not a function`).
    NotFunction,
    PreGa,
}

/// FUNCTION DUMP's payload: each library's code behind opcode 245, then version and CRC.
pub fn encode_functions<'a>(codes: impl Iterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for code in codes {
        out.push(OPCODE_FUNCTION2);
        put_string(&mut out, code);
    }
    seal(out)
}

/// The library codes of a FUNCTION DUMP payload (footer checked).
pub fn decode_functions(payload: &[u8]) -> Result<Vec<Vec<u8>>, FunctionPayloadError> {
    let body = verify(payload).map_err(FunctionPayloadError::Rdb)?;
    let mut r = Reader { data: body, pos: 0 };
    let mut codes = Vec::new();
    while r.pos < body.len() {
        match r.byte().map_err(FunctionPayloadError::Rdb)? {
            OPCODE_FUNCTION2 => codes.push(r.string().map_err(FunctionPayloadError::Rdb)?),
            OPCODE_FUNCTION_PRE_GA => return Err(FunctionPayloadError::PreGa),
            _ => return Err(FunctionPayloadError::NotFunction),
        }
    }
    Ok(codes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_payloads_round_trip_and_read_redis_7() {
        // FUNCTION DUMP of redis-server 7.0.15 with one library.
        let redis = b"\xf5@C#!lua name=t1\nredis.register_function('a', function() return 1 end)\n\x00~\x9f\x12z\x8aV\xb7\xa1";
        let codes = decode_functions(redis).unwrap();
        assert_eq!(codes, vec![b"#!lua name=t1\nredis.register_function('a', function() return 1 end)".to_vec()]);
        assert_eq!(encode_functions(codes.iter().map(|c| &c[..])), redis.to_vec());
        assert_eq!(decode_functions(&encode_str(b"x")), Err(FunctionPayloadError::NotFunction));
        assert_eq!(decode_functions(b"\n\x00"), Err(FunctionPayloadError::Rdb(RdbError::VersionOrChecksum)));
        assert_eq!(decode_functions(&encode_functions(std::iter::empty())).unwrap(), Vec::<Vec<u8>>::new());
    }

    #[test]
    fn intsets_must_be_strictly_ascending() {
        let blob = |vals: &[i16]| {
            let mut b = vec![2, 0, 0, 0, vals.len() as u8, 0, 0, 0];
            for v in vals {
                b.extend_from_slice(&v.to_le_bytes());
            }
            b
        };
        assert_eq!(intset(&blob(&[1, 3, 5])).unwrap(), vec![Bytes::from("1"), Bytes::from("3"), Bytes::from("5")]);
        assert_eq!(intset(&blob(&[5, 1, 3])), Err(BAD));
        assert_eq!(intset(&blob(&[1, 1])), Err(BAD));
    }

    #[test]
    fn listpack_back_lengths_are_redis_encoding() {
        let enc = |l: u64| {
            let mut buf = [0u8; 5];
            let n = lp_backlen(&mut buf, l);
            buf[..n].to_vec()
        };
        // lpEncodeBacklen: 2 bytes below 16383, 3 below 2097151, 4 below 268435455.
        assert_eq!(enc(127), [127]);
        assert_eq!(enc(128), [1, 128]);
        assert_eq!(enc(16382), [127, 254]);
        assert_eq!(enc(16383), [0, 255, 255]);
        assert_eq!(enc(2097151), [0, 255, 255, 255]);
        assert_eq!(enc(268435455), [0, 255, 255, 255, 255]);
        // A string of 16378 bytes makes an entry of 16383: its back-length takes 3 bytes.
        let lp = |back: &[u8]| {
            let mut lp = vec![0, 0, 0, 0, 1, 0, 0xf0];
            lp.extend_from_slice(&16378u32.to_le_bytes());
            lp.extend_from_slice(&[b'x'; 16378]);
            lp.extend_from_slice(back);
            lp.push(0xff);
            let total = (lp.len() as u32).to_le_bytes();
            lp[..4].copy_from_slice(&total);
            lp
        };
        assert_eq!(listpack(&lp(&[0, 255, 255])).unwrap(), vec![Bytes::from(vec![b'x'; 16378])]);
        assert_eq!(listpack(&lp(&[127, 255])), Err(BAD));
    }

    #[test]
    fn crc64_is_redis_jones() {
        assert_eq!(crc64(b"123456789"), 0xe9c6d914c4b8d9ca);
    }

    #[test]
    fn decodes_redis_7_payloads() {
        // DUMP replies of redis-server 7.0.15.
        let cases: &[(&[u8], Decoded)] = &[
            (b"\x00\x05hello\n\x00cr\xdfve4 \n", Decoded::Str(b"hello".to_vec())),
            (b"\x00\xc190\n\x00\x9d\x94\xea'\x93\xfc\x08\xb9", Decoded::Str(b"12345".to_vec())),
            (b"\x00\xc3\t@d\x01aa\xe0W\x00\x01aa\n\x00\xe8\xa3\xb5\x07\xb0m\xf2q", Decoded::Str(vec![b'a'; 100])),
            (
                b"\x12\x01\x02\x11\x11\x00\x00\x00\x04\x00\x81a\x02\x81b\x02\x01\x01\x02\x01\xff\n\x00mrq>\x9bCH+",
                Decoded::List(["a", "b", "1", "2"].iter().map(|s| Bytes::from(*s)).collect()),
            ),
            (
                b"\x0b\x0e\x02\x00\x00\x00\x03\x00\x00\x00\x01\x00\x02\x00\x03\x00\n\x00\xa5\x02\\\xe2mnM\x1b",
                Decoded::Set(["1", "2", "3"].iter().map(|s| Bytes::from(*s)).collect()),
            ),
            (b"\x02\x02\x01a\x01b\n\x00\xfed!%\xeb\x03=\r", Decoded::Set(vec![Bytes::from("a"), Bytes::from("b")])),
            (
                b"\x10\r\r\x00\x00\x00\x02\x00\x81f\x02\x81v\x02\xff\n\x00 \xf1=D#T\x08\x9d",
                Decoded::Hash(vec![(Bytes::from("f"), Bytes::from("v"))]),
            ),
            (
                b"\x11\x14\x14\x00\x00\x00\x04\x00\x81a\x02\x01\x01\x81b\x02\x832.5\x04\xff\n\x00\xd4Ln\xa4\xf6D\xd9\xd7",
                Decoded::ZSet(vec![(Bytes::from("a"), 1.0), (Bytes::from("b"), 2.5)]),
            ),
        ];
        for (payload, want) in cases {
            assert_eq!(&decode(payload).unwrap(), want);
        }
    }

    #[test]
    fn our_payloads_round_trip_and_damage_is_refused() {
        let items = [Bytes::from("x"), Bytes::from("-5"), Bytes::from("70000"), Bytes::from(vec![b'z'; 300])];
        let p = encode_elements(false, items.len(), items.iter());
        assert_eq!(decode(&p).unwrap(), Decoded::List(items.to_vec()));
        assert_eq!(decode(&encode_str(b"12")).unwrap(), Decoded::Str(b"12".to_vec()));
        assert_eq!(decode(&encode_str(b"012")).unwrap(), Decoded::Str(b"012".to_vec()));
        for i in 0..p.len() {
            let mut bad = p.clone();
            bad[i] ^= 0x40;
            assert!(decode(&bad).is_err(), "a flipped byte at {i} passed");
        }
        // A damaged body with a valid checksum is bad data, never a panic.
        for cut in 1..p.len() - 10 {
            let body = p[..cut].to_vec();
            assert_eq!(decode(&seal(body)), Err(RdbError::BadFormat), "cut at {cut}");
        }
    }
}
