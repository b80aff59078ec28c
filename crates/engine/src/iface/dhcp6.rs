//! The DHCPv6 client (RFC 8415) as a state machine: a server's message or the time in,
//! the message to send and the address leased, renewed or lost out. The link
//! ([`super::ipv6::Link`]) starts it when a router advertisement asks (the M flag: an
//! address from DHCPv6; the O flag alone: other configuration, the DNS servers), sends
//! what it builds from the link-local address to All_DHCP_Relay_Agents_and_Servers, hands
//! it the servers' answers to UDP port 546 and holds the leased address in a prefix slot
//! of its own ([`super::slaac::Routers::lease`]), checked by DAD.
//!
//! **Exchanges** (§18.2): Solicit → Advertise (the first retransmission time collects
//! them; preference 255 is taken at once; then the most preferred) → Request → Reply:
//! bound. At T1 Renew to that server, at T2 Rebind to any, until the valid lifetime ends:
//! the address is lost and soliciting starts again. T1 and T2 of 0 (the server leaves
//! them to us) are half and 0.8 of the preferred lifetime (§21.4's suggestion); T1 is
//! never under [`MIN_T1_S`]. The O
//! flag alone: Information-request → Reply, again after its refresh time (default a day,
//! at least ten minutes, §21.23).
//!
//! **Retransmission** (§15): each exchange's initial time, doubled with ±10 % jitter up
//! to its maximum; Request gives up after [`REQ_MAX_RC`] tries (soliciting again), Renew
//! at T2, Rebind at the end of the valid lifetime. The first Solicit and
//! Information-request wait a random delay below a second. A server's SOL_MAX_RT or
//! INF_MAX_RT is taken between 60 and 86400 seconds (§21.24).
//!
//! **What is taken** (§16): an Advertise or Reply with the transaction id in flight, our
//! Client Identifier and a Server Identifier; every other answer is counted by reason
//! and dropped. An Advertise whose IA_NA holds no usable address is not an offer. A Reply
//! with NoBinding to a Renew or Rebind, or with no address, starts soliciting again. The
//! leased address found in use by DAD is given up, and soliciting starts again no sooner
//! than [`DECLINED_WAIT_NS`] later (a Decline message is not sent: the server may offer
//! the same address again, so the wait bounds the cost).
//!
//! Fixed size, no allocation; a forged answer can at most end an exchange the way a real
//! one would.

use crate::wire::dhcpv6::{
    self, status, ClientMessage, Duid, IaAddress, MessageType, ServerMessage, MAX_DNS,
};
use crate::wire::Ipv6Address;

const NS: u64 = 1_000_000_000;
/// §7.6: SOL_MAX_DELAY, INF_MAX_DELAY.
const MAX_DELAY_NS: u64 = NS;
/// §7.6: SOL_TIMEOUT, REQ_TIMEOUT, INF_TIMEOUT.
const FIRST_TIMEOUT_NS: u64 = NS;
/// §7.6: SOL_MAX_RT and INF_MAX_RT's default.
const SOL_MAX_RT_NS: u64 = 3600 * NS;
/// §7.6: REQ_MAX_RT.
const REQ_MAX_RT_NS: u64 = 30 * NS;
/// §7.6: REQ_MAX_RC.
pub const REQ_MAX_RC: u32 = 10;
/// §7.6: REN_TIMEOUT, REB_TIMEOUT.
const REN_TIMEOUT_NS: u64 = 10 * NS;
/// §7.6: REN_MAX_RT, REB_MAX_RT.
const REN_MAX_RT_NS: u64 = 600 * NS;
/// §7.6: IRT_DEFAULT.
const IRT_DEFAULT_NS: u64 = 86_400 * NS;
/// §7.6: IRT_MINIMUM.
const IRT_MINIMUM_NS: u64 = 600 * NS;
/// How long after giving up a leased address (in use on the link) soliciting starts again.
pub const DECLINED_WAIT_NS: u64 = 60 * NS;
/// The earliest a Renew follows the Reply that bound or renewed (T1's floor): a
/// server answering with a preferred lifetime of 0, or a T1 of a second, would otherwise
/// have the client renew as fast as it answers.
pub const MIN_T1_S: u32 = 60;

/// What the client does now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Nothing asked for it yet.
    Idle,
    /// Looking for a server (Solicit).
    Soliciting,
    /// Asking the chosen server for its offer (Request).
    Requesting,
    /// Holding a lease.
    Bound,
    /// Extending it with its server (Renew).
    Renewing,
    /// Extending it with any server (Rebind).
    Rebinding,
    /// Asking for other configuration (Information-request).
    Informing,
    /// Holding other configuration until its refresh.
    Informed,
}

/// A lease: the address and when it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    /// The address.
    pub addr: Ipv6Address,
    /// When it stops being preferred (ns; `u64::MAX`: never).
    pub preferred_until: u64,
    /// When it stops being valid (ns; `u64::MAX`: never).
    pub valid_until: u64,
    /// When to renew.
    t1_at: u64,
    /// When to rebind.
    t2_at: u64,
    /// Who gave it.
    server: Duid,
}

/// What the client tells the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Hold this address (new, or its lifetimes renewed).
    Leased(Lease),
    /// This address is no longer ours.
    Lost(Ipv6Address),
}

/// Answers not taken, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Refusals {
    /// No exchange in flight, or another transaction id.
    pub unexpected: u64,
    /// No Client Identifier, or not ours; or no Server Identifier.
    pub identity: u64,
    /// An Advertise with no usable address, or a Reply without one to a Request.
    pub no_address: u64,
}

#[derive(Debug, Clone, Copy)]
struct Offer {
    server: Duid,
    addr: IaAddress,
    preference: u8,
}

/// An exchange in flight: its transaction, when it began, when it next sends.
#[derive(Debug, Clone, Copy)]
struct Tx {
    xid: [u8; 3],
    start: u64,
    next: u64,
    rt: u64,
    sent: u32,
}

#[derive(Debug, Clone, Copy)]
enum State {
    Idle,
    Soliciting {
        tx: Tx,
        best: Option<Offer>,
    },
    Requesting {
        tx: Tx,
        offer: Offer,
    },
    Bound(Lease),
    Renewing {
        tx: Tx,
        lease: Lease,
    },
    Rebinding {
        tx: Tx,
        lease: Lease,
    },
    Informing {
        tx: Tx,
    },
    Informed {
        refresh_at: u64,
    },
    /// A leased address was in use on the link: solicit again at this time.
    Declined {
        until: u64,
    },
}

/// The client (see the module doc).
#[derive(Debug, Clone)]
pub struct Client {
    duid: Duid,
    iaid: u32,
    state: State,
    /// The server's SOL_MAX_RT, when it gave one.
    sol_max_rt: u64,
    /// The server's INF_MAX_RT, when it gave one.
    inf_max_rt: u64,
    /// The DNS servers last given.
    pub dns: [Option<Ipv6Address>; MAX_DNS],
    /// Answers not taken.
    pub refused: Refusals,
    /// Messages sent.
    pub sent: u64,
    /// xorshift64 state: transaction ids and jitter (not a secret: RFC 8415 §16 asks
    /// only that ids differ).
    rng: u64,
}

impl Client {
    /// A client for the interface with `mac` (its DUID-LL; IAID 1); `seed` makes its
    /// transaction ids and delays differ from other hosts'.
    pub fn new(mac: [u8; 6], seed: u64) -> Client {
        Client {
            duid: Duid::link_layer(mac),
            iaid: 1,
            state: State::Idle,
            sol_max_rt: SOL_MAX_RT_NS,
            inf_max_rt: SOL_MAX_RT_NS,
            dns: [None; MAX_DNS],
            refused: Refusals::default(),
            sent: 0,
            rng: seed | 1,
        }
    }

    fn random(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }

    /// `t` with jitter in [-10 %, +10 %] (or (0, +10 %] when `positive`).
    fn jitter(&mut self, t: u64, positive: bool) -> u64 {
        let span = t / 10;
        if span == 0 {
            return t;
        }
        let r = self.random() % span;
        if positive || self.random() & 1 == 0 {
            t + r + 1
        } else {
            t - r
        }
    }

    fn begin(&mut self, now: u64, delay: bool, first_rt: u64) -> Tx {
        let r = self.random();
        let wait = if delay { r % MAX_DELAY_NS } else { 0 };
        Tx {
            xid: [(r >> 40) as u8, (r >> 48) as u8, (r >> 56) as u8],
            start: now + wait,
            next: now + wait,
            rt: first_rt,
            sent: 0,
        }
    }

    /// The transaction in flight, if any.
    pub fn xid(&self) -> Option<[u8; 3]> {
        self.tx().map(|t| t.xid)
    }

    /// Our DUID (the Client Identifier sent).
    pub fn duid(&self) -> &Duid {
        &self.duid
    }

    /// Where the client stands.
    pub fn phase(&self) -> Phase {
        match self.state {
            State::Idle | State::Declined { .. } => Phase::Idle,
            State::Soliciting { .. } => Phase::Soliciting,
            State::Requesting { .. } => Phase::Requesting,
            State::Bound(_) => Phase::Bound,
            State::Renewing { .. } => Phase::Renewing,
            State::Rebinding { .. } => Phase::Rebinding,
            State::Informing { .. } => Phase::Informing,
            State::Informed { .. } => Phase::Informed,
        }
    }

    /// The lease held, if any.
    pub fn lease(&self) -> Option<Lease> {
        match self.state {
            State::Bound(l)
            | State::Renewing { lease: l, .. }
            | State::Rebinding { lease: l, .. } => Some(l),
            _ => None,
        }
    }

    /// A router advertisement's M (`managed`) and O (`other`) flags, at `now`: M starts
    /// soliciting unless an address is held or being asked for; O alone asks for other
    /// configuration once (refreshed later). Flags cleared change nothing held.
    pub fn advertised(&mut self, managed: bool, other: bool, now: u64) {
        match self.state {
            State::Idle | State::Informing { .. } | State::Informed { .. } if managed => {
                self.solicit(now);
            }
            State::Idle if other => {
                let tx = self.begin(now, true, FIRST_TIMEOUT_NS);
                self.state = State::Informing { tx };
            }
            _ => {}
        }
    }

    /// Starts soliciting at `now` (after the random first delay).
    pub fn solicit(&mut self, now: u64) {
        let tx = self.begin(now, true, FIRST_TIMEOUT_NS);
        self.state = State::Soliciting { tx, best: None };
    }

    /// The leased address `addr` is in use on the link (DAD): given up; soliciting again
    /// after [`DECLINED_WAIT_NS`].
    pub fn declined(&mut self, addr: Ipv6Address, now: u64) {
        if self.lease().is_some_and(|l| l.addr == addr) {
            self.state = State::Declined {
                until: now + DECLINED_WAIT_NS,
            };
        }
    }

    /// When [`poll`](Self::poll) next has work (`u64::MAX`: none).
    pub fn deadline(&self) -> u64 {
        match self.state {
            State::Idle => u64::MAX,
            State::Soliciting { tx, .. }
            | State::Requesting { tx, .. }
            | State::Informing { tx } => tx.next,
            State::Renewing { tx, lease } => tx.next.min(lease.t2_at).min(lease.valid_until),
            State::Rebinding { tx, lease } => tx.next.min(lease.valid_until),
            State::Bound(l) => l.t1_at.min(l.valid_until),
            State::Informed { refresh_at } => refresh_at,
            State::Declined { until } => until,
        }
    }

    /// The clock at `now`: writes into `out` (at least [`dhcpv6::MAX_EMIT`] octets) the
    /// message due, returning its length; or tells a lease lost. Call until `None`.
    pub fn poll(&mut self, now: u64, out: &mut [u8]) -> Option<Poll> {
        match self.state {
            State::Idle => None,
            State::Declined { until } if now >= until => {
                self.solicit(now);
                self.poll(now, out)
            }
            State::Declined { .. } => None,
            State::Informed { refresh_at } if now >= refresh_at => {
                let tx = self.begin(now, true, FIRST_TIMEOUT_NS);
                self.state = State::Informing { tx };
                self.poll(now, out)
            }
            State::Informed { .. } => None,
            State::Bound(l) if now >= l.valid_until => {
                self.solicit(now);
                Some(Poll::Event(Event::Lost(l.addr)))
            }
            State::Bound(l) if now >= l.t1_at => {
                let tx = self.begin(now, false, REN_TIMEOUT_NS);
                self.state = State::Renewing { tx, lease: l };
                self.poll(now, out)
            }
            State::Bound(_) => None,
            State::Renewing { lease, .. } | State::Rebinding { lease, .. }
                if now >= lease.valid_until =>
            {
                self.solicit(now);
                Some(Poll::Event(Event::Lost(lease.addr)))
            }
            State::Renewing { lease, .. } if now >= lease.t2_at => {
                let tx = self.begin(now, false, REN_TIMEOUT_NS);
                self.state = State::Rebinding { tx, lease };
                self.poll(now, out)
            }
            State::Soliciting { tx, best } => {
                // The first retransmission time has passed with offers: take the best.
                if let Some(offer) = best.filter(|_| tx.sent > 0 && now >= tx.next) {
                    let tx = self.begin(now, false, FIRST_TIMEOUT_NS);
                    self.state = State::Requesting { tx, offer };
                    return self.poll(now, out);
                }
                self.send(now, out, MessageType::Solicit, None, None, self.sol_max_rt)
            }
            State::Requesting { tx, offer } => {
                if tx.sent >= REQ_MAX_RC && now >= tx.next {
                    self.solicit(now);
                    return self.poll(now, out);
                }
                self.send(
                    now,
                    out,
                    MessageType::Request,
                    Some(offer.server),
                    Some(offer.addr.addr),
                    REQ_MAX_RT_NS,
                )
            }
            State::Renewing { lease, .. } => self.send(
                now,
                out,
                MessageType::Renew,
                Some(lease.server),
                Some(lease.addr),
                REN_MAX_RT_NS,
            ),
            State::Rebinding { lease, .. } => self.send(
                now,
                out,
                MessageType::Rebind,
                None,
                Some(lease.addr),
                REN_MAX_RT_NS,
            ),
            State::Informing { .. } => self.send(
                now,
                out,
                MessageType::InformationRequest,
                None,
                None,
                self.inf_max_rt,
            ),
        }
    }

    /// The exchange in flight's message, if due at `now`; its next time set.
    fn send(
        &mut self,
        now: u64,
        out: &mut [u8],
        kind: MessageType,
        server: Option<Duid>,
        addr: Option<Ipv6Address>,
        max_rt: u64,
    ) -> Option<Poll> {
        let mut tx = self.tx()?;
        if now < tx.next {
            return None;
        }
        // §15: RT = IRT + RAND*IRT at first (RAND > 0 for a Solicit), then twice the
        // last with jitter, capped at MRT with jitter.
        let rt = if tx.sent == 0 {
            self.jitter(tx.rt, kind == MessageType::Solicit)
        } else if tx.rt.saturating_mul(2) > max_rt {
            self.jitter(max_rt, false)
        } else {
            let twice = tx.rt.saturating_mul(2);
            self.jitter(twice, false)
        };
        tx.rt = rt;
        tx.next = now + rt;
        tx.sent += 1;
        let elapsed_cs = ((now - tx.start.min(now)) / 10_000_000).min(0xffff) as u16;
        let ia_na = match kind {
            MessageType::InformationRequest => None,
            _ => Some((self.iaid, addr)),
        };
        let m = ClientMessage {
            kind,
            xid: tx.xid,
            client_id: &self.duid,
            server_id: server.as_ref(),
            ia_na,
            elapsed_cs,
        };
        let n = dhcpv6::emit(&m, out)?;
        self.set_tx(tx);
        self.sent += 1;
        Some(Poll::Send(n))
    }

    fn tx(&self) -> Option<Tx> {
        match self.state {
            State::Soliciting { tx, .. }
            | State::Requesting { tx, .. }
            | State::Renewing { tx, .. }
            | State::Rebinding { tx, .. }
            | State::Informing { tx } => Some(tx),
            _ => None,
        }
    }

    fn set_tx(&mut self, new: Tx) {
        match &mut self.state {
            State::Soliciting { tx, .. }
            | State::Requesting { tx, .. }
            | State::Renewing { tx, .. }
            | State::Rebinding { tx, .. }
            | State::Informing { tx } => *tx = new,
            _ => {}
        }
    }

    /// A server's message (parsed; from a link-local source to our link-local address,
    /// port 546: the link checked) at `now`. Returns the lease to hold or lost, if any.
    pub fn receive(&mut self, m: &ServerMessage, now: u64) -> Option<Event> {
        let Some(tx) = self.tx().filter(|tx| tx.xid == m.xid && tx.sent > 0) else {
            self.refused.unexpected += 1;
            return None;
        };
        let Some(server) = m.server_id.filter(|_| m.client_id == Some(self.duid)) else {
            self.refused.identity += 1;
            return None;
        };
        // §21.24, §21.25: a value out of 60..=86400 is ignored.
        let in_range = |rt: u32| (60..=86_400).contains(&rt).then(|| u64::from(rt) * NS);
        if let Some(rt) = m.sol_max_rt.and_then(in_range) {
            self.sol_max_rt = rt;
        }
        if let Some(rt) = m.inf_max_rt.and_then(in_range) {
            self.inf_max_rt = rt;
        }
        // Our IA_NA, T1 not after T2 (§21.4: else discarded), with an address a host can
        // hold: global unicast, not ::, loopback, multicast, link-local or IPv4-mapped
        // (any host on the link sees our Solicit and could answer it).
        let ia = m
            .ia_na
            .filter(|ia| ia.iaid == self.iaid)
            .filter(|ia| ia.t1 == 0 || ia.t2 == 0 || ia.t1 <= ia.t2);
        let offered = ia.and_then(|ia| ia.addr.filter(|a| holdable(a.addr)).map(|a| (ia, a)));
        match (self.state, m.kind) {
            (State::Soliciting { best, .. }, MessageType::Advertise) => {
                let Some((_, addr)) =
                    offered.filter(|_| m.status.is_none_or(|s| s == status::SUCCESS))
                else {
                    self.refused.no_address += 1;
                    return None;
                };
                let offer = Offer {
                    server,
                    addr,
                    preference: m.preference,
                };
                self.take_dns(m);
                // The first retransmission time collects offers; 255 ends it, and after
                // it the first offer is taken (§18.2.1).
                let first_round_over = tx.sent > 1;
                if m.preference == 255 || first_round_over {
                    let tx = self.begin(now, false, FIRST_TIMEOUT_NS);
                    self.state = State::Requesting { tx, offer };
                } else if best.is_none_or(|b| offer.preference > b.preference) {
                    self.state = State::Soliciting {
                        tx,
                        best: Some(offer),
                    };
                }
                None
            }
            (State::Requesting { .. }, MessageType::Reply)
            | (State::Renewing { .. }, MessageType::Reply)
            | (State::Rebinding { .. }, MessageType::Reply) => {
                let no_binding = ia.and_then(|ia| ia.status) == Some(status::NO_BINDING);
                let held = self.lease();
                let Some((ia, addr)) = offered.filter(|_| !no_binding) else {
                    self.refused.no_address += 1;
                    match held {
                        // §18.2.10.1: the server lost our binding: ask for it again with
                        // a Request; the address stays until that Reply or the end of its
                        // valid lifetime.
                        Some(l) if no_binding => {
                            let offer = Offer {
                                server: l.server,
                                addr: IaAddress {
                                    addr: l.addr,
                                    preferred: 0,
                                    valid: 0,
                                },
                                preference: 0,
                            };
                            let tx = self.begin(now, false, FIRST_TIMEOUT_NS);
                            self.state = State::Requesting { tx, offer };
                            return None;
                        }
                        // Taken back (a valid lifetime of 0): no longer ours.
                        Some(l) if ia.and_then(|ia| ia.revoked) == Some(l.addr) => {
                            self.solicit(now);
                            return Some(Event::Lost(l.addr));
                        }
                        // Else a lease held stays until its valid lifetime, which poll
                        // ends; without one, solicit again.
                        Some(_) => return None,
                        None => {
                            self.solicit(now);
                            return None;
                        }
                    }
                };
                self.take_dns(m);
                let lease = self.bind(server, ia.t1, ia.t2, addr, now);
                self.state = State::Bound(lease);
                Some(Event::Leased(lease))
            }
            (State::Informing { .. }, MessageType::Reply) => {
                self.take_dns(m);
                let refresh = m
                    .info_refresh
                    .map_or(IRT_DEFAULT_NS, |s| (u64::from(s) * NS).max(IRT_MINIMUM_NS));
                self.state = State::Informed {
                    refresh_at: now + refresh,
                };
                None
            }
            _ => {
                self.refused.unexpected += 1;
                None
            }
        }
    }

    fn take_dns(&mut self, m: &ServerMessage) {
        if m.dns[0].is_some() {
            self.dns = m.dns;
        }
    }

    fn bind(&self, server: Duid, t1: u32, t2: u32, a: IaAddress, now: u64) -> Lease {
        let until = |s: u32| match s {
            u32::MAX => u64::MAX,
            s => now + u64::from(s) * NS,
        };
        let preferred = a.preferred.min(a.valid);
        // T1/T2 of 0: ours to choose, half and 0.8 of the preferred lifetime; never past
        // the valid lifetime, T1 never after T2, neither sooner than MIN_T1_S.
        let (t1, t2) = match (t1, t2) {
            (0, _) | (_, 0) => (preferred / 2, preferred / 5 * 4),
            (t1, t2) => (t1.min(t2), t2),
        };
        // A T1 raised to the floor keeps a Renew before the Rebind (T2 at 1.6 times it,
        // as 0.5 and 0.8 above).
        let t2 = match t1 < MIN_T1_S {
            true => t2.max(MIN_T1_S / 5 * 8),
            false => t2,
        };
        let t1 = t1.max(MIN_T1_S);
        let t2 = t2.max(t1);
        let valid_until = until(a.valid);
        Lease {
            addr: a.addr,
            preferred_until: until(preferred),
            valid_until,
            t1_at: until(t1).min(valid_until),
            t2_at: until(t2).min(valid_until),
            server,
        }
    }
}

/// Whether a server may lease us `a`: a global unicast address (RFC 4291), not one no
/// interface holds or one only the link gives.
fn holdable(a: Ipv6Address) -> bool {
    a.is_unicast()
        && !a.is_unspecified()
        && !a.is_loopback()
        && !a.is_link_local()
        && !a.is_ipv4_mapped()
}

/// What [`Client::poll`] asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Poll {
    /// Send the message written (its length) to [`dhcpv6::ALL_SERVERS`].
    Send(usize),
    /// Tell the link.
    Event(Event),
}

#[cfg(test)]
mod tests;
