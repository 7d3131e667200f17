//! A Vermilion replica's cutting of a redis-server primary's stream
//! (`replication::plain::CommandCutter`) on arbitrary bytes, fed in arbitrary pieces. It never
//! panics; the bytes it counts never exceed the bytes fed; a MULTI block is never handed out
//! in part. Structured mode (odd first byte): a valid stream of commands (with MULTI blocks
//! and newlines between some) comes out whole, in order, counted to the byte.
#![no_main]

use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use vermilion::aof::format;
use vermilion::replication::plain::CommandCutter;

/// Feeds `input` in pieces whose sizes come from `sizes`: the commands, the bytes counted,
/// and whether the cutter refused the input.
fn feed(input: &[u8], sizes: &[u8]) -> (Vec<Vec<Bytes>>, u64, bool) {
    let (mut cutter, mut buf) = (CommandCutter::default(), BytesMut::new());
    let (mut commands, mut counted, mut pos, mut i) = (Vec::new(), 0, 0, 0);
    while pos < input.len() {
        let n = (sizes.get(i).copied().unwrap_or(255) as usize).max(1).min(input.len() - pos);
        i += 1;
        buf.extend_from_slice(&input[pos..pos + n]);
        pos += n;
        match cutter.cut(&mut buf) {
            Ok(cut) => {
                counted += cut.len;
                let mut open = false;
                for c in &cut.commands {
                    open = (open || c[0].eq_ignore_ascii_case(b"multi")) && !c[0].eq_ignore_ascii_case(b"exec");
                }
                assert!(!open, "a MULTI block is handed out whole");
                commands.extend(cut.commands);
            }
            Err(_) => return (commands, counted, true),
        }
        assert!(counted <= pos as u64, "more bytes counted than fed");
    }
    (commands, counted, false)
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, data)) = data.split_first() else { return };
    let (sizes, body) = data.split_at(data.len().min(16));
    if mode % 2 == 0 {
        feed(body, sizes);
        return;
    }
    // Structured: SETs built from the body, every third inside MULTI/EXEC, newlines between.
    let (mut stream, mut want) = (Vec::new(), Vec::new());
    let last = body.len().div_ceil(5).saturating_sub(1);
    for (n, chunk) in body.chunks(5).enumerate() {
        let mut cmds = vec![vec![b"SET".to_vec(), chunk.to_vec(), chunk.to_vec()]];
        if n % 3 == 2 {
            cmds.insert(0, vec![b"MULTI".to_vec()]);
            cmds.push(vec![b"EXEC".to_vec()]);
        }
        for c in cmds {
            format::encode_command(&mut stream, &c);
            want.push(c);
        }
        // Not after the last: a newline is counted with the command after it.
        if n % 2 == 1 && n != last {
            stream.push(b'\n');
        }
    }
    let (commands, counted, failed) = feed(&stream, sizes);
    assert!(!failed, "a valid stream is never refused");
    assert_eq!(counted, stream.len() as u64, "every byte is counted");
    let got: Vec<Vec<Vec<u8>>> = commands.iter().map(|c| c.iter().map(|a| a.to_vec()).collect()).collect();
    assert_eq!(got, want, "the commands come out whole and in order");
});
