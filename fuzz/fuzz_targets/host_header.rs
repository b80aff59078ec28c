//! A request's `Host` value, as network input: `site::host_name` (port and trailing dot
//! dropped, IPv6 brackets kept) on arbitrary bytes, then the site chosen for it in an
//! image with virtual hosts (built once: `a.example` with an alias, `b.example`, `[::1]`,
//! `b` the default). Never a panic; the name is a piece of the input, at most 255 bytes;
//! every host gets a site (there is a default); one whose name the table holds gets its own.
#![no_main]

use std::sync::OnceLock;

use bareweb_engine::resource::{Chosen, Found, Lookup};
use bareweb_engine::site::{build_from_files, build_sites, host_name, Site, SiteImage, Spec};
use libfuzzer_sys::fuzz_target;

fn image() -> &'static [u8] {
    static IMAGE: OnceLock<Vec<u8>> = OnceLock::new();
    IMAGE.get_or_init(|| {
        let one = |body: &str| {
            build_from_files(&[("/index.html".into(), body.as_bytes().to_vec(), 0)]).unwrap()
        };
        let site = |names: &[&str], body: &str, default: bool| SiteImage {
            names: names.iter().map(|s| s.to_string()).collect(),
            image: one(body),
            default,
        };
        build_sites(
            &Spec::default(),
            &[
                site(&["a.example", "www.a.example"], "A", false),
                site(&["b.example", "[::1]"], "B", true),
            ],
        )
        .unwrap()
    })
}

fuzz_target!(|data: &[u8]| {
    if let Some(name) = host_name(data) {
        assert!(!name.is_empty() && name.len() <= 255);
        let start = name.as_ptr() as usize - data.as_ptr() as usize;
        assert!(start + name.len() <= data.len());
    }
    let site = Site::load(image()).unwrap();
    let Chosen::Other(own) = site.for_host(Some(data)) else {
        panic!("a default site answers every host");
    };
    let Found::Resource(r) = own.lookup(b"/") else {
        panic!("every site has its index");
    };
    let named_a = host_name(data).is_some_and(|n| {
        n.eq_ignore_ascii_case(b"a.example") || n.eq_ignore_ascii_case(b"www.a.example")
    });
    assert_eq!(r.identity.data == b"A", named_a);
});
