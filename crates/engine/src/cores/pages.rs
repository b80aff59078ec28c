//! The server's own pages beside the site: the stats JSON (at `BASE/stats`), `/metrics`
//! (Prometheus text exposition format 0.0.4: the JSON's counters, one sample per core,
//! labelled with its role, and `bareweb_draining`) and `/healthz` (`ok`, or 503
//! `draining` once a drain is asked for), with [`PageSettings`] saying which are
//! on, where the stats page lives and who may read the stats and metrics.
//!
//! Which pages are on is decided once, at start, from the site image's switches (its
//! `bareweb.toml`) over the platform's defaults: `serve` answers all three by default, a
//! bare-machine image only the stats page unless its configuration turns the others on.
//! A request for a page that is off, or from a client outside `allow`, falls through to
//! the site (normally a 404). Rendering writes straight into the caller's buffer: no
//! allocation.

use core::fmt::{self, Write as _};

use super::board::Board;
use crate::http::{self, Method, Request};
use crate::site::Pages;
use crate::stats::platform;

/// The default place of the stats page (HTML at `BASE/`, JSON at `BASE/stats`).
pub const DEFAULT_BASE: &str = "/.well-known/bareweb";

/// Path of the Prometheus metrics.
pub const METRICS_PATH: &[u8] = b"/metrics";

/// Path of the health check.
pub const HEALTHZ_PATH: &[u8] = b"/healthz";

/// Which of the server's own pages answer, and for whom.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageSettings {
    /// The stats page (HTML) and its JSON.
    pub stats: bool,
    /// `/metrics`.
    pub metrics: bool,
    /// `/healthz`.
    pub healthz: bool,
    /// Where the stats page lives, without its trailing slash.
    pub base: &'static str,
    /// The network whose clients may read the stats JSON and metrics, and its prefix
    /// length (0: everyone).
    pub allow: ([u8; 4], u8),
    /// Header lines (`Name: value` CRLF each) the site's configuration sends with every
    /// path: these pages send them too.
    pub headers: &'static str,
}

impl Default for PageSettings {
    /// The stats page at its default place for everyone; no metrics, no health check.
    fn default() -> Self {
        PageSettings {
            stats: true,
            metrics: false,
            healthz: false,
            base: DEFAULT_BASE,
            allow: ([0; 4], 0),
            headers: "",
        }
    }
}

impl PageSettings {
    /// The site's switches over the platform's defaults (`stats` also off if the
    /// platform turned it off).
    pub fn resolve(site: &Pages<'static>, stats: bool, metrics: bool, healthz: bool) -> Self {
        PageSettings {
            stats: stats && site.stats.or(true),
            metrics: site.metrics.or(metrics),
            healthz: site.healthz.or(healthz),
            base: if site.stats_path.is_empty() {
                DEFAULT_BASE
            } else {
                site.stats_path
            },
            allow: site.stats_allow,
            headers: site.headers,
        }
    }

    /// Whether any page answers (the server then installs the dynamic page).
    pub fn any(&self) -> bool {
        self.stats || self.metrics || self.healthz
    }

    /// Whether `peer` may read the stats JSON and the metrics.
    pub fn allows(&self, peer: [u8; 4]) -> bool {
        let (net, len) = self.allow;
        if len == 0 {
            return true;
        }
        let mask = u32::MAX << (32 - u32::from(len.min(32)));
        u32::from_be_bytes(peer) & mask == u32::from_be_bytes(net) & mask
    }

    /// Which page `target` asks for, if it is on (whoever asks).
    pub fn kind(&self, target: &[u8]) -> Option<Page> {
        let path = target.split(|&b| b == b'?').next().unwrap_or(target);
        let json = path.strip_prefix(self.base.as_bytes()) == Some(b"/stats");
        if json && self.stats {
            Some(Page::Json)
        } else if path == METRICS_PATH && self.metrics {
            Some(Page::Metrics)
        } else if path == HEALTHZ_PATH && self.healthz {
            Some(Page::Healthz)
        } else {
            None
        }
    }

    /// Which page `target` asks `peer` for, if it is on and `peer` may have it (the stats
    /// JSON and metrics only for `allow`; the health check for everyone).
    /// A client named by a PROXY protocol header may be IPv6: it is allowed only when
    /// everyone is (`allow` is IPv4).
    pub fn page_for(&self, target: &[u8], peer: impl Into<core::net::IpAddr>) -> Option<Page> {
        let allowed = match peer.into() {
            core::net::IpAddr::V4(v4) => self.allows(v4.octets()),
            core::net::IpAddr::V6(_) => self.allow.1 == 0,
        };
        match self.kind(target)? {
            Page::Healthz => Some(Page::Healthz),
            p if allowed => Some(p),
            _ => None,
        }
    }
}

/// One of the server's own pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Page {
    /// The stats JSON.
    Json,
    /// Prometheus text.
    Metrics,
    /// `ok`.
    Healthz,
}

/// `fmt::Write` into a fixed byte buffer; fails (never panics) when full.
struct Out<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl fmt::Write for Out<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len.checked_add(s.len()).ok_or(fmt::Error)?;
        let dst = self.buf.get_mut(self.len..end).ok_or(fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Renders the metrics of `board` into `out`; returns the length, or `None` if they do not
/// fit.
pub fn render_metrics(board: &Board, out: &mut [u8]) -> Option<usize> {
    let mut w = Out { buf: out, len: 0 };
    // Prometheus wants a family's samples together: metric by metric, core by core.
    for (name, index, kind) in board.metric_names() {
        writeln!(w, "# TYPE bareweb_{name} {kind}").ok()?;
        for core in 0..board.cores() {
            let v = board.word(core, index);
            let role = board.role(core).name();
            writeln!(w, "bareweb_{name}{{core=\"{core}\",role=\"{role}\"}} {v}").ok()?;
        }
    }
    if let Some(d) = board.dhcp() {
        for (name, v) in d.counters() {
            writeln!(
                w,
                "# TYPE bareweb_dhcp_{name} counter\nbareweb_dhcp_{name} {v}"
            )
            .ok()?;
        }
        let bound = u8::from(d.address().is_some());
        writeln!(
            w,
            "# TYPE bareweb_dhcp_bound gauge\nbareweb_dhcp_bound {bound}"
        )
        .ok()?;
    }
    if let Some(d) = board.drain() {
        let on = u8::from(d.draining());
        writeln!(w, "# TYPE bareweb_draining gauge\nbareweb_draining {on}").ok()?;
    }
    if let Some(p) = board
        .platform()
        .filter(|p| platform::plain(p.name()) && platform::plain(p.unit()))
    {
        write_platform_metrics(p, &mut w)?;
    }
    Some(w.len)
}

/// The platform's counters as metrics, family by family: every unit read once
/// ([`platform::Snapshot`]). Not inlined: the snapshot's arrays (~5 KiB) stay off the
/// stack of a platform without counters (the kernel's).
#[inline(never)]
fn write_platform_metrics(p: &dyn platform::PlatformCounters, w: &mut Out<'_>) -> Option<()> {
    let snap = platform::Snapshot::read(p);
    let (prefix, unit) = (p.name(), p.unit());
    for (j, name) in snap.names().iter().enumerate() {
        writeln!(w, "# TYPE bareweb_{prefix}_{name} counter").ok()?;
        for i in 0..p.units() {
            if let Some((id, v)) = snap.get(i, j) {
                writeln!(w, "bareweb_{prefix}_{name}{{{unit}=\"{id}\"}} {v}").ok()?;
            }
        }
    }
    Some(())
}

/// Room reserved for the head in front of a rendered body (the fields written here, under
/// 300 bytes, and the site's common header lines, at most
/// [`MAX_COMMON_HEADERS`](crate::site::format::MAX_COMMON_HEADERS)).
const HEAD_ROOM: usize = 1024;

/// Writes the whole response for `page` (head and, unless HEAD, the body) into `out`.
pub fn respond(
    page: Page,
    board: &Board,
    req: &Request<'_>,
    now_unix: u64,
    server: &str,
    out: &mut [u8],
) -> http::Response<'static> {
    if !matches!(req.method, Method::Get | Method::Head) {
        return http::respond_error(http::Status::METHOD_NOT_ALLOWED, now_unix, server, out);
    }
    // A draining server's health check fails, so a balancer stops sending.
    let draining = board.drain().is_some_and(|d| d.draining());
    let status = match page {
        Page::Healthz if draining => http::Status::SERVICE_UNAVAILABLE,
        _ => http::Status::OK,
    };
    let rendered = out.get_mut(HEAD_ROOM..).and_then(|b| match page {
        Page::Json => board.render_json(b),
        Page::Metrics => render_metrics(board, b),
        Page::Healthz => {
            let ok: &[u8] = if draining { b"draining\n" } else { b"ok\n" };
            b.get_mut(..ok.len())?.copy_from_slice(ok);
            Some(ok.len())
        }
    });
    let Some(body_len) = rendered else {
        return http::respond_error(http::Status::INTERNAL_SERVER_ERROR, now_unix, server, out);
    };
    let ctype = match page {
        Page::Json => "application/json",
        Page::Metrics => "text/plain; version=0.0.4; charset=utf-8",
        Page::Healthz => "text/plain; charset=utf-8",
    };
    let close = !req.keep_alive || req.has_body;
    let mut head = [0u8; HEAD_ROOM];
    let mut w = Out {
        buf: &mut head,
        len: 0,
    };
    let date = http::imf_date(now_unix);
    let date = core::str::from_utf8(&date).unwrap_or("");
    let conn = match (close, req.version) {
        (true, _) => "Connection: close\r\n",
        (false, http::Version::Http10) => "Connection: keep-alive\r\n",
        (false, _) => "",
    };
    let (server_field, server_end) = if server.is_empty() {
        ("", "")
    } else {
        ("Server: ", "\r\n")
    };
    let headers = board.pages().headers;
    let ok = write!(
        w,
        "HTTP/1.1 {} {}\r\nDate: {date}\r\n{server_field}{server}{server_end}\
         Content-Type: {ctype}\r\nContent-Length: {body_len}\r\n\
         Cache-Control: no-store\r\n{headers}{conn}\r\n",
        status.code(),
        status.reason(),
    );
    let head_len = w.len;
    if ok.is_err() {
        return http::respond_error(http::Status::INTERNAL_SERVER_ERROR, now_unix, server, out);
    }
    let send_body = req.method == Method::Get;
    out[..head_len].copy_from_slice(&head[..head_len]);
    if send_body {
        out.copy_within(HEAD_ROOM..HEAD_ROOM + body_len, head_len);
    }
    http::Response {
        status: status.code(),
        head_len: head_len + if send_body { body_len } else { 0 },
        body: None,
        close,
        content_len: if send_body { body_len as u64 } else { 0 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cores::board::Role;

    #[test]
    fn pages_answer_where_and_to_whom_they_should() {
        let s = PageSettings {
            stats: true,
            metrics: true,
            healthz: true,
            base: "/_s",
            allow: ([10, 0, 0, 0], 8),
            headers: "",
        };
        let inside = [10, 1, 2, 3];
        let outside = [192, 168, 1, 1];
        assert_eq!(s.page_for(b"/_s/stats", inside), Some(Page::Json));
        assert_eq!(s.page_for(b"/_s/stats?x=1", inside), Some(Page::Json));
        assert_eq!(s.page_for(b"/_s/stats", outside), None);
        assert_eq!(s.page_for(b"/.well-known/bareweb/stats", inside), None);
        assert_eq!(s.page_for(b"/metrics", inside), Some(Page::Metrics));
        assert_eq!(s.page_for(b"/metrics", outside), None);
        assert_eq!(s.page_for(b"/healthz", outside), Some(Page::Healthz));
        let off = PageSettings {
            metrics: false,
            healthz: false,
            ..s
        };
        assert_eq!(off.page_for(b"/metrics", inside), None);
        assert_eq!(off.page_for(b"/healthz", inside), None);
        assert!(PageSettings::default().allows(outside));
    }

    #[test]
    fn metrics_are_the_json_counters_in_prometheus_text() {
        let board = Board::new("single", &[Role::Single]);
        let stats = crate::stats::Stats {
            http_requests: 42,
            ..Default::default()
        };
        board.publish_server(0, &stats, &Default::default(), &Default::default());
        let mut out = [0u8; 64 * 1024];
        let n = render_metrics(&board, &mut out).unwrap();
        let text = core::str::from_utf8(&out[..n]).unwrap();
        assert!(
            text.contains("# TYPE bareweb_http_requests counter\n"),
            "{text}"
        );
        assert!(text.contains("bareweb_http_requests{core=\"0\",role=\"single\"} 42\n"));
        assert!(text.contains("# TYPE bareweb_tcbs_max gauge\n"));
        assert!(text.contains("bareweb_rx_ring_high{core=\"0\""));
        // Every sample line is `name{labels} value`.
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (series, value) = line.rsplit_once(' ').unwrap();
            assert!(
                series.starts_with("bareweb_") && series.ends_with('}'),
                "{line}"
            );
            value.parse::<u64>().unwrap();
        }
        assert!(render_metrics(&board, &mut [0u8; 100]).is_none());
    }

    #[test]
    fn a_draining_server_fails_its_health_check_and_says_so_in_the_metrics() {
        let drain: &'static crate::server::drain::Drain =
            Box::leak(Box::new(crate::server::drain::Drain::new(5_000, 30_000)));
        let board = Board::new("single", &[Role::Single]).with_drain(Some(drain));
        let req = |target| match http::parse(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n") {
            http::Parse::Complete { request, .. } => Request { target, ..request },
            _ => unreachable!(),
        };
        let answer = |target: &'static [u8]| {
            let mut out = vec![0u8; 64 * 1024];
            let page = match target {
                b"/healthz" => Page::Healthz,
                _ => Page::Metrics,
            };
            let r = respond(page, &board, &req(target), 1_700_000_000, "bw", &mut out);
            (
                r.status,
                String::from_utf8_lossy(&out[..r.head_len]).into_owned(),
            )
        };
        let (status, text) = answer(b"/healthz");
        assert_eq!(status, 200);
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n") && text.ends_with("\r\n\r\nok\n"));
        assert!(answer(b"/metrics").1.contains("\nbareweb_draining 0\n"));
        drain.request();
        let (status, text) = answer(b"/healthz");
        assert_eq!(status, 503);
        assert!(
            text.starts_with("HTTP/1.1 503 Service Unavailable\r\n")
                && text.ends_with("\r\n\r\ndraining\n"),
            "{text}"
        );
        assert!(answer(b"/metrics")
            .1
            .contains("# TYPE bareweb_draining gauge\nbareweb_draining 1\n"));
        let mut json = [0u8; 64 * 1024];
        let n = board.render_json(&mut json).unwrap();
        let json = core::str::from_utf8(&json[..n]).unwrap();
        assert!(
            json.contains("\"drain\":{\"draining\":true,\"grace_ms\":5000,\"timeout_ms\":30000,"),
            "{json}"
        );
    }
}
