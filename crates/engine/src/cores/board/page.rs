//! The board's pages as the server serves them: the stats JSON as a dynamic page
//! ([`StatsPage`], each core publishing its own row first) and the HTML page added to a
//! site ([`WithStatsPage`], on every host a request names).

use alloc::boxed::Box;

use super::Board;
use crate::cores::pages;
use crate::http::{self, Request};
use crate::resource::{Body, Found, Lookup, Resource};
use crate::server::{DynamicPage, Server};
use crate::stats::{CoreTimes, Stats, Stay};

/// Path of the JSON (at the default place).
pub const STATS_PATH: &[u8] = b"/.well-known/bareweb/stats";
/// Path of the HTML page (at the default place).
pub const PAGE_PATH: &[u8] = b"/.well-known/bareweb/";

/// Whether a request target asks for the JSON at its default place (the exact path, with
/// or without a query).
pub fn is_stats_target(target: &[u8]) -> bool {
    match target.strip_prefix(STATS_PATH) {
        Some(rest) => rest.is_empty() || rest[0] == b'?',
        None => false,
    }
}

/// The stats JSON as the server's dynamic page: core `core` of `board` publishes its own
/// row first (so that row is current), then renders every row.
pub struct StatsPage {
    board: &'static Board,
    core: usize,
}

impl StatsPage {
    /// The page served by core `core` of `board`.
    pub fn new(board: &'static Board, core: usize) -> StatsPage {
        StatsPage { board, core }
    }
}

impl StatsPage {
    /// Whether `target` asks for a published ACME HTTP-01 answer (one load when none is
    /// published; any other token stays the site's).
    fn challenge(&self, target: &[u8]) -> bool {
        let Some(table) = self.board.http01().filter(|t| t.any()) else {
            return false;
        };
        let mut scratch = [0u8; crate::cores::challenge::MAX_ANSWER];
        crate::cores::challenge::token_of(target)
            .is_some_and(|token| table.answer(token, &mut scratch).is_some())
    }
}

impl DynamicPage for StatsPage {
    fn buffer_len(&self) -> usize {
        self.board.buffer_len()
    }

    fn claims(&self, target: &[u8], peer: core::net::IpAddr) -> bool {
        self.board.pages().page_for(target, peer).is_some() || self.challenge(target)
    }

    fn respond(
        &self,
        (stats, times, stay): (&Stats, &CoreTimes, &Stay),
        request: &Request<'_>,
        peer: core::net::IpAddr,
        now_unix: u64,
        server_name: &str,
        extra: &[u8],
        out: &mut [u8],
    ) -> http::Response<'static> {
        self.board.publish_server(self.core, stats, times, stay);
        let fields = pages::Fields {
            server: server_name,
            extra,
        };
        if self.challenge(request.target) {
            let (page, board) = (pages::Page::Challenge, self.board);
            return pages::respond(page, board, request, peer, now_unix, fields, out);
        }
        // `claims` said this page answers; the client decides which answer.
        match self.board.pages().page_for(request.target, peer) {
            Some(page) => pages::respond(page, self.board, request, peer, now_unix, fields, out),
            None => {
                http::respond_error_with(http::Status::NOT_FOUND, now_unix, server_name, extra, out)
            }
        }
    }
}

impl<L: Lookup<'static>> Server<L> {
    /// Answers `GET /.well-known/bareweb/stats` with the JSON of `board`, where this
    /// server is core `core`. Allocates the response buffers now, once. Without this call
    /// the path is the site's, as before.
    pub fn serve_stats(&mut self, board: &'static Board, core: usize) {
        self.serve_dynamic(Box::new(StatsPage::new(board, core)));
    }
}

/// Writes the whole stats response (head and, unless HEAD, the JSON) into `out`
/// ([`JSON_MAX`] bytes). Its `head_len` covers everything; it has no stored body.
pub fn respond_stats(
    board: &Board,
    req: &Request<'_>,
    now_unix: u64,
    server: &str,
    out: &mut [u8],
) -> http::Response<'static> {
    pages::respond(
        pages::Page::Json,
        board,
        req,
        [0u8; 4].into(),
        now_unix,
        pages::Fields { server, extra: b"" },
        out,
    )
}

/// The HTML page: inline CSS, JS and SVG, no external assets.
pub const PAGE_HTML: &str = include_str!("../stats.html");

/// A site with the stats page added at `BASE/` (the second field, without its slash;
/// [`PAGE_PATH`] by default) and a redirect from `BASE`; every other path is the inner
/// site's.
#[derive(Debug, Clone, Copy)]
pub struct WithStatsPage<L>(pub L, pub &'static str);

impl<L> WithStatsPage<L> {
    /// The stats page at its default place.
    pub fn new(site: L) -> Self {
        WithStatsPage(site, pages::DEFAULT_BASE)
    }
}

/// Entity tag of the page: changes with the crate version.
const PAGE_ETAG: &str = concat!("\"bareweb-stats-", env!("CARGO_PKG_VERSION"), "\"");

impl<L: Lookup<'static>> Lookup<'static> for WithStatsPage<L> {
    /// The stats page is the server's: on every site a host chooses, and for a host no
    /// site answers (the inner site, which then answers nothing else).
    fn for_host(&self, host: Option<&[u8]>) -> crate::resource::Chosen<Self> {
        use crate::resource::Chosen;
        match self.0.for_host(host) {
            Chosen::This => Chosen::This,
            Chosen::Other(site) => Chosen::Other(WithStatsPage(site, self.1)),
            Chosen::Misdirected => Chosen::Misdirected,
        }
    }

    fn lookup(&self, path: &[u8]) -> Found<'static> {
        let base = self.1.as_bytes();
        let page = path.strip_prefix(base);
        if page == Some(b"/") {
            // No stored block sums: the (rarely sent) page's checksums are summed on the spot.
            // The site's header lines for every path go with it.
            return Found::Resource(Resource {
                headers: self.0.common_headers(),
                ..Resource::plain(
                    "text/html; charset=utf-8",
                    PAGE_ETAG,
                    1_767_225_600, // 2026-01-01, the page's version date
                    Body {
                        data: PAGE_HTML.as_bytes(),
                        block_sums: &[],
                    },
                )
            });
        }
        if page == Some(b"") {
            return Found::AddSlash;
        }
        self.0.lookup(path)
    }

    fn redirect(&self, path: &[u8]) -> Option<crate::resource::Redirect<'static>> {
        self.0.redirect(path)
    }

    fn error_page(&self, status: u16) -> Option<Resource<'static>> {
        self.0.error_page(status)
    }

    fn common_headers(&self) -> &'static str {
        self.0.common_headers()
    }

    fn server_name(&self) -> Option<&'static str> {
        self.0.server_name()
    }
}
