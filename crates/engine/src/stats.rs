//! Counters owned by one core: plain `u64`s, bumped on the hot path, read by the platform
//! (Ctrl-C summary, tests, the stats page). Every dropped frame is counted by its reason.
//! [`CoreTimes`] and [`Stay`] are the papers' live measurements (the runner study's time split and the multi-core paper's stay time); a core
//! publishes all of them to the shared board in `cores::board`.

pub mod platform;

/// Declares the counters once: each name becomes a `u64` field of [`Stats`], an entry of
/// [`STAT_NAMES`] (in this order, which is the order of the stats page, `/metrics` and the
/// shared board's rows), its doc comment an entry of [`STAT_HELP`] (the metrics' HELP
/// line), and a pair of [`Stats::fields`]; [`STATS_FIELDS`] is their number.
macro_rules! counters {
    ($($(#[doc = $doc:literal])* $name:ident,)*) => {
        /// All counters of one engine instance.
        #[derive(Debug, Clone, Default, PartialEq, Eq)]
        pub struct Stats {
            $($(#[doc = $doc])* pub $name: u64,)*
        }

        /// The counters' names, in declaration order.
        pub const STAT_NAMES: [&str; STATS_FIELDS] = [$(stringify!($name),)*];

        /// The counters' doc comments, in declaration order (lines joined; each begins
        /// with the space after `///`).
        pub const STAT_HELP: [&str; STATS_FIELDS] = [$(concat!($($doc),*),)*];

        /// Number of counters in [`Stats`].
        pub const STATS_FIELDS: usize = [$(stringify!($name),)*].len();

        impl Stats {
            /// (name, value) pairs in declaration order, for printing and JSON.
            pub fn fields(&self) -> [(&'static str, u64); STATS_FIELDS] {
                [$((stringify!($name), self.$name),)*]
            }

            /// Every counter at `v` (tests: the widest pages).
            #[cfg(test)]
            pub fn filled(v: u64) -> Stats {
                Stats { $($name: v,)* }
            }
        }
    };
}

counters! {
    /// Frames received from the NIC.
    rx_frames,
    /// Frames sent.
    tx_frames,
    /// Of them, frames the device segments (TCP segmentation offload).
    tx_tso_frames,
    /// Frames not sent because the transmit ring was full.
    tx_ring_full,
    /// Rounds that stopped receiving because the transmit ring had no room (the frames
    /// wait in the receive ring: backpressure, see `TxRing::room`).
    rx_held,
    /// Dropped: shorter than a header or a length field says.
    drop_truncated,
    /// Dropped: a header field holds a forbidden value.
    drop_malformed,
    /// Dropped: bad IPv4, ICMP, ICMPv6 or TCP checksum.
    drop_checksum,
    /// Dropped: IPv4 or IPv6 fragment (we never need reassembly for requests).
    drop_fragment,
    /// Dropped: not addressed to us (MAC or IP) or a protocol we do not serve.
    drop_not_for_us,
    /// Dropped: from beyond the link while no gateway is configured.
    drop_no_route,
    /// Frames handed to the server's own client connection (ACME, its DNS; ARP replies
    /// are also the server's own).
    diverted,
    /// ARP requests answered.
    arp_replies,
    /// ICMP echo requests answered.
    icmp_echo,
    /// ICMPv6 echo requests answered.
    icmp6_echo,
    /// IPv6 neighbour solicitations for our address answered (the ARP replies of IPv6).
    nd_advertisements,
    /// IPv6 neighbour solicitations sent: duplicate address detection and resolution.
    nd_solicitations,
    /// IPv6 addresses found in use by another node (duplicate address detection), or our
    /// address advertised by another.
    nd_dad_conflicts,
    /// IPv6 router solicitations sent (RFC 4861 §6.3.7: up to three, until a router
    /// advertises).
    nd_router_solicits,
    /// IPv6 router advertisements taken (routers, prefixes for global addresses, MTU).
    nd_router_adverts,
    /// Multicast listener reports sent (MLDv2, or MLDv1 to an MLDv1 querier): the groups
    /// our addresses need (their solicited-node groups), joined, left or asked about.
    mld_reports,
    /// Multicast listener queries taken (a link-local source, hop limit 1, Router Alert).
    mld_queries,
    /// DHCPv6 messages sent (Solicit, Request, Renew, Rebind, Information-request), when a
    /// router advertisement's M or O flag asks.
    dhcp6_sent,
    /// IPv6 Packet Too Big messages taken: quoting a segment of a connection in flight
    /// (RFC 8201; one per segment the router dropped).
    icmp6_too_big,
    /// Connections whose segments a Packet Too Big made smaller (and sent again).
    tcp_pmtu_lowered,
    /// Connections freed because the IPv6 address they were made to expired (its valid
    /// lifetime from the router ended).
    tcp_addr_expired,
    /// Dropped: an IPv6 Packet Too Big below 1280, not quoting a TCP segment of ours, or
    /// quoting none in flight (forged, or late; in the per-queue mode, counted once, where
    /// it ends when no core holds the connection).
    drop_too_big,
    /// Dropped: a Neighbor Discovery message whose hop limit is not 255 (from beyond the
    /// link).
    drop_nd_hop_limit,
    /// Dropped: IPv6 not served: router solicitations (a host does not answer them), an
    /// upper layer other than TCP, UDP and ICMPv6; or all IPv6, when it is off or on
    /// another core.
    drop_ipv6_unserved,
    /// IPv6 frames passed to another core (per-queue mode: the link's own frames to core
    /// 0, which keeps its state; a Packet Too Big to the cores that may hold the
    /// connection).
    ipv6_passed,
    /// Dropped: an IPv6 frame to pass to another core whose ring was full.
    drop_ipv6_pass_full,
    /// SYNs that opened a connection.
    tcp_accepted,
    /// SYNs dropped because every TCB was in use by a connection with a response in flight.
    tcp_no_tcb,
    /// Connections reset to make room for a new one when every TCB was in use: the one
    /// least recently active among those with no response in flight (the hardening work).
    tcp_evicted,
    /// SYNs refused with a RST because their address already had `max_per_ip` connections.
    tcp_per_ip_refused,
    /// SYN-ACKs sent with a SYN cookie (the half-open budget was spent): no TCB kept.
    tcp_syncookies_sent,
    /// Connections opened by an ACK that returned a valid SYN cookie.
    tcp_syncookies_ok,
    /// Connections that reached ESTABLISHED.
    tcp_established,
    /// Connections whose TCB was freed (any reason).
    tcp_closed,
    /// Connections reset by the peer.
    tcp_rst_received,
    /// RSTs sent (no connection, or aborted).
    tcp_rst_sent,
    /// Challenge ACKs sent (RFC 5961) for in-window RST/SYN or unacceptable segments.
    tcp_challenge_acks,
    /// Segments outside the receive window.
    tcp_out_of_window,
    /// Segments discarded for an acknowledgment number older than the peer's largest
    /// window behind SND.UNA (RFC 5961 §5), each answered with an ACK.
    tcp_bad_acks,
    /// Out-of-order data dropped (re-requested by a duplicate ACK).
    tcp_out_of_order,
    /// Segments retransmitted by the retransmission timer.
    tcp_rto_retransmits,
    /// Fast retransmits (three duplicate ACKs, SACK loss detection, or a NewReno partial
    /// ACK).
    tcp_fast_retransmits,
    /// Holes retransmitted from the SACK scoreboard during recovery (frames).
    tcp_sack_retransmits,
    /// Retransmissions found lost again in SACK recovery (the holes went again).
    tcp_lost_retransmits,
    /// Tail loss probes sent (RFC 8985).
    tcp_loss_probes,
    /// Challenge ACKs withheld by the per-connection rate limit (RFC 5961 §7).
    tcp_challenge_acks_limited,
    /// Segments dropped by PAWS (RFC 7323 §5.3): a timestamp older than the last one.
    tcp_paws_rejected,
    /// Zero-window probes sent.
    tcp_window_probes,
    /// Connections aborted by a timeout (half-open, idle, stalled, too many retries).
    tcp_timeouts,
    /// PROXY protocol headers accepted from a `--proxy-protocol` source (either version,
    /// LOCAL and UNKNOWN included).
    proxy_headers,
    /// Connections from a `--proxy-protocol` source closed for want of a header: their
    /// first bytes were no PROXY signature, or the header was still incomplete when the
    /// client closed or the request timeout ran out.
    proxy_missing,
    /// Connections closed for a PROXY header that breaks the specification.
    proxy_malformed,
    /// Connections closed for a PROXY header longer than the specification's bounds
    /// (107 bytes for version 1, 536 for version 2).
    proxy_too_long,
    /// Connections closed for a PROXY header from a source not trusted to send one (not
    /// in `--proxy-protocol`).
    proxy_forbidden,
    /// HTTP requests answered (any status).
    http_requests,
    /// Responses by class.
    http_2xx,
    /// 3xx responses.
    http_3xx,
    /// 4xx responses.
    http_4xx,
    /// 5xx responses.
    http_5xx,
    /// Response body bytes queued (head + body of every response).
    http_bytes,
    /// TLS sessions begun (HTTPS connections that sent a first byte).
    tls_sessions,
    /// TLS handshakes completed.
    tls_established,
    /// TLS connections ended by a protocol error or a failed handshake (after the alert).
    tls_failed,
    /// TLS handshake steps put off to the next poll round (the per-round bound).
    tls_handshakes_deferred,
    /// TLS bytes queued on connections (handshakes, records, alerts).
    tls_bytes_out,
    /// Records sealed whole into the core's one-record buffer for a segment, which then
    /// copies its part: AES-GCM on a CPU without AES-NI, or a record whose tag a segment
    /// wanted before the ciphertext before it was sent in order. Else each segment's part
    /// of a record is sealed straight into its frame.
    tls_sealed_whole,
    /// Connections a drain closed: a response sent with `Connection: close` because of it,
    /// or kept alive and idle when its grace ended.
    drain_closed,
    /// Connections reset at a drain's timeout.
    drain_reset,
    /// New connections refused (RST) after a drain's grace.
    drain_refused,
    /// TCBs in use now.
    tcbs_in_use,
    /// Highest number of TCBs in use at once.
    tcbs_max,
    /// Highest number of requests on the run list at once.
    run_list_max,
    /// UDP protocol (the UDP paper): datagrams for its port.
    udp_datagrams,
    /// Initial GETs answered (a Get-Ack sent).
    udp_initial,
    /// Subsequent GETs answered.
    udp_subsequent,
    /// Packets sent (Get-Acks, heads, data, errors).
    udp_packets,
    /// Answers cut short by the amplification bound (3x to an unproven source).
    udp_bounded,
    /// Requests not answered at all: not even a Get-Ack fit the bound.
    udp_bounded_silent,
    /// Requests refused as malformed (answered with an Error packet within the bound).
    udp_malformed,
    /// Requests refused for their start packet (0 or past the end).
    udp_bad_start,
    /// Requests whose `BW-Token` did not verify (treated as unproven).
    udp_token_bad,
    /// Requests dropped by the per-source rate limit.
    udp_rate_limited,
    /// Requests dropped because no request id was free.
    udp_no_id,
    /// Most request ids out at once (the paper's max parallel).
    udp_ids_max,
}

/// Where one core's time went (the papers' RCV / HTTP / Main split), in nanoseconds of the
/// platform clock (TSC on the bare machine, the monotonic clock on the host). Main (idle
/// polling, timers, sleeping) is what remains of the elapsed time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CoreTimes {
    /// Receiving: reading a burst and handling its frames (Ethernet through TCP input).
    pub rcv_ns: u64,
    /// HTTP steps: parsing requests, choosing responses, sending segments; and answering
    /// the UDP protocol's requests.
    pub http_ns: u64,
    /// Poll rounds that found work.
    pub busy_polls: u64,
}

/// Stay time of requests (the multi-core paper, Fig. 13): from a connection's first GET to the
/// client's final ACK, and how many requests were in that span at once (Fig. 14, "max
/// parallel").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stay {
    /// Connections that closed gracefully after at least one request.
    pub count: u64,
    /// Sum of their stay times.
    pub total_ns: u64,
    /// Longest stay time.
    pub max_ns: u64,
    /// Histogram: bucket 0 counts stays under 1 µs, bucket `i` those in `[2^(i-1), 2^i)` µs
    /// (the last bucket takes the rest).
    pub hist: [u64; STAY_BUCKETS],
    /// Connections between their first GET and their end now.
    pub parallel: u64,
    /// Most connections between GET and end at once.
    pub parallel_max: u64,
}

/// Buckets of [`Stay::hist`]: below 1 µs, 2 µs, 4 µs … 2^23 µs (8.4 s), and the rest.
pub const STAY_BUCKETS: usize = 24;

impl Stay {
    /// Records one finished stay.
    pub fn record(&mut self, ns: u64) {
        self.count += 1;
        self.total_ns = self.total_ns.saturating_add(ns);
        self.max_ns = self.max_ns.max(ns);
        let us = ns / 1000;
        let bucket = (64 - us.leading_zeros() as usize).min(STAY_BUCKETS - 1);
        self.hist[bucket] += 1;
    }
}

impl CoreTimes {
    /// Adds `[from, to)` to RCV; returns `to`, the next interval's start.
    pub fn add_rcv(&mut self, from: u64, to: u64) -> u64 {
        self.rcv_ns += to.saturating_sub(from);
        to
    }

    /// Adds `[from, to)` to HTTP; returns `to`.
    pub fn add_http(&mut self, from: u64, to: u64) -> u64 {
        self.http_ns += to.saturating_sub(from);
        to
    }

    /// Moves `ns` just counted as RCV to HTTP (UDP protocol requests, answered while their
    /// frame is handled).
    pub fn rcv_to_http(&mut self, ns: u64) {
        let ns = ns.min(self.rcv_ns);
        self.rcv_ns -= ns;
        self.http_ns += ns;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_list_gives_names_fields_and_count() {
        let s = Stats {
            rx_frames: 1,
            udp_ids_max: 2,
            ..Stats::default()
        };
        let fields = s.fields();
        assert_eq!(fields.len(), STATS_FIELDS);
        assert_eq!(fields.map(|(n, _)| n), STAT_NAMES);
        assert_eq!(fields[0], ("rx_frames", 1));
        assert_eq!(fields[STATS_FIELDS - 1], ("udp_ids_max", 2));
        for (i, n) in STAT_NAMES.iter().enumerate() {
            assert!(!STAT_NAMES[..i].contains(n), "{n} twice");
        }
        assert_eq!(STAT_HELP[0].trim(), "Frames received from the NIC.");
        assert!(STAT_HELP[2].contains("Of them, frames the device segments"));
        assert!(STAT_HELP.iter().all(|h| !h.trim().is_empty()));
    }
}
