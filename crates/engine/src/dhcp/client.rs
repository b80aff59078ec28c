//! The DHCP client as a state machine (RFC 2131 §4.4, figure 5): a reply or the passing
//! of time in, [`Actions`] out (a message to send, an address acquired, renewed or lost).
//! No NIC, no clock, no allocation: the owner feeds every frame for UDP port 68
//! ([`Client::on_frame`]), calls [`Client::on_timeout`] when [`Client::deadline`] passes,
//! sends what it is told (the frame from [`Client::frame`]) and applies the address.
//!
//! States: INIT → SELECTING (DISCOVER sent; the first acceptable OFFER wins) →
//! REQUESTING (REQUEST broadcast for the offered address) → BOUND → at T1 RENEWING
//! (REQUEST unicast to the server) → at T2 REBINDING (REQUEST broadcast to any server) →
//! at the lease's end, the address is lost and discovery starts again. A NAK while
//! requesting starts over; while renewing or rebinding it also ends the lease.
//!
//! Retransmission (§4.1): 4 s, doubled up to 64 s, each randomized by ±1 s, while
//! selecting and requesting (after [`Timing::request_tries`] REQUESTs unanswered, discovery
//! starts again); while renewing or rebinding, half the time left to T2 (to the lease's
//! end) and at least 60 s (§4.4.5).
//!
//! Every reply is checked before it can change anything, and every refusal is counted by
//! reason in [`Counts`]: a malformed message, another client's hardware address, a
//! transaction id not ours, a type not expected now, no server identifier, a reply from
//! another server than the one chosen, an address that cannot be a host's (0.0.0.0,
//! broadcast, multicast, loopback, class E, the subnet's network or broadcast address),
//! a zero or missing lease. A hostile server can therefore make the client wait, never
//! take a bad address.

use super::frame;
use super::wire::{self, MessageType, Outgoing, Reply, MESSAGE_LEN};
use crate::wire::{EthernetAddress, Ipv4Address};

const SEC: u64 = 1_000_000_000;

/// Timeouts and tries (defaults: RFC 2131 §4.1 and §4.4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// First retransmission timeout while selecting or requesting.
    pub first_ns: u64,
    /// Largest retransmission timeout (each one doubles it).
    pub max_ns: u64,
    /// Each timeout is randomized by up to this much either way (at most a quarter of it).
    pub jitter_ns: u64,
    /// REQUESTs sent while requesting before discovery starts again.
    pub request_tries: u32,
    /// Shortest retransmission timeout while renewing or rebinding.
    pub retry_min_ns: u64,
    /// After a NAK or unanswered REQUESTs, discovery starts again within this long
    /// (uniformly random), so a server that always NAKs cannot make a storm.
    pub restart_ns: u64,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            first_ns: 4 * SEC,
            max_ns: 64 * SEC,
            jitter_ns: SEC,
            request_tries: 4,
            retry_min_ns: 60 * SEC,
            restart_ns: 2 * SEC,
        }
    }
}

/// Where the client is (RFC 2131 figure 5; INIT-REBOOT is not used: the kernel keeps no
/// lease across boots).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// No address; discovery starts at the deadline.
    Init,
    /// DISCOVER sent, waiting for an OFFER.
    Selecting,
    /// REQUEST for an offered address sent, waiting for the ACK.
    Requesting,
    /// The address is ours until T1.
    Bound,
    /// Past T1: asking the server that granted the lease to extend it.
    Renewing,
    /// Past T2: asking any server to extend it.
    Rebinding,
}

impl State {
    /// Lower-case name, for the console and the stats page.
    pub fn name(self) -> &'static str {
        match self {
            State::Init => "init",
            State::Selecting => "selecting",
            State::Requesting => "requesting",
            State::Bound => "bound",
            State::Renewing => "renewing",
            State::Rebinding => "rebinding",
        }
    }
}

/// A lease granted by a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    /// Our address.
    pub address: Ipv4Address,
    /// The subnet's prefix length (24 if the server gave no mask).
    pub prefix_len: u8,
    /// The router, if the server gave a usable one on the subnet.
    pub router: Option<Ipv4Address>,
    /// The server that granted the lease (its identifier).
    pub server: Ipv4Address,
    /// The first DNS server offered (the bare machine's ACME client asks it when no `dns=`).
    pub dns: Option<Ipv4Address>,
    /// Lease time, seconds (`u32::MAX`: infinite).
    pub lease_s: u32,
    /// Renewal time T1, seconds from the grant.
    pub t1_s: u32,
    /// Rebinding time T2, seconds from the grant.
    pub t2_s: u32,
}

/// Where a message goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dest {
    /// To 255.255.255.255 and the Ethernet broadcast address.
    Broadcast,
    /// To the server that granted the lease (renewing), at the MAC its ACK came from.
    Server(Ipv4Address, EthernetAddress),
}

/// A message to send now: [`Client::frame`] builds its frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit {
    /// DISCOVER or REQUEST.
    pub kind: MessageType,
    /// The IP source (0.0.0.0 until an address is bound).
    pub src: Ipv4Address,
    /// Where it goes.
    pub dest: Dest,
}

/// Why an address was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    /// The lease ran out with no server extending it.
    Expired,
    /// A server refused to extend it.
    Nak,
}

/// A change of address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// A new lease: serve on its address.
    Acquired(Lease),
    /// The lease was extended (its times may differ; the address is the same).
    Renewed(Lease),
    /// The lease is gone: stop answering on its address.
    Lost(Lease, Loss),
}

/// What the owner must do after an event.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Actions {
    /// Send this message.
    pub send: Option<Transmit>,
    /// Apply this change of address.
    pub change: Option<Change>,
}

/// Messages sent, replies taken, and replies refused by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// DISCOVERs sent (with retransmissions).
    pub discovers: u64,
    /// REQUESTs sent (selecting, renewing and rebinding, with retransmissions).
    pub requests: u64,
    /// Retransmissions (of either).
    pub retransmits: u64,
    /// OFFERs taken.
    pub offers: u64,
    /// ACKs taken.
    pub acks: u64,
    /// NAKs taken.
    pub naks: u64,
    /// Leases that ran out.
    pub expired: u64,
    /// Refused: malformed (truncated, not a reply, no cookie, an option that overruns or
    /// has a bad size, no type).
    pub bad_message: u64,
    /// Refused: for another hardware address.
    pub bad_chaddr: u64,
    /// Refused: a transaction id not ours.
    pub bad_xid: u64,
    /// Refused: a type not expected in this state (or no exchange under way).
    pub unexpected: u64,
    /// Refused: no server identifier.
    pub no_server_id: u64,
    /// Refused: from another server than the one chosen.
    pub wrong_server: u64,
    /// Refused: an address that cannot be ours, or not the one asked for.
    pub bad_address: u64,
    /// Refused: a zero lease, or an ACK without a lease time.
    pub bad_lease: u64,
}

impl Counts {
    /// Replies refused, all reasons.
    pub fn refused(&self) -> u64 {
        self.bad_message
            + self.bad_chaddr
            + self.bad_xid
            + self.unexpected
            + self.no_server_id
            + self.wrong_server
            + self.bad_address
            + self.bad_lease
    }
}

/// One interface's DHCP client.
#[derive(Debug, Clone)]
pub struct Client {
    mac: EthernetAddress,
    timing: Timing,
    state: State,
    xid: u32,
    rng: u64,
    deadline: u64,
    rto: u64,
    tries: u32,
    /// When this exchange began (the `secs` field).
    began: u64,
    /// The chosen offer: address and server identifier.
    offered: (Ipv4Address, Ipv4Address),
    server_mac: EthernetAddress,
    lease: Option<Lease>,
    t1_at: u64,
    t2_at: u64,
    end_at: u64,
    msg: [u8; MESSAGE_LEN],
    /// Counters.
    pub counts: Counts,
}

/// Whether `a` can be a host's address on a subnet of `prefix` bits.
pub fn usable(a: Ipv4Address, prefix: u8) -> bool {
    let b = a.to_bits();
    let host = if prefix >= 31 { 0 } else { u32::MAX >> prefix };
    !(a.is_unspecified()
        || a.is_broadcast()
        || a.is_multicast()
        || a.is_loopback()
        || a.0[0] == 0
        || a.0[0] >= 240
        || (host != 0 && (b & host == 0 || b & host == host)))
}

impl Client {
    /// A client for the interface with hardware address `mac`, in INIT with discovery due
    /// at once. `seed`: random bits from the platform (transaction ids, jitter).
    pub fn new(mac: EthernetAddress, seed: u64, timing: Timing) -> Client {
        Client {
            mac,
            timing,
            state: State::Init,
            xid: 0,
            rng: seed | 1,
            deadline: 0,
            rto: timing.first_ns,
            tries: 0,
            began: 0,
            offered: (Ipv4Address::UNSPECIFIED, Ipv4Address::UNSPECIFIED),
            server_mac: EthernetAddress::BROADCAST,
            lease: None,
            t1_at: u64::MAX,
            t2_at: u64::MAX,
            end_at: u64::MAX,
            msg: [0; MESSAGE_LEN],
            counts: Counts::default(),
        }
    }

    /// The state.
    pub fn state(&self) -> State {
        self.state
    }

    /// The lease held (bound, renewing or rebinding).
    pub fn lease(&self) -> Option<&Lease> {
        self.lease.as_ref()
    }

    /// Seconds left of the lease at `now` (`u64::MAX`: infinite; 0: none).
    pub fn remaining_s(&self, now: u64) -> u64 {
        match self.lease {
            None => 0,
            Some(_) if self.end_at == u64::MAX => u64::MAX,
            Some(_) => self.end_at.saturating_sub(now) / SEC,
        }
    }

    /// When the lease ends (monotonic ns; `u64::MAX`: infinite, or no lease).
    pub fn lease_end_ns(&self) -> u64 {
        self.end_at
    }

    /// When [`Client::on_timeout`] is due (monotonic ns).
    pub fn deadline(&self) -> u64 {
        self.deadline
    }

    /// The transaction id of the exchange under way.
    pub fn xid(&self) -> u32 {
        self.xid
    }

    /// The message last built (what a [`Transmit`] sends).
    pub fn message(&self) -> &[u8] {
        &self.msg
    }

    /// Builds the frame for `t` (the message last built) into `buf`; returns its length,
    /// [`frame::FRAME_LEN`].
    ///
    /// # Panics
    /// If `buf` is shorter than [`frame::FRAME_LEN`].
    pub fn frame(&self, t: &Transmit, buf: &mut [u8]) -> usize {
        frame::build(buf, self.mac, t, &self.msg)
    }

    /// A frame arrived: if it is a DHCP reply (IPv4, UDP 67 → 68, checksums right) it is
    /// judged; returns `None` for any other frame (the owner handles it as usual).
    pub fn on_frame(&mut self, f: &[u8], now: u64) -> Option<Actions> {
        let (src_mac, payload) = frame::reply(f)?;
        Some(self.on_reply(payload, src_mac, now))
    }

    fn random(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// `d` randomized by ±jitter (at most a quarter of `d`).
    fn jittered(&mut self, d: u64) -> u64 {
        let j = self.timing.jitter_ns.min(d / 4);
        if j == 0 {
            return d;
        }
        d - j + self.random() % (2 * j + 1)
    }

    fn secs(&self, now: u64) -> u16 {
        (now.saturating_sub(self.began) / SEC).min(u64::from(u16::MAX)) as u16
    }

    fn build(&mut self, kind: MessageType, now: u64, dest: Dest) -> Transmit {
        let selecting = matches!(self.state, State::Selecting | State::Requesting);
        let src = match (&self.lease, selecting) {
            (Some(l), false) => l.address,
            _ => Ipv4Address::UNSPECIFIED,
        };
        let requesting = self.state == State::Requesting;
        Outgoing {
            kind,
            xid: self.xid,
            secs: self.secs(now),
            mac: self.mac,
            ciaddr: src,
            requested: requesting.then_some(self.offered.0),
            server_id: requesting.then_some(self.offered.1),
            broadcast: src.is_unspecified(),
        }
        .emit(&mut self.msg);
        match kind {
            MessageType::Discover => self.counts.discovers += 1,
            _ => self.counts.requests += 1,
        }
        Transmit { kind, src, dest }
    }

    /// Sends a new DISCOVER: a new exchange.
    fn discover(&mut self, now: u64) -> Transmit {
        self.state = State::Selecting;
        self.xid = self.random() as u32;
        self.began = now;
        self.rto = self.timing.first_ns;
        self.deadline = now + self.jittered(self.rto);
        self.build(MessageType::Discover, now, Dest::Broadcast)
    }

    /// Back to INIT: discovery again within [`Timing::restart_ns`].
    fn restart(&mut self, now: u64) {
        self.state = State::Init;
        self.lease = None;
        self.t1_at = u64::MAX;
        self.t2_at = u64::MAX;
        self.end_at = u64::MAX;
        let wait = self.random() % (self.timing.restart_ns + 1);
        self.deadline = now + wait;
    }

    /// The next retransmission timeout while selecting or requesting (doubled each time).
    fn backoff(&mut self, now: u64) {
        self.rto = (self.rto.saturating_mul(2)).min(self.timing.max_ns);
        self.counts.retransmits += 1;
        self.deadline = now + self.jittered(self.rto);
    }

    /// The next retransmission while renewing or rebinding: half the time to `limit`, at
    /// least [`Timing::retry_min_ns`], never past `limit`.
    fn retry_until(&mut self, now: u64, limit: u64) {
        let half = limit.saturating_sub(now) / 2;
        self.deadline = now
            .saturating_add(half.max(self.timing.retry_min_ns))
            .min(limit);
    }

    /// Time passed: retransmit, move on at T1, T2 or the lease's end, or start discovery.
    /// Does nothing before [`Client::deadline`].
    pub fn on_timeout(&mut self, now: u64) -> Actions {
        let mut a = Actions::default();
        if now < self.deadline {
            return a;
        }
        match self.state {
            State::Init => a.send = Some(self.discover(now)),
            State::Selecting => {
                self.backoff(now);
                a.send = Some(self.build(MessageType::Discover, now, Dest::Broadcast));
            }
            State::Requesting => {
                self.tries += 1;
                if self.tries >= self.timing.request_tries {
                    self.restart(now);
                } else {
                    self.backoff(now);
                    a.send = Some(self.build(MessageType::Request, now, Dest::Broadcast));
                }
            }
            State::Bound | State::Renewing if now < self.t2_at => {
                if self.state == State::Bound {
                    self.state = State::Renewing;
                    self.xid = self.random() as u32;
                    self.began = now;
                } else {
                    self.counts.retransmits += 1;
                }
                self.retry_until(now, self.t2_at);
                let to = Dest::Server(
                    self.lease.map_or(self.offered.1, |l| l.server),
                    self.server_mac,
                );
                a.send = Some(self.build(MessageType::Request, now, to));
            }
            State::Bound | State::Renewing | State::Rebinding if now < self.end_at => {
                if self.state == State::Rebinding {
                    self.counts.retransmits += 1;
                } else {
                    if self.state == State::Bound {
                        self.began = now;
                    }
                    self.state = State::Rebinding;
                    self.xid = self.random() as u32;
                }
                self.retry_until(now, self.end_at);
                a.send = Some(self.build(MessageType::Request, now, Dest::Broadcast));
            }
            State::Bound | State::Renewing | State::Rebinding => {
                // The lease ran out: the address is no longer ours; discover at once.
                self.counts.expired += 1;
                let lost = self.lease;
                self.restart(now);
                a.change = lost.map(|l| Change::Lost(l, Loss::Expired));
                a.send = Some(self.discover(now));
            }
        }
        a
    }

    /// A DHCP reply (the UDP payload) arrived from `src_mac`.
    pub fn on_reply(&mut self, payload: &[u8], src_mac: EthernetAddress, now: u64) -> Actions {
        let r = match wire::parse(payload) {
            Ok(r) => r,
            Err(_) => {
                self.counts.bad_message += 1;
                return Actions::default();
            }
        };
        if r.chaddr != self.mac {
            self.counts.bad_chaddr += 1;
            return Actions::default();
        }
        if matches!(self.state, State::Init | State::Bound) {
            self.counts.unexpected += 1;
            return Actions::default();
        }
        if r.xid != self.xid {
            self.counts.bad_xid += 1;
            return Actions::default();
        }
        let Some(server) = r.server_id else {
            self.counts.no_server_id += 1;
            return Actions::default();
        };
        match (self.state, r.kind) {
            (State::Selecting, MessageType::Offer) => self.offer(&r, server, src_mac, now),
            (State::Requesting, MessageType::Ack | MessageType::Nak)
                if server != self.offered.1 =>
            {
                self.counts.wrong_server += 1;
                Actions::default()
            }
            (State::Requesting, MessageType::Ack) => {
                if r.yiaddr != self.offered.0 {
                    self.counts.bad_address += 1;
                    return Actions::default();
                }
                match self.bind(&r, server, src_mac, now) {
                    Some(l) => Actions {
                        send: None,
                        change: Some(Change::Acquired(l)),
                    },
                    None => Actions::default(),
                }
            }
            (State::Renewing | State::Rebinding, MessageType::Ack) => {
                if Some(r.yiaddr) != self.lease.map(|l| l.address) {
                    self.counts.bad_address += 1;
                    return Actions::default();
                }
                match self.bind(&r, server, src_mac, now) {
                    Some(l) => Actions {
                        send: None,
                        change: Some(Change::Renewed(l)),
                    },
                    None => Actions::default(),
                }
            }
            (State::Requesting | State::Renewing | State::Rebinding, MessageType::Nak) => {
                self.counts.naks += 1;
                let lost = self.lease;
                self.restart(now);
                Actions {
                    send: None,
                    change: lost.map(|l| Change::Lost(l, Loss::Nak)),
                }
            }
            _ => {
                self.counts.unexpected += 1;
                Actions::default()
            }
        }
    }

    fn offer(
        &mut self,
        r: &Reply,
        server: Ipv4Address,
        src_mac: EthernetAddress,
        now: u64,
    ) -> Actions {
        if !usable(r.yiaddr, r.prefix_len.unwrap_or(24)) || !usable(server, 32) {
            self.counts.bad_address += 1;
            return Actions::default();
        }
        if r.lease_s == Some(0) {
            self.counts.bad_lease += 1;
            return Actions::default();
        }
        self.counts.offers += 1;
        self.offered = (r.yiaddr, server);
        self.server_mac = src_mac;
        self.state = State::Requesting;
        self.tries = 0;
        self.rto = self.timing.first_ns;
        self.deadline = now + self.jittered(self.rto);
        Actions {
            send: Some(self.build(MessageType::Request, now, Dest::Broadcast)),
            change: None,
        }
    }

    /// Takes an ACK's lease (checked here: a lease time, not zero; a usable address) and
    /// arms T1, T2 and the end. Returns the lease, or `None` if refused (counted).
    fn bind(
        &mut self,
        r: &Reply,
        server: Ipv4Address,
        src_mac: EthernetAddress,
        now: u64,
    ) -> Option<Lease> {
        let prefix_len = r.prefix_len.unwrap_or(24);
        let lease_s = match r.lease_s {
            Some(s) if s > 0 => s,
            _ => {
                self.counts.bad_lease += 1;
                return None;
            }
        };
        if !usable(r.yiaddr, prefix_len) || !usable(server, 32) {
            self.counts.bad_address += 1;
            return None;
        }
        // RFC 2131 §4.4.5's defaults: T1 at half the lease, T2 at 7/8 of it (computed
        // whole: `lease / 8 * 7` truncates first and put T2 before T1 for a 2 s lease).
        let seven_eighths = (u64::from(lease_s) * 7 / 8) as u32;
        let (t1_s, t2_s) = match (r.t1_s, r.t2_s) {
            (Some(t1), Some(t2)) if t1 < t2 && t2 < lease_s => (t1, t2),
            (Some(t1), None) if t1 < seven_eighths => (t1, seven_eighths),
            (None, Some(t2)) if t2 < lease_s => (t2.min(lease_s / 2), t2),
            _ => (lease_s / 2, seven_eighths),
        };
        let router = r.router.filter(|g| {
            usable(*g, prefix_len) && *g != r.yiaddr && g.in_subnet(r.yiaddr, prefix_len)
        });
        let lease = Lease {
            address: r.yiaddr,
            prefix_len,
            router,
            server,
            dns: r.dns,
            lease_s,
            t1_s,
            t2_s,
        };
        let at = |s: u32| {
            if lease_s == u32::MAX {
                u64::MAX
            } else {
                now.saturating_add(u64::from(s) * SEC)
            }
        };
        self.t1_at = at(t1_s);
        self.t2_at = at(t2_s);
        self.end_at = at(lease_s);
        self.counts.acks += 1;
        self.server_mac = src_mac;
        self.lease = Some(lease);
        self.state = State::Bound;
        self.deadline = self.t1_at;
        Some(lease)
    }
}

#[cfg(test)]
mod tests;
