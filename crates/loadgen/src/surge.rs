//! The Surge workload model (Barford & Crovella, SIGMETRICS 1998), as used by the OpenMP
//! paper through httperf's `--wsesslog`: a file set with heavy-tailed sizes and Zipf
//! popularity, and user sessions made of bursts (a page and its embedded objects,
//! requested back to back on one persistent connection) separated by think times.
//!
//! | quantity | distribution | default (Surge's fit) |
//! |---|---|---|
//! | file size, body | lognormal | μ = 9.357, σ = 1.318 (bytes; median ≈ 11.6 KB) |
//! | file size, tail | Pareto | α = 1.1, k = 133 000 bytes, for 7% of files |
//! | popularity | Zipf | P(rank r) ∝ 1/r^α, α = 1; ranks matched to sizes at random |
//! | objects per burst | Pareto, floored | α = 2.43, k = 1 (page + embedded), at most 16 |
//! | think time between bursts | Pareto | α = 1.5, k = 1 s, capped at 15 s, times `think_scale` |
//! | bursts per session | geometric | mean 5, at most 50 |
//!
//! Not modelled: Surge's temporal locality (stack distances) and its Weibull "active off"
//! gaps between embedded objects (we pipeline a burst as httperf does). Sizes are capped at
//! `max_size` so that a site fits in memory. Everything is a function of the parameters
//! and the seed: the same seed gives the same files, the same contents and the same
//! sessions.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::rng::{Rng, Zipf};

/// Parameters of the model (see the module table).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SurgeParams {
    pub files: usize,
    pub size_mu: f64,
    pub size_sigma: f64,
    pub tail_fraction: f64,
    pub tail_alpha: f64,
    pub tail_k: f64,
    pub min_size: u64,
    pub max_size: u64,
    pub zipf_alpha: f64,
    pub burst_alpha: f64,
    pub burst_k: f64,
    pub max_burst: usize,
    pub think_alpha: f64,
    pub think_k_secs: f64,
    pub think_max_secs: f64,
    pub think_scale: f64,
    pub session_bursts_mean: f64,
    pub max_session_bursts: u32,
}

impl Default for SurgeParams {
    fn default() -> Self {
        SurgeParams {
            files: 2000,
            size_mu: 9.357,
            size_sigma: 1.318,
            tail_fraction: 0.07,
            tail_alpha: 1.1,
            tail_k: 133_000.0,
            min_size: 64,
            max_size: 1 << 20,
            zipf_alpha: 1.0,
            burst_alpha: 2.43,
            burst_k: 1.0,
            max_burst: 16,
            think_alpha: 1.5,
            think_k_secs: 1.0,
            think_max_secs: 15.0,
            think_scale: 1.0,
            session_bursts_mean: 5.0,
            max_session_bursts: 50,
        }
    }
}

/// Largest burst the load generator pipelines.
pub const MAX_BURST: usize = 16;

impl SurgeParams {
    pub fn check(&self) -> Result<(), String> {
        if self.files == 0 || self.files > 1_000_000 {
            return Err("surge: files must be 1..=1000000".into());
        }
        if self.min_size > self.max_size {
            return Err("surge: min_size > max_size".into());
        }
        if self.max_burst == 0 || self.max_burst > MAX_BURST {
            return Err(format!("surge: max_burst must be 1..={MAX_BURST}"));
        }
        for (name, v) in [
            ("size_sigma", self.size_sigma),
            ("tail_alpha", self.tail_alpha),
            ("tail_k", self.tail_k),
            ("zipf_alpha", self.zipf_alpha),
            ("burst_alpha", self.burst_alpha),
            ("burst_k", self.burst_k),
            ("think_alpha", self.think_alpha),
        ] {
            if !(v > 0.0 && v.is_finite()) {
                return Err(format!("surge: {name} must be > 0"));
            }
        }
        if !(0.0..=1.0).contains(&self.tail_fraction)
            || self.think_scale < 0.0
            || self.think_k_secs < 0.0
            || self.think_max_secs < 0.0
            || self.session_bursts_mean < 1.0
            || self.max_session_bursts == 0
        {
            return Err("surge: a fraction, time or count is out of range".into());
        }
        Ok(())
    }

    /// One file size drawn from the hybrid lognormal body / Pareto tail.
    pub fn draw_size(&self, rng: &mut Rng) -> u64 {
        let s = if rng.f64() < self.tail_fraction {
            rng.pareto(self.tail_alpha, self.tail_k)
        } else {
            rng.lognormal(self.size_mu, self.size_sigma)
        };
        (s.round() as u64).clamp(self.min_size, self.max_size)
    }

    /// Objects in one burst (page + embedded), 1..=max_burst.
    pub fn draw_burst(&self, rng: &mut Rng) -> usize {
        (rng.pareto(self.burst_alpha, self.burst_k).floor() as usize).clamp(1, self.max_burst)
    }

    /// Think time before the next burst, in seconds.
    pub fn draw_think(&self, rng: &mut Rng) -> f64 {
        rng.pareto(self.think_alpha, self.think_k_secs.max(1e-9))
            .min(self.think_max_secs)
            * self.think_scale
    }

    /// Bursts in one session.
    pub fn draw_bursts(&self, rng: &mut Rng) -> u32 {
        rng.geometric(self.session_bursts_mean)
            .min(self.max_session_bursts as u64) as u32
    }
}

/// One file of a generated set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SurgeFile {
    /// URL path, e.g. `/surge/00042.bin`.
    pub path: String,
    pub size: u64,
}

/// A file set in popularity order: `files[0]` is the most requested.
#[derive(Clone, Debug, PartialEq)]
pub struct FileSet {
    pub params: SurgeParams,
    pub seed: u64,
    pub files: Vec<SurgeFile>,
}

/// Name of the manifest written at the root of a generated site.
pub const MANIFEST: &str = "surge.tsv";

impl FileSet {
    /// Draws the file set for `params` and `seed`.
    pub fn generate(params: &SurgeParams, seed: u64) -> Result<FileSet, String> {
        params.check()?;
        let mut rng = Rng::new(seed);
        let sizes: Vec<u64> = (0..params.files)
            .map(|_| params.draw_size(&mut rng))
            .collect();
        // Popularity rank → file: a random permutation, so size and popularity are
        // independent, as Surge assumes.
        let mut order: Vec<usize> = (0..params.files).collect();
        for i in (1..order.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            order.swap(i, j);
        }
        let files = order
            .into_iter()
            .map(|i| SurgeFile {
                path: format!("/surge/{i:05}.bin"),
                size: sizes[i],
            })
            .collect();
        Ok(FileSet {
            params: params.clone(),
            seed,
            files,
        })
    }

    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    /// Mean size of a *request* under the Zipf popularity (what the wire carries).
    pub fn mean_request_bytes(&self) -> f64 {
        let z = Zipf::new(self.files.len(), self.params.zipf_alpha);
        self.files
            .iter()
            .enumerate()
            .map(|(i, f)| z.p(i) * f.size as f64)
            .sum()
    }

    /// Writes the files under `dir/surge/` and the manifest `dir/surge.tsv`.
    /// Contents are pseudo-random bytes derived from the seed and the file number.
    pub fn write_site(&self, dir: &Path) -> Result<(), String> {
        let sub = dir.join("surge");
        std::fs::create_dir_all(&sub).map_err(|e| format!("{}: {e}", sub.display()))?;
        let mut buf = vec![0u8; 64 * 1024];
        for f in &self.files {
            let num: u64 = f.path[7..12].parse().map_err(|_| "bad surge path")?;
            let mut rng =
                Rng::new(self.seed ^ (num.wrapping_add(1)).wrapping_mul(0x2545_f491_4f6c_dd1d));
            let path = dir.join(&f.path[1..]);
            let file =
                std::fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let mut w = std::io::BufWriter::new(file);
            let mut left = f.size as usize;
            while left > 0 {
                let n = left.min(buf.len());
                for c in buf[..n].chunks_mut(8) {
                    let v = rng.next_u64().to_le_bytes();
                    c.copy_from_slice(&v[..c.len()]);
                }
                w.write_all(&buf[..n])
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                left -= n;
            }
            w.flush().map_err(|e| format!("{}: {e}", path.display()))?;
        }
        std::fs::write(dir.join(MANIFEST), self.manifest())
            .map_err(|e| format!("{}: {e}", dir.join(MANIFEST).display()))
    }

    /// The manifest: parameters as a TOML comment block, then `rank path size` lines.
    pub fn manifest(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "# bareweb surge file set; seed = {}", self.seed);
        let params = toml::to_string(&self.params).unwrap_or_default();
        for line in params.lines() {
            let _ = writeln!(s, "# {line}");
        }
        let _ = writeln!(s, "# rank\tpath\tsize");
        for (i, f) in self.files.iter().enumerate() {
            let _ = writeln!(s, "{}\t{}\t{}", i + 1, f.path, f.size);
        }
        s
    }

    /// Reads a manifest written by [`FileSet::write_site`].
    pub fn read_manifest(dir: &Path) -> Result<FileSet, String> {
        let p = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        let mut seed = 0;
        let mut params_toml = String::new();
        let mut files = Vec::new();
        for line in text.lines() {
            if let Some(c) = line.strip_prefix("# ") {
                if let Some(s) = c.strip_prefix("bareweb surge file set; seed = ") {
                    seed = s
                        .trim()
                        .parse()
                        .map_err(|_| format!("{}: bad seed", p.display()))?;
                } else if !c.starts_with("rank") {
                    params_toml.push_str(c);
                    params_toml.push('\n');
                }
                continue;
            }
            let mut it = line.split('\t');
            let (_, path, size) = (it.next(), it.next(), it.next());
            let (Some(path), Some(size)) = (path, size.and_then(|s| s.parse().ok())) else {
                return Err(format!("{}: bad line {line:?}", p.display()));
            };
            files.push(SurgeFile {
                path: path.to_string(),
                size,
            });
        }
        let params: SurgeParams =
            toml::from_str(&params_toml).map_err(|e| format!("{}: {e}", p.display()))?;
        if files.is_empty() {
            return Err(format!("{}: no files", p.display()));
        }
        Ok(FileSet {
            params,
            seed,
            files,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_heavy_tailed_and_reproducible() {
        let p = SurgeParams::default();
        let a = FileSet::generate(&p, 42).unwrap();
        let b = FileSet::generate(&p, 42).unwrap();
        let c = FileSet::generate(&p, 43).unwrap();
        assert_eq!(a, b);
        assert_ne!(a.files, c.files);
        let mut sizes: Vec<u64> = a.files.iter().map(|f| f.size).collect();
        sizes.sort();
        let median = sizes[sizes.len() / 2] as f64;
        // Lognormal median e^9.357 ≈ 11.6 KB (the tail moves it a little).
        assert!((9_000.0..16_000.0).contains(&median), "median {median}");
        // Heavy tail: the largest 5% of files hold far more than 5% of the bytes.
        let top: u64 = sizes[sizes.len() * 95 / 100..].iter().sum();
        assert!(top as f64 > 0.3 * a.total_bytes() as f64);
        assert!(sizes.iter().all(|&s| (64..=1 << 20).contains(&s)));
    }

    #[test]
    fn session_draws_stay_in_bounds() {
        let p = SurgeParams {
            think_scale: 0.5,
            ..SurgeParams::default()
        };
        let mut r = Rng::new(5);
        let mut single = 0;
        for _ in 0..10_000 {
            let b = p.draw_burst(&mut r);
            assert!((1..=16).contains(&b));
            single += (b == 1) as u32;
            let t = p.draw_think(&mut r);
            assert!((0.5..=7.5).contains(&t), "{t}");
            assert!((1..=50).contains(&p.draw_bursts(&mut r)));
        }
        // P(Pareto(2.43, 1) < 2) = 1 - 2^-2.43 ≈ 0.81.
        assert!((7_700..8_500).contains(&single), "{single}");
    }

    #[test]
    fn site_and_manifest_round_trip() {
        let dir = std::env::temp_dir().join(format!("bwl-surge-{}", std::process::id()));
        let p = SurgeParams {
            files: 20,
            max_size: 100_000,
            ..SurgeParams::default()
        };
        let set = FileSet::generate(&p, 9).unwrap();
        set.write_site(&dir).unwrap();
        let back = FileSet::read_manifest(&dir).unwrap();
        assert_eq!(back, set);
        for f in &set.files {
            let len = std::fs::metadata(dir.join(&f.path[1..])).unwrap().len();
            assert_eq!(len, f.size);
        }
        let again = std::fs::read(dir.join(&set.files[0].path[1..])).unwrap();
        set.write_site(&dir).unwrap();
        assert_eq!(
            again,
            std::fs::read(dir.join(&set.files[0].path[1..])).unwrap()
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
