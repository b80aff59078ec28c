//! Writes a bench's report into docs/performance.md: each scenario owns the text between
//! `<!-- bench:NAME -->` and `<!-- /bench:NAME -->`, replaced whole on every run, and its
//! PNGs are copied to `perf/NAME/` beside the doc. Text outside the markers is kept.

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
    let img_rel = format!("perf/{}/", r.name);
    let img_dir = dir.join(&img_rel);
    if img_dir.exists() {
        std::fs::remove_dir_all(&img_dir).map_err(|e| format!("{}: {e}", img_dir.display()))?;
    }
    std::fs::create_dir_all(&img_dir).map_err(|e| format!("{}: {e}", img_dir.display()))?;
    for (f, _) in pngs {
        std::fs::copy(out.join(f), img_dir.join(f)).map_err(|e| format!("{f}: {e}"))?;
    }
    let body = table::report(r, pngs, &img_rel);
    let mut text = std::fs::read_to_string(doc).unwrap_or_else(|_| HEADER.to_string());
    if !text.contains("<!-- bench:") {
        text = format!("{}\n\n{INTRO}", text.trim_end());
    }
    let new = splice(&text, &r.name, &body);
    std::fs::write(doc, new).map_err(|e| format!("{}: {e}", doc.display()))
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
}
