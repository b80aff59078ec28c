//! The bare-machine kernel's stages of `cargo xtask test`: lint (crates/kernel is its own
//! workspace for x86_64-unknown-none, so the host workspace's fmt/clippy never see it)
//! and the QEMU tests in tests/kernel.

use std::process::Command;

use crate::{in_ci, is_root, run};

/// `cargo fmt --check` and `cargo clippy -D warnings` inside crates/kernel.
pub fn lint(cargo: &str) -> Result<(), String> {
    run(Command::new(cargo)
        .current_dir("crates/kernel")
        .args(["fmt", "--", "--check"]))?;
    run(Command::new(cargo).current_dir("crates/kernel").args([
        "clippy",
        "--release",
        "--",
        "-D",
        "warnings",
    ]))
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
        "-p",
        "no:cacheprovider",
        "tests/kernel",
    ]))
}
