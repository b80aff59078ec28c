//! PNG plots like the papers' figures, drawn with plotters' bitmap backend. Times are
//! medians (p50 of each run, median over rounds), not the papers' means: on a shared
//! machine a single stall moves a mean by hundreds of milliseconds. Text uses a
//! TrueType font read from the system (Debian's fonts-dejavu-core) through ab_glyph, so
//! no fontconfig or freetype is needed.
//!
//! - response time vs fetches/s and connect time vs fetches/s (the scheduling paper's
//!   figs. 4 and 6),
//! - response time vs file size (the scheduling paper's fig. 8),
//! - throughput and response time vs clients (sessions) per second (the OpenMP
//!   paper's figs. 6, 7),
//! - per-core utilisation during the heaviest run of the first series (the multi-core
//!   paper's fig. 11).

use std::path::Path;
use std::sync::OnceLock;

use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

use super::scenario::Kind;
use super::table::{aggregate, Agg};
use super::Results;

const FONT: &str = "bwsans";
const FONT_FILES: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
];

fn font() -> Result<(), String> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        for f in FONT_FILES {
            if let Ok(bytes) = std::fs::read(f) {
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                return register_font(FONT, FontStyle::Normal, bytes)
                    .map_err(|_| format!("{f}: not a usable font"));
            }
        }
        Err("no TrueType font for the plots: apt-get install fonts-dejavu-core".into())
    })
    .clone()
}

/// A runner variant (`runner-threads`): the runner's colour, lighter with one thread.
fn runner_colour(server: &str) -> Option<RGBColor> {
    let (runner, threads) = server.rsplit_once('-')?;
    let threads: u32 = threads.parse().ok()?;
    let RGBColor(r, g, b) = match runner {
        "serial" => RGBColor(0x30, 0x30, 0x30),
        "pool" => RGBColor(0x1f, 0x77, 0xb4),
        "workshare" => RGBColor(0xff, 0x7f, 0x0e),
        "tasks" => RGBColor(0x2c, 0xa0, 0x2c),
        "pinned" => RGBColor(0xd6, 0x27, 0x28),
        _ => return None,
    };
    if threads == 1 && runner != "serial" {
        let light = |c: u8| c + (255 - c) / 2;
        Some(RGBColor(light(r), light(g), light(b)))
    } else {
        Some(RGBColor(r, g, b))
    }
}

fn colour(server: &str, i: usize) -> RGBColor {
    if let Some(c) = runner_colour(server) {
        return c;
    }
    match server {
        "bareweb" => RGBColor(0xd6, 0x27, 0x28),
        "bareweb-qemu" => RGBColor(0x94, 0x67, 0xbd),
        "bareweb-no-tso" => RGBColor(0xff, 0x98, 0x96),
        "nginx" => RGBColor(0x2c, 0xa0, 0x2c),
        "nginx-nopush-off" => RGBColor(0x17, 0x60, 0x17),
        "lighttpd" => RGBColor(0x1f, 0x77, 0xb4),
        "h2o" => RGBColor(0xff, 0x7f, 0x0e),
        _ => {
            let (r, g, b) = Palette99::pick(i).to_rgba().rgb();
            RGBColor(r, g, b)
        }
    }
}

type Line = (String, Vec<(f64, f64)>);

/// Picks one task's share out of a core's split.
type TaskShare = fn(&super::servers::CoreSplit) -> f64;

fn line_chart(
    path: &Path,
    title: &str,
    xl: &str,
    yl: &str,
    lines: &[Line],
    log_ok: bool,
) -> Result<(), String> {
    let pts = lines.iter().flat_map(|l| l.1.iter());
    let (mut x1, mut y0, mut y1) = (0.0f64, f64::MAX, 0.0f64);
    for &(x, y) in pts {
        x1 = x1.max(x);
        y1 = y1.max(y);
        if y > 0.0 {
            y0 = y0.min(y);
        }
    }
    let x1 = if x1 > 0.0 { x1 * 1.08 } else { 1.0 };
    // Times spanning more than a factor of 30 (a few 0.1 ms runs beside a saturated one)
    // go on a log axis, as one stall would otherwise flatten every other line.
    if log_ok && y0 < f64::MAX && y1 / y0 > 30.0 {
        let yl = format!("{yl}, log scale");
        let range = (y0 * 0.7..y1 * 1.6).log_scale();
        let lines: Vec<Line> = lines
            .iter()
            .map(|(n, p)| (n.clone(), p.iter().copied().filter(|q| q.1 > 0.0).collect()))
            .collect();
        draw_lines(path, title, xl, &yl, &lines, 0.0..x1, range)
    } else {
        let y1 = if y1 > 0.0 { y1 * 1.15 } else { 1.0 };
        draw_lines(path, title, xl, yl, lines, 0.0..x1, 0.0..y1)
    }
}

fn draw_lines<Y>(
    path: &Path,
    title: &str,
    xl: &str,
    yl: &str,
    lines: &[Line],
    xr: std::ops::Range<f64>,
    yr: Y,
) -> Result<(), String>
where
    Y: plotters::coord::ranged1d::AsRangedCoord<Value = f64>,
    Y::CoordDescType: plotters::coord::ranged1d::ValueFormatter<f64>,
{
    let root = BitMapBackend::new(path, (900, 560)).into_drawing_area();
    let e = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, (FONT, 22))
        .margin(14)
        .x_label_area_size(48)
        .y_label_area_size(70)
        .build_cartesian_2d(xr, yr)
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .x_desc(xl)
        .y_desc(yl)
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 16))
        .draw()
        .map_err(|x| e(&x))?;
    for (i, (name, pts)) in lines.iter().enumerate() {
        let c = colour(name, i);
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
            .map_err(|x| e(&x))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(3)));
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 4, c.filled())))
            .map_err(|x| e(&x))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font((FONT, 15))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))
}

/// Grouped bars: per server, each core's busy %, then the server's and the client's CPU.
fn cores_chart(path: &Path, title: &str, groups: &[(String, &Agg)]) -> Result<(), String> {
    let e = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let ncores = groups
        .iter()
        .map(|g| g.1.core_busy.len())
        .max()
        .unwrap_or(0);
    let bars = ncores + 2;
    let width = groups.len() as f64 * (bars as f64 + 1.0);
    let root = BitMapBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, (FONT, 20))
        .margin(14)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..width, 0.0..150.0)
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .disable_x_axis()
        .y_desc("% of one core (cores: whole machine)")
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 16))
        .draw()
        .map_err(|x| e(&x))?;
    let shades = |k: usize| -> RGBColor {
        if k < ncores {
            let v = 60 + (k * 120 / ncores.max(1)) as u8;
            RGBColor(v, v, 0xc0)
        } else if k == ncores {
            RGBColor(0xd6, 0x27, 0x28)
        } else {
            RGBColor(0x80, 0x80, 0x80)
        }
    };
    for (g, (name, a)) in groups.iter().enumerate() {
        let x0 = g as f64 * (bars as f64 + 1.0) + 0.5;
        let mut vals: Vec<f64> = a.core_busy.iter().map(|b| b * 100.0).collect();
        vals.resize(ncores, 0.0);
        vals.push(a.server_util * 100.0);
        vals.push(a.client_util * 100.0);
        for (k, v) in vals.iter().enumerate() {
            let x = x0 + k as f64;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x, 0.0), (x + 0.9, v.min(110.0))],
                    shades(k).filled(),
                )))
                .map_err(|x| e(&x))?;
        }
        chart
            .draw_series(std::iter::once(Text::new(
                name.clone(),
                (x0, 104.0),
                (FONT, 16).into_font().color(&BLACK),
            )))
            .map_err(|x| e(&x))?;
    }
    // Legend.
    let mut labels: Vec<String> = (0..ncores).map(|k| format!("core {k} busy")).collect();
    labels.push("server process CPU".into());
    labels.push("client process CPU".into());
    for (k, l) in labels.iter().enumerate() {
        let c = shades(k);
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(0.0, 0.0), (0.0, 0.0)],
                c.filled(),
            )))
            .map_err(|x| e(&x))?
            .label(l.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], c.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font((FONT, 13))
        .margin(4)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))
}

/// Stacked bars, one per thread of each runner: RCV, HTTP, SEND, lock wait, Main (idle),
/// as shares of the thread's time during one point's runs (medians over rounds).
fn split_chart(path: &Path, title: &str, groups: &[(String, &Agg)]) -> Result<(), String> {
    let e = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let bars: usize = groups.iter().map(|g| g.1.server_split.len() + 1).sum();
    let root = BitMapBackend::new(path, (1000, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, (FONT, 18))
        .margin(14)
        .x_label_area_size(20)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..bars as f64, 0.0..125.0)
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .disable_x_axis()
        .y_desc("% of the thread's time")
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 16))
        .draw()
        .map_err(|x| e(&x))?;
    let parts: [(&str, RGBColor, TaskShare); 5] = [
        ("RCV", RGBColor(0xd9, 0x53, 0x4f), |c| c.rcv),
        ("HTTP", RGBColor(0x5b, 0x8d, 0xef), |c| c.http),
        ("SEND", RGBColor(0xf0, 0xad, 0x4e), |c| c.send),
        ("lock wait", RGBColor(0x8e, 0x44, 0xad), |c| c.lock),
        ("Main (idle)", RGBColor(0xdd, 0xdd, 0xdd), |c| c.main),
    ];
    let mut x = 0.0;
    for (name, a) in groups {
        chart
            .draw_series(std::iter::once(Text::new(
                name.clone(),
                (x + 0.1, 112.0),
                (FONT, 13).into_font().color(&BLACK),
            )))
            .map_err(|x| e(&x))?;
        for c in &a.server_split {
            let mut y = 0.0;
            for (_, col, f) in &parts {
                let h = (f(c) * 100.0).clamp(0.0, 100.0 - y);
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x + 0.1, y), (x + 0.9, y + h)],
                        col.filled(),
                    )))
                    .map_err(|x| e(&x))?;
                y += h;
            }
            x += 1.0;
        }
        x += 1.0;
    }
    for (name, col, _) in parts {
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(0.0, 0.0), (0.0, 0.0)],
                col.filled(),
            )))
            .map_err(|x| e(&x))?
            .label(name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], col.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .label_font((FONT, 13))
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))
}

/// Draws every plot the results support into `out`; returns (file name, caption).
pub fn all(r: &Results, out: &Path) -> Result<Vec<(String, String)>, String> {
    font()?;
    let agg = aggregate(r);
    let mut made = Vec::new();
    let mut series: Vec<&str> = Vec::new();
    for p in &r.points {
        if !series.contains(&p.series.as_str()) {
            series.push(&p.series);
        }
    }
    let lines_for =
        |se: &str, f: &dyn Fn(&super::scenario::Point, &Agg) -> (f64, f64)| -> Vec<Line> {
            r.servers
                .iter()
                .map(|sv| {
                    let mut pts: Vec<(f64, f64)> = r
                        .points
                        .iter()
                        .enumerate()
                        .filter(|(_, p)| p.series == se)
                        .filter_map(|(pi, p)| agg.get(&(pi, sv.name.clone())).map(|a| f(p, a)))
                        .collect();
                    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                    (sv.name.clone(), pts)
                })
                .collect()
        };
    for se in &series {
        let pts: Vec<&super::scenario::Point> =
            r.points.iter().filter(|p| p.series == *se).collect();
        let first = pts[0];
        let mut paths: Vec<&str> = pts.iter().map(|p| p.path.as_str()).collect();
        paths.dedup();
        let mut draw = |file: String,
                        caption: String,
                        xl: &str,
                        yl: &str,
                        lines: Vec<Line>|
         -> Result<(), String> {
            line_chart(&out.join(&file), &caption, xl, yl, &lines, true)?;
            made.push((file, caption));
            Ok(())
        };
        match first.kind {
            Kind::Sessions if pts.len() > 1 => {
                draw(
                    format!("{se}-throughput.png"),
                    format!("{se}: throughput vs clients/s"),
                    "Surge sessions (clients) per second",
                    "replies per second",
                    lines_for(se, &|p, a| (p.level, a.fetches_per_sec)),
                )?;
                draw(
                    format!("{se}-response.png"),
                    format!("{se}: response time vs clients/s"),
                    "Surge sessions (clients) per second",
                    "median response time (ms)",
                    lines_for(se, &|p, a| (p.level, a.response_p50_ms)),
                )?;
                if r.servers.iter().any(|sv| sv.runner.is_some()) {
                    // The OpenMP paper's fig. 7 plots the mean, which queueing moves most.
                    draw(
                        format!("{se}-response-mean.png"),
                        format!("{se}: mean response time vs clients/s"),
                        "Surge sessions (clients) per second",
                        "mean response time (ms)",
                        lines_for(se, &|p, a| (p.level, a.response_mean_ms)),
                    )?;
                }
            }
            Kind::Sessions => {}
            _ if paths.len() > 1 => {
                draw(
                    format!("{se}-size.png"),
                    format!("{se}: response time vs file size"),
                    "file size (KiB)",
                    "median response time (ms)",
                    lines_for(se, &|p, a| (p.size as f64 / 1024.0, a.response_p50_ms)),
                )?;
            }
            _ if pts.len() > 1 => {
                draw(
                    format!("{se}-response.png"),
                    format!("{se}: first-response time vs fetches/s"),
                    "fetches per second (measured)",
                    "median first-response time (ms)",
                    lines_for(se, &|_, a| (a.fetches_per_sec, a.first_p50_ms)),
                )?;
                if !first.keepalive {
                    draw(
                        format!("{se}-connect.png"),
                        format!("{se}: connect time vs fetches/s"),
                        "fetches per second (measured)",
                        "median connect time (ms)",
                        lines_for(se, &|_, a| (a.fetches_per_sec, a.connect_p50_ms)),
                    )?;
                }
            }
            _ => {}
        }
    }
    // Task utilisation the server reports itself, across the first series (the
    // scheduling paper's fig. 11), for every server that reports one; the runner study
    // draws one figure of every runner's threads instead.
    let has_runners = r.servers.iter().any(|sv| sv.runner.is_some());
    if has_runners {
        if let Some(se) = series.first() {
            if let Some((pi, p)) = r.points.iter().enumerate().rfind(|(_, p)| p.series == *se) {
                let groups: Vec<(String, &Agg)> = r
                    .servers
                    .iter()
                    .filter_map(|sv| {
                        agg.get(&(pi, sv.name.clone()))
                            .map(|a| (sv.name.clone(), a))
                    })
                    .filter(|(_, a)| !a.server_split.is_empty())
                    .collect();
                if !groups.is_empty() {
                    let file = format!("{se}-threads.png");
                    let caption = format!(
                        "{se}: where each runner's threads spent their time at {} {}",
                        p.level,
                        if p.kind == Kind::Sessions {
                            "sessions/s"
                        } else {
                            "(load)"
                        }
                    );
                    split_chart(&out.join(&file), &caption, &groups)?;
                    made.push((file, caption));
                }
            }
        }
    }
    if let Some(se) = series.first().filter(|_| !has_runners) {
        for sv in &r.servers {
            let pts: Vec<(&Agg, &super::scenario::Point)> = r
                .points
                .iter()
                .enumerate()
                .filter(|(_, p)| p.series == *se)
                .filter_map(|(pi, p)| agg.get(&(pi, sv.name.clone())).map(|a| (a, p)))
                .filter(|(a, _)| !a.server_split.is_empty())
                .collect();
            if pts.len() < 2 {
                continue;
            }
            let mut lines: Vec<Line> = Vec::new();
            for (c, first) in pts[0].0.server_split.iter().enumerate() {
                let tasks: [(&str, TaskShare); 4] = [
                    ("RCV", |x| x.rcv),
                    ("HTTP", |x| x.http),
                    ("SEND", |x| x.send),
                    ("Main (idle)", |x| x.main),
                ];
                for (task, f) in tasks {
                    let v: Vec<(f64, f64)> = pts
                        .iter()
                        .filter_map(|(a, _)| {
                            a.server_split
                                .get(c)
                                .map(|cs| (a.fetches_per_sec, f(cs) * 100.0))
                        })
                        .collect();
                    if v.iter().any(|p| p.1 > 0.5) {
                        lines.push((format!("core {} {task}", first.core), v));
                    }
                }
            }
            let file = format!("{se}-{}-tasks.png", sv.name);
            let caption = format!("{}: task utilisation vs fetches/s ({se})", sv.name);
            line_chart(
                &out.join(&file),
                &caption,
                "fetches per second (measured)",
                "% of the core's time",
                &lines,
                false,
            )?;
            made.push((file, caption));
        }
    }
    // Per-core utilisation at the heaviest point of the first series.
    if let Some(se) = series.first() {
        if let Some((pi, p)) = r.points.iter().enumerate().rfind(|(_, p)| p.series == *se) {
            let groups: Vec<(String, &Agg)> = r
                .servers
                .iter()
                .filter_map(|sv| {
                    agg.get(&(pi, sv.name.clone()))
                        .map(|a| (sv.name.clone(), a))
                })
                .collect();
            if !groups.is_empty() {
                let file = "cores.png".to_string();
                let caption = format!("CPU during {}", p.label());
                cores_chart(&out.join(&file), &caption, &groups)?;
                made.push((file, caption));
            }
        }
    }
    Ok(made)
}
