//! Virtual hosts from a top-level `bareweb.toml` with `[[sites]]`: each site's own
//! directory and configuration built into one image that answers by `Host`; the
//! configuration's mistakes refused naming file and line.

use std::fs;
use std::path::PathBuf;

use bareweb_engine::http::{self, Parse};
use bareweb_engine::site::Site;
use bareweb_site::{build_dir, Error};

struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("bareweb-vhosts-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
    fn write(&self, rel: &str, data: &str) {
        let p = self.0.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, data).unwrap();
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Status, head and body of `GET target` with `host` (no Host field when `None`, as
/// HTTP/1.0).
fn get(site: &Site<'_>, host: Option<&str>, target: &str) -> (u16, String, String) {
    let req = match host {
        Some(h) => format!("GET {target} HTTP/1.1\r\nHost: {h}\r\n\r\n"),
        None => format!("GET {target} HTTP/1.0\r\n\r\n"),
    };
    let Parse::Complete { request, .. } = http::parse(req.as_bytes()) else {
        panic!("{req:?} does not parse");
    };
    let mut head = [0u8; http::HEAD_MAX];
    let r = http::respond(&request, site, 1_700_000_000, "bareweb", &mut head);
    let text = String::from_utf8_lossy(&head[..r.head_len]).into_owned();
    let (head_only, inline) = text.split_once("\r\n\r\n").unwrap();
    let mut body = inline.as_bytes().to_vec();
    if let Some(b) = r.body {
        body.extend_from_slice(&b.body.data[b.start..b.end]);
    }
    (
        r.status,
        head_only.to_string(),
        String::from_utf8_lossy(&body).into_owned(),
    )
}

const TOP: &str = r#"
[stats]
path = "/.well-known/bw"

[[sites]]
host = "a.example"
aliases = ["www.a.example"]
root = "a"

[[sites]]
host = "B.Example."
root = "sites/b"
default = true
"#;

fn two_sites(tag: &str) -> Dir {
    let d = Dir::new(tag);
    d.write("bareweb.toml", TOP);
    d.write("a/index.html", "site A\n");
    d.write("a/old.html", "old\n");
    d.write(
        "a/bareweb.toml",
        r#"
[[redirects]]
from = "/old.html"
to = "/"

[[headers]]
path = "/*"
set = { "X-Site" = "a" }
"#,
    );
    d.write("sites/b/index.html", "site B\n");
    d.write("sites/b/404.html", "B has no such page\n");
    d.write("sites/b/.hidden", "left out\n");
    d.write("stray.html", "not in any site\n");
    d
}

#[test]
fn each_site_answers_for_its_names_with_its_own_configuration() {
    let d = two_sites("two");
    let built = build_dir(&d.0, None).unwrap();
    assert_eq!(built.files, 4);
    assert!(
        built
            .skipped
            .iter()
            .any(|s| s.path == std::path::Path::new("sites/b/.hidden")),
        "{:?}",
        built.skipped
    );
    let site = Site::load(&built.image).unwrap();
    assert_eq!(site.site_count(), 2);
    assert_eq!(site.pages().stats_path, "/.well-known/bw");

    let (s, head, body) = get(&site, Some("a.example"), "/");
    assert_eq!((s, body.as_str()), (200, "site A\n"));
    assert!(head.contains("X-Site: a"), "{head}");
    let (s, _, body) = get(&site, Some("WWW.A.EXAMPLE:8080"), "/");
    assert_eq!((s, body.as_str()), (200, "site A\n"));
    let (s, head, _) = get(&site, Some("a.example"), "/old.html");
    assert_eq!(s, 301);
    assert!(head.contains("Location: /"), "{head}");
    // b's own 404 page; a's redirect is not b's.
    let (s, _, body) = get(&site, Some("b.example"), "/old.html");
    assert_eq!((s, body.as_str()), (404, "B has no such page\n"));
    // Unknown host and no Host: the default, b.
    for host in [Some("c.example"), None] {
        let (s, _, body) = get(&site, host, "/");
        assert_eq!((s, body.as_str()), (200, "site B\n"), "{host:?}");
    }
    // A file of the top directory is no site's.
    assert_eq!(get(&site, Some("a.example"), "/stray.html").0, 404);
}

#[test]
fn without_a_default_unknown_hosts_get_421() {
    let d = two_sites("nodefault");
    d.write("bareweb.toml", &TOP.replace("default = true", ""));
    let built = build_dir(&d.0, None).unwrap();
    let site = Site::load(&built.image).unwrap();
    let (s, head, _) = get(&site, Some("c.example"), "/");
    assert_eq!(s, 421);
    assert!(
        head.starts_with("HTTP/1.1 421 Misdirected Request"),
        "{head}"
    );
    assert_eq!(get(&site, None, "/").0, 421);
    assert_eq!(get(&site, Some("b.example"), "/").0, 200);
}

/// The configuration error building `d` gives, as printed.
fn config_error(d: &Dir) -> String {
    match build_dir(&d.0, None) {
        Err(Error::Config(e)) => e.to_string(),
        Err(e) => panic!("not a configuration error: {e}"),
        Ok(_) => panic!("built"),
    }
}

#[test]
fn mistakes_are_refused_naming_file_and_line() {
    let d = two_sites("mistakes");
    let file = d.0.join("bareweb.toml");
    let cases: &[(&str, &str, usize)] = &[
        (
            "[[sites]]\nhost = \"a.example\"\nroot = \"a\"\n\n[[sites]]\nhost = \"A.example.\"\nroot = \"sites/b\"\n",
            "host \"a.example\" is already the site's on line 2",
            6,
        ),
        (
            "[[sites]]\nhost = \"a.example\"\nroot = \"a\"\n\n[[sites]]\nhost = \"b.example\"\naliases = [\"www.b.example\", \"a.example\"]\nroot = \"sites/b\"\n",
            "host \"a.example\" is already the site's on line 2",
            7,
        ),
        (
            "[[sites]]\nhost = \"a.example\"\nroot = \"a\"\ndefault = true\n\n[[sites]]\nhost = \"b.example\"\nroot = \"sites/b\"\ndefault = true\n",
            "a second default site: \"a.example\" on line 2 is the default already",
            9,
        ),
        (
            "[[sites]]\nhost = \"a.example\"\nroot = \"missing\"\n",
            "root \"missing\":",
            3,
        ),
        (
            "[[sites]]\nhost = \"a.example\"\nroot = \"..\"\n",
            "is outside",
            3,
        ),
        (
            "[[sites]]\nhost = \"a.example\"\nroot = \".\"\n",
            "is the configuration's own directory",
            3,
        ),
        (
            "[[sites]]\nhost = \"a.example\"\nroot = \"a/index.html\"\n",
            "is not a directory",
            3,
        ),
        (
            "[[sites]]\nhost = \"a.example:8080\"\nroot = \"a\"\n",
            "without a port",
            2,
        ),
        (
            "[[sites]]\nhost = \"caf\u{e9}.example\"\nroot = \"a\"\n",
            "ASCII form (xn--",
            2,
        ),
        (
            "[[sites]]\nhost = \"a example\"\nroot = \"a\"\n",
            "is not a host name",
            2,
        ),
        (
            "[[sites]]\nhost = \"a.example\"\n",
            "missing key `root`",
            1,
        ),
    ];
    for (text, want, line) in cases {
        d.write("bareweb.toml", text);
        let e = config_error(&d);
        let at = format!("{}:{line}: ", file.display());
        assert!(e.starts_with(&at), "{e:?} should start with {at:?}");
        assert!(e.contains(want), "{e:?} should say {want:?}");
    }
}

#[test]
fn settings_belong_where_they_apply() {
    let d = two_sites("placement");
    // Content rules at the top: each site's own file holds them.
    d.write("bareweb.toml", &format!("listing = true\n{TOP}"));
    let e = config_error(&d);
    assert!(
        e.contains("move listing into each site's own bareweb.toml"),
        "{e}"
    );
    // Server-wide settings in a site's file: the top-level file holds them.
    d.write("bareweb.toml", TOP);
    d.write("a/bareweb.toml", "metrics = false\n");
    let e = config_error(&d);
    assert!(
        e.starts_with(
            &d.0.join("a/bareweb.toml")
                .canonicalize()
                .unwrap()
                .display()
                .to_string()
        ),
        "{e}"
    );
    assert!(
        e.contains("metrics is server-wide: set it in the top-level"),
        "{e}"
    );
    // A stats path over a site's files (the page answers on every host).
    d.write("a/bareweb.toml", "");
    d.write("sites/b/.well-known/bw/index.html", "mine");
    let e = config_error(&d);
    assert!(e.contains("[stats] path \"/.well-known/bw\" would take over /.well-known/bw of site \"b.example\""), "{e}");
    assert!(
        e.starts_with(&format!("{}:3: ", d.0.join("bareweb.toml").display())),
        "{e}"
    );
    fs::remove_dir_all(d.0.join("sites/b/.well-known")).unwrap();
    // Sites in a site.
    d.write(
        "a/bareweb.toml",
        "[[sites]]\nhost = \"x.example\"\nroot = \"sub\"\n",
    );
    d.write("a/sub/index.html", "x");
    let e = config_error(&d);
    assert!(e.contains("[[sites]] inside a site"), "{e}");
}
