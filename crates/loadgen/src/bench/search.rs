//! Baselines at their best: before a bench measures, every configuration of each
//! peer's knobs ([`super::peers`]) is started in turn and loaded briefly on each searched
//! series' trial points; the best per (server, series) is the configuration the bench then
//! measures, and so the one every ratio is against. The trials, the choice and why are
//! kept in the results and printed in the report.
//!
//! Best: the highest fetches/s (geometric mean over the series' trial points) in closed-loop
//! series, where the server sets the pace; the least server CPU per fetch in rate series,
//! where the offer does. A configuration with errors ranks after every one without.
//!
//! Bounded: configurations × trial points × `seconds`, printed before it starts (nginx, one
//! or two workers: 12 configurations; lighttpd 8; h2o 2).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::scenario::{Kind, Point, SearchSpec};
use super::servers::{ServerKind, StartCtx, Tuning};
use super::table::per_fetch_us;
use super::{run_with, Options};
use crate::sys;

/// One trial run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Trial {
    pub server: String,
    pub tuning: usize,
    pub point: usize,
    pub fetches_per_sec: f64,
    pub server_us: f64,
    pub errors: u64,
}

/// A searched server's configurations.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Searched {
    pub server: String,
    pub tunings: Vec<Tuning>,
    /// What each configuration is, as its setup line says it.
    pub labels: Vec<String>,
    /// Configurations that did not start, with why.
    #[serde(default)]
    pub failed: Vec<(usize, String)>,
}

/// The configuration chosen for a server in a series.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Chosen {
    pub server: String,
    pub series: String,
    pub tuning: usize,
}

/// A whole search: `results.json`'s `search`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Search {
    pub seconds: f64,
    /// The client kind that loaded the trials (`search.client`).
    #[serde(default = "load_client")]
    pub client: String,
    pub searched: Vec<Searched>,
    pub trials: Vec<Trial>,
    pub chosen: Vec<Chosen>,
    /// Wall time of the whole search, seconds.
    pub wall_secs: f64,
}

fn load_client() -> String {
    super::clients::LOAD.to_string()
}

impl Search {
    /// The configuration chosen for `server` in `series`, if it was searched there.
    pub fn choice(&self, server: &str, series: &str) -> Option<&Tuning> {
        let c = self
            .chosen
            .iter()
            .find(|c| c.server == server && c.series == series)?;
        self.searched
            .iter()
            .find(|s| s.server == server)?
            .tunings
            .get(c.tuning)
    }
}

/// The trial points of `series`: its highest load on each of up to `max` of its files
/// (first, middle, last).
pub fn trial_points(points: &[Point], series: &str, max: usize) -> Vec<usize> {
    let mut paths: Vec<&str> = Vec::new();
    for p in points.iter().filter(|p| p.series == series) {
        if !paths.contains(&p.path.as_str()) {
            paths.push(&p.path);
        }
    }
    let picked: Vec<&str> = if paths.len() <= max {
        paths.clone()
    } else {
        let mut v: Vec<&str> = (0..max)
            .map(|i| paths[i * (paths.len() - 1) / (max - 1).max(1)])
            .collect();
        v.dedup();
        v
    };
    picked
        .iter()
        .filter_map(|path| {
            points
                .iter()
                .enumerate()
                .filter(|(_, p)| p.series == series && p.path == *path)
                .max_by(|a, b| a.1.level.total_cmp(&b.1.level))
                .map(|(i, _)| i)
        })
        .collect()
}

fn geo_mean(v: &[f64]) -> f64 {
    if v.is_empty() || v.iter().any(|x| *x <= 0.0) {
        return 0.0;
    }
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

/// Each configuration's score in a series (higher is better) and whether it had errors;
/// `None` for a configuration with no trial there.
pub fn scores(trials: &[&Trial], tunings: usize, rate: bool) -> Vec<Option<(f64, bool)>> {
    (0..tunings)
        .map(|t| {
            let mine: Vec<&&Trial> = trials.iter().filter(|x| x.tuning == t).collect();
            if mine.is_empty() {
                return None;
            }
            let errors = mine.iter().any(|x| x.errors > 0);
            let score = if rate {
                let cpu = geo_mean(&mine.iter().map(|x| x.server_us).collect::<Vec<_>>());
                if cpu > 0.0 {
                    1.0 / cpu
                } else {
                    0.0
                }
            } else {
                geo_mean(&mine.iter().map(|x| x.fetches_per_sec).collect::<Vec<_>>())
            };
            Some((score, errors))
        })
        .collect()
}

/// The best configuration by [`scores`]: error-free first, then the highest score.
pub fn best(scores: &[Option<(f64, bool)>]) -> Option<usize> {
    scores
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.map(|(v, e)| (i, v, e)))
        .max_by(|a, b| (!a.2).cmp(&!b.2).then(a.1.total_cmp(&b.1)))
        .map(|(i, _, _)| i)
}

/// The worker counts to try: the spec's, or the scenario's cores and twice that, up to the
/// CPUs this process may use.
pub fn workers(spec: &SearchSpec, cores: u32) -> Vec<u32> {
    if !spec.workers.is_empty() {
        return spec.workers.clone();
    }
    let cpus = super::pin::online_cpus() as u32;
    let mut w = vec![cores];
    if cores * 2 <= cpus.max(cores) {
        w.push(cores * 2);
    }
    w
}

/// What the trial servers start with: the bench site, the namespaces' name prefix, the
/// path that answers 200 once a server is up, and the certificate of HTTPS series.
#[derive(Clone, Copy)]
pub struct Where<'a> {
    pub site: &'a Path,
    pub prefix: &'a str,
    pub probe: &'a str,
    pub pki: Option<&'a super::tls::Pki>,
}

/// Runs the search for the scenario's searchable servers over `points`.
pub fn run(
    o: &Options,
    spec: &SearchSpec,
    kinds: &[(String, &dyn ServerKind)],
    points: &[Point],
    at: &Where,
) -> Result<Search, String> {
    let Where {
        site,
        prefix,
        probe,
        pki,
    } = *at;
    let s = &o.scenario;
    let cpus = super::pin::for_scenario(s)?;
    let t0 = std::time::Instant::now();
    let series: Vec<&str> = s
        .series
        .iter()
        .map(|x| x.name.as_str())
        .filter(|n| spec.series.is_empty() || spec.series.iter().any(|x| x == n))
        .collect();
    let trial: Vec<(String, usize)> = series
        .iter()
        .flat_map(|se| {
            trial_points(points, se, spec.paths)
                .into_iter()
                .map(move |i| (se.to_string(), i))
        })
        .collect();
    let workers = workers(spec, s.cores);
    // Only HTTPS series searched: the knobs TLS in user space makes moot are left out.
    let tls = !trial.is_empty() && trial.iter().all(|(_, i)| points[*i].tls.is_on());
    let chosen_kinds: Vec<&(String, &dyn ServerKind)> = kinds
        .iter()
        .filter(|(n, k)| {
            (spec.servers.is_empty() || spec.servers.contains(n))
                && !k.tunings(&[1], tls).is_empty()
        })
        .collect();
    let configs: usize = chosen_kinds
        .iter()
        .map(|(_, k)| k.tunings(&workers, tls).len())
        .sum();
    eprintln!(
        "bench {}: searching {configs} peer configurations × {} trial points × {} s (about {:.0} s of load)",
        s.name,
        trial.len(),
        spec.seconds,
        configs as f64 * trial.len() as f64 * spec.seconds
    );
    // HTTPS trials are wrk's (the one client kind that speaks TLS).
    let client = spec.client.as_deref().unwrap_or(if tls {
        super::clients::WRK
    } else {
        super::clients::LOAD
    });
    let mut out = Search {
        seconds: spec.seconds,
        client: client.to_string(),
        ..Search::default()
    };
    // Absolute: the servers run with other working directories (nginx resolves a
    // relative path against its prefix).
    let work = std::fs::canonicalize(&o.out)
        .map_err(|e| format!("{}: {e}", o.out.display()))?
        .join("servers");
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let mut n = 0usize;
    for (name, kind) in chosen_kinds {
        let tunings = kind.tunings(&workers, tls);
        let mut searched = Searched {
            server: name.clone(),
            labels: tunings.iter().map(|t| kind.describe_tuned(t)).collect(),
            tunings: tunings.clone(),
            failed: Vec::new(),
        };
        for (ti, t) in tunings.iter().enumerate() {
            if sys::stop_requested() {
                return Err("interrupted; servers and namespaces removed".into());
            }
            let ctx = StartCtx {
                tag: format!("{prefix}s{n}"),
                net: 100 + (n % 100) as u8,
                site,
                cores: s.cores,
                work: &work,
                exe: &o.exe,
                probe,
                runner: None,
                tuning: Some(t.clone()),
                tls: pki,
            };
            n += 1;
            let mut inst = match super::pin::start(*kind, &ctx, cpus.as_ref()) {
                Ok(i) => i,
                Err(e) => {
                    eprintln!("  {name} [{}]: did not start: {e}", t.label("worker"));
                    searched.failed.push((ti, e));
                    continue;
                }
            };
            inst.name = format!("search-{name}-{ti}");
            if super::bare::is_bare(client) {
                // The bare client's port on the instance's link, as the bench gives it.
                super::bare::attach(&mut inst, &ctx.tag, ctx.net, &[client.into()])
                    .map_err(|e| format!("search: {name}: the bare client's link: {e}"))?;
            }
            // Scale each trial point to the search's time.
            for (_, pi) in &trial {
                let mut p = points[*pi].clone();
                p.seconds = spec.seconds;
                // A mixed search's HTTPS trial points: wrk.
                let c = if super::clients::fits(client, &p) {
                    client
                } else {
                    super::clients::WRK
                };
                let r = run_with(o, &p, *pi, &mut inst, site, 0, c)?;
                let tr = Trial {
                    server: name.clone(),
                    tuning: ti,
                    point: *pi,
                    fetches_per_sec: r.report.fetches_per_sec,
                    server_us: per_fetch_us(r.server_cpu_secs, r.report.fetches),
                    errors: r.report.errors_total,
                };
                eprintln!(
                    "  search {name} [{}] {:<44} {:>9.0} fetches/s  server {:.1} µs/fetch{}",
                    searched.labels[ti],
                    p.label(),
                    tr.fetches_per_sec,
                    tr.server_us,
                    if tr.errors > 0 {
                        format!("  errors {}", tr.errors)
                    } else {
                        String::new()
                    }
                );
                out.trials.push(tr);
            }
        }
        if searched.failed.len() == tunings.len() {
            return Err(format!(
                "search: no configuration of {name} started; the first said: {}",
                searched.failed.first().map_or("", |(_, e)| e.as_str())
            ));
        }
        for se in &series {
            let rate = points
                .iter()
                .find(|p| p.series == *se)
                .is_some_and(|p| p.kind == Kind::Rate);
            let mine: Vec<&Trial> = out
                .trials
                .iter()
                .filter(|x| &x.server == name && points[x.point].series == *se)
                .collect();
            if let Some(b) = best(&scores(&mine, tunings.len(), rate)) {
                eprintln!("  {name}, series {se}: best {}", searched.labels[b]);
                out.chosen.push(Chosen {
                    server: name.clone(),
                    series: se.to_string(),
                    tuning: b,
                });
            }
        }
        out.searched.push(searched);
    }
    out.wall_secs = t0.elapsed().as_secs_f64();
    Ok(out)
}

/// The report's section: per searched server and series, every configuration's trial
/// figures, the chosen one marked.
pub fn section(s: &mut String, search: &Search, points: &[Point]) {
    let _ = writeln!(s, "#### Configuration search (baselines at their best)\n");
    let _ = writeln!(
        s,
        "Before the runs each peer was started in every configuration below and loaded for {} s on each trial point \
         (every searched series' highest load, on up to three of its files) by {}; the best — highest fetches/s in \
         closed-loop series, least server CPU per fetch in rate series, error-free first — is the configuration \
         measured above, and every ratio is against it. Search time: {:.0} s.\n",
        search.seconds,
        super::clients::describe(&search.client),
        search.wall_secs
    );
    let mut series: Vec<&str> = Vec::new();
    for c in &search.chosen {
        if !series.contains(&c.series.as_str()) {
            series.push(&c.series);
        }
    }
    for sv in &search.searched {
        for se in &series {
            let Some(chosen) = search
                .chosen
                .iter()
                .find(|c| c.server == sv.server && c.series == *se)
            else {
                continue;
            };
            let pts: Vec<usize> = {
                let mut v: Vec<usize> = search
                    .trials
                    .iter()
                    .filter(|t| t.server == sv.server && points[t.point].series == *se)
                    .map(|t| t.point)
                    .collect();
                v.sort_unstable();
                v.dedup();
                v
            };
            let _ = writeln!(s, "`{}`, series `{se}`:\n", sv.server);
            let head: Vec<String> = pts
                .iter()
                .map(|&p| {
                    let q = &points[p];
                    let what = if q.path.is_empty() {
                        format!("surge @ {}", q.level)
                    } else {
                        format!("{} × {}", q.path, q.level)
                    };
                    format!("{what}: fetches/s, µs/fetch")
                })
                .collect();
            let _ = writeln!(s, "| configuration | {} |", head.join(" | "));
            let _ = writeln!(s, "|---|{}", "---|".repeat(pts.len()));
            let by: BTreeMap<(usize, usize), &Trial> = search
                .trials
                .iter()
                .filter(|t| t.server == sv.server)
                .map(|t| ((t.tuning, t.point), t))
                .collect();
            for (ti, label) in sv.labels.iter().enumerate() {
                let cells: Vec<String> = pts
                    .iter()
                    .map(|p| match by.get(&(ti, *p)) {
                        Some(t) => format!(
                            "{:.0}, {:.1}{}",
                            t.fetches_per_sec,
                            t.server_us,
                            if t.errors > 0 { " (errors)" } else { "" }
                        ),
                        None => "–".into(),
                    })
                    .collect();
                let mark = if ti == chosen.tuning {
                    " **(best)**"
                } else {
                    ""
                };
                let _ = writeln!(s, "| {label}{mark} | {} |", cells.join(" | "));
            }
            for (ti, why) in &sv.failed {
                let _ = writeln!(s, "\n{} did not start: {why}", sv.labels[*ti]);
            }
            let _ = writeln!(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(series: &str, path: &str, level: f64) -> Point {
        Point {
            series: series.into(),
            kind: Kind::Parallel,
            level,
            path: path.into(),
            size: 1,
            keepalive: true,
            seconds: 1.0,
            fetches: 1,
            think_scale: 0.1,
            tls: Default::default(),
        }
    }

    fn trial(tuning: usize, fps: f64, us: f64, errors: u64) -> Trial {
        Trial {
            server: "nginx".into(),
            tuning,
            point: 0,
            fetches_per_sec: fps,
            server_us: us,
            errors,
        }
    }

    #[test]
    fn trial_points_take_the_highest_load_of_first_middle_and_last_file() {
        let mut pts = Vec::new();
        for path in ["/a", "/b", "/c", "/d", "/e"] {
            for level in [1.0, 8.0, 4.0] {
                pts.push(point("s", path, level));
            }
        }
        pts.push(point("t", "/a", 2.0));
        let got: Vec<(String, f64)> = trial_points(&pts, "s", 3)
            .into_iter()
            .map(|i| (pts[i].path.clone(), pts[i].level))
            .collect();
        assert_eq!(
            got,
            [("/a".into(), 8.0), ("/c".into(), 8.0), ("/e".into(), 8.0)]
        );
        assert_eq!(trial_points(&pts, "t", 3), vec![15]);
        assert_eq!(trial_points(&pts, "s", 1).len(), 1);
    }

    #[test]
    fn the_best_is_the_fastest_without_errors_or_the_leanest_in_a_rate_series() {
        let t = [
            trial(0, 18_000.0, 40.0, 0),
            trial(1, 70_000.0, 12.0, 0),
            trial(2, 90_000.0, 10.0, 5),
            trial(3, 65_000.0, 11.0, 0),
        ];
        let refs: Vec<&Trial> = t.iter().collect();
        assert_eq!(best(&scores(&refs, 5, false)), Some(1));
        // Rate series: least CPU per fetch (configuration 3 beats 1 there).
        assert_eq!(best(&scores(&refs[..2], 5, true)), Some(1));
        assert_eq!(best(&scores(&[&t[1], &t[3]], 5, true)), Some(3));
        // Only errors: the best of them.
        assert_eq!(best(&scores(&[&t[2]], 5, false)), Some(2));
        assert_eq!(best(&scores(&[], 5, false)), None);
    }
}
