//! The in-memory backlog: the last `repl-backlog-size` bytes of the stream, as the segments
//! were written (shared `Bytes`, no copy per replica), for partial resyncs.

use std::collections::VecDeque;

use bytes::Bytes;

#[derive(Debug)]
pub struct Backlog {
    /// Segments, oldest first, each with the stream offset of its first byte.
    segments: VecDeque<(u64, Bytes)>,
    /// The offset after the last byte.
    end: u64,
    len: u64,
    pub capacity: u64,
}

impl Backlog {
    /// An empty backlog whose next byte is at stream offset `end`.
    pub fn new(end: u64, capacity: u64) -> Backlog {
        Backlog { segments: VecDeque::new(), end, len: 0, capacity: capacity.max(1) }
    }

    pub fn push(&mut self, segment: Bytes) {
        let n = segment.len() as u64;
        self.segments.push_back((self.end, segment));
        self.end += n;
        self.len += n;
        // Whole segments are dropped: a replica resumes only at a segment boundary.
        while self.len > self.capacity && self.segments.len() > 1 {
            if let Some((_, s)) = self.segments.pop_front() {
                self.len -= s.len() as u64;
            }
        }
    }

    /// The offset of the first byte held.
    pub fn first_offset(&self) -> u64 {
        self.end - self.len
    }

    pub fn histlen(&self) -> u64 {
        self.len
    }

    /// The bytes from `from` to the end, if the backlog holds `from`. A replica's offset is
    /// always at a segment boundary of the stream, which may fall inside one of the chunks
    /// held here (a replica's flush can carry several of its primary's segments).
    pub fn since(&self, from: u64) -> Option<Vec<u8>> {
        if from < self.first_offset() || from > self.end {
            return None;
        }
        let start = self.segments.partition_point(|(at, s)| at + s.len() as u64 <= from);
        let mut out = Vec::with_capacity((self.end - from) as usize);
        for (at, s) in self.segments.iter().skip(start) {
            let skip = from.saturating_sub(*at) as usize;
            out.extend_from_slice(&s[skip.min(s.len())..]);
        }
        Some(out)
    }

    /// Moves the end to `end` with nothing held (the log started again elsewhere).
    pub fn reset(&mut self, end: u64) {
        self.segments.clear();
        self.end = end;
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_whole_segments_within_capacity() {
        let mut b = Backlog::new(100, 10);
        b.push(Bytes::from_static(b"aaaa"));
        b.push(Bytes::from_static(b"bbbb"));
        assert_eq!(b.first_offset(), 100);
        assert_eq!(b.since(104).as_deref(), Some(b"bbbb".as_slice()));
        assert_eq!(b.since(102).as_deref(), Some(b"aabbbb".as_slice()));
        assert_eq!(b.since(99), None);
        b.push(Bytes::from_static(b"cccc"));
        assert_eq!(b.first_offset(), 104);
        assert_eq!(b.since(100), None);
        assert_eq!(b.since(104).as_deref(), Some(b"bbbbcccc".as_slice()));
        assert_eq!(b.since(112).as_deref(), Some(b"".as_slice()));
        assert_eq!(b.histlen(), 8);
    }
}
