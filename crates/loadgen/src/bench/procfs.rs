//! What the bench reads from /proc: CPU time of a process tree, per-core busy time, and
//! the machine's description for the report.

use serde::{Deserialize, Serialize};

use crate::sys;

/// (pid, ppid, utime + stime in ticks) of every process.
fn all_procs() -> Vec<(i32, i32, u64)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if let Some((ppid, t)) = stat(pid) {
            out.push((pid, ppid, t));
        }
    }
    out
}

/// ppid and utime+stime (ticks) of `pid` from /proc/PID/stat.
fn stat(pid: i32) -> Option<(i32, u64)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let rest = &s[s.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ppid = f.get(1)?.parse().ok()?;
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some((ppid, utime + stime))
}

/// `root` and all its descendants.
pub fn tree(root: i32) -> Vec<i32> {
    let procs = all_procs();
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        out.extend(
            procs
                .iter()
                .filter(|(_, pp, _)| *pp == p)
                .map(|(c, _, _)| *c),
        );
        i += 1;
    }
    out
}

/// CPU seconds (user + system) used so far by `pids` (those still alive).
pub fn cpu_secs(pids: &[i32]) -> f64 {
    let ticks: u64 = pids.iter().filter_map(|&p| stat(p)).map(|(_, t)| t).sum();
    ticks as f64 / sys::clk_tck()
}

/// Per-core (busy, total) ticks from /proc/stat.
pub fn cores() -> Vec<(u64, u64)> {
    let Ok(s) = std::fs::read_to_string("/proc/stat") else {
        return Vec::new();
    };
    s.lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .map(|l| {
            let v: Vec<u64> = l
                .split_whitespace()
                .skip(1)
                .filter_map(|x| x.parse().ok())
                .collect();
            let total: u64 = v.iter().take(8).sum();
            let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
            (total - idle.min(total), total)
        })
        .collect()
}

/// Busy fraction per core between two [`cores`] readings.
pub fn busy_between(a: &[(u64, u64)], b: &[(u64, u64)]) -> Vec<f64> {
    a.iter()
        .zip(b)
        .map(|(x, y)| {
            let dt = y.1.saturating_sub(x.1);
            if dt == 0 {
                0.0
            } else {
                y.0.saturating_sub(x.0) as f64 / dt as f64
            }
        })
        .collect()
}

/// The machine a bench ran on.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Machine {
    pub cpu_model: String,
    pub cpus: usize,
    pub mem_gib: f64,
    pub kernel: String,
    pub date: String,
    pub virtualised: bool,
}

pub fn machine() -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let cpus = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    let virtualised = cpuinfo
        .lines()
        .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"));
    let mem_gib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| {
                    l.split_whitespace()
                        .nth(1)
                        .and_then(|v| v.parse::<f64>().ok())
                })
        })
        .map_or(0.0, |kb| kb / (1024.0 * 1024.0));
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let date = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    Machine {
        cpu_model,
        cpus,
        mem_gib,
        kernel,
        date,
        virtualised,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_is_seen() {
        let me = std::process::id() as i32;
        assert!(tree(me).contains(&me));
        let t0 = cpu_secs(&[me]);
        let mut x = 0u64;
        for i in 0..50_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(cpu_secs(&[me]) >= t0);
        let c = cores();
        assert!(!c.is_empty());
        assert!(busy_between(&c, &cores())
            .iter()
            .all(|b| (0.0..=1.0).contains(b)));
        let m = machine();
        assert!(m.cpus >= 1 && !m.kernel.is_empty());
    }
}
