//! The server driver over real sockets, talked to by real clients: a std `TcpListener` on
//! 127.0.0.1 runs [`TlsConn`] for each connection (a thread each), with a CA and a P-256
//! certificate made by this test with the `openssl` command; `openssl s_client` and `curl`
//! are the clients. Checks what the clients report: version, suite, group, ALPN, the
//! verified chain, resumption ("Reused"), rejected early data, a refused renegotiation, and
//! bodies byte-exact.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use bareweb_tls::server::sealed_len;
use bareweb_tls::{host, Fatal, Options, TlsServer};

/// A temporary directory with the CA and the server's certificate and key.
fn certs() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(make_certs).clone()
}

fn make_certs() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bareweb-tls-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mk = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/mk.sh");
    let st = Command::new("sh").arg(mk).arg(&dir).status().unwrap();
    assert!(st.success());
    dir
}

/// The body of `/big`: 300 KiB, every byte position distinct enough to catch reordering.
fn big_body() -> Vec<u8> {
    (0..300 * 1024u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect()
}

struct Server {
    port: u16,
    dir: PathBuf,
    /// One line per finished connection: "ok", "closed" or the failure.
    done: mpsc::Receiver<String>,
}

fn start(options: Options) -> Server {
    let dir = certs();
    let read = |f: &str| std::fs::read(dir.join(f)).unwrap();
    let server = TlsServer::new(
        &read("cert.pem"),
        &read("key.pem"),
        &options,
        &host::platform(),
    )
    .unwrap();
    start_with(server)
}

fn start_with(server: TlsServer) -> Server {
    let dir = certs();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, done) = mpsc::channel();
    let big = Arc::new(big_body());
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(sock) = sock else { continue };
            let (server, tx, big) = (server.clone(), tx.clone(), big.clone());
            std::thread::spawn(move || {
                let r = serve(sock, &server, &big);
                let _ = tx.send(r);
            });
        }
    });
    Server { port, dir, done }
}

/// One connection: HTTP/1.1 requests answered until the client closes; `Connection:
/// close` responses end with close_notify.
fn serve(mut sock: TcpStream, server: &TlsServer, big: &[u8]) -> String {
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut conn = server.accept().unwrap();
    let mut buf = vec![0u8; 32 * 1024];
    let mut out = Vec::new();
    let mut plain = Vec::new();
    let mut sealed = Vec::new();
    loop {
        let n = match sock.read(&mut buf) {
            Ok(0) => return "eof".into(),
            Ok(n) => n,
            Err(e) => return format!("read: {e}"),
        };
        out.clear();
        let r = conn.receive(&buf[..n], &mut out, &mut plain);
        if sock.write_all(&out).is_err() {
            return "write failed".into();
        }
        let progress = match r {
            Ok(p) => p,
            Err(Fatal::Protocol(e)) => return format!("fatal: {e:?}"),
            Err(e) => return format!("fatal: {e}"),
        };
        if progress.closed {
            return "closed".into();
        }
        if progress.peer_closed {
            let mut alert = [0u8; 64];
            if let Ok(n) = conn.close(&mut alert) {
                let _ = sock.write_all(&alert[..n]);
            }
            return "peer closed".into();
        }
        while let Some(end) = plain.windows(4).position(|w| w == b"\r\n\r\n") {
            let request: Vec<u8> = plain.drain(..end + 4).collect();
            let path = request
                .split(|&b| b == b' ')
                .nth(1)
                .unwrap_or(b"/")
                .to_vec();
            let body: &[u8] = if path == b"/big" {
                big
            } else {
                b"hello over TLS\n"
            };
            let mut response = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .into_bytes();
            response.extend_from_slice(body);
            // The response, then close_notify (a 2-byte alert record).
            sealed.resize(sealed_len(response.len()) + sealed_len(2), 0);
            let n = conn.encrypt(&response, &mut sealed).unwrap();
            let m = conn.close(&mut sealed[n..]).unwrap();
            sock.write_all(&sealed[..n + m]).unwrap();
            let _ = sock.shutdown(std::net::Shutdown::Write);
        }
    }
}

fn s_client(srv: &Server, args: &[&str], stdin: &[u8]) -> String {
    let port = srv.port.to_string();
    let connect = format!("127.0.0.1:{port}");
    let ca = srv.dir.join("ca.pem");
    let mut child = Command::new("timeout")
        .args([
            "20",
            "openssl",
            "s_client",
            "-connect",
            &connect,
            "-servername",
            "localhost",
        ])
        .arg("-CAfile")
        .arg(&ca)
        .args(["-verify_return_error", "-alpn", "http/1.1"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        for line in stdin.split_inclusive(|&b| b == b'\n') {
            let _ = input.write_all(line);
            std::thread::sleep(Duration::from_millis(300));
        }
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    text
}

const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";

fn expect(text: &str, wanted: &[&str]) {
    for w in wanted {
        assert!(text.contains(w), "{w:?} not in s_client's output:\n{text}");
    }
}

#[test]
fn s_client_every_version_suite_and_group() {
    let srv = start(Options::default());
    let v13 = [
        ("TLS_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256"),
        ("TLS_AES_256_GCM_SHA384", "TLS_AES_256_GCM_SHA384"),
        (
            "TLS_CHACHA20_POLY1305_SHA256",
            "TLS_CHACHA20_POLY1305_SHA256",
        ),
    ];
    let v12 = [
        (
            "ECDHE-ECDSA-AES128-GCM-SHA256",
            "ECDHE-ECDSA-AES128-GCM-SHA256",
        ),
        (
            "ECDHE-ECDSA-AES256-GCM-SHA384",
            "ECDHE-ECDSA-AES256-GCM-SHA384",
        ),
        (
            "ECDHE-ECDSA-CHACHA20-POLY1305",
            "ECDHE-ECDSA-CHACHA20-POLY1305",
        ),
    ];
    for (group, temp_key) in [
        ("X25519", "X25519, 253 bits"),
        ("P-256", "ECDH, prime256v1, 256 bits"),
    ] {
        for (suite, shown) in v13 {
            let text = s_client(
                &srv,
                &[
                    "-tls1_3",
                    "-ciphersuites",
                    suite,
                    "-groups",
                    group,
                    "-ign_eof",
                ],
                GET,
            );
            expect(
                &text,
                &[
                    &format!("New, TLSv1.3, Cipher is {shown}"),
                    &format!("Server Temp Key: {temp_key}"),
                    "ALPN protocol: http/1.1",
                    "Verify return code: 0 (ok)",
                    "HTTP/1.1 200 OK",
                    "hello over TLS",
                ],
            );
        }
        // TLS 1.2 ties the ECDSA certificate's curve to the client's groups (RFC 8422
        // §5.1): P-256 is offered after X25519 for the certificate, X25519 still chosen.
        let groups12 = if group == "X25519" {
            "X25519:P-256"
        } else {
            group
        };
        for (suite, shown) in v12 {
            let text = s_client(
                &srv,
                &["-tls1_2", "-cipher", suite, "-groups", groups12, "-ign_eof"],
                GET,
            );
            expect(
                &text,
                &[
                    &format!("New, TLSv1.2, Cipher is {shown}"),
                    &format!("Server Temp Key: {temp_key}"),
                    "ALPN protocol: http/1.1",
                    "Verify return code: 0 (ok)",
                    "HTTP/1.1 200 OK",
                    "hello over TLS",
                ],
            );
        }
    }
}

#[test]
fn s_client_resumes_with_a_ticket() {
    let srv = start(Options::default());
    for version in ["-tls1_3", "-tls1_2"] {
        let sess = srv.dir.join(format!("sess{version}"));
        let sess = sess.to_str().unwrap();
        let first = s_client(&srv, &[version, "-sess_out", sess, "-ign_eof"], GET);
        expect(&first, &["New, TLSv1.", "hello over TLS"]);
        let second = s_client(&srv, &[version, "-sess_in", sess, "-ign_eof"], GET);
        expect(&second, &["Reused, TLSv1.", "hello over TLS"]);
    }
}

#[test]
fn s_client_early_data_is_rejected_and_renegotiation_refused() {
    let srv = start(Options::default());
    let sess = srv.dir.join("sess-early");
    let sess = sess.to_str().unwrap();
    let early = srv.dir.join("early.txt");
    std::fs::write(&early, GET).unwrap();
    let _ = s_client(&srv, &["-tls1_3", "-sess_out", sess, "-ign_eof"], GET);
    // The client offers 0-RTT only if the ticket allows it; ours never do (0-RTT off), so
    // s_client keeps its early data and resumes without it.
    let text = s_client(
        &srv,
        &[
            "-tls1_3",
            "-sess_in",
            sess,
            "-early_data",
            early.to_str().unwrap(),
        ],
        b"",
    );
    expect(&text, &["Reused, TLSv1.3", "Early data was not sent"]);
    // Renegotiation on TLS 1.2 (`R` on s_client's input): refused, the server survives.
    let text = s_client(&srv, &["-tls1_2"], b"R\n");
    // The server answers no_renegotiation (RFC 5246 §7.2.2); OpenSSL gives up.
    expect(&text, &["RENEGOTIATING", "no renegotiation"]);
    // The server still serves.
    let text = s_client(&srv, &["-tls1_2", "-ign_eof"], GET);
    expect(&text, &["hello over TLS"]);
    // Every connection ended in a close or a reasoned failure: the renegotiating client's
    // handshake_failure alert after our refusal.
    let mut lines = Vec::new();
    while let Ok(line) = srv.done.recv_timeout(Duration::from_secs(5)) {
        lines.push(line);
        if lines.len() == 4 {
            break;
        }
    }
    assert!(
        lines
            .iter()
            .any(|l| l == "fatal: AlertReceived(HandshakeFailure)"),
        "{lines:?}"
    );
}

#[test]
fn curl_fetches_byte_exact() {
    let srv = start(Options::default());
    let url = format!("https://localhost:{}/big", srv.port);
    let resolve = format!("localhost:{}:127.0.0.1", srv.port);
    for extra in [&["--tlsv1.3"][..], &["--tlsv1.2", "--tls-max", "1.2"]] {
        let file = srv.dir.join("big.out");
        let st = Command::new("curl")
            .args([
                "-sS",
                "--max-time",
                "20",
                "--http1.1",
                "--resolve",
                &resolve,
                "--cacert",
            ])
            .arg(srv.dir.join("ca.pem"))
            .args(extra)
            .arg("-o")
            .arg(&file)
            .arg(&url)
            .status()
            .unwrap();
        assert!(st.success(), "curl {extra:?}");
        let got = std::fs::read(&file).unwrap();
        assert!(got == big_body(), "body differs ({} bytes)", got.len());
    }
}

/// `openssl s_client` to `srv` naming `name` and offering `alpn`, verifying nothing; its
/// output.
fn s_client_alpn(srv: &Server, name: &str, alpn: &str) -> String {
    let out = Command::new("timeout")
        .args(["20", "openssl", "s_client", "-connect"])
        .arg(format!("127.0.0.1:{}", srv.port))
        .args(["-servername", name, "-alpn", alpn])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// A TLS-ALPN-01 challenge certificate (RFC 8737) made by the ACME client, and its key.
fn challenge(name: &str) -> (Vec<u8>, Vec<u8>) {
    let mut s = [3u8; 32];
    s[0] = 1;
    let key = bareweb_acme::jose::Key::from_random(&s).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let cert = bareweb_acme::csr::alpn_certificate(&key, name, "token.thumbprint", now).unwrap();
    (cert, key.to_pkcs8())
}

#[test]
fn s_client_gets_the_tls_alpn_01_certificate_for_acme_tls_alone() {
    let dir = certs();
    let read = |f: &str| std::fs::read(dir.join(f)).unwrap();
    let plain = TlsServer::new(
        &read("cert.pem"),
        &read("key.pem"),
        &Options::default(),
        &host::platform(),
    )
    .unwrap();
    let (cert, key) = challenge("acme.test");
    let server = plain.with_acme_challenge("acme.test", &cert, &key).unwrap();
    let srv = start_with(server.clone());
    // acme-tls/1 alone, for the published name: the challenge certificate.
    let t = s_client_alpn(&srv, "acme.test", "acme-tls/1");
    expect(
        &t,
        &["ALPN protocol: acme-tls/1", "CN = bareweb ACME challenge"],
    );
    // http/1.1, or acme-tls/1 among others: the server's own certificate.
    for alpn in ["http/1.1", "acme-tls/1,http/1.1"] {
        let t = s_client_alpn(&srv, "acme.test", alpn);
        expect(&t, &["ALPN protocol: http/1.1"]);
        assert!(!t.contains("bareweb ACME challenge"), "{alpn}: {t}");
    }
    // acme-tls/1 for a name with no challenge: refused.
    let t = s_client_alpn(&srv, "other.test", "acme-tls/1");
    assert!(
        t.contains("alert") && !t.contains("bareweb ACME challenge"),
        "{t}"
    );
    // Withdrawn: refused too, and acme-tls/1 no longer offered.
    let withdrawn = server.without_acme_challenges();
    let offered = &withdrawn.config().alpn_protocols;
    assert!(!offered.contains(&b"acme-tls/1".to_vec()), "{offered:?}");
    let srv = start_with(withdrawn);
    let t = s_client_alpn(&srv, "acme.test", "acme-tls/1");
    assert!(!t.contains("bareweb ACME challenge"), "{t}");
    assert!(t.contains("alert"), "{t}");
    // With no ALPN configured, a challenge out does not turn ordinary clients away.
    let no_alpn = Options {
        alpn: Vec::new(),
        ..Options::default()
    };
    let read = |f: &str| std::fs::read(dir.join(f)).unwrap();
    let bare = TlsServer::new(
        &read("cert.pem"),
        &read("key.pem"),
        &no_alpn,
        &host::platform(),
    )
    .unwrap()
    .with_acme_challenge("acme.test", &cert, &key)
    .unwrap();
    let srv = start_with(bare);
    let t = s_client_alpn(&srv, "localhost", "http/1.1");
    assert!(!t.contains("alert"), "{t}");
    let t = s_client_alpn(&srv, "acme.test", "acme-tls/1");
    expect(&t, &["ALPN protocol: acme-tls/1"]);
}

#[test]
fn with_no_certificate_yet_handshakes_end_in_an_alert_but_challenges_answer() {
    let waiting = TlsServer::awaiting_certificate(&Options::default(), &host::platform()).unwrap();
    assert!(!waiting.has_certificate());
    let srv = start_with(waiting.clone());
    let t = s_client_alpn(&srv, "acme.test", "http/1.1");
    // rustls's alert when no certificate resolves: access_denied (49).
    expect(&t, &["alert access denied"]);
    let (cert, key) = challenge("acme.test");
    let srv = start_with(
        waiting
            .with_acme_challenge("acme.test", &cert, &key)
            .unwrap(),
    );
    let t = s_client_alpn(&srv, "acme.test", "acme-tls/1");
    expect(
        &t,
        &["ALPN protocol: acme-tls/1", "CN = bareweb ACME challenge"],
    );
    // The certificate arrives: it serves, the challenge goes on until withdrawn.
    let dir = certs();
    let read = |f: &str| std::fs::read(dir.join(f)).unwrap();
    let answering = waiting
        .with_acme_challenge("acme.test", &cert, &key)
        .unwrap();
    let held = answering
        .with_certificate(&read("cert.pem"), &read("key.pem"))
        .unwrap();
    assert!(held.has_certificate());
    let srv = start_with(held);
    let t = s_client_alpn(&srv, "localhost", "http/1.1");
    expect(&t, &["ALPN protocol: http/1.1"]);
    assert!(!t.contains("alert access denied"), "{t}");
    let t = s_client_alpn(&srv, "acme.test", "acme-tls/1");
    expect(
        &t,
        &["ALPN protocol: acme-tls/1", "CN = bareweb ACME challenge"],
    );
}
