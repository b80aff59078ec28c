//! Bench scenarios: TOML files in `bench/` that say which servers to compare, on which
//! files, under which loads. A scenario expands into points (one load setting each);
//! every point is run against every server, in every round.
//!
//! ```toml
//! name = "smoke"                       # results and doc section are named after it
//! title = "What this compares"
//! servers = ["bareweb", "nginx"]       # see bench::servers::KINDS
//! clients = ["load", "bare-tap"]       # client kinds (bench::clients; default ["load"])
//! rounds = 1                           # interleaved rounds; tables show medians
//! cores = 1                            # workers/threads each kernel server may use
//! pin = false                          # true: server and client on CPUs of their own, the
//!                                      #   server's receive steered there, its CPU = its
//!                                      #   CPUs' busy time (bench::pin)
//! seconds = 2.0                        # per run, unless a series says otherwise
//! notes = ["printed under the tables"]
//! runners = ["serial", "pool"]         # optional: bareweb once per runner and thread count
//! threads = [1, 2]                     #   (`serve --runner R --threads N`; serial: 1 only)
//!
//! [site]
//! copy = "../examples/site"            # a directory copied in (relative to this file)
//! sizes = [4096, 65536]                # files /sz/<n>.bin of exactly n bytes
//! surge_files = 200                    # a Surge file set under /surge/ (sessions need it)
//! surge_max_size = 262144
//! seed = 1
//!
//! [search]                             # optional: each peer's best configuration (bench::search)
//! seconds = 1.0                        #   per trial run
//! servers = ["nginx"]                  #   default: every server of the scenario with knobs
//! series = ["4k-rate"]                 #   default: every series
//! workers = [1, 2]                     #   default: cores and twice cores, up to the CPUs
//! paths = 3                            #   trial points per series (first, middle, last file)
//! client = "bare-tap"                  #   the client kind of the trials (default "load")
//!
//! [[series]]
//! name = "4k-rate"
//! kind = "rate"                        # rate | parallel | sessions
//! values = [1000, 2000]                # fetches/s, connections, or sessions/s
//! path = "/sz/4096.bin"                # or paths = [...] for a file-size sweep
//! keepalive = false
//! clients = ["bare-tap"]               # optional: this series' client kinds (default: the
//!                                      #   scenario's `clients`, bench::clients)
//! tls = "on"                           # optional: HTTPS (TLS 1.3, an ECDSA P-256 certificate
//!                                      #   the bench makes; every server then also listens
//!                                      #   on 443): "on" (wrk keeps its TLS session between
//!                                      #   connections, so a connection per fetch resumes)
//!                                      #   or "full" (every connection a full handshake);
//!                                      #   only wrk speaks TLS (bench::clients)
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

/// Whether a series is HTTPS, and how its client treats TLS sessions between connections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tls {
    /// Plain HTTP.
    #[default]
    Off,
    /// HTTPS; the client keeps its TLS session from one connection to the next (wrk does:
    /// OpenSSL's `SSL_clear` after a clean shutdown keeps it), so each new connection of a
    /// connection-per-fetch series is a resumed handshake when the server gave a ticket.
    On,
    /// HTTPS; the client forgets its session before each connection: every connection is a
    /// full handshake (certificate, signature, key exchange).
    Full,
}

impl Tls {
    pub fn is_on(self) -> bool {
        self != Tls::Off
    }
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
    /// This series' client kinds (default: the scenario's).
    #[serde(default)]
    pub clients: Vec<String>,
    /// HTTPS ([`Tls`]).
    #[serde(default)]
    pub tls: Tls,
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
    /// The runner dimension (the OpenMP paper's runners): when given, the server `bareweb` is
    /// started once per runner and thread count (`bareweb serve --runner R --threads N`),
    /// each a server of its own in the tables and plots, named `R-N`.
    #[serde(default)]
    pub runners: Vec<String>,
    /// Thread counts for `runners` (default 1).
    #[serde(default)]
    pub threads: Vec<u32>,
    /// Search each peer's configurations first, and compare with the best per series.
    #[serde(default)]
    pub search: Option<SearchSpec>,
    /// Client kinds (`load`, `wrk`; default `load`): every server is loaded by each one
    /// that fits the point, interleaved ([`super::clients`]).
    #[serde(default)]
    pub clients: Vec<String>,
    /// Each side on CPUs of its own, the server's receive path steered to its CPUs, and
    /// its CPU measured as its CPUs' busy time ([`super::pin`]).
    #[serde(default)]
    pub pin: bool,
    /// Where the file was read from (for relative paths); not in the file.
    #[serde(skip)]
    pub base: PathBuf,
}

/// The configuration search of a scenario (`[search]`): every configuration of
/// each peer's knobs is run briefly on each series' trial points before the bench, and the
/// best (highest fetches/s; in rate series, least server CPU per fetch) is the one
/// measured and compared with.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SearchSpec {
    /// Seconds per trial run.
    #[serde(default = "default_search_seconds")]
    pub seconds: f64,
    /// Servers to search (default: every server of the scenario that has knobs).
    #[serde(default)]
    pub servers: Vec<String>,
    /// Series to search (default: all); the others use each server's fixed default.
    #[serde(default)]
    pub series: Vec<String>,
    /// Worker counts to try (default: the scenario's cores and twice that, up to the CPUs).
    #[serde(default)]
    pub workers: Vec<u32>,
    /// Trial points per series: its first, middle and last file at its highest load.
    #[serde(default = "default_search_paths")]
    pub paths: usize,
    /// The client kind that loads the trials (default `load`): one of the scenario's, so
    /// that a peer is searched under the client its ratios are quoted for (a kernel
    /// server's best configuration under `bareweb load` need not be its best under the
    /// bare client).
    #[serde(default)]
    pub client: Option<String>,
}

fn default_search_seconds() -> f64 {
    1.0
}
fn default_search_paths() -> usize {
    3
}

/// Runner names `bareweb serve --runner` takes.
pub const RUNNERS: &[&str] = &["serial", "pool", "workshare", "tasks", "pinned"];

/// One server under test: a kind, and for bareweb possibly a runner.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Variant {
    /// The server kind (`servers::kind`).
    pub kind: String,
    /// Its name in tables, plots and file names: the kind, or `runner-threads`.
    pub name: String,
    /// `bareweb serve --runner R --threads N`.
    pub runner: Option<(String, u32)>,
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
    /// HTTPS, and whether the client resumes ([`Tls`]); plain HTTP in older results.
    #[serde(default)]
    pub tls: Tls,
}

impl Point {
    pub fn label(&self) -> String {
        let conn = match (self.keepalive, self.tls) {
            (true, Tls::Off) => "keep-alive",
            (false, Tls::Off) => "conn/fetch",
            (true, _) => "keep-alive, HTTPS",
            (false, Tls::On) => "conn/fetch, HTTPS resumed",
            (false, Tls::Full) => "conn/fetch, HTTPS full handshake",
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
        for r in &self.runners {
            if !RUNNERS.contains(&r.as_str()) {
                return Err(format!(
                    "unknown runner {r:?} (known: {})",
                    RUNNERS.join(", ")
                ));
            }
        }
        for c in self
            .clients
            .iter()
            .chain(self.series.iter().flat_map(|x| &x.clients))
        {
            if !super::clients::KNOWN.contains(&c.as_str()) {
                return Err(format!(
                    "unknown client kind {c:?} (known: {})",
                    super::clients::KNOWN.join(", ")
                ));
            }
        }
        if !self.runners.is_empty() && !self.servers.iter().any(|s| s == "bareweb") {
            return Err("runners apply to the server \"bareweb\", which is not in servers".into());
        }
        if self.threads.iter().any(|&t| t == 0 || t > 64) {
            return Err("threads must be in 1..=64".into());
        }
        if !self.threads.is_empty() && self.runners.is_empty() {
            return Err("threads without runners".into());
        }
        if let Some(se) = &self.search {
            if !(se.seconds > 0.0 && se.seconds <= 60.0) {
                return Err("search.seconds must be in (0, 60]".into());
            }
            if se.paths == 0 || se.workers.iter().any(|&w| w == 0 || w > 64) {
                return Err("search.paths must be >= 1 and search.workers in 1..=64".into());
            }
            for s in &se.servers {
                if !self.servers.contains(s) {
                    return Err(format!("search.servers: {s:?} is not in servers"));
                }
                if super::servers::kind(s)?.tunings(&[1], false).is_empty() {
                    return Err(format!("search.servers: {s:?} has no knobs to search"));
                }
            }
            for n in &se.series {
                if !self.series.iter().any(|x| &x.name == n) {
                    return Err(format!("search.series: no series {n:?}"));
                }
            }
            if let Some(c) = &se.client {
                if !self.all_clients().contains(c) {
                    return Err(format!(
                        "search.client: {c:?} is not one of the scenario's client kinds"
                    ));
                }
            }
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
            if se.tls.is_on() {
                if se.kind != Kind::Parallel {
                    return Err(format!(
                        "series {}: tls needs kind = \"parallel\" (wrk, the client that speaks TLS, runs closed loops only)",
                        se.name
                    ));
                }
                if let Some(c) = self
                    .clients_for(&se.name)
                    .into_iter()
                    .find(|c| c != super::clients::WRK)
                {
                    return Err(format!(
                        "series {}: client kind {c:?} does not speak TLS; give this series clients = [\"wrk\"]",
                        se.name
                    ));
                }
            }
            if se.tls == Tls::Full && se.keepalive {
                return Err(format!(
                    "series {}: tls = \"full\" is about new connections; with keepalive use tls = \"on\"",
                    se.name
                ));
            }
        }
        Ok(())
    }

    /// Whether some series is HTTPS: every server then also serves TLS on port 443.
    pub fn has_tls(&self) -> bool {
        self.series.iter().any(|x| x.tls.is_on())
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
                        tls: se.tls,
                    });
                }
            }
        }
        out
    }

    /// Every server under test, in order: each entry of `servers`, with `bareweb` once
    /// per runner and thread count when the scenario has runners (serial only with one
    /// thread).
    pub fn variants(&self) -> Vec<Variant> {
        let mut out = Vec::new();
        for s in &self.servers {
            if s == "bareweb" && !self.runners.is_empty() {
                let threads = if self.threads.is_empty() {
                    vec![1]
                } else {
                    self.threads.clone()
                };
                for r in &self.runners {
                    for &t in &threads {
                        if r == "serial" && t != 1 {
                            continue;
                        }
                        out.push(Variant {
                            kind: s.clone(),
                            name: format!("{r}-{t}"),
                            runner: Some((r.clone(), t)),
                        });
                    }
                }
            } else {
                out.push(Variant {
                    kind: s.clone(),
                    name: s.clone(),
                    runner: None,
                });
            }
        }
        out
    }

    /// The client kinds of series `series`: its own, or the scenario's.
    pub fn clients_for(&self, series: &str) -> Vec<String> {
        match self.series.iter().find(|x| x.name == series) {
            Some(x) if !x.clients.is_empty() => x.clients.clone(),
            _ => super::clients::of(&self.clients),
        }
    }

    /// Every client kind some series uses, the scenario's first.
    pub fn all_clients(&self) -> Vec<String> {
        let mut all = super::clients::of(&self.clients);
        for c in self.series.iter().flat_map(|x| &x.clients) {
            if !all.contains(c) {
                all.push(c.clone());
            }
        }
        all
    }

    /// Total run time of the load alone (without start-up), seconds.
    pub fn load_seconds(&self) -> f64 {
        let per_round: f64 = self
            .points(&|_| 0)
            .iter()
            .map(|p| {
                let n = self
                    .clients_for(&p.series)
                    .iter()
                    .filter(|c| super::clients::fits(c, p))
                    .count();
                p.seconds * n as f64
            })
            .sum::<f64>()
            * self.variants().len() as f64;
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
        let bw = ok.replace("nginx", "bareweb");
        for bad in [
            format!("runners=['fork']\n{bw}"),
            format!("runners=['pool']\n{ok}"),
            format!("runners=['pool']\nthreads=[0]\n{bw}"),
            format!("threads=[2]\n{bw}"),
            format!("{ok}[search]\nservers=['bareweb']\n")
                .replace("servers=['nginx']", "servers=['nginx','bareweb']"),
            format!("{ok}[search]\nseries=['nope']\n"),
            format!("{ok}[search]\nseconds=0\n"),
            format!("{ok}[search]\nclient='bare-tap'\n"),
            format!("{ok}clients=['bare-udp']\n"),
        ] {
            assert!(Scenario::parse(&bad, base).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_series_may_name_its_own_clients() {
        let text = "name='x'\nservers=['nginx']\nclients=['load','wrk']\nseconds=2\n\
                    [[series]]\nname='a'\nkind='parallel'\nvalues=[4]\npath='/a'\n\
                    [[series]]\nname='b'\nkind='parallel'\nvalues=[4]\npath='/a'\nseconds=0.5\nclients=['bare-tap']\n";
        let s = Scenario::parse(text, Path::new(".")).unwrap();
        assert_eq!(s.clients_for("a"), ["load", "wrk"]);
        assert_eq!(s.clients_for("b"), ["bare-tap"]);
        assert_eq!(s.all_clients(), ["load", "wrk", "bare-tap"]);
        // The search may load its trials with any of them.
        let searched = format!("{text}[search]\nclient='bare-tap'\n");
        let t = Scenario::parse(&searched, Path::new(".")).unwrap();
        assert_eq!(t.search.unwrap().client.as_deref(), Some("bare-tap"));
        // 2 s for each of two clients on a, 0.5 s for one on b.
        assert!(
            (s.load_seconds() - 4.5).abs() < 1e-9,
            "{}",
            s.load_seconds()
        );
        let none = text.replace("clients=['load','wrk']\n", "");
        assert_eq!(
            Scenario::parse(&none, Path::new("."))
                .unwrap()
                .clients_for("a"),
            ["load"]
        );
    }

    #[test]
    fn https_series_are_wrk_closed_loops() {
        let base = Path::new(".");
        let ok = "name='x'\nservers=['bareweb','nginx']\n\
                  [[series]]\nname='plain'\nkind='parallel'\nvalues=[4]\npath='/a'\n\
                  [[series]]\nname='full'\nkind='parallel'\nvalues=[4]\npath='/a'\ntls='full'\nclients=['wrk']\n";
        let s = Scenario::parse(ok, base).unwrap();
        assert!(s.has_tls());
        let pts = s.points(&|_| 4096);
        assert_eq!(
            (pts[0].tls, pts[1].tls),
            (Tls::Off, Tls::Full),
            "a series' tls reaches its points"
        );
        assert!(
            pts[1].label().contains("full handshake"),
            "{}",
            pts[1].label()
        );
        assert!(!Scenario::parse(&ok.replace("tls='full'\n", ""), base)
            .unwrap()
            .has_tls());
        for bad in [
            // Only wrk speaks TLS.
            ok.replace("clients=['wrk']", "clients=['load']"),
            ok.replace("clients=['wrk']\n", ""),
            // wrk runs closed loops only.
            ok.replace(
                "kind='parallel'\nvalues=[4]\npath='/a'\ntls",
                "kind='rate'\nvalues=[4]\npath='/a'\ntls",
            ),
            // A full handshake per connection needs new connections.
            ok.replace("tls='full'", "tls='full'\nkeepalive=true"),
            ok.replace("tls='full'", "tls='yes'"),
        ] {
            assert!(Scenario::parse(&bad, base).is_err(), "{bad}");
        }
        // An older results.json (no tls on its points) reads as plain HTTP.
        let old = r#"{"series":"s","kind":"parallel","level":4.0,"path":"/a","size":1,"keepalive":true,"seconds":1.0,"fetches":1,"think_scale":0.1}"#;
        let p: Point = serde_json::from_str(old).unwrap();
        assert_eq!(p.tls, Tls::Off);
    }

    #[test]
    fn runners_expand_bareweb_into_variants() {
        let base = Path::new(".");
        let text = "name='x'\nservers=['bareweb','nginx']\nrunners=['serial','pool','pinned']\nthreads=[1,2]\n[[series]]\nname='a'\nkind='rate'\nvalues=[1]\npath='/a'\n";
        let s = Scenario::parse(text, base).unwrap();
        let names: Vec<String> = s.variants().into_iter().map(|v| v.name).collect();
        assert_eq!(
            names,
            ["serial-1", "pool-1", "pool-2", "pinned-1", "pinned-2", "nginx"]
        );
        let v = &s.variants()[2];
        assert_eq!(
            (v.kind.as_str(), v.runner.clone()),
            ("bareweb", Some(("pool".to_string(), 2)))
        );
        // Without runners a scenario's servers are its variants, as before.
        let plain = Scenario::parse(
            &text.replace("runners=['serial','pool','pinned']\nthreads=[1,2]\n", ""),
            base,
        )
        .unwrap();
        let names: Vec<String> = plain.variants().into_iter().map(|v| v.name).collect();
        assert_eq!(names, ["bareweb", "nginx"]);
        assert!(plain.variants().iter().all(|v| v.runner.is_none()));
    }
}
