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

/// The stripped kernel ELF without a site, as `cargo build --release` (crates/cli/build.rs)
/// builds it and `bareweb` carries it.
pub const ELF: &str = "crates/kernel/target/x86_64-unknown-none/release/bareweb-kernel";

/// Its budget: 2048 KiB since the kernel carries the ACME client (1,987,880 bytes: its
/// TLS client, WebPKI and RSA verification, the Web PKI's roots, the order's JSON and
/// X.509 encoding; ~3 % spare); 1200 KiB since the kernel carries IPv6 (1,163,016 bytes measured, ~5 %
/// spare); 1100 KiB since it carries HTTPS (1,023,768 bytes with rustls, the RustCrypto
/// provider and the engine's TLS paths); 512 KiB before, set with the many-core work
/// (docs/kernel.md, "Size").
pub const SIZE_BUDGET: u64 = 2048 * 1024;

/// The kernel's size against [`SIZE_BUDGET`] (the kernel `bareweb` carries: [`ELF`], or
/// `BAREWEB_KERNEL`'s when set), printed; an error past the budget. Run after
/// `cargo build --release -p bareweb`, which builds it.
pub fn size_check() -> Result<(), String> {
    let elf = std::env::var("BAREWEB_KERNEL").unwrap_or_else(|_| ELF.into());
    let size = std::fs::metadata(&elf)
        .map_err(|e| format!("{elf}: {e} (build it: cargo build --release -p bareweb)"))?
        .len();
    let line = format!(
        "kernel size: {elf}: {size} bytes ({:.1} KiB) of the {} KiB budget",
        size as f64 / 1024.0,
        SIZE_BUDGET / 1024
    );
    println!("{line}");
    if size > SIZE_BUDGET {
        return Err(format!(
            "{line}: {} bytes over (docs/kernel.md, \"Size\": where the bytes go and how to cut)",
            size - SIZE_BUDGET
        ));
    }
    Ok(())
}

/// tests/kernel: `bareweb run` under QEMU on TAPs in network namespaces (root).
pub fn tests() -> Result<(), String> {
    if !is_root() {
        return root_needed("the kernel tests", "tests/kernel");
    }
    pytest("tests/kernel")
}
