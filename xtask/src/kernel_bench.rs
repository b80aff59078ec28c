//! `cargo xtask kernel-bench`: the bare-machine kernel's budgets, measured (not a test).
//!
//! 1. Size of the stripped kernel ELF without a site (budget 2048 KiB: `kernel::SIZE_BUDGET`).
//! 2. QEMU start → first HTTP 200, median of N boots for each accelerator and machine
//!    type, with the single-file image (`bareweb build -o site.elf`) under QEMU user
//!    networking forwarded from a free 127.0.0.1 port. The QEMU arguments are those of
//!    `bareweb run --dry-run`.
//! 3. Doorbell writes per request at steady load, from the driver's own counters (the
//!    kernel's `log=stats` line, sampled before and after a bounded keep-alive load), for
//!    each NIC model the installed QEMU has: virtio-net, e1000, e1000e, igb, vmxnet3.
//!
//! Options: `--runs N` (boots per configuration, default 10), `--accel kvm,tcg`,
//! `--machine microvm,qboot,pc,q35`, `--skip-boot`, `--skip-load`. The boot
//! table splits out the kernel's own part (first instruction to ready) and the guest's
//! time before it (firmware and loader), from the kernel's `boot: ready ...` line. Everything it starts is
//! bounded in time and killed by PID.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::run;

struct Opts {
    runs: usize,
    accels: Vec<String>,
    machines: Vec<String>,
    boot: bool,
    load: bool,
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        runs: 10,
        accels: vec!["tcg".into(), "kvm".into()],
        machines: vec!["microvm".into(), "qboot".into(), "pc".into(), "q35".into()],
        boot: true,
        load: true,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--runs" => o.runs = val()?.parse().map_err(|_| "--runs N")?,
            "--accel" => o.accels = val()?.split(',').map(String::from).collect(),
            "--machine" => o.machines = val()?.split(',').map(String::from).collect(),
            "--skip-boot" => o.boot = false,
            "--skip-load" => o.load = false,
            _ => return Err(format!("unknown option {a}")),
        }
    }
    Ok(o)
}

fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|e| e.to_string())?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

/// One GET; the status code if a whole status line came back within `limit`.
fn get_status(port: u16, path: &str, limit: Duration) -> Option<u16> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut s = TcpStream::connect_timeout(&addr, limit).ok()?;
    s.set_read_timeout(Some(limit)).ok()?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .ok()?;
    let mut buf = [0u8; 64];
    let mut n = 0;
    while n < 12 {
        match s.read(&mut buf[n..]) {
            Ok(0) | Err(_) => return None,
            Ok(k) => n += k,
        }
    }
    std::str::from_utf8(&buf[9..12]).ok()?.parse().ok()
}

/// The total row's device wake-ups (receive interrupts that woke a halted core) from the
/// stats JSON at `port`, if it can be read.
fn device_wakes(port: u16) -> Option<u64> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let limit = Duration::from_secs(5);
    let mut s = TcpStream::connect_timeout(&addr, limit).ok()?;
    s.set_read_timeout(Some(limit)).ok()?;
    s.write_all(b"GET /.well-known/bareweb/stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    // The total row comes after the cores'.
    const KEY: &str = "\"wakes\":{\"device\":";
    let at = body.rfind(KEY)? + KEY.len();
    let end = body[at..].find(|c: char| !c.is_ascii_digit())?;
    body[at..at + end].parse().ok()
}

/// `bareweb run --dry-run` arguments with the single-file image instead of -kernel/-initrd.
fn qemu_args(
    bin: &Path,
    elf: &Path,
    accel: &str,
    machine: &str,
    nic: &str,
    port: u16,
    log: &str,
) -> Result<Vec<String>, String> {
    let mut cmd = Command::new(bin);
    cmd.args(["run", "examples/site", "--dry-run", "--headless"])
        .args(["--accel", accel, "--machine", machine, "--nic", nic])
        .args(["--listen", &format!("127.0.0.1:{port}")]);
    match log {
        "" => {}
        "stats" => {
            cmd.arg("--stats-log");
        }
        "access" => {
            cmd.arg("--access-log");
        }
        _ => return Err(format!("unknown log {log:?}")),
    }
    let out = cmd
        .output()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
    // The dry-run line quotes only an -append value with spaces; rebuild the words simply.
    let (before, append, after) = match line.split_once(" -append '") {
        Some((before, rest)) => {
            let (append, after) = rest.split_once('\'').ok_or("unterminated -append")?;
            (before, append, after)
        }
        None => {
            let (before, rest) = line
                .split_once(" -append ")
                .ok_or("no -append in dry run")?;
            let (append, after) = rest.split_once(' ').unwrap_or((rest, ""));
            (before, append, after)
        }
    };
    let mut words: Vec<String> = before
        .split_whitespace()
        .skip(1)
        .map(String::from)
        .collect();
    words.push("-append".into());
    words.push(append.into());
    words.extend(after.split_whitespace().map(String::from));
    let mut v = Vec::new();
    let mut i = 0;
    while i < words.len() {
        match words[i].as_str() {
            "-kernel" => {
                // A dry run keeps its work directory (kernel and site image) for the
                // command it prints; the bench boots its own ELF, so remove it now.
                remove_dry_run_dir(words.get(i + 1).map(String::as_str));
                v.push("-kernel".into());
                v.push(elf.display().to_string());
                i += 2;
            }
            "-initrd" => i += 2,
            "-append" if log.is_empty() => i += 2, // the image's built-in line applies
            _ => {
                v.push(words[i].clone());
                i += 1;
            }
        }
    }
    Ok(v)
}

/// Removes the directory `bareweb run --dry-run` left for the kernel at `kernel`, only if
/// it is one of run's own (`bareweb-run-*` in the temporary directory).
fn remove_dry_run_dir(kernel: Option<&str>) {
    let Some(dir) = kernel.and_then(|k| Path::new(k).parent()) else {
        return;
    };
    let ours = dir.parent() == Some(std::env::temp_dir().as_path())
        && dir
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("bareweb-run-"));
    if ours {
        let _ = std::fs::remove_dir_all(dir);
    }
}

struct Vm(Child);

impl Drop for Vm {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(args: &[String], serial: Option<&Path>) -> Result<Vm, String> {
    let mut args = args.to_vec();
    if let Some(p) = serial {
        if let Some(i) = args.iter().position(|a| a == "-serial") {
            args[i + 1] = format!("file:{}", p.display());
        }
    }
    Command::new("qemu-system-x86_64")
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map(Vm)
        .map_err(|e| format!("qemu: {e}"))
}

fn median_ms(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// One boot's figures: ms from spawning QEMU to the first 200; from the kernel's console,
/// its own part (first instruction to ready, ms), what came before it in the guest
/// (firmware and loader since the CPU's reset, by the TSC, ms) and its stages line.
struct BootTimes {
    total: f64,
    kernel: Option<f64>,
    firmware: Option<f64>,
    stages: String,
}

/// The `boot: ready N us after ... came M us after the CPU's reset ...; stages in us: ...`
/// console line, parsed.
fn ready_line(serial: &Path) -> (Option<f64>, Option<f64>, String) {
    let text = std::fs::read_to_string(serial).unwrap_or_default();
    let Some(line) = text.lines().find(|l| l.starts_with("boot: ready ")) else {
        return (None, None, String::new());
    };
    let num_before = |key: &str| -> Option<f64> {
        let at = line.find(key)?;
        let n = line[..at].trim_end().rsplit(' ').next()?;
        n.parse::<f64>().ok().map(|us| us / 1000.0)
    };
    let stages = line
        .split_once("stages in us:")
        .map_or(String::new(), |(_, s)| s.trim().to_string());
    (
        num_before(" us after the kernel's first"),
        num_before(" us after the CPU's reset"),
        stages,
    )
}

/// One try at the first 200: a connection to the forwarded port with its GET written,
/// read without blocking.
struct Try {
    s: TcpStream,
    at: Instant,
    got: Vec<u8>,
}

/// A new try every [`TRY_EVERY`], each given [`TRY_FOR`] before it is dropped: user
/// networking accepts the host's connection at once and sends the guest a SYN, which is
/// lost while the guest's NIC is not up, and slirp retries it only after a second; so the
/// first 200 comes from a try started after the server was ready. Overlapping tries keep
/// what the poll adds to ~1 ms (one try at a time, each waiting out 20 ms, added up to
/// 20: ~10 ms at the median).
const TRY_EVERY: Duration = Duration::from_millis(1);
const TRY_FOR: Duration = Duration::from_millis(100);

/// One boot, the console to `serial`; None past the limit.
fn boot_once(
    args: &[String],
    port: u16,
    limit: Duration,
    serial: &Path,
) -> Result<Option<BootTimes>, String> {
    let _ = std::fs::remove_file(serial);
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let t0 = Instant::now();
    let vm = spawn(args, Some(serial))?;
    let mut tries: Vec<Try> = Vec::new();
    let mut last: Option<Instant> = None;
    while t0.elapsed() < limit {
        if last.is_none_or(|l| l.elapsed() >= TRY_EVERY) {
            last = Some(Instant::now());
            // Refused until QEMU listens on the port: just try again.
            if let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(5)) {
                let req = b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
                if s.write_all(req).is_ok() && s.set_nonblocking(true).is_ok() {
                    tries.push(Try {
                        s,
                        at: Instant::now(),
                        got: Vec::new(),
                    });
                }
            }
        }
        let mut status = None;
        tries.retain_mut(|t| {
            let mut buf = [0u8; 64];
            match t.s.read(&mut buf) {
                Ok(0) => false,
                Ok(k) => {
                    t.got.extend_from_slice(&buf[..k]);
                    if t.got.len() >= 12 {
                        status = std::str::from_utf8(&t.got[9..12]).ok().map(String::from);
                        return false;
                    }
                    true
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => t.at.elapsed() < TRY_FOR,
                Err(_) => false,
            }
        });
        if status.as_deref() == Some("200") {
            let total = t0.elapsed().as_secs_f64() * 1000.0;
            drop(vm);
            let (kernel, firmware, stages) = ready_line(serial);
            return Ok(Some(BootTimes {
                total,
                kernel,
                firmware,
                stages,
            }));
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    Ok(None)
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(String::from))
        .unwrap_or_default()
}

fn last_stats(serial: &Path) -> Option<Vec<(String, u64)>> {
    let text = std::fs::read_to_string(serial).ok()?;
    let line = text.lines().rev().find(|l| l.starts_with("stats: "))?;
    Some(
        line.split_whitespace()
            .skip(1)
            .filter_map(|w| {
                let (k, v) = w.split_once('=')?;
                Some((k.to_string(), v.parse().ok()?))
            })
            .collect(),
    )
}

fn stat(s: &[(String, u64)], k: &str) -> u64 {
    s.iter().find(|(n, _)| n == k).map_or(0, |(_, v)| *v)
}

/// Keep-alive load: `conns` threads, each `reqs` sequential GETs of `path`.
fn load(port: u16, conns: usize, reqs: usize, path: &str) -> (usize, Duration) {
    let t0 = Instant::now();
    let handles: Vec<_> = (0..conns)
        .map(|_| {
            let path = path.to_string();
            std::thread::spawn(move || {
                let Ok(mut s) = TcpStream::connect((Ipv4Addr::LOCALHOST, port)) else {
                    return 0;
                };
                let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
                let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n");
                let mut ok = 0;
                let mut buf = vec![0u8; 65536];
                for _ in 0..reqs {
                    if s.write_all(req.as_bytes()).is_err() {
                        break;
                    }
                    // Read one response: head, then Content-Length bytes.
                    let mut got = Vec::new();
                    let want = loop {
                        match s.read(&mut buf) {
                            Ok(0) | Err(_) => return ok,
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                        }
                        if let Some(h) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                            let head = String::from_utf8_lossy(&got[..h]).to_lowercase();
                            let len: usize = head
                                .lines()
                                .find_map(|l| l.strip_prefix("content-length:"))
                                .and_then(|v| v.trim().parse().ok())
                                .unwrap_or(0);
                            break h + 4 + len;
                        }
                    };
                    while got.len() < want {
                        match s.read(&mut buf) {
                            Ok(0) | Err(_) => return ok,
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                        }
                    }
                    ok += 1;
                }
                ok
            })
        })
        .collect();
    let ok = handles.into_iter().map(|h| h.join().unwrap_or(0)).sum();
    (ok, t0.elapsed())
}

/// Connection per request (as http_load in the scheduling paper): `conns` threads, each `reqs`
/// fetches of `path` on a fresh connection with `Connection: close`.
fn load_cpr(port: u16, conns: usize, reqs: usize, path: &str) -> (usize, Duration) {
    let t0 = Instant::now();
    let handles: Vec<_> = (0..conns)
        .map(|_| {
            let path = path.to_string();
            std::thread::spawn(move || {
                let mut ok = 0;
                for _ in 0..reqs {
                    let Ok(mut s) = TcpStream::connect((Ipv4Addr::LOCALHOST, port)) else {
                        continue;
                    };
                    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
                    let req =
                        format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
                    if s.write_all(req.as_bytes()).is_err() {
                        continue;
                    }
                    let mut got = Vec::new();
                    if s.read_to_end(&mut got).is_ok() && got.starts_with(b"HTTP/1.1 200") {
                        ok += 1;
                    }
                }
                ok
            })
        })
        .collect();
    let ok = handles.into_iter().map(|h| h.join().unwrap_or(0)).sum();
    (ok, t0.elapsed())
}

pub fn bench(args: &[String]) -> Result<(), String> {
    let o = parse(args)?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    run(Command::new(&cargo).args(["build", "--release", "-p", "bareweb"]))?;
    let bin = PathBuf::from("target/release/bareweb");
    let kernel = PathBuf::from(crate::kernel::ELF);
    let size = std::fs::metadata(&kernel)
        .map_err(|e| format!("{}: {e}", kernel.display()))?
        .len();
    println!("## Kernel size\n");
    println!(
        "stripped kernel ELF without site: {size} bytes ({:.1} KiB; budget {} KiB: {})\n",
        size as f64 / 1024.0,
        crate::kernel::SIZE_BUDGET / 1024,
        if size <= crate::kernel::SIZE_BUDGET {
            "met"
        } else {
            "NOT met"
        }
    );
    let dir = std::env::temp_dir().join(format!("bareweb-kbench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let elf = dir.join("site.elf");
    run(Command::new(&bin)
        // A fixed address, as `run` boots with: the boot time is not a DHCP exchange.
        .args(["build", "examples/site", "--ip", "10.0.2.15/24", "-o"])
        .arg(&elf))?;
    let mut stage_lines = Vec::new();
    let res = (|| -> Result<(), String> {
        if o.boot {
            println!("## QEMU start to first HTTP 200 (median of {}, single-file image, virtio-net, user networking; load average {})\n", o.runs, loadavg());
            println!("| accel | machine | median ms | min ms | max ms | kernel (entry to ready) ms | before the kernel (firmware, loader) ms | runs ok |");
            println!("|---|---|---|---|---|---|---|---|");
            let serial = dir.join("boot.serial");
            for accel in &o.accels {
                // Machines interleaved run by run: a slow spell of the host hits all alike.
                let mut got: Vec<Vec<BootTimes>> = o.machines.iter().map(|_| Vec::new()).collect();
                for _ in 0..o.runs {
                    for (m, machine) in o.machines.iter().enumerate() {
                        let port = free_port()?;
                        let args = qemu_args(&bin, &elf, accel, machine, "virtio", port, "")?;
                        if let Some(t) = boot_once(&args, port, Duration::from_secs(90), &serial)? {
                            got[m].push(t);
                        }
                    }
                }
                for (machine, times) in o.machines.iter().zip(got) {
                    if times.is_empty() {
                        println!("| {accel} | {machine} | - | - | - | - | - | 0/{} |", o.runs);
                        continue;
                    }
                    let total: Vec<f64> = times.iter().map(|t| t.total).collect();
                    let min = total.iter().cloned().fold(f64::MAX, f64::min);
                    let max = total.iter().cloned().fold(0.0, f64::max);
                    let part = |f: fn(&BootTimes) -> Option<f64>| {
                        let v: Vec<f64> = times.iter().filter_map(f).collect();
                        if v.is_empty() {
                            "-".to_string()
                        } else {
                            format!("{:.1}", median_ms(v))
                        }
                    };
                    let n = times.len();
                    println!(
                        "| {accel} | {machine} | {:.0} | {min:.0} | {max:.0} | {} | {} | {n}/{} |",
                        median_ms(total),
                        part(|t| t.kernel),
                        part(|t| t.firmware),
                        o.runs
                    );
                    if let Some(t) = times.iter().find(|t| !t.stages.is_empty()) {
                        stage_lines.push(format!("{accel} {machine}: {}", t.stages));
                    }
                }
            }
            println!("\nKernel stages of one boot each (us: time since the previous stage):\n");
            for l in &stage_lines {
                println!("    {l}");
            }
            println!();
        }
        if o.load {
            println!("## Doorbells per request at steady load (TCG, qboot; GET /files/4k.html: 8 keep-alive connections x 250, then 8 clients x 100 connections of one request)\n");
            println!("| NIC | load | requests | seconds | req/s | doorbells | of which RX | suppressed flushes | doorbells/request | device interrupts/request | frames sent |");
            println!("|---|---|---|---|---|---|---|---|---|---|---|");
            for nic in ["virtio", "e1000", "e1000e", "igb", "vmxnet3"] {
                let device = if nic == "virtio" {
                    "virtio-net-pci"
                } else {
                    nic
                };
                if !crate::setup_qemu::has_device("qemu-system-x86_64", device) {
                    println!(
                        "| {nic} | - | not in this QEMU (`cargo xtask setup`) | | | | | | | | |"
                    );
                    continue;
                }
                let port = free_port()?;
                let serial = dir.join(format!("{nic}.serial"));
                let args = qemu_args(&bin, &elf, "tcg", "qboot", nic, port, "stats")?;
                let _vm = spawn(&args, Some(&serial))?;
                let t0 = Instant::now();
                while get_status(port, "/", Duration::from_millis(200)) != Some(200) {
                    if t0.elapsed() > Duration::from_secs(60) {
                        return Err(format!("{nic}: no 200 in 60 s"));
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                for (mode, cpr) in [("keep-alive", false), ("connection per request", true)] {
                    std::thread::sleep(Duration::from_millis(1200));
                    let before = last_stats(&serial).ok_or("no stats line")?;
                    let wakes0 = device_wakes(port);
                    let (ok, took) = if cpr {
                        load_cpr(port, 8, 100, "/files/4k.html")
                    } else {
                        load(port, 8, 250, "/files/4k.html")
                    };
                    std::thread::sleep(Duration::from_millis(1200));
                    let after = last_stats(&serial).ok_or("no stats line")?;
                    let wakes = match (wakes0, device_wakes(port)) {
                        (Some(a), Some(b)) => b.saturating_sub(a),
                        _ => 0,
                    };
                    let d = |k: &str| stat(&after, k) - stat(&before, k);
                    let reqs = d("http_requests");
                    println!(
                        "| {nic} | {mode} | {reqs} ({ok} ok) | {:.2} | {:.0} | {} | {} | {} | {:.3} | {:.3} | {} |",
                        took.as_secs_f64(),
                        ok as f64 / took.as_secs_f64(),
                        d("doorbells"),
                        d("rx_doorbells"),
                        d("suppressed"),
                        d("doorbells") as f64 / reqs.max(1) as f64,
                        wakes as f64 / reqs.max(1) as f64,
                        d("nic_tx")
                    );
                }
            }
            println!();
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    res
}
