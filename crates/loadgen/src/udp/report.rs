//! What `bareweb load --udp` reports (the paper's figures 8–12 at the client): completed
//! requests per second, lost and re-requested packets, max parallel requests, average and
//! maximum processing time at the client, and what went wrong, as text or JSON.

use std::fmt::Write as _;

use bareweb_engine::udp::load::{Counters, Schedule};
use serde::{Deserialize, Serialize};

use super::load::UdpLoadConfig;

/// A UDP load run's report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UdpReport {
    /// Which client: `socket` (ordinary UDP sockets) or `bare` (the engine's own frames).
    pub client: String,
    /// The schedule, in words.
    pub schedule: String,
    /// Requests per second the schedule offered (null: closed loop).
    pub offered_per_sec: Option<f64>,
    /// Wall time of the run.
    pub elapsed_secs: f64,
    /// Requests started.
    pub started: u64,
    /// Requests completed with a 2xx status (and the right bytes, when verified).
    pub completed: u64,
    /// Completed requests per second.
    pub completed_per_sec: f64,
    /// Body octets per second.
    pub bytes_per_sec: f64,
    /// Body octets.
    pub bytes: u64,
    /// Requests due while every slot was busy (not started: the client's limit).
    pub skipped: u64,
    /// Most requests in progress at once at the client.
    pub max_parallel: u64,
    /// GETs sent: initial, subsequent and resent.
    pub gets: u64,
    /// Of them, beyond each request's initial GET.
    pub subsequent_gets: u64,
    /// Packets received and used.
    pub packets: u64,
    /// Packets lost (or late) and asked for again.
    pub lost_rerequested: u64,
    /// Duplicate packets.
    pub duplicates: u64,
    /// Timeouts (a GET sent again).
    pub timeouts: u64,
    /// Answers cut short by the server's amplification bound.
    pub bounded: u64,
    /// Datagrams refused by the client (bad header, late, never asked for).
    pub bad_datagrams: u64,
    /// Processing time at the client, first GET to last packet: mean, p50, p99, max (ms).
    pub time_mean_ms: f64,
    /// Median (top of its histogram bucket).
    pub time_p50_ms: f64,
    /// 99th percentile (top of its histogram bucket).
    pub time_p99_ms: f64,
    /// Longest.
    pub time_max_ms: f64,
    /// Failures by kind.
    pub failed_timeout: u64,
    /// Refused with an Error packet.
    pub failed_refused: u64,
    /// Inconsistent answers, too large.
    pub failed_other: u64,
    /// Completed with a non-2xx status.
    pub bad_status: u64,
    /// Completed with bytes that differ from the file (`--verify`).
    pub verify_errors: u64,
    /// Sockets that could not be opened.
    pub socket_errors: u64,
    /// CPU seconds of the client's thread.
    pub client_cpu_secs: f64,
}

fn describe(s: &Schedule, slots: usize) -> (String, Option<f64>) {
    match *s {
        Schedule::Paper { frequency, maxreq } => (
            format!(
                "paper: {maxreq} requests every {frequency}/4 ms ({:.0}/s), at most {slots} in progress",
                s.rate()
            ),
            Some(s.rate()),
        ),
        Schedule::Interval { .. } => (
            format!("rate {:.0}/s, at most {slots} in progress", s.rate()),
            Some(s.rate()),
        ),
        Schedule::Closed => (format!("closed loop: {slots} requests in progress"), None),
    }
}

impl UdpReport {
    /// The report of a socket run.
    pub fn new(
        cfg: &UdpLoadConfig,
        c: &Counters,
        elapsed: f64,
        cpu: f64,
        verify_errors: u64,
        socket_errors: u64,
    ) -> UdpReport {
        let mut r =
            UdpReport::from_counters("socket", &cfg.load.schedule, cfg.load.slots, c, elapsed);
        r.verify_errors = verify_errors;
        r.completed = r.completed.saturating_sub(verify_errors);
        r.socket_errors = socket_errors;
        r.client_cpu_secs = cpu;
        r.completed_per_sec = r.completed as f64 / elapsed.max(1e-9);
        r
    }

    /// The report of any client's counters.
    pub fn from_counters(
        client: &str,
        schedule: &Schedule,
        slots: usize,
        c: &Counters,
        elapsed: f64,
    ) -> UdpReport {
        let (schedule, offered) = describe(schedule, slots);
        let ms = |ns: u64| ns as f64 / 1e6;
        let completed = c.completed.saturating_sub(c.failed_status);
        UdpReport {
            client: client.into(),
            schedule,
            offered_per_sec: offered,
            elapsed_secs: elapsed,
            started: c.started,
            completed,
            completed_per_sec: completed as f64 / elapsed.max(1e-9),
            bytes_per_sec: c.bytes as f64 / elapsed.max(1e-9),
            bytes: c.bytes,
            skipped: c.skipped,
            max_parallel: c.max_parallel,
            gets: c.gets,
            subsequent_gets: c.gets.saturating_sub(c.started),
            packets: c.packets,
            lost_rerequested: c.rerequested,
            duplicates: c.duplicates,
            timeouts: c.timeouts,
            bounded: c.bounded,
            bad_datagrams: c.bad,
            time_mean_ms: if c.completed > 0 {
                ms(c.time_sum_ns) / c.completed as f64
            } else {
                0.0
            },
            time_p50_ms: ms(c.time_quantile_ns(500)),
            time_p99_ms: ms(c.time_quantile_ns(990)),
            time_max_ms: ms(c.time_max_ns),
            failed_timeout: c.failed_timeout,
            failed_refused: c.failed_refused,
            failed_other: c.failed_other,
            bad_status: c.failed_status,
            verify_errors: 0,
            socket_errors: 0,
            client_cpu_secs: 0.0,
        }
    }

    /// Requests that did not complete well.
    pub fn errors(&self) -> u64 {
        self.failed_timeout
            + self.failed_refused
            + self.failed_other
            + self.bad_status
            + self.verify_errors
            + self.socket_errors
    }

    /// The report as text, in the manner of http_load's.
    pub fn text(&self) -> String {
        let mut t = String::new();
        let _ = writeln!(t, "bwudp load ({} client), {}", self.client, self.schedule);
        let _ = writeln!(
            t,
            "{} requests completed in {:.3} s: {:.1} requests/s, {:.0} bytes/s ({} started, {} skipped: no free slot)",
            self.completed, self.elapsed_secs, self.completed_per_sec, self.bytes_per_sec, self.started, self.skipped
        );
        let _ = writeln!(
            t,
            "packets: {} received, {} lost and re-requested, {} duplicates; GETs: {} ({} subsequent), {} timeouts, {} answers bounded, {} bad datagrams",
            self.packets, self.lost_rerequested, self.duplicates, self.gets, self.subsequent_gets, self.timeouts, self.bounded, self.bad_datagrams
        );
        let _ = writeln!(
            t,
            "max parallel {}; processing time at the client: mean {:.3} ms, p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            self.max_parallel, self.time_mean_ms, self.time_p50_ms, self.time_p99_ms, self.time_max_ms
        );
        let _ = writeln!(
            t,
            "errors: {} timed out, {} refused, {} other, {} bad status, {} wrong bytes, {} socket errors; client CPU {:.2} s",
            self.failed_timeout, self.failed_refused, self.failed_other, self.bad_status, self.verify_errors, self.socket_errors, self.client_cpu_secs
        );
        t
    }
}
