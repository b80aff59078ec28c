//! Stages of `cargo xtask test` owned by issue 4 (many cores): the ring's loom model test.

use std::process::Command;

use crate::run;

/// Runs the ring's loom model (`cfg(loom)`) in its own target directory, so the changed
/// RUSTFLAGS do not invalidate the main build.
pub fn loom_ring(cargo: &str) -> Result<(), String> {
    run(Command::new(cargo)
        .args([
            "test",
            "-p",
            "bareweb-engine",
            "--release",
            "--lib",
            "ring::loom_tests",
        ])
        .env("RUSTFLAGS", "--cfg loom")
        .env("CARGO_TARGET_DIR", "target/loom"))
}
