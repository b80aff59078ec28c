//! The engine microbenchmark: the server engine against the engine's own fetcher
//! over an in-memory wire (`memwire`): no system call, one thread, frames passed by
//! pointer. This is the software's own cost, with no device, kernel or copy to a NIC.
//!
//! Scenarios, each as `total` (fetcher + server + wire, per request) and `server` (only
//! the time inside `Server::poll` calls that had frames to handle, timed with the TSC
//! around each call):
//! - `conn_per_request_4k`: a connection per fetch of a 4 KiB file (SYN, request, response,
//!   both FINs: the fetcher asks `Connection: close`);
//! - `keep_alive_4k`: fetches of the 4 KiB file on one kept connection;
//! - `download_1m`: fetches of a 1 MiB file on one kept connection (throughput: bytes/s);
//! - each again as `…_tso`, over a wire with TCP segmentation offload (`Wire::with_tso`), as
//!   the server runs on its TAP and on virtio-net or e1000 by default: a response goes out
//!   as one frame of up to 64 KiB with a partial checksum, and reaches the fetcher whole
//!   (as the kernel hands it to a TAP reader taking offloads). Without `_tso` the wire
//!   models a NIC with no offload: every 1448 bytes are a frame, their checksum summed.
//!
//! `cargo bench -p bareweb-engine --features std --bench engine`; also prints, at the end,
//! each scenario's cycles per request (TSC) and the thread's CPU time per request
//! (`CLOCK_THREAD_CPUTIME_ID` around the same loop), with the server's share of it: on a
//! shared machine a preemption inside the loop inflates the TSC figures but not the CPU
//! time, so the two side by side show whether a run was disturbed. `-- --test` runs each
//! once (a smoke). To profile one scenario:
//! `perf record -g <bench binary> --bench conn_per_request_4k/server --profile-time 5`.

use std::cell::Cell;
use std::hint::black_box;
use std::time::{Duration, Instant};

use bareweb_engine::fetch::{self, http, End, Fetcher, Handler};
use bareweb_engine::http::log::NoLog;
use bareweb_engine::iface::egress::TSO_LIMIT;
use bareweb_engine::memwire::{MemSite, Wire};
use bareweb_engine::nic::Clock;
use bareweb_engine::server::{Config, Server};
use bareweb_engine::wire::{EthernetAddress, Ipv4Address};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

const SERVER_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 2]);
const CLIENT_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 1]);
const SERVER_IP: Ipv4Address = Ipv4Address([10, 0, 0, 2]);
const CLIENT_IP: Ipv4Address = Ipv4Address([10, 0, 0, 1]);

/// A clock that moves 1 µs per reading of the benchmark's loop (deterministic timers).
struct Fake(Cell<u64>);

impl Clock for Fake {
    fn now_ns(&self) -> u64 {
        self.0.get()
    }
    fn unix_secs(&self) -> u64 {
        1_700_000_000
    }
}

#[derive(Default)]
struct Count {
    done: u64,
    bytes: u64,
    failed: u64,
}

impl Handler for Count {
    fn body(&mut self, _: u32, _: u64, data: &[u8]) {
        self.bytes += data.len() as u64;
        black_box(data);
    }
    fn end(&mut self, _: u32, end: End, _: u64) {
        match end {
            End::Done { status: 200, .. } => self.done += 1,
            _ => self.failed += 1,
        }
    }
}

fn tsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC has no preconditions on x86-64.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Instant::now().elapsed().as_nanos() as u64
    }
}

/// This thread's CPU time in ns (user + system; time preempted is not counted).
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant Linux knows.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// TSC ticks per ns, measured against the monotonic clock.
fn tsc_per_ns() -> f64 {
    let (t0, c0) = (Instant::now(), tsc());
    std::thread::sleep(Duration::from_millis(50));
    let (t1, c1) = (Instant::now(), tsc());
    (c1 - c0) as f64 / (t1 - t0).as_nanos() as f64
}

struct Bench {
    wire: Wire,
    server: Server<MemSite>,
    fetcher: Fetcher,
    clock: Fake,
    count: Count,
    /// TSC ticks spent in `Server::poll`.
    server_ticks: u64,
}

impl Bench {
    fn new(tso: bool) -> Bench {
        let site = MemSite::new(vec![
            ("/4k.bin", "application/octet-stream", vec![b'z'; 4096]),
            ("/1m.bin", "application/octet-stream", vec![b'm'; 1 << 20]),
        ]);
        let mut cfg = fetch::Config::new(CLIENT_MAC, CLIENT_IP, 24, SERVER_IP, 80, 1);
        cfg.tcbs = 4;
        let mut fetcher = Fetcher::new(cfg);
        fetcher.set_next_hop_mac(SERVER_MAC);
        Bench {
            wire: if tso {
                Wire::with_tso(SERVER_MAC, CLIENT_MAC, 256, TSO_LIMIT)
            } else {
                Wire::new(SERVER_MAC, CLIENT_MAC, 1024)
            },
            server: Server::new(Config::new(SERVER_IP, 24, [7; 16]), site, SERVER_MAC),
            fetcher,
            clock: Fake(Cell::new(1_000_000)),
            count: Count::default(),
            server_ticks: 0,
        }
    }

    /// One fetch of `path`, run to its end (and, with `close`, to both FINs).
    fn fetch(&mut self, path: &str, close: bool) {
        let n = http::write_get(self.fetcher.request_buf(0), "b", path, close).expect("fits");
        let before = self.count.done;
        let now = self.clock.0.get();
        assert!(self
            .fetcher
            .get(0, n, close, now, &mut self.wire.b.tx, &mut self.count));
        for _ in 0..100_000 {
            let now = self.clock.0.get() + 1_000;
            self.clock.0.set(now);
            self.wire.carry();
            // The server's time is counted for the polls that had frames to handle: a
            // busy server does not poll an empty ring between requests.
            let busy = self.wire.a.rx.pending() > 0;
            let t0 = tsc();
            self.server.poll(&mut self.wire.a, &self.clock, &mut NoLog);
            if busy {
                self.server_ticks += tsc() - t0;
            }
            self.wire.carry();
            self.fetcher.poll(&mut self.wire.b, now, &mut self.count);
            let settled =
                !close || (self.fetcher.open_connections() == 0 && self.server.active() == 0);
            if self.count.done > before && settled && self.wire.idle() {
                return;
            }
        }
        panic!(
            "fetch of {path} did not finish (failed: {})",
            self.count.failed
        );
    }
}

/// Times `iters` fetches: the whole loop, or the server's share.
fn run(
    b: &mut Bench,
    path: &str,
    close: bool,
    iters: u64,
    server_only: bool,
    per_ns: f64,
) -> Duration {
    b.server_ticks = 0;
    let t0 = Instant::now();
    for _ in 0..iters {
        b.fetch(path, close);
    }
    let total = t0.elapsed();
    if server_only {
        Duration::from_nanos((b.server_ticks as f64 / per_ns) as u64)
    } else {
        total
    }
}

fn scenarios(c: &mut Criterion) {
    let per_ns = tsc_per_ns();
    let cases: [(&str, &str, bool, u64, bool); 6] = [
        ("conn_per_request_4k", "/4k.bin", true, 4096, false),
        ("keep_alive_4k", "/4k.bin", false, 4096, false),
        ("download_1m", "/1m.bin", false, 1 << 20, false),
        ("conn_per_request_4k_tso", "/4k.bin", true, 4096, true),
        ("keep_alive_4k_tso", "/4k.bin", false, 4096, true),
        ("download_1m_tso", "/1m.bin", false, 1 << 20, true),
    ];
    let mut summary = Vec::new();
    for (name, path, close, bytes, tso) in cases {
        let mut g = c.benchmark_group(name);
        g.throughput(Throughput::Bytes(bytes));
        if bytes > 4096 {
            g.sample_size(20);
        }
        let mut b = Bench::new(tso);
        b.fetch(path, close); // warm: the first connection, tables touched
        for part in ["total", "server"] {
            g.bench_function(part, |bn| {
                bn.iter_custom(|iters| run(&mut b, path, close, iters, part == "server", per_ns))
            });
        }
        g.finish();
        if !std::env::args().any(|a| a == "--bench") {
            continue; // `cargo test --benches`: one pass each, no cycle count
        }
        // Cycles and CPU time per request over a fixed count, both parts from one run, in
        // short chunks: each figure is the median over the chunks, so a chunk in which the
        // thread was preempted inside a timed poll does not move it, and the server's
        // cycles are also given as the least of any chunk (the figure least disturbed by
        // other work on a shared machine).
        let (chunks, per_chunk) = if bytes > 4096 { (20, 3) } else { (100, 200) };
        let n = chunks * per_chunk;
        let (rx0, tx0) = (b.server.stats().rx_frames, b.server.stats().tx_frames);
        let mut total = Vec::new();
        let mut server = Vec::new();
        let mut cpu = Vec::new();
        let mut server_cpu = Vec::new();
        for _ in 0..chunks {
            b.server_ticks = 0;
            let (c0, cpu0) = (tsc(), thread_cpu_ns());
            for _ in 0..per_chunk {
                b.fetch(path, close);
            }
            let (c1, cpu1) = (tsc(), thread_cpu_ns());
            let ticks = (c1 - c0).max(1) as f64;
            let cpu_ns = (cpu1 - cpu0) as f64;
            let per = per_chunk as f64;
            total.push(ticks / per);
            server.push(b.server_ticks as f64 / per);
            cpu.push(cpu_ns / per);
            // The server's share of the thread's CPU: its share of the TSC ticks.
            server_cpu.push(cpu_ns * (b.server_ticks as f64 / ticks) / per);
        }
        summary.push(Summary {
            name,
            total: median(&mut total),
            server: median(&mut server),
            server_min: server.iter().copied().fold(f64::MAX, f64::min),
            cpu_ns: median(&mut cpu),
            server_cpu_ns: median(&mut server_cpu),
            frames: (
                (b.server.stats().rx_frames - rx0) as f64 / n as f64,
                (b.server.stats().tx_frames - tx0) as f64 / n as f64,
            ),
            failed: b.count.failed,
        });
    }
    println!(
        "\nper request, median of chunks (TSC at {:.3} GHz; CPU = this thread's CPU time):",
        per_ns
    );
    for s in summary {
        println!(
            "  {:24} total {:>9.0} cycles ({:>8.0} ns, CPU {:>8.0} ns)   server {:>9.0} cycles \
             ({:>8.0} ns, CPU {:>8.0} ns; least {:>6.0} cycles)   frames in/out {:.1}/{:.1}   failed {}",
            s.name,
            s.total,
            s.total / per_ns,
            s.cpu_ns,
            s.server,
            s.server / per_ns,
            s.server_cpu_ns,
            s.server_min,
            s.frames.0,
            s.frames.1,
            s.failed,
        );
    }
}

/// The median of `v` (sorted in place).
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One scenario's end-of-run figures, per request (medians over chunks).
struct Summary {
    name: &'static str,
    /// TSC ticks of the whole loop (fetcher, server, wire).
    total: f64,
    /// TSC ticks inside the server's busy polls.
    server: f64,
    /// The least of them in any chunk.
    server_min: f64,
    /// The thread's CPU time for the whole loop, ns.
    cpu_ns: f64,
    /// The server's share of it, ns.
    server_cpu_ns: f64,
    /// Frames the server received and sent.
    frames: (f64, f64),
    failed: u64,
}

/// The responder alone on a site image (`http::respond`: the site chosen by `Host`, the
/// lookup, the head written), for a request parsed once: an image of one site, and an
/// image with virtual hosts (two sites, five names) asked for its second site's name.
fn respond_on_sites(c: &mut Criterion) {
    use bareweb_engine::http::{respond, Parse, HEAD_MAX};
    use bareweb_engine::site::{build_from_files, Site};
    let page = |b: u8| vec![("/4k.bin".to_string(), vec![b; 4096], 0)];
    let one: &'static [u8] = Box::leak(build_from_files(&page(b'z')).unwrap().into_boxed_slice());
    let mut g = c.benchmark_group("respond_site");
    let raw = b"GET /4k.bin HTTP/1.1\r\nHost: b.example\r\n\r\n";
    let Parse::Complete { request, .. } = bareweb_engine::http::parse(raw) else {
        panic!("parse")
    };
    let mut head = [0u8; HEAD_MAX];
    let site = Site::load(one).unwrap();
    g.bench_function("one_site", |bn| {
        bn.iter(|| {
            respond(
                black_box(&request),
                black_box(&site),
                1_700_000_000,
                "bareweb",
                &mut head,
            )
            .head_len
        })
    });
    vhosts(&mut g, &request, &page);
    g.finish();
}

/// [`respond_on_sites`]'s virtual hosts case.
fn vhosts(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    request: &bareweb_engine::http::Request<'_>,
    page: &dyn Fn(u8) -> Vec<(String, Vec<u8>, u64)>,
) {
    use bareweb_engine::http::{respond, HEAD_MAX};
    use bareweb_engine::site::{build_from_files, build_sites, Site, SiteImage, Spec};
    let site = |names: &[&str], b: u8, default: bool| SiteImage {
        names: names.iter().map(|s| s.to_string()).collect(),
        image: build_from_files(&page(b)).unwrap(),
        default,
    };
    let image = build_sites(
        &Spec::default(),
        &[
            site(&["a.example", "www.a.example", "10.0.0.2"], b'a', true),
            site(&["b.example", "www.b.example"], b'b', false),
        ],
    )
    .unwrap();
    let image: &'static [u8] = Box::leak(image.into_boxed_slice());
    let sites = Site::load(image).unwrap();
    let mut head = [0u8; HEAD_MAX];
    g.bench_function("vhosts", |bn| {
        bn.iter(|| {
            respond(
                black_box(request),
                black_box(&sites),
                1_700_000_000,
                "bareweb",
                &mut head,
            )
            .head_len
        })
    });
}

criterion_group!(benches, scenarios, respond_on_sites);
criterion_main!(benches);
