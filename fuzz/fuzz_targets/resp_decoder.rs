//! The RESP request decoder on arbitrary bytes, fed in arbitrary chunks:
//! - it never panics;
//! - it never consumes more than its input (the buffer only shrinks by what it returns);
//! - decode(encode(x)) == x for the commands it returns, and a re-encoded command decodes
//!   back to itself.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use vermilion::protocol::{encode_request, DecodeLimits, RequestDecoder};

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    // The first byte picks a chunk size, so incremental decoding is exercised too.
    let chunk = (data[0] as usize % 17) + 1;
    let input = &data[1..];
    let limits = DecodeLimits { max_bulk_len: 1 << 20, unauthenticated: data[0] & 0x80 != 0 };
    let mut decoder = RequestDecoder::new();
    let mut buf = BytesMut::new();
    let mut fed = 0usize;
    let mut consumed_total = 0usize;
    'outer: for piece in input.chunks(chunk) {
        buf.extend_from_slice(piece);
        fed += piece.len();
        loop {
            let before = buf.len();
            match decoder.decode(&mut buf, &limits) {
                Ok(Some(args)) => {
                    consumed_total += before - buf.len();
                    assert!(consumed_total <= fed, "consumed more than fed");
                    assert!(!args.is_empty());
                    // Round trip: encode the command, decode it again, get the same args.
                    let mut enc = Vec::new();
                    encode_request(&args, &mut enc);
                    let mut again = BytesMut::from(&enc[..]);
                    let mut d2 = RequestDecoder::new();
                    let back = d2.decode(&mut again, &DecodeLimits { max_bulk_len: i64::MAX, unauthenticated: false });
                    assert_eq!(back, Ok(Some(args)));
                    assert!(again.is_empty());
                }
                Ok(None) => {
                    consumed_total += before - buf.len();
                    assert!(consumed_total <= fed);
                    break;
                }
                Err(_) => break 'outer,
            }
        }
    }
});
