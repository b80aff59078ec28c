//! `cargo xtask <task>`: the project's task runner.
//!
//! - `test`  — installs what the tests need (rustup target, Debian packages when run as
//!   root) and runs every test: fmt, clippy, unit tests, whole-system tests, and the
//!   one-minute side-by-side bench (`bareweb bench --smoke`, xtask/src/bench.rs).
//! - `setup` — only the installation part of `test`.
//! - `fuzz [SECS]` — every cargo-fuzz target for SECS seconds (see `fuzz.rs`).
//! - `kernel-bench` — the bare-machine kernel's budgets (size, boot time, doorbells).
//! - `bench-smoke` — only the smoke bench stage of `test` (see `bench.rs`).
//! - `layers`, `doc-limits` — only the engine's layer map check, or the short documents'
//!   length limits (both also run by `test`).
//! - `soak [MINUTES]` — `tests/soak.py`: a long mixed run against `bareweb serve` (root;
//!   default 30 minutes; not part of `test`).

mod fuzz;

use std::process::{Command, ExitCode};

mod bench;
mod doclimits;
mod kernel;
mod kernel_bench;
mod layers;
mod setup_qemu;
mod smp;

/// Debian packages the whole-system tests use.
const APT_PACKAGES: &[&str] = &[
    "iproute2",
    "iputils-ping",
    "nftables",
    "ethtool",
    "curl",
    "wget",
    "python3",
    // crates/tls/tests/real_clients.rs: `openssl s_client` as a client, and the test's
    // certificates (crates/tls/testdata/mk.sh); crates/acme's tests: `openssl req -verify`
    // and `x509` read the CSR and the TLS-ALPN-01 certificate.
    "openssl",
    // tests/system/test_https.py: a certificate dated in the past (openssl 3.0's `req`
    // cannot date one), for the expiry warning.
    "python3-cryptography",
    // The bare-machine kernel: QEMU for `bareweb run` and tests/kernel, GRUB
    // (BIOS and UEFI) and xorriso for `bareweb build --iso/--disk`, OVMF to boot them
    // under UEFI.
    "qemu-system-x86",
    "grub-pc-bin",
    "grub-efi-amd64-bin",
    "ovmf",
    "grub-common",
    "xorriso",
    "mtools",
    // tests/kernel/test_dhcp.py: a DHCP server in a namespace for `ip=dhcp`.
    "dnsmasq",
    // tests/system/test_browser.py: what a browser sees, headless.
    "chromium",
    // `bareweb bench`'s second client kind: wrk beside `bareweb load`.
    "wrk",
    // tests/system/test_proxy_protocol.py: a real balancer sending the PROXY protocol
    // (`send-proxy`, `send-proxy-v2`) in front of `bareweb serve`.
    "haproxy",
    // tests/system/test_metrics.py: `promtool check metrics` on a scrape of /metrics.
    "prometheus",
    // tests/system/test_testssl.py: testssl.sh's audit of serve's HTTPS, and an NSS
    // database (certutil) so headless Chromium trusts the test's CA.
    "testssl.sh",
    "libnss3-tools",
    // crates/acme/tests/pebble.rs: the ACME test CA and its DNS (pebble-challtestsrv).
    "pebble",
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let task = args.first().map(String::as_str).unwrap_or("help");
    let result = match task {
        "test" => setup().and_then(|()| test()),
        "setup" => setup(),
        "bench-smoke" => setup().and_then(|()| bench::bench_smoke()),
        "fuzz" => match args.get(1).map(|s| s.parse::<u64>()) {
            None => fuzz::fuzz(60),
            Some(Ok(secs)) => fuzz::fuzz(secs),
            Some(Err(_)) => Err("usage: cargo xtask fuzz [SECS]".into()),
        },
        "kernel-bench" => kernel_bench::bench(&args[1..]),
        "layers" => layers::check(),
        "doc-limits" => doclimits::check(),
        "soak" => match args.get(1).map(|s| s.parse::<f64>()) {
            None => setup().and_then(|()| soak("30")),
            Some(Ok(m)) if m > 0.0 => setup().and_then(|()| soak(&args[1])),
            Some(_) => Err("usage: cargo xtask soak [MINUTES]".into()),
        },
        _ => {
            eprintln!("usage: cargo xtask <test|setup|fuzz|kernel-bench|bench-smoke>");
            eprintln!("  test   install what the tests need, then run every test");
            eprintln!("  setup  only install (rustup target, Debian packages when root)");
            eprintln!("  fuzz [SECS]  run every fuzz target SECS seconds (default 60)");
            eprintln!("  kernel-bench [--runs N] [--accel kvm,tcg] [--machine microvm,qboot,pc,q35] [--skip-boot] [--skip-load]");
            eprintln!(
                "         measure the kernel's budgets: size, boot to first 200, doorbells/request"
            );
            eprintln!("  bench-smoke  only `bareweb bench --smoke` and its checks (root)");
            eprintln!("  layers, doc-limits  only the layer map, or the short docs' lengths");
            eprintln!(
                "  soak [MINUTES]  tests/soak.py for MINUTES (default 30; root): mixed load,"
            );
            eprintln!("         lossy downloads, bad and silent clients; no error, no TCB left, flat memory");
            return if task == "help" {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            };
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask {task}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `tests/soak.py MINUTES` on a fresh release build (it needs root: namespaces, TAP).
fn soak(minutes: &str) -> Result<(), String> {
    if !is_root() {
        return Err("the soak needs root (network namespaces, TAP)".into());
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    run(Command::new(cargo).args(["build", "--release", "-p", "bareweb"]))?;
    run(Command::new("python3").args(["tests/soak.py", minutes]))
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// Runs a command, echoing it, and turns a non-zero exit into an error.
pub(crate) fn run(cmd: &mut Command) -> Result<(), String> {
    eprintln!("+ {cmd:?}");
    let status = cmd
        .status()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed with {status}"))
    }
}

fn setup() -> Result<(), String> {
    // The bare-machine kernel needs the x86_64-unknown-none target.
    let targets = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map_err(|e| format!("rustup not found: {e}"))?;
    if !String::from_utf8_lossy(&targets.stdout).contains("x86_64-unknown-none") {
        run(Command::new("rustup").args(["target", "add", "x86_64-unknown-none"]))?;
    }
    let missing: Vec<&str> = APT_PACKAGES
        .iter()
        .chain(bench::APT_PACKAGES)
        .copied()
        .filter(|p| !dpkg_installed(p))
        .collect();
    // As root apt-get runs directly; otherwise through sudo (which may ask for a password).
    let apt = |args: &[&str]| -> Command {
        let mut c = if is_root() {
            Command::new("apt-get")
        } else {
            let mut c = Command::new("sudo");
            c.args(["DEBIAN_FRONTEND=noninteractive", "apt-get"]);
            c
        };
        c.args(args).env("DEBIAN_FRONTEND", "noninteractive");
        c
    };
    if missing.is_empty() {
        return setup_qemu::ensure_igb(is_root(), in_ci(), &apt);
    }
    if !is_root() {
        let has_sudo = Command::new("sudo").arg("--version").output().is_ok();
        if !has_sudo {
            let msg = format!("Debian packages {missing:?} are missing and neither root nor sudo is available to install them");
            if in_ci() {
                return Err(msg);
            }
            eprintln!(
                "note: {msg}; install them as root (`apt-get install {}`)",
                missing.join(" ")
            );
            return Ok(());
        }
        eprintln!("installing {missing:?} with sudo apt-get");
    }
    run(&mut apt(&["update", "-qq"]))?;
    run(apt(&["install", "-y", "-qq", "--no-install-recommends"]).args(&missing))?;
    // After bookworm's QEMU: from bookworm-backports when it lacks igb.
    setup_qemu::ensure_igb(is_root(), in_ci(), &apt)
}

fn dpkg_installed(pkg: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", pkg])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        .unwrap_or(false)
}

fn test() -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    run(Command::new(&cargo).args(["fmt", "--all", "--", "--check"]))?;
    run(Command::new(&cargo).args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    layers::check()?;
    doclimits::check()?;
    // The engine must stay no_std: build it for the bare-metal target.
    run(Command::new(&cargo).args([
        "build",
        "-p",
        "bareweb-engine",
        "--no-default-features",
        "--features",
        "alloc",
        "--target",
        "x86_64-unknown-none",
    ]))?;
    kernel::lint(&cargo)?;
    run(Command::new(&cargo).args(["test", "--workspace"]))?;
    smp::loom_ring(&cargo)?;
    system_tests(&cargo)?;
    kernel::size_check()?;
    kernel::tests()?;
    smp::kernel_tests()?;
    // Every parser and the whole server under the fuzzer, briefly (BAREWEB_FUZZ_SECS per
    // target, default 10, as many targets at once as there are CPUs: 20 targets keep CI under 30 minutes); `cargo xtask fuzz 600` digs deeper.
    let secs = std::env::var("BAREWEB_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    fuzz::fuzz(secs)?;
    bench::bench_smoke()
}

/// Whole-system tests: `bareweb serve` in network namespaces, driven by pytest.
fn system_tests(cargo: &str) -> Result<(), String> {
    run(Command::new(cargo).args(["build", "--release", "-p", "bareweb"]))?;
    if !is_root() {
        return root_needed("whole-system tests", "tests/system");
    }
    let has_pytest = Command::new("python3")
        .args(["-m", "pytest", "--version"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !has_pytest {
        run(Command::new("python3").args(["-m", "pip", "install", "--quiet", "pytest"]))?;
    }
    pytest("tests/system")
}

/// A root-only test stage without root: an error under CI, else a note and no tests.
fn root_needed(what: &str, dir: &str) -> Result<(), String> {
    if in_ci() {
        return Err(format!(
            "{what} need root (netns, TAP); CI must run as root"
        ));
    }
    eprintln!("note: not root: skipping {what} ({dir}); run as root to include them");
    Ok(())
}

/// Runs the pytest tests in `dir`, every skip listed with its reason.
fn pytest(dir: &str) -> Result<(), String> {
    run(Command::new("python3").args(["-m", "pytest", "-v", "-rs", "-p", "no:cacheprovider", dir]))
}
