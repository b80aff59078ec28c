//! The bench's topology: network namespaces, veth pairs and sysctls made with `ip`, each
//! removed again when its guard is dropped (also on error paths), and the measured
//! capacity of a veth link for the bandwidth bound.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::sys;

/// Runs a command and turns failure into an error with its stderr.
pub fn sh(args: &[&str]) -> Result<String, String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", args[0]))?;
    if !out.status.success() {
        return Err(format!(
            "{} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).to_string())
}

/// Gives the TAP `dev` in namespace `ns` no queueing discipline (`noqueue`), as a veth
/// has: a TAP is born with `pfifo_fast`, whose enqueue, lock and dequeue every frame
/// toward the TAP's reader pays in its sender's context (a server's transmit to the bare
/// client, a client's transmit to bareweb). Its reader drains the device's own ring; the
/// qdisc queued nothing (tun never stops its queue: a full ring drops in either case).
pub fn no_qdisc(ns: &str, dev: &str) -> Result<(), String> {
    sh(&[
        "ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", dev, "root", "noqueue",
    ])
    .map(|_| ())
}

/// A network namespace, deleted on drop.
pub struct Netns {
    pub name: String,
}

impl Netns {
    pub fn new(name: &str) -> Result<Netns, String> {
        // A namespace left by a crashed earlier run of this same name goes first.
        if std::path::Path::new("/run/netns").join(name).exists() {
            let _ = sh(&["ip", "netns", "del", name]);
        }
        sh(&["ip", "netns", "add", name])?;
        remember(name);
        let ns = Netns {
            name: name.to_string(),
        };
        sh(&["ip", "-n", name, "link", "set", "lo", "up"])?;
        Ok(ns)
    }

    pub fn sysctl(&self, key: &str, value: &str) -> Result<(), String> {
        sh(&[
            "ip",
            "netns",
            "exec",
            &self.name,
            "sysctl",
            "-q",
            "-w",
            &format!("{key}={value}"),
        ])
        .map(|_| ())
    }

    /// Tuning for a load client: many ephemeral ports, quick reuse.
    pub fn tune_client(&self) -> Result<(), String> {
        self.sysctl("net.ipv4.ip_local_port_range", "1024 65535")?;
        self.sysctl("net.ipv4.tcp_tw_reuse", "1")
    }

    /// Tuning for a kernel server: deep accept queues.
    pub fn tune_server(&self) -> Result<(), String> {
        self.sysctl("net.core.somaxconn", "8192")?;
        self.sysctl("net.ipv4.tcp_max_syn_backlog", "8192")
    }

    pub fn path(&self) -> std::path::PathBuf {
        std::path::Path::new("/run/netns").join(&self.name)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        forget(&self.name);
        if let Err(e) = sh(&["ip", "netns", "del", &self.name]) {
            eprintln!("bench: {e}");
        }
    }
}

/// Namespaces alive now. The release build aborts on a panic (no unwinding, so no `Drop`):
/// the hook [`clean_up_on_panic`] installs removes them, and the processes in them, first.
static LIVE: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

fn remember(name: &str) {
    LIVE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(name.to_string());
}

fn forget(name: &str) {
    LIVE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|n| n != name);
}

/// Kills every process in each live namespace and deletes the namespaces.
pub fn clean_up_all() {
    let names: Vec<String> = std::mem::take(&mut *LIVE.lock().unwrap_or_else(|e| e.into_inner()));
    for name in names.iter().rev() {
        if let Ok(o) = std::process::Command::new("ip")
            .args(["netns", "pids", name])
            .output()
        {
            for pid in String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok())
            {
                // A process of a namespace this bench made.
                sys::kill(pid, sys::Signal::KILL);
            }
        }
        let _ = sh(&["ip", "netns", "del", name]);
    }
}

/// From now on a panic (a closed pipe on stderr, say) first removes the namespaces and
/// the servers in them.
pub fn clean_up_on_panic() {
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        clean_up_all();
        prev(info);
    }));
}

/// Joins `a` and `b` with a veth pair: `a` gets 10.77.`net`.1/24, `b` 10.77.`net`.2/24.
/// Returns the two addresses.
pub fn veth(a: &Netns, b: &Netns, tag: &str, net: u8) -> Result<(String, String), String> {
    let (ea, eb) = (format!("{tag}a"), format!("{tag}b"));
    sh(&[
        "ip", "link", "add", &ea, "netns", &a.name, "type", "veth", "peer", "name", &eb, "netns",
        &b.name,
    ])?;
    let (ia, ib) = (format!("10.77.{net}.1"), format!("10.77.{net}.2"));
    sh(&[
        "ip",
        "-n",
        &a.name,
        "addr",
        "add",
        &format!("{ia}/24"),
        "dev",
        &ea,
    ])?;
    sh(&[
        "ip",
        "-n",
        &b.name,
        "addr",
        "add",
        &format!("{ib}/24"),
        "dev",
        &eb,
    ])?;
    sh(&["ip", "-n", &a.name, "link", "set", &ea, "up"])?;
    sh(&["ip", "-n", &b.name, "link", "set", &eb, "up"])?;
    Ok((ia, ib))
}

/// Capacity of a veth link between two fresh namespaces: bytes a TCP stream carries in
/// `secs`, times 8, per second (what one kernel TCP connection achieves; the link itself
/// has no line rate).
pub fn veth_capacity_bps(prefix: &str, secs: f64) -> Result<f64, String> {
    let a = Netns::new(&format!("{prefix}ka"))?;
    let b = Netns::new(&format!("{prefix}kb"))?;
    let (_, ib) = veth(&a, &b, &format!("{prefix}k"), 250)?;
    let bpath = b.path();
    let (tx, rx) = std::sync::mpsc::channel();
    let sink = std::thread::spawn(move || -> Result<f64, String> {
        sys::enter_netns(&bpath).map_err(|e| format!("setns: {e}"))?;
        let l = TcpListener::bind("10.77.250.2:5001").map_err(|e| format!("bind: {e}"))?;
        let _ = tx.send(());
        let (mut s, _) = l.accept().map_err(|e| format!("accept: {e}"))?;
        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
        let mut buf = vec![0u8; 1 << 20];
        let mut total = 0u64;
        let mut t0 = None;
        loop {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    t0.get_or_insert_with(Instant::now);
                    total += n as u64;
                }
            }
        }
        let dt = t0.map_or(0.0, |t: Instant| t.elapsed().as_secs_f64());
        Ok(if dt > 0.0 {
            total as f64 * 8.0 / dt
        } else {
            0.0
        })
    });
    let _ = rx.recv_timeout(Duration::from_secs(5));
    let apath = a.path();
    let source = std::thread::spawn(move || -> Result<(), String> {
        sys::enter_netns(&apath).map_err(|e| format!("setns: {e}"))?;
        let mut s =
            TcpStream::connect(format!("{ib}:5001")).map_err(|e| format!("connect: {e}"))?;
        let buf = vec![0x5au8; 256 * 1024];
        let end = Instant::now() + Duration::from_secs_f64(secs);
        while Instant::now() < end {
            s.write_all(&buf).map_err(|e| format!("write: {e}"))?;
        }
        Ok(())
    });
    let sent = source.join().map_err(|_| "capacity source panicked")?;
    let got = sink.join().map_err(|_| "capacity sink panicked")?;
    sent?;
    got
}
