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
use crate::http::{self, Method, Request};
use crate::nic::NicCounters;
use crate::resource::{Body, Found, Lookup, Resource};
use crate::server::{DynamicPage, Server};
use crate::stats::{CoreTimes, Stats, Stay, STATS_FIELDS, STAY_BUCKETS};

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
    /// A thread of a shared-server runner (issue 5: pool, workshare, tasks) that takes
    /// ready connections from the one `Server` all threads share.
    Worker,
    /// The `Server` that a runner's threads share: its counters and stay times. It has no
    /// time of its own (its elapsed time is 0); the threads' rows carry the time split.
    Server,
}

impl Role {
    fn name(self) -> &'static str {
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
const N_NIC: usize = 23;
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
    roles: Box<[Role]>,
    rows: Box<[Row]>,
}

impl Board {
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
        }
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
    /// lock around their `Server`; issue 5). It is its own part of the split, taken out
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
        w.write_str("}}")
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
    ]
}

/// One row's (or the total's) fields, without braces.
fn write_row(w: &mut SliceWriter<'_>, words: &[u64; WORDS]) -> fmt::Result {
    let names = Stats::default().fields();
    let nic = &words[AT_NIC..AT_NIC + N_NIC];
    let elapsed = words[AT_RUN];
    // Network-core work is part of RCV (dispatch) and its own SEND (draining DLISTs).
    let rcv = words[AT_TIMES] + nic[11];
    let http = words[AT_TIMES + 1];
    let send = nic[12];
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
        words[stat_index("http_requests")],
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

/// Path of the JSON.
pub const STATS_PATH: &[u8] = b"/.well-known/bareweb/stats";
/// Path of the HTML page.
pub const PAGE_PATH: &[u8] = b"/.well-known/bareweb/";

/// Whether a request target asks for the JSON (the exact path, with or without a query).
pub fn is_stats_target(target: &[u8]) -> bool {
    match target.strip_prefix(STATS_PATH) {
        Some(rest) => rest.is_empty() || rest[0] == b'?',
        None => false,
    }
}

/// The stats JSON as the server's dynamic page: core `core` of `board` publishes its own
/// row first (so that row is current), then renders every row.
pub struct StatsPage {
    board: &'static Board,
    core: usize,
}

impl StatsPage {
    /// The page served by core `core` of `board`.
    pub fn new(board: &'static Board, core: usize) -> StatsPage {
        StatsPage { board, core }
    }
}

impl DynamicPage for StatsPage {
    fn claims(&self, target: &[u8]) -> bool {
        is_stats_target(target)
    }

    fn respond(
        &self,
        (stats, times, stay): (&Stats, &CoreTimes, &Stay),
        request: &Request<'_>,
        now_unix: u64,
        server_name: &str,
        out: &mut [u8],
    ) -> http::Response<'static> {
        self.board.publish_server(self.core, stats, times, stay);
        respond_stats(self.board, request, now_unix, server_name, out)
    }
}

impl<L: Lookup<'static>> Server<L> {
    /// Answers `GET /.well-known/bareweb/stats` with the JSON of `board`, where this
    /// server is core `core`. Allocates the response buffers now, once. Without this call
    /// the path is the site's, as before.
    pub fn serve_stats(&mut self, board: &'static Board, core: usize) {
        self.serve_dynamic(Box::new(StatsPage::new(board, core)));
    }
}

/// Room reserved for the head in front of the JSON while rendering.
const HEAD_ROOM: usize = 512;

/// Writes the whole stats response (head and, unless HEAD, the JSON) into `out`
/// ([`JSON_MAX`] bytes). Its `head_len` covers everything; it has no stored body.
pub fn respond_stats(
    board: &Board,
    req: &Request<'_>,
    now_unix: u64,
    server: &str,
    out: &mut [u8],
) -> http::Response<'static> {
    let close = !req.keep_alive || req.has_body;
    if !matches!(req.method, Method::Get | Method::Head) {
        return http::respond_error(http::Status::METHOD_NOT_ALLOWED, now_unix, server, out);
    }
    let Some(body_len) = out.get_mut(HEAD_ROOM..).and_then(|b| board.render_json(b)) else {
        return http::respond_error(http::Status::INTERNAL_SERVER_ERROR, now_unix, server, out);
    };
    let mut head = [0u8; HEAD_ROOM];
    let mut w = SliceWriter {
        buf: &mut head,
        len: 0,
    };
    let date = http::imf_date(now_unix);
    let date = core::str::from_utf8(&date).unwrap_or("");
    let conn = match (close, req.version) {
        (true, _) => "Connection: close\r\n",
        (false, http::Version::Http10) => "Connection: keep-alive\r\n",
        (false, _) => "",
    };
    let ok = write!(
        w,
        "HTTP/1.1 200 OK\r\nDate: {date}\r\nServer: {server}\r\n\
         Content-Type: application/json\r\nContent-Length: {body_len}\r\n\
         Cache-Control: no-store\r\n{conn}\r\n"
    );
    let head_len = w.len;
    if ok.is_err() {
        return http::respond_error(http::Status::INTERNAL_SERVER_ERROR, now_unix, server, out);
    }
    let send_body = req.method == Method::Get;
    out[..head_len].copy_from_slice(&head[..head_len]);
    if send_body {
        out.copy_within(HEAD_ROOM..HEAD_ROOM + body_len, head_len);
    }
    http::Response {
        status: http::Status::OK.code(),
        head_len: head_len + if send_body { body_len } else { 0 },
        body: None,
        close,
    }
}

/// The HTML page: inline CSS, JS and SVG, no external assets.
pub const PAGE_HTML: &str = include_str!("stats.html");

/// A site with the stats page added at [`PAGE_PATH`] (and a redirect from the path
/// without its slash); every other path is the inner site's.
#[derive(Debug, Clone, Copy)]
pub struct WithStatsPage<L>(pub L);

/// Entity tag of the page: changes with the crate version.
const PAGE_ETAG: &str = concat!("\"bareweb-stats-", env!("CARGO_PKG_VERSION"), "\"");

impl<L: Lookup<'static>> Lookup<'static> for WithStatsPage<L> {
    fn lookup(&self, path: &[u8]) -> Found<'static> {
        if path == PAGE_PATH {
            // No stored block sums: the (rarely sent) page's checksums are summed on the spot.
            return Found::Resource(Resource {
                content_type: "text/html; charset=utf-8",
                etag: PAGE_ETAG,
                last_modified: 1_767_225_600, // 2026-01-01, the page's version date
                identity: Body {
                    data: PAGE_HTML.as_bytes(),
                    block_sums: &[],
                },
                gzip: None,
            });
        }
        if path == &PAGE_PATH[..PAGE_PATH.len() - 1] {
            return Found::AddSlash;
        }
        self.0.lookup(path)
    }
}

/// Total requests over every core of a rendered board (for platforms' summaries).
pub fn total_requests(board: &Board) -> u64 {
    (0..board.cores())
        .map(|c| board.snapshot(c).stat("http_requests"))
        .sum()
}

/// Index of a `Stats` field in a row (past the counters, i.e. reading 0-free padding, if
/// the name is unknown: callers pass names of existing fields).
fn stat_index(name: &str) -> usize {
    Stats::default()
        .fields()
        .iter()
        .position(|(n, _)| *n == name)
        .unwrap_or(WORDS - 1)
}

impl Snapshot {
    /// The value of a `Stats` field by name (0 if unknown).
    pub fn stat(&self, name: &str) -> u64 {
        Stats::default()
            .fields()
            .iter()
            .position(|(n, _)| *n == name)
            .map_or(0, |i| self.words[i])
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

#[cfg(test)]
mod tests;
