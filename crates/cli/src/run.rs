//! `bareweb run`: boots the bare-machine kernel with a site under QEMU.
//!
//! The kernel ELF is carried inside this binary (crates/cli/build.rs builds it), the site
//! is built into an image, both are written to a private temporary directory and QEMU
//! boots them: PVH `-kernel`, the site as `-initrd` (boot module 0), the settings as the
//! kernel command line. The console is COM1 (the terminal, or a file).

use std::fmt;
use std::net::SocketAddrV4;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bareweb_engine::cores::plan;
use bareweb_engine::site::{self, Site};

use crate::opts::{self, kernel_cmdline, value_name, Mac, MemSize, ModeArg, ServerOpts};

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
    /// QEMU machine: qboot (pc with the qboot firmware: fastest boot, assigns no PCI
    /// BARs), pc (SeaBIOS), q35.
    #[arg(long, value_enum, default_value_t = Machine::Qboot)]
    pub machine: Machine,
    /// Network: `user` (QEMU user networking, no root; forwards --listen to the server)
    /// or `tap:IFNAME` (a TAP device the caller prepared). Given twice or more, the VM
    /// has that many NICs (paper 002's bonding, see --bond): `user` each time puts them
    /// all on one QEMU hub with user networking, `tap:` names one TAP per NIC (put them
    /// on one bridge).
    #[arg(long = "net", default_value = "user", value_name = "user|tap:IFNAME")]
    pub nets: Vec<Net>,
    /// Host address forwarded to the server with `--net user`.
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "A.B.C.D:PORT")]
    pub listen: SocketAddrV4,
    /// NIC model.
    #[arg(long, value_enum, default_value_t = NicModel::Virtio)]
    pub nic: NicModel,
    /// Virtual CPUs (QEMU -smp), 1 to 32; the kernel serves on every one (see --mode).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=32))]
    pub smp: u32,
    /// Guest memory (QEMU -m syntax: 256M, 1G).
    #[arg(long, default_value = "256M")]
    pub mem: MemSize,
    #[command(flatten)]
    pub server: ServerOpts,
    /// A line of counters every second on the kernel console.
    #[arg(long)]
    pub stats_log: bool,
    /// More kernel command line words (see docs/kernel.md), e.g. `crash=panic`; checked
    /// against the kernel's own parser before boot.
    #[arg(long, value_name = "WORDS", value_parser = opts::kernel_words)]
    pub append: Option<String>,
    /// Do not show the console on the terminal (write it to --serial-log, or drop it).
    #[arg(long)]
    pub headless: bool,
    /// Write the console to this file.
    #[arg(long)]
    pub serial_log: Option<PathBuf>,
    /// The server's MAC address, once per --net in the same order (QEMU's defaults
    /// otherwise: 52:54:00:12:34:56 and up).
    #[arg(long = "mac", value_name = "MAC")]
    pub macs: Vec<Mac>,
    /// A QEMU monitor (HMP) on this Unix socket, e.g. to take a NIC's link down:
    /// `echo "set_link nic1 off" | socat - UNIX-CONNECT:PATH` (NIC k is `nic{k}`).
    #[arg(long, value_name = "PATH")]
    pub monitor: Option<PathBuf>,
    /// QEMU binary.
    #[arg(long, default_value = "qemu-system-x86_64")]
    pub qemu: String,
    /// Print the QEMU command line and exit without running it.
    #[arg(long)]
    pub dry_run: bool,
}

/// `--net`: QEMU user networking, or a TAP the caller prepared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Net {
    User,
    Tap(String),
}

impl FromStr for Net {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "user" => Ok(Net::User),
            _ => match s.strip_prefix("tap:") {
                Some(name) => opts::ifname(name).map(Net::Tap),
                None => Err(format!("{s:?}: expected `user` or `tap:IFNAME`")),
            },
        }
    }
}

impl fmt::Display for Net {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Net::User => f.write_str("user"),
            Net::Tap(n) => write!(f, "tap:{n}"),
        }
    }
}

impl RunArgs {
    /// Checks that need more than one option (usage errors).
    pub fn check(&self) -> Result<(), String> {
        self.server.check()?;
        let n = self.nets.len();
        if n > bareweb_engine::bond::MAX_NICS {
            return Err(format!(
                "{n} --net: the kernel drives {} NICs at most",
                bareweb_engine::bond::MAX_NICS
            ));
        }
        let users = self.nets.iter().filter(|n| **n == Net::User).count();
        if users != 0 && users != n {
            return Err(
                "--net user and --net tap: do not mix: a NIC set is on one link (a QEMU hub \
                 with user networking, or TAPs on one bridge)"
                    .into(),
            );
        }
        if let Some(t) = self
            .nets
            .iter()
            .enumerate()
            .find_map(|(i, t)| (*t != Net::User && self.nets[..i].contains(t)).then_some(t))
        {
            return Err(format!("--net {t} is given twice"));
        }
        if self.macs.len() > n {
            return Err(format!(
                "{} --mac for {n} --net: give one MAC per NIC",
                self.macs.len()
            ));
        }
        self.server.bonding(n)?;
        self.cores_plan().map(|_| ())?;
        opts::kernel_settings(&self.cmdline())?;
        Ok(())
    }

    /// The kernel command line: the shared options given, `--stats-log`, `--append`.
    pub fn cmdline(&self) -> String {
        let mut w = self.server.kernel_words(self.stats_log);
        w.extend(self.append.iter().cloned());
        w.join(" ")
    }

    /// The settings the kernel will boot with.
    pub fn settings(&self) -> Result<kernel_cmdline::Settings, String> {
        opts::kernel_settings(&self.cmdline())
    }

    /// The cores plan for these options (errors for impossible combinations).
    pub fn cores_plan(&self) -> Result<CoresPlan, String> {
        cores_plan(self)
    }
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
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum NicModel {
    Virtio,
    E1000,
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
    let settings = a.settings()?;
    let cmdline = a.cmdline();
    let plan = cores_plan(a)?;
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
    push(&a.mem.to_string());
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
    if let Some(m) = &a.monitor {
        push("-monitor");
        push(&format!("unix:{},server=on,wait=off", m.display()));
    }
    let user = format!(
        "user,id={{id}},hostfwd=tcp:{}:{}-{}:{}",
        a.listen.ip(),
        a.listen.port(),
        settings.ip,
        settings.port
    );
    let several = a.nets.len() > 1;
    if several && a.nets[0] == Net::User {
        // One user network for every NIC: a QEMU hub joins them (it repeats every frame to
        // every port, as a hub does), so they share one link as on a switch.
        push("-netdev");
        push(&user.replace("{id}", "u0"));
        push("-netdev");
        push("hubport,id=h0,hubid=0,netdev=u0");
    }
    let queues = match plan.queues {
        1 => String::new(),
        n => format!(",queues={n}"),
    };
    let mq = match plan.queues {
        1 => String::new(),
        // MSI-X vectors for every queue, the control queue and configuration changes
        // (QEMU's recommendation; the kernel polls and uses none).
        n => format!(",mq=on,vectors={}", 2 * n + 2),
    };
    for (k, net) in a.nets.iter().enumerate() {
        push("-netdev");
        match net {
            Net::User if several => push(&format!("hubport,id=n{k},hubid=0")),
            Net::User => push(&user.replace("{id}", &format!("n{k}"))),
            Net::Tap(ifname) => push(&format!(
                "tap,id=n{k},ifname={ifname},script=no,downscript=no,vhost=off{queues}"
            )),
        }
        let mac = match a.macs.get(k) {
            Some(m) => format!(",mac={m}"),
            None => String::new(),
        };
        push("-device");
        match a.nic {
            NicModel::Virtio => push(&format!(
                "virtio-net-pci,netdev=n{k},id=nic{k},rx_queue_size=1024{mac}{mq}"
            )),
            NicModel::E1000 => push(&format!("e1000,netdev=n{k},id=nic{k}{mac}")),
        }
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
    let mode = a.server.mode;
    // Every NIC of a set gets the same queues: the least multi-queue TAP decides.
    let tap = a
        .nets
        .iter()
        .map(|n| match n {
            Net::Tap(name) => Some(tap_kind(name)),
            Net::User => None,
        })
        .min_by_key(|k| match k {
            None => 0,
            Some(TapKind::SingleQueue) => 1,
            Some(TapKind::Missing) => 2,
            Some(TapKind::MultiQueue) => 3,
        })
        .flatten();
    // QEMU opens a multi-queue TAP only with queues >= 2 (IFF_MULTI_QUEUE is set only
    // then); a kernel that uses fewer pairs leaves the others off and QEMU detaches their
    // TAP queues, so everything arrives on the pairs in use.
    let min_queues = if a.nic == NicModel::Virtio && tap == Some(TapKind::MultiQueue) {
        2
    } else {
        1
    };
    if a.smp == 1 {
        // Whatever --mode says, one core is the single server: the kernel's plan (the
        // engine's) falls back and says so, as `serve --cores 1` does.
        let asked = mode.map(ModeArg::asked);
        return Ok(CoresPlan {
            queues: min_queues,
            note: plan::decide(1, asked, a.server.bsp_http, 1).why.to_string(),
        });
    }
    let why_not = match (a.nic, tap) {
        (NicModel::E1000, _) => Some("the e1000 has one queue".to_string()),
        (NicModel::Virtio, None) => {
            Some("QEMU user networking gives the NIC one queue".to_string())
        }
        (NicModel::Virtio, Some(TapKind::SingleQueue)) => Some(
            "a TAP is single-queue (create it with `ip tuntap add NAME mode tap multi_queue`)"
                .to_string(),
        ),
        _ => None,
    };
    match (mode, why_not) {
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
    let settings = a.settings()?;
    let nets = a
        .nets
        .iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(" + ");
    if a.nets[0] == Net::User {
        eprintln!(
            "bareweb: serving at http://{}/ (forwarded to {}:{}){}; Ctrl-C stops",
            a.listen,
            settings.ip,
            settings.port,
            if a.nets.len() > 1 {
                format!(", {} NICs on one QEMU hub", a.nets.len())
            } else {
                String::new()
            }
        );
    } else {
        eprintln!(
            "bareweb: serving at http://{}:{}/ on {nets}; Ctrl-C stops",
            settings.ip, settings.port
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
        assert_eq!(args(&["--tcbs", "1"]).server.tcbs, Some(1));
        assert_eq!(args(&["--tcbs", "1048576"]).server.tcbs, Some(1 << 20));
        assert!(qemu(&["--tcbs", "64"]).unwrap().contains("tcbs=64"));
        assert!(Cli::try_parse_from(["bareweb", "site", "--port", "0"]).is_err());
        assert_eq!(args(&["--port", "8080"]).server.port, Some(8080));
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
            words.contains("-append stats_page=off mode=netcore bsp_http=on -device"),
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
            let mut v = vec!["bareweb", "site"];
            v.extend_from_slice(bad);
            let checked = Cli::try_parse_from(v)
                .map_err(|e| e.to_string())
                .and_then(|c| c.run.check());
            assert!(checked.is_err(), "{bad:?}");
        }
    }
}
