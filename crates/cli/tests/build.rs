//! `bareweb build` says what it left out and why, warns about an empty site, and reports a
//! bad bareweb.toml with its file and line.

use std::fs;
use std::path::PathBuf;
use std::process::Command;

struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn dir(tag: &str) -> Dir {
    let d = std::env::temp_dir().join(format!("bareweb-cli-build-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    Dir(d)
}

fn build(site: &std::path::Path, out: &std::path::Path) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_bareweb"))
        .arg("build")
        .arg(site)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn build_lists_what_it_skipped_and_why() {
    let d = dir("skip");
    let site = d.0.join("site");
    fs::create_dir_all(site.join(".git")).unwrap();
    fs::create_dir_all(site.join(".well-known")).unwrap();
    fs::write(site.join("index.html"), "hi").unwrap();
    fs::write(site.join(".git/HEAD"), "ref").unwrap();
    fs::write(site.join(".well-known/security.txt"), "Contact: x").unwrap();
    fs::write(d.0.join("outside.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(d.0.join("outside.txt"), site.join("leak.txt")).unwrap();
    std::os::unix::fs::symlink("index.html", site.join("home.html")).unwrap();
    let (code, out, err) = build(&site, &d.0.join("site.bws"));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("skipped .git: hidden"), "{err}");
    assert!(
        err.contains("skipped leak.txt: symbolic link to")
            && err.contains("outside the site: refused"),
        "{err}"
    );
    // index.html, home.html (the link), .well-known/security.txt
    assert!(out.contains(": 3 files,"), "{out}");
}

#[test]
fn an_empty_site_is_said_and_a_bad_config_has_its_line() {
    let d = dir("empty");
    let site = d.0.join("site");
    fs::create_dir_all(&site).unwrap();
    let (code, _, err) = build(&site, &d.0.join("site.bws"));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("has no file to serve"), "{err}");
    fs::write(site.join("index.html"), "hi").unwrap();
    fs::write(
        site.join("bareweb.toml"),
        "[[redirects]]\nfrom = \"/a\"\nto = \"/b\"\nstatus = 200\n",
    )
    .unwrap();
    let (code, _, err) = build(&site, &d.0.join("site.bws"));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("bareweb.toml:4: redirect status 200"), "{err}");
}
