//! A client following redirects (`bareweb get --follow`, bareweb-loadgen `http`): the
//! Location of an arbitrary response head, and its resolution against a few URLs (and
//! any text resolved as a Location): never a panic, and every result a URL.
#![no_main]

use bareweb_loadgen::http::{redirect_location, resolve_location};
use libfuzzer_sys::fuzz_target;

const BASES: [&str; 4] = [
    "http://10.0.0.2:8080/a/b.html?q=1",
    "http://h",
    "bwudp://h:81/x/",
    "http://h?a/b#c",
];

fuzz_target!(|data: &[u8]| {
    let text = std::str::from_utf8(data).ok();
    for loc in redirect_location(data).into_iter().chain(text) {
        for base in BASES {
            if let Some(url) = resolve_location(base, loc) {
                assert!(url.contains("://"), "{url}");
            }
        }
    }
});
