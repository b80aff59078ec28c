//! Site images: `Site::load`, then lookups and a sum over every body. The checksum is
//! skipped under `cfg(fuzzing)`, so mutations reach the structural checks.
//! Also the configured tables: redirects (patterns and their Location), rewrites, error
//! pages, common headers, switches, the Server setting.
//! Virtual hosts: each site of an image with sites checked the same way, and the site
//! chosen for a few hosts and for the input's last bytes as a `Host` value.
//! Seeds: `crates/engine/src/site/testdata/small.bwsite`, `configured.bwsite` (built by
//! `bareweb build` from a site with a bareweb.toml: listing, headers, redirects, 404 page)
//! and `vhosts.bwsite` (examples/vhosts: two sites, names, a default).
#![no_main]

use std::hint::black_box;

use bareweb_engine::resource::{Chosen, Found, Lookup};
use bareweb_engine::site::Site;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(site) = Site::load(data) else {
        return;
    };
    check(&site);
    for i in 0..site.site_count() {
        let own = site.site(i).expect("a site of the table");
        assert_eq!(own.site_count(), 0);
        check(&own);
    }
    black_box(site.names().count());
    let tail = &data[data.len().saturating_sub(40)..];
    for host in [&b"a.example"[..], b"BLOG.example.:80", b"[::1]", b"", tail] {
        match site.for_host(Some(host)) {
            Chosen::Other(own) => check(&own),
            Chosen::This => assert_eq!(site.site_count(), 0),
            Chosen::Misdirected => assert_eq!(site.default_site(), None),
        }
    }
});

fn check(site: &Site<'_>) {
    let mut acc = 0u64;
    for (path, r) in site.iter_files() {
        black_box((r.content_type, r.etag, r.last_modified, r.headers));
        for body in core::iter::once(r.identity).chain(r.gzip).chain(r.br).chain(r.zstd) {
            assert!(body.is_consistent());
            let len = body.data.len();
            acc += u64::from(body.sum(0, len));
            acc += u64::from(body.sum(len / 3, len - len / 5));
        }
        assert_eq!(site.lookup(path.as_bytes()), Found::Resource(r));
    }
    for path in [
        &b"/"[..],
        b"/index.html",
        b"/docs",
        b"/docs/",
        b"/docs/index.html",
        b"//",
        b"",
        b"x",
        b"/missing",
        b"/old",
        b"/docs/x/y",
        b"/sub/",
        b"/app/route/7",
        b"/blog/a",
        b"/blog/a/b",
    ] {
        if let Found::Resource(r) = site.lookup(path) {
            acc += r.identity.data.len() as u64;
        }
        if let Some(r) = site.redirect(path) {
            acc += r.to.len() as u64 + u64::from(r.status);
            assert!(r.matched <= path.len());
            // The Location, pieces and all (placeholders filled from the path).
            r.location(path, |piece, _| acc += piece.len() as u64);
        }
    }
    for status in [400u16, 404, 405, 500] {
        if let Some(r) = site.error_page(status) {
            acc += r.identity.data.len() as u64;
        }
    }
    black_box((site.common_headers(), site.pages(), site.server_name()));
    black_box((acc, site.len(), site.is_empty(), site.bytes().len()));
}
