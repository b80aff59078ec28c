//! `bareweb bench`: the side-by-side harness. It builds the bench site, measures the
//! link, starts every server under test in its own namespaces ([`servers`], [`topo`]),
//! then runs the same loads against each, interleaved — round by round, point by point,
//! server after server, the order rotating so drift hits all alike — with each of the
//! scenario's client kinds in the client namespace ([`clients`]: `bareweb load` on
//! sockets, wrk, and the bare client on a TAP or AF_XDP, [`bare`]). Each run records the server's CPU time
//! (utime + stime of its process tree from /proc), the client's (its rusage), and every
//! core's busy time. Results go to a folder: `results.json`, `report.md` (tables with
//! medians and ratios to nginx, the link's bandwidth bound) and PNG plots; with `--doc`
//! the report also becomes a section of a Markdown file (a dated log in docs/perf/log/).
//!
//! HTTPS: a series with `tls` makes every server serve TLS 1.3 on port 443 too, with one
//! ECDSA P-256 certificate made for the run, loaded by wrk ([`tls`]); the report says next
//! to every ratio over TLS whether the kernel has kTLS (here it has not: the peers encrypt
//! in user space, as bareweb does).
//!
//! The runner dimension (the OpenMP paper's runner study): a scenario's `runners` and
//! `threads` start bareweb once per runner and thread count (`bareweb serve --runner R
//! --threads N`), each one more server in the interleaving, the tables and the plots
//! ([`scenario::Scenario::variants`]); [`runners`] adds the study's own summary.

pub mod bare;
pub mod clients;
pub mod doc;
pub mod peers;
pub mod pin;
pub mod plot;
pub mod procfs;
pub mod runners;
pub mod scenario;
pub mod search;
pub mod servers;
pub mod table;
pub mod tls;
pub mod topo;
pub mod xdp;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::report::Report;
use crate::surge::{FileSet, SurgeParams};
use crate::sys;
use scenario::{Kind, Point, Scenario};

/// The smoke scenario, built in so `bareweb bench --smoke` runs from anywhere.
pub const SMOKE: &str = include_str!("../../../../bench/smoke.toml");

pub struct Options {
    pub scenario: Scenario,
    pub out: PathBuf,
    /// The bareweb binary (for `serve` and `load`).
    pub exe: PathBuf,
    /// Update this Markdown file (a dated log in docs/perf/log/) with the report.
    pub doc: Option<PathBuf>,
    /// The command line, for the report.
    pub command: String,
}

/// One load run against one server.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Run {
    pub point: usize,
    pub server: String,
    pub round: u32,
    pub report: Report,
    /// The server's CPU during the run: utime + stime of its processes, or in a pinned
    /// scenario the busy time of its CPUs ([`pin`]).
    pub server_cpu_secs: f64,
    /// utime + stime of the server's processes (and NAPI threads), when that is not
    /// `server_cpu_secs` (a pinned scenario).
    #[serde(default)]
    pub server_proc_secs: Option<f64>,
    /// Time the hypervisor stole from the server CPUs during the run (a pinned scenario):
    /// left out of `server_cpu_secs`, but counted in `server_proc_secs` by the scheduler.
    #[serde(default)]
    pub server_steal_secs: Option<f64>,
    /// utime + stime of the client process (rusage).
    pub client_cpu_secs: f64,
    pub wall_secs: f64,
    /// Busy fraction of each core during the run (whole machine).
    pub core_busy: Vec<f64>,
    /// The server's own per-core time split, when it reports one (bareweb).
    #[serde(default)]
    pub server_split: Vec<servers::CoreSplit>,
    /// An HTTPS run's TLS handshakes, all and resumed, as wrk's shim counted them.
    #[serde(default)]
    pub tls_handshakes: Option<tls::Handshakes>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ServerInfo {
    pub name: String,
    pub label: String,
    /// `bareweb serve --runner R --threads N`, for a variant of the runner dimension.
    #[serde(default)]
    pub runner: Option<(String, u32)>,
}

/// Everything a bench produced; `results.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Results {
    pub name: String,
    pub title: String,
    pub command: String,
    pub machine: procfs::Machine,
    /// Measured capacity of a veth link (one TCP stream), bits/s.
    pub link_bps: f64,
    pub rounds: u32,
    pub cores: u32,
    pub servers: Vec<ServerInfo>,
    pub points: Vec<Point>,
    pub runs: Vec<Run>,
    pub notes: Vec<String>,
    /// Busy fraction of each core over one second before any server started.
    #[serde(default)]
    pub background_busy: Vec<f64>,
    /// The peers' configuration search, when the scenario has one.
    #[serde(default)]
    pub search: Option<search::Search>,
    /// The CPUs of a pinned scenario ([`pin`]): server CPU is then their busy time.
    #[serde(default)]
    pub pinned: Option<pin::Cpus>,
    /// With HTTPS series: what the report writes next to every ratio over TLS
    /// ([`tls::ktls_note`]: "no kTLS" on a kernel without it).
    #[serde(default)]
    pub ktls: Option<String>,
}

/// Writes the bench site: a copied directory, exact-size files, a Surge set.
fn build_site(s: &Scenario, dir: &Path) -> Result<(), String> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(dir.join("sz")).map_err(|e| format!("{}: {e}", dir.display()))?;
    if let Some(src) = &s.site.copy {
        let src = s.base.join(src);
        copy_dir(&src, dir)?;
    }
    let mut rng = crate::rng::Rng::new(s.site.seed);
    for &n in &s.site.sizes {
        let mut bytes = vec![0u8; n as usize];
        for c in bytes.chunks_mut(8) {
            let v = rng.next_u64().to_le_bytes();
            c.copy_from_slice(&v[..c.len()]);
        }
        let p = dir.join(format!("sz/{n}.bin"));
        std::fs::write(&p, bytes).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    if s.site.surge_files > 0 {
        let params = SurgeParams {
            files: s.site.surge_files,
            max_size: s.site.surge_max_size,
            ..SurgeParams::default()
        };
        FileSet::generate(&params, s.site.seed)?.write_site(dir)?;
    }
    if !dir.join("index.html").exists() {
        std::fs::write(
            dir.join("index.html"),
            "<!doctype html><title>bench</title>\n",
        )
        .map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn copy_dir(src: &Path, dst: &Path) -> Result<(), String> {
    for e in std::fs::read_dir(src).map_err(|e| format!("{}: {e}", src.display()))? {
        let e = e.map_err(|e| e.to_string())?;
        let (from, to) = (e.path(), dst.join(e.file_name()));
        if from.is_dir() {
            std::fs::create_dir_all(&to).map_err(|e| format!("{}: {e}", to.display()))?;
            copy_dir(&from, &to)?;
        } else {
            std::fs::copy(&from, &to).map_err(|e| format!("{}: {e}", from.display()))?;
        }
    }
    Ok(())
}

/// The client command for one point.
fn client_args(
    o: &Options,
    p: &Point,
    inst: &servers::Instance,
    site: &Path,
    round: u32,
    json: &Path,
) -> Vec<String> {
    let s = &o.scenario;
    let mut a: Vec<String> = vec!["load".into()];
    match p.kind {
        Kind::Sessions => {
            a.push(inst.load_url("/"));
            a.extend([
                "--sessions-rate".into(),
                p.level.to_string(),
                "--surge".into(),
                site.display().to_string(),
                "--think-scale".into(),
                p.think_scale.to_string(),
                "--sessions".into(),
                p.fetches.to_string(),
                "--max-conns".into(),
                "8192".into(),
            ]);
        }
        Kind::Rate => {
            a.push(inst.load_url(&p.path));
            a.extend([
                "--rate".into(),
                p.level.to_string(),
                "--max-conns".into(),
                "8192".into(),
            ]);
        }
        Kind::Parallel => {
            a.push(inst.load_url(&p.path));
            a.extend(["--parallel".into(), (p.level as usize).to_string()]);
        }
    }
    if p.kind != Kind::Sessions {
        a.extend(["--fetches".into(), p.fetches.to_string()]);
    }
    if p.keepalive {
        a.push("--keepalive".into());
    }
    if s.verify {
        a.extend(["--verify".into(), site.display().to_string()]);
    }
    a.extend([
        "--seconds".into(),
        p.seconds.to_string(),
        "--timeout".into(),
        s.timeout.to_string(),
        "--seed".into(),
        (round + 1).to_string(),
        "--quiet".into(),
        "--json-out".into(),
        json.display().to_string(),
    ]);
    a
}

/// One run of point `p` against `inst` by client kind `client` ([`clients`]).
pub(crate) fn run_with(
    o: &Options,
    p: &Point,
    pi: usize,
    inst: &mut servers::Instance,
    site: &Path,
    round: u32,
    client: &str,
) -> Result<Run, String> {
    let row = clients::row_name(&inst.name, client);
    let json = o
        .out
        .join("runs")
        .join(format!("r{round}-p{pi}-{row}.json"));
    let args = client_args(o, p, inst, site, round, &json);
    let pids = inst.cpu_pids();
    let st0 = inst.stats();
    let c0 = sys::children_cpu_secs();
    let s0 = procfs::cpu_secs(&pids);
    let k0 = procfs::cores();
    let b0 = pin::not_busy();
    let x0 = pin::stolen();
    let t0 = Instant::now();
    let mut tls_handshakes = None;
    let report = if client == clients::WRK {
        let url = inst.url_for(p);
        clients::run_wrk(&inst.client_ns, p, &url, o.scenario.timeout, &o.out).map(|(r, h)| {
            tls_handshakes = h;
            r
        })
    } else if bare::is_bare(client) {
        run_bare(o, inst, client, &args, &json)
    } else {
        Command::new("ip")
            .args(["netns", "exec", &inst.client_ns])
            .arg(&o.exe)
            .args(&args)
            .output()
            .map_err(|e| format!("cannot start the client: {e}"))
            .and_then(|out| {
                if out.status.success() {
                    Ok(())
                } else {
                    Err(format!(
                        "client failed against {}: {}",
                        inst.name,
                        String::from_utf8_lossy(&out.stderr).trim()
                    ))
                }
            })
            .and_then(|()| {
                let text = std::fs::read_to_string(&json)
                    .map_err(|e| format!("{}: {e}", json.display()))?;
                serde_json::from_str::<Report>(&text)
                    .map_err(|e| format!("{}: {e}", json.display()))
            })
    };
    let wall = t0.elapsed().as_secs_f64();
    let b1 = pin::not_busy();
    let x1 = pin::stolen();
    let k1 = procfs::cores();
    let s1 = procfs::cpu_secs(&pids);
    let c1 = sys::children_cpu_secs();
    let st1 = inst.stats();
    let report = report?;
    if !inst.alive() {
        return Err(format!(
            "{} died during a run (log {})",
            inst.name,
            inst.log.display()
        ));
    }
    Ok(Run {
        point: pi,
        server: row,
        round,
        report,
        server_cpu_secs: match &inst.pinned {
            Some(c) => pin::busy_secs(&b0, &b1, &c.server, wall),
            None => s1 - s0,
        },
        server_proc_secs: inst.pinned.as_ref().map(|_| s1 - s0),
        server_steal_secs: inst
            .pinned
            .as_ref()
            .map(|c| pin::stolen_secs(&x0, &x1, &c.server)),
        client_cpu_secs: c1 - c0,
        wall_secs: wall,
        core_busy: procfs::busy_between(&k0, &k1),
        server_split: match (st0, st1) {
            (Some(a), Some(b)) => servers::split_between(&a, &b),
            _ => Vec::new(),
        },
        tls_handshakes,
    })
}

/// Runs the bare client (`client`: bare-tap, bare-tap-spin or bare-xdp) with the socket client's
/// arguments `socket`; its `--json-out` report. The bare client exits non-zero when a
/// fetch failed, after writing its report: the failures are the run's errors, as the
/// socket client's are, and only a run without a report is an error of the bench.
fn run_bare(
    o: &Options,
    inst: &servers::Instance,
    client: &str,
    socket: &[String],
    json: &Path,
) -> Result<Report, String> {
    let links = inst
        .bare
        .as_ref()
        .ok_or_else(|| format!("{}: no bare client link (not attached)", inst.name))?;
    let args = bare::args(client, links, socket);
    let _ = std::fs::remove_file(json);
    let out = Command::new("ip")
        .args(["netns", "exec", &inst.client_ns])
        .arg(&o.exe)
        .args(&args)
        .output()
        .map_err(|e| format!("cannot start the bare client: {e}"))?;
    match std::fs::read_to_string(json) {
        Ok(text) => {
            serde_json::from_str::<Report>(&text).map_err(|e| format!("{}: {e}", json.display()))
        }
        Err(_) => Err(format!(
            "{client} failed against {} (exit {}): {}",
            inst.name,
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

/// Runs a whole bench and writes its results folder.
pub fn bench(o: &Options) -> Result<Results, String> {
    servers::preflight()?;
    // Ctrl-C, SIGTERM or SIGHUP: stop after the current run and clean up on the way out;
    // a panic (stderr a closed pipe: `bench ... 2>&1 | head`) removes the namespaces and
    // their servers before the process aborts.
    sys::catch_stop_signals();
    topo::clean_up_on_panic();
    let s = &o.scenario;
    let variants = s.variants();
    let kinds: Vec<Box<dyn servers::ServerKind>> = variants
        .iter()
        .map(|v| servers::kind(&v.kind))
        .collect::<Result<_, _>>()?;
    for k in &kinds {
        k.check()?;
    }
    let client_kinds = s.all_clients();
    let load_help = Command::new(&o.exe)
        .args(["load", "--help"])
        .output()
        .map(|x| String::from_utf8_lossy(&x.stdout).into_owned())
        .unwrap_or_default();
    clients::check(&client_kinds, &load_help)?;
    let bare_kinds: Vec<String> = client_kinds
        .iter()
        .filter(|c| bare::is_bare(c))
        .cloned()
        .collect();
    std::fs::create_dir_all(o.out.join("runs")).map_err(|e| format!("{}: {e}", o.out.display()))?;
    let out = std::fs::canonicalize(&o.out).map_err(|e| e.to_string())?;
    let site = out.join("site");
    eprintln!("bench {}: writing the site to {}", s.name, site.display());
    build_site(s, &site)?;
    let size_of = |path: &str| {
        std::fs::metadata(site.join(path.trim_start_matches('/'))).map_or(0, |m| m.len())
    };
    let points = s.points(&size_of);
    let prefix = format!("bwl{}", std::process::id() % 100_000);
    let pki = if s.has_tls() {
        eprintln!(
            "bench {}: HTTPS series: an ECDSA P-256 certificate for every server; {}",
            s.name,
            tls::ktls_note()
        );
        let p = tls::Pki::make(&out.join("tls"))?;
        // wrk's shim, built before any run.
        tls::shim(&out)?;
        Some(p)
    } else {
        None
    };
    let cpus = pin::for_scenario(s)?;
    if let Some(c) = &cpus {
        pin::pin_self(c)?;
        eprintln!(
            "bench {}: pinned: servers on CPU {}, the bench and its clients on CPU {}",
            s.name,
            pin::Cpus::list(&c.server),
            pin::Cpus::list(&c.client)
        );
    }
    let machine = procfs::machine();
    let k0 = procfs::cores();
    std::thread::sleep(std::time::Duration::from_secs(1));
    let background_busy = procfs::busy_between(&k0, &procfs::cores());
    eprintln!("bench {}: measuring the veth link", s.name);
    let link_bps = topo::veth_capacity_bps(&prefix, 1.0)?;
    eprintln!("  one TCP stream over veth: {:.2} Gbit/s", link_bps / 1e9);
    let probe = match points.iter().find(|p| !p.path.is_empty()) {
        Some(p) => p.path.clone(),
        None => "/index.html".into(),
    };
    let search = match &s.search {
        Some(spec) => {
            let named: Vec<(String, &dyn servers::ServerKind)> = variants
                .iter()
                .zip(&kinds)
                .filter(|(v, _)| v.runner.is_none())
                .map(|(v, k)| (v.name.clone(), k.as_ref()))
                .collect();
            Some(search::run(
                o,
                spec,
                &named,
                &points,
                &search::Where {
                    site: &site,
                    prefix: &prefix,
                    probe: &probe,
                    pki: pki.as_ref(),
                },
            )?)
        }
        None => None,
    };
    // One slot per server under test; a searched peer may run a different configuration
    // per series: one instance for each configuration chosen.
    let mut slots: Vec<Slot> = Vec::new();
    let mut net = 0u8;
    for (i, k) in kinds.iter().enumerate() {
        let work = out.join("servers");
        std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
        let mut tunings: Vec<Option<servers::Tuning>> = Vec::new();
        let mut by_series = Vec::new();
        for se in &s.series {
            let t = search
                .as_ref()
                .filter(|_| variants[i].runner.is_none())
                .and_then(|x| x.choice(&variants[i].name, &se.name))
                .cloned();
            let at = match tunings.iter().position(|x| *x == t) {
                Some(at) => at,
                None => {
                    tunings.push(t);
                    tunings.len() - 1
                }
            };
            by_series.push((se.name.clone(), at));
        }
        let mut insts = Vec::new();
        for (j, t) in tunings.into_iter().enumerate() {
            net += 1;
            let ctx = servers::StartCtx {
                tag: format!(
                    "{prefix}{i}{}",
                    if j == 0 {
                        String::new()
                    } else {
                        format!("x{j}")
                    }
                ),
                net,
                site: &site,
                cores: s.cores,
                work: &work,
                exe: &o.exe,
                probe: &probe,
                runner: variants[i].runner.clone(),
                tuning: t.clone(),
                tls: pki.as_ref(),
            };
            eprintln!(
                "bench {}: starting {}{}",
                s.name,
                variants[i].name,
                t.as_ref()
                    .map_or(String::new(), |t| format!(" [{}]", k.describe_tuned(t)))
            );
            let mut inst = pin::start(k.as_ref(), &ctx, cpus.as_ref())?;
            if !bare_kinds.is_empty() {
                bare::attach(&mut inst, &ctx.tag, net, &bare_kinds)?;
                // The socket clients' way to it now crosses the bridge: still there?
                let url = inst.url(&probe);
                servers::wait_ready(&mut inst, &url, 5)?;
            }
            inst.pause();
            insts.push(inst);
            if sys::stop_requested() {
                return Err("interrupted".into());
            }
        }
        slots.push(Slot { insts, by_series });
    }
    // Every (server, client) pair that fits a point is one entry of its rotation.
    let n_slots = slots.len();
    let series_clients: Vec<(String, Vec<String>)> = s
        .series
        .iter()
        .map(|x| (x.name.clone(), s.clients_for(&x.name)))
        .collect();
    let pairs = |p: &Point| -> Vec<(usize, &str)> {
        let cs = series_clients
            .iter()
            .find(|(n, _)| *n == p.series)
            .map(|(_, c)| c.as_slice())
            .unwrap_or(&[]);
        (0..n_slots)
            .flat_map(|j| cs.iter().map(move |c| (j, c.as_str())))
            .filter(|(_, c)| clients::fits(c, p))
            .collect()
    };
    let total = s.rounds as usize * points.iter().map(|p| pairs(p).len()).sum::<usize>();
    eprintln!(
        "bench {}: {} runs ({} rounds × {} points × {} servers × {} client kinds where they fit), about {:.0} s of load",
        s.name,
        total,
        s.rounds,
        points.len(),
        slots.len(),
        client_kinds.len(),
        s.load_seconds()
    );
    let mut runs = Vec::new();
    for round in 0..s.rounds {
        for (pi, p) in points.iter().enumerate() {
            let order = pairs(p);
            let n = order.len();
            for j in 0..n {
                // Rotate the order each round and point: A B C, B C A, ...
                if sys::stop_requested() {
                    return Err("interrupted; servers and namespaces removed".into());
                }
                let (slot, client) = order[(j + round as usize + pi) % n];
                let inst = slots[slot].for_series(&p.series);
                if inst.pausable {
                    inst.resume();
                    std::thread::sleep(std::time::Duration::from_millis(300));
                }
                let r = run_with(o, p, pi, inst, &site, round, client);
                inst.pause();
                let r = r?;
                eprintln!(
                    "  [{}/{}] round {} {:<48} {:<9} {:>9.0} fetches/s  p50 {:.3} ms  p99 {:.3} ms  server {:.1} µs/fetch  client {:.0}%{}",
                    runs.len() + 1,
                    total,
                    round + 1,
                    p.label(),
                    r.server,
                    r.report.fetches_per_sec,
                    r.report.first_response.p50_ms,
                    r.report.first_response.p99_ms,
                    table::per_fetch_us(r.server_cpu_secs, r.report.fetches),
                    r.client_cpu_secs / r.wall_secs.max(1e-9) * 100.0,
                    if r.report.errors_total > 0 {
                        format!("  errors {:?}", r.report.errors)
                    } else {
                        String::new()
                    }
                );
                runs.push(r);
            }
        }
    }
    let one_client: Vec<ServerInfo> = slots
        .iter()
        .zip(&variants)
        .zip(&kinds)
        .map(|((sl, v), k)| ServerInfo {
            name: v.name.clone(),
            label: match search
                .as_ref()
                .filter(|x| x.searched.iter().any(|y| y.server == v.name))
            {
                Some(x) => {
                    let per: Vec<String> = sl
                        .by_series
                        .iter()
                        .map(|(se, at)| match x.choice(&v.name, se) {
                            Some(t) => format!("`{se}`: {}", k.describe_tuned(t)),
                            None => format!("`{se}` (not searched): {}", sl.insts[*at].label),
                        })
                        .collect();
                    format!(
                        "the best configuration found per series (search below): {}",
                        per.join("; ")
                    )
                }
                None => sl.insts[0].label.clone(),
            },
            runner: v.runner.clone(),
        })
        .collect();
    let servers_info: Vec<ServerInfo> = client_kinds
        .iter()
        .flat_map(|c| {
            let several = client_kinds.len() > 1;
            one_client.iter().map(move |si| ServerInfo {
                name: clients::row_name(&si.name, c),
                label: if several {
                    format!("{} — client: {}", si.label, clients::describe(c))
                } else {
                    si.label.clone()
                },
                runner: si.runner.clone(),
            })
        })
        .collect();
    drop(slots);
    let results = Results {
        name: s.name.clone(),
        title: s.title.clone(),
        command: o.command.clone(),
        machine,
        link_bps,
        rounds: s.rounds,
        cores: s.cores,
        servers: servers_info,
        points,
        runs,
        background_busy,
        search,
        pinned: cpus,
        ktls: pki.as_ref().map(|_| tls::ktls_note().to_string()),
        notes: s
            .notes
            .iter()
            .cloned()
            .chain(pki.as_ref().map(|_| tls_note()))
            .chain((!s.servers.iter().any(|n| n == "bareweb-qemu") && s.runners.is_empty()).then(|| {
                "bareweb under QEMU (the bare-machine kernel, `bareweb run`) is not in this scenario; add \
                 \"bareweb-qemu\" to its servers to include it."
                    .to_string()
            }))
            .collect(),
    };
    write_outputs(&results, &out, o.doc.as_deref())?;
    Ok(results)
}

/// The report's note on an HTTPS run: what every server was given, and kTLS.
fn tls_note() -> String {
    format!(
        "HTTPS series: every server serves the same self-signed ECDSA P-256 certificate on port 443, TLS 1.3 only, \
         with its session resumption on: bareweb `--tls-min 1.3` (rustls, its own RustCrypto provider, session tickets); \
         nginx `ssl_session_cache shared:SSL:10m`, `ssl_session_tickets on`; lighttpd mod_openssl (tickets); h2o \
         `ssl-session-resumption: mode: all` (cache and tickets); the peers and wrk on {}. wrk keeps its TLS session \
         from one connection to the next (OpenSSL's SSL_clear after a clean shutdown), so a connection per fetch \
         resumes where the server gave a ticket; `tls = \"full\"` series make it forget the session (bench::tls). \
         {}: nginx, lighttpd and h2o encrypt in user space, as bareweb does.",
        servers::version(&["openssl", "version"]),
        tls::ktls_note()
    )
}

/// A server under test: its instance, or one per configuration a search chose for it.
struct Slot {
    insts: Vec<servers::Instance>,
    /// Series name → which instance serves it.
    by_series: Vec<(String, usize)>,
}

impl Slot {
    fn for_series(&mut self, series: &str) -> &mut servers::Instance {
        let at = self
            .by_series
            .iter()
            .find(|(s, _)| s == series)
            .map_or(0, |(_, i)| *i);
        &mut self.insts[at]
    }
}

/// results.json, report.md, PNGs, and the doc section.
pub fn write_outputs(r: &Results, out: &Path, doc: Option<&Path>) -> Result<(), String> {
    let json = serde_json::to_string_pretty(r).map_err(|e| e.to_string())?;
    std::fs::write(out.join("results.json"), json).map_err(|e| e.to_string())?;
    let pngs = plot::all(r, out)?;
    let md = table::report(r, &pngs, "");
    std::fs::write(out.join("report.md"), &md).map_err(|e| e.to_string())?;
    // A closed stdout (`bench ... | head`) is not an error of the bench.
    let _ = writeln!(std::io::stdout(), "{md}");
    if let Some(doc) = doc {
        doc::update(doc, r, out, &pngs)?;
        eprintln!("bench {}: updated {}", r.name, doc.display());
    }
    eprintln!("bench {}: results in {}", r.name, out.display());
    Ok(())
}
