//! `bareweb run`: boots the bare-machine kernel with a site under QEMU.
//!
//! The options and the QEMU command line; starting QEMU, watching its console and
//! translating its failures is [`crate::launch`]. The kernel ELF is carried inside this
//! binary (crates/cli/build.rs builds it); QEMU boots it with PVH `-kernel`, the site as
//! `-initrd` (boot module 0), the settings as the kernel command line (or a single-file
//! `.elf`, or an `.iso` from `-cdrom`). The console is COM1 on QEMU's stdio.

use std::fmt;
use std::net::SocketAddrV4;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use bareweb_engine::cores::plan;

use crate::bare::KernelOpts;
use crate::kernel_image::{kind_of, Kind};
use crate::opts::{self, kernel_cmdline, value_name, Mac, MemSize, ModeArg, ServerOpts};

/// What `apt` calls the package with `qemu-system-x86_64`.
pub const QEMU_HINT: &str = "sudo apt-get install qemu-system-x86";

/// QEMU exits with (code << 1) | 1 when the kernel writes `code` to isa-debug-exit; the
/// kernel writes 0x11 on a panic or CPU exception.
pub const KERNEL_FAILED: i32 = (0x11 << 1) | 1;

#[derive(clap::Args, Clone)]
pub struct RunArgs {
    /// Site directory, or an image written by `bareweb build`.
    pub site: PathBuf,
    /// The site configuration [default: SITE/bareweb.toml if there is one].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Virtualisation: auto picks KVM when /dev/kvm is usable and hardware-backed, TCG
    /// otherwise (see README: what each costs here).
    #[arg(long, value_enum, default_value_t = Accel::Auto)]
    pub accel: Accel,
    /// QEMU machine: qboot (pc with the qboot firmware, assigns no PCI BARs), pc
    /// (SeaBIOS), q35, microvm (no PCI: virtio-net over virtio-mmio, as Firecracker and
    /// Cloud Hypervisor give it; the fastest to start).
    #[arg(long, value_enum, default_value_t = Machine::Qboot)]
    pub machine: Machine,
    /// Firmware: bios (qboot or SeaBIOS, as --machine says), uefi (OVMF, Debian package
    /// ovmf; on q35 unless --machine pc: boots an .iso or .img from `bareweb build`).
    #[arg(long, value_enum, default_value_t = Firmware::Bios)]
    pub firmware: Firmware,
    /// Network: `user` (QEMU user networking, no root; forwards --listen to the server)
    /// or `tap:IFNAME` (a TAP device the caller prepared). Given twice or more, the VM
    /// has that many NICs (bonding, as in the bonding paper; see --bond): `user` each time puts them
    /// all on one QEMU hub with user networking, `tap:` names one TAP per NIC (put them
    /// on one bridge).
    #[arg(long = "net", default_value = "user", value_name = "user|tap:IFNAME")]
    pub nets: Vec<Net>,
    /// Host address forwarded to the server with `--net user`.
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "A.B.C.D:PORT")]
    pub listen: SocketAddrV4,
    /// Host address forwarded to the server's HTTPS port (--https-port) with `--net user`,
    /// when --tls-cert is given.
    #[arg(long, default_value = "127.0.0.1:8443", value_name = "A.B.C.D:PORT")]
    pub listen_https: SocketAddrV4,
    /// IPv6 host address of the server with `--net user`, or `off`: `run` relays it to
    /// --listen itself (QEMU's forwards take IPv4 host addresses only), and HTTPS at the
    /// same address with --listen-https's port [default: [::1] with --listen's port;
    /// skipped with a warning when the host has no IPv6 loopback]
    #[arg(long, value_name = "[ADDR]:PORT|off")]
    pub listen6: Option<crate::relay6::Listen6>,
    /// NIC model: once for every NIC, or once per --net in the same order (a bond of
    /// mixed models) [default: virtio]
    #[arg(long = "nic", value_enum, value_name = "MODEL")]
    pub nics: Vec<NicModel>,
    /// Virtual CPUs (QEMU -smp), 1 to 32; the kernel serves on every one (see --mode).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=32))]
    pub smp: u32,
    /// Guest memory (QEMU -m syntax: 256M, 1G).
    #[arg(long, default_value = "256M")]
    pub mem: MemSize,
    #[command(flatten)]
    pub server: ServerOpts,
    /// With --acme-domain: the file the kernel keeps its ACME account key and certificate
    /// in, attached as a virtio-blk disk (the state area is its last 256 KiB). Made with
    /// mode 0600 if missing. A `bareweb build --disk` image needs none: its own end holds
    /// the area
    #[arg(long, value_name = "FILE")]
    pub state_disk: Option<PathBuf>,
    /// With --acme-domain: the root certificates (PEM) the kernel's ACME client trusts for
    /// the CA's HTTPS, instead of the Web PKI's built in (a private or test CA); put in the
    /// boot module after the site
    #[arg(long, value_name = "FILE")]
    pub acme_ca: Option<PathBuf>,
    #[command(flatten)]
    pub kernel: KernelOpts,
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
    /// The server's MAC address, once per --net in the same order [default: QEMU's,
    /// 52:54:00:12:34:56 and up]
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

impl RunArgs {
    /// NIC `k`'s model: the one `--nic` given once (or none: virtio) names every NIC.
    pub fn nic(&self, k: usize) -> NicModel {
        match self.nics.as_slice() {
            [] => NicModel::Virtio,
            [one] => *one,
            many => many.get(k).copied().unwrap_or(NicModel::Virtio),
        }
    }

    /// Every NIC's model, in `--net` order.
    pub fn models(&self) -> Vec<NicModel> {
        (0..self.nets.len()).map(|k| self.nic(k)).collect()
    }

    /// Whether every NIC is of model `m`.
    pub fn all(&self, m: NicModel) -> bool {
        self.models().iter().all(|&n| n == m)
    }

    /// The models as the console says them: `virtio`, or `e1000e + igb` for a mixed set.
    pub fn models_text(&self) -> String {
        let mut v: Vec<String> = Vec::new();
        for m in self.models() {
            let name = value_name(m);
            if !v.contains(&name) {
                v.push(name);
            }
        }
        v.join(" + ")
    }

    /// Whether a NIC on QEMU's user networking is one whose segmentation QEMU does in
    /// software (`net_tx_pkt`: the e1000e, igb and vmxnet3 models; a TAP takes the frame
    /// whole instead) and offloads were not turned off already. That software path clears
    /// FIN on every segment it cuts, the last too, so a response sent with its FIN in one
    /// offloaded frame loses the FIN and the client waits for its retransmission (~200 ms
    /// a `Connection: close` response): `run` turns the kernel's offloads off then.
    pub fn segmentation_loses_fin(&self) -> bool {
        !self.kernel.no_offload
            && self.nets.iter().enumerate().any(|(k, n)| {
                *n == Net::User
                    && matches!(
                        self.nic(k),
                        NicModel::E1000e | NicModel::Igb | NicModel::Vmxnet3
                    )
            })
    }

    /// `--nic` given several times must name one model per `--net`.
    pub fn check_nics(&self) -> Result<(), String> {
        match (self.nics.len(), self.nets.len()) {
            (0 | 1, _) => Ok(()),
            (n, m) if n == m => Ok(()),
            (n, m) => Err(format!(
                "--nic given {n} times for {m} --net: give it once (every NIC) or once per --net, in the same order"
            )),
        }
    }
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
        self.server.check_bare(false)?;
        self.check_nets()?;
        self.cores_plan().map(|_| ())?;
        opts::kernel_settings(&self.cmdline())?;
        let kind = kind_of(&self.site);
        if matches!(kind, Kind::Iso | Kind::Disk) {
            if !self.cmdline().is_empty() {
                return Err(format!(
                    "{} is an ISO or disk image: GRUB boots it with the command line built in; give the \
                     server options to `bareweb build --iso/--disk`, or run the site directory or its .elf",
                    self.site.display()
                ));
            }
            if self.config.is_some() {
                return Err(
                    "--config applies to a site directory, not an ISO or disk image".into(),
                );
            }
        }
        if self.server.settings.tls.cert && matches!(kind, Kind::Elf | Kind::Iso | Kind::Disk) {
            return Err(format!(
                "{} is a built image: its certificate and key are built in with it; give --tls-cert and \
                 --tls-key to `bareweb build`, or run the site directory",
                self.site.display()
            ));
        }
        if https(&self.server.settings) && self.listen_https == self.listen {
            return Err(format!(
                "--listen-https {} is --listen too: give HTTPS a host port of its own",
                self.listen_https
            ));
        }
        self.check_acme(kind)
    }

    /// `--acme-ca` and `--state-disk` against `--acme-domain` and what boots. An `.elf` or
    /// `.iso` may carry `acme_domain=` in its built-in line: `crate::launch` checks the
    /// state disk against it once the image is read ([`state_disk_needed`]).
    fn check_acme(&self, kind: Kind) -> Result<(), String> {
        let acme = self.server.settings.acme.on();
        let built = matches!(kind, Kind::Elf | Kind::Iso | Kind::Disk);
        if self.acme_ca.is_some() && built {
            return Err(format!(
                "--acme-ca: {} is a built image: the ACME client's roots are built in with it; \
                 give --acme-ca to `bareweb build`, or run the site directory",
                self.site.display()
            ));
        }
        if self.acme_ca.is_some() && !acme {
            return Err("--acme-ca is the ACME client's: it needs --acme-domain".into());
        }
        if self.state_disk.is_some() {
            if kind == Kind::Disk {
                return Err(format!(
                    "--state-disk: {} is a disk image, whose own last {} KiB are its state \
                     area: leave --state-disk out (it is for a site directory, an .elf or an .iso)",
                    self.site.display(),
                    AREA_BYTES / 1024
                ));
            }
            if self.machine == Machine::Microvm {
                return Err(
                    "--state-disk: --machine microvm has no PCI bus, and the kernel finds its \
                     state disk on PCI (virtio-blk-pci): use --machine qboot, pc or q35"
                        .into(),
                );
            }
            if !acme && !built {
                return Err("--state-disk is the ACME client's: it needs --acme-domain".into());
            }
        }
        if acme {
            state_disk_needed(self, kind == Kind::Disk)?;
        }
        Ok(())
    }

    /// The NICs: at most four, all `user` (one hub) or all TAPs, each TAP once, at most a
    /// MAC each, and `--bond` only with two or more.
    fn check_nets(&self) -> Result<(), String> {
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
        self.server.bonding(n).map(|_| ())
    }

    /// The NICs' networks as the user gave them (`tap:a + tap:b`).
    pub fn nets_text(&self) -> String {
        self.nets
            .iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(" + ")
    }

    /// The kernel command line: the shared options given, the kernel's own, `--stats-log`,
    /// `--append`.
    pub fn cmdline(&self) -> String {
        let mut w = self.server.kernel_words(self.stats_log);
        w.extend(self.kernel.kernel_words());
        if self.segmentation_loses_fin() {
            w.push("offload=off".into());
        }
        w.extend(self.append.iter().cloned());
        w.join(" ")
    }

    /// The settings the kernel will boot with (over the kernel's defaults: see
    /// `crate::launch` for an image's built-in line).
    #[cfg(test)]
    pub fn settings(&self) -> Result<kernel_cmdline::Settings, String> {
        opts::kernel_settings(&self.cmdline())
    }

    /// The cores plan for these options (errors for impossible combinations).
    pub fn cores_plan(&self) -> Result<CoresPlan, String> {
        cores_plan(self)
    }
}

/// Whether the kernel serves HTTPS under `s`: with a certificate given, or one it
/// obtains over ACME (its HTTPS port refuses handshakes until then).
pub fn https(s: &bareweb_settings::Settings) -> bool {
    s.tls.cert || s.acme.on()
}

/// The state area's size: the last bytes of the kernel's virtio-blk disk.
pub const AREA_BYTES: u64 = bareweb_acme::store::AREA_BYTES;

/// The state area at the end of the file at `path` (a state disk, or a `build --disk`
/// image): its bytes when a slot holds a record (begins with the record's magic), `None`
/// when the file is missing, shorter than the area, or its area is blank. Slots holding
/// anything else (the file is not a state disk) are an error, as the kernel refuses them.
pub fn state_area_of(path: &std::path::Path) -> Result<Option<Vec<u8>>, String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let len = f.metadata().map_err(|e| e.to_string())?.len();
    if len < AREA_BYTES {
        return Ok(None);
    }
    let mut area = vec![0u8; AREA_BYTES as usize];
    f.seek(SeekFrom::Start(len - AREA_BYTES))
        .and_then(|_| f.read_exact(&mut area))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let slots: Vec<&[u8]> = area
        .chunks(bareweb_acme::store::SLOT_BYTES as usize)
        .collect();
    let magic = |s: &[u8]| s.starts_with(&bareweb_acme::store::MAGIC);
    if !slots.iter().all(|s| magic(s) || s.iter().all(|&b| b == 0)) {
        return Err(format!(
            "{}: its last {} KiB hold data that is not a state area: the kernel would refuse \
             to write there (give a file of its own)",
            path.display(),
            AREA_BYTES / 1024
        ));
    }
    Ok(slots.iter().any(|s| magic(s)).then_some(area))
}

/// With ACME on, a state disk is needed: `--state-disk`, or a `build --disk` image
/// (`disk_image`) whose own end holds the area. Refused otherwise, with the reason.
pub fn state_disk_needed(a: &RunArgs, disk_image: bool) -> Result<(), String> {
    if a.state_disk.is_some() || disk_image {
        return Ok(());
    }
    Err(format!(
        "--acme-domain needs a state disk for the kernel's account key and certificate: give \
         --state-disk FILE (made if missing, {} KiB), or boot a `bareweb build --disk` image, \
         whose end holds it. Without kept state every boot orders a new certificate, and the \
         CA limits orders",
        AREA_BYTES / 1024
    ))
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum Accel {
    Auto,
    Kvm,
    Tcg,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum Firmware {
    Bios,
    Uefi,
}

/// Where Debian's ovmf package puts the one-file OVMF firmware.
const OVMF_PATHS: &[&str] = &["/usr/share/ovmf/OVMF.fd", "/usr/share/qemu/OVMF.fd"];

#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum Machine {
    Qboot,
    Pc,
    Q35,
    Microvm,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum NicModel {
    /// virtio-net (PCI; virtio-mmio on microvm): queue pairs as the cores, offloads.
    Virtio,
    /// Intel 82540EM: one queue pair.
    E1000,
    /// Intel 82574L: two queue pairs with receive-side scaling, MSI-X.
    E1000e,
    /// Intel 82576 (QEMU ≥ 8): advanced descriptors, up to four queue pairs with RSS.
    Igb,
    /// VMware vmxnet3: one queue pair (QEMU's has no receive-side scaling), MSI-X.
    Vmxnet3,
}

impl NicModel {
    /// QEMU's `-device` name of the model.
    pub fn qemu_device(self) -> &'static str {
        match self {
            NicModel::Virtio => "virtio-net-pci",
            NicModel::E1000 => "e1000",
            NicModel::E1000e => "e1000e",
            NicModel::Igb => "igb",
            NicModel::Vmxnet3 => "vmxnet3",
        }
    }
}

/// Whether QEMU binary `qemu` has `-device` model `name` (`qemu -device help` lists it as
/// `name "NAME"`); None if QEMU could not be asked.
pub fn qemu_has_device(qemu: &str, name: &str) -> Option<bool> {
    let out = std::process::Command::new(qemu)
        .args(["-device", "help"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let list = String::from_utf8_lossy(&out.stdout);
    let want = format!("name \"{name}\"");
    Some(list.lines().any(|l| l.trim_start().starts_with(&want)))
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

/// What QEMU boots.
pub enum Boot<'p> {
    /// A kernel ELF (PVH), with the site image as the initrd or embedded in it.
    Kernel {
        kernel: &'p Path,
        initrd: Option<&'p Path>,
    },
    /// A bootable ISO (GRUB, BIOS and UEFI) written by `bareweb build --iso`.
    Cdrom(&'p Path),
    /// A bootable raw disk image (the same) written by `bareweb build --disk`.
    Disk(&'p Path),
}

/// The machine QEMU runs for `boot`: --machine, except that qboot boots kernels only, not
/// CDs or disks: those get pc (SeaBIOS), or under UEFI q35 with OVMF (the machine UEFI PCs
/// resemble).
pub fn machine_for(a: &RunArgs, boot: &Boot<'_>) -> Result<Machine, String> {
    let image = matches!(boot, Boot::Cdrom(_) | Boot::Disk(_));
    let uefi = a.firmware == Firmware::Uefi;
    if uefi && !image {
        return Err(
            "--firmware uefi boots an .iso or .img (bareweb build --iso / --disk): \
                    the kernel alone boots by PVH, which OVMF does not load"
                .into(),
        );
    }
    match (image, a.machine) {
        (true, Machine::Qboot) if uefi => Ok(Machine::Q35),
        (true, Machine::Qboot) => Ok(Machine::Pc),
        (true, Machine::Microvm) => Err(
            "--machine microvm boots kernels, not CDs or disks: run the site or its .elf".into(),
        ),
        (_, m) => Ok(m),
    }
}

/// The machine and firmware QEMU runs, as the start line says them: `q35 with OVMF
/// (UEFI)`, `pc with SeaBIOS`, `pc with qboot`, `microvm`.
pub fn machine_text(a: &RunArgs, boot: &Boot<'_>) -> Result<String, String> {
    let m = machine_for(a, boot)?;
    let firmware = match (m, a.firmware) {
        (Machine::Microvm, _) => return Ok("microvm".into()),
        (_, Firmware::Uefi) => "OVMF (UEFI)",
        (Machine::Qboot, _) => "qboot",
        _ => "SeaBIOS",
    };
    let name = match m {
        Machine::Qboot | Machine::Pc => "pc",
        Machine::Q35 => "q35",
        Machine::Microvm => "microvm",
    };
    Ok(format!("{name} with {firmware}"))
}

/// The QEMU arguments for what boots, under `settings` (the kernel's, as it will parse
/// them). The console is QEMU's stdio: `bareweb run` reads it (see `crate::launch`).
pub fn qemu_args(
    a: &RunArgs,
    accel: Accel,
    boot: &Boot<'_>,
    settings: &kernel_cmdline::Settings,
) -> Result<Vec<String>, String> {
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
    let machine = machine_for(a, boot)?;
    let uefi = a.firmware == Firmware::Uefi;
    if uefi {
        let fd = OVMF_PATHS
            .iter()
            .find(|p| Path::new(p).exists())
            .ok_or("OVMF firmware not found (Debian: sudo apt-get install ovmf)")?;
        push("-bios");
        push(fd);
    }
    match machine {
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
            // No option ROMs to run; the kernel finds its NIC in the machine's virtio-mmio
            // slots. virtio-mmio version 2 (virtio 1.x): QEMU's default is the legacy
            // interface, which the kernel does not drive.
            // qboot as its firmware, as for `--machine qboot`: QEMU's default for microvm
            // is SeaBIOS' bios-microvm.bin, and the one with QEMU 10 on bookworm-backports
            // (SeaBIOS 1.16.3) never reaches the kernel; qboot's PVH boot does, on QEMU
            // 7.2 and 10.
            let rom = QBOOT_PATHS
                .iter()
                .find(|p| Path::new(p).exists())
                .ok_or("qboot firmware not found (Debian: qemu-system-data ships /usr/share/qemu/qboot.rom)")?;
            push("-machine");
            push("microvm,x-option-roms=off");
            push("-bios");
            push(rom);
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
    push(&a.mem.to_string());
    push("-smp");
    push(&a.smp.to_string());
    match boot {
        Boot::Kernel { kernel, initrd } => {
            push("-kernel");
            push(&kernel.to_string_lossy());
            if let Some(i) = initrd {
                push("-initrd");
                push(&i.to_string_lossy());
            }
            push("-append");
            push(&cmdline);
        }
        Boot::Cdrom(iso) => {
            push("-cdrom");
            push(&iso.to_string_lossy());
        }
        Boot::Disk(img) => {
            // virtio-blk on PCI, which SeaBIOS and OVMF boot from and where the kernel
            // finds its state disk: with ACME the image's last 256 KiB are its state area
            // (`bareweb build --disk` reserves them), written through (see the state disk
            // below). Without ACME, snapshot=on: the guest's writes (it makes none) never
            // reach the user's file.
            push("-drive");
            push(&format!(
                "file={},format=raw,if=virtio,{}",
                qemu_file(img),
                if settings.acme.on() {
                    "cache=writethrough"
                } else {
                    "snapshot=on"
                }
            ));
        }
    }
    if let Some(disk) = &a.state_disk {
        if machine == Machine::Microvm {
            return Err("--state-disk: --machine microvm has no PCI bus".into());
        }
        // The kernel's ACME state: virtio-blk on PCI (the first one is the kernel's state
        // disk). cache=writethrough: QEMU completes a guest write only once it has flushed
        // it to the file's storage (fdatasync), so a record the kernel wrote survives QEMU's
        // end or the host's power loss even before the kernel's FLUSH, which reaches the
        // file too (writeback, QEMU's default, would keep a write in the host's page cache
        // until that FLUSH); unlike cache=none (O_DIRECT) it works on any file system, tmpfs
        // too. The kernel writes a few 64 KiB requests a certificate: the cost is nothing.
        push("-drive");
        push(&format!(
            "file={},format=raw,if=none,id=state,cache=writethrough",
            qemu_file(disk)
        ));
        push("-device");
        push("virtio-blk-pci,drive=state");
    }
    push("-device");
    push("isa-debug-exit,iobase=0xf4,iosize=0x04");
    push("-serial");
    push("stdio");
    if let Some(m) = &a.monitor {
        push("-monitor");
        push(&format!("unix:{},server=on,wait=off", m.display()));
    }
    let user = format!(
        "user,id={{id}},hostfwd=tcp:{}:{}-{}:{}{}",
        a.listen.ip(),
        a.listen.port(),
        settings.ip,
        settings.port,
        // The UDP protocol's port, forwarded from the same host address, same number.
        match settings.udp.port {
            Some(u) => format!(",hostfwd=udp:{}:{u}-{}:{u}", a.listen.ip(), settings.ip),
            None => String::new(),
        }
    ) + &if https(settings) {
        // HTTPS: --listen-https to the guest's --https-port.
        format!(
            ",hostfwd=tcp:{}:{}-{}:{}",
            a.listen_https.ip(),
            a.listen_https.port(),
            settings.ip,
            settings.tls.port()
        )
    } else {
        String::new()
    };
    let several = a.nets.len() > 1;
    if several && a.nets[0] == Net::User {
        // One user network for every NIC: a QEMU hub joins them (it repeats every frame to
        // every port, as a hub does), so they share one link as on a switch.
        push("-netdev");
        push(&user.replace("{id}", "u0"));
        push("-netdev");
        push("hubport,id=h0,hubid=0,netdev=u0");
    }
    // Only virtio-net takes queues from the TAP; the 82574's two are RSS inside the device.
    let queues = |model| match plan.queues {
        n if n > 1 && model == NicModel::Virtio => format!(",queues={n}"),
        _ => String::new(),
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
                "tap,id=n{k},ifname={ifname},script=no,downscript=no,vhost=off{}",
                queues(a.nic(k))
            )),
        }
        let mac = match a.macs.get(k) {
            Some(m) => format!(",mac={m}"),
            None => String::new(),
        };
        push("-device");
        match (a.nic(k), machine) {
            (NicModel::Virtio, Machine::Microvm) => push(&format!(
                "virtio-net-device,netdev=n{k},id=nic{k},rx_queue_size=1024{mac}"
            )),
            (NicModel::Virtio, _) => push(&format!(
                "virtio-net-pci,netdev=n{k},id=nic{k},rx_queue_size=1024{mac}{mq}"
            )),
            (
                NicModel::E1000 | NicModel::E1000e | NicModel::Igb | NicModel::Vmxnet3,
                Machine::Microvm,
            ) => return Err("--machine microvm has no PCI bus: use --nic virtio".into()),
            (NicModel::E1000 | NicModel::E1000e | NicModel::Igb | NicModel::Vmxnet3, _) => {
                push(&format!(
                    "{},netdev=n{k},id=nic{k}{mac}{}",
                    a.nic(k).qemu_device(),
                    igb_slot(a.nic(k), k, several)
                ))
            }
        }
    }
    Ok(v)
}

/// A file name as a QEMU option value: `,` doubled (QEMU's escape in `-drive file=`).
fn qemu_file(p: &Path) -> String {
    p.to_string_lossy().replace(',', ",,")
}

/// QEMU's igb reserves PCI functions for its eight virtual functions 16 and 17 slots past
/// its own: two igb in adjacent slots (QEMU's choice) collide ("slot 19 function 0 not
/// available for igbvf"). So with several, NIC k gets slot 8 + 2k (its functions at 24 +
/// 2k and 25 + 2k, inside the bus's 32 for up to four NICs).
fn igb_slot(nic: NicModel, k: usize, several: bool) -> String {
    if nic == NicModel::Igb && several {
        format!(",addr={:#x}", 8 + 2 * k)
    } else {
        String::new()
    }
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
    a.check_nics()?;
    let mode = a.server.mode();
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
    let min_queues = if a.all(NicModel::Virtio)
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
        let asked = mode.map(ModeArg::asked);
        return Ok(CoresPlan {
            queues: min_queues,
            note: plan::decide(1, asked, a.server.settings.bsp_http, 1)
                .why
                .to_string(),
        });
    }
    let why_not = a
        .models()
        .into_iter()
        .find_map(|m| why_not_perqueue(a, m, tap));
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
                "{} cores, per-queue mode: {} with {} queue pairs{}",
                a.smp,
                a.models_text(),
                a.smp,
                if a.models().iter().any(|&m| m != NicModel::Virtio) {
                    " (receive-side scaling)"
                } else {
                    ""
                }
            ),
        }),
        (None, Some(why)) => Ok(CoresPlan {
            queues: 1,
            note: format!("{} cores, network-core mode, because {why}", a.smp),
        }),
    }
}

/// Why NIC model `m` cannot give every core its own queue pair under `a` (None: it can).
fn why_not_perqueue(a: &RunArgs, m: NicModel, tap: Option<TapKind>) -> Option<String> {
    match (m, tap) {
        (NicModel::E1000, _) => Some("the e1000 has one queue".to_string()),
        (NicModel::Vmxnet3, _) => Some(
            "QEMU's vmxnet3 delivers every frame to one queue (no receive-side scaling)"
                .to_string(),
        ),
        (NicModel::E1000e, _) if a.smp > 2 => {
            Some("the e1000e has two queue pairs, not one per core".to_string())
        }
        (NicModel::E1000e, _) => None,
        (NicModel::Igb, _) if a.smp > 4 => {
            Some("the igb driver drives four queue pairs, not one per core".to_string())
        }
        (NicModel::Igb, _) => None,
        (NicModel::Virtio, _) if a.machine == Machine::Microvm => Some(
            "virtio-mmio gives a device one interrupt line, which can wake one core".to_string(),
        ),
        (NicModel::Virtio, None) => {
            Some("QEMU user networking gives the NIC one queue".to_string())
        }
        (NicModel::Virtio, Some(TapKind::SingleQueue)) => Some(
            "a TAP is single-queue (create it with `ip tuntap add NAME mode tap multi_queue`)"
                .to_string(),
        ),
        _ => None,
    }
}

/// Whether `qemu` names an executable (a path, or a name found on PATH).
pub fn qemu_present(qemu: &str) -> bool {
    if qemu.contains('/') {
        return Path::new(qemu).is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(qemu).is_file()))
}

pub fn shell_words(args: &[String]) -> String {
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
        let boot = Boot::Kernel {
            kernel: Path::new("k"),
            initrd: Some(Path::new("s")),
        };
        qemu_args(&a, Accel::Tcg, &boot, &a.settings()?).map(|v| v.join(" "))
    }

    #[test]
    fn ip_dhcp_reaches_the_kernel_and_user_networking_forwards_to_slirps_address() {
        let a = args(&["--ip", "dhcp"]);
        assert!(a.server.settings.dhcp);
        let s = a.settings().unwrap();
        assert!(s.dhcp);
        let q = qemu(&["--ip", "dhcp"]).unwrap();
        assert!(q.contains("ip=dhcp"), "{q}");
        // slirp's DHCP server gives its first guest 10.0.2.15, where the forward points.
        assert!(q.contains("-10.0.2.15:80"), "{q}");
        let e = Cli::try_parse_from(["bareweb", "site", "--ip", "dchp"])
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("or dhcp"), "{e}");
    }

    #[test]
    fn https_is_forwarded_from_listen_https_to_the_kernels_https_port() {
        let tls = ["--tls-cert", "/x/my cert.pem", "--tls-key", "k.pem"];
        let q = qemu(&tls).unwrap();
        assert!(
            q.contains("hostfwd=tcp:127.0.0.1:8080-10.0.2.15:80,"),
            "{q}"
        );
        assert!(
            q.contains("hostfwd=tcp:127.0.0.1:8443-10.0.2.15:443"),
            "{q}"
        );
        // The kernel gets the files' names (no directory, no white space), not the paths.
        assert!(q.contains("tls_cert=my_cert.pem tls_key=k.pem"), "{q}");
        let mut w = tls.to_vec();
        w.extend(["--https-port", "4443", "--listen-https", "0.0.0.0:9443"]);
        let q = qemu(&w).unwrap();
        assert!(q.contains("hostfwd=tcp:0.0.0.0:9443-10.0.2.15:4443"), "{q}");
        // Without a certificate, no HTTPS forward.
        assert!(!qemu(&[]).unwrap().contains("8443"));
        // One host port for both is refused; so is a certificate for a built image.
        let mut w = tls.to_vec();
        w.extend(["--listen-https", "127.0.0.1:8080"]);
        assert!(args(&w).check().unwrap_err().contains("--listen-https"));
        let mut v = vec!["bareweb", "site.elf"];
        v.extend_from_slice(&tls);
        let e = Cli::parse_from(v).run.check().unwrap_err();
        assert!(e.contains("`bareweb build`"), "{e}");
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
        assert!(qemu(&["--poll-always"]).unwrap().contains("poll=always"));
        assert!(qemu(&["--no-offload"]).unwrap().contains("offload=off"));
        // QEMU's software segmentation drops FIN: user networking with e1000e, igb or
        // vmxnet3 boots with offloads off; a TAP, virtio and e1000 keep them.
        for (args, off) in [
            (&["--nic", "e1000e"][..], true),
            (&["--nic", "igb"][..], true),
            (&["--nic", "vmxnet3"][..], true),
            (&["--nic", "e1000"][..], false),
            (&[][..], false),
            (&["--nic", "igb", "--net", "tap:bwq0"][..], false),
        ] {
            assert_eq!(qemu(args).unwrap().contains("offload=off"), off, "{args:?}");
        }
        assert!(qemu(&["--idle-poll-us", "50"])
            .unwrap()
            .contains("idle_poll_us=50"));
        assert!(!qemu(&[]).unwrap().contains("idle_poll_us"));
        for bad in [
            &["--idle-poll-us", "1000001"][..],
            &["--poll-always", "--idle-poll-us", "5"],
        ] {
            let mut v = vec!["bareweb", "site"];
            v.extend_from_slice(bad);
            assert!(Cli::try_parse_from(v).is_err(), "{bad:?}");
        }
        assert_eq!(args(&["--tcbs", "1"]).server.settings.tcbs, 1);
        assert_eq!(args(&["--tcbs", "1048576"]).server.settings.tcbs, 1 << 20);
        assert!(qemu(&["--tcbs", "64"]).unwrap().contains("tcbs=64"));
        assert!(Cli::try_parse_from(["bareweb", "site", "--port", "0"]).is_err());
        assert_eq!(args(&["--port", "8080"]).server.settings.port, 8080);
    }

    #[test]
    fn several_nics_reach_qemu_and_bad_sets_are_refused() {
        // Two user networks: one slirp on one hub, a hub port and a device per NIC.
        let two = qemu(&["--machine", "pc", "--net", "user", "--net", "user"]).unwrap();
        assert!(two.contains("-netdev user,id=u0,hostfwd=tcp:127.0.0.1:8080-10.0.2.15:80"));
        assert!(
            two.contains("-netdev hubport,id=h0,hubid=0,netdev=u0"),
            "{two}"
        );
        assert!(
            two.contains("-netdev hubport,id=n1,hubid=0 -device virtio-net-pci,netdev=n1,id=nic1")
        );
        // TAPs: one netdev each, MACs in order, the monitor, the bond words.
        let taps = qemu(&[
            "--machine",
            "pc",
            "--net",
            "tap:bwa",
            "--net",
            "tap:bwb",
            "--nic",
            "e1000",
            "--mac",
            "02:00:00:00:00:01",
            "--mac",
            "02:00:00:00:00:02",
            "--bond",
            "split",
            "--bond-policy",
            "size",
            "--monitor",
            "/tmp/m",
        ])
        .unwrap();
        assert!(taps.contains("tap,id=n1,ifname=bwb,"), "{taps}");
        assert!(
            taps.contains("e1000,netdev=n1,id=nic1,mac=02:00:00:00:00:02"),
            "{taps}"
        );
        assert!(
            taps.contains("-monitor unix:/tmp/m,server=on,wait=off"),
            "{taps}"
        );
        assert!(taps.contains("bond=split bond_policy=size"), "{taps}");
        // A bond of mixed models: --nic once per --net, in order.
        let mixed = qemu(&[
            "--machine",
            "pc",
            "--net",
            "tap:bwa",
            "--net",
            "tap:bwb",
            "--nic",
            "e1000e",
            "--nic",
            "virtio",
        ])
        .unwrap();
        assert!(
            mixed.contains("-device e1000e,netdev=n0,id=nic0"),
            "{mixed}"
        );
        assert!(
            mixed.contains("-device virtio-net-pci,netdev=n1,id=nic1"),
            "{mixed}"
        );
        let m = args(&[
            "--net", "user", "--net", "user", "--nic", "igb", "--nic", "e1000",
        ]);
        assert_eq!(m.models(), [NicModel::Igb, NicModel::E1000]);
        assert_eq!(m.models_text(), "igb + e1000");
        assert_eq!(args(&["--nic", "e1000e"]).models(), [NicModel::E1000e]);
        assert_eq!(args(&[]).models(), [NicModel::Virtio]);
        // One e1000 in the set keeps every core on one queue.
        let two = args(&[
            "--net", "user", "--net", "user", "--nic", "e1000e", "--nic", "e1000", "--smp", "2",
        ]);
        let plan = cores_plan(&two).unwrap();
        assert_eq!(plan.queues, 1, "{}", plan.note);
        assert!(
            plan.note.contains("the e1000 has one queue"),
            "{}",
            plan.note
        );
        for (bad, why) in [
            (&["--net", "user", "--net", "tap:bwa"][..], "do not mix"),
            (&["--net", "tap:bwa", "--net", "tap:bwa"], "given twice"),
            (&["--bond", "spread"], "needs two NICs"),
            (
                &["--net", "user", "--nic", "e1000", "--nic", "igb"],
                "once per --net",
            ),
            (
                &["--mac", "02:00:00:00:00:01", "--mac", "02:00:00:00:00:02"],
                "one MAC per NIC",
            ),
            (
                &[
                    "--net", "user", "--net", "user", "--net", "user", "--net", "user", "--net",
                    "user",
                ],
                "4 NICs at most",
            ),
        ] {
            let mut v = vec!["bareweb", "site"];
            v.extend_from_slice(bad);
            let e = Cli::try_parse_from(v).unwrap().run.check().unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }

    /// The start line names the machine QEMU really runs, and its firmware.
    #[test]
    fn the_machine_said_is_the_one_run() {
        let disk = Boot::Disk(Path::new("site.img"));
        let cd = Boot::Cdrom(Path::new("site.iso"));
        let kernel = Boot::Kernel {
            kernel: Path::new("k.elf"),
            initrd: None,
        };
        let m = |words: &[&str], boot: &Boot<'_>| machine_text(&args(words), boot).unwrap();
        assert_eq!(m(&[], &kernel), "pc with qboot");
        assert_eq!(m(&["--firmware", "uefi"], &disk), "q35 with OVMF (UEFI)");
        assert_eq!(m(&["--firmware", "uefi"], &cd), "q35 with OVMF (UEFI)");
        assert_eq!(
            m(&["--firmware", "uefi", "--machine", "pc"], &cd),
            "pc with OVMF (UEFI)"
        );
        assert_eq!(m(&[], &disk), "pc with SeaBIOS");
        assert_eq!(m(&["--machine", "q35"], &kernel), "q35 with SeaBIOS");
        assert_eq!(m(&["--machine", "microvm"], &kernel), "microvm");
        assert!(machine_text(&args(&["--firmware", "uefi"]), &kernel).is_err());
    }

    #[test]
    fn uefi_boots_images_with_ovmf_on_q35() {
        let boot_with = |words: &[&str], boot: &Boot<'_>| {
            let a = args(words);
            qemu_args(&a, Accel::Tcg, boot, &a.settings().unwrap()).map(|v| v.join(" "))
        };
        let disk = Boot::Disk(Path::new("site,1.img"));
        let cd = Boot::Cdrom(Path::new("site.iso"));
        if OVMF_PATHS.iter().any(|p| Path::new(p).exists()) {
            let d = boot_with(&["--firmware", "uefi"], &disk).unwrap();
            assert!(d.contains("-machine q35") && d.contains("OVMF.fd"), "{d}");
            assert!(
                d.contains("-drive file=site,,1.img,format=raw,if=virtio,snapshot=on"),
                "{d}"
            );
            let c = boot_with(&["--firmware", "uefi", "--machine", "pc"], &cd).unwrap();
            assert!(
                c.contains("-machine pc") && c.contains("-cdrom site.iso"),
                "{c}"
            );
        }
        // BIOS: SeaBIOS on pc (qboot boots kernels only); the kernel alone is no UEFI image.
        let b = boot_with(&[], &disk).unwrap();
        assert!(b.contains("-machine pc") && !b.contains("OVMF"), "{b}");
        assert!(
            b.contains(
                "-drive file=site,,1.img,format=raw,if=virtio,snapshot=on -device isa-debug-exit"
            ),
            "{b}"
        );
        let e = qemu(&["--firmware", "uefi"]).unwrap_err();
        assert!(e.contains("--iso"), "{e}");
        assert!(boot_with(&["--machine", "microvm"], &disk).is_err());
    }

    #[test]
    fn e1000e_gets_its_device_and_two_pairs_of_rss_whatever_the_backend() {
        // Two NICs on TAPs: the model on each, no TAP queues (RSS is inside the device).
        let t = qemu(&[
            "--machine",
            "pc",
            "--smp",
            "2",
            "--nic",
            "e1000e",
            "--net",
            "tap:bwe-none0",
            "--net",
            "tap:bwe-none1",
        ])
        .unwrap();
        assert!(t.contains("-device e1000e,netdev=n0,id=nic0"), "{t}");
        assert!(t.contains("-device e1000e,netdev=n1,id=nic1"), "{t}");
        assert!(!t.contains("queues=") && !t.contains("mq=on"), "{t}");
        // Per-queue on two cores even with user networking; network-core past two.
        let two = cores_plan(&args(&["--nic", "e1000e", "--smp", "2"])).unwrap();
        assert_eq!(two.queues, 2);
        assert!(
            two.note
                .contains("per-queue mode: e1000e with 2 queue pairs (receive-side scaling)"),
            "{}",
            two.note
        );
        let four = cores_plan(&args(&["--nic", "e1000e", "--smp", "4"])).unwrap();
        assert!(
            four.note
                .contains("network-core mode, because the e1000e has two queue pairs"),
            "{}",
            four.note
        );
        assert!(cores_plan(&args(&[
            "--nic", "e1000e", "--smp", "4", "--mode", "perqueue"
        ]))
        .is_err());
        assert!(qemu(&["--machine", "microvm", "--nic", "e1000e"]).is_err());
        // A QEMU that cannot be asked says nothing either way.
        assert_eq!(qemu_has_device("/nonexistent/qemu", "e1000e"), None);
    }

    #[test]
    fn several_igb_sit_two_slots_apart_for_their_virtual_functions() {
        let one = qemu(&["--nic", "igb"]).unwrap();
        assert!(
            one.contains("-device igb,netdev=n0,id=nic0") && !one.contains("addr="),
            "{one}"
        );
        let two = qemu(&[
            "--nic",
            "igb",
            "--net",
            "tap:bwi-none0",
            "--net",
            "tap:bwi-none1",
        ])
        .unwrap();
        assert!(
            two.contains("-device igb,netdev=n0,id=nic0,addr=0x8"),
            "{two}"
        );
        assert!(
            two.contains("-device igb,netdev=n1,id=nic1,addr=0xa"),
            "{two}"
        );
    }

    #[test]
    fn igb_is_per_queue_up_to_four_cores_with_rss() {
        for smp in ["2", "4"] {
            let p = cores_plan(&args(&["--nic", "igb", "--smp", smp])).unwrap();
            assert_eq!(p.queues.to_string(), smp);
            assert!(
                p.note.contains(&format!(
                    "per-queue mode: igb with {smp} queue pairs (receive-side scaling)"
                )),
                "{}",
                p.note
            );
        }
        let six = cores_plan(&args(&["--nic", "igb", "--smp", "6"])).unwrap();
        assert!(
            six.note
                .contains("network-core mode, because the igb driver drives four queue pairs"),
            "{}",
            six.note
        );
        assert!(cores_plan(&args(&["--nic", "igb", "--smp", "6", "--mode", "perqueue"])).is_err());
    }

    #[test]
    fn cores_and_modes_reach_qemu_and_the_kernel() {
        // microvm: virtio-mmio, version 2, one queue pair (network-core mode on 2 cores).
        let m = qemu(&["--machine", "microvm", "--smp", "2"]).unwrap();
        assert!(
            m.contains("-machine microvm,x-option-roms=off -bios /usr/share/qemu/qboot.rom -global virtio-mmio.force-legacy=false"),
            "{m}"
        );
        assert!(
            m.contains("virtio-net-device,netdev=n0") && !m.contains("mq=on"),
            "{m}"
        );
        assert!(qemu(&["--machine", "microvm", "--nic", "e1000"]).is_err());
        assert!(
            args(&["--machine", "microvm", "--smp", "2", "--mode", "perqueue"])
                .cores_plan()
                .is_err()
        );
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

    /// What ACME adds to a run: the state disk on PCI virtio-blk, written through; HTTPS
    /// forwarded; the words on the kernel's command line whole, a URL's `:` and `/` too.
    #[test]
    fn acme_reaches_the_kernel_with_its_state_disk() {
        let acme = [
            "--machine",
            "pc",
            "--acme-domain",
            "a.test,b.test",
            "--acme-directory",
            "https://10.0.2.2:14000/dir?x=1",
            "--acme-email",
            "ops@a.test",
            "--acme-challenge",
            "tls-alpn-01",
            "--dns",
            "10.0.2.3",
            "--state-disk",
            "/var/lib/bw/state,1.img",
        ];
        let a = args(&acme);
        a.check().unwrap();
        let v = {
            let boot = Boot::Kernel {
                kernel: Path::new("k"),
                initrd: Some(Path::new("s")),
            };
            qemu_args(&a, Accel::Tcg, &boot, &a.settings().unwrap()).unwrap()
        };
        let at = v.iter().position(|w| w == "-append").unwrap();
        assert_eq!(
            v[at + 1],
            "acme_domain=a.test,b.test acme_directory=https://10.0.2.2:14000/dir?x=1 \
             acme_email=ops@a.test acme_challenge=tls-alpn-01 dns=10.0.2.3"
        );
        let q = v.join(" ");
        assert!(
            q.contains(
                "-drive file=/var/lib/bw/state,,1.img,format=raw,if=none,id=state,cache=writethrough \
                 -device virtio-blk-pci,drive=state"
            ),
            "{q}"
        );
        assert!(
            q.contains("hostfwd=tcp:127.0.0.1:8443-10.0.2.15:443"),
            "HTTPS is forwarded before the certificate is held: {q}"
        );
        assert!(!qemu(&[]).unwrap().contains("virtio-blk"));
        // Roots for the ACME client from a file.
        let mut w = acme.to_vec();
        w.extend(["--acme-ca", "ca.pem"]);
        args(&w).check().unwrap();
    }

    #[test]
    fn acme_needs_a_state_disk_and_its_options_need_acme() {
        let acme = ["--acme-domain", "a.test", "--dns", "10.0.2.3"];
        let with = |more: &[&str]| {
            let mut v = acme.to_vec();
            v.extend_from_slice(more);
            args(&v).check()
        };
        let e = with(&[]).unwrap_err();
        assert!(
            e.contains("--state-disk FILE") && e.contains("--disk") && e.contains("CA limits"),
            "{e}"
        );
        with(&["--state-disk", "s.img"]).unwrap();
        let e = with(&["--state-disk", "s.img", "--machine", "microvm"]).unwrap_err();
        assert!(e.contains("microvm has no PCI"), "{e}");
        for (bad, why) in [
            (&["--state-disk", "s.img"][..], "it needs --acme-domain"),
            (&["--acme-ca", "ca.pem"], "it needs --acme-domain"),
            (
                &["--acme-domain", "a.test", "--state-disk", "s.img"],
                "give --dns",
            ),
            (
                &["--acme-email", "ops@a.test", "--state-disk", "s.img"],
                "need --acme-domain",
            ),
            (
                &[
                    "--acme-domain",
                    "a.test",
                    "--dns",
                    "10.0.2.3",
                    "--state-disk",
                    "s.img",
                    "--tls-cert",
                    "c.pem",
                    "--tls-key",
                    "k.pem",
                ],
                "not both",
            ),
            (
                &[
                    "--acme-domain",
                    "a.test",
                    "--dns",
                    "10.0.2.3",
                    "--state-disk",
                    "s.img",
                    "--udp-port",
                    "50000",
                ],
                "DNS queries",
            ),
        ] {
            let e = args(bad).check().unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
        // Built images: the roots are built in; a disk image holds its own state area; an
        // .elf or .iso may take a state disk (its built-in line is checked at boot).
        let built = |site: &str, more: &[&str]| {
            let mut v = vec!["bareweb", site];
            v.extend_from_slice(more);
            Cli::parse_from(v).run.check()
        };
        let e = built("s.elf", &["--acme-ca", "ca.pem"]).unwrap_err();
        assert!(e.contains("`bareweb build`"), "{e}");
        let e = built("s.img", &["--state-disk", "s.state"]).unwrap_err();
        assert!(e.contains("its state area"), "{e}");
        built("s.elf", &["--state-disk", "s.state"]).unwrap();
        built("s.iso", &["--state-disk", "s.state"]).unwrap();
        built("s.img", &[]).unwrap();
        assert!(state_disk_needed(&args(&[]), true).is_ok());
        assert!(state_disk_needed(&args(&[]), false).is_err());
    }

    /// A disk image whose built-in line has ACME is attached writable, written through:
    /// its last 256 KiB are the kernel's state area.
    #[test]
    fn a_disk_image_with_acme_is_written_through() {
        let a = args(&[]);
        let disk = Boot::Disk(Path::new("site.img"));
        let s = opts::kernel_settings("acme_domain=a.test dns=10.0.2.3").unwrap();
        let q = qemu_args(&a, Accel::Tcg, &disk, &s).unwrap().join(" ");
        assert!(
            q.contains("-drive file=site.img,format=raw,if=virtio,cache=writethrough -device"),
            "{q}"
        );
        assert!(!q.contains("snapshot") && !q.contains("id=state"), "{q}");
    }
}
