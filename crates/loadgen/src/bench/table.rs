//! Medians over rounds, ratios to nginx, the bandwidth bound of the scheduling paper, and the
//! Markdown report of a bench.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::scenario::{Kind, Point, Tls};
use super::Results;

pub fn per_fetch_us(secs: f64, fetches: u64) -> f64 {
    if fetches == 0 {
        0.0
    } else {
        secs * 1e6 / fetches as f64
    }
}

/// The client used this share of one core or more: it, not the server, may be the limit.
pub const CLIENT_BOUND: f64 = 0.85;

/// Medians over the rounds of one (point, server).
#[derive(Clone, Debug, Default)]
pub struct Agg {
    pub rounds: usize,
    pub fetches_per_sec: f64,
    pub bytes_per_sec: f64,
    pub first_p50_ms: f64,
    pub first_p99_ms: f64,
    pub first_mean_ms: f64,
    pub response_mean_ms: f64,
    pub connect_mean_ms: f64,
    pub connect_p50_ms: f64,
    pub response_p50_ms: f64,
    pub server_us: f64,
    /// In a pinned scenario, the server's process CPU per fetch (`server_us` is then its
    /// CPUs' busy time).
    pub server_proc_us: Option<f64>,
    pub client_util: f64,
    /// The client's CPU per fetch, µs (its share of a client-bound run's cost).
    pub client_us: f64,
    pub server_util: f64,
    pub errors: u64,
    /// Errors by kind, summed over the rounds.
    pub error_kinds: BTreeMap<String, u64>,
    pub unfinished: u64,
    pub max_parallel: u64,
    pub sessions_per_sec: f64,
    pub core_busy: Vec<f64>,
    /// The server's own per-core split (medians over rounds), if it reports one.
    pub server_split: Vec<super::servers::CoreSplit>,
    pub flags: Vec<&'static str>,
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// (point index, server) → medians.
pub fn aggregate(r: &Results) -> BTreeMap<(usize, String), Agg> {
    let mut groups: BTreeMap<(usize, String), Vec<&super::Run>> = BTreeMap::new();
    for run in &r.runs {
        groups
            .entry((run.point, run.server.clone()))
            .or_default()
            .push(run);
    }
    groups
        .into_iter()
        .map(|(key, runs)| {
            let m = |f: &dyn Fn(&super::Run) -> f64| median(runs.iter().map(|r| f(r)).collect());
            let p = &r.points[key.0];
            let mut flags = Vec::new();
            let client_util = m(&|x| x.client_cpu_secs / x.wall_secs.max(1e-9));
            if client_util >= CLIENT_BOUND {
                flags.push("client-bound");
            }
            let fps = m(&|x| x.report.fetches_per_sec);
            if p.kind == Kind::Rate && fps < 0.9 * p.level {
                flags.push("below offered rate");
            }
            let errors: u64 = runs.iter().map(|x| x.report.errors_total).sum();
            let mut error_kinds: BTreeMap<String, u64> = BTreeMap::new();
            for x in &runs {
                for (k, v) in &x.report.errors {
                    *error_kinds.entry(k.clone()).or_default() += v;
                }
            }
            if errors > 0 {
                flags.push("errors");
            }
            let ncores = runs.first().map_or(0, |x| x.core_busy.len());
            let core_busy = (0..ncores)
                .map(|c| {
                    median(
                        runs.iter()
                            .map(|x| x.core_busy.get(c).copied().unwrap_or(0.0))
                            .collect(),
                    )
                })
                .collect();
            let server_split = runs
                .first()
                .map(|first| {
                    first
                        .server_split
                        .iter()
                        .enumerate()
                        .map(|(c, cs)| {
                            let med = |f: &dyn Fn(&super::servers::CoreSplit) -> f64| {
                                median(
                                    runs.iter()
                                        .filter_map(|x| x.server_split.get(c))
                                        .map(f)
                                        .collect(),
                                )
                            };
                            super::servers::CoreSplit {
                                core: cs.core,
                                role: cs.role.clone(),
                                rcv: med(&|x| x.rcv),
                                http: med(&|x| x.http),
                                send: med(&|x| x.send),
                                main: med(&|x| x.main),
                                lock: med(&|x| x.lock),
                            }
                        })
                        .collect()
                })
                .unwrap_or_default();
            let agg = Agg {
                rounds: runs.len(),
                fetches_per_sec: fps,
                bytes_per_sec: m(&|x| x.report.bytes_per_sec),
                first_p50_ms: m(&|x| x.report.first_response.p50_ms),
                first_p99_ms: m(&|x| x.report.first_response.p99_ms),
                first_mean_ms: m(&|x| x.report.first_response.mean_ms),
                response_mean_ms: m(&|x| x.report.response.mean_ms),
                connect_mean_ms: m(&|x| x.report.connect.mean_ms),
                connect_p50_ms: m(&|x| x.report.connect.p50_ms),
                response_p50_ms: m(&|x| x.report.response.p50_ms),
                server_us: m(&|x| per_fetch_us(x.server_cpu_secs, x.report.fetches)),
                server_proc_us: runs.iter().all(|x| x.server_proc_secs.is_some()).then(|| {
                    m(&|x| per_fetch_us(x.server_proc_secs.unwrap_or(0.0), x.report.fetches))
                }),
                client_util,
                client_us: m(&|x| per_fetch_us(x.client_cpu_secs, x.report.fetches)),
                server_util: m(&|x| x.server_cpu_secs / x.wall_secs.max(1e-9)),
                errors,
                error_kinds,
                unfinished: runs.iter().map(|x| x.report.unfinished).sum(),
                max_parallel: runs
                    .iter()
                    .map(|x| x.report.max_parallel)
                    .max()
                    .unwrap_or(0),
                sessions_per_sec: m(&|x| x.report.sessions_per_sec),
                core_busy,
                server_split,
                flags,
            };
            (key, agg)
        })
        .collect()
}

/// The scheduling paper §4.1: fetches/s a link of `bps` can carry for a file of `size` bytes,
/// `bandwidth / ((filesize + hdrsize × numPackets) × 8)`, with hdrsize = 58 bytes
/// (18 Ethernet + 20 IP + 20 TCP) and numPackets the server's packets per fetch:
/// SYN-ACK, GET-ACK, the data segments, ACK (connection per fetch), or the data
/// segments and one ACK (keep-alive). Data segments carry the ~250-byte response head
/// too, in 1448-byte segments (MTU 1500 with TCP timestamps).
pub fn bound(size: u64, keepalive: bool, bps: f64) -> (u64, f64) {
    let data = (size + 250).div_ceil(1448);
    let packets = if keepalive { data + 1 } else { data + 3 };
    let per_fetch_bits = (size + 58 * packets) as f64 * 8.0;
    (packets, bps / per_fetch_bits)
}

fn fmt_ratio(v: f64, base: f64) -> String {
    if base > 0.0 && v > 0.0 {
        format!("{:.2}×", v / base)
    } else {
        "–".into()
    }
}

/// Each server row's TLS handshakes on `points`, summed over rounds, in the order rows appear.
pub fn handshakes(r: &Results, points: &[usize]) -> Vec<(String, super::tls::Handshakes)> {
    let mut out: Vec<(String, super::tls::Handshakes)> = Vec::new();
    for sv in &r.servers {
        let mut sum = super::tls::Handshakes::default();
        let mut any = false;
        for run in r
            .runs
            .iter()
            .filter(|x| x.server == sv.name && points.contains(&x.point))
        {
            if let Some(h) = run.tls_handshakes {
                sum.all += h.all;
                sum.resumed += h.resumed;
                any = true;
            }
        }
        if any {
            out.push((sv.name.clone(), sum));
        }
    }
    out
}

/// The Markdown report; `img` prefixes PNG paths.
pub fn report(r: &Results, pngs: &[(String, String)], img: &str) -> String {
    let agg = aggregate(r);
    // The baseline server kind (its rows under each client are `nginx`, `nginx+wrk`, ...):
    // nginx if it ran with any client, else the first server.
    let kind = |name: &str| name.split_once('+').map_or(name, |(k, _)| k).to_string();
    let base = if r.servers.iter().any(|s| kind(&s.name) == "nginx") {
        "nginx".to_string()
    } else {
        r.servers.first().map(|s| kind(&s.name)).unwrap_or_default()
    };
    let m = &r.machine;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "### {} (`{}`)\n",
        if r.title.is_empty() {
            &r.name
        } else {
            &r.title
        },
        r.name
    );
    let _ = writeln!(s, "Made by `{}` on {}.\n", r.command, m.date);
    let _ = writeln!(
        s,
        "Machine: {} × {}{}, {:.0} GiB, Linux {}. {} interleaved round{} (server order rotating), medians; \
         each kernel server may use {} core{}.\n",
        m.cpus,
        m.cpu_model,
        if m.virtualised { " (virtual machine)" } else { "" },
        m.mem_gib,
        m.kernel,
        r.rounds,
        if r.rounds == 1 { "" } else { "s" },
        r.cores,
        if r.cores == 1 { "" } else { "s" },
    );
    if !r.background_busy.is_empty() {
        let _ = writeln!(
            s,
            "Before the runs the cores were {} busy with other work (the machine is shared; every figure below \
             carries that noise, which the interleaving spreads over all servers alike).\n",
            r.background_busy
                .iter()
                .map(|b| format!("{:.0}%", b * 100.0))
                .collect::<Vec<_>>()
                .join(" / ")
        );
    }
    if let Some(c) = &r.pinned {
        let _ = writeln!(
            s,
            "**Pinned** (`pin = true`, bench::pin): the servers ran on CPU {}, the bench and its clients on CPU {}; \
             a kernel server's receive path was steered to its CPU (RPS on its veth), an AF_XDP veth's NAPI ran \
             in a thread pinned to its receiver's CPU. **Server CPU µs/fetch is the busy time of the server's CPU** \
             (the run's wall time less the CPU's idle, iowait and steal time) per fetch: all the server cost, wherever the kernel ran it; its \
             process CPU follows in brackets. Busy time counts anything else on that CPU too: the figures \
             want a quiet machine.\n",
            super::pin::Cpus::list(&c.server),
            super::pin::Cpus::list(&c.client)
        );
        let stolen: f64 = r.runs.iter().filter_map(|x| x.server_steal_secs).sum();
        let wall: f64 = r.runs.iter().map(|x| x.wall_secs).sum();
        if stolen > 0.02 * wall {
            let _ = writeln!(
                s,
                "**Steal**: the hypervisor took {:.1}% of the server CPU's time during the runs; busy time leaves \
                 it out, process CPU counts it, so the bracketed figures run high by about that much.\n",
                stolen / wall.max(1e-9) * 100.0
            );
        }
    }
    let _ = writeln!(s, "| server | setup |\n|---|---|");
    for sv in &r.servers {
        let _ = writeln!(s, "| {} | {} |", sv.name, sv.label);
    }
    let _ = writeln!(s);
    let mut series: Vec<&str> = Vec::new();
    for p in &r.points {
        if !series.contains(&p.series.as_str()) {
            series.push(&p.series);
        }
    }
    // A Lock column only where some server reported waiting (the runner study).
    let with_lock = r
        .runs
        .iter()
        .any(|x| x.server_split.iter().any(|c| c.lock > 0.0));
    for se in series {
        let pts: Vec<(usize, &Point)> = r
            .points
            .iter()
            .enumerate()
            .filter(|(_, p)| p.series == se)
            .collect();
        let Some((_, first)) = pts.first() else {
            continue;
        };
        let what = match first.kind {
            Kind::Rate => "offered fetches/s",
            Kind::Parallel => "connections",
            Kind::Sessions => "Surge sessions/s",
        };
        let conn = if first.kind == Kind::Sessions {
            "persistent, pipelined bursts".to_string()
        } else if first.keepalive {
            "keep-alive".into()
        } else {
            "connection per fetch".into()
        };
        // Over TLS every ratio says, next to it, whether the kernel had kTLS.
        let (https, vs) = match first.tls {
            Tls::Off => (String::new(), format!("vs {base}")),
            t => {
                let k = r.ktls.as_deref().unwrap_or("kTLS unknown");
                (
                    format!(
                        ", HTTPS (TLS 1.3, ECDSA P-256; {}; {k})",
                        match (first.keepalive, t) {
                            (true, _) => "one handshake per connection",
                            (false, Tls::Full) => "a full handshake per fetch",
                            _ => "a resumed handshake per fetch where the server resumes",
                        }
                    ),
                    format!("vs {base} ({k})"),
                )
            }
        };
        let _ = writeln!(
            s,
            "#### Series `{se}` — {} mode, {conn}{https}, {} s per run\n",
            kind_name(first.kind),
            first.seconds
        );
        let _ = writeln!(
            s,
            "| file | {what} | server | fetches/s | {vs} | first response p50 / p99 ms | connect ms | response ms | server CPU µs/fetch | {vs} | client CPU, µs/fetch | cores busy | errors | flags |"
        );
        let _ = writeln!(
            s,
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        );
        for (pi, p) in &pts {
            for sv in &r.servers {
                let b = agg.get(&(*pi, super::clients::base_for(&base, &sv.name)));
                let Some(a) = agg.get(&(*pi, sv.name.clone())) else {
                    continue;
                };
                let file = if p.path.is_empty() {
                    "surge set".to_string()
                } else {
                    format!("{} ({} B)", p.path, p.size)
                };
                let _ = writeln!(
                    s,
                    "| {file} | {} | {} | {:.0} | {} | {:.3} / {:.3} | {} | {:.3} | {} | {} | {:.0}%, {:.1} | {:.0}% | {} | {} |",
                    p.level,
                    sv.name,
                    a.fetches_per_sec,
                    b.map_or("–".into(), |b| fmt_ratio(a.fetches_per_sec, b.fetches_per_sec)),
                    a.first_p50_ms,
                    a.first_p99_ms,
                    if p.keepalive || p.kind == Kind::Sessions {
                        format!("({:.3})", a.connect_mean_ms)
                    } else {
                        format!("{:.3}", a.connect_mean_ms)
                    },
                    a.response_mean_ms,
                    match a.server_proc_us {
                        Some(p) => format!("{:.1} ({p:.1})", a.server_us),
                        None => format!("{:.1}", a.server_us),
                    },
                    b.map_or("–".into(), |b| fmt_ratio(a.server_us, b.server_us)),
                    a.client_util * 100.0,
                    a.client_us,
                    a.core_busy.iter().sum::<f64>() / a.core_busy.len().max(1) as f64 * 100.0,
                    if a.errors == 0 {
                        "0".to_string()
                    } else {
                        a.error_kinds.iter().map(|(k, v)| format!("{v} {k}")).collect::<Vec<_>>().join(", ")
                    },
                    a.flags.join(", ")
                );
            }
        }
        let _ = writeln!(s);
        if first.tls.is_on() {
            let hs = handshakes(r, &pts.iter().map(|(i, _)| *i).collect::<Vec<_>>());
            if !hs.is_empty() {
                let _ = writeln!(
                    s,
                    "wrk's TLS handshakes, resumed of all (summed over rounds; counted in wrk by bench::tls's shim): {}.\n",
                    hs.iter()
                        .map(|(n, h)| format!("{n} {} of {}", h.resumed, h.all))
                        .collect::<Vec<_>>()
                        .join("; ")
                );
            }
        }
        let mut split_rows: Vec<String> = Vec::new();
        for (pi, p) in &pts {
            for sv in &r.servers {
                let Some(a) = agg.get(&(*pi, sv.name.clone())) else {
                    continue;
                };
                for c in &a.server_split {
                    let lock = if with_lock {
                        format!(" {:.0}% |", c.lock * 100.0)
                    } else {
                        String::new()
                    };
                    split_rows.push(format!(
                        "| {} | {} | {} ({} {} {}) | {:.0}% | {:.0}% | {:.0}% |{lock} {:.0}% |",
                        if p.path.is_empty() {
                            "surge set"
                        } else {
                            p.path.as_str()
                        },
                        p.level,
                        sv.name,
                        if sv.runner.is_some() {
                            "thread"
                        } else {
                            "core"
                        },
                        c.core,
                        c.role,
                        c.rcv * 100.0,
                        c.http * 100.0,
                        c.send * 100.0,
                        c.main * 100.0
                    ));
                }
            }
        }
        if !split_rows.is_empty() {
            let _ = writeln!(
                s,
                "Time split a server reports itself (bareweb's stats page, the scheduling paper's task utilisation; Main is idle{}):\n",
                if with_lock {
                    "; Lock is waiting for the shared server's lock or, in workshare, for the team at the end of a pass"
                } else {
                    ""
                }
            );
            if with_lock {
                let _ = writeln!(s, "| file | {what} | server (thread) | RCV | HTTP | SEND | Lock | Main |\n|---|---|---|---|---|---|---|---|");
            } else {
                let _ = writeln!(s, "| file | {what} | server (core) | RCV | HTTP | SEND | Main |\n|---|---|---|---|---|---|---|");
            }
            for row in split_rows {
                let _ = writeln!(s, "{row}");
            }
            let _ = writeln!(s);
        }
    }
    let _ = writeln!(
        s,
        "Columns: fetches/s and times are the client's (`bareweb load`, http_load's definitions: connect = \
         connect() to established, first response = request sent to first response byte, response = to last byte; \
         connect in parentheses when connections are reused; rows `server+client` name another client kind, \
         compared with {base} under the same client). {cpu} Cores busy = mean busy time of \
         all cores over the run, everything on the machine included (client, server, kernel, and any other work on \
         a shared machine: see the background figure above). Client CPU = the client's utime + stime / wall time, and per fetch: at ≥ {:.0}% of its one core a run is flagged \
         client-bound (the client, not the server, may be the limit). \"vs {base}\" is the ratio to {base} \
         (fetches/s: higher is better; CPU: lower is better). Errors are summed over the rounds; `no_slot` means \
         the client had all its connections open waiting for a server that had fallen behind.\n",
        CLIENT_BOUND * 100.0,
        cpu = if r.pinned.is_some() {
            "Server CPU = the busy time of the server's CPU over the run, per fetch (pinned, above), its \
             process CPU in brackets."
        } else {
            "Server CPU = utime + stime of the server's processes from /proc over the run, per fetch. It is \
             not the whole cost: part of a kernel server's TCP work runs in softirq context and is charged to \
             whichever process was running (often the client), while bareweb's TAP writes charge the delivery of \
             its packets to a socket client to bareweb (with a bare client they only queue them on the client's \
             TAP or veth; bench::bare says who pays for what; `pin = true` charges each server its whole cost)."
        }
    );
    summary(&mut s, r, &agg, &base);
    super::runners::summary(&mut s, r, &agg);
    if let Some(x) = &r.search {
        super::search::section(&mut s, x, &r.points);
    }
    // Bandwidth bound, for the points that fetch one file (a Surge set has no single size).
    if r.points.iter().any(|p| !p.path.is_empty()) {
        bound_section(&mut s, r, &agg);
    }
    if !pngs.is_empty() {
        let _ = writeln!(s, "#### Plots\n");
        for (file, caption) in pngs {
            let _ = writeln!(s, "![{caption}]({img}{file})\n");
        }
    }
    for n in &r.notes {
        let _ = writeln!(s, "Note: {n}\n");
    }
    if r.servers.iter().any(|sv| sv.name == "bareweb-qemu") {
        let _ = writeln!(
            s,
            "Note: bareweb-qemu's server CPU is QEMU's, and its kernel polls its core without pause: about one \
             core at any load, so its CPU per fetch falls as the load rises and mostly measures idle polling at \
             light loads. Its accelerator is in its setup line above (TCG emulates every guest instruction).\n"
        );
    }
    s
}

/// The bandwidth bound of the scheduling paper (§4.1) for every file the points fetch.
fn bound_section(s: &mut String, r: &Results, agg: &BTreeMap<(usize, String), Agg>) {
    let _ = writeln!(s, "#### Bandwidth bound (the scheduling paper, §4.1)\n");
    let _ = writeln!(
        s,
        "max fetches/s = bandwidth / ((filesize + hdrsize × numPackets) × 8), hdrsize = 58 B, numPackets = \
         SYN-ACK + GET-ACK + data segments + ACK (keep-alive: data + ACK). Bandwidth = the measured capacity of \
         one TCP stream over a veth pair between two namespaces on this machine, measured for one second before \
         the runs: **{:.2} Gbit/s**. A veth has no line rate: its capacity is what the CPUs can push at that \
         moment, so on a shared machine the bound moves, and several streams can beat one (over 100% below).\n",
        r.link_bps / 1e9
    );
    let _ = writeln!(s, "| file | connection | numPackets | bound fetches/s | best measured | server | of bound |\n|---|---|---|---|---|---|---|");
    let mut seen = Vec::new();
    let agg_ref = agg;
    for p in r.points.iter() {
        if p.path.is_empty() || seen.contains(&(p.path.clone(), p.keepalive)) {
            continue;
        }
        seen.push((p.path.clone(), p.keepalive));
        let (packets, bound) = bound(p.size, p.keepalive, r.link_bps);
        let best = r
            .points
            .iter()
            .enumerate()
            .filter(|(_, q)| {
                q.path == p.path && q.keepalive == p.keepalive && q.kind == Kind::Parallel
            })
            .flat_map(|(qi, _)| {
                r.servers.iter().filter_map(move |sv| {
                    agg_ref
                        .get(&(qi, sv.name.clone()))
                        .map(|a| (a.fetches_per_sec, sv.name.clone()))
                })
            })
            .max_by(|a, b| a.0.total_cmp(&b.0));
        let conn = if p.keepalive {
            "keep-alive"
        } else {
            "per fetch"
        };
        match best {
            Some((fps, who)) => {
                let _ = writeln!(
                    s,
                    "| {} ({} B) | {conn} | {packets} | {bound:.0} | {fps:.0} | {who} | {:.1}% |",
                    p.path,
                    p.size,
                    fps / bound * 100.0
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    "| {} ({} B) | {conn} | {packets} | {bound:.0} | (rate mode: the offer, not the server, set the rate) | | |",
                    p.path, p.size
                );
            }
        }
    }
    let _ = writeln!(s);
}

fn geo_mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

/// What the tables say, computed: per server, throughput and CPU ratios to the baseline
/// over the points where they mean something, and how many results are flagged.
fn summary(s: &mut String, r: &Results, agg: &BTreeMap<(usize, String), Agg>, base: &str) {
    let _ = writeln!(s, "#### Summary\n");
    let _ = writeln!(
        s,
        "Computed from the tables above. Throughput ratios use the closed-loop points (parallel and session \
         series: the server sets the pace); in rate series the offer sets it, so only their CPU counts. Geometric \
         means, with the range.\n"
    );
    // Over TLS a ratio says, next to it, whether the kernel had kTLS.
    let k = match r.points.iter().any(|p| p.tls.is_on()) {
        true => format!(
            " ({} on HTTPS points)",
            r.ktls.as_deref().unwrap_or("kTLS unknown")
        ),
        false => String::new(),
    };
    let _ = writeln!(
        s,
        "| server | fetches/s vs {base}{k} | server CPU per fetch vs {base}{k} | flagged client-bound | below offered rate | with errors |\n|---|---|---|---|---|---|"
    );
    for sv in &r.servers {
        let (mut tput, mut cpu) = (Vec::new(), Vec::new());
        let (mut client, mut below, mut errors) = (0, 0, 0);
        for (pi, p) in r.points.iter().enumerate() {
            let (Some(a), Some(b)) = (
                agg.get(&(pi, sv.name.clone())),
                agg.get(&(pi, super::clients::base_for(base, &sv.name))),
            ) else {
                continue;
            };
            if p.kind != Kind::Rate && a.fetches_per_sec > 0.0 && b.fetches_per_sec > 0.0 {
                tput.push(a.fetches_per_sec / b.fetches_per_sec);
            }
            if a.server_us > 0.0 && b.server_us > 0.0 {
                cpu.push(a.server_us / b.server_us);
            }
            client += a.flags.contains(&"client-bound") as u32;
            below += a.flags.contains(&"below offered rate") as u32;
            errors += a.flags.contains(&"errors") as u32;
        }
        let range = |v: &[f64]| {
            if v.is_empty() {
                "–".to_string()
            } else {
                let lo = v.iter().copied().fold(f64::MAX, f64::min);
                let hi = v.iter().copied().fold(0.0, f64::max);
                format!(
                    "{:.2}× ({:.2}–{:.2}, {} points)",
                    geo_mean(v),
                    lo,
                    hi,
                    v.len()
                )
            }
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {client} | {below} | {errors} |",
            sv.name,
            range(&tput),
            range(&cpu)
        );
    }
    let _ = writeln!(s);
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Rate => "rate",
        Kind::Parallel => "parallel",
        Kind::Sessions => "session",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduling_paper_bound_is_reproduced() {
        // The paper: 100 Mbit/s, 3593 bytes, 7 packets → 3126 fetches/s. With its 7 packets:
        let bits = (3593 + 58 * 7) as f64 * 8.0;
        assert_eq!((100e6 / bits) as u64, 3125); // the paper rounds 3125.8 to 3126
                                                 // Ours counts 3 + ceil((3593 + 250) / 1448) = 6 packets for the same file.
        let (packets, fps) = bound(3593, false, 100e6);
        assert_eq!(packets, 6);
        assert!((fps - 100e6 / ((3593 + 58 * 6) as f64 * 8.0)).abs() < 1e-6);
        // 4096 + 250 bytes need 4 segments of 1448, plus one ACK.
        assert_eq!(bound(4096, true, 1e9).0, 5);
    }

    #[test]
    fn medians() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(vec![]), 0.0);
    }

    #[test]
    fn bare_client_rows_compare_with_nginx_under_the_bare_client() {
        use crate::bench::{Run, ServerInfo};
        let point = Point {
            series: "ka".into(),
            kind: Kind::Parallel,
            level: 16.0,
            path: "/4k".into(),
            size: 4096,
            keepalive: true,
            seconds: 2.0,
            fetches: 1,
            think_scale: 0.0,
            tls: Default::default(),
        };
        // (row, fetches in 2 s, server CPU s, client CPU s)
        let rows = [
            ("nginx", 20_000, 0.6, 0.8),
            ("bareweb", 40_000, 0.4, 0.9),
            ("nginx+bare-tap", 10_000, 0.5, 0.5),
            ("bareweb+bare-tap", 50_000, 0.25, 1.9),
        ];
        let r = Results {
            name: "t".into(),
            title: String::new(),
            command: String::new(),
            machine: crate::bench::procfs::machine(),
            link_bps: 1e9,
            rounds: 1,
            cores: 1,
            servers: rows
                .iter()
                .map(|x| ServerInfo {
                    name: x.0.into(),
                    label: String::new(),
                    runner: None,
                })
                .collect(),
            points: vec![point],
            runs: rows
                .iter()
                .map(|&(name, n, server, client)| Run {
                    point: 0,
                    server: name.into(),
                    round: 0,
                    report: crate::report::Report {
                        fetches: n,
                        fetches_per_sec: n as f64 / 2.0,
                        ..Default::default()
                    },
                    server_cpu_secs: server,
                    server_proc_secs: None,
                    server_steal_secs: None,
                    client_cpu_secs: client,
                    wall_secs: 2.0,
                    core_busy: vec![1.0, 1.0],
                    server_split: Vec::new(),
                    tls_handshakes: None,
                })
                .collect(),
            notes: Vec::new(),
            background_busy: Vec::new(),
            pinned: None,
            ktls: None,
            search: None,
        };
        let md = report(&r, &[], "");
        let row = |name: &str| {
            md.lines()
                .find(|l| l.starts_with("| /4k") && l.contains(&format!("| {name} |")))
                .unwrap_or_else(|| panic!("no row {name} in {md}"))
                .to_string()
        };
        // Against nginx under the same client: 25000 / 5000 fetches/s, 5 / 50 µs per fetch.
        let b = row("bareweb+bare-tap");
        assert!(
            b.contains("| 25000 | 5.00× |") && b.contains("| 5.0 | 0.10× |"),
            "{b}"
        );
        // The client's CPU per fetch (1.9 s / 50000 = 38 µs), and 95% of a core: client-bound.
        assert!(
            b.contains("| 95%, 38.0 |") && b.contains("client-bound"),
            "{b}"
        );
        let k = row("bareweb");
        assert!(
            k.contains("| 20000 | 2.00× |") && k.contains("| 45%, 22.5 |"),
            "{k}"
        );
        assert!(!k.contains("client-bound"), "{k}");
        assert!(!md.contains("**Pinned**"));

        // Pinned: the server CPU is its core's busy time, its process CPU in brackets, and
        // the report says so.
        let mut r = r;
        r.pinned = Some(crate::bench::pin::Cpus {
            server: vec![1],
            client: vec![0],
        });
        for x in &mut r.runs {
            x.server_proc_secs = Some(x.server_cpu_secs / 2.0);
        }
        let md = report(&r, &[], "");
        assert!(md.contains("servers ran on CPU 1, the bench and its clients on CPU 0"));
        let b = md
            .lines()
            .find(|l| l.starts_with("| /4k") && l.contains("| bareweb+bare-tap |"))
            .unwrap();
        assert!(b.contains("| 5.0 (2.5) | 0.10× |"), "{b}");

        // Only bare-client rows (no plain `nginx`): still against nginx under that client.
        r.servers.retain(|x| x.name.ends_with("+bare-tap"));
        r.runs.retain(|x| x.server.ends_with("+bare-tap"));
        let md = report(&r, &[], "");
        let b = md
            .lines()
            .find(|l| l.starts_with("| /4k") && l.contains("| bareweb+bare-tap |"))
            .unwrap();
        assert!(b.contains("| 25000 | 5.00× |"), "{b}");
        assert!(md.contains("vs nginx"), "{md}");

        // HTTPS: the series says so, every ratio column names kTLS's absence, and wrk's
        // handshakes (resumed of all) are summed per row.
        r.pinned = None;
        r.ktls = Some("no kTLS".into());
        r.points[0].tls = Tls::Full;
        r.points[0].keepalive = false;
        for x in &mut r.runs {
            x.tls_handshakes = Some(crate::bench::tls::Handshakes {
                all: x.report.fetches,
                resumed: 0,
            });
        }
        let md = report(&r, &[], "");
        assert!(
            md.contains("HTTPS (TLS 1.3, ECDSA P-256; a full handshake per fetch; no kTLS)"),
            "{md}"
        );
        assert!(
            md.contains("| fetches/s | vs nginx (no kTLS) |")
                && md.contains("| server CPU µs/fetch | vs nginx (no kTLS) |"),
            "{md}"
        );
        assert!(
            md.contains("nginx+bare-tap 0 of 10000; bareweb+bare-tap 0 of 50000"),
            "{md}"
        );
        assert!(
            md.contains("| fetches/s vs nginx (no kTLS on HTTPS points) |"),
            "{md}"
        );
    }
}
