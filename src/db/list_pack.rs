//! One chunk of a list's elements (`list.rs` keeps the chunks in order): the bytes back to
//! back, what locates each element, and the sealed forms that pack both into one buffer.

/// Element bytes a chunk takes before the next push starts a new one.
pub(super) const CHUNK_BYTES: usize = 8192;

/// Elements back to back in `data`; `ends[p]` is where physical element `p` ends. Physical
/// elements before `start` were popped (their bytes stay until the chunk is rebuilt or
/// emptied). A `reversed` chunk holds its logical elements in reverse physical order, so
/// pushes at the list's head append to it.
///
/// A chunk no longer pushed to is *sealed*: what locates its elements moves behind its bytes
/// in one buffer of exactly their size, `ends` then empty. A full chunk is then one 8 KB
/// block, an exact allocator size class, where two buffers of their own sizes (about 7.2 and
/// 1 KB) each fell into a class up to 12% larger. When every element is under 256 bytes (the
/// usual list) it is *narrow*: one length byte per element and, every [`NARROW_STEP`]
/// elements, the 2-byte start of the next, so an element is at most 15 additions away and
/// costs 1.125 bytes besides its own where a listpack entry costs 2. Otherwise the 2-byte
/// ends follow the bytes. A pop at the front only moves `start`; any other change unseals the
/// chunk first (O(chunk), once).
#[derive(Clone, Default)]
pub(super) struct Chunk {
    pub(super) data: Vec<u8>,
    pub(super) ends: Vec<u16>,
    /// u32: a chunk's element count is bounded by its byte budget (offsets included).
    pub(super) start: u32,
    /// The number of elements located behind the bytes of `data` (0: not sealed). A chunk
    /// holds at most `CHUNK_BYTES` elements (each costs a byte at least), or one.
    pub(super) sealed: u16,
    /// Every element is under 256 bytes: a sealed chunk's layout is then lengths and a sparse
    /// index, not 2-byte ends (an open chunk keeps it up to date for its budget).
    pub(super) narrow: bool,
    pub(super) reversed: bool,
}

/// Elements between two entries of a narrow chunk's index of starts.
const NARROW_STEP: usize = 16;

impl Chunk {
    /// The number of physical elements, popped ones at the front included.
    pub(super) fn count(&self) -> usize {
        if self.sealed > 0 {
            self.sealed as usize
        } else {
            self.ends.len()
        }
    }

    pub(super) fn len(&self) -> usize {
        self.count() - self.start as usize
    }

    /// The bytes behind the elements in a sealed chunk's buffer.
    fn trailer_len(&self) -> usize {
        let n = self.sealed as usize;
        if n == 0 {
            0
        } else if self.narrow {
            n + 2 * n.div_ceil(NARROW_STEP)
        } else {
            2 * n
        }
    }

    /// The length of the elements' bytes (without what locates them in a sealed chunk).
    pub(super) fn data_len(&self) -> usize {
        self.data.len() - self.trailer_len()
    }

    fn u16_at(&self, at: usize) -> usize {
        u16::from_le_bytes([self.data[at], self.data[at + 1]]) as usize
    }

    /// Where physical element `p` starts and ends. A chunk of two elements or more holds at
    /// most `CHUNK_BYTES`, so 16 bits suffice; a larger element has a chunk of its own, its
    /// end marked `u16::MAX`: it ends with the data.
    fn span(&self, p: usize) -> (usize, usize) {
        if self.sealed > 0 && self.narrow {
            let lens = self.data_len();
            let block = p / NARROW_STEP;
            let mut from = self.u16_at(lens + self.sealed as usize + 2 * block);
            for q in block * NARROW_STEP..p {
                from += self.data[lens + q] as usize;
            }
            return (from, from + self.data[lens + p] as usize);
        }
        let from = if p == 0 { 0 } else { self.wide_end(p - 1) };
        (from, self.wide_end(p))
    }

    /// [`Chunk::span`]'s end in a chunk with 2-byte ends (open, or sealed wide).
    #[inline]
    fn wide_end(&self, p: usize) -> usize {
        let raw = if self.sealed > 0 { self.u16_at(self.data_len() + 2 * p) } else { self.ends[p] as usize };
        if raw == u16::MAX as usize {
            self.data_len()
        } else {
            raw
        }
    }

    /// Calls `f` on physical elements `lo..hi`, upwards or downwards, each located from its
    /// neighbour (one step, where [`Chunk::span`] of a narrow chunk adds up to 15 lengths).
    pub(super) fn visit_phys(&self, lo: usize, hi: usize, upwards: bool, f: &mut impl FnMut(&[u8])) {
        if lo >= hi {
            return;
        }
        let data_len = self.data_len();
        // Element p's length (narrow), or where it ends: one read per step, whatever the form.
        let step: &dyn Fn(usize) -> usize = if self.sealed > 0 && self.narrow {
            &|p| self.data[data_len + p] as usize
        } else if self.sealed > 0 {
            &|p| match self.u16_at(data_len + 2 * p) {
                0xFFFF => data_len,
                e => e,
            }
        } else {
            &|p| match self.ends[p] {
                u16::MAX => data_len,
                e => e as usize,
            }
        };
        let narrow = self.sealed > 0 && self.narrow;
        if upwards {
            let mut from = self.span(lo).0;
            for p in lo..hi {
                let to = if narrow { from + step(p) } else { step(p) };
                f(&self.data[from..to]);
                from = to;
            }
        } else {
            let mut to = self.span(hi - 1).1;
            for p in (lo..hi).rev() {
                let from = if narrow {
                    to - step(p)
                } else if p == 0 {
                    0
                } else {
                    step(p - 1)
                };
                f(&self.data[from..to]);
                to = from;
            }
        }
    }

    /// Where physical element `p` ends.
    fn end(&self, p: usize) -> usize {
        self.span(p).1
    }

    fn phys(&self, p: usize) -> &[u8] {
        let (from, to) = self.span(p);
        &self.data[from..to]
    }

    /// Logical element `i` of this chunk.
    pub(super) fn get(&self, i: usize) -> &[u8] {
        if self.reversed {
            self.phys(self.count() - 1 - i)
        } else {
            self.phys(self.start as usize + i)
        }
    }

    /// Whether `item` joins this chunk: its bytes and every offset (popped ones included, so
    /// that empty elements and a queue's popped front are bounded too) within `limit`.
    ///
    /// Counted in the layout the chunk will have sealed: a chunk of short elements takes more
    /// of them (1.125 bytes each besides their own, not 2), so that sealed it still fills its
    /// 8 KB block.
    pub(super) fn fits_within(&self, item: &[u8], limit: usize) -> bool {
        let n = self.count() + 1;
        let trailer = if self.narrow && item.len() < 256 { n + 2 * n.div_ceil(NARROW_STEP) } else { 2 * n };
        n == 1 || self.data_len() + item.len() + trailer <= limit
    }

    pub(super) fn fits(&self, item: &[u8]) -> bool {
        self.fits_within(item, CHUNK_BYTES)
    }

    /// Moves what locates the elements behind their bytes, in one buffer of its exact size:
    /// narrow when every element is under 256 bytes.
    pub(super) fn seal(&mut self) {
        if self.sealed > 0 || self.ends.is_empty() {
            return;
        }
        // At most CHUNK_BYTES elements, or one (see `fits_within`).
        let Ok(n) = u16::try_from(self.ends.len()) else { return };
        let spans: Vec<(usize, usize)> = (0..n as usize).map(|p| self.span(p)).collect();
        let narrow = self.narrow;
        debug_assert!(!narrow || spans.iter().all(|(from, to)| to - from < 256));
        let trailer = if narrow { n as usize + 2 * (n as usize).div_ceil(NARROW_STEP) } else { 2 * n as usize };
        let mut data = Vec::with_capacity(self.data.len() + trailer);
        data.extend_from_slice(&self.data);
        if narrow {
            data.extend(spans.iter().map(|(from, to)| (to - from) as u8));
            for (from, _) in spans.iter().step_by(NARROW_STEP) {
                data.extend_from_slice(&(*from as u16).to_le_bytes());
            }
        } else {
            for e in &self.ends {
                data.extend_from_slice(&e.to_le_bytes());
            }
        }
        self.sealed = n;
        self.narrow = narrow;
        self.data = data;
        self.ends = Vec::new();
    }

    /// Takes the ends back out of a sealed chunk's buffer, before a change.
    fn unseal(&mut self) {
        if self.sealed == 0 {
            return;
        }
        let n = self.sealed as usize;
        // A narrow chunk's ends are under CHUNK_BYTES; a wide one's are kept as stored.
        self.ends = (0..n).map(|p| if self.narrow { self.end(p) as u16 } else { self.u16_at(self.data_len() + 2 * p) as u16 }).collect();
        let len = self.data_len();
        self.data.truncate(len);
        self.sealed = 0;
    }

    pub(super) fn push_phys(&mut self, item: &[u8]) {
        self.unseal();
        self.narrow = (self.ends.is_empty() || self.narrow) && item.len() < 256;
        self.data.extend_from_slice(item);
        self.ends.push(u16::try_from(self.data.len()).unwrap_or(u16::MAX));
    }

    /// Drops the last physical element; returns its length.
    fn drop_phys_back(&mut self) -> usize {
        self.unseal();
        let end = self.data.len();
        self.ends.pop();
        let from = if self.ends.is_empty() { 0 } else { self.end(self.ends.len() - 1) };
        self.data.truncate(from);
        end - from
    }

    /// Drops the first physical element left; returns its length.
    fn drop_phys_front(&mut self) -> usize {
        let n = self.phys(self.start as usize).len();
        self.start += 1;
        n
    }

    /// Drops logical element 0 (`front`) or the last one; returns its length.
    pub(super) fn drop_end(&mut self, front: bool) -> usize {
        if front == self.reversed {
            self.drop_phys_back()
        } else {
            self.drop_phys_front()
        }
    }

    pub(super) fn iter(&self) -> impl DoubleEndedIterator<Item = &[u8]> + '_ {
        self.iter_range(0, self.len())
    }

    /// Logical elements `from..to` of this chunk.
    pub(super) fn iter_range(&self, from: usize, to: usize) -> impl DoubleEndedIterator<Item = &[u8]> + '_ {
        (from..to).map(move |i| self.get(i))
    }
}
