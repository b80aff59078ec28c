//! The server's own pages beside the site: the stats JSON (at `BASE/stats`), `/metrics`
//! (Prometheus text exposition format 0.0.4: the JSON's counters, one sample per core,
//! labelled with its role) and `/healthz` (`ok`), with [`PageSettings`] saying which are
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

/// Room reserved for the head in front of a rendered body.
const HEAD_ROOM: usize = 512;

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
    let rendered = out.get_mut(HEAD_ROOM..).and_then(|b| match page {
        Page::Json => board.render_json(b),
        Page::Metrics => render_metrics(board, b),
        Page::Healthz => {
            let ok = b"ok\n";
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
    let ok = write!(
        w,
        "HTTP/1.1 200 OK\r\nDate: {date}\r\nServer: {server}\r\n\
         Content-Type: {ctype}\r\nContent-Length: {body_len}\r\n\
         Cache-Control: no-store\r\n{conn}\r\n"
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
        status: http::Status::OK.code(),
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
}
