//! The base-snapshot decoder on arbitrary bytes: never panics, never allocates more than the
//! input can describe. Odd first byte: the rest builds a keyspace, which is encoded; the
//! encoding decodes to the same dataset digest and scripting state (scripts and function
//! libraries), and every single flipped byte is refused.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use vermilion::aof::snapshot;
use vermilion::db::{Keyspace, Value};

fn build(data: &[u8]) -> Keyspace {
    let mut ks = Keyspace::new(16);
    for (i, chunk) in data.split(|&b| b == 0xff).enumerate() {
        let mut parts = chunk.split(|&b| b == 0xfe);
        let key = Bytes::copy_from_slice(parts.next().unwrap_or_default());
        let items: Vec<&[u8]> = parts.collect();
        let value = match i % 3 {
            0 => Value::string(items.concat()),
            1 => {
                let mut l = vermilion::db::list::ListValue::new();
                for it in &items {
                    l.push_back(Bytes::copy_from_slice(it));
                }
                if l.is_empty() {
                    continue;
                }
                Value::List(Box::new(l))
            }
            _ => {
                let mut z = vermilion::db::zset::ZSetValue::new();
                for (j, it) in items.iter().enumerate() {
                    if z.score(it).is_none() {
                        z.insert(it, j as f64 * 0.5 - 3.0, 128, 64);
                    }
                }
                if z.len() == 0 {
                    continue;
                }
                Value::ZSet(z)
            }
        };
        let expire = (i % 4 == 0).then_some(i as i64 * 1000);
        ks.db_mut(i % 16).insert(key, value, expire, 0);
    }
    ks
}

fuzz_target!(|data: &[u8]| {
    let _ = snapshot::validate(data);
    let _ = snapshot::decode(data, &mut Keyspace::new(16), &snapshot::BuildLimits::default());
    if data.first().is_some_and(|b| b & 1 == 1) {
        let ks = build(&data[1..]);
        let scripting = snapshot::Scripting {
            scripts: vec![Bytes::from_static(b"return 1")],
            libraries: vec![Bytes::copy_from_slice(&data[1..data.len().min(64)])],
        };
        let bytes = snapshot::encode(&ks, &scripting, 7, 0);
        let mut back = Keyspace::new(16);
        let loaded = snapshot::decode(&bytes, &mut back, &snapshot::BuildLimits::default()).expect("our own encoding decodes");
        assert_eq!(loaded.log_offset, 7);
        assert_eq!(loaded.scripting, scripting);
        assert_eq!(vermilion::db::digest::dataset_digest(&back), vermilion::db::digest::dataset_digest(&ks));
        let at = data.len() % bytes.len();
        let mut bad = bytes.clone();
        bad[at] ^= 0x10;
        assert!(snapshot::decode(&bad, &mut Keyspace::new(16), &snapshot::BuildLimits::default()).is_err());
    }
});
