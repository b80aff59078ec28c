//! `load` against a tiny in-process server whose delays and faults are known, so the
//! figures the generator reports can be checked: counts exactly, times within generous
//! bounds (the machine is shared).

use std::io::{Read, Write};
use std::net::{SocketAddrV4, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bareweb_loadgen::surge::SurgeParams;
use bareweb_loadgen::{run, Expect, LoadConfig, Mode, Report, Target, UrlEntry};
use sha2::{Digest, Sha256};

#[derive(Clone, Copy, PartialEq)]
enum Behaviour {
    /// 200 with the body after `delay`.
    Ok,
    /// 404.
    NotFound,
    /// Promise 1000 bytes, send 10, close.
    Truncate,
    /// Read the request, never answer.
    Silent,
    /// Body bytes differ from what `/good` serves (same length).
    WrongBody,
}

struct TestServer {
    addr: SocketAddrV4,
    accepted: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(self.addr); // wake the accept loop
    }
}

const BODY: &[u8] = b"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn server(delay: Duration, behaviour: Behaviour) -> TestServer {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = match l.local_addr().unwrap() {
        std::net::SocketAddr::V4(a) => a,
        _ => unreachable!(),
    };
    let accepted = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (acc, st) = (accepted.clone(), stop.clone());
    std::thread::spawn(move || {
        for s in l.incoming() {
            if st.load(Ordering::Relaxed) {
                return;
            }
            let Ok(s) = s else { continue };
            acc.fetch_add(1, Ordering::Relaxed);
            std::thread::spawn(move || serve_conn(s, delay, behaviour));
        }
    });
    TestServer {
        addr,
        accepted,
        stop,
    }
}

/// Answers each request of a connection in order (so pipelining works), keeping the
/// connection unless the request asked to close it.
fn serve_conn(mut s: TcpStream, delay: Duration, behaviour: Behaviour) {
    let _ = s.set_nodelay(true);
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    loop {
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let req: Vec<u8> = buf.drain(..end + 4).collect();
            let req = String::from_utf8_lossy(&req).to_string();
            let close = req.contains("Connection: close");
            std::thread::sleep(delay);
            let resp: Vec<u8> = match behaviour {
                Behaviour::Ok => {
                    let mut r =
                        format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", BODY.len())
                            .into_bytes();
                    r.extend_from_slice(BODY);
                    r
                }
                Behaviour::WrongBody if req.starts_with("GET /bad ") => {
                    let mut r =
                        format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", BODY.len())
                            .into_bytes();
                    r.extend_from_slice(&BODY[..BODY.len() - 1]);
                    r.push(b'!');
                    r
                }
                Behaviour::WrongBody => {
                    let mut r =
                        format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", BODY.len())
                            .into_bytes();
                    r.extend_from_slice(BODY);
                    r
                }
                Behaviour::NotFound => {
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found".to_vec()
                }
                Behaviour::Truncate => {
                    let _ =
                        s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789");
                    return;
                }
                Behaviour::Silent => {
                    std::thread::sleep(Duration::from_secs(5));
                    return;
                }
            };
            if s.write_all(&resp).is_err() || close {
                return;
            }
        }
        match s.read(&mut tmp) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    }
}

fn config(srv: &TestServer, paths: &[&str], mode: Mode) -> LoadConfig {
    let target = Target {
        addr: std::net::SocketAddr::V4(srv.addr),
        host: srv.addr.to_string(),
        tls_name: None,
    };
    let urls = paths
        .iter()
        .map(|p| UrlEntry {
            path: p.to_string(),
            expect: Vec::new(),
        })
        .collect();
    let mut c = LoadConfig::new(target, urls, mode);
    c.seconds = 20.0;
    c.timeout = 5.0;
    c
}

fn go(c: &LoadConfig) -> Report {
    let r = run(c, &mut |_| {}).unwrap();
    eprintln!("{}", r.text());
    r
}

#[test]
fn parallel_connection_per_fetch_counts_and_times() {
    let srv = server(Duration::from_millis(20), Behaviour::Ok);
    let mut c = config(&srv, &["/a"], Mode::Parallel(4));
    c.fetches = 40;
    let r = go(&c);
    assert_eq!(r.fetches_started, 40);
    assert_eq!(r.fetches, 40);
    assert_eq!(r.fetches_ok, 40);
    assert_eq!(r.errors_total, 0);
    assert_eq!(r.unfinished, 0);
    assert_eq!(r.status.get(&200), Some(&40));
    assert_eq!(r.bytes, 40 * BODY.len() as u64);
    assert_eq!(r.connections, 40);
    assert_eq!(srv.accepted.load(Ordering::Relaxed), 40);
    assert!(
        (1..=4).contains(&r.max_parallel),
        "max parallel {}",
        r.max_parallel
    );
    assert_eq!(r.connect.count, 40);
    assert_eq!(r.first_response.count, 40);
    // The server waits 20 ms before answering: first response is at least that, and not
    // absurdly more. Upper bounds on medians: one fetch a busy machine stalls (CI runs
    // these threads beside other tests) moves a mean or a maximum, not the median.
    assert!(r.first_response.min_ms >= 19.5, "{:?}", r.first_response);
    assert!(
        r.first_response.p50_ms >= 19.5
            && r.first_response.p50_ms < 20.0 + 200.0
            && r.first_response.p99_ms <= r.first_response.max_ms + 1e-9,
        "{:?}",
        r.first_response
    );
    // A connect on loopback is timed alone: well under the server's 20 ms.
    assert!(
        r.connect.p50_ms < 19.5,
        "connect on loopback {:?}",
        r.connect
    );
    // 40 fetches, 4 at a time, 20 ms each: at least 200 ms.
    assert!(r.elapsed_secs >= 0.195, "elapsed {}", r.elapsed_secs);
    assert!(r.fetches_per_sec <= 4.0 / 0.0195 + 1.0);
}

#[test]
fn keep_alive_reuses_connections() {
    let srv = server(Duration::from_millis(2), Behaviour::Ok);
    let mut c = config(&srv, &["/a", "/b", "/c"], Mode::Parallel(2));
    c.keepalive = true;
    c.fetches = 30;
    let r = go(&c);
    assert_eq!(r.fetches_ok, 30);
    assert_eq!(r.connections, 2);
    assert_eq!(srv.accepted.load(Ordering::Relaxed), 2);
    assert_eq!(r.connect.count, 2);
    assert_eq!(r.first_response.count, 30);
    assert!(r.first_response.min_ms >= 1.8);
}

#[test]
fn rate_mode_paces_launches() {
    let srv = server(Duration::ZERO, Behaviour::Ok);
    let mut c = config(&srv, &["/a"], Mode::Rate(50.0));
    c.fetches = 26;
    let r = go(&c);
    assert_eq!(r.fetches_ok, 26);
    // 26 launches at 50/s: the last begins at 0.5 s.
    assert!(
        r.elapsed_secs >= 0.5 && r.elapsed_secs < 2.5,
        "elapsed {}",
        r.elapsed_secs
    );
    assert!(
        r.fetches_per_sec > 10.0 && r.fetches_per_sec <= 52.1,
        "{}",
        r.fetches_per_sec
    );
}

#[test]
fn errors_are_counted_by_kind() {
    let srv = server(Duration::ZERO, Behaviour::NotFound);
    let mut c = config(&srv, &["/x"], Mode::Parallel(3));
    c.fetches = 9;
    let r = go(&c);
    assert_eq!(r.fetches, 9);
    assert_eq!(r.fetches_ok, 0);
    assert_eq!(r.errors.get("bad_status"), Some(&9));
    assert_eq!(r.status.get(&404), Some(&9));

    let srv = server(Duration::ZERO, Behaviour::Truncate);
    let mut c = config(&srv, &["/x"], Mode::Parallel(2));
    c.fetches = 6;
    let r = go(&c);
    assert_eq!(r.errors.get("truncated"), Some(&6));
    assert_eq!(r.fetches, 0);

    // A closed port: every connect is refused.
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let std::net::SocketAddr::V4(closed) = closed else {
        unreachable!()
    };
    let mut c = config(&srv, &["/x"], Mode::Parallel(2));
    c.target.addr = std::net::SocketAddr::V4(closed);
    c.fetches = 5;
    let r = go(&c);
    assert_eq!(r.errors.get("refused"), Some(&5));
    assert_eq!(r.errors_total, 5);
}

#[test]
fn timeouts_and_the_time_bound() {
    let srv = server(Duration::ZERO, Behaviour::Silent);
    let mut c = config(&srv, &["/x"], Mode::Parallel(3));
    c.fetches = 3;
    c.timeout = 0.3;
    let r = go(&c);
    assert_eq!(r.errors.get("response_timeout"), Some(&3));
    assert_eq!(r.timeouts, 3);
    assert!(
        r.elapsed_secs >= 0.29 && r.elapsed_secs < 3.0,
        "{}",
        r.elapsed_secs
    );

    // Time bound: 0.5 s with fetches that never finish: the run ends at its time bound,
    // long before their 30 s timeout (the margin is for a busy machine).
    let mut c = config(&srv, &["/x"], Mode::Parallel(4));
    c.seconds = 0.5;
    c.timeout = 30.0;
    let r = go(&c);
    assert_eq!(r.unfinished, 4);
    assert_eq!(r.fetches, 0);
    assert!((0.5..10.0).contains(&r.elapsed_secs), "{}", r.elapsed_secs);
}

#[test]
fn bodies_are_checked_against_sha256() {
    let srv = server(Duration::ZERO, Behaviour::WrongBody);
    let mut c = config(&srv, &["/good", "/bad"], Mode::Parallel(2));
    let expect = Expect {
        len: BODY.len() as u64,
        sha256: Sha256::digest(BODY).into(),
    };
    for u in &mut c.urls {
        u.expect = vec![expect.clone()];
    }
    c.fetches = 50;
    c.keepalive = true;
    let r = go(&c);
    let bad = *r.errors.get("sha256_mismatch").unwrap_or(&0);
    assert_eq!(r.fetches, 50);
    assert!(bad > 0, "some of 50 random picks hit /bad");
    assert_eq!(r.fetches_ok + bad, 50);
    // The same seed picks the same URLs: the same split again.
    let again = go(&c);
    assert_eq!(again.errors.get("sha256_mismatch"), Some(&bad));
}

#[test]
fn sessions_think_and_pipeline() {
    let srv = server(Duration::ZERO, Behaviour::Ok);
    // Three bursts of one object, 50 ms of think time between them.
    let params = SurgeParams {
        max_burst: 1,
        session_bursts_mean: 1e6,
        max_session_bursts: 3,
        think_k_secs: 0.05,
        think_max_secs: 0.05,
        ..SurgeParams::default()
    };
    let paths: Vec<String> = (0..10).map(|i| format!("/f{i}")).collect();
    let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
    let mut c = config(&srv, &refs, Mode::Sessions { rate: 20.0, params });
    c.sessions = 4;
    let r = go(&c);
    assert_eq!(r.sessions_started, 4);
    assert_eq!(r.sessions_completed, 4);
    assert_eq!(r.fetches_ok, 12);
    assert_eq!(r.connections, 4);
    // Two thinks of 50 ms: at least 100 ms a session, and (median: a session a busy
    // machine stalled moves the maximum) not much more.
    assert!(r.session.min_ms >= 99.0, "{:?}", r.session);
    assert!(r.session.p50_ms < 100.0 + 500.0, "{:?}", r.session);

    // Bursts of up to 16 objects pipelined on one connection: every response is read.
    let params = SurgeParams {
        max_burst: 16,
        burst_alpha: 0.5, // big bursts
        session_bursts_mean: 2.0,
        think_k_secs: 0.01,
        think_max_secs: 0.01,
        ..SurgeParams::default()
    };
    let mut c = config(&srv, &refs, Mode::Sessions { rate: 50.0, params });
    c.sessions = 10;
    let r = go(&c);
    assert_eq!(r.sessions_completed, 10);
    assert_eq!(r.errors_total, 0);
    assert_eq!(r.fetches, r.fetches_started);
    assert!(r.fetches > 20, "bursts pipelined: {} fetches", r.fetches);
    assert_eq!(r.connections, 10);
}

#[test]
fn a_bad_response_fails_its_session() {
    let srv = server(Duration::ZERO, Behaviour::NotFound);
    let params = SurgeParams {
        max_burst: 4,
        burst_alpha: 0.5,
        session_bursts_mean: 3.0,
        think_k_secs: 0.01,
        think_max_secs: 0.01,
        ..SurgeParams::default()
    };
    let mut c = config(&srv, &["/a", "/b"], Mode::Sessions { rate: 50.0, params });
    c.sessions = 5;
    let r = go(&c);
    assert_eq!(r.sessions_started, 5);
    assert_eq!(r.sessions_failed, 5);
    assert_eq!(r.sessions_completed, 0);
    // Every response of the first burst is still read and counted.
    assert_eq!(r.fetches, r.fetches_started);
    assert_eq!(r.errors.get("bad_status"), Some(&r.fetches));
}
