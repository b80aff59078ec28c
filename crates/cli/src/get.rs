//! `bareweb get URL -o FILE`: fetch one file and write its body. The URL's scheme picks the
//! protocol ([`Scheme`]); each scheme's fetch is its own function returning the same
//! [`Got`], so the checks (status, size) and the file writing are shared.
//!
//! - `bwudp://HOST[:PORT]/PATH`: paper 001's stateless UDP protocol
//!   (docs/udp-protocol.md), over an ordinary UDP socket: reliable over loss,
//!   duplication and reordering through subsequent GETs.

use std::io::Write;
use std::path::PathBuf;

use bareweb_engine::udp::client::Timing;
use bareweb_loadgen::udp as bwudp;

#[derive(clap::Args)]
pub struct GetArgs {
    /// What to fetch: bwudp://HOST[:PORT]/PATH (UDP port 80 when none is given).
    pub url: String,
    /// Write the body to this file (`-`: standard output).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Print the response head on standard error.
    #[arg(short = 'i', long)]
    pub include_head: bool,
    /// Seconds of first retransmission timeout (doubles per timeout, up to 1 s).
    #[arg(long, default_value_t = 0.05, value_parser = parse_rto)]
    pub rto: f64,
    /// Timeouts in a row without a new packet before giving up, 1 to 100.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub tries: u32,
    /// Print the transfer's counters (GETs, packets, duplicates, re-requested) on
    /// standard error.
    #[arg(short, long)]
    pub verbose: bool,
}

fn parse_rto(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.001..=10.0).contains(&v) => Ok(v),
        _ => Err("expected seconds from 0.001 to 10".into()),
    }
}

/// The protocols `get` speaks, by URL scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scheme {
    /// `bwudp://`
    BwUdp,
}

impl Scheme {
    const ALL: &'static [(&'static str, Scheme)] = &[("bwudp", Scheme::BwUdp)];

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
        Scheme::BwUdp => get_bwudp(&a)?,
    };
    if a.verbose {
        eprintln!("bareweb: {}", got.summary);
    }
    if a.include_head {
        eprint!("{}", String::from_utf8_lossy(&got.head));
    }
    check(&a.url, &got)?;
    if a.output.as_os_str() == "-" {
        std::io::stdout()
            .write_all(&got.body)
            .map_err(|e| format!("standard output: {e}"))
    } else {
        std::fs::write(&a.output, &got.body).map_err(|e| format!("{}: {e}", a.output.display()))
    }
}

/// A 2xx status, and a Content-Length (when the head has one) equal to the body received.
fn check(url: &str, got: &Got) -> Result<(), String> {
    let mut fields = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut fields);
    match resp.parse(&got.head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return Err(format!("{url}: the response head is not HTTP")),
    }
    let code = resp.code.unwrap_or(0);
    if !(200..300).contains(&code) {
        return Err(format!(
            "{url}: the server answered {code} {}",
            resp.reason.unwrap_or("")
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

fn get_bwudp(a: &GetArgs) -> Result<Got, String> {
    let (target, path) = bwudp::parse_url(&a.url)?;
    let timing = Timing {
        rto_ns: (a.rto * 1e9) as u64,
        rto_max_ns: 1_000_000_000u64.max((a.rto * 1e9) as u64),
        tries: a.tries,
    };
    let f = bwudp::fetch(&target, &path, timing).map_err(|e| format!("{}: {e}", a.url))?;
    let c = f.counts;
    Ok(Got {
        summary: format!(
            "{} bytes in {:.1} ms: {} GETs, {} packets, {} duplicates, {} re-requested, {} timeouts, {} bad{}",
            f.body.len(),
            f.elapsed.as_secs_f64() * 1e3,
            c.gets,
            c.packets,
            c.duplicates,
            c.rerequested,
            c.timeouts,
            c.bad,
            if c.bounded > 0 { ", first answer bounded (address not yet proven)" } else { "" },
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
        assert_eq!(Scheme::of("bwudp://h/x"), Ok(Scheme::BwUdp));
        assert_eq!(Scheme::of("BWUDP://h/x"), Ok(Scheme::BwUdp));
        let e = Scheme::of("ftp://h/x").unwrap_err();
        assert!(
            e.contains("does not speak ftp://") && e.contains("bwudp://"),
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
        assert!(check(
            "u",
            &got("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", b"abc")
        )
        .is_ok());
        let e = check("u", &got("HTTP/1.1 404 Not Found\r\n\r\n", b"")).unwrap_err();
        assert!(e.contains("404 Not Found"), "{e}");
        let e = check(
            "u",
            &got("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n", b"abc"),
        )
        .unwrap_err();
        assert!(e.contains("says 4 bytes but 3"), "{e}");
        assert!(check("u", &got("garbage", b"")).is_err());
    }
}
