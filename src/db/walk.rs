//! A walk that visits every key of a keyspace once, as of the moment it began, while the
//! executor keeps serving between its steps: the fork-less point-in-time view behind a log
//! rewrite's base snapshot and a background RDB save.
//!
//! One rule gives the consistency: a key is visited before anything changes it. Entries
//! carry a mark ([`super::Entry::snap`]): the walk's epoch once visited, and new entries get
//! the epoch at birth (they are not part of the view). The walk visits each database's
//! dense positions downwards, so a removal (the last entry moves into the hole) never moves
//! an unvisited entry out of the walk's way. Deletions need nothing. The executor captures
//! the keys a write command is about to touch ([`Walk::capture`]), or completes the walk at
//! once for the rare commands whose keys are not known beforehand ([`Walk::complete`]).
//! One walk runs at a time (the marks are shared).

use std::time::{Duration, Instant};

use super::entry::SNAP_EPOCH_MAX;
use super::{Entry, Keyspace};

pub struct Walk {
    epoch: u32,
    /// Database being walked, and how many of its positions are still to visit.
    db: usize,
    cursor: usize,
    walked: bool,
}

impl Walk {
    /// Begins a walk of `ks`: every database gets a new epoch (new entries then belong to it).
    pub fn start(ks: &mut Keyspace) -> Walk {
        let epoch = (ks.dbs.iter().map(|d| d.snap_epoch).max().unwrap_or(0) + 1) % (SNAP_EPOCH_MAX + 1);
        let epoch = epoch.max(1);
        for db in ks.dbs.iter_mut() {
            db.snap_epoch = epoch;
        }
        Walk { epoch, db: 0, cursor: ks.dbs.first().map_or(0, |d| d.len()), walked: ks.dbs.is_empty() }
    }

    /// Visits `key` of `db` now if the walk still owes it (it is about to change).
    pub fn capture(&mut self, ks: &mut Keyspace, db: usize, key: &[u8], visit: impl FnMut(usize, &[u8], &Entry, Option<i64>)) {
        if self.walked || db >= ks.dbs.len() {
            return;
        }
        let Some(pos) = ks.dbs[db].position(key) else { return };
        self.visit(ks, db, pos, visit);
    }

    fn visit(&mut self, ks: &mut Keyspace, db: usize, pos: usize, mut visit: impl FnMut(usize, &[u8], &Entry, Option<i64>)) -> bool {
        let Some((key, entry, expire_at)) = ks.dbs[db].slot_at_mut(pos) else { return false };
        if entry.snap() == self.epoch {
            return false;
        }
        entry.set_snap(self.epoch);
        visit(db, key.as_ref(), entry, expire_at);
        true
    }

    /// Walks on for about `budget`; true once every key is visited.
    pub fn step(&mut self, ks: &mut Keyspace, budget: Duration, mut visit: impl FnMut(usize, &[u8], &Entry, Option<i64>)) -> bool {
        let start = Instant::now();
        let mut n = 0u32;
        while !self.walked {
            let len = ks.dbs[self.db].len();
            self.cursor = self.cursor.min(len);
            if self.cursor == 0 {
                self.db += 1;
                if self.db == ks.dbs.len() {
                    self.walked = true;
                    break;
                }
                self.cursor = ks.dbs[self.db].len();
                continue;
            }
            self.cursor -= 1;
            self.visit(ks, self.db, self.cursor, &mut visit);
            n += 1;
            if n.is_multiple_of(64) && start.elapsed() >= budget {
                break;
            }
        }
        self.walked
    }

    /// Visits everything left at once.
    pub fn complete(&mut self, ks: &mut Keyspace, mut visit: impl FnMut(usize, &[u8], &Entry, Option<i64>)) {
        while !self.step(ks, Duration::from_secs(3600), &mut visit) {}
    }

    pub fn walked(&self) -> bool {
        self.walked
    }
}
