//! `cargo xtask fuzz [SECS]`: builds every cargo-fuzz target in `fuzz/` and runs each for
//! SECS seconds (default 60), starting from its seed corpus in `fuzz/corpus/<target>/`.
//!
//! New inputs go to a scratch corpus under `target/fuzz-corpus/`, so the committed seeds
//! stay the real captured frames they are. A crash fails the task and leaves the input in
//! `fuzz/artifacts/<target>/` (ignored by git) for `cargo +nightly fuzz run <target> FILE`.
//! cargo-fuzz needs a nightly toolchain; both are installed here when missing.

use std::path::Path;
use std::process::Command;

use crate::run;

/// The targets, in the order they run: parsers first, the whole server last.
pub const TARGETS: &[&str] = &[
    "ethernet",
    "arp",
    "ipv4",
    "icmp",
    "ipv6",
    "icmpv6",
    // IPv6 on the link: neighbour cache, DAD and the answers, frames aimed at our address.
    "ipv6_link",
    "tcp",
    "udp",
    // The virtio-net header of a TAP with receive offloads (the bare client).
    "vnet",
    "udp_request",
    "udp_client",
    // The engine's client: the active open and its response reader (the bare load client's).
    "tcp_client",
    // The engine's response reader alone, chunked bodies included (the HTTPS client's).
    "fetch_http",
    // The DHCP client (the bare machine's): replies and time in any order.
    "dhcp",
    // The DHCPv6 client: servers' messages parsed, and time, in any order.
    "dhcp6",
    // The DNS stub resolver: forged and hostile responses, and time, in any order.
    "dns",
    // The ACME client's readers: the CA's JSON documents, certificate chains, JWS.
    "acme_documents",
    // The ACME order: any answers, failures and time (backoff, the hour's bound).
    "acme_order",
    "acme_exchange",
    "http_request",
    // The access log's lines (common, combined, JSON) from hostile request bytes.
    "access_log",
    // The PROXY protocol header a balancer sends (HAProxy's versions 1 and 2).
    "proxy_header",
    "site_load",
    // A request's Host value and the virtual host it chooses.
    "host_header",
    "server",
    // One connection through a server with the PROXY protocol on.
    "server_proxy",
    // The split round the parallel runners drive.
    "server_split",
    "netcore",
    // A bonded server on three NICs with flapping links (bonding).
    "bond",
    // The bare-machine kernel's parsers.
    "kernel_cmdline",
    // The boot module's trailers: HTTPS's chain and key, the ACME client's roots.
    "tls_payload",
    "kernel_multiboot2",
    "kernel_madt",
    "kernel_fadt",
    // The bare-machine NIC drivers against a device that lies (drivers::fake).
    "driver_virtio_net",
    // The virtio-blk driver (the bare machine's state disk) against a lying device.
    "driver_virtio_blk",
    "driver_e1000",
    "driver_e1000e",
    "driver_vmxnet3",
    "driver_igb",
    // The load generator's response reader (crates/loadgen/src/http.rs).
    "http_response",
    // A redirect's Location and its resolution (`bareweb get --follow`).
    "redirect",
    // TLS (crates/tls): the record ciphers, a server connection's whole input, and the
    // record layer after a real handshake fed records sealed with the client's keys.
    "tls_record",
    "tls_server",
    "tls_established",
    // The whole server with HTTPS on: hellos of every shape, records after a real handshake.
    "server_tls",
    // The AES-NI/PCLMULQDQ AES-GCM against the aes-gcm crate.
    "aes_gcm",
];

/// Installs nightly (minimal profile) and cargo-fuzz if they are missing.
pub fn setup() -> Result<(), String> {
    let has_nightly = Command::new("rustup")
        .args(["run", "nightly", "rustc", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_nightly {
        run(Command::new("rustup").args([
            "toolchain",
            "install",
            "nightly",
            "--profile",
            "minimal",
        ]))?;
    }
    let has_fuzz = Command::new("cargo")
        .args(["fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_fuzz {
        run(Command::new("cargo").args(["install", "--locked", "cargo-fuzz"]))?;
    }
    Ok(())
}

/// Builds every target, then runs them, as many at once as there are CPUs (libFuzzer
/// uses one each), every one for `secs` seconds. Each run's output goes to
/// `target/fuzz-logs/<target>.log`; a line per target says how many inputs it ran, and a
/// failure prints the end of its log.
pub fn fuzz(secs: u64) -> Result<(), String> {
    setup()?;
    let fuzz_dir = Path::new("fuzz");
    run(Command::new("cargo")
        .args(["+nightly", "fuzz", "build"])
        .current_dir(fuzz_dir))?;
    let logs = Path::new("target").join("fuzz-logs");
    std::fs::create_dir_all(&logs).map_err(|e| format!("cannot create {}: {e}", logs.display()))?;
    let logs = std::fs::canonicalize(&logs).map_err(|e| format!("{}: {e}", logs.display()))?;
    let at_once = std::thread::available_parallelism().map_or(1, |n| n.get());
    eprintln!(
        "fuzz: {} targets, {secs} s each, {at_once} at a time (logs in {})",
        TARGETS.len(),
        logs.display()
    );
    let mut running: Vec<(&str, std::process::Child)> = Vec::new();
    let mut failed: Vec<String> = Vec::new();
    let mut next = TARGETS.iter();
    loop {
        while running.len() < at_once {
            let Some(t) = next.next() else { break };
            running.push((t, start(t, secs, &logs)?));
        }
        if running.is_empty() {
            break;
        }
        // Wait for whichever ends first (all end by their time limit).
        let mut ended = None;
        while ended.is_none() {
            for (i, (_, c)) in running.iter_mut().enumerate() {
                if let Some(st) = c.try_wait().map_err(|e| e.to_string())? {
                    ended = Some((i, st));
                    break;
                }
            }
            if ended.is_none() {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }
        let (i, st) = ended.expect("set above");
        let (t, _) = running.swap_remove(i);
        let log = std::fs::read_to_string(logs.join(format!("{t}.log"))).unwrap_or_default();
        if st.success() {
            let runs = log
                .lines()
                .find_map(|l| l.strip_prefix("stat::number_of_executed_units:"))
                .map_or("?", str::trim);
            eprintln!("fuzz: {t}: ok, {runs} inputs in {secs} s");
        } else {
            let tail: Vec<&str> = log.lines().rev().take(60).collect();
            for l in tail.iter().rev() {
                eprintln!("  {t}| {l}");
            }
            eprintln!("fuzz: {t}: FAILED ({st}); input saved in fuzz/artifacts/{t}/");
            failed.push(t.to_string());
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "fuzz targets failed: {} (inputs saved in fuzz/artifacts/<target>/; logs in {})",
            failed.join(", "),
            logs.display()
        ))
    }
}

/// Starts target `t` for `secs` seconds from its seed corpus, with a scratch corpus for
/// what it finds, its output to `logs/<t>.log`.
fn start(t: &str, secs: u64, logs: &Path) -> Result<std::process::Child, String> {
    let scratch = Path::new("target").join("fuzz-corpus").join(t);
    std::fs::create_dir_all(&scratch)
        .map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
    let scratch =
        std::fs::canonicalize(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let log_path = logs.join(format!("{t}.log"));
    let log = std::fs::File::create(&log_path)
        .map_err(|e| format!("cannot create {}: {e}", log_path.display()))?;
    let err = log.try_clone().map_err(|e| e.to_string())?;
    Command::new("cargo")
        .args(["+nightly", "fuzz", "run", t])
        .arg(&scratch)
        .arg(Path::new("corpus").join(t))
        .arg("--")
        .arg(format!("-max_total_time={secs}"))
        .arg("-print_final_stats=1")
        .current_dir("fuzz")
        .stdout(log)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot start fuzz target {t}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::TARGETS;

    /// `cargo fuzz run` stops at once without its seed directory (a fresh clone has only
    /// what is committed): every target has seeds in `fuzz/corpus/<target>/`, and every
    /// `[[bin]]` of fuzz/Cargo.toml is a target here.
    #[test]
    fn every_target_has_committed_seeds_and_is_run() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for t in TARGETS {
            let dir = root.join("fuzz/corpus").join(t);
            let n = std::fs::read_dir(&dir).map_or(0, |d| d.count());
            assert!(n > 0, "{t}: no seeds in {}", dir.display());
        }
        let manifest = std::fs::read_to_string(root.join("fuzz/Cargo.toml")).unwrap();
        let mut in_bin = false;
        for line in manifest.lines() {
            if line.starts_with('[') {
                in_bin = line == "[[bin]]";
            } else if let Some(name) = line.strip_prefix("name = ").filter(|_| in_bin) {
                let name = name.trim_matches('"');
                assert!(TARGETS.contains(&name), "{name} is not in TARGETS");
            }
        }
    }
}
