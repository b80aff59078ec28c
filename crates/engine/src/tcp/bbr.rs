//! BBR v1 congestion control (Cardwell, Cheng, Gunn, Hassas Yeganeh, Jacobson: "BBR:
//! Congestion-Based Congestion Control", ACM Queue 14(5), 2016), as Linux's
//! `net/ipv4/tcp_bbr.c` does it. A model of the path — the bottleneck bandwidth (the
//! largest delivery rate sampled over the last ten packet-timed rounds, Kathleen Nichols'
//! windowed max filter of `lib/win_minmax.c`) and the round-trip propagation time (the
//! smallest RTT sampled over ten seconds) — and four modes that choose from it a pacing
//! rate (`pacing_gain · bw`) and a congestion window (`cwnd_gain · bw · min_rtt` plus a
//! quantization budget):
//!
//! - STARTUP: gain 2/ln 2 ≈ 2.885, doubling the rate each round, until three rounds in a
//!   row grew the bandwidth estimate by less than a quarter (the pipe is full);
//! - DRAIN: the inverse gain, until what is in flight is one BDP again;
//! - PROBE_BW: the gain cycles 1.25, 0.75, then six rounds of 1 (from a phase chosen at
//!   random), probing for more bandwidth and draining the queue it made;
//! - PROBE_RTT: when the minimum RTT is ten seconds old, four segments in flight for
//!   200 ms and a round, to see the path's propagation delay again.
//!
//! A random loss does not shrink the model (the window is not cut by a factor): the first
//! round of recovery keeps packet conservation (send what was delivered), then the window
//! slow-starts back toward its target, and recovery's end restores the window it had
//! before. A retransmission timeout cuts it to one segment, grown back from there.
//!
//! Left out of Linux's: the long-term bandwidth estimate that detects token-bucket
//! policers (`lt_bw`), the allowance for ACK aggregation (`extra_acked`), and the per-ACK
//! deduction of newly lost packets from the window in recovery (`rs->losses`: this TCP
//! marks losses per range, not per packet); see docs/design/tcp.md.
//!
//! Pure arithmetic over what the connection tells it on each ACK ([`Ack`]): byte units,
//! rates in bytes per µs as fixed point ([`BW_SHIFT`]), gains in 1/256, times from the
//! caller's clock in ns kept as wrapping µs or ms in `u32`; no floating point.

use super::congestion::initial_window;
use super::rate::RateSample;
use super::seq;

/// Bandwidth unit: bytes per µs << 12, about 244 bytes/s per unit; a `u32` holds up to
/// 1 TB/s.
pub const BW_SHIFT: u32 = 12;
const BW_UNIT: u64 = 1 << BW_SHIFT;
/// Gains are in 1/256 (Linux's `BBR_SCALE`).
pub const GAIN_UNIT: u32 = 256;
/// STARTUP's gain, 2/ln 2: the smallest that doubles the sending rate each round.
pub const HIGH_GAIN: u32 = GAIN_UNIT * 2885 / 1000 + 1;
/// DRAIN's pacing gain, 1/HIGH_GAIN: drains STARTUP's queue in about a round.
pub const DRAIN_GAIN: u32 = GAIN_UNIT * 1000 / 2885;
/// PROBE_BW's window gain: room for delayed and stretched ACKs.
pub const CWND_GAIN: u32 = GAIN_UNIT * 2;
/// Phases of the PROBE_BW gain cycle.
pub const CYCLE_LEN: usize = 8;
/// PROBE_BW's pacing gains: probe, drain, cruise.
pub const PACING_GAINS: [u32; CYCLE_LEN] = [
    GAIN_UNIT * 5 / 4,
    GAIN_UNIT * 3 / 4,
    GAIN_UNIT,
    GAIN_UNIT,
    GAIN_UNIT,
    GAIN_UNIT,
    GAIN_UNIT,
    GAIN_UNIT,
];
/// The cycle starts at one of this many phases (never the draining one).
const CYCLE_RAND: u32 = 7;
/// Rounds the bandwidth filter remembers.
pub const BW_ROUNDS: u32 = CYCLE_LEN as u32 + 2;
/// How long a minimum RTT is believed (ms).
pub const MIN_RTT_WIN_MS: u32 = 10_000;
/// The least time PROBE_RTT holds four segments in flight (ms).
pub const PROBE_RTT_MS: u32 = 200;
/// The smallest window, in segments: two two-segment bursts for a peer that ACKs every
/// other segment.
pub const CWND_MIN_SEGMENTS: u32 = 4;
/// Growth (in 1/256) below which a STARTUP round counts towards a full pipe.
const FULL_BW_THRESH: u32 = GAIN_UNIT * 5 / 4;
/// Rounds without that growth before the pipe is deemed full.
const FULL_BW_ROUNDS: u8 = 3;
/// Pacing runs this many percent below the estimate, to drain queues over time.
const PACING_MARGIN_PERCENT: u64 = 1;
/// Below this pacing rate (bytes/s, Linux's 1.2 Mbit/s) a frame carries one segment.
const MIN_TSO_RATE: u64 = 1_200_000 / 8;
/// The most payload of one offloaded frame (Linux's `GSO_LEGACY_MAX_SIZE − 1 −
/// MAX_TCP_HEADER`: what fits a 64 KiB IP datagram).
pub const TSO_MAX_BYTES: u32 = 65_536 - 1 - 320;

/// BBR's modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Ramp up: double the rate each round.
    Startup,
    /// Drain the queue STARTUP made.
    Drain,
    /// Cruise at the estimated bandwidth, probing up and down.
    ProbeBw,
    /// Four segments in flight, to measure the propagation delay.
    ProbeRtt,
}

/// The connection's loss-recovery state, as BBR sees it (Linux's `icsk_ca_state`, less
/// the states BBR does not tell apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaState {
    /// No recovery.
    Open,
    /// Fast recovery (duplicate ACKs or SACK).
    Recovery,
    /// After a retransmission timeout, until what was outstanding then is acknowledged.
    Loss,
}

/// One sample of the windowed max filter: a value and its round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Sample {
    t: u32,
    v: u32,
}

/// Kathleen Nichols' windowed max over a window of rounds (Linux's `lib/win_minmax.c`):
/// the best, second and third best values, from ever later quarters of the window, in
/// constant space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MaxFilter {
    s: [Sample; 3],
}

impl MaxFilter {
    /// The maximum.
    pub fn get(&self) -> u32 {
        self.s[0].v
    }

    /// Forgets everything but `v` at round `t`.
    pub fn reset(&mut self, t: u32, v: u32) -> u32 {
        self.s = [Sample { t, v }; 3];
        v
    }

    /// Takes `v` at round `t` in a window of `win` rounds; returns the maximum.
    pub fn update(&mut self, win: u32, t: u32, v: u32) -> u32 {
        let val = Sample { t, v };
        if v >= self.s[0].v || t.wrapping_sub(self.s[2].t) > win {
            return self.reset(t, v);
        }
        if v >= self.s[1].v {
            self.s[2] = val;
            self.s[1] = val;
        } else if v >= self.s[2].v {
            self.s[2] = val;
        }
        let dt = t.wrapping_sub(self.s[0].t);
        if dt > win {
            // The best is out of the window: the second and third move up.
            self.s = [self.s[1], self.s[2], val];
            if t.wrapping_sub(self.s[0].t) > win {
                self.s = [self.s[1], self.s[2], val];
            }
        } else if self.s[1].t == self.s[0].t && dt > win / 4 {
            // A quarter of the window without a second best: take one from now.
            self.s[2] = val;
            self.s[1] = val;
        } else if self.s[2].t == self.s[1].t && dt > win / 2 {
            self.s[2] = val;
        }
        self.s[0].v
    }
}

/// What one ACK told BBR (Linux's `rate_sample` and the connection state it reads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ack {
    /// Now (ns).
    pub now_ns: u64,
    /// Bytes this ACK newly acknowledged or SACKed.
    pub acked_sacked: u32,
    /// The rate sample it completed, if any.
    pub sample: Option<RateSample>,
    /// The connection's delivered count after it (bytes, wrapping), and when it last grew
    /// (µs, wrapping).
    pub delivered: u32,
    /// When delivery last grew (µs, wrapping).
    pub delivered_us: u32,
    /// Bytes in flight (RFC 6675's pipe in recovery) before the ACK.
    pub prior_inflight: u32,
    /// Bytes in flight after it.
    pub inflight: u32,
    /// Recovery state after it.
    pub state: CaState,
    /// A loss was detected on it.
    pub lost: bool,
    /// The send MSS.
    pub mss: u32,
    /// The smoothed RTT (µs; 0: none).
    pub srtt_us: u32,
    /// The pacing clock: when the next segment may leave (ns).
    pub next_send_ns: u64,
    /// A per-connection secret-derived value (the ISS): the gain cycle's random phase.
    pub seed: u32,
}

/// BBR's state for one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bbr {
    /// Max delivery rate over [`BW_ROUNDS`] rounds (bw units).
    bw: MaxFilter,
    /// Min RTT over [`MIN_RTT_WIN_MS`] (µs; `u32::MAX`: none yet).
    min_rtt_us: u32,
    /// When it was taken (ms, wrapping).
    min_rtt_stamp_ms: u32,
    /// When PROBE_RTT may end (ms, wrapping; valid with `probe_rtt_timing`).
    probe_rtt_done_ms: u32,
    /// Packet-timed rounds so far.
    rtt_cnt: u32,
    /// The delivered count that ends the current round.
    next_rtt_delivered: u32,
    /// When the current gain-cycle phase began (µs of delivery, wrapping).
    cycle_stamp_us: u32,
    /// The window before recovery or PROBE_RTT cut it.
    prior_cwnd: u32,
    /// STARTUP's bandwidth at its last growth by a quarter.
    full_bw: u32,
    /// The pacing rate (bw units; 0: not yet set).
    pacing_rate: u32,
    mode: Mode,
    /// The recovery state on the previous ACK that delivered data.
    prev_state: CaState,
    cycle_idx: u8,
    full_bw_cnt: u8,
    full_bw_reached: bool,
    packet_conservation: bool,
    round_start: bool,
    idle_restart: bool,
    probe_rtt_timing: bool,
    probe_rtt_round_done: bool,
    has_seen_rtt: bool,
}

impl Default for Bbr {
    fn default() -> Self {
        Bbr::new()
    }
}

/// `now_ns` as wrapping ms.
fn ms(now_ns: u64) -> u32 {
    (now_ns / 1_000_000) as u32
}

/// `a` is after `b` on a wrapping clock.
fn after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

impl Bbr {
    /// STARTUP, no sample.
    pub const fn new() -> Bbr {
        Bbr {
            bw: MaxFilter {
                s: [Sample { t: 0, v: 0 }; 3],
            },
            min_rtt_us: u32::MAX,
            min_rtt_stamp_ms: 0,
            probe_rtt_done_ms: 0,
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            cycle_stamp_us: 0,
            prior_cwnd: 0,
            full_bw: 0,
            pacing_rate: 0,
            mode: Mode::Startup,
            prev_state: CaState::Open,
            cycle_idx: 0,
            full_bw_cnt: 0,
            full_bw_reached: false,
            packet_conservation: false,
            round_start: false,
            idle_restart: false,
            probe_rtt_timing: false,
            probe_rtt_round_done: false,
            has_seen_rtt: false,
        }
    }

    // ------------------------------------------------------------ reading the model

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }
    /// The bottleneck bandwidth estimate (bw units).
    pub fn max_bw(&self) -> u32 {
        self.bw.get()
    }
    /// The minimum RTT (µs; `u32::MAX`: none yet).
    pub fn min_rtt_us(&self) -> u32 {
        self.min_rtt_us
    }
    /// The pacing rate (bw units; 0 before the connection is established).
    pub fn pacing_rate(&self) -> u32 {
        self.pacing_rate
    }
    /// Whether STARTUP found the pipe full.
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }
    /// The gain-cycle phase (PROBE_BW).
    pub fn cycle_idx(&self) -> usize {
        usize::from(self.cycle_idx)
    }
    /// Packet-timed rounds so far.
    pub fn rounds(&self) -> u32 {
        self.rtt_cnt
    }
    /// The window saved before recovery or PROBE_RTT.
    pub fn prior_cwnd(&self) -> u32 {
        self.prior_cwnd
    }
    /// Whether the first round of recovery's packet conservation is on.
    pub fn packet_conservation(&self) -> bool {
        self.packet_conservation
    }

    /// The pacing gain of the mode (1/256).
    pub fn pacing_gain(&self) -> u32 {
        match self.mode {
            Mode::Startup => HIGH_GAIN,
            Mode::Drain => DRAIN_GAIN,
            Mode::ProbeBw => PACING_GAINS[usize::from(self.cycle_idx) % CYCLE_LEN],
            Mode::ProbeRtt => GAIN_UNIT,
        }
    }

    /// The window gain of the mode (1/256).
    pub fn cwnd_gain(&self) -> u32 {
        match self.mode {
            Mode::Startup | Mode::Drain => HIGH_GAIN,
            Mode::ProbeBw => CWND_GAIN,
            Mode::ProbeRtt => GAIN_UNIT,
        }
    }

    /// A rate with a gain, 1% under (bw units; at least 1).
    fn rate(bw: u32, gain: u32) -> u32 {
        let r = ((u64::from(bw) * u64::from(gain)) >> 8) * (100 - PACING_MARGIN_PERCENT) / 100;
        r.clamp(1, u64::from(u32::MAX)) as u32
    }

    /// A rate in bytes per second.
    pub fn bytes_per_sec(rate: u32) -> u64 {
        (u64::from(rate) * 1_000_000) >> BW_SHIFT
    }

    /// Nanoseconds `len` bytes take at `rate` (bw units).
    pub fn send_time_ns(len: u32, rate: u32) -> u64 {
        (u64::from(len) << BW_SHIFT) * 1000 / u64::from(rate.max(1))
    }

    /// The TSO goal: about a millisecond of the pacing rate in whole segments, at least
    /// two (one below 1.2 Mbit/s), at most what one 64 KiB frame holds (Linux's
    /// `bbr_tso_segs_goal`).
    pub fn tso_goal(&self, mss: u32) -> u32 {
        let mss = mss.max(1);
        let bps = Self::bytes_per_sec(self.pacing_rate);
        let bytes = (bps >> 10).min(u64::from(TSO_MAX_BYTES)) as u32;
        let least = if bps < MIN_TSO_RATE { 1 } else { 2 };
        (bytes / mss)
            .max(least)
            .min(127)
            .min(TSO_MAX_BYTES / mss)
            .max(1)
            * mss
    }

    /// The BDP at `bw` with `gain`: ⌈bw · min_rtt · gain⌉ (bytes); the initial window
    /// before any RTT sample.
    fn bdp(&self, bw: u32, gain: u32, mss: u32) -> u32 {
        if self.min_rtt_us == u32::MAX {
            return initial_window(mss);
        }
        let w = (u128::from(bw) * u128::from(self.min_rtt_us) * u128::from(gain)) >> 8;
        ((w + u128::from(BW_UNIT) - 1) >> BW_SHIFT).min(u128::from(u32::MAX)) as u32
    }

    /// Room for the frames in the sending and receiving hosts' offload engines: three TSO
    /// goals, rounded up to an even number of segments (delayed ACKs), two more segments
    /// in the probing phase of the cycle.
    fn quantization_budget(&self, cwnd: u32, mss: u32) -> u32 {
        let mss = mss.max(1);
        let w = cwnd.saturating_add(3 * self.tso_goal(mss));
        let segs = w.div_ceil(mss).saturating_add(1) & !1;
        let mut w = segs.saturating_mul(mss);
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            w = w.saturating_add(2 * mss);
        }
        w
    }

    /// The flight to aim at with `bw` and `gain`.
    pub fn inflight(&self, bw: u32, gain: u32, mss: u32) -> u32 {
        self.quantization_budget(self.bdp(bw, gain, mss), mss)
    }

    /// What will still be in the network when the next segment leaves at its pacing time:
    /// `inflight` less what the bandwidth delivers until then, plus that segment's frame
    /// when the gain is raising the flight (Linux's `bbr_packets_in_net_at_edt`).
    fn in_net_at_edt(&self, inflight: u32, a: &Ack) -> u32 {
        let interval_us = a.next_send_ns.saturating_sub(a.now_ns) / 1000;
        let delivered = (u64::from(self.max_bw()) * interval_us) >> BW_SHIFT;
        let mut at_edt = u64::from(inflight);
        if self.pacing_gain() > GAIN_UNIT {
            at_edt += u64::from(self.tso_goal(a.mss));
        }
        at_edt.saturating_sub(delivered) as u32
    }

    // ------------------------------------------------------------ events

    /// The connection is established with window `cwnd`: the minimum RTT from the
    /// handshake's timed SYN-ACK (`handshake_rtt_us`, µs), the first pacing rate from the
    /// smoothed RTT (Linux's `bbr_init`).
    pub fn init(&mut self, cwnd: u32, srtt_us: u32, handshake_rtt_us: Option<u32>, now_ns: u64) {
        if let Some(rtt) = handshake_rtt_us {
            self.min_rtt_us = rtt.max(1);
        }
        self.min_rtt_stamp_ms = ms(now_ns);
        self.init_pacing_rate(cwnd, srtt_us);
    }

    /// HIGH_GAIN · cwnd / SRTT (per 1 ms before any RTT sample).
    fn init_pacing_rate(&mut self, cwnd: u32, srtt_us: u32) {
        let rtt = if srtt_us > 0 {
            self.has_seen_rtt = true;
            srtt_us
        } else {
            1000
        };
        let bw = (u64::from(cwnd) << BW_SHIFT) / u64::from(rtt);
        self.pacing_rate = Self::rate(bw.min(u64::from(u32::MAX)) as u32, HIGH_GAIN);
    }

    /// Saves the window before recovery or PROBE_RTT cuts it (Linux's `bbr_save_cwnd`).
    pub fn save_cwnd(&mut self, cwnd: u32) {
        self.prior_cwnd = if self.prev_state == CaState::Open && self.mode != Mode::ProbeRtt {
            cwnd
        } else {
            self.prior_cwnd.max(cwnd)
        };
    }

    /// A retransmission timeout (`in_recovery`: fast recovery was under way, its window
    /// already saved): the window to restore is saved, STARTUP's full-pipe count starts
    /// again, and the ACKs until recovery ends are in the Loss state (Linux's
    /// `bbr_set_state(TCP_CA_Loss)`).
    pub fn on_timeout(&mut self, cwnd: u32, in_recovery: bool) {
        if !in_recovery {
            self.save_cwnd(cwnd);
        }
        self.prev_state = CaState::Loss;
        self.full_bw = 0;
        self.round_start = true;
    }

    /// Data goes out after an idle spell (nothing was in flight) while application-limited:
    /// pace at the estimate itself in PROBE_BW, and PROBE_RTT may be over (Linux's
    /// `CA_EVENT_TX_START`).
    pub fn on_restart(&mut self, cwnd: &mut u32, now_ns: u64, seed: u32, delivered_us: u32) {
        self.idle_restart = true;
        match self.mode {
            Mode::ProbeBw => self.set_pacing_rate(self.max_bw(), GAIN_UNIT, 0, *cwnd),
            Mode::ProbeRtt => self.finish_probe_rtt(cwnd, ms(now_ns), seed, delivered_us),
            _ => {}
        }
    }

    /// Every ACK (Linux's `bbr_main`): updates the model, then the pacing rate and, when
    /// `own_cwnd`, the window (without SACK, fast recovery keeps NewReno's packet
    /// conservation instead). Returns whether the connection must be marked
    /// application-limited (PROBE_RTT's low rate says nothing of the path).
    pub fn on_ack(&mut self, a: &Ack, cwnd: &mut u32, own_cwnd: bool) -> bool {
        self.update_bw(a);
        self.update_cycle_phase(a);
        self.check_full_bw_reached(a);
        self.check_drain(a);
        let app_limited = self.update_min_rtt(a, cwnd);
        let bw = self.max_bw();
        self.set_pacing_rate(bw, self.pacing_gain(), a.srtt_us, *cwnd);
        if own_cwnd {
            self.set_cwnd(a, bw, cwnd);
        } else if a.acked_sacked > 0 {
            if a.state == CaState::Recovery && self.prev_state != CaState::Recovery {
                self.next_rtt_delivered = a.delivered;
            }
            self.prev_state = a.state;
        }
        app_limited
    }

    /// A round ends when a range sent after the last round began is delivered; a valid
    /// sample feeds the max filter unless it is app-limited and below it.
    fn update_bw(&mut self, a: &Ack) {
        self.round_start = false;
        let Some(s) = a.sample else {
            return;
        };
        // Linux's tcp_rate_gen: an interval shorter than the minimum RTT is no sample.
        if s.delivered == 0 || s.interval_us == 0 || s.interval_us < self.min_rtt_us.min(s.rtt_us) {
            return;
        }
        if seq::ge(s.prior_delivered, self.next_rtt_delivered) {
            self.next_rtt_delivered = a.delivered;
            self.rtt_cnt = self.rtt_cnt.wrapping_add(1);
            self.round_start = true;
            self.packet_conservation = false;
        }
        let bw = ((u64::from(s.delivered) << BW_SHIFT) / u64::from(s.interval_us))
            .min(u64::from(u32::MAX)) as u32;
        if !s.app_limited || bw >= self.max_bw() {
            self.bw.update(BW_ROUNDS, self.rtt_cnt, bw);
        }
    }

    /// PROBE_BW: the next phase of the gain cycle when this one has lasted a min_rtt
    /// (and, probing, reached its flight or met a loss; draining, gone down to a BDP).
    fn update_cycle_phase(&mut self, a: &Ack) {
        if self.mode != Mode::ProbeBw {
            return;
        }
        let full_length = a.delivered_us.wrapping_sub(self.cycle_stamp_us) > self.min_rtt_us;
        let gain = self.pacing_gain();
        let next = if gain == GAIN_UNIT {
            full_length
        } else {
            let inflight = self.in_net_at_edt(a.prior_inflight, a);
            let bw = self.max_bw();
            if gain > GAIN_UNIT {
                full_length && (a.lost || inflight >= self.inflight(bw, gain, a.mss))
            } else {
                full_length || inflight <= self.inflight(bw, GAIN_UNIT, a.mss)
            }
        };
        if next {
            self.advance_cycle_phase(a.delivered_us);
        }
    }

    fn advance_cycle_phase(&mut self, delivered_us: u32) {
        self.cycle_idx = (self.cycle_idx + 1) % CYCLE_LEN as u8;
        self.cycle_stamp_us = delivered_us;
    }

    /// STARTUP's end: three rounds (not app-limited) without 25% more bandwidth.
    fn check_full_bw_reached(&mut self, a: &Ack) {
        if self.full_bw_reached || !self.round_start || a.sample.is_none_or(|s| s.app_limited) {
            return;
        }
        let thresh = (u64::from(self.full_bw) * u64::from(FULL_BW_THRESH)) >> 8;
        if u64::from(self.max_bw()) >= thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt = self.full_bw_cnt.saturating_add(1);
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_ROUNDS;
    }

    /// STARTUP → DRAIN once the pipe is full; DRAIN → PROBE_BW once the flight is down to
    /// a BDP.
    fn check_drain(&mut self, a: &Ack) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
        }
        if self.mode == Mode::Drain
            && self.in_net_at_edt(a.inflight, a) <= self.inflight(self.max_bw(), GAIN_UNIT, a.mss)
        {
            self.reset_probe_bw_mode(a.seed, a.delivered_us);
        }
    }

    /// PROBE_BW at a random phase of the cycle other than the draining one. The engine
    /// has no random number generator: the phase is a hash of the connection's secret-keyed
    /// ISS and the round count (Linux draws `get_random_u32_below(7)`).
    fn reset_probe_bw_mode(&mut self, seed: u32, delivered_us: u32) {
        self.mode = Mode::ProbeBw;
        let r = mix(seed ^ self.rtt_cnt.wrapping_mul(0x9E37_79B9)) % CYCLE_RAND;
        self.cycle_idx = (CYCLE_LEN as u32 - 1 - r) as u8;
        self.advance_cycle_phase(delivered_us);
    }

    /// STARTUP again unless the pipe was found full.
    fn reset_mode(&mut self, seed: u32, delivered_us: u32) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode(seed, delivered_us);
        } else {
            self.mode = Mode::Startup;
        }
    }

    /// The min RTT filter (a new minimum, or any sample once it expired), and PROBE_RTT:
    /// entered when the minimum is ten seconds old, four segments in flight for 200 ms and
    /// a round, then the window saved before it. Returns whether to mark the connection
    /// app-limited (in PROBE_RTT).
    fn update_min_rtt(&mut self, a: &Ack, cwnd: &mut u32) -> bool {
        let now_ms = ms(a.now_ns);
        let expired = now_ms.wrapping_sub(self.min_rtt_stamp_ms) > MIN_RTT_WIN_MS;
        if let Some(s) = a.sample {
            if s.rtt_us < self.min_rtt_us || expired {
                self.min_rtt_us = s.rtt_us.max(1);
                self.min_rtt_stamp_ms = now_ms;
            }
        }
        if expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd(*cwnd);
            self.probe_rtt_timing = false;
        }
        let mut app_limited = false;
        if self.mode == Mode::ProbeRtt {
            app_limited = true;
            if !self.probe_rtt_timing && a.inflight <= CWND_MIN_SEGMENTS * a.mss {
                self.probe_rtt_timing = true;
                self.probe_rtt_done_ms = now_ms.wrapping_add(PROBE_RTT_MS);
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = a.delivered;
            } else if self.probe_rtt_timing {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.finish_probe_rtt(cwnd, now_ms, a.seed, a.delivered_us);
                }
            }
        }
        if a.acked_sacked > 0 {
            self.idle_restart = false;
        }
        app_limited
    }

    /// Leaves PROBE_RTT once its time is up: the min RTT counts as fresh, the window
    /// comes back.
    fn finish_probe_rtt(&mut self, cwnd: &mut u32, now_ms: u32, seed: u32, delivered_us: u32) {
        if !(self.probe_rtt_timing && after(now_ms, self.probe_rtt_done_ms)) {
            return;
        }
        self.probe_rtt_timing = false;
        self.min_rtt_stamp_ms = now_ms;
        *cwnd = (*cwnd).max(self.prior_cwnd);
        self.reset_mode(seed, delivered_us);
    }

    /// The pacing rate: only raised in STARTUP (a low early sample must not slow it), set
    /// once the pipe was found full; the first from the SRTT when it comes.
    fn set_pacing_rate(&mut self, bw: u32, gain: u32, srtt_us: u32, cwnd: u32) {
        if !self.has_seen_rtt && srtt_us > 0 {
            self.init_pacing_rate(cwnd, srtt_us);
        }
        let rate = Self::rate(bw, gain);
        if bw > 0 && (self.full_bw_reached || rate > self.pacing_rate) {
            self.pacing_rate = rate;
        }
    }

    /// The window (Linux's `bbr_set_cwnd`): in the first round of recovery, packet
    /// conservation; else toward `cwnd_gain · BDP` plus the quantization budget — grown
    /// by what was delivered, and cut to it once STARTUP found the pipe full; at least
    /// four segments; four at most in PROBE_RTT.
    fn set_cwnd(&mut self, a: &Ack, bw: u32, cwnd: &mut u32) {
        let mss = a.mss.max(1);
        let acked = a.acked_sacked;
        let mut w = *cwnd;
        if acked > 0 {
            let (restored, conserving) = self.recover_or_restore(a, w);
            w = restored;
            if !conserving {
                let target = self.inflight(bw, self.cwnd_gain(), mss);
                if self.full_bw_reached {
                    w = w.saturating_add(acked).min(target);
                } else if w < target || seq::lt(a.delivered, initial_window(mss)) {
                    w = w.saturating_add(acked);
                }
                w = w.max(CWND_MIN_SEGMENTS * mss);
            }
        }
        if self.mode == Mode::ProbeRtt {
            w = w.min(CWND_MIN_SEGMENTS * mss);
        }
        *cwnd = w;
    }

    /// Entering recovery: packet conservation for a round (the flight plus what this ACK
    /// delivered, at least one MSS); leaving it (or the Loss state): the window saved before.
    fn recover_or_restore(&mut self, a: &Ack, cwnd: u32) -> (u32, bool) {
        let mut w = cwnd;
        if a.state == CaState::Recovery && self.prev_state != CaState::Recovery {
            self.packet_conservation = true;
            self.next_rtt_delivered = a.delivered; // the round starts now
            w = a.inflight.saturating_add(a.acked_sacked);
        } else if self.prev_state != CaState::Open && a.state == CaState::Open {
            w = w.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_state = a.state;
        if self.packet_conservation {
            // Linux counts the flight in packets, so a sub-MSS segment in flight still
            // allows one whole segment: in bytes, never less than one MSS.
            let floor = a.inflight.saturating_add(a.acked_sacked).max(a.mss.max(1));
            return (w.max(floor), true);
        }
        (w, false)
    }
}

/// A 32-bit finalizer (MurmurHash3's): spreads the seed's bits over the result.
fn mix(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x85EB_CA6B);
    x ^= x >> 13;
    x = x.wrapping_mul(0xC2B2_AE35);
    x ^ (x >> 16)
}

#[cfg(test)]
mod tests;
