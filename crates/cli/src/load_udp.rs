//! `bareweb load --udp`: the load generator for paper 001's stateless UDP protocol, with
//! the paper's parameters (`--frequency F --maxreq M`: M requests every F quarter
//! milliseconds), a plain `--rate`, or a closed loop (`--parallel N`). Over ordinary
//! sockets ([`bareweb_loadgen::udp::load`]), or, with `--tap`, as the bare client: the
//! engine's own frames on a TAP of its own, no OS stack in the path.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use bareweb_engine::udp::client::Timing;
use bareweb_engine::udp::load::{Config, Load, Schedule};
use bareweb_loadgen::udp::load::{UdpLoadConfig, UdpUrl};
use bareweb_loadgen::udp::{self as bwudp, report::UdpReport};

use crate::load::LoadArgs;

/// The UDP protocol's load options (with `--udp`).
#[derive(clap::Args, Debug, Clone)]
pub struct UdpLoadArgs {
    /// Load paper 001's stateless UDP protocol: the URLs are bwudp://HOST[:PORT]/PATH.
    #[arg(long)]
    pub udp: bool,
    /// The paper's schedule: every F units of 1/4 ms, start --maxreq requests (9 and 8:
    /// 3,555 requests per second), 1 to 4000000.
    #[arg(long, value_name = "F", requires_all = ["udp", "maxreq"],
          value_parser = clap::value_parser!(u32).range(1..=4_000_000))]
    pub frequency: Option<u32>,
    /// Requests per --frequency period, 1 to 100000.
    #[arg(long, value_name = "M", requires_all = ["udp", "frequency"],
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub maxreq: Option<u32>,
    /// Seconds before a GET is sent again (doubling per timeout, up to 1 s).
    #[arg(long, default_value_t = 0.05, requires = "udp")]
    pub udp_rto: f64,
    /// Timeouts in a row without a new packet before a request is given up, 1 to 100.
    #[arg(long, default_value_t = 8, requires = "udp",
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub udp_tries: u32,
    /// Send initial GETs unpadded (the paper's client; a server with the amplification
    /// bound then answers an unproven address with the Get-Ack only).
    #[arg(long, requires = "udp")]
    pub no_pad: bool,
}

fn schedule(a: &LoadArgs) -> Result<Schedule, String> {
    match (a.udp.frequency, a.udp.maxreq, a.rate, a.parallel) {
        (Some(frequency), Some(maxreq), None, None) => Ok(Schedule::Paper { frequency, maxreq }),
        (None, None, Some(r), None) if r > 0.0 && r.is_finite() => Ok(Schedule::Interval {
            interval_ns: (1e9 / r).max(1.0) as u64,
        }),
        (None, None, Some(_), None) => Err("--rate must be a positive number".into()),
        (None, None, None, _) => Ok(Schedule::Closed),
        _ => Err("give one of --frequency/--maxreq, --rate or --parallel".into()),
    }
}

fn slots(a: &LoadArgs, s: &Schedule) -> usize {
    match (s, a.parallel, a.max_conns) {
        (Schedule::Closed, p, _) => p.unwrap_or(1),
        (_, _, Some(m)) => m,
        _ => 4096,
    }
}

/// The run's URLs: every one must be bwudp:// and name the same server.
fn urls(a: &LoadArgs, list: &[String]) -> Result<(bwudp::UdpTarget, Vec<UdpUrl>), String> {
    let (target, _) = bwudp::parse_url(&list[0])?;
    let mut out = Vec::new();
    for u in list {
        let (t, path) = bwudp::parse_url(u)?;
        if t.addr != target.addr {
            return Err(format!(
                "{u}: every URL must name {} (one server per run)",
                target.addr
            ));
        }
        let expect = match &a.verify {
            Some(dir) => {
                let clean = path.split(['?', '#']).next().unwrap_or("/");
                let mut p = dir.join(clean.trim_start_matches('/'));
                if clean.ends_with('/') {
                    p = p.join("index.html");
                }
                Some(std::fs::read(&p).map_err(|e| format!("--verify: {}: {e}", p.display()))?)
            }
            None => None,
        };
        out.push(UdpUrl { path, expect });
    }
    Ok((target, out))
}

pub fn load(a: &LoadArgs, list: Vec<String>) -> Result<(), String> {
    if list.is_empty() {
        return Err("no URL given".into());
    }
    if !(0.001..=10.0).contains(&a.udp.udp_rto) {
        return Err("--udp-rto must be from 0.001 to 10 seconds".into());
    }
    let sched = schedule(a)?;
    let (target, urls) = urls(a, &list)?;
    let rto = (a.udp.udp_rto * 1e9) as u64;
    let cfg = UdpLoadConfig {
        target,
        urls,
        load: Config {
            schedule: sched,
            slots: slots(a, &sched),
            requests: a.fetches,
            timing: Timing {
                rto_ns: rto,
                rto_max_ns: rto.max(1_000_000_000),
                tries: a.udp.udp_tries,
            },
        },
        seconds: a.seconds,
        pad: !a.udp.no_pad,
        progress_every: (!a.quiet).then_some(Duration::from_secs(1)),
    };
    let tty = std::io::stderr().is_terminal();
    let mut last = (0.0, 0u64);
    let mut progress = |t: f64, l: &Load| {
        let c = &l.counters;
        let rate = (c.completed - last.1) as f64 / (t - last.0).max(1e-9);
        last = (t, c.completed);
        let line = format!(
            "[{t:6.1}s] {} requests done ({rate:.0}/s), {} in progress, {} failed, {} lost packets",
            c.completed,
            l.busy(),
            c.failed_timeout + c.failed_refused + c.failed_other,
            c.rerequested
        );
        let mut e = std::io::stderr().lock();
        let _ = if tty {
            write!(e, "\r{line}   ")
        } else {
            writeln!(e, "{line}")
        };
    };
    let report = bareweb_loadgen::udp::load::run(&cfg, &mut progress)?;
    if tty && !a.quiet {
        eprintln!();
    }
    emit(a, &report)
}

/// Prints (and writes) a report.
pub fn emit(a: &LoadArgs, report: &UdpReport) -> Result<(), String> {
    let json = serde_json::to_string_pretty(report).map_err(|e| e.to_string())?;
    if let Some(f) = &a.json_out {
        std::fs::write(f, &json).map_err(|e| format!("{}: {e}", f.display()))?;
    }
    if a.json {
        println!("{json}");
    } else {
        print!("{}", report.text());
    }
    Ok(())
}
