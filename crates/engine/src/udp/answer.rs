//! What answers a request (docs/udp-protocol.md §5–§6), as a pure function: the request,
//! the site, the burst size and the amplification budget in; the packets out, one at a
//! time, each a 16-octet header plus a payload that is either copied (the token, the HTTP
//! head) or a slice of the stored body with its checksum from the stored block sums
//! (never copied). Nothing here keeps state between requests.
//!
//! The response is the one HTTP over TCP would give (`http::respond`: status, content
//! type, conditional requests, ranges, gzip), cut into packets: packet 1 is the head,
//! packets 2..=count carry the body, [`UNIT`] octets each but the last.

use super::wire::{
    ErrorCode, Header, Request, Start, State, FLAG_BOUNDED, FLAG_TOKEN, HEADER_LEN, TOKEN_LEN,
    UNIT, VERSION,
};
use crate::http::{self, BodySlice, Parse};
use crate::resource::Lookup;

/// How to answer, besides the request itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// Packets per burst (the paper's n).
    pub burst: u8,
    /// Most UDP payload octets the answer may have (3x the request's, to a source that
    /// has not proved its address); `None`: no bound.
    pub budget: Option<usize>,
    /// A token for the Get-Ack (`None` in paper mode).
    pub token: Option<[u8; TOKEN_LEN]>,
    /// The request id for every packet.
    pub request_id: u16,
    /// This core's id.
    pub core: u8,
}

/// The decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer<'a> {
    /// Answer with one Error packet: this code, and B (the packet count, or 0).
    Refuse(ErrorCode, u32),
    /// Not even the Get-Ack fits the budget: send nothing.
    Nothing,
    /// Send these packets.
    Send(Burst<'a>),
}

/// A packet's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload<'a> {
    /// No payload.
    None,
    /// The Get-Ack's token.
    Token([u8; TOKEN_LEN]),
    /// The first this many octets of the head buffer given to [`answer`].
    Head(usize),
    /// Octets of the stored body and their one's-complement sum.
    Body {
        /// The octets (borrowed from the site image).
        data: &'a [u8],
        /// Their folded sum, as if starting at an even offset.
        sum: u16,
    },
}

impl Payload<'_> {
    /// Octets of the payload.
    pub fn len(&self) -> usize {
        match self {
            Payload::None => 0,
            Payload::Token(_) => TOKEN_LEN,
            Payload::Head(n) => *n,
            Payload::Body { data, .. } => data.len(),
        }
    }

    /// Whether the payload is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One packet to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    /// Its data header.
    pub header: Header,
    /// What follows the header.
    pub payload: Payload<'a>,
}

/// The packets of one answer, in order: the Get-Ack (initial GETs, and any GET from a
/// source that has not proved its address), then packets `first..=last`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Burst<'a> {
    /// The HTTP status of the response (for the access log).
    pub status: u16,
    /// Body octets.
    pub total: u32,
    /// Packets of the response (1 + data packets).
    pub count: u32,
    /// Whether the answer was cut short by the budget.
    pub bounded: bool,
    body: Option<BodySlice<'a>>,
    head_len: usize,
    get_ack: bool,
    next: u32,
    last: u32,
    template: Header,
    token: Option<[u8; TOKEN_LEN]>,
}

/// Octets of data packet `k` (2..=count) of a `total`-octet body, and its offset.
fn data_range(total: u32, k: u32) -> (usize, usize) {
    let off = (k as usize - 2) * UNIT;
    (off, UNIT.min(total as usize - off))
}

/// Decides the answer to `req` from `site`; the HTTP head is written into `head` (at least
/// `http::HEAD_MAX` octets). `now_unix` and `server` are as for `http::respond`.
pub fn answer<'a, L: Lookup<'a>>(
    req: &Request<'_>,
    site: &L,
    now_unix: u64,
    server: &str,
    head: &mut [u8],
    p: Params,
) -> Answer<'a> {
    if req.version.is_some_and(|v| v != u32::from(VERSION)) {
        return Answer::Refuse(ErrorCode::Version, 0);
    }
    let resp = match http::parse(req.head) {
        Parse::Complete { request, .. } => http::respond(&request, site, now_unix, server, head),
        Parse::Error(status) => http::respond_error(status, now_unix, server, head),
        Parse::Partial => return Answer::Refuse(ErrorCode::Malformed, 0),
    };
    let total = resp.body.map_or(0, |b| b.end - b.start);
    let Ok(total) = u32::try_from(total) else {
        return Answer::Refuse(ErrorCode::TooLarge, 0);
    };
    let count = 1 + (total as usize).div_ceil(UNIT) as u32;
    let burst = u32::from(p.burst.max(1));
    let (first, mut last) = match req.start {
        Start::Initial => (1, count.min(1 + burst)),
        Start::From(s) if s == 0 || s > count => {
            return Answer::Refuse(ErrorCode::BadStart, count);
        }
        Start::From(s) => (s, count.min(s.saturating_add(burst - 1))),
    };
    // A Get-Ack opens every initial answer, and any answer to a source that has not
    // proved its address (it carries the token that proves it next time).
    let get_ack = req.start == Start::Initial || p.budget.is_some();
    let token_len = if p.token.is_some() { TOKEN_LEN } else { 0 };
    let mut bounded = false;
    if let Some(budget) = p.budget {
        let mut used = HEADER_LEN + token_len;
        if used > budget {
            return Answer::Nothing;
        }
        let first_over = (first..=last).find(|&k| {
            used += HEADER_LEN
                + if k == 1 {
                    resp.head_len
                } else {
                    data_range(total, k).1
                };
            used > budget
        });
        if let Some(k) = first_over {
            last = k - 1;
            bounded = true;
        }
    }
    let template = Header {
        state: State::GetAck,
        version: VERSION,
        request_id: p.request_id,
        core: p.core,
        flags: if bounded { FLAG_BOUNDED } else { 0 },
        unit: UNIT as u16,
        a: 0,
        b: 0,
    };
    Answer::Send(Burst {
        status: resp.status,
        total,
        count,
        bounded,
        body: resp.body,
        head_len: resp.head_len,
        get_ack,
        next: first,
        last,
        template,
        token: p.token,
    })
}

impl<'a> Burst<'a> {
    /// Packets of the answer not yet taken (the Get-Ack included).
    pub fn remaining(&self) -> usize {
        usize::from(self.get_ack) + (self.last + 1).saturating_sub(self.next) as usize
    }

    /// The next packet, or `None` when the answer is complete.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<Packet<'a>> {
        let mut header = self.template;
        if self.get_ack {
            self.get_ack = false;
            header.a = self.total;
            header.b = self.count;
            let payload = match self.token {
                Some(t) => {
                    header.flags |= FLAG_TOKEN;
                    Payload::Token(t)
                }
                None => Payload::None,
            };
            return Some(Packet { header, payload });
        }
        if self.next > self.last {
            return None;
        }
        let k = self.next;
        self.next += 1;
        header.b = k;
        let payload = if k == 1 {
            header.state = State::Header;
            Payload::Head(self.head_len)
        } else {
            header.state = if k == self.count {
                State::Last
            } else if k == self.last {
                State::LastNow
            } else {
                State::Data
            };
            let (off, len) = data_range(self.total, k);
            match self.body {
                Some(b) => {
                    let s = b.start + off;
                    Payload::Body {
                        data: b.body.data.get(s..s + len).unwrap_or(&[]),
                        sum: b.body.sum(s, s + len),
                    }
                }
                None => Payload::None, // total is 0 then: no data packet exists
            }
        };
        header.a = payload.len() as u32;
        Some(Packet { header, payload })
    }
}

#[cfg(test)]
mod tests;
