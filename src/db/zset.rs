//! The sorted set value type (placeholder until the data-types work gives it an ordered index).

use std::collections::HashMap;

use bytes::Bytes;

/// A sorted set. `mem` is kept up to date by every mutation so memory accounting is O(1).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ZSetValue {
    pub scores: HashMap<Bytes, f64>,
    pub mem: usize,
}

impl ZSetValue {
    /// The name OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        "skiplist"
    }

    /// Approximate heap bytes held (O(1)).
    pub fn mem_usage(&self) -> usize {
        self.mem
    }
}
