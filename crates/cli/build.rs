//! Builds the bare-machine kernel (crates/kernel) with a nested cargo so that `bareweb`
//! always carries the kernel that matches its engine: `bareweb run` and
//! `bareweb build --iso/-o x.elf` write it out from `include_bytes!`.
//!
//! The nested cargo runs in crates/kernel (its own workspace, target and
//! .cargo/config.toml: x86_64-unknown-none, linked at 1 MiB) with the environment cleared
//! to the few variables a toolchain needs, so the outer build's RUSTFLAGS, target,
//! wrappers (clippy) and jobserver never leak into it. Its target directory is
//! crates/kernel/target, separate from the outer one (no lock is shared). Set
//! BAREWEB_KERNEL=/path/to/elf to use a prebuilt kernel instead.

use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "x86_64-unknown-none";

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it"));
    let dest = out.join("bareweb-kernel.elf");
    println!("cargo:rerun-if-env-changed=BAREWEB_KERNEL");
    println!("cargo:rustc-env=BAREWEB_KERNEL_ELF={}", dest.display());
    if let Ok(prebuilt) = std::env::var("BAREWEB_KERNEL") {
        println!("cargo:rerun-if-changed={prebuilt}");
        std::fs::copy(&prebuilt, &dest)
            .unwrap_or_else(|e| panic!("BAREWEB_KERNEL={prebuilt}: cannot copy: {e}"));
        return;
    }
    let kernel = manifest.join("../kernel");
    let engine = manifest.join("../engine");
    let (settings, tls) = (manifest.join("../settings"), manifest.join("../tls"));
    for p in [
        kernel.join("src"),
        kernel.join("Cargo.toml"),
        kernel.join("Cargo.lock"),
        kernel.join("build.rs"),
        kernel.join("link.ld"),
        kernel.join(".cargo/config.toml"),
        engine.join("src"),
        engine.join("Cargo.toml"),
        settings.join("src"),
        settings.join("Cargo.toml"),
        tls.join("src"),
        tls.join("Cargo.toml"),
    ] {
        println!("cargo:rerun-if-changed={}", p.display());
    }
    ensure_target();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&kernel)
        .args(["build", "--release", "--bin", "bareweb-kernel"])
        .env_clear();
    for keep in [
        "PATH",
        "HOME",
        "CARGO_HOME",
        "RUSTUP_HOME",
        "RUSTUP_TOOLCHAIN",
        "TMPDIR",
    ] {
        if let Ok(v) = std::env::var(keep) {
            cmd.env(keep, v);
        }
    }
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("cannot run cargo to build the kernel: {e}"));
    if !status.success() {
        panic!(
            "building the kernel failed ({status}); try `cd {} && cargo build --release`",
            kernel.display()
        );
    }
    let elf = kernel
        .join("target")
        .join(TARGET)
        .join("release/bareweb-kernel");
    std::fs::copy(&elf, &dest).unwrap_or_else(|e| panic!("cannot copy {}: {e}", elf.display()));
}

/// Makes sure the toolchain has the kernel's target, installing it with rustup if it can.
fn ensure_target() {
    let has = || -> bool {
        let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
        Command::new(rustc)
            .args(["--print", "sysroot"])
            .output()
            .ok()
            .map(|o| {
                let root = String::from_utf8_lossy(&o.stdout).trim().to_string();
                Path::new(&root).join("lib/rustlib").join(TARGET).exists()
            })
            .unwrap_or(false)
    };
    if has() {
        return;
    }
    let added = Command::new("rustup")
        .args(["target", "add", TARGET])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !added || !has() {
        panic!("the kernel needs the {TARGET} target: run `rustup target add {TARGET}`");
    }
}
