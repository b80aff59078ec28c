//! The head cache changes nothing on the wire: every response from `respond_cached`,
//! hit or miss, is byte for byte `respond`'s.

use super::*;

#[test]
fn cached_heads_are_the_rendered_ones() {
    let store = Store::new();
    let site = Site::new(&store);
    let requests = [
        req("GET", "/", &[]),
        req("GET", "/", &["Connection: close"]),
        req("HEAD", "/", &[]),
        req("GET", "/", &["Accept-Encoding: gzip"]),
        req(
            "GET",
            "/index.html",
            &["Accept-Encoding: gzip", "Connection: close"],
        ),
        req("GET", "/a.txt", &[]),
        req("GET", "/a.txt", &["Range: bytes=0-9"]),
        req("GET", "/a.txt", &["If-None-Match: \"t1\""]),
        req("GET", "/empty", &[]),
        req("GET", "/future", &[]),
        req("GET", "/nothing-here", &[]),
        b"GET /a.txt HTTP/1.0\r\n\r\n".to_vec(),
        b"GET /a.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\n".to_vec(),
    ];
    let mut cache = HeadCache::new();
    // Each request several times, in two seconds, interleaved with the others (so entries
    // are replaced and found again).
    for now in [NOW, NOW, NOW + 1, NOW + 1, 0] {
        for raw in &requests {
            let Parse::Complete { request, .. } = parse(raw) else {
                panic!("incomplete");
            };
            let mut want = [0xa5u8; HEAD_MAX];
            let mut got = [0x5au8; HEAD_MAX];
            let a = respond(&request, &site, now, "bareweb", &mut want);
            let b = respond_cached(&request, &site, now, "bareweb", b"", &mut got, &mut cache);
            assert_eq!(a, b, "{}", String::from_utf8_lossy(raw));
            assert_eq!(
                want[..a.head_len],
                got[..b.head_len],
                "{}",
                String::from_utf8_lossy(raw)
            );
        }
    }
    assert!(
        cache.hits > 0 && cache.misses > 0,
        "{} {}",
        cache.hits,
        cache.misses
    );
}

#[test]
fn a_head_that_does_not_fit_is_rendered_as_without_a_cache() {
    let store = Store::new();
    let site = Site::new(&store);
    let raw = req("GET", "/", &[]);
    let Parse::Complete { request, .. } = parse(&raw) else {
        panic!("incomplete");
    };
    let mut cache = HeadCache::new();
    let mut full = [0u8; HEAD_MAX];
    respond_cached(&request, &site, NOW, "bareweb", b"", &mut full, &mut cache);
    // A buffer too small for the cached head: the same bare 500 as `respond` gives.
    let mut small_a = [0u8; 64];
    let mut small_b = [0u8; 64];
    let a = respond(&request, &site, NOW, "bareweb", &mut small_a);
    let b = respond_cached(
        &request,
        &site,
        NOW,
        "bareweb",
        b"",
        &mut small_b,
        &mut cache,
    );
    assert_eq!(a, b);
    assert_eq!(small_a, small_b);
}
