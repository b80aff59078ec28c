//! The bare-machine kernel's stages of `cargo xtask test`: lint (crates/kernel is its own
//! workspace for x86_64-unknown-none, so the host workspace's fmt/clippy never see it)
//! and the QEMU tests in tests/kernel.

use std::process::Command;

use crate::{in_ci, is_root, run};

/// The host's target triple (the kernel's unit tests run there).
fn host_triple() -> Result<String, String> {
    let out = Command::new("rustc")
        .arg("-vV")
        .output()
        .map_err(|e| format!("rustc: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .ok_or_else(|| "rustc -vV printed no host".into())
}

/// Inside crates/kernel: `cargo fmt --check`, clippy `-D warnings` for the bare target and
/// for the unit tests on the host, and the unit tests (parsers, drivers against simulated
/// devices).
pub fn lint(cargo: &str) -> Result<(), String> {
    let host = host_triple()?;
    let k = |args: &[&str]| -> Result<(), String> {
        run(Command::new(cargo).current_dir("crates/kernel").args(args))
    };
    k(&["fmt", "--", "--check"])?;
    k(&["clippy", "--release", "--", "-D", "warnings"])?;
    k(&[
        "clippy", "--lib", "--tests", "--target", &host, "--", "-D", "warnings",
    ])?;
    k(&["test", "--lib", "--target", &host])
}

/// tests/kernel: `bareweb run` under QEMU on TAPs in network namespaces (root).
pub fn tests() -> Result<(), String> {
    if !is_root() {
        if in_ci() {
            return Err("kernel tests need root (netns, TAP); CI must run as root".into());
        }
        eprintln!(
            "note: not root: skipping the kernel tests (tests/kernel); run as root to include them"
        );
        return Ok(());
    }
    run(Command::new("python3").args([
        "-m",
        "pytest",
        "-v",
        "-rs", // every skip is listed with its reason
        "-p",
        "no:cacheprovider",
        "tests/kernel",
    ]))
}
