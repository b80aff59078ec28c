//! Scenario option `pin = true`: each side of a run on cores of its own, and the server
//! charged with its own receive path ("who pays for what" in
//! docs/perf/log/2026-11-25-bare-client-links.md).
//!
//! On the software links of one machine the sender does the receiver's work: a client's
//! write to a TAP or a veth runs the kernel server's IP and TCP receive in the client's
//! system call (the softirq that follows it), so a kernel server's process CPU leaves its
//! receive path out, while bareweb's includes its whole stack. A server machine with a
//! NIC does that work on the server's cores (the NIC's interrupt lands there). This
//! module makes the bench do the same:
//!
//! - the bench and every client it starts run on the *client CPUs* (the first
//!   `cpus − cores`), each server's processes and threads on the *server CPUs* (the
//!   last `cores`);
//! - a kernel server's receive processing is steered to the server CPUs with RPS on its
//!   end of the veth (`rps_cpus`): the softirq that runs its IP and TCP receive runs
//!   there, in the server's context or the idle loop's;
//! - a veth whose frames XDP takes (bareweb-xdp's, the bare-xdp client's) gets threaded
//!   NAPI (`/sys/class/net/DEV/threaded`), its NAPI threads pinned to the CPUs of the side
//!   that receives, and counted in that side's CPU;
//! - a server's CPU per fetch is then the *busy time of the server CPUs* over the run
//!   (the wall time less their idle, iowait and steal time, which NO_HZ measures at idle
//!   entry and exit rather than at the tick: [`busy_secs`]): everything the server costs,
//!   wherever the kernel ran it, and nothing of the client's. Its process CPU is kept
//!   beside it (`server_proc_secs`).
//!
//! The price: the busy time of a core counts whatever else runs there, so the figure
//! wants a quiet machine (the report gives the cores' background busy), and RPS adds an
//! inter-processor interrupt per burst to a kernel server's latency, as a NIC's interrupt
//! would. Affinity and sysfs writes go through `taskset` (util-linux) and `ip netns exec`.

use super::topo::sh;

/// Which CPUs the servers and the clients run on.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Cpus {
    pub server: Vec<usize>,
    pub client: Vec<usize>,
}

impl Cpus {
    /// The last `cores` of `cpus` for the server, the rest for the client and the bench.
    pub fn split(cpus: usize, cores: u32) -> Result<Cpus, String> {
        let cores = cores as usize;
        if cores == 0 || cpus <= cores {
            return Err(format!(
                "pin = true needs more CPUs than the server's cores ({cpus} CPUs, cores = {cores}): \
                 the client needs one of its own"
            ));
        }
        Ok(Cpus {
            server: (cpus - cores..cpus).collect(),
            client: (0..cpus - cores).collect(),
        })
    }

    pub fn list(cpus: &[usize]) -> String {
        cpus.iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The hexadecimal mask sysfs takes (`rps_cpus`).
    pub fn mask(cpus: &[usize]) -> String {
        // Up to 64 CPUs in one word; sysfs takes comma-separated 32-bit groups above that.
        let m = cpus
            .iter()
            .filter(|&&c| c < 64)
            .fold(0u64, |m, &c| m | 1 << c);
        format!("{m:x}")
    }
}

/// How a server's receive path reaches its CPUs.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Steer {
    /// Nothing to steer: the server reads its frames itself (bareweb on a TAP, QEMU).
    #[default]
    None,
    /// A kernel server: RPS on `dev` in namespace `ns`.
    Rps { ns: String, dev: String },
    /// AF_XDP on a veth: threaded NAPI on `dev` in `ns`.
    Napi { ns: String, dev: String },
}

/// The scenario's CPUs: `Some` when it pins.
pub fn for_scenario(s: &super::scenario::Scenario) -> Result<Option<Cpus>, String> {
    if !s.pin {
        return Ok(None);
    }
    Cpus::split(online_cpus(), s.cores).map(Some)
}

/// The machine's CPUs (from /proc/stat), whatever this process's affinity: once the bench
/// has pinned itself to the client CPUs, `available_parallelism` counts only those.
pub fn online_cpus() -> usize {
    match not_busy().len() {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
}

/// Starts a server of `kind`; in a pinned scenario, moves its processes and threads to
/// the server CPUs and steers its receive path there.
pub fn start(
    kind: &dyn super::servers::ServerKind,
    ctx: &super::servers::StartCtx,
    cpus: Option<&Cpus>,
) -> Result<super::servers::Instance, String> {
    let mut inst = kind.start(ctx)?;
    if let Some(cpus) = cpus {
        pin_pids(&inst.pids(), &cpus.server)?;
        inst.napi = steer(&inst.steer, &cpus.server)?;
        inst.pinned = Some(cpus.clone());
    }
    Ok(inst)
}

/// Pins every thread of `pids` to `cpus`.
pub fn pin_pids(pids: &[i32], cpus: &[usize]) -> Result<(), String> {
    let list = Cpus::list(cpus);
    for p in pids {
        let pid = p.to_string();
        // A process that has just exited is not an error of the bench.
        if std::path::Path::new(&format!("/proc/{pid}")).exists() {
            sh(&["taskset", "-a", "-p", "-c", &list, &pid])?;
        }
    }
    Ok(())
}

/// Runs the bench (and so every client it starts from now on) on the client CPUs.
pub fn pin_self(cpus: &Cpus) -> Result<(), String> {
    pin_pids(&[std::process::id() as i32], &cpus.client)
}

/// Runs a shell line in namespace `ns` (its own /sys: `ip netns exec` mounts it).
fn in_ns(ns: &str, line: &str) -> Result<(), String> {
    sh(&["ip", "netns", "exec", ns, "sh", "-c", line]).map(drop)
}

/// Steers a started server's receive path to `cpus`; the NAPI threads found (their
/// PIDs count as the server's).
pub fn steer(s: &Steer, cpus: &[usize]) -> Result<Vec<i32>, String> {
    match s {
        Steer::None => Ok(Vec::new()),
        Steer::Rps { ns, dev } => {
            let mask = Cpus::mask(cpus);
            in_ns(
                ns,
                &format!(
                    "for f in /sys/class/net/{dev}/queues/rx-*/rps_cpus; do echo {mask} > $f; done"
                ),
            )?;
            Ok(Vec::new())
        }
        Steer::Napi { ns, dev } => {
            in_ns(ns, &format!("echo 1 > /sys/class/net/{dev}/threaded"))?;
            let pids = napi_threads(dev);
            if pids.is_empty() {
                return Err(format!(
                    "pin: no NAPI thread for {dev} after `threaded` was set (no XDP or GRO on it?)"
                ));
            }
            pin_pids(&pids, cpus)?;
            Ok(pids)
        }
    }
}

/// A bare-xdp client's veth end: NAPI kept on (GRO requested, so it outlives each run's
/// XDP program), threaded, its thread pinned to `cpus`.
pub fn client_napi(ns: &str, dev: &str, cpus: &[usize]) -> Result<(), String> {
    sh(&["ip", "netns", "exec", ns, "ethtool", "-K", dev, "gro", "on"])?;
    steer(
        &Steer::Napi {
            ns: ns.into(),
            dev: dev.into(),
        },
        cpus,
    )
    .map(drop)
}

/// The kernel threads of `dev`'s threaded NAPI instances (`napi/DEV-ID`).
pub fn napi_threads(dev: &str) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let e = e.ok()?;
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
        is_napi_of(comm.trim_end(), dev).then_some(pid)
    })
    .collect()
}

/// Whether a thread name is one of `dev`'s NAPI threads: `napi/DEV-ID`, cut to 15 bytes.
fn is_napi_of(comm: &str, dev: &str) -> bool {
    let full = format!("napi/{dev}-");
    let Some(rest) = comm.strip_prefix("napi/") else {
        return false;
    };
    if comm.len() < 15 {
        rest.strip_prefix(dev)
            .and_then(|r| r.strip_prefix('-'))
            .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
    } else {
        // Cut by the kernel's 16-byte comm: compare what is left.
        full.starts_with(comm) || comm.starts_with(&full)
    }
}

/// Seconds the `cpus` were busy over `wall` seconds between two [`not_busy`] readings:
/// the wall time less the time they idled, waited for I/O or were stolen by the
/// hypervisor. With NO_HZ (Debian's kernels) /proc/stat's idle and iowait are measured
/// from idle entry and exit, not sampled at the tick as user, system and softirq are; a
/// server that sleeps and wakes thousands of times a second can fall between ticks, so
/// busy time is taken as what was not idle.
pub fn busy_secs(a: &[u64], b: &[u64], cpus: &[usize], wall: f64) -> f64 {
    cpus.iter()
        .map(|&c| {
            let idle = b
                .get(c)
                .copied()
                .unwrap_or(0)
                .saturating_sub(a.get(c).copied().unwrap_or(0));
            (wall - idle as f64 / crate::sys::clk_tck()).max(0.0)
        })
        .sum()
}

/// Per CPU, its idle, iowait and steal time so far (/proc/stat, in clock ticks).
pub fn not_busy() -> Vec<u64> {
    std::fs::read_to_string("/proc/stat")
        .map(|s| parse_ticks(&s, &[3, 4, 7]))
        .unwrap_or_default()
}

/// Per CPU, the time the hypervisor stole from it so far (/proc/stat, in clock ticks).
/// Kept beside [`busy_secs`]: a process's CPU time is measured by the scheduler's clock,
/// which runs on while the hypervisor has the CPU, so on a guest whose host is busy a
/// server's process CPU can exceed its CPU's busy time by the steal.
pub fn stolen() -> Vec<u64> {
    std::fs::read_to_string("/proc/stat")
        .map(|s| parse_ticks(&s, &[7]))
        .unwrap_or_default()
}

/// Seconds stolen from `cpus` between two [`stolen`] readings.
pub fn stolen_secs(a: &[u64], b: &[u64], cpus: &[usize]) -> f64 {
    cpus.iter()
        .map(|&c| {
            b.get(c)
                .copied()
                .unwrap_or(0)
                .saturating_sub(a.get(c).copied().unwrap_or(0)) as f64
                / crate::sys::clk_tck()
        })
        .sum()
}

#[cfg(test)]
fn parse_not_busy(stat: &str) -> Vec<u64> {
    parse_ticks(stat, &[3, 4, 7])
}

/// Per CPU line of /proc/stat, the sum of the fields at `fields` (0 = user).
fn parse_ticks(stat: &str, fields: &[usize]) -> Vec<u64> {
    stat.lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .map(|l| {
            let v: Vec<u64> = l
                .split_whitespace()
                .skip(1)
                .map(|x| x.parse().unwrap_or(0))
                .collect();
            // user nice system idle iowait irq softirq steal guest guest_nice
            fields.iter().map(|&i| v.get(i).copied().unwrap_or(0)).sum()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpus_split_server_last() {
        let c = Cpus::split(2, 1).unwrap();
        assert_eq!(c.server, vec![1]);
        assert_eq!(c.client, vec![0]);
        assert_eq!(Cpus::mask(&c.server), "2");
        let c = Cpus::split(8, 3).unwrap();
        assert_eq!(Cpus::list(&c.server), "5,6,7");
        assert_eq!(Cpus::mask(&c.server), "e0");
        assert!(Cpus::split(2, 2).is_err());
        assert!(Cpus::split(1, 1).is_err());
    }

    #[test]
    fn napi_thread_names() {
        assert!(is_napi_of("napi/bw3b-8193", "bw3b"));
        assert!(!is_napi_of("napi/bw3b-8193", "bw3"));
        assert!(!is_napi_of("napi/bw3bx-8193", "bw3b"));
        assert!(!is_napi_of("kworker/0:1", "bw3b"));
        // Cut to 15 bytes by the kernel.
        assert!(is_napi_of("napi/abcdefgh-1", "abcdefgh"));
        assert!(is_napi_of("napi/abcdefghij", "abcdefghijkl"));
        assert!(!is_napi_of("napi/abcdefghij", "abcdefgXij"));
    }

    #[test]
    fn busy_is_wall_time_less_idle_iowait_and_steal() {
        let stat = "cpu  10 10 10 10 10 10 10 10 0 0\n\
                    cpu0 1 2 3 100 5 6 7 50 0 0\n\
                    cpu1 10 0 0 900 0 0 0 0 0 0\nintr 5\n";
        assert_eq!(parse_not_busy(stat), vec![100 + 5 + 50, 900]);
        assert_eq!(parse_ticks(stat, &[7]), vec![50, 0]);
        let hz = crate::sys::clk_tck();
        assert!((stolen_secs(&[0, 0], &[hz as u64, 7], &[0]) - 1.0).abs() < 1e-9);
        let hz = crate::sys::clk_tck();
        // CPU 1 idle a quarter of 2 s: busy 1.5 s; CPU 0 idle all along: 0.
        let idle = (hz / 2.0) as u64;
        let s = busy_secs(&[0, 0], &[idle, idle], &[1], 2.0);
        assert!((s - 1.5).abs() < 1e-9, "{s}");
        assert_eq!(busy_secs(&[0, 0], &[(3.0 * hz) as u64, 0], &[0], 2.0), 0.0);
        assert!((busy_secs(&[0, 0], &[idle, idle], &[0, 1], 2.0) - 3.0).abs() < 1e-9);
    }
}
