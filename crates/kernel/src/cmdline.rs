//! The kernel command line: `ip=A.B.C.D[/N] gw=A.B.C.D|none port=N sched=imt|ist
//! tcbs=N log=access,stats`, and `crash=panic|fault` which makes the kernel fail on
//! purpose right after boot (the tests use it to prove that failures are reported and
//! stop QEMU).
//!
//! Defaults work under QEMU user networking (10.0.2.15/24, gateway 10.0.2.2, port 80).
//! A bad value is reported on the console and its default kept; an unknown key is
//! reported and ignored. Nothing here panics on any input.

use bareweb_engine::server::Sched;
use bareweb_engine::wire::Ipv4Address;

/// The settings the command line controls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Our address.
    pub ip: Ipv4Address,
    /// Prefix length of the link.
    pub prefix: u8,
    /// Router for off-link clients (QEMU's user-mode host is one).
    pub gateway: Option<Ipv4Address>,
    /// TCP port served.
    pub port: u16,
    /// HTTP scheduling policy.
    pub sched: Sched,
    /// Number of TCBs.
    pub tcbs: usize,
    /// Print an access log line per response on the console (slow: one VM exit a byte).
    pub log_access: bool,
    /// Print a counters line every second.
    pub log_stats: bool,
    /// Fail on purpose after boot (tests of the failure path).
    pub crash: Option<Crash>,
}

/// A deliberate failure, for tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crash {
    /// A Rust panic.
    Panic,
    /// A CPU exception (page fault on an unmapped address).
    Fault,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            ip: Ipv4Address([10, 0, 2, 15]),
            prefix: 24,
            gateway: Some(Ipv4Address([10, 0, 2, 2])),
            port: 80,
            sched: Sched::Imt,
            tcbs: 1024,
            log_access: false,
            log_stats: false,
            crash: None,
        }
    }
}

/// A word of the command line that was not understood.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Complaint<'a> {
    /// The `key=value` word.
    pub word: &'a str,
    /// What was wrong with it.
    pub why: &'static str,
}

fn parse_ip(s: &str) -> Option<Ipv4Address> {
    let mut a = [0u8; 4];
    let mut it = s.split('.');
    for b in a.iter_mut() {
        let p = it.next()?;
        if p.is_empty() || p.len() > 3 {
            return None;
        }
        *b = p.parse().ok()?;
    }
    if it.next().is_some() {
        return None;
    }
    Some(Ipv4Address(a))
}

/// Parses `line` over the defaults; calls `complain` for every word it cannot use.
pub fn parse<'a>(line: &'a str, complain: impl FnMut(Complaint<'a>)) -> Settings {
    parse_over(Settings::default(), line, complain)
}

/// Parses `line` over `base` (later words win). A leading word that is a path (GRUB
/// may pass the kernel's file name first) is skipped quietly.
pub fn parse_over<'a>(
    base: Settings,
    line: &'a str,
    mut complain: impl FnMut(Complaint<'a>),
) -> Settings {
    let mut s = base;
    for (i, word) in line.split_ascii_whitespace().enumerate() {
        if i == 0 && word.starts_with('/') && !word.contains('=') {
            continue;
        }
        let Some((k, v)) = word.split_once('=') else {
            complain(Complaint {
                word,
                why: "not key=value",
            });
            continue;
        };
        let ok = match k {
            "ip" => {
                let (ip, len) = v.split_once('/').unwrap_or((v, "24"));
                match (parse_ip(ip), len.parse::<u8>().ok().filter(|l| *l <= 32)) {
                    (Some(ip), Some(len)) => {
                        s.ip = ip;
                        s.prefix = len;
                        true
                    }
                    _ => false,
                }
            }
            "gw" => {
                if v == "none" {
                    s.gateway = None;
                    true
                } else if let Some(g) = parse_ip(v) {
                    s.gateway = Some(g);
                    true
                } else {
                    false
                }
            }
            "port" => match v.parse::<u16>() {
                Ok(p) if p != 0 => {
                    s.port = p;
                    true
                }
                _ => false,
            },
            "sched" => match v {
                "imt" => {
                    s.sched = Sched::Imt;
                    true
                }
                "ist" => {
                    s.sched = Sched::Ist;
                    true
                }
                _ => false,
            },
            "tcbs" => match v.parse::<usize>() {
                Ok(n) if (1..=1 << 20).contains(&n) => {
                    s.tcbs = n;
                    true
                }
                _ => false,
            },
            "log" => {
                let mut all = true;
                for item in v.split(',') {
                    match item {
                        "access" => s.log_access = true,
                        "stats" => s.log_stats = true,
                        "none" | "" => {}
                        _ => all = false,
                    }
                }
                all
            }
            "crash" => match v {
                "panic" => {
                    s.crash = Some(Crash::Panic);
                    true
                }
                "fault" => {
                    s.crash = Some(Crash::Fault);
                    true
                }
                _ => false,
            },
            _ => {
                complain(Complaint {
                    word,
                    why: "unknown key",
                });
                continue;
            }
        };
        if !ok {
            complain(Complaint {
                word,
                why: "bad value, default kept",
            });
        }
    }
    s
}
