//! The UDP load generator's core (the UDP paper §4.2.3, "client's send control flow"): when
//! requests start, a slot per request in progress with its [`Transfer`], and what is
//! counted — shared by `bareweb load --udp` over sockets (crates/loadgen) and the bare
//! client over the engine's own frames (`udp::bare`, on a TAP or as a kernel). No I/O and
//! no clock here; nothing allocates after [`Load::new`].
//!
//! The paper's client sends `maxreq` requests every `frequency` units of 1/4 ms (9 and 8:
//! 3,555 requests per second); a plain rate is the same with requests spread evenly. A
//! request that is due while every slot is busy is counted as skipped, not queued, so the
//! offered load is the schedule's and the client never falls behind unboundedly.

use alloc::vec::Vec;

use super::fetch::{Failure, Sink, Step, Timing, Transfer};
use super::wire::{Start, TOKEN_LEN};

/// When requests start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schedule {
    /// The paper's: `maxreq` requests every `frequency` quarter-milliseconds.
    Paper {
        /// Period in units of 1/4 ms.
        frequency: u32,
        /// Requests per period.
        maxreq: u32,
    },
    /// One request every `interval_ns` (a plain rate).
    Interval {
        /// Nanoseconds between two requests.
        interval_ns: u64,
    },
    /// Closed loop: a new request as soon as a slot is free (every slot always busy): how
    /// many requests per second the server completes at this concurrency.
    Closed,
}

impl Schedule {
    /// Requests per second this schedule offers.
    pub fn rate(&self) -> f64 {
        match *self {
            Schedule::Paper { frequency, maxreq } => {
                f64::from(maxreq) * 4000.0 / f64::from(frequency.max(1))
            }
            Schedule::Interval { interval_ns } => 1e9 / interval_ns.max(1) as f64,
            Schedule::Closed => f64::INFINITY,
        }
    }
}

/// The run's bounds and the transfers' timing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// When requests start.
    pub schedule: Schedule,
    /// Most requests in progress at once (slots).
    pub slots: usize,
    /// Most requests to start.
    pub requests: u64,
    /// Timeouts and tries of each transfer.
    pub timing: Timing,
}

/// Buckets of the processing-time histogram: below 1 µs, then powers of two to ~8.6 s.
pub const TIME_BUCKETS: usize = 24;

/// What a run counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Requests started.
    pub started: u64,
    /// Requests completed (every packet arrived, size checked by the state machine).
    pub completed: u64,
    /// Of them, answered with a non-2xx HTTP status (counted by the caller's sink).
    pub failed_status: u64,
    /// Requests that gave up after their timeouts.
    pub failed_timeout: u64,
    /// Requests the server refused with an Error packet.
    pub failed_refused: u64,
    /// Requests that failed otherwise (inconsistent answers, too large).
    pub failed_other: u64,
    /// Requests due while every slot was busy (not started).
    pub skipped: u64,
    /// Body octets received (each once).
    pub bytes: u64,
    /// Packets received and used.
    pub packets: u64,
    /// Packets that were already there.
    pub duplicates: u64,
    /// Packets asked for again because they had not come (lost).
    pub rerequested: u64,
    /// GETs sent (initial, subsequent, resent).
    pub gets: u64,
    /// Timeouts.
    pub timeouts: u64,
    /// Answers cut short by the server's amplification bound.
    pub bounded: u64,
    /// Datagrams refused by the state machine.
    pub bad: u64,
    /// Most requests in progress at once.
    pub max_parallel: u64,
    /// Sum of completed requests' processing times (first GET to last packet).
    pub time_sum_ns: u64,
    /// Longest processing time.
    pub time_max_ns: u64,
    /// Processing times: bucket 0 below 1 µs, bucket `i` in [2^(i-1), 2^i) µs.
    pub time_hist: [u64; TIME_BUCKETS],
}

impl Counters {
    /// The processing time below which `per_mille`/1000 of completed requests fall,
    /// approximated by the top of its histogram bucket (ns).
    pub fn time_quantile_ns(&self, per_mille: u64) -> u64 {
        let total: u64 = self.time_hist.iter().sum();
        if total == 0 {
            return 0;
        }
        let want = (total * per_mille).div_ceil(1000).max(1);
        let mut seen = 0;
        for (i, n) in self.time_hist.iter().enumerate() {
            seen += n;
            if seen >= want {
                let top = if i == 0 { 1_000 } else { (1u64 << i) * 1_000 };
                return top.min(self.time_max_ns);
            }
        }
        self.time_max_ns
    }
}

/// A request in progress.
#[derive(Debug, Clone)]
pub struct Slot {
    /// Its transfer.
    pub transfer: Transfer,
    /// Which URL (an index into the caller's list).
    pub url: u32,
    /// When its first GET was sent.
    pub started_ns: u64,
    /// Whether the slot holds a request.
    pub busy: bool,
}

/// What became of a request at an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Still going: send this GET, or nothing.
    Going(Option<Start>),
    /// Finished (the slot is free again): true when every packet arrived.
    Finished(bool),
}

/// The generator.
pub struct Load {
    cfg: Config,
    slots: Vec<Slot>,
    free: Vec<u32>,
    token: Option<[u8; TOKEN_LEN]>,
    /// When the next period (or the next request) is due.
    next_ns: u64,
    start_ns: u64,
    periods: u64,
    busy: usize,
    next_url: u32,
    urls: u32,
    /// What was counted.
    pub counters: Counters,
}

impl Load {
    /// A generator for `urls` URLs (chosen round robin), starting at `now`.
    pub fn new(cfg: Config, urls: usize, now: u64) -> Load {
        let n = cfg.slots.max(1);
        let idle = Slot {
            transfer: Transfer::new(cfg.timing, None),
            url: 0,
            started_ns: 0,
            busy: false,
        };
        Load {
            slots: alloc::vec![idle; n],
            free: (0..n as u32).rev().collect(),
            token: None,
            next_ns: now,
            start_ns: now,
            periods: 0,
            busy: 0,
            next_url: 0,
            urls: urls.max(1) as u32,
            cfg,
            counters: Counters::default(),
        }
    }

    /// The slot `i` (its transfer's token, its URL).
    pub fn slot(&self, i: u32) -> &Slot {
        &self.slots[i as usize]
    }

    /// Requests in progress.
    pub fn busy(&self) -> usize {
        self.busy
    }

    /// Whether every request has been started and has finished.
    pub fn finished(&self) -> bool {
        self.counters.started + self.counters.skipped >= self.cfg.requests && self.busy == 0
    }

    /// Starts no more requests (the run's time is up); those in progress go on.
    pub fn stop_starting(&mut self) {
        self.cfg.requests = self.counters.started + self.counters.skipped;
    }

    /// The token to use in GETs (the newest any transfer learned).
    pub fn token(&self) -> Option<&[u8; TOKEN_LEN]> {
        self.token.as_ref()
    }

    /// Requests due at `now` by the schedule (bounded by what remains to start); the
    /// caller starts each with [`Load::start`] (or counts it skipped there).
    pub fn due(&mut self, now: u64) -> u64 {
        let left = self
            .cfg
            .requests
            .saturating_sub(self.counters.started + self.counters.skipped);
        if self.cfg.schedule == Schedule::Closed {
            return (self.free.len() as u64).min(left);
        }
        let mut due = 0u64;
        while now >= self.next_ns && due < left {
            match self.cfg.schedule {
                Schedule::Paper { frequency, maxreq } => {
                    due += u64::from(maxreq);
                    self.periods += 1;
                    self.next_ns =
                        self.start_ns + self.periods * u64::from(frequency.max(1)) * 250_000;
                }
                Schedule::Interval { interval_ns } => {
                    due += 1;
                    self.periods += 1;
                    self.next_ns = self.start_ns + self.periods * interval_ns.max(1);
                }
                Schedule::Closed => break,
            }
        }
        due.min(left)
    }

    /// When the schedule next starts requests.
    pub fn next_due(&self) -> u64 {
        if self.counters.started + self.counters.skipped >= self.cfg.requests {
            u64::MAX
        } else if self.cfg.schedule == Schedule::Closed {
            if self.free.is_empty() {
                u64::MAX
            } else {
                0
            }
        } else {
            self.next_ns
        }
    }

    /// Starts a request at `now` in a free slot: returns the slot and its initial GET, or
    /// `None` (counted as skipped) when every slot is busy.
    pub fn start(&mut self, now: u64) -> Option<(u32, Start)> {
        let Some(i) = self.free.pop() else {
            self.counters.skipped += 1;
            return None;
        };
        let url = self.next_url;
        self.next_url = (self.next_url + 1) % self.urls;
        let s = &mut self.slots[i as usize];
        *s = Slot {
            transfer: Transfer::new(self.cfg.timing, self.token),
            url,
            started_ns: now,
            busy: true,
        };
        let step = s.transfer.begin(now);
        self.busy += 1;
        self.counters.started += 1;
        self.counters.max_parallel = self.counters.max_parallel.max(self.busy as u64);
        match step {
            Step::Send(start) => Some((i, start)),
            _ => Some((i, Start::Initial)),
        }
    }

    /// A datagram for slot `i` arrived.
    pub fn on_packet(&mut self, i: u32, bytes: &[u8], now: u64, sink: &mut impl Sink) -> Outcome {
        let Some(s) = self.slots.get_mut(i as usize).filter(|s| s.busy) else {
            self.counters.bad += 1; // late: the request is over
            return Outcome::Finished(false);
        };
        let step = s.transfer.on_packet(bytes, now, sink);
        if let Some(t) = s.transfer.token() {
            self.token = Some(*t);
        }
        self.apply(i, step, now)
    }

    /// Gives busy slots whose deadline passed their timeout; `then(slot, outcome)` is
    /// called for each: a GET to send again, or the request given up (its slot is free).
    /// When `then` returns false no more slots are taken this call (a caller with a fixed
    /// buffer calls again).
    pub fn on_timeouts(&mut self, now: u64, mut then: impl FnMut(u32, Outcome) -> bool) {
        if self.next_deadline() > now {
            return;
        }
        for i in 0..self.slots.len() as u32 {
            let s = &mut self.slots[i as usize];
            if !s.busy || now < s.transfer.deadline() {
                continue;
            }
            let step = s.transfer.on_timeout(now);
            let more = match self.apply(i, step, now) {
                Outcome::Going(None) => true,
                o => then(i, o),
            };
            if !more {
                return;
            }
        }
    }

    /// The earliest deadline of any busy slot.
    pub fn next_deadline(&self) -> u64 {
        self.slots
            .iter()
            .filter(|s| s.busy)
            .map(|s| s.transfer.deadline())
            .min()
            .unwrap_or(u64::MAX)
    }

    fn apply(&mut self, i: u32, step: Step, now: u64) -> Outcome {
        match step {
            Step::Wait => Outcome::Going(None),
            Step::Send(start) => Outcome::Going(Some(start)),
            Step::Done => {
                let t = now.saturating_sub(self.slots[i as usize].started_ns);
                let c = &mut self.counters;
                c.completed += 1;
                c.time_sum_ns += t;
                c.time_max_ns = c.time_max_ns.max(t);
                let us = t / 1000;
                let b = (64 - us.leading_zeros() as usize).min(TIME_BUCKETS - 1);
                c.time_hist[b] += 1;
                self.release(i);
                Outcome::Finished(true)
            }
            Step::Failed(f) => {
                let c = &mut self.counters;
                match f {
                    Failure::Timeout => c.failed_timeout += 1,
                    Failure::Refused(_) | Failure::RefusedUnknown(_) => c.failed_refused += 1,
                    Failure::Inconsistent | Failure::TooLarge => c.failed_other += 1,
                }
                self.release(i);
                Outcome::Finished(false)
            }
        }
    }

    fn release(&mut self, i: u32) {
        let s = &mut self.slots[i as usize];
        if !s.busy {
            return;
        }
        s.busy = false;
        let k = s.transfer.counts;
        let c = &mut self.counters;
        c.packets += u64::from(k.packets);
        c.duplicates += u64::from(k.duplicates);
        c.rerequested += u64::from(k.rerequested);
        c.gets += u64::from(k.gets);
        c.timeouts += u64::from(k.timeouts);
        c.bounded += u64::from(k.bounded);
        c.bad += u64::from(k.bad);
        if let Some(m) = s.transfer.meta() {
            if s.transfer.is_done() {
                c.bytes += u64::from(m.total);
            }
        }
        self.busy -= 1;
        self.free.push(i);
    }

    /// Counts a completed request whose HTTP status was not 2xx (the caller reads heads).
    pub fn count_bad_status(&mut self) {
        self.counters.failed_status += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Null;
    impl Sink for Null {
        fn begin(&mut self, _: u64) -> bool {
            true
        }
        fn head(&mut self, _: &[u8]) {}
        fn data(&mut self, _: u64, _: &[u8]) {}
    }

    fn cfg(schedule: Schedule, slots: usize, requests: u64) -> Config {
        Config {
            schedule,
            slots,
            requests,
            timing: Timing::default(),
        }
    }

    #[test]
    fn the_papers_schedule() {
        // 8 requests every 9 quarter-milliseconds: 3,555 per second.
        let s = Schedule::Paper {
            frequency: 9,
            maxreq: 8,
        };
        assert_eq!(s.rate() as u64, 3555);
        let mut l = Load::new(cfg(s, 100, 1000), 1, 0);
        assert_eq!(l.due(0), 8);
        assert_eq!(l.due(2_249_999), 0);
        assert_eq!(l.due(2_250_000), 8);
        // Late by several periods: all are due at once (the schedule does not drift).
        assert_eq!(l.due(7 * 2_250_000), 48, "periods 2 to 7");
        let mut r = Load::new(cfg(Schedule::Interval { interval_ns: 1000 }, 10, 5), 1, 0);
        assert_eq!(r.due(10_000), 5, "bounded by the requests left");
        for _ in 0..5 {
            r.start(10_000).unwrap();
        }
        assert_eq!(r.next_due(), u64::MAX, "all started");
    }

    #[test]
    fn closed_loop_fills_the_slots() {
        let mut l = Load::new(cfg(Schedule::Closed, 3, 100), 1, 0);
        assert_eq!(l.due(0), 3);
        for _ in 0..3 {
            l.start(0).unwrap();
        }
        assert_eq!((l.due(5), l.next_due()), (0, u64::MAX));
    }

    #[test]
    fn slots_are_bounded_and_reused() {
        let mut l = Load::new(cfg(Schedule::Interval { interval_ns: 1 }, 2, 10), 3, 0);
        let (a, ga) = l.start(0).unwrap();
        let (b, _) = l.start(0).unwrap();
        assert_eq!(ga, Start::Initial);
        assert!(l.start(0).is_none());
        assert_eq!(l.counters.skipped, 1);
        assert_eq!(l.counters.max_parallel, 2);
        assert_eq!((l.slot(a).url, l.slot(b).url), (0, 1));
        // An Error packet ends slot a: it is free again.
        let mut e = [0u8; 16];
        crate::udp::wire::Header {
            state: crate::udp::wire::State::Error,
            version: 1,
            request_id: 1,
            core: 0,
            flags: 0,
            unit: crate::udp::wire::UNIT as u16,
            a: 2,
            b: 0,
        }
        .emit(&mut e);
        assert_eq!(l.on_packet(a, &e, 5, &mut Null), Outcome::Finished(false));
        assert_eq!(l.counters.failed_refused, 1);
        assert_eq!(l.busy(), 1);
        let (c, _) = l.start(6).unwrap();
        assert_eq!(c, a);
        assert_eq!(l.slot(c).url, 2);
        // Late packets for a free slot are counted, not applied.
        l.on_packet(a, &e, 7, &mut Null);
        l.on_packet(a, &e, 7, &mut Null);
        assert_eq!(l.counters.failed_refused, 2);
    }

    #[test]
    fn timeouts_resend_then_fail_and_free_the_slot() {
        let timing = Timing {
            rto_ns: 10,
            rto_max_ns: 10,
            tries: 2,
        };
        let mut l = Load::new(
            Config {
                timing,
                ..cfg(Schedule::Interval { interval_ns: 1 }, 1, 1)
            },
            1,
            0,
        );
        l.start(0).unwrap();
        let mut seen = Vec::new();
        for t in [10, 20, 30] {
            l.on_timeouts(t, |_, o| {
                seen.push(o);
                true
            });
        }
        assert_eq!(
            seen,
            [
                Outcome::Going(Some(Start::Initial)),
                Outcome::Going(Some(Start::Initial)),
                Outcome::Finished(false)
            ]
        );
        assert_eq!(l.counters.failed_timeout, 1);
        assert!(l.finished());
        assert_eq!(l.counters.gets, 3);
        assert_eq!(l.next_deadline(), u64::MAX);
    }

    #[test]
    fn quantiles_from_the_histogram() {
        let mut c = Counters {
            time_max_ns: 1_000_000_000,
            ..Counters::default()
        };
        c.time_hist[3] = 90; // [4, 8) µs
        c.time_hist[10] = 10; // [512, 1024) µs
        assert_eq!(c.time_quantile_ns(500), 8_000);
        assert_eq!(c.time_quantile_ns(990), 1_024_000);
        c.time_max_ns = 600_000;
        assert_eq!(c.time_quantile_ns(990), 600_000, "never above the maximum");
    }
}
