//! Response tests against a fake site of hand-made resources.

use core::cell::RefCell;
use std::string::String;
use std::vec::Vec;

use super::*;
use crate::http::{parse, Parse, HEAD_MAX};
use crate::resource::block_sums_into;

mod cache;
mod conditional;

const NOW: u64 = 1_700_000_000; // Tue, 14 Nov 2023 22:13:20 GMT
const LM: u64 = 784_111_777; // Sun, 06 Nov 1994 08:49:37 GMT
const LM_TEXT: &str = "Sun, 06 Nov 1994 08:49:37 GMT";
const DATE_TEXT: &str = "Tue, 14 Nov 2023 22:13:20 GMT";

/// Backing bytes of the fake site's bodies.
struct Store {
    html: Vec<u8>,
    html_sums: Vec<u8>,
    gz: Vec<u8>,
    gz_sums: Vec<u8>,
    txt: Vec<u8>,
    txt_sums: Vec<u8>,
}

impl Store {
    fn new() -> Store {
        fn sums(data: &[u8]) -> Vec<u8> {
            let mut s = std::vec![0u8; 2 * Body::blocks_for(data.len())];
            block_sums_into(data, &mut s);
            s
        }
        let html: Vec<u8> = b"<!DOCTYPE html><title>hi</title><p>hello</p>\n".repeat(7);
        let gz: Vec<u8> = (0..40u8).map(|i| i.wrapping_mul(37)).collect();
        let txt: Vec<u8> = (0..1000u32).map(|i| b'a' + (i % 26) as u8).collect();
        Store {
            html_sums: sums(&html),
            gz_sums: sums(&gz),
            txt_sums: sums(&txt),
            html,
            gz,
            txt,
        }
    }

    fn html(&self) -> Body<'_> {
        Body {
            data: &self.html,
            block_sums: &self.html_sums,
        }
    }

    fn gz(&self) -> Body<'_> {
        Body {
            data: &self.gz,
            block_sums: &self.gz_sums,
        }
    }

    fn txt(&self) -> Body<'_> {
        Body {
            data: &self.txt,
            block_sums: &self.txt_sums,
        }
    }
}

/// `/` and `/index.html`: HTML with a gzip variant. `/a.txt`: text, identity only.
/// `/empty`: empty. `/future`: modified after NOW. `/docs`, `/caf\u{e9}`: directories.
struct Site<'a> {
    html: Resource<'a>,
    txt: Resource<'a>,
    empty: Resource<'a>,
    future: Resource<'a>,
    looked_up: RefCell<Vec<u8>>,
}

impl<'a> Site<'a> {
    fn new(s: &'a Store) -> Site<'a> {
        let html = Resource {
            content_type: "text/html; charset=utf-8",
            etag: "\"5f3a-1c2b\"",
            last_modified: LM,
            identity: s.html(),
            gzip: Some(s.gz()),
            br: None,
            zstd: None,
            headers: "",
        };
        let txt = Resource {
            content_type: "text/plain; charset=utf-8",
            etag: "\"t-1\"",
            last_modified: LM,
            identity: s.txt(),
            gzip: None,
            br: None,
            zstd: None,
            headers: "",
        };
        let empty = Resource {
            content_type: "application/octet-stream",
            etag: "\"e\"",
            last_modified: LM,
            identity: Body {
                data: &[],
                block_sums: &[],
            },
            gzip: None,
            br: None,
            zstd: None,
            headers: "",
        };
        let future = Resource {
            last_modified: NOW + 1000,
            ..txt
        };
        Site {
            html,
            txt,
            empty,
            future,
            looked_up: RefCell::new(Vec::new()),
        }
    }
}

impl<'a> Lookup<'a> for Site<'a> {
    fn lookup(&self, path: &[u8]) -> Found<'a> {
        *self.looked_up.borrow_mut() = path.to_vec();
        match path {
            b"/" | b"/index.html" | b"/docs/" => Found::Resource(self.html),
            b"/a.txt" => Found::Resource(self.txt),
            b"/empty" => Found::Resource(self.empty),
            b"/future" => Found::Resource(self.future),
            b"/docs" | b"/caf\xc3\xa9 x" => Found::AddSlash,
            _ => Found::NotFound,
        }
    }
}

/// A response with its head as text.
struct Got<'a> {
    resp: Response<'a>,
    head: String,
}

impl Got<'_> {
    /// The fields part (up to the empty line).
    fn fields(&self) -> &str {
        let end = self.head.find("\r\n\r\n").expect("no end of head") + 4;
        &self.head[..end]
    }

    /// The inline body after the fields.
    fn inline(&self) -> &str {
        &self.head[self.fields().len()..]
    }

    fn field(&self, name: &str) -> Option<&str> {
        let mut found = None;
        for line in self.fields().split("\r\n").skip(1) {
            if let Some((n, v)) = line.split_once(": ") {
                if n.eq_ignore_ascii_case(name) {
                    assert!(found.is_none(), "{name} twice in {}", self.head);
                    found = Some(v);
                }
            }
        }
        found
    }

    fn status(&self) -> u16 {
        self.resp.status
    }

    /// Checks what holds for every response: a well-formed head, a Content-Length that
    /// matches what follows, and a body slice in bounds.
    fn check(&self, head_only: bool) {
        assert!(self.head.starts_with("HTTP/1.1 "), "{}", self.head);
        let code: u16 = self.head[9..12].parse().unwrap();
        assert_eq!(code, self.resp.status);
        assert!(self.resp.head_len <= HEAD_MAX);
        let cl = self
            .field("Content-Length")
            .map(|v| v.parse::<usize>().unwrap());
        let body_len = self.resp.body.map_or(0, |b| {
            assert!(b.start < b.end && b.end <= b.body.data.len(), "{b:?}");
            b.end - b.start
        });
        if code == 304 {
            assert_eq!(cl, None);
            assert_eq!(self.inline(), "");
            assert!(self.resp.body.is_none());
        } else if head_only {
            assert!(cl.is_some());
            assert_eq!(self.inline(), "");
            assert!(self.resp.body.is_none());
        } else {
            assert_eq!(cl, Some(self.inline().len() + body_len), "{}", self.head);
            assert!(self.resp.body.is_none() || self.inline().is_empty());
        }
        assert_eq!(self.field("Date"), Some(DATE_TEXT));
        assert_eq!(self.field("Server"), Some("bareweb"));
        if self.resp.close {
            assert_eq!(self.field("Connection"), Some("close"));
        } else {
            assert_ne!(self.field("Connection"), Some("close"));
        }
    }

    fn body(&self) -> &[u8] {
        let b = self.resp.body.expect("no body");
        &b.body.data[b.start..b.end]
    }
}

fn respond_to<'a>(site: &Site<'a>, raw: &[u8], head: &mut [u8]) -> Response<'a> {
    let Parse::Complete { request, len } = parse(raw) else {
        panic!("not complete: {:?}", String::from_utf8_lossy(raw));
    };
    assert_eq!(len, raw.len());
    respond(&request, site, NOW, "bareweb", head)
}

fn get<'a>(site: &Site<'a>, raw: &[u8]) -> Got<'a> {
    let mut head = [0xa5u8; HEAD_MAX];
    let resp = respond_to(site, raw, &mut head);
    let head = String::from_utf8(head[..resp.head_len].to_vec()).unwrap();
    let got = Got { resp, head };
    got.check(raw.starts_with(b"HEAD "));
    got
}

/// `GET <target>` over HTTP/1.1 with extra field lines.
fn req(method: &str, target: &str, fields: &[&str]) -> Vec<u8> {
    let mut r = std::format!("{method} {target} HTTP/1.1\r\nHost: h\r\n");
    for f in fields {
        r.push_str(f);
        r.push_str("\r\n");
    }
    r.push_str("\r\n");
    r.into_bytes()
}

#[test]
fn curl_get_root() {
    let store = Store::new();
    let site = Site::new(&store);
    let g = get(
        &site,
        b"GET / HTTP/1.1\r\nHost: 10.0.0.2\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n",
    );
    assert_eq!(
        g.head,
        std::format!(
            "HTTP/1.1 200 OK\r\nDate: {DATE_TEXT}\r\nServer: bareweb\r\n\
             Content-Type: text/html; charset=utf-8\r\nContent-Length: 315\r\n\
             Last-Modified: {LM_TEXT}\r\nETag: \"5f3a-1c2b\"\r\nAccept-Ranges: bytes\r\n\
             Vary: Accept-Encoding\r\n\r\n"
        )
    );
    assert_eq!(g.body(), &store.html[..]);
    assert_eq!(g.resp.body.unwrap().body, store.html());
    assert!(!g.resp.close);
    assert_eq!(&site.looked_up.borrow()[..], b"/");
}

#[test]
fn head_has_get_fields_without_body() {
    let store = Store::new();
    let site = Site::new(&store);
    let g = get(&site, &req("GET", "/a.txt", &[]));
    let h = get(&site, &req("HEAD", "/a.txt", &[]));
    assert_eq!(g.head, h.head);
    assert!(h.resp.body.is_none());
    assert_eq!(g.body(), &store.txt[..]);
    assert_eq!(g.field("Vary"), None);
    assert_eq!(g.field("Content-Type"), Some("text/plain; charset=utf-8"));
}

#[test]
fn python_and_wget_get_identity() {
    let store = Store::new();
    let site = Site::new(&store);
    let g = get(
        &site,
        b"GET /index.html HTTP/1.1\r\nHost: 10.0.0.2\r\nAccept-Encoding: identity\r\n\r\n",
    );
    assert_eq!(g.status(), 200);
    assert_eq!(g.field("Content-Encoding"), None);
    assert_eq!(g.body(), &store.html[..]);
    let g = get(
        &site,
        b"GET /docs/ HTTP/1.1\r\nUser-Agent: Wget/1.21.3\r\nAccept: */*\r\n\
          Accept-Encoding: identity\r\nHost: 10.0.0.2\r\nConnection: Keep-Alive\r\n\r\n",
    );
    assert_eq!(g.status(), 200);
    assert!(!g.resp.close);
}

#[test]
fn gzip_variant() {
    let store = Store::new();
    let site = Site::new(&store);
    let g = get(
        &site,
        &req("GET", "/", &["Accept-Encoding: gzip, deflate, br"]),
    );
    assert_eq!(g.status(), 200);
    assert_eq!(g.field("Content-Encoding"), Some("gzip"));
    assert_eq!(g.field("ETag"), Some("\"5f3a-1c2b-gz\""));
    assert_eq!(g.field("Vary"), Some("Accept-Encoding"));
    assert_eq!(g.field("Content-Length"), Some("40"));
    assert_eq!(g.field("Accept-Ranges"), None);
    assert_eq!(g.body(), &store.gz[..]);
    assert_eq!(g.resp.body.unwrap().body, store.gz());
    // Not acceptable: identity.
    let g = get(&site, &req("GET", "/", &["Accept-Encoding: gzip;q=0, br"]));
    assert_eq!(g.field("Content-Encoding"), None);
    assert_eq!(g.field("ETag"), Some("\"5f3a-1c2b\""));
    assert_eq!(g.field("Vary"), Some("Accept-Encoding"));
    // No gzip variant: identity, no Vary.
    let g = get(&site, &req("GET", "/a.txt", &["Accept-Encoding: gzip"]));
    assert_eq!(g.field("Content-Encoding"), None);
    assert_eq!(g.field("Vary"), None);
    // HEAD sees the same choice.
    let h = get(&site, &req("HEAD", "/", &["Accept-Encoding: *"]));
    assert_eq!(h.field("Content-Encoding"), Some("gzip"));
    assert_eq!(h.field("Content-Length"), Some("40"));
}

#[test]
fn not_found() {
    let store = Store::new();
    let site = Site::new(&store);
    let g = get(&site, &req("GET", "/nope", &[]));
    assert_eq!(g.status(), 404);
    assert!(!g.resp.close);
    assert_eq!(g.field("Content-Type"), Some("text/html; charset=utf-8"));
    assert_eq!(
        g.inline(),
        "<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head>\n\
         <body><h1>404 Not Found</h1></body></html>\n"
    );
    let h = get(&site, &req("HEAD", "/nope", &[]));
    assert_eq!(h.status(), 404);
    assert_eq!(h.fields(), g.fields());
    // Connection: close is kept.
    let g = get(&site, &req("GET", "/nope", &["Connection: close"]));
    assert!(g.resp.close);
}

#[test]
fn methods() {
    let store = Store::new();
    let site = Site::new(&store);
    for m in ["POST", "PUT", "DELETE", "OPTIONS", "TRACE", "PATCH"] {
        let g = get(&site, &req(m, "/", &[]));
        assert_eq!(g.status(), 405, "{m}");
        assert_eq!(g.field("Allow"), Some("GET, HEAD"));
        assert!(!g.resp.close);
        assert!(g.inline().contains("405 Method Not Allowed"));
    }
    let g = get(&site, b"OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n");
    assert_eq!(g.status(), 405);
    let g = get(&site, b"CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n");
    assert_eq!(g.status(), 405);
    // With a body we do not read: answered, then closed.
    let g = get(&site, &req("POST", "/", &["Content-Length: 3"]));
    assert_eq!(g.status(), 405);
    assert!(g.resp.close);
    for m in ["BREW", "PROPFIND", "get"] {
        let g = get(&site, &req(m, "/", &[]));
        assert_eq!(g.status(), 501, "{m}");
        assert!(g.resp.close);
    }
}

#[test]
fn get_with_body_closes() {
    let store = Store::new();
    let site = Site::new(&store);
    for f in ["Content-Length: 5", "Content-Length: 8192"] {
        let g = get(&site, &req("GET", "/a.txt", &[f]));
        assert_eq!(g.status(), 200);
        assert!(g.resp.close);
    }
    // Larger or unbounded content is refused by the parser with 413 (request.rs).
    for f in ["Content-Length: 8193", "Transfer-Encoding: chunked"] {
        let raw = req("GET", "/a.txt", &[f]);
        assert_eq!(parse(&raw), Parse::Error(crate::http::Status(413)));
    }
    let g = get(&site, &req("GET", "/a.txt", &["Content-Length: 0"]));
    assert!(!g.resp.close);
}

#[test]
fn redirects_add_slash() {
    let store = Store::new();
    let site = Site::new(&store);
    let g = get(&site, &req("GET", "/docs", &[]));
    assert_eq!(g.status(), 301);
    assert_eq!(g.field("Location"), Some("/docs/"));
    assert!(!g.resp.close);
    assert!(g.inline().contains("301 Moved Permanently"));
    let g = get(&site, &req("GET", "/docs?a=1&b", &[]));
    assert_eq!(g.field("Location"), Some("/docs/?a=1&b"));
    let g = get(&site, &req("GET", "/x/../docs/.?q", &[]));
    assert_eq!(g.status(), 200); // "/docs/" after normalisation
    let g = get(&site, &req("GET", "/x/../docs?q", &[]));
    assert_eq!(g.field("Location"), Some("/docs/?q"));
    let g = get(&site, &req("GET", "/caf%c3%a9%20x", &[]));
    assert_eq!(g.field("Location"), Some("/caf%C3%A9%20x/"));
    let g = get(&site, &req("GET", "http://h/docs", &[]));
    assert_eq!(g.field("Location"), Some("/docs/"));
    let h = get(&site, &req("HEAD", "/docs", &[]));
    assert_eq!(h.field("Location"), Some("/docs/"));
}

#[test]
fn targets() {
    let store = Store::new();
    let site = Site::new(&store);
    let looked = |t: &str| {
        let g = get(&site, &req("GET", t, &[]));
        (g.status(), site.looked_up.borrow().clone())
    };
    assert_eq!(looked("/../../etc/passwd"), (404, b"/etc/passwd".to_vec()));
    assert_eq!(looked("/a/./b/../c"), (404, b"/a/c".to_vec()));
    assert_eq!(looked("/%2e%2e/%2e%2e/a.txt"), (200, b"/a.txt".to_vec()));
    assert_eq!(looked("/a.txt?x=1#f"), (200, b"/a.txt".to_vec()));
    assert_eq!(looked("http://h/a.txt"), (200, b"/a.txt".to_vec()));
    assert_eq!(looked("HTTP://other/a.txt?q"), (200, b"/a.txt".to_vec()));
    site.looked_up.borrow_mut().clear();
    for bad in ["/%00", "/%zz", "/a%", "*", "h:80", "ftp://h/", "a.txt"] {
        let g = get(&site, &req("GET", bad, &[]));
        assert_eq!(g.status(), 400, "{bad}");
        assert!(g.resp.close);
        assert!(site.looked_up.borrow().is_empty());
    }
    // Decoded path longer than MAX_PATH (the line is still short enough): 414.
    let long = std::format!("/{}", "a".repeat(MAX_PATH));
    let g = get(&site, &req("GET", &long, &[]));
    assert_eq!(g.status(), 414);
    assert!(g.resp.close);
    let fits = std::format!("/{}", "a".repeat(MAX_PATH - 1));
    assert_eq!(get(&site, &req("GET", &fits, &[])).status(), 404);
}

#[test]
fn empty_body() {
    let store = Store::new();
    let site = Site::new(&store);
    let g = get(&site, &req("GET", "/empty", &[]));
    assert_eq!(g.status(), 200);
    assert_eq!(g.field("Content-Length"), Some("0"));
    assert!(g.resp.body.is_none());
    let g = get(&site, &req("GET", "/empty", &["Range: bytes=0-"]));
    assert_eq!(g.status(), 416);
    assert_eq!(g.field("Content-Range"), Some("bytes */0"));
}

#[test]
fn connection_handling() {
    let store = Store::new();
    let site = Site::new(&store);
    let g = get(&site, b"GET /a.txt HTTP/1.0\r\n\r\n");
    assert!(g.resp.close);
    assert_eq!(g.field("Connection"), Some("close"));
    let g = get(
        &site,
        b"GET /a.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    );
    assert!(!g.resp.close);
    assert_eq!(g.field("Connection"), Some("keep-alive"));
    let g = get(
        &site,
        b"GET /nope HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    );
    assert!(!g.resp.close);
    assert_eq!(g.field("Connection"), Some("keep-alive"));
    let g = get(&site, b"GET /a.txt HTTP/1.1\r\nHost: h\r\n\r\n");
    assert_eq!(g.field("Connection"), None);
    let g = get(
        &site,
        b"GET /a.txt HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
    );
    assert!(g.resp.close);
    // 400s from respond close even a keep-alive connection.
    let g = get(&site, b"GET * HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    assert_eq!(g.status(), 400);
    assert!(g.resp.close);
}

#[test]
fn last_modified_is_not_in_the_future() {
    let store = Store::new();
    let site = Site::new(&store);
    let g = get(&site, &req("GET", "/future", &[]));
    assert_eq!(g.field("Last-Modified"), Some(DATE_TEXT));
    let g = get(
        &site,
        &req(
            "GET",
            "/future",
            &["If-Modified-Since: Tue, 14 Nov 2023 22:13:20 GMT"],
        ),
    );
    assert_eq!(g.status(), 304);
}

#[test]
fn without_a_clock() {
    let store = Store::new();
    let site = Site::new(&store);
    let Parse::Complete { request, .. } = parse(b"GET /future HTTP/1.1\r\nHost: h\r\n\r\n") else {
        panic!()
    };
    let mut head = [0u8; HEAD_MAX];
    let resp = respond(&request, &site, 0, "bareweb", &mut head);
    let text = core::str::from_utf8(&head[..resp.head_len]).unwrap();
    assert!(!text.contains("Date:"), "{text}");
    assert!(
        text.contains("Last-Modified: Tue, 14 Nov 2023 22:30:00 GMT\r\n"),
        "{text}"
    );
}

#[test]
fn respond_error_pages() {
    for code in [400u16, 404, 405, 408, 413, 414, 416, 431, 500, 501, 505] {
        let mut head = [0xa5u8; HEAD_MAX];
        let resp = respond_error(Status(code), NOW, "bareweb", &mut head);
        let g = Got {
            resp,
            head: String::from_utf8(head[..resp.head_len].to_vec()).unwrap(),
        };
        g.check(false);
        assert_eq!(g.status(), code);
        assert!(g.resp.close);
        assert!(g.resp.body.is_none());
        let reason = Status(code).reason();
        assert!(!reason.is_empty());
        assert!(g
            .head
            .starts_with(&std::format!("HTTP/1.1 {code} {reason}\r\n")));
        assert!(g
            .inline()
            .contains(&std::format!("<h1>{code} {reason}</h1>")));
        assert_eq!(g.field("Allow").is_some(), code == 405);
    }
    // An unknown code still makes a well-formed response.
    let mut head = [0u8; HEAD_MAX];
    let resp = respond_error(Status(599), NOW, "bareweb", &mut head);
    assert!(head[..resp.head_len].starts_with(b"HTTP/1.1 599 \r\n"));
}

#[test]
fn overflow_fails_safe() {
    let store = Store::new();
    let site = Site::new(&store);
    let raw = req("GET", "/a.txt", &[]);
    // Too small for the head: a bare 500.
    let mut small = [0u8; 120];
    let resp = respond_to(&site, &raw, &mut small);
    assert_eq!(resp.status, 500);
    assert!(resp.close && resp.body.is_none());
    assert_eq!(&small[..resp.head_len], FALLBACK);
    // Too small even for that: nothing, and close.
    let mut tiny = [0u8; 10];
    let resp = respond_to(&site, &raw, &mut tiny);
    assert_eq!((resp.status, resp.head_len, resp.close), (500, 0, true));
    let resp = respond_error(Status::NOT_FOUND, NOW, "bareweb", &mut tiny);
    assert_eq!((resp.status, resp.head_len, resp.close), (500, 0, true));
    let mut none = [0u8; 0];
    let resp = respond_error(Status::NOT_FOUND, NOW, "bareweb", &mut none);
    assert_eq!(resp.head_len, 0);
    // A huge server name.
    let mut head = [0u8; HEAD_MAX];
    let name = "x".repeat(2000);
    let resp = respond_error(Status::NOT_FOUND, NOW, &name, &mut head);
    assert_eq!(resp.status, 500);
    // The longest redirect still fits HEAD_MAX or fails safe: a ~2 KB target of '%'
    // escapes that all need re-escaping.
    let target = std::format!("/docs?{}", "%".repeat(2000 - 20));
    let parsed = req("GET", &target, &[]);
    let Parse::Complete { request, .. } = parse(&parsed) else {
        panic!()
    };
    let resp = respond(&request, &site, NOW, "bareweb", &mut head);
    assert_eq!(resp.status, 500);
}

#[test]
fn field_values_are_sanitised() {
    let store = Store::new();
    let site = Site::new(&store);
    let raw = req("GET", "/nope", &[]);
    let Parse::Complete { request, .. } = parse(&raw) else {
        panic!()
    };
    let mut head = [0u8; HEAD_MAX];
    let resp = respond(
        &request,
        &site,
        NOW,
        "evil\r\nSet-Cookie: x\u{e9}",
        &mut head,
    );
    let text = core::str::from_utf8(&head[..resp.head_len]).unwrap();
    assert!(text.contains("Server: evil??Set-Cookie: x??\r\n"), "{text}");
}

#[test]
fn many_requests_keep_invariants() {
    let store = Store::new();
    let site = Site::new(&store);
    let targets = [
        "/",
        "/a.txt",
        "/empty",
        "/docs",
        "/nope",
        "/%2e%2e/a.txt",
        "*",
        "/%zz",
    ];
    let extras = [
        "Range: bytes=0-0",
        "Range: bytes=-1",
        "Range: bytes=9999-",
        "Accept-Encoding: gzip",
        "If-None-Match: *",
        "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT",
        "If-Range: \"t-1\"",
        "Connection: close",
        "Content-Length: 1",
    ];
    for method in ["GET", "HEAD", "POST", "FOO"] {
        for t in targets {
            for (i, a) in extras.iter().enumerate() {
                for b in &extras[i..] {
                    let fields: &[&str] = if a == b { &[a] } else { &[a, b] };
                    get(&site, &req(method, t, fields));
                }
            }
        }
    }
}
