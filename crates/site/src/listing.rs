//! Directory listings, made at build time as small HTML pages (no script, no external
//! assets) for directories without an index file when the configuration asks for them.

use bareweb_engine::site::FileSpec;

/// `&`, `<`, `>`, `"` and `'` escaped for HTML text and attribute values.
fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// A path segment percent-encoded for an `href` (unreserved characters kept).
fn encode(seg: &str) -> String {
    let mut o = String::new();
    for b in seg.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            o.push(b as char);
        } else {
            o.push_str(&format!("%{b:02X}"));
        }
    }
    o
}

/// The listing page of directory `dir` (`/` or `/a/b`): its subdirectories, then its
/// files with their sizes.
pub fn page(dir: &str, files: &[FileSpec], dirs: &[String]) -> String {
    let prefix = if dir == "/" {
        "/".to_string()
    } else {
        format!("{dir}/")
    };
    let child = |p: &str| {
        p.strip_prefix(prefix.as_str())
            .filter(|rest| !rest.is_empty() && !rest.contains('/'))
            .map(str::to_string)
    };
    let mut rows = String::new();
    if dir != "/" {
        rows.push_str("<li><a href=\"../\">../</a></li>\n");
    }
    for d in dirs.iter().filter_map(|d| child(d)) {
        rows.push_str(&format!(
            "<li><a href=\"{}/\">{}/</a></li>\n",
            encode(&d),
            escape(&d)
        ));
    }
    for f in files {
        if let Some(name) = child(&f.path) {
            rows.push_str(&format!(
                "<li><a href=\"{}\">{}</a> <small>{} bytes</small></li>\n",
                encode(&name),
                escape(&name),
                f.data.len()
            ));
        }
    }
    let title = escape(&prefix);
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Index of {title}</title></head>\n\
         <body><h1>Index of {title}</h1>\n<ul>\n{rows}</ul></body></html>\n"
    )
}
