//! A lock-free latency histogram with fixed buckets, kept by the engine and read by the
//! metrics exporter at scrape time (so the engine does not depend on a metrics library).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the buckets, in seconds. tmux answers a command in tens of microseconds to a
/// few milliseconds; the top buckets catch queueing behind floods and timeouts.
pub const LATENCY_BUCKETS: [f64; 14] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 2.5, 10.0,
];

/// Counts of observations per bucket, plus their sum.
#[derive(Debug, Default)]
pub struct LatencyHistogram {
    /// Observations whose value is at most the bucket's bound and above the previous bound;
    /// the last slot counts values above every bound.
    counts: [AtomicU64; LATENCY_BUCKETS.len() + 1],
    sum_nanos: AtomicU64,
}

/// A point-in-time copy of a [`LatencyHistogram`].
#[derive(Debug, Clone, PartialEq)]
pub struct LatencySnapshot {
    /// `(upper bound in seconds, observations in this bucket only)`, ending with
    /// `f64::INFINITY`.
    pub buckets: Vec<(f64, u64)>,
    /// Observations in all buckets.
    pub count: u64,
    /// The sum of all observed values, in seconds.
    pub sum_seconds: f64,
}

impl LatencyHistogram {
    /// Counts one observation of `elapsed`.
    pub fn observe(&self, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        let slot = LATENCY_BUCKETS
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(LATENCY_BUCKETS.len());
        self.counts[slot].fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// The counts as they are now.
    pub fn snapshot(&self) -> LatencySnapshot {
        let buckets: Vec<(f64, u64)> = self
            .counts
            .iter()
            .enumerate()
            .map(|(slot, count)| {
                let bound = LATENCY_BUCKETS.get(slot).copied().unwrap_or(f64::INFINITY);
                (bound, count.load(Ordering::Relaxed))
            })
            .collect();
        LatencySnapshot {
            count: buckets.iter().map(|(_, n)| n).sum(),
            buckets,
            sum_seconds: self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9,
        }
    }
}

impl LatencySnapshot {
    /// The sum of `snapshots` (all taken of histograms with [`LATENCY_BUCKETS`]); empty buckets
    /// when there are none.
    pub fn combine(snapshots: impl IntoIterator<Item = LatencySnapshot>) -> LatencySnapshot {
        let mut total = LatencyHistogram::default().snapshot();
        for snapshot in snapshots {
            for (sum, (_, n)) in total.buckets.iter_mut().zip(snapshot.buckets) {
                sum.1 += n;
            }
            total.count += snapshot.count;
            total.sum_seconds += snapshot.sum_seconds;
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_land_in_their_buckets() {
        let histogram = LatencyHistogram::default();
        histogram.observe(Duration::from_micros(50));
        histogram.observe(Duration::from_micros(100));
        histogram.observe(Duration::from_millis(3));
        histogram.observe(Duration::from_secs(60));
        let snapshot = histogram.snapshot();
        assert_eq!(snapshot.count, 4);
        assert_eq!(snapshot.buckets.len(), LATENCY_BUCKETS.len() + 1);
        assert_eq!(snapshot.buckets[0], (0.0001, 2), "bounds are inclusive");
        let at = |bound: f64| snapshot.buckets.iter().find(|b| b.0 == bound).unwrap().1;
        assert_eq!(at(0.0025), 0);
        assert_eq!(at(0.005), 1);
        assert_eq!(at(10.0), 0);
        assert_eq!(snapshot.buckets.last(), Some(&(f64::INFINITY, 1)));
        assert!((snapshot.sum_seconds - 60.00315).abs() < 1e-9);
    }

    #[test]
    fn snapshots_combine_bucket_by_bucket() {
        let (a, b) = (LatencyHistogram::default(), LatencyHistogram::default());
        a.observe(Duration::from_micros(50));
        b.observe(Duration::from_micros(60));
        b.observe(Duration::from_secs(1));
        let total = LatencySnapshot::combine([a.snapshot(), b.snapshot()]);
        assert_eq!(total.count, 3);
        assert_eq!(total.buckets[0], (0.0001, 2));
        assert_eq!(total.buckets.iter().map(|b| b.1).sum::<u64>(), 3);
        assert!((total.sum_seconds - 1.00011).abs() < 1e-9);
        assert_eq!(LatencySnapshot::combine([]).count, 0);
    }
}
