//! RESTORE's payload parser on arbitrary bytes: the bytes become the body of a payload with
//! a valid version and checksum (so the parser itself is reached), and decoding must never
//! panic or over-allocate; whatever decodes builds a value, and that value dumped again
//! decodes to the same elements (a stream: the same entries, counters and groups).
#![no_main]

use libfuzzer_sys::fuzz_target;
use vermilion::db::rdb::{self, Decoded};
use vermilion::db::{BuildLimits, Value};

fuzz_target!(|data: &[u8]| {
    let mut payload = data.to_vec();
    payload.extend_from_slice(&rdb::RDB_VERSION.to_le_bytes());
    let crc = rdb::crc64(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    let Ok(decoded) = rdb::decode(&payload) else { return };
    let Ok(value) = decoded.clone().into_value(&BuildLimits::default()) else { return };
    if let (Decoded::Stream(s), Value::Stream(v)) = (&decoded, &value) {
        let mut want = (**s).clone();
        want.sort_as_redis();
        let back = rdb::decode(&rdb::encode_stream(&v.to_rdb())).expect("our own payload decodes");
        assert!(matches!(&back, Decoded::Stream(b) if **b == want), "{decoded:?} came back as {back:?}");
        return;
    }
    let again = match &value {
        Value::Str(s) => rdb::encode_str(s.bytes()),
        Value::List(l) => rdb::encode_elements(false, l.len(), l.iter()),
        Value::Set(s) => rdb::encode_elements(true, s.len(), s.iter()),
        Value::Hash(h) => rdb::encode_hash(h.len(), h.iter()),
        Value::ZSet(z) => rdb::encode_zset(z.len(), z.iter()),
        Value::Stream(_) => return,
    };
    let back = rdb::decode(&again).expect("our own payload decodes");
    let same = match (&decoded, &back) {
        (Decoded::Str(a), Decoded::Str(b)) => a == b,
        (Decoded::List(a), Decoded::List(b)) => a == b,
        (Decoded::Set(a), Decoded::Set(b)) => a.len() == b.len(),
        (Decoded::Hash(a), Decoded::Hash(b)) => a.len() == b.len(),
        (Decoded::ZSet(a), Decoded::ZSet(b)) => a.len() == b.len(),
        _ => false,
    };
    assert!(same, "{decoded:?} came back as {back:?}");
});
