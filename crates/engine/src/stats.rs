//! Counters owned by one core: plain `u64`s, bumped on the hot path, read by the platform
//! (Ctrl-C summary, tests, the stats page). Every dropped frame is counted by its reason.
//! [`CoreTimes`] and [`Stay`] are the papers' live measurements (issue 4); a core
//! publishes all of them to the shared board in `cores::board`.

pub mod platform;

/// Number of counters in [`Stats::fields`].
pub const STATS_FIELDS: usize = 57;

/// All counters of one engine instance.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Frames received from the NIC.
    pub rx_frames: u64,
    /// Frames sent.
    pub tx_frames: u64,
    /// Of them, frames the device segments (TCP segmentation offload).
    pub tx_tso_frames: u64,
    /// Frames not sent because the transmit ring was full.
    pub tx_ring_full: u64,
    /// Rounds that stopped receiving because the transmit ring had no room (the frames
    /// wait in the receive ring: backpressure, see `TxRing::room`).
    pub rx_held: u64,
    /// Dropped: shorter than a header or a length field says.
    pub drop_truncated: u64,
    /// Dropped: a header field holds a forbidden value.
    pub drop_malformed: u64,
    /// Dropped: bad IPv4, ICMP or TCP checksum.
    pub drop_checksum: u64,
    /// Dropped: IPv4 fragment (we never need reassembly for requests).
    pub drop_fragment: u64,
    /// Dropped: not addressed to us (MAC or IP) or a protocol we do not serve.
    pub drop_not_for_us: u64,
    /// Dropped: from beyond the link while no gateway is configured.
    pub drop_no_route: u64,
    /// ARP requests answered.
    pub arp_replies: u64,
    /// ICMP echo requests answered.
    pub icmp_echo: u64,
    /// SYNs that opened a connection.
    pub tcp_accepted: u64,
    /// SYNs dropped because every TCB was in use by a connection with a response in flight.
    pub tcp_no_tcb: u64,
    /// Connections reset to make room for a new one when every TCB was in use: the one
    /// least recently active among those with no response in flight (issue 15).
    pub tcp_evicted: u64,
    /// SYNs refused with a RST because their address already had `max_per_ip` connections.
    pub tcp_per_ip_refused: u64,
    /// SYN-ACKs sent with a SYN cookie (the half-open budget was spent): no TCB kept.
    pub tcp_syncookies_sent: u64,
    /// Connections opened by an ACK that returned a valid SYN cookie.
    pub tcp_syncookies_ok: u64,
    /// Connections that reached ESTABLISHED.
    pub tcp_established: u64,
    /// Connections whose TCB was freed (any reason).
    pub tcp_closed: u64,
    /// Connections reset by the peer.
    pub tcp_rst_received: u64,
    /// RSTs sent (no connection, or aborted).
    pub tcp_rst_sent: u64,
    /// Challenge ACKs sent (RFC 5961) for in-window RST/SYN or unacceptable segments.
    pub tcp_challenge_acks: u64,
    /// Segments outside the receive window.
    pub tcp_out_of_window: u64,
    /// Segments discarded for an acknowledgment number older than the peer's largest
    /// window behind SND.UNA (RFC 5961 §5), each answered with an ACK.
    pub tcp_bad_acks: u64,
    /// Out-of-order data dropped (re-requested by a duplicate ACK).
    pub tcp_out_of_order: u64,
    /// Segments retransmitted by the retransmission timer.
    pub tcp_rto_retransmits: u64,
    /// Fast retransmits (three duplicate ACKs, SACK loss detection, or a NewReno partial
    /// ACK).
    pub tcp_fast_retransmits: u64,
    /// Holes retransmitted from the SACK scoreboard during recovery (frames).
    pub tcp_sack_retransmits: u64,
    /// Retransmissions found lost again in SACK recovery (the holes went again).
    pub tcp_lost_retransmits: u64,
    /// Tail loss probes sent (RFC 8985).
    pub tcp_loss_probes: u64,
    /// Challenge ACKs withheld by the per-connection rate limit (RFC 5961 §7).
    pub tcp_challenge_acks_limited: u64,
    /// Segments dropped by PAWS (RFC 7323 §5.3): a timestamp older than the last one.
    pub tcp_paws_rejected: u64,
    /// Zero-window probes sent.
    pub tcp_window_probes: u64,
    /// Connections aborted by a timeout (half-open, idle, stalled, too many retries).
    pub tcp_timeouts: u64,
    /// HTTP requests answered (any status).
    pub http_requests: u64,
    /// Responses by class.
    pub http_2xx: u64,
    /// 3xx responses.
    pub http_3xx: u64,
    /// 4xx responses.
    pub http_4xx: u64,
    /// 5xx responses.
    pub http_5xx: u64,
    /// Response body bytes queued (head + body of every response).
    pub http_bytes: u64,
    /// TCBs in use now.
    pub tcbs_in_use: u64,
    /// Highest number of TCBs in use at once.
    pub tcbs_max: u64,
    /// Highest number of requests on the run list at once.
    pub run_list_max: u64,
    /// UDP protocol (paper 001): datagrams for its port.
    pub udp_datagrams: u64,
    /// Initial GETs answered (a Get-Ack sent).
    pub udp_initial: u64,
    /// Subsequent GETs answered.
    pub udp_subsequent: u64,
    /// Packets sent (Get-Acks, heads, data, errors).
    pub udp_packets: u64,
    /// Answers cut short by the amplification bound (3x to an unproven source).
    pub udp_bounded: u64,
    /// Requests not answered at all: not even a Get-Ack fit the bound.
    pub udp_bounded_silent: u64,
    /// Requests refused as malformed (answered with an Error packet within the bound).
    pub udp_malformed: u64,
    /// Requests refused for their start packet (0 or past the end).
    pub udp_bad_start: u64,
    /// Requests whose `BW-Token` did not verify (treated as unproven).
    pub udp_token_bad: u64,
    /// Requests dropped by the per-source rate limit.
    pub udp_rate_limited: u64,
    /// Requests dropped because no request id was free.
    pub udp_no_id: u64,
    /// Most request ids out at once (the paper's max parallel).
    pub udp_ids_max: u64,
}

impl Stats {
    /// (name, value) pairs, for printing and JSON.
    pub fn fields(&self) -> [(&'static str, u64); STATS_FIELDS] {
        [
            ("rx_frames", self.rx_frames),
            ("tx_frames", self.tx_frames),
            ("tx_tso_frames", self.tx_tso_frames),
            ("tx_ring_full", self.tx_ring_full),
            ("rx_held", self.rx_held),
            ("drop_truncated", self.drop_truncated),
            ("drop_malformed", self.drop_malformed),
            ("drop_checksum", self.drop_checksum),
            ("drop_fragment", self.drop_fragment),
            ("drop_not_for_us", self.drop_not_for_us),
            ("drop_no_route", self.drop_no_route),
            ("arp_replies", self.arp_replies),
            ("icmp_echo", self.icmp_echo),
            ("tcp_accepted", self.tcp_accepted),
            ("tcp_no_tcb", self.tcp_no_tcb),
            ("tcp_evicted", self.tcp_evicted),
            ("tcp_per_ip_refused", self.tcp_per_ip_refused),
            ("tcp_syncookies_sent", self.tcp_syncookies_sent),
            ("tcp_syncookies_ok", self.tcp_syncookies_ok),
            ("tcp_established", self.tcp_established),
            ("tcp_closed", self.tcp_closed),
            ("tcp_rst_received", self.tcp_rst_received),
            ("tcp_rst_sent", self.tcp_rst_sent),
            ("tcp_challenge_acks", self.tcp_challenge_acks),
            ("tcp_out_of_window", self.tcp_out_of_window),
            ("tcp_bad_acks", self.tcp_bad_acks),
            ("tcp_out_of_order", self.tcp_out_of_order),
            ("tcp_rto_retransmits", self.tcp_rto_retransmits),
            ("tcp_fast_retransmits", self.tcp_fast_retransmits),
            ("tcp_sack_retransmits", self.tcp_sack_retransmits),
            ("tcp_lost_retransmits", self.tcp_lost_retransmits),
            ("tcp_loss_probes", self.tcp_loss_probes),
            (
                "tcp_challenge_acks_limited",
                self.tcp_challenge_acks_limited,
            ),
            ("tcp_paws_rejected", self.tcp_paws_rejected),
            ("tcp_window_probes", self.tcp_window_probes),
            ("tcp_timeouts", self.tcp_timeouts),
            ("http_requests", self.http_requests),
            ("http_2xx", self.http_2xx),
            ("http_3xx", self.http_3xx),
            ("http_4xx", self.http_4xx),
            ("http_5xx", self.http_5xx),
            ("http_bytes", self.http_bytes),
            ("tcbs_in_use", self.tcbs_in_use),
            ("tcbs_max", self.tcbs_max),
            ("run_list_max", self.run_list_max),
            ("udp_datagrams", self.udp_datagrams),
            ("udp_initial", self.udp_initial),
            ("udp_subsequent", self.udp_subsequent),
            ("udp_packets", self.udp_packets),
            ("udp_bounded", self.udp_bounded),
            ("udp_bounded_silent", self.udp_bounded_silent),
            ("udp_malformed", self.udp_malformed),
            ("udp_bad_start", self.udp_bad_start),
            ("udp_token_bad", self.udp_token_bad),
            ("udp_rate_limited", self.udp_rate_limited),
            ("udp_no_id", self.udp_no_id),
            ("udp_ids_max", self.udp_ids_max),
        ]
    }
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

/// Stay time of requests (paper 000 Fig. 13): from a connection's first GET to the
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
