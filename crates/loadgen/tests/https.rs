//! `load` over HTTPS against real TLS servers on 127.0.0.1, with a test CA and a P-256
//! leaf for `site.test` made by the `openssl` command (tests/support/openssl.rs):
//! `openssl s_server -www` (an independent TLS implementation: TLS 1.3, and 1.2 when it
//! is told to), and a small keep-alive server on rustls (answers with Content-Length, so
//! connections are reused and bursts pipelined). The name has no DNS: every run connects
//! by `--resolve site.test:PORT:127.0.0.1`. Every run is bounded (fetch counts, seconds).
//! Skipped with a message when `openssl` is missing, unless CI is set.

#[path = "support/openssl.rs"]
mod openssl;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;

use bareweb_loadgen::load::tls::client_config;
use bareweb_loadgen::surge::SurgeParams;
use bareweb_loadgen::{parse_url_with, run, Expect, LoadConfig, Mode, Report, Resolve, UrlEntry};
use bareweb_tls::rustls::{self, ServerConfig, ServerConnection, StreamOwned};
use openssl::{have_openssl, Pki, SServer};
use sha2::{Digest, Sha256};

/// A run fetching `paths` from `https://NAME:PORT` (NAME resolved to 127.0.0.1), trusting
/// `cacert`.
fn config(name: &str, port: u16, paths: &[&str], cacert: &Path, mode: Mode) -> LoadConfig {
    let resolve: Resolve = format!("{name}:{port}:127.0.0.1").parse().unwrap();
    let mut urls = Vec::new();
    let mut target = None;
    for p in paths {
        let (t, path) = parse_url_with(
            &format!("https://{name}:{port}{p}"),
            std::slice::from_ref(&resolve),
        )
        .unwrap();
        target = Some(t);
        urls.push(UrlEntry {
            path,
            expect: Vec::new(),
        });
    }
    let mut c = LoadConfig::new(target.unwrap(), urls, mode);
    c.tls = Some(client_config(Some(&std::fs::read(cacert).unwrap())).unwrap());
    c.seconds = 30.0;
    c.timeout = 10.0;
    c
}

fn go(c: &LoadConfig) -> Report {
    let r = run(c, &mut |_| {}).unwrap();
    eprintln!("{}", r.text());
    r
}

/// N fetches over TLS 1.3 from `openssl s_server`, keep-alive asked (s_server answers
/// HTTP/1.0 and closes, so each fetch has its connection and handshake): all good, the
/// report says TLS 1.3 in text and JSON.
#[test]
fn fetches_over_tls13_from_openssl_s_server_are_all_good() {
    if !have_openssl("fetches_over_tls13_from_openssl_s_server_are_all_good") {
        return;
    }
    let pki = Pki::make("tls13");
    let srv = SServer::start(&pki, &[]);
    let mut c = config("site.test", srv.port, &["/"], &pki.ca, Mode::Parallel(4));
    c.keepalive = true;
    c.fetches = 40;
    let r = go(&c);
    assert_eq!((r.fetches_started, r.fetches_ok), (40, 40), "{}", r.text());
    assert_eq!((r.errors_total, r.unfinished), (0, 0));
    assert_eq!(r.status.get(&200), Some(&40));
    assert_eq!(r.scheme, "https");
    let tls = r.tls.as_ref().expect("a TLS section");
    assert_eq!(tls.versions.get("TLS 1.3"), Some(&40), "{tls:?}");
    assert_eq!(tls.handshakes, r.connections);
    assert_eq!(tls.handshake.count, 40);
    assert_eq!(tls.cipher_suites.values().sum::<u64>(), 40);
    assert!(tls.first_error.is_none());
    assert!(r.text().contains("HTTPS over TLS 1.3: 40 handshakes"));
    let json = serde_json::to_string(&r).unwrap();
    assert!(json.contains(r#""scheme":"https""#), "{json}");
    assert!(json.contains(r#""TLS 1.3":40"#), "{json}");
    assert!(r.bytes > 0);
}

/// A server that speaks TLS 1.2 only: TLS 1.2 is negotiated (ECDHE-ECDSA) and said.
#[test]
fn tls12_is_negotiated_with_a_server_that_has_only_it() {
    if !have_openssl("tls12_is_negotiated_with_a_server_that_has_only_it") {
        return;
    }
    let pki = Pki::make("tls12");
    let srv = SServer::start(&pki, &["-tls1_2"]);
    let mut c = config("site.test", srv.port, &["/"], &pki.ca, Mode::Parallel(2));
    c.fetches = 10;
    let r = go(&c);
    assert_eq!((r.fetches_ok, r.errors_total), (10, 0), "{}", r.text());
    let tls = r.tls.as_ref().unwrap();
    assert_eq!(tls.versions.get("TLS 1.2"), Some(&10), "{tls:?}");
    assert!(
        tls.cipher_suites.keys().all(|s| s.contains("ECDHE_ECDSA")),
        "{tls:?}"
    );
    assert!(r.text().contains("HTTPS over TLS 1.2"));
}

/// Roots that did not issue the server's certificate: every fetch fails, of kind `tls`,
/// and the report says the verifier's reason once.
#[test]
fn a_certificate_of_another_ca_fails_as_tls_with_the_reason() {
    if !have_openssl("a_certificate_of_another_ca_fails_as_tls_with_the_reason") {
        return;
    }
    let pki = Pki::make("other-ca");
    let srv = SServer::start(&pki, &[]);
    let mut c = config(
        "site.test",
        srv.port,
        &["/"],
        &pki.other_ca,
        Mode::Parallel(2),
    );
    c.keepalive = true;
    c.fetches = 6;
    let r = go(&c);
    assert_eq!(r.fetches_ok, 0);
    assert_eq!(r.errors.get("tls"), Some(&6), "{}", r.text());
    assert_eq!(r.errors_total, 6);
    let tls = r.tls.as_ref().unwrap();
    assert_eq!(tls.handshakes, 0);
    let why = tls.first_error.as_deref().unwrap();
    assert!(why.contains("UnknownIssuer"), "{why}");
    let text = r.text();
    assert!(text.contains("errors: 6 (tls 6)"), "{text}");
    assert_eq!(
        text.matches("UnknownIssuer").count(),
        1,
        "said once: {text}"
    );
    assert!(text.contains("HTTPS: no TLS handshake completed"), "{text}");
}

/// A name the certificate does not hold (resolved to the same server): kind `tls`, the
/// reason names the name.
#[test]
fn a_name_the_certificate_does_not_hold_fails_as_tls() {
    if !have_openssl("a_name_the_certificate_does_not_hold_fails_as_tls") {
        return;
    }
    let pki = Pki::make("name");
    let srv = SServer::start(&pki, &[]);
    let mut c = config("other.test", srv.port, &["/"], &pki.ca, Mode::Parallel(1));
    c.fetches = 3;
    let r = go(&c);
    assert_eq!(
        (r.fetches_ok, r.errors.get("tls")),
        (0, Some(&3)),
        "{}",
        r.text()
    );
    let why = r.tls.unwrap().first_error.unwrap();
    assert!(
        why.contains("certificate not valid for name \"other.test\""),
        "{why}"
    );
}

const BODY_LEN: usize = 40_000; // three records

fn body(path: &str) -> Vec<u8> {
    (0..BODY_LEN)
        .map(|i| path.as_bytes()[i % path.len()] ^ (i / 7) as u8)
        .collect()
}

/// A keep-alive HTTPS server on rustls (our provider, TLS 1.3 and 1.2), a thread per
/// connection: each request answered in order with its path's body and Content-Length,
/// so pipelined requests all get answers; `Connection: close` honoured.
fn rustls_server(pki: &Pki) -> u16 {
    let platform = bareweb_tls::host::platform();
    let provider = Arc::new(bareweb_tls::provider::provider(platform.random));
    let chain = bareweb_tls::server::parse_chain(&std::fs::read(&pki.cert).unwrap()).unwrap();
    let key = bareweb_tls::server::parse_key(&std::fs::read(&pki.key).unwrap()).unwrap();
    let config = Arc::new(
        ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap(),
    );
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { continue };
            let config = config.clone();
            std::thread::spawn(move || serve_tls(s, config));
        }
    });
    port
}

fn serve_tls(s: TcpStream, config: Arc<ServerConfig>) {
    let _ = s.set_nodelay(true);
    let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(30)));
    let Ok(conn) = ServerConnection::new(config) else {
        return;
    };
    let mut tls = StreamOwned::new(conn, s);
    let mut buf = Vec::new();
    let mut tmp = [0u8; 16384];
    loop {
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let req: Vec<u8> = buf.drain(..end + 4).collect();
            let req = String::from_utf8_lossy(&req).to_string();
            let path = req.split(' ').nth(1).unwrap_or("/").to_string();
            let close = req.contains("Connection: close");
            let b = body(&path);
            let mut resp =
                format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", b.len()).into_bytes();
            resp.extend_from_slice(&b);
            if tls.write_all(&resp).is_err() {
                return;
            }
            if close {
                tls.conn.send_close_notify();
                let _ = tls.flush();
                return;
            }
        }
        match tls.read(&mut tmp) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    }
}

/// Every body checked by length and SHA-256 (it crosses several records).
fn expect_bodies(c: &mut LoadConfig) {
    for u in &mut c.urls {
        let b = body(&u.path);
        u.expect = vec![Expect {
            len: b.len() as u64,
            sha256: Sha256::digest(&b).into(),
        }];
    }
}

/// Over HTTPS as over HTTP: keep-alive reuses connections (one handshake each), a
/// connection per fetch makes one handshake per fetch (rate mode), sessions pipeline their
/// bursts on one connection; every body arrives whole.
#[test]
fn keep_alive_rate_and_pipelined_sessions_over_https() {
    if !have_openssl("keep_alive_rate_and_pipelined_sessions_over_https") {
        return;
    }
    let pki = Pki::make("modes");
    let port = rustls_server(&pki);
    let paths = ["/a", "/b.html", "/c/d"];

    let mut c = config("site.test", port, &paths, &pki.ca, Mode::Parallel(2));
    expect_bodies(&mut c);
    c.keepalive = true;
    c.fetches = 40;
    let r = go(&c);
    assert_eq!((r.fetches_ok, r.errors_total), (40, 0), "{}", r.text());
    assert_eq!(r.bytes, 40 * BODY_LEN as u64);
    assert_eq!(r.connections, 2, "keep-alive: the two connections reused");
    let tls = r.tls.as_ref().unwrap();
    assert_eq!(tls.handshakes, 2);
    assert_eq!(tls.versions.get("TLS 1.3"), Some(&2));

    let mut c = config("site.test", port, &paths, &pki.ca, Mode::Rate(200.0));
    expect_bodies(&mut c);
    c.fetches = 20;
    let r = go(&c);
    assert_eq!((r.fetches_ok, r.errors_total), (20, 0), "{}", r.text());
    assert_eq!(r.connections, 20);
    assert_eq!(r.tls.as_ref().unwrap().handshakes, 20);

    let params = SurgeParams {
        max_burst: 16,
        burst_alpha: 0.5, // big bursts
        session_bursts_mean: 2.0,
        think_k_secs: 0.01,
        think_max_secs: 0.01,
        ..SurgeParams::default()
    };
    let mut c = config(
        "site.test",
        port,
        &paths,
        &pki.ca,
        Mode::Sessions { rate: 50.0, params },
    );
    expect_bodies(&mut c);
    c.sessions = 10;
    let r = go(&c);
    assert_eq!(r.sessions_completed, 10, "{}", r.text());
    assert_eq!(r.errors_total, 0);
    assert_eq!(r.fetches_ok, r.fetches_started);
    assert!(r.fetches > 20, "bursts pipelined: {} fetches", r.fetches);
    assert_eq!(r.connections, 10);
    assert_eq!(r.tls.as_ref().unwrap().handshakes, 10);
}
