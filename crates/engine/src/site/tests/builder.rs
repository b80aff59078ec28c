//! The site image writer (std): files in, an image that loads to the same content out;
//! content types, gzip variants, errors. (Directories and bareweb.toml: crates/site.)

use std::io::Read;
use std::path::Path;

use std::fs;

use super::*;

/// Writes the fixture; run with `cargo test -p bareweb-engine --features std --
/// --ignored bless_fixture` after a format change.
#[test]
#[ignore]
fn bless_fixture() {
    let image = build_from_files(&fixture_files()).unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/site/testdata/small.bwsite");
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, image).unwrap();
}

fn gunzip(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(data)
        .read_to_end(&mut out)
        .unwrap();
    out
}

#[test]
fn fresh_build_matches_fixture_content() {
    let image = build_from_files(&fixture_files()).unwrap();
    let fresh = load_ok(&image);
    let fixture = load_ok(FIXTURE);
    let a: Vec<_> = fresh.iter_files().collect();
    let b: Vec<_> = fixture.iter_files().collect();
    assert_eq!(a.len(), b.len());
    for ((pa, ra), (pb, rb)) in a.iter().zip(&b) {
        assert_eq!(pa, pb);
        assert_eq!(ra.identity, rb.identity);
        assert_eq!(ra.etag, rb.etag);
        assert_eq!(ra.content_type, rb.content_type);
        assert_eq!(ra.last_modified, rb.last_modified);
        // Gzip bytes may differ between compressor versions; the content may not.
        assert_eq!(ra.gzip.is_some(), rb.gzip.is_some(), "{pa}");
        for gz in ra.gzip.iter().chain(&rb.gzip) {
            assert_eq!(gunzip(gz.data), ra.identity.data);
        }
    }
    // Deterministic.
    assert_eq!(build_from_files(&fixture_files()).unwrap(), image);
}

#[test]
fn gzip_only_for_compressible_and_smaller() {
    let text = b"hello hello hello hello hello hello hello hello hello".to_vec();
    let files = vec![
        ("/a.html".to_string(), text.clone(), 0),
        ("/a.bin".to_string(), text.clone(), 0),
        ("/a.png".to_string(), text.clone(), 0),
        ("/a.svg".to_string(), text.clone(), 0),
        ("/a.json".to_string(), text.clone(), 0),
        ("/a.ico".to_string(), text.clone(), 0),
        ("/tiny.css".to_string(), b"a".to_vec(), 0),
    ];
    let image = build_from_files(&files).unwrap();
    let site = load_ok(&image);
    for (path, gz) in [
        ("/a.html", true),
        ("/a.bin", false),
        ("/a.png", false),
        ("/a.svg", true),
        ("/a.json", true),
        ("/a.ico", true),
        ("/tiny.css", false),
    ] {
        let r = resource(&site, path);
        assert_eq!(r.gzip.is_some(), gz, "{path}");
        if let Some(g) = r.gzip {
            assert!(g.data.len() < r.identity.data.len());
            assert_eq!(gunzip(g.data), r.identity.data);
            let mut sums = vec![0u8; 2 * Body::blocks_for(g.data.len())];
            block_sums_into(g.data, &mut sums);
            assert_eq!(g.block_sums, &sums[..]);
        }
    }
}

#[test]
fn content_types() {
    for (name, ct) in [
        ("/a.html", "text/html; charset=utf-8"),
        ("/a.HTM", "text/html; charset=utf-8"),
        ("/a.css", "text/css; charset=utf-8"),
        ("/a.js", "text/javascript; charset=utf-8"),
        ("/a.mjs", "text/javascript; charset=utf-8"),
        ("/a.json", "application/json"),
        ("/a.txt", "text/plain; charset=utf-8"),
        ("/a.xml", "application/xml"),
        ("/a.svg", "image/svg+xml"),
        ("/a.png", "image/png"),
        ("/a.jpg", "image/jpeg"),
        ("/a.jpeg", "image/jpeg"),
        ("/a.gif", "image/gif"),
        ("/a.webp", "image/webp"),
        ("/a.ico", "image/x-icon"),
        ("/a.wasm", "application/wasm"),
        ("/a.pdf", "application/pdf"),
        ("/a.woff", "font/woff"),
        ("/a.woff2", "font/woff2"),
        ("/a.mp4", "video/mp4"),
        ("/a.bin", "application/octet-stream"),
        ("/README", "application/octet-stream"),
        ("/d.html/x", "application/octet-stream"),
    ] {
        assert_eq!(content_type(name), ct, "{name}");
    }
}

#[test]
fn empty_site() {
    let image = build_from_files(&[]).unwrap();
    let site = load_ok(&image);
    assert!(site.is_empty());
    assert_eq!(site.lookup(b"/"), Found::NotFound);
    assert_eq!(site.lookup(b"/x"), Found::NotFound);
}

#[test]
fn build_errors() {
    let f = |p: &str| (p.to_string(), b"x".to_vec(), 0u64);
    for bad in [
        "", "a", "/", "/a/", "//a", "/a//b", "/./a", "/a/..", "/a\nb",
    ] {
        assert!(
            matches!(build_from_files(&[f(bad)]), Err(BuildError::BadPath { .. })),
            "{bad:?}"
        );
    }
    assert!(matches!(
        build_from_files(&[f("/a"), f("/a")]),
        Err(BuildError::Duplicate(p)) if p == "/a"
    ));
    assert!(matches!(
        build_from_files(&[f("/a"), f("/a/b")]),
        Err(BuildError::FileAndDir(p)) if p == "/a"
    ));
    assert!(matches!(
        build_from_files(&[f("/a/b/c"), f("/a/b")]),
        Err(BuildError::FileAndDir(p)) if p == "/a/b"
    ));
}

/// An image with rewrites, placeholder redirects and a `Server` setting, answered through
/// the HTTP layer: what a browser gets.
mod rules {
    use super::*;
    use crate::http::{parse, respond, Parse, HEAD_MAX};

    fn file(path: &str, body: &str) -> FileSpec {
        FileSpec {
            path: path.into(),
            data: body.as_bytes().to_vec(),
            content_type: content_type(path).into(),
            gzip: Some(gzip(body.as_bytes())),
            ..FileSpec::default()
        }
    }

    fn rule(from: &str, to: &str, status: u16, prefix: bool, rewrite: bool) -> RedirectSpec {
        RedirectSpec {
            from: from.into(),
            to: to.into(),
            status,
            prefix,
            rewrite,
        }
    }

    fn spec(server: Option<&str>) -> Spec {
        Spec {
            files: vec![
                file("/app/index.html", &"<!doctype html>the app ".repeat(20)),
                file("/app/main.js", "console.log(1)"),
                file("/about.html", "<!doctype html>about"),
                file("/index.html", "<!doctype html>home"),
            ],
            redirects: vec![
                rule("/app/", "/app/index.html", 200, true, true),
                rule("/about", "/about.html", 200, false, true),
                rule("/blog/:slug", "/posts/:slug.html", 301, false, false),
                rule("/docs/:v/*", "/manual/:splat?v=:v", 302, false, false),
                rule("/old/", "/new/:splat/x", 308, true, false),
                rule("/b/", "https://b.example/", 301, true, false),
            ],
            server: server.map(str::to_string),
            ..Spec::default()
        }
    }

    /// Status, the head as text, and the body (inline or stored).
    fn get(site: &Site<'_>, path: &str, accept: &str) -> (u16, String, Vec<u8>) {
        let raw = format!("GET {path} HTTP/1.1\r\nHost: x\r\n{accept}\r\n");
        let Parse::Complete { request, .. } = parse(raw.as_bytes()) else {
            panic!("{raw}");
        };
        let mut head = [0u8; HEAD_MAX];
        let r = respond(&request, site, 1_700_000_000, "bareweb", &mut head);
        let text = String::from_utf8_lossy(&head[..r.head_len]).into_owned();
        let body = r
            .body
            .map_or(Vec::new(), |b| b.body.data[b.start..b.end].to_vec());
        (r.status, text, body)
    }

    fn field<'t>(head: &'t str, name: &str) -> Option<&'t str> {
        head.split("\r\n")
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(": "))
    }

    #[test]
    fn rewrites_answer_200_with_the_target_file_and_files_still_win() {
        let image = build(&spec(None)).unwrap();
        let site = load_ok(&image);
        let target = resource(&site, "/app/index.html");
        for path in ["/app/settings", "/app/a/b/c?q=1", "/app/"] {
            let (status, head, body) = get(&site, path, "");
            assert_eq!(status, 200, "{path}: {head}");
            assert_eq!(body, target.identity.data, "{path}");
            assert_eq!(field(&head, "ETag"), Some(target.etag), "{path}");
            assert_eq!(
                field(&head, "Content-Type"),
                Some("text/html; charset=utf-8")
            );
        }
        // Its encodings too.
        let (_, head, body) = get(&site, "/app/route", "Accept-Encoding: gzip\r\n");
        assert_eq!(field(&head, "Content-Encoding"), Some("gzip"), "{head}");
        assert_eq!(body, target.gzip.unwrap().data);
        // A file under the prefix is itself; an exact rewrite; elsewhere still 404.
        assert_eq!(get(&site, "/app/main.js", "").2, b"console.log(1)");
        assert_eq!(get(&site, "/about", "").2, b"<!doctype html>about");
        assert_eq!(get(&site, "/nothing", "").0, 404);
        assert_eq!(get(&site, "/about/x", "").0, 404);
    }

    #[test]
    fn placeholders_and_splats_fill_the_location() {
        let image = build(&spec(None)).unwrap();
        let site = load_ok(&image);
        for (path, status, location) in [
            ("/blog/hello", 301, "/posts/hello.html"),
            ("/blog/caf%C3%A9", 301, "/posts/caf%C3%A9.html"),
            ("/blog/hello?x=1", 301, "/posts/hello.html?x=1"),
            ("/docs/2/a/b", 302, "/manual/a/b?v=2"),
            ("/docs/2", 302, "/manual/?v=2"),
            ("/old/p/q", 308, "/new/p/q/x"),
            ("/b/c", 301, "https://b.example/c"),
        ] {
            let (s, head, _) = get(&site, path, "");
            assert_eq!(s, status, "{path}: {head}");
            assert_eq!(field(&head, "Location"), Some(location), "{path}");
        }
        // One segment per placeholder.
        assert_eq!(get(&site, "/blog/a/b", "").0, 404);
        assert_eq!(get(&site, "/blog/", "").0, 404);
    }

    #[test]
    fn the_server_field_is_the_sites_choice() {
        for (server, want) in [
            (None, None),
            (Some(""), Some("")),
            (Some("shop"), Some("shop")),
        ] {
            let image = build(&spec(server)).unwrap();
            let site = load_ok(&image);
            assert_eq!(site.server_name(), want);
            let name = site.server_name().unwrap_or("bareweb");
            let raw = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
            let Parse::Complete { request, .. } = parse(raw) else {
                panic!()
            };
            let mut head = [0u8; HEAD_MAX];
            let r = respond(&request, &site, 1_700_000_000, name, &mut head);
            let text = String::from_utf8_lossy(&head[..r.head_len]).into_owned();
            let expect = match name {
                "" => None,
                n => Some(n),
            };
            assert_eq!(field(&text, "Server"), expect, "{text}");
        }
    }

    #[test]
    fn the_loader_refuses_inconsistent_rules() {
        // A rewrite to a path that is no file.
        let mut s = spec(None);
        s.redirects
            .push(rule("/x", "/missing.html", 200, false, true));
        let image = build(&s).unwrap();
        assert!(matches!(
            Site::load(&image),
            Err(LoadError::Redirect { why, .. }) if why.contains("rewrite target")
        ));
        // A placeholder the pattern lacks.
        let mut s = spec(None);
        s.redirects = vec![rule("/a/:x", "/b/:y", 301, false, false)];
        let image = build(&s).unwrap();
        assert!(matches!(
            Site::load(&image),
            Err(LoadError::Redirect { why, .. }) if why.contains("placeholder")
        ));
        // A rewrite with a redirect's status.
        let mut s = spec(None);
        s.redirects = vec![rule("/a", "/about.html", 301, false, true)];
        assert!(build(&s).is_err());
    }
}

#[test]
fn stats_allow_says_set_or_not_even_for_everyone() {
    let allow = |a: Option<([u8; 4], u8)>| {
        let image = build(&Spec {
            stats_allow: a,
            ..Spec::default()
        })
        .unwrap();
        Site::load(&image).unwrap().pages().stats_allow
    };
    assert_eq!(allow(None), None);
    // `0.0.0.0/0` (everyone, said on purpose) is not "not said".
    assert_eq!(allow(Some(([0; 4], 0))), Some(([0; 4], 0)));
    assert_eq!(allow(Some(([10, 0, 0, 0], 8))), Some(([10, 0, 0, 0], 8)));
}
