//! Redis's RDB file, version 10 (Redis 7.0): what SAVE, BGSAVE and SHUTDOWN write to
//! `dbfilename`, what the server loads at start without a log, and what `redis-cli --rdb`
//! receives. No I/O: the caller streams the encoder's bytes to a file and hands the parser
//! a file's bytes.
//!
//! A file is `REDIS0010`, auxiliary fields (opcode 250), the function libraries (245), then
//! per database SELECTDB (254) and RESIZEDB (251), each key as [EXPIRETIME_MS (252)]
//! [IDLE (248) | FREQ (249)] type, key, object; then EOF (255) and the CRC-64/Jones of
//! everything before it (8 bytes, little endian; zero when Redis ran with `rdbchecksum no`).
//! Objects are the ones of DUMP payloads (`rdb.rs`): written in their plain encodings, read
//! in every encoding Redis 7.0 loads. The parser is bounds-checked throughout: a file is
//! untrusted input.

use super::rdb::{put_len, put_string, put_value, Decoded, Len, Reader};
use super::Entry;

/// The header of a Redis 7.0 RDB file.
pub const HEADER: &[u8; 9] = b"REDIS0010";

const OP_FUNCTION2: u8 = 245;
const OP_FUNCTION_PRE_GA: u8 = 246;
const OP_MODULE_AUX: u8 = 247;
const OP_IDLE: u8 = 248;
const OP_FREQ: u8 = 249;
const OP_AUX: u8 = 250;
const OP_RESIZEDB: u8 = 251;
const OP_EXPIRETIME_MS: u8 = 252;
const OP_EXPIRETIME: u8 = 253;
const OP_SELECTDB: u8 = 254;
const OP_EOF: u8 = 255;

/// What a key carries for the eviction policy: its idle time in seconds (LRU policies) or
/// its LFU counter (LFU policies), as Redis saves the one its policy uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hint {
    None,
    Idle(u64),
    Freq(u8),
}

/// Writes a file in order. Keys of several databases may interleave (a background save
/// serializes a key about to change ahead of the walk): a SELECTDB goes out whenever the
/// database changes, which Redis's loader accepts.
#[derive(Default)]
pub struct Encoder {
    db: Option<usize>,
}

impl Encoder {
    /// The header, auxiliary fields (`name`, value as text; numbers are written with the
    /// integer encodings, as Redis's `rdbSaveAuxFieldStrInt` does) and function libraries.
    pub fn start<'a>(aux: &[(&str, String)], libraries: impl Iterator<Item = &'a [u8]>) -> (Encoder, Vec<u8>) {
        let mut out = HEADER.to_vec();
        for (name, value) in aux {
            out.push(OP_AUX);
            put_string(&mut out, name.as_bytes());
            put_string(&mut out, value.as_bytes());
        }
        for code in libraries {
            out.push(OP_FUNCTION2);
            put_string(&mut out, code);
        }
        (Encoder::default(), out)
    }

    /// Opens database `db` with its size hints (keys, keys with an expiry).
    pub fn select(&mut self, out: &mut Vec<u8>, db: usize, sizes: Option<(u64, u64)>) {
        out.push(OP_SELECTDB);
        put_len(out, db as u64);
        if let Some((keys, volatile)) = sizes {
            out.push(OP_RESIZEDB);
            put_len(out, keys);
            put_len(out, volatile);
        }
        self.db = Some(db);
    }

    /// One key of database `db`.
    pub fn entry(&mut self, out: &mut Vec<u8>, db: usize, key: &[u8], entry: &Entry, expire_at: Option<i64>, hint: Hint) {
        if self.db != Some(db) {
            self.select(out, db, None);
        }
        if let Some(at) = expire_at {
            out.push(OP_EXPIRETIME_MS);
            out.extend_from_slice(&at.to_le_bytes());
        }
        match hint {
            Hint::None => {}
            Hint::Idle(secs) => {
                out.push(OP_IDLE);
                put_len(out, secs);
            }
            Hint::Freq(f) => out.extend_from_slice(&[OP_FREQ, f]),
        }
        put_value(out, Some(key), &entry.value);
    }

    /// The EOF opcode; the writer appends the checksum of everything it wrote.
    pub fn end(out: &mut Vec<u8>) {
        out.push(OP_EOF);
    }
}

/// Which eviction hint a save writes: IDLE under LRU policies, FREQ under LFU ones, neither
/// otherwise (Redis's `rdbSaveKeyValuePair`), as of the save's start.
#[derive(Debug, Clone, Copy)]
pub struct HintPolicy {
    lru: bool,
    lfu: bool,
    now_ms: i64,
    decay_minutes: u64,
}

impl HintPolicy {
    /// For `maxmemory-policy` `policy` at `now_ms`, with `lfu-decay-time` `decay_minutes`.
    pub fn new(policy: &str, now_ms: i64, decay_minutes: u64) -> HintPolicy {
        HintPolicy { lru: policy.contains("lru"), lfu: policy.contains("lfu"), now_ms, decay_minutes }
    }

    pub fn of(&self, e: &Entry) -> Hint {
        if self.lfu {
            Hint::Freq(e.lfu_counter(self.now_ms, self.decay_minutes))
        } else if self.lru {
            Hint::Idle(e.idle_ms(self.now_ms) / 1000)
        } else {
            Hint::None
        }
    }
}

/// The auxiliary fields Redis 7.0 writes (replication fields aside).
pub fn aux_fields(now_ms: i64, used_memory: usize) -> Vec<(&'static str, String)> {
    vec![
        ("redis-ver", crate::REDIS_VERSION.to_string()),
        ("redis-bits", "64".to_string()),
        ("ctime", (now_ms / 1000).to_string()),
        ("used-mem", used_memory.to_string()),
        ("aof-base", "0".to_string()),
    ]
}

/// Every key of `ks` in database order, each non-empty database opened with its size
/// hints; `flush` is handed the buffer whenever it passes a megabyte.
pub fn write_keyspace(enc: &mut Encoder, out: &mut Vec<u8>, ks: &super::Keyspace, hints: &HintPolicy, mut flush: impl FnMut(&mut Vec<u8>)) {
    for (i, db) in ks.dbs.iter().enumerate() {
        if db.is_empty() {
            continue;
        }
        enc.select(out, i, Some((db.len() as u64, db.volatile_len() as u64)));
        for (key, entry) in db.iter() {
            enc.entry(out, i, key, entry, db.expire_of(key, entry), hints.of(entry));
            if out.len() >= 1 << 20 {
                flush(out);
            }
        }
    }
}

/// A whole file in memory, checksum included (`redis-cli --rdb`; `keys: false` for
/// `--functions-rdb`).
pub fn encode_all<'a>(
    ks: &super::Keyspace,
    aux: &[(&str, String)],
    libraries: impl Iterator<Item = &'a [u8]>,
    hints: &HintPolicy,
    keys: bool,
) -> Vec<u8> {
    let (mut enc, mut out) = Encoder::start(aux, libraries);
    if keys {
        write_keyspace(&mut enc, &mut out, ks, hints, |_| {});
    }
    Encoder::end(&mut out);
    let crc = super::rdb::crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// What a parsed file hands its reader, in file order.
pub trait Sink {
    /// An auxiliary field (`redis-ver`, `repl-id`, `aof-base`...).
    fn aux(&mut self, _name: &[u8], _value: &[u8]) {}
    /// A function library's code; an error stops the load.
    fn function(&mut self, code: Vec<u8>) -> Result<(), String>;
    /// A key: its database, name, value, absolute expiry in ms and eviction hint; an error
    /// stops the load.
    fn key(&mut self, db: usize, key: Vec<u8>, value: Decoded, expire_at: Option<i64>, hint: Hint) -> Result<(), String>;
}

/// Why a file was refused, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileError {
    pub offset: usize,
    pub reason: String,
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (at byte {})", self.reason, self.offset)
    }
}

/// What a whole file held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    pub version: u32,
    pub keys: u64,
    /// Where the file ended (after its checksum): an AOF with an RDB preamble continues
    /// with commands there.
    pub end: usize,
}

/// Whether `data` starts as an RDB file does (an AOF base may be either form).
pub fn is_rdb(data: &[u8]) -> bool {
    data.starts_with(b"REDIS")
}

/// Parses a whole file, handing every item to `sink`. `databases` bounds SELECTDB, as in
/// Redis (a file of a server with more databases is refused).
pub fn parse(data: &[u8], databases: usize, sink: &mut impl Sink) -> Result<Parsed, FileError> {
    let err = |offset: usize, reason: &str| FileError { offset, reason: reason.to_string() };
    if data.len() < 9 || !is_rdb(data) {
        return Err(err(0, "Wrong signature trying to load DB from file"));
    }
    let version = std::str::from_utf8(&data[5..9]).ok().and_then(|v| v.parse::<u32>().ok()).unwrap_or(0);
    if !(1..=10).contains(&version) {
        return Err(err(5, &format!("Can't handle RDB format version {}", String::from_utf8_lossy(&data[5..9]))));
    }
    let mut r = Reader { data, pos: 9 };
    let bad = |r: &Reader<'_>| err(r.pos, "Short read or OOM loading DB. Unrecoverable error, aborting now.");
    let (mut db, mut keys) = (0usize, 0u64);
    let (mut expire_at, mut hint) = (None, Hint::None);
    loop {
        let at = r.pos;
        let op = r.byte().map_err(|_| bad(&r))?;
        match op {
            OP_EXPIRETIME => {
                let secs = i32::from_le_bytes(r.take(4).map_err(|_| bad(&r))?.try_into().map_err(|_| bad(&r))?);
                expire_at = Some(secs as i64 * 1000);
            }
            OP_EXPIRETIME_MS => {
                expire_at = Some(i64::from_le_bytes(r.take(8).map_err(|_| bad(&r))?.try_into().map_err(|_| bad(&r))?));
            }
            OP_IDLE => hint = Hint::Idle(plain_len(&mut r).ok_or_else(|| bad(&r))?),
            OP_FREQ => hint = Hint::Freq(r.byte().map_err(|_| bad(&r))?),
            OP_EOF => break,
            OP_SELECTDB => {
                let id = plain_len(&mut r).ok_or_else(|| bad(&r))?;
                if id >= databases as u64 {
                    return Err(err(
                        at,
                        &format!("FATAL: Data file was created with a Redis server configured to handle more than {databases} databases. Exiting"),
                    ));
                }
                db = id as usize;
            }
            OP_RESIZEDB => {
                plain_len(&mut r).ok_or_else(|| bad(&r))?;
                plain_len(&mut r).ok_or_else(|| bad(&r))?;
            }
            OP_AUX => {
                let name = r.string().map_err(|_| bad(&r))?;
                let value = r.string().map_err(|_| bad(&r))?;
                sink.aux(&name, &value);
            }
            OP_MODULE_AUX => return Err(err(at, "The RDB file contains AUX module data I can't load: no matching module")),
            OP_FUNCTION_PRE_GA => return Err(err(at, "Pre-release function format not supported.")),
            OP_FUNCTION2 => {
                let code = r.string().map_err(|_| bad(&r))?;
                sink.function(code).map_err(|e| err(at, &e))?;
            }
            kind => {
                let key = r.string().map_err(|_| bad(&r))?;
                let value =
                    r.object_of(kind).map_err(|_| err(at, &format!("Bad data format of key {:?}", String::from_utf8_lossy(&key))))?;
                sink.key(db, key, value, expire_at.take(), std::mem::replace(&mut hint, Hint::None)).map_err(|e| err(at, &e))?;
                keys += 1;
            }
        }
    }
    if version >= 5 {
        let body = r.pos;
        let stored = u64::from_le_bytes(r.take(8).map_err(|_| bad(&r))?.try_into().map_err(|_| bad(&r))?);
        // Zero: the file was written with `rdbchecksum no`.
        if stored != 0 && stored != super::rdb::crc64(&data[..body]) {
            return Err(err(body, "Wrong RDB checksum. Aborting now."));
        }
    }
    Ok(Parsed { version, keys, end: r.pos })
}

fn plain_len(r: &mut Reader<'_>) -> Option<u64> {
    match r.len_or_enc().ok()? {
        Len::Plain(n) => Some(n),
        Len::Encoded(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Value;

    /// A key as the sink got it: database, name, value, expiry, hint.
    type Got = (usize, Vec<u8>, Decoded, Option<i64>, Hint);

    #[derive(Default)]
    struct Collect {
        aux: Vec<(Vec<u8>, Vec<u8>)>,
        functions: Vec<Vec<u8>>,
        keys: Vec<Got>,
    }

    impl Sink for Collect {
        fn aux(&mut self, name: &[u8], value: &[u8]) {
            self.aux.push((name.to_vec(), value.to_vec()));
        }
        fn function(&mut self, code: Vec<u8>) -> Result<(), String> {
            self.functions.push(code);
            Ok(())
        }
        fn key(&mut self, db: usize, key: Vec<u8>, value: Decoded, expire_at: Option<i64>, hint: Hint) -> Result<(), String> {
            self.keys.push((db, key, value, expire_at, hint));
            Ok(())
        }
    }

    fn file() -> Vec<u8> {
        let aux = [("redis-ver", "7.0.15".to_string()), ("ctime", "1764400000".to_string())];
        let lib: &[u8] = b"#!lua name=l\nredis.register_function('f', function() return 1 end)";
        let (mut enc, mut out) = Encoder::start(&aux, [lib].into_iter());
        enc.select(&mut out, 0, Some((2, 1)));
        enc.entry(&mut out, 0, b"s", &Entry::new(Value::string("v"), 0), Some(1_900_000_000_000), Hint::Idle(7));
        enc.entry(&mut out, 3, b"123", &Entry::new(Value::string("42"), 0), None, Hint::Freq(9));
        enc.entry(&mut out, 0, b"t", &Entry::new(Value::string("w"), 0), None, Hint::None);
        Encoder::end(&mut out);
        let crc = crate::db::rdb::crc64(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    #[test]
    fn round_trip() {
        let data = file();
        let mut c = Collect::default();
        let parsed = parse(&data, 16, &mut c).unwrap();
        assert_eq!(parsed, Parsed { version: 10, keys: 3, end: data.len() });
        assert_eq!(c.aux[0], (b"redis-ver".to_vec(), b"7.0.15".to_vec()));
        // A number is written with an integer encoding and read back as its text.
        assert_eq!(c.aux[1], (b"ctime".to_vec(), b"1764400000".to_vec()));
        assert_eq!(c.functions.len(), 1);
        assert_eq!(c.keys[0], (0, b"s".to_vec(), Decoded::Str(b"v".to_vec()), Some(1_900_000_000_000), Hint::Idle(7)));
        assert_eq!(c.keys[1], (3, b"123".to_vec(), Decoded::Str(b"42".to_vec()), None, Hint::Freq(9)));
        assert_eq!(c.keys[2].0, 0, "a SELECTDB goes out when the database changes back");
    }

    #[test]
    fn damage_is_refused_without_panic() {
        let data = file();
        assert!(parse(&data, 2, &mut Collect::default()).unwrap_err().reason.contains("more than 2 databases"));
        for cut in 0..data.len() {
            assert!(parse(&data[..cut], 16, &mut Collect::default()).is_err(), "cut at {cut}");
        }
        for i in 9..data.len() {
            let mut bad = data.clone();
            bad[i] ^= 0x21;
            assert!(parse(&bad, 16, &mut Collect::default()).is_err(), "flipped byte {i} passed");
        }
        // rdbchecksum no: a zero checksum is not checked.
        let mut unchecked = data.clone();
        let n = unchecked.len();
        unchecked[n - 8..].fill(0);
        assert!(parse(&unchecked, 16, &mut Collect::default()).is_ok());
        assert!(parse(b"REDIS0011\xff", 16, &mut Collect::default()).unwrap_err().reason.contains("version"));
    }
}
