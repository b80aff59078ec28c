//! `bareweb load --udp`: the load generator for the UDP paper's stateless UDP protocol, with
//! the paper's parameters (`--frequency F --maxreq M`: M requests every F quarter
//! milliseconds), a plain `--rate`, or a closed loop (`--parallel N`). Over ordinary
//! sockets ([`bareweb_loadgen::udp::load`]), or, with `--tap`, as the bare client: the
//! engine's own frames on a TAP of its own, no OS stack in the path.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use bareweb_engine::udp::fetch::Timing;
use bareweb_engine::udp::load::{Config, Load, Schedule};
use bareweb_loadgen::udp::load::{UdpLoadConfig, UdpUrl};
use bareweb_loadgen::udp::{self as bwudp, report::UdpReport};

use crate::load_common::{client_mac, open_tap, LoadArgs};

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
        if a.verify.len() > 1 {
            return Err("--verify: the UDP client checks against one directory".into());
        }
        let expect = match a.verify.first() {
            Some(dir) => {
                let p = crate::util::site_file(dir, &path);
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
    let load = Config {
        schedule: sched,
        slots: slots(a, &sched),
        requests: a.fetches,
        timing: Timing {
            rto_ns: rto,
            rto_max_ns: rto.max(1_000_000_000),
            tries: a.udp.udp_tries,
        },
    };
    if let Some(tap) = &a.udp.tap {
        let report = if a.udp.kernel {
            kernel(a, tap, target, urls, load)?
        } else {
            bare(a, tap, target, urls, load)?
        };
        return emit(a, &report);
    }
    let cfg = UdpLoadConfig {
        target,
        urls,
        load,
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

/// The bare client on TAP `tap`: the engine's own frames, polled by this thread, which
/// sleeps in ppoll on the TAP between events (microsecond timeouts).
fn bare(
    a: &LoadArgs,
    tap: &str,
    target: bwudp::UdpTarget,
    urls: Vec<UdpUrl>,
    load: Config,
) -> Result<UdpReport, String> {
    use bareweb_engine::nic::Clock;
    use bareweb_engine::udp::bare::{BareConfig, BareFetcher};
    use bareweb_host::SystemClock;

    if urls.iter().any(|u| u.expect.is_some()) {
        return Err(
            "--verify is for the socket client; the bare client checks sizes and statuses".into(),
        );
    }
    let link = crate::load_common::bare_link(a, client_mac(a), target.addr)?;
    let (mac, v6) = (link.mac, link.v6);
    let mut nic = open_tap(tap, mac)?;
    let mut client = BareFetcher::new(BareConfig {
        link,
        host: target.host.clone(),
        paths: urls.into_iter().map(|u| u.path).collect(),
        load,
        pad: !a.udp.no_pad,
    });
    let clock = SystemClock::new();
    let cpu0 = bareweb_loadgen::sys::thread_cpu_secs();
    let run_ns = (a.seconds * 1e9) as u64;
    let mut next_progress = 1_000_000_000u64;
    let mut last = (0u64, 0u64);
    loop {
        let now = clock.now_ns();
        let worked = client.poll(&mut nic, now);
        match client.load() {
            None if v6.is_some() && now > 10_000_000_000 => {
                return Err(format!(
                    "no neighbour advertisement from the next hop to {} on {tap} in 10 s (is the TAP on the server's link? --ip6 held by another node? off the link without a router: --gw6)",
                    target.addr.ip()
                ))
            }
            None if v6.is_none() && now > 3_000_000_000 => {
                return Err(format!(
                    "no ARP answer from {} on {tap} in 3 s (is the TAP on the server's link?)",
                    target.addr.ip()
                ))
            }
            Some(l) if !a.quiet && now >= next_progress => {
                let c = &l.counters;
                eprintln!(
                    "[{:6.1}s] {} requests done ({:.0}/s), {} in progress, {} lost packets",
                    now as f64 / 1e9,
                    c.completed,
                    (c.completed - last.1) as f64 / ((now - last.0) as f64 / 1e9),
                    l.busy(),
                    c.rerequested
                );
                last = (now, c.completed);
                next_progress += 1_000_000_000;
            }
            _ => {}
        }
        if client.started_ns() > 0 && now >= client.started_ns() + run_ns {
            client.stop_starting();
        }
        if client.finished() {
            break;
        }
        if !worked {
            let wake = client.next_wakeup().min(next_progress);
            let us = wake.saturating_sub(clock.now_ns()) / 1000;
            if us > 0 {
                bareweb_host::wake::wait_fds_us(&[nic.rx_fd()], us.min(10_000));
            }
        }
    }
    let l = client.load().expect("finished implies started");
    let elapsed = (clock.now_ns() - client.started_ns()) as f64 / 1e9;
    let mut r = UdpReport::from_counters("bare", &load.schedule, load.slots, &l.counters, elapsed);
    r.client_cpu_secs = bareweb_loadgen::sys::thread_cpu_secs() - cpu0;
    Ok(r)
}

/// The bare client as a kernel under QEMU on `tap`: the run's settings become the
/// kernel's `client=udp` words; its console's report line becomes the report.
fn kernel(
    a: &LoadArgs,
    tap: &str,
    target: bwudp::UdpTarget,
    urls: Vec<UdpUrl>,
    load: Config,
) -> Result<UdpReport, String> {
    use clap::Parser;

    #[derive(Parser)]
    struct Run {
        #[command(flatten)]
        run: crate::run::RunArgs,
    }
    // The client's address for the server's family: `ip=` (and `gw=`), or `ip6=` (and
    // the client's `gw6=`).
    let link = crate::load_common::bare_link(
        a,
        bareweb_engine::wire::EthernetAddress([0; 6]),
        target.addr,
    )?;
    let (mut addr_args, gw6) = match link.v6 {
        None => {
            let gw = link.gateway.map_or("none".to_string(), |g| g.to_string());
            let cidr = format!("{}/{}", link.ip, link.prefix_len);
            (
                vec!["--ip".to_string(), cidr, "--gw".into(), gw],
                String::new(),
            )
        }
        Some(v) => {
            let gw6 = v.gateway.map_or(String::new(), |g| format!(" gw6={g}"));
            (
                vec!["--ip6".to_string(), format!("{}/{}", v.ip, v.prefix_len)],
                gw6,
            )
        }
    };
    let dir = std::env::temp_dir().join(format!("bareweb-client-{}", std::process::id()));
    let site = dir.join("site");
    std::fs::create_dir_all(&site).map_err(|e| format!("{}: {e}", site.display()))?;
    std::fs::write(site.join("index.html"), b"bare client\n")
        .map_err(|e| format!("{}: {e}", site.display()))?;
    let paths: Vec<&str> = urls.iter().map(|u| u.path.as_str()).collect();
    let mut words = format!(
        "client=udp server={} paths={} requests={} seconds={} rto_ms={} tries={} pad={}",
        target.addr,
        paths.join(","),
        load.requests,
        a.seconds.ceil().max(1.0) as u64,
        (load.timing.rto_ns / 1_000_000).max(1),
        load.timing.tries,
        if a.udp.no_pad { "off" } else { "on" },
    );
    match load.schedule {
        Schedule::Paper { frequency, maxreq } => {
            words += &format!(
                " frequency={frequency} maxreq={maxreq} slots={}",
                load.slots
            )
        }
        Schedule::Interval { interval_ns } => {
            words += &format!(
                " rate={} slots={}",
                1_000_000_000 / interval_ns.max(1),
                load.slots
            )
        }
        Schedule::Closed => words += &format!(" parallel={}", load.slots),
    }
    words += &gw6;
    let mut argv = vec![
        "run".to_string(),
        site.display().to_string(),
        "--net".into(),
        format!("tap:{tap}"),
    ];
    argv.append(&mut addr_args);
    argv.extend(["--headless".into(), "--append".into(), words]);
    if let Some(m) = a.udp.mac {
        argv.push("--mac".into());
        argv.push(m.to_string());
    }
    let run = Run::try_parse_from(&argv).map_err(|e| format!("the kernel's settings: {e}"))?;
    if !a.quiet {
        eprintln!("bareweb: booting the bare client under QEMU on {tap}");
    }
    let limit = Duration::from_secs_f64(a.seconds + 120.0);
    let booted = crate::launch::boot_until_done(&run.run, limit);
    let _ = std::fs::remove_dir_all(&dir);
    let (status, console) = booted?;
    let Some(line) = console.lines().find(|l| l.starts_with("client: report ")) else {
        let tail: String = console
            .lines()
            .rev()
            .take(15)
            .collect::<Vec<_>>()
            .join("\n");
        return Err(format!(
            "the bare client gave no report (QEMU {status}); its console ended with:\n{tail}"
        ));
    };
    let kv: std::collections::HashMap<&str, u64> = line
        .split_whitespace()
        .skip(2)
        .filter_map(|w| {
            let (k, v) = w.split_once('=')?;
            Some((k, v.parse().ok()?))
        })
        .collect();
    let g = |k: &str| kv.get(k).copied().unwrap_or(0);
    let c = bareweb_engine::udp::load::Counters {
        started: g("started"),
        completed: g("completed"),
        failed_status: g("failed_status"),
        failed_timeout: g("failed_timeout"),
        failed_refused: g("failed_refused"),
        failed_other: g("failed_other"),
        skipped: g("skipped"),
        bytes: g("bytes"),
        packets: g("packets"),
        duplicates: g("duplicates"),
        rerequested: g("rerequested"),
        gets: g("gets"),
        timeouts: g("timeouts"),
        bounded: g("bounded"),
        bad: g("bad"),
        max_parallel: g("max_parallel"),
        time_sum_ns: g("time_sum_ns"),
        time_max_ns: g("time_max_ns"),
        ..Default::default()
    };
    let elapsed = g("elapsed_ns") as f64 / 1e9;
    let mut r = UdpReport::from_counters("bare kernel", &load.schedule, load.slots, &c, elapsed);
    // The histogram stays in the guest: its quantiles come in the report line.
    r.time_p50_ms = g("time_p50_ns") as f64 / 1e6;
    r.time_p99_ms = g("time_p99_ns") as f64 / 1e6;
    Ok(r)
}

/// Prints (and writes) a report; an error if no request completed.
fn emit(a: &LoadArgs, report: &UdpReport) -> Result<(), String> {
    crate::load_common::emit(a, report, &report.text())?;
    crate::load_common::none_good(report.started, report.completed)
}
