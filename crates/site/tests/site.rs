//! A site directory as a user has one — dotfiles, `.well-known/`, symlinks in and out,
//! modern file types, a 404 page, a `bareweb.toml` — built into an image and answered by
//! the engine's own responder: what a browser would get (the deployability work's
//! "faithful content" and "a site config").

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use bareweb_engine::http::{self, Parse};
use bareweb_engine::site::Site;
use bareweb_site::{build_dir, Built};

struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("bareweb-site-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
    fn write(&self, rel: &str, data: &[u8]) {
        let p = self.0.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, data).unwrap();
    }
    fn link(&self, target: &str, rel: &str) {
        std::os::unix::fs::symlink(target, self.0.join(rel)).unwrap();
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// What the engine answers: status, head text, body bytes.
fn get(site: &Site<'_>, target: &str, extra: &str) -> (u16, String, Vec<u8>) {
    let req = format!("GET {target} HTTP/1.1\r\nHost: x\r\n{extra}\r\n");
    let Parse::Complete { request, .. } = http::parse(req.as_bytes()) else {
        panic!("{req:?} does not parse");
    };
    let mut head = [0u8; http::HEAD_MAX];
    let r = http::respond(&request, site, 1_700_000_000, "bareweb", &mut head);
    let head_text = String::from_utf8_lossy(&head[..r.head_len]).into_owned();
    let (head_only, inline) = head_text.split_once("\r\n\r\n").unwrap();
    let mut body = inline.as_bytes().to_vec();
    if let Some(b) = r.body {
        body.extend_from_slice(&b.body.data[b.start..b.end]);
    }
    (r.status, head_only.to_string(), body)
}

fn field<'h>(head: &'h str, name: &str) -> Option<&'h str> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

fn built(d: &Dir) -> Built {
    build_dir(&d.0, None).unwrap()
}

#[test]
fn dotfiles_symlinks_and_what_was_skipped() {
    let outside = Dir::new("outside");
    outside.write("secret.txt", b"not for the web");
    let d = Dir::new("faithful");
    d.write("index.html", b"<!doctype html><title>home</title>home");
    d.write(
        ".well-known/security.txt",
        b"Contact: mailto:sec@example.org\n",
    );
    d.write(".well-known/acme-challenge/tok123", b"tok123.key");
    d.write(".well-known/assetlinks.json", b"[]");
    d.write(".git/config", b"[core]");
    d.write(".env", b"SECRET=1");
    d.write("docs/.DS_Store", b"junk");
    d.write("real/page.html", b"<p>real</p>");
    d.link("real/page.html", "alias.html");
    d.link("real", "alias-dir");
    d.link(outside.0.join("secret.txt").to_str().unwrap(), "leak.txt");
    d.link("nowhere", "dangling");
    d.link(".", "loop");
    let b = built(&d);
    let site = Site::load(&b.image).unwrap();
    let (s, _, body) = get(&site, "/.well-known/security.txt", "");
    assert_eq!(
        (s, &body[..]),
        (200, &b"Contact: mailto:sec@example.org\n"[..])
    );
    assert_eq!(get(&site, "/.well-known/acme-challenge/tok123", "").0, 200);
    assert_eq!(get(&site, "/.well-known/assetlinks.json", "").0, 200);
    assert_eq!(get(&site, "/alias.html", "").2, b"<p>real</p>");
    assert_eq!(get(&site, "/alias-dir/page.html", "").2, b"<p>real</p>");
    for hidden in [
        "/.git/config",
        "/.env",
        "/docs/.DS_Store",
        "/leak.txt",
        "/dangling",
    ] {
        assert_eq!(get(&site, hidden, "").0, 404, "{hidden}");
    }
    let report = b.skipped_lines().join("\n");
    for (what, why) in [
        (".git", "hidden"),
        (".env", "hidden"),
        ("docs/.DS_Store", "hidden"),
        ("leak.txt", "outside the site: refused"),
        ("dangling", "dangling"),
        ("loop", "loop"),
    ] {
        assert!(
            b.skipped
                .iter()
                .any(|s| s.path == Path::new(what) && s.why.contains(why)),
            "{what} ({why}) missing from:\n{report}"
        );
    }
    assert_eq!(b.skipped.len(), 6, "{report}");
    // index, 3 under .well-known, real/page.html, alias.html, alias-dir/page.html
    assert_eq!(b.files, 7);
}

#[test]
fn content_types_from_the_mime_database() {
    let d = Dir::new("mime");
    for (name, _) in TYPES {
        d.write(name, b"x");
    }
    let site_b = built(&d);
    let site = Site::load(&site_b.image).unwrap();
    for (name, want) in TYPES {
        let (_, head, _) = get(&site, &format!("/{name}"), "");
        assert_eq!(field(&head, "content-type"), Some(*want), "{name}");
    }
}

const TYPES: &[(&str, &str)] = &[
    ("a.avif", "image/avif"),
    ("a.webm", "video/webm"),
    ("a.webmanifest", "application/manifest+json"),
    ("a.map", "application/json"),
    ("a.zip", "application/zip"),
    ("a.yaml", "text/x-yaml; charset=utf-8"),
    ("a.html", "text/html; charset=utf-8"),
    ("a.js", "text/javascript; charset=utf-8"),
    ("a.mjs", "text/javascript; charset=utf-8"),
    ("a.svg", "image/svg+xml; charset=utf-8"),
    ("a.wasm", "application/wasm"),
    ("a.woff2", "font/woff2"),
    ("noext", "application/octet-stream"),
];

#[test]
fn brotli_zstd_and_gzip_chosen_by_q_values() {
    let d = Dir::new("enc");
    let text = "<p>bareweb serves precompressed variants.</p>\n".repeat(200);
    d.write("page.html", text.as_bytes());
    let b = built(&d);
    let site = Site::load(&b.image).unwrap();
    let decode = |coding: &str, body: &[u8]| -> Vec<u8> {
        match coding {
            "br" => {
                let mut out = Vec::new();
                brotli::Decompressor::new(body, 4096)
                    .read_to_end(&mut out)
                    .unwrap();
                out
            }
            "zstd" => zstd::stream::decode_all(body).unwrap(),
            "gzip" => {
                let mut out = Vec::new();
                flate2::read::GzDecoder::new(body)
                    .read_to_end(&mut out)
                    .unwrap();
                out
            }
            _ => body.to_vec(),
        }
    };
    for (accept, want) in [
        ("", None),
        ("Accept-Encoding: gzip\r\n", Some("gzip")),
        ("Accept-Encoding: br\r\n", Some("br")),
        ("Accept-Encoding: zstd\r\n", Some("zstd")),
        ("Accept-Encoding: gzip, deflate, br, zstd\r\n", Some("br")),
        (
            "Accept-Encoding: br;q=0.5, zstd;q=0.9, gzip;q=0.1\r\n",
            Some("zstd"),
        ),
        ("Accept-Encoding: br;q=0, gzip\r\n", Some("gzip")),
        ("Accept-Encoding: *;q=0.5, identity\r\n", None),
        ("Accept-Encoding: identity;q=0.1, *\r\n", Some("br")),
        ("Accept-Encoding: deflate\r\n", None),
    ] {
        let (s, head, body) = get(&site, "/page.html", accept);
        assert_eq!(s, 200);
        assert_eq!(field(&head, "content-encoding"), want, "{accept:?}");
        assert_eq!(field(&head, "vary"), Some("Accept-Encoding"));
        assert_eq!(
            decode(want.unwrap_or(""), &body),
            text.as_bytes(),
            "{accept:?}"
        );
        if let Some(c) = want {
            assert!(body.len() < text.len() / 5, "{c}: {}", body.len());
            let suffix = ["-gz\"", "-br\"", "-zst\""];
            let etag = field(&head, "etag").unwrap();
            assert!(suffix.iter().any(|s| etag.ends_with(s)), "{etag}");
        }
    }
}

/// A listed directory with no file to serve, empty or holding only a hidden `.gitkeep`
/// (under an empty parent too), is listed like any other: the build does not fail.
#[test]
fn empty_directories_are_listed() {
    let d = Dir::new("empty-listing");
    d.write("bareweb.toml", b"listing = true\n");
    d.write("a.txt", b"a");
    fs::create_dir_all(d.0.join("empty")).unwrap();
    d.write("kept/.gitkeep", b"");
    fs::create_dir_all(d.0.join("outer/inner")).unwrap();
    let b = built(&d);
    let site = Site::load(&b.image).unwrap();
    for (dir, parent_lists) in [
        ("/empty", "empty/"),
        ("/kept", "kept/"),
        ("/outer/inner", "inner/"),
    ] {
        assert_eq!(get(&site, dir, "").0, 301, "{dir}");
        let (s, _, body) = get(&site, &format!("{dir}/"), "");
        let body = String::from_utf8(body).unwrap();
        assert_eq!(s, 200, "{dir}/");
        assert!(
            body.contains(&format!("Index of {dir}/")) && body.contains("href=\"../\""),
            "{body}"
        );
        let parent = dir
            .rsplit_once('/')
            .map_or("/", |(p, _)| if p.is_empty() { "/" } else { p });
        let parent = if parent == "/" {
            "/".to_string()
        } else {
            format!("{parent}/")
        };
        let listing = String::from_utf8(get(&site, &parent, "").2).unwrap();
        assert!(
            listing.contains(&format!("href=\"{parent_lists}\"")),
            "{parent}: {listing}"
        );
    }
    assert!(b.skipped_lines().iter().any(|l| l.contains(".gitkeep")));
}

/// The files a build writes, and images earlier builds wrote, are not content: left out
/// and listed. A file that merely holds bareweb's kernel (the `bareweb` binary offered
/// for download) is content.
#[test]
fn outputs_and_earlier_images_are_left_out() {
    let d = Dir::new("outputs");
    d.write("index.html", b"home");
    d.write("out/site.iso", b"an ISO being written");
    d.write("old.ELF", b"\x7fELF....BAREWEB-SITE-v1\0....");
    d.write("plain.elf", b"\x7fELF an ELF of another program");
    d.write("bareweb-linux-x86_64", b"\x7fELF....BAREWEB-SITE-v1\0....");
    d.write("copy.bin", b"BWSITE\0\0rest of an image");
    let out = d.0.join("out/site.iso");
    let not_yet = d.0.join("new.img");
    let b = bareweb_site::build_dir_excluding(&d.0, None, &[&out, &not_yet]).unwrap();
    let lines = b.skipped_lines().join("\n");
    assert!(
        lines.contains("skipped out/site.iso: the output of this build"),
        "{lines}"
    );
    assert!(
        lines.contains("skipped old.ELF: a bootable bareweb image"),
        "{lines}"
    );
    assert!(
        lines.contains("skipped copy.bin: a bareweb site image"),
        "{lines}"
    );
    assert_eq!(b.skipped.len(), 3, "{lines}");
    let site = Site::load(&b.image).unwrap();
    assert_eq!(get(&site, "/plain.elf", "").0, 200);
    assert_eq!(get(&site, "/bareweb-linux-x86_64", "").0, 200);
    assert_eq!(get(&site, "/out/site.iso", "").0, 404);
}

#[test]
fn the_404_page_listings_and_slash_redirects() {
    let d = Dir::new("errors");
    d.write("index.html", b"home");
    d.write("404.html", b"<h1>custom not found</h1>");
    d.write("sub/a.txt", b"a");
    let site_b = built(&d);
    let site = Site::load(&site_b.image).unwrap();
    let (s, head, body) = get(&site, "/missing", "");
    assert_eq!((s, &body[..]), (404, &b"<h1>custom not found</h1>"[..]));
    assert_eq!(
        field(&head, "content-type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(field(&head, "content-length"), Some("25"));
    assert_eq!(get(&site, "/sub", "").0, 301);
    assert_eq!(get(&site, "/sub/", "").0, 404, "no index and no listing");

    d.write("bareweb.toml", b"listing = true\n");
    let b = built(&d);
    let site = Site::load(&b.image).unwrap();
    let (s, head, body) = get(&site, "/sub/", "");
    let body = String::from_utf8(body).unwrap();
    assert_eq!(s, 200);
    assert_eq!(
        field(&head, "content-type"),
        Some("text/html; charset=utf-8")
    );
    assert!(
        body.contains("Index of /sub/") && body.contains("href=\"a.txt\""),
        "{body}"
    );
    assert_eq!(
        get(&site, "/", "").2,
        b"home",
        "an index file wins over a listing"
    );
    assert!(
        b.skipped.is_empty(),
        "bareweb.toml is the configuration, not skipped content"
    );
    assert_eq!(
        get(&site, "/bareweb.toml", "").0,
        404,
        "and it is not served"
    );
}

#[test]
fn a_configured_site_answers_as_configured() {
    let d = Dir::new("config");
    d.write("index.htm", b"home (htm)");
    d.write("assets/app.js", b"console.log(1)");
    d.write("new/page.html", b"new page");
    d.write("errors/missing.html", b"<p>gone fishing</p>");
    d.write(
        "bareweb.toml",
        br#"
index = ["index.html", "index.htm"]
[errors]
404 = "/errors/missing.html"

[[headers]]
path = "/*"
set = { "X-Content-Type-Options" = "nosniff" }

[[headers]]
path = "/assets/*"
set = { "Cache-Control" = "max-age=31536000, immutable", "X-Frame-Options" = "DENY" }

[[redirects]]
from = "/old"
to = "/new/page.html"
status = 301

[[redirects]]
from = "/docs/*"
to = "https://docs.example.org/"
status = 308

[[redirects]]
from = "/tmp"
to = "/new/page.html"
status = 307
"#,
    );
    let b = built(&d);
    let site = Site::load(&b.image).unwrap();
    assert_eq!(get(&site, "/", "").2, b"home (htm)");
    let (_, head, _) = get(&site, "/assets/app.js", "");
    assert_eq!(
        field(&head, "cache-control"),
        Some("max-age=31536000, immutable")
    );
    assert_eq!(field(&head, "x-frame-options"), Some("DENY"));
    assert_eq!(field(&head, "x-content-type-options"), Some("nosniff"));
    // The /assets/* rule does not reach other files: they keep the default freshness.
    let (_, head, _) = get(&site, "/new/page.html", "");
    assert_eq!(field(&head, "cache-control"), Some("no-cache"));
    assert_eq!(field(&head, "x-content-type-options"), Some("nosniff"));
    let (s, head, _) = get(&site, "/old", "");
    assert_eq!((s, field(&head, "location")), (301, Some("/new/page.html")));
    assert_eq!(field(&head, "x-content-type-options"), Some("nosniff"));
    let (s, head, _) = get(&site, "/old?x=1", "");
    assert_eq!(
        (s, field(&head, "location")),
        (301, Some("/new/page.html?x=1"))
    );
    let (s, head, _) = get(&site, "/docs/guide/intro%20one.html", "");
    assert_eq!(
        (s, field(&head, "location")),
        (308, Some("https://docs.example.org/guide/intro%20one.html"))
    );
    assert!(
        head.starts_with("HTTP/1.1 308 Permanent Redirect\r\n"),
        "{head}"
    );
    let (s, head, _) = get(&site, "/tmp", "");
    assert_eq!((s, field(&head, "location")), (307, Some("/new/page.html")));
    let (s, head, body) = get(&site, "/nothing-here", "");
    assert_eq!((s, &body[..]), (404, &b"<p>gone fishing</p>"[..]));
    assert_eq!(field(&head, "x-content-type-options"), Some("nosniff"));
    // A 304 carries the file's configured fields too (RFC 9110 15.4.5: Cache-Control).
    let (_, head, _) = get(&site, "/assets/app.js", "");
    let etag = field(&head, "etag").unwrap().to_string();
    let (s, head, _) = get(
        &site,
        "/assets/app.js",
        &format!("If-None-Match: {etag}\r\n"),
    );
    assert_eq!(
        (s, field(&head, "cache-control")),
        (304, Some("max-age=31536000, immutable"))
    );
}

#[test]
fn bad_config_and_missing_error_pages_name_the_file_and_line() {
    let d = Dir::new("badcfg");
    d.write("index.html", b"x");
    d.write(
        "bareweb.toml",
        b"listing = true\n[[redirects]]\nfrom = \"/a\"\nto = \"/b\"\nstatus = 200\n",
    );
    let e = build_dir(&d.0, None).unwrap_err().to_string();
    assert!(e.contains("bareweb.toml:5:") && e.contains("301"), "{e}");
    d.write("bareweb.toml", b"[errors]\n404 = \"/nope.html\"\n");
    let e = build_dir(&d.0, None).unwrap_err().to_string();
    assert!(e.contains("/nope.html") && e.contains("not a file"), "{e}");
    // --config names another file.
    let other = d.0.join("other.toml");
    fs::write(&other, "metrics = maybe\n").unwrap();
    let e = build_dir(&d.0, Some(&other)).unwrap_err().to_string();
    assert!(e.contains("other.toml:1:"), "{e}");
}

#[test]
fn the_example_site() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/site");
    let b = build_dir(&root, None).unwrap();
    let site = Site::load(&b.image).unwrap();
    let (s, _, body) = get(&site, "/files/1m.bin", "");
    assert_eq!((s, body.len()), (200, 1 << 20));
    assert_eq!(body, fs::read(root.join("files/1m.bin")).unwrap());
    let (_, head, _) = get(&site, "/style.css", "Accept-Encoding: gzip, br\r\n");
    assert_eq!(field(&head, "content-encoding"), Some("br"));
    assert_eq!(get(&site, "/docs", "").0, 301);
    assert_eq!(get(&site, "/docs/", "").0, 200);
    assert!(b.skipped.is_empty(), "{:?}", b.skipped);
}

#[test]
fn server_pages_switches_path_and_allow_are_carried_in_the_image() {
    use bareweb_engine::cores::pages::{Allow, Page, PageSettings};
    let d = Dir::new("pages");
    d.write("index.html", b"x");
    let site = leaked(built(&d));
    // serve's defaults: all on; an image's (the kernel's): the stats page only.
    let serve = PageSettings::resolve(&site.pages(), true, true, true, Allow::Everyone);
    assert!(serve.stats && serve.metrics && serve.healthz);
    let kernel = PageSettings::resolve(&site.pages(), true, false, false, Allow::Everyone);
    assert!(kernel.stats && !kernel.metrics && !kernel.healthz);
    assert_eq!(
        kernel.page_for(b"/.well-known/bareweb/stats", [1, 2, 3, 4]),
        Some(Page::Json)
    );

    d.write(
        "bareweb.toml",
        b"metrics = true\nhealthz = true\n[stats]\npath = \"/_s\"\nallow = \"10.0.0.0/8\"\n",
    );
    let site = leaked(built(&d));
    let p = PageSettings::resolve(&site.pages(), true, false, false, Allow::Everyone);
    assert!(p.stats && p.metrics && p.healthz);
    assert_eq!(p.page_for(b"/_s/stats", [10, 9, 9, 9]), Some(Page::Json));
    assert_eq!(
        p.page_for(b"/_s/stats", [192, 168, 0, 1]),
        Some(Page::Refused),
        "outside allow"
    );
    assert_eq!(
        p.page_for(b"/metrics", [192, 168, 0, 1]),
        Some(Page::Refused),
        "outside allow"
    );
    assert_eq!(
        p.page_for(b"/healthz", [192, 168, 0, 1]),
        Some(Page::Healthz)
    );
    assert_eq!(
        p.page_for(b"/.well-known/bareweb/stats", [10, 0, 0, 1]),
        None
    );

    d.write(
        "bareweb.toml",
        b"metrics = false\n[stats]\nenabled = false\n",
    );
    let site = leaked(built(&d));
    let p = PageSettings::resolve(&site.pages(), true, true, true, Allow::Everyone);
    assert!(!p.stats && !p.metrics && p.healthz);
}

/// The site of `b`, kept for the life of the test (the server's pages borrow it forever).
fn leaked(b: Built) -> Site<'static> {
    Site::load(Box::leak(b.image.into_boxed_slice())).unwrap()
}

/// A single-page app under /app/, placeholder redirects and the `Server` field, from a
/// bareweb.toml to what a browser gets; rules the site makes meaningless are refused with
/// the reason and the line.
#[test]
fn rewrites_placeholders_and_the_server_field_from_bareweb_toml() {
    let d = Dir::new("rules");
    d.write("app/index.html", b"<!doctype html><title>app</title>");
    d.write("app/main.js", b"console.log('app')");
    d.write("index.html", b"<!doctype html>home");
    d.write(
        "bareweb.toml",
        b"server_header = false\n\
          [[rewrites]]\nfrom = \"/app/*\"\nto = \"/app/index.html\"\n\
          [[redirects]]\nfrom = \"/blog/:slug\"\nto = \"/posts/:slug\"\n\
          [[redirects]]\nfrom = \"/wiki/*\"\nto = \"/docs/:splat\"\nstatus = 302\n",
    );
    let site = leaked(built(&d));
    let (status, head, body) = get(&site, "/app/users/7", "");
    assert_eq!(status, 200, "{head}");
    assert_eq!(body, b"<!doctype html><title>app</title>");
    let (_, index_head, _) = get(&site, "/app/index.html", "");
    assert_eq!(field(&head, "ETag"), field(&index_head, "ETag"));
    assert_eq!(get(&site, "/app/main.js", "").2, b"console.log('app')");
    let (status, head, _) = get(&site, "/blog/first-post?ref=x", "");
    assert_eq!(status, 301);
    assert_eq!(field(&head, "Location"), Some("/posts/first-post?ref=x"));
    let (status, head, _) = get(&site, "/wiki/a%20b/c", "");
    assert_eq!(status, 302);
    assert_eq!(field(&head, "Location"), Some("/docs/a%20b/c"));
    assert_eq!(
        bareweb_engine::resource::Lookup::server_name(&site),
        Some("")
    );

    for (toml, line, what) in [
        (
            "[[rewrites]]\nfrom = \"/app/*\"\nto = \"/app/missing.html\"\n",
            2,
            "rewrite to \"/app/missing.html\": not a file of the site",
        ),
        (
            "[[rewrites]]\nfrom = \"/x/*\"\nto = \"/app/sub/\"\n",
            2,
            "not a file of the site",
        ),
        (
            "\n[[rewrites]]\nfrom = \"/index.html\"\nto = \"/app/index.html\"\n",
            3,
            "the site serves that path itself",
        ),
    ] {
        d.write("bareweb.toml", toml.as_bytes());
        let e = build_dir(&d.0, None).unwrap_err().to_string();
        assert!(e.contains(&format!("bareweb.toml:{line}: ")), "{e}");
        assert!(e.contains(what), "{e}");
    }
}

/// `[[headers]]` rules for every path reach the server's own pages: the stats page, its
/// JSON, /metrics and /healthz.
#[test]
fn site_wide_headers_reach_the_server_pages() {
    use bareweb_engine::cores::board::{Board, Role, WithStatsPage};
    use bareweb_engine::cores::pages::{self, Allow, Page, PageSettings};
    use bareweb_engine::resource::{Found, Lookup};
    let d = Dir::new("pagehdr");
    d.write("index.html", b"home");
    d.write(
        "bareweb.toml",
        b"[[headers]]\npath = \"/*\"\nset = { \"X-Frame-Options\" = \"DENY\" }\n",
    );
    let site = leaked(built(&d));
    let with = WithStatsPage::new(site);
    let Found::Resource(page) = with.lookup(b"/.well-known/bareweb/") else {
        panic!("no stats page");
    };
    assert_eq!(page.headers, "X-Frame-Options: DENY\r\n");
    let settings = PageSettings::resolve(&site.pages(), true, true, true, Allow::Everyone);
    assert_eq!(settings.headers, "X-Frame-Options: DENY\r\n");
    let board: &'static Board = Box::leak(Box::new(
        Board::new("single", &[Role::Single]).with_pages(settings),
    ));
    for (page, path) in [
        (Page::Metrics, "/metrics"),
        (Page::Healthz, "/healthz"),
        (Page::Json, "/.well-known/bareweb/stats"),
    ] {
        let raw = format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n");
        let Parse::Complete { request, .. } = http::parse(raw.as_bytes()) else {
            panic!()
        };
        let mut out = vec![0u8; 64 * 1024];
        let r = pages::respond(
            page,
            board,
            &request,
            [127, 0, 0, 1].into(),
            1_700_000_000,
            "bareweb",
            &mut out,
        );
        let head = String::from_utf8_lossy(&out[..r.head_len]).into_owned();
        assert_eq!(r.status, 200, "{path}: {head}");
        assert_eq!(
            field(&head, "X-Frame-Options"),
            Some("DENY"),
            "{path}: {head}"
        );
    }
}

#[test]
fn freshness_is_explicit_by_default_and_rules_replace_it() {
    let d = Dir::new("fresh");
    d.write("index.html", b"<!doctype html><title>home</title>home");
    d.write("style.css", b"body { color: black }");
    d.write("logo.png", b"\x89PNG not really");
    d.write("notes.txt", b"plain notes");
    d.write("empty/.keep", b"");
    d.write("fixed/app.js", b"console.log(1)");
    d.write(
        "bareweb.toml",
        br#"
listing = true
[[headers]]
path = "/fixed/*"
set = { "cache-control" = "max-age=31536000, immutable" }
"#,
    );
    let site = leaked(built(&d));
    for (path, want) in [
        ("/", "no-cache"),
        ("/index.html", "no-cache"),
        ("/empty/", "no-cache"),
        ("/style.css", "max-age=3600"),
        ("/logo.png", "max-age=3600"),
        ("/notes.txt", "max-age=3600"),
        ("/fixed/app.js", "max-age=31536000, immutable"),
    ] {
        let (s, head, _) = get(&site, path, "");
        assert_eq!(s, 200, "{path}: {head}");
        assert_eq!(
            head.to_ascii_lowercase().matches("cache-control:").count(),
            1,
            "{path}: one field: {head}"
        );
        assert_eq!(field(&head, "cache-control"), Some(want), "{path}");
        // The 304 that revalidates it carries the same (RFC 9110 15.4.5).
        let etag = field(&head, "etag").unwrap().to_string();
        let (s, head, _) = get(&site, path, &format!("If-None-Match: {etag}\r\n"));
        assert_eq!(
            (s, field(&head, "cache-control")),
            (304, Some(want)),
            "{path}"
        );
    }
    assert_eq!(
        bareweb_site::default_cache_control("TEXT/HTML; charset=utf-8"),
        "no-cache"
    );
    assert_eq!(
        bareweb_site::default_cache_control("image/svg+xml"),
        "max-age=3600"
    );
}
