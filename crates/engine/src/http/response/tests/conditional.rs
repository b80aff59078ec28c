//! Conditional requests (If-Match, If-Unmodified-Since, If-None-Match, If-Modified-Since)
//! and byte ranges, with gzip.

use super::*;

#[test]
fn if_none_match() {
    let store = Store::new();
    let site = Site::new(&store);
    let table: &[(&[&str], u16)] = &[
        (&["If-None-Match: \"5f3a-1c2b\""], 304),
        (&["If-None-Match: W/\"5f3a-1c2b\""], 304),
        (&["If-None-Match: \"x\", \"5f3a-1c2b\""], 304),
        (&["If-None-Match: *"], 304),
        (&["If-None-Match: \"5f3a-1c2b-gz\""], 200),
        (&["If-None-Match: \"other\""], 200),
        (&["If-None-Match: garbage"], 200),
        // The gzip variant compares against its own tag.
        (
            &["If-None-Match: \"5f3a-1c2b-gz\"", "Accept-Encoding: gzip"],
            304,
        ),
        (
            &["If-None-Match: \"5f3a-1c2b\"", "Accept-Encoding: gzip"],
            200,
        ),
        // If-None-Match present: If-Modified-Since is ignored, even if it would match.
        (
            &[
                "If-None-Match: \"other\"",
                "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT",
            ],
            200,
        ),
        (&["If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT"], 304),
        (&["If-Modified-Since: Sunday, 06-Nov-94 08:49:37 GMT"], 304),
        (&["If-Modified-Since: Sun Nov  6 08:49:37 1994"], 304),
        (&["If-Modified-Since: Tue, 14 Nov 2023 22:13:20 GMT"], 304),
        (&["If-Modified-Since: Sun, 06 Nov 1994 08:49:36 GMT"], 200),
        (&["If-Modified-Since: Thu, 01 Jan 1970 00:00:00 GMT"], 200),
        (&["If-Modified-Since: not a date"], 200),
        (
            &[
                "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT",
                "If-Modified-Since: x",
            ],
            200,
        ),
    ];
    for &(fields, want) in table {
        for method in ["GET", "HEAD"] {
            let g = get(&site, &req(method, "/", fields));
            assert_eq!(g.status(), want, "{method} {fields:?}");
            if want == 304 {
                assert!(g.resp.body.is_none());
                assert_eq!(g.field("Content-Length"), None);
                assert_eq!(g.field("Content-Type"), None);
                assert_eq!(g.field("Vary"), Some("Accept-Encoding"));
                assert_eq!(g.field("Last-Modified"), Some(LM_TEXT));
                assert!(g.field("ETag").is_some());
                assert!(!g.resp.close);
            }
        }
    }
    let g = get(
        &site,
        &req(
            "GET",
            "/",
            &["If-None-Match: \"5f3a-1c2b-gz\"", "Accept-Encoding: gzip"],
        ),
    );
    assert_eq!(g.field("ETag"), Some("\"5f3a-1c2b-gz\""));
}

#[test]
fn ranges() {
    let store = Store::new();
    let site = Site::new(&store);
    let txt = &store.txt[..];
    type Row<'a> = (&'a [&'a str], u16, Option<(usize, usize)>);
    let table: &[Row<'_>] = &[
        (&["Range: bytes=0-9"], 206, Some((0, 10))),
        (&["Range: bytes=990-"], 206, Some((990, 1000))),
        (&["Range: bytes=-10"], 206, Some((990, 1000))),
        (&["Range: bytes=-5000"], 206, Some((0, 1000))),
        (&["Range: bytes=500-5000"], 206, Some((500, 1000))),
        (&["Range: bytes=999-999"], 206, Some((999, 1000))),
        (&["Range: bytes=1000-"], 416, None),
        (&["Range: bytes=1000-2000"], 416, None),
        (&["Range: bytes=-0"], 416, None),
        (&["Range: bytes=0-1,5-6"], 200, Some((0, 1000))),
        (&["Range: bytes=5-1"], 200, Some((0, 1000))),
        (&["Range: lines=1-2"], 200, Some((0, 1000))),
        (&["Range: bytes=x"], 200, Some((0, 1000))),
        (
            &["Range: bytes=0-1", "Range: bytes=0-1"],
            200,
            Some((0, 1000)),
        ),
        // If-Range: strong etag match, weak never, date exactly equal.
        (
            &["Range: bytes=0-9", "If-Range: \"t-1\""],
            206,
            Some((0, 10)),
        ),
        (
            &["Range: bytes=0-9", "If-Range: W/\"t-1\""],
            200,
            Some((0, 1000)),
        ),
        (
            &["Range: bytes=0-9", "If-Range: \"t-2\""],
            200,
            Some((0, 1000)),
        ),
        (
            &[
                "Range: bytes=0-9",
                "If-Range: Sun, 06 Nov 1994 08:49:37 GMT",
            ],
            206,
            Some((0, 10)),
        ),
        (
            &[
                "Range: bytes=0-9",
                "If-Range: Sun, 06 Nov 1994 08:49:38 GMT",
            ],
            200,
            Some((0, 1000)),
        ),
        (
            &["Range: bytes=0-9", "If-Range: junk"],
            200,
            Some((0, 1000)),
        ),
        (
            &["Range: bytes=5000-", "If-Range: \"t-2\""],
            200,
            Some((0, 1000)),
        ),
        // Preconditions come first.
        (&["Range: bytes=0-9", "If-None-Match: \"t-1\""], 304, None),
        (&["Range: bytes=5000-", "If-None-Match: \"t-1\""], 304, None),
        (
            &["Range: bytes=0-9", "If-None-Match: \"t-0\""],
            206,
            Some((0, 10)),
        ),
    ];
    for &(fields, want, slice) in table {
        let g = get(&site, &req("GET", "/a.txt", fields));
        assert_eq!(g.status(), want, "{fields:?}");
        match slice {
            Some((a, z)) => assert_eq!(g.body(), &txt[a..z], "{fields:?}"),
            None => assert!(g.resp.body.is_none()),
        }
        if want == 206 {
            let (a, z) = slice.unwrap();
            let cr = std::format!("bytes {a}-{}/1000", z - 1);
            assert_eq!(g.field("Content-Range"), Some(cr.as_str()));
            assert_eq!(
                g.field("Content-Length"),
                Some((z - a).to_string().as_str())
            );
            assert_eq!(g.field("Accept-Ranges"), Some("bytes"));
        }
        if want == 416 {
            assert_eq!(g.field("Content-Range"), Some("bytes */1000"));
            assert!(!g.resp.close);
            assert!(g.inline().contains("416 Range Not Satisfiable"));
        }
        if want == 200 {
            assert_eq!(g.field("Content-Range"), None);
        }
        // HEAD ignores Range (RFC 9110 14.2).
        let h = get(&site, &req("HEAD", "/a.txt", fields));
        assert_eq!(
            h.status(),
            if want == 304 { 304 } else { 200 },
            "HEAD {fields:?}"
        );
    }
}

#[test]
fn ranges_and_gzip() {
    let store = Store::new();
    let site = Site::new(&store);
    // A honoured range selects the identity body even if gzip is accepted.
    let g = get(
        &site,
        &req("GET", "/", &["Range: bytes=0-3", "Accept-Encoding: gzip"]),
    );
    assert_eq!(g.status(), 206);
    assert_eq!(g.body(), &store.html[..4]);
    assert_eq!(g.field("Content-Encoding"), None);
    assert_eq!(g.field("ETag"), Some("\"5f3a-1c2b\""));
    assert_eq!(g.field("Vary"), Some("Accept-Encoding"));
    assert_eq!(g.field("Content-Range"), Some("bytes 0-3/315"));
    // A partial gzip download resumed with its tag: the tags differ, send all (gzip).
    let g = get(
        &site,
        &req(
            "GET",
            "/",
            &[
                "Range: bytes=10-",
                "If-Range: \"5f3a-1c2b-gz\"",
                "Accept-Encoding: gzip",
            ],
        ),
    );
    assert_eq!(g.status(), 200);
    assert_eq!(g.field("Content-Encoding"), Some("gzip"));
    assert_eq!(g.body(), &store.gz[..]);
    // Unsatisfiable against the identity length.
    let g = get(
        &site,
        &req("GET", "/", &["Range: bytes=400-", "Accept-Encoding: gzip"]),
    );
    assert_eq!(g.status(), 416);
    assert_eq!(g.field("Content-Range"), Some("bytes */315"));
    assert_eq!(g.field("Vary"), Some("Accept-Encoding"));
}

#[test]
fn if_match_and_if_unmodified_since() {
    let store = Store::new();
    let site = Site::new(&store);
    let table: &[(&[&str], u16)] = &[
        (&["If-Match: \"5f3a-1c2b\""], 200),
        (&["If-Match: \"other\""], 412),
        (&["If-Match: \"x\", \"5f3a-1c2b\""], 200),
        (&["If-Match: *"], 200),
        // Strong comparison: a weak tag never matches.
        (&["If-Match: W/\"5f3a-1c2b\""], 412),
        (&["If-Match: garbage"], 412),
        // The gzip variant compares against its own tag.
        (
            &["If-Match: \"5f3a-1c2b-gz\"", "Accept-Encoding: gzip"],
            200,
        ),
        (&["If-Match: \"5f3a-1c2b\"", "Accept-Encoding: gzip"], 412),
        (&["If-Unmodified-Since: Sun, 06 Nov 1994 08:49:36 GMT"], 412),
        (&["If-Unmodified-Since: Sun, 06 Nov 1994 08:49:37 GMT"], 200),
        (&["If-Unmodified-Since: Tue, 14 Nov 2023 22:13:20 GMT"], 200),
        (&["If-Unmodified-Since: not a date"], 200),
        (
            &[
                "If-Unmodified-Since: Sun, 06 Nov 1994 08:49:36 GMT",
                "If-Unmodified-Since: x",
            ],
            200,
        ),
        // Both: If-Match decides, If-Unmodified-Since is not evaluated.
        (
            &[
                "If-Match: \"5f3a-1c2b\"",
                "If-Unmodified-Since: Sun, 06 Nov 1994 08:49:36 GMT",
            ],
            200,
        ),
        (
            &[
                "If-Match: \"other\"",
                "If-Unmodified-Since: Tue, 14 Nov 2023 22:13:20 GMT",
            ],
            412,
        ),
        // A failed If-Match wins over If-None-Match and Range; a passed one lets them act.
        (&["If-Match: \"other\"", "If-None-Match: *"], 412),
        (&["If-Match: *", "If-None-Match: *"], 304),
        (&["If-Match: \"other\"", "Range: bytes=0-3"], 412),
        (
            &[
                "If-Unmodified-Since: Sun, 06 Nov 1994 08:49:36 GMT",
                "Range: bytes=0-3",
            ],
            412,
        ),
        (&["If-Match: \"5f3a-1c2b\"", "Range: bytes=0-3"], 206),
    ];
    for &(fields, want) in table {
        for method in ["GET", "HEAD"] {
            let g = get(&site, &req(method, "/", fields));
            let want = if method == "HEAD" && want == 206 {
                200
            } else {
                want
            };
            assert_eq!(g.status(), want, "{method} {fields:?}");
            if want == 412 {
                assert!(g.resp.body.is_none());
                assert_eq!(g.field("Content-Range"), None);
                assert!(g.field("Content-Type").unwrap().starts_with("text/html"));
                assert!(!g.resp.close, "412 keeps the connection");
                let len: u64 = g.field("Content-Length").unwrap().parse().unwrap();
                assert!(len > 0);
                if method == "GET" {
                    assert_eq!(g.resp.content_len, len, "the small built-in page");
                }
            }
        }
    }
}
