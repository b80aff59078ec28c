//! The command line as a user meets it ("one validation style"): every bad value
//! or impossible combination is a clap usage error — exit code 2, clap's `error:` format,
//! the option named — before anything starts; the same option has the same name and
//! meaning in `serve`, `run` and `build`.

use std::path::PathBuf;
use std::process::{Command, Output};

fn bareweb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bareweb"))
        .args(args)
        .output()
        .expect("run bareweb")
}

fn site() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/site")
        .display()
        .to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `bareweb run … --dry-run`: its output, the work directory it keeps (named in the
/// printed command) removed, as its user would once done.
fn dry_run(args: &[&str]) -> std::process::Output {
    let o = bareweb(args);
    let line = String::from_utf8_lossy(&o.stdout).into_owned();
    for w in line.split_whitespace() {
        if let Some(dir) = w.strip_suffix("/bareweb-kernel.elf") {
            if dir.contains("bareweb-run-") {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }
    o
}

/// Exit code 2 and clap's format, naming `what`.
fn usage_error(args: &[&str], what: &str) {
    let o = bareweb(args);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
    assert!(e.starts_with("error: "), "{args:?}: {e}");
    assert!(e.contains("--help"), "{args:?}: {e}");
    assert!(e.contains(what), "{args:?} should mention {what:?}: {e}");
}

#[test]
fn bad_values_are_usage_errors_in_every_command() {
    let s = site();
    for cmd in ["serve", "run"] {
        usage_error(&[cmd, &s, "--tcbs", "0"], "--tcbs");
        usage_error(&[cmd, &s, "--sched", "foo"], "--sched");
        usage_error(&[cmd, &s, "--cc", "reno"], "--cc");
        usage_error(&[cmd, &s, "--ip", "+10.0.02.+15/24"], "--ip");
        usage_error(&[cmd, &s, "--ip", "10.0.0.2/33"], "--ip");
        // A network's own and broadcast addresses are no host's, in every command.
        usage_error(&[cmd, &s, "--ip", "10.66.0.0/24"], "network's own address");
        usage_error(&[cmd, &s, "--ip", "10.66.0.255/24"], "broadcast address");
        usage_error(&[cmd, &s, "--gw", "10.0.0.256"], "--gw");
        usage_error(&[cmd, &s, "--mac", "1:2:3:4:5:+6"], "--mac");
        usage_error(&[cmd, &s, "--port", "0"], "--port");
        usage_error(&[cmd, &s, "--request-timeout", "0"], "--request-timeout");
        usage_error(
            &[cmd, &s, "--bsp-http"],
            "--bsp-http only applies to --mode netcore",
        );
        // One spelling for the access log everywhere: the old `run --log` is gone.
        usage_error(&[cmd, &s, "--log", "foo"], "--log");
    }
    usage_error(&["serve", &s, "--tap", "a/b"], "--tap");
    usage_error(&["serve", &s, "--cores", "0"], "--cores");
    usage_error(
        &["serve", &s, "--runner", "serial", "--threads", "2"],
        "1 to 1 threads",
    );
    usage_error(&["run", &s, "--smp", "33"], "--smp");
    usage_error(&["run", &s, "--mem", "16"], "--mem");
    usage_error(&["run", &s, "--listen", "127.0.0.1"], "--listen");
    usage_error(&["run", &s, "--net", "tap:"], "--net");
    usage_error(&["run", &s, "--smp", "2", "--mode", "perqueue"], "perqueue");
    // Kernel command-line words are checked with the kernel's own parser before boot.
    usage_error(&["run", &s, "--append", "log=foo"], "log=foo");
    usage_error(&["run", &s, "--append", "colour=blue"], "unknown key");
    usage_error(
        &["build", &s, "-o", "x.elf", "--append", "crash=maybe"],
        "crash=maybe",
    );
    usage_error(&["build", &s, "-o", "x.elf", "--sched", "foo"], "--sched");
    usage_error(
        &["build", &s, "-o", "x.elf", "--ip", "10.66.0.255/24"],
        "broadcast address",
    );
    usage_error(
        &[
            "serve",
            &s,
            "--ip",
            "10.66.0.1/24",
            "--host-ip",
            "10.66.0.1",
        ],
        "server's own address",
    );
    usage_error(&["run", &s, "--append", "cc=reno"], "cc=reno");
    // A plain site image carries no server settings: say so rather than drop them.
    usage_error(
        &["build", &s, "-o", "x.bws", "--ip", "10.0.0.2/24"],
        "bootable images only",
    );
    usage_error(&["build", &s, "--iso", "x.img"], ".iso");
}

#[test]
fn gw_none_and_access_log_mean_the_same_everywhere() {
    let s = site();
    // serve takes `--gw none` (it fails later, on the missing site, not on the option).
    let o = bareweb(&["serve", "/nonexistent-site", "--gw", "none", "--access-log"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("/nonexistent-site"), "{}", stderr(&o));
    // run: the same options become the kernel's words.
    let o = dry_run(&[
        "run",
        &s,
        "--dry-run",
        "--accel",
        "tcg",
        "--machine",
        "pc",
        "--gw",
        "none",
        "--access-log",
        "--stats-log",
        "--request-timeout",
        "5",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let line = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        line.contains("-append 'gw=none request_timeout=5 log=access,stats'"),
        "{line}"
    );
}

#[test]
fn build_writes_what_the_extension_says_in_any_case() {
    let dir = std::env::temp_dir().join(format!("bareweb-usage-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let elf = dir.join("x.ELF");
    let o = bareweb(&[
        "build",
        &site(),
        "-o",
        elf.to_str().unwrap(),
        "--gw",
        "none",
        "--access-log",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let bytes = std::fs::read(&elf).unwrap();
    assert_eq!(
        &bytes[..4],
        b"\x7fELF",
        "-o x.ELF must write a bootable ELF"
    );
    assert!(
        // Every bootable image takes its address from DHCP unless --ip is given.
        String::from_utf8_lossy(&o.stdout).contains("\"ip=dhcp gw=none log=access\""),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn udp_options_are_checked_and_become_kernel_words() {
    let s = site();
    for cmd in ["serve", "run"] {
        usage_error(&[cmd, &s, "--udp-port", "0"], "--udp-port");
        usage_error(
            &[cmd, &s, "--udp-port", "1", "--udp-burst", "65"],
            "--udp-burst",
        );
        usage_error(&[cmd, &s, "--udp-port", "1", "--udp-ids", "0"], "--udp-ids");
        usage_error(&[cmd, &s, "--udp-burst", "4"], "need --udp-port");
        usage_error(&[cmd, &s, "--udp-paper-mode"], "need --udp-port");
    }
    let o = dry_run(&[
        "run",
        &s,
        "--dry-run",
        "--accel",
        "tcg",
        "--machine",
        "pc",
        "--udp-port",
        "8081",
        "--udp-burst",
        "4",
        "--udp-paper-mode",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let line = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        line.contains("udp_port=8081 udp_burst=4 udp_paper=on"),
        "{line}"
    );
    assert!(
        line.contains("hostfwd=udp:127.0.0.1:8081-10.0.2.15:8081"),
        "{line}"
    );
}

/// `run --acme-domain`: the words reach the kernel's command line whole (a URL's `:` and
/// `/` too), the state disk is made private and attached as virtio-blk; without one, or
/// with ACME's options alone, a usage error saying what to give.
#[test]
fn acme_reaches_the_bare_machine_with_a_state_disk() {
    use std::os::unix::fs::PermissionsExt;
    let s = site();
    let dir = std::env::temp_dir().join(format!("bareweb-usage-acme-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let disk = dir.join("state.img");
    let disk = disk.to_str().unwrap();
    let acme = [
        "--acme-domain",
        "a.test,b.test",
        "--acme-directory",
        "https://10.0.2.2:14000/dir",
    ];
    let mut args = vec!["run", &s, "--dry-run", "--accel", "tcg", "--machine", "pc"];
    args.extend(acme);
    usage_error(&args, "--state-disk FILE");
    usage_error(&["run", &s, "--state-disk", disk], "needs --acme-domain");
    usage_error(&["run", &s, "--acme-ca", disk], "needs --acme-domain");
    usage_error(
        &["build", &s, "-o", "x.elf", "--acme-ca", disk],
        "needs --acme-domain",
    );
    usage_error(
        &["run", &s, "--acme-domain", "a.test", "--state-disk", disk],
        "give --dns",
    );
    args.extend(["--state-disk", disk]);
    let o = dry_run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let line = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        line.contains("'acme_domain=a.test,b.test acme_directory=https://10.0.2.2:14000/dir'"),
        "{line}"
    );
    assert!(
        line.contains(&format!(
            "-drive file={disk},format=raw,if=none,id=state,cache=writethrough -device virtio-blk-pci,drive=state"
        )),
        "{line}"
    );
    let m = std::fs::metadata(disk).unwrap();
    assert_eq!(
        (m.len(), m.permissions().mode() & 0o777),
        (256 << 10, 0o600)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn get_says_which_schemes_it_speaks() {
    let o = bareweb(&["get", "ftp://example/x", "-o", "/dev/null"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("does not speak ftp://"),
        "{}",
        stderr(&o)
    );
    let o = bareweb(&["get", "bwudp://127.0.0.1:0/x", "-o", "/dev/null"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("bad port"), "{}", stderr(&o));
    // An IPv6 literal: taken by both schemes (nothing listens on [::1]'s port 9: the
    // connection, or the answer, is what fails), never taken for a port.
    let o = bareweb(&["get", "http://[::1]:9/", "-o", "-"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("http://[::1]:9/: "), "{}", stderr(&o));
    let o = bareweb(&["get", "bwudp://[::1]:9/", "-o", "-", "--tries", "1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("bwudp://[::1]:9/: no answer"),
        "{}",
        stderr(&o)
    );
    usage_error(
        &["get", "bwudp://h/x", "-o", "f", "--tries", "0"],
        "--tries",
    );
}

/// `bareweb build DIR -o DIR/site.bws` twice (or `bareweb build .` in the site): the
/// output is not packed into the next image, and the build says it left it out; nor is
/// an earlier image under another name.
#[test]
fn a_build_never_packs_its_own_output() {
    let dir = std::env::temp_dir().join(format!("bareweb-usage-self-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("index.html"), "<p>hello</p>".repeat(1000)).unwrap();
    let out = dir.join("site.bws");
    let d = dir.to_str().unwrap();
    let o = out.to_str().unwrap();
    let first = bareweb(&["build", d, "-o", o]);
    assert!(first.status.success(), "{}", stderr(&first));
    let len1 = std::fs::metadata(&out).unwrap().len();
    let second = bareweb(&["build", d, "-o", o]);
    assert!(second.status.success(), "{}", stderr(&second));
    assert_eq!(
        std::fs::metadata(&out).unwrap().len(),
        len1,
        "the image grew"
    );
    assert!(
        stderr(&second).contains("skipped site.bws: the output of this build"),
        "{}",
        stderr(&second)
    );
    assert!(String::from_utf8_lossy(&second.stdout).contains(": 1 files"));
    // An earlier image under another name is not content either.
    std::fs::rename(&out, dir.join("old.bws")).unwrap();
    let third = bareweb(&["build", d, "-o", o]);
    assert!(third.status.success(), "{}", stderr(&third));
    assert_eq!(
        std::fs::metadata(&out).unwrap().len(),
        len1,
        "old.bws packed"
    );
    assert!(
        stderr(&third).contains("skipped old.bws: a bareweb site image"),
        "{}",
        stderr(&third)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `load`'s values are checked as every command's are (exit 2, the option named), and a
/// run in which no fetch succeeded fails.
#[test]
fn load_checks_its_values_and_fails_when_nothing_succeeds() {
    let url = "http://127.0.0.1:9/";
    for (opt, v) in [
        ("--rate", "0"),
        ("--rate", "nan"),
        ("--parallel", "0"),
        ("--seconds", "0"),
        ("--timeout", "-1"),
        ("--max-conns", "0"),
        ("--fetches", "0"),
        ("--think-scale", "-1"),
        ("--expect-status", "99"),
    ] {
        usage_error(&["load", url, &format!("{opt}={v}")], opt);
    }
    // A port nobody listens on: every fetch is refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let u = format!("http://127.0.0.1:{port}/");
    let o = bareweb(&["load", &u, "--fetches", "20", "--seconds", "5", "-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("no fetch succeeded"), "{}", stderr(&o));
}

/// `bareweb bench` alone names the quick start.
#[test]
fn bench_alone_mentions_smoke() {
    usage_error(&["bench"], "--smoke");
    usage_error(&["bench", "--out", "x"], "--smoke");
}
