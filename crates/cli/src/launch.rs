//! `bareweb run`, honestly: everything that can be checked is checked before QEMU starts
//! (the site or image, the memory it needs, the listen port, QEMU itself), "serving" is
//! said only once the kernel's console says `bareweb: ready`, and a QEMU failure is
//! translated into its cause and a fix.
//!
//! QEMU's stdio is the kernel's console (COM1): a thread reads it line by line, copies it
//! to the terminal or `--serial-log` (or drops it with `--headless`) and watches for the
//! ready line; another keeps QEMU's stderr for the translation. The temporary directory
//! (kernel, site image) goes on every way out: normal exit, Ctrl-C, SIGTERM, SIGHUP, a
//! closed pipe on the console (SIGPIPE is ignored by Rust, so the write fails and we stop),
//! and a panic (the hook removes it; QEMU dies with us through PR_SET_PDEATHSIG).
//! `--dry-run` keeps it and says where.

use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv6Addr, SocketAddrV4, SocketAddrV6, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::kernel_image::{kind_of, Kind, KERNEL};
use crate::opts::{kernel_cmdline, value_name};
use crate::relay6::{self, Listen6};
use crate::run::{
    choose_accel, cores_plan, https, machine_text, qemu_args, qemu_present, shell_words,
    state_disk_needed, Boot, Net, NicModel, RunArgs, AREA_BYTES, KERNEL_FAILED, QEMU_HINT,
};

/// What `bareweb run` was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// A site directory: built now.
    Dir,
    /// A site image (`bareweb build -o X.bws`).
    SiteImage,
    /// A single-file bootable ELF (`bareweb build -o X.elf`).
    Elf,
    /// A bootable ISO (`bareweb build --iso X.iso`).
    Iso,
    /// A bootable raw disk image (`bareweb build --disk X.img`).
    Disk,
}

/// What `path` is, by its content (the extension, in any case, only for an ISO).
pub fn input_kind(path: &Path) -> Result<Input, String> {
    if path.is_dir() {
        return Ok(Input::Dir);
    }
    let mut head = [0u8; 8];
    let n = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    match &head[..n] {
        [0x7f, b'E', b'L', b'F', ..] => Ok(Input::Elf),
        [b'B', b'W', b'S', b'I', b'T', b'E', 0, 0] => Ok(Input::SiteImage),
        _ if kind_of(path) == Kind::Iso => Ok(Input::Iso),
        _ if kind_of(path) == Kind::Disk => Ok(Input::Disk),
        _ => Err(format!(
            "{} is not a site directory, a site image, a bootable .elf, .iso or .img \
             (write one with `bareweb build`)",
            path.display()
        )),
    }
}

/// The command line baked into a bootable image (`.elf` or `.iso`) by `bareweb build`.
pub fn baked_cmdline(bytes: &[u8]) -> Option<String> {
    const MAGIC: &[u8; 16] = b"BAREWEB-SITE-v1\0";
    let at = bytes.windows(MAGIC.len()).position(|w| w == MAGIC)?;
    let d = bytes.get(at..at + 40)?;
    let len = u64::from_le_bytes(d[32..40].try_into().ok()?) as usize;
    let line = bytes.get(at + 40..at + 40 + len.min(496))?;
    String::from_utf8(line.to_vec()).ok()
}

/// Memory the VM needs, in bytes: firmware, low memory and the kernel; the site image;
/// per core the TCBs (~10 KiB each with their buffers) and ~8 MiB of rings and stacks.
/// With HTTPS, the kernel's floor below which no new session is made (16 MiB,
/// docs/kernel.md "TLS on the bare machine") and room for [`TLS_SESSIONS_PER_CORE`]
/// sessions on each core at [`TLS_SESSION_BYTES`] each.
pub fn memory_needed(image_len: u64, tcbs: usize, cores: u32, tls: bool) -> u64 {
    let mut per_core = tcbs as u64 * 10 * 1024 + (8 << 20);
    let mut fixed = (24 << 20) + KERNEL.len() as u64 + image_len;
    if tls {
        fixed += 16 << 20;
        per_core += TLS_SESSIONS_PER_CORE * TLS_SESSION_BYTES;
    }
    fixed + u64::from(cores) * per_core
}

/// HTTPS sessions each core is given room for in `run`'s estimate (more run when there is
/// memory: this is the floor the estimate promises).
pub const TLS_SESSIONS_PER_CORE: u64 = 64;
/// One HTTPS session at most: up to 64 KiB of unacknowledged ciphertext, up to 64 KiB of
/// received ciphertext and spilled plaintext, and rustls's own state and record buffers.
pub const TLS_SESSION_BYTES: u64 = 192 << 10;

/// Where the files QEMU boots live: removed on drop unless kept (`--dry-run`, once it
/// printed the command).
struct Work {
    dir: PathBuf,
    keep: bool,
}

/// The work directory, for the panic hook and the signal path.
static WORK_DIR: Mutex<Option<PathBuf>> = Mutex::new(None);

impl Work {
    /// A new directory, removed on drop, at a panic and on the signal path, unless
    /// [`keep`](Self::keep) is called.
    fn new() -> Result<Work, String> {
        let base = std::env::temp_dir();
        for i in 0..100u32 {
            let p = base.join(format!("bareweb-run-{}-{i}", std::process::id()));
            if std::fs::create_dir(&p).is_ok() {
                *WORK_DIR.lock().unwrap_or_else(|e| e.into_inner()) = Some(p.clone());
                let prev = std::panic::take_hook();
                std::panic::set_hook(Box::new(move |info| {
                    remove_work_dir();
                    prev(info);
                }));
                return Ok(Work {
                    dir: p,
                    keep: false,
                });
            }
        }
        Err(format!("cannot create a directory in {}", base.display()))
    }

    /// Keeps the directory past this process (a dry run's, once printed).
    fn keep(&mut self) {
        self.keep = true;
        WORK_DIR.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

fn remove_work_dir() {
    let dir = WORK_DIR.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(d) = dir {
        let _ = std::fs::remove_dir_all(d);
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        if !self.keep {
            remove_work_dir();
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// QEMU's complaint turned into its cause and a fix, when we know it.
pub fn explain(stderr: &str, a: &RunArgs) -> Option<String> {
    let s = stderr;
    if s.contains("Could not set up host forwarding rule") {
        return Some(format!(
            "{} is already in use (another server?): give another with --listen 127.0.0.1:PORT",
            a.listen
        ));
    }
    if s.contains("initrd is too large") || s.contains("not enough space") {
        return Some(format!(
            "the site does not fit in --mem {}: give more, e.g. --mem {}M",
            a.mem,
            a.mem.mib() * 2
        ));
    }
    if s.contains("Could not access KVM") || s.contains("failed to initialize kvm") {
        return Some("KVM is not usable here: use --accel tcg (or --accel auto)".into());
    }
    if s.contains("Device or resource busy") {
        return Some(format!(
            "{} is busy: another process has the TAP open (another bareweb run or serve?)",
            a.nets_text()
        ));
    }
    if s.contains("could not configure /dev/net/tun") || s.contains("Operation not permitted") {
        let taps: Vec<&str> = a
            .nets
            .iter()
            .filter_map(|n| match n {
                Net::Tap(t) => Some(t.as_str()),
                Net::User => None,
            })
            .collect();
        let add = taps
            .iter()
            .map(|t| format!("sudo ip tuntap add {t} mode tap user $USER"))
            .collect::<Vec<_>>()
            .join("; ");
        return Some(format!(
            "QEMU may not open {}: making a TAP needs CAP_NET_ADMIN. Run as root, or make \
             the TAP for your user first ({add}; then put it on the server's link, e.g. \
             with an address: sudo ip addr add 10.0.0.1/24 dev {first} && sudo ip link set \
             {first} up) and run again as yourself",
            a.nets_text(),
            first = taps.first().copied().unwrap_or("NAME"),
        ));
    }
    if s.contains("Failed to get \"write\" lock") {
        return Some(format!(
            "{} is in use by another QEMU (another bareweb run?): it keeps the kernel's ACME \
             state, which one machine at a time may write",
            a.state_disk.as_deref().unwrap_or(&a.site).display()
        ));
    }
    if s.contains("cannot set up guest memory") {
        return Some(format!(
            "the host cannot give the VM --mem {}: give less",
            a.mem
        ));
    }
    if s.contains("Could not open option rom") || s.contains("could not load PC BIOS") {
        return Some(
            "QEMU's firmware is missing: use --machine pc, or install qemu-system-data".into(),
        );
    }
    None
}

/// Checks the host side of `--listen` is free (then lets it go for QEMU to take), and of
/// `--listen-https` when the kernel serves HTTPS.
fn check_listen(a: &RunArgs, https: bool) -> Result<(), String> {
    if a.nets[0] != Net::User {
        return Ok(());
    }
    if https {
        check_one(a.listen_https, "--listen-https")?;
    }
    check_one(a.listen, "--listen")
}

/// One host address free for QEMU's forward (`what`: the option that gave it).
fn check_one(addr: std::net::SocketAddrV4, what: &str) -> Result<(), String> {
    match TcpListener::bind(addr) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => Err(format!(
            "{addr} is already in use (another server?): give another with {what} 127.0.0.1:PORT"
        )),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Err(format!(
            "{addr}: port {} needs root; give a port from 1024 up with {what}",
            addr.port()
        )),
        Err(e) => Err(format!("cannot listen on {addr}: {e}")),
    }
}

/// A relayed IPv6 host address (`--listen6`): bound, and where it goes.
struct Relay6 {
    listener: TcpListener,
    at: SocketAddrV6,
    to: SocketAddrV4,
    /// `http` or `https`.
    scheme: &'static str,
}

/// Binds the IPv6 host addresses `run` relays (`--listen6`): HTTP's and, with a
/// certificate, HTTPS's at the same address with --listen-https's port. Given ones must
/// bind; the default (`[::1]`, --listen's port) is skipped with a warning when it cannot
/// (a host with no IPv6 loopback).
fn bind_listen6(a: &RunArgs, https: bool) -> Result<Vec<Relay6>, String> {
    if a.nets[0] != Net::User {
        return Ok(Vec::new());
    }
    let (given, ip) = match a.listen6 {
        Some(Listen6::Off) => return Ok(Vec::new()),
        Some(Listen6::At(at)) => (true, *at.ip()),
        None => (false, Ipv6Addr::LOCALHOST),
    };
    let port = match a.listen6 {
        Some(Listen6::At(at)) => at.port(),
        _ => a.listen.port(),
    };
    let mut pairs = vec![(SocketAddrV6::new(ip, port, 0, 0), a.listen, "http")];
    if https {
        let at = SocketAddrV6::new(ip, a.listen_https.port(), 0, 0);
        pairs.push((at, a.listen_https, "https"));
    }
    let mut out = Vec::new();
    for (at, to, scheme) in pairs {
        match relay6::bind(at) {
            Ok(listener) => out.push(Relay6 {
                listener,
                at,
                to: relay6::target(to),
                scheme,
            }),
            Err(e) if !given => {
                eprintln!(
                    "bareweb: warning: not answering at {at} ({e}); --listen6 [ADDR]:PORT \
                     gives another IPv6 address, --listen6 off says none"
                );
            }
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                return Err(format!(
                "{at} is already in use (another server?): give another with --listen6 [::1]:PORT"
            ))
            }
            Err(e) => return Err(format!("cannot listen on {at} (--listen6): {e}")),
        }
    }
    Ok(out)
}

/// `--state-disk FILE` ready for QEMU: made when missing (mode 0600, [`AREA_BYTES`] of
/// zeros, sparse), else checked: a regular file, at least the area's size, writable by
/// us. What to say about it (made, or readable by others), if anything.
pub fn prepare_state_disk(path: &Path) -> Result<Option<String>, String> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let name = path.display();
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
                .map_err(|e| format!("--state-disk {name}: cannot make it: {e}"))?;
            f.set_len(AREA_BYTES)
                .map_err(|e| format!("--state-disk {name}: cannot size it: {e}"))?;
            Ok(Some(format!(
                "state disk {name} made: {} KiB of zeros, mode 0600 (the kernel keeps its ACME \
                 account key and certificate there; keep the file for the next boot)",
                AREA_BYTES / 1024
            )))
        }
        Err(e) => Err(format!("--state-disk {name}: {e}")),
        Ok(m) if !m.is_file() => Err(format!(
            "--state-disk {name} is not a regular file: give a file's name (run makes it when \
             missing)"
        )),
        Ok(m) if m.len() < AREA_BYTES => Err(format!(
            "--state-disk {name} is {} bytes, smaller than the state area ({} KiB, at the \
             disk's end): give another name and run makes a new one",
            m.len(),
            AREA_BYTES / 1024
        )),
        Ok(m) => {
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(path)
                .map_err(|e| {
                    format!("--state-disk {name}: cannot open it to write: {e} (the kernel writes its state there)")
                })?;
            crate::run::state_area_of(path).map_err(|e| format!("--state-disk {e}"))?;
            let mode = m.permissions().mode() & 0o777;
            Ok((mode & 0o077 != 0).then(|| {
                format!(
                    "warning: --state-disk {name} has mode {mode:04o}: it holds the ACME account \
                     key and the certificate's key; chmod 600 {name}"
                )
            }))
        }
    }
}

/// Where the console goes.
enum Sink {
    Terminal,
    File(std::fs::File),
    Drop,
}

pub fn run(a: RunArgs) -> Result<ExitCode, String> {
    let input = input_kind(&a.site)?;
    // A dry run keeps its files only once it has printed the command that boots them: one
    // that fails (a refused key, a site too big) leaves nothing behind.
    let mut work = Work::new()?;
    let kernel = work.dir.join("bareweb-kernel.elf");
    let image = work.dir.join("site.bws");
    let (boot, baked, image_len, files) = match input {
        Input::Dir | Input::SiteImage => {
            let (bytes, files) = crate::util::site_image(&a.site, a.config.as_deref())?;
            // HTTPS: the certificate and key after the site, in a file of ours alone; the
            // ACME client's roots after them.
            let tls = crate::tls::read_checked(&a.server)?;
            let bytes = crate::tls::with_pems(bytes, tls.as_ref())?;
            let roots = match &a.acme_ca {
                Some(p) => Some(crate::acme::read_roots(p)?.0),
                None => None,
            };
            let bytes = crate::tls::with_ca(bytes, roots.as_deref())?;
            std::fs::write(&kernel, KERNEL).map_err(|e| format!("cannot write the kernel: {e}"))?;
            crate::tls::write_private(&image, &bytes)
                .map_err(|e| format!("cannot write {}: {e}", image.display()))?;
            let b = Boot::Kernel {
                kernel: &kernel,
                initrd: Some(&image),
            };
            (b, String::new(), bytes.len() as u64, Some(files))
        }
        Input::Elf | Input::Iso | Input::Disk => {
            if a.config.is_some() {
                return Err(format!(
                    "--config applies to a site directory; {} has its configuration built in",
                    a.site.display()
                ));
            }
            let bytes = std::fs::read(&a.site)
                .map_err(|e| format!("cannot read {}: {e}", a.site.display()))?;
            let baked = baked_cmdline(&bytes).ok_or(format!(
                "{} holds no bareweb kernel with a site (write one with `bareweb build -o NAME.elf` or `--iso NAME.iso`)",
                a.site.display()
            ))?;
            let b = match input {
                Input::Elf => Boot::Kernel {
                    kernel: &a.site,
                    initrd: None,
                },
                Input::Disk => Boot::Disk(&a.site),
                _ => Boot::Cdrom(&a.site),
            };
            (b, baked, bytes.len() as u64, None)
        }
    };
    // The settings the kernel will have: the image's built-in words, then ours.
    let mut complaint = None;
    let base = kernel_cmdline::parse(&baked, |_| {});
    if a.segmentation_loses_fin() {
        eprintln!(
            "bareweb: --nic {} on user networking: transmit offloads off (QEMU segments those \
             models' frames in software there and drops a response's FIN; a TAP keeps them)",
            a.models_text()
        );
    }
    let words = a.cmdline();
    let settings = kernel_cmdline::parse_over(base, &words, |c| {
        complaint.get_or_insert(format!("kernel command line word {:?}: {}", c.word, c.why));
    });
    if let Some(c) = complaint {
        return Err(c);
    }
    // ACME's state: the disk image's own end, or --state-disk (made below if missing, a
    // dry run's too, so its command boots as printed). An image's built-in acme_domain=
    // counts.
    if settings.acme.on() {
        state_disk_needed(&a, input == Input::Disk)?;
    } else if a.state_disk.is_some() {
        return Err(format!(
            "--state-disk is the ACME client's: {} has no acme_domain= in its command line \
             (give --acme-domain, or build the image with it)",
            a.site.display()
        ));
    }
    let need = memory_needed(image_len, settings.tcbs, a.smp, https(&settings));
    if need > a.mem.0 {
        return Err(format!(
            "--mem {} is too small: the site image is {} KiB and {} TCBs{} on {} core(s) need about {} MiB in all; give --mem {}M or more",
            a.mem,
            image_len / 1024,
            settings.tcbs,
            if https(&settings) {
                format!(" with HTTPS (a 16 MiB reserve, {TLS_SESSIONS_PER_CORE} sessions a core)")
            } else {
                String::new()
            },
            a.smp,
            need.div_ceil(1 << 20),
            need.div_ceil(1 << 20).next_power_of_two().max(64)
        ));
    }
    let (accel, why) = choose_accel(a.accel);
    let args = qemu_args(&a, accel, &boot, &settings)?;
    if let Some(disk) = &a.state_disk {
        if let Some(said) = prepare_state_disk(disk)? {
            eprintln!("bareweb: {said}");
        }
    }
    if a.dry_run {
        eprintln!("bareweb: accel {why}");
        if a.smp > 1 {
            eprintln!("bareweb: {}", cores_plan(&a)?.note);
        }
        eprintln!(
            "bareweb: dry run: the files QEMU boots are kept in {} (remove it when done)",
            work.dir.display()
        );
        println!("{} {}", a.qemu, shell_words(&args));
        work.keep();
        return Ok(ExitCode::SUCCESS);
    }
    if !qemu_present(&a.qemu) {
        return Err(format!(
            "{} not found: install QEMU ({QEMU_HINT}; `cargo xtask setup` does it as root)",
            a.qemu
        ));
    }
    for model in a.models() {
        if model != NicModel::Virtio
            && crate::run::qemu_has_device(&a.qemu, model.qemu_device()) == Some(false)
        {
            return Err(format!(
                "--nic {}: the installed QEMU ({}) has no `{}` device model (`{} -device help` lists the ones it has); use another --nic or a QEMU that has it{}",
                value_name(model),
                a.qemu,
                model.qemu_device(),
                a.qemu,
                if model == NicModel::Igb {
                    " (igb: QEMU 8 or later; on Debian bookworm `cargo xtask setup`, as root, installs QEMU from bookworm-backports, or pass --qemu PATH)"
                } else {
                    ""
                }
            ));
        }
    }
    check_listen(&a, https(&settings))?;
    let relays = bind_listen6(&a, https(&settings))?;
    let what = match files {
        Some(n) => format!("the kernel ({} KiB) with {n} files", KERNEL.len() / 1024),
        None => format!("{}", a.site.display()),
    };
    eprintln!(
        "bareweb: booting {what} under QEMU: accel {why}; machine {}, NIC {}",
        machine_text(&a, &boot)?,
        a.models_text()
    );
    if a.smp > 1 {
        eprintln!("bareweb: {}", cores_plan(&a)?.note);
    }
    let serving = if a.nets[0] == Net::User {
        format!(
            "bareweb: serving at http://{}/{} (forwarded to {}:{}){}{}{}; Ctrl-C stops",
            a.listen,
            a.server.udp_banner(a.listen.ip()),
            settings.ip,
            settings.port,
            if https(&settings) {
                format!(
                    " and https://{}/ (forwarded to {}:{})",
                    a.listen_https,
                    settings.ip,
                    settings.tls.port()
                )
            } else {
                String::new()
            },
            match relays.as_slice() {
                [] => String::new(),
                rs => format!(
                    "; over IPv6 {} (relayed to the IPv4 forward)",
                    rs.iter()
                        .map(|r| format!("{}://{}/", r.scheme, r.at))
                        .collect::<Vec<_>>()
                        .join(" and ")
                ),
            },
            if a.nets.len() > 1 {
                format!(", {} NICs on one QEMU hub", a.nets.len())
            } else {
                String::new()
            }
        )
    } else {
        if settings.dhcp {
            format!(
                "bareweb: serving on port {} at the address DHCP gives (the console says it) on {}; Ctrl-C stops",
                settings.port,
                a.nets_text()
            )
        } else {
            format!(
                "bareweb: serving at http://{}:{}/{}{} on {}; Ctrl-C stops",
                settings.ip,
                settings.port,
                a.server.udp_banner(settings.ip),
                if https(&settings) {
                    format!(" and https://{}:{}/", settings.ip, settings.tls.port())
                } else {
                    String::new()
                },
                a.nets_text()
            )
        }
    };
    let sink = match (&a.serial_log, a.headless) {
        (Some(f), _) => Sink::File(
            std::fs::File::create(f).map_err(|e| format!("cannot write {}: {e}", f.display()))?,
        ),
        (None, true) => Sink::Drop,
        (None, false) => Sink::Terminal,
    };
    let term = crate::util::catch_stop_signals_term_drains();
    // QMP, for SIGTERM's press of the power button (beside any monitor of `--monitor`).
    let qmp = work.dir.join("qmp.sock");
    let mut cmd = Command::new(&a.qemu);
    cmd.args(&args)
        .arg("-qmp")
        .arg(format!("unix:{},server=on,wait=off", qmp.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // QEMU must not outlive us (tests stop `bareweb run` by PID), and runs in its own
    // process group: a signal to ours (a supervisor's SIGTERM to the group, Ctrl-C) is
    // ours to handle — SIGTERM becomes a press of the power button, not QEMU's exit.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
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
    for r in relays {
        if let Err(e) = relay6::start(r.listener, r.to) {
            eprintln!("bareweb: warning: not answering at {} ({e})", r.at);
        }
    }
    let ready = Arc::new(AtomicBool::new(false));
    let button = Arc::new(AtomicBool::new(false));
    let console = child.stdout.take().map(|out| {
        let seen = Seen {
            ready: Arc::clone(&ready),
            button: Arc::clone(&button),
        };
        std::thread::spawn(move || copy_console(out, sink, &seen, &serving))
    });
    let err_text = Arc::new(Mutex::new(String::new()));
    let errors = child.stderr.take().map(|err| {
        let text = Arc::clone(&err_text);
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                eprintln!("{line}");
                let mut t = text.lock().unwrap_or_else(|e| e.into_inner());
                t.push_str(&line);
                t.push('\n');
            }
        })
    });
    // Ctrl-C and SIGHUP: QEMU is stopped at once (SIGTERM to it, SIGKILL after 3 s).
    // SIGTERM (systemd's, libvirt's, a supervisor's stop) presses the machine's power
    // button: the kernel drains, powers off, and QEMU exits by itself. Either way we wait
    // for QEMU, then remove the files.
    let mut forwarded: Option<Instant> = None;
    let mut pressed: Option<Instant> = None;
    let drain_limit = Duration::from_secs(settings.drain_grace_s + settings.drain_timeout_s + 10);
    let stop = crate::util::stop_flag();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) => {}
            Err(e) => return Err(format!("waiting for QEMU: {e}")),
        }
        if term.load(Ordering::Relaxed) && pressed.is_none() && !stop.load(Ordering::Relaxed) {
            pressed = Some(Instant::now());
            press_power_button(&qmp, button.load(Ordering::Relaxed), &settings);
        }
        if pressed.is_some_and(|t| t.elapsed() > drain_limit) && !stop.load(Ordering::Relaxed) {
            eprintln!(
                "bareweb: the machine did not power off within {} s of the button: stopping QEMU",
                drain_limit.as_secs()
            );
            stop.store(true, Ordering::Relaxed);
        }
        if stop.load(Ordering::Relaxed) {
            let t = *forwarded.get_or_insert_with(Instant::now);
            if t.elapsed() < Duration::from_millis(20) {
                // SAFETY: kill(2) on our own child's pid.
                unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            } else if t.elapsed() > Duration::from_secs(3) {
                let _ = child.kill();
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if let Some(t) = console {
        let _ = t.join();
    }
    if let Some(t) = errors {
        let _ = t.join();
    }
    let stderr = err_text.lock().unwrap_or_else(|e| e.into_inner()).clone();
    drop(work);
    match status.code() {
        Some(0) => Ok(ExitCode::SUCCESS),
        Some(KERNEL_FAILED) => Err(
            "the kernel stopped on a panic or CPU exception (its report is on the console)".into(),
        ),
        Some(c) => Err(match explain(&stderr, &a) {
            Some(why) => why,
            None if !ready.load(Ordering::Relaxed) => {
                format!("QEMU exited with status {c} before the kernel was ready (its words above)")
            }
            None => format!("QEMU exited with status {c}"),
        }),
        None => Ok(ExitCode::SUCCESS), // stopped by a signal (Ctrl-C, SIGTERM): normal
    }
}

/// Boots the kernel with the site directory of `a` for a run that ends by itself (the
/// bare client's, `bareweb load --udp --kernel`): no banner, QEMU killed after `limit`.
/// Returns QEMU's exit status (33: the kernel finished; 35: it failed) and the console.
pub fn boot_until_done(
    a: &RunArgs,
    limit: Duration,
) -> Result<(std::process::ExitStatus, String), String> {
    let work = Work::new()?;
    let kernel = work.dir.join("bareweb-kernel.elf");
    let image = work.dir.join("site.bws");
    let (bytes, _) = crate::util::site_image(&a.site, None)?;
    std::fs::write(&kernel, KERNEL).map_err(|e| format!("cannot write the kernel: {e}"))?;
    std::fs::write(&image, &bytes).map_err(|e| format!("cannot write {}: {e}", image.display()))?;
    let boot = Boot::Kernel {
        kernel: &kernel,
        initrd: Some(&image),
    };
    let mut complaint = None;
    let settings = kernel_cmdline::parse(&a.cmdline(), |c| {
        complaint.get_or_insert(format!("kernel command line word {:?}: {}", c.word, c.why));
    });
    if let Some(c) = complaint {
        return Err(c);
    }
    let (accel, _) = choose_accel(a.accel);
    let args = qemu_args(a, accel, &boot, &settings)?;
    let mut cmd = Command::new(&a.qemu);
    cmd.args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: prctl is async-signal-safe and only affects the child being started.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e} ({QEMU_HINT})", a.qemu))?;
    let read = |r: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut r) = r {
                let _ = r.read_to_string(&mut text);
            }
            text
        })
    };
    let out = read(child.stdout.take().map(|o| Box::new(o) as _));
    let err = read(child.stderr.take().map(|o| Box::new(o) as _));
    let t0 = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Ok(s),
            Ok(None) if t0.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(format!(
                    "the kernel did not finish in {} s",
                    limit.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => break Err(format!("waiting for QEMU: {e}")),
        }
    };
    let console = out.join().unwrap_or_default();
    let errors = err.join().unwrap_or_default();
    drop(work);
    match status {
        Ok(s) => Ok((s, console)),
        Err(e) => Err(format!("{e}; QEMU said: {}", errors.trim())),
    }
}

/// `line` without its terminal control sequences: ECMA-48 CSI (`ESC [` … final byte: the
/// firmware's and GRUB's screen clearing, cursor moves and colours), OSC and other `ESC`
/// sequences, and the other C0 controls but tab, CR and LF. A firmware (OVMF, GRUB)
/// draws its screen on the serial console; copied as it is, it would clear the user's
/// terminal and leave its colours set after the run. The text stays.
pub fn plain_text(line: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(line.len());
    let mut i = 0;
    while i < line.len() {
        match line[i] {
            0x1b => {
                i += 1;
                match line.get(i) {
                    // CSI: parameter and intermediate bytes, then one final byte.
                    Some(b'[') => {
                        i += 1;
                        while i < line.len() && (0x20..0x40).contains(&line[i]) {
                            i += 1;
                        }
                        i += 1;
                    }
                    // OSC, DCS and the like: to BEL or ST (ESC \).
                    Some(b']' | b'P' | b'X' | b'^' | b'_') => {
                        while i < line.len() && line[i] != 0x07 && line[i] != 0x1b {
                            i += 1;
                        }
                        i += if line.get(i) == Some(&0x1b) { 2 } else { 1 };
                    }
                    // Two-byte sequences (ESC c, ESC 7, ESC ( B ...).
                    Some(b'(' | b')' | b'*' | b'+') => i += 2,
                    Some(_) => i += 1,
                    None => {}
                }
            }
            b'\t' | b'\r' | b'\n' => {
                out.push(line[i]);
                i += 1;
            }
            c if c < 0x20 || c == 0x7f => i += 1,
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// Copies the console line by line to `sink` (to a terminal without its control
/// sequences, [`plain_text`]); once the kernel is ready says `serving` (the URL the host
/// reaches) before the kernel's own ready line (the guest's address). A sink that fails
/// (a closed pipe) stops the run.
/// What the console has said so far, for the signal path.
struct Seen {
    /// The kernel's `ready:` line.
    ready: Arc<AtomicBool>,
    /// The kernel's line that says the ACPI power button drains.
    button: Arc<AtomicBool>,
}

/// The kernel's console line that says its ACPI power button drains (boot/net.rs).
const BUTTON_LINE: &[u8] = b"power: the ACPI power button drains";

/// SIGTERM's first step: the power button pressed through QMP when the kernel said it
/// drains on it (`button`); otherwise, or when QMP fails, QEMU is stopped at once, as for
/// SIGHUP, and the words say why.
fn press_power_button(qmp: &Path, button: bool, settings: &kernel_cmdline::Settings) {
    let stop = crate::util::stop_flag();
    if !button {
        eprintln!(
            "bareweb: SIGTERM: the kernel has no ACPI power button on this machine (its console did not say it drains on one): stopping QEMU at once"
        );
        stop.store(true, Ordering::Relaxed);
        return;
    }
    match qmp_command(qmp, "system_powerdown") {
        Ok(()) => eprintln!(
            "bareweb: SIGTERM: pressed the machine's power button: the server drains ({} s grace, {} s timeout), then powers off; a second SIGTERM stops at once",
            settings.drain_grace_s, settings.drain_timeout_s
        ),
        Err(e) => {
            eprintln!("bareweb: SIGTERM: cannot press the power button ({e}): stopping QEMU");
            stop.store(true, Ordering::Relaxed);
        }
    }
}

/// Runs one QMP command without arguments on the socket `path`: the greeting, the
/// capabilities negotiation, the command; an error names the step that failed.
fn qmp_command(path: &Path, command: &str) -> Result<(), String> {
    use std::os::unix::net::UnixStream;
    let stream = UnixStream::connect(path).map_err(|e| format!("QMP {}: {e}", path.display()))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(3)))
        .map_err(|e| format!("QMP: {e}"))?;
    let mut writer = stream.try_clone().map_err(|e| format!("QMP: {e}"))?;
    let mut reader = BufReader::new(stream);
    // Lines until one that answers a command (events may come between).
    let mut answer = |what: &str| -> Result<String, String> {
        for _ in 0..64 {
            let mut line = String::new();
            match reader.read_line(&mut line) {
                Ok(0) => return Err(format!("QMP closed during {what}")),
                Ok(_) if line.contains("\"QMP\"") || line.contains("\"return\"") => {
                    return Ok(line)
                }
                Ok(_) if line.contains("\"error\"") => {
                    return Err(format!("QMP {what}: {}", line.trim()))
                }
                Ok(_) => {}
                Err(e) => return Err(format!("QMP {what}: {e}")),
            }
        }
        Err(format!("QMP {what}: no answer"))
    };
    answer("greeting")?;
    for cmd in ["qmp_capabilities", command] {
        writeln!(writer, "{{\"execute\": \"{cmd}\"}}").map_err(|e| format!("QMP {cmd}: {e}"))?;
        answer(cmd)?;
    }
    Ok(())
}

fn copy_console(out: impl std::io::Read, mut sink: Sink, seen: &Seen, serving: &str) {
    let ready = &seen.ready;
    let mut r = BufReader::new(out);
    let mut line = Vec::new();
    loop {
        line.clear();
        match r.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if !ready.load(Ordering::Relaxed) && line.windows(15).any(|w| w == b"bareweb: ready:") {
            ready.store(true, Ordering::Relaxed);
            eprintln!("{serving}");
        }
        if line.windows(BUTTON_LINE.len()).any(|w| w == BUTTON_LINE) {
            seen.button.store(true, Ordering::Relaxed);
        }
        let ok = match &mut sink {
            Sink::Terminal => {
                let mut o = std::io::stdout().lock();
                o.write_all(&plain_text(&line)).and_then(|_| o.flush())
            }
            Sink::File(f) => f.write_all(&line).and_then(|_| f.flush()),
            Sink::Drop => Ok(()),
        };
        if ok.is_err() {
            crate::util::stop_flag().store(true, Ordering::Relaxed);
            sink = Sink::Drop;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_line_is_found_in_an_elf() {
        let elf =
            crate::bootimage::elf_with_site(KERNEL, b"site", "ip=10.9.8.7/24 port=81").unwrap();
        assert_eq!(
            baked_cmdline(&elf).as_deref(),
            Some("ip=10.9.8.7/24 port=81")
        );
        assert_eq!(baked_cmdline(KERNEL).as_deref(), Some(""));
        assert_eq!(baked_cmdline(b"nothing here"), None);
    }

    /// What OVMF and GRUB write on the serial console (captured from `run site.iso
    /// --firmware uefi`): their screen control goes, their text stays.
    #[test]
    fn the_firmware_cannot_clear_or_colour_the_terminal() {
        let ovmf = b"\x1b[2J\x1b[01;01H\x1b[=3h\x1b[2J\x1b[01;01HBdsDxe: loading Boot0001 \"UEFI QEMU DVD-ROM\"\r\n";
        assert_eq!(
            plain_text(ovmf),
            b"BdsDxe: loading Boot0001 \"UEFI QEMU DVD-ROM\"\r\n"
        );
        let grub = b"\x1b[0m\x1b[30m\x1b[47m\x1b[?25l  GNU GRUB  version 2.06\x1b[0;37;40m\x1b]0;t\x07\x1bc\x0e\n";
        assert_eq!(plain_text(grub), b"  GNU GRUB  version 2.06\n");
        let kernel = b"bareweb: ready: serving 3 files at http://10.0.2.15:80/\tok\n";
        assert_eq!(plain_text(kernel), kernel);
        assert_eq!(plain_text(b"cut\x1b["), b"cut");
        assert_eq!(plain_text(b"cut\x1b"), b"cut");
        assert!(!plain_text(b"\x1b[1;31mred\x1b[0m").contains(&0x1b));
    }

    /// QEMU refused the TAP: the hint names the capability and the user's own TAP, by
    /// its name.
    #[test]
    fn the_non_root_tap_hint_is_complete() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            run: RunArgs,
        }
        let a = Cli::parse_from(["bareweb", "site", "--net", "tap:bwq0"]).run;
        let e = explain(
            "qemu-system-x86_64: -netdev tap,id=n0,ifname=bwq0: could not configure /dev/net/tun (bwq0): Operation not permitted",
            &a,
        )
        .unwrap();
        for part in [
            "CAP_NET_ADMIN",
            "sudo ip tuntap add bwq0 mode tap user $USER",
            "ip link set bwq0 up",
        ] {
            assert!(e.contains(part), "{part}: {e}");
        }
    }

    #[test]
    fn a_state_disk_is_made_private_and_a_wrong_one_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("bareweb-state-disk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let made = dir.join("state.img");
        let said = prepare_state_disk(&made).unwrap().unwrap();
        assert!(said.contains("made") && said.contains("256 KiB"), "{said}");
        let m = std::fs::metadata(&made).unwrap();
        assert_eq!(
            (m.len(), m.permissions().mode() & 0o777),
            (AREA_BYTES, 0o600)
        );
        // Kept as it is the next time, and said nothing about.
        assert_eq!(prepare_state_disk(&made).unwrap(), None);
        // Larger is fine (the area is its end); readable by others is warned about.
        let big = dir.join("big.img");
        std::fs::write(&big, vec![0u8; AREA_BYTES as usize + 4096]).unwrap();
        std::fs::set_permissions(&big, std::fs::Permissions::from_mode(0o644)).unwrap();
        let w = prepare_state_disk(&big).unwrap().unwrap();
        assert!(w.contains("mode 0644") && w.contains("chmod 600"), "{w}");
        let small = dir.join("small.img");
        std::fs::write(&small, [0u8; 512]).unwrap();
        let e = prepare_state_disk(&small).unwrap_err();
        assert!(e.contains("512 bytes, smaller than the state area"), "{e}");
        let e = prepare_state_disk(&dir).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
        let e = prepare_state_disk(&dir.join("no/such/dir/s.img")).unwrap_err();
        assert!(e.contains("cannot make it"), "{e}");
        // The area at the end: blank, a record's, or another file's data (refused).
        let slot = bareweb_acme::store::SLOT_BYTES as usize;
        assert_eq!(crate::run::state_area_of(&made).unwrap(), None);
        let mut bytes = vec![0u8; 4096 + AREA_BYTES as usize];
        bytes[4096 + slot..4096 + slot + 8].copy_from_slice(&bareweb_acme::store::MAGIC);
        std::fs::write(&big, &bytes).unwrap();
        let area = crate::run::state_area_of(&big).unwrap().unwrap();
        assert_eq!(area, bytes[4096..]);
        bytes[4096 + 100] = 1;
        std::fs::write(&big, &bytes).unwrap();
        let e = prepare_state_disk(&big).unwrap_err();
        assert!(e.contains("not a state area"), "{e}");
        assert_eq!(
            crate::run::state_area_of(&dir.join("none.img")).unwrap(),
            None
        );
        // Not writable by us (root writes anyway: only checked when not root).
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            std::fs::set_permissions(&made, std::fs::Permissions::from_mode(0o400)).unwrap();
            let e = prepare_state_disk(&made).unwrap_err();
            assert!(e.contains("cannot open it to write"), "{e}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn memory_grows_with_the_site_the_tcbs_and_the_cores() {
        let base = memory_needed(0, 1024, 1, false);
        assert!(base < 64 << 20, "{base}");
        assert!(memory_needed(20 << 20, 1024, 1, false) > 16 << 20);
        assert!(memory_needed(0, 8192, 2, false) > memory_needed(0, 1024, 2, false));
        assert!(
            memory_needed(0, 8192, 1, false) < 1 << 30,
            "the bench's 8192 TCBs fit 1G"
        );
        // HTTPS: the 16 MiB reserve once, the sessions on every core; the default --mem
        // (256M) still holds four cores with HTTPS.
        let tls = memory_needed(0, 1024, 1, true) - base;
        assert_eq!(tls, (16 << 20) + TLS_SESSIONS_PER_CORE * TLS_SESSION_BYTES);
        assert!(memory_needed(1 << 20, 1024, 4, true) < 256 << 20);
    }
}
