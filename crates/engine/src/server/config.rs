//! The server's configuration: addresses, ports, capacities, scheduling policy, timeouts,
//! the ISN secret, congestion control and the UDP protocol's settings. Fixed at
//! [`Server::new`](super::Server::new).

use crate::bond::BondRole;
use crate::http;
use crate::tcp::Algorithm;
use crate::wire::Ipv4Address;

/// Which HTTP scheduling policy the server uses (the scheduling paper, §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sched {
    /// Internal multi-tasking: after each HTTP step, look at the receive ring again.
    #[default]
    Imt,
    /// Internal single task: one pass over the whole run list, then receive.
    Ist,
}

/// Timeouts, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// A request whose head is not complete after this long gets 408 and is closed.
    pub request_ms: u64,
    /// A keep-alive connection with nothing to do is closed after this long.
    pub idle_ms: u64,
    /// A connection whose peer makes no progress (zero window, no ACKs, half-closed) is
    /// aborted after this long.
    pub stall_ms: u64,
    /// Retransmissions of one segment (or of the SYN-ACK) before the connection is aborted.
    pub max_retries: u8,
    /// A drain keeps serving new connections this long from its start
    /// ([`Drain`](super::drain::Drain)).
    pub drain_grace_ms: u64,
    /// A drain resets the connections left this long from its start.
    pub drain_timeout_ms: u64,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            request_ms: 10_000,
            idle_ms: 30_000,
            stall_ms: 60_000,
            max_retries: 8,
            drain_grace_ms: 5_000,
            drain_timeout_ms: 30_000,
        }
    }
}

/// Server configuration; capacities are fixed at [`Server::new`](super::Server::new).
#[derive(Debug, Clone)]
pub struct Config {
    /// Our IPv4 address.
    pub ip: Ipv4Address,
    /// Prefix length of the link's subnet.
    pub prefix_len: u8,
    /// Router for clients beyond the link (frames from off-link sources are dropped
    /// without one).
    pub gateway: Option<Ipv4Address>,
    /// TCP port served.
    pub port: u16,
    /// Number of TCBs (the most connections at once).
    pub tcbs: usize,
    /// Bytes of request the server buffers per connection (at least `http::MAX_REQUEST`).
    pub rx_buffer: usize,
    /// Most connections from one client address at once (`None`: half the TCBs, at least
    /// one). A SYN beyond it is refused with a RST, so one client cannot take every TCB.
    pub max_per_ip: Option<usize>,
    /// Half-open connections (SYN-RECEIVED TCBs) at once before SYNs are answered with SYN
    /// cookies and no TCB (`None`: half the TCBs, at least one; `Some(0)`: every SYN gets a
    /// cookie, as core 0's server does in network-core mode).
    pub syn_backlog: Option<usize>,
    /// Scheduling policy.
    pub sched: Sched,
    /// Secret for RFC 6528 initial sequence numbers: 128 bits from the platform's entropy
    /// at start. There is no default: a constant key would make ISNs predictable.
    pub isn_key: [u8; 16],
    /// Timeouts.
    pub timeouts: Timeouts,
    /// Value of the `Server` header (empty: none); the site's configuration may set it
    /// (`Server::new` takes the site's `server_name`).
    pub server_name: &'static str,
    /// The stateless UDP protocol (the UDP paper, `crate::udp`): off unless given.
    pub udp: Option<crate::udp::Config>,
    /// The NIC set this server sends on (bonding), or `None`: one NIC, as always.
    pub bond: Option<BondRole>,
    /// Congestion control of every connection (`--cc`): BBR (paced) or CUBIC.
    pub congestion: Algorithm,
    /// The address comes from DHCP: the server follows the address published
    /// here (answering nothing while there is none); the core whose server is given the
    /// client (`Server::own_dhcp`) runs it, the others hand it the replies they receive.
    pub dhcp: Option<&'static crate::dhcp::shared::Shared>,
    /// Counters the platform keeps outside the engine (the host's AF_XDP sockets'
    /// `XDP_STATISTICS`), shown on the stats page and in the metrics.
    pub platform: Option<&'static dyn crate::stats::platform::PlatformCounters>,
    /// The platform's reload counters (serve's SIGHUP), on the stats page and in the
    /// metrics; `None`: the platform does not reload.
    pub reload: Option<&'static dyn crate::stats::platform::ReloadCounters>,
    /// The graceful drain every core follows, asked for by the platform (SIGTERM, the
    /// ACPI power button); `None`: the server never drains.
    pub drain: Option<&'static super::drain::Drain>,
    /// The server's own client connection (ACME): frames for it are handed over, not
    /// answered (`server::divert`); `None`: there is none.
    pub divert: Option<&'static super::divert::Divert>,
    /// Virtual addresses served besides `ip` (direct server return: `iface::Vips`).
    pub vips: crate::iface::Vips,
    /// The balancers that put a PROXY protocol header before each connection
    /// (`--proxy-protocol`): a connection from one of these must begin with one, and a
    /// connection from anywhere else must not (docs/design/proxy-protocol.md).
    pub proxy_protocol: ProxySources,
    /// HTTPS (`--tls-cert`, `--https-port`): a second port whose connections are TLS
    /// (`server::tls`); `None`: plain HTTP only.
    pub tls: Option<super::tls::TlsListen>,
    /// `--http-redirect`: plain HTTP answers every request but ACME's HTTP-01 challenges
    /// with a 308 to `https://` on this port.
    pub https_redirect: Option<u16>,
    /// `--hsts`: the `Strict-Transport-Security` policy sent on HTTPS responses (never
    /// on plain HTTP, RFC 6797 §7.2); `None`: no such field.
    pub hsts: Option<crate::http::Hsts>,
    /// IPv6 on the link (`--ip6`): a link-local address (RFC 7217, checked by DAD),
    /// neighbour discovery and echo (`iface::ipv6`); off by default here. One server of
    /// a machine runs the link (core 0's); in the per-queue mode the others follow it
    /// (`iface::share6`).
    pub ipv6: bool,
    /// The RFC 7217 secret of the stable address (`--ip6-secret`); `None`: derived from
    /// `isn_key` (random per start, so the address is stable for a run).
    pub ipv6_secret: Option<[u8; 16]>,
    /// A configured global address and its prefix length (`--ip6 ADDR/PREFIX`), held
    /// beside the link-local one (checked by DAD) instead of addresses from router
    /// advertisements; `None`: SLAAC.
    pub ipv6_static: Option<(crate::wire::Ipv6Address, u8)>,
    /// `--ip6 dhcp6`: the global address from DHCPv6 alone, solicited as soon as the
    /// link-local address is preferred; advertised prefixes make none.
    pub ipv6_dhcp6: bool,
    /// The router for IPv6 peers beyond the link (`--gw6 ADDR`); `None` (`--gw6 auto`):
    /// the first default router advertised. With neither, such peers are not answered
    /// (`iface::ipv6::Link::route`).
    pub ipv6_gateway: Option<crate::wire::Ipv6Address>,
}

/// Most networks [`ProxySources`] holds.
pub const PROXY_SOURCES_MAX: usize = 8;

/// The networks trusted to send a PROXY protocol header (`--proxy-protocol`, repeatable):
/// a fixed array, so the settings stay `Copy` and nothing is allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProxySources {
    nets: [([u8; 4], u8); PROXY_SOURCES_MAX],
    len: u8,
}

impl ProxySources {
    /// No source: no connection may carry a header (the default).
    pub const NONE: ProxySources = ProxySources {
        nets: [([0; 4], 0); PROXY_SOURCES_MAX],
        len: 0,
    };

    /// Adds network `net`/`prefix` (a prefix above 32 is taken as 32). Returns false when
    /// [`PROXY_SOURCES_MAX`] are already there; one already there is not added twice.
    pub fn add(&mut self, net: Ipv4Address, prefix: u8) -> bool {
        let prefix = prefix.min(32);
        let net = (u32::from_be_bytes(net.0) & mask(prefix)).to_be_bytes();
        if self.nets().contains(&(net, prefix)) {
            return true;
        }
        let Some(slot) = self.nets.get_mut(usize::from(self.len)) else {
            return false;
        };
        *slot = (net, prefix);
        self.len += 1;
        true
    }

    /// The networks, as (address, prefix length).
    pub fn nets(&self) -> &[([u8; 4], u8)] {
        &self.nets[..usize::from(self.len)]
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `ip` is in one of the networks.
    #[inline]
    pub fn contains(&self, ip: [u8; 4]) -> bool {
        let ip = u32::from_be_bytes(ip);
        self.nets()
            .iter()
            .any(|&(net, len)| ip & mask(len) == u32::from_be_bytes(net))
    }
}

/// The netmask of a prefix length (0 to 32).
fn mask(prefix: u8) -> u32 {
    u32::MAX
        .checked_shl(32 - u32::from(prefix.min(32)))
        .unwrap_or(0)
}

impl Config {
    /// A configuration with defaults for everything but the address and the ISN secret
    /// (random bytes from the platform: `getrandom` on the host, RDRAND on the kernel).
    /// These are the server options' defaults too: bareweb-settings reads them from here.
    pub fn new(ip: Ipv4Address, prefix_len: u8, isn_key: [u8; 16]) -> Config {
        Config {
            ip,
            prefix_len,
            gateway: None,
            port: 80,
            tcbs: 1024,
            rx_buffer: http::MAX_REQUEST,
            max_per_ip: None,
            syn_backlog: None,
            sched: Sched::Imt,
            isn_key,
            timeouts: Timeouts::default(),
            server_name: "bareweb",
            udp: None,
            bond: None,
            congestion: Algorithm::default(),
            dhcp: None,
            platform: None,
            reload: None,
            drain: None,
            divert: None,
            vips: crate::iface::Vips::NONE,
            proxy_protocol: ProxySources::NONE,
            tls: None,
            https_redirect: None,
            hsts: None,
            ipv6: false,
            ipv6_secret: None,
            ipv6_static: None,
            ipv6_gateway: None,
            ipv6_dhcp6: false,
        }
    }
}
