//! The order against a real CA: Debian's `pebble` (with `pebble-challtestsrv` as its DNS,
//! every name 127.0.0.1) on loopback, validating HTTP-01 for real against an answer
//! server this test runs, rejecting a share of nonces at random as pebble does by
//! default (so `badNonce` is retried for real). The transport is the test's own: rustls's
//! client on our provider over std sockets (the server's will be the engine's TCP). The
//! certificate issued must verify with `openssl verify` against pebble's root. TLS-ALPN-01
//! is answered by our TLS server (`bareweb-tls`, no certificate yet but the challenge's),
//! which then serves the certificate issued to `openssl s_client`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bareweb_acme::jose::Key;
use bareweb_acme::order::{
    retry_after, Answer, ChallengeKind, Client, Config, Entropy, Event, Method, Response,
};
use bareweb_tls::TlsServer;

/// A child killed when the test ends, however it ends.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn need(tool: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "{tool} missing: cargo xtask setup installs it (Debian package pebble)"
    );
}

struct Pebble {
    _dns: Proc,
    _ca: Proc,
    dir: PathBuf,
    port: u16,
    management: u16,
}

/// pebble and its DNS, HTTP-01 validated at `http_port`; its listener's certificate made
/// by openssl in `dir`.
fn pebble(dir: &Path, http_port: u16, tls_port: u16) -> Pebble {
    need("pebble");
    need("pebble-challtestsrv");
    need("openssl");
    let st = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
        ])
        .args(["-nodes", "-days", "2", "-subj", "/CN=pebble"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1"])
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(dir.join("key.pem"))
        .arg("-out")
        .arg(dir.join("cert.pem"))
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let (port, management, dns) = (free_port(), free_port(), free_port());
    let cfg = format!(
        "{{\"pebble\": {{\"listenAddress\": \"127.0.0.1:{port}\", \
         \"managementListenAddress\": \"127.0.0.1:{management}\", \
         \"certificate\": \"{d}/cert.pem\", \"privateKey\": \"{d}/key.pem\", \
         \"httpPort\": {http_port}, \"tlsPort\": {tls}, \"ocspResponderURL\": \"\", \
         \"externalAccountBindingRequired\": false}}}}",
        d = dir.display(),
        tls = tls_port,
    );
    std::fs::write(dir.join("pebble.json"), cfg).unwrap();
    let log = |n: &str| std::fs::File::create(dir.join(n)).unwrap();
    let dns_proc = Proc(
        Command::new("pebble-challtestsrv")
            .args(["-dns01", &format!("127.0.0.1:{dns}")])
            .args(["-management", &format!("127.0.0.1:{}", free_port())])
            .args(["-http01", "", "-https01", "", "-tlsalpn01", ""])
            .args(["-defaultIPv4", "127.0.0.1", "-defaultIPv6", ""])
            .stdout(log("dns.log"))
            .stderr(log("dns.err"))
            .spawn()
            .unwrap(),
    );
    let ca = Proc(
        Command::new("pebble")
            .arg("-config")
            .arg(dir.join("pebble.json"))
            .args(["-dnsserver", &format!("127.0.0.1:{dns}")])
            .env("PEBBLE_VA_NOSLEEP", "1")
            .stdout(log("pebble.log"))
            .stderr(log("pebble.err"))
            .spawn()
            .unwrap(),
    );
    // Up when its port answers.
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "pebble did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    Pebble {
        _dns: dns_proc,
        _ca: ca,
        dir: dir.to_path_buf(),
        port,
        management,
    }
}

/// The test's HTTPS transport: one request per connection, pebble's listener
/// certificate trusted.
struct Https {
    config: Arc<rustls::ClientConfig>,
}

struct Got {
    status: u16,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

impl Https {
    fn new(ca_pem: &Path) -> Https {
        let mut roots = rustls::RootCertStore::empty();
        let pem = std::fs::read(ca_pem).unwrap();
        for c in bareweb_tls::server::parse_chain(&pem).unwrap() {
            roots.add(c).unwrap();
        }
        let platform = bareweb_tls::host::platform();
        let provider = Arc::new(bareweb_tls::provider::provider(platform.random));
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        Https {
            config: Arc::new(config),
        }
    }

    fn send(&self, method: &str, url: &str, body: &[u8]) -> std::io::Result<Got> {
        let rest = url.strip_prefix("https://").unwrap();
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let path = if path.is_empty() { "/" } else { path };
        let sock = TcpStream::connect(authority)?;
        sock.set_read_timeout(Some(Duration::from_secs(10)))?;
        let host = authority.split(':').next().unwrap().to_string();
        let name = rustls::pki_types::ServerName::try_from(host.clone()).unwrap();
        let conn = rustls::ClientConnection::new(self.config.clone(), name).unwrap();
        let mut tls = rustls::StreamOwned::new(conn, sock);
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: bareweb-test\r\n\
             Connection: close\r\nContent-Length: {}\r\n",
            body.len()
        );
        if method == "POST" {
            req.push_str("Content-Type: application/jose+json\r\n");
        }
        req.push_str("\r\n");
        tls.write_all(req.as_bytes())?;
        tls.write_all(body)?;
        let mut r = BufReader::new(tls);
        let mut line = String::new();
        r.read_line(&mut line)?;
        let status: u16 = line.split(' ').nth(1).unwrap_or("0").parse().unwrap_or(0);
        let mut headers = HashMap::new();
        loop {
            line.clear();
            r.read_line(&mut line)?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
            }
        }
        let mut body = Vec::new();
        if method != "HEAD" {
            if headers
                .get("transfer-encoding")
                .is_some_and(|t| t.contains("chunked"))
            {
                loop {
                    line.clear();
                    r.read_line(&mut line)?;
                    let n = usize::from_str_radix(line.trim(), 16).unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    let mut chunk = vec![0; n + 2];
                    r.read_exact(&mut chunk)?;
                    body.extend_from_slice(&chunk[..n]);
                }
            } else if let Some(n) = headers.get("content-length") {
                body.resize(n.parse().unwrap_or(0), 0);
                r.read_exact(&mut body)?;
            } else {
                let _ = r.read_to_end(&mut body);
            }
        }
        Ok(Got {
            status,
            headers,
            body,
        })
    }
}

/// The OS's randomness.
struct OsRandom;

impl Entropy for OsRandom {
    fn fill(&mut self, buf: &mut [u8]) {
        std::fs::File::open("/dev/urandom")
            .unwrap()
            .read_exact(buf)
            .unwrap();
    }
}

/// The HTTP-01 answers this test serves on `port` (as the server will on port 80).
fn answer_server(port: u16) -> Arc<Mutex<HashMap<String, String>>> {
    let answers = Arc::new(Mutex::new(HashMap::<String, String>::new()));
    let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
    let a = answers.clone();
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(mut sock) = sock else { continue };
            let mut r = BufReader::new(sock.try_clone().unwrap());
            let mut line = String::new();
            let _ = r.read_line(&mut line);
            let path = line.split(' ').nth(1).unwrap_or("").to_string();
            loop {
                let mut h = String::new();
                if r.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                    break;
                }
            }
            let token = path
                .strip_prefix("/.well-known/acme-challenge/")
                .unwrap_or("");
            let reply = match a.lock().unwrap().get(token) {
                Some(ka) => format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{ka}",
                    ka.len()
                ),
                None => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_string(),
            };
            let _ = sock.write_all(reply.as_bytes());
        }
    });
    answers
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Runs the order to its certificate, handing each event but the last to `event`; the
/// certificate and its key, the requests made and the badNonce answers among them.
fn drive(
    client: &mut Client,
    https: &Https,
    p: &Pebble,
    mut event: impl FnMut(Event),
) -> (bareweb_acme::chain::Issued, Vec<u8>, u32, u32) {
    let mut rng = OsRandom;
    let mut events = Vec::new();
    let (mut requests, mut bad_nonces) = (0, 0);
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        assert!(
            Instant::now() < deadline,
            "no certificate in 90 s: {:?}",
            client.status()
        );
        match client.poll(now(), &mut events, &mut rng) {
            Some(req) => {
                requests += 1;
                let method = match req.method {
                    Method::Get => "GET",
                    Method::Head => "HEAD",
                    Method::Post => "POST",
                };
                match https.send(method, &req.url, &req.body) {
                    Ok(got) => {
                        let h = |k: &str| got.headers.get(k).map(String::as_str);
                        if got.body.windows(8).any(|w| w == b"badNonce") {
                            bad_nonces += 1;
                        }
                        let r = Response {
                            status: got.status,
                            location: h("location"),
                            replay_nonce: h("replay-nonce"),
                            retry_after: h("retry-after").and_then(|v| retry_after(v, now())),
                            body: &got.body,
                        };
                        client.on_response(&r, now(), &mut events, &mut rng);
                    }
                    Err(e) => {
                        client.on_transport_error(&e.to_string(), now(), &mut events, &mut rng)
                    }
                }
            }
            None => std::thread::sleep(Duration::from_millis(200)),
        }
        for e in events.drain(..) {
            match e {
                Event::Install { issued, key } => return (issued, key, requests, bad_nonces),
                Event::Failed { reason, .. } => panic!(
                    "failed: {reason}\npebble: {}",
                    std::fs::read_to_string(p.dir.join("pebble.log")).unwrap_or_default()
                ),
                other => event(other),
            }
        }
    }
}

/// `openssl verify` of the chain `pem` (leaf, intermediates) against pebble's root, which
/// its management interface gives (written to `dir`/root.pem).
fn verify_with_openssl(p: &Pebble, dir: &Path, pem: &str) {
    let https = Https::new(&dir.join("cert.pem"));
    let root = https
        .send(
            "GET",
            &format!("https://127.0.0.1:{}/roots/0", p.management),
            b"",
        )
        .unwrap();
    assert_eq!(root.status, 200);
    std::fs::write(dir.join("root.pem"), &root.body).unwrap();
    let pems: Vec<&str> = pem.split_inclusive("-----END CERTIFICATE-----\n").collect();
    std::fs::write(dir.join("leaf.pem"), pems[0]).unwrap();
    std::fs::write(dir.join("intermediates.pem"), pems[1..].concat()).unwrap();
    let v = Command::new("openssl")
        .arg("verify")
        .arg("-CAfile")
        .arg(dir.join("root.pem"))
        .arg("-untrusted")
        .arg(dir.join("intermediates.pem"))
        .arg(dir.join("leaf.pem"))
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&v.stdout).into_owned() + &String::from_utf8_lossy(&v.stderr);
    assert!(v.status.success() && text.contains(": OK"), "{text}");
}

/// A scratch directory removed when the test ends, however it ends.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

/// A scratch directory and the order's configuration (its directory URL set once
/// pebble's port is known).
fn setup(kind: ChallengeKind, tag: &str) -> (Scratch, Config) {
    let dir = std::env::temp_dir().join(format!("bareweb-pebble-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir = Scratch(dir);
    let cfg = Config {
        directory: String::new(),
        names: vec!["acme.test".to_string(), "www.acme.test".to_string()],
        contact: vec!["mailto:ops@acme.test".into()],
        challenge: kind,
    };
    (dir, cfg)
}

#[test]
fn pebble_issues_a_certificate_through_http_01() {
    let http_port = free_port();
    let answers = answer_server(http_port);
    let (dir, mut cfg) = setup(ChallengeKind::Http01, "http");
    let p = pebble(&dir, http_port, free_port());
    cfg.directory = format!("https://127.0.0.1:{}/dir", p.port);
    let mut client = Client::new(
        cfg.clone(),
        bareweb_acme::order::fresh_key(&mut OsRandom).unwrap(),
        now(),
    );
    let https = Https::new(&dir.join("cert.pem"));
    let (issued, key, requests, bad_nonces) = drive(&mut client, &https, &p, |e| match e {
        Event::Publish(Answer::Http01 {
            token,
            key_authorization,
        }) => {
            answers.lock().unwrap().insert(token, key_authorization);
        }
        Event::Withdraw => answers.lock().unwrap().clear(),
        other => panic!("{other:?}"),
    });
    assert!(answers.lock().unwrap().is_empty(), "answers withdrawn");
    let status = client.status();
    assert_eq!(status.phase, "idle");
    assert_eq!(status.next, Some(issued.renew_at()));
    assert!(Key::from_pkcs8(&key).is_ok());
    println!(
        "pebble, HTTP-01: certificate for {:?} after {requests} requests ({bad_nonces} \
         badNonce), valid {} s",
        cfg.names,
        issued.not_after - issued.not_before,
    );
    verify_with_openssl(&p, &dir, &issued.pem);
    drop(p);
}

/// The TLS server of this test on pebble's TLS-ALPN-01 port: whatever `TlsServer` the
/// slot holds when a connection comes, driven to the end of its handshake.
fn tls_server(port: u16, slot: Arc<Mutex<TlsServer>>) {
    let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(mut sock) = sock else { continue };
            let server = slot.lock().unwrap().clone();
            std::thread::spawn(move || {
                sock.set_read_timeout(Some(Duration::from_secs(10)))
                    .unwrap();
                let Ok(mut conn) = server.accept() else {
                    return;
                };
                let (mut buf, mut out, mut plain) = (vec![0u8; 16 * 1024], Vec::new(), Vec::new());
                loop {
                    let n = match sock.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    out.clear();
                    let r = conn.receive(&buf[..n], &mut out, &mut plain);
                    if sock.write_all(&out).is_err() || r.is_err() {
                        return;
                    }
                }
            });
        }
    });
}

#[test]
fn pebble_issues_a_certificate_through_tls_alpn_01_and_it_is_served() {
    let tls_port = free_port();
    let (dir, mut cfg) = setup(ChallengeKind::TlsAlpn01, "alpn");
    let p = pebble(&dir, free_port(), tls_port);
    cfg.directory = format!("https://127.0.0.1:{}/dir", p.port);
    let options = bareweb_tls::Options::default();
    let platform = bareweb_tls::host::platform();
    // No certificate yet: every handshake but the challenge's ends in an alert.
    let waiting = TlsServer::awaiting_certificate(&options, &platform).unwrap();
    let slot = Arc::new(Mutex::new(waiting.clone()));
    tls_server(tls_port, slot.clone());
    let mut client = Client::new(
        cfg.clone(),
        bareweb_acme::order::fresh_key(&mut OsRandom).unwrap(),
        now(),
    );
    let https = Https::new(&dir.join("cert.pem"));
    let mut published = 0;
    let (issued, key, requests, bad_nonces) = drive(&mut client, &https, &p, |e| {
        let mut s = slot.lock().unwrap();
        *s = match e {
            Event::Publish(Answer::TlsAlpn01 { name, cert, key }) => {
                published += 1;
                s.with_acme_challenge(&name, &cert, &key).unwrap()
            }
            Event::Withdraw => s.without_acme_challenges(),
            other => panic!("{other:?}"),
        };
    });
    assert_eq!(published, 2, "one answer per name");
    println!("pebble, TLS-ALPN-01: certificate after {requests} requests ({bad_nonces} badNonce)");
    verify_with_openssl(&p, &dir, &issued.pem);
    // Installed: the same server now completes ordinary handshakes with it, and
    // openssl verifies it against pebble's root.
    let key_pem = Key::from_pkcs8(&key).unwrap().to_pkcs8_pem();
    let held = slot
        .lock()
        .unwrap()
        .with_certificate(issued.pem.as_bytes(), key_pem.as_bytes())
        .unwrap();
    *slot.lock().unwrap() = held;
    let out = Command::new("timeout")
        .args(["20", "openssl", "s_client", "-connect"])
        .arg(format!("127.0.0.1:{tls_port}"))
        .args([
            "-servername",
            "www.acme.test",
            "-verify_return_error",
            "-CAfile",
        ])
        .arg(dir.join("root.pem"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("Verify return code: 0 (ok)"), "{text}");
    drop(p);
}
