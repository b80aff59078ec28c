//! The bare-machine kernel's stages of `cargo xtask test`: lint (crates/kernel is its own
//! workspace for x86_64-unknown-none, so the host workspace's fmt/clippy never see it)
//! and the QEMU tests in tests/kernel.

use std::process::Command;

use crate::{is_root, pytest, root_needed, run};

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
        return root_needed("the kernel tests", "tests/kernel");
    }
    pytest("tests/kernel")
}
