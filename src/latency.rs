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
}
