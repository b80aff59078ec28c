//! Seeded randomness for workloads: a small PRNG and the distributions the Surge model
//! uses (exponential, Pareto, lognormal, Zipf). Everything here is deterministic for a
//! seed, so `--seed` reproduces a workload exactly; nothing here allocates except
//! [`Zipf::new`], once, at set-up.

/// xoshiro256** seeded through SplitMix64 (Blackman & Vigna). Fast, 256-bit state,
/// good enough statistically for workload generation (not for cryptography).
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        Rng {
            s: [next(), next(), next(), next()],
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        let r = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        r
    }

    /// Uniform in [0, 1).
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in (0, 1]: safe to take the logarithm of.
    pub fn f64_open0(&mut self) -> f64 {
        1.0 - self.f64()
    }

    /// Uniform integer in [0, n); `n` must be > 0.
    pub fn below(&mut self, n: u64) -> u64 {
        // Lemire's multiply-shift; the tiny bias is irrelevant for workloads.
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Exponential with the given mean.
    pub fn exp(&mut self, mean: f64) -> f64 {
        -mean * self.f64_open0().ln()
    }

    /// Pareto with shape `alpha` and scale (minimum) `k`: P(X > x) = (k/x)^alpha.
    pub fn pareto(&mut self, alpha: f64, k: f64) -> f64 {
        k / self.f64_open0().powf(1.0 / alpha)
    }

    /// Standard normal (Box-Muller; one of the pair is discarded, which keeps the state simple).
    pub fn normal(&mut self) -> f64 {
        let u1 = self.f64_open0();
        let u2 = self.f64();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Lognormal: exp(mu + sigma * N(0,1)).
    pub fn lognormal(&mut self, mu: f64, sigma: f64) -> f64 {
        (mu + sigma * self.normal()).exp()
    }

    /// Geometric on {1, 2, ...} with the given mean (>= 1).
    pub fn geometric(&mut self, mean: f64) -> u64 {
        if mean <= 1.0 {
            return 1;
        }
        let p = 1.0 / mean;
        1 + (self.f64_open0().ln() / (1.0 - p).ln()).floor() as u64
    }
}

/// Zipf-like popularity over `n` ranks: P(rank i) ∝ 1 / i^alpha (i = 1..=n). Sampling is
/// a binary search in a cumulative table built once.
#[derive(Clone, Debug)]
pub struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    /// # Panics
    /// If `n` is 0 (a configuration error, checked by callers).
    pub fn new(n: usize, alpha: f64) -> Zipf {
        assert!(n > 0, "Zipf over zero ranks");
        let mut cdf = Vec::with_capacity(n);
        let mut sum = 0.0;
        for i in 1..=n {
            sum += 1.0 / (i as f64).powf(alpha);
            cdf.push(sum);
        }
        for c in &mut cdf {
            *c /= sum;
        }
        Zipf { cdf }
    }

    /// A rank in 0..n (0 = most popular).
    pub fn sample(&self, rng: &mut Rng) -> usize {
        let u = rng.f64();
        self.cdf
            .partition_point(|&c| c <= u)
            .min(self.cdf.len() - 1)
    }

    pub fn len(&self) -> usize {
        self.cdf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cdf.is_empty()
    }

    /// Probability of rank `i` (0-based).
    pub fn p(&self, i: usize) -> f64 {
        if i == 0 {
            self.cdf[0]
        } else {
            self.cdf[i] - self.cdf[i - 1]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        let mut c = Rng::new(8);
        let va: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let vb: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        let vc: Vec<u64> = (0..8).map(|_| c.next_u64()).collect();
        assert_eq!(va, vb);
        assert_ne!(va, vc);
    }

    #[test]
    fn distributions_have_their_means() {
        let mut r = Rng::new(1);
        let n = 200_000;
        let mean = |f: &mut dyn FnMut() -> f64| (0..n).map(|_| f()).sum::<f64>() / n as f64;
        let e = mean(&mut || r.exp(2.0));
        assert!((e - 2.0).abs() < 0.05, "exp mean {e}");
        // Pareto(alpha=3, k=1) has mean alpha*k/(alpha-1) = 1.5.
        let p = mean(&mut || r.pareto(3.0, 1.0));
        assert!((p - 1.5).abs() < 0.03, "pareto mean {p}");
        // Lognormal(0, 0.5) has mean exp(0.125).
        let l = mean(&mut || r.lognormal(0.0, 0.5));
        assert!((l - 0.125f64.exp()).abs() < 0.02, "lognormal mean {l}");
        let g = mean(&mut || r.geometric(4.0) as f64);
        assert!((g - 4.0).abs() < 0.05, "geometric mean {g}");
        let u = mean(&mut || r.below(10) as f64);
        assert!((u - 4.5).abs() < 0.05, "below mean {u}");
    }

    #[test]
    fn zipf_follows_one_over_rank() {
        let z = Zipf::new(100, 1.0);
        let mut r = Rng::new(3);
        let mut counts = [0u32; 100];
        let n = 300_000;
        for _ in 0..n {
            counts[z.sample(&mut r)] += 1;
        }
        // Rank 1 is about twice as popular as rank 2 and ten times rank 10.
        let f = |i: usize| counts[i] as f64 / n as f64;
        assert!((f(0) / f(1) - 2.0).abs() < 0.1, "{} {}", f(0), f(1));
        assert!((f(0) / f(9) - 10.0).abs() < 1.0);
        assert!((f(0) - z.p(0)).abs() < 0.01);
    }
}
