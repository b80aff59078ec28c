//! The boot module's trailers (`bareweb_settings::tls_payload`): the kernel splits what a
//! loader gives it into the site image, HTTPS's chain and key and the ACME client's roots.
//! Any bytes: never a panic, every part inside the module, the site its start; what was
//! read, written again by the CLI's writer (both orders), reads the same.
//! Seeds: a site header then no trailer, each trailer alone, both in either order, padding.
#![no_main]

use bareweb_settings::tls_payload::{ca_head, head, split, Split};
use libfuzzer_sys::fuzz_target;

fn inside(module: &[u8], part: &[u8]) -> bool {
    let (m, p) = (module.as_ptr_range(), part.as_ptr_range());
    m.start <= p.start && p.end <= m.end
}

fn write(s: &Split<'_>, ca_first: bool) -> Vec<u8> {
    let mut tls = Vec::new();
    if let Some((cert, key)) = s.pems {
        tls.extend_from_slice(&head(cert.len(), key.len()).unwrap());
        tls.extend_from_slice(cert);
        tls.extend_from_slice(key);
    }
    let mut ca = Vec::new();
    if let Some(roots) = s.ca {
        ca.extend_from_slice(&ca_head(roots.len()).unwrap());
        ca.extend_from_slice(roots);
    }
    let mut m = s.site.to_vec();
    let (a, b) = if ca_first { (ca, tls) } else { (tls, ca) };
    m.extend_from_slice(&a);
    m.extend_from_slice(&b);
    m
}

fuzz_target!(|data: &[u8]| {
    let Ok(s) = split(data) else {
        return;
    };
    assert_eq!(s.site.as_ptr(), data.as_ptr());
    assert!(inside(data, s.site));
    if let Some((cert, key)) = s.pems {
        assert!(inside(data, cert) && inside(data, key));
    }
    if let Some(roots) = s.ca {
        assert!(inside(data, roots));
    }
    if s.site.len() == data.len() {
        return;
    }
    // A site shorter than its own header gets a different header once rewritten.
    if s.site.len() < 24 {
        return;
    }
    for ca_first in [false, true] {
        let m = write(&s, ca_first);
        assert_eq!(split(&m), Ok(s), "ca first: {ca_first}");
    }
});
