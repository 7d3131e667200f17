//! The base snapshot: every key (with its expiry) and the script table, as of one log offset.
//!
//! ```text
//! magic "VMLNSNAP" | version u32 LE | stream db u32 LE | log offset u64 LE |
//! payload (bincode 2, standard config) | CRC-64 u64 LE
//! ```
//! The CRC (crc64fast, Jones polynomial as Redis uses) covers every byte before it; the file
//! size bounds the payload. The payload is the script table (`u64 count`, then each body as
//! bytes), then the keys, each `db: u32` followed by the entry (see [`encode_entry`]), ended
//! by `u32::MAX`. Keys carry their database so a rewrite can write them in any order (a key
//! about to change is written ahead of the others). Bincode is used only here.
//!
//! Version 2 gives meaning to the word after the version (version 1 wrote 0 there): the
//! database the log is in at the snapshot's offset. A replica's log is its primary's stream
//! copied byte for byte, so an incremental file it starts after a rewrite can begin without
//! a SELECT; the loader starts in this database. Version 1 files load as database 0.
//!
//! Version 3 adds the function libraries after the script table (`u64 count`, then each
//! library's code as bytes). Versions 1 and 2 load with no libraries.
//!
//! Version 4 adds streams (type 6, see [`encode_stream`]); older files hold none and load
//! as before.

use bytes::Bytes;

use crate::db::hash::HashValue;
use crate::db::list::ListValue;
use crate::db::set::SetValue;
use crate::db::stream::{Consumer, Group, Nack, StreamId, StreamValue};
use crate::db::zset::ZSetValue;
use crate::db::{Entry, Keyspace};
use crate::db::{StrEncoding, StrValue, Value};

pub const MAGIC: &[u8; 8] = b"VMLNSNAP";
pub const VERSION: u32 = 4;
const HEADER: usize = 8 + 4 + 4 + 8;
const END_OF_DBS: u32 = u32::MAX;

const T_STR: u8 = 0;
const T_LIST: u8 = 1;
const T_SET: u8 = 2;
const T_ZSET: u8 = 3;
const T_HASH: u8 = 4;
const T_STREAM: u8 = 6;

fn cfg() -> bincode::config::Configuration {
    bincode::config::standard()
}

pub use crate::db::BuildLimits;

struct Enc(Vec<u8>);

impl Enc {
    fn put<T: bincode::Encode + ?Sized>(&mut self, v: &T) {
        // Writing into a Vec cannot fail.
        let _ = bincode::encode_into_std_write(v, &mut self.0, cfg());
    }
}

/// Serializes one key (the unit of work of an incremental rewrite): `db u32`, key bytes,
/// expiry `Option<i64>` (absolute ms), type u8 (Redis's type numbers), then the value.
pub fn encode_entry(out: &mut Vec<u8>, db: usize, key: &[u8], entry: &Entry, expire_at: Option<i64>) {
    let mut e = Enc(std::mem::take(out));
    e.put(&(db as u32));
    e.put(key);
    e.put(&expire_at);
    match &entry.value {
        Value::Str(s) => {
            e.put(&T_STR);
            e.put(&(s.enc() as u8));
            e.put(s.bytes());
        }
        Value::List(l) => {
            e.put(&T_LIST);
            e.put(&(l.len() as u64));
            for item in l.iter() {
                e.put(item);
            }
        }
        Value::Set(s) => {
            e.put(&T_SET);
            e.put(&(s.len() as u64));
            for m in s.iter() {
                e.put(&m[..]);
            }
        }
        Value::ZSet(z) => {
            e.put(&T_ZSET);
            e.put(&(z.len() as u64));
            for (m, score) in z.iter() {
                e.put(m);
                e.put(&score);
            }
        }
        Value::Hash(h) => {
            e.put(&T_HASH);
            e.put(&(h.len() as u64));
            for (f, v) in h.iter() {
                e.put(f);
                e.put(v);
            }
        }
        Value::Stream(s) => {
            e.put(&T_STREAM);
            encode_stream(&mut e, s);
        }
    }
    *out = e.0;
}

fn put_id(e: &mut Enc, id: StreamId) {
    e.put(&id.ms);
    e.put(&id.seq);
}

/// A stream: its counters (last ID, recorded first ID, largest deleted ID, entries added),
/// its live entries (`u64 count`; each ID, `u64 count` of pairs, field and value bytes),
/// then its groups (`u64 count`; each name, last ID, entries read `i64`, its pending
/// entries: ID, delivery time, delivery count, consumer name; its consumers: name, seen
/// time).
fn encode_stream(e: &mut Enc, s: &StreamValue) {
    for id in [s.last_id, s.first_id, s.max_deleted_id] {
        put_id(e, id);
    }
    e.put(&s.entries_added);
    let entries = s.all();
    e.put(&(entries.len() as u64));
    for (id, fields) in entries {
        put_id(e, id);
        e.put(&(fields.len() as u64));
        for (f, v) in fields {
            e.put(&f[..]);
            e.put(&v[..]);
        }
    }
    e.put(&(s.groups.len() as u64));
    for (name, g) in &s.groups {
        e.put(&name[..]);
        put_id(e, g.last_id);
        e.put(&g.entries_read);
        e.put(&(g.pel.len() as u64));
        for (id, n) in &g.pel {
            put_id(e, *id);
            e.put(&n.delivery_time);
            e.put(&n.delivery_count);
            e.put(&n.consumer[..]);
        }
        e.put(&(g.consumers.len() as u64));
        for (cname, c) in &g.consumers {
            e.put(&cname[..]);
            e.put(&c.seen_time);
        }
    }
}

/// The scripting state a snapshot carries: the cached scripts' bodies and the function
/// libraries' codes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scripting {
    pub scripts: Vec<Bytes>,
    pub libraries: Vec<Bytes>,
}

/// The header, the script table and the libraries: the start of every snapshot.
pub fn encode_start(scripting: &Scripting, log_offset: u64, stream_db: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + 64);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&stream_db.to_le_bytes());
    out.extend_from_slice(&log_offset.to_le_bytes());
    let mut e = Enc(out);
    for table in [&scripting.scripts, &scripting.libraries] {
        e.put(&(table.len() as u64));
        for s in table {
            e.put(&s[..]);
        }
    }
    e.0
}

/// The end-of-keys marker (the CRC follows it).
pub fn encode_end(out: &mut Vec<u8>) {
    let mut e = Enc(std::mem::take(out));
    e.put(&END_OF_DBS);
    *out = e.0;
}

/// A whole snapshot of `ks` with `scripting` covering `log_offset`, in one go.
pub fn encode(ks: &Keyspace, scripting: &Scripting, log_offset: u64, stream_db: u32) -> Vec<u8> {
    let mut out = encode_start(scripting, log_offset, stream_db);
    for (i, db) in ks.dbs.iter().enumerate() {
        for (key, entry) in db.iter() {
            encode_entry(&mut out, i, key, entry, db.expire_of(key, entry));
        }
    }
    encode_end(&mut out);
    let crc = super::format::crc(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// What a snapshot holds.
pub struct Loaded {
    pub log_offset: u64,
    /// The database the log is in at `log_offset` (see the module notes).
    pub stream_db: u32,
    pub scripting: Scripting,
    pub keys: usize,
}

/// Why a snapshot does not load, with the byte offset where it goes wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotError {
    pub offset: usize,
    pub reason: String,
}

struct Dec<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Dec<'a> {
    fn err(&self, reason: &str) -> SnapshotError {
        SnapshotError { offset: self.pos, reason: reason.into() }
    }

    fn get<T: bincode::Decode<()>>(&mut self) -> Result<T, SnapshotError> {
        let (v, n) = bincode::decode_from_slice::<T, _>(&self.data[self.pos..], cfg())
            .map_err(|e| self.err(&format!("undecodable payload ({e})")))?;
        self.pos += n;
        Ok(v)
    }

    fn bytes(&mut self) -> Result<&'a [u8], SnapshotError> {
        let (v, n) = bincode::borrow_decode_from_slice::<&'a [u8], _>(&self.data[self.pos..], cfg())
            .map_err(|e| self.err(&format!("undecodable payload ({e})")))?;
        self.pos += n;
        Ok(v)
    }

    /// A count, bounded by the bytes left (every element takes at least one byte), so a
    /// garbage count never makes a huge allocation.
    fn count(&mut self) -> Result<usize, SnapshotError> {
        let n: u64 = self.get()?;
        if n > (self.data.len() - self.pos) as u64 {
            return Err(self.err("count larger than the data"));
        }
        Ok(n as usize)
    }

    fn id(&mut self) -> Result<StreamId, SnapshotError> {
        Ok(StreamId::new(self.get()?, self.get()?))
    }

    /// The inverse of [`encode_stream`], every ID order and reference checked.
    fn stream(&mut self, limits: &BuildLimits) -> Result<StreamValue, SnapshotError> {
        let (last_id, first_id, max_deleted_id) = (self.id()?, self.id()?, self.id()?);
        let entries_added: u64 = self.get()?;
        let mut s = StreamValue::new();
        let mut prev = None;
        for _ in 0..self.count()? {
            let id = self.id()?;
            if prev.is_some_and(|p| p >= id) || id > last_id {
                return Err(self.err("stream entries out of order"));
            }
            prev = Some(id);
            let n = self.count()?;
            let mut pairs = Vec::with_capacity(n * 2);
            for _ in 0..n * 2 {
                pairs.push(Bytes::copy_from_slice(self.bytes()?));
            }
            s.append(id, &pairs, limits.stream);
        }
        s.last_id = last_id;
        s.first_id = first_id;
        s.max_deleted_id = max_deleted_id;
        s.entries_added = entries_added;
        for _ in 0..self.count()? {
            let name = Bytes::copy_from_slice(self.bytes()?);
            let mut g = Group::new(self.id()?, self.get()?);
            for _ in 0..self.count()? {
                let id = self.id()?;
                let (delivery_time, delivery_count) = (self.get()?, self.get()?);
                let consumer = Bytes::copy_from_slice(self.bytes()?);
                g.pel.insert(id, Nack { delivery_time, delivery_count, consumer });
            }
            for _ in 0..self.count()? {
                let cname = Bytes::copy_from_slice(self.bytes()?);
                g.consumers.insert(cname, Consumer { seen_time: self.get()?, pel: Default::default() });
            }
            for (id, n) in &g.pel {
                let Some(c) = g.consumers.get_mut(&n.consumer) else {
                    return Err(self.err("pending entry of an unknown consumer"));
                };
                c.pel.insert(*id);
            }
            s.groups.insert(name, g);
        }
        Ok(s)
    }

    fn value(&mut self, limits: &BuildLimits) -> Result<Value, SnapshotError> {
        let at = self.pos;
        let tag: u8 = self.get()?;
        Ok(match tag {
            T_STR => {
                let enc = match self.get::<u8>()? {
                    0 => StrEncoding::Auto,
                    1 => StrEncoding::Raw,
                    _ => StrEncoding::NotInt,
                };
                Value::Str(StrValue::from_slice(self.bytes()?, enc))
            }
            T_LIST => {
                let mut l = ListValue::new();
                for _ in 0..self.count()? {
                    l.push_back(Bytes::copy_from_slice(self.bytes()?));
                }
                Value::List(Box::new(l))
            }
            T_SET => {
                let n = self.count()?;
                let mut s: Option<SetValue> = None;
                for _ in 0..n {
                    let m = self.bytes()?;
                    s.get_or_insert_with(|| SetValue::for_member(m)).add(m, limits.max_intset);
                }
                Value::Set(Box::new(s.unwrap_or_default()))
            }
            T_ZSET => {
                let mut z = ZSetValue::new();
                for _ in 0..self.count()? {
                    let m = self.bytes()?;
                    let score: f64 = self.get()?;
                    if score.is_nan() {
                        return Err(SnapshotError { offset: at, reason: "NaN score".into() });
                    }
                    if z.score(m).is_some() {
                        z.update(m, score);
                    } else {
                        z.insert(m, score, limits.zset_entries, limits.zset_value);
                    }
                }
                Value::ZSet(z)
            }
            T_HASH => {
                let mut h = HashValue::new();
                for _ in 0..self.count()? {
                    let f = self.bytes()?;
                    let v = self.bytes()?;
                    h.set(f, v, limits.hash);
                }
                Value::Hash(h)
            }
            T_STREAM => Value::Stream(Box::new(self.stream(limits)?)),
            _ => return Err(SnapshotError { offset: at, reason: format!("unknown value type {tag}") }),
        })
    }
}

/// Checks the frame (magic, version, CRC) and returns the log offset, the stream database and
/// the payload's bounds.
pub fn check_frame(data: &[u8]) -> Result<(u64, u32, std::ops::Range<usize>), SnapshotError> {
    let bad = |offset: usize, reason: &str| Err(SnapshotError { offset, reason: reason.into() });
    if data.len() < HEADER + 8 {
        return bad(data.len(), "file too short for a snapshot");
    }
    if &data[..8] != MAGIC {
        return bad(0, "not a Vermilion snapshot (bad magic)");
    }
    let word = |at: usize| u32::from_le_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]);
    let long = |at: usize| u64::from_le_bytes(data[at..at + 8].try_into().unwrap_or([0; 8]));
    let version = word(8);
    if version == 0 || version > VERSION {
        return bad(8, &format!("snapshot format version {version} is not supported (this server reads 1 to {VERSION})"));
    }
    let end = data.len() - 8;
    if super::format::crc(&data[..end]) != long(end) {
        return bad(end, "CRC-64 mismatch");
    }
    Ok((long(16), word(12), HEADER..end))
}

/// Decodes a snapshot, inserting every key into `ks`.
pub fn decode(data: &[u8], ks: &mut Keyspace, limits: &BuildLimits) -> Result<Loaded, SnapshotError> {
    let databases = ks.dbs.len();
    decode_with(data, limits, databases, |db, key, value, expire_at| ks.db_mut(db).insert(key, value, expire_at, 0))
}

/// Checks a whole snapshot (frame and payload) without keeping anything.
pub fn validate(data: &[u8]) -> Result<Loaded, SnapshotError> {
    decode_with(data, &BuildLimits::default(), u32::MAX as usize, |_, _, _, _| {})
}

/// Decodes a snapshot, handing every key to `sink` (database, key, value, expiry).
pub fn decode_with(
    data: &[u8],
    limits: &BuildLimits,
    databases: usize,
    mut sink: impl FnMut(usize, Bytes, Value, Option<i64>),
) -> Result<Loaded, SnapshotError> {
    let (log_offset, stream_db, range) = check_frame(data)?;
    let mut d = Dec { data: &data[..range.end], pos: range.start };
    let version = u32::from_le_bytes([data[8], data[9], data[10], data[11]]);
    let mut scripting = Scripting::default();
    let tables = if version >= 3 { 2 } else { 1 };
    for table in [&mut scripting.scripts, &mut scripting.libraries].into_iter().take(tables) {
        for _ in 0..d.count()? {
            table.push(Bytes::copy_from_slice(d.bytes()?));
        }
    }
    let mut keys = 0;
    loop {
        let at = d.pos;
        let db: u32 = d.get()?;
        if db == END_OF_DBS {
            break;
        }
        if db as usize >= databases {
            return Err(SnapshotError { offset: at, reason: format!("database {db} out of range (databases {databases})") });
        }
        let key = Bytes::copy_from_slice(d.bytes()?);
        let expire_at: Option<i64> = d.get()?;
        let value = d.value(limits)?;
        sink(db as usize, key, value, expire_at);
        keys += 1;
    }
    if d.pos != range.end {
        return Err(d.err("trailing bytes after the last database"));
    }
    Ok(Loaded { log_offset, stream_db, scripting, keys })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_every_type() {
        let mut ks = Keyspace::new(16);
        let db = ks.db_mut(3);
        db.insert(Bytes::from_static(b"s"), Value::string("hello"), Some(123), 0);
        let mut l = ListValue::new();
        l.push_back(Bytes::from_static(b"a"));
        l.push_back(Bytes::from_static(b"b"));
        db.insert(Bytes::from_static(b"l"), Value::List(Box::new(l)), None, 0);
        let mut z = ZSetValue::new();
        z.insert(b"m", 1.5, 128, 64);
        db.insert(Bytes::from_static(b"z"), Value::ZSet(z), None, 0);
        let scripting = Scripting {
            scripts: vec![Bytes::from_static(b"return 1")],
            libraries: vec![Bytes::from_static(b"#!lua name=l\nredis.register_function('f', function() end)")],
        };
        let bytes = encode(&ks, &scripting, 42, 5);
        let mut back = Keyspace::new(16);
        let loaded = decode(&bytes, &mut back, &BuildLimits::default()).expect("decodes");
        assert_eq!((loaded.log_offset, loaded.stream_db, loaded.keys), (42, 5, 3));
        assert_eq!(loaded.scripting, scripting);
        assert_eq!(back.db(3).peek(b"s").map(|e| (e.value.clone(), back.db(3).expire_at(b"s"))), Some((Value::string("hello"), Some(123))));
        assert_eq!(back.db(3).peek(b"l").map(|e| e.value.clone()), ks.db(3).peek(b"l").map(|e| e.value.clone()));
    }

    /// A snapshot in the form of versions 1 and 2 (no library table), written by hand.
    fn legacy(version: u32, stream_db: u32, scripts: &[&[u8]], ks: &Keyspace) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&version.to_le_bytes());
        out.extend_from_slice(&stream_db.to_le_bytes());
        out.extend_from_slice(&9u64.to_le_bytes());
        let mut e = Enc(out);
        e.put(&(scripts.len() as u64));
        for s in scripts {
            e.put(*s);
        }
        let mut out = e.0;
        for (i, db) in ks.dbs.iter().enumerate() {
            for (key, entry) in db.iter() {
                encode_entry(&mut out, i, key, entry, db.expire_of(key, entry));
            }
        }
        encode_end(&mut out);
        let crc = crate::aof::format::crc(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    #[test]
    fn versions_1_and_2_load_without_libraries() {
        let mut ks = Keyspace::new(16);
        ks.db_mut(2).insert(Bytes::from_static(b"k"), Value::string("v"), None, 0);
        let v2 = legacy(2, 4, &[b"return 1"], &ks);
        let mut back = Keyspace::new(16);
        let loaded = decode(&v2, &mut back, &BuildLimits::default()).expect("a version 2 snapshot loads");
        assert_eq!((loaded.log_offset, loaded.stream_db, loaded.keys), (9, 4, 1));
        assert_eq!(loaded.scripting, Scripting { scripts: vec![Bytes::from_static(b"return 1")], libraries: vec![] });
        assert!(back.db(2).peek(b"k").is_some());
        // Version 1's word at 12 was always 0.
        let v1 = legacy(1, 0, &[], &ks);
        let loaded = decode(&v1, &mut Keyspace::new(16), &BuildLimits::default()).expect("a version 1 snapshot loads");
        assert_eq!((loaded.log_offset, loaded.stream_db, loaded.keys), (9, 0, 1));
    }

    #[test]
    fn streams_round_trip_with_their_groups() {
        let mut s = StreamValue::new();
        let limits = crate::db::stream::NodeLimits { max_bytes: 4096, max_entries: 3 };
        for i in 1..=10u64 {
            s.append(StreamId::new(i, 1), &[Bytes::from_static(b"f"), Bytes::from(i.to_string())], limits);
        }
        assert!(s.delete(StreamId::new(4, 1)));
        s.max_deleted_id = StreamId::new(4, 1);
        s.last_id = StreamId::new(20, 0);
        let mut g = Group::new(StreamId::new(5, 1), 5);
        g.create_consumer(b"alice", 77);
        g.create_consumer(b"bob", 78);
        g.assign(StreamId::new(2, 1), &Bytes::from_static(b"alice"), 1000, |_| 3);
        g.assign(StreamId::new(5, 1), &Bytes::from_static(b"alice"), 1001, |_| 1);
        s.groups.insert(Bytes::from_static(b"g"), g);
        s.groups.insert(Bytes::from_static(b"empty"), Group::new(StreamId::MIN, -1));
        let mut ks = Keyspace::new(16);
        ks.db_mut(0).insert(Bytes::from_static(b"st"), Value::Stream(Box::new(s.clone())), None, 0);
        let bytes = encode(&ks, &Scripting::default(), 1, 0);
        let mut back = Keyspace::new(16);
        decode(&bytes, &mut back, &BuildLimits::default()).expect("decodes");
        let Some(Value::Stream(got)) = back.db(0).peek(b"st").map(|e| e.value.clone()) else { panic!("stream lost") };
        assert_eq!(got.all(), s.all());
        assert_eq!(
            (got.last_id, got.first_id, got.max_deleted_id, got.entries_added),
            (s.last_id, s.first_id, s.max_deleted_id, s.entries_added)
        );
        assert_eq!(got.groups, s.groups);
    }

    /// A version 3 file (the form before streams) still loads.
    #[test]
    fn version_3_loads() {
        let mut ks = Keyspace::new(16);
        ks.db_mut(1).insert(Bytes::from_static(b"k"), Value::string("v"), None, 0);
        let mut v3 = encode(&ks, &Scripting { scripts: vec![], libraries: vec![Bytes::from_static(b"lib")] }, 5, 1);
        v3[8..12].copy_from_slice(&3u32.to_le_bytes());
        let end = v3.len() - 8;
        let crc = crate::aof::format::crc(&v3[..end]);
        v3[end..].copy_from_slice(&crc.to_le_bytes());
        let mut back = Keyspace::new(16);
        let loaded = decode(&v3, &mut back, &BuildLimits::default()).expect("a version 3 snapshot loads");
        assert_eq!((loaded.log_offset, loaded.keys, loaded.scripting.libraries.len()), (5, 1, 1));
        assert!(back.db(1).peek(b"k").is_some());
    }

    #[test]
    fn every_flipped_byte_is_refused() {
        let mut ks = Keyspace::new(16);
        ks.db_mut(0).insert(Bytes::from_static(b"k"), Value::string("v"), None, 0);
        let bytes = encode(&ks, &Scripting::default(), 0, 0);
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            assert!(decode(&bad, &mut Keyspace::new(16), &BuildLimits::default()).is_err(), "flip at {i}");
        }
    }
}
