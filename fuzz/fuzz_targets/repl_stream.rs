//! The replica's cutting of a primary's stream (`replication::link::split_segments`) on
//! arbitrary bytes, fed in arbitrary pieces. It never panics; every segment it hands out is a
//! clean log ending on a checkpoint; and what it hands out plus what is left is the input
//! without the newlines it skipped between segments. Structured mode (odd first byte): the
//! input is a valid stream of segments with keepalive newlines between them, which must come
//! out whole and in order, with nothing left and no error.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use vermilion::aof::format;
use vermilion::replication::link::split_segments;

/// Feeds `input` in pieces whose sizes come from `sizes`; returns the segments and the rest.
fn feed(input: &[u8], sizes: &[u8]) -> (Vec<u8>, Vec<Vec<u8>>, bool) {
    let mut buf = BytesMut::new();
    let mut segments = Vec::new();
    let mut pos = 0;
    let mut i = 0;
    let mut failed = false;
    while pos < input.len() && !failed {
        let n = (sizes.get(i).copied().unwrap_or(255) as usize).max(1).min(input.len() - pos);
        i += 1;
        buf.extend_from_slice(&input[pos..pos + n]);
        pos += n;
        let cut = split_segments(&mut buf);
        for s in cut.segments {
            let v = format::check(&s);
            assert_eq!(v.problem, None, "a segment handed out is a clean log");
            assert_eq!(v.tail_start, s.len(), "a segment ends on its checkpoint");
            segments.push(s.to_vec());
        }
        failed = cut.error.is_some();
    }
    let mut rest = buf.to_vec();
    rest.extend_from_slice(&input[pos..]);
    (rest, segments, failed)
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, data)) = data.split_first() else { return };
    let split = data.len().min(16);
    let (sizes, body) = data.split_at(split);
    if mode % 2 == 0 {
        let (rest, segments, _) = feed(body, sizes);
        let without_newlines: Vec<u8> = segments.concat().into_iter().chain(rest).collect();
        assert!(without_newlines.len() <= body.len());
        return;
    }
    // Structured: segments of SET records built from the body, newlines between some.
    let mut stream = Vec::new();
    let mut want = Vec::new();
    for (n, chunk) in body.chunks(7).enumerate() {
        let mut seg = Vec::new();
        format::encode_command(&mut seg, &[b"SET".as_slice(), chunk, chunk]);
        format::encode_checkpoint(&mut seg, 0);
        if n % 3 == 1 {
            stream.push(b'\n');
        }
        stream.extend_from_slice(&seg);
        want.push(seg);
    }
    let (rest, segments, failed) = feed(&stream, sizes);
    assert!(!failed, "a valid stream is never refused");
    assert!(rest.is_empty(), "nothing of a whole stream is left");
    assert_eq!(segments.concat(), want.concat(), "the segments come out whole and in order");
});
