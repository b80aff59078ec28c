//! HTTP/1.x: request parsing and response choice, as pure functions.
//!
//! Heads up! Read RFC 9110 (semantics) and RFC 9112 (HTTP/1.1 message syntax) before
//! changing anything here; the code quotes the sections where it makes a choice.
//!
//! The layer does no I/O and no allocation, and no input makes it panic:
//! - [`parse`] looks at the bytes received so far on a connection and answers
//!   [`Parse::Complete`] (a [`Request`] borrowing those bytes), [`Parse::Partial`] or
//!   [`Parse::Error`] with the status to answer before closing;
//! - [`respond`] resolves the request against the site ([`Lookup`]) and writes the status
//!   line and header fields (and for errors and redirects a small inline body) into a
//!   caller-owned buffer of [`HEAD_MAX`] bytes, returning which slice of which stored body
//!   follows on the wire;
//! - [`respond_error`] does the same for a request that could not be parsed (or timed out).
//!
//! ```
//! use bareweb_engine::http::{self, Parse};
//! use bareweb_engine::resource::{Found, Lookup};
//!
//! struct Empty;
//! impl<'a> Lookup<'a> for Empty {
//!     fn lookup(&self, _: &[u8]) -> Found<'a> {
//!         Found::NotFound
//!     }
//! }
//!
//! let rx = b"GET /missing HTTP/1.1\r\nHost: example\r\n\r\n";
//! let Parse::Complete { request, len } = http::parse(rx) else { panic!() };
//! assert_eq!(len, rx.len());
//! let mut head = [0u8; http::HEAD_MAX];
//! let resp = http::respond(&request, &Empty, 784111777, "bareweb", &mut head);
//! assert_eq!(resp.status, 404);
//! assert!(head[..resp.head_len].starts_with(b"HTTP/1.1 404 Not Found\r\n"));
//! assert!(!resp.close);
//! ```
//!
//! [`Lookup`]: crate::resource::Lookup

pub mod conn;
mod date;
pub(crate) mod fields;
pub mod head_cache;
mod hsts;
pub mod log;
mod range;
mod request;
mod response;
pub(crate) mod target;

pub use date::{clf_date, iso_date, ClfDate, IsoDate};
/// IMF-fixdate (`Date` field) of a Unix time; used by dynamic responses (`cores::board`).
pub use date::{format as imf_date, IMF_LEN};
pub use fields::{is_tchar, AcceptEncoding, Coding};
pub use head_cache::HeadCache;
pub use hsts::{Hsts, HSTS_EXPECTED};
pub use request::{parse, parse_general, Method, Parse, Request, Version};
pub use response::{
    redirects_to_https, respond, respond_cached, respond_error, respond_error_with,
    respond_https_redirect, BodySlice, Response, ACME_CHALLENGE,
};

/// Bytes of request head (request line, header fields and the empty line) we accept.
/// A head that does not end within this many bytes is answered 431 (or 414 when the
/// request line alone is too long). It is also the default receive buffer of each
/// connection (`server::Config::rx_buffer`), allocated for every TCB at start: raising it
/// to nginx's worst case (4 buffers of 8 KiB) would take a connection from about 8.4 KiB
/// (a 448-byte TCB and this buffer) to about 32.4 KiB.
pub const MAX_REQUEST: usize = 8192;

/// Longest request line (without its CRLF) we accept; longer is answered 414. Half of
/// [`MAX_REQUEST`], leaving the other half for the field lines; it costs no memory (the
/// line is read in place in the receive buffer), unlike `MAX_REQUEST`, which is the
/// per-connection receive buffer.
pub const MAX_REQUEST_LINE: usize = 4096;

/// Most header field lines in a request; more is answered 431. The general parser keeps
/// an array of this many (32 bytes each) on the stack while it parses, not per
/// connection.
pub const MAX_HEADERS: usize = 64;

/// Longest percent-decoded path we resolve; longer is answered 414. A path that needs
/// normalising is copied into a stack buffer of this size, and a redirect echoes the path
/// (percent-encoded) in a `Location` of the [`HEAD_MAX`]-byte response head.
pub const MAX_PATH: usize = 1024;

/// Size of the buffer [`respond`] and [`respond_error`] write into. Smaller buffers work
/// too, but a response that does not fit degrades to a bare 500.
pub const HEAD_MAX: usize = 1024;

/// An HTTP status code. The constants are the codes this layer produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Status(pub u16);

impl Status {
    /// 200 OK.
    pub const OK: Status = Status(200);
    /// 206 Partial Content.
    pub const PARTIAL_CONTENT: Status = Status(206);
    /// 301 Moved Permanently.
    pub const MOVED_PERMANENTLY: Status = Status(301);
    /// 308 Permanent Redirect.
    pub const PERMANENT_REDIRECT: Status = Status(308);
    /// 304 Not Modified.
    pub const NOT_MODIFIED: Status = Status(304);
    /// 400 Bad Request.
    pub const BAD_REQUEST: Status = Status(400);
    /// 404 Not Found.
    pub const NOT_FOUND: Status = Status(404);
    /// 405 Method Not Allowed.
    pub const METHOD_NOT_ALLOWED: Status = Status(405);
    /// 408 Request Timeout.
    pub const REQUEST_TIMEOUT: Status = Status(408);
    /// 412 Precondition Failed.
    pub const PRECONDITION_FAILED: Status = Status(412);
    /// 413 Content Too Large.
    pub const CONTENT_TOO_LARGE: Status = Status(413);
    /// 414 URI Too Long.
    pub const URI_TOO_LONG: Status = Status(414);
    /// 416 Range Not Satisfiable.
    pub const RANGE_NOT_SATISFIABLE: Status = Status(416);
    /// 421 Misdirected Request (no site answers the request's host).
    pub const MISDIRECTED_REQUEST: Status = Status(421);
    /// 431 Request Header Fields Too Large.
    pub const HEADER_FIELDS_TOO_LARGE: Status = Status(431);
    /// 500 Internal Server Error.
    pub const INTERNAL_SERVER_ERROR: Status = Status(500);
    /// 501 Not Implemented.
    pub const NOT_IMPLEMENTED: Status = Status(501);
    /// 503 Service Unavailable.
    pub const SERVICE_UNAVAILABLE: Status = Status(503);
    /// 505 HTTP Version Not Supported.
    pub const HTTP_VERSION_NOT_SUPPORTED: Status = Status(505);

    /// A redirect status: 301, 302, 303, 307 or 308 (anything else is 301; the site
    /// loader admits only those).
    pub const fn redirect(code: u16) -> Status {
        match code {
            302 | 303 | 307 | 308 => Status(code),
            _ => Status::MOVED_PERMANENTLY,
        }
    }

    /// The numeric code.
    pub const fn code(self) -> u16 {
        self.0
    }

    /// The reason phrase of RFC 9110 section 15 (empty for codes we do not know).
    pub const fn reason(self) -> &'static str {
        match self.0 {
            200 => "OK",
            206 => "Partial Content",
            301 => "Moved Permanently",
            302 => "Found",
            303 => "See Other",
            307 => "Temporary Redirect",
            308 => "Permanent Redirect",
            304 => "Not Modified",
            400 => "Bad Request",
            404 => "Not Found",
            405 => "Method Not Allowed",
            408 => "Request Timeout",
            412 => "Precondition Failed",
            413 => "Content Too Large",
            414 => "URI Too Long",
            416 => "Range Not Satisfiable",
            421 => "Misdirected Request",
            431 => "Request Header Fields Too Large",
            500 => "Internal Server Error",
            501 => "Not Implemented",
            503 => "Service Unavailable",
            505 => "HTTP Version Not Supported",
            _ => "",
        }
    }

    /// Whether the connection must be closed after answering with this status: errors
    /// that leave the request's framing in doubt.
    pub const fn always_closes(self) -> bool {
        matches!(self.0, 400 | 408 | 413 | 414 | 431 | 500 | 501 | 505)
    }
}
