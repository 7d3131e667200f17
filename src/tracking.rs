//! Client-side caching (CLIENT TRACKING), as Redis 7.0's tracking.c: in the default mode the
//! server remembers which clients read which keys and tells them once when a key changes
//! (then forgets); in BCAST mode a client hears of every changed key under its prefixes.
//! Invalidations are RESP3 pushes, or `__redis__:invalidate` messages to a RESP2 client the
//! tracking client redirects to.

use std::collections::HashMap;

use bytes::Bytes;

use crate::conn::ClientId;

/// A client's tracking settings (CLIENT TRACKING ON ...).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrackingMode {
    /// The client that receives the invalidations (0: this one).
    pub redirect: ClientId,
    pub bcast: bool,
    pub prefixes: Vec<Bytes>,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
    /// CLIENT CACHING YES/NO for the next command.
    pub caching: Option<bool>,
    /// The redirect client went away.
    pub broken_redirect: bool,
}

impl TrackingMode {
    /// Whether the keys the current command reads are remembered for this client.
    pub fn remembers(&self) -> bool {
        !self.bcast && (!self.optin || self.caching == Some(true)) && (!self.optout || self.caching != Some(false))
    }

    /// Whether a changed key concerns a BCAST client.
    pub fn matches_prefix(&self, key: &[u8]) -> bool {
        self.prefixes.is_empty() || self.prefixes.iter().any(|p| key.starts_with(p))
    }
}

/// The keys clients read (default mode): key -> the clients to tell when it changes.
#[derive(Debug, Default)]
pub struct TrackingTable {
    pub keys: HashMap<Bytes, Vec<ClientId>>,
    /// Clients with tracking on (any mode): the hooks cost nothing while this is zero.
    pub clients: usize,
    /// Clients in BCAST mode.
    pub bcast: Vec<ClientId>,
    /// Keys changed since the last broadcast, in order, with the client that changed each
    /// last (None: expiry or eviction): BCAST clients hear of them once per batch, one
    /// message per prefix, as Redis sends them once per event-loop turn.
    pub bcast_pending: std::collections::BTreeMap<Bytes, Option<ClientId>>,
}

impl TrackingTable {
    pub fn remember(&mut self, key: &[u8], id: ClientId) {
        match self.keys.get_mut(key) {
            Some(ids) => {
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
            None => {
                self.keys.insert(Bytes::copy_from_slice(key), vec![id]);
            }
        }
    }

    /// The clients that read `key` (forgotten: they are told once).
    pub fn take(&mut self, key: &[u8]) -> Vec<ClientId> {
        self.keys.remove(key).unwrap_or_default()
    }
}

/// Why CLIENT TRACKING ON ... BCAST was refused (Redis's `checkPrefixCollisionsOrReply`):
/// each new prefix, in order, against the client's existing ones (in sorted order), then
/// against the new ones after it. Equal prefixes overlap, and so does the empty one (what
/// BCAST without PREFIX tracks) with every other.
pub fn check_prefixes(existing: &[Bytes], new: &[Bytes]) -> Result<(), String> {
    let overlap = |a: &[u8], b: &[u8]| a.starts_with(b) || b.starts_with(a);
    let mut sorted = existing.to_vec();
    sorted.sort();
    for (i, a) in new.iter().enumerate() {
        let x = String::from_utf8_lossy(a);
        if let Some(b) = sorted.iter().find(|b| overlap(a, b)) {
            let y = String::from_utf8_lossy(b);
            return Err(format!("ERR Prefix '{x}' overlaps with an existing prefix '{y}'. Prefixes for a single client must not overlap."));
        }
        if let Some(b) = new[i + 1..].iter().find(|b| overlap(a, b)) {
            let y = String::from_utf8_lossy(b);
            return Err(format!(
                "ERR Prefix '{x}' overlaps with another provided prefix '{y}'. Prefixes for a single client must not overlap."
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_decide_what_is_remembered() {
        let mut m = TrackingMode::default();
        assert!(m.remembers());
        m.optin = true;
        assert!(!m.remembers());
        m.caching = Some(true);
        assert!(m.remembers());
        let m = TrackingMode { optout: true, caching: Some(false), ..Default::default() };
        assert!(!m.remembers());
        let m = TrackingMode { bcast: true, prefixes: vec![Bytes::from("user:")], ..Default::default() };
        assert!(!m.remembers() && m.matches_prefix(b"user:1") && !m.matches_prefix(b"order:1"));
    }

    #[test]
    fn a_key_is_told_once() {
        let mut t = TrackingTable::default();
        t.remember(b"k", 1);
        t.remember(b"k", 1);
        t.remember(b"k", 2);
        assert_eq!(t.take(b"k"), vec![1, 2]);
        assert!(t.take(b"k").is_empty());
        let (a, ab, b) = (Bytes::from("a"), Bytes::from("ab"), Bytes::from("b"));
        assert!(check_prefixes(&[], &[a.clone(), ab.clone()]).unwrap_err().contains("'a' overlaps with another provided prefix 'ab'"));
        assert!(check_prefixes(&[], &[a.clone(), b.clone()]).is_ok());
        let (just_a, just_ab) = (std::slice::from_ref(&a), std::slice::from_ref(&ab));
        assert!(check_prefixes(just_a, just_ab).unwrap_err().contains("'ab' overlaps with an existing prefix 'a'"));
        assert!(check_prefixes(just_a, just_a).is_err());
        assert!(check_prefixes(&[Bytes::new()], &[b]).unwrap_err().contains("existing prefix ''"));
    }
}
