//! HTTP request heads: `http::parse` over arbitrary bytes (as a pipeline: every complete
//! request is answered and parsing resumes after it), and `http::respond` against a fake
//! site, checking what the TCP layer relies on, and that the parser's fast path agrees
//! with the general parser.
#![no_main]

use bareweb_engine::http::{self, Parse};
use bareweb_engine::resource::{block_sums_into, Body, Found, Lookup, Resource};
use libfuzzer_sys::fuzz_target;

const NOW: u64 = 1_700_000_000;

struct Site<'a> {
    page: Resource<'a>,
    text: Resource<'a>,
    empty: Resource<'a>,
}

impl<'a> Lookup<'a> for Site<'a> {
    fn lookup(&self, path: &[u8]) -> Found<'a> {
        // The contract the site relies on: a normalised path.
        assert!(path.starts_with(b"/"));
        assert!(!path.windows(2).any(|w| w == b"//"));
        assert!(!path.split(|&c| c == b'/').any(|s| s == b"." || s == b".."));
        assert!(!path.contains(&0));
        match path {
            b"/" | b"/index.html" | b"/d/" => Found::Resource(self.page),
            b"/a.txt" => Found::Resource(self.text),
            b"/empty" => Found::Resource(self.empty),
            b"/d" => Found::AddSlash,
            _ => Found::NotFound,
        }
    }
}

fn check(resp: &http::Response<'_>, head: &[u8]) {
    assert!(resp.head_len <= head.len());
    let head = &head[..resp.head_len];
    assert!(head.starts_with(b"HTTP/1.1 "));
    let end = head
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("head without an empty line");
    // No bare CR or LF inside the fields.
    for (i, &c) in head[..end].iter().enumerate() {
        if c == b'\r' {
            assert_eq!(head.get(i + 1), Some(&b'\n'));
        }
        if c == b'\n' {
            assert_eq!(head[i - 1], b'\r');
        }
    }
    if let Some(b) = resp.body {
        assert!(b.start < b.end && b.end <= b.body.data.len());
        assert_eq!(end + 4, resp.head_len);
    }
}

fuzz_target!(|data: &[u8]| {
    let page_data: Vec<u8> = (0..700u32).map(|i| (i * 7) as u8).collect();
    let gz_data: Vec<u8> = (0..90u32).map(|i| (i * 13) as u8).collect();
    let mut page_sums = vec![0u8; 2 * Body::blocks_for(page_data.len())];
    let mut gz_sums = vec![0u8; 2 * Body::blocks_for(gz_data.len())];
    block_sums_into(&page_data, &mut page_sums);
    block_sums_into(&gz_data, &mut gz_sums);
    let page = Resource {
        content_type: "text/html; charset=utf-8",
        etag: "\"abc-123\"",
        last_modified: 784_111_777,
        identity: Body {
            data: &page_data,
            block_sums: &page_sums,
        },
        gzip: Some(Body {
            data: &gz_data,
            block_sums: &gz_sums,
        }),
        // The same bytes stand for every coding: the fuzzer exercises the choice.
        br: Some(Body {
            data: &gz_data,
            block_sums: &gz_sums,
        }),
        zstd: None,
        headers: "Cache-Control: no-cache\r\n",
    };
    let site = Site {
        page,
        text: Resource {
            content_type: "text/plain",
            etag: "W/\"t\"",
            gzip: None,
            br: None,
            zstd: None,
            headers: "",
            ..page
        },
        empty: Resource {
            identity: Body {
                data: &[],
                block_sums: &[],
            },
            gzip: None,
            br: None,
            zstd: None,
            headers: "",
            last_modified: NOW + 5,
            ..page
        },
    };

    let mut head = [0u8; http::HEAD_MAX];
    let mut rest = data;
    loop {
        // The fast path for the common request answers as the general parser does.
        assert_eq!(http::parse(rest), http::parse_general(rest));
        match http::parse(rest) {
            Parse::Complete { request, len } => {
                assert!(len > 0 && len <= rest.len() && len <= http::MAX_REQUEST);
                let resp = http::respond(&request, &site, NOW, "bareweb", &mut head);
                check(&resp, &head);
                if resp.close {
                    break;
                }
                rest = &rest[len..];
            }
            Parse::Partial => {
                assert!(rest.len() < http::MAX_REQUEST);
                break;
            }
            Parse::Error(status) => {
                let resp = http::respond_error(status, NOW, "bareweb", &mut head);
                check(&resp, &head);
                assert!(resp.close);
                break;
            }
        }
    }
});
