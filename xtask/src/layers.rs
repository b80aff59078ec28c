//! `cargo xtask layers` (also run by `cargo xtask test`): the engine's layer map, kept true.
//!
//! The map is the list in `crates/engine/src/lib.rs`'s crate doc, read from there so the
//! doc and the check cannot disagree: `- Level N` lines, bottom up from 0, each followed by
//! one `  - [`module`]: what it owns` line per module of that level (`` `module` `` without
//! the link for a module rustdoc does not always see, such as a std-only one). A module may use the
//! modules of lower levels only; the modules of one level do not use each other.
//!
//! The check reads every engine source file that lib.rs reaches through its `mod`
//! declarations and finds, in its code (comments, doc comments and literals are blanked
//! first), each `crate::` path: `use crate::…` lines, groups (`use crate::{a, b::c}`, over
//! any number of lines) and paths written inline, plus each `super::` path that climbs to
//! the crate root. It fails on one that runs up the map or sideways, naming the file, the
//! line and both modules with their levels; and when lib.rs declares a module the map
//! leaves out, or the map names one lib.rs does not declare.
//!
//! Test code is not checked: files and items under `#[cfg(test)]` (`mod tests;` and the
//! files below it, an inline `mod tests { … }`, a test-only import). It is compiled only
//! into the engine's own unit tests, never into the library the kernel and the host link,
//! so it adds no dependency between layers; and a layer's tests often drive it from above
//! (a TCP test opens a connection with the fetcher, most tests use the `fake` devices,
//! which sit on top).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// An import the map does not allow yet, with the change that removes it (see [`ALLOWED`]).
#[derive(Debug, Clone, Copy)]
pub struct Allowed {
    /// The importing file, relative to `crates/engine/src`.
    pub file: &'static str,
    /// Its module.
    pub from: &'static str,
    /// The module it imports.
    pub to: &'static str,
}

/// Imports against the map that are known and on their way out. The check fails when an
/// entry is no longer needed, so that it is removed with the import.
pub const ALLOWED: &[Allowed] = &[];

/// Where the engine's sources are, from the workspace root.
const ENGINE_SRC: &str = "crates/engine/src";

/// `cargo xtask layers`: checks the engine against the map in its lib.rs.
pub fn check() -> Result<(), String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(ENGINE_SRC);
    let report = check_tree(&src, ALLOWED)?;
    if report.problems.is_empty() {
        println!(
            "layers: {} modules on {} levels, {} files, {} imports between modules: each runs down the map",
            report.modules, report.levels, report.files, report.imports
        );
        return Ok(());
    }
    for p in &report.problems {
        eprintln!("{ENGINE_SRC}/{p}");
    }
    Err(format!(
        "{} problem(s) against the layer map in {ENGINE_SRC}/lib.rs",
        report.problems.len()
    ))
}

/// What [`check_tree`] found.
#[derive(Debug, Default)]
pub struct Report {
    /// Modules in the map.
    pub modules: usize,
    /// Levels in the map.
    pub levels: usize,
    /// Source files read (test files not counted).
    pub files: usize,
    /// Imports from one top module to another.
    pub imports: usize,
    /// Each problem, `file:line: what` (the file relative to `src`).
    pub problems: Vec<String>,
}

/// Checks the crate whose root is `src/lib.rs` against the map in that file's doc.
/// `Err` when the tree or the map cannot be read; the imports against the map are in the
/// report's `problems`.
pub fn check_tree(src: &Path, allowed: &[Allowed]) -> Result<Report, String> {
    let lib = src.join("lib.rs");
    let lib_text = fs::read_to_string(&lib).map_err(|e| format!("{}: {e}", lib.display()))?;
    let map = parse_map(&lib_text)?;
    let mut report = Report {
        modules: map.len(),
        levels: map.values().max().map_or(0, |l| l + 1),
        ..Report::default()
    };

    let mut uses = Vec::new();
    let mut declared = Vec::new();
    // (file, its module path below the crate root)
    let mut todo = vec![(lib.clone(), Vec::<String>::new())];
    while let Some((file, path)) = todo.pop() {
        let text = if file == lib {
            lib_text.clone()
        } else {
            fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?
        };
        let rel = file
            .strip_prefix(src)
            .unwrap_or(&file)
            .to_string_lossy()
            .replace('\\', "/");
        let scan = scan(&text, path.len());
        if let Some(line) = scan.path_attr {
            report.problems.push(format!(
                "{rel}:{line}: #[path] is not followed by this check"
            ));
        }
        if let Some(line) = scan.root_glob {
            report.problems.push(format!(
                "{rel}:{line}: a glob import of the crate root hides which layers are used"
            ));
        }
        if path.is_empty() {
            declared = scan.mods.iter().map(|m| m.name.clone()).collect();
        } else {
            report.files += 1;
            for u in scan.uses {
                uses.push((rel.clone(), u.line, path[0].clone(), u.module));
            }
        }
        let dir = child_dir(&file);
        for m in scan.mods {
            let mut d = dir.clone();
            d.extend(&m.inline);
            let flat = d.join(format!("{}.rs", m.name));
            let nested = d.join(&m.name).join("mod.rs");
            let child = if flat.is_file() { flat } else { nested };
            if !child.is_file() {
                return Err(format!("{rel}: no file for `mod {}`", m.name));
            }
            let mut p = path.clone();
            p.extend(m.inline);
            p.push(m.name);
            todo.push((child, p));
        }
    }

    for m in &declared {
        if !map.contains_key(m) {
            report.problems.push(format!(
                "lib.rs: module `{m}` is not in the layer map (add it under a `- Level N` line)"
            ));
        }
    }
    for m in map.keys() {
        if !declared.contains(m) {
            report.problems.push(format!(
                "lib.rs: the layer map names `{m}`, which lib.rs does not declare (outside tests)"
            ));
        }
    }

    let mut used_allow = vec![false; allowed.len()];
    uses.sort();
    for (file, line, from, to) in uses {
        if from == to {
            continue;
        }
        report.imports += 1;
        let (Some(&lf), Some(&lt)) = (map.get(&from), map.get(&to)) else {
            if !map.contains_key(&to) && declared.contains(&from) {
                report.problems.push(format!(
                    "{file}:{line}: {from} uses `crate::{to}`, which is not a module of the map"
                ));
            }
            continue;
        };
        if lt < lf {
            continue;
        }
        if let Some(i) = allowed
            .iter()
            .position(|a| a.file == file && a.from == from && a.to == to)
        {
            used_allow[i] = true;
            continue;
        }
        let how = if lt == lf {
            "on the same level: modules of one level do not use each other"
        } else {
            "above it: a module uses only the levels below its own"
        };
        report.problems.push(format!(
            "{file}:{line}: {from} (level {lf}) imports {to} (level {lt}), {how}"
        ));
    }
    for (a, used) in allowed.iter().zip(used_allow) {
        if !used {
            report.problems.push(format!(
                "{}: the allowed import {} -> {} is gone: remove its entry from xtask/src/layers.rs",
                a.file, a.from, a.to
            ));
        }
    }
    Ok(report)
}

/// Reads the map from lib.rs's crate doc: module name → level.
pub fn parse_map(lib: &str) -> Result<BTreeMap<String, usize>, String> {
    let mut map = BTreeMap::new();
    let mut level: Option<usize> = None;
    for (i, line) in lib.lines().enumerate() {
        let Some(doc) = line.trim_start().strip_prefix("//!") else {
            continue;
        };
        let doc = doc.strip_prefix(' ').unwrap_or(doc);
        if let Some(rest) = doc.strip_prefix("- Level ") {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            let n: usize = digits
                .parse()
                .map_err(|_| format!("lib.rs:{}: `- Level` without a number", i + 1))?;
            if n != level.map_or(0, |l| l + 1) {
                return Err(format!(
                    "lib.rs:{}: levels go up one at a time from 0 (found {n})",
                    i + 1
                ));
            }
            level = Some(n);
        } else if let Some(rest) = doc
            .strip_prefix("  - [`")
            .or_else(|| doc.strip_prefix("  - `"))
        {
            let Some(l) = level else {
                return Err(format!("lib.rs:{}: a module before any `- Level N`", i + 1));
            };
            let Some(end) = rest.find('`') else {
                return Err(format!("lib.rs:{}: expected ``  - [`module`]: …``", i + 1));
            };
            if map.insert(rest[..end].to_string(), l).is_some() {
                return Err(format!(
                    "lib.rs:{}: `{}` twice in the map",
                    i + 1,
                    &rest[..end]
                ));
            }
        }
    }
    if map.is_empty() {
        return Err("lib.rs: no layer map (`- Level N` lines) in the crate doc".into());
    }
    Ok(map)
}

/// The directory a file's `mod x;` declarations are looked up in.
fn child_dir(file: &Path) -> PathBuf {
    let dir = file.parent().unwrap_or(Path::new("")).to_path_buf();
    match file.file_name().and_then(|n| n.to_str()) {
        Some("lib.rs" | "mod.rs") => dir,
        _ => dir.join(file.file_stem().unwrap_or_default()),
    }
}

/// A `mod name;` outside test code, inside these inline modules of its file.
#[derive(Debug)]
struct ModDecl {
    inline: Vec<String>,
    name: String,
}

/// A use of a top module of the crate, on a line of a file.
#[derive(Debug, PartialEq, Eq)]
struct Use {
    line: usize,
    module: String,
}

/// What one file's code says, test code left out.
#[derive(Debug, Default)]
struct Scan {
    mods: Vec<ModDecl>,
    uses: Vec<Use>,
    path_attr: Option<usize>,
    root_glob: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    /// `::`
    Sep,
    Punct(u8),
}

/// Reads a file whose module is `depth` levels below the crate root.
fn scan(text: &str, depth: usize) -> Scan {
    let toks = tokens(&blank(text));
    let mut out = Scan::default();
    // Inline modules open here: (name, bracket depth inside them).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut nest = 0usize;
    let mut test_next = false;
    let mut i = 0;
    let ident = |i: usize| match toks.get(i) {
        Some((Tok::Ident(s), _)) => Some(s.as_str()),
        _ => None,
    };
    let is = |i: usize, t: &Tok| toks.get(i).map(|(x, _)| x) == Some(t);
    while i < toks.len() {
        let (tok, line) = (&toks[i].0, toks[i].1);
        match tok {
            Tok::Punct(b'#') => {
                // An attribute: `#[…]` or `#![…]`.
                let mut j = i + 1;
                if is(j, &Tok::Punct(b'!')) {
                    j += 1;
                }
                if !is(j, &Tok::Punct(b'[')) {
                    i += 1;
                    continue;
                }
                let end = close(&toks, j);
                let words: Vec<String> = toks[j + 1..end.min(toks.len())]
                    .iter()
                    .map(|(t, _)| match t {
                        Tok::Ident(s) => s.clone(),
                        Tok::Sep => "::".into(),
                        Tok::Punct(c) => (*c as char).to_string(),
                    })
                    .collect();
                let attr = words.concat();
                if attr == "cfg(test)" || attr.starts_with("cfg(all(test,") {
                    if is(i + 1, &Tok::Punct(b'!')) {
                        // `#![cfg(test)]`: the whole file is test code.
                        return Scan::default();
                    }
                    test_next = true;
                }
                if words.first().map(String::as_str) == Some("path") {
                    out.path_attr.get_or_insert(line);
                }
                i = end + 1;
                continue;
            }
            _ if test_next => {
                // Skip the item the test attribute is on.
                test_next = false;
                i = skip_item(&toks, i);
                continue;
            }
            Tok::Ident(k) if k == "mod" => {
                if let Some(name) = ident(i + 1) {
                    if is(i + 2, &Tok::Punct(b';')) {
                        out.mods.push(ModDecl {
                            inline: inline.iter().map(|(n, _)| n.clone()).collect(),
                            name: name.to_string(),
                        });
                    } else if is(i + 2, &Tok::Punct(b'{')) {
                        nest += 1;
                        inline.push((name.to_string(), nest));
                        i += 3;
                        continue;
                    }
                }
            }
            Tok::Punct(b'(' | b'[' | b'{') => nest += 1,
            Tok::Punct(b')' | b']' | b'}') => {
                if inline.last().is_some_and(|&(_, d)| d == nest) {
                    inline.pop();
                }
                nest = nest.saturating_sub(1);
            }
            Tok::Ident(k) if (k == "crate" || k == "super") && is(i + 1, &Tok::Sep) => {
                // The start of a path only: not the `super` of `super::super`.
                let starts = i == 0 || !is(i - 1, &Tok::Sep);
                if starts {
                    let mut j = i;
                    let mut up = 0;
                    if k == "crate" {
                        j += 2;
                        up = usize::MAX;
                    } else {
                        while ident(j) == Some("super") && is(j + 1, &Tok::Sep) {
                            up += 1;
                            j += 2;
                        }
                    }
                    if up >= depth + inline.len() {
                        root_path(&toks, j, &mut out);
                    }
                    i = j;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// The crate root's names used by the path that continues at `toks[j]` (after `crate::`):
/// one name, or the first name of each entry of a `{…}` group.
fn root_path(toks: &[(Tok, usize)], j: usize, out: &mut Scan) {
    match toks.get(j) {
        Some((Tok::Ident(m), line)) if m != "self" => out.uses.push(Use {
            line: *line,
            module: m.clone(),
        }),
        Some((Tok::Punct(b'*'), line)) => {
            out.root_glob.get_or_insert(*line);
        }
        Some((Tok::Punct(b'{'), _)) => {
            let end = close(toks, j);
            let mut depth = 0;
            let mut entry_start = true;
            for (t, line) in &toks[j + 1..end.min(toks.len())] {
                match t {
                    Tok::Punct(b'{') => depth += 1,
                    Tok::Punct(b'}') => depth -= 1,
                    Tok::Punct(b',') if depth == 0 => {
                        entry_start = true;
                        continue;
                    }
                    Tok::Ident(m) if entry_start && m != "self" => out.uses.push(Use {
                        line: *line,
                        module: m.clone(),
                    }),
                    Tok::Punct(b'*') if entry_start => {
                        out.root_glob.get_or_insert(*line);
                    }
                    _ => {}
                }
                entry_start = false;
            }
        }
        _ => {}
    }
}

/// The index of the bracket closing the one at `open` (or the end).
fn close(toks: &[(Tok, usize)], open: usize) -> usize {
    let mut depth = 0usize;
    for (k, (t, _)) in toks.iter().enumerate().skip(open) {
        match t {
            Tok::Punct(b'(' | b'[' | b'{') => depth += 1,
            Tok::Punct(b')' | b']' | b'}') => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    toks.len()
}

/// The index just past the item starting at `start`: its `;` (outside brackets), the `}`
/// closing its body, or (for a field or an arm) the bracket closing what encloses it.
fn skip_item(toks: &[(Tok, usize)], start: usize) -> usize {
    let mut depth = 0usize;
    for (k, (t, _)) in toks.iter().enumerate().skip(start) {
        match t {
            Tok::Punct(b';') if depth == 0 => return k + 1,
            Tok::Punct(b'(' | b'[' | b'{') => depth += 1,
            Tok::Punct(c @ (b')' | b']' | b'}')) => {
                if depth == 0 {
                    return k;
                }
                depth -= 1;
                if depth == 0 && *c == b'}' {
                    return k + 1;
                }
            }
            _ => {}
        }
    }
    toks.len()
}

/// Identifiers (and numbers), `::` and single punctuation bytes, each with its line.
fn tokens(code: &[u8]) -> Vec<(Tok, usize)> {
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < code.len() {
        let c = code[i];
        if c == b'\n' {
            line += 1;
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'_' || c.is_ascii_alphanumeric() || c >= 0x80 {
            let s = i;
            while i < code.len()
                && (code[i] == b'_' || code[i].is_ascii_alphanumeric() || code[i] >= 0x80)
            {
                i += 1;
            }
            let word = String::from_utf8_lossy(&code[s..i]).into_owned();
            out.push((Tok::Ident(word), line));
        } else if c == b':' && code.get(i + 1) == Some(&b':') {
            out.push((Tok::Sep, line));
            i += 2;
        } else {
            out.push((Tok::Punct(c), line));
            i += 1;
        }
    }
    out
}

/// The text with comments (doc comments too), string, byte-string and character literals
/// replaced by spaces, lines kept where they were.
fn blank(text: &str) -> Vec<u8> {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let ident = |k: usize| k > 0 && (b[k - 1] == b'_' || b[k - 1].is_ascii_alphanumeric());
    let mut i = 0;
    while i < b.len() {
        let end = match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |n| i + n),
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let (mut k, mut depth) = (i + 2, 1);
                while k < b.len() && depth > 0 {
                    if b[k..].starts_with(b"/*") {
                        depth += 1;
                        k += 2;
                    } else if b[k..].starts_with(b"*/") {
                        depth -= 1;
                        k += 2;
                    } else {
                        k += 1;
                    }
                }
                k
            }
            b'"' => quoted(b, i + 1, b'"'),
            b'b' if !ident(i) && b.get(i + 1) == Some(&b'"') => quoted(b, i + 2, b'"'),
            b'b' if !ident(i) && b.get(i + 1) == Some(&b'\'') => quoted(b, i + 2, b'\''),
            b'r' | b'b' if !ident(i) => raw(b, i).unwrap_or(i + 1),
            b'\'' => char_lit(b, i).unwrap_or(i + 1),
            _ => i + 1,
        };
        if end > i + 1 {
            for c in &mut out[i..end.min(b.len())] {
                if *c != b'\n' {
                    *c = b' ';
                }
            }
        }
        i = end.max(i + 1);
    }
    out
}

/// The end (past the closing quote) of a literal whose body starts at `i`.
fn quoted(b: &[u8], mut i: usize, quote: u8) -> usize {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// The end of a raw string (`r"…"`, `r#"…"#`, `br"…"`) starting at `i`, if one does.
fn raw(b: &[u8], i: usize) -> Option<usize> {
    let mut k = i + usize::from(b[i] == b'b');
    if b.get(k) != Some(&b'r') {
        return None;
    }
    k += 1;
    let hashes = b[k..].iter().take_while(|&&c| c == b'#').count();
    k += hashes;
    if b.get(k) != Some(&b'"') {
        return None;
    }
    let mut closing = vec![b'"'];
    closing.extend(std::iter::repeat_n(b'#', hashes));
    let body = k + 1;
    Some(
        b[body..]
            .windows(closing.len())
            .position(|w| w == closing.as_slice())
            .map_or(b.len(), |n| body + n + closing.len()),
    )
}

/// The end of a character literal starting at `i`, or `None` for a lifetime.
fn char_lit(b: &[u8], i: usize) -> Option<usize> {
    match b.get(i + 1)? {
        b'\\' => Some(quoted(b, i + 1, b'\'')),
        &c => {
            let len = match c {
                0..0x80 => 1,
                0xc0..0xe0 => 2,
                0xe0..0xf0 => 3,
                _ => 4,
            };
            (b.get(i + 1 + len) == Some(&b'\'')).then_some(i + 2 + len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A crate in a fresh temporary directory: (path, text) pairs.
    struct Tree(PathBuf);

    impl Tree {
        fn new(name: &str, files: &[(&str, &str)]) -> Tree {
            let dir =
                std::env::temp_dir().join(format!("xtask-layers-{}-{name}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            for (path, text) in files {
                let p = dir.join(path);
                fs::create_dir_all(p.parent().unwrap()).unwrap();
                fs::write(p, text).unwrap();
            }
            Tree(dir)
        }

        fn check(&self, allowed: &[Allowed]) -> Report {
            check_tree(&self.0, allowed).unwrap()
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    /// Three levels: `low`; `mid` and `side`; `top`.
    const LIB: &str = "\
//! A crate.
//!
//! - Level 0
//!   - [`low`]: the bottom.
//! - Level 1
//!   - `mid`: the middle,
//!     on two lines.
//!   - [`side`]: beside it.
//! - Level 2
//!   - [`top`]: the top.

pub mod low;
pub mod mid;
pub mod side;
pub mod top;
#[cfg(test)]
mod tests_only;
";

    fn tree(name: &str, extra: &[(&str, &str)]) -> Tree {
        let mut files = vec![
            ("lib.rs", LIB),
            ("low.rs", "pub fn f() {}\n"),
            ("mid/mod.rs", "use crate::low;\n"),
            ("side.rs", "pub fn g() {}\n"),
            ("top.rs", "use crate::{low, mid::x, side};\n"),
            ("tests_only.rs", "use crate::top;\n"),
        ];
        for (p, t) in extra {
            match files.iter_mut().find(|(q, _)| q == p) {
                Some(f) => f.1 = t,
                None => files.push((p, t)),
            }
        }
        Tree::new(name, &files)
    }

    #[test]
    fn reads_the_map() {
        let map = parse_map(LIB).unwrap();
        let want = [("low", 0), ("mid", 1), ("side", 1), ("top", 2)];
        assert_eq!(
            map,
            want.iter()
                .map(|&(m, l)| (m.to_string(), l))
                .collect::<BTreeMap<_, _>>()
        );
        assert!(parse_map("//! - Level 1\n//!   - [`a`]: x\n").is_err());
        assert!(parse_map("//! - Level 0\n//!   - [`a`]: x\n//!   - [`a`]: y\n").is_err());
        assert!(parse_map("//! nothing\n").is_err());
    }

    #[test]
    fn a_tree_that_keeps_the_map_passes() {
        let r = tree("clean", &[]).check(&[]);
        assert_eq!(r.problems, Vec::<String>::new());
        assert_eq!((r.modules, r.levels, r.files), (4, 3, 4));
        assert_eq!(r.imports, 4);
    }

    #[test]
    fn an_upward_import_names_file_line_and_layers() {
        let low = "//! The bottom.\n\npub fn f() {}\nuse crate::top::T;\n";
        let r = tree("up", &[("low.rs", low)]).check(&[]);
        assert_eq!(
            r.problems,
            ["low.rs:4: low (level 0) imports top (level 2), above it: a module uses only the levels below its own"]
        );
    }

    #[test]
    fn inline_paths_and_super_to_the_root_count() {
        let mid = "pub mod x;\n";
        let x = "fn f() {\n    let _ = crate::top::g();\n}\nuse super::super::side;\n";
        let r = tree("inline", &[("mid/mod.rs", mid), ("mid/x.rs", x)]).check(&[]);
        assert_eq!(r.problems.len(), 2, "{:?}", r.problems);
        assert!(r.problems[0].starts_with("mid/x.rs:2: mid (level 1) imports top (level 2)"));
        assert!(r.problems[1]
            .starts_with("mid/x.rs:4: mid (level 1) imports side (level 1), on the same level"));
    }

    #[test]
    fn a_group_over_several_lines_is_read_entry_by_entry() {
        let side = "use crate::{\n    low::{a, b},\n    self,\n    mid::c as d,\n    top,\n};\n";
        let r = tree("group", &[("side.rs", side)]).check(&[]);
        assert_eq!(r.problems.len(), 2, "{:?}", r.problems);
        assert!(r.problems[0].starts_with("side.rs:4: side (level 1) imports mid (level 1)"));
        assert!(r.problems[1].starts_with("side.rs:5: side (level 1) imports top (level 2)"));
    }

    #[test]
    fn comments_and_literals_are_not_code() {
        let low = r####"//! Uses [`crate::top`] in its doc.
// use crate::top;
/* use crate::top; /* nested */ use crate::top; */
/// [`crate::mid`]
pub fn f() -> (&'static str, &'static [u8], char, &'static str) {
    ("crate::top::x", b"crate::mid", '{', r#"crate::side "# )
}
"####;
        let r = tree("comments", &[("low.rs", low)]).check(&[]);
        assert_eq!(r.problems, Vec::<String>::new());
    }

    #[test]
    fn test_code_is_not_checked() {
        let low = "pub fn f() {}\n\n#[cfg(test)]\nmod tests {\n    use crate::top;\n    fn g() { let _ = '}'; }\n}\n#[cfg(test)]\nuse crate::mid;\n#[cfg(test)]\nmod more;\nfn h() { crate::side::g() }\n";
        let r = tree(
            "tests",
            &[("low.rs", low), ("low/more.rs", "use crate::top;\n")],
        )
        .check(&[]);
        // Only the use after the test items is code of the library.
        assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
        assert!(r.problems[0].starts_with("low.rs:12: low (level 0) imports side (level 1)"));
    }

    #[test]
    fn the_map_and_the_declarations_agree() {
        let lib = LIB.replace("pub mod side;\n", "pub mod side;\npub mod extra;\n");
        let lib = lib.replace(
            "//!   - [`top`]: the top.\n",
            "//!   - [`top`]: the top.\n//!   - [`gone`]: nothing.\n",
        );
        let r = tree("decl", &[("lib.rs", &lib), ("extra.rs", "")]).check(&[]);
        assert_eq!(r.problems.len(), 2, "{:?}", r.problems);
        assert!(r.problems[0].contains("module `extra` is not in the layer map"));
        assert!(r.problems[1].contains("names `gone`, which lib.rs does not declare"));
    }

    #[test]
    fn the_allow_list_is_exact_and_kept_short() {
        let low = "use crate::top;\n";
        let allow = [Allowed {
            file: "low.rs",
            from: "low",
            to: "top",
        }];
        let t = tree("allow", &[("low.rs", low)]);
        assert_eq!(t.check(&allow).problems, Vec::<String>::new());
        let stale = [Allowed {
            file: "side.rs",
            from: "side",
            to: "top",
        }];
        let r = t.check(&stale);
        assert_eq!(r.problems.len(), 2, "{:?}", r.problems);
        assert!(r.problems[0].starts_with("low.rs:1:"));
        assert!(r.problems[1].contains("side -> top is gone"));
    }
}
