//! IPv6 on the link (`Config::ipv6`): the glue between a server and the interface's
//! [`ipv6::Link`](crate::iface::ipv6::Link). Every frame of EtherType 0x86DD comes here
//! before the IPv4 classifier; the link's answers (neighbour advertisements, echo
//! replies) and the clock's work (DAD probes, neighbour probes) go out on the frame's
//! queue; the drops are counted by reason beside IPv4's. One server of a machine runs it
//! (core 0's); another drops IPv6 as not served.
//!
//! Without the engine's `ipv6` feature (the bare machine's build) the link is never made
//! and its code is not linked: every IPv6 frame is counted as not served.
//!
//! The link is made at the first round, with the clock then (DAD's delay runs from
//! there), its secret `Config::ipv6_secret` or one derived from the ISN secret.

use alloc::boxed::Box;
use core::hash::Hasher;

use siphasher::sip::SipHasher24;

use super::{AccessLog, Server};
use crate::iface::addr6::{Event, Phase};
use crate::iface::ipv6::{Drop6, Link, Out, Step};
use crate::iface::share6::{Share, Slots, RING_FRAMES, SLOTS};
use crate::iface::{tcp_repr, Sent, LOCAL_V6};
use crate::nic::TxRing;
use crate::resource::Lookup;
use crate::tcp::conn::OUR_MSS_V6;
use crate::tcp::port_table::Peer;
use crate::wire::{EthernetAddress, Ipv6Address, TcpPacket};

/// The IPv6 and TCP headers (no options) a segment's MTU holds besides its payload.
const IP6_TCP_HEADERS: u32 = 40 + 20;

/// How long a path MTU learned from a Packet Too Big is kept (RFC 8201 §5.3: at least
/// five minutes, ten recommended).
const PMTU_KEEP_NS: u64 = 600_000_000_000;

/// Path MTUs to IPv6 destinations that sent us a Packet Too Big we acted on: a few
/// entries, the oldest replaced (a fixed array: what forged messages can fill is only
/// what passed the in-flight check, and a forgotten entry costs one more Packet Too Big).
#[derive(Debug, Clone, Default)]
pub(super) struct PathMtus {
    entries: [([u8; 16], u16, u64); 8],
}

impl PathMtus {
    /// Keeps `mtu` for `peer` (learned at `now`).
    fn learn(&mut self, peer: Ipv6Address, mtu: u16, now: u64) {
        let at = self
            .entries
            .iter()
            .position(|e| e.0 == peer.0)
            .unwrap_or_else(|| {
                (0..self.entries.len())
                    .min_by_key(|&i| self.entries[i].2)
                    .unwrap_or(0)
            });
        self.entries[at] = (peer.0, mtu, now.max(1));
    }

    /// The path MTU kept for `peer`, if not older than [`PMTU_KEEP_NS`].
    fn get(&self, peer: &[u8; 16], now: u64) -> Option<u16> {
        self.entries
            .iter()
            .find(|e| e.2 != 0 && &e.0 == peer && now.saturating_sub(e.2) < PMTU_KEEP_NS)
            .map(|e| e.1)
    }
}

/// Most timer steps (probes) taken per round: the link has at most one address probe
/// and a solicitation per neighbour entry due at once.
const STEPS_PER_ROUND: usize = 8;

/// Whether IPv6 frame `b` is a Packet Too Big as the link takes it (ICMPv6 type 2 right
/// after the fixed header).
fn is_too_big(b: &[u8]) -> bool {
    b.get(20) == Some(&58) && b.get(54) == Some(&2)
}

/// Whether `b` is an IPv6 frame (EtherType 0x86DD): the one test the IPv4 path pays.
#[inline(always)]
pub(super) fn is_ipv6(b: &[u8]) -> bool {
    b.get(12..14) == Some(&[0x86, 0xdd][..])
}

/// The RFC 7217 secret when none is configured: a PRF of the ISN secret, so neither can
/// be learned from the other.
fn derived_secret(isn_key: &[u8; 16]) -> [u8; 16] {
    // SipHash-2-4-64 twice, not SipHash-128 (see iface::addr6's stable_id).
    let half = |which: &[u8]| {
        let mut h = SipHasher24::new_with_key(isn_key);
        h.write(b"bareweb rfc7217 secret");
        h.write(which);
        h.finish()
    };
    let mut s = [0u8; 16];
    s[..8].copy_from_slice(&half(b"0").to_le_bytes());
    s[8..].copy_from_slice(&half(b"1").to_le_bytes());
    s
}

impl<L: Lookup<'static>> Server<L> {
    /// The IPv6 link, once started (`Config::ipv6`, the first round).
    pub fn ipv6_link(&self) -> Option<&Link> {
        self.ipv6.as_deref()
    }

    /// Our link-local address and where its DAD stands, once started (a follower's: core
    /// 0's, once in use).
    pub fn ipv6_address(&self) -> Option<(Ipv6Address, Phase)> {
        let l = self.ipv6.as_deref()?;
        match l.is_follower() {
            true => l.slot_addr(0).map(|a| (a, Phase::Preferred)),
            false => Some((l.addr.addr(), l.addr.phase())),
        }
    }

    /// The oldest news of the addresses (preferred, duplicate, gave up, expired) not yet
    /// taken: for the platform to tell the operator (call until `None`).
    pub fn take_ipv6_news(&mut self) -> Option<Event> {
        let first = self.ipv6_news[0].take();
        self.ipv6_news.rotate_left(1);
        first
    }

    /// Keeps `e` for [`take_ipv6_news`](Self::take_ipv6_news); when the queue is full (the
    /// platform does not read it) the oldest goes.
    fn push_ipv6_news(&mut self, e: Event) {
        let q = &mut self.ipv6_news;
        if q[q.len() - 1].is_some() {
            q.rotate_left(1);
            q[q.len() - 1] = None;
        }
        if let Some(slot) = q.iter_mut().find(|x| x.is_none()) {
            *slot = Some(e);
        }
    }

    /// Our global IPv6 addresses (advertised prefixes', configured, leased) in use.
    pub fn ipv6_globals(&self) -> impl Iterator<Item = Ipv6Address> + '_ {
        self.ipv6
            .iter()
            .flat_map(|l| l.slots().into_iter().skip(1).flatten())
    }

    /// When the link next has timer work (`u64::MAX`: none; 0: not started yet).
    pub(super) fn ipv6_deadline(&self) -> u64 {
        match &self.ipv6 {
            Some(_) => self.ipv6_next,
            None if cfg!(feature = "ipv6") && self.cfg.ipv6 => 0,
            None => u64::MAX,
        }
    }

    /// Makes the IPv6 link now (`now`: the clock, from which DAD's delay runs), if
    /// `Config::ipv6` asks and it is not made yet; else the first round makes it. A
    /// platform that allows no allocation once serving (the bare machine seals its heap)
    /// calls this before.
    pub fn start_ipv6(&mut self, now: u64) {
        if !cfg!(feature = "ipv6") || !self.cfg.ipv6 || self.ipv6.is_some() {
            return;
        }
        let secret = self
            .cfg
            .ipv6_secret
            .unwrap_or_else(|| derived_secret(&self.cfg.isn_key));
        let mut link = Link::new(secret, self.iface.mac, now);
        if matches!(self.share6.as_deref(), Some(Share::Spoke(_))) {
            // Another core runs the link; this one follows its addresses (none yet).
            link.follow([None; SLOTS], None);
        } else if let Some((addr, _)) = self.cfg.ipv6_static {
            link.slaac.configure(addr, now);
        }
        link.route(self.cfg.ipv6_gateway, self.cfg.ipv6_static);
        if self.cfg.ipv6_dhcp6 {
            link.dhcp6_only();
        }
        self.ipv6 = Some(Box::new(link));
        self.ipv6_next = 0;
    }

    /// Once per round: starts the link, runs its timers. Returns whether anything was sent.
    pub(super) fn ipv6_round<T: TxRing>(&mut self, tx: &mut T) -> bool {
        if !cfg!(feature = "ipv6") || !self.cfg.ipv6 {
            return false;
        }
        let now = self.now_ns;
        self.start_ipv6(now);
        let mut worked = false;
        if self.share6.is_some() {
            worked |= self.share6_round(tx);
        }
        if now < self.ipv6_next {
            return worked;
        }
        for _ in 0..STEPS_PER_ROUND {
            let Some(step) = self.ipv6.as_mut().and_then(|l| l.poll(now)) else {
                break;
            };
            // The clock's steps are the link's own (never a datagram to log).
            worked |= self.ipv6_step(step, tx, &mut crate::http::log::NoLog);
        }
        self.link_ran();
        worked
    }

    /// The per-queue mode's IPv6 on this core ([`crate::iface::share6`]): a spoke
    /// follows the hub's addresses and takes the frames the hub passed down; the hub takes
    /// the frames every spoke passed up, then publishes its addresses (its timers ran in
    /// the last round). At most [`RING_FRAMES`] frames a ring a round. Returns whether
    /// any frame was taken.
    #[inline(never)] // off the round's own path: only a core of the per-queue mode
    fn share6_round<T: TxRing>(&mut self, tx: &mut T) -> bool {
        let Some(mut share) = self.share6.take() else {
            return false;
        };
        // The frames taken are the link's own, or a Packet Too Big: never a datagram to
        // log.
        let log = &mut crate::http::log::NoLog;
        let mut taken = 0u64;
        let (mut passed, mut full) = (0, 0);
        match &mut *share {
            Share::Spoke(s) => {
                self.rx_from_ring = true;
                if let Some(p) = s.news() {
                    self.follow6(p.slots, p.router);
                }
                // A Packet Too Big another core took: acted on here too, passed no
                // further.
                while taken < RING_FRAMES as u64
                    && s.down
                        .with_front(|m| self.ipv6_frame(m.frame(), tx, log))
                        .is_some()
                {
                    s.down.pop();
                    taken += 1;
                }
                self.rx_from_ring = false;
            }
            Share::Hub(h) => {
                for k in 0..h.up.len() {
                    for _ in 0..RING_FRAMES {
                        let (up, down) = (&mut h.up[k], &mut h.down);
                        let Some(p) = up.with_front(|m| {
                            match self.ipv6_frame(m.frame(), tx, log) {
                                // A Packet Too Big no core found yet: to the other spokes
                                // (none: it ends here).
                                true => match down.to_spokes(m.frame(), Some(k + 1)) {
                                    (0, 0) => {
                                        self.stats.drop_too_big += 1;
                                        (0, 0)
                                    }
                                    p => p,
                                },
                                false => (0, 0),
                            }
                        }) else {
                            break;
                        };
                        up.pop();
                        taken += 1;
                        passed += p.0;
                        full += p.1;
                    }
                }
                if let Some(link) = self.ipv6.as_deref() {
                    h.publish(&link.slots(), link.router());
                }
            }
        }
        self.share6 = Some(share);
        self.stats.ipv6_passed += passed;
        self.stats.drop_ipv6_pass_full += full;
        taken > 0
    }

    /// A frame for the IPv6 link that reached the platform another way than this core's
    /// queue: under AF_XDP, a router advertisement or a listener query to all-nodes, which
    /// the XDP program leaves to the host's stack and a packet socket copies. Taken as if
    /// received (on the hub, core 0; a spoke passes it on).
    pub fn link_frame<N: crate::nic::Nic>(&mut self, frame: &[u8], nic: &mut N) {
        let (_, tx) = nic.split();
        if is_ipv6(frame) && self.ipv6_frame(frame, tx, &mut crate::http::log::NoLog) {
            self.pass6(frame);
        }
    }

    /// This core's end of the per-queue mode's IPv6 sharing ([`crate::iface::share6`],
    /// given by `cores::plan`), before the link is made: the hub (core 0) runs the link
    /// and publishes its addresses; a spoke's link follows them.
    pub fn share_ipv6(&mut self, end: Share) {
        self.share6 = Some(Box::new(end));
        self.share6_on = true;
    }

    /// Passes on `frame`, received from this core's own queue (its `ipv6_frame` asked
    /// to): [`Share::pass`]. A Packet Too Big goes up only while its ring is less than half
    /// full, the rest kept for the link's own frames (a flood of forged ones cannot crowd
    /// out a DAD defender's advertisement).
    #[inline(never)] // rare: keeps the input path small enough to be inlined
    pub(super) fn pass6(&mut self, frame: &[u8]) {
        if let Some(share) = self.share6.as_deref_mut() {
            let (passed, full) = share.pass(frame, None, is_too_big(frame));
            self.stats.ipv6_passed += passed;
            self.stats.drop_ipv6_pass_full += full;
        }
    }

    /// A spoke: the hub's addresses in use are now `slots`, its router `router`.
    /// Connections made to an address that left its slot are freed, as the hub frees its
    /// own when one expires.
    pub(super) fn follow6(&mut self, slots: Slots, router: Option<Ipv6Address>) {
        let Some(link) = self.ipv6.as_deref_mut() else {
            return;
        };
        let before = link.slots();
        link.follow(slots, router);
        let mut gone = 0u8;
        for (i, (b, a)) in before.iter().zip(&slots).enumerate() {
            if b.is_some() && b != a {
                gone |= 1 << i;
            }
        }
        self.drop_v6_slots(gone);
        self.link_ran();
    }

    /// After the link ran (its round, a frame not TCP or UDP): its next deadline, and the
    /// IPv6 frame builder looked at again (an address may have changed).
    fn link_ran(&mut self) {
        self.ipv6_next = self.ipv6.as_ref().map_or(u64::MAX, |l| l.deadline());
        self.egress6_local = u8::MAX;
        if let Some(link) = self.ipv6.as_deref() {
            let d = link.destinations();
            if d != self.ipv6_dests {
                self.ipv6_dests = d;
                self.ipv6_dests_changed = true;
            }
            // The hub's addresses to the spokes as soon as they change (a frame taken, a
            // timer): during the rings' own round the share is out, and published there.
            if let Some(Share::Hub(h)) = self.share6.as_deref_mut() {
                h.publish(&link.slots(), link.router());
            }
            if !link.is_follower() {
                self.tell_router();
            }
        }
    }

    /// Tells the operator when the router for peers beyond the link changed: a new one,
    /// or none left; and, once a global address is held and every router solicitation
    /// went unanswered, that only peers on the link are answered (a configured address
    /// with no `--gw6` and no router on the link).
    fn tell_router(&mut self) {
        let Some(link) = self.ipv6.as_deref() else {
            return;
        };
        let router = link.router();
        if Some(router) == self.ipv6_router_told {
            return;
        }
        let news = match (router, self.ipv6_router_told) {
            (Some(addr), _) => Event::Router {
                addr,
                configured: Some(addr) == self.cfg.ipv6_gateway,
            },
            (None, Some(Some(_))) => Event::NoRouter,
            (None, _) if link.slaac.unanswered() && self.ipv6_globals().next().is_some() => {
                Event::NoRouter
            }
            (None, _) => return,
        };
        self.ipv6_router_told = Some(router);
        self.push_ipv6_news(news);
    }

    /// Whether the link's destinations (its addresses in any phase and their groups) changed
    /// since the last call: a platform that steers them to this server (AF_XDP's map) must
    /// follow before the new address's DAD probe goes (its delay may be short).
    pub fn take_ipv6_destinations_change(&mut self) -> bool {
        core::mem::take(&mut self.ipv6_dests_changed)
    }

    /// A received IPv6 frame. Returns whether it is to be passed on to another core
    /// (per-queue mode, [`Server::pass6`]): a follower's frame for the link's owner, or a
    /// Packet Too Big.
    pub(super) fn ipv6_frame<T: TxRing, A: AccessLog>(
        &mut self,
        bytes: &[u8],
        tx: &mut T,
        log: &mut A,
    ) -> bool {
        let now = self.now_ns;
        let link = match self.ipv6.as_mut() {
            Some(l) if cfg!(feature = "ipv6") => l,
            _ => {
                self.stats.drop_ipv6_unserved += 1;
                return false;
            }
        };
        // A TCP segment or UDP datagram leaves the link's timers as they were (the hot
        // path); anything else may have set one (a solicitation learned, a lease).
        match link.receive(bytes, now) {
            // A segment goes straight to TCP (the hot path: not through `ipv6_step`,
            // whose frame set-up and dispatch cost ~25 instructions a segment).
            Ok(Step::Tcp {
                src_mac,
                src,
                slot,
                segment,
            }) => {
                self.tcp6(src_mac, src.0, slot, segment, tx);
                false
            }
            other => self.ipv6_not_tcp(other, tx, log),
        }
    }

    /// What the link made of an IPv6 frame that is not a TCP segment: carried out or
    /// counted; returns whether the frame is to be passed on ([`Server::ipv6_frame`]).
    /// Out of line: the segment's path stays small enough to be inlined.
    #[inline(never)]
    fn ipv6_not_tcp<T: TxRing, A: AccessLog>(
        &mut self,
        got: Result<Step<'_>, Drop6>,
        tx: &mut T,
        log: &mut A,
    ) -> bool {
        match got {
            Ok(step @ Step::Udp { .. }) => {
                self.ipv6_step(step, tx, log);
                return false;
            }
            // A follower's: the link's owner (core 0) keeps the link's state.
            Ok(Step::Forward) => return true,
            Ok(Step::TooBig {
                mtu,
                peer,
                peer_port,
                our_port,
                seq,
            }) => {
                // Not here: the connection may be another core's (the per-queue mode), and
                // the frame goes on unless it came from another core.
                let pass = self.share6_on && !self.rx_from_ring;
                let taken = self.too_big(mtu, peer, (peer_port, our_port), seq, !pass);
                self.link_ran();
                return pass && !taken;
            }
            Ok(step) => {
                self.ipv6_step(step, tx, log);
            }
            Err(Drop6::HopLimit) => self.stats.drop_nd_hop_limit += 1,
            Err(Drop6::Unserved) => self.stats.drop_ipv6_unserved += 1,
            Err(Drop6::TooBig) => self.stats.drop_too_big += 1,
            Err(Drop6::Frame(d)) => self.count_drop(d),
        }
        self.link_ran();
        false
    }

    /// Carries out one step of the link; returns whether a frame was sent.
    fn ipv6_step<T: TxRing, A: AccessLog>(
        &mut self,
        step: Step<'_>,
        tx: &mut T,
        log: &mut A,
    ) -> bool {
        match step {
            Step::Send(out) => {
                // On a bond the link's frames leave from the receive NIC, whose MAC they
                // carry (as ARP's do).
                self.via_receive(tx);
                let sent = match (self.ipv6.as_deref(), tx.slot()) {
                    (Some(link), Some(buf)) => match link.write(&out, buf) {
                        Some(len) => match tx.post(len, &[]) {
                            Ok(()) => Sent::Frame,
                            Err(_) => Sent::Refused,
                        },
                        None => Sent::TooBig,
                    },
                    (_, None) => Sent::NoSlot,
                    (None, Some(_)) => return false,
                };
                self.count_sent(sent);
                if matches!(sent, Sent::Frame | Sent::Refused) {
                    let s = &mut self.stats;
                    match out {
                        Out::Advert { .. } => s.nd_advertisements += 1,
                        Out::EchoReply { .. } => s.icmp6_echo += 1,
                        Out::Solicit { .. } => s.nd_solicitations += 1,
                        Out::RouterSolicit => s.nd_router_solicits += 1,
                        Out::Mld(_) => s.mld_reports += 1,
                        Out::Dhcp6 { .. } => s.dhcp6_sent += 1,
                    }
                }
                sent == Sent::Frame
            }
            Step::Address(e) => {
                if matches!(
                    e,
                    Event::Duplicate { .. } | Event::GaveUp(_) | Event::InUse(_)
                ) {
                    self.stats.nd_dad_conflicts += 1;
                }
                if matches!(e, Event::Expired(_)) {
                    self.drop_expired_v6();
                }
                self.push_ipv6_news(e);
                false
            }
            Step::Router => {
                self.stats.nd_router_adverts += 1;
                false
            }
            Step::MldQuery => {
                self.stats.mld_queries += 1;
                false
            }
            // Never here: `ipv6_frame` hands a segment to `tcp6` itself (the hot path, one
            // inlined copy), and the link's clock makes none.
            Step::Tcp { .. } => false,
            Step::Udp {
                src_mac,
                src,
                slot,
                datagram,
            } => {
                self.udp6(src_mac, src.0, slot, datagram, tx, log);
                false
            }
            // Never here: `ipv6_not_tcp` takes a Packet Too Big itself (whether to pass it
            // on), and the link's clock makes none.
            Step::TooBig { .. } => false,
            Step::Done | Step::Forward => false,
        }
    }

    /// After a bond's failover (bonding): the link takes `mac` (the new receive NIC's) as
    /// ours, and every address in use is announced with it to all-nodes, an unsolicited
    /// advertisement with the override flag (RFC 4861 §7.2.6; what Linux's bonding
    /// driver sends as `num_unsol_na`), beside IPv4's gratuitous ARP. Returns whether
    /// every one was posted.
    pub(super) fn ipv6_announce<T: TxRing>(&mut self, mac: EthernetAddress, tx: &mut T) -> bool {
        let Some(link) = self.ipv6.as_mut() else {
            return true;
        };
        link.set_mac(mac);
        let mut all = true;
        for target in link.slots().into_iter().flatten() {
            let out = Out::Advert {
                target,
                dst_mac: Ipv6Address::ALL_NODES.multicast_ethernet(),
                dst: Ipv6Address::ALL_NODES,
                solicited: false,
            };
            all &= self.ipv6_step(Step::Send(out), tx, &mut crate::http::log::NoLog);
        }
        all
    }

    /// Frees the connections to an address of ours that expired (its slot is empty now,
    /// and a new prefix must not take them over). No RST: the address is no longer ours
    /// to send from (RFC 4862 §5.5.4), and the peer's next segment to it finds no one.
    fn drop_expired_v6(&mut self) {
        let gone = (0..SLOTS as u8)
            .filter(|&slot| self.ipv6_slot_addr(slot).is_none())
            .fold(0u8, |m, slot| m | 1 << slot);
        self.drop_v6_slots(gone);
    }

    /// Frees the connections made to our IPv6 addresses in the slots of mask `gone`.
    fn drop_v6_slots(&mut self, gone: u8) {
        if gone == 0 {
            return;
        }
        for id in 0..self.conns.made() as u32 {
            let t = &self.conns[id as usize];
            let Some(slot) = t.app.local.checked_sub(LOCAL_V6) else {
                continue;
            };
            if t.in_use() && gone & 1u8.checked_shl(u32::from(slot)).unwrap_or(0) != 0 {
                self.free_tcb(id);
                self.stats.tcp_addr_expired += 1;
            }
        }
    }

    /// A Packet Too Big quoting our segment at `seq` to `peer`'s port from `our_port`:
    /// the connection's MSS lowered to the path's (`Connection::path_mtu` checks the
    /// sequence number is in flight), its segments sent again, and the path's MTU kept
    /// for the next connections to `peer` ([`PathMtus`]).
    ///
    /// Returns whether it was taken; one not taken is counted in `drop_too_big` when
    /// `count_miss` (it goes to no other core).
    fn too_big(
        &mut self,
        mtu: u32,
        peer: Ipv6Address,
        (peer_port, our_port): (u16, u16),
        seq: u32,
        count_miss: bool,
    ) -> bool {
        let p = Peer {
            ip: peer.0,
            port: peer_port,
        };
        let mss_cap = mtu.min(1500) - IP6_TCP_HEADERS;
        let taken = match self.conns.find(p) {
            Some(id) if self.port_of(id as usize) == our_port => {
                let taken = self.conns[id as usize].tcp.path_mtu(seq, mss_cap);
                if taken == Some(true) {
                    self.enqueue(id);
                }
                taken
            }
            _ => None,
        };
        match taken {
            Some(lowered) => {
                self.stats.icmp6_too_big += 1;
                self.stats.tcp_pmtu_lowered += u64::from(lowered);
                self.path_mtus.learn(peer, mtu as u16, self.now_ns);
                true
            }
            None => {
                self.stats.drop_too_big += u64::from(count_miss);
                false
            }
        }
    }

    /// Our MSS for a new connection from `peer`: IPv6's, or less where a Packet Too Big
    /// taught a smaller path MTU (RFC 8201 §5.2: kept ten minutes).
    pub(super) fn mss6_for(&self, peer: &[u8; 16]) -> u16 {
        match self.path_mtus.get(peer, self.now_ns) {
            Some(mtu) => (u32::from(mtu) - IP6_TCP_HEADERS) as u16,
            None => OUR_MSS_V6,
        }
    }

    /// The address in use in the link's slot `slot` (`Link::slot_of`), if any.
    pub(super) fn ipv6_slot_addr(&self, slot: u8) -> Option<Ipv6Address> {
        self.ipv6.as_ref()?.slot_addr(slot)
    }

    /// A UDP datagram over IPv6 (checksum verified by the link): to the stateless
    /// protocol when it is for its port, as an IPv4 one is; any other port's is dropped
    /// (`drop_not_for_us`), as over IPv4.
    fn udp6<T: TxRing, A: AccessLog>(
        &mut self,
        src_mac: EthernetAddress,
        src: [u8; 16],
        slot: u8,
        datagram: &[u8],
        tx: &mut T,
        log: &mut A,
    ) {
        let packet = match crate::wire::UdpPacket::new_checked(datagram) {
            Ok(p) => p,
            Err(e) => return self.count_drop(e.into()),
        };
        let (src_port, dst_port) = (packet.src_port(), packet.dst_port());
        if Some(dst_port) != self.iface.udp_port || src_port == 0 {
            self.stats.drop_not_for_us += 1;
            return;
        }
        // `check_len` bounded the length field by the buffer.
        let end = usize::from(packet.len());
        let payload = datagram
            .get(crate::wire::udp::HEADER_LEN..end)
            .unwrap_or(&[]);
        self.udp_datagram((src_mac, src, src_port), LOCAL_V6 | slot, payload, tx, log);
    }

    /// A TCP segment over IPv6 (checksum verified by the link): to a connection or LISTEN
    /// as IPv4's are, the address it came to kept as the connection's `local`
    /// (`LOCAL_V6 | slot`), or answered with a RST for a port we do not serve. Inlined
    /// into its one caller on the hot path: a call of its own cost ~15 instructions a
    /// segment in register saves.
    #[inline(always)]
    fn tcp6<T: TxRing>(
        &mut self,
        src_mac: EthernetAddress,
        src: [u8; 16],
        slot: u8,
        segment: &[u8],
        tx: &mut T,
    ) {
        let packet = match TcpPacket::new_checked(segment) {
            Ok(p) => p,
            Err(e) => return self.count_drop(e.into()),
        };
        let (seg, options_ok) = tcp_repr(&packet, segment);
        self.rx_local = LOCAL_V6 | slot;
        if seg.dst_port == self.cfg.port || self.tls_port() == Some(seg.dst_port) {
            self.rx_tls = seg.dst_port != self.cfg.port;
            self.tcp_segment(src_mac, src, &seg, options_ok, tx);
        } else if seg.flags.rst {
            self.stats.drop_not_for_us += 1;
        } else {
            // RFC 9293 §3.10.7.1: a segment for a closed port gets a RST.
            self.send_reset_for(src_mac, src, &seg, tx);
        }
    }
}

#[cfg(test)]
mod tests;
