//! Response choice (RFC 9110 sections 13-15) and the writing of the response head.
//!
//! The order of evaluation follows RFC 9110 13.2.2: method, target, lookup, then the
//! preconditions `If-Match` / `If-Unmodified-Since` (412), `If-None-Match` /
//! `If-Modified-Since` (304), then `Range` gated by `If-Range`.
//! The representation (identity or gzip) is chosen before the preconditions so they
//! compare against the validator of the variant that would be sent: a honoured range
//! always selects the identity body, since ranges of a gzip stream are not offered.

use super::fields::{self, Coding, EntityTag};
use super::head_cache::{HeadCache, Key};
use super::range::{self, Spec};
use super::target::{self, Target};
use super::{date, Method, Request, Status, Version, MAX_PATH};
use crate::resource::{Body, Chosen, Found, Lookup, Redirect, Resource};

/// The bytes of a stored body that follow the head on the wire: `body.data[start..end]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodySlice<'a> {
    /// The body (identity or gzip) with its block sums.
    pub body: Body<'a>,
    /// First byte to send.
    pub start: usize,
    /// One past the last byte to send; `start < end <= body.data.len()`.
    pub end: usize,
}

/// What [`respond`] or [`respond_error`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response<'a> {
    /// The status code sent.
    pub status: u16,
    /// Bytes written at the start of `head`: the status line and fields through the empty
    /// line, followed for errors and redirects by their small body (unless HEAD).
    pub head_len: usize,
    /// A stored body to send after the head; `None` for HEAD, 304, errors, redirects and
    /// empty bodies.
    pub body: Option<BodySlice<'a>>,
    /// Close the connection once the response is sent.
    pub close: bool,
    /// Bytes of content on the wire (an inline page's or the stored body slice's; 0 for
    /// HEAD and 304), for the access log.
    pub content_len: u64,
}

/// Appends to a fixed buffer; once something does not fit, everything after is dropped
/// and `overflow` is set (the caller then answers a bare 500).
struct Writer<'h> {
    buf: &'h mut [u8],
    len: usize,
    overflow: bool,
}

impl Writer<'_> {
    fn raw(&mut self, b: &[u8]) {
        if self.overflow {
            return;
        }
        let end = self.len.saturating_add(b.len());
        match self.buf.get_mut(self.len..end) {
            Some(dst) => {
                dst.copy_from_slice(b);
                self.len = end;
            }
            None => self.overflow = true,
        }
    }

    /// Writes a field value that comes from configuration or the site image, replacing
    /// anything but visible ASCII, SP and HTAB so it cannot break the message framing.
    fn text(&mut self, s: &[u8]) {
        let mut run = 0;
        for (i, &c) in s.iter().enumerate() {
            if !(c == b'\t' || (0x20..0x7f).contains(&c)) {
                self.raw(&s[run..i]);
                self.raw(b"?");
                run = i + 1;
            }
        }
        self.raw(&s[run..]);
    }

    fn num(&mut self, mut n: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.raw(&digits[i..]);
    }

    fn field(&mut self, name: &[u8], value: &[u8]) {
        self.raw(name);
        self.raw(b": ");
        self.raw(value);
        self.raw(b"\r\n");
    }

    fn num_field(&mut self, name: &[u8], n: u64) {
        self.raw(name);
        self.raw(b": ");
        self.num(n);
        self.raw(b"\r\n");
    }
}

/// What every response of one request shares.
struct Ctx<'s> {
    now: u64,
    server: &'s str,
    close: bool,
    version: Version,
    head_only: bool,
    /// Whole header lines every response on this connection carries, prepared when the
    /// server starts (HTTPS's `Strict-Transport-Security`); empty for none.
    extra: &'s [u8],
}

impl Ctx<'_> {
    /// Status line, `Date` and `Server`.
    fn begin(&self, w: &mut Writer<'_>, status: Status) {
        // Always our own version (RFC 9110 2.5), also to HTTP/1.0 clients.
        w.raw(b"HTTP/1.1 ");
        w.num(u64::from(status.code()));
        w.raw(b" ");
        w.raw(status.reason().as_bytes());
        w.raw(b"\r\n");
        // RFC 9110 6.6.1: "An origin server without a clock MUST NOT generate a Date
        // header field." A zero `now` means the clock is not set.
        if self.now != 0 {
            w.field(b"Date", &date::format(self.now));
        }
        // An empty name: the site asked for no `Server` field.
        if !self.server.is_empty() {
            w.raw(b"Server: ");
            w.text(self.server.as_bytes());
            w.raw(b"\r\n");
        }
    }

    /// The connection's extra lines, `Connection` and the empty line.
    fn end(&self, w: &mut Writer<'_>, close: bool) {
        w.raw(self.extra);
        if close {
            w.field(b"Connection", b"close");
        } else if self.version == Version::Http10 {
            // RFC 9112 9.3: an HTTP/1.0 connection persists only if the response says so.
            w.field(b"Connection", b"keep-alive");
        }
        w.raw(b"\r\n");
    }
}

const PAGE_A: &[u8] = b"<!DOCTYPE html>\n<html><head><title>";
const PAGE_B: &[u8] = b"</title></head>\n<body><h1>";
const PAGE_C: &[u8] = b"</h1></body></html>\n";

fn page_len(status: Status) -> u64 {
    let title = 4 + status.reason().len(); // "404 " + reason
    (PAGE_A.len() + PAGE_B.len() + PAGE_C.len() + 2 * title) as u64
}

fn page_title(w: &mut Writer<'_>, status: Status) {
    w.num(u64::from(status.code()));
    w.raw(b" ");
    w.raw(status.reason().as_bytes());
}

/// A complete small-HTML response for `status`; `extra` writes additional fields.
fn page(
    w: &mut Writer<'_>,
    ctx: &Ctx<'_>,
    status: Status,
    extra: impl FnOnce(&mut Writer<'_>),
) -> bool {
    let close = ctx.close || status.always_closes();
    ctx.begin(w, status);
    w.field(b"Content-Type", b"text/html; charset=utf-8");
    w.num_field(b"Content-Length", page_len(status));
    if status == Status::METHOD_NOT_ALLOWED {
        // RFC 9110 15.5.6: "The origin server MUST generate an Allow header field".
        w.field(b"Allow", b"GET, HEAD");
    }
    extra(w);
    ctx.end(w, close);
    if !ctx.head_only {
        w.raw(PAGE_A);
        page_title(w, status);
        w.raw(PAGE_B);
        page_title(w, status);
        w.raw(PAGE_C);
    }
    close
}

const FALLBACK: &[u8] =
    b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

/// Turns a finished writer into the response, or into a bare 500 if it overflowed.
/// `inline` is the length of a page body written into the head (0 for none).
fn finish<'a>(
    w: Writer<'_>,
    status: Status,
    close: bool,
    body: Option<BodySlice<'a>>,
    inline: u64,
) -> Response<'a> {
    if !w.overflow {
        let body = body.filter(|b| b.start < b.end);
        return Response {
            status: status.code(),
            head_len: w.len,
            content_len: inline + body.map_or(0, |b| (b.end - b.start) as u64),
            body,
            close,
        };
    }
    let head_len = match w.buf.get_mut(..FALLBACK.len()) {
        Some(dst) => {
            dst.copy_from_slice(FALLBACK);
            FALLBACK.len()
        }
        None => 0,
    };
    Response {
        status: Status::INTERNAL_SERVER_ERROR.code(),
        head_len,
        body: None,
        close: true,
        content_len: 0,
    }
}

/// The length of the inline page `page` wrote for `status` (0 for HEAD).
fn inline_len(ctx: &Ctx<'_>, status: Status) -> u64 {
    if ctx.head_only {
        0
    } else {
        page_len(status)
    }
}

/// Answers a request that could not be parsed (`Parse::Error(status)`), or a timeout
/// (408): a small HTML page with `Connection: close`. `now_unix == 0` means no clock (no
/// `Date` field).
pub fn respond_error(
    status: Status,
    now_unix: u64,
    server: &str,
    head: &mut [u8],
) -> Response<'static> {
    respond_error_with(status, now_unix, server, b"", head)
}

/// [`respond_error`] with `extra`, whole header lines prepared once (`\r\n` after each),
/// written in the head (HTTPS's `Strict-Transport-Security`).
pub fn respond_error_with(
    status: Status,
    now_unix: u64,
    server: &str,
    extra: &[u8],
    head: &mut [u8],
) -> Response<'static> {
    let ctx = Ctx {
        now: now_unix,
        server,
        close: true,
        version: Version::Http11,
        head_only: false,
        extra,
    };
    let mut w = Writer {
        buf: head,
        len: 0,
        overflow: false,
    };
    page(&mut w, &ctx, status, |_| {});
    let inline = inline_len(&ctx, status);
    finish(w, status, true, None, inline)
}

/// The path plain HTTP keeps serving under `--http-redirect`: ACME's HTTP-01 challenges
/// (RFC 8555 §8.3) must be answered over plain HTTP.
pub const ACME_CHALLENGE: &[u8] = b"/.well-known/acme-challenge/";

/// Whether `--http-redirect` sends request `req` to HTTPS: every request but one for
/// [`ACME_CHALLENGE`]'s path.
pub fn redirects_to_https(req: &Request<'_>) -> bool {
    !req.target.starts_with(ACME_CHALLENGE)
}

/// `308 Permanent Redirect` of `req` to the same target on `https://` (its `Host`
/// without a port, then `:https_port` unless 443): plain HTTP's answer under
/// `--http-redirect`. A request without a usable `Host` (HTTP/1.0, or characters no host
/// name has) or with a target not in origin form gets 400: there is nothing to redirect
/// it to.
pub fn respond_https_redirect(
    req: &Request<'_>,
    https_port: u16,
    now_unix: u64,
    server: &str,
    head: &mut [u8],
) -> Response<'static> {
    let host = req.host.map(host_name).unwrap_or(b"");
    let origin_form = req.target.first() == Some(&b'/');
    if host.is_empty() || !origin_form {
        return respond_error(Status::BAD_REQUEST, now_unix, server, head);
    }
    let ctx = Ctx {
        now: now_unix,
        server,
        close: !req.keep_alive,
        version: req.version,
        head_only: req.method == Method::Head,
        extra: b"",
    };
    let mut w = Writer {
        buf: head,
        len: 0,
        overflow: false,
    };
    let status = Status::PERMANENT_REDIRECT;
    let close = page(&mut w, &ctx, status, |w| {
        w.raw(b"Location: https://");
        w.raw(host);
        if https_port != 443 {
            w.raw(b":");
            w.num(u64::from(https_port));
        }
        w.raw(req.target);
        w.raw(b"\r\n");
    });
    let inline = inline_len(&ctx, status);
    finish(w, status, close, None, inline)
}

/// The host name of a `Host` field value without its port (`example.org:8080`,
/// `[::1]:80`), or empty when it has a character no host name or address has.
fn host_name(host: &[u8]) -> &[u8] {
    let name = match host.iter().rposition(|&b| b == b':') {
        Some(i)
            if !host[i + 1..].is_empty()
                && host[i + 1..].iter().all(u8::is_ascii_digit)
                && (host[0] != b'[' || host[i - 1] == b']') =>
        {
            &host[..i]
        }
        _ => host,
    };
    let ok =
        |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'[' | b']' | b':');
    if name.iter().all(ok) {
        name
    } else {
        &[]
    }
}

/// Chooses the response to `req` from `site` and writes its head into `head` (at least
/// [`HEAD_MAX`](super::HEAD_MAX) bytes; a response that does not fit becomes a bare 500).
/// `now_unix == 0` means no clock: no `Date` field, and `Last-Modified` is not clamped
/// to the present.
pub fn respond<'a, L: Lookup<'a>>(
    req: &Request<'_>,
    site: &L,
    now_unix: u64,
    server: &str,
    head: &mut [u8],
) -> Response<'a> {
    respond_in(req, site, now_unix, server, b"", head, None)
}

/// [`respond`], with a full `200` head taken from `cache` when it holds it (and kept there
/// when not): the same bytes, without rendering them again. `cache` must be used with
/// this one `site` only (it remembers the addresses of the site's strings; the sites of
/// an image with virtual hosts share it, their strings lying apart in the one image).
/// `extra` is whole header lines (`\r\n` after each) every response carries, prepared
/// once (HTTPS's `Strict-Transport-Security`); empty for none.
pub fn respond_cached<'a, L: Lookup<'a>>(
    req: &Request<'_>,
    site: &L,
    now_unix: u64,
    server: &str,
    extra: &[u8],
    head: &mut [u8],
    cache: &mut HeadCache,
) -> Response<'a> {
    respond_in(req, site, now_unix, server, extra, head, Some(cache))
}

/// The site for the request's host answers (virtual hosts, [`Lookup::for_host`]); with
/// none, the site asked answers only the server's own pages and 421 for the rest.
fn respond_in<'a, L: Lookup<'a>>(
    req: &Request<'_>,
    site: &L,
    now_unix: u64,
    server: &str,
    extra: &[u8],
    head: &mut [u8],
    cache: Option<&mut HeadCache>,
) -> Response<'a> {
    let chosen = site.for_host(req.host);
    // One call of the responder for the three cases, so it stays one body.
    let (own, missing, server) = match &chosen {
        Chosen::This => (site, Status::NOT_FOUND, server),
        Chosen::Other(own) => (own, Status::NOT_FOUND, own.server_name().unwrap_or(server)),
        Chosen::Misdirected => (site, Status::MISDIRECTED_REQUEST, server),
    };
    respond_site(req, own, missing, now_unix, server, extra, head, cache)
}

/// [`respond_in`] for the site chosen; a path it has nothing for gets `missing`.
#[allow(clippy::too_many_arguments)]
fn respond_site<'a, L: Lookup<'a>>(
    req: &Request<'_>,
    site: &L,
    missing: Status,
    now_unix: u64,
    server: &str,
    extra: &[u8],
    head: &mut [u8],
    cache: Option<&mut HeadCache>,
) -> Response<'a> {
    let ctx = Ctx {
        now: now_unix,
        server,
        // We never read request content, so a request with some ends the connection.
        close: !req.keep_alive || req.has_body,
        version: req.version,
        head_only: req.method == Method::Head,
        extra,
    };
    let w = Writer {
        buf: head,
        len: 0,
        overflow: false,
    };
    let error = |w: Writer<'_>, status: Status| error_response(w, &ctx, req, site, status);
    match req.method {
        Method::Get | Method::Head => {}
        Method::Other => return error(w, Status::METHOD_NOT_ALLOWED),
        Method::Unknown => return error(w, Status::NOT_IMPLEMENTED),
    }
    let Ok(t) = target::split(req.target) else {
        return error(w, Status::BAD_REQUEST);
    };
    // A path that normalising would not change is used as it is (`target::is_normal`).
    let mut buf: [u8; MAX_PATH];
    let path = if target::is_normal(t.path, MAX_PATH) {
        t.path
    } else {
        buf = [0u8; MAX_PATH];
        match target::normalise(t.path, &mut buf) {
            Ok(n) => &buf[..n],
            Err(target::Error::Bad) => return error(w, Status::BAD_REQUEST),
            Err(target::Error::TooLong) => return error(w, Status::URI_TOO_LONG),
        }
    };
    if let Some(r) = site.redirect(path) {
        return redirect(w, &ctx, site.common_headers(), r, path, t);
    }
    match site.lookup(path) {
        Found::NotFound => error(w, missing),
        Found::AddSlash => {
            let add_slash = Redirect {
                status: Status::MOVED_PERMANENTLY.code(),
                to: "",
                matched: 0,
                pattern: "",
            };
            redirect(w, &ctx, site.common_headers(), add_slash, path, t)
        }
        Found::Resource(res) => serve(w, &ctx, req, &res, cache),
    }
}

/// An error response: the site's page for `status` when it has one (sent with that
/// status, in the encoding the client prefers), else the built-in small page; with the
/// site's common header lines either way.
fn error_response<'a, L: Lookup<'a>>(
    mut w: Writer<'_>,
    ctx: &Ctx<'_>,
    req: &Request<'_>,
    site: &L,
    status: Status,
) -> Response<'a> {
    let common = site.common_headers();
    let Some(res) = site.error_page(status.code()) else {
        let close = page(&mut w, ctx, status, |w| w.raw(common.as_bytes()));
        return finish(w, status, close, None, inline_len(ctx, status));
    };
    let close = ctx.close || status.always_closes();
    let (body, coding) = pick(req, &res);
    ctx.begin(&mut w, status);
    w.raw(b"Content-Type: ");
    w.text(res.content_type.as_bytes());
    w.raw(b"\r\n");
    w.num_field(b"Content-Length", body.data.len() as u64);
    if let Some(c) = coding {
        w.field(b"Content-Encoding", c.token());
    }
    if has_variants(&res) {
        w.field(b"Vary", b"Accept-Encoding");
    }
    if status == Status::METHOD_NOT_ALLOWED {
        w.field(b"Allow", b"GET, HEAD");
    }
    w.raw(common.as_bytes());
    ctx.end(&mut w, close);
    let slice = (!ctx.head_only).then_some(BodySlice {
        body,
        start: 0,
        end: body.data.len(),
    });
    finish(w, status, close, slice, 0)
}

/// A redirect: to the normalised path plus `/` (`r.to` empty), or a configured one to
/// `r.to` followed by the unmatched rest of the path, or with its placeholders filled
/// ([`Redirect::location`]); the query is kept either way.
fn redirect<'a>(
    mut w: Writer<'_>,
    ctx: &Ctx<'_>,
    common: &str,
    r: Redirect<'_>,
    path: &[u8],
    t: Target<'_>,
) -> Response<'a> {
    let status = Status::redirect(r.status);
    let close = page(&mut w, ctx, status, |w| {
        w.raw(b"Location: ");
        if r.to.is_empty() {
            target::encode_path(path, |p| w.raw(p));
            if !path.ends_with(b"/") {
                w.raw(b"/");
            }
        } else {
            r.location(path, |piece, from_path| {
                if from_path {
                    target::encode_path(piece, |p| w.raw(p));
                } else {
                    w.text(piece);
                }
            });
        }
        if let Some(q) = t.query {
            w.raw(if r.to.contains('?') { b"&" } else { b"?" });
            target::encode_query(q, |p| w.raw(p));
        }
        w.raw(b"\r\n");
        w.raw(common.as_bytes());
    });
    let inline = inline_len(ctx, status);
    finish(w, status, close, None, inline)
}

/// Whether `res` has any encoded variant (so responses vary on Accept-Encoding).
fn has_variants(res: &Resource<'_>) -> bool {
    res.gzip.is_some() || res.br.is_some() || res.zstd.is_some()
}

/// The body to send for `res` as the request's `Accept-Encoding` prefers, and its coding
/// (`None`: identity).
fn pick<'a>(req: &Request<'_>, res: &Resource<'a>) -> (Body<'a>, Option<Coding>) {
    let mut have = [(Coding::Gzip, 0usize); 3];
    let mut n = 0;
    for (c, b) in [
        (Coding::Br, res.br),
        (Coding::Zstd, res.zstd),
        (Coding::Gzip, res.gzip),
    ] {
        if let Some(b) = b {
            have[n] = (c, b.data.len());
            n += 1;
        }
    }
    match req.accept.choose(&have[..n]) {
        Some(Coding::Gzip) => (res.gzip.unwrap_or(res.identity), Some(Coding::Gzip)),
        Some(Coding::Br) => (res.br.unwrap_or(res.identity), Some(Coding::Br)),
        Some(Coding::Zstd) => (res.zstd.unwrap_or(res.identity), Some(Coding::Zstd)),
        None => (res.identity, None),
    }
}

/// Whether `If-Range` (RFC 9110 13.1.5) lets the range through: absent, or an entity-tag
/// that matches the identity tag strongly, or an HTTP-date exactly equal to
/// `Last-Modified`. Anything else, including a malformed value, means "send it all".
fn if_range_passes(field: Option<&[u8]>, ours: &EntityTag<'_>, lm: u64, now: u64) -> bool {
    let Some(v) = field else { return true };
    let v = fields::trim_ows(v);
    if v.starts_with(b"\"") || v.starts_with(b"W/") {
        EntityTag::parse(v).is_some_and(|t| t.strong_eq(ours, b""))
    } else {
        date::parse(v, now) == Some(lm)
    }
}

/// Writes `etag` with `suffix` inserted before its closing quote.
fn write_etag(w: &mut Writer<'_>, etag: &str, suffix: &[u8]) {
    let etag = etag.as_bytes();
    w.raw(b"ETag: ");
    match etag {
        [.., b'"'] if etag.len() >= 2 && !suffix.is_empty() => {
            w.text(&etag[..etag.len() - 1]);
            w.text(suffix);
            w.raw(b"\"");
        }
        _ => {
            w.text(etag);
            w.text(suffix);
        }
    }
    w.raw(b"\r\n");
}

fn serve<'a>(
    mut w: Writer<'_>,
    ctx: &Ctx<'_>,
    req: &Request<'_>,
    res: &Resource<'a>,
    mut cache: Option<&mut HeadCache>,
) -> Response<'a> {
    // RFC 9110 8.8.2.1: "An origin server with a clock ... MUST NOT send a Last-Modified
    // date that is later than the server's time of message origination (Date)."
    let lm = if ctx.now != 0 {
        res.last_modified.min(ctx.now)
    } else {
        res.last_modified
    };
    let ours = EntityTag::of_stored(res.etag);
    let vary = has_variants(res);

    // RFC 9110 14.2: "A server MUST ignore a Range header field received with a request
    // method that is unrecognized or for which range handling is not defined" (only GET).
    let range: Option<Spec> = match (req.method, req.range) {
        (Method::Get, Some(r)) => {
            range::parse(r).filter(|_| if_range_passes(req.if_range, &ours, lm, ctx.now))
        }
        _ => None,
    };
    let (body, coding) = match range {
        None => pick(req, res),
        Some(_) => (res.identity, None),
    };
    let suffix = coding.map_or(&b""[..], Coding::etag_suffix);

    // RFC 9110 13.2.2 steps 1-2: If-Match (strong comparison, 13.1.1), else
    // If-Unmodified-Since (13.1.4, ignored when it is not a valid date). A failure wins
    // over everything after it, a Range included.
    let precondition = match (req.if_match, req.if_unmodified_since) {
        (Some(im), _) => fields::if_match(im, &ours, suffix),
        (None, Some(ius)) => date::parse(ius, ctx.now).is_none_or(|d| lm <= d),
        (None, None) => true,
    };
    if !precondition {
        let status = Status::PRECONDITION_FAILED;
        let close = page(&mut w, ctx, status, |w| {
            if vary {
                w.field(b"Vary", b"Accept-Encoding");
            }
            w.raw(res.headers.as_bytes());
        });
        let inline = inline_len(ctx, status);
        return finish(w, status, close, None, inline);
    }

    // RFC 9110 13.2.2 steps 3-4; If-Modified-Since only without If-None-Match (13.1.3).
    let not_modified = match (req.if_none_match, req.if_modified_since) {
        (Some(inm), _) => fields::if_none_match(inm, &ours, suffix),
        (None, Some(ims)) => date::parse(ims, ctx.now).is_some_and(|d| lm <= d),
        (None, None) => false,
    };
    if not_modified {
        let status = Status::NOT_MODIFIED;
        ctx.begin(&mut w, status);
        // RFC 9110 15.4.5: the fields a 200 would carry among Date, ETag, Vary (plus
        // Last-Modified, which helps caches); no content metadata.
        write_etag(&mut w, res.etag, suffix);
        w.field(b"Last-Modified", &date::format(lm));
        if vary {
            w.field(b"Vary", b"Accept-Encoding");
        }
        w.raw(res.headers.as_bytes());
        ctx.end(&mut w, ctx.close);
        return finish(w, status, ctx.close, None, 0);
    }

    let total = body.data.len();
    let (status, start, end) = match range.map(|s| range::resolve(s, total as u64)) {
        None => (Status::OK, 0, total),
        Some(Some((a, z))) => (Status::PARTIAL_CONTENT, a as usize, z as usize),
        Some(None) => {
            let status = Status::RANGE_NOT_SATISFIABLE;
            // RFC 9110 15.5.17: "a Content-Range header field ... with an
            // unsatisfied-range value".
            let close = page(&mut w, ctx, status, |w| {
                w.raw(b"Content-Range: bytes */");
                w.num(total as u64);
                w.raw(b"\r\n");
                if vary {
                    w.field(b"Vary", b"Accept-Encoding");
                }
                w.raw(res.headers.as_bytes());
            });
            let inline = inline_len(ctx, status);
            return finish(w, status, close, None, inline);
        }
    };
    // A full 200 head is the same for every request of this variant in this second.
    let key = (status == Status::OK).then(|| {
        let version = ctx.version;
        Key::new(
            res, coding, total, vary, ctx.now, ctx.close, version, ctx.server, ctx.extra,
        )
    });
    if let (Some(k), Some(c)) = (&key, cache.as_deref_mut()) {
        if let Some(cached) = c.get(k) {
            if let Some(dst) = w.buf.get_mut(..cached.len()) {
                dst.copy_from_slice(cached);
                w.len = cached.len();
                let slice = (!ctx.head_only).then_some(BodySlice { body, start, end });
                return finish(w, status, ctx.close, slice, 0);
            }
        }
    }
    ctx.begin(&mut w, status);
    w.raw(b"Content-Type: ");
    w.text(res.content_type.as_bytes());
    w.raw(b"\r\n");
    w.num_field(b"Content-Length", (end - start) as u64);
    w.field(b"Last-Modified", &date::format(lm));
    write_etag(&mut w, res.etag, suffix);
    if let Some(c) = coding {
        w.field(b"Content-Encoding", c.token());
    } else {
        // Ranges are served of the identity body only; a gzip response does not invite
        // a client to resume it with a Range (which would get identity bytes).
        w.field(b"Accept-Ranges", b"bytes");
    }
    if vary {
        w.field(b"Vary", b"Accept-Encoding");
    }
    if status == Status::PARTIAL_CONTENT {
        w.raw(b"Content-Range: bytes ");
        w.num(start as u64);
        w.raw(b"-");
        w.num(end as u64 - 1);
        w.raw(b"/");
        w.num(total as u64);
        w.raw(b"\r\n");
    }
    w.raw(res.headers.as_bytes());
    ctx.end(&mut w, ctx.close);
    if let (Some(k), Some(c), false) = (key, cache, w.overflow) {
        c.put(k, &w.buf[..w.len]);
    }
    let slice = (!ctx.head_only).then_some(BodySlice { body, start, end });
    finish(w, status, ctx.close, slice, 0)
}

#[cfg(test)]
mod tests;
