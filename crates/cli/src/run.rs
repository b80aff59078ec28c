//! `bareweb run`: boots the bare-machine kernel with a site under QEMU.
//!
//! The kernel ELF is carried inside this binary (crates/cli/build.rs builds it), the site
//! is built into an image, both are written to a private temporary directory and QEMU
//! boots them: PVH `-kernel`, the site as `-initrd` (boot module 0), the settings as the
//! kernel command line. The console is COM1 (the terminal, or a file).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bareweb_engine::cores::plan::{self, Asked};
use bareweb_engine::site::{self, Site};

use crate::util::{parse_cidr, parse_ip};

/// The kernel ELF this binary was built with.
pub static KERNEL: &[u8] = include_bytes!(env!("BAREWEB_KERNEL_ELF"));

/// What `apt` calls the package with `qemu-system-x86_64`.
pub const QEMU_HINT: &str = "sudo apt-get install qemu-system-x86";

/// QEMU exits with (code << 1) | 1 when the kernel writes `code` to isa-debug-exit; the
/// kernel writes 0x11 on a panic or CPU exception.
pub const KERNEL_FAILED: i32 = (0x11 << 1) | 1;

#[derive(clap::Args, Clone)]
pub struct RunArgs {
    /// Site directory, or an image written by `bareweb build`.
    pub site: PathBuf,
    /// Virtualisation: auto picks KVM when /dev/kvm is usable and hardware-backed, TCG
    /// otherwise (see README: what each costs here).
    #[arg(long, value_enum, default_value_t = Accel::Auto)]
    pub accel: Accel,
    /// QEMU machine: qboot (pc with the qboot firmware, assigns no PCI BARs), pc
    /// (SeaBIOS), q35, microvm (no PCI: virtio-net over virtio-mmio, as Firecracker and
    /// Cloud Hypervisor give it; the fastest to start).
    #[arg(long, value_enum, default_value_t = Machine::Qboot)]
    pub machine: Machine,
    /// Network: `user` (QEMU user networking, no root; forwards --listen to the server)
    /// or `tap:IFNAME` (a TAP device the caller prepared).
    #[arg(long, default_value = "user")]
    pub net: String,
    /// Host address forwarded to the server with `--net user`.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// NIC model.
    #[arg(long, value_enum, default_value_t = NicModel::Virtio)]
    pub nic: NicModel,
    /// Virtual CPUs (QEMU -smp); the kernel serves on every one of them (see --mode).
    #[arg(long, default_value_t = 1)]
    pub smp: u32,
    /// How the cores share the NIC: `perqueue` (a virtio-net queue pair and a server per
    /// core; needs --nic virtio and a TAP that can be multi-queue; the default when it
    /// can) or `netcore` (the papers' design: core 0 owns the NIC and hands connections to
    /// HTTP cores round robin; the default otherwise). With one core either is the
    /// one-core server (the kernel says so on its console).
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Network-core mode: core 0 serves HTTP too.
    #[arg(long)]
    pub bsp_http: bool,
    /// Do not answer /.well-known/bareweb/ (HTML) and /.well-known/bareweb/stats (JSON).
    #[arg(long)]
    pub no_stats_page: bool,
    /// Microseconds an idle core keeps polling before it halts until its NIC, its timer
    /// or another core wakes it (adaptive: up to this long), 0 to 1000000.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub idle_poll_us: u64,
    /// Never halt: every core polls all the time, as in the papers (a host CPU per core
    /// even with no traffic).
    #[arg(long)]
    pub poll_always: bool,
    /// Do not use the NIC's transmit offloads (virtio-net checksum and TCP segmentation,
    /// which QEMU offers with a TAP): every segment its own frame.
    #[arg(long)]
    pub no_offload: bool,
    /// Guest memory (QEMU -m syntax).
    #[arg(long, default_value = "256M")]
    pub mem: String,
    /// The server's address and prefix (QEMU user networking's guest address by default).
    #[arg(long, default_value = "10.0.2.15/24")]
    pub ip: String,
    /// Router for off-link clients, or `none`.
    #[arg(long, default_value = "10.0.2.2")]
    pub gw: String,
    /// TCP port the server listens on inside the VM (1-65535).
    #[arg(long, default_value_t = 80, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,
    /// HTTP scheduling policy: imt or ist (paper 004).
    #[arg(long, default_value = "imt")]
    pub sched: String,
    /// Most connections at once (TCBs per core), 1 to 1048576.
    #[arg(long, default_value_t = 1024, value_parser = crate::parse_tcbs)]
    pub tcbs: usize,
    /// Most connections from one client address at once; default half of --tcbs. (With
    /// QEMU user networking every client comes from one address.)
    #[arg(long, value_parser = crate::parse_tcbs)]
    pub max_per_ip: Option<usize>,
    /// Half-open connections held at once before SYN cookies; default half of --tcbs.
    #[arg(long, value_parser = crate::parse_tcbs)]
    pub syn_backlog: Option<usize>,
    /// Kernel logging on the console: comma list of `access` (a line per response,
    /// slow), `stats` (counters every second).
    #[arg(long, default_value = "")]
    pub log: String,
    /// More kernel command line words (see docs/kernel.md), e.g. `crash=panic`.
    #[arg(long, default_value = "")]
    pub append: String,
    /// Do not show the console on the terminal (write it to --serial-log, or drop it).
    #[arg(long)]
    pub headless: bool,
    /// Write the console to this file.
    #[arg(long)]
    pub serial_log: Option<PathBuf>,
    /// The server's MAC address (QEMU's default otherwise).
    #[arg(long)]
    pub mac: Option<String>,
    /// QEMU binary.
    #[arg(long, default_value = "qemu-system-x86_64")]
    pub qemu: String,
    /// Print the QEMU command line and exit without running it.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum Accel {
    Auto,
    Kvm,
    Tcg,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum Machine {
    Qboot,
    Pc,
    Q35,
    Microvm,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum ModeArg {
    Netcore,
    Perqueue,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum NicModel {
    Virtio,
    E1000,
}

/// The command-line spelling of an option's value (`qboot`, `e1000`), for messages.
fn value_name(v: impl clap::ValueEnum) -> String {
    v.to_possible_value()
        .map_or_else(String::new, |p| p.get_name().to_string())
}

/// Whether KVM can be used, and if not (or if it is the wrong kind), why.
pub fn kvm_status() -> Result<(), String> {
    if let Err(e) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
    {
        return Err(format!("/dev/kvm is not usable ({e})"));
    }
    let hw = ["/sys/module/kvm_intel", "/sys/module/kvm_amd"]
        .iter()
        .any(|p| Path::new(p).exists());
    if !hw && Path::new("/sys/module/kvm_pvm").exists() {
        return Err(
            "/dev/kvm is kvm_pvm (software virtualisation that emulates a non-PVM \
                    guest instruction by instruction: ~50x slower than TCG for this kernel)"
                .into(),
        );
    }
    Ok(())
}

/// Picks the accelerator and says why.
pub fn choose_accel(a: Accel) -> (Accel, String) {
    match a {
        Accel::Kvm => (Accel::Kvm, "kvm (asked for)".into()),
        Accel::Tcg => (Accel::Tcg, "tcg (asked for)".into()),
        Accel::Auto => match kvm_status() {
            Ok(()) => (Accel::Kvm, "kvm (/dev/kvm usable)".into()),
            Err(why) => (Accel::Tcg, format!("tcg, because {why}")),
        },
    }
}

const QBOOT_PATHS: &[&str] = &["/usr/share/qemu/qboot.rom", "/usr/share/qboot/bios.bin"];

/// The QEMU arguments for a kernel, a site image and the settings.
pub fn qemu_args(
    a: &RunArgs,
    accel: Accel,
    kernel: &Path,
    image: &Path,
) -> Result<Vec<String>, String> {
    let (ip, prefix) = parse_cidr(&a.ip)?;
    if a.gw != "none" {
        parse_ip(&a.gw)?;
    }
    if !matches!(a.sched.as_str(), "imt" | "ist") {
        return Err(format!("--sched must be imt or ist, not {:?}", a.sched));
    }
    let mut cmdline = format!(
        "ip={ip}/{prefix} gw={} port={} sched={} tcbs={}",
        a.gw, a.port, a.sched, a.tcbs
    );
    if let Some(n) = a.max_per_ip {
        cmdline.push_str(&format!(" max_per_ip={n}"));
    }
    if let Some(n) = a.syn_backlog {
        cmdline.push_str(&format!(" syn_backlog={n}"));
    }
    let plan = cores_plan(a)?;
    if let Some(m) = a.mode {
        cmdline.push_str(match m {
            ModeArg::Netcore => " mode=netcore",
            ModeArg::Perqueue => " mode=perqueue",
        });
    }
    if a.bsp_http {
        cmdline.push_str(" bsp_http=on");
    }
    if a.no_stats_page {
        cmdline.push_str(" stats_page=off");
    }
    if a.no_offload {
        cmdline.push_str(" offload=off");
    }
    if a.poll_always {
        cmdline.push_str(" poll=always");
    } else if a.idle_poll_us != 200 {
        cmdline.push_str(&format!(" idle_poll_us={}", a.idle_poll_us));
    }
    if !a.log.is_empty() {
        cmdline.push_str(&format!(" log={}", a.log));
    }
    if !a.append.trim().is_empty() {
        cmdline.push(' ');
        cmdline.push_str(a.append.trim());
    }
    let mut v: Vec<String> = Vec::new();
    let mut push = |s: &str| v.push(s.to_string());
    for s in [
        "-nodefaults",
        "-no-user-config",
        "-display",
        "none",
        "-no-reboot",
        // Threads named "CPU n/TCG" (or /KVM), "worker"...: `top -H` and the benchmarks
        // see which of QEMU's threads is busy.
        "-name",
        "bareweb,debug-threads=on",
    ] {
        push(s);
    }
    match a.machine {
        Machine::Qboot => {
            let rom = QBOOT_PATHS
                .iter()
                .find(|p| Path::new(p).exists())
                .ok_or("qboot firmware not found (Debian: qemu-system-data ships /usr/share/qemu/qboot.rom); use --machine pc")?;
            push("-machine");
            push("pc");
            push("-bios");
            push(rom);
        }
        Machine::Pc => {
            push("-machine");
            push("pc");
        }
        Machine::Q35 => {
            push("-machine");
            push("q35");
        }
        Machine::Microvm => {
            // No option ROMs to run; the kernel masks the legacy PIC and finds its NIC in
            // the machine's virtio-mmio slots. virtio-mmio version 2 (virtio 1.x): QEMU's
            // default is the legacy interface, which the kernel does not drive.
            push("-machine");
            push("microvm,x-option-roms=off");
            push("-global");
            push("virtio-mmio.force-legacy=false");
        }
    }
    match accel {
        Accel::Kvm => {
            push("-accel");
            push("kvm");
            push("-cpu");
            // This nested KVM aborts on plain `host` (MSR 0x10a); invtsc marks the TSC
            // invariant for the kernel's clock.
            push("host,-arch-capabilities,+invtsc");
        }
        _ => {
            push("-accel");
            push("tcg");
            push("-cpu");
            push("max");
        }
    }
    push("-m");
    push(&a.mem);
    push("-smp");
    push(&a.smp.to_string());
    push("-kernel");
    push(&kernel.to_string_lossy());
    push("-initrd");
    push(&image.to_string_lossy());
    push("-append");
    push(&cmdline);
    push("-device");
    push("isa-debug-exit,iobase=0xf4,iosize=0x04");
    push("-serial");
    match (&a.serial_log, a.headless) {
        (Some(f), _) => push(&format!("file:{}", f.display())),
        (None, true) => push("null"),
        (None, false) => push("stdio"),
    }
    push("-netdev");
    if a.net == "user" {
        let (host, hport) = a
            .listen
            .rsplit_once(':')
            .ok_or(format!("--listen must be ADDR:PORT, not {:?}", a.listen))?;
        hport
            .parse::<u16>()
            .map_err(|_| format!("bad port in --listen {:?}", a.listen))?;
        push(&format!(
            "user,id=n0,hostfwd=tcp:{host}:{hport}-{ip}:{}",
            a.port
        ));
    } else if let Some(ifname) = a.net.strip_prefix("tap:") {
        if ifname.is_empty() || ifname.len() > 15 || ifname.contains(',') {
            return Err(format!("bad TAP name {ifname:?}"));
        }
        let queues = match plan.queues {
            1 => String::new(),
            n => format!(",queues={n}"),
        };
        push(&format!(
            "tap,id=n0,ifname={ifname},script=no,downscript=no,vhost=off{queues}"
        ));
    } else {
        return Err(format!("--net must be user or tap:IFNAME, not {:?}", a.net));
    }
    let mac = match &a.mac {
        Some(m) => {
            crate::util::parse_mac(m)?;
            format!(",mac={m}")
        }
        None => String::new(),
    };
    let mq = match plan.queues {
        1 => String::new(),
        // MSI-X vectors for every queue, the control queue and configuration changes
        // (QEMU's recommendation; the kernel polls and uses none).
        n => format!(",mq=on,vectors={}", 2 * n + 2),
    };
    push("-device");
    match (a.nic, a.machine) {
        (NicModel::Virtio, Machine::Microvm) => push(&format!(
            "virtio-net-device,netdev=n0,rx_queue_size=1024{mac}"
        )),
        (NicModel::Virtio, _) => push(&format!(
            "virtio-net-pci,netdev=n0,rx_queue_size=1024{mac}{mq}"
        )),
        (NicModel::E1000, Machine::Microvm) => {
            return Err("--machine microvm has no PCI bus: use --nic virtio".into())
        }
        (NicModel::E1000, _) => push(&format!("e1000,netdev=n0{mac}")),
    }
    Ok(v)
}

/// How the kernel's cores will share the NIC, as far as the host decides it: the number
/// of queue pairs QEMU gives the device, and why.
pub struct CoresPlan {
    /// Queue pairs (1: one queue; the kernel then runs network-core mode on several cores).
    pub queues: u32,
    /// What the user is told.
    pub note: String,
}

/// What the TAP `ifname` is: missing (QEMU creates it, with as many queues as it is
/// given), or existing with or without IFF_MULTI_QUEUE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TapKind {
    Missing,
    SingleQueue,
    MultiQueue,
}

fn tap_kind(ifname: &str) -> TapKind {
    const IFF_MULTI_QUEUE: u32 = 0x0100;
    match std::fs::read_to_string(format!("/sys/class/net/{ifname}/tun_flags")) {
        Ok(f) => match u32::from_str_radix(f.trim().trim_start_matches("0x"), 16) {
            Ok(v) if v & IFF_MULTI_QUEUE != 0 => TapKind::MultiQueue,
            _ => TapKind::SingleQueue,
        },
        Err(_) if Path::new(&format!("/sys/class/net/{ifname}")).exists() => TapKind::SingleQueue,
        Err(_) => TapKind::Missing,
    }
}

/// The cores plan for `a` (errors for impossible combinations).
pub fn cores_plan(a: &RunArgs) -> Result<CoresPlan, String> {
    if a.smp == 0 || a.smp > 32 {
        return Err("--smp must be in 1..=32 (the kernel uses at most 32 cores)".into());
    }
    if a.bsp_http && a.mode != Some(ModeArg::Netcore) {
        return Err("--bsp-http only applies to --mode netcore".into());
    }
    let tap = a.net.strip_prefix("tap:").map(tap_kind);
    // QEMU opens a multi-queue TAP only with queues >= 2 (IFF_MULTI_QUEUE is set only
    // then); a kernel that uses fewer pairs leaves the others off and QEMU detaches their
    // TAP queues, so everything arrives on the pairs in use.
    let min_queues = if a.nic == NicModel::Virtio
        && a.machine != Machine::Microvm
        && tap == Some(TapKind::MultiQueue)
    {
        2
    } else {
        1
    };
    if a.smp == 1 {
        // Whatever --mode says, one core is the single server: the kernel's plan (the
        // engine's) falls back and says so, as `serve --cores 1` does.
        let asked = a.mode.map(|m| match m {
            ModeArg::Netcore => Asked::NetCore,
            ModeArg::Perqueue => Asked::PerQueue,
        });
        return Ok(CoresPlan {
            queues: min_queues,
            note: plan::decide(1, asked, a.bsp_http, 1).why.to_string(),
        });
    }
    let why_not = match (a.nic, tap) {
        (NicModel::E1000, _) => Some("the e1000 has one queue".to_string()),
        (NicModel::Virtio, _) if a.machine == Machine::Microvm => Some(
            "virtio-mmio gives a device one interrupt line, which can wake one core".to_string(),
        ),
        (NicModel::Virtio, None) => {
            Some("QEMU user networking gives the NIC one queue".to_string())
        }
        (NicModel::Virtio, Some(TapKind::SingleQueue)) => Some(format!(
            "TAP {} is single-queue (create it with `ip tuntap add NAME mode tap multi_queue`)",
            a.net.trim_start_matches("tap:")
        )),
        _ => None,
    };
    match (a.mode, why_not) {
        (Some(ModeArg::Netcore), _) => Ok(CoresPlan {
            queues: min_queues,
            note: format!("{} cores, network-core mode (asked for)", a.smp),
        }),
        (Some(ModeArg::Perqueue), Some(why)) => {
            Err(format!("--mode perqueue needs a queue per core, but {why}"))
        }
        (_, None) => Ok(CoresPlan {
            queues: a.smp,
            note: format!(
                "{} cores, per-queue mode: virtio-net with {} queue pairs",
                a.smp, a.smp
            ),
        }),
        (None, Some(why)) => Ok(CoresPlan {
            queues: 1,
            note: format!("{} cores, network-core mode, because {why}", a.smp),
        }),
    }
}

/// A private temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<TempDir, String> {
        let base = std::env::temp_dir();
        for i in 0..100u32 {
            let p = base.join(format!("bareweb-run-{}-{i}", std::process::id()));
            if std::fs::create_dir(&p).is_ok() {
                return Ok(TempDir(p));
            }
        }
        Err(format!("cannot create a directory in {}", base.display()))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes the site image (built from a directory, or checked if it is a file).
fn site_image(site: &Path, out: &Path) -> Result<usize, String> {
    let bytes = if site.is_dir() {
        site::build_from_dir(site).map_err(|e| format!("cannot build {}: {e}", site.display()))?
    } else {
        std::fs::read(site).map_err(|e| format!("cannot read {}: {e}", site.display()))?
    };
    let files = Site::load(&bytes)
        .map_err(|e| format!("{} is not a usable site image: {e}", site.display()))?
        .len();
    std::fs::write(out, &bytes).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    Ok(files)
}

pub fn run(a: RunArgs) -> Result<ExitCode, String> {
    let dir = TempDir::new()?;
    let kernel = dir.0.join("bareweb-kernel.elf");
    let image = dir.0.join("site.bws");
    std::fs::write(&kernel, KERNEL).map_err(|e| format!("cannot write the kernel: {e}"))?;
    let files = site_image(&a.site, &image)?;
    let (accel, why) = choose_accel(a.accel);
    let args = qemu_args(&a, accel, &kernel, &image)?;
    if a.dry_run {
        eprintln!("bareweb: accel {why}");
        if a.smp > 1 {
            eprintln!("bareweb: {}", cores_plan(&a)?.note);
        }
        println!("{} {}", a.qemu, shell_words(&args));
        return Ok(ExitCode::SUCCESS);
    }
    if !qemu_present(&a.qemu) {
        return Err(format!(
            "{} not found: install QEMU ({QEMU_HINT}; `cargo xtask setup` does it as root)",
            a.qemu
        ));
    }
    eprintln!(
        "bareweb: booting the kernel ({} KiB) with {files} files under QEMU: accel {why}; machine {}, NIC {}",
        KERNEL.len() / 1024,
        value_name(a.machine),
        value_name(a.nic)
    );
    if a.smp > 1 {
        eprintln!("bareweb: {}", cores_plan(&a)?.note);
    }
    let (ip, _) = parse_cidr(&a.ip)?;
    if a.net == "user" {
        eprintln!(
            "bareweb: serving at http://{}/ (forwarded to {ip}:{}); Ctrl-C stops",
            a.listen, a.port
        );
    } else {
        eprintln!(
            "bareweb: serving at http://{ip}:{}/ on {}; Ctrl-C stops",
            a.port, a.net
        );
    }
    let mut cmd = Command::new(&a.qemu);
    cmd.args(&args)
        .stdin(if a.headless || a.serial_log.is_some() {
            Stdio::null()
        } else {
            Stdio::inherit()
        });
    // QEMU must not outlive us (tests stop `bareweb run` by PID).
    // SAFETY: prctl is async-signal-safe and only affects the child being started.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "{} not found: install QEMU ({QEMU_HINT}; `cargo xtask setup` does it as root)",
                a.qemu
            ))
        }
        Err(e) => return Err(format!("cannot start {}: {e}", a.qemu)),
    };
    // Ctrl-C reaches QEMU too (same process group) and it exits; SIGTERM reaches only
    // us: pass it on. Either way we wait for QEMU and then remove the temporary files.
    install_stop_handlers();
    let mut forwarded = None;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) => {}
            Err(e) => return Err(format!("waiting for QEMU: {e}")),
        }
        if STOP.load(Ordering::Relaxed) {
            let t = *forwarded.get_or_insert_with(std::time::Instant::now);
            if t.elapsed() < Duration::from_millis(20) {
                // SAFETY: kill(2) on our own child's pid.
                unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            } else if t.elapsed() > Duration::from_secs(3) {
                let _ = child.kill();
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    match status.code() {
        Some(0) => Ok(ExitCode::SUCCESS),
        Some(KERNEL_FAILED) => Err(
            "the kernel stopped on a panic or CPU exception (its report is on the console)".into(),
        ),
        Some(c) => Err(format!("QEMU exited with status {c}")),
        None => Ok(ExitCode::SUCCESS), // stopped by a signal (Ctrl-C, SIGTERM): normal
    }
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn install_stop_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: on_stop only stores to an atomic, which is async-signal-safe.
        unsafe {
            libc::signal(
                sig,
                on_stop as extern "C" fn(libc::c_int) as libc::sighandler_t,
            )
        };
    }
}

/// Whether `qemu` names an executable (a path, or a name found on PATH).
fn qemu_present(qemu: &str) -> bool {
    if qemu.contains('/') {
        return Path::new(qemu).is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(qemu).is_file()))
}

fn shell_words(args: &[String]) -> String {
    args.iter()
        .map(|s| {
            if s.is_empty() || s.contains(|c: char| c.is_whitespace() || c == '"' || c == '\'') {
                format!("'{}'", s.replace('\'', "'\\''"))
            } else {
                s.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }

    fn args(words: &[&str]) -> RunArgs {
        let mut v = vec!["bareweb", "site"];
        v.extend_from_slice(words);
        Cli::parse_from(v).run
    }

    fn qemu(words: &[&str]) -> Result<String, String> {
        let a = args(words);
        qemu_args(&a, Accel::Tcg, Path::new("k"), Path::new("s")).map(|v| v.join(" "))
    }

    #[test]
    fn tcbs_out_of_range_are_refused_before_anything_starts() {
        for bad in ["0", "1048577", "lots"] {
            let r = Cli::try_parse_from(["bareweb", "site", "--tcbs", bad]);
            let e = r
                .err()
                .unwrap_or_else(|| panic!("--tcbs {bad} accepted"))
                .to_string();
            assert!(e.contains("from 1 to 1048576"), "{e}");
        }
        assert_eq!(args(&["--tcbs", "1"]).tcbs, 1);
        assert_eq!(args(&["--tcbs", "1048576"]).tcbs, 1 << 20);
        assert!(qemu(&["--tcbs", "64"]).unwrap().contains("tcbs=64"));
        assert!(Cli::try_parse_from(["bareweb", "site", "--port", "0"]).is_err());
        assert!(qemu(&["--poll-always"]).unwrap().contains("poll=always"));
        assert!(qemu(&["--no-offload"]).unwrap().contains("offload=off"));
        assert!(qemu(&["--idle-poll-us", "50"])
            .unwrap()
            .contains("idle_poll_us=50"));
        assert!(!qemu(&[]).unwrap().contains("idle_poll_us"));
        assert!(Cli::try_parse_from(["bareweb", "site", "--idle-poll-us", "1000001"]).is_err());
        assert_eq!(args(&["--port", "8080"]).port, 8080);
    }

    #[test]
    fn cores_and_modes_reach_qemu_and_the_kernel() {
        // One core: nothing new.
        let one = qemu(&["--machine", "pc"]).unwrap();
        assert!(one.contains("-smp 1") && !one.contains("queues=") && !one.contains("mode="));
        // A TAP that does not exist yet: QEMU creates it multi-queue; per-queue by default.
        let pq = qemu(&["--machine", "pc", "--smp", "4", "--net", "tap:bwm-none0"]).unwrap();
        assert!(pq.contains("vhost=off,queues=4"), "{pq}");
        assert!(pq.contains("mq=on,vectors=10"), "{pq}");
        assert!(
            !pq.contains("mode="),
            "the kernel decides from the queues it finds"
        );
        // User networking has one queue: network-core mode, no queues.
        let nc = qemu(&["--machine", "pc", "--smp", "2"]).unwrap();
        assert!(!nc.contains("queues=") && !nc.contains("mq=on"), "{nc}");
        // Explicit words go on the kernel command line.
        let words = qemu(&[
            "--machine",
            "pc",
            "--smp",
            "2",
            "--mode",
            "netcore",
            "--bsp-http",
            "--no-stats-page",
        ])
        .unwrap();
        assert!(
            words.contains("mode=netcore bsp_http=on stats_page=off"),
            "{words}"
        );
        // One core with a mode: the kernel serves on its one core and says why (as
        // `serve --cores 1 --mode netcore` does); the word still reaches it.
        let one = qemu(&["--machine", "pc", "--mode", "netcore", "--bsp-http"]).unwrap();
        assert!(
            one.contains("-smp 1") && one.contains("mode=netcore bsp_http=on"),
            "{one}"
        );
        let note = cores_plan(&args(&["--mode", "netcore"])).unwrap().note;
        assert!(note.contains("network-core mode needs two"), "{note}");
        // microvm: virtio-mmio, version 2, one queue pair (network-core mode on 2 cores).
        let m = qemu(&["--machine", "microvm", "--smp", "2"]).unwrap();
        assert!(
            m.contains("-machine microvm,x-option-roms=off -global virtio-mmio.force-legacy=false"),
            "{m}"
        );
        assert!(
            m.contains("virtio-net-device,netdev=n0") && !m.contains("mq=on"),
            "{m}"
        );
        assert!(qemu(&["--machine", "microvm", "--nic", "e1000"]).is_err());
        assert!(qemu(&["--machine", "microvm", "--smp", "2", "--mode", "perqueue"]).is_err());
        // Impossible combinations are refused before QEMU starts.
        for bad in [
            &["--machine", "pc", "--smp", "2", "--mode", "perqueue"][..],
            &[
                "--machine",
                "pc",
                "--smp",
                "2",
                "--nic",
                "e1000",
                "--mode",
                "perqueue",
            ],
            &["--machine", "pc", "--smp", "2", "--bsp-http"],
            &["--machine", "pc", "--smp", "33"],
        ] {
            assert!(qemu(bad).is_err(), "{bad:?}");
        }
    }
}
