//! Keyspace notifications: the event classes of `notify-keyspace-events`, parsed and printed
//! exactly as Redis does, and the notification record commands leave for the executor to
//! publish on `__keyspace@<db>__:<key>` / `__keyevent@<db>__:<event>`.

use bytes::Bytes;

pub const KEYSPACE: u32 = 1 << 0; // K
pub const KEYEVENT: u32 = 1 << 1; // E
pub const GENERIC: u32 = 1 << 2; // g
pub const STRING: u32 = 1 << 3; // $
pub const LIST: u32 = 1 << 4; // l
pub const SET: u32 = 1 << 5; // s
pub const HASH: u32 = 1 << 6; // h
pub const ZSET: u32 = 1 << 7; // z
pub const EXPIRED: u32 = 1 << 8; // x
pub const EVICTED: u32 = 1 << 9; // e
pub const STREAM: u32 = 1 << 10; // t
pub const KEY_MISS: u32 = 1 << 11; // m
pub const MODULE: u32 = 1 << 12; // d
pub const NEW: u32 = 1 << 13; // n
/// `A`: every type class (not key-miss, not new-key).
pub const ALL: u32 = GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

/// Redis's `keyspaceEventsStringToFlags`; `None` on an unknown character.
pub fn parse(s: &str) -> Option<u32> {
    let mut flags = 0;
    for c in s.chars() {
        flags |= match c {
            'A' => ALL,
            'g' => GENERIC,
            '$' => STRING,
            'l' => LIST,
            's' => SET,
            'h' => HASH,
            'z' => ZSET,
            'x' => EXPIRED,
            'e' => EVICTED,
            'K' => KEYSPACE,
            'E' => KEYEVENT,
            't' => STREAM,
            'm' => KEY_MISS,
            'd' => MODULE,
            'n' => NEW,
            _ => return None,
        };
    }
    Some(flags)
}

/// Redis's `keyspaceEventsFlagsToString`.
pub fn to_string(flags: u32) -> String {
    let mut out = String::new();
    if flags & ALL == ALL {
        out.push('A');
    } else {
        for (bit, c) in [
            (GENERIC, 'g'),
            (STRING, '$'),
            (LIST, 'l'),
            (SET, 's'),
            (HASH, 'h'),
            (ZSET, 'z'),
            (EXPIRED, 'x'),
            (EVICTED, 'e'),
            (STREAM, 't'),
            (MODULE, 'd'),
            (NEW, 'n'),
        ] {
            if flags & bit != 0 {
                out.push(c);
            }
        }
    }
    for (bit, c) in [(KEYSPACE, 'K'), (KEYEVENT, 'E'), (KEY_MISS, 'm')] {
        if flags & bit != 0 {
            out.push(c);
        }
    }
    out
}

/// One event a command raised: published after the command by the executor.
#[derive(Debug, Clone)]
pub struct Notification {
    pub class: u32,
    pub event: &'static str,
    pub db: usize,
    pub key: Bytes,
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trips_like_redis() {
        assert_eq!(super::to_string(super::parse("KEA").unwrap()), "AKE");
        assert_eq!(super::to_string(super::parse("Kx").unwrap()), "xK");
        assert_eq!(super::to_string(super::parse("Ag$lshzxetdKEmn").unwrap()), "AKEm");
        assert_eq!(super::parse("Q"), None);
    }
}
