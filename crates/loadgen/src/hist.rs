//! Durations in nanoseconds as an HdrHistogram (the `hdrhistogram` crate, the format
//! wrk2 and many load generators report with): three significant figures from 1 ns to
//! 2^44 ns (about 4.9 hours; anything longer is clamped), so any percentile is within
//! 0.1% of the true value. The counts are allocated once, when the histogram is made,
//! with fixed bounds: recording is O(1) and never allocates. The exact minimum, maximum
//! and sum are kept beside it (the histogram's own are bucket-rounded).

use serde::Serialize;

/// Largest value kept apart from the clamp: 2^44 ns.
const MAX_NS: u64 = 1 << 44;
/// Significant decimal figures of every recorded value.
const SIGFIG: u8 = 3;

#[derive(Clone)]
pub struct Histogram {
    h: hdrhistogram::Histogram<u64>,
    sum: u128,
    min: u64,
    max: u64,
}

/// Summary of a histogram, in milliseconds (the unit http_load reports in).
#[derive(Clone, Copy, Debug, Default, Serialize, serde::Deserialize, PartialEq)]
pub struct Summary {
    pub count: u64,
    pub min_ms: f64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    pub fn new() -> Histogram {
        Histogram {
            h: hdrhistogram::Histogram::new_with_bounds(1, MAX_NS, SIGFIG)
                .expect("constant bounds are valid"),
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    pub fn record(&mut self, ns: u64) {
        // Within the fixed bounds: no resize, no allocation (0 ns counts as 1 ns).
        self.h.saturating_record(ns.clamp(1, MAX_NS));
        self.sum += u128::from(ns);
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
    }

    pub fn count(&self) -> u64 {
        self.h.len()
    }

    /// The value at quantile `q` (0..=1) in ns, clamped to the exact min and max.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.h.is_empty() {
            return 0.0;
        }
        if q <= 0.0 {
            return self.min as f64;
        }
        if q >= 1.0 {
            return self.max as f64;
        }
        self.h.value_at_quantile(q).clamp(self.min, self.max) as f64
    }

    pub fn merge(&mut self, o: &Histogram) {
        // Same bounds on both sides: adding cannot fail.
        let _ = self.h.add(&o.h);
        self.sum += o.sum;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }

    pub fn summary(&self) -> Summary {
        let n = self.count();
        if n == 0 {
            return Summary::default();
        }
        let ms = |ns: f64| ns / 1e6;
        Summary {
            count: n,
            min_ms: ms(self.min as f64),
            mean_ms: ms(self.sum as f64 / n as f64),
            p50_ms: ms(self.quantile(0.50)),
            p90_ms: ms(self.quantile(0.90)),
            p99_ms: ms(self.quantile(0.99)),
            max_ms: ms(self.max as f64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_within_a_thousandth_and_the_ends_clamped() {
        for v in [1u64, 127, 128, 1000, 65_535, 1 << 20, 123_456_789, 1 << 43] {
            let mut h = Histogram::new();
            h.record(v);
            h.record(v + v / 2);
            let q = h.quantile(0.5);
            assert!(
                (q - v as f64).abs() <= v as f64 / 1000.0 + 1.0,
                "{v} -> {q}"
            );
        }
        let mut h = Histogram::new();
        h.record(0);
        h.record(u64::MAX);
        assert_eq!(h.count(), 2);
        assert_eq!(h.quantile(0.0), 0.0);
        assert_eq!(h.quantile(1.0), u64::MAX as f64);
    }

    #[test]
    fn quantiles_of_a_uniform_set() {
        let mut h = Histogram::new();
        for v in 1..=10_000u64 {
            h.record(v * 1000); // 1 µs .. 10 ms
        }
        let s = h.summary();
        assert_eq!(s.count, 10_000);
        assert_eq!(s.min_ms, 0.001);
        assert_eq!(s.max_ms, 10.0);
        assert!((s.mean_ms - 5.0005).abs() < 1e-9);
        assert!((s.p50_ms - 5.0).abs() < 0.006, "p50 {}", s.p50_ms);
        assert!((s.p99_ms - 9.9).abs() < 0.011, "p99 {}", s.p99_ms);
    }

    #[test]
    fn empty_and_merge() {
        let mut a = Histogram::new();
        assert_eq!(a.summary(), Summary::default());
        let mut b = Histogram::new();
        a.record(2_000_000);
        b.record(4_000_000);
        a.merge(&b);
        let s = a.summary();
        assert_eq!(s.count, 2);
        assert_eq!(s.min_ms, 2.0);
        assert_eq!(s.max_ms, 4.0);
        assert_eq!(s.mean_ms, 3.0);
    }
}
