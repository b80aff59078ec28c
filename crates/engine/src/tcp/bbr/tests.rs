//! BBR's state machine at its own level: a sequence of ACKs (with their rate samples) in,
//! the mode, window and pacing rate out. A flow is modelled round by round: each round's
//! ACK delivers what was in flight a round trip ago, over that round trip.

use super::*;
use crate::tcp::congestion::{Algorithm, Congestion};
use crate::tcp::rate::us;

const MSS: u32 = 1000;
const RTT_US: u32 = 1000;
const MS: u64 = 1_000_000;
const SEED: u32 = 0x1234_5678;

/// A flow: BBR, its window, the delivered count, the clock.
struct Flow {
    b: Bbr,
    cwnd: u32,
    delivered: u32,
    now_ns: u64,
    state: CaState,
}

impl Flow {
    /// Established at 0 with the initial window and a 1 ms handshake RTT.
    fn new() -> Flow {
        let mut b = Bbr::new();
        let cwnd = initial_window(MSS);
        b.init(cwnd, RTT_US, Some(RTT_US), 0);
        Flow {
            b,
            cwnd,
            delivered: 0,
            now_ns: 0,
            state: CaState::Open,
        }
    }

    /// The ACK of a round: `bytes` delivered over a round trip of `rtt_us`, sent when the
    /// delivered count was what it is now; `inflight` after it.
    fn ack(&mut self, bytes: u32, rtt_us: u32, inflight: u32, app_limited: bool) -> bool {
        let prior = self.delivered;
        self.now_ns += u64::from(rtt_us) * 1000;
        self.delivered += bytes;
        let a = Ack {
            now_ns: self.now_ns,
            acked_sacked: bytes,
            sample: Some(RateSample {
                delivered: bytes,
                interval_us: rtt_us,
                rtt_us,
                prior_delivered: prior,
                app_limited,
            }),
            delivered: self.delivered,
            delivered_us: us(self.now_ns),
            prior_inflight: inflight + bytes,
            inflight,
            state: self.state,
            lost: false,
            mss: MSS,
            srtt_us: rtt_us,
            next_send_ns: self.now_ns,
            seed: SEED,
        };
        self.b.on_ack(&a, &mut self.cwnd, true)
    }

    /// A round on a path that delivers at most `cap` bytes per round trip: the window's
    /// worth, or the cap.
    fn round(&mut self, cap: u32) {
        let bytes = self.cwnd.min(cap);
        self.ack(bytes, RTT_US, 0, false);
    }

    /// An ACK without a sample (delivering `bytes`).
    fn plain_ack(&mut self, bytes: u32, inflight: u32) {
        self.now_ns += 10_000;
        self.delivered += bytes;
        let a = Ack {
            now_ns: self.now_ns,
            acked_sacked: bytes,
            sample: None,
            delivered: self.delivered,
            delivered_us: us(self.now_ns),
            prior_inflight: inflight + bytes,
            inflight,
            state: self.state,
            lost: false,
            mss: MSS,
            srtt_us: RTT_US,
            next_send_ns: self.now_ns,
            seed: SEED,
        };
        self.b.on_ack(&a, &mut self.cwnd, true);
    }

    /// Runs rounds at `cap` until PROBE_BW (at most 30).
    fn enter_probe_bw(&mut self, cap: u32) {
        for _ in 0..30 {
            if self.b.mode() == Mode::ProbeBw {
                return;
            }
            self.round(cap);
        }
        panic!("no PROBE_BW: {:?}", self.b);
    }
}

/// bytes per µs as bw units.
fn bw(bytes: u32, per_us: u32) -> u32 {
    ((u64::from(bytes) << BW_SHIFT) / u64::from(per_us)) as u32
}

#[test]
fn the_max_filter_keeps_the_best_of_its_window() {
    let mut f = MaxFilter::default();
    assert_eq!(f.update(10, 1, 100), 100);
    assert_eq!(f.update(10, 2, 50), 100);
    assert_eq!(f.update(10, 5, 70), 100);
    assert_eq!(
        f.update(10, 11, 60),
        100,
        "round 1 is still within 10 rounds"
    );
    // Past the window the best ages out; the second best (70 at round 5) takes over.
    assert_eq!(f.update(10, 12, 40), 70);
    assert_eq!(f.update(10, 30, 10), 10, "all expired");
    assert_eq!(f.update(10, 31, 500), 500, "a new max resets");
}

#[test]
fn gains_are_linuxs() {
    assert_eq!(HIGH_GAIN, 739, "2/ln 2 in 1/256, rounded up");
    assert_eq!(DRAIN_GAIN, 88);
    assert_eq!(CWND_GAIN, 512);
    assert_eq!(PACING_GAINS, [320, 192, 256, 256, 256, 256, 256, 256]);
}

#[test]
fn the_first_pacing_rate_is_high_gain_times_the_window_over_the_srtt() {
    let mut b = Bbr::new();
    b.init(10_000, 1000, None, 0);
    // 10 000 bytes / 1000 µs = 10 B/µs, × 2.885, less 1%: ≈ 28.6 MB/s.
    let bps = Bbr::bytes_per_sec(b.pacing_rate());
    assert!((28_400_000..28_700_000).contains(&bps), "{bps}");
    assert_eq!(b.min_rtt_us(), u32::MAX, "no µs sample given");
    // Without an SRTT: per 1 ms.
    let mut b = Bbr::new();
    b.init(10_000, 0, None, 0);
    assert_eq!(Bbr::bytes_per_sec(b.pacing_rate()), bps);
    // The handshake's timed sample is the first min RTT.
    let mut b = Bbr::new();
    b.init(10_000, 700, Some(700), 0);
    assert_eq!(b.min_rtt_us(), 700);
}

#[test]
fn the_tso_goal_is_about_a_millisecond_at_the_pacing_rate() {
    let mut b = Bbr::new();
    // 100 MB/s: 1 ms is 100 kB, more than a 64 KiB frame holds.
    b.pacing_rate = bw(100, 1);
    assert_eq!(b.tso_goal(1448), 45 * 1448);
    // 10 MB/s: about 9.5 kB (1/1024 s): 6 segments.
    b.pacing_rate = bw(10, 1);
    assert_eq!(b.tso_goal(1448), 6 * 1448);
    // Slow: two segments (1 MB/s), or one below 1.2 Mbit/s.
    b.pacing_rate = bw(1, 1);
    assert_eq!(b.tso_goal(1448), 2 * 1448);
    b.pacing_rate = bw(1, 10_000);
    assert_eq!(b.tso_goal(1448), 1448);
}

#[test]
fn startup_doubles_the_window_each_round() {
    let mut f = Flow::new();
    assert_eq!(f.b.mode(), Mode::Startup);
    let mut last = f.cwnd;
    for _ in 0..5 {
        f.round(u32::MAX);
        // cwnd + acked: twice the window each round, while bandwidth keeps growing.
        assert_eq!(f.cwnd, 2 * last);
        assert_eq!(f.b.mode(), Mode::Startup);
        last = f.cwnd;
    }
    // The pacing rate follows the bandwidth at the high gain (less 1%).
    let want = Bbr::rate(f.b.max_bw(), HIGH_GAIN);
    assert_eq!(f.b.pacing_rate(), want);
    assert_eq!(f.b.max_bw(), bw(last / 2, RTT_US));
    assert_eq!(f.b.rounds(), 5);
}

#[test]
fn three_rounds_without_growth_fill_the_pipe_then_drain_then_probe_bw() {
    let mut f = Flow::new();
    let cap = 40 * MSS; // the path delivers 40 kB per ms
    for _ in 0..3 {
        f.round(cap); // 10, 20, 40 kB: growing by a quarter or more each round
    }
    assert!(!f.b.full_bw_reached());
    // Then three rounds without.
    for i in 0..2 {
        f.round(cap);
        assert!(!f.b.full_bw_reached(), "round {i}");
    }
    // The third, with STARTUP's queue in flight (far above a BDP and the quantization
    // budget of three 64 KiB frames): DRAIN, pacing below the bandwidth.
    let inflight = 10 * cap;
    f.ack(cap, RTT_US, inflight, false);
    assert!(f.b.full_bw_reached());
    assert_eq!(f.b.mode(), Mode::Drain);
    f.ack(cap, RTT_US, inflight, false);
    assert_eq!(f.b.mode(), Mode::Drain);
    assert_eq!(f.b.pacing_gain(), DRAIN_GAIN);
    assert_eq!(f.b.pacing_rate(), Bbr::rate(bw(cap, RTT_US), DRAIN_GAIN));
    // Once the flight is down to the BDP (plus its budget): PROBE_BW.
    f.ack(cap, RTT_US, cap, false);
    assert_eq!(f.b.mode(), Mode::ProbeBw);
    assert_eq!(f.b.cwnd_gain(), CWND_GAIN);
    // With the pipe full the window snaps to 2·BDP plus the quantization budget.
    f.ack(cap, RTT_US, cap, false);
    // 2·BDP, three TSO goals, rounded up to an even number of segments (two more in the
    // probing phase).
    let target = 2 * cap + 3 * f.b.tso_goal(MSS);
    let mut target = target.div_ceil(2 * MSS) * 2 * MSS;
    if f.b.cycle_idx() == 0 {
        target += 2 * MSS;
    }
    assert_eq!(f.cwnd, target);
}

#[test]
fn app_limited_samples_do_not_fill_the_pipe_or_lower_the_estimate() {
    let mut f = Flow::new();
    f.round(u32::MAX);
    let best = f.b.max_bw();
    // Rounds of little data, app-limited: no growth, but they do not count as a full pipe
    // and do not lower the max.
    for _ in 0..6 {
        f.ack(MSS, RTT_US, 0, true);
    }
    assert!(!f.b.full_bw_reached());
    assert_eq!(f.b.max_bw(), best);
    // An app-limited sample above the max is taken.
    f.ack(100 * MSS, RTT_US, 0, true);
    assert_eq!(f.b.max_bw(), bw(100 * MSS, RTT_US));
}

#[test]
fn probe_bw_cycles_its_gains_from_a_keyed_random_phase() {
    let mut f = Flow::new();
    let cap = 40 * MSS;
    f.enter_probe_bw(cap);
    // The starting phase: never the draining 0.75 one.
    let start = f.b.cycle_idx();
    assert_ne!(start, 1);
    let mut seen = std::vec![start];
    // Each round lasts a min RTT and a bit, at the cap, the flight a BDP: phases of gain
    // 1 end on time, 1.25 once the flight reaches 1.25·BDP, 0.75 on time too.
    for _ in 0..16 {
        let gain = f.b.pacing_gain();
        let inflight = if gain > GAIN_UNIT {
            f.b.inflight(f.b.max_bw(), gain, MSS)
        } else {
            cap
        };
        f.ack(cap, RTT_US + 1, inflight, false);
        seen.push(f.b.cycle_idx());
    }
    for w in seen.windows(2) {
        assert_eq!(w[1], (w[0] + 1) % CYCLE_LEN, "{seen:?}");
    }
    assert_eq!(f.b.mode(), Mode::ProbeBw);
    // Other seeds start elsewhere: the phase comes from the seed.
    let starts: std::collections::BTreeSet<usize> = (0..64u32)
        .map(|seed| {
            let mut b = Bbr::new();
            b.reset_probe_bw_mode(seed.wrapping_mul(0x0101_0101), 0);
            b.cycle_idx()
        })
        .collect();
    assert_eq!(starts.len(), 7, "{starts:?}");
    assert!(!starts.contains(&1));
}

#[test]
fn probe_rtt_after_ten_seconds_without_a_lower_rtt() {
    let mut f = Flow::new();
    let cap = 40 * MSS;
    f.enter_probe_bw(cap);
    // Rounds at the same RTT (not lower): the minimum is not renewed...
    while f.now_ns < 10 * 1000 * MS {
        f.ack(cap, RTT_US + 1, cap, false);
        assert_eq!(f.b.mode(), Mode::ProbeBw);
    }
    // ...and once it is 10 s old: PROBE_RTT, four segments, the connection app-limited.
    let cwnd = f.cwnd;
    f.now_ns += 5 * MS;
    let app_limited = f.ack(cap, RTT_US + 1, cap, false);
    assert_eq!(f.b.mode(), Mode::ProbeRtt);
    assert!(app_limited);
    assert_eq!(f.cwnd, CWND_MIN_SEGMENTS * MSS);
    assert_eq!(f.b.prior_cwnd(), cwnd);
    // The flight falls to four segments: 200 ms and a round from then. Its samples are
    // app-limited (the connection was marked): they do not lower the estimate.
    f.ack(MSS, RTT_US + 1, 4 * MSS, true);
    assert_eq!(f.b.mode(), Mode::ProbeRtt);
    let start = f.now_ns;
    for _ in 0..199 {
        f.ack(4 * MSS, RTT_US + 1, 4 * MSS, true);
        assert_eq!(
            f.b.mode(),
            Mode::ProbeRtt,
            "at {} µs",
            (f.now_ns - start) / 1000
        );
        assert_eq!(f.cwnd, 4 * MSS);
    }
    f.now_ns += MS;
    f.ack(4 * MSS, RTT_US + 1, 4 * MSS, true);
    assert_eq!(
        f.b.mode(),
        Mode::ProbeBw,
        "the pipe was full: back to PROBE_BW"
    );
    // The window saved before comes back, snapped to the target of the new phase (the
    // saved one was taken in the probing phase, whose target is larger).
    assert!(cwnd > 4 * MSS);
    assert_eq!(f.cwnd, f.b.inflight(f.b.max_bw(), CWND_GAIN, MSS));
    assert!(f.cwnd > cwnd / 2, "{} {cwnd}", f.cwnd);
    assert_eq!(f.b.min_rtt_stamp_ms, ms(f.now_ns));
}

#[test]
fn a_lower_rtt_renews_the_minimum() {
    let mut f = Flow::new();
    f.round(u32::MAX);
    assert_eq!(f.b.min_rtt_us(), RTT_US);
    f.ack(MSS, 600, 0, false);
    assert_eq!(f.b.min_rtt_us(), 600);
    f.ack(MSS, 900, 0, false);
    assert_eq!(f.b.min_rtt_us(), 600);
}

#[test]
fn recovery_conserves_packets_for_a_round_then_restores_the_window() {
    let mut f = Flow::new();
    let cap = 40 * MSS;
    f.enter_probe_bw(cap);
    f.ack(cap, RTT_US, cap, false);
    let before = f.cwnd;
    // A loss: the connection saves the window and enters recovery.
    f.b.save_cwnd(f.cwnd);
    f.state = CaState::Recovery;
    // First ACK in recovery: the window is what is in flight plus what it delivered.
    f.plain_ack(2 * MSS, 20 * MSS);
    assert!(f.b.packet_conservation());
    assert_eq!(f.cwnd, 22 * MSS);
    // Later ACKs of that round: never below the flight plus what arrived.
    f.plain_ack(MSS, 25 * MSS);
    assert_eq!(f.cwnd, 26 * MSS);
    // A sample of data sent after recovery began ends the round: conservation is over,
    // and the window grows back by what is delivered, up to its target.
    f.ack(3 * MSS, RTT_US, 20 * MSS, false);
    assert!(!f.b.packet_conservation());
    assert_eq!(f.cwnd, 29 * MSS);
    // Recovery ends: the window saved before comes back.
    f.state = CaState::Open;
    f.plain_ack(MSS, 20 * MSS);
    assert_eq!(f.cwnd, before);
}

#[test]
fn a_loss_does_not_shrink_the_model() {
    let mut c = Congestion::new(MSS, 0, Algorithm::Bbr);
    c.cwnd = 50 * MSS;
    assert!(c.enter_recovery(0, 40 * MSS, 40 * MSS, MSS, true));
    assert_eq!(c.cwnd, 50 * MSS, "the ACK's model update sets it, not a β");
    assert_eq!(c.ssthresh, u32::MAX);
    assert_eq!(c.bbr().unwrap().prior_cwnd(), 50 * MSS);
    assert_eq!(c.ca_state(), CaState::Recovery);
    // A full ACK ends recovery without touching the window (the model update restores).
    c.on_new_ack(40 * MSS, 40 * MSS, 0, MSS, true, 0, 1000);
    assert!(!c.in_recovery);
    assert_eq!(c.cwnd, 50 * MSS);
    // Without SACK: packet conservation NewReno's way, the flight plus two segments.
    let mut c = Congestion::new(MSS, 0, Algorithm::Bbr);
    c.cwnd = 50 * MSS;
    assert!(c.enter_recovery(0, 40 * MSS, 40 * MSS, MSS, false));
    assert_eq!(c.cwnd, 42 * MSS);
}

#[test]
fn a_timeout_cuts_to_one_segment_and_the_window_grows_back() {
    let mut c = Congestion::new(MSS, 0, Algorithm::Bbr);
    c.on_established(RTT_US, Some(RTT_US), 0);
    c.cwnd = 30 * MSS;
    c.on_timeout(20 * MSS, 20 * MSS, MSS);
    assert_eq!(c.cwnd, MSS);
    assert_eq!(c.ca_state(), CaState::Loss);
    let b = *c.bbr().unwrap();
    assert_eq!(b.prior_cwnd(), 30 * MSS);
    assert_eq!(b.full_bw, 0, "STARTUP's full-pipe count starts again");
    // In the Loss state the window grows by what is delivered (at least four segments).
    let ack = |c: &mut Congestion, ackno: u32, delivered: u32, now_ns: u64| {
        c.on_new_ack(MSS, ackno, 0, MSS, true, now_ns, RTT_US);
        let a = Ack {
            now_ns,
            acked_sacked: MSS,
            sample: None,
            delivered,
            delivered_us: us(now_ns),
            prior_inflight: MSS,
            inflight: 0,
            state: c.ca_state(),
            lost: false,
            mss: MSS,
            srtt_us: RTT_US,
            next_send_ns: now_ns,
            seed: SEED,
        };
        c.on_ack(&a, true);
    };
    ack(&mut c, MSS, MSS, MS);
    assert_eq!(c.cwnd, 4 * MSS);
    ack(&mut c, 2 * MSS, 2 * MSS, 2 * MS);
    assert_eq!(c.cwnd, 5 * MSS);
    // The ACK that reaches what was outstanding at the timeout ends it: the window saved
    // before the timeout comes back.
    ack(&mut c, 20 * MSS, 3 * MSS, 3 * MS);
    assert_eq!(c.ca_state(), CaState::Open);
    assert_eq!(
        c.cwnd,
        31 * MSS,
        "restored, plus what the ACK delivered (below its target, the window grows)"
    );
}

#[test]
fn a_restart_after_idle_paces_at_the_estimate_in_probe_bw() {
    let mut f = Flow::new();
    let cap = 40 * MSS;
    f.enter_probe_bw(cap);
    // Force the probing phase (gain 1.25): its rate is above the estimate.
    f.b.cycle_idx = 0;
    f.b.set_pacing_rate(f.b.max_bw(), f.b.pacing_gain(), RTT_US, f.cwnd);
    assert_eq!(f.b.pacing_rate(), Bbr::rate(f.b.max_bw(), PACING_GAINS[0]));
    let mut cwnd = f.cwnd;
    f.b.on_restart(&mut cwnd, f.now_ns + 100 * MS, SEED, us(f.now_ns));
    assert_eq!(f.b.pacing_rate(), Bbr::rate(f.b.max_bw(), GAIN_UNIT));
    assert!(f.b.idle_restart);
}
