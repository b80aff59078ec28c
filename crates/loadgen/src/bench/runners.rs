//! The runner study's own summary (the OpenMP paper §5.3): for every runner and
//! thread count, the highest throughput of the sweep, where it saturates, the response
//! time at the lightest and the heaviest load against the serial runner's, and how much
//! of its threads' time went to waiting for each other. Everything is computed from the
//! aggregated runs; nothing is typed.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::scenario::Kind;
use super::table::Agg;
use super::Results;

/// A variant saturates at the first load above the lightest whose throughput falls below
/// this share of what the lightest load predicts (fetches per session there, the median
/// over the variants, × sessions per second).
pub const SATURATED: f64 = 0.9;

/// What one variant did over one series.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub name: String,
    pub peak_fps: f64,
    pub peak_level: f64,
    /// First level below [`SATURATED`] of the prediction, if any.
    pub saturates_at: Option<f64>,
    pub light_response_ms: f64,
    pub heavy_response_ms: f64,
    pub heavy_fps: f64,
    /// Mean share of its threads' time spent waiting (lock or barrier) at the heaviest load.
    pub heavy_lock: f64,
    pub heavy_errors: u64,
}

/// The lines of one series (points `pts`, ordered by load), for the servers that are
/// runner variants.
pub fn lines(r: &Results, agg: &BTreeMap<(usize, String), Agg>, pts: &[usize]) -> Vec<Line> {
    let variants: Vec<&str> = r
        .servers
        .iter()
        .filter(|s| s.runner.is_some())
        .map(|s| s.name.as_str())
        .collect();
    let (Some(&light), Some(&heavy)) = (pts.first(), pts.last()) else {
        return Vec::new();
    };
    // Fetches per unit of load at the lightest point: the median over the variants.
    let mut per: Vec<f64> = variants
        .iter()
        .filter_map(|v| agg.get(&(light, v.to_string())))
        .map(|a| a.fetches_per_sec / r.points[light].level)
        .collect();
    per.sort_by(f64::total_cmp);
    let per_level = per.get(per.len() / 2).copied().unwrap_or(0.0);
    variants
        .iter()
        .filter_map(|v| {
            let get = |pi: usize| agg.get(&(pi, v.to_string()));
            let (l, h) = (get(light)?, get(heavy)?);
            let mut peak = (0.0, 0.0);
            let mut saturates_at = None;
            for &pi in pts {
                let Some(a) = get(pi) else { continue };
                let level = r.points[pi].level;
                if a.fetches_per_sec > peak.0 {
                    peak = (a.fetches_per_sec, level);
                }
                // The lightest point makes the prediction (as a median over the variants,
                // so one variant's noise there is not a saturation): judged from the next.
                if pi != light
                    && saturates_at.is_none()
                    && a.fetches_per_sec < SATURATED * per_level * level
                {
                    saturates_at = Some(level);
                }
            }
            let heavy_lock = if h.server_split.is_empty() {
                0.0
            } else {
                h.server_split.iter().map(|c| c.lock).sum::<f64>() / h.server_split.len() as f64
            };
            Some(Line {
                name: v.to_string(),
                peak_fps: peak.0,
                peak_level: peak.1,
                saturates_at,
                light_response_ms: l.response_mean_ms,
                heavy_response_ms: h.response_mean_ms,
                heavy_fps: h.fetches_per_sec,
                heavy_lock,
                heavy_errors: h.errors,
            })
        })
        .collect()
}

fn ratio(v: f64, base: Option<f64>) -> String {
    match base {
        Some(b) if b > 0.0 && v > 0.0 => format!("{:.2}×", v / b),
        _ => "–".into(),
    }
}

/// Appends the study's summary for each session series (or, failing that, each series)
/// when the results have runner variants.
pub fn summary(s: &mut String, r: &Results, agg: &BTreeMap<(usize, String), Agg>) {
    if !r.servers.iter().any(|sv| sv.runner.is_some()) {
        return;
    }
    let mut series: Vec<&str> = Vec::new();
    for p in &r.points {
        if !series.contains(&p.series.as_str()) {
            series.push(&p.series);
        }
    }
    for se in series {
        let mut pts: Vec<usize> = (0..r.points.len())
            .filter(|&i| r.points[i].series == se)
            .collect();
        pts.sort_by(|&a, &b| r.points[a].level.total_cmp(&r.points[b].level));
        if pts.len() < 2 || r.points[pts[0]].kind == Kind::Rate {
            continue;
        }
        let ls = lines(r, agg, &pts);
        if ls.is_empty() {
            continue;
        }
        let unit = match r.points[pts[0]].kind {
            Kind::Sessions => "sessions/s",
            _ => "connections",
        };
        let (light, heavy) = (r.points[pts[0]].level, r.points[pts[pts.len() - 1]].level);
        let base = ls.iter().find(|l| l.name == "serial-1");
        let _ = writeln!(
            s,
            "#### The runners over `{se}` (the OpenMP paper's figs. 6 and 7)\n"
        );
        let _ = writeln!(
            s,
            "Computed from the table above: each runner's highest throughput over the sweep, the load where it \
             saturates (the first load above the lightest whose throughput falls below {:.0}% of what the lightest \
             load predicts, i.e. fetches per session there, the median over the runners, × sessions per second), its mean response time at the lightest ({light} \
             {unit}) and the heaviest load ({heavy} {unit}), compared with the serial runner (the OpenMP paper's original \
             Boa), and the share of its threads' time spent waiting for each other at the heaviest load.\n",
            SATURATED * 100.0
        );
        let _ = writeln!(
            s,
            "| runner | peak fetches/s (at {unit}) | vs serial-1 | saturates at | response ms, lightest | response ms, heaviest | vs serial-1 | threads waiting, heaviest | errors, heaviest |\n|---|---|---|---|---|---|---|---|---|"
        );
        for l in &ls {
            let _ = writeln!(
                s,
                "| {} | {:.0} ({}) | {} | {} | {:.2} | {:.2} | {} | {:.0}% | {} |",
                l.name,
                l.peak_fps,
                l.peak_level,
                ratio(l.peak_fps, base.map(|b| b.peak_fps)),
                l.saturates_at
                    .map_or("not in the sweep".to_string(), |v| format!("{v} {unit}")),
                l.light_response_ms,
                l.heavy_response_ms,
                ratio(l.heavy_response_ms, base.map(|b| b.heavy_response_ms)),
                l.heavy_lock * 100.0,
                l.heavy_errors
            );
        }
        let _ = writeln!(s);
        // What the table says, in words, from the same numbers.
        let best = ls
            .iter()
            .max_by(|a, b| a.peak_fps.total_cmp(&b.peak_fps))
            .expect("non-empty");
        let fastest = ls
            .iter()
            .filter(|l| l.heavy_response_ms > 0.0)
            .min_by(|a, b| a.heavy_response_ms.total_cmp(&b.heavy_response_ms));
        let waiting = ls
            .iter()
            .max_by(|a, b| a.heavy_lock.total_cmp(&b.heavy_lock))
            .expect("non-empty");
        let _ = write!(
            s,
            "Highest throughput: {} ({:.0} fetches/s at {} {unit}{}).",
            best.name,
            best.peak_fps,
            best.peak_level,
            base.map_or(String::new(), |b| format!(
                ", {} serial-1's {:.0}",
                ratio(best.peak_fps, Some(b.peak_fps)),
                b.peak_fps
            ))
        );
        if let Some(f) = fastest {
            let _ = write!(
                s,
                " Lowest mean response time at {heavy} {unit}: {} ({:.2} ms{}).",
                f.name,
                f.heavy_response_ms,
                base.map_or(String::new(), |b| format!(
                    " against serial-1's {:.2} ms",
                    b.heavy_response_ms
                ))
            );
        }
        if waiting.heavy_lock > 0.0 {
            let _ = write!(
                s,
                " Most time waiting for each other: {} ({:.0}% of its threads' time at {heavy} {unit}).",
                waiting.name,
                waiting.heavy_lock * 100.0
            );
        }
        let _ = writeln!(s, "\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::scenario::Point;
    use crate::bench::servers::CoreSplit;
    use crate::bench::ServerInfo;

    fn point(level: f64) -> Point {
        Point {
            series: "surge".into(),
            kind: Kind::Sessions,
            level,
            path: String::new(),
            size: 0,
            keepalive: true,
            seconds: 1.0,
            fetches: 1,
            think_scale: 0.1,
            tls: Default::default(),
        }
    }

    fn agg(fps: f64, resp: f64, lock: f64) -> Agg {
        Agg {
            fetches_per_sec: fps,
            response_mean_ms: resp,
            server_split: vec![
                CoreSplit {
                    lock,
                    ..CoreSplit::default()
                },
                CoreSplit::default(),
            ],
            ..Agg::default()
        }
    }

    #[test]
    fn peak_saturation_and_ratios_are_computed() {
        let r = Results {
            name: "runners".into(),
            title: String::new(),
            command: String::new(),
            machine: crate::bench::procfs::machine(),
            link_bps: 1e9,
            rounds: 1,
            cores: 1,
            servers: ["serial-1", "pool-2"]
                .iter()
                .map(|n| ServerInfo {
                    name: n.to_string(),
                    label: String::new(),
                    runner: Some((n[..n.len() - 2].to_string(), 1)),
                })
                .collect(),
            points: vec![point(10.0), point(100.0), point(200.0)],
            runs: Vec::new(),
            notes: Vec::new(),
            background_busy: Vec::new(),
            pinned: None,
            ktls: None,
            search: None,
        };
        let mut a = BTreeMap::new();
        // 4 fetches per session at the lightest load: 40, 400, 800 predicted.
        a.insert((0, "serial-1".to_string()), agg(40.0, 1.0, 0.0));
        a.insert((1, "serial-1".to_string()), agg(400.0, 2.0, 0.0));
        a.insert((2, "serial-1".to_string()), agg(500.0, 40.0, 0.0));
        // Below the median at the lightest load (noise there): not a saturation.
        a.insert((0, "pool-2".to_string()), agg(30.0, 1.5, 0.1));
        a.insert((1, "pool-2".to_string()), agg(390.0, 2.5, 0.2));
        a.insert((2, "pool-2".to_string()), agg(780.0, 10.0, 0.5));
        let ls = lines(&r, &a, &[0, 1, 2]);
        assert_eq!(ls[0].saturates_at, Some(200.0));
        assert_eq!(ls[1].saturates_at, None);
        assert_eq!((ls[1].peak_fps, ls[1].peak_level), (780.0, 200.0));
        assert!((ls[1].heavy_lock - 0.25).abs() < 1e-9, "mean over threads");
        let mut s = String::new();
        summary(&mut s, &r, &a);
        assert!(s.contains("| pool-2 | 780 (200) | 1.56× | not in the sweep | 1.50 | 10.00 | 0.25× | 25% | 0 |"), "{s}");
        assert!(s.contains("Highest throughput: pool-2 (780 fetches/s at 200 sessions/s, 1.56× serial-1's 500)."), "{s}");
        assert!(s.contains("Lowest mean response time at 200 sessions/s: pool-2 (10.00 ms against serial-1's 40.00 ms)."), "{s}");
    }
}
