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

/// A server's own colour, the same in every chart (`None`: one from [`SPARE`]).
fn known_colour(server: &str) -> Option<RGBColor> {
    if let Some(c) = runner_colour(server) {
        return Some(c);
    }
    Some(match server {
        "bareweb" => RGBColor(0xd6, 0x27, 0x28),
        "bareweb-qemu" => RGBColor(0x94, 0x67, 0xbd),
        "bareweb-no-tso" => RGBColor(0xff, 0x98, 0x96),
        "bareweb-xdp" => RGBColor(0x8c, 0x56, 0x4b),
        "nginx" => RGBColor(0x2c, 0xa0, 0x2c),
        "nginx-nopush-off" => RGBColor(0x17, 0x60, 0x17),
        "lighttpd" => RGBColor(0x1f, 0x77, 0xb4),
        "h2o" => RGBColor(0xff, 0x7f, 0x0e),
        _ => return None,
    })
}

/// Colours for series without one of their own, or whose own is taken in a chart: far
/// from each other and from the known ones.
const SPARE: [RGBColor; 12] = [
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0x00, 0x00, 0x80),
    RGBColor(0x80, 0x00, 0x00),
    RGBColor(0x00, 0x80, 0x80),
    RGBColor(0xaa, 0x6e, 0x28),
    RGBColor(0x91, 0x1e, 0xb4),
    RGBColor(0x3c, 0xb4, 0x4b),
    RGBColor(0xf0, 0x32, 0xe6),
    RGBColor(0x46, 0x99, 0x90),
];

/// One colour per series of a chart, no two alike: a server's own colour (a row named
/// `server+client` takes its server's) unless a series before it took that colour, else
/// the first spare colour no series took (then hues a golden angle apart).
fn series_colours(names: &[&str]) -> Vec<RGBColor> {
    let mut used: Vec<RGBColor> = Vec::with_capacity(names.len());
    for name in names {
        let server = name.split_once('+').map_or(*name, |(s, _)| s);
        let own = known_colour(name).or_else(|| known_colour(server));
        let c = own.filter(|c| !used.contains(c)).unwrap_or_else(|| {
            let spare = SPARE.iter().copied().find(|c| !used.contains(c));
            spare.unwrap_or_else(|| {
                // Past the spares: hues a golden angle apart (bounded: never a hang).
                (0..10_000u32)
                    .map(|k| {
                        let h = (f64::from(k) * 0.618_033_988_75).fract();
                        let (r, g, b) = HSLColor(h, 0.7, 0.42).to_rgba().rgb();
                        RGBColor(r, g, b)
                    })
                    .find(|c| !used.contains(c))
                    .unwrap_or(BLACK)
            })
        });
        used.push(c);
    }
    used
}

/// A tick label: at most three significant digits and no binary-fraction noise
/// (`0.30000000000000004` is `0.3`), exponent form only past ten million or below 0.001.
fn tick_label(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v == 0.0 { "0".into() } else { format!("{v}") };
    }
    let a = v.abs();
    if !(1e-3..1e7).contains(&a) {
        let s = format!("{v:.1e}");
        return s.replace(".0e", "e");
    }
    let decimals = (2 - a.log10().floor() as i32).clamp(0, 5) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// The series that have something to draw: a legend entry without a line says nothing.
fn with_data(lines: &[Line]) -> Vec<Line> {
    lines.iter().filter(|l| !l.1.is_empty()).cloned().collect()
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
    let lines = &with_data(lines);
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
        let lines = with_data(&lines);
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
        .y_label_area_size(84)
        .build_cartesian_2d(xr, yr)
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .x_desc(xl)
        .y_desc(yl)
        .x_label_formatter(&|v| tick_label(*v))
        .y_label_formatter(&|v| tick_label(*v))
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 16))
        .draw()
        .map_err(|x| e(&x))?;
    let names: Vec<&str> = lines.iter().map(|l| l.0.as_str()).collect();
    for ((name, pts), c) in lines.iter().zip(series_colours(&names)) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_have_no_float_noise() {
        let cases = [
            (0.30000000000000004, "0.3"),
            (0.1 + 0.2, "0.3"),
            (3.0000000000000004, "3"),
            (1000.0, "1000"),
            (12.5, "12.5"),
            (0.125, "0.125"),
            (1.0e-5, "1e-5"),
            (2.5e8, "2.5e8"),
            (0.0, "0"),
            (126511.0, "126511"),
        ];
        for (v, want) in cases {
            assert_eq!(tick_label(v), want, "{v:?}");
        }
        // Short enough for the label area beside the axis title.
        for e in -3..7 {
            for m in [1.0, 2.0, 3.0, 5.0, 7.0] {
                let v = m * 10f64.powi(e) * (1.0 + f64::EPSILON * 4.0);
                assert!(tick_label(v).len() <= 7, "{v:?} {}", tick_label(v));
            }
        }
    }

    #[test]
    fn series_without_points_leave_the_legend() {
        let lines: Vec<Line> = vec![
            ("bareweb".into(), vec![(1.0, 2.0)]),
            ("nginx+bare-tap".into(), vec![]),
            ("nginx".into(), vec![(1.0, 3.0)]),
        ];
        let kept: Vec<String> = with_data(&lines).into_iter().map(|l| l.0).collect();
        assert_eq!(kept, ["bareweb", "nginx"]);
    }

    #[test]
    fn every_series_of_a_chart_has_its_own_colour() {
        let names = [
            "bareweb",
            "bareweb-xdp",
            "nginx",
            "lighttpd",
            "h2o",
            "bareweb-qemu",
            "bareweb+bare-tap",
            "nginx+bare-tap",
            "bareweb-xdp+bare-tap",
            "lighttpd+bare-tap",
            "h2o+bare-tap",
            "caddy",
            "pool-4",
            "pool-1",
        ];
        let c = series_colours(&names);
        for i in 0..c.len() {
            for j in 0..i {
                assert_ne!(c[i], c[j], "{} and {}", names[i], names[j]);
            }
        }
        // A server keeps its own colour when it is free; a client row after it does not
        // take it.
        assert_eq!(c[1], known_colour("bareweb-xdp").unwrap());
        assert_ne!(c[1], c[2]);
        assert_eq!(
            series_colours(&["nginx+bare-tap"])[0],
            known_colour("nginx").unwrap()
        );
        // Many unknown series still differ.
        let many: Vec<String> = (0..40).map(|i| format!("s{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let c = series_colours(&many);
        for i in 0..c.len() {
            assert!(!c[..i].contains(&c[i]), "{i}");
        }
    }

    #[test]
    fn a_log_chart_draws() {
        if font().is_err() {
            return; // no DejaVu here: the plots cannot be drawn at all
        }
        let dir = std::env::temp_dir().join(format!("bw-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("size-size.png");
        let sizes = [1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 20480.0];
        let line =
            |f: f64| -> Vec<(f64, f64)> { sizes.iter().map(|s| (*s, 0.1 + s * f)).collect() };
        let lines: Vec<Line> = vec![
            ("bareweb".into(), line(0.001)),
            ("bareweb-xdp".into(), line(0.0008)),
            ("nginx".into(), line(0.002)),
            ("lighttpd".into(), line(0.003)),
            ("bareweb+bare-tap".into(), vec![]),
            ("nginx+bare-tap".into(), vec![]),
        ];
        line_chart(
            &file,
            "size: response time vs file size",
            "file size (KiB)",
            "median response time (ms)",
            &lines,
            true,
        )
        .unwrap();
        assert!(std::fs::metadata(&file).unwrap().len() > 1000);
        if std::env::var_os("BW_KEEP_PLOT").is_none() {
            std::fs::remove_dir_all(&dir).unwrap();
        } else {
            eprintln!("plot kept: {}", file.display());
        }
    }
}
