//! The list value type (placeholder until the data-types work gives it Redis's encodings).

use std::collections::*;

use bytes::Bytes;

/// A list value. `mem` is kept up to date by every mutation so memory accounting is O(1).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ListValue {
    pub items: VecDeque<Bytes>,
    pub mem: usize,
}

impl ListValue {
    /// The name OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        "quicklist"
    }

    /// Approximate heap bytes held (O(1)).
    pub fn mem_usage(&self) -> usize {
        self.mem
    }
}
