//! The length limits the short documents keep (`cargo xtask test` checks them after the
//! layer map): docs/architecture.md is the five-minute read (≤ 300 lines), the
//! performance summary stays a summary (≤ 250; measurements go to docs/perf/log/), and the
//! README (≤ 250) links to depth instead of holding it.

use std::path::Path;

/// Each document and the most lines it may have.
pub const LIMITS: &[(&str, usize)] = &[
    ("docs/architecture.md", 300),
    ("docs/performance.md", 250),
    ("README.md", 250),
];

/// The documents over their limit in `root`, each said with its count and where the
/// excess belongs; an unreadable one is an error too.
pub fn over(root: &Path, limits: &[(&str, usize)]) -> Vec<String> {
    let mut bad = Vec::new();
    for &(file, max) in limits {
        match std::fs::read_to_string(root.join(file)) {
            Ok(text) if text.lines().count() > max => bad.push(format!(
                "{file}: {} lines, over its {max}: move depth to docs/design/ or dated figures to docs/perf/log/",
                text.lines().count()
            )),
            Ok(_) => {}
            Err(e) => bad.push(format!("{file}: {e}")),
        }
    }
    bad
}

/// Fails naming every document over its limit.
pub fn check() -> Result<(), String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let bad = over(&root, LIMITS);
    if bad.is_empty() {
        eprintln!(
            "doc limits: {} documents within their lengths",
            LIMITS.len()
        );
        Ok(())
    } else {
        Err(bad.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_over_its_limit_is_named_with_its_count() {
        let dir = std::env::temp_dir().join(format!("doclimits-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.md"), "1\n2\n3\n").unwrap();
        std::fs::write(dir.join("b.md"), "1\n2\n").unwrap();
        let bad = over(&dir, &[("a.md", 2), ("b.md", 2), ("missing.md", 9)]);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(bad.len(), 2, "{bad:?}");
        assert!(bad[0].starts_with("a.md: 3 lines, over its 2"), "{bad:?}");
        assert!(bad[1].starts_with("missing.md: "), "{bad:?}");
    }

    #[test]
    fn the_repository_keeps_its_limits() {
        check().unwrap();
    }
}
