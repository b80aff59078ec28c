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
