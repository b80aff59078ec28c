//! The fetcher's side of one transfer, as a state machine (docs/udp-protocol.md §7): a
//! received packet or a timeout in, what to send next and what was learned out. No
//! sockets, no clock, no allocation: the owner (`bareweb get`, the load generator, the
//! bare fetcher) sends the GETs it is told to, feeds every datagram of the transfer's
//! port, calls [`Transfer::on_timeout`] at [`Transfer::deadline`], and stores the body
//! octets it is handed through [`Sink`].
//!
//! Reliability is the fetcher's (the UDP paper §2): the server keeps nothing, so a lost,
//! duplicated or reordered packet is handled here. One GET is in flight at a time; when a
//! burst ends (a Last-data-now packet at or past the GET's start) the next GET asks from
//! the first packet still missing, so a lost packet is asked for again at once; when
//! nothing ends a burst within the timeout, the same GET is sent again with the timeout
//! doubled, up to a number of tries without progress. Packets are tracked in a window of
//! [`WINDOW`] packet numbers from the first missing one, so a transfer of any size needs
//! 136 octets of state.

use super::wire::{
    ErrorCode, Header, PacketError, Start, State, FLAG_BOUNDED, TOKEN_LEN, UNIT, VERSION,
};

/// Packet numbers tracked ahead of the first missing one (a GET asks for at most 255).
pub const WINDOW: u32 = 1024;
const WORDS: usize = WINDOW as usize / 64;

/// Where the transfer's octets go.
pub trait Sink {
    /// The Get-Ack arrived: the body has `total` octets. Return false to abort (too large
    /// for this fetcher).
    fn begin(&mut self, total: u64) -> bool;
    /// The HTTP response head (packet 1), once.
    fn head(&mut self, head: &[u8]);
    /// Body octets at `offset`, each range once.
    fn data(&mut self, offset: u64, bytes: &[u8]);
}

/// Timeouts and tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// First retransmission timeout.
    pub rto_ns: u64,
    /// Largest timeout (each one without progress doubles it).
    pub rto_max_ns: u64,
    /// Timeouts in a row without a new packet before the transfer fails.
    pub tries: u32,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            rto_ns: 50_000_000,
            rto_max_ns: 1_000_000_000,
            tries: 8,
        }
    }
}

/// Why a transfer failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// No progress for [`Timing::tries`] timeouts.
    Timeout,
    /// The server refused the request.
    Refused(ErrorCode),
    /// The server refused with a code this fetcher does not know.
    RefusedUnknown(u32),
    /// The Get-Ack's counts contradict each other or an earlier Get-Ack.
    Inconsistent,
    /// The sink would not take a body this large.
    TooLarge,
}

/// What the owner must do after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Nothing now (wait for packets or the deadline).
    Wait,
    /// Send a GET from this start (with [`Transfer::token`] if any).
    Send(Start),
    /// Every packet arrived.
    Done,
    /// Give up.
    Failed(Failure),
}

/// What the server said in its Get-Ack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    /// Body octets.
    pub total: u32,
    /// Packets (1 + data packets).
    pub count: u32,
}

/// Counters of one transfer (summed by the load generator).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// GETs sent (the initial one, subsequent ones, and resends).
    pub gets: u32,
    /// Timeouts.
    pub timeouts: u32,
    /// Packets received and used.
    pub packets: u32,
    /// Packets that were already there (duplicates, or sent again).
    pub duplicates: u32,
    /// Packets asked for again because they had not come (lost or late).
    pub rerequested: u32,
    /// Datagrams refused (bad header, not for this transfer's response).
    pub bad: u32,
    /// Answers cut short by the server's amplification bound.
    pub bounded: u32,
}

/// One transfer.
#[derive(Debug, Clone)]
pub struct Transfer {
    timing: Timing,
    meta: Option<Meta>,
    token: Option<[u8; TOKEN_LEN]>,
    /// First missing packet number (all below it arrived).
    base: u32,
    /// Packets `base..base + WINDOW` that arrived.
    have: [u64; WORDS],
    /// Highest packet number asked for so far, plus one (an estimate for bursts).
    asked_end: u32,
    /// Largest burst of data packets seen (what a GET is expected to bring).
    burst: u32,
    /// The GET in flight.
    start: Start,
    deadline: u64,
    rto: u64,
    idle_timeouts: u32,
    done: bool,
    /// Counters.
    pub counts: Counts,
}

impl Transfer {
    /// A transfer that will send its initial GET (call [`Transfer::begin`]). `token`: one
    /// learned from an earlier answer of the same server, to be proven at once.
    pub fn new(timing: Timing, token: Option<[u8; TOKEN_LEN]>) -> Transfer {
        Transfer {
            timing,
            meta: None,
            token,
            base: 1,
            have: [0; WORDS],
            asked_end: 1,
            burst: 4,
            start: Start::Initial,
            deadline: u64::MAX,
            rto: timing.rto_ns,
            idle_timeouts: 0,
            done: false,
            counts: Counts::default(),
        }
    }

    /// The first event: send the initial GET.
    pub fn begin(&mut self, now: u64) -> Step {
        self.send(Start::Initial, now)
    }

    /// The token to put in GETs (the newest the server gave).
    pub fn token(&self) -> Option<&[u8; TOKEN_LEN]> {
        self.token.as_ref()
    }

    /// The Get-Ack's figures, once it arrived.
    pub fn meta(&self) -> Option<Meta> {
        self.meta
    }

    /// When [`Transfer::on_timeout`] is due (monotonic ns); `u64::MAX` when finished.
    pub fn deadline(&self) -> u64 {
        if self.done {
            u64::MAX
        } else {
            self.deadline
        }
    }

    /// Whether every packet arrived.
    pub fn is_done(&self) -> bool {
        self.done
    }

    fn send(&mut self, start: Start, now: u64) -> Step {
        self.start = start;
        self.deadline = now.saturating_add(self.rto);
        self.counts.gets += 1;
        if let Start::From(s) = start {
            // Packets asked for before and still missing are asked for again.
            let count_end = self.meta.map_or(u32::MAX, |m| m.count.saturating_add(1));
            let end = self
                .asked_end
                .min(s.saturating_add(self.burst))
                .min(count_end);
            self.counts.rerequested += (s..end).filter(|&k| !self.has(k)).count() as u32;
            self.asked_end = self.asked_end.max(s.saturating_add(self.burst));
        }
        Step::Send(start)
    }

    fn has(&self, k: u32) -> bool {
        if k < self.base {
            return true;
        }
        let i = k - self.base;
        i < WINDOW && self.have[(i / 64) as usize] & (1 << (i % 64)) != 0
    }

    /// Marks packet `k` (in the window); returns whether it is new.
    fn mark(&mut self, k: u32) -> bool {
        if self.has(k) {
            return false;
        }
        let i = k - self.base;
        self.have[(i / 64) as usize] |= 1 << (i % 64);
        // Slide the window past every packet now complete from its start.
        while self.have[0] & 1 != 0 {
            let mut carry = 0;
            for w in self.have.iter_mut().rev() {
                let next = *w & 1;
                *w = (*w >> 1) | (carry << 63);
                carry = next;
            }
            self.base += 1;
        }
        true
    }

    /// A datagram arrived on the transfer's port. Octets of the body go to `sink`.
    pub fn on_packet(&mut self, bytes: &[u8], now: u64, sink: &mut impl Sink) -> Step {
        if self.done {
            self.counts.duplicates += 1;
            return Step::Done;
        }
        let (h, payload) = match Header::parse(bytes) {
            Ok(p) => p,
            Err(PacketError::Truncated | PacketError::State)
            | Err(PacketError::Version | PacketError::Length) => {
                self.counts.bad += 1;
                return Step::Wait;
            }
        };
        if h.flags & FLAG_BOUNDED != 0 && h.state == State::GetAck {
            self.counts.bounded += 1;
        }
        match h.state {
            State::Error => {
                self.done = true;
                return Step::Failed(match ErrorCode::from_code(h.a) {
                    Some(e) => Failure::Refused(e),
                    None => Failure::RefusedUnknown(h.a),
                });
            }
            State::GetAck => return self.get_ack(&h, payload, sink),
            _ => {}
        }
        let Some(meta) = self.meta else {
            // Packets before their Get-Ack cannot be placed; a burst's end means the
            // Get-Ack was lost: ask again now rather than at the timeout.
            self.counts.bad += 1;
            if h.state == State::LastNow || h.state == State::Last {
                return self.send(Start::Initial, now);
            }
            return Step::Wait;
        };
        let k = h.b;
        let expect = match k {
            0 => None,
            1 => Some(payload.len()),
            _ if k <= meta.count => {
                let off = (k as usize - 2) * UNIT;
                Some(UNIT.min(meta.total as usize - off))
            }
            _ => None,
        };
        if expect != Some(payload.len())
            || h.unit as usize != UNIT
            || (k == 1) != (h.state == State::Header)
        {
            self.counts.bad += 1;
            return Step::Wait;
        }
        if k >= self.base.saturating_add(WINDOW) {
            self.counts.bad += 1; // never asked for
            return Step::Wait;
        }
        self.asked_end = self.asked_end.max(k + 1);
        if self.mark(k) {
            self.counts.packets += 1;
            self.idle_timeouts = 0;
            self.rto = self.timing.rto_ns;
            if k == 1 {
                sink.head(payload);
            } else {
                sink.data(((k - 2) as usize * UNIT) as u64, payload);
            }
        } else {
            self.counts.duplicates += 1;
        }
        if self.base > meta.count {
            self.done = true;
            return Step::Done;
        }
        let started_at = match self.start {
            Start::Initial => 1,
            Start::From(s) => s,
        };
        if (h.state == State::LastNow || h.state == State::Last) && k >= started_at {
            // This GET's burst is over; learn its size and ask from the first gap.
            let data = k.saturating_sub(started_at.max(2)) + 1;
            self.burst = self.burst.max(data).min(255);
            return self.send(Start::From(self.base), now);
        }
        Step::Wait
    }

    fn get_ack(&mut self, h: &Header, payload: &[u8], sink: &mut impl Sink) -> Step {
        let meta = Meta {
            total: h.a,
            count: h.b,
        };
        if payload.len() == TOKEN_LEN {
            let mut t = [0; TOKEN_LEN];
            t.copy_from_slice(payload);
            self.token = Some(t);
        }
        let consistent = h.unit as usize == UNIT
            && meta.count as usize == 1 + (meta.total as usize).div_ceil(UNIT)
            && h.version == VERSION;
        match self.meta {
            Some(m) if m == meta => {
                self.counts.duplicates += 1;
                Step::Wait
            }
            Some(_) => self.fail(Failure::Inconsistent),
            None if !consistent => self.fail(Failure::Inconsistent),
            None => {
                if !sink.begin(u64::from(meta.total)) {
                    return self.fail(Failure::TooLarge);
                }
                self.meta = Some(meta);
                self.counts.packets += 1;
                self.idle_timeouts = 0;
                Step::Wait
            }
        }
    }

    fn fail(&mut self, f: Failure) -> Step {
        self.done = true;
        Step::Failed(f)
    }

    /// The deadline passed: send the GET again (from the first missing packet), or give up.
    pub fn on_timeout(&mut self, now: u64) -> Step {
        if self.done {
            return Step::Done;
        }
        if now < self.deadline {
            return Step::Wait;
        }
        self.counts.timeouts += 1;
        self.idle_timeouts += 1;
        if self.idle_timeouts > self.timing.tries {
            return self.fail(Failure::Timeout);
        }
        self.rto = (self.rto * 2).min(self.timing.rto_max_ns);
        match self.meta {
            None => self.send(Start::Initial, now),
            Some(_) => self.send(Start::From(self.base), now),
        }
    }
}

#[cfg(test)]
mod tests;
