//! Stages of `cargo xtask test` for many cores: the ring's loom model test and the
//! many-core kernel tests (tests/kernel_smp: `bareweb run --smp 1/2/4` under QEMU).

use std::process::Command;

use crate::{is_root, pytest, root_needed, run};

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

/// tests/kernel_smp: the kernel on 1, 2 and 4 cores in both modes, under QEMU on TAPs in
/// network namespaces (root). Needs the release binary (built by the system-test stage).
pub fn kernel_tests() -> Result<(), String> {
    if !is_root() {
        return root_needed("the many-core kernel tests", "tests/kernel_smp");
    }
    pytest("tests/kernel_smp")
}
