//! LEB128 varints (7 bits per byte, low bits first): the length and number prefix of the
//! packed encodings (small hashes and sorted sets, stream nodes).

/// The encoding of `n` and its length.
pub fn encode(mut n: u64) -> ([u8; 10], usize) {
    let mut out = [0u8; 10];
    let mut i = 0;
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out[i] = b;
            return (out, i + 1);
        }
        out[i] = b | 0x80;
        i += 1;
    }
}

pub fn put(out: &mut Vec<u8>, n: u64) {
    let (bytes, len) = encode(n);
    out.extend_from_slice(&bytes[..len]);
}

/// The bytes `n` takes.
pub fn size(n: u64) -> usize {
    encode(n).1
}

/// Reads a varint at `*pos` and moves past it; None if the buffer ends first or it is longer
/// than 64 bits.
pub fn get(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*pos)?;
        *pos += 1;
        n |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Some(n);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trips_at_every_width() {
        for n in [0u64, 1, 127, 128, 300, 16_383, 16_384, u32::MAX as u64, u64::MAX] {
            let mut buf = vec![0xaa];
            super::put(&mut buf, n);
            assert_eq!(buf.len() - 1, super::size(n));
            let mut pos = 1;
            assert_eq!(super::get(&buf, &mut pos), Some(n));
            assert_eq!(pos, buf.len());
            let mut pos = 1;
            assert_eq!(super::get(&buf[..buf.len() - 1], &mut pos), None, "a cut varint of {n}");
        }
    }
}
