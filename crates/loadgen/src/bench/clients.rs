//! Client kinds: what makes the load. A scenario's `clients` lists them
//! (default: `load` only); every server is loaded by every client kind that fits the
//! point, in the same interleaved rounds, and each (server, client) pair is a row of its
//! own — `nginx` with `bareweb load`, `nginx+wrk` with wrk — whose ratios are against the
//! baseline server under the same client.
//!
//! - `load`: `bareweb load` on kernel sockets, one epoll thread (every plain HTTP point).
//! - `wrk`: wrk 4 (`-t1 -cN`, closed loop: parallel points only; a connection per request
//!   is `Connection: close`, which wrk answers by reconnecting). Its figures come from a
//!   Lua `done` hook that prints them as JSON: requests, bytes (heads included), errors by
//!   wrk's kinds, and its latency (request to whole response; wrk has no first-byte or
//!   connect time, so both latency columns carry it). The only client kind that speaks
//!   TLS: on an HTTPS point it runs with [`super::tls`]'s shim preloaded, which counts its
//!   handshakes (and resumed ones) and, for `tls = "full"`, makes each one full.
//! - `bare-tap`, `bare-xdp`: the bare HTTP load client (`bareweb load --tap` / `--xdp`: the
//!   engine's own TCP, one thread) on a port of its own bridged to the server's link
//!   ([`super::bare`], which also says who pays for what); every kind of point. Its
//!   `--json-out` report is the socket client's [`Report`], read by the same code.
//! - `bare-tap-spin`: `bare-tap` polling its TAP while fetches are in flight (`--spin-us`)
//!   instead of sleeping between frames (docs/perf/log/2026-11-27-spin.md).

use std::path::Path;
use std::process::Command;

use super::scenario::{Kind, Point};
use crate::hist::Summary;
use crate::report::Report;

/// `bareweb load` on sockets: the default client.
pub const LOAD: &str = "load";
/// wrk.
pub const WRK: &str = "wrk";

pub use super::bare::{BARE_TAP, BARE_TAP_SPIN, BARE_XDP};

/// Every client kind this harness knows.
pub const KNOWN: &[&str] = &[LOAD, WRK, BARE_TAP, BARE_TAP_SPIN, BARE_XDP];

/// Checks a scenario's client list: known, and installed (`help`: the text of `bareweb
/// load --help`, which names the bare client's device options when it has them).
pub fn check(clients: &[String], help: &str) -> Result<(), String> {
    for c in clients {
        match c.as_str() {
            LOAD => {}
            BARE_TAP | BARE_TAP_SPIN | BARE_XDP => {
                let opt = match c.as_str() {
                    BARE_TAP => "--tap",
                    BARE_TAP_SPIN => "--spin-us",
                    _ => "--xdp",
                };
                if !help.contains(opt) {
                    return Err(format!(
                        "client kind {c}: this bareweb's `load` has no {opt} (the bare client)"
                    ));
                }
                if c == BARE_XDP && super::servers::which("ethtool", "ethtool").is_err() {
                    return Err(
                        "client kind bare-xdp: ethtool is not installed (apt-get install ethtool)"
                            .into(),
                    );
                }
            }
            WRK => {
                if !["/usr/bin/wrk", "/usr/local/bin/wrk"]
                    .iter()
                    .any(|p| Path::new(p).exists())
                {
                    return Err(
                        "client kind wrk: wrk is not installed (apt-get install wrk; cargo xtask setup does)"
                            .into(),
                    );
                }
            }
            other => {
                return Err(format!(
                    "unknown client kind {other:?} (known: {})",
                    KNOWN.join(", ")
                ))
            }
        }
    }
    Ok(())
}

/// The clients of a scenario (`load` when it names none).
pub fn of(clients: &[String]) -> Vec<String> {
    if clients.is_empty() {
        vec![LOAD.to_string()]
    } else {
        clients.to_vec()
    }
}

/// Whether `client` can make point `p`'s load.
pub fn fits(client: &str, p: &Point) -> bool {
    match client {
        WRK => p.kind == Kind::Parallel,
        _ if p.tls.is_on() => false,
        BARE_TAP | BARE_TAP_SPIN | BARE_XDP => super::bare::fits(p),
        _ => true,
    }
}

/// The row name of `server` loaded by `client`.
pub fn row_name(server: &str, client: &str) -> String {
    if client == LOAD {
        server.to_string()
    } else {
        format!("{server}+{client}")
    }
}

/// The client of a row name (`None`: `bareweb load`).
pub fn client_of(row: &str) -> Option<&str> {
    row.rsplit_once('+').map(|(_, c)| c)
}

/// The row to compare `row` with: the baseline server under the same client.
pub fn base_for(base: &str, row: &str) -> String {
    match client_of(row) {
        Some(c) => format!("{base}+{c}"),
        None => base.to_string(),
    }
}

/// What a client kind is, for the setup table.
pub fn describe(client: &str) -> &'static str {
    match client {
        WRK => "wrk 4 (`-t1 -cN`, one thread, kernel sockets)",
        BARE_TAP => "the bare client `bareweb load --tap` (the engine's TCP, one thread, a TAP bridged to the server's link)",
        BARE_TAP_SPIN => "the bare client `bareweb load --tap --spin-us 100` (as bare-tap, polling its TAP while fetches are in flight instead of sleeping)",
        BARE_XDP => "the bare client `bareweb load --xdp` (the engine's TCP, one thread, AF_XDP on a veth bridged to the server's link)",
        _ => "`bareweb load` (one epoll thread, kernel sockets)",
    }
}

const WRK_LUA: &str = r#"done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"duration_us":%d,"requests":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,' ..
    '"min_us":%d,"mean_us":%f,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d}\n',
    summary.duration, summary.requests, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency.min, latency.mean, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max))
end
"#;

#[derive(serde::Deserialize)]
struct WrkOut {
    duration_us: f64,
    requests: u64,
    bytes: u64,
    connect: u64,
    read: u64,
    write: u64,
    status: u64,
    timeout: u64,
    min_us: f64,
    mean_us: f64,
    p50_us: f64,
    p90_us: f64,
    p99_us: f64,
    max_us: f64,
}

/// The wrk command line for point `p` against `url` (`script`: the Lua hook's file,
/// written on first use in `dir`).
pub fn wrk_command(p: &Point, url: &str, timeout: f64, dir: &Path) -> Result<Vec<String>, String> {
    let script = dir.join("wrk-done.lua");
    if !script.exists() {
        std::fs::write(&script, WRK_LUA).map_err(|e| format!("{}: {e}", script.display()))?;
    }
    let mut a = vec![
        "wrk".to_string(),
        "-t1".into(),
        format!("-c{}", p.level.max(1.0) as u64),
        format!("-d{}s", p.seconds.max(1.0).round() as u64),
        "--timeout".into(),
        format!("{}s", timeout.max(1.0).round() as u64),
        "-s".into(),
        script.display().to_string(),
    ];
    if !p.keepalive {
        a.extend(["-H".into(), "Connection: close".into()]);
    }
    a.push(url.to_string());
    Ok(a)
}

/// Runs wrk in namespace `ns`; its figures as a [`Report`], and on an HTTPS point its
/// handshakes as the TLS shim counted them.
pub fn run_wrk(
    ns: &str,
    p: &Point,
    url: &str,
    timeout: f64,
    dir: &Path,
) -> Result<(Report, Option<super::tls::Handshakes>), String> {
    let args = wrk_command(p, url, timeout, dir)?;
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", ns]).args(&args);
    if p.tls.is_on() {
        cmd.env("LD_PRELOAD", super::tls::shim(dir)?).env(
            "BAREWEB_WRK_FULL",
            if p.tls == super::scenario::Tls::Full {
                "1"
            } else {
                "0"
            },
        );
    }
    let out = cmd.output().map_err(|e| format!("cannot start wrk: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "wrk failed against {url}: {}{}",
            text.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let hs = super::tls::handshakes(&String::from_utf8_lossy(&out.stderr));
    if p.tls.is_on() && hs.is_none() {
        return Err(format!(
            "wrk against {url}: no handshake count from the TLS shim (LD_PRELOAD): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok((wrk_report(&text, p)?, hs))
}

/// Reads the `done` hook's line out of wrk's output.
pub fn wrk_report(stdout: &str, p: &Point) -> Result<Report, String> {
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .ok_or_else(|| format!("wrk printed no figures: {}", stdout.trim()))?;
    let w: WrkOut =
        serde_json::from_str(line.trim()).map_err(|e| format!("wrk's figures {line:?}: {e}"))?;
    let secs = (w.duration_us / 1e6).max(1e-9);
    let ms = |us: f64| us / 1e3;
    let lat = Summary {
        count: w.requests,
        min_ms: ms(w.min_us),
        mean_ms: ms(w.mean_us),
        p50_ms: ms(w.p50_us),
        p90_ms: ms(w.p90_us),
        p99_ms: ms(w.p99_us),
        max_ms: ms(w.max_us),
    };
    let mut r = Report {
        mode: format!(
            "wrk -t1 -c{}, {}",
            p.level as u64,
            if p.keepalive {
                "keep-alive"
            } else {
                "Connection: close"
            }
        ) + match p.tls {
            super::scenario::Tls::Off => "",
            super::scenario::Tls::On => ", HTTPS",
            super::scenario::Tls::Full => ", HTTPS, session dropped before each connection",
        },
        elapsed_secs: secs,
        fetches_started: w.requests,
        fetches: w.requests,
        fetches_ok: w.requests.saturating_sub(w.status),
        fetches_per_sec: w.requests as f64 / secs,
        bytes: w.bytes,
        bytes_per_sec: w.bytes as f64 / secs,
        bytes_per_fetch: w.bytes as f64 / w.requests.max(1) as f64,
        first_response: lat,
        response: lat,
        timeouts: w.timeout,
        ..Report::default()
    };
    for (k, v) in [
        ("wrk_connect", w.connect),
        ("wrk_read", w.read),
        ("wrk_write", w.write),
        ("wrk_status", w.status),
        ("wrk_timeout", w.timeout),
    ] {
        if v > 0 {
            r.errors.insert(k.to_string(), v);
            r.errors_total += v;
        }
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(keepalive: bool) -> Point {
        Point {
            series: "s".into(),
            kind: Kind::Parallel,
            level: 16.0,
            path: "/4k".into(),
            size: 4096,
            keepalive,
            fetches: 0,
            seconds: 3.0,
            think_scale: 0.0,
            tls: super::super::scenario::Tls::Off,
        }
    }

    #[test]
    fn wrk_figures_become_a_report() {
        let out = "Running 3s test @ http://10.0.0.2/4k\n  1 threads and 16 connections\n\
                   {\"duration_us\":3000000,\"requests\":30000,\"bytes\":130000000,\"connect\":0,\"read\":2,\
                   \"write\":0,\"status\":0,\"timeout\":1,\"min_us\":50,\"mean_us\":400.5,\"p50_us\":380,\
                   \"p90_us\":600,\"p99_us\":1200,\"max_us\":9000}\n";
        let r = wrk_report(out, &point(true)).unwrap();
        assert_eq!(r.fetches, 30000);
        assert!((r.fetches_per_sec - 10000.0).abs() < 1e-6);
        assert!((r.response.p99_ms - 1.2).abs() < 1e-9);
        assert_eq!(r.errors_total, 3);
        assert_eq!(r.errors["wrk_read"], 2);
        assert!(wrk_report("no figures", &point(true)).is_err());
    }

    #[test]
    fn rows_pair_with_the_baseline_under_the_same_client() {
        assert_eq!(row_name("nginx", LOAD), "nginx");
        assert_eq!(row_name("bareweb-xdp", WRK), "bareweb-xdp+wrk");
        assert_eq!(base_for("nginx", "bareweb-xdp+wrk"), "nginx+wrk");
        assert_eq!(base_for("nginx", "bareweb-xdp"), "nginx");
        let c = wrk_command(&point(false), "http://x/", 5.0, &std::env::temp_dir()).unwrap();
        assert!(c.contains(&"Connection: close".to_string()) && c.contains(&"-c16".to_string()));
        assert!(fits(WRK, &point(true)));
        assert!(check(&["nope".into()], "").is_err());
    }

    #[test]
    fn bare_kinds_pair_and_fit() {
        assert_eq!(row_name("nginx", BARE_TAP), "nginx+bare-tap");
        assert_eq!(base_for("nginx", "bareweb-xdp+bare-xdp"), "nginx+bare-xdp");
        assert_eq!(client_of("bareweb-qemu+bare-tap"), Some(BARE_TAP));
        let mut p = point(false);
        assert!(fits(BARE_TAP, &p) && fits(BARE_XDP, &p));
        p.kind = Kind::Rate;
        assert!(fits(BARE_TAP, &p) && !fits(WRK, &p));
        p.kind = Kind::Sessions;
        assert!(fits(BARE_TAP, &p) && fits(BARE_XDP, &p) && !fits(WRK, &p));
        // HTTPS: wrk only (the other clients speak plain HTTP).
        let mut t = point(true);
        t.tls = super::super::scenario::Tls::On;
        assert!(fits(WRK, &t) && !fits(LOAD, &t) && !fits(BARE_TAP, &t) && !fits(BARE_XDP, &t));
        // A bareweb without the bare client (or without its AF_XDP mode) is refused up front.
        let help = "  --tap <NAME>  ...";
        assert!(check(&[BARE_TAP.into()], help).is_ok());
        let e = check(&[BARE_XDP.into()], help).unwrap_err();
        assert!(e.contains("--xdp"), "{e}");
        assert!(check(&[BARE_TAP.into()], "").is_err());
        // The polling kind pairs and fits as bare-tap does, and wants a client that polls.
        assert_eq!(
            base_for("nginx", "bareweb+bare-tap-spin"),
            "nginx+bare-tap-spin"
        );
        assert_eq!(client_of("bareweb+bare-tap-spin"), Some(BARE_TAP_SPIN));
        assert!(fits(BARE_TAP_SPIN, &p));
        let e = check(&[BARE_TAP_SPIN.into()], help).unwrap_err();
        assert!(e.contains("--spin-us"), "{e}");
        assert!(check(&[BARE_TAP_SPIN.into()], "  --tap <NAME>\n  --spin-us <US>").is_ok());
        let spin = format!("--spin-us {}", super::super::bare::SPIN_US);
        assert!(describe(BARE_TAP_SPIN).contains(&spin));
    }
}
