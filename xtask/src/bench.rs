//! `cargo xtask test` stage (alone: `cargo xtask bench-smoke`): `bareweb bench --smoke`
//! end to end (namespaces, TAP, AF_XDP, bareweb, nginx, lighttpd, h2o), then checks that
//! it produced the table with the ratio to nginx, the peer search's choice, at least one
//! PNG, the HTTPS rows (wrk, full handshakes), and that no server sent a wrong body,
//! status or framing. It runs the bench as a
//! new user would: the results folder made like `mktemp -d` (mode 0700 under
//! /tmp, which nginx's worker could not read), and stdout a pipe closed before the bench
//! writes its report (as `| head -3` or `| true` leave it): the bench must still succeed
//! and leave no namespace, no process in one and nothing in /run/netns behind. Needs
//! root; under CI=true it fails rather than skips.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::{in_ci, is_root, run};

/// Debian packages the smoke bench needs: the servers it compares (lighttpd's TLS module
/// for the HTTPS case) and a font for the plots.
pub const APT_PACKAGES: &[&str] = &[
    "nginx",
    "lighttpd",
    "lighttpd-mod-openssl",
    "h2o",
    "fonts-dejavu-core",
    "procps",
];

pub fn bench_smoke() -> Result<(), String> {
    if !is_root() {
        if in_ci() {
            return Err("bench smoke needs root (netns, TAP); CI must run as root".into());
        }
        eprintln!("note: not root: skipping `bareweb bench --smoke`; run as root to include it");
        return Ok(());
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    run(Command::new(cargo).args(["build", "--release", "-p", "bareweb"]))?;
    let kept = Path::new("target/bench-smoke");
    let out = std::env::temp_dir().join(format!("bareweb-bench-smoke.{}", std::process::id()));
    for d in [kept, out.as_path()] {
        if d.exists() {
            std::fs::remove_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
    }
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&out)
        .map_err(|e| format!("{}: {e}", out.display()))?;
    let mut cmd = Command::new("target/release/bareweb");
    cmd.args(["bench", "--smoke", "--out"])
        .arg(&out)
        .stdout(Stdio::piped());
    eprintln!("+ {cmd:?} | true");
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    drop(child.stdout.take()); // `| true`: the report goes into a closed pipe
    let status = child.wait().map_err(|e| e.to_string())?;
    let left = left_behind(child.id(), &out);
    if !status.success() {
        return Err(format!(
            "bareweb bench --smoke with a closed stdout failed with {status}{left}"
        ));
    }
    if !left.is_empty() {
        return Err(format!("bench smoke left things behind:{left}"));
    }
    check_results(&out)?;
    // The results stay in target/bench-smoke for a look; the temporary folder goes.
    std::fs::create_dir_all(kept.join("runs")).map_err(|e| e.to_string())?;
    for sub in ["", "runs"] {
        for e in std::fs::read_dir(out.join(sub))
            .map_err(|e| e.to_string())?
            .flatten()
        {
            if e.path().is_file() {
                let _ = std::fs::copy(e.path(), kept.join(sub).join(e.file_name()));
            }
        }
    }
    std::fs::remove_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))
}

/// What a bench with process id `pid` and results folder `out` left behind: namespaces
/// (named `bwl` + pid % 100000 + ...) and processes whose command line names `out` (the
/// servers it started); empty when nothing.
fn left_behind(pid: u32, out: &Path) -> String {
    let prefix = format!("bwl{}", pid % 100_000);
    let mut left = String::new();
    for e in std::fs::read_dir("/run/netns")
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with(&prefix) {
            left += &format!("\n  namespace {name}");
        }
    }
    let needle = out.to_string_lossy().into_owned();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let cmdline: PathBuf = e.path().join("cmdline");
        if let Ok(b) = std::fs::read(&cmdline) {
            let text = String::from_utf8_lossy(&b).replace('\0', " ");
            if text.contains(&needle) {
                left += &format!("\n  process {}: {text}", e.file_name().to_string_lossy());
            }
        }
    }
    left
}

/// The report has ratios to nginx and a PNG, and no server answered wrongly.
fn check_results(out: &Path) -> Result<(), String> {
    let report = std::fs::read_to_string(out.join("report.md"))
        .map_err(|e| format!("bench smoke wrote no report.md: {e}"))?;
    // A data row of nginx's own ratio is "1.00×"; another server's row has a number too.
    let rows: Vec<&str> = report
        .lines()
        .filter(|l| l.starts_with("| /sz/") || l.starts_with("| surge"))
        .collect();
    let ratio_rows = rows
        .iter()
        .filter(|l| {
            !l.contains("| nginx |") && l.split('|').nth(5).is_some_and(|c| c.trim().ends_with('×'))
        })
        .count();
    if !report.contains("vs nginx") || ratio_rows == 0 {
        return Err(format!(
            "bench smoke: no table with ratios to nginx in {}/report.md",
            out.display()
        ));
    }
    // The peer search ran and the report names the configuration it chose (baselines at
    // their best), and bareweb on AF_XDP is in the table.
    if !report.contains("#### Configuration search") || !report.contains("**(best)**") {
        return Err(format!(
            "bench smoke: no configuration search with a chosen best in {}/report.md",
            out.display()
        ));
    }
    if !rows.iter().any(|l| l.contains("| bareweb-xdp |")) {
        return Err(format!(
            "bench smoke: no bareweb-xdp rows in {}/report.md",
            out.display()
        ));
    }
    // The bare client is in the table: bareweb's and nginx's rows at least.
    for row in ["| bareweb+bare-tap |", "| nginx+bare-tap |"] {
        if !rows.iter().any(|l| l.contains(row)) {
            return Err(format!(
                "bench smoke: no {} row in {}/report.md",
                row.trim_matches(|c| c == '|' || c == ' '),
                out.display()
            ));
        }
    }
    // The HTTPS case: wrk's rows for bareweb and nginx without errors, and every request
    // a full handshake that wrk counted (none resumed).
    for row in ["| bareweb+wrk |", "| nginx+wrk |"] {
        let Some(l) = rows.iter().find(|l| l.contains(row)) else {
            return Err(format!(
                "bench smoke: no HTTPS row {} in {}/report.md",
                row.trim_matches(|c| c == '|' || c == ' '),
                out.display()
            ));
        };
        if l.split('|').nth(13).map(str::trim) != Some("0") {
            return Err(format!("bench smoke: HTTPS errors: {l}"));
        }
    }
    let hs = report
        .lines()
        .find(|l| l.starts_with("wrk's TLS handshakes"))
        .unwrap_or("");
    if !hs.contains("bareweb+wrk 0 of ") || hs.contains("bareweb+wrk 0 of 0") {
        return Err(format!(
            "bench smoke: bareweb's HTTPS run was not all full handshakes: {hs:?}"
        ));
    }
    let pngs = std::fs::read_dir(out)
        .map_err(|e| e.to_string())?
        .flatten()
        .filter(|e| {
            e.path().extension().is_some_and(|x| x == "png")
                && std::fs::read(e.path())
                    .is_ok_and(|b| b.starts_with(b"\x89PNG\r\n\x1a\n") && b.len() > 1000)
        })
        .count();
    if pngs == 0 {
        return Err(format!("bench smoke: no PNG in {}", out.display()));
    }
    // Every body was checked (the smoke scenario sets verify): a wrong byte, a wrong
    // length, a bad status or broken framing from any server fails the stage. Timeouts
    // and `no_slot` are load effects on a shared machine and only reported.
    const WRONG: &[&str] = &[
        "\"sha256_mismatch\"",
        "\"length_mismatch\"",
        "\"bad_status\"",
        "\"bad_head\"",
        "\"bad_framing\"",
        "\"extra_bytes\"",
        "\"truncated\"",
    ];
    let mut runs = 0;
    for e in std::fs::read_dir(out.join("runs"))
        .map_err(|e| format!("bench smoke: no runs/: {e}"))?
        .flatten()
    {
        let text = std::fs::read_to_string(e.path())
            .map_err(|x| format!("{}: {x}", e.path().display()))?;
        runs += 1;
        if let Some(w) = WRONG.iter().find(|w| text.contains(*w)) {
            return Err(format!(
                "bench smoke: {} has {w} errors: a server answered wrongly",
                e.path().display()
            ));
        }
    }
    if runs == 0 {
        return Err("bench smoke: no client reports in runs/".into());
    }
    eprintln!("bench smoke: report with {ratio_rows} rows compared to nginx, {pngs} PNGs, {runs} runs with every body checked");
    Ok(())
}
