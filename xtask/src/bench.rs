//! `cargo xtask test` stage: `bareweb bench --smoke` end to end (namespaces, TAP,
//! bareweb, nginx, lighttpd, h2o), then checks that it produced the table with the ratio
//! to nginx and at least one PNG. Needs root; under CI=true it fails rather than skips.

use std::path::Path;
use std::process::Command;

use crate::{in_ci, is_root, run};

/// Debian packages the smoke bench needs: the servers it compares and a font for the plots.
pub const APT_PACKAGES: &[&str] = &["nginx", "lighttpd", "h2o", "fonts-dejavu-core", "procps"];

pub fn bench_smoke() -> Result<(), String> {
    if !is_root() {
        if in_ci() {
            return Err("bench smoke needs root (netns, TAP); CI must run as root".into());
        }
        eprintln!("note: not root: skipping `bareweb bench --smoke`; run as root to include it");
        return Ok(());
    }
    let out = Path::new("target/bench-smoke");
    if out.exists() {
        std::fs::remove_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    run(Command::new("target/release/bareweb")
        .args(["bench", "--smoke", "--out"])
        .arg(out))?;
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
    eprintln!("bench smoke: report with {ratio_rows} rows compared to nginx, {pngs} PNGs");
    Ok(())
}
