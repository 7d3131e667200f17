//! The RDB file parser on arbitrary bytes: the bytes follow a valid header (and the parser
//! accepts a zero checksum as `rdbchecksum no`), so every opcode and object is reached.
//! Parsing must never panic or over-allocate; whatever loads, written again as a file,
//! parses to the same keys.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vermilion::db::rdb::Decoded;
use vermilion::db::rdb_file::{self, Hint, HintPolicy, Sink};
use vermilion::db::{BuildLimits, Keyspace};

struct Load {
    ks: Keyspace,
    keys: usize,
}

impl Sink for Load {
    fn function(&mut self, _code: Vec<u8>) -> Result<(), String> {
        Ok(())
    }
    fn key(&mut self, db: usize, key: Vec<u8>, value: Decoded, expire_at: Option<i64>, _hint: Hint) -> Result<(), String> {
        let value = value.into_value(&BuildLimits::default()).map_err(|_| "bad value".to_string())?;
        let db = self.ks.db_mut(db);
        if db.peek(&key).is_some() {
            return Err("duplicate".into());
        }
        db.insert(key.into(), value, expire_at, 0);
        self.keys += 1;
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    let mut file = rdb_file::HEADER.to_vec();
    file.extend_from_slice(data);
    let mut load = Load { ks: Keyspace::new(16), keys: 0 };
    if rdb_file::parse(&file, 16, &mut load).is_err() {
        return;
    }
    let hints = HintPolicy::new("noeviction", 0, 1);
    let again = rdb_file::encode_all(&load.ks, &[], std::iter::empty(), &hints, true);
    let mut back = Load { ks: Keyspace::new(16), keys: 0 };
    rdb_file::parse(&again, 16, &mut back).expect("our own file parses");
    assert_eq!(back.keys, load.keys);
});
