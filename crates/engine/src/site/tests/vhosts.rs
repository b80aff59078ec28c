//! Virtual hosts (std): several sites built into one image with their names, loaded back
//! (round trip), chosen by host as a request's `Host` field gives it, answered by the
//! HTTP layer (421 where no site answers), and forged tables refused.

use super::*;
use crate::http::{self, Parse};
use crate::resource::Chosen;

fn one(body: &str) -> Vec<u8> {
    build_from_files(&[("/index.html".to_string(), body.as_bytes().to_vec(), 0)]).unwrap()
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Sites `a.example` (alias `www.a.example`) and `b.example`, `b` the default when asked.
fn two(default_b: bool) -> Vec<u8> {
    let sites = [
        SiteImage {
            names: names(&["a.example", "www.a.example"]),
            image: one("site A"),
            default: false,
        },
        SiteImage {
            names: names(&["b.example", "[::1]", "10.0.0.1"]),
            image: one("site B"),
            default: default_b,
        },
    ];
    build_sites(&Spec::default(), &sites).unwrap()
}

/// The body `/` answers with on the site chosen for `host`, or `None` for 421.
fn body_for(site: &Site<'_>, host: Option<&[u8]>) -> Option<String> {
    let chosen = match site.for_host(host) {
        Chosen::Other(s) => s,
        Chosen::This => panic!("an image with sites answers by a site"),
        Chosen::Misdirected => return None,
    };
    let Found::Resource(r) = chosen.lookup(b"/") else {
        panic!("no index")
    };
    Some(String::from_utf8(r.identity.data.to_vec()).unwrap())
}

#[test]
fn sites_and_names_round_trip() {
    let image = two(true);
    let site = load_ok(&image);
    assert_eq!(site.site_count(), 2);
    assert_eq!(site.len(), 2, "files of every site");
    assert_eq!(site.default_site(), Some(1));
    let table: Vec<_> = site.names().collect();
    assert_eq!(
        table,
        [
            ("10.0.0.1", 1),
            ("[::1]", 1),
            ("a.example", 0),
            ("b.example", 1),
            ("www.a.example", 0)
        ]
    );
    assert_eq!(site.site(0).unwrap().len(), 1);
    assert!(site.site(2).is_none());
    // The image's own entries answer nothing.
    assert_eq!(site.lookup(b"/"), Found::NotFound);
}

#[test]
fn hosts_choose_their_site_by_name_case_port_and_trailing_dot() {
    let image = two(true);
    let site = load_ok(&image);
    let a = Some("site A".to_string());
    let b = Some("site B".to_string());
    for (host, want) in [
        (&b"a.example"[..], &a),
        (b"A.EXAMPLE", &a),
        (b"a.example:8080", &a),
        (b"www.a.example.", &a),
        (b"WWW.A.Example.:80", &a),
        (b"b.example", &b),
        (b"[::1]:8080", &b),
        (b"10.0.0.1", &b),
        // Unknown, malformed and hostile: the default.
        (b"c.example", &b),
        (b"a.example.com", &b),
        (b"", &b),
        (b"a.example:x", &b),
        (b"[::1", &b),
        (b"\xff\xfe\x00", &b),
    ] {
        assert_eq!(&body_for(&site, Some(host)), want, "{host:?}");
    }
    assert_eq!(body_for(&site, None), b, "no Host (HTTP/1.0)");
    let long = vec![b'a'; 100_000];
    assert_eq!(body_for(&site, Some(&long)), b);
}

#[test]
fn without_a_default_unknown_hosts_get_no_site() {
    let image = two(false);
    let site = load_ok(&image);
    assert_eq!(site.default_site(), None);
    assert_eq!(body_for(&site, Some(b"a.example")), Some("site A".into()));
    assert_eq!(body_for(&site, Some(b"c.example")), None);
    assert_eq!(body_for(&site, None), None);
}

#[test]
fn an_image_of_one_site_answers_every_host_itself() {
    let image = one("only");
    let site = load_ok(&image);
    assert_eq!(site.site_count(), 0);
    for host in [None, Some(&b"x.example"[..]), Some(b"")] {
        assert!(matches!(site.for_host(host), Chosen::This));
    }
}

fn respond(site: &Site<'static>, raw: &[u8]) -> (u16, Vec<u8>) {
    let Parse::Complete { request, .. } = http::parse(raw) else {
        panic!("parse")
    };
    let mut head = [0u8; http::HEAD_MAX];
    let r = http::respond(&request, site, 0, "bareweb", &mut head);
    let mut out = head[..r.head_len].to_vec();
    if let Some(b) = r.body {
        out.extend_from_slice(&b.body.data[b.start..b.end]);
    }
    (r.status, out)
}

#[test]
fn the_http_layer_answers_by_host_and_421_where_no_site_does() {
    let site = Site::load(Box::leak(two(false).into_boxed_slice())).unwrap();
    let (status, out) = respond(&site, b"GET / HTTP/1.1\r\nHost: www.a.example\r\n\r\n");
    assert_eq!(status, 200);
    assert!(out.ends_with(b"site A"));
    let (status, out) = respond(&site, b"GET / HTTP/1.1\r\nHost: b.example:80\r\n\r\n");
    assert_eq!(status, 200);
    assert!(out.ends_with(b"site B"));
    let (status, out) = respond(&site, b"GET / HTTP/1.1\r\nHost: nope.example\r\n\r\n");
    assert_eq!(status, 421);
    assert!(out.starts_with(b"HTTP/1.1 421 Misdirected Request\r\n"));
    let (status, _) = respond(&site, b"GET / HTTP/1.0\r\n\r\n");
    assert_eq!(status, 421);
    // Two Host fields: 400 (RFC 9112 3.2), before any site is chosen.
    let two_hosts = b"GET / HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n";
    assert!(matches!(
        http::parse(two_hosts),
        Parse::Error(http::Status::BAD_REQUEST)
    ));
    // With a default, HTTP/1.0 without Host gets it.
    let site = Site::load(Box::leak(two(true).into_boxed_slice())).unwrap();
    let (status, out) = respond(&site, b"GET / HTTP/1.0\r\n\r\n");
    assert_eq!(status, 200);
    assert!(out.ends_with(b"site B"));
}

#[test]
fn build_sites_refuses_what_a_request_could_not_tell_apart() {
    let site = |n: &[&str], default: bool| SiteImage {
        names: names(n),
        image: one("x"),
        default,
    };
    let err = |sites: &[SiteImage]| {
        build_sites(&Spec::default(), sites)
            .unwrap_err()
            .to_string()
    };
    assert!(err(&[]).contains("without any site"));
    assert!(err(&[site(&[], false)]).contains("no host name"));
    assert!(
        err(&[site(&["a.example"], false), site(&["a.example"], false)])
            .contains("\"a.example\" names sites 0 and 1")
    );
    assert!(err(&[site(&["a"], true), site(&["b"], true)]).contains("both the default"));
    for bad in ["A.example", "a.example.", "a.example:80", "", "caf\u{e9}"] {
        assert!(
            err(&[site(&[bad], false)]).contains("not a lowercase host name"),
            "{bad}"
        );
    }
    let nested = SiteImage {
        names: names(&["n"]),
        image: two(false),
        default: false,
    };
    assert!(err(&[nested]).contains("holds sites itself"));
}

fn forge(image: &[u8], at: usize, bytes: &[u8]) -> Vec<u8> {
    let mut v = image.to_vec();
    v[at..at + bytes.len()].copy_from_slice(bytes);
    reseal(&mut v);
    v
}

#[test]
fn forged_site_and_names_tables_are_refused() {
    let image = two(true);
    let names_off = format::le_u64(&image, header::NAMES_OFF) as usize;
    let sites_off = format::le_u64(&image, header::SITES_OFF) as usize;
    // Names out of order: swap the first two records.
    let mut swapped = image.clone();
    let (a, b) =
        swapped[names_off..names_off + 2 * format::NAME_LEN].split_at_mut(format::NAME_LEN);
    a.swap_with_slice(b);
    reseal(&mut swapped);
    assert!(matches!(
        Site::load(&swapped),
        Err(LoadError::Name { index: 1, .. })
    ));
    // A name naming a site that is not there.
    let bad_site = forge(
        &image,
        names_off + format::name::SITE.start,
        &9u32.to_le_bytes(),
    );
    assert!(matches!(
        Site::load(&bad_site),
        Err(LoadError::Name { index: 0, .. })
    ));
    // A default out of range.
    let bad_default = forge(&image, header::DEFAULT_SITE.start, &2u32.to_le_bytes());
    assert!(matches!(
        Site::load(&bad_default),
        Err(LoadError::Settings(_))
    ));
    // A site's image moved off its place, or cut.
    let off = format::le_u64(&image, sites_off..sites_off + 8);
    let moved = forge(&image, sites_off, &(off + 1).to_le_bytes());
    assert!(matches!(
        Site::load(&moved),
        Err(LoadError::Site { index: 0, .. })
    ));
    let cut = forge(&image, sites_off + 8, &100u64.to_le_bytes());
    assert!(matches!(
        Site::load(&cut),
        Err(LoadError::Site { index: 0, .. })
    ));
    // Sites of a site: refused before its image is read.
    let own = off as usize;
    let nested = forge(&image, own + header::SITE_COUNT.start, &1u32.to_le_bytes());
    assert!(matches!(
        Site::load(&nested),
        Err(LoadError::Site { index: 0, .. })
    ));
    // Names in an image of one site.
    let single = one("x");
    let named = forge(&single, header::NAME_COUNT.start, &1u32.to_le_bytes());
    assert!(Site::load(&named).is_err());
    // Every single-byte corruption of the tables is refused or loads and answers safely.
    for at in sites_off..names_off + 5 * format::NAME_LEN {
        for v in [0u8, 1, 0x7f, 0xff] {
            let f = forge(&image, at, &[v]);
            if let Ok(site) = Site::load(&f) {
                for host in [&b"a.example"[..], b"b.example", b"zz"] {
                    let _ = body_for(&site, Some(host));
                }
            }
        }
    }
}
