//! One request to the CA and its answer: the URL read, the request written, the TLS client
//! connection's bytes in and out, and the answer read by the fetcher's HTTP reader
//! (chunked bodies too), bounded in size and time. What carries the bytes (the fetcher's
//! stream, the resolver) is the agent's: this only turns bytes into bytes.

use alloc::boxed::Box;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use bareweb_acme::order::{Method, Request};
use bareweb_tls::{ClientConn, TlsClient};

use crate::fetch::http::Reader;
use crate::wire::Ipv4Address;

/// The largest answer body taken (the CA's documents are bounded at 64 KiB too).
pub const BODY_MAX: usize = 64 * 1024;

/// Where a request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The host as the URL names it (a DNS name or an IPv4 address), checked by TLS.
    pub host: String,
    /// Its address, when the URL gives one.
    pub addr: Option<Ipv4Address>,
    /// The port.
    pub port: u16,
    /// The request target (path and query).
    pub path: String,
    /// `host[:port]` for the Host field.
    pub authority: String,
}

/// The host of directory URL `url` when it is a name, not an IPv4 address (`None` for an
/// address): looking it up needs a DNS server, which both platforms check for at start.
pub fn named_host(url: &str) -> Option<&str> {
    let host = url
        .strip_prefix("https://")
        .and_then(|r| r.split(['/', ':', '?']).next())
        .unwrap_or("");
    parse_v4(host).is_none().then_some(host)
}

/// Reads an `https://` URL (the `order` machine checked it already: https, a host, no
/// user information, a numeric port at most). An IPv6 literal is refused: the client
/// reaches its CA over IPv4.
pub fn target(url: &str) -> Result<Target, String> {
    let rest = url
        .strip_prefix("https://")
        .ok_or_else(|| format!("not an https URL: {url}"))?;
    let (authority, path) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    if authority.starts_with('[') {
        return Err(
            "a CA at an IPv6 address is not supported: give it a name with an A record".into(),
        );
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (
            h,
            p.parse::<u16>()
                .ok()
                .filter(|&p| p != 0)
                .ok_or_else(|| format!("bad port in {url}"))?,
        ),
        None => (authority, 443),
    };
    if host.is_empty() {
        return Err(format!("no host in {url}"));
    }
    let addr = parse_v4(host);
    let path = match path {
        "" => "/".to_string(),
        p if p.starts_with('?') => format!("/{p}"),
        p => p.to_string(),
    };
    Ok(Target {
        host: host.to_ascii_lowercase(),
        addr,
        port,
        path,
        authority: authority.to_string(),
    })
}

/// A dotted-quad IPv4 address (core's parser: four decimal octets, no leading zeros).
pub fn parse_v4(s: &str) -> Option<Ipv4Address> {
    s.parse::<core::net::Ipv4Addr>()
        .ok()
        .map(|a| Ipv4Address(a.octets()))
}

/// The request's bytes: head and body, `Connection: close` (one request a connection).
pub fn request_bytes(req: &Request, t: &Target, agent: &str) -> Vec<u8> {
    let method = match req.method {
        Method::Get => "GET",
        Method::Head => "HEAD",
        Method::Post => "POST",
    };
    let mut head = format!(
        "{method} {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: {agent}\r\nAccept: */*\r\n\
         Connection: close\r\n",
        t.path, t.authority
    );
    if req.method == Method::Post {
        head.push_str(&format!(
            "Content-Type: application/jose+json\r\nContent-Length: {}\r\n",
            req.body.len()
        ));
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    if req.method == Method::Post {
        out.extend_from_slice(&req.body);
    }
    out
}

/// The answer read so far.
pub struct Answer {
    /// The reader (its head: status and the fields asked for).
    pub reader: Box<Reader>,
    /// The body.
    pub body: Vec<u8>,
}

/// What an exchange's bytes brought.
#[derive(Debug, Default)]
pub struct Moved {
    /// TLS bytes to send.
    pub out: Vec<u8>,
    /// The answer is complete.
    pub done: bool,
}

/// One request's TLS connection and answer.
pub struct Exchange {
    conn: ClientConn,
    request: Vec<u8>,
    sent: bool,
    plain: Vec<u8>,
    /// The answer.
    pub answer: Answer,
}

impl Exchange {
    /// A connection to `t.host` with `client`, to send `request`.
    pub fn new(
        client: &TlsClient,
        t: &Target,
        request: Vec<u8>,
        head: bool,
    ) -> Result<Exchange, String> {
        let conn = client.connect(&t.host).map_err(|e| format!("TLS: {e}"))?;
        let mut reader = Box::new(Reader::chunked());
        reader.set_head_request(head);
        Ok(Exchange {
            conn,
            request,
            sent: false,
            plain: Vec::new(),
            answer: Answer {
                reader,
                body: Vec::new(),
            },
        })
    }

    /// Bytes received on the connection (none: the connection just opened, the
    /// ClientHello goes). Errors name what went wrong (TLS, the answer's form or size).
    pub fn receive(&mut self, tls_in: &[u8], moved: &mut Moved) -> Result<(), String> {
        self.plain.clear();
        let p = self
            .conn
            .receive(tls_in, &mut moved.out, &mut self.plain)
            .map_err(|e| format!("TLS: {e}"))?;
        if p.established && !self.sent {
            self.sent = true;
            self.conn
                .write(&self.request, &mut moved.out)
                .map_err(|e| format!("TLS: {e}"))?;
        }
        let mut data = &self.plain[..];
        while !data.is_empty() && !self.answer.reader.done() {
            let f = self
                .answer
                .reader
                .feed(data)
                .map_err(|_| "the CA's answer is not HTTP/1.1 the client reads".to_string())?;
            let (a, b) = f.body;
            if self.answer.body.len() + (b - a) > BODY_MAX {
                return Err(format!("the CA's answer is longer than {BODY_MAX} bytes"));
            }
            self.answer.body.extend_from_slice(&data[a..b]);
            if f.used == 0 {
                break;
            }
            data = &data[f.used..];
        }
        moved.done = self.answer.reader.done();
        if p.closed && !moved.done {
            // The peer's close_notify: a body delimited by it ends here.
            moved.done = self.answer.reader.end_of_stream();
        }
        Ok(())
    }

    /// The TCP connection ended (the peer's FIN): whether the answer is complete.
    pub fn end_of_stream(&mut self) -> bool {
        self.answer.reader.end_of_stream()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_named_by_a_host_name_needs_a_lookup() {
        assert_eq!(named_host("https://ca.test:14000/dir"), Some("ca.test"));
        assert_eq!(
            named_host("https://acme-v02.api.letsencrypt.org/directory"),
            Some("acme-v02.api.letsencrypt.org")
        );
        assert_eq!(named_host("https://10.0.0.1:14000/dir"), None);
        assert_eq!(named_host("https://10.0.0.1?x"), None);
    }

    #[test]
    fn urls_are_read_into_host_port_and_path() {
        let t = target("https://Acme.Example:14000/dir").unwrap();
        assert_eq!(
            (
                t.host.as_str(),
                t.addr,
                t.port,
                t.path.as_str(),
                t.authority.as_str()
            ),
            ("acme.example", None, 14000, "/dir", "Acme.Example:14000")
        );
        let t = target("https://10.0.0.1/a/b?c=d").unwrap();
        assert_eq!(t.addr, Some(Ipv4Address([10, 0, 0, 1])));
        assert_eq!((t.port, t.path.as_str()), (443, "/a/b?c=d"));
        assert_eq!(target("https://h?x").unwrap().path, "/?x");
        assert_eq!(target("https://h").unwrap().path, "/");
        for bad in [
            "http://h/",
            "https://:1/",
            "https://h:0/",
            "https://h:99999/",
            "https://[::1]/",
        ] {
            assert!(target(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_v4("1.2.3.4"), Some(Ipv4Address([1, 2, 3, 4])));
        for bad in [
            "1.2.3",
            "1.2.3.4.5",
            "256.1.1.1",
            "1..2.3",
            "a.b.c.d",
            "01234.1.1.1",
        ] {
            assert_eq!(parse_v4(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_post_carries_its_body_and_length_a_head_none() {
        let t = target("https://ca:14000/new-acct").unwrap();
        let post = Request {
            method: Method::Post,
            url: "https://ca:14000/new-acct".into(),
            body: b"{\"x\":1}".to_vec(),
        };
        let b = request_bytes(&post, &t, "bareweb");
        assert_eq!(
            core::str::from_utf8(&b).unwrap(),
            "POST /new-acct HTTP/1.1\r\nHost: ca:14000\r\nUser-Agent: bareweb\r\nAccept: */*\r\n\
             Connection: close\r\nContent-Type: application/jose+json\r\nContent-Length: 7\r\n\r\n\
             {\"x\":1}"
        );
        let head = Request {
            method: Method::Head,
            url: "https://ca:14000/nonce".into(),
            body: Vec::new(),
        };
        let b = request_bytes(&head, &t, "bareweb");
        assert!(b.starts_with(b"HEAD /new-acct HTTP/1.1\r\n"));
        assert!(b.ends_with(b"Connection: close\r\n\r\n"));
    }
}
