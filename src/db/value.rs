//! The value types a key can hold.

use super::hash::HashValue;
use super::list::ListValue;
use super::set::SetValue;
use super::stream::StreamValue;
use super::zset::ZSetValue;

/// A key's value. Each collection type lives in its own module, which owns its representation,
/// its OBJECT ENCODING name and its (incrementally maintained) memory estimate.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(StrValue),
    // The collections are boxed: a key's entry then stays small (most keys are strings),
    // and a collection's own allocation dwarfs one more pointer. A hash is 16 bytes (its
    // small form is one packed buffer), so it is held in place.
    List(Box<ListValue>),
    Hash(HashValue),
    Set(Box<SetValue>),
    ZSet(ZSetValue),
    Stream(Box<StreamValue>),
}

/// A string value and the encoding Redis would report for it, in 24 bytes (a key's slot holds
/// it). Up to [`INLINE`] bytes live in the value itself (no allocation, as Redis's embstr
/// saves one); longer ones in an allocation of exactly their size; a string changed in place
/// (APPEND, SETRANGE, SETBIT...) in a growable vector of its own, boxed so that the common
/// forms stay small.
#[derive(Clone)]
pub struct StrValue(Repr);

/// The longest string held inline: the 24 bytes of `Repr` less its tag, encoding and length.
pub const INLINE: usize = 21;

#[derive(Clone)]
enum Repr {
    Inline {
        enc: StrEncoding,
        len: u8,
        buf: [u8; INLINE],
    },
    Fixed {
        enc: StrEncoding,
        data: Box<[u8]>,
    },
    // Boxed on purpose: a bare `Vec` (24 bytes) would make every value 32 bytes.
    #[allow(clippy::box_collection)]
    Growable {
        enc: StrEncoding,
        data: Box<Vec<u8>>,
    },
}

impl Default for StrValue {
    fn default() -> Self {
        StrValue::from_slice(&[], StrEncoding::Auto)
    }
}

impl PartialEq for StrValue {
    fn eq(&self, other: &Self) -> bool {
        self.enc() == other.enc() && self.bytes() == other.bytes()
    }
}

impl std::fmt::Debug for StrValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StrValue").field("data", &String::from_utf8_lossy(self.bytes())).field("enc", &self.enc()).finish()
    }
}

/// How OBJECT ENCODING names a string: Redis decides when the object is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StrEncoding {
    /// Created from a client argument: `int` if it reads as one, else `embstr` up to 44
    /// bytes, else `raw`.
    #[default]
    Auto,
    /// Modified in place (APPEND, SETRANGE): always `raw`.
    Raw,
    /// Created from a float (INCRBYFLOAT): never `int`.
    NotInt,
}

impl StrValue {
    pub fn new(data: Vec<u8>) -> Self {
        Self::with_enc(data, StrEncoding::Auto)
    }

    /// Keeps `data`'s allocation (shrunk to its size) when it is too long to be inline.
    pub fn with_enc(data: Vec<u8>, enc: StrEncoding) -> Self {
        if data.len() <= INLINE {
            Self::from_slice(&data, enc)
        } else {
            StrValue(Repr::Fixed { enc, data: data.into_boxed_slice() })
        }
    }

    pub fn from_slice(bytes: &[u8], enc: StrEncoding) -> Self {
        if bytes.len() > INLINE {
            return StrValue(Repr::Fixed { enc, data: Box::from(bytes) });
        }
        let mut buf = [0; INLINE];
        buf[..bytes.len()].copy_from_slice(bytes);
        StrValue(Repr::Inline { enc, len: bytes.len() as u8, buf })
    }

    pub fn bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, buf, .. } => &buf[..*len as usize],
            Repr::Fixed { data, .. } => data,
            Repr::Growable { data, .. } => data,
        }
    }

    pub fn len(&self) -> usize {
        self.bytes().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn enc(&self) -> StrEncoding {
        match &self.0 {
            Repr::Inline { enc, .. } | Repr::Fixed { enc, .. } | Repr::Growable { enc, .. } => *enc,
        }
    }

    pub fn set_enc(&mut self, to: StrEncoding) {
        match &mut self.0 {
            Repr::Inline { enc, .. } | Repr::Fixed { enc, .. } | Repr::Growable { enc, .. } => *enc = to,
        }
    }

    /// The bytes to change in place: moved to a growable vector first (once: later changes,
    /// a run of APPENDs say, grow it as a vector grows).
    pub fn vec_mut(&mut self) -> &mut Vec<u8> {
        if !matches!(self.0, Repr::Growable { .. }) {
            let enc = self.enc();
            let data = Box::new(self.bytes().to_vec());
            self.0 = Repr::Growable { enc, data };
        }
        match &mut self.0 {
            Repr::Growable { data, .. } => data,
            Repr::Inline { .. } | Repr::Fixed { .. } => unreachable!("made growable above"),
        }
    }

    /// Heap bytes held (none when inline).
    pub fn heap_size(&self) -> usize {
        match &self.0 {
            Repr::Inline { .. } => 0,
            Repr::Fixed { data, .. } => data.len().next_multiple_of(16),
            Repr::Growable { data, .. } => data.capacity() + std::mem::size_of::<Vec<u8>>(),
        }
    }

    /// True when Redis would hold this value as an integer object.
    pub fn is_int_encoded(&self) -> bool {
        self.enc() == StrEncoding::Auto && self.len() <= 20 && crate::util::parse_i64(self.bytes()).is_some()
    }
}

impl Value {
    pub fn string(data: impl Into<Vec<u8>>) -> Value {
        Value::Str(StrValue::new(data.into()))
    }

    /// The name TYPE reports.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::List(_) => "list",
            Value::Hash(_) => "hash",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
            Value::Stream(_) => "stream",
        }
    }

    /// The name OBJECT ENCODING reports, following Redis's rules for each type.
    pub fn encoding(&self) -> &'static str {
        match self {
            Value::Str(s) => {
                if s.is_int_encoded() {
                    "int"
                } else if s.enc() != StrEncoding::Raw && s.len() <= 44 {
                    "embstr"
                } else {
                    "raw"
                }
            }
            Value::List(l) => l.encoding(),
            Value::Hash(h) => h.encoding(),
            Value::Set(s) => s.encoding(),
            Value::ZSet(z) => z.encoding(),
            Value::Stream(_) => "stream",
        }
    }

    /// Approximate heap bytes held, for INFO memory.
    pub fn mem_usage(&self) -> usize {
        match self {
            Value::Str(s) => s.heap_size(),
            Value::List(l) => l.mem_usage(),
            Value::Hash(h) => h.mem_usage(),
            Value::Set(s) => s.mem_usage(),
            Value::ZSet(z) => z.mem_usage(),
            Value::Stream(s) => s.mem_usage(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_strings_live_in_the_value_and_change_in_a_vector() {
        assert_eq!(std::mem::size_of::<StrValue>(), 24);
        assert_eq!(std::mem::size_of::<Value>(), 24, "a key's slot holds the value");
        let s = StrValue::from_slice(&[b'x'; INLINE], StrEncoding::Auto);
        assert_eq!((s.len(), s.heap_size()), (INLINE, 0));
        let long = StrValue::new(vec![b'y'; INLINE + 1]);
        assert!(long.heap_size() > INLINE);
        let mut t = StrValue::from_slice(b"12", StrEncoding::Auto);
        assert!(t.is_int_encoded());
        t.vec_mut().extend_from_slice(b"ab");
        t.set_enc(StrEncoding::Raw);
        assert_eq!((t.bytes(), t.enc()), (&b"12ab"[..], StrEncoding::Raw));
        assert_eq!(t, StrValue::with_enc(b"12ab".to_vec(), StrEncoding::Raw), "equal whatever the storage");
        assert_ne!(t, StrValue::from_slice(b"12ab", StrEncoding::Auto));
    }
}
