//! `bareweb get URL -o FILE`: fetch one file and write its body. The URL's scheme picks the
//! protocol ([`Scheme`]); each scheme's fetch is its own function returning the same
//! [`Got`], so the checks (status, size, `--verify`) and the file writing are shared.
//!
//! - `http://HOST[:PORT]/PATH`: HTTP/1.1 over TCP, one request, `Connection: close`,
//!   `Accept-Encoding: identity` (the body written is the file's bytes).
//! - `bwudp://HOST[:PORT]/PATH`: the UDP paper's stateless UDP protocol
//!   (docs/udp-protocol.md) over an ordinary UDP socket, reliable over loss, duplication
//!   and reordering through subsequent GETs (UDP port 80 when none is given).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bareweb_engine::udp::fetch::Timing;
use bareweb_loadgen::parse_url;
use bareweb_loadgen::udp as bwudp;
use sha2::{Digest, Sha256};

#[derive(clap::Args)]
pub struct GetArgs {
    /// What to fetch: http://HOST[:PORT]/PATH or bwudp://HOST[:PORT]/PATH.
    pub url: String,
    /// Write the body to this file (`-`: standard output).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Print the response head on standard error.
    #[arg(short = 'i', long)]
    pub include_head: bool,
    /// Seconds the fetch may go without progress, 0.001 to 600.
    #[arg(long, default_value_t = 10.0, value_parser = parse_timeout)]
    pub timeout: f64,
    /// The status a good response has (as `bareweb load --expect-status`; default: any
    /// 2xx).
    #[arg(long, value_parser = clap::value_parser!(u16).range(100..=599))]
    pub expect_status: Option<u16>,
    /// Check the body's length and SHA-256 against the file the URL's path names under
    /// this directory (as `bareweb load --verify`).
    #[arg(long, value_name = "DIR")]
    pub verify: Option<PathBuf>,
    /// Print the transfer's size and time (bwudp: and its GETs, packets, duplicates,
    /// re-requested packets, timeouts) on standard error.
    #[arg(short, long)]
    pub verbose: bool,
    /// bwudp: seconds before a GET is sent again (doubling per timeout, up to 1 s),
    /// 0.001 to 10.
    #[arg(long, default_value_t = 0.05, value_parser = parse_rto)]
    pub rto: f64,
    /// bwudp: timeouts in a row without a new packet before giving up, 1 to 100.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub tries: u32,
}

fn parse_rto(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.001..=10.0).contains(&v) => Ok(v),
        _ => Err("expected seconds from 0.001 to 10".into()),
    }
}

fn parse_timeout(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.001..=600.0).contains(&v) => Ok(v),
        _ => Err("expected seconds from 0.001 to 600".into()),
    }
}

/// The protocols `get` speaks, by URL scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scheme {
    /// `http://`
    Http,
    /// `bwudp://`
    BwUdp,
}

impl Scheme {
    const ALL: &'static [(&'static str, Scheme)] =
        &[("http", Scheme::Http), ("bwudp", Scheme::BwUdp)];

    fn of(url: &str) -> Result<Scheme, String> {
        let Some((name, _)) = url.split_once("://") else {
            return Err(format!(
                "{url:?} is not a URL (expected SCHEME://HOST/PATH)"
            ));
        };
        Scheme::ALL
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|&(_, s)| s)
            .ok_or_else(|| {
                let known: Vec<String> =
                    Scheme::ALL.iter().map(|(n, _)| format!("{n}://")).collect();
                format!(
                    "{url:?}: bareweb get does not speak {name}:// (it speaks {})",
                    known.join(", ")
                )
            })
    }
}

/// What a fetch brought, whatever the protocol.
struct Got {
    head: Vec<u8>,
    body: Vec<u8>,
    /// A line for `--verbose`.
    summary: String,
}

pub fn get(a: GetArgs) -> Result<(), String> {
    let got = match Scheme::of(&a.url)? {
        Scheme::Http => get_http(&a)?,
        Scheme::BwUdp => get_bwudp(&a)?,
    };
    if a.verbose {
        eprintln!("bareweb: {}", got.summary);
    }
    if a.include_head {
        eprint!("{}", String::from_utf8_lossy(&got.head));
    }
    check(&a.url, &got, a.expect_status)?;
    if let Some(dir) = &a.verify {
        verify(&a.url, dir, &got.body)?;
    }
    if a.output.as_os_str() == "-" {
        std::io::stdout()
            .write_all(&got.body)
            .map_err(|e| format!("standard output: {e}"))
    } else {
        std::fs::write(&a.output, &got.body).map_err(|e| format!("{}: {e}", a.output.display()))
    }
}

/// The expected status (any 2xx if none given), and a Content-Length (when the head has
/// one) equal to the body received.
fn check(url: &str, got: &Got, expect: Option<u16>) -> Result<(), String> {
    let mut fields = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut fields);
    match resp.parse(&got.head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return Err(format!("{url}: the response head is not HTTP")),
    }
    let code = resp.code.unwrap_or(0);
    let good = match expect {
        Some(e) => code == e,
        None => (200..300).contains(&code),
    };
    if !good {
        return Err(format!(
            "{url}: the server answered {code} {}{}",
            resp.reason.unwrap_or(""),
            expect.map_or(String::new(), |e| format!(" (expected {e})"))
        ));
    }
    let length = resp
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("content-length"))
        .and_then(|h| {
            std::str::from_utf8(h.value)
                .ok()?
                .trim()
                .parse::<u64>()
                .ok()
        });
    if let Some(n) = length {
        if n != got.body.len() as u64 {
            return Err(format!(
                "{url}: Content-Length says {n} bytes but {} arrived",
                got.body.len()
            ));
        }
    }
    Ok(())
}

/// The body against the file the URL's path names under `dir` (`index.html` for a path
/// ending in `/`), by length and SHA-256.
fn verify(url: &str, dir: &std::path::Path, body: &[u8]) -> Result<(), String> {
    let path = url
        .split_once("://")
        .and_then(|(_, rest)| rest.find('/').map(|i| &rest[i..]))
        .unwrap_or("/");
    let path = path.split(['?', '#']).next().unwrap_or("/");
    let mut file = dir.join(path.trim_start_matches('/'));
    if path.ends_with('/') {
        file = file.join("index.html");
    }
    let want = std::fs::read(&file).map_err(|e| format!("--verify: {}: {e}", file.display()))?;
    if want.len() != body.len() || Sha256::digest(&want) != Sha256::digest(body) {
        return Err(format!(
            "{url}: the body ({} bytes) is not {} ({} bytes)",
            body.len(),
            file.display(),
            want.len()
        ));
    }
    Ok(())
}

fn get_http(a: &GetArgs) -> Result<Got, String> {
    let (target, path) = parse_url(&a.url)?;
    let timeout = Duration::from_secs_f64(a.timeout);
    let t0 = Instant::now();
    let fail = |e: std::io::Error| format!("{}: {e}", a.url);
    let mut s = TcpStream::connect_timeout(&target.addr.into(), timeout).map_err(fail)?;
    s.set_read_timeout(Some(timeout)).map_err(fail)?;
    s.set_write_timeout(Some(timeout)).map_err(fail)?;
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {}\r\nUser-Agent: bareweb-get\r\nAccept-Encoding: identity\r\nConnection: close\r\n\r\n",
        target.host
    );
    s.write_all(req.as_bytes()).map_err(fail)?;
    let mut all = Vec::new();
    s.read_to_end(&mut all).map_err(fail)?;
    let Some(end) = all.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Err(format!(
            "{}: the connection closed before a whole response head",
            a.url
        ));
    };
    let body = all.split_off(end + 4);
    Ok(Got {
        summary: format!(
            "{} bytes in {:.1} ms from {}",
            body.len(),
            t0.elapsed().as_secs_f64() * 1e3,
            target.addr
        ),
        head: all,
        body,
    })
}

fn get_bwudp(a: &GetArgs) -> Result<Got, String> {
    let (target, path) = bwudp::parse_url(&a.url)?;
    let rto = (a.rto * 1e9) as u64;
    let timing = Timing {
        rto_ns: rto,
        rto_max_ns: rto.max(1_000_000_000),
        tries: a.tries,
    };
    let f = bwudp::fetch(&target, &path, timing).map_err(|e| format!("{}: {e}", a.url))?;
    let c = f.counts;
    Ok(Got {
        summary: format!(
            "{} bytes in {:.1} ms from {}: {} GETs, {} packets, {} duplicates, {} re-requested, {} timeouts, {} bad{}",
            f.body.len(),
            f.elapsed.as_secs_f64() * 1e3,
            target.addr,
            c.gets,
            c.packets,
            c.duplicates,
            c.rerequested,
            c.timeouts,
            c.bad,
            if c.bounded > 0 {
                ", first answer bounded (address not yet proven)"
            } else {
                ""
            },
        ),
        head: f.head,
        body: f.body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes() {
        assert_eq!(Scheme::of("http://h/x"), Ok(Scheme::Http));
        assert_eq!(Scheme::of("HTTP://h/x"), Ok(Scheme::Http));
        assert_eq!(Scheme::of("bwudp://h/x"), Ok(Scheme::BwUdp));
        let e = Scheme::of("ftp://h/x").unwrap_err();
        assert!(
            e.contains("does not speak ftp://") && e.contains("http://, bwudp://"),
            "{e}"
        );
        assert!(Scheme::of("h/x").unwrap_err().contains("not a URL"));
    }

    #[test]
    fn checks_status_and_length() {
        let got = |head: &str, body: &[u8]| Got {
            head: head.as_bytes().to_vec(),
            body: body.to_vec(),
            summary: String::new(),
        };
        let ok = got("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", b"abc");
        assert!(check("u", &ok, None).is_ok());
        assert!(check("u", &ok, Some(404))
            .unwrap_err()
            .contains("expected 404"));
        let nf = got("HTTP/1.1 404 Not Found\r\n\r\n", b"");
        assert!(check("u", &nf, None).unwrap_err().contains("404 Not Found"));
        assert!(check("u", &nf, Some(404)).is_ok());
        let short = got("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n", b"abc");
        assert!(check("u", &short, None)
            .unwrap_err()
            .contains("says 4 bytes"));
    }

    #[test]
    fn fetches_over_http_from_a_local_server() {
        use std::net::TcpListener;
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let t = std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            let mut req = [0u8; 1024];
            let n = c.read(&mut req).unwrap();
            let req = String::from_utf8_lossy(&req[..n]).into_owned();
            c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
                .unwrap();
            req
        });
        let a = GetArgs {
            url: format!("http://127.0.0.1:{port}/a/b.txt"),
            output: "-".into(),
            include_head: false,
            timeout: 5.0,
            expect_status: None,
            verify: None,
            verbose: false,
            rto: 0.05,
            tries: 8,
        };
        let got = get_http(&a).unwrap();
        assert_eq!(got.body, b"hello");
        check(&a.url, &got, None).unwrap();
        let req = t.join().unwrap();
        assert!(
            req.starts_with("GET /a/b.txt HTTP/1.1\r\nHost: 127.0.0.1"),
            "{req}"
        );
        let dir = std::env::temp_dir().join(format!("bareweb-get-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("a")).unwrap();
        std::fs::write(dir.join("a/b.txt"), "hello").unwrap();
        verify(&a.url, &dir, b"hello").unwrap();
        assert!(verify(&a.url, &dir, b"hellO").is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
