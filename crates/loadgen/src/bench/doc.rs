//! Writes a bench's report into a Markdown file (`--doc`, a dated log such as
//! docs/perf/log/2026-11-27-headline.md): each scenario owns the text between
//! `<!-- bench:NAME -->` and `<!-- /bench:NAME -->`, replaced whole on every run, and its
//! PNGs are copied to [`img_rel`]: docs/perf/NAME/ for a log in docs/perf/log/ (where the
//! logs link them, `../NAME/`), else `perf/NAME/` beside the doc. Text outside the markers
//! is kept.

use std::path::Path;

use super::table;
use super::Results;

const HEADER: &str = "# Performance

";

/// Put once before the first bench section of a file.
const INTRO: &str = "## Side-by-side benchmarks (`bareweb bench`)

Everything between `<!-- bench:… -->` markers in this file is written by `bareweb bench`
(crates/loadgen/src/bench); rerun the command shown with a table to refresh it, never edit
it by hand. How the harness works: each server under test runs in its own network
namespaces on the same generated files; each client kind of the scenario (`bareweb load`,
one epoll thread, by default; wrk; the bare client) runs in a client namespace across one
virtual link (a veth pair for the kernel servers, the TAP that bareweb drives for ours;
with a bare client kind, that link's end is bridged with the bare client's port, crates/loadgen/src/bench/bare.rs);
the loads are interleaved round by round with the server order rotating, and tables give
medians over rounds. See docs/load.md for the load generator and the scenario format.

";

pub fn update(
    doc: &Path,
    r: &Results,
    out: &Path,
    pngs: &[(String, String)],
) -> Result<(), String> {
    let dir = doc.parent().unwrap_or(Path::new("."));
    let img_rel = img_rel(doc, &r.name)?;
    let img_dir = dir.join(&img_rel);
    if img_dir.exists() {
        std::fs::remove_dir_all(&img_dir).map_err(|e| format!("{}: {e}", img_dir.display()))?;
    }
    std::fs::create_dir_all(&img_dir).map_err(|e| format!("{}: {e}", img_dir.display()))?;
    for (f, _) in pngs {
        std::fs::copy(out.join(f), img_dir.join(f)).map_err(|e| format!("{f}: {e}"))?;
    }
    let body = table::report(r, pngs, &img_rel);
    let mut text = std::fs::read_to_string(doc).unwrap_or_else(|_| {
        if in_log_dir(doc) {
            let title = if r.title.is_empty() {
                &r.name
            } else {
                &r.title
            };
            format!("# {title}\n\n")
        } else {
            HEADER.to_string()
        }
    });
    if !text.contains("<!-- bench:") {
        text = format!("{}\n\n{INTRO}", text.trim_end());
    }
    let new = splice(&text, &r.name, &body);
    std::fs::write(doc, new).map_err(|e| format!("{}: {e}", doc.display()))
}

/// True for a doc in a folder `perf/log/` (docs/perf/log/: the dated measurement logs).
fn in_log_dir(doc: &Path) -> bool {
    let Some(dir) = doc.parent() else {
        return false;
    };
    // A bare file name (`--doc x.md` run inside docs/perf/log/) has an empty parent.
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    dir.file_name().is_some_and(|n| n == "log")
        && dir
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == "perf")
}

/// Where scenario `name`'s plots go, relative to `doc` (also the prefix of the report's
/// image links): `../NAME/` for a dated log in docs/perf/log/, so every scenario's plots
/// sit in docs/perf/NAME/ as the logs link them; `perf/NAME/` beside any other doc.
pub fn img_rel(doc: &Path, name: &str) -> Result<String, String> {
    if !in_log_dir(doc) {
        return Ok(format!("perf/{name}/"));
    }
    // `../log/` would be the logs' own folder, which `update` empties first.
    if name == "log" {
        return Err(format!(
            "{}: a scenario named `log` cannot write its plots beside the logs",
            doc.display()
        ));
    }
    Ok(format!("../{name}/"))
}

/// Replaces (or appends) the section of scenario `name` in `text`.
pub fn splice(text: &str, name: &str, body: &str) -> String {
    let open = format!("<!-- bench:{name} -->");
    let close = format!("<!-- /bench:{name} -->");
    let section = format!("{open}\n{}\n{close}", body.trim_end());
    match (text.find(&open), text.find(&close)) {
        (Some(a), Some(b)) if b > a => {
            format!("{}{section}{}", &text[..a], &text[b + close.len()..])
        }
        _ => {
            let mut t = text.trim_end().to_string();
            t.push_str("\n\n");
            t.push_str(&section);
            t.push('\n');
            t
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_are_replaced_not_duplicated() {
        let t = splice("# P\n\nintro\n", "smoke", "one");
        assert!(t.contains("<!-- bench:smoke -->\none\n<!-- /bench:smoke -->"));
        let t = splice(&t, "engine", "two");
        let t = splice(&t, "smoke", "three");
        assert_eq!(t.matches("<!-- bench:smoke -->").count(), 1);
        assert!(t.contains("three") && !t.contains("one") && t.contains("two"));
        assert!(t.starts_with("# P\n\nintro"));
    }

    #[test]
    fn plots_of_a_dated_log_go_to_docs_perf_name() {
        let log = Path::new("docs/perf/log/2026-11-27-headline.md");
        assert_eq!(img_rel(log, "headline").unwrap(), "../headline/");
        assert_eq!(
            log.parent()
                .unwrap()
                .join(img_rel(log, "headline").unwrap()),
            Path::new("docs/perf/log/../headline/")
        );
        assert!(img_rel(log, "log").is_err());
        // Any other doc keeps its plots beside it.
        let other = Path::new("notes/perf.md");
        assert_eq!(img_rel(other, "headline").unwrap(), "perf/headline/");
        assert_eq!(img_rel(Path::new("x.md"), "log").unwrap(), "perf/log/");
    }

    #[test]
    fn a_report_written_into_a_log_links_the_plots_it_copied() {
        let tmp = std::env::temp_dir().join(format!("bwl-doc-{}", std::process::id()));
        let out = tmp.join("results");
        let logs = tmp.join("docs/perf/log");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::create_dir_all(&logs).unwrap();
        std::fs::write(out.join("cores.png"), b"png").unwrap();
        let r = Results {
            name: "spin".into(),
            title: "Spin".into(),
            command: String::new(),
            machine: crate::bench::procfs::machine(),
            link_bps: 1e9,
            rounds: 1,
            cores: 1,
            servers: Vec::new(),
            points: Vec::new(),
            runs: Vec::new(),
            notes: Vec::new(),
            background_busy: Vec::new(),
            search: None,
            pinned: None,
            ktls: None,
        };
        let pngs = [("cores.png".to_string(), "CPU".to_string())];
        let doc = logs.join("2026-11-27-spin.md");
        update(&doc, &r, &out, &pngs).unwrap();
        let text = std::fs::read_to_string(&doc).unwrap();
        let plot = tmp.join("docs/perf/spin/cores.png");
        let ok = plot.exists()
            && text.contains("![CPU](../spin/cores.png)")
            && text.starts_with("# Spin\n")
            && !logs.join("perf").exists();
        std::fs::remove_dir_all(&tmp).unwrap();
        assert!(ok, "{text}");
    }
}
