//! Fixed-size log-linear histogram of durations in nanoseconds (HDR-histogram style):
//! values below 128 ns are exact, above that each power of two is split into 64 buckets,
//! so any percentile is within 1.6% of the true value. Recording is O(1) and never
//! allocates; the bucket array is allocated once when the histogram is made.

use serde::Serialize;

const SUB_BITS: u32 = 6;
const SUB: usize = 1 << SUB_BITS; // 64 buckets per power of two
const MAX_EXP: u32 = 44; // 2^44 ns ≈ 4.9 hours: anything longer is clamped
const BUCKETS: usize = (MAX_EXP as usize - SUB_BITS as usize + 1) * SUB + SUB;

#[derive(Clone)]
pub struct Histogram {
    counts: Box<[u64]>,
    n: u64,
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

fn index(v: u64) -> usize {
    if v < (SUB as u64) * 2 {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // v in [2^e, 2^(e+1)), e >= 7
    let e = e.min(MAX_EXP);
    let sub = ((v >> (e - SUB_BITS)) as usize) & (SUB - 1);
    ((e - SUB_BITS) as usize) * SUB + SUB + sub
}

/// The middle of bucket `i`'s value range.
fn value(i: usize) -> f64 {
    if i < SUB * 2 {
        return i as f64;
    }
    let e = (i - SUB) / SUB + SUB_BITS as usize;
    let sub = (i - SUB) % SUB;
    let lo = (1u64 << e) + ((sub as u64) << (e - SUB_BITS as usize));
    lo as f64 + (1u64 << (e - SUB_BITS as usize)) as f64 / 2.0
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    pub fn new() -> Histogram {
        Histogram {
            counts: vec![0; BUCKETS].into_boxed_slice(),
            n: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    pub fn record(&mut self, ns: u64) {
        let i = index(ns).min(BUCKETS - 1);
        self.counts[i] += 1;
        self.n += 1;
        self.sum += ns as u128;
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
    }

    pub fn count(&self) -> u64 {
        self.n
    }

    /// The value at quantile `q` (0..=1) in ns, clamped to the exact min and max.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return value(i).clamp(self.min as f64, self.max as f64);
            }
        }
        self.max as f64
    }

    pub fn merge(&mut self, o: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(o.counts.iter()) {
            *a += b;
        }
        self.n += o.n;
        self.sum += o.sum;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }

    pub fn summary(&self) -> Summary {
        if self.n == 0 {
            return Summary::default();
        }
        let ms = |ns: f64| ns / 1e6;
        Summary {
            count: self.n,
            min_ms: ms(self.min as f64),
            mean_ms: ms(self.sum as f64 / self.n as f64),
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
    fn buckets_are_monotonic_and_tight() {
        let mut last = 0;
        for v in [
            0u64,
            1,
            127,
            128,
            129,
            1000,
            65_535,
            1 << 20,
            123_456_789,
            1 << 43,
        ] {
            let i = index(v);
            assert!(i >= last, "index not monotonic at {v}");
            last = i;
            let mid = value(i);
            assert!(
                (mid - v as f64).abs() <= v as f64 / 60.0 + 1.0,
                "{v} -> {mid}"
            );
        }
        assert!(index(u64::MAX) < BUCKETS);
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
        assert!((s.p50_ms - 5.0).abs() < 0.08, "p50 {}", s.p50_ms);
        assert!((s.p99_ms - 9.9).abs() < 0.16, "p99 {}", s.p99_ms);
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
