//! Cluster mode's keys by hash slot (Redis's slot_to_keys): CLUSTER COUNTKEYSINSLOT and
//! GETKEYSINSLOT, and the checks of CLUSTER SETSLOT, without a scan of the keyspace (a
//! reshard asks once per slot). Kept by [`super::Db`] at every insert and removal, built from
//! the keys present when first asked for.

use std::collections::HashSet;

use super::key::Key;
use crate::cluster::slot::{key_slot, SLOTS};

pub struct SlotIndex {
    slots: Vec<HashSet<Key>>,
}

impl SlotIndex {
    pub fn build<'a>(keys: impl Iterator<Item = &'a Key>) -> SlotIndex {
        let mut ix = SlotIndex { slots: (0..SLOTS).map(|_| HashSet::new()).collect() };
        for k in keys {
            ix.add(k);
        }
        ix
    }

    pub fn add(&mut self, key: &Key) {
        self.slots[key_slot(key) as usize].insert(key.clone());
    }

    pub fn remove(&mut self, key: &[u8]) {
        let set = &mut self.slots[key_slot(key) as usize];
        set.remove(key);
        // A slot emptied by a reshard gives its table back.
        if set.is_empty() && set.capacity() > 16 {
            *set = HashSet::new();
        }
    }

    pub fn count(&self, slot: u16) -> usize {
        self.slots.get(slot as usize).map_or(0, HashSet::len)
    }

    pub fn keys(&self, slot: u16) -> impl Iterator<Item = &Key> {
        self.slots.get(slot as usize).into_iter().flatten()
    }
}
