//! The HTTP side of a connection: the request bytes received so far, the response being
//! sent, and the times the request and the connection's first response began. A response
//! is immutable once started: its head lives in the connection's head slab (or a dynamic
//! page's buffer) and its body is a slice of the site image, so any part of it can be sent
//! again from [`Sending::payload`] — the TCP layer keeps no copy.
//!
//! Owns no buffer and never allocates: the server lends the slabs.

use super::response::BodySlice;
use crate::resource::Body;
use crate::tcp::tcb::App;

/// [`HttpConn::dyn_slot`] when the response head is in the head slab.
pub const NO_DYN: u8 = u8::MAX;

/// The response in flight on a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sending {
    /// Sequence number of the first byte of the head.
    pub start: u32,
    /// Bytes of head (in the head slab or a dynamic buffer).
    pub head_len: u32,
    /// The stored body that follows the head (empty for none).
    pub body: BodySlice<'static>,
}

/// Where the payload of a segment comes from: head bytes to copy, then body bytes to point
/// at, with where those start in the stored body (for its block sums).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payload {
    /// Range of head bytes (indices into the head buffer).
    pub head: core::ops::Range<usize>,
    /// Body bytes (a slice of the site image).
    pub body: &'static [u8],
    /// Offset of `body` within the stored body's data (its block sums start there).
    pub body_offset: usize,
    /// The stored body, for its sums.
    pub stored: Body<'static>,
}

impl Payload {
    /// A segment with no payload.
    pub const EMPTY: Payload = Payload {
        head: 0..0,
        body: &[],
        body_offset: 0,
        stored: Body {
            data: &[],
            block_sums: &[],
        },
    };

    /// Payload bytes in all.
    pub fn len(&self) -> usize {
        self.head.len() + self.body.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The one's-complement sum of the body bytes, from the stored block sums.
    pub fn body_sum(&self) -> u16 {
        self.stored
            .sum(self.body_offset, self.body_offset + self.body.len())
    }
}

impl Sending {
    /// A response of `head_len` head bytes and `body` (if any) starting at `start`.
    pub fn new(start: u32, head_len: usize, body: Option<BodySlice<'static>>) -> Sending {
        Sending {
            start,
            head_len: head_len as u32,
            body: body.unwrap_or(BodySlice {
                body: Body {
                    data: &[],
                    block_sums: &[],
                },
                start: 0,
                end: 0,
            }),
        }
    }

    /// Body bytes on the wire.
    pub fn body_len(&self) -> u32 {
        (self.body.end - self.body.start) as u32
    }

    /// Total bytes of the response on the wire.
    pub fn wire_len(&self) -> u32 {
        self.head_len + self.body_len()
    }

    /// Sequence number just after the response.
    pub fn end(&self) -> u32 {
        self.start.wrapping_add(self.wire_len())
    }

    /// Sequence number just after the head.
    pub fn head_end(&self) -> u32 {
        self.start.wrapping_add(self.head_len)
    }

    /// The payload of stream bytes `[seq, seq + len)`, clipped to the response.
    pub fn payload(&self, seq: u32, len: u32) -> Payload {
        let off = seq.wrapping_sub(self.start).min(self.wire_len());
        let end = off.saturating_add(len).min(self.wire_len());
        let h0 = off.min(self.head_len) as usize;
        let h1 = end.min(self.head_len) as usize;
        let b0 = off.saturating_sub(self.head_len) as usize + self.body.start;
        let b1 = end.saturating_sub(self.head_len) as usize + self.body.start;
        let data = self.body.body.data;
        Payload {
            head: h0..h1,
            body: data.get(b0..b1).unwrap_or(&[]),
            body_offset: b0,
            stored: self.body.body,
        }
    }
}

/// The application part of a server TCB (`Tcb<HttpConn>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpConn {
    /// Bytes in the receive slab (the request head so far, and pipelined requests).
    pub rx_len: u32,
    /// The response in flight, if any.
    pub resp: Option<Sending>,
    /// When the request timeout started (0: not running): at the connection's
    /// establishment, then at the first byte of each request after a response.
    pub request_start_ns: u64,
    /// When the first request on this connection arrived complete (0: none yet); the stay
    /// time runs from here to the client's final ACK (the runner study's time split).
    pub stay_start_ns: u64,
    /// The dynamic-response buffer this connection's response head lives in (the stats
    /// JSON), or [`NO_DYN`] for the head slab.
    pub dyn_slot: u8,
    /// Which of the server's addresses the client connected to (`Interface::local`: 0
    /// its own, else a virtual address, which every segment of ours then comes from).
    pub local: u8,
    /// The connection comes from a `--proxy-protocol` source and its PROXY header is not
    /// read yet: the first bytes received are that header, not a request.
    pub proxy_wait: bool,
    /// The connection came to the HTTPS port: its bytes are TLS (`server::tls`).
    pub tls: bool,
}

impl App for HttpConn {
    const IDLE: HttpConn = HttpConn::new();
}

impl Default for HttpConn {
    fn default() -> Self {
        HttpConn::new()
    }
}

/// Whether a connection can be TLS at all: the engine's `https` feature (on with `tls`).
/// The bare machine's build leaves it off until it carries a TLS library, so every TLS
/// path of the server compiles away there (it cost the kernel ~10 KB of dead code).
pub const TLS_ENABLED: bool = cfg!(any(test, feature = "https"));

impl HttpConn {
    /// The connection came to the HTTPS port (always false without the `https` feature).
    #[inline(always)]
    pub fn tls(&self) -> bool {
        TLS_ENABLED && self.tls
    }

    /// Nothing received, nothing to send.
    pub const fn new() -> HttpConn {
        HttpConn {
            rx_len: 0,
            resp: None,
            request_start_ns: 0,
            stay_start_ns: 0,
            dyn_slot: NO_DYN,
            local: 0,
            proxy_wait: false,
            tls: false,
        }
    }

    /// The payload of stream bytes `[seq, seq + len)` of the response in flight.
    pub fn payload(&self, seq: u32, len: u32) -> Payload {
        match self.resp {
            Some(r) if len > 0 => r.payload(seq, len),
            _ => Payload::EMPTY,
        }
    }

    /// Head bytes left to send from SND.NXT `snd_nxt` (they are copied into a transmit
    /// slot, so they bound how much one offloaded frame may carry).
    pub fn head_left(&self, snd_nxt: u32) -> u32 {
        self.resp.map_or(0, |r| {
            let head_end = r.head_end();
            if crate::tcp::seq::lt(snd_nxt, head_end) {
                head_end.wrapping_sub(snd_nxt)
            } else {
                0
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body() -> BodySlice<'static> {
        static DATA: [u8; 10] = *b"0123456789";
        static SUMS: [u8; 2] = [0, 0];
        BodySlice {
            body: Body {
                data: &DATA,
                block_sums: &SUMS,
            },
            start: 2,
            end: 8,
        }
    }

    #[test]
    fn payload_maps_sequence_ranges_to_head_and_body() {
        let r = Sending::new(1000, 4, Some(body()));
        assert_eq!(r.wire_len(), 10);
        assert_eq!(r.end(), 1010);
        let p = r.payload(1002, 4);
        assert_eq!(p.head, 2..4);
        assert_eq!(p.body, b"23");
        assert_eq!(p.body_offset, 2);
        let p = r.payload(1006, 100);
        assert_eq!(p.head, 4..4);
        assert_eq!(p.body, b"4567");
        assert_eq!(p.body_offset, 4);
        // Outside the response: nothing, never a panic.
        assert!(r.payload(900, 50).len() <= 10);
        assert!(r.payload(2000, 5).is_empty());
    }

    #[test]
    fn head_left_counts_from_snd_nxt() {
        let mut c = HttpConn::new();
        assert_eq!(c.head_left(5), 0);
        c.resp = Some(Sending::new(100, 40, None));
        assert_eq!(c.head_left(100), 40);
        assert_eq!(c.head_left(130), 10);
        assert_eq!(c.head_left(140), 0);
    }
}
