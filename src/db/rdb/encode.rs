//! Writing RDB object encodings: lengths and strings as Redis writes them, every value type
//! in the plain forms Redis 7.0 loads into its own encodings, and DUMP payloads (the
//! encoding sealed with the RDB version and a CRC-64).

use super::{crc64, RDB_VERSION, T_HASH, T_LIST, T_SET, T_STREAM_LISTPACKS_2, T_STRING, T_ZSET_2};

pub(in crate::db) fn put_len(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.push(0x40 | (n >> 8) as u8);
        out.push(n as u8);
    } else if n <= u32::MAX as u64 {
        out.push(0x80);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

pub(in crate::db) fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    // Small integers as Redis writes them (rdbTryIntegerEncoding): the text must be the
    // canonical form of the number.
    if s.len() <= 11 {
        if let Some(v) = crate::util::parse_i64(s).filter(|v| v.to_string().as_bytes() == s) {
            if let Ok(v8) = i8::try_from(v) {
                out.extend_from_slice(&[0xc0, v8 as u8]);
                return;
            }
            if let Ok(v16) = i16::try_from(v) {
                out.push(0xc1);
                out.extend_from_slice(&v16.to_le_bytes());
                return;
            }
            if let Ok(v32) = i32::try_from(v) {
                out.push(0xc2);
                out.extend_from_slice(&v32.to_le_bytes());
                return;
            }
        }
    }
    put_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// Appends the version and the checksum to an object encoding.
pub(in crate::db) fn seal(mut out: Vec<u8>) -> Vec<u8> {
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// A DUMP payload for a string.
pub fn encode_str(s: &[u8]) -> Vec<u8> {
    let mut out = vec![T_STRING];
    put_string(&mut out, s);
    seal(out)
}

/// A DUMP payload for a list, set (`set: true`) of elements.
pub fn encode_elements(set: bool, len: usize, items: impl Iterator<Item = impl AsRef<[u8]>>) -> Vec<u8> {
    let mut out = vec![if set { T_SET } else { T_LIST }];
    put_elements(&mut out, len, items);
    seal(out)
}

/// A DUMP payload for a hash.
pub fn encode_hash<'a>(len: usize, pairs: impl Iterator<Item = (&'a [u8], &'a [u8])>) -> Vec<u8> {
    let mut out = vec![T_HASH];
    put_hash(&mut out, len, pairs);
    seal(out)
}

/// A DUMP payload for a sorted set (binary scores).
pub fn encode_zset(len: usize, members: impl Iterator<Item = (impl AsRef<[u8]>, f64)>) -> Vec<u8> {
    let mut out = vec![T_ZSET_2];
    put_zset(&mut out, len, members);
    seal(out)
}

fn put_elements(out: &mut Vec<u8>, len: usize, items: impl Iterator<Item = impl AsRef<[u8]>>) {
    put_len(out, len as u64);
    for item in items {
        put_string(out, item.as_ref());
    }
}

fn put_hash<'a>(out: &mut Vec<u8>, len: usize, pairs: impl Iterator<Item = (&'a [u8], &'a [u8])>) {
    put_len(out, len as u64);
    for (f, v) in pairs {
        put_string(out, f);
        put_string(out, v);
    }
}

fn put_zset(out: &mut Vec<u8>, len: usize, members: impl Iterator<Item = (impl AsRef<[u8]>, f64)>) {
    put_len(out, len as u64);
    for (m, score) in members {
        put_string(out, m.as_ref());
        out.extend_from_slice(&score.to_le_bytes());
    }
}

/// A value as an RDB file holds it: its type byte, then `key` if given (an RDB file's
/// entry; a DUMP payload has none), then the object in the plain encoding of its type.
pub fn put_value(out: &mut Vec<u8>, key: Option<&[u8]>, value: &crate::db::Value) {
    use crate::db::Value;
    out.push(match value {
        Value::Str(_) => T_STRING,
        Value::List(_) => T_LIST,
        Value::Set(_) => T_SET,
        Value::Hash(_) => T_HASH,
        Value::ZSet(_) => T_ZSET_2,
        Value::Stream(_) => T_STREAM_LISTPACKS_2,
    });
    if let Some(key) = key {
        put_string(out, key);
    }
    match value {
        Value::Str(s) => put_string(out, s.bytes()),
        Value::List(l) => put_elements(out, l.len(), l.iter()),
        Value::Set(s) => put_elements(out, s.len(), s.iter()),
        Value::Hash(h) => put_hash(out, h.len(), h.iter()),
        Value::ZSet(z) => put_zset(out, z.len(), z.iter()),
        Value::Stream(s) => crate::db::rdb_stream::put_stream(out, &s.to_rdb()),
    }
}

/// The DUMP payload of a value.
pub fn dump_payload(value: &crate::db::Value) -> Vec<u8> {
    let mut out = Vec::new();
    put_value(&mut out, None, value);
    seal(out)
}
