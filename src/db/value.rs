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

/// A string value and the encoding Redis would report for it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StrValue {
    pub data: Vec<u8>,
    pub enc: StrEncoding,
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
        StrValue { data, enc: StrEncoding::Auto }
    }

    /// True when Redis would hold this value as an integer object.
    pub fn is_int_encoded(&self) -> bool {
        self.enc == StrEncoding::Auto && self.data.len() <= 20 && crate::util::parse_i64(&self.data).is_some()
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
                } else if s.enc != StrEncoding::Raw && s.data.len() <= 44 {
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
            Value::Str(s) => s.data.capacity(),
            Value::List(l) => l.mem_usage(),
            Value::Hash(h) => h.mem_usage(),
            Value::Set(s) => s.mem_usage(),
            Value::ZSet(z) => z.mem_usage(),
            Value::Stream(s) => s.mem_usage(),
        }
    }
}
