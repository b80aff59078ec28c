//! The server's own pages beside the site: the stats JSON (at `BASE/stats`), `/metrics`
//! (Prometheus text exposition format 0.0.4: the JSON's counters, one sample per core,
//! labelled with its role, and `bareweb_draining`) and `/healthz` (`ok`, or 503
//! `draining` once a drain is asked for), with [`PageSettings`] saying which are on, where
//! the stats page lives and who may read the stats and metrics; and ACME's HTTP-01
//! answers while the platform publishes them ([`Page::Challenge`], module
//! [`challenge`](super::challenge)), to anyone.
//!
//! Which pages are on is decided once, at start, from the site image's switches (its
//! `bareweb.toml`) over the platform's defaults: `serve` answers all three by default, a
//! bare-machine image only the stats page unless its configuration turns the others on.
//! One rule, [`Allow`], says who may read the stats page (HTML), its JSON and `/metrics`;
//! any other client gets a plain-text 403 that says why ([`Page::Refused`]), and
//! `/healthz` answers everyone. Paths are matched after the same decoding and
//! normalisation as the site's lookup, so no spelling of a page's path gets past the
//! rule. A request for a page that is off falls through to the site (normally a 404).
//! Rendering writes straight into the caller's buffer: no allocation. The metric names
//! are listed in docs/usage.md, "Monitoring".

use core::fmt::{self, Write as _};
use core::net::IpAddr;

use super::board::{Board, MetricKind};
use crate::http::{self, Method, Request};
use crate::site::Pages;
use crate::stats::platform;

/// The default place of the stats page (HTML at `BASE/`, JSON at `BASE/stats`).
pub const DEFAULT_BASE: &str = "/.well-known/bareweb";

/// Path of the Prometheus metrics.
pub const METRICS_PATH: &[u8] = b"/metrics";

/// Path of the health check.
pub const HEALTHZ_PATH: &[u8] = b"/healthz";

/// Who may read the stats page (its HTML and JSON) and `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allow {
    /// Every client.
    Everyone,
    /// Clients in this network (address, prefix length 1 to 32).
    Network([u8; 4], u8),
    /// No client (`serve` with no host side and no `--stats-allow`).
    Nobody,
}

impl Allow {
    /// The network `net`/`len` (`len` 0: everyone).
    pub fn network(net: [u8; 4], len: u8) -> Allow {
        if len == 0 {
            Allow::Everyone
        } else {
            Allow::Network(net, len.min(32))
        }
    }

    /// Whether `peer` may read them.
    pub fn admits(self, peer: [u8; 4]) -> bool {
        match self {
            Allow::Everyone => true,
            Allow::Nobody => false,
            Allow::Network(net, len) => {
                let mask = u32::MAX << (32 - u32::from(len.clamp(1, 32)));
                u32::from_be_bytes(peer) & mask == u32::from_be_bytes(net) & mask
            }
        }
    }
}

impl fmt::Display for Allow {
    /// `everyone`, `nobody`, `A.B.C.D/N`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Allow::Everyone => f.write_str("everyone"),
            Allow::Nobody => f.write_str("nobody"),
            Allow::Network([a, b, c, d], len) => write!(f, "{a}.{b}.{c}.{d}/{len}"),
        }
    }
}

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
    /// Who may read the stats page, its JSON and the metrics (one rule for the three).
    pub allow: Allow,
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
            allow: Allow::Everyone,
            headers: "",
        }
    }
}

impl PageSettings {
    /// The site's switches over the platform's defaults (`stats` also off if the
    /// platform turned it off; `allow` is the platform's unless the site names a network).
    pub fn resolve(
        site: &Pages<'static>,
        stats: bool,
        metrics: bool,
        healthz: bool,
        allow: Allow,
    ) -> Self {
        PageSettings {
            stats: stats && site.stats.or(true),
            metrics: site.metrics.or(metrics),
            healthz: site.healthz.or(healthz),
            base: if site.stats_path.is_empty() {
                DEFAULT_BASE
            } else {
                site.stats_path
            },
            allow: site
                .stats_allow
                .map_or(allow, |(net, len)| Allow::network(net, len)),
            headers: site.headers,
        }
    }

    /// Whether any page answers (the server then installs the dynamic page).
    pub fn any(&self) -> bool {
        self.stats || self.metrics || self.healthz
    }

    /// Whether `peer` may read the stats page, its JSON and the metrics. A client named by
    /// a PROXY protocol header may be IPv6: it is admitted only when everyone is (the
    /// rule's network is IPv4).
    pub fn allows(&self, peer: impl Into<IpAddr>) -> bool {
        match peer.into() {
            IpAddr::V4(v4) => self.allow.admits(v4.octets()),
            IpAddr::V6(_) => self.allow == Allow::Everyone,
        }
    }

    /// Which page `target` asks for, if it is on (whoever asks). The path is decoded and
    /// normalised as the site's lookup does it, so no spelling of a page's path
    /// (`%2e`, `//`, `./`) reaches the site's copy of it past [`Self::page_for`].
    pub fn kind(&self, target: &[u8]) -> Option<Page> {
        let t = crate::http::target::split(target).ok()?;
        let mut buf = [0u8; http::MAX_PATH];
        let path = if crate::http::target::is_normal(t.path, http::MAX_PATH) {
            t.path
        } else {
            let n = crate::http::target::normalise(t.path, &mut buf).ok()?;
            &buf[..n]
        };
        let in_base = path.strip_prefix(self.base.as_bytes());
        if self.stats && in_base == Some(b"/stats") {
            Some(Page::Json)
        } else if self.stats && matches!(in_base, Some(b"/" | b"")) {
            Some(Page::Html)
        } else if path == METRICS_PATH && self.metrics {
            Some(Page::Metrics)
        } else if path == HEALTHZ_PATH && self.healthz {
            Some(Page::Healthz)
        } else {
            None
        }
    }

    /// What answers `target` for `peer`: the page it asks for if it is on and `peer` may
    /// have it, [`Page::Refused`] if `peer` may not (the stats page, its JSON and the
    /// metrics only for `allow`; the health check for everyone), `None` for the site
    /// (every other path, and the stats page's HTML for an allowed client: the site
    /// holds it, `WithStatsPage`).
    pub fn page_for(&self, target: &[u8], peer: impl Into<IpAddr>) -> Option<Page> {
        match self.kind(target)? {
            Page::Healthz => Some(Page::Healthz),
            _ if !self.allows(peer.into()) => Some(Page::Refused),
            Page::Html => None,
            p => Some(p),
        }
    }
}

/// One of the server's own pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Page {
    /// The stats JSON.
    Json,
    /// The stats page's HTML (served from the site by `WithStatsPage`).
    Html,
    /// Prometheus text.
    Metrics,
    /// `ok`.
    Healthz,
    /// 403: the client may not read the stats page, its JSON or the metrics.
    Refused,
    /// ACME's HTTP-01 answer for the target's token (the board's table): to anyone.
    Challenge,
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
/// fit. Every family has one HELP and one TYPE line and its samples together; counters
/// are named `…_total`, gauges not (docs/usage.md, "Monitoring", lists them).
pub fn render_metrics(board: &Board, out: &mut [u8]) -> Option<usize> {
    let mut w = Out { buf: out, len: 0 };
    // Prometheus wants a family's samples together: metric by metric, core by core.
    for m in board.metrics() {
        family(&mut w, m.name, m.kind, m.help).ok()?;
        for core in 0..board.cores() {
            let v = board.word(core, m.index);
            let role = board.role(core).name();
            let (name, suffix) = (m.name, m.kind.suffix());
            write!(
                w,
                "bareweb_{name}{suffix}{{core=\"{core}\",role=\"{role}\"}} "
            )
            .ok()?;
            if m.in_seconds() {
                writeln!(w, "{}.{:09}", v / 1_000_000_000, v % 1_000_000_000).ok()?;
            } else {
                writeln!(w, "{v}").ok()?;
            }
        }
    }
    if let Some(d) = board.dhcp() {
        for (name, v) in d.counters() {
            w.write_str("# HELP bareweb_dhcp_").ok()?;
            writeln!(w, "{name}_total DHCP client: {name} counted since start.").ok()?;
            writeln!(
                w,
                "# TYPE bareweb_dhcp_{name}_total counter\nbareweb_dhcp_{name}_total {v}"
            )
            .ok()?;
        }
        let bound = u8::from(d.address().is_some());
        let help = "1 while the DHCP client holds a lease, else 0.";
        family(&mut w, "dhcp_bound", MetricKind::Gauge, help).ok()?;
        writeln!(w, "bareweb_dhcp_bound {bound}").ok()?;
    }
    if let Some(d) = board.drain() {
        let on = u8::from(d.draining());
        let help = "1 once a graceful drain is asked for (SIGTERM, the ACPI power button), else 0.";
        family(&mut w, "draining", MetricKind::Gauge, help).ok()?;
        writeln!(w, "bareweb_draining {on}").ok()?;
    }
    if let Some(r) = board.reload() {
        let families: [(&str, MetricKind, &str, u64); 5] = [
            (
                "reloads",
                MetricKind::Counter,
                "Reloads that put a new site and configuration in service (serve: SIGHUP).",
                r.done,
            ),
            (
                "reload_refused",
                MetricKind::Counter,
                "Reloads refused because the new site or configuration did not build; the old one kept serving.",
                r.refused,
            ),
            (
                "reload_images_freed",
                MetricKind::Counter,
                "Old site images freed once no connection sent from them.",
                r.freed,
            ),
            (
                "reload_reset",
                MetricKind::Counter,
                "Connections reset because they still sent from an old site image at a reload's drain timeout.",
                r.reset,
            ),
            (
                "site_generation",
                MetricKind::Gauge,
                "The site's generation served: 0 at start, one more per reload.",
                r.generation,
            ),
        ];
        for (name, kind, help, v) in families {
            family(&mut w, name, kind, help).ok()?;
            writeln!(w, "bareweb_{name}{} {v}", kind.suffix()).ok()?;
        }
    }
    if let Some(a) = board.issuance() {
        let families: [(&str, MetricKind, &str, u64); 4] = [
            (
                "acme_certificate_not_after_seconds",
                MetricKind::Gauge,
                "The ACME certificate served: its notAfter, Unix seconds (0: none yet).",
                a.not_after,
            ),
            (
                "acme_next_attempt_seconds",
                MetricKind::Gauge,
                "The ACME client's next attempt (renewal or retry), Unix seconds (0: one runs now).",
                a.next,
            ),
            (
                "acme_failures",
                MetricKind::Gauge,
                "ACME attempts failed since the last certificate (the console says why).",
                a.failures,
            ),
            (
                "acme_certificates_installed",
                MetricKind::Counter,
                "Certificates the ACME client put in service since start (a kept one too).",
                a.installed,
            ),
        ];
        for (name, kind, help, v) in families {
            family(&mut w, name, kind, help).ok()?;
            writeln!(w, "bareweb_{name}{} {v}", kind.suffix()).ok()?;
        }
    }
    if let Some(p) = board
        .platform()
        .filter(|p| platform::plain(p.name()) && platform::plain(p.unit()))
    {
        write_platform_metrics(p, &mut w)?;
    }
    Some(w.len)
}

/// A family's HELP and TYPE lines for `bareweb_<name>` plus the kind's suffix. HELP text
/// escapes backslash and line feed (the exposition format's rule).
fn family(w: &mut Out<'_>, name: &str, kind: MetricKind, help: &str) -> fmt::Result {
    let suffix = kind.suffix();
    write!(w, "# HELP bareweb_{name}{suffix} ")?;
    let mut rest = help;
    while let Some(i) = rest.find(['\\', '\n']) {
        w.write_str(&rest[..i])?;
        w.write_str(if rest.as_bytes()[i] == b'\\' {
            "\\\\"
        } else {
            "\\n"
        })?;
        rest = &rest[i + 1..];
    }
    w.write_str(rest)?;
    writeln!(w, "\n# TYPE bareweb_{name}{suffix} {}", kind.word())
}

/// The platform's counters as metrics, family by family: every unit read once
/// ([`platform::Snapshot`]). Not inlined: the snapshot's arrays (~5 KiB) stay off the
/// stack of a platform without counters (the kernel's).
#[inline(never)]
fn write_platform_metrics(p: &dyn platform::PlatformCounters, w: &mut Out<'_>) -> Option<()> {
    let snap = platform::Snapshot::read(p);
    let (prefix, unit) = (p.name(), p.unit());
    for (j, name) in snap.names().iter().enumerate() {
        writeln!(
            w,
            "# HELP bareweb_{prefix}_{name}_total The platform's {prefix} counter {name}, \
             per {unit} (AF_XDP: the kernel's XDP_STATISTICS of each socket).\n\
             # TYPE bareweb_{prefix}_{name}_total counter"
        )
        .ok()?;
        for i in 0..p.units() {
            if let Some((id, v)) = snap.get(i, j) {
                writeln!(w, "bareweb_{prefix}_{name}_total{{{unit}=\"{id}\"}} {v}").ok()?;
            }
        }
    }
    Some(())
}

/// Room reserved for the head in front of a rendered body (the fields written here, under
/// 300 bytes, and the site's common header lines, at most
/// [`MAX_COMMON_HEADERS`](crate::site::format::MAX_COMMON_HEADERS)).
const HEAD_ROOM: usize = 1024;

/// The server-wide header fields of a page's response: the `Server` name (empty: no
/// field) and lines every response of the connection carries (`Strict-Transport-Security`
/// on HTTPS; empty on plain HTTP).
#[derive(Clone, Copy, Debug)]
pub struct Fields<'a> {
    /// The `Server` field's value.
    pub server: &'a str,
    /// Whole header lines, each ending in CRLF.
    pub extra: &'a [u8],
}

/// Writes the whole response for `page` to the client at `peer` (head and, unless HEAD,
/// the body) into `out`.
pub fn respond(
    page: Page,
    board: &Board,
    req: &Request<'_>,
    peer: IpAddr,
    now_unix: u64,
    fields: Fields<'_>,
    out: &mut [u8],
) -> http::Response<'static> {
    let (server, extra) = (fields.server, fields.extra);
    if !matches!(req.method, Method::Get | Method::Head) {
        return http::respond_error_with(
            http::Status::METHOD_NOT_ALLOWED,
            now_unix,
            server,
            extra,
            out,
        );
    }
    // A draining server's health check fails, so a balancer stops sending.
    let draining = board.drain().is_some_and(|d| d.draining());
    let rendered = out.get_mut(HEAD_ROOM..).and_then(|b| match page {
        Page::Json => board.render_json(b),
        Page::Metrics => render_metrics(board, b),
        Page::Healthz => {
            let ok: &[u8] = if draining { b"draining\n" } else { b"ok\n" };
            b.get_mut(..ok.len())?.copy_from_slice(ok);
            Some(ok.len())
        }
        Page::Refused => refusal(board.pages(), peer, b),
        Page::Challenge => {
            let token = super::challenge::token_of(req.target)?;
            board.http01()?.answer(token, b)
        }
        // Never claimed (the site holds it): nothing to render here.
        Page::Html => None,
    });
    let Some(body_len) = rendered else {
        // An answer withdrawn since the request was claimed: as if never published.
        let status = if page == Page::Challenge {
            http::Status::NOT_FOUND
        } else {
            http::Status::INTERNAL_SERVER_ERROR
        };
        return http::respond_error_with(status, now_unix, server, extra, out);
    };
    let (status, ctype) = match page {
        Page::Json => (http::Status::OK, "application/json"),
        Page::Metrics => (http::Status::OK, "text/plain; version=0.0.4; charset=utf-8"),
        Page::Refused => (FORBIDDEN, "text/plain; charset=utf-8"),
        Page::Healthz if draining => (
            http::Status::SERVICE_UNAVAILABLE,
            "text/plain; charset=utf-8",
        ),
        Page::Healthz | Page::Html => (http::Status::OK, "text/plain; charset=utf-8"),
        Page::Challenge => (http::Status::OK, "application/octet-stream"),
    };
    let reason = if status == FORBIDDEN {
        "Forbidden"
    } else {
        status.reason()
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
    let extra_text = core::str::from_utf8(extra).unwrap_or("");
    let ok = write!(
        w,
        "HTTP/1.1 {} {reason}\r\nDate: {date}\r\n{server_field}{server}{server_end}\
         Content-Type: {ctype}\r\nContent-Length: {body_len}\r\n\
         Cache-Control: no-store\r\n{headers}{extra_text}{conn}\r\n",
        status.code()
    );
    let head_len = w.len;
    if ok.is_err() {
        return http::respond_error_with(
            http::Status::INTERNAL_SERVER_ERROR,
            now_unix,
            server,
            extra,
            out,
        );
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

/// 403, for a client outside `allow`.
const FORBIDDEN: http::Status = http::Status(403);

/// The plain-text body of a 403: what is refused, to whom it is open, and how to widen it.
fn refusal(s: &PageSettings, peer: IpAddr, out: &mut [u8]) -> Option<usize> {
    let mut w = Out { buf: out, len: 0 };
    writeln!(
        w,
        "403 Forbidden: this server's statistics ({base}/, {base}/stats and /metrics) \
         answer only {allow}, and this client is {peer}.\n\
         The server's operator can widen this with --stats-allow A.B.C.D/N (or `allow` \
         under [stats] in bareweb.toml).",
        base = s.base,
        allow = s.allow,
    )
    .ok()?;
    Some(w.len)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cores::board::Role;

    #[test]
    fn pages_answer_where_and_to_whom_they_should() {
        let s = PageSettings {
            stats: true,
            metrics: true,
            healthz: true,
            base: "/_s",
            allow: Allow::network([10, 0, 0, 0], 8),
            headers: "",
        };
        let inside = [10, 1, 2, 3];
        let outside = [192, 168, 1, 1];
        assert_eq!(s.page_for(b"/_s/stats", inside), Some(Page::Json));
        assert_eq!(s.page_for(b"/_s/stats?x=1", inside), Some(Page::Json));
        assert_eq!(s.page_for(b"/_s/stats", outside), Some(Page::Refused));
        assert_eq!(s.page_for(b"/.well-known/bareweb/stats", inside), None);
        assert_eq!(s.page_for(b"/metrics", inside), Some(Page::Metrics));
        assert_eq!(s.page_for(b"/metrics", outside), Some(Page::Refused));
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
    fn the_stats_page_html_follows_the_rule_of_its_json() {
        let s = PageSettings {
            stats: true,
            metrics: true,
            healthz: true,
            base: "/_s",
            allow: Allow::network([10, 0, 0, 0], 8),
            headers: "",
        };
        let (inside, outside) = ([10, 1, 2, 3], [192, 168, 1, 1]);
        // An allowed client gets the HTML from the site (`WithStatsPage`), a refused one
        // the 403, under every spelling the site's lookup would take for the page.
        for t in [
            &b"/_s/"[..],
            b"/_s",
            b"/_s/?x=1",
            b"/%5fs/",
            b"//_s/",
            b"/x/../_s/",
            b"/./_s/./",
            b"http://h/_s/",
            b"/_s/%73tats",
        ] {
            assert!(s.kind(t).is_some(), "{t:?}");
            assert_eq!(s.page_for(t, outside), Some(Page::Refused), "{t:?}");
        }
        assert_eq!(s.page_for(b"/_s/", inside), None);
        assert_eq!(s.page_for(b"/_s/%73tats", inside), Some(Page::Json));
        // Other paths under the base, and bad targets, are the site's.
        for t in [&b"/_s/x"[..], b"/_sx/", b"/%zz", b"*", b"/_s/stats/"] {
            assert_eq!(s.page_for(t, outside), None, "{t:?}");
        }
        // With the stats page off, its paths are the site's for everyone.
        let off = PageSettings { stats: false, ..s };
        assert_eq!(off.page_for(b"/_s/", outside), None);
        assert_eq!(off.page_for(b"/_s/stats", outside), None);
        // Nobody: refused even from inside; the health check still answers.
        let nobody = PageSettings {
            allow: Allow::Nobody,
            ..s
        };
        assert_eq!(nobody.page_for(b"/_s/", inside), Some(Page::Refused));
        assert_eq!(nobody.page_for(b"/metrics", inside), Some(Page::Refused));
        assert_eq!(nobody.page_for(b"/healthz", inside), Some(Page::Healthz));
    }

    #[test]
    fn allow_admits_its_network_only() {
        let one = Allow::network([10, 0, 0, 1], 32);
        assert!(one.admits([10, 0, 0, 1]) && !one.admits([10, 0, 0, 2]));
        assert_eq!(Allow::network([1, 2, 3, 4], 0), Allow::Everyone);
        assert!(Allow::Everyone.admits([1, 2, 3, 4]) && !Allow::Nobody.admits([127, 0, 0, 1]));
        let mut b = [0u8; 64];
        let mut w = Out {
            buf: &mut b,
            len: 0,
        };
        write!(w, "{} {} {}", one, Allow::Everyone, Allow::Nobody).unwrap();
        let n = w.len;
        assert_eq!(&b[..n], b"10.0.0.1/32 everyone nobody");
    }

    #[test]
    fn a_refused_client_gets_a_403_that_says_why() {
        let pages = PageSettings {
            metrics: true,
            allow: Allow::network([10, 0, 0, 1], 32),
            ..PageSettings::default()
        };
        let board = Board::new("single", &[Role::Single]).with_pages(pages);
        let req = crate::http::parse(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        let crate::http::Parse::Complete { request, .. } = req else {
            panic!("{req:?}")
        };
        let mut out = [0u8; 4096];
        let r = respond(
            Page::Refused,
            &board,
            &request,
            [10, 0, 0, 9].into(),
            0,
            Fields {
                server: "bw",
                extra: b"",
            },
            &mut out,
        );
        assert_eq!(r.status, 403);
        let text = core::str::from_utf8(&out[..r.head_len]).unwrap();
        assert!(text.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{text}");
        assert!(
            text.contains("Content-Type: text/plain; charset=utf-8\r\n"),
            "{text}"
        );
        let body = text.split_once("\r\n\r\n").unwrap().1;
        assert!(
            body.starts_with(
                "403 Forbidden: this server's statistics (/.well-known/bareweb/, \
                 /.well-known/bareweb/stats and /metrics) answer only 10.0.0.1/32, and this \
                 client is 10.0.0.9."
            ),
            "{body}"
        );
        assert!(body.contains("--stats-allow"), "{body}");
        assert_eq!(r.content_len as usize, body.len());
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
            text.contains("# TYPE bareweb_http_requests_total counter\n"),
            "{text}"
        );
        assert!(text.contains("bareweb_http_requests_total{core=\"0\",role=\"single\"} 42\n"));
        assert!(text.contains("# TYPE bareweb_tcbs_max gauge\n"));
        assert!(text.contains("# TYPE bareweb_tcbs_in_use gauge\n"));
        assert!(text.contains("bareweb_rx_ring_high{core=\"0\""));
        // Every sample line is `name{labels} value`.
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (series, value) = line.rsplit_once(' ').unwrap();
            assert!(
                series.starts_with("bareweb_") && series.ends_with('}'),
                "{line}"
            );
            value.parse::<f64>().unwrap();
        }
        assert!(render_metrics(&board, &mut [0u8; 100]).is_none());
    }

    /// What promtool's `check metrics` and the Go parser (expfmt) refuse, and the naming
    /// rules they lint: each family once, with one HELP and one TYPE line before its
    /// samples, the samples of a family together and no series twice; counters end in
    /// `_total`, nothing else does.
    pub(crate) fn check_exposition(text: &str) -> Result<(), String> {
        use alloc::collections::BTreeSet;
        use alloc::format;
        use alloc::string::String;
        let mut families: BTreeSet<String> = BTreeSet::new();
        let mut series: BTreeSet<String> = BTreeSet::new();
        let (mut current, mut help, mut kind) = (String::new(), false, None::<String>);
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let (name, text) = rest.split_once(' ').ok_or(format!("bare HELP: {line}"))?;
                if !families.insert(name.into()) {
                    return Err(format!("{name} described twice"));
                }
                if text.trim().is_empty() {
                    return Err(format!("{name}: empty HELP"));
                }
                (current, help, kind) = (name.into(), true, None);
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, k) = rest.split_once(' ').ok_or(format!("bare TYPE: {line}"))?;
                if name != current || !help || kind.is_some() {
                    return Err(format!("TYPE of {name} without its HELP just before"));
                }
                match k {
                    "counter" if !name.ends_with("_total") => {
                        return Err(format!("counter {name} does not end in _total"))
                    }
                    "gauge" if name.ends_with("_total") => {
                        return Err(format!("gauge {name} ends in _total"))
                    }
                    "counter" | "gauge" => {}
                    _ => return Err(format!("{name}: type {k}")),
                }
                kind = Some(k.into());
            } else if line.starts_with('#') {
                return Err(format!("stray comment: {line}"));
            } else {
                let (s, value) = line.rsplit_once(' ').ok_or(format!("no value: {line}"))?;
                value
                    .parse::<f64>()
                    .map_err(|_| format!("bad value: {line}"))?;
                let name = s.split('{').next().unwrap_or(s);
                if name != current || kind.is_none() {
                    return Err(format!("sample of {name} outside its family: {line}"));
                }
                if !series.insert(s.into()) {
                    return Err(format!("series twice: {s}"));
                }
            }
        }
        if families.is_empty() {
            return Err("no metrics".into());
        }
        Ok(())
    }

    #[test]
    fn the_checker_refuses_what_promtool_refuses() {
        let ok = "# HELP a_total x\n# TYPE a_total counter\na_total 1\n";
        assert_eq!(check_exposition(ok), Ok(()));
        for bad in [
            "# TYPE a_total counter\na_total 1\n",
            "# HELP a x\n# TYPE a counter\na 1\n",
            "# HELP a_total x\n# TYPE a_total gauge\na_total 1\n",
            "# HELP a x\n# TYPE a gauge\na 1\n# HELP a x\n# TYPE a gauge\na 2\n",
            "# HELP a x\n# TYPE a gauge\na{c=\"0\"} 1\na{c=\"0\"} 2\n",
            "# HELP a x\n# TYPE a gauge\n# HELP b x\n# TYPE b gauge\na 1\n",
        ] {
            assert!(check_exposition(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn metrics_are_valid_exposition_text_with_every_part() {
        use crate::cores::DispatchCounters;
        use crate::nic::NicCounters;
        static DHCP: std::sync::OnceLock<crate::dhcp::shared::Shared> = std::sync::OnceLock::new();
        let dhcp = DHCP.get_or_init(crate::dhcp::shared::Shared::new);
        // Both the network core's and an HTTP core's UDP figures: they once shared names.
        let board = Board::new("netcore", &[Role::Net, Role::Http]).with_dhcp(Some(dhcp));
        let stats = crate::stats::Stats {
            udp_no_id: 3,
            udp_ids_max: 4,
            ..Default::default()
        };
        board.publish_server(1, &stats, &Default::default(), &Default::default());
        let d = DispatchCounters {
            udp_no_id: 5,
            udp_ids_max: 6,
            ..Default::default()
        };
        board.publish_run(0, &NicCounters::default(), &d, 1, 0);
        let mut out = [0u8; 64 * 1024];
        let n = render_metrics(&board, &mut out).unwrap();
        let text = core::str::from_utf8(&out[..n]).unwrap();
        check_exposition(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert!(text.contains("bareweb_udp_no_id_total{core=\"1\",role=\"http\"} 3\n"));
        assert!(text.contains("bareweb_netcore_udp_no_id_total{core=\"0\",role=\"net\"} 5\n"));
        assert!(text.contains("bareweb_netcore_udp_ids_max{core=\"0\",role=\"net\"} 6\n"));
        assert!(text.contains("# TYPE bareweb_dhcp_bound gauge\nbareweb_dhcp_bound 0\n"));
        assert!(text.contains("# TYPE bareweb_dhcp_acks_total counter\n"));
        // Nanosecond words in seconds, the base unit.
        assert!(
            text.contains("bareweb_elapsed_seconds_total{core=\"0\",role=\"net\"} 0.000000001\n")
        );
        assert!(
            text.contains("# HELP bareweb_tx_tso_frames_total Of them, frames the device segments")
        );
    }

    #[test]
    fn help_text_is_escaped() {
        let mut buf = [0u8; 200];
        let mut w = Out {
            buf: &mut buf,
            len: 0,
        };
        family(&mut w, "x", MetricKind::Gauge, "a\\b\nc").unwrap();
        let n = w.len;
        assert_eq!(
            core::str::from_utf8(&buf[..n]).unwrap(),
            "# HELP bareweb_x a\\\\b\\nc\n# TYPE bareweb_x gauge\n"
        );
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
            let peer = [10, 0, 0, 1].into();
            let r = respond(
                page,
                &board,
                &req(target),
                peer,
                1_700_000_000,
                Fields {
                    server: "bw",
                    extra: b"",
                },
                &mut out,
            );
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

    /// docs/usage.md ("Monitoring") names every metric a server can show (DHCP's
    /// per-counter family is described there by pattern), so its table stays true.
    #[test]
    fn every_metric_is_in_the_usage_docs() {
        let drain: &'static crate::server::drain::Drain =
            Box::leak(Box::new(crate::server::drain::Drain::new(5_000, 30_000)));
        #[derive(Debug)]
        struct Reloads;
        impl crate::stats::platform::ReloadCounters for Reloads {
            fn reload_counts(&self) -> crate::stats::platform::ReloadCounts {
                crate::stats::platform::ReloadCounts::default()
            }
        }
        static ISSUANCE: crate::cores::challenge::Issuance =
            crate::cores::challenge::Issuance::new();
        ISSUANCE.publish("waiting for validation", 1_800_000_000, 0, 2);
        let board = Board::new("netcore", &[Role::Net, Role::Http])
            .with_drain(Some(drain))
            .with_reload(Some(&Reloads))
            .with_issuance(Some(&ISSUANCE));
        let mut out = vec![0u8; 64 * 1024];
        let n = render_metrics(&board, &mut out).unwrap();
        let text = core::str::from_utf8(&out[..n]).unwrap();
        assert!(text.contains("bareweb_reloads_total 0"), "{text}");
        assert!(text.contains("bareweb_acme_certificate_not_after_seconds 1800000000"));
        assert!(text.contains("bareweb_acme_failures 2"));
        let mut json_out = vec![0u8; 64 * 1024];
        let n = board.render_json(&mut json_out).unwrap();
        let json = core::str::from_utf8(&json_out[..n]).unwrap();
        assert!(
            json.contains("\"acme\":{\"phase\":\"waiting for validation\",\"certificate_not_after\":1800000000,\"next_attempt\":0,\"failures\":2,\"installed\":0}"),
            "{json}"
        );
        let docs = include_str!("../../../../docs/usage.md");
        let missing: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .filter_map(|l| l.split(' ').next())
            .filter(|name| !docs.contains(&format!("`{name}`")))
            .collect();
        assert!(missing.is_empty(), "not in docs/usage.md: {missing:?}");
    }
}
