//! A stream's consumer groups (Redis's `streamCG`, `streamConsumer`, `streamNACK`): the
//! group's pending entries list holds each delivered, unacknowledged entry once with the
//! name of the consumer it was last delivered to; each consumer lists the IDs it holds.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;

use super::stream::StreamId;

/// A pending (delivered, not acknowledged) entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Nack {
    /// Unix ms of the last delivery.
    pub delivery_time: i64,
    pub delivery_count: u64,
    /// The consumer it was last delivered to (a key of `Group::consumers`).
    pub consumer: Bytes,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Consumer {
    /// Unix ms of its last activity.
    pub seen_time: i64,
    pub pel: BTreeSet<StreamId>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Group {
    pub last_id: StreamId,
    /// The logical read counter; -1 when unknown (Redis's `SCG_INVALID_ENTRIES_READ`).
    pub entries_read: i64,
    pub pel: BTreeMap<StreamId, Nack>,
    /// By name, in byte order.
    pub consumers: BTreeMap<Bytes, Consumer>,
}

impl Group {
    pub fn new(last_id: StreamId, entries_read: i64) -> Self {
        Group { last_id, entries_read, ..Group::default() }
    }

    pub fn mem_usage(&self) -> usize {
        let consumers: usize = self.consumers.iter().map(|(n, c)| n.len() + 64 + c.pel.len() * 24).sum();
        self.pel.len() * 64 + consumers + 96
    }

    /// Creates the consumer if it is missing; true when created.
    pub fn create_consumer(&mut self, name: &[u8], now_ms: i64) -> bool {
        if self.consumers.contains_key(name) {
            return false;
        }
        self.consumers.insert(Bytes::copy_from_slice(name), Consumer { seen_time: now_ms, pel: BTreeSet::new() });
        true
    }

    /// Removes a consumer and its pending entries; the number it held, or `None` if absent.
    pub fn delete_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let consumer = self.consumers.remove(name)?;
        for id in &consumer.pel {
            self.pel.remove(id);
        }
        Some(consumer.pel.len())
    }

    /// Removes a pending entry from the group and its consumer; true if it was pending.
    pub fn ack(&mut self, id: StreamId) -> bool {
        let Some(nack) = self.pel.remove(&id) else { return false };
        if let Some(c) = self.consumers.get_mut(&nack.consumer) {
            c.pel.remove(&id);
        }
        true
    }

    /// Gives the pending entry `id` to `consumer` (which exists), taking it from its
    /// previous owner; creates it when `create`.
    pub fn assign(&mut self, id: StreamId, consumer: &Bytes, delivery_time: i64, count: impl FnOnce(Option<u64>) -> u64) {
        let previous = self.pel.get(&id).map(|n| (n.consumer.clone(), n.delivery_count));
        if let Some((owner, _)) = &previous {
            if owner != consumer {
                if let Some(c) = self.consumers.get_mut(owner) {
                    c.pel.remove(&id);
                }
            }
        }
        let delivery_count = count(previous.map(|p| p.1));
        self.pel.insert(id, Nack { delivery_time, delivery_count, consumer: consumer.clone() });
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pel.insert(id);
        }
    }
}
