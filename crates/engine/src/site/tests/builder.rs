//! The site image builder (std): a directory or files in, an image that loads to the same
//! content out; content types, gzip variants, errors.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};
use std::{fs, process};

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
    assert!(matches!(
        build_from_dir(Path::new("/nonexistent/bareweb/site")),
        Err(BuildError::Io { .. })
    ));
}

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("bareweb-site-{tag}-{}-{n}", process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn write(&self, rel: &str, data: &[u8], mtime: u64) {
        let path = self.0.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, data).unwrap();
        let f = fs::File::options().write(true).open(&path).unwrap();
        f.set_modified(UNIX_EPOCH + Duration::from_secs(mtime))
            .unwrap();
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[test]
fn build_from_a_directory() {
    let dir = TempDir::new("dir");
    for (path, data, mtime) in fixture_files() {
        dir.write(&path[1..], &data, mtime);
    }
    dir.write(".hidden", b"secret", 1);
    dir.write(".git/config", b"secret", 1);
    dir.write("docs/.DS_Store", b"secret", 1);
    fs::create_dir_all(dir.0.join("empty/inner")).unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("/etc/passwd", dir.0.join("passwd")).unwrap();
        std::os::unix::fs::symlink("index.html", dir.0.join("link.html")).unwrap();
        std::os::unix::fs::symlink("/etc", dir.0.join("etc")).unwrap();
    }
    let image = build_from_dir(&dir.0).unwrap();
    let site = load_ok(&image);
    let got: Vec<&str> = site.iter_files().map(|(p, _)| p).collect();
    let mut want: Vec<String> = fixture_files().into_iter().map(|f| f.0).collect();
    want.sort();
    assert_eq!(got, want);
    for (path, data, mtime) in fixture_files() {
        let r = resource(&site, &path);
        assert_eq!(r.identity.data, &data[..]);
        assert_eq!(r.last_modified, mtime, "{path}");
    }
    for p in [
        "/.hidden",
        "/.git",
        "/.git/config",
        "/docs/.DS_Store",
        "/empty",
        "/empty/",
        "/passwd",
        "/link.html",
        "/etc",
        "/etc/passwd",
    ] {
        assert_eq!(site.lookup(p.as_bytes()), Found::NotFound, "{p}");
    }
}

#[test]
fn example_site() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/site");
    let image = build_from_dir(&root).unwrap();
    let site = load_ok(&image);

    let big = resource(&site, "/files/1m.bin");
    assert_eq!(big.identity.data.len(), 1_048_576);
    let on_disk = fs::read(root.join("files/1m.bin")).unwrap();
    assert_eq!(big.identity.data, &on_disk[..]);
    assert_eq!(big.gzip, None);
    assert_eq!(big.content_type, "application/octet-stream");
    assert!(big.identity.is_consistent());
    assert_eq!(
        big.identity.sum(0, 1_048_576),
        crate::wire::checksum::sum(&on_disk)
    );

    let four_k = resource(&site, "/files/4k.html");
    assert_eq!(four_k.identity.data.len(), 4096);
    assert!(four_k.gzip.is_some());

    assert_eq!(
        site.lookup(b"/"),
        Found::Resource(resource(&site, "/index.html"))
    );
    assert_eq!(site.lookup(b"/docs"), Found::AddSlash);
    assert_eq!(
        site.lookup(b"/docs/"),
        Found::Resource(resource(&site, "/docs/index.html"))
    );
    assert_eq!(site.lookup(b"/files/"), Found::NotFound);
    assert_eq!(resource(&site, "/gradient.png").gzip, None);
    assert!(resource(&site, "/favicon.ico").gzip.is_some());
    assert!(resource(&site, "/style.css").gzip.is_some());
    assert_eq!(resource(&site, "/logo.svg").content_type, "image/svg+xml");
    assert_eq!(
        resource(&site, "/robots.txt").content_type,
        "text/plain; charset=utf-8"
    );
    assert!(site.len() >= 10);
    exercise(&site);
}
