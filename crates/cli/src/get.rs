//! `bareweb get URL [-o FILE]`: fetch one file and write its body (to the file the URL's
//! last path segment names, as `wget` and `curl -O` do, unless `-o` says otherwise; `-o -`
//! is standard output). The URL's scheme picks the protocol ([`Scheme`]); each scheme's
//! fetch is its own function returning the same [`Got`], so the checks (status, size,
//! `--verify`), redirects (`--follow`) and the file writing are shared.
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
use bareweb_loadgen::http::{redirect_location, resolve_location};
use bareweb_loadgen::parse_url;
use bareweb_loadgen::udp as bwudp;
use sha2::{Digest, Sha256};

#[derive(clap::Args)]
pub struct GetArgs {
    /// What to fetch: http://HOST[:PORT]/PATH or bwudp://HOST[:PORT]/PATH.
    pub url: String,
    /// Write the body to this file (`-`: standard output) [default: the URL's last path
    /// segment, percent-decoded, or index.html for a path ending in `/`, in the current
    /// directory, as wget and curl -O name it]
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Follow redirects (301, 302, 303, 307, 308 and their Location), at most 10.
    #[arg(short = 'L', long)]
    pub follow: bool,
    /// Print the response head on standard error.
    #[arg(short = 'i', long)]
    pub include_head: bool,
    /// Seconds the fetch may go without progress, 0.001 to 600.
    #[arg(long, default_value_t = 10.0, value_parser = parse_timeout)]
    pub timeout: f64,
    /// The status a good response has (as `bareweb load --expect-status`; with --follow,
    /// the last response's).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u16).range(100..=599))]
    pub expect_status: u16,
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

/// Most redirects `--follow` takes (curl's and wget's defaults are 50 and 20; a static
/// site needs one or two).
const MAX_REDIRECTS: usize = 10;

pub fn get(a: GetArgs) -> Result<(), String> {
    // Where the body goes is known before anything is fetched.
    let output = match &a.output {
        Some(o) => o.clone(),
        None => default_output(&a.url)?,
    };
    let mut url = a.url.clone();
    let mut hops = 0;
    let got = loop {
        let got = match Scheme::of(&url)? {
            Scheme::Http => get_http(&url, &a)?,
            Scheme::BwUdp => get_bwudp(&url, &a)?,
        };
        if a.verbose {
            eprintln!("bareweb: {}", got.summary);
        }
        if a.include_head {
            eprint!("{}", String::from_utf8_lossy(&got.head));
        }
        match redirect_location(&got.head).filter(|_| a.follow) {
            Some(_) if hops == MAX_REDIRECTS => {
                return Err(format!(
                    "{}: more than {MAX_REDIRECTS} redirects (the last to {url})",
                    a.url
                ))
            }
            Some(location) => {
                let next = resolve_location(&url, location)
                    .ok_or_else(|| format!("{url}: cannot follow Location {location:?}"))?;
                Scheme::of(&next)?;
                if a.verbose {
                    eprintln!("bareweb: redirected to {next}");
                }
                url = next;
                hops += 1;
            }
            None => break got,
        }
    };
    check(&url, &got, a.expect_status)?;
    if let Some(dir) = &a.verify {
        verify(&url, dir, &got.body)?;
    }
    if output.as_os_str() == "-" {
        std::io::stdout()
            .write_all(&got.body)
            .map_err(|e| format!("standard output: {e}"))
    } else {
        std::fs::write(&output, &got.body).map_err(|e| format!("{}: {e}", output.display()))?;
        if a.output.is_none() {
            eprintln!(
                "bareweb: {} bytes written to {}",
                got.body.len(),
                output.display()
            );
        }
        Ok(())
    }
}

/// The path of `url` (after the authority, `/` if none), without its query or fragment.
fn url_path(url: &str) -> &str {
    let path = url
        .split_once("://")
        .and_then(|(_, rest)| rest.find('/').map(|i| &rest[i..]))
        .unwrap_or("/");
    path.split(['?', '#']).next().unwrap_or("/")
}

/// The file `get` writes when no `-o` is given: the URL path's last segment,
/// percent-decoded, or `index.html` when the path ends in `/` (wget's rule; curl -O has
/// no name then). A segment that cannot be a file name here is refused.
fn default_output(url: &str) -> Result<PathBuf, String> {
    use std::os::unix::ffi::OsStringExt;
    let last = url_path(url).rsplit('/').next().unwrap_or("");
    if last.is_empty() {
        return Ok(PathBuf::from("index.html"));
    }
    let name = crate::util::percent_decode(last);
    if name.contains(&b'/') || name.contains(&0) || name == b"." || name == b".." {
        return Err(format!(
            "{url}: its last path segment is no file name to write to: give -o FILE (or -o - for standard output)"
        ));
    }
    Ok(PathBuf::from(std::ffi::OsString::from_vec(name)))
}

/// The expected status, and a Content-Length (when the head has one) equal to the body
/// received.
fn check(url: &str, got: &Got, expect: u16) -> Result<(), String> {
    let mut fields = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut fields);
    match resp.parse(&got.head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return Err(format!("{url}: the response head is not HTTP")),
    }
    let code = resp.code.unwrap_or(0);
    if code != expect {
        let follow = if matches!(code, 301 | 302 | 303 | 307 | 308) {
            " (--follow follows redirects)"
        } else {
            ""
        };
        return Err(format!(
            "{url}: the server answered {code} {} (expected {expect}){follow}",
            resp.reason.unwrap_or(""),
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
    let file = crate::util::site_file(dir, url_path(url));
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

fn get_http(url: &str, a: &GetArgs) -> Result<Got, String> {
    let (target, path) = parse_url(url)?;
    let timeout = Duration::from_secs_f64(a.timeout);
    let t0 = Instant::now();
    let fail = |e: std::io::Error| format!("{url}: {e}");
    let mut s = TcpStream::connect_timeout(&target.addr, timeout).map_err(fail)?;
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
            "{url}: the connection closed before a whole response head"
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

fn get_bwudp(url: &str, a: &GetArgs) -> Result<Got, String> {
    let (target, path) = bwudp::parse_url(url)?;
    let rto = (a.rto * 1e9) as u64;
    let timing = Timing {
        rto_ns: rto,
        rto_max_ns: rto.max(1_000_000_000),
        tries: a.tries,
    };
    let f = bwudp::fetch(&target, &path, timing).map_err(|e| format!("{url}: {e}"))?;
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
        assert!(check("u", &ok, 200).is_ok());
        assert!(check("u", &ok, 404).unwrap_err().contains("expected 404"));
        let nf = got("HTTP/1.1 404 Not Found\r\n\r\n", b"");
        assert!(check("u", &nf, 200).unwrap_err().contains("404 Not Found"));
        assert!(check("u", &nf, 404).is_ok());
        let moved = got(
            "HTTP/1.1 301 Moved Permanently\r\nLocation: /b/\r\n\r\n",
            b"",
        );
        assert!(check("u", &moved, 200).unwrap_err().contains("--follow"));
        let short = got("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n", b"abc");
        assert!(check("u", &short, 200)
            .unwrap_err()
            .contains("says 4 bytes"));
    }

    fn args(url: String) -> GetArgs {
        GetArgs {
            url,
            output: Some("-".into()),
            follow: false,
            include_head: false,
            timeout: 5.0,
            expect_status: 200,
            verify: None,
            verbose: false,
            rto: 0.05,
            tries: 8,
        }
    }

    /// A server on 127.0.0.1 answering each connection with the next of `answers`;
    /// returns its port and the requests it saw.
    fn serve(answers: Vec<&'static str>) -> (u16, std::thread::JoinHandle<Vec<String>>) {
        use std::net::TcpListener;
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let t = std::thread::spawn(move || {
            let mut seen = Vec::new();
            for answer in answers {
                let (mut c, _) = l.accept().unwrap();
                let mut req = [0u8; 1024];
                let n = c.read(&mut req).unwrap();
                seen.push(String::from_utf8_lossy(&req[..n]).into_owned());
                c.write_all(answer.as_bytes()).unwrap();
            }
            seen
        });
        (port, t)
    }

    #[test]
    fn fetches_over_http_from_a_local_server() {
        let (port, t) = serve(vec!["HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"]);
        let a = args(format!("http://127.0.0.1:{port}/a/b.txt"));
        let got = get_http(&a.url, &a).unwrap();
        assert_eq!(got.body, b"hello");
        check(&a.url, &got, 200).unwrap();
        let req = t.join().unwrap().remove(0);
        assert!(
            req.starts_with("GET /a/b.txt HTTP/1.1\r\nHost: 127.0.0.1"),
            "{req}"
        );
        let dir = std::env::temp_dir().join(format!("bareweb-get-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("a")).unwrap();
        std::fs::write(dir.join("a/b.txt"), "hello").unwrap();
        verify(&a.url, &dir, b"hello").unwrap();
        assert!(verify(&a.url, &dir, b"hellO").is_err());
        // The path as the server decodes it names the file.
        std::fs::write(dir.join("my file.txt"), "spaced").unwrap();
        verify("http://h/my%20file.txt", &dir, b"spaced").unwrap();
        verify("http://h/my%20file.txt?x=1", &dir, b"spaced").unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// `--follow`: each redirect's Location is fetched in turn, at most MAX_REDIRECTS;
    /// without it the redirect is the answer.
    #[test]
    fn follows_redirects_when_asked_and_bounded() {
        let (port, t) = serve(vec![
            "HTTP/1.1 301 Moved Permanently\r\nLocation: /docs/\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.1 302 Found\r\nLocation: page.html\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
        ]);
        let mut a = args(format!("http://127.0.0.1:{port}/docs"));
        a.follow = true;
        get(a).unwrap();
        let seen = t.join().unwrap();
        assert!(seen[1].starts_with("GET /docs/ HTTP/1.1"), "{}", seen[1]);
        assert!(
            seen[2].starts_with("GET /docs/page.html HTTP/1.1"),
            "{}",
            seen[2]
        );

        let (port, t) = serve(vec![
            "HTTP/1.1 301 Moved Permanently\r\nLocation: /loop\r\nContent-Length: 0\r\n\r\n";
            MAX_REDIRECTS + 1
        ]);
        let mut a = args(format!("http://127.0.0.1:{port}/loop"));
        a.follow = true;
        let e = get(a).unwrap_err();
        assert!(e.contains("more than 10 redirects"), "{e}");
        assert_eq!(t.join().unwrap().len(), MAX_REDIRECTS + 1);

        let (port, t) = serve(vec![
            "HTTP/1.1 301 Moved Permanently\r\nLocation: /b\r\n\r\n",
        ]);
        let e = get(args(format!("http://127.0.0.1:{port}/a"))).unwrap_err();
        assert!(e.contains("301") && e.contains("--follow"), "{e}");
        t.join().unwrap();
    }

    /// Without -o the body goes where wget and curl -O put it.
    #[test]
    fn the_default_output_is_the_last_segment() {
        let o = |u: &str| default_output(u).map(|p| p.display().to_string());
        assert_eq!(o("http://h/a/b.txt").unwrap(), "b.txt");
        assert_eq!(o("http://h/a/my%20file.txt?x=1#f").unwrap(), "my file.txt");
        assert_eq!(o("http://h/a/").unwrap(), "index.html");
        assert_eq!(o("http://h").unwrap(), "index.html");
        assert_eq!(o("bwudp://h:81/f.bin").unwrap(), "f.bin");
        assert!(o("http://h/a%2Fb").unwrap_err().contains("-o FILE"));
        assert!(o("http://h/..").is_err());
    }
}
