//! The fetcher's HTTP/1.1: [`write_get`] writes a GET into a buffer, [`Reader`] reads one
//! response from the bytes of a stream as they come (any split), keeping at most
//! [`HEAD_MAX`] bytes of its head and handing the body on without copying it. A body is
//! delimited by `Content-Length`, or by the end of the stream when there is none (and no
//! body for HEAD-less status codes 1xx, 204 and 304). `Transfer-Encoding` is refused
//! (the load generator asks static files of servers that send lengths) unless the reader
//! was made with [`Reader::chunked`] (the server's own HTTPS client, whose CA may send
//! chunked bodies: RFC 9112 §7.1, sizes of at most 15 hex digits, extensions and
//! trailers skipped within [`LINE_MAX`] bytes a line and [`HEAD_MAX`] of trailers, every
//! line ended by CRLF); so is any head that does not parse. A response to HEAD has no
//! body ([`Reader::set_head_request`]). The kept head's fields can be looked up ([`Reader::header`]). Never panics on
//! what a server sends.

/// The most bytes of a response head kept.
pub const HEAD_MAX: usize = 2048;
/// The longest chunk-size line (with its extensions) or trailer line read.
pub const LINE_MAX: usize = 1024;

/// Writes `GET path HTTP/1.1` with `Host` (and `Connection: close` when `close`) into
/// `buf`; returns its length, or `None` if it does not fit.
pub fn write_get(buf: &mut [u8], host: &str, path: &str, close: bool) -> Option<usize> {
    let parts: [&[u8]; 6] = [
        b"GET ",
        path.as_bytes(),
        b" HTTP/1.1\r\nHost: ",
        host.as_bytes(),
        if close {
            b"\r\nConnection: close\r\n\r\n"
        } else {
            b"\r\n\r\n"
        },
        b"",
    ];
    let mut at = 0;
    for p in parts {
        buf.get_mut(at..at + p.len())?.copy_from_slice(p);
        at += p.len();
    }
    Some(at)
}

/// Why a response could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadResponse {
    /// The head is not HTTP/1.x, or a field is malformed.
    Malformed,
    /// The head is longer than [`HEAD_MAX`].
    HeadTooLong,
    /// A transfer coding the reader does not decode (any, unless made for chunked; then
    /// any but chunked alone).
    TransferEncoding,
    /// A chunk's size line, its data's end or a trailer does not parse.
    BadChunk,
}

/// Where a reader is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Head,
    Body {
        left: u64,
    },
    UntilClose,
    /// Chunked: in a chunk-size line (its value so far, digits, where in the line, bytes
    /// of it).
    ChunkSize {
        size: u64,
        digits: u8,
        at: SizeLine,
        len: u16,
    },
    /// Chunked: in a chunk's data.
    ChunkData {
        left: u64,
    },
    /// Chunked: the CRLF after a chunk's data (bytes of it seen).
    ChunkEnd {
        seen: u8,
    },
    /// Chunked: in the trailer section (bytes of the current line, a CR just seen).
    Trailer {
        len: u16,
        cr: bool,
    },
    Done,
}

/// Where a chunk-size line is (RFC 9112 §7.1: `chunk-size [ BWS ; chunk-ext ] CRLF`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SizeLine {
    /// In the hex digits.
    Digits,
    /// After them: spaces or tabs, then `;` or CR.
    Space,
    /// In the extensions: anything but CR and LF, until CR.
    Ext,
    /// A CR seen: LF must follow.
    Cr,
}

/// The start of a chunk-size line.
const CHUNK_START: Phase = Phase::ChunkSize {
    size: 0,
    digits: 0,
    at: SizeLine::Digits,
    len: 0,
};

/// What [`Reader::feed`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fed {
    /// Bytes of the input taken (the rest belongs to what follows the response).
    pub used: usize,
    /// Where the body part of the input lies, `[start, end)` of the input.
    pub body: (usize, usize),
    /// The response is complete.
    pub done: bool,
}

/// Reads one response.
#[derive(Debug, Clone)]
pub struct Reader {
    phase: Phase,
    head: [u8; HEAD_MAX],
    head_len: usize,
    /// One past the head's blank line, once read.
    head_end: usize,
    /// Chunked bodies are read (else refused).
    chunked_ok: bool,
    /// The response answers a HEAD: no body, whatever its head says.
    head_request: bool,
    /// Bytes of trailer lines read (bounded by [`HEAD_MAX`]).
    trailer_bytes: usize,
    /// The status code (0 until the head is read).
    pub status: u16,
    /// The server said `Connection: close` (or spoke HTTP/1.0).
    pub close: bool,
    /// Body bytes read.
    pub body_len: u64,
}

impl Default for Reader {
    fn default() -> Self {
        Reader::new()
    }
}

impl Reader {
    /// A reader waiting for a head.
    pub const fn new() -> Reader {
        Reader {
            phase: Phase::Head,
            head: [0; HEAD_MAX],
            head_len: 0,
            head_end: 0,
            chunked_ok: false,
            head_request: false,
            trailer_bytes: 0,
            status: 0,
            close: false,
            body_len: 0,
        }
    }

    /// A reader that also reads chunked bodies (see the module's words on [`Reader::feed`]
    /// in that case).
    pub const fn chunked() -> Reader {
        let mut r = Reader::new();
        r.chunked_ok = true;
        r
    }

    /// The value of the response's field `name` (the first such field), once the head is
    /// read.
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        if self.head_end == 0 {
            return None;
        }
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut resp = httparse::Response::new(&mut headers);
        resp.parse(&self.head[..self.head_end]).ok()?;
        let value = resp
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))?
            .value;
        // A slice of the kept head (httparse's borrow ends with this call).
        let start = value.as_ptr() as usize - self.head.as_ptr() as usize;
        self.head.get(start..start + value.len())
    }

    /// Whether the response answers a HEAD request (then it has no body, whatever its
    /// `Content-Length` or `Transfer-Encoding` say: RFC 9110 §9.3.2).
    pub fn set_head_request(&mut self, head: bool) {
        self.head_request = head;
    }

    /// Ready for the next response.
    pub fn reset(&mut self) {
        self.phase = Phase::Head;
        self.head_len = 0;
        self.head_end = 0;
        self.trailer_bytes = 0;
        self.status = 0;
        self.close = false;
        self.body_len = 0;
    }

    /// Whether the response is complete.
    pub fn done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// Whether nothing of a response has come yet.
    pub fn untouched(&self) -> bool {
        self.phase == Phase::Head && self.head_len == 0
    }

    /// The end of the stream came: a body delimited by it is complete. Returns whether the
    /// response is complete.
    pub fn end_of_stream(&mut self) -> bool {
        if self.phase == Phase::UntilClose {
            self.phase = Phase::Done;
        }
        self.done()
    }

    /// Takes stream bytes. With a chunked body, one call hands on at most one chunk's
    /// data and may stop before the input's end (at that data's end): call again with the
    /// rest until `used` covers it or the response is done.
    pub fn feed(&mut self, data: &[u8]) -> Result<Fed, BadResponse> {
        let mut at = 0;
        if self.phase == Phase::Head {
            // Look for the blank line across what is kept and what came.
            let old = self.head_len;
            let room = HEAD_MAX - old;
            let take = data.len().min(room);
            self.head[old..old + take].copy_from_slice(&data[..take]);
            self.head_len += take;
            let from = old.saturating_sub(3);
            let Some(end) = find_blank_line(&self.head[from..self.head_len]).map(|e| e + from)
            else {
                if self.head_len == HEAD_MAX {
                    return Err(BadResponse::HeadTooLong);
                }
                return Ok(Fed {
                    used: data.len(),
                    body: (data.len(), data.len()),
                    done: false,
                });
            };
            at = end - old;
            self.parse_head(end)?;
        }
        let body_start = at;
        match self.phase {
            Phase::Body { left } => {
                let n = ((data.len() - at) as u64).min(left);
                at += n as usize;
                self.body_len += n;
                self.phase = if left == n {
                    Phase::Done
                } else {
                    Phase::Body { left: left - n }
                };
            }
            Phase::UntilClose => {
                self.body_len += (data.len() - at) as u64;
                at = data.len();
            }
            Phase::ChunkSize { .. }
            | Phase::ChunkData { .. }
            | Phase::ChunkEnd { .. }
            | Phase::Trailer { .. } => return self.feed_chunked(data, at),
            Phase::Head | Phase::Done => {}
        }
        Ok(Fed {
            used: at,
            body: (body_start, at),
            done: self.phase == Phase::Done,
        })
    }

    /// The chunked body from `data[at..]`: framing bytes are taken until a chunk's data
    /// starts; then that data (up to the input's end) is the call's body range. Every line
    /// ends in CRLF (a bare CR or LF is refused: RFC 9112 §2.2 lets a recipient refuse
    /// it, and a framing that two readers could split differently is a smuggling risk).
    fn feed_chunked(&mut self, data: &[u8], mut at: usize) -> Result<Fed, BadResponse> {
        while at < data.len() {
            let b = data[at];
            match self.phase {
                Phase::ChunkSize {
                    size,
                    digits,
                    at: line,
                    len,
                } => {
                    at += 1;
                    let len = len + 1;
                    if usize::from(len) > LINE_MAX {
                        return Err(BadResponse::BadChunk);
                    }
                    let to = |at| Phase::ChunkSize {
                        size,
                        digits,
                        at,
                        len,
                    };
                    self.phase = match (line, b) {
                        (SizeLine::Digits, _) if b.is_ascii_hexdigit() => {
                            if digits >= 15 {
                                return Err(BadResponse::BadChunk);
                            }
                            let d = (b as char).to_digit(16).unwrap_or(0);
                            Phase::ChunkSize {
                                size: size * 16 + u64::from(d),
                                digits: digits + 1,
                                at: SizeLine::Digits,
                                len,
                            }
                        }
                        (SizeLine::Digits | SizeLine::Space, b' ' | b'\t') if digits > 0 => {
                            to(SizeLine::Space)
                        }
                        (SizeLine::Digits | SizeLine::Space, b';') if digits > 0 => {
                            to(SizeLine::Ext)
                        }
                        (SizeLine::Digits | SizeLine::Space | SizeLine::Ext, b'\r')
                            if digits > 0 =>
                        {
                            to(SizeLine::Cr)
                        }
                        (SizeLine::Ext, _) if b != b'\n' => to(SizeLine::Ext),
                        (SizeLine::Cr, b'\n') if size == 0 => Phase::Trailer { len: 0, cr: false },
                        (SizeLine::Cr, b'\n') => Phase::ChunkData { left: size },
                        _ => return Err(BadResponse::BadChunk),
                    };
                }
                Phase::ChunkData { left } => {
                    let start = at;
                    let n = ((data.len() - at) as u64).min(left);
                    at += n as usize;
                    self.body_len += n;
                    self.phase = if n == left {
                        Phase::ChunkEnd { seen: 0 }
                    } else {
                        Phase::ChunkData { left: left - n }
                    };
                    return Ok(Fed {
                        used: at,
                        body: (start, at),
                        done: false,
                    });
                }
                Phase::ChunkEnd { seen } => {
                    at += 1;
                    self.phase = match (seen, b) {
                        (0, b'\r') => Phase::ChunkEnd { seen: 1 },
                        (1, b'\n') => CHUNK_START,
                        _ => return Err(BadResponse::BadChunk),
                    };
                }
                Phase::Trailer { len, cr } => {
                    at += 1;
                    self.trailer_bytes += 1;
                    if usize::from(len) >= LINE_MAX || self.trailer_bytes > HEAD_MAX {
                        return Err(BadResponse::BadChunk);
                    }
                    self.phase = match (cr, b) {
                        // CRLF on an empty line ends the trailer section (and the body).
                        (true, b'\n') if len == 0 => Phase::Done,
                        (true, b'\n') => Phase::Trailer { len: 0, cr: false },
                        (false, b'\r') => Phase::Trailer { len, cr: true },
                        (false, b) if b != b'\n' => Phase::Trailer {
                            len: len + 1,
                            cr: false,
                        },
                        _ => return Err(BadResponse::BadChunk),
                    };
                    if self.phase == Phase::Done {
                        break;
                    }
                }
                _ => break,
            }
        }
        Ok(Fed {
            used: at,
            body: (at, at),
            done: self.phase == Phase::Done,
        })
    }

    fn parse_head(&mut self, end: usize) -> Result<(), BadResponse> {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut resp = httparse::Response::new(&mut headers);
        match resp.parse(&self.head[..end]) {
            Ok(httparse::Status::Complete(_)) => {}
            _ => return Err(BadResponse::Malformed),
        }
        let status = resp.code.ok_or(BadResponse::Malformed)?;
        self.status = status;
        self.head_end = end;
        let mut chunked = false;
        self.close = resp.version == Some(0);
        let mut length = None;
        for h in resp.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                let v = core::str::from_utf8(h.value).map_err(|_| BadResponse::Malformed)?;
                let n: u64 = v.trim().parse().map_err(|_| BadResponse::Malformed)?;
                if length.is_some_and(|l| l != n) {
                    return Err(BadResponse::Malformed);
                }
                length = Some(n);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                // Only "chunked" alone, and only when asked for.
                if !self.chunked_ok
                    || chunked
                    || !h.value.trim_ascii().eq_ignore_ascii_case(b"chunked")
                {
                    return Err(BadResponse::TransferEncoding);
                }
                chunked = true;
            } else if h.name.eq_ignore_ascii_case("connection") {
                let v = h.value;
                if v.eq_ignore_ascii_case(b"close") {
                    self.close = true;
                } else if v.eq_ignore_ascii_case(b"keep-alive") {
                    self.close = false;
                }
            }
        }
        let bodiless = self.head_request || status < 200 || status == 204 || status == 304;
        // Chunked and a length together (a smuggling attempt), or chunked over HTTP/1.0
        // (RFC 9112 §6.1: faulty framing): refused.
        if chunked && (length.is_some() || resp.version == Some(0)) {
            return Err(BadResponse::Malformed);
        }
        if chunked && !bodiless {
            self.phase = CHUNK_START;
            return Ok(());
        }
        self.phase = match (bodiless, length) {
            (true, _) | (false, Some(0)) => Phase::Done,
            (false, Some(n)) => Phase::Body { left: n },
            (false, None) => {
                self.close = true;
                Phase::UntilClose
            }
        };
        Ok(())
    }
}

/// One past the end of the first `\r\n\r\n` in `b`.
fn find_blank_line(b: &[u8]) -> Option<usize> {
    b.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}

#[cfg(test)]
mod tests;
