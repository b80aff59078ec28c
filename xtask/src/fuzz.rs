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
    "tcp",
    "udp",
    "udp_request",
    "udp_client",
    // The engine's client: the active open and its response reader (issue 18).
    "tcp_client",
    // The DHCP client (issue 16): replies and time in any order.
    "dhcp",
    "http_request",
    "site_load",
    "server",
    // The split round the parallel runners drive (issue 5).
    "server_split",
    "netcore",
    // A bonded server on three NICs with flapping links (issue 14).
    "bond",
    // The bare-machine kernel's parsers.
    "kernel_cmdline",
    "kernel_multiboot2",
    "kernel_madt",
    // The load generator's response reader (crates/loadgen/src/http.rs).
    "http_response",
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

/// Runs every target for `secs` seconds.
pub fn fuzz(secs: u64) -> Result<(), String> {
    setup()?;
    let fuzz_dir = Path::new("fuzz");
    run(Command::new("cargo")
        .args(["+nightly", "fuzz", "build"])
        .current_dir(fuzz_dir))?;
    for t in TARGETS {
        let scratch = Path::new("target").join("fuzz-corpus").join(t);
        std::fs::create_dir_all(&scratch)
            .map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
        let scratch =
            std::fs::canonicalize(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
        run(Command::new("cargo")
            .args(["+nightly", "fuzz", "run", t])
            .arg(&scratch)
            .arg(Path::new("corpus").join(t))
            .arg("--")
            .arg(format!("-max_total_time={secs}"))
            .arg("-print_final_stats=1")
            .current_dir(fuzz_dir))
        .map_err(|e| format!("fuzz target {t} failed (input saved in fuzz/artifacts/{t}/): {e}"))?;
    }
    Ok(())
}
