//! The latency monitor (`latency-monitor-threshold`): per event class, one sample per
//! second (the worst of that second) for the last 160 seconds with samples, and the worst
//! ever, as Redis's latency.c keeps them.

use std::collections::{BTreeMap, VecDeque};

/// Samples kept per event (Redis's LATENCY_TS_LEN).
const HISTORY: usize = 160;

#[derive(Debug, Default, Clone)]
pub struct EventSeries {
    /// (unix seconds, ms), oldest first.
    pub samples: VecDeque<(i64, u64)>,
    pub max: u64,
}

#[derive(Debug, Default)]
pub struct LatencyMonitor {
    pub events: BTreeMap<&'static str, EventSeries>,
}

impl LatencyMonitor {
    /// Records `ms` for `event` at `now_secs` (the caller checks the threshold).
    pub fn add(&mut self, event: &'static str, now_secs: i64, ms: u64) {
        let series = self.events.entry(event).or_default();
        series.max = series.max.max(ms);
        match series.samples.back_mut() {
            Some((t, worst)) if *t == now_secs => *worst = (*worst).max(ms),
            _ => {
                series.samples.push_back((now_secs, ms));
                if series.samples.len() > HISTORY {
                    series.samples.pop_front();
                }
            }
        }
    }

    /// Forgets the named events (all of them when `names` is empty); returns how many there were.
    pub fn reset(&mut self, names: &[String]) -> usize {
        if names.is_empty() {
            let n = self.events.len();
            self.events.clear();
            return n;
        }
        names.iter().filter(|n| self.events.remove(n.as_str()).is_some()).count()
    }
}

/// Per-command latency histogram (INFO latencystats, LATENCY HISTOGRAM): Redis's
/// hdr_histogram with 2 significant figures over 1 ns..1 s, in nanoseconds (a command's
/// microseconds times 1000, as Redis records them), with its bucket layout, so percentiles
/// read as Redis prints them (4 us is `4.015`). Values past 1 s are not recorded, as in Redis.
#[derive(Debug, Clone)]
pub struct Histogram {
    counts: Box<[u64]>,
    total: u64,
}

/// 2 significant figures: 256 sub-buckets, half of them per bucket past the first.
const SUB_BUCKET_HALF_MAGNITUDE: u32 = 7;
const SUB_BUCKET_HALF: usize = 1 << SUB_BUCKET_HALF_MAGNITUDE;
/// Buckets to reach 1e9 ns: 256 << 22 > 1e9.
const BUCKETS: usize = 23;
const COUNTS_LEN: usize = (BUCKETS + 1) * SUB_BUCKET_HALF;

/// The bucket of `v` (its range is `1 << bucket` wide).
fn bucket_of(v: u64) -> u32 {
    let bits = 64 - (v | 255).leading_zeros();
    bits - (SUB_BUCKET_HALF_MAGNITUDE + 1)
}

fn counts_index(v: u64) -> usize {
    let bucket = bucket_of(v);
    let sub = (v >> bucket) as usize;
    ((bucket as usize + 1) << SUB_BUCKET_HALF_MAGNITUDE) + sub - SUB_BUCKET_HALF
}

fn value_at_index(i: usize) -> u64 {
    let (bucket, sub) = match (i >> SUB_BUCKET_HALF_MAGNITUDE).checked_sub(1) {
        Some(b) => (b, (i & (SUB_BUCKET_HALF - 1)) + SUB_BUCKET_HALF),
        None => (0, i & (SUB_BUCKET_HALF - 1)),
    };
    (sub as u64) << bucket
}

/// The largest value counted in the same slot as `v`.
fn highest_equivalent(v: u64) -> u64 {
    let bucket = bucket_of(v);
    ((v >> bucket) << bucket) + (1u64 << bucket) - 1
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram { counts: vec![0; COUNTS_LEN].into_boxed_slice(), total: 0 }
    }
}

impl Histogram {
    pub fn record(&mut self, ns: u64) {
        let i = counts_index(ns);
        if let Some(c) = self.counts.get_mut(i) {
            *c += 1;
            self.total += 1;
        }
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    /// `hdr_value_at_percentile`: the highest value equivalent to the one at `percentile`.
    pub fn value_at_percentile(&self, percentile: f64) -> u64 {
        let wanted = ((((percentile.min(100.0)) / 100.0) * self.total as f64) + 0.5) as u64;
        let wanted = wanted.max(1);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= wanted {
                let v = value_at_index(i);
                return if percentile == 0.0 { v } else { highest_equivalent(v) };
            }
        }
        0
    }

    /// LATENCY HISTOGRAM's cumulative counts at powers of two from 1024 ns, in microseconds
    /// (Redis's logarithmic iteration), each level listed where the count grows.
    pub fn cumulative_usec(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let (mut level, mut i, mut seen, mut previous) = (1024u64, 0usize, 0u64, 0u64);
        while previous < self.total && level <= 1 << 40 {
            let last = counts_index(level).min(COUNTS_LEN - 1);
            while i <= last {
                seen += self.counts[i];
                i += 1;
            }
            if seen > previous {
                out.push((highest_equivalent(level) / 1000, seen));
            }
            previous = seen;
            level <<= 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_sample_per_second_the_worst_and_a_bounded_history() {
        let mut m = LatencyMonitor::default();
        m.add("command", 10, 5);
        m.add("command", 10, 9);
        m.add("command", 10, 7);
        m.add("command", 11, 3);
        let s = &m.events["command"];
        assert_eq!(s.samples, VecDeque::from(vec![(10, 9), (11, 3)]));
        assert_eq!(s.max, 9);
        for t in 0..500 {
            m.add("fast-command", t, 1);
        }
        assert_eq!(m.events["fast-command"].samples.len(), HISTORY);
        assert_eq!(m.reset(&["command".to_string(), "nosuch".to_string()]), 1);
        assert_eq!(m.reset(&[]), 1);
    }

    #[test]
    fn percentiles_read_as_redis_prints_them() {
        let mut h = Histogram::default();
        for us in [4, 4, 6, 2, 5] {
            h.record(us * 1000);
        }
        // Redis's INFO latencystats for these GET times: p50=4.015, p99=6.015.
        assert_eq!(h.value_at_percentile(50.0), 4015);
        assert_eq!(h.value_at_percentile(99.0), 6015);
        assert_eq!(h.value_at_percentile(99.9), 6015);
        assert_eq!(h.total(), 5);
        // LATENCY HISTOGRAM: 3 calls up to 4 us, all 5 up to 8 us.
        assert_eq!(h.cumulative_usec(), vec![(2, 1), (4, 3), (8, 5)]);
        h.record(2_000_000_000);
        assert_eq!(h.total(), 5, "past 1 s is not recorded");
        let mut z = Histogram::default();
        z.record(0);
        assert_eq!(z.value_at_percentile(50.0), 0);
        assert_eq!(z.cumulative_usec(), vec![(1, 1)]);
    }
}
