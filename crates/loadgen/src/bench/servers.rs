//! Servers under test. Each kind knows how to start itself on the bench site inside its
//! own namespaces and returns an [`Instance`] (its process tree, where the client runs,
//! its address) that stops everything when dropped. Adding a kind is one
//! [`ServerKind`] impl and one line in [`kind`].
//!
//! Topology: a kernel server (nginx, lighttpd, h2o) runs in namespace `S`, the client in
//! namespace `C`, joined by a veth pair. bareweb on the host platform owns a TAP device in
//! `C` and runs its own TCP/IP on it; the client in `C` reaches it over the TAP. Either
//! way the client crosses one virtual link to the server. With a bare client kind in the
//! scenario that link's end in `C` ([`Instance::link`]) is put on a bridge with the bare
//! clients' own ports ([`super::bare`]).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub use super::peers::{H2o, Lighttpd, Nginx, Tuning};
use super::procfs;
use super::topo::{sh, veth, Netns};
use crate::sys;

/// Names accepted in a scenario's `servers`.
pub const KINDS: &[&str] = &[
    "bareweb",
    "bareweb-ip6",
    "bareweb-no-tso",
    "bareweb-qemu",
    "bareweb-xdp",
    "bareweb-baseline",
    "nginx",
    "nginx-nopush-off",
    "lighttpd",
    "h2o",
];

/// What a server needs to start.
pub struct StartCtx<'a> {
    /// Distinct per instance: names its namespaces and links, and its subnet 10.77.`net`.0/24.
    pub tag: String,
    pub net: u8,
    pub site: &'a Path,
    pub cores: u32,
    /// A directory for its configuration and logs.
    pub work: &'a Path,
    /// The bareweb binary.
    pub exe: &'a Path,
    /// A path that must answer 200 once the server is up.
    pub probe: &'a str,
    /// bareweb only: `serve --runner R --threads N` (the runner dimension of a scenario).
    pub runner: Option<(String, u32)>,
    /// A peer's configuration (nginx, lighttpd, h2o): one a search tries, or the one it
    /// chose; `None` is the kind's fixed default.
    pub tuning: Option<Tuning>,
    /// HTTPS on port 443 besides plain HTTP on 80, with this certificate ([`super::tls`]).
    pub tls: Option<&'a super::tls::Pki>,
}

pub trait ServerKind {
    fn name(&self) -> &'static str;
    /// Version and setup for the report, e.g. "nginx/1.22.1, 1 worker, veth".
    fn describe(&self, cores: u32) -> String;
    /// The same for one configuration of its knobs.
    fn describe_tuned(&self, t: &Tuning) -> String {
        let _ = t;
        self.describe(t.workers)
    }
    /// The configurations a search tries, given the worker counts to try (empty: the
    /// kind has no knobs to search); `tls`: every searched series is HTTPS, so knobs
    /// that TLS in user space makes moot (sendfile) are left out.
    fn tunings(&self, workers: &[u32], tls: bool) -> Vec<Tuning> {
        let _ = (workers, tls);
        Vec::new()
    }
    /// Whether the server can run here (binary installed).
    fn check(&self) -> Result<(), String>;
    fn start(&self, ctx: &StartCtx) -> Result<Instance, String>;
}

/// The server kind called `name`.
pub fn kind(name: &str) -> Result<Box<dyn ServerKind>, String> {
    match name {
        "bareweb" => Ok(Box::new(Bareweb {
            tso: true,
            baseline: false,
            ip6: false,
        })),
        // The same server, its load over IPv6: the same client against the same engine,
        // one address family against the other.
        "bareweb-ip6" => Ok(Box::new(Bareweb {
            tso: true,
            baseline: false,
            ip6: true,
        })),
        // Another build of bareweb (`BAREWEB_BASELINE=path/to/bareweb`), run side by side
        // with this one: a regression check of a change, old binary against new.
        "bareweb-baseline" => Ok(Box::new(Bareweb {
            tso: true,
            baseline: true,
            ip6: false,
        })),
        // Every TCP segment its own frame through the TAP (no segmentation offload): what
        // the offload gains, and the platform as a NIC without it sees it.
        "bareweb-no-tso" => Ok(Box::new(Bareweb {
            tso: false,
            baseline: false,
            ip6: false,
        })),
        "nginx" => Ok(Box::new(Nginx { nopush: true })),
        // bareweb on AF_XDP: `serve --xdp` on a veth between two namespaces.
        "bareweb-xdp" => Ok(Box::new(super::xdp::BarewebXdp)),
        // The same with tcp_nopush off: with small keep-alive responses TCP_CORK costs
        // nginx about half its throughput on this machine (docs/load.md).
        "nginx-nopush-off" => Ok(Box::new(Nginx { nopush: false })),
        "lighttpd" => Ok(Box::new(Lighttpd)),
        "h2o" => Ok(Box::new(H2o)),
        "bareweb-qemu" => Ok(Box::new(BarewebQemu)),
        other => Err(format!(
            "unknown server {other:?} (known: {})",
            KINDS.join(", ")
        )),
    }
}

/// A running server; dropping it stops its processes, then removes its namespaces.
pub struct Instance {
    pub kind: &'static str,
    /// Its name in the results: the kind, or `runner-threads` for a bareweb runner.
    pub name: String,
    pub label: String,
    pub client_ns: String,
    pub server_ip: String,
    /// Where the load goes instead of `server_ip` (`[fe80::…%25dev]`: `bareweb-ip6`).
    pub load_host: Option<String>,
    /// The device in the client namespace that leads to the server (a veth end or a TAP),
    /// which [`super::bare::attach`] bridges with the bare clients' ports.
    pub link: String,
    /// The bare clients' devices, once attached.
    pub bare: Option<super::bare::Links>,
    pub(super) child: Option<Child>,
    pub log: PathBuf,
    /// A URL path where the server reports its own per-core time split (bareweb's stats
    /// page), read before and after each run.
    pub stats_path: Option<&'static str>,
    /// Stopped (SIGSTOP) outside its own runs: a server that busy-polls a core (the
    /// bare-machine kernel under QEMU) would otherwise take that core from the others.
    pub pausable: bool,
    /// How its receive path is steered to its CPUs when the scenario pins ([`super::pin`]).
    pub steer: super::pin::Steer,
    /// The CPUs of a pinned scenario (`pin = true`), once pinned.
    pub pinned: Option<super::pin::Cpus>,
    /// Kernel threads doing its receive work (threaded NAPI), counted as its own.
    pub napi: Vec<i32>,
    // Dropped after the processes are gone (field order).
    pub(super) _namespaces: Vec<Netns>,
}

impl Instance {
    pub fn pid(&self) -> i32 {
        self.child.as_ref().map_or(0, |c| c.id() as i32)
    }

    /// The server's process and its descendants (workers).
    pub fn pids(&self) -> Vec<i32> {
        procfs::tree(self.pid())
    }

    /// [`Instance::pids`] and the kernel threads that do its receive work.
    pub fn cpu_pids(&self) -> Vec<i32> {
        let mut p = self.pids();
        p.extend(&self.napi);
        p
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.server_ip)
    }

    /// The URL the load goes to: [`url`](Self::url), or over IPv6 for `bareweb-ip6`.
    pub fn load_url(&self, path: &str) -> String {
        match &self.load_host {
            Some(h) => format!("http://{h}{path}"),
            None => self.url(path),
        }
    }

    /// The URL of point `p`: `https://` (port 443) for an HTTPS point.
    pub fn url_for(&self, p: &super::scenario::Point) -> String {
        if p.tls.is_on() {
            format!("https://{}{}", self.server_ip, p.path)
        } else {
            self.load_url(&p.path)
        }
    }

    /// Whether the server is still running.
    pub fn alive(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    fn signal_tree(&self, sig: sys::Signal) {
        for p in self.pids() {
            sys::kill(p, sig);
        }
    }

    /// Stops a pausable server's processes until [`Instance::resume`].
    pub fn pause(&self) {
        if self.pausable {
            self.signal_tree(sys::Signal::STOP);
        }
    }

    pub fn resume(&self) {
        if self.pausable {
            self.signal_tree(sys::Signal::CONT);
        }
    }

    fn stop(&mut self) {
        self.resume();
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pids = procfs::tree(child.id() as i32);
        sys::kill(child.id() as i32, sys::Signal::TERM);
        let end = Instant::now() + Duration::from_secs(3);
        while Instant::now() < end {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        for p in pids.iter().rev() {
            if std::path::Path::new(&format!("/proc/{p}")).exists() {
                sys::kill(*p, sys::Signal::KILL);
            }
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// One core's share of a run's wall time, as the server itself measured it (the
/// scheduling paper's task utilisation: RCV, HTTP, SEND, and Main = idle).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct CoreSplit {
    pub core: u32,
    pub role: String,
    pub rcv: f64,
    pub http: f64,
    pub send: f64,
    pub main: f64,
    /// Waiting for a lock or the team (bareweb's shared-server runners).
    #[serde(default)]
    pub lock: f64,
}

/// Raw per-core times from bareweb's stats JSON: (core, role, elapsed, rcv, http, send,
/// main, lock) ns; lock is 0 where the JSON has none.
type Times = Vec<(u32, String, [u64; 6])>;

impl Instance {
    /// The server's own per-core times now, if it reports them.
    pub fn stats(&self) -> Option<Times> {
        let path = self.stats_path?;
        let out = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.client_ns,
                "curl",
                "-s",
                "--max-time",
                "2",
            ])
            .arg(self.url(path))
            .output()
            .ok()?;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        let mut times = Vec::new();
        for c in v.get("cores")?.as_array()? {
            let n = |k: &str| c.get(k).and_then(serde_json::Value::as_u64);
            times.push((
                n("core")? as u32,
                c.get("role")
                    .and_then(|r| r.as_str())
                    .unwrap_or("")
                    .to_string(),
                [
                    n("elapsed_ns")?,
                    n("rcv_ns")?,
                    n("http_ns")?,
                    n("send_ns")?,
                    n("main_ns")?,
                    n("lock_ns").unwrap_or(0),
                ],
            ));
        }
        Some(times)
    }
}

/// Per-core shares between two [`Instance::stats`] readings. Rows that keep no time (a
/// runner's shared-server row) are left out.
pub fn split_between(a: &Times, b: &Times) -> Vec<CoreSplit> {
    a.iter()
        .zip(b)
        .filter(|(x, y)| x.0 == y.0 && y.2[0] > x.2[0])
        .map(|((core, role, x), (_, _, y))| {
            let d = |i: usize| y[i].saturating_sub(x[i]) as f64;
            let el = d(0).max(1.0);
            CoreSplit {
                core: *core,
                role: role.clone(),
                rcv: d(1) / el,
                http: d(2) / el,
                send: d(3) / el,
                main: d(4) / el,
                lock: d(5) / el,
            }
        })
        .collect()
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts `cmd` inside namespace `ns` with output to `log`, in a process group of its
/// own: lighttpd with several workers stops them with `kill(0, SIGTERM)`, which in the
/// bench's group stopped the bench itself (seen: a search "interrupted" after lighttpd's
/// two-process configuration).
pub(super) fn spawn_in(ns: &str, cmd: &[String], log: &Path) -> Result<Child, String> {
    use std::os::unix::process::CommandExt as _;
    let out = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    Command::new("ip")
        .args(["netns", "exec", ns])
        .args(cmd)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", cmd[0]))
}

/// Waits up to `secs` for the server's console to say its IPv6 link-local address
/// passed duplicate address detection; returns it.
fn wait_ipv6(inst: &mut Instance, secs: u64) -> Result<String, String> {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        let log = std::fs::read_to_string(&inst.log).unwrap_or_default();
        let found = log.lines().find_map(|l| {
            l.strip_prefix("bareweb: IPv6 fe80:")
                .and_then(|r| r.split_once(" on the link"))
                .map(|(a, _)| format!("fe80:{a}"))
        });
        if let Some(a) = found {
            return Ok(a);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(format!(
        "{}: no IPv6 link-local address within {secs} s (log {})",
        inst.name,
        inst.log.display()
    ))
}

/// Waits up to `secs` until `url` answers 200 from the client namespace.
pub(super) fn wait_ready(inst: &mut Instance, url: &str, secs: u64) -> Result<(), String> {
    let end = Instant::now() + Duration::from_secs(secs);
    let mut last = String::new();
    while Instant::now() < end {
        if !inst.alive() {
            let log = std::fs::read_to_string(&inst.log).unwrap_or_default();
            return Err(format!("{} exited at start:\n{}", inst.name, log.trim()));
        }
        let r = Command::new("ip")
            .args([
                "netns",
                "exec",
                &inst.client_ns,
                "curl",
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "--max-time",
                "1",
                // HTTPS: the bench's own self-signed certificate.
                "-k",
                url,
            ])
            .output();
        if let Ok(o) = &r {
            last = String::from_utf8_lossy(&o.stdout).into_owned();
        }
        if r.is_ok_and(|o| o.stdout == b"200") {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let why = match last.as_str() {
        "403" => " (403: its worker may not read the site: is a folder above --out closed to other users?)",
        "000" | "" => " (no answer at all)",
        _ => "",
    };
    Err(format!(
        "{} did not answer 200 at {url} within 15 s: last answer {last:?}{why} (log {})",
        inst.name,
        inst.log.display()
    ))
}

pub(super) fn version(cmd: &[&str]) -> String {
    Command::new(cmd[0])
        .args(&cmd[1..])
        .output()
        .map(|o| {
            let mut s = String::from_utf8_lossy(&o.stdout).to_string();
            s.push_str(&String::from_utf8_lossy(&o.stderr));
            s.lines().next().unwrap_or("").trim().to_string()
        })
        .unwrap_or_default()
}

pub(crate) fn which(bin: &str, pkg: &str) -> Result<(), String> {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(bin).is_file()))
        .unwrap_or(false)
        || ["/usr/sbin", "/usr/bin", "/sbin"]
            .iter()
            .any(|d| Path::new(d).join(bin).is_file());
    if found {
        Ok(())
    } else {
        Err(format!("{bin} is not installed (apt-get install {pkg})"))
    }
}

/// Common start for kernel servers: namespaces S and C, a veth, config, process.
pub(super) fn start_kernel_server(
    ctx: &StartCtx,
    kind: &'static str,
    label: String,
    make_cmd: &dyn Fn(&str) -> Result<Vec<String>, String>,
) -> Result<Instance, String> {
    let s = Netns::new(&format!("{}s", ctx.tag))?;
    let c = Netns::new(&format!("{}c", ctx.tag))?;
    s.tune_server()?;
    c.tune_client()?;
    let (_, server_ip) = veth(&c, &s, &ctx.tag, ctx.net)?;
    let cmd = make_cmd(&server_ip)?;
    let log = ctx.work.join(format!("{kind}-{}.log", ctx.tag));
    let child = spawn_in(&s.name, &cmd, &log)?;
    let mut inst = Instance {
        kind,
        name: kind.to_string(),
        label,
        client_ns: c.name.clone(),
        server_ip,
        load_host: None,
        link: format!("{}a", ctx.tag),
        bare: None,
        child: Some(child),
        log,
        stats_path: None,
        pausable: false,
        steer: super::pin::Steer::Rps {
            ns: s.name.clone(),
            dev: format!("{}b", ctx.tag),
        },
        pinned: None,
        napi: Vec::new(),
        _namespaces: vec![c, s],
    };
    let url = inst.url(ctx.probe);
    wait_ready(&mut inst, &url, 15)?;
    wait_https(&mut inst, ctx)?;
    Ok(inst)
}

/// With HTTPS on, waits until the server answers 200 over TLS too.
pub(super) fn wait_https(inst: &mut Instance, ctx: &StartCtx) -> Result<(), String> {
    if ctx.tls.is_none() {
        return Ok(());
    }
    let url = format!("https://{}{}", inst.server_ip, ctx.probe);
    wait_ready(inst, &url, 15)
}

pub(super) fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// bareweb's engine on the host platform: `bareweb serve` on a TAP.
pub struct Bareweb {
    /// Segmentation offload on the TAP (`serve`'s default); off is `--no-offload`.
    pub tso: bool,
    /// The binary named by `BAREWEB_BASELINE` instead of this one.
    pub baseline: bool,
    /// The load over IPv6, to the server's link-local address (probes and the stats page
    /// stay on IPv4).
    pub ip6: bool,
}

/// The variable naming the `bareweb-baseline` binary.
const BASELINE_VAR: &str = "BAREWEB_BASELINE";

impl Bareweb {
    fn exe(&self, own: &Path) -> Result<std::path::PathBuf, String> {
        if !self.baseline {
            return Ok(own.to_path_buf());
        }
        let p = std::env::var_os(BASELINE_VAR)
            .map(std::path::PathBuf::from)
            .ok_or_else(|| {
                format!("bareweb-baseline needs {BASELINE_VAR}=path/to/another/bareweb")
            })?;
        if p.is_file() {
            Ok(p)
        } else {
            Err(format!("{BASELINE_VAR}={}: no such file", p.display()))
        }
    }
}

impl ServerKind for Bareweb {
    fn name(&self) -> &'static str {
        match (self.baseline, self.tso, self.ip6) {
            (true, _, _) => "bareweb-baseline",
            (false, true, true) => "bareweb-ip6",
            (false, true, false) => "bareweb",
            (false, false, _) => "bareweb-no-tso",
        }
    }
    fn describe(&self, cores: u32) -> String {
        let tso = if self.tso { "" } else { " --no-offload" };
        if self.baseline {
            let exe = std::env::var(BASELINE_VAR).unwrap_or_default();
            return format!("the same, with the baseline binary {exe} ({BASELINE_VAR})");
        }
        if self.ip6 {
            return format!(
                "bareweb serve{tso} (host platform: own TCP/IP on a TAP, {cores} core(s)), the \
                 load over IPv6 to its link-local address"
            );
        }
        if cores == 1 {
            format!("bareweb serve{tso} (host platform: own TCP/IP on a TAP, one core)")
        } else {
            format!(
                "bareweb serve --cores {cores}{tso} (host platform: own TCP/IP on a TAP, default mode)"
            )
        }
    }
    fn check(&self) -> Result<(), String> {
        self.exe(Path::new("")).map(|_| ())
    }
    fn start(&self, ctx: &StartCtx) -> Result<Instance, String> {
        let exe = self.exe(ctx.exe)?;
        let c = Netns::new(&format!("{}c", ctx.tag))?;
        c.tune_client()?;
        let server_ip = format!("10.77.{}.2", ctx.net);
        let (name, label) = match &ctx.runner {
            Some((r, t)) => (format!("{r}-{t}"), runner_label(r, *t)),
            None => (self.name().to_string(), self.describe(ctx.cores)),
        };
        let log = ctx.work.join(format!("{name}.log"));
        let mut cmd = vec![
            exe.display().to_string(),
            "serve".into(),
            ctx.site.display().to_string(),
            "--tap".into(),
            format!("{}t", ctx.tag),
            "--ip".into(),
            format!("{server_ip}/24"),
            "--tcbs".into(),
            "8192".into(),
            // The harness reads the stats JSON from the client's namespace.
            "--stats-allow".into(),
            format!("10.77.{}.0/24", ctx.net),
        ];
        match &ctx.runner {
            Some((r, t)) => cmd.extend([
                "--runner".into(),
                r.clone(),
                "--threads".into(),
                t.to_string(),
            ]),
            None if ctx.cores > 1 => cmd.extend(["--cores".into(), ctx.cores.to_string()]),
            None => {}
        }
        if !self.tso {
            cmd.push("--no-offload".into());
        }
        if let Some(t) = ctx.tls {
            cmd.extend(t.bareweb_args());
        }
        let child = spawn_in(&c.name, &cmd, &log)?;
        let mut inst = Instance {
            kind: self.name(),
            name,
            label,
            client_ns: c.name.clone(),
            server_ip,
            load_host: None,
            link: format!("{}t", ctx.tag),
            bare: None,
            child: Some(child),
            log,
            stats_path: Some("/.well-known/bareweb/stats"),
            pausable: false,
            steer: super::pin::Steer::None,
            pinned: None,
            napi: Vec::new(),
            _namespaces: vec![c],
        };
        let url = inst.url(ctx.probe);
        wait_ready(&mut inst, &url, 15)?;
        wait_https(&mut inst, ctx)?;
        if self.ip6 {
            let addr = wait_ipv6(&mut inst, 15)?;
            inst.load_host = Some(format!("[{addr}%25{}]", inst.link));
        }
        // The TAP bareweb made (up once it answers): no qdisc, as a veth (topo::no_qdisc).
        super::topo::no_qdisc(&inst.client_ns, &inst.link)?;
        Ok(inst)
    }
}

/// What `bareweb serve --runner R --threads N` is, for the setup table.
fn runner_label(runner: &str, threads: u32) -> String {
    let s = if threads == 1 { "" } else { "s" };
    let what = match runner {
        "serial" => "Boa's loop on one thread, no lock (the OpenMP paper's original Boa)".to_string(),
        "pool" => format!(
            "{threads} thread{s}: a network thread feeding {} through the locked ready queue (boa-pthreads)",
            match threads {
                1 => "itself".to_string(),
                2 => "one worker".to_string(),
                n => format!("{} workers", n - 1),
            }
        ),
        "workshare" => format!(
            "{threads} thread{s} traversing each pass of the ready queue together, a barrier per pass (boa-omp)"
        ),
        "tasks" => format!(
            "{threads} thread{s}: a producer and work-stealing tasks, one per ready connection (boa-dsections)"
        ),
        "pinned" => format!(
            "{threads} thread{s} pinned one per CPU, a whole server each on its own TAP queue, nothing shared (ours)"
        ),
        other => other.to_string(),
    };
    format!("bareweb serve --runner {runner} --threads {threads}: {what}")
}
/// bareweb's bare-machine kernel under QEMU (`bareweb run`, virtio-net on a TAP).
pub struct BarewebQemu;

impl ServerKind for BarewebQemu {
    fn name(&self) -> &'static str {
        "bareweb-qemu"
    }
    fn describe(&self, _cores: u32) -> String {
        "bareweb run (bare-machine kernel under QEMU, accel auto, virtio-net on a TAP, one \
         polling core; stopped outside its own runs)"
            .into()
    }
    fn check(&self) -> Result<(), String> {
        which("qemu-system-x86_64", "qemu-system-x86")
    }
    fn start(&self, ctx: &StartCtx) -> Result<Instance, String> {
        let c = Netns::new(&format!("{}c", ctx.tag))?;
        c.tune_client()?;
        let tap = format!("{}q", ctx.tag);
        let host_ip = format!("10.77.{}.1/24", ctx.net);
        sh(&[
            "ip", "-n", &c.name, "tuntap", "add", "dev", &tap, "mode", "tap",
        ])?;
        sh(&["ip", "-n", &c.name, "addr", "add", &host_ip, "dev", &tap])?;
        sh(&["ip", "-n", &c.name, "link", "set", &tap, "up"])?;
        super::topo::no_qdisc(&c.name, &tap)?;
        let server_ip = format!("10.77.{}.2", ctx.net);
        let log = ctx.work.join("bareweb-qemu.log");
        let mut cmd = vec![
            ctx.exe.display().to_string(),
            "run".into(),
            ctx.site.display().to_string(),
            "--net".into(),
            format!("tap:{tap}"),
            "--ip".into(),
            format!("{server_ip}/24"),
            "--gw".into(),
            "none".into(),
            "--tcbs".into(),
            "8192".into(),
            "--mem".into(),
            "1G".into(),
            "--headless".into(),
            "--serial-log".into(),
            ctx.work.join("bareweb-qemu.serial").display().to_string(),
        ];
        if let Some(t) = ctx.tls {
            cmd.extend(t.bareweb_args());
        }
        let child = spawn_in(&c.name, &cmd, &log)?;
        let mut inst = Instance {
            kind: "bareweb-qemu",
            name: "bareweb-qemu".into(),
            label: self.describe(ctx.cores),
            client_ns: c.name.clone(),
            server_ip,
            load_host: None,
            link: tap.clone(),
            bare: None,
            child: Some(child),
            log,
            stats_path: None,
            pausable: true,
            steer: super::pin::Steer::None,
            pinned: None,
            napi: Vec::new(),
            _namespaces: vec![c],
        };
        let url = inst.url(ctx.probe);
        wait_ready(&mut inst, &url, 90)?;
        wait_https(&mut inst, ctx)?;
        // Say which accelerator `bareweb run` chose (its first line: "... accel tcg, because ...").
        let said = std::fs::read_to_string(&inst.log).unwrap_or_default();
        if let Some(i) = said.find("accel ") {
            let accel: String = said[i..]
                .chars()
                .take_while(|&c| c != ';' && c != '(' && c != '\n')
                .collect();
            inst.label = format!("{} [{}]", inst.label, accel.trim().trim_end_matches(','));
        }
        Ok(inst)
    }
}

/// Checks that `sh` works and we are root (namespaces, TAP).
pub fn preflight() -> Result<(), String> {
    if !sys::is_root() {
        return Err("bareweb bench needs root (network namespaces, TAP devices)".into());
    }
    sh(&["ip", "-V"]).map(|_| ())?;
    which("curl", "curl")
}
