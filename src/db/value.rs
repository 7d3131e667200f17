//! The value types a key can hold.

/// A key's value. Strings for now; the other Redis types join as variants.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(StrValue),
}

/// A string value. `raw` remembers that it was modified in place (APPEND, SETRANGE), which
/// makes Redis report the `raw` encoding whatever the length.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StrValue {
    pub data: Vec<u8>,
    pub raw: bool,
}

impl StrValue {
    pub fn new(data: Vec<u8>) -> Self {
        StrValue { data, raw: false }
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
        }
    }

    /// The name OBJECT ENCODING reports, following Redis's rules for each type.
    pub fn encoding(&self) -> &'static str {
        match self {
            Value::Str(s) => {
                if !s.raw && s.data.len() <= 20 && crate::util::parse_i64(&s.data).is_some() {
                    "int"
                } else if !s.raw && s.data.len() <= 44 {
                    "embstr"
                } else {
                    "raw"
                }
            }
        }
    }

    /// Approximate heap bytes held, for INFO memory.
    pub fn mem_usage(&self) -> usize {
        match self {
            Value::Str(s) => s.data.capacity(),
        }
    }
}
