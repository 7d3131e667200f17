//! The cluster bus's message decoder (`cluster::bus`) on arbitrary bytes: it never panics,
//! and a message it accepts, encoded again, decodes to the same message (reserved bytes aside,
//! the same bytes).
#![no_main]

use libfuzzer_sys::fuzz_target;
use vermilion::cluster::bus;

fuzz_target!(|data: &[u8]| {
    if let Ok(message) = bus::decode(data) {
        let again = bus::encode(&message);
        assert_eq!(again.len(), data.len());
        assert_eq!(bus::decode(&again).as_ref(), Ok(&message), "an accepted message survives encoding");
    }
    // A declared length read off any prefix is only a number.
    let _ = bus::declared_len(data);
});
