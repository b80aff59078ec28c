//! Bench scenarios: TOML files in `bench/` that say which servers to compare, on which
//! files, under which loads. A scenario expands into points (one load setting each);
//! every point is run against every server, in every round.
//!
//! ```toml
//! name = "smoke"                       # results and doc section are named after it
//! title = "What this compares"
//! servers = ["bareweb", "nginx"]       # see bench::servers::KINDS
//! rounds = 1                           # interleaved rounds; tables show medians
//! cores = 1                            # workers/threads each kernel server may use
//! seconds = 2.0                        # per run, unless a series says otherwise
//! notes = ["printed under the tables"]
//!
//! [site]
//! copy = "../examples/site"            # a directory copied in (relative to this file)
//! sizes = [4096, 65536]                # files /sz/<n>.bin of exactly n bytes
//! surge_files = 200                    # a Surge file set under /surge/ (sessions need it)
//! surge_max_size = 262144
//! seed = 1
//!
//! [[series]]
//! name = "4k-rate"
//! kind = "rate"                        # rate | parallel | sessions
//! values = [1000, 2000]                # fetches/s, connections, or sessions/s
//! path = "/sz/4096.bin"                # or paths = [...] for a file-size sweep
//! keepalive = false
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Rate,
    Parallel,
    Sessions,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Series {
    pub name: String,
    pub kind: Kind,
    pub values: Vec<f64>,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub paths: Vec<String>,
    #[serde(default)]
    pub keepalive: bool,
    #[serde(default)]
    pub seconds: Option<f64>,
    /// Most fetches (or sessions) per run; the time bound usually ends a run first.
    #[serde(default = "default_fetches")]
    pub fetches: u64,
    /// Session mode: think-time multiplier (Surge's think times are seconds long).
    #[serde(default = "default_think_scale")]
    pub think_scale: f64,
}

fn default_fetches() -> u64 {
    10_000_000
}
fn default_think_scale() -> f64 {
    0.1
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SiteSpec {
    #[serde(default)]
    pub copy: Option<PathBuf>,
    #[serde(default)]
    pub sizes: Vec<u64>,
    #[serde(default)]
    pub surge_files: usize,
    #[serde(default = "default_surge_max")]
    pub surge_max_size: u64,
    #[serde(default = "default_seed")]
    pub seed: u64,
}

fn default_surge_max() -> u64 {
    1 << 20
}
fn default_seed() -> u64 {
    1
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub title: String,
    pub servers: Vec<String>,
    #[serde(default = "one")]
    pub rounds: u32,
    #[serde(default = "one")]
    pub cores: u32,
    #[serde(default = "default_seconds")]
    pub seconds: f64,
    #[serde(default = "default_timeout")]
    pub timeout: f64,
    /// Check every body's length and SHA-256 (costs client CPU).
    #[serde(default)]
    pub verify: bool,
    #[serde(default)]
    pub site: SiteSpec,
    pub series: Vec<Series>,
    /// Remarks printed under the tables (what a reader must know to read them).
    #[serde(default)]
    pub notes: Vec<String>,
    /// Where the file was read from (for relative paths); not in the file.
    #[serde(skip)]
    pub base: PathBuf,
}

fn one() -> u32 {
    1
}
fn default_seconds() -> f64 {
    5.0
}
fn default_timeout() -> f64 {
    5.0
}

/// One load setting of a series: what the client is told to do.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Point {
    pub series: String,
    pub kind: Kind,
    /// Offered load: fetches/s, connections or sessions/s.
    pub level: f64,
    /// URL path (fixed-URL kinds) or empty (sessions).
    pub path: String,
    /// Size of the file at `path`, bytes (0 for sessions).
    pub size: u64,
    pub keepalive: bool,
    pub seconds: f64,
    pub fetches: u64,
    pub think_scale: f64,
}

impl Point {
    pub fn label(&self) -> String {
        let conn = if self.keepalive {
            "keep-alive"
        } else {
            "conn/fetch"
        };
        match self.kind {
            Kind::Rate => format!("{} {} @ {}/s, {conn}", self.series, self.path, self.level),
            Kind::Parallel => format!(
                "{} {} × {} parallel, {conn}",
                self.series, self.path, self.level
            ),
            Kind::Sessions => format!("{} surge @ {} sessions/s", self.series, self.level),
        }
    }
}

impl Scenario {
    pub fn parse(text: &str, base: &Path) -> Result<Scenario, String> {
        let mut s: Scenario = toml::from_str(text).map_err(|e| format!("scenario: {e}"))?;
        s.base = base.to_path_buf();
        s.check()?;
        Ok(s)
    }

    pub fn read(path: &Path) -> Result<Scenario, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let base = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        Scenario::parse(&text, &base).map_err(|e| format!("{}: {e}", path.display()))
    }

    fn check(&self) -> Result<(), String> {
        if self.name.is_empty()
            || !self
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err("name must be non-empty [A-Za-z0-9_-]".into());
        }
        if self.servers.is_empty() {
            return Err("no servers".into());
        }
        for s in &self.servers {
            super::servers::kind(s)?;
        }
        if self.rounds == 0 || self.rounds > 100 || self.cores == 0 {
            return Err("rounds must be 1..=100 and cores >= 1".into());
        }
        if !(self.seconds > 0.0 && self.seconds <= 600.0) {
            return Err("seconds must be in (0, 600]".into());
        }
        for se in &self.series {
            if se.values.is_empty() || se.values.iter().any(|v| !(*v > 0.0 && v.is_finite())) {
                return Err(format!("series {}: values must be > 0", se.name));
            }
            match se.kind {
                Kind::Sessions if self.site.surge_files == 0 => {
                    return Err(format!(
                        "series {}: sessions need site.surge_files > 0",
                        se.name
                    ))
                }
                Kind::Sessions => {}
                _ if se.path.is_none() && se.paths.is_empty() => {
                    return Err(format!("series {}: give path or paths", se.name))
                }
                _ => {}
            }
            if se.seconds.is_some_and(|s| !(s > 0.0 && s <= 600.0)) {
                return Err(format!("series {}: seconds must be in (0, 600]", se.name));
            }
        }
        Ok(())
    }

    /// Every point, in order; `size_of` gives the size of a URL path in the bench site.
    pub fn points(&self, size_of: &dyn Fn(&str) -> u64) -> Vec<Point> {
        let mut out = Vec::new();
        for se in &self.series {
            let paths: Vec<String> = match se.kind {
                Kind::Sessions => vec![String::new()],
                _ => se.path.iter().chain(se.paths.iter()).cloned().collect(),
            };
            for path in &paths {
                for &level in &se.values {
                    out.push(Point {
                        series: se.name.clone(),
                        kind: se.kind,
                        level,
                        size: if path.is_empty() { 0 } else { size_of(path) },
                        path: path.clone(),
                        keepalive: se.keepalive,
                        seconds: se.seconds.unwrap_or(self.seconds),
                        fetches: se.fetches,
                        think_scale: se.think_scale,
                    });
                }
            }
        }
        out
    }

    /// Total run time of the load alone (without start-up), seconds.
    pub fn load_seconds(&self) -> f64 {
        let per_round: f64 =
            self.points(&|_| 0).iter().map(|p| p.seconds).sum::<f64>() * self.servers.len() as f64;
        per_round * self.rounds as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scenarios_in_bench_parse() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "toml") {
                let s = Scenario::read(&p).unwrap();
                assert!(!s.points(&|_| 4096).is_empty(), "{}", p.display());
                n += 1;
            }
        }
        assert!(n >= 2, "smoke.toml and engine.toml at least");
    }

    #[test]
    fn bad_scenarios_are_refused() {
        let base = Path::new(".");
        let ok = "name='x'\nservers=['nginx']\n[[series]]\nname='a'\nkind='rate'\nvalues=[1]\npath='/a'\n";
        assert!(Scenario::parse(ok, base).is_ok());
        for bad in [
            ok.replace("nginx", "apache"),
            ok.replace("values=[1]", "values=[]"),
            ok.replace("path='/a'", ""),
            ok.replace("kind='rate'", "kind='sessions'"),
            ok.replace("name='x'", "name='../x'"),
            ok.replace("[[series]]", "rounds=0\n[[series]]"),
        ] {
            assert!(Scenario::parse(&bad, base).is_err(), "{bad}");
        }
        let s = Scenario::parse(ok, base).unwrap();
        assert_eq!(s.points(&|_| 7)[0].size, 7);
    }
}
