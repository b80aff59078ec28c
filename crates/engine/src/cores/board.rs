//! The stats board: every core's live measurements, published by the core that owns
//! them and read by whichever core serves `GET /.well-known/bareweb/stats`.
//!
//! No locks, no allocation after [`Board::new`]. Each core owns one [`Row`] of relaxed
//! `AtomicU64` words and is its only writer; a write is wrapped in a sequence counter (a
//! seqlock: odd while writing) so a reader on another core copies a consistent snapshot,
//! retrying a bounded number of times (after which it takes the words as they are: each
//! is still a value that was published, only the row may mix two publications).
//! The JSON is rendered straight from the snapshots into the caller's buffer (a
//! per-connection dynamic buffer of the serving `Server`, see `server`), so serving it
//! allocates nothing. The HTML page at `/.well-known/bareweb/` is a constant with inline
//! JS and SVG (no external assets) that polls the JSON; [`WithStatsPage`] adds it to a site.

use alloc::boxed::Box;
use core::fmt::{self, Write as _};
use core::sync::atomic::{fence, AtomicU64, Ordering};

use super::DispatchCounters;
use crate::bond::Bond;
use crate::nic::NicCounters;
use crate::stats::{CoreTimes, Stats, Stay, STATS_FIELDS, STAT_HELP, STAT_NAMES, STAY_BUCKETS};

use super::pages::PageSettings;
use crate::stats::platform::{PlatformCounters, ReloadCounters, ReloadCounts};

/// Largest stats response (head and JSON) a server renders; more cores than fit get a 500.
pub const JSON_MAX: usize = crate::server::DYN_MAX;

/// What a core does, as shown on the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The only core.
    Single,
    /// Network core: owns the NIC, dispatches, drains send rings; no HTTP.
    Net,
    /// Network core that serves HTTP too (`--bsp-http`).
    NetHttp,
    /// HTTP core fed by the network core's rings.
    Http,
    /// Owns one NIC queue pair (per-queue mode).
    Queue,
    /// A thread of a shared-server runner (the OpenMP paper's runners: pool, workshare, tasks) that takes
    /// ready connections from the one `Server` all threads share.
    Worker,
    /// The `Server` that a runner's threads share: its counters and stay times. It has no
    /// time of its own (its elapsed time is 0); the threads' rows carry the time split.
    Server,
}

impl Role {
    /// The role as the page and the metrics name it.
    pub fn name(self) -> &'static str {
        match self {
            Role::Single => "single",
            Role::Net => "net",
            Role::NetHttp => "net+http",
            Role::Http => "http",
            Role::Queue => "queue",
            Role::Worker => "worker",
            Role::Server => "server",
        }
    }
}

const N_STATS: usize = STATS_FIELDS;
const N_TIMES: usize = 3;
const N_STAY: usize = 5 + STAY_BUCKETS;
const N_NIC: usize = 36;
/// Where the network core's dispatch and drain times are among the NIC words.
const NIC_DISPATCH_NS: usize = 12;
const NIC_DRAIN_NS: usize = 13;
const N_RUN: usize = 3;
const N_SLEEP: usize = 5;
const AT_TIMES: usize = N_STATS;
const AT_STAY: usize = AT_TIMES + N_TIMES;
const AT_NIC: usize = AT_STAY + N_STAY;
const AT_RUN: usize = AT_NIC + N_NIC;
const AT_SLEEP: usize = AT_RUN + N_RUN;
/// Words in a row.
const WORDS: usize = AT_SLEEP + N_SLEEP;

/// Reader attempts before a row is taken as it is.
const READ_TRIES: u32 = 64;

/// One core's published words.
pub struct Row {
    seq: AtomicU64,
    words: [AtomicU64; WORDS],
}

/// A consistent copy of one row.
#[derive(Clone)]
pub struct Snapshot {
    words: [u64; WORDS],
}

/// All cores' rows plus what the page says about the run.
pub struct Board {
    mode: &'static str,
    /// Counters the platform keeps outside the engine (the kernel's `XDP_STATISTICS` of
    /// each AF_XDP socket), read when the page is served.
    platform: Option<&'static dyn PlatformCounters>,
    /// The platform's reload counters, if it reloads its site.
    reload: Option<&'static dyn ReloadCounters>,
    roles: Box<[Role]>,
    rows: Box<[Row]>,
    pages: PageSettings,
    /// The NIC set (bonding), whose per-NIC counters and links the page shows.
    bond: Option<&'static Bond>,
    /// The DHCP client's state, address and counters, when `ip=dhcp`.
    dhcp: Option<&'static crate::dhcp::shared::Shared>,
    /// The graceful drain, when the platform can ask for one.
    drain: Option<&'static crate::server::drain::Drain>,
    /// ACME's HTTP-01 answers, when the platform obtains its certificate.
    http01: Option<&'static super::challenge::Http01>,
    /// Where the platform's ACME client stands.
    issuance: Option<&'static super::challenge::Issuance>,
}

impl Board {
    /// Bytes a server lends one response of these pages ([`DynamicPage::buffer_len`]):
    /// the metrics are about 21 KB plus 8.7 KB per core with every counter at its widest
    /// (measured at 1, 2 and 32 cores; the JSON is smaller), so room for both with a
    /// margin, and never less than [`JSON_MAX`]. Each counter added costs ~80 bytes a
    /// core: `the_pages_fit_their_buffer_on_every_core_count` says when this is short.
    pub fn buffer_len(&self) -> usize {
        let want = 32 * 1024 + self.roles.len() * 10 * 1024;
        want.next_multiple_of(4096).max(JSON_MAX)
    }

    /// A board for `roles.len()` cores running in `mode` (`single`, `netcore`,
    /// `perqueue`), every word zero.
    pub fn new(mode: &'static str, roles: &[Role]) -> Board {
        Board {
            mode,
            roles: roles.into(),
            rows: roles
                .iter()
                .map(|_| Row {
                    seq: AtomicU64::new(0),
                    words: core::array::from_fn(|_| AtomicU64::new(0)),
                })
                .collect(),
            pages: PageSettings::default(),
            bond: None,
            dhcp: None,
            drain: None,
            platform: None,
            reload: None,
            http01: None,
            issuance: None,
        }
    }

    /// The board with ACME's HTTP-01 answers: every core serves what the platform's ACME
    /// client publishes there, at `/.well-known/acme-challenge/TOKEN`, to any client.
    pub fn with_http01(mut self, http01: Option<&'static super::challenge::Http01>) -> Board {
        self.http01 = http01;
        self
    }

    /// The board with where the platform's ACME client stands: the JSON gets an `acme`
    /// object, the metrics `bareweb_acme_*`.
    pub fn with_issuance(mut self, issuance: Option<&'static super::challenge::Issuance>) -> Board {
        self.issuance = issuance;
        self
    }

    /// Where the ACME client stands, if there is one.
    pub fn issuance(&self) -> Option<super::challenge::IssuanceNow> {
        self.issuance.map(|i| i.now())
    }

    /// The HTTP-01 answers served, if any.
    pub fn http01(&self) -> Option<&'static super::challenge::Http01> {
        self.http01
    }

    /// The board with the platform's reload counters: the JSON gets a `reload` object,
    /// the metrics `bareweb_reloads_total` and its kin.
    pub fn with_reload(mut self, reload: Option<&'static dyn ReloadCounters>) -> Board {
        self.reload = reload;
        self
    }

    /// The platform's reload counters, if any.
    pub fn reload(&self) -> Option<ReloadCounts> {
        self.reload.map(|r| r.reload_counts())
    }

    /// The board with the platform's own counters: the JSON gets an object named
    /// [`PlatformCounters::name`] with one entry per unit, the metrics
    /// `bareweb_<name>_<counter>{<unit>="<id>"}`.
    pub fn with_platform(mut self, platform: Option<&'static dyn PlatformCounters>) -> Board {
        self.platform = platform;
        self
    }

    /// The platform's own counters, if any.
    pub fn platform(&self) -> Option<&'static dyn PlatformCounters> {
        self.platform
    }

    /// The board with the graceful drain: `/healthz` answers 503 once it is asked for, the
    /// JSON gets a `drain` object and the metrics `bareweb_draining`.
    pub fn with_drain(mut self, drain: Option<&'static crate::server::drain::Drain>) -> Board {
        self.drain = drain;
        self
    }

    /// The graceful drain, if any.
    pub fn drain(&self) -> Option<&'static crate::server::drain::Drain> {
        self.drain
    }

    /// The board with the DHCP client's part: the JSON gets a `dhcp` object (state,
    /// address, router, server, lease and time left, counters), the metrics
    /// `bareweb_dhcp_*`.
    pub fn with_dhcp(mut self, dhcp: Option<&'static crate::dhcp::shared::Shared>) -> Board {
        self.dhcp = dhcp;
        self
    }

    /// The DHCP client's shared state, if the address comes from DHCP.
    pub fn dhcp(&self) -> Option<&'static crate::dhcp::shared::Shared> {
        self.dhcp
    }

    /// The board with a NIC set's part: the JSON gets a `bond` object (configuration,
    /// receive NIC, each NIC's link, role and counters summed over the cores).
    pub fn with_bond(mut self, bond: Option<&'static Bond>) -> Board {
        self.bond = bond;
        self
    }

    /// The NIC set shown, if any.
    pub fn bond(&self) -> Option<&'static Bond> {
        self.bond
    }

    /// The board with `pages` saying which of the server's own pages answer.
    pub fn with_pages(mut self, pages: PageSettings) -> Board {
        self.pages = pages;
        self
    }

    /// Which of the server's own pages answer, and for whom.
    pub fn pages(&self) -> &PageSettings {
        &self.pages
    }

    /// Core `core`'s role (`Single` for a core out of range).
    pub fn role(&self, core: usize) -> Role {
        self.roles.get(core).copied().unwrap_or(Role::Single)
    }

    /// Every metric a row carries, in the order `/metrics` shows them (the stay-time
    /// histogram and the sleep counters stay in the JSON).
    pub fn metrics(&self) -> impl Iterator<Item = Metric> {
        let stats =
            STAT_NAMES
                .into_iter()
                .zip(STAT_HELP)
                .enumerate()
                .map(|(index, (name, help))| Metric {
                    // `_us` would read as microseconds (promtool's unit lint).
                    name: if name == "drop_not_for_us" {
                        "drop_not_ours"
                    } else {
                        name
                    },
                    index,
                    kind: if STAT_GAUGES.contains(&name) {
                        MetricKind::Gauge
                    } else {
                        MetricKind::Counter
                    },
                    help: help.trim_start(),
                });
        let other = OTHER_METRICS
            .into_iter()
            .map(|(name, index, kind, help)| Metric {
                name,
                index,
                kind,
                help,
            });
        let nic = NIC_METRICS
            .into_iter()
            .enumerate()
            .map(|(i, (name, kind, help))| Metric {
                name,
                index: AT_NIC + i,
                kind,
                help,
            });
        stats.chain(other).chain(nic)
    }

    /// The word at `index` of core `core`'s row, read consistently.
    pub fn word(&self, core: usize, index: usize) -> u64 {
        self.snapshot(core).words.get(index).copied().unwrap_or(0)
    }

    /// Number of cores.
    pub fn cores(&self) -> usize {
        self.rows.len()
    }

    /// Publishes the server's counters, time split and stay times as core `core`'s. Only
    /// core `core` may call this (one writer per row). Out-of-range cores are ignored.
    pub fn publish_server(&self, core: usize, s: &Stats, t: &CoreTimes, stay: &Stay) {
        let Some(row) = self.rows.get(core) else {
            return;
        };
        row.write(|w| {
            for (i, (_, v)) in s.fields().iter().enumerate() {
                w[i].store(*v, Ordering::Relaxed);
            }
            let times = [t.rcv_ns, t.http_ns, t.busy_polls];
            store(&w[AT_TIMES..], &times);
            let head = [
                stay.count,
                stay.total_ns,
                stay.max_ns,
                stay.parallel,
                stay.parallel_max,
            ];
            store(&w[AT_STAY..], &head);
            store(&w[AT_STAY + 5..], &stay.hist);
        });
    }

    /// Publishes the queue pair's counters and the run loop's figures (time since the core
    /// started, empty polls) as core `core`'s. Only core `core` may call this.
    pub fn publish_run(
        &self,
        core: usize,
        n: &NicCounters,
        d: &DispatchCounters,
        elapsed_ns: u64,
        idle_polls: u64,
    ) {
        let Some(row) = self.rows.get(core) else {
            return;
        };
        row.write(|w| {
            store(&w[AT_NIC..], &nic_words(n, d));
            store(&w[AT_RUN..], &[elapsed_ns, idle_polls]);
        });
    }

    /// Publishes how core `core` slept (the kernel's halts; zeros where cores never
    /// sleep). Sleep is its own part of the time split, taken out of Main. Only core
    /// `core` may call this.
    pub fn publish_sleeps(&self, core: usize, s: &super::run::SleepCounters) {
        let Some(row) = self.rows.get(core) else {
            return;
        };
        let words = [
            s.sleeps,
            s.slept_ns,
            s.woken_by_device,
            s.woken_by_timer,
            s.woken_by_core,
        ];
        row.write(|w| store(&w[AT_SLEEP..], &words));
    }

    /// Publishes the time core `core` waited for a lock (the shared-server runners' one
    /// lock around their `Server`; the runner study). It is its own part of the split, taken out
    /// of Main. Only core `core` may call this.
    pub fn publish_lock_wait(&self, core: usize, lock_ns: u64) {
        let Some(row) = self.rows.get(core) else {
            return;
        };
        row.write(|w| store(&w[AT_RUN + 2..], &[lock_ns]));
    }

    /// A snapshot of core `core`'s row (all zero for a core out of range).
    pub fn snapshot(&self, core: usize) -> Snapshot {
        let mut s = Snapshot { words: [0; WORDS] };
        if let Some(row) = self.rows.get(core) {
            row.read(&mut s.words);
        }
        s
    }

    /// Renders the JSON document into `out`; returns its length, or `None` if it does not
    /// fit.
    pub fn render_json(&self, out: &mut [u8]) -> Option<usize> {
        let mut w = SliceWriter { buf: out, len: 0 };
        self.write_json(&mut w).ok()?;
        Some(w.len)
    }

    fn write_json(&self, w: &mut SliceWriter<'_>) -> fmt::Result {
        write!(w, "{{\"mode\":\"{}\",\"cores\":[", self.mode)?;
        let mut total = [0u64; WORDS];
        let names = Stats::default().fields();
        for core in 0..self.rows.len() {
            let s = self.snapshot(core);
            for (i, t) in total.iter_mut().enumerate() {
                let v = s.words[i];
                let is_max = i < N_STATS && names[i].0.ends_with("_max");
                *t = if is_max || i == AT_STAY + 2 || i == AT_STAY + 4 {
                    (*t).max(v)
                } else {
                    t.saturating_add(v)
                };
            }
            if core > 0 {
                w.write_str(",")?;
            }
            write!(
                w,
                "{{\"core\":{core},\"role\":\"{}\",",
                self.roles[core].name()
            )?;
            write_row(w, &s.words)?;
            w.write_str("}")?;
        }
        w.write_str("],\"total\":{")?;
        write_row(w, &total)?;
        w.write_str("}")?;
        if let Some(b) = self.bond {
            w.write_str(",\"bond\":")?;
            b.write_json(w)?;
        }
        if let Some(d) = self.dhcp {
            w.write_str(",\"dhcp\":")?;
            d.write_json(w)?;
        }
        if let Some(d) = self.drain {
            let c = d.counts();
            let (grace_ms, timeout_ms) = d.limits_ms();
            write!(
                w,
                ",\"drain\":{{\"draining\":{},\"grace_ms\":{grace_ms},\"timeout_ms\":{timeout_ms},\"finished\":{},\"took_ms\":{}}}",
                d.draining(),
                d.finished(),
                c.took_ms
            )?;
        }
        if let Some(r) = self.reload() {
            write!(
                w,
                ",\"reload\":{{\"generation\":{},\"done\":{},\"refused\":{},\"freed\":{},\"reset\":{}}}",
                r.generation, r.done, r.refused, r.freed, r.reset
            )?;
        }
        if let Some(a) = self.issuance() {
            write!(
                w,
                ",\"acme\":{{\"phase\":\"{}\",\"certificate_not_after\":{},\"next_attempt\":{},\"failures\":{},\"installed\":{}}}",
                a.phase, a.not_after, a.next, a.failures, a.installed
            )?;
        }
        if let Some(p) = self.platform {
            crate::stats::platform::write_json(p, w)?;
        }
        w.write_str("}")
    }
}

impl Row {
    fn write(&self, f: impl FnOnce(&[AtomicU64; WORDS])) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        // The odd count is visible before any word changes.
        fence(Ordering::Release);
        f(&self.words);
        // Every word is visible before the even count.
        self.seq.store(s.wrapping_add(2), Ordering::Release);
    }

    fn read(&self, out: &mut [u64; WORDS]) -> bool {
        for _ in 0..READ_TRIES {
            let s1 = self.seq.load(Ordering::Acquire);
            for (o, w) in out.iter_mut().zip(&self.words) {
                *o = w.load(Ordering::Relaxed);
            }
            // The word loads complete before the second look at the count.
            fence(Ordering::Acquire);
            let s2 = self.seq.load(Ordering::Relaxed);
            if s1 == s2 && s1 & 1 == 0 {
                return true;
            }
            core::hint::spin_loop();
        }
        false
    }
}

fn store(dst: &[AtomicU64], src: &[u64]) {
    for (d, s) in dst.iter().zip(src) {
        d.store(*s, Ordering::Relaxed);
    }
}

const NIC_NAMES: [&str; N_NIC] = [
    "rx_ring_slots",
    "rx_ring_high",
    "tx_ring_slots",
    "tx_ring_high",
    "dispatched",
    "drained",
    "dispatch_ring_full",
    "dispatch_no_core",
    "dispatch_cookie_syns",
    "conn_map",
    "conn_map_high",
    "conn_map_expired",
    "dispatch_ns",
    "drain_ns",
    "notes_lost",
    "doorbells",
    "rx_doorbells",
    "doorbells_suppressed",
    "device_rx_frames",
    "device_tx_frames",
    "device_rx_bad",
    "device_tx_bad",
    "device_tx_full",
    "hw_rx_frames",
    "hw_rx_octets",
    "hw_tx_frames",
    "hw_tx_octets",
    "hw_rx_missed",
    "hw_rx_no_buffer",
    "hw_rx_crc_errors",
    "udp_dispatched",
    "udp_no_id",
    "udp_ids_max",
    "udp_done",
    "udp_time_sum_ns",
    "udp_time_max_ns",
];

/// A Prometheus metric type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    /// Only grows (named `bareweb_<name>_total`).
    Counter,
    /// Goes up and down, or a high-water mark (named `bareweb_<name>`).
    Gauge,
}

impl MetricKind {
    /// The TYPE line's word.
    pub fn word(self) -> &'static str {
        match self {
            MetricKind::Counter => "counter",
            MetricKind::Gauge => "gauge",
        }
    }

    /// What follows the name: `_total` for a counter.
    pub fn suffix(self) -> &'static str {
        match self {
            MetricKind::Counter => "_total",
            MetricKind::Gauge => "",
        }
    }
}

/// One metric of a board row: `bareweb_<name>` plus [`MetricKind::suffix`]. A name
/// ending in `_seconds` is a word of nanoseconds, shown in seconds (the base unit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    /// The name between `bareweb_` and the suffix.
    pub name: &'static str,
    /// Its word in a row.
    pub index: usize,
    /// Counter or gauge.
    pub kind: MetricKind,
    /// The HELP line's text.
    pub help: &'static str,
}

impl Metric {
    /// Whether the word holds nanoseconds, shown as seconds.
    pub fn in_seconds(&self) -> bool {
        self.name.ends_with("_seconds")
    }
}

/// The `Stats` fields that are gauges (levels and high-water marks); the rest count.
const STAT_GAUGES: [&str; 4] = ["tcbs_in_use", "tcbs_max", "run_list_max", "udp_ids_max"];

use MetricKind::{Counter as C, Gauge as G};

/// The time split, stay times and run loop's words as metrics.
const OTHER_METRICS: [(&str, usize, MetricKind, &str); 11] = [
    ("rcv_seconds", AT_TIMES, C, "Seconds spent receiving: reading bursts and handling their frames up to TCP input (the papers' RCV)."),
    ("http_seconds", AT_TIMES + 1, C, "Seconds spent in HTTP steps: parsing requests, choosing responses, sending segments (the papers' HTTP)."),
    ("busy_polls", AT_TIMES + 2, C, "Poll rounds that found work."),
    ("stay_count", AT_STAY, C, "Connections that closed gracefully after at least one request (the stay times' count; a connection with many requests counts once)."),
    ("stay_seconds", AT_STAY + 1, C, "Sum of those connections' stay times in seconds: from a connection's first GET to the client's final ACK."),
    ("stay_max_seconds", AT_STAY + 2, G, "Longest stay time in seconds."),
    ("parallel", AT_STAY + 3, G, "Connections between their first GET and their end now."),
    ("max_parallel", AT_STAY + 4, G, "Most connections between their first GET and their end at once (the papers' max parallel)."),
    ("elapsed_seconds", AT_RUN, C, "Seconds since the core started serving."),
    ("idle_polls", AT_RUN + 1, C, "Poll rounds that found no work."),
    ("lock_wait_seconds", AT_RUN + 2, C, "Seconds a shared-server runner's thread waited for the server's lock."),
];

/// The queue pair's and the network core's words as metrics (the JSON's `nic` object, in
/// its order). The network core's UDP figures are named `netcore_udp_*`: the HTTP cores'
/// own `udp_no_id` and `udp_ids_max` are other counters.
const NIC_METRICS: [(&str, MetricKind, &str); N_NIC] = [
    ("rx_ring_slots", G, "Slots of the receive ring (on an HTTP core fed by the network core: its receive ring from core 0)."),
    ("rx_ring_high", G, "Most receive-ring slots full at once."),
    ("tx_ring_slots", G, "Slots of the transmit ring (on an HTTP core fed by the network core: its send ring to core 0)."),
    ("tx_ring_high", G, "Most transmit-ring slots full at once."),
    ("dispatched", C, "Network core: frames put on HTTP cores' receive rings."),
    ("drained", C, "Network core: frames taken from HTTP cores' send rings onto the device."),
    ("dispatch_ring_full", C, "Network core: frames dropped because an HTTP core's receive ring was full."),
    ("dispatch_no_core", C, "Network core: frames that would open a connection dropped because the connection map was full."),
    ("dispatch_cookie_syns", C, "Network core: SYNs no HTTP core had room for, answered with a SYN cookie."),
    ("conn_map", G, "Network core: connections whose HTTP core is known now (the connection map)."),
    ("conn_map_high", G, "Network core: most connections in the connection map at once."),
    ("conn_map_expired", C, "Network core: connection map entries dropped after silence."),
    ("dispatch_seconds", C, "Network core: seconds spent dispatching received frames (part of RCV)."),
    ("drain_seconds", C, "Network core: seconds spent moving frames from send rings to the device (the papers' SEND)."),
    ("notes_lost", C, "Network core: connection-closed notes lost because the note ring was full."),
    ("doorbells", C, "Doorbells: register writes that make the device look at its rings (virtio notifications, e1000 RDT/TDT; each a VM exit under virtualisation)."),
    ("rx_doorbells", C, "Of the doorbells, those for the receive ring."),
    ("doorbells_suppressed", C, "Flushes that needed no doorbell (the device said it was still working)."),
    ("device_rx_frames", C, "Frames received from the device."),
    ("device_tx_frames", C, "Frames queued to the device."),
    ("device_rx_bad", C, "Receive completions with a bad id, length or error bits (dropped)."),
    ("device_tx_bad", C, "Transmit completions with a bad id (ignored)."),
    ("device_tx_full", C, "Transmits refused because no device descriptor was free."),
    ("hw_rx_frames", C, "NIC statistics register: good frames the NIC received (Intel GPRC, read about once a second; 0 on virtio-net, which has no such registers)."),
    ("hw_rx_octets", C, "NIC statistics register: octets of the good frames received (GORC)."),
    ("hw_tx_frames", C, "NIC statistics register: good frames the NIC sent (GPTC)."),
    ("hw_tx_octets", C, "NIC statistics register: octets of the good frames sent (GOTC)."),
    ("hw_rx_missed", C, "NIC statistics register: frames the NIC dropped for want of room in its packet buffer (MPC)."),
    ("hw_rx_no_buffer", C, "NIC statistics register: frames that found no free receive descriptor (RNBC)."),
    ("hw_rx_crc_errors", C, "NIC statistics register: frames received with a bad CRC (CRCERRS)."),
    ("netcore_udp_dispatched", C, "Network core: UDP protocol requests handed to HTTP cores."),
    ("netcore_udp_no_id", C, "Network core: UDP protocol requests dropped because no request id was free."),
    ("netcore_udp_ids_max", G, "Network core: most UDP protocol request ids out at once."),
    ("netcore_udp_done", C, "Network core: UDP protocol requests whose answer has been sent."),
    ("netcore_udp_time_seconds", C, "Network core: sum of those requests' times from arrival to the answer's last frame, in seconds."),
    ("netcore_udp_time_max_seconds", G, "Network core: longest such time in seconds."),
];

fn nic_words(n: &NicCounters, d: &DispatchCounters) -> [u64; N_NIC] {
    [
        n.rx_ring_slots,
        n.rx_ring_high,
        n.tx_ring_slots,
        n.tx_ring_high,
        d.dispatched,
        d.drained,
        d.dispatch_ring_full,
        d.dispatch_no_core,
        d.dispatch_cookie_syns,
        d.conn_map,
        d.conn_map_high,
        d.conn_map_expired,
        d.dispatch_ns,
        d.drain_ns,
        d.notes_lost,
        n.doorbells,
        n.rx_doorbells,
        n.doorbells_suppressed,
        n.device_rx_frames,
        n.device_tx_frames,
        n.device_rx_bad,
        n.device_tx_bad,
        n.device_tx_full,
        n.hw_rx_frames,
        n.hw_rx_octets,
        n.hw_tx_frames,
        n.hw_tx_octets,
        n.hw_rx_missed,
        n.hw_rx_no_buffer,
        n.hw_rx_crc_errors,
        d.udp_dispatched,
        d.udp_no_id,
        d.udp_ids_max,
        d.udp_done,
        d.udp_time_sum_ns,
        d.udp_time_max_ns,
    ]
}

/// One row's (or the total's) fields, without braces.
fn write_row(w: &mut SliceWriter<'_>, words: &[u64; WORDS]) -> fmt::Result {
    let names = Stats::default().fields();
    let nic = &words[AT_NIC..AT_NIC + N_NIC];
    let elapsed = words[AT_RUN];
    // Network-core work is part of RCV (dispatch) and its own SEND (draining DLISTs).
    let rcv = words[AT_TIMES] + nic[NIC_DISPATCH_NS];
    let http = words[AT_TIMES + 1];
    let send = nic[NIC_DRAIN_NS];
    let lock = words[AT_RUN + 2];
    let sl = &words[AT_SLEEP..AT_SLEEP + N_SLEEP];
    let sleep = sl[1];
    let main = elapsed.saturating_sub(rcv + http + send + lock + sleep);
    write!(
        w,
        "\"requests\":{},\"elapsed_ns\":{elapsed},\"rcv_ns\":{rcv},\"http_ns\":{http},\
         \"send_ns\":{send},\"lock_ns\":{lock},\"main_ns\":{main},\"sleep_ns\":{sleep},\
         \"busy_polls\":{},\"idle_polls\":{},\"sleeps\":{},\"wakes\":{{\"device\":{},\
         \"timer\":{},\"core\":{}}},",
        stat_index("http_requests").map_or(0, |i| words[i]),
        words[AT_TIMES + 2],
        words[AT_RUN + 1],
        sl[0],
        sl[2],
        sl[3],
        sl[4],
    )?;
    let st = &words[AT_STAY..AT_STAY + N_STAY];
    write!(
        w,
        "\"max_parallel\":{},\"stay\":{{\"count\":{},\"total_ns\":{},\"max_ns\":{},\
         \"parallel\":{},\"hist_us_log2\":[",
        st[4], st[0], st[1], st[2], st[3]
    )?;
    for (i, v) in st[5..].iter().enumerate() {
        if i > 0 {
            w.write_str(",")?;
        }
        write!(w, "{v}")?;
    }
    w.write_str("]},\"counters\":{")?;
    for (i, (name, _)) in names.iter().enumerate() {
        if i > 0 {
            w.write_str(",")?;
        }
        write!(w, "\"{name}\":{}", words[i])?;
    }
    w.write_str("},\"nic\":{")?;
    for (i, name) in NIC_NAMES.iter().enumerate() {
        if i > 0 {
            w.write_str(",")?;
        }
        write!(w, "\"{name}\":{}", nic[i])?;
    }
    w.write_str("}")
}

/// `fmt::Write` into a fixed byte buffer; fails (never panics) when full.
struct SliceWriter<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl fmt::Write for SliceWriter<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len.checked_add(s.len()).ok_or(fmt::Error)?;
        let dst = self.buf.get_mut(self.len..end).ok_or(fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Total requests over every core of a rendered board (for platforms' summaries).
pub fn total_requests(board: &Board) -> u64 {
    (0..board.cores())
        .map(|c| board.snapshot(c).stat("http_requests"))
        .sum()
}

/// Index of a `Stats` field in a row: its place in [`STAT_NAMES`] (`None` if unknown).
fn stat_index(name: &str) -> Option<usize> {
    STAT_NAMES.iter().position(|n| *n == name)
}

impl Snapshot {
    /// The value of a `Stats` field by name (0 if unknown).
    pub fn stat(&self, name: &str) -> u64 {
        stat_index(name).map_or(0, |i| self.words[i])
    }

    /// The value of a queue-pair counter (`NicCounters` field, as named in the JSON's
    /// `nic` object) by name (0 if unknown).
    pub fn nic(&self, name: &str) -> u64 {
        NIC_NAMES
            .iter()
            .position(|n| *n == name)
            .map_or(0, |i| self.words[AT_NIC + i])
    }

    /// How the core slept (all zero where cores never sleep).
    pub fn sleeps(&self) -> super::run::SleepCounters {
        let w = &self.words[AT_SLEEP..AT_SLEEP + N_SLEEP];
        super::run::SleepCounters {
            sleeps: w[0],
            slept_ns: w[1],
            woken_by_device: w[2],
            woken_by_timer: w[3],
            woken_by_core: w[4],
        }
    }
}

mod page;
pub use page::{
    is_stats_target, respond_stats, StatsPage, WithStatsPage, PAGE_HTML, PAGE_PATH, STATS_PATH,
};

#[cfg(test)]
mod tests;
