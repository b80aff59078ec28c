//! The per-core server: the glue that makes one engine instance out of the layers. It keeps
//! its connections in the shared connection table (`tcp::table`, TCBs with HTTP state:
//! `Table<HttpConn>`, with its port table, free and run lists and timer scan), and owns
//! admission, the receive and head slabs and its counters; it is driven by [`Server::poll`] over one NIC queue pair (or by the split API in
//! [`split`], for platforms that schedule the steps themselves). Frames are handled to
//! completion: [`iface`](crate::iface) classifies them, the TCP state machine
//! ([`tcp::Connection`](crate::tcp::Connection)) judges segments, and this module applies
//! what it decides: stores request bytes, runs the HTTP step, builds frames. Nothing here
//! blocks, allocates after [`Server::new`], or panics on what a peer sends.
//!
//! - `input.rs`: receive path (the papers' RCV task): ARP, ICMP, LISTEN, segment arrival;
//! - `send.rs`: the HTTP step (the papers' HTTP task) and everything a connection sends;
//! - `timers.rs`: the server's side of the table's timer scan (every 10 ms): request and
//!   idle timeouts, then what TCP's own timer asks;
//! - `deadline.rs`: when that scan next has work (for a platform that sleeps meanwhile);
//! - `address.rs`: telling the link our address (ARP announcement);
//! - [`divert`]: frames for the server's own client connection (ACME), handed over;
//! - `dhcp.rs`: an address from DHCP: replies to the client, its messages out, the
//!   published address applied;
//! - `proxy.rs`: the PROXY protocol header a balancer puts before a connection, read
//!   before its first request (docs/design/proxy-protocol.md);
//! - `ipv6.rs`: IPv6 on the link (`Config::ipv6`): the interface's link-local address,
//!   neighbour discovery and echo, its frames in and out, its drops counted;
//! - `udp.rs`: the stateless UDP protocol (the UDP paper): a datagram in, its answer out;
//! - `bond.rs`: on a set of NICs (the bonding paper), the send-id, the NIC each frame leaves from,
//!   and failover;
//! - [`config`]: [`Config`], [`Timeouts`], [`Sched`].
//!
//! # Admission
//!
//! Whether a SYN, or the ACK returning a SYN cookie, gets a TCB (`input.rs`):
//! - **per address**: at most `max_per_ip` connections from one address (default: half the
//!   table), refused with a RST. A balancer that sends the PROXY protocol
//!   (`Config::proxy_protocol`) is let past it: its connections count against the client
//!   each one's header names, once it is read (`proxy.rs`);
//! - **SYN backlog and cookies** (RFC 4987): past `syn_backlog` half-open connections, or
//!   with every TCB in use, a SYN is answered with a cookie and nothing is kept; the ACK
//!   that returns it opens the connection;
//! - **eviction**: a cookie's ACK that finds every TCB in use resets the connection silent
//!   longest among those not sending a response (half-open, waiting for a request, idle
//!   between requests). A connection just established and waiting for its first request
//!   is kept for `EVICT_GRACE_NS`: evicted before its request is read, it would be reset
//!   for nothing. A connection reset while still at our initial sequence number is
//!   remembered (the last `RESET_MEMORY` of them), so that a late segment of it carrying
//!   its valid cookie cannot open it again: its client was told it is gone.
//!
//! The default per-address limit lets two addresses fill the table, on purpose: one
//! cannot, and against two the rest still get in (through cookies, evicting connections
//! that are silent, never ones that are sending). A lower default would only move the same
//! attack to a few more addresses, while refusing legitimate single sources of many
//! connections (a load generator, a NAT or proxy in front of many users); `--max-per-ip`
//! lowers it where that trade is wanted.
//!
//! Scheduling follows the scheduling paper: the receive path has priority. With [`Sched::Imt`] the
//! server looks at the receive ring again after every single HTTP step; with
//! [`Sched::Ist`] one HTTP pass serves every connection on the run list first.

use alloc::boxed::Box;
use alloc::vec;
use alloc::vec::Vec;

mod address;
mod bond;
pub mod config;
mod deadline;
mod dhcp;
pub mod divert;
pub mod drain;
mod input;
mod ipv6;
mod proxy;
mod send;
pub mod split;
mod timers;
pub mod tls;
mod udp;

pub use config::{Config, ProxySources, Sched, Timeouts};
pub use split::Ready;

use crate::http::conn::HttpConn;
pub use crate::http::log::{AccessLog, AccessRecord, NoLog};
use crate::http::{self, Request};
use crate::iface::{egress::TSO_LIMIT, Egress, Interface, Sent};
use crate::nic::{Clock, Nic, RxFrame, RxRing, TxRing};
use crate::resource::Lookup;
use crate::stats::{CoreTimes, Stats, Stay};
use crate::tcp::isn::IsnGenerator;
use crate::tcp::per_ip::PerIp;
use crate::tcp::port_table::Peer;
use crate::tcp::syncookie::SynCookies;
use crate::tcp::table::{Table, Tcb};
use crate::tcp::tcb::TCB_SIZE_MAX;

/// A page computed per request (the stats JSON of `cores::board`): the server asks it
/// about every request target before the site, and lends it a buffer of [`DYN_MAX`]
/// bytes that the connection keeps until the response is acknowledged.
pub trait DynamicPage: Send {
    /// Bytes of the buffer one response needs (at least [`DYN_MAX`] is lent).
    fn buffer_len(&self) -> usize {
        DYN_MAX
    }
    /// Whether this page answers `target` for the client at `peer` (a PROXY protocol
    /// header's client, which may be IPv6, when the connection came through a balancer).
    fn claims(&self, target: &[u8], peer: core::net::IpAddr) -> bool;
    /// Writes the whole response to the client at `peer` (head and inline body) into
    /// `out`. `own` are the counters of the serving server, current now; `extra` are
    /// header lines every response of the connection carries (HSTS on HTTPS).
    #[allow(clippy::too_many_arguments)]
    fn respond(
        &self,
        own: (&Stats, &CoreTimes, &Stay),
        request: &Request<'_>,
        peer: core::net::IpAddr,
        now_unix: u64,
        server_name: &str,
        extra: &[u8],
        out: &mut [u8],
    ) -> http::Response<'static>;
}

/// Receive bursts (IMT: each followed by one HTTP step; IST: by one pass) per poll.
const ROUND_BUDGET: u32 = 64;
/// Frames taken from the receive ring per burst.
const RX_BURST: usize = 32;
/// Dynamic-response buffers per server, and their size.
const DYN_SLOTS: usize = 4;
/// Bytes of one dynamic-response buffer, at least (a page may ask for more:
/// [`DynamicPage::buffer_len`]).
pub const DYN_MAX: usize = 64 * 1024;
/// Interval of the timer scan over all TCBs (HTTP's timeouts, the stall abort); a TCP
/// timer due sooner brings the scan forward (`next_timer_ns`).
const TICK_NS: u64 = 10_000_000;
/// The shortest gap between two timer scans: the resolution of TCP's timers (a loss in
/// recovery is declared about a millisecond after its retransmission on a LAN), and of
/// pacing (a paced segment may leave this much early).
const TIMER_GRAIN_NS: u64 = crate::tcp::PACING_SLACK_NS;
/// How long a connection waiting for its first request is safe from eviction, from its
/// establishment: the request normally follows the handshake's ACK at once, and a
/// connection evicted before its request is read is reset for nothing (its client then
/// retries from the start). Silent past this, it is fair game again.
const EVICT_GRACE_NS: u64 = 1_000_000_000;
/// Connections reset by eviction before anything of ours but the SYN-ACK was sent, kept so
/// that their SYN cookie cannot open them again ([`Server::cookie_ack`]).
const RESET_MEMORY: usize = 32;

/// A server connection: TCP with HTTP on top.
pub type ServerTcb = Tcb<HttpConn>;
const _: () = assert!(core::mem::size_of::<ServerTcb>() <= TCB_SIZE_MAX);

/// The dynamic page and its response buffers (allocated once, at `serve_dynamic`).
struct Dynamic {
    page: Box<dyn DynamicPage>,
    /// [`DYN_SLOTS`] buffers of `slot_len` bytes.
    pool: Vec<u8>,
    slot_len: usize,
    free: Vec<u8>,
}

/// The per-core server.
pub struct Server<L: Lookup<'static>> {
    cfg: Config,
    site: L,
    iface: Interface,
    egress: Egress,
    /// Frames from each virtual address (`Config::vips`), in its order.
    vip_egress: [Egress; crate::iface::MAX_VIPS],
    /// The frame builder of the IPv6 address the segment being built leaves from
    /// (`sync_egress`).
    egress6: Egress,
    /// The `local` (`LOCAL_V6 | slot`) `egress6` was last made for; `u8::MAX`: look again
    /// (the link may have changed an address).
    egress6_local: u8,
    /// Which of our addresses the frame being handled was sent to (`Interface::local`).
    rx_local: u8,
    /// The next hops' MACs for VIP connections (`reply_mac`).
    neigh: crate::iface::Neighbours,
    /// The connections: TCBs with their HTTP state, the port table, the free and run
    /// lists.
    conns: Table<HttpConn>,
    per_ip: PerIp,
    /// The most connections from one address: `--max-per-ip`, by default half the table
    /// (two addresses can fill it; see the module doc's "Admission").
    max_per_ip: u32,
    cookies: SynCookies,
    /// TCBs in SYN-RECEIVED.
    half_open: usize,
    syn_backlog: usize,
    /// The earliest pacing deadline on the table's paced list (`u64::MAX`: none).
    next_pace_ns: u64,
    /// Each made TCB's receive buffer and request-head copy, grown with `tcbs` (their
    /// capacity is reserved up front: growing never allocates).
    rx_slab: Vec<u8>,
    head_slab: Vec<u8>,
    /// Each made TCB's client as its PROXY protocol header named it (`None`: its peer),
    /// beside the TCB, which has no room for an IPv6 address; empty without
    /// `proxy_protocol` sources.
    clients: Vec<Option<core::net::IpAddr>>,
    /// `proxy_protocol` names any source: the one test the hot path makes for it.
    proxy: bool,
    isn: IsnGenerator,
    /// Rendered `200` heads of this server's site (`http::head_cache`).
    head_cache: http::HeadCache,
    /// `Strict-Transport-Security: …\r\n` (`cfg.hsts`), rendered once here and written
    /// in every HTTPS response head; empty without HTTPS or HSTS.
    hsts: Vec<u8>,
    stats: Stats,
    next_tick_ns: u64,
    /// The earliest precise TCP timer deadline known (a loss probe's; `u64::MAX`: none):
    /// every place that may arm a connection's timer lowers it (`note_timer`), the scan
    /// recomputes it.
    next_timer_ns: u64,
    now_ns: u64,
    unix_secs: u64,
    /// Largest TCP payload of one frame the NIC segments itself (0: no offload), from
    /// `NicCaps::tso_max` at every poll.
    tso_max: u32,
    /// The NIC segments TCP over IPv6 too (`NicCaps::tso6`).
    tso6: bool,
    times: CoreTimes,
    stay: Stay,
    /// Connections freed (or segments that found none) this round: [`Server::closed`].
    closed: Vec<(Peer, u64)>,
    dynamic: Option<Dynamic>,
    /// The stateless UDP protocol, when served.
    udp: Option<udp::UdpServer>,
    /// The request id another core gave the frame being handled (network-core mode).
    rx_tag: Option<u16>,
    /// The NIC set this server sends on, if any.
    bond: Option<bond::ServerBond>,
    /// The DHCP client, on the core that runs it (`own_dhcp`).
    dhcp_client: Option<Box<crate::dhcp::Client>>,
    /// The generation of the published address applied (`Config::dhcp`).
    dhcp_seen: u32,
    /// The address changed since [`Server::take_address_change`] last said so.
    address_changed: bool,
    /// IPv6 on the link, once started (`ipv6.rs`).
    ipv6: Option<Box<crate::iface::ipv6::Link>>,
    /// When the link next has timer work: its `deadline()` after the last call that could
    /// change it (its round, a frame not TCP or UDP), so a round pays a compare, not the
    /// neighbour cache's scan.
    ipv6_next: u64,
    /// The addresses' news not yet taken, oldest first ([`Server::take_ipv6_news`]).
    ipv6_news: [Option<crate::iface::addr6::Event>; 4],
    /// The router for peers beyond the link last told in the news (`None`: nothing told).
    ipv6_router_told: Option<Option<crate::wire::Ipv6Address>>,
    /// Path MTUs Packet Too Big messages taught (IPv6).
    path_mtus: ipv6::PathMtus,
    /// The per-queue mode's sharing of the IPv6 link between cores
    /// ([`crate::iface::share6`]): this core's end, when the plan gave one.
    share6: Option<Box<crate::iface::share6::Share>>,
    /// Whether this core has an end of the sharing (`share6` is taken out during its
    /// round, so this says it then).
    share6_on: bool,
    /// The frame being taken came from the hub's ring (a spoke's round): a Packet Too Big
    /// it does not find here goes no further.
    rx_from_ring: bool,
    /// The link's destinations ([`crate::iface::ipv6::Link::destinations`]) last seen,
    /// and whether they changed since the platform last asked
    /// ([`Server::take_ipv6_destinations_change`]).
    ipv6_dests: [Option<crate::wire::Ipv6Address>; 2 * crate::iface::share6::SLOTS],
    ipv6_dests_changed: bool,
    /// The last [`RESET_MEMORY`] connections reset while still at our initial sequence
    /// number: (peer, SND.NXT: the ACK that would return their cookie), oldest overwritten.
    reset: [(Peer, u32); RESET_MEMORY],
    /// Where the next one is written in `reset`.
    reset_next: usize,
    /// Each made TCB's TLS state (`tls.rs`), grown with the TCBs; empty without HTTPS.
    tls_sides: Vec<tls::TlsSide>,
    /// Decrypted bytes of one `TlsSession::receive` (reused).
    tls_plain: Vec<u8>,
    /// The record last sealed for a segment (`tls::SealCache`).
    tls_cache: tls::SealCache,
    /// Handshake steps this round (`tls::HANDSHAKES_PER_ROUND`).
    tls_handshakes: u32,
    /// Connections whose handshake step waits for the next round.
    tls_deferred: Vec<u32>,
    /// The segment being handled came to the HTTPS port.
    rx_tls: bool,
    /// The drain's phase read at this round's start (`Config::drain`).
    drain_phase: drain::Phase,
    /// This server finished its drain (and told the shared [`drain::Drain`]).
    drain_done: bool,
}

impl<L: Lookup<'static>> Server<L> {
    /// Allocates every table once. Panics only on a configuration that cannot work
    /// (zero TCBs, more than 2^31 TCBs, a receive buffer smaller than one request).
    ///
    /// The TCB array and its buffers (~9 KiB per TCB) are reserved here but written only
    /// as connections first need them ([`Server::take_tcb`]): a server starts without
    /// writing ~9 MiB per 1024 TCBs, which was most of the bare-machine kernel's boot
    /// under an emulator, and the timer scan covers only TCBs ever used.
    pub fn new(mut cfg: Config, site: L, mac: crate::wire::EthernetAddress) -> Server<L> {
        // The site's configuration may set the `Server` field, or drop it ("").
        if let Some(name) = site.server_name() {
            cfg.server_name = name;
        }
        assert!(
            cfg.tcbs > 0 && cfg.tcbs < (1 << 31),
            "tcbs must be in 1..2^31"
        );
        assert!(cfg.rx_buffer >= 1024, "rx_buffer too small");
        let n = cfg.tcbs;
        let bond = cfg.bond.map(|r| bond::ServerBond::new(r, cfg.tcbs));
        let iface = Interface {
            // On a NIC set, ARP gives the receive NIC's MAC.
            mac: bond.as_ref().map_or(mac, |b| b.receive_mac()),
            ip: cfg.ip,
            prefix_len: cfg.prefix_len,
            gateway: cfg.gateway.is_some(),
            port: cfg.port,
            udp_port: cfg.udp.map(|u| u.port),
            vips: cfg.vips,
        };
        Server {
            isn: IsnGenerator::new(cfg.isn_key),
            iface,
            egress: Egress::new(&iface),
            vip_egress: core::array::from_fn(|k| {
                Egress::from(iface.mac, cfg.vips.get(k as u8 + 1).unwrap_or(cfg.ip))
            }),
            egress6: Egress::new(&iface).with_ip6(crate::wire::Ipv6Address::UNSPECIFIED),
            egress6_local: u8::MAX,
            rx_local: 0,
            neigh: crate::iface::Neighbours::new(),
            conns: Table::new(n),
            // Behind a balancer a connection is counted under two addresses (the
            // balancer's, and the client its PROXY header names).
            per_ip: PerIp::new(
                if cfg.proxy_protocol.is_empty() {
                    n
                } else {
                    2 * n
                },
                cfg.isn_key,
            ),
            max_per_ip: cfg.max_per_ip.unwrap_or(n / 2).clamp(1, n) as u32,
            cookies: SynCookies::new(cfg.isn_key),
            half_open: 0,
            syn_backlog: cfg.syn_backlog.unwrap_or((n / 2).max(1)).min(n),
            next_pace_ns: u64::MAX,
            rx_slab: Vec::with_capacity(n * cfg.rx_buffer),
            head_slab: Vec::with_capacity(n * http::HEAD_MAX),
            clients: Vec::with_capacity(if cfg.proxy_protocol.is_empty() { 0 } else { n }),
            proxy: !cfg.proxy_protocol.is_empty(),
            head_cache: http::HeadCache::new(),
            hsts: match (&cfg.tls, cfg.hsts) {
                (Some(_), Some(h)) => h.field(),
                _ => Vec::new(),
            },
            stats: Stats::default(),
            next_tick_ns: 0,
            next_timer_ns: u64::MAX,
            now_ns: 0,
            unix_secs: 0,
            tso_max: 0,
            tso6: false,
            times: CoreTimes::default(),
            stay: Stay::default(),
            // A round frees at most the TCBs in use plus those its frames open.
            closed: Vec::with_capacity(n + (ROUND_BUDGET as usize) * RX_BURST),
            dynamic: None,
            udp: cfg.udp.map(|u| udp::UdpServer::new(u, cfg.isn_key)),
            rx_tag: None,
            bond,
            dhcp_client: None,
            dhcp_seen: cfg.dhcp.map_or(0, |d| d.generation().wrapping_sub(1)),
            address_changed: false,
            ipv6: None,
            ipv6_next: 0,
            ipv6_news: [None; 4],
            ipv6_router_told: None,
            path_mtus: ipv6::PathMtus::default(),
            share6: None,
            share6_on: false,
            rx_from_ring: false,
            ipv6_dests: [None; 2 * crate::iface::share6::SLOTS],
            ipv6_dests_changed: false,
            reset: [(Peer::default(), 0); RESET_MEMORY],
            reset_next: 0,
            tls_sides: Vec::with_capacity(if cfg.tls.is_some() { n } else { 0 }),
            tls_plain: Vec::new(),
            tls_cache: if cfg.tls.is_some() {
                tls::SealCache::new()
            } else {
                tls::SealCache::default()
            },
            tls_handshakes: 0,
            tls_deferred: Vec::with_capacity(if cfg.tls.is_some() { n } else { 0 }),
            rx_tls: false,
            drain_phase: drain::Phase::Serving,
            drain_done: false,
            site,
            cfg,
        }
    }

    /// The counters.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// TCBs in use.
    pub fn active(&self) -> usize {
        self.conns.active()
    }

    /// Whether a new connection can have a TCB ([`Server::take_tcb`] would give one).
    fn tcb_left(&self) -> bool {
        self.conns.has_room()
    }

    /// A free TCB for a new connection: the last one freed, else a new one made (and its
    /// buffers zeroed, inside the capacity reserved by `new`: no allocation); `None` when
    /// all `tcbs` are in use.
    fn take_tcb(&mut self) -> Option<u32> {
        let id = self.conns.take()?;
        let made = self.conns.made();
        if made * self.cfg.rx_buffer > self.rx_slab.len() {
            self.rx_slab.resize(made * self.cfg.rx_buffer, 0);
            self.head_slab.resize(made * http::HEAD_MAX, 0);
            if self.proxy {
                self.clients.resize(made, None);
            }
        }
        if self.cfg.tls.is_some() && self.tls_sides.len() < made {
            self.tls_sides.resize_with(made, Default::default);
        }
        Some(id)
    }

    /// Where this core's time went (RCV / HTTP; Main is the rest).
    pub fn times(&self) -> &CoreTimes {
        &self.times
    }

    /// Stay times and parallel requests.
    pub fn stay(&self) -> &Stay {
        &self.stay
    }

    /// The connections freed in the last round (`poll`, or since the split API's
    /// `begin`), with the frames this server had received then; also segments that found
    /// no connection and opened none. The network-core mode tells core 0 (see
    /// `cores::CoreQueue::connections_closed`), so it can forget which core owns them.
    pub fn closed(&self) -> &[(Peer, u64)] {
        &self.closed
    }

    /// Answers the requests `page` claims with it (allocating its response buffers now,
    /// once). Without this call every request goes to the site.
    pub fn serve_dynamic(&mut self, page: Box<dyn DynamicPage>) {
        let slot_len = page.buffer_len().max(DYN_MAX);
        self.dynamic = Some(Dynamic {
            page,
            pool: vec![0; DYN_SLOTS * slot_len],
            slot_len,
            free: (0..DYN_SLOTS as u8).collect(),
        });
    }

    /// One round: receive a burst and handle it, run HTTP work under the policy, fire due
    /// timers, flush the transmit ring once. Returns whether anything was done.
    pub fn poll<N: Nic, C: Clock, A: AccessLog>(
        &mut self,
        nic: &mut N,
        clock: &C,
        log: &mut A,
    ) -> bool {
        self.now_ns = clock.now_ns();
        self.unix_secs = clock.unix_secs();
        let caps = nic.caps();
        self.tso_max = caps.tso_max.min(TSO_LIMIT) as u32;
        self.tso6 = caps.tso6;
        self.closed.clear();
        let (rx, tx) = nic.split();
        self.bond_sync(tx);
        let mut worked = self.dhcp_round(tx);
        worked |= self.ipv6_round(tx);
        self.drain_begin();
        let mut frames = [RxFrame { buf: 0, len: 0 }; RX_BURST];
        // Bounded so timers run and the transmit ring is flushed at least every
        // ROUND_BUDGET receive bursts, however busy the link.
        let mut rounds = 0;
        // Time split (the runner study): a burst that brought frames counts as RCV up to the end of
        // their handling, an HTTP step as HTTP; empty bursts and the rest are Main.
        let mut mark = self.now_ns;
        while rounds < ROUND_BUDGET {
            rounds += 1;
            // The clock as last read, so a long poll does not stamp late frames (and stay
            // times) with its start.
            self.now_ns = mark;
            // Backpressure: no more input than the transmit ring can answer (see
            // `TxRing::room`); with none, this round ends and the caller polls again.
            let room = tx.room().min(RX_BURST);
            if room == 0 {
                self.stats.rx_held += 1;
                worked = true;
                break;
            }
            let n = rx.burst(&mut frames[..room]);
            let taken = if n > 0 { clock.now_ns() } else { 0 };
            if n > 0 {
                // The frames are stamped with a reading taken after they were taken: one
                // taken before could be older than the frames themselves (the core paused
                // in between), and in network-core mode older than core 0's SYN-ACK of a
                // SYN cookie — our TSvals would go backwards, the peer's PAWS would drop
                // them, and the cookie could look a period from the future (docs/design/tcp.md,
                // "Time across cores").
                self.now_ns = self.now_ns.max(taken);
            }
            // A UDP protocol request is answered inside its frame's handling: that time is
            // the paper's HTTP work, not receiving (one more clock read per frame, and
            // only on a server that serves the protocol).
            let timed = self.udp.is_some() && n > 0;
            let mut t = taken;
            let mut udp_ns = 0;
            for f in &frames[..n] {
                let before = self.stats.udp_datagrams;
                self.rx_tag = rx.request_tag(f);
                self.handle_frame(rx.bytes(f), tx, log);
                if let Some(tag) = self.rx_tag.take() {
                    // Its answer is posted: the core that tagged it frees the id.
                    tx.request_done(tag);
                }
                rx.recycle(*f);
                if timed {
                    let t2 = clock.now_ns();
                    if self.stats.udp_datagrams != before {
                        udp_ns += t2.saturating_sub(t);
                    }
                    t = t2;
                }
            }
            if n > 0 {
                mark = self.times.add_rcv(mark, clock.now_ns());
                self.times.rcv_to_http(udp_ns);
            }
            // IMT: one HTTP step, then receive again; IST: one pass over the run list.
            let steps = match self.cfg.sched {
                Sched::Imt => self.conns.run_len().min(1),
                Sched::Ist => self.conns.run_len(),
            };
            for _ in 0..steps {
                if let Some(id) = self.conns.pop_run() {
                    self.http_step(id, tx, log);
                }
            }
            if steps > 0 {
                mark = self.times.add_http(mark, clock.now_ns());
            }
            if n == 0 && steps == 0 {
                break;
            }
            worked = true;
        }
        if worked {
            self.times.busy_polls += 1;
        }
        self.end_round(tx, log);
        self.bond_publish();
        tx.flush();
        worked
    }

    /// Serves `site` from now on (a reload): every response started after this call is
    /// chosen from it, while the responses already started keep sending (and
    /// retransmitting) from the site they were chosen from, whose memory the caller keeps
    /// until [`Server::responses_in`] says no connection sends from it any more. Call it
    /// between rounds.
    pub fn set_site(&mut self, site: L) {
        self.site = site;
        // The cache's keys are addresses in the old image, which another may reuse.
        self.head_cache.clear();
    }

    /// The connections whose response in flight sends bytes (a body, its block sums)
    /// from the memory at addresses `range`: those that still need an old site's image.
    pub fn responses_in(&self, range: core::ops::Range<usize>) -> usize {
        let made = self.conns.tcbs().len();
        (0..made).filter(|&i| self.sends_from(i, &range)).count()
    }

    /// Whether connection `idx` is in use and its response sends from `range`: the
    /// response in flight, or (HTTPS) a record queued and not yet acknowledged, whose body
    /// is read from the image each time the record is sealed.
    fn sends_from(&self, idx: usize, range: &core::ops::Range<usize>) -> bool {
        let t = &self.conns[idx];
        if !t.in_use() {
            return false;
        }
        let within = |s: &[u8]| {
            let a = s.as_ptr() as usize;
            !s.is_empty() && a >= range.start && a < range.end
        };
        if t.app.tls()
            && self
                .tls_sides
                .get(idx)
                .is_some_and(|s| s.reads_from(t.tcp.snd_una(), &within))
        {
            return true;
        }
        let Some(r) = t.app.resp else {
            return false;
        };
        let b = r.body.body;
        within(b.data) || within(b.block_sums)
    }

    /// Resets (RST, TCB freed) every connection whose response sends from `range`: a
    /// reload's drain timeout, after which the old image is freed. Returns how many.
    pub fn reset_responses_in<T: TxRing>(
        &mut self,
        range: core::ops::Range<usize>,
        tx: &mut T,
    ) -> usize {
        let made = self.conns.tcbs().len();
        let mut n = 0;
        for id in 0..made as u32 {
            if self.sends_from(id as usize, &range) {
                let seq = self.conns[id as usize].tcp.snd_nxt();
                self.send_reset_raw(id, seq, tx);
                self.free_tcb(id);
                n += 1;
            }
        }
        tx.flush();
        n
    }

    /// The end of a round (both `poll` and the split API's `tick`): send what pacing let
    /// go since, and scan the timers if the periodic tick or a loss probe is due.
    fn end_round<T: TxRing, A: AccessLog>(&mut self, tx: &mut T, log: &mut A) {
        if self.now_ns >= self.next_pace_ns {
            self.wake_paced(tx);
        }
        if self.now_ns >= self.next_tick_ns || self.now_ns >= self.next_timer_ns {
            self.next_tick_ns = self.now_ns + TICK_NS;
            self.next_timer_ns = self.timers(tx, log).max(self.now_ns + TIMER_GRAIN_NS);
        }
        self.drain_end(tx);
        self.tls_round_end();
        log.flush();
    }

    /// When the next timer scan or paced send is due (monotonic ns): a platform that
    /// sleeps while idle wakes by then, so TCP's timers (a loss probe a few milliseconds
    /// out) and pacing keep time.
    pub fn next_timer_ns(&self) -> u64 {
        self.next_tick_ns
            .min(self.next_timer_ns)
            .min(self.next_pace_ns)
            .min(self.dhcp_deadline())
            .min(self.ipv6_deadline())
    }

    /// Connection `id`'s timer may have been armed, or pacing may hold it back: if the
    /// timer needs better than the tick (a loss probe), the scan comes no later than it;
    /// a paced connection joins the paced list, woken at its deadline.
    fn note_timer(&mut self, id: u32) {
        let t = &self.conns[id as usize];
        if let Some(at) = t.tcp.timer().precise_deadline() {
            self.next_timer_ns = self.next_timer_ns.min(at);
        }
        if let Some(at) = t.tcp.pacing_deadline() {
            self.conns.pace(id);
            self.next_pace_ns = self.next_pace_ns.min(at);
        }
    }

    /// Sends for the paced connections whose deadline has come (at least
    /// [`TIMER_GRAIN_NS`] apart, like the timer scans); the others wait, and the earliest
    /// of their deadlines is the next wake-up.
    fn wake_paced<T: TxRing>(&mut self, tx: &mut T) {
        let now = self.now_ns;
        self.next_pace_ns = u64::MAX;
        let mut next = u64::MAX;
        let mut i = 0;
        while let Some(&id) = self.conns.paced().get(i) {
            match self.conns[id as usize].tcp.pacing_deadline() {
                Some(at) if at > now => {
                    next = next.min(at);
                    i += 1;
                }
                _ => {
                    // Due (or no longer held back): off the list, and send. Held back
                    // again, it joins the list's end and is kept there.
                    self.conns.unpace_at(i);
                    self.output(id, tx);
                }
            }
        }
        self.next_pace_ns = self.next_pace_ns.min(next).max(now + TIMER_GRAIN_NS);
        if self.conns.paced().is_empty() {
            self.next_pace_ns = u64::MAX;
        }
    }

    /// Counts what became of a frame.
    fn count_sent(&mut self, sent: Sent) {
        match sent {
            Sent::Frame => self.stats.tx_frames += 1,
            Sent::TsoFrame => {
                self.stats.tx_frames += 1;
                self.stats.tx_tso_frames += 1;
            }
            Sent::NoSlot | Sent::Refused => self.stats.tx_ring_full += 1,
            Sent::TooBig => self.stats.drop_malformed += 1,
            // The caller counts why (a record that could not be sealed).
            Sent::Unfilled => {}
        }
    }

    fn enqueue(&mut self, id: u32) {
        if self.conns.enqueue(id) {
            let len = self.conns.run_len() as u64;
            self.stats.run_list_max = self.stats.run_list_max.max(len);
        }
    }

    /// Free bytes in connection `id`'s receive buffer.
    fn rx_space(&self, id: u32) -> u32 {
        let app = &self.conns[id as usize].app;
        let held = if app.tls() {
            self.tls_sides[id as usize].held()
        } else {
            0
        };
        (self.cfg.rx_buffer as u32).saturating_sub(app.rx_len + held)
    }

    fn free_tcb(&mut self, id: u32) {
        let idx = id as usize;
        // A TCB is allocated exactly while the port table holds it (its TCP state may
        // already be Closed: a RST, the last ACK): unlinked here, or not there to free.
        if !self.conns.unlink(id) {
            return;
        }
        let t = &self.conns[idx];
        self.per_ip
            .remove_from(crate::tcp::per_ip::limit_key(&t.peer.ip), t.per_ip_home);
        if self.proxy {
            if let Some(client) = self.clients[idx] {
                // Counted under the client its PROXY header named too (`proxy.rs`).
                self.per_ip.remove(proxy::limit_key_of(client));
            }
        }
        if self.conns[idx].tcp.state() == crate::tcp::State::SynReceived {
            self.half_open = self.half_open.saturating_sub(1);
        }
        let t = &self.conns[idx];
        let (peer, slot) = (t.peer, t.app.dyn_slot);
        if t.app.stay_start_ns != 0 {
            self.stay.parallel = self.stay.parallel.saturating_sub(1);
        }
        self.release_dyn(slot);
        if let Some(side) = self.tls_sides.get_mut(idx) {
            side.reset();
        }
        if self.closed.len() < self.closed.capacity() {
            self.closed.push((peer, self.stats.rx_frames));
        }
        self.bond_release(id);
        self.conns.recycle(id);
        self.stats.tcp_closed += 1;
        self.stats.tcbs_in_use = self.active() as u64;
    }

    /// A segment from `peer` found no connection here and opened none. It is reported like
    /// a freed connection ([`Server::closed`]), so a
    /// dispatcher that still routes `peer` here learns that nothing is here: in the
    /// network-core mode a late segment (a retransmitted FIN that crossed the close note)
    /// must not keep core 0's mapping alive until it expires.
    fn no_connection(&mut self, peer: Peer) {
        if self.closed.len() < self.closed.capacity() {
            self.closed.push((peer, self.stats.rx_frames));
        }
    }

    /// Makes the frame builder of our address `local` (`Interface::local`) use the MAC
    /// `self.egress` has now (a NIC set's send NIC); then [`Server::egress_of`] picks it.
    /// For an IPv6 address (`LOCAL_V6`), the builder sends from that address as the link
    /// holds it now (none once it expired: the segment is refused).
    #[inline(always)]
    fn sync_egress(&mut self, local: u8) {
        if local >= crate::iface::LOCAL_V6 {
            // The slot's address cannot have changed since it was last looked up unless
            // the link ran (`ipv6_next` refreshed, which forgets `egress6_local`): the
            // common case is these two compares, not a call.
            if self.egress6_local != local || self.egress6.mac() != self.egress.mac() {
                self.sync_egress6(local);
            }
        } else if local != 0 {
            let mac = self.egress.mac();
            if let Some(e) = self.vip_egress.get_mut(usize::from(local) - 1) {
                if e.mac() != mac {
                    e.set_mac(mac);
                }
            }
        }
    }

    /// Where a segment of ours to `client` goes: for our own address (`local` 0) the MAC
    /// its segments came from (`frame_mac`), as always; for a virtual address the next
    /// hop of `client` (the gateway off the link, the client on it) as ARP resolved it
    /// (`iface::neigh`), asking for it when due, and `frame_mac` until it is known (a
    /// direct-routing balancer's own MAC: docs/design/direct-return.md).
    #[inline(always)]
    fn reply_mac<T: TxRing>(
        &mut self,
        local: u8,
        client: [u8; 16],
        frame_mac: crate::wire::EthernetAddress,
        tx: &mut T,
    ) -> crate::wire::EthernetAddress {
        match crate::tcp::port_table::v4_of(&client) {
            Some(v4) if local != 0 && local < crate::iface::LOCAL_V6 => {
                self.next_hop_mac(crate::wire::Ipv4Address(v4), frame_mac, tx)
            }
            // Our own address, or IPv6 (answered to the MAC its segments come from).
            _ => frame_mac,
        }
    }

    #[inline(never)]
    fn next_hop_mac<T: TxRing>(
        &mut self,
        client: crate::wire::Ipv4Address,
        frame_mac: crate::wire::EthernetAddress,
        tx: &mut T,
    ) -> crate::wire::EthernetAddress {
        let (ip, prefix_len, gw) = (self.iface.ip, self.iface.prefix_len, self.cfg.gateway);
        let hop = crate::iface::Neighbours::next_hop(ip, prefix_len, gw, client);
        let r = self.neigh.resolve(hop, gw, self.now_ns);
        if r.ask {
            // From our own address: a VIP is never a source outside its connections.
            let sent = self.egress.arp_request(tx, hop);
            self.count_sent(sent);
        }
        r.mac.unwrap_or(frame_mac)
    }

    #[inline(never)]
    fn sync_egress6(&mut self, local: u8) {
        self.egress6_local = local;
        let slot = local - crate::iface::LOCAL_V6;
        let addr = self
            .ipv6_slot_addr(slot)
            .unwrap_or(crate::wire::Ipv6Address::UNSPECIFIED);
        // Rebuilt only when the address or the MAC changed (another slot's connection,
        // an address expired, a bond's send NIC): a copy of the builder a segment was
        // most of this function's cost.
        if self.egress6.ip6() != addr || self.egress6.mac() != self.egress.mac() {
            self.egress6 = self.egress.with_ip6(addr);
        }
    }

    /// The frame builder of our address `local` (our own for 0, the IPv6 one
    /// `sync_egress` made for `LOCAL_V6` and above, our own when out of range).
    #[inline(always)]
    fn egress_of<'a>(
        egress: &'a Egress,
        vips: &'a [Egress],
        egress6: &'a Egress,
        local: u8,
    ) -> &'a Egress {
        if local >= crate::iface::LOCAL_V6 {
            return egress6;
        }
        vips.get(usize::from(local).wrapping_sub(1))
            .unwrap_or(egress)
    }

    /// Gives a dynamic-response buffer back (no-op for `NO_DYN`).
    fn release_dyn(&mut self, slot: u8) {
        if let Some(d) = self.dynamic.as_mut() {
            if usize::from(slot) < DYN_SLOTS && !d.free.contains(&slot) {
                d.free.push(slot);
            }
        }
    }
}

#[cfg(test)]
mod tests;
